"""The binding sites of a scope (loopcheck.engine.bindings): one lowering of every form."""

import libcst as cst
import pytest

from loopcheck.engine import bindings as B


def _code(node) -> str | None:
    return None if node is None else cst.Module([]).code_for_node(node)


def _summary(s: B.Site) -> tuple:
    """``(name, form, value's code, operator, unpacked, compound)`` of a site."""
    op = type(s.op).__name__ if s.op is not None else None
    return (s.name, s.form, _code(s.value), op, s.unpacked, s.compound)


def S(name, form, value=None, op=None, unpacked=False, compound=False) -> tuple:
    """An expected site, as :func:`_summary` gives it."""
    return (name, form, value, op, unpacked, compound)


# source -> the sites of the module's code, in order
CASES = [
    ("x = v\n", [S("x", B.ASSIGN, value="v")]),
    ("a = b = v\n", [S("a", B.ASSIGN, value="v"), S("b", B.ASSIGN, value="v")]),
    ("self.x = v\nd[k] = v\n", []),
    ("a, (b, *c), d.e = v\n", [S("a", B.ASSIGN, unpacked=True), S("b", B.ASSIGN, unpacked=True),
                               S("c", B.ASSIGN, unpacked=True)]),
    ("x: int = v\ny: int\n", [S("x", B.ANNOTATED, value="v"), S("y", B.ANNOTATED)]),
    ("x += v\n", [S("x", B.AUGMENTED, value="v", op="AddAssign")]),
    ("for i, t in v:\n    pass\n", [S("i", B.FOR, unpacked=True, compound=True), S("t", B.FOR, unpacked=True, compound=True)]),
    ("with a as f, b as (g, h):\n    pass\n", [S("f", B.WITH, compound=True), S("g", B.WITH, unpacked=True, compound=True),
                                              S("h", B.WITH, unpacked=True, compound=True)]),
    ("try:\n    pass\nexcept E as e:\n    pass\n", [S("e", B.EXCEPT, compound=True)]),
    ("import os.path\nimport numpy as np\nfrom m import a, b as c\nfrom n import *\n",
     [S("os", B.IMPORT), S("np", B.IMPORT),
      S("a", B.IMPORT), S("c", B.IMPORT)]),
    ("def f(a=(d := 1)):\n    y = 2\nclass C:\n    z = 3\n",
     [S("d", B.WALRUS, value="1"), S("f", B.DEF),
      S("C", B.CLASS)]),
    ("print((w := v))\n", [S("w", B.WALRUS, value="v")]),
    ("r = [(w := i) for i in v]\n", [S("w", B.WALRUS, value="i"), S("r", B.ASSIGN, value="[(w := i) for i in v]")]),
    ("f = lambda q: (w := q)\n", [S("f", B.ASSIGN, value="lambda q: (w := q)")]),
    ("if (w := v):\n    x = 1\nelif c:\n    y = 2\nelse:\n    z = 3\n",
     [S("w", B.WALRUS, value="v", compound=True), S("x", B.ASSIGN, value="1", compound=True),
      S("y", B.ASSIGN, value="2", compound=True), S("z", B.ASSIGN, value="3", compound=True)]),
    ("while c:\n    x = 1\nelse:\n    y = 2\n", [S("x", B.ASSIGN, value="1", compound=True), S("y", B.ASSIGN, value="2", compound=True)]),
    ("match p:\n    case [h, *t]:\n        pass\n    case {'k': _, **r}:\n        pass\n    case Point(x=px) as whole:\n        pass\n",
     [S("h", B.MATCH, compound=True), S("t", B.MATCH, compound=True),
      S("r", B.MATCH, compound=True), S("whole", B.MATCH, compound=True),
      S("px", B.MATCH, compound=True)]),
    ("del a, (b, c.d)\n", [S("a", B.DEL, unpacked=True), S("b", B.DEL, unpacked=True)]),
    ("del a\n", [S("a", B.DEL)]),
    ("type Alias = list[int]\n", [S("Alias", B.TYPE_ALIAS)]),
    ("def f():\n    global g\n    nonlocal n\n", [S("f", B.DEF)]),
    ("global g, h\n", [S("g", B.GLOBAL), S("h", B.GLOBAL)]),
    ("if c: a = 1; b = 2\n", [S("a", B.ASSIGN, value="1", compound=True), S("b", B.ASSIGN, value="2", compound=True)]),
]


@pytest.mark.parametrize("source,expected", CASES)
def test_module_sites(source, expected):
    module = cst.parse_module(source)
    assert [_summary(s) for s in B.scope_sites(module)] == expected


def test_function_scope_parameters_and_nonlocal():
    func = cst.parse_module("def f(a, /, b=1, *args, c, **kw):\n    nonlocal n\n    x = a\n").body[0]
    assert [_summary(s) for s in B.scope_sites(func)] == [
        S("a", B.PARAMETER), S("b", B.PARAMETER),
        S("c", B.PARAMETER), S("args", B.PARAMETER),
        S("kw", B.PARAMETER), S("n", B.NONLOCAL),
        S("x", B.ASSIGN, value="a"),
    ]


def test_lambda_scope():
    lam = cst.parse_expression("lambda q, r=(d := 1): (w := q)")
    assert [_summary(s) for s in B.scope_sites(lam)] == [
        S("q", B.PARAMETER), S("r", B.PARAMETER),
        S("w", B.WALRUS, value="q"),
    ]


def test_nodes_are_the_binding_nodes():
    module = cst.parse_module("for i in v:\n    pass\nwith a as f:\n    pass\ntry:\n    pass\nexcept E as e:\n    pass\nx = 1\n")
    loop, with_, try_, line = module.body
    nodes = {s.name: s.node for s in B.block_sites(module.body)}
    assert nodes == {"i": loop, "f": with_.items[0], "e": try_.handlers[0], "x": line.body[0]}


def test_compound_flag():
    module = cst.parse_module("if c:\n    x = 1\n")
    inner = module.body[0].body.body[0]
    assert [s.compound for s in B.statement_sites(inner)] == [False]
    assert [s.compound for s in B.statement_sites(inner, compound=True)] == [True]


def test_target_names():
    target = cst.parse_expression("(a, (b, *c), d.e, f[0])")
    assert B.target_names(target) == ["a", "b", "c"]
