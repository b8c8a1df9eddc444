"""Every test gets its own empty cache directory (``LOOPCHECK_CACHE_DIR``): no test sees results
another test cached, and the command lines the tests run leave no ``.loopcheck_cache`` in the
directories they check. ``tests/test_cache.py`` unsets it where it tests the default place."""

from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def _own_cache_directory(monkeypatch, tmp_path_factory):
    monkeypatch.setenv("LOOPCHECK_CACHE_DIR", str(tmp_path_factory.mktemp("loopcheck-cache")))
