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


# source -> the sites of the module's code, in order
CASES = [
    ("x = v\n", [("x", B.ASSIGN, "v", None, False, False)]),
    ("a = b = v\n", [("a", B.ASSIGN, "v", None, False, False), ("b", B.ASSIGN, "v", None, False, False)]),
    ("self.x = v\nd[k] = v\n", []),
    ("a, (b, *c), d.e = v\n", [("a", B.ASSIGN, None, None, True, False), ("b", B.ASSIGN, None, None, True, False),
                               ("c", B.ASSIGN, None, None, True, False)]),
    ("x: int = v\ny: int\n", [("x", B.ANNOTATED, "v", None, False, False), ("y", B.ANNOTATED, None, None, False, False)]),
    ("x += v\n", [("x", B.AUGMENTED, "v", "AddAssign", False, False)]),
    ("for i, t in v:\n    pass\n", [("i", B.FOR, None, None, True, True), ("t", B.FOR, None, None, True, True)]),
    ("with a as f, b as (g, h):\n    pass\n", [("f", B.WITH, None, None, False, True), ("g", B.WITH, None, None, True, True),
                                              ("h", B.WITH, None, None, True, True)]),
    ("try:\n    pass\nexcept E as e:\n    pass\n", [("e", B.EXCEPT, None, None, False, True)]),
    ("import os.path\nimport numpy as np\nfrom m import a, b as c\nfrom n import *\n",
     [("os", B.IMPORT, None, None, False, False), ("np", B.IMPORT, None, None, False, False),
      ("a", B.IMPORT, None, None, False, False), ("c", B.IMPORT, None, None, False, False)]),
    ("def f(a=(d := 1)):\n    y = 2\nclass C:\n    z = 3\n",
     [("d", B.WALRUS, "1", None, False, False), ("f", B.DEF, None, None, False, False),
      ("C", B.CLASS, None, None, False, False)]),
    ("print((w := v))\n", [("w", B.WALRUS, "v", None, False, False)]),
    ("r = [(w := i) for i in v]\n", [("w", B.WALRUS, "i", None, False, False), ("r", B.ASSIGN, "[(w := i) for i in v]", None, False, False)]),
    ("f = lambda q: (w := q)\n", [("f", B.ASSIGN, "lambda q: (w := q)", None, False, False)]),
    ("if (w := v):\n    x = 1\nelif c:\n    y = 2\nelse:\n    z = 3\n",
     [("w", B.WALRUS, "v", None, False, True), ("x", B.ASSIGN, "1", None, False, True),
      ("y", B.ASSIGN, "2", None, False, True), ("z", B.ASSIGN, "3", None, False, True)]),
    ("while c:\n    x = 1\nelse:\n    y = 2\n", [("x", B.ASSIGN, "1", None, False, True), ("y", B.ASSIGN, "2", None, False, True)]),
    ("match p:\n    case [h, *t]:\n        pass\n    case {'k': _, **r}:\n        pass\n    case Point(x=px) as whole:\n        pass\n",
     [("h", B.MATCH, None, None, False, True), ("t", B.MATCH, None, None, False, True),
      ("r", B.MATCH, None, None, False, True), ("whole", B.MATCH, None, None, False, True),
      ("px", B.MATCH, None, None, False, True)]),
    ("del a, (b, c.d)\n", [("a", B.DEL, None, None, True, False), ("b", B.DEL, None, None, True, False)]),
    ("del a\n", [("a", B.DEL, None, None, False, False)]),
    ("type Alias = list[int]\n", [("Alias", B.TYPE_ALIAS, None, None, False, False)]),
    ("def f():\n    global g\n    nonlocal n\n", [("f", B.DEF, None, None, False, False)]),
    ("global g, h\n", [("g", B.GLOBAL, None, None, False, False), ("h", B.GLOBAL, None, None, False, False)]),
    ("if c: a = 1; b = 2\n", [("a", B.ASSIGN, "1", None, False, True), ("b", B.ASSIGN, "2", None, False, True)]),
]


@pytest.mark.parametrize("source,expected", CASES)
def test_module_sites(source, expected):
    module = cst.parse_module(source)
    assert [_summary(s) for s in B.scope_sites(module)] == expected


def test_function_scope_parameters_and_nonlocal():
    func = cst.parse_module("def f(a, /, b=1, *args, c, **kw):\n    nonlocal n\n    x = a\n").body[0]
    assert [_summary(s) for s in B.scope_sites(func)] == [
        ("a", B.PARAMETER, None, None, False, False), ("b", B.PARAMETER, None, None, False, False),
        ("c", B.PARAMETER, None, None, False, False), ("args", B.PARAMETER, None, None, False, False),
        ("kw", B.PARAMETER, None, None, False, False), ("n", B.NONLOCAL, None, None, False, False),
        ("x", B.ASSIGN, "a", None, False, False),
    ]


def test_lambda_scope():
    lam = cst.parse_expression("lambda q, r=(d := 1): (w := q)")
    assert [_summary(s) for s in B.scope_sites(lam)] == [
        ("q", B.PARAMETER, None, None, False, False), ("r", B.PARAMETER, None, None, False, False),
        ("w", B.WALRUS, "q", None, False, False),
    ]


def test_nodes_are_the_binding_nodes():
    module = cst.parse_module("for i in v:\n    pass\nwith a as f:\n    pass\ntry:\n    pass\nexcept E as e:\n    pass\nx = 1\n")
    loop, with_, try_, line = module.body
    nodes = {s.name: s.node for s in B.block_sites(module.body)}
    assert nodes == {"i": loop, "f": with_.items[0], "e": try_.handlers[0], "x": line.body[0]}


def test_kept_per_statement_and_compound_flag():
    module = cst.parse_module("if c:\n    x = 1\n")
    inner = module.body[0].body.body[0]
    assert B.statement_sites(inner) is B.statement_sites(inner)
    assert [s.compound for s in B.statement_sites(inner)] == [False]
    assert [s.compound for s in B.statement_sites(inner, compound=True)] == [True]


def test_target_names():
    target = cst.parse_expression("(a, (b, *c), d.e, f[0])")
    assert B.target_names(target) == ["a", "b", "c"]
