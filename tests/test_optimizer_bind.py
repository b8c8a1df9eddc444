"""``opt_bind``: an optimizer's name re-bound by an expression that builds it on some arm only
(:func:`loopcheck.engine.events._optimizer_bound`)."""

from __future__ import annotations

import textwrap

import libcst as cst

from loopcheck.analysis import build_units

TRAINER = """
import torch
import torch.nn as nn

class Trainer:
    def __init__(self, model, optimizer=None):
        self.model = model
        self.optimizer = {value}

    def fit(self, x):
        self.optimizer.zero_grad()
        self.model(x).sum().backward()
        self.optimizer.step()

def make(model):
    return torch.optim.SGD(model.parameters(), lr=0.1)

model = nn.Linear(4, 1)
trainer = Trainer(model, torch.optim.Adam(model.parameters()))
trainer.fit(torch.randn(2, 4))
"""


def binds(value: str) -> list[tuple[str, int]]:
    """``(subject, number of constructions in builds)`` of each ``opt_bind`` of the module code."""
    source = textwrap.dedent(TRAINER).format(value=value)
    unit = build_units(cst.parse_module(source))[0]
    return [(ev.subject, len(ev.extra["builds"])) for ev in unit.events if ev.kind == "opt_bind"]


def test_a_construction_on_one_arm_binds_the_name():
    # truthiness of the optimizer is not decided: either arm may run
    assert binds("optimizer or torch.optim.AdamW(self.model.parameters())") == [("trainer.optimizer", 1)]


def test_an_arm_the_caller_rules_out_binds_nothing():
    # the one call passes a constructed optimizer, so ``optimizer is not None`` holds (builder's
    # none_test) and the construction arm never runs: the name keeps the object it is given
    assert binds("optimizer if optimizer is not None else torch.optim.AdamW(self.model.parameters())") == []


def test_a_plain_construction_or_a_name_is_no_bind():
    assert binds("torch.optim.AdamW(self.model.parameters())") == []  # the opt_build is the binding
    assert binds("optimizer") == []


def test_another_call_or_the_optimizer_itself_is_no_bind():
    # a factory may build the optimizer inside; the name may keep the object it holds
    assert binds("optimizer if optimizer is not None else make(self.model)") == []
    assert binds("self.optimizer if hasattr(self, 'optimizer') else torch.optim.AdamW(model.parameters())") == []
