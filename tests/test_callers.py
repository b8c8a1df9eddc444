"""The grad mode a function's callers in its project run it in (:mod:`loopcheck.engine.callers`)."""

from __future__ import annotations

from pathlib import Path

import pytest

from loopcheck.engine.callers import _mentions, callers_grad_off, project_files, scan_files
from loopcheck.engine.project import Project

HELPER = "import torch\n\n\ndef grid(net, xs):\n    net.eval()\n    return [net(x) for x in xs]\n"


def _project(tmp_path: Path, callers: dict[str, str]) -> tuple[Project, Path]:
    (tmp_path / "pyproject.toml").write_text("")
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    helper = tmp_path / "pkg" / "shapes.py"
    helper.write_text(HELPER)
    for name, text in callers.items():
        (tmp_path / name).write_text(text)
    return Project(tmp_path), helper


@pytest.mark.parametrize("caller, off", [
    ("import torch\nfrom pkg.shapes import grid\nwith torch.no_grad():\n    grid(1, [])\n", True),
    ("import torch\nimport pkg.shapes as s\n\n\ndef f():\n    torch.set_grad_enabled(False)\n    s.grid(1, [])\n", True),
    ("import torch\nimport pkg.shapes as s\n\n\ndef f():\n    s.grid(1, [])\n    torch.set_grad_enabled(False)\n", False),
    ("import torch\nimport pkg.shapes as s\n\n\ndef f():\n    s.grid(1, [])\n\n\nwith torch.no_grad():\n    f()\n", True),
    ("import torch\nimport pkg.shapes as s\n\n\ndef f():\n    s.grid(1, [])\n\n\nwith torch.no_grad():\n    f()\nf()\n", False),
    ("import torch\nimport pkg.shapes\n\n\n@torch.inference_mode()\ndef f():\n    pkg.shapes.grid(1, [])\n", True),
    ("import torch\nfrom pkg.shapes import grid\nwith torch.no_grad():\n    grid(1, [])\ngrid(2, [])\n", False),
    ("import torch\nfrom pkg.shapes import grid\nwith torch.no_grad():\n    run = lambda: grid(1, [])\n", False),
    ("import torch\nfrom pkg.shapes import grid\nwith torch.no_grad():\n    hooks = [grid]\n", False),
    ("import torch\n\n\nclass A:\n    def go(self):\n        with torch.no_grad():\n            self.grid(1, [])\n", False),
    ("import torch\nfrom other import grid\ngrid(1, [])\n", False),  # nobody calls pkg.shapes.grid
    ("import torch\nimport numpy\nfrom pkg.shapes import grid\nnumpy.grid(1)\nwith torch.no_grad():\n    grid(1, [])\n", True),
])
def test_callers(tmp_path: Path, caller: str, off: bool):
    """A call under ``no_grad`` (``with``, decorator, or a function every call of which is) runs
    with gradients off; ``set_grad_enabled(False)`` as a statement turns them off for the rest
    of its block; a call with gradients on, in a lambda, the function as a value, a name that
    is not resolved, or no call at all leaves the entry with gradients on; a library's
    function of the same name is another function."""
    project, helper = _project(tmp_path, {"run.py": caller})
    assert callers_grad_off(project, helper, "grid") is off


def test_scan_files_reads_the_files_with_the_word_and_stops_at_one_not_parsed(tmp_path: Path):
    """The shared walk over a project's call sites: each file that has the name's word, in
    order, with its scan; a file without the word is not parsed; one that does not parse ends
    the walk with ``None`` (its calls are not known)."""
    project, helper = _project(tmp_path, {
        "a.py": "from pkg.shapes import grid\ngrid(1, [])\n",
        "b.py": "x = (\n",  # does not parse, but has no word ``grid``
    })
    files = project_files(tmp_path)
    scanned = list(scan_files(project, files, "grid", _mentions))
    assert [(s.file.name, len(s.found)) for s in scanned] == [("a.py", 1), ("shapes.py", 0)]
    (tmp_path / "b.py").write_text("grid = (\n")
    assert [s and s.file.name for s in scan_files(Project(tmp_path), files, "grid", _mentions)] == ["a.py", None]
