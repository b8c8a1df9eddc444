"""A ``for`` loop over an iterable of at most one item by run constants has no back edge
(:meth:`loopcheck.engine.builder.UnitBuilder.at_most_one`)."""

from __future__ import annotations

import textwrap
from pathlib import Path

import libcst as cst
import pytest

from loopcheck.engine.builder import UnitBuilder, decide_test, index_module, literal_constants, run_constants
from loopcheck.engine.ir import Call, If, Loop, parts
from loopcheck.engine.literals import NO_VALUE, ast_literal_value, literal_value
from loopcheck.engine.project import Project


def _nodes(node, kind, out):
    """The IR nodes of type ``kind`` in ``node``, in order, appended to ``out``."""
    if isinstance(node, kind):
        out.append(node)
    for part in parts(node):
        _nodes(part, kind, out)
    return out


def _once(source: str) -> list[bool]:
    """``Loop.once`` of each loop of the module's own code, in order."""
    index = index_module(cst.parse_module(textwrap.dedent(source)))
    return [loop.once for loop in _nodes(UnitBuilder(index).module_unit(), Loop, [])]


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


@pytest.mark.parametrize("source, counts", [
    ("for e in range(90):\n    pass\n", [(90, False)]),
    ("SEQ = 16\nfor t in range(SEQ):\n    pass\n", [(16, False)]),
    ("for x in [1, 2]:\n    pass\nfor x in (1, 2, 3):\n    pass\n", [(2, True), (3, True)]),
    ("for x in [a, b]:\n    pass\n", []),  # a display of names: built once per element, no loop
    ("for x in [*xs, b]:\n    pass\n", [(None, False)]),  # a starred element: not known
    ("for x in loader:\n    pass\nfor e in range(args.epochs):\n    pass\n", [(None, False), (None, False)]),
])
def test_loop_counts_and_displays(source: str, counts: list):
    """``LoopInfo.count`` (a range over run constants, a display's length) and
    ``LoopInfo.display`` (the iterable is a list or tuple display)."""
    index = index_module(cst.parse_module(textwrap.dedent(source)))
    loops = _nodes(UnitBuilder(index).module_unit(), Loop, [])
    assert [(loop.info.count, loop.info.display) for loop in loops] == counts


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
    assert [loop.once for loop in _nodes(ir, Loop, [])] == [False, False, False, False, False]
    assert [loop.once for loop in _nodes(builder.function_unit(index.functions["once"]), Loop, [])] == [True]


def test_run_constants_of_an_outlined_module(tmp_path: Path):
    """A module read as an outline finds its ``global`` declarations in its text."""
    (tmp_path / "engine.py").write_text("EPOCHS = 1\nSTEPS = 1\nRATE = 2\n\n\ndef more():\n    global STEPS\n    STEPS = 2\n")
    index = Project(tmp_path).load(tmp_path / "engine.py").index
    assert type(index).__name__ == "LazyModuleIndex"
    assert run_constants(index) == {"EPOCHS": 1, "RATE": 2}


def _arms(source: str) -> list[str]:
    """What the builder made of each ``model.eval()`` of the module's own code: ``"if"`` when it
    stays under an ``If`` of the IR, ``"always"`` when the test was decided true (the call runs
    unconditionally), ``"never"`` when decided false (the call is not built)."""
    index = index_module(cst.parse_module(textwrap.dedent(source)))
    ir = UnitBuilder(index).module_unit()
    conditional = sum(1 for node in _nodes(ir, If, []) for _ in _calls_in(node))
    total = sum(1 for _ in _calls_in(ir))
    return ["if"] * conditional + ["always"] * (total - conditional)


def _calls_in(node):
    if isinstance(node, Call) and node.func.endswith(".eval"):
        yield node
    for part in parts(node):
        yield from _calls_in(part)


@pytest.mark.parametrize("source, arms", [
    # an integer modulo a run constant 1 is 0 (``val_interval = 1``): the test is decided
    ("val_interval = 1\nfor epoch in range(9):\n    if (epoch + 1) % val_interval == 0:\n        model.eval()\n", ["always"]),
    ("k = 1\nfor i, b in enumerate(loader):\n    if i % k != 0:\n        model.eval()\n", []),
    ("for e in range(9):\n    if not (e * 2 + 1) % -1 == 0:\n        model.eval()\n", []),
    # fully known integer arithmetic on run constants
    ("A = 3\nB = 2\nif A // B == 1 and A - B > 0:\n    model.eval()\n", ["always"]),
    ("A = 1\nif A == 2 or A - 1 == 0:\n    model.eval()\n", ["always"]),
    ("A = 1\nif A == 2 or check():\n    model.eval()\n", ["if"]),
    # not decided: the modulus is not 1, the dividend may be a float or is not a counter
    ("k = 2\nfor e in range(9):\n    if e % k == 0:\n        model.eval()\n", ["if"]),
    ("for e in range(9):\n    if e / 2 % 1 == 0:\n        model.eval()\n", ["if"]),
    ("for e in range(9):\n    e = e / 2\n    if e % 1 == 0:\n        model.eval()\n", ["if"]),
    ("for e in loader:\n    if e % 1 == 0:\n        model.eval()\n", ["if"]),
    ("k = 1\nk = 2\nfor e in range(9):\n    if e % k == 0:\n        model.eval()\n", ["if"]),
    ("for e in range(9):\n    if e % 1 == 0 and check():\n        model.eval()\n", ["if"]),
    ("range = lambda n: [0.5]\nfor e in range(9):\n    if e % 1 == 0:\n        model.eval()\n", ["if"]),
    ("for e in range(9):\n    pass\nif e % 1 == 0:\n    model.eval()\n", ["if"]),  # after the loop
    ("def f():\n    global e\n    e = 0.5\nfor e in range(9):\n    f()\n    if e % 1 == 0:\n        model.eval()\n", ["if"]),
])
def test_if_tests_decided_by_integer_arithmetic(source: str, arms: list[str]):
    assert _arms(source) == arms


@pytest.mark.parametrize("source, arms", [
    # a flag bound once to a literal decides ``if flag:`` and ``if not flag:``
    ("use_mxnet = False\nif not use_mxnet:\n    model.eval()\n", ["always"]),
    ("use_mxnet = False\nif use_mxnet:\n    model.eval()\n", []),
    ("DEBUG = None\nif DEBUG:\n    model.eval()\n", []),
    ("MODE = 'eval'\nif MODE:\n    model.eval()\n", ["always"]),
    ("def f():\n    quick = True\n    if quick:\n        model.eval()\n\n\nf()\n", ["always"]),
    # not decided: bound twice, under an ``if``, imported, declared global, a parameter
    ("flag = False\nflag = True\nif flag:\n    model.eval()\n", ["if"]),
    ("import sys\nflag = False\nif sys.argv[1:]:\n    flag = True\nif flag:\n    model.eval()\n", ["if"]),
    ("from config import flag\nif flag:\n    model.eval()\n", ["if"]),
    ("flag = False\n\n\ndef on():\n    global flag\n    flag = True\n\n\nif flag:\n    model.eval()\n", ["if"]),
    ("import sys\n\n\ndef f(flag=False):\n    if flag:\n        model.eval()\n\n\nf(sys.argv[1:])\n", ["if"]),
])
def test_if_tests_decided_by_a_literal_flag(source: str, arms: list[str]):
    """:meth:`UnitBuilder.run_literal`: a variable bound exactly once to a literal
    (:func:`~loopcheck.engine.builder.literal_constants` for a module's globals)."""
    assert _arms(source) == arms


def test_literal_constants_of_a_module():
    index = index_module(cst.parse_module(
        "A = 1\nB = False\nC = 'x'\nD = None\nE = [1]\nF = 2\nF = 3\nimport G\nG = 1\n"
    ))
    assert literal_constants(index) == {"A": 1, "B": False, "C": "x", "D": None}
    assert run_constants(index) == {"A": 1}


@pytest.mark.parametrize("source, arms", [
    ("mode = 'frozen'\nif mode == 'frozen':\n    model.eval()\n", ["always"]),
    ("mode = 'frozen'\nif mode != 'frozen':\n    model.eval()\n", []),
    ("mode = 'frozen'\nif (mode == 'unfrozen'):\n    model.eval()\n", []),
    ("import sys\nmode = sys.argv[1]\nif mode == 'frozen':\n    model.eval()\n", ["if"]),
    ("mode = 'frozen'\nmode = 'unfrozen'\nif mode == 'frozen':\n    model.eval()\n", ["if"]),
])
def test_if_tests_decided_by_a_literal_compared(source: str, arms: list[str]):
    """A comparison of a variable bound once to a literal with a literal
    (:meth:`UnitBuilder.decide`)."""
    assert _arms(source) == arms


def test_identity_of_constants_as_cpython_runs_it():
    def decide(test: str, value) -> bool | None:
        return decide_test(cst.parse_expression(test), {"phase": value})

    assert decide("phase is 'train'", "train") is True  # an interned name-like string constant
    assert decide("phase is not 'train'", "train") is False
    assert decide("phase is 'val'", "train") is False
    assert decide("phase is 'a b'", "a b") is None  # not interned: depends on the code objects
    assert decide("phase.lower() is 'train'", "train") is None  # a new string
    assert decide("phase is 1", True) is False
    assert decide("phase is None", None) is True
    assert decide("phase is 5", 5) is True and decide("phase is 1000", 1000) is None


@pytest.mark.parametrize("text", ["'train'", "3", "-1", "+2", "0.5", "-1e-3", "True", "False", "None",
                                  "'a' 'b'", "x", "-x", "b'x'", "[1]", "not True", "f'{x}'"])
def test_literals_read_alike_from_libcst_and_ast(text):
    # the inlined path (LibCST) and the entry path (ast, the project's other files) take the same
    # constants
    import ast

    from_cst = literal_value(cst.parse_expression(text))
    from_ast = ast_literal_value(ast.parse(text, mode="eval").body)
    assert (from_cst is NO_VALUE) == (from_ast is NO_VALUE)
    if from_cst is not NO_VALUE:
        assert type(from_cst) is type(from_ast) and from_cst == from_ast
