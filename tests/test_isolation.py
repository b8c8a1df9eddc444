"""The static commands read code and never run it: in a directory full of hostile files
(a ``sitecustomize.py``, a ``conftest.py``, a ``torch.py`` that shadows torch, a
``loopcheck/`` package, a notebook with shell escapes and cell magics), ``loopcheck`` checks,
fixes, diffs and explains without importing or executing any of them."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_notebook

from test_cli import BAD
from test_packaging import plant_hostile_files

LOOPCHECK = shutil.which("loopcheck", path=str(Path(sys.executable).parent))
pytestmark = pytest.mark.skipif(LOOPCHECK is None, reason="needs the loopcheck console script (pip install -e .)")


@pytest.fixture
def hostile(tmp_path: Path) -> tuple[Path, Path]:
    """A project directory with hostile files and a training script and notebook to check."""
    markers = tmp_path / "markers"
    project = tmp_path / "project"
    project.mkdir()
    plant_hostile_files(project, markers)
    touch = f"open({str(markers / 'notebook')!r}, 'w')"
    nb = new_notebook(cells=[
        new_code_cell(f"!python -c \"{touch}\"\nfiles = !ls \\\n  -la\n%run torch.py"),
        new_code_cell(f"%%bash\npython -c \"{touch}\""),
        new_code_cell(f"%%time\nimport torch\n__import__('os').system('python -c \"{touch}\"')"),
        new_code_cell(BAD),
    ], metadata={"kernelspec": {"name": "python3", "language": "python", "display_name": "Python 3"}})
    (project / "train.ipynb").write_text(nbformat.writes(nb))
    (project / "train.py").write_text(BAD)
    return project, markers


def loopcheck(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([LOOPCHECK, *args], cwd=cwd, capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("args", [  # every rule, those in preview (LC101...) included
    ["--preview", "."],
    ["--preview", "--output-format", "json", "."],
    ["--preview", "--statistics", "."],
    ["--preview", "--diff", "--unsafe-fixes", "."],
    ["--preview", "--fix", "--unsafe-fixes", "."],
    ["rules"],
    ["explain", "LC101"],
], ids=lambda a: " ".join(a))
def test_static_commands_never_run_checked_code(hostile, args):
    project, markers = hostile
    proc = loopcheck(*args, cwd=project)
    assert proc.returncode in (0, 1), proc.stderr
    assert list(markers.iterdir()) == []
    if "json" in args:  # the files were really read: both training loops reported
        found = json.loads(proc.stdout)
        assert {(Path(f["filename"]).name, f["code"]) for f in found} >= {("train.py", "LC101"), ("train.ipynb", "LC101")}


def test_the_language_server_never_runs_checked_code(hostile):
    """``loopcheck server`` started in the hostile directory (its fork server too) checks the
    script and the notebook without importing any of the files there."""
    pytest.importorskip("pygls")
    from test_server import Client

    project, markers = hostile
    (project / "multiprocessing.py").write_text(f"open({str(markers / 'multiprocessing')!r}, 'w')\n")
    (project / "loopcheck.toml").write_text("preview = true\n")  # LC101 is in preview
    c = Client([LOOPCHECK, "server"], cwd=project)
    try:
        c.request("initialize", {"processId": None, "rootUri": project.as_uri(), "capabilities": {}})
        c.notify("initialized", {})
        uri = (project / "train.py").as_uri()
        c.notify("textDocument/didOpen", {"textDocument": {
            "uri": uri, "languageId": "python", "version": 1, "text": (project / "train.py").read_text()}})
        assert [d["code"] for d in c.diagnostics(uri)] == ["LC101"]
        actions = c.request("textDocument/codeAction", {"textDocument": {"uri": uri}, "range": {
            "start": {"line": 8, "character": 0}, "end": {"line": 8, "character": 60}}, "context": {"diagnostics": []}})
        assert actions and actions[0]["kind"] == "quickfix"
    finally:
        c.close()
    assert list(markers.iterdir()) == []
