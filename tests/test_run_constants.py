"""A ``for`` loop over an iterable of at most one item by run constants has no back edge
(:meth:`loopcheck.engine.builder.UnitBuilder.at_most_one`)."""

from __future__ import annotations

import textwrap
from pathlib import Path

import libcst as cst
import pytest

from loopcheck.engine.builder import UnitBuilder, index_module, run_constants
from loopcheck.engine.ir import Loop, parts
from loopcheck.engine.project import Project


def _loops(node, out):
    if isinstance(node, Loop):
        out.append(node)
    for part in parts(node):
        _loops(part, out)
    return out


def _once(source: str) -> list[bool]:
    """``Loop.once`` of each loop of the module's own code, in order."""
    index = index_module(cst.parse_module(textwrap.dedent(source)))
    return [loop.once for loop in _loops(UnitBuilder(index).module_unit(), [])]


@pytest.mark.parametrize("source, once", [
    ("for e in range(1):\n    pass\n", [True]),
    ("for e in range(0):\n    pass\n", [True]),
    ("for e in range(2):\n    pass\n", [False]),
    ("for e in range(3, 4):\n    pass\n", [True]),
    ("for e in range(0, 10, 10):\n    pass\n", [True]),
    ("for e in range(0, 10, 0):\n    pass\n", [False]),
    ("n = 1\nfor e in range(n):\n    pass\n", [True]),
    ("n: int = 1\nfor e in range(n):\n    pass\n", [True]),
    ("n = 1\nn = 2\nfor e in range(n):\n    pass\n", [False]),
    ("n = 1\nn += 1\nfor e in range(n):\n    pass\n", [False]),
    ("import sys\nn = 1\nif sys.argv[1:]:\n    n = 5\nfor e in range(n):\n    pass\n", [False]),
    ("if True:\n    n = 1\nfor e in range(n):\n    pass\n", [False]),  # bound under an ``if``
    ("n = 1\n\n\ndef more():\n    global n\n    n = 4\n\n\nfor e in range(n):\n    pass\n", [False]),
    ("from config import n\nfor e in range(n):\n    pass\n", [False]),
    ("n = 1\nfrom config import n\nfor e in range(n):\n    pass\n", [False]),
    ("n = True\nfor e in range(n):\n    pass\n", [False]),  # not an int literal
    ("range = lambda n: [0, 1]\nfor e in range(1):\n    pass\n", [False]),  # not the builtin
    ("for e in range(args.epochs):\n    pass\n", [False]),
    ("for e in range(k=1):\n    pass\n", [False]),
    ("for p in ['train']:\n    pass\nfor p in ('train', 'val'):\n    pass\nfor p in [*phases]:\n    pass\n",
     [True, False, False]),
    ("for e in range(1):\n    for x in loader:\n        pass\n", [True, False]),
])
def test_loops_over_at_most_one_item(source: str, once: list[bool]):
    assert _once(source) == once


def test_a_local_variable_and_a_parameter():
    source = """
    def main(epochs, steps=1):
        n = 1
        m = 1
        for i in range(m):
            m = 2
        for e in range(n):
            pass
        for e in range(m):
            pass
        for e in range(epochs):
            pass
        for e in range(steps):
            pass

        def inner():
            nonlocal n
            n = 3


    def once():
        n = 1
        for e in range(n):
            pass
    """
    index = index_module(cst.parse_module(textwrap.dedent(source)))
    builder = UnitBuilder(index)
    ir = builder.function_unit(index.functions["main"])
    # n: re-bound by inner() (nonlocal); m: re-bound in a loop; parameters: not known
    assert [loop.once for loop in _loops(ir, [])] == [False, False, False, False, False]
    assert [loop.once for loop in _loops(builder.function_unit(index.functions["once"]), [])] == [True]


def test_run_constants_of_an_outlined_module(tmp_path: Path):
    """A module read as an outline finds its ``global`` declarations in its text."""
    (tmp_path / "engine.py").write_text("EPOCHS = 1\nSTEPS = 1\nRATE = 2\n\n\ndef more():\n    global STEPS\n    STEPS = 2\n")
    index = Project(tmp_path).load(tmp_path / "engine.py").index
    assert type(index).__name__ == "LazyModuleIndex"
    assert run_constants(index) == {"EPOCHS": 1, "RATE": 2}
