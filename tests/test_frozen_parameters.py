"""Which constructions hold no parameter that requires grad
(``construction_without_trainable_parameters``): a class of the project whose only parameters
are made with ``nn.Parameter(t, requires_grad=False)`` (knowledge: ``requires_grad_arg`` of
``torch.nn.Parameter``), and what lets a parameter require grad again (a method of the class, a
``requires_grad`` set on a parameter of the model after it is built)."""

from __future__ import annotations

import libcst as cst
import pytest

from loopcheck.analysis import build_units
from loopcheck.engine.builder import index_module
from loopcheck.engine.values import construction_without_parameters, construction_without_trainable_parameters

CLASSES = '''
import torch
import torch.nn as nn


class Hebbian(nn.Module):
    def __init__(self, n, rates=None):
        super().__init__()
        self.rates = rates
        self.weight = nn.Parameter(torch.rand(n, n), requires_grad=False)

    def forward(self, x):
        return x.mm(self.weight)


class Positional(nn.Module):
    def __init__(self, n):
        super().__init__()
        self.weight = nn.Parameter(torch.rand(n, n), False)


class Registered(nn.Module):
    def __init__(self, n):
        super().__init__()
        self.register_parameter("weight", nn.Parameter(torch.rand(n, n), requires_grad=False))
        self.register_parameter("bias", None)


class Readout(Hebbian):
    def __init__(self, n):
        super().__init__(n)
        self.fc = nn.Linear(n, 2)


class Trainable(nn.Module):
    def __init__(self, n):
        super().__init__()
        self.weight = nn.Parameter(torch.rand(n, n))


class Explicit(nn.Module):
    def __init__(self, n):
        super().__init__()
        self.weight = nn.Parameter(torch.rand(n, n), requires_grad=True)


class Opens(Hebbian):
    def open(self):
        self.weight.requires_grad_()


class Stack(nn.Module):
    def __init__(self, n):
        super().__init__()
        self.first = Hebbian(n)
        self.second = Registered(n)


class Empty(nn.Module):
    def forward(self, x):
        return x


def build(given):
    rates = [torch.tensor(0.004), torch.tensor(-0.003)]
    model = {call}
    return model
'''


def _verdicts(call: str) -> tuple[bool, bool]:
    module = cst.parse_module(CLASSES.replace("{call}", call))
    index = index_module(module)
    ((unit, ev),) = [(u, ev) for u in build_units(module, index) for ev in u.of_kind("model_build")
                     if ev.subject.rpartition(":")[2] == "model"]
    return (construction_without_trainable_parameters(unit, ev.raw.node, ev.raw),
            construction_without_parameters(unit, ev.raw.node, ev.raw))


@pytest.mark.parametrize("call, trainable_free, parameterless", [
    ("Hebbian(4)", True, False),
    ("Hebbian(4, rates)", True, False),  # a list of new tensors kept: neither a module nor holding one
    ("Hebbian(4, given)", False, False),  # what the caller gives is not known
    ("Hebbian(4, torch.zeros(2, requires_grad=True))", False, False),  # kept, and it requires grad
    ("Positional(4)", True, False),
    ("Registered(4)", True, False),
    ("Stack(4)", True, False),
    ("Empty()", True, True),
    ("Readout(4)", False, False),  # an nn.Linear beside the frozen weight
    ("Trainable(4)", False, False),
    ("Explicit(4)", False, False),
    ("Opens(4)", False, False),  # a method of the class lets its weight require grad again
])
def test_construction_without_trainable_parameters(call, trainable_free, parameterless):
    assert _verdicts(call) == (trainable_free, parameterless)


EVENTS = '''
import torch
import torch.nn as nn

model = nn.Linear(4, 4)
x = torch.zeros(2, 4)
{line}
out = model(x)
'''


@pytest.mark.parametrize("line, events", [
    ("model.weight.requires_grad = True", [("unfreeze", "model.weight")]),
    ("model.weight.requires_grad = False", [("freeze", "model.weight")]),
    ("model.weight.requires_grad_()", [("unfreeze", "model.weight")]),
    ("model.weight.requires_grad_(False)", [("freeze", "model.weight")]),
    ("model.requires_grad_()", [("unfreeze", "model")]),
    ("x.requires_grad_()", []),  # a data tensor: no model's parameter
    ("x.requires_grad = True", []),
])
def test_requires_grad_of_a_parameter_of_a_model(line, events):
    (unit,) = build_units(cst.parse_module(EVENTS.replace("{line}", line)))
    assert [(ev.kind, ev.subject) for ev in unit.of_kind("freeze", "unfreeze")] == events
