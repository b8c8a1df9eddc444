"""Which reads of a module resolve to no binding (loopcheck.engine.undefined.resolve)."""

import libcst as cst
import pytest

from loopcheck.engine.names import ImportMap
from loopcheck.engine.undefined import builds_own_loader, is_program, resolve

CASES = [
    ("x = 1\nprint(x)\n", set()),
    ("print(y)\n", {"y"}),
    ("def f():\n    return z\n", {"z"}),
    ("def f():\n    global g\n    g = 1\ndef h():\n    return g\n", set()),
    ("def f(a, *b, **c):\n    return a, b, c\n", set()),
    ("def f():\n    v = 1\n    def g():\n        return v\n", set()),
    ("class C:\n    k = 1\n    j = k\n    def m(self):\n        return k\n", {"k"}),
    ("[i for i in range(3)]\nprint(i)\n", {"i"}),
    ("if c:\n    w = 1\nprint(w)\n", {"c"}),
    ("for a in []:\n    pass\nwith open(__file__) as fh:\n    pass\nprint(a, fh)\n", set()),
    ("try:\n    pass\nexcept Exception as e:\n    print(e)\n", set()),
    ("import os.path\nfrom sys import argv as av\nprint(os, av)\n", set()),
    ("(n := 1)\nprint(n, [m for m in [1] if (q := m)], q)\n", set()),
    ("del dd\n", set()),
    ("def f(x: Undef) -> Undef2:\n    y: Undef3 = 1\n    return y\n", set()),
    ("print(len, open, __file__, __name__, True, None)\n", set()),
    ("match p:\n    case [h, *t]:\n        print(h, t)\n    case {'k': v, **r}:\n        print(v, r)\n", {"p"}),
    ("lam = lambda s, d=dflt: s + free\n", {"dflt", "free"}),
    ("def f():\n    x += 1\n", set()),
]


@pytest.mark.parametrize("source, expected", CASES)
def test_undefined_reads(source, expected):
    found = resolve(cst.parse_module(source))
    assert found.decided
    assert {n.value for n in found.undefined} == expected


@pytest.mark.parametrize("source", [
    "from m import *\nprint(y)\n",
    "globals()['y'] = 1\nprint(y)\n",
    "exec('y = 1')\nprint(y)\n",
    "import sys\nsys.modules[__name__].y = 1\nprint(y)\n",
    "import m\nsetattr(m, 'y', 1)\nprint(y)\n",
    "def __getattr__(name):\n    return 1\nprint(y)\n",
])
def test_not_decided_when_names_may_be_bound_unseen(source):
    found = resolve(cst.parse_module(source))
    assert not found.decided and not found.undefined


def test_star_import_of_known_names():
    found = resolve(cst.parse_module("from m import *\nprint(a, b)\n"), lambda stars: frozenset({"a"}))
    assert found.decided and {n.value for n in found.undefined} == {"b"}


def test_self_modules_is_no_sys_modules():
    assert resolve(cst.parse_module("import torch\nfor m in net.modules():\n    pass\n")).decided


def test_program_needs_import_and_main_block():
    assert is_program(cst.parse_module("import torch\nif __name__ == '__main__':\n    pass\n"))
    assert not is_program(cst.parse_module("import torch\nfor x in loader:\n    pass\n"))


def _builds_own_loader(source: str) -> bool:
    module = cst.parse_module(source)
    imports = ImportMap("")
    for stmt in module.body:
        if type(stmt) is cst.SimpleStatementLine:
            for small in stmt.body:
                if type(small) in (cst.Import, cst.ImportFrom):
                    imports.add(small)
    return builds_own_loader(module, resolve(module), imports.qualify)


@pytest.mark.parametrize("source, expected", [
    # a script that builds its loader over what it binds at its top level (also in a function)
    ("import torch\nds = torch.utils.data.TensorDataset(torch.ones(4))\nl = torch.utils.data.DataLoader(ds)\n", True),
    ("import torch\nds = torch.utils.data.TensorDataset(torch.ones(4))\n"
     "def get():\n    return torch.utils.data.DataLoader(ds, batch_size=len(ds))\nfor x in other:\n    pass\n", True),
    # a loader built over a function's parameter: whatever its caller gives, which may be a
    # name the reader's context binds (``get(train_set)``)
    ("from torch.utils.data import DataLoader\ndef get(ds):\n    return DataLoader(ds)\n"
     "for x in other:\n    pass\n", False),
    ("from torch.utils.data import DataLoader\ndef get():\n    ds = make()\n    return DataLoader(ds)\n"
     "for x in other:\n    pass\n", False),
    # a snippet: its loader comes from the reader, or is built over a dataset the reader gives
    ("import torch\nfor x in loader:\n    pass\n", False),
    ("from torch.utils.data import DataLoader\nl = DataLoader(train_set, batch_size=4)\n", False),
    # a class of another library's name is no loader
    ("from mylib import DataLoader\nl = DataLoader([1])\nfor x in loader:\n    pass\n", False),
])
def test_builds_own_loader(source, expected):
    assert _builds_own_loader(source) is expected
