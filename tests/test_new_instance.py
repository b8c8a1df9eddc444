"""``Inline.new``: the inlined ``__init__`` of a construction whose instance goes to a variable
names that variable (each run of the body starts on a new object), and LC501's machine starts
an optimizer held by an attribute of it unbound there (census 22, KwonDoRyoung/my-pytorch-template:
a trainer built per fold, whose ``__init__`` builds the optimizer from the fold's model)."""

from __future__ import annotations

import textwrap

import libcst as cst

from loopcheck.analysis import build_units
from loopcheck.engine.ir import Inline, parts


def _inlines(source: str) -> list[tuple[str, str | None]]:
    """``(function name, Inline.new)`` of every inlined call of the module's units, in order."""
    out = []
    for unit in build_units(cst.parse_module(textwrap.dedent(source))):
        stack = [unit.ir]
        while stack:
            n = stack.pop(0)
            if type(n) is Inline:
                out.append((n.func.name.value, n.new))
            stack[:0] = parts(n)
    return out


HEAD = """
    import torch

    class Trainer:
        def __init__(self, model):
            self.model = model
            self.setup()

        def setup(self):
            self.optimizer = torch.optim.Adam(self.model.parameters())
"""


def test_construction_into_a_variable_names_the_new_instance():
    found = _inlines(HEAD + """
    model = torch.nn.Linear(2, 1)
    trainer = Trainer(model)
    """)
    assert found == [("__init__", "trainer"), ("setup", None)]


def test_construction_into_no_variable_names_none():
    found = _inlines(HEAD + """
    model = torch.nn.Linear(2, 1)
    trainers = [Trainer(model)]
    """)
    assert [new for name, new in found if name == "__init__"] == [None]


def test_class_with_its_own_new_names_none():
    found = _inlines("""
    import torch

    class Trainer:
        _one = None

        def __new__(cls, model):
            if cls._one is None:
                cls._one = super().__new__(cls)
            return cls._one

        def __init__(self, model):
            self.model = model
            self.optimizer = torch.optim.Adam(self.model.parameters())

    model = torch.nn.Linear(2, 1)
    trainer = Trainer(model)
    """)
    assert [new for name, new in found if name == "__init__"] == [None]
