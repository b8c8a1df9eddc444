"""Tests against ``None`` that the builder decides (:meth:`UnitBuilder.none_test
<loopcheck.engine.builder.UnitBuilder.none_test>`): ``x is None`` of a name that holds a
constructed object on every run (:func:`loopcheck.engine.builder.never_none`), also as the
parameter an inlined call gives it; anything that may be ``None`` stays undecided."""

from __future__ import annotations

import textwrap

import libcst as cst
import pytest

from loopcheck.engine.builder import UnitBuilder, index_module
from loopcheck.engine.ir import If, parts
from loopcheck.engine.walk import names_in

HEAD = "from torch.utils.data import DataLoader\n"


def _ifs(node, out):
    """The ``If`` nodes under ``node`` whose test reads ``loader``."""
    if isinstance(node, If) and "loader" in names_in(node.node.test):
        out.append(node)
    for part in parts(node):
        _ifs(part, out)
    return out


def _undecided(source: str) -> int:
    """How many ``if``s on ``loader`` of the module's code (with the functions it calls
    inlined) the builder leaves undecided."""
    index = index_module(cst.parse_module(HEAD + textwrap.dedent(source)))
    return len(_ifs(UnitBuilder(index).module_unit(), []))


def _run(test: str, setup: str, call: str) -> str:
    return f"{setup}\ndef run(loader):\n    if {test}:\n        skip()\n{call}\n"


MAKE = "def make():\n    loader = DataLoader(data)\n    return loader\n"


@pytest.mark.parametrize("test, setup, call", [
    ("loader is None", "", "run(DataLoader(data))"),
    ("loader is not None", "", "run(DataLoader(data))"),
    ("loader == None", "", "run(DataLoader(data))"),
    ("None is loader", "", "run(DataLoader(data))"),
    ("loader is None", MAKE, "run(make())"),
    ("loader is None", MAKE, "val = make()\nrun(loader=val)"),
    ("loader is None", MAKE, "def main():\n    val = make()\n    run(val)\nmain()"),
    ("loader is None", "class Batches:\n    pass\n", "run(Batches())"),
    ("loader is None", "def make(a):\n    if a:\n        return DataLoader(a)\n    else:\n        raise ValueError(a)\n",
     "run(make(1))"),
    ("loader is None", "def make(a):\n    if a:\n        x = DataLoader(a)\n    else:\n        x = DataLoader(b)\n    return x\n",
     "run(make(1))"),
])
def test_decided(test, setup, call):
    assert _undecided(_run(test, setup, call)) == 0


@pytest.mark.parametrize("test, setup, call", [
    ("loader", "", "run(DataLoader(data))"),  # the truth of a loader is its length
    ("loader is None", "", "run(get_loader())"),  # not the project's
    ("loader is None", "def make(a):\n    if a:\n        return DataLoader(a)\n", "run(make(1))"),  # runs off its end
    ("loader is None", "def make():\n    return None\n", "run(make())"),
    ("loader is None", "def make(a):\n    return a\n", "run(make(DataLoader(data)))"),  # a parameter
    ("loader is None", "@cache\ndef make():\n    return DataLoader(data)\n", "run(make())"),
    ("loader is None", "def make():\n    yield DataLoader(data)\n    return DataLoader(data)\n", "run(make())"),
    ("loader is None", "def make():\n    with ctx():\n        return DataLoader(data)\n", "run(make())"),
    ("loader is None", "def make():\n    x = DataLoader(data)\n    if flag:\n        x = None\n    return x\n",
     "run(make())"),
    ("loader is None", "def make():\n    for x in xs:\n        pass\n    return x\n", "run(make())"),
    ("loader is None", "class Batches:\n    def __new__(cls):\n        return None\n", "run(Batches())"),
    ("loader is None", "", "val = DataLoader(data)\nval = None\nrun(val)"),
    ("loader is None", "", "for val in loaders:\n    run(val)"),
    ("loader is None", "", "def main(val):\n    run(val)\nmain(x)"),  # a parameter the caller gives
])
def test_undecided(test, setup, call):
    assert _undecided(_run(test, setup, call)) == 1


def test_parameter_rebound_by_callee():
    source = "def run(loader):\n    if flag:\n        loader = None\n    if loader is None:\n        skip()\nrun(DataLoader(data))\n"
    assert _undecided(source) == 1


def test_entry_point_parameter_not_decided():
    """A function read as an entry point of its own: its parameter may be ``None``."""
    index = index_module(cst.parse_module(HEAD + "def run(loader):\n    if loader is None:\n        skip()\n"))
    assert len(_ifs(UnitBuilder(index).function_unit(index.functions["run"]), [])) == 1
