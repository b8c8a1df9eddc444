"""loopcheck as a flake8 plugin, run with the real flake8: ``flake8 --select LC``. BAD's rule,
LC101, is in preview: the runs that read it pass ``--loopcheck-preview``."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

from test_cli import BAD, GOOD, MESSAGE

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"

pytestmark = pytest.mark.skipif(importlib.util.find_spec("flake8") is None, reason="needs flake8")


def flake8(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "flake8", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=120)


def test_flake8_select_lc_reports_loopcheck_findings(tmp_path):
    (tmp_path / "bad.py").write_text(BAD)
    (tmp_path / "good.py").write_text(GOOD)
    proc = flake8("--select", "LC", "--loopcheck-preview", "bad.py", "good.py", cwd=tmp_path)
    assert proc.returncode == 1, proc.stderr
    assert proc.stdout == f"bad.py:9:5: LC101 {MESSAGE}\n"


def test_flake8_plugin_is_listed_and_on_by_default(tmp_path):
    version = flake8("--version", cwd=tmp_path)
    installed = subprocess.run([sys.executable, "-c", "import loopcheck; print(loopcheck.__version__)"],
                               capture_output=True, text=True, check=True).stdout.strip()
    assert f"loopcheck: {installed}" in version.stdout
    (tmp_path / "val.py").write_text((FIXTURES / "LC302_bad.py").read_text(encoding="utf-8"))
    proc = flake8("--extend-select", "LC302", "val.py", cwd=tmp_path)  # (LC302: in preview, on by its code)
    assert any(line.startswith("val.py:56:18: LC302 ") for line in proc.stdout.splitlines()), proc.stdout


def test_flake8_noqa_ignore_and_skip_file(tmp_path):
    line = "    nn.utils.clip_grad_norm_(model.parameters(), 1.0)\n"
    (tmp_path / "noqa.py").write_text(BAD.replace(line, line.rstrip("\n") + "  # noqa: LC101\n"))
    (tmp_path / "skipped.py").write_text("# loopcheck: skip-file\n" + BAD)
    (tmp_path / "bad.py").write_text(BAD)
    assert flake8("--select", "LC", "--loopcheck-preview", "noqa.py", "skipped.py", cwd=tmp_path).stdout == ""
    assert flake8("--select", "LC", "--loopcheck-preview", "--extend-ignore", "LC101", "bad.py",
                  cwd=tmp_path).stdout == ""
