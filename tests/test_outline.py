"""Imported modules are outlined with ``ast`` and parsed with LibCST only when their code is needed;
parsing skips LibCST's per-node validation. Both must change nothing the analysis sees."""

from __future__ import annotations

from pathlib import Path

import libcst as cst
import pytest

from loopcheck.analysis import check_source
from loopcheck.engine.builder import index_module
from loopcheck.engine.outline import outline
from loopcheck.engine.project import Project
from loopcheck.parsing import parse_tree

ROOT = Path(__file__).resolve().parent.parent
FIXTURE_FILES = sorted((ROOT / "fixtures").rglob("*.py"))

#: Statements whose reading differs easily between the two parsers.
TRICKY = '''
import os, torch.nn as nn
import a.b.c
from . import sibling
from .. import up
from ...deep import x as deep_x
from .models import Net, Head as H
from pkg import *
try: import ujson as json; HAS_UJSON = True
except ImportError: import json; HAS_UJSON = False
if os.name == "nt":
    from win import loader
elif os.name == "posix":
    from posix_mod import loader
else:
    def loader(): pass
for i, (j, *rest) in enumerate([]): pass
with open("f") as (fa, fb), open("g") as fc: pass
while False:
    w = 1
else:
    w2 = 2
match os.name:
    case "nt":
        from m1 import matched
        m_a = 1
    case _:
        m_b = 2
try:
    t = 1
except* ValueError as group:
    tg = 2
counter: int = 0
counter += 1
obj.attr = 3
seq[0] = 4
(walrus := 5)
global not_a_global
async def fetch(): import inside_async
@decorator
def top(): from inner import thing
class Model(nn.Module, *mixins, metaclass=Meta):
    def __init__(self): import deep_inside
    async def forward(self, x): return x
    def forward(self, x): return x
    size = 3
class Model(Base): pass
class OneLine: pass
def top(): pass
'''


def _compare(source: str, package: str | None) -> None:
    full = index_module(cst.parse_module(source), package=package)
    seen = outline(source, package)
    assert seen is not None
    assert list(seen.imports.aliases.items()) == list(full.imports.aliases.items())
    assert seen.imports.stars == full.imports.stars
    assert list(dict.fromkeys(seen.functions)) == list(full.functions)
    assert seen.globals == full.globals
    assert {k: (b, list(dict.fromkeys(m))) for k, (b, m) in seen.classes.items()} == {
        k: (v.bases, list(v.methods)) for k, v in full.classes.items()
    }


def test_the_outline_names_what_the_libcst_index_names_on_tricky_statements():
    _compare(TRICKY, "pkg.sub")
    _compare(TRICKY, None)  # relative imports ignored when the package is unknown
    seen = outline(TRICKY, "pkg.sub")
    assert seen.imports.aliases["deep_x"] == "deep.x" and seen.imports.aliases["H"] == "pkg.sub.models.Head"
    assert {"HAS_UJSON", "m_a", "m_b", "tg", "fa", "fb", "fc", "rest", "counter", "loader"} <= seen.globals
    assert "not_a_global" not in seen.globals and "obj" not in seen.globals
    assert seen.classes["Model"] == (("Base",), [])  # the last definition wins
    assert seen.functions.count("top") == 2


@pytest.mark.parametrize("path", FIXTURE_FILES, ids=lambda p: str(p.relative_to(ROOT / "fixtures")))
def test_the_outline_names_what_the_libcst_index_names_on_every_fixture(path: Path):
    text = path.read_text(encoding="utf-8")
    try:
        cst.parse_module(text)
    except cst.ParserSyntaxError:
        pytest.skip("a fixture of a syntax error")
    _compare(text, "pkg")


def test_an_outline_is_none_where_cpython_cannot_parse():
    assert outline("def f(:\n", None) is None
    assert outline('x = "\\d"\n', None) is not None  # an invalid escape: a warning, not shown


def _project(tmp_path: Path) -> Path:
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text(
        "from .models import Net\nfrom .heads import Head\nfrom .loops import evaluate\n"
    )
    (tmp_path / "pkg" / "models.py").write_text(
        # (Dropout: a model whose output depends on its mode, for LC301 to report)
        "import torch.nn as nn\n\n\nclass Net(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
        "        self.fc = nn.Linear(2, 2)\n        self.drop = nn.Dropout(0.5)\n\n"
        "    def forward(self, x):\n        return self.drop(self.fc(x))\n\n\n"
        "class Unused(nn.Module):\n    pass\n"
    )
    (tmp_path / "pkg" / "heads.py").write_text("import torch.nn as nn\n\n\nclass Head(nn.Module):\n    pass\n")
    (tmp_path / "pkg" / "loops.py").write_text(
        "import torch\n\n\ndef evaluate(model, loader):\n    model.eval()\n    for x, y in loader:\n"
        "        model(x)\n"
    )
    main = tmp_path / "main.py"
    main.write_text(
        "import torch\nfrom pkg import Head, Net, evaluate\n\n"
        "model = Net()\nhead = Head()\noptimizer = torch.optim.SGD(model.parameters(), lr=0.1)\n"
        "for epoch in range(3):\n    for x, y in loader:\n        optimizer.zero_grad()\n"
        "        model(x).sum().backward()\n        optimizer.step()\n    evaluate(model, val_loader)\n"
    )
    return main


def test_modules_read_only_for_names_are_not_parsed_and_findings_are_those_of_a_full_read(tmp_path: Path):
    main = _project(tmp_path)
    project = Project(tmp_path)
    found = check_source(main.read_text(), str(main), project=project)
    assert [(f.code, f.row) for f in found] == [("LC301", 12)]
    modules = {p.name: info for p, info in project._modules.items()}
    parsed = {name: [m.code for m, _offset in info.index.fragments] for name, info in modules.items()}
    assert all(info.module is None for info in modules.values())  # no module parsed whole
    assert parsed["__init__.py"] == []  # re-exports only: outlined, never parsed
    assert parsed["heads.py"] == []  # Head() has no __init__ of its own (the outline says so): nothing to inline
    assert parsed["loops.py"] == [(tmp_path / "pkg" / "loops.py").read_text().partition("\n\n\n")[2]]  # inlined
    # Net's __init__ and forward, each alone under a class line (LC302 reads the forward of the
    # model evaluate() runs without no_grad: does it turn gradients off itself?); Unused: not read
    assert sorted(parsed["models.py"]) == [
        "class Net:\n    def __init__(self):\n        super().__init__()\n        self.fc = nn.Linear(2, 2)\n"
        "        self.drop = nn.Dropout(0.5)\n",
        "class Net:\n    def forward(self, x):\n        return self.drop(self.fc(x))\n"]
    assert found[0].related[0].row == 5 and found[0].related[0].filename.endswith("loops.py")  # its line in the file


def test_a_module_libcst_cannot_parse_defines_nothing(tmp_path: Path, monkeypatch):
    from loopcheck.engine import outline as outline_mod

    main = _project(tmp_path)

    def refuse(source):
        raise cst.ParserSyntaxError("refused", lines=[""], raw_line=1, raw_column=0)

    monkeypatch.setattr(outline_mod, "parse_tree", refuse)
    project = Project(tmp_path)
    found = check_source(main.read_text(), str(main), project=project)
    assert found == []  # evaluate() unknown: its eval() is not seen
    loops = next(info for p, info in project._modules.items() if p.name == "loops.py")
    assert "evaluate" not in loops.index.functions and loops.index.functions.get("evaluate") is None
    assert list(loops.index.functions) == []


@pytest.mark.parametrize("path", [p for p in FIXTURE_FILES if "LC001" not in p.read_text(encoding="utf-8")][::7],
                         ids=lambda p: p.name)
def test_the_parse_without_validation_builds_the_same_tree(path: Path):
    """(The fixtures that do not parse, marked LC001, have no tree to compare; nor do those whose
    indentation CPython accepts and LibCST refuses, checked re-indented.)"""
    text = path.read_text(encoding="utf-8")
    try:
        expected = cst.parse_module(text)
    except cst.ParserSyntaxError:
        pytest.skip("LibCST refuses the text (checked re-indented)")
    assert parse_tree(text).deep_equals(expected)


def test_nodes_built_after_a_parse_are_still_validated():
    parse_tree("x = 1\n")
    with pytest.raises(cst.CSTValidationError):
        cst.Name("not a name")
    with pytest.raises(cst.ParserSyntaxError):
        parse_tree("def f(:\n")
    with pytest.raises(cst.CSTValidationError):
        cst.Name("still validated after a failed parse")


@pytest.mark.parametrize("newline", ["\n", "\r\n", "\r"])
def test_a_statement_parsed_alone_keeps_its_line_in_the_file(tmp_path: Path, newline: str):
    """An imported function is parsed from its own lines: a related line inside it is still
    given as its line in the file, whatever the file's line endings."""
    main = _project(tmp_path)
    loops = tmp_path / "pkg" / "loops.py"
    text = "# a comment\n" * 40 + "\n\n" + loops.read_text()
    loops.write_bytes(text.replace("\n", newline).encode())
    found = check_source(main.read_text(), str(main), project=Project(tmp_path))
    assert [(f.code, f.row) for f in found] == [("LC301", 12)]
    where = found[0].related[0]
    assert (where.row, where.column, where.filename.endswith("loops.py")) == (47, 5, True)


def _method_project(tmp_path: Path, newline: str = "\n") -> Path:
    """``_project`` whose validation is ``evaluator.evaluate(...)``: a method of a class of
    pkg/loops.py, below 40 comment lines, with the file's lines ending in ``newline``."""
    main = _project(tmp_path)
    loops = tmp_path / "pkg" / "loops.py"
    text = (
        "import torch\n" + "# a comment\n" * 40 + "\n\nclass Evaluator:\n    \"\"\"Runs the validation.\"\"\"\n\n"
        "    def report(self, x):\n        return x\n\n"
        "    @torch.no_grad()\n    def unused(self, model):\n        model.train()\n\n"
        "    def evaluate(self, model, loader):  # the one called\n        model.eval()\n"
        "        for x, y in loader:\n            self.report(model(x))\n"
    )
    loops.write_bytes(text.replace("\n", newline).encode())
    (tmp_path / "pkg" / "__init__.py").write_text("from .models import Net\nfrom .heads import Head\n")
    main.write_text(main.read_text().replace("from pkg import Head, Net, evaluate\n", (
        "from pkg import Head, Net\nfrom pkg.loops import Evaluator\n")).replace(
        "    evaluate(model, val_loader)\n", "    evaluator.evaluate(model, val_loader)\n").replace(
        "head = Head()\n", "head = Head()\nevaluator = Evaluator()\n"))
    return main


@pytest.mark.parametrize("newline", ["\n", "\r\n", "\r"])
def test_a_method_parsed_alone_keeps_its_line_and_column_in_the_file(tmp_path: Path, newline: str):
    """A method of an imported class is parsed from its own lines, under a ``class`` line of
    its own: a related line inside it is its line and column in the file; the class's other
    methods are not parsed."""
    main = _method_project(tmp_path, newline)
    project = Project(tmp_path)
    found = check_source(main.read_text(), str(main), project=project)
    assert [(f.code, f.row) for f in found] == [("LC301", 14)]
    where = found[0].related[0]
    assert (where.row, where.column, where.filename.endswith("loops.py")) == (55, 9, True)
    fragments = next(info for p, info in project._modules.items() if p.name == "loops.py").index.fragments
    assert [(m.code.partition(newline)[2].partition("(")[0].strip(), offset) for m, offset in fragments] == [
        ("def evaluate", 52), ("def report", 45)]


def test_a_method_libcst_cannot_parse_alone_is_taken_from_its_whole_class(tmp_path: Path, monkeypatch):
    from loopcheck.engine import outline as outline_mod

    main = _method_project(tmp_path)
    real = outline_mod.parse_tree

    def no_method_alone(source):
        if source.startswith("class Evaluator:\n    def"):
            raise cst.ParserSyntaxError("refused", lines=[""], raw_line=1, raw_column=0)
        return real(source)

    monkeypatch.setattr(outline_mod, "parse_tree", no_method_alone)
    project = Project(tmp_path)
    found = check_source(main.read_text(), str(main), project=project)
    assert [(f.code, f.row, f.related[0].row) for f in found] == [("LC301", 14, 55)]
    fragments = next(info for p, info in project._modules.items() if p.name == "loops.py").index.fragments
    assert [(m.code.partition("\n")[2].strip().partition("\n")[0], offset) for m, offset in fragments] == [
        ('"""Runs the validation."""', 43)]  # the class, whole
