"""Every test gets its own empty cache directory (``LOOPCHECK_CACHE_DIR``): no test sees results
another test cached, and the command lines the tests run leave no ``.loopcheck_cache`` in the
directories they check. ``tests/test_cache.py`` unsets it where it tests the default place."""

from __future__ import annotations

from pathlib import Path

import pytest


def pytest_report_header(config) -> str:
    """Which loopcheck the tests import: the source tree's or an installed wheel's."""
    import loopcheck

    return f"loopcheck {loopcheck.__version__} from {Path(loopcheck.__file__).parent}"


@pytest.fixture(autouse=True)
def _own_cache_directory(monkeypatch, tmp_path_factory):
    monkeypatch.setenv("LOOPCHECK_CACHE_DIR", str(tmp_path_factory.mktemp("loopcheck-cache")))
