"""A call that runs a method a class of the project defines is read from that method's body:
the model's own ``train()`` (an override of ``nn.Module.train``, the knowledge's
``override_body``) and what a model's ``forward`` clears (:func:`forward_clears`)."""

from __future__ import annotations

import libcst as cst
import pytest

from loopcheck.analysis import build_units
from loopcheck.engine.summaries import forward_clears

HEAD = '''
import torch
from torch import nn
'''


def _events(src: str) -> list[tuple[str, str | None, str]]:
    """``(kind, subject, first line of the call)`` of the mode and clearing events of the
    module's code, in program order."""
    module = cst.parse_module(HEAD + src)
    (unit,) = [u for u in build_units(module) if u.entry is None]
    code = cst.Module([]).code_for_node
    kinds = {"train", "eval", "mode_unknown", "mode_restore", "zero_grad", "zero_grad_model"}
    return [(e.kind, e.subject, code(e.node).splitlines()[0]) for e in unit.events if e.kind in kinds]


OWN_LOOP = '''
class GAN(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Linear(4, 1)
        self.opt = torch.optim.SGD(self.net.parameters(), lr=0.1)

    def train(self, restore=False, n_critic=5):
        self.opt.zero_grad()

gan = GAN()
gan.train(False, 5)
'''

SUPER = '''
class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 1)

    def train(self, mode=True):
        super().train(mode)
        return self

model = Net()
model.train(False)
model.train()
model.eval()
'''

UNKNOWN_CLASS = '''
class GAN(nn.Module):
    def train(self, restore=False, n_critic=5):
        pass

def run(model):
    model.train(False)
'''

NO_OVERRIDE = '''
class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 1)

model = Net()
model.train(False)
'''


def test_own_train_method_is_no_mode_switch():
    assert _events(OWN_LOOP) == [("zero_grad", "gan.opt", "self.opt.zero_grad()")]


def test_super_train_switches_with_the_mode_the_call_gave():
    assert _events(SUPER) == [
        ("eval", "model", "super().train(mode)"),
        ("train", "model", "super().train(mode)"),
        ("eval", "model", "model.eval()"),
    ]


def test_receiver_of_unknown_class_keeps_the_library_reading():
    module = cst.parse_module(HEAD + UNKNOWN_CLASS)
    (unit,) = [u for u in build_units(module) if u.entry is not None and u.entry.name.value == "run"]
    modes = [(e.kind, e.subject.rpartition(":")[2]) for e in unit.events if e.kind in ("train", "eval")]
    assert modes == [("eval", "model")]  # (the parameter's symbol is local to the function)


def test_without_override_train_false_is_eval():
    assert _events(NO_OVERRIDE) == [("eval", "model", "model.train(False)")]


CLEARING_FORWARD = '''
class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.enc = nn.Linear(4, 4)
        self.dec = nn.Linear(4, 1)

    def forward(self, x):
        self.zero_grad()
        self.enc.zero_grad(set_to_none=False)
        return self.dec(self.enc(x))

model = Net()
opt = torch.optim.SGD(model.parameters(), lr=0.1)
loss = model(torch.randn(2, 4)).sum()
'''


def test_forward_call_clears_what_its_forward_clears():
    assert _events(CLEARING_FORWARD) == [
        ("zero_grad_model", "model", "model(torch.randn(2, 4))"),
        ("zero_grad_model", "model.enc", "model(torch.randn(2, 4))"),
    ]


def _forward(body: str) -> cst.FunctionDef:
    return cst.parse_module(body).body[0]


@pytest.mark.parametrize("src, expected", [
    ("def forward(self, x):\n    self.zero_grad()\n    return x\n", (("", "default"),)),
    ("def forward(me, x):\n    y = x * 2\n    me.zero_grad(True)\n    return y\n", (("", True),)),
    ("def forward(self, x):\n    self.dec.zero_grad(set_to_none=flag)\n    return x\n", ((".dec", None),)),
    ("def forward(self, x, *a):\n    self.zero_grad(*a)\n    return x\n", (("", None),)),
    # after an early return, under an if or in a loop: not on every call
    ("def forward(self, x):\n    if x is None:\n        return x\n    self.zero_grad()\n    return x\n", ()),
    ("def forward(self, x):\n    if x is None:\n        self.zero_grad()\n    return x\n", ()),
    ("def forward(self, x):\n    for _ in x:\n        self.zero_grad()\n    return x\n", ()),
    # another object's zero_grad, and a nested function's
    ("def forward(self, x):\n    other.zero_grad()\n    return x\n", ()),
    ("def forward(self, x):\n    def f():\n        self.zero_grad()\n    return x\n", ()),
])
def test_forward_clears(src, expected):
    assert forward_clears(_forward(src)) == expected
