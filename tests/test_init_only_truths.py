"""Tests of one attribute that only ``__init__`` assigns are correlated within a run of a method
(:attr:`loopcheck.engine.ir.If.constant`): :func:`loopcheck.engine.values.reaching_definitions`
lets a path take only agreeing arms of ``if not self.a:`` and ``if self.a:``, until an event that
may change the attribute."""

from __future__ import annotations

import libcst as cst
import pytest

from loopcheck.analysis import build_units
from loopcheck.engine.attr_facts import truth_arms
from loopcheck.engine.ir import Assign, If, parts
from loopcheck.engine.values import OUTSIDE, reaching_definitions


@pytest.mark.parametrize("test, arms", [
    ("self.a", (True, False)),
    ("not self.a", (False, True)),
    ("not not self.a", (True, False)),
    ("self.a is False", (False, None)),
    ("self.a == False", (False, None)),
    ("self.a is None", (False, None)),
    ("self.a is True", (True, None)),
    ("self.a is not False", (None, False)),
    ("self.a != True", (None, True)),
    ("not self.a is None", (None, False)),
    ("self.a == 0", None),  # (another literal: not read)
    ("self.a is x", None),
    ("a", None),
    ("f().a", None),
])
def test_truth_arms(test: str, arms):
    assert truth_arms(cst.parse_expression(test)) == arms


LOSS = '''
import torch
import torch.nn.functional as F
from torch import nn


class Loss(nn.Module):
    def __init__(self, raw):
        super().__init__()
        self.raw = raw

    def forward(self, x, y):
        if not self.raw:
            x = torch.sigmoid(x)
        CHANGE
        if self.raw:
            loss = F.binary_cross_entropy_with_logits(x, y)
        else:
            loss = F.binary_cross_entropy(x, y)
        return loss
'''


def _forward(source: str):
    (unit,) = [u for u in build_units(cst.parse_module(source)) if u.entry is not None and u.entry.name.value == "forward"]
    return unit


def _ifs(node, out):
    if isinstance(node, If):
        out.append(node)
    for part in parts(node):
        _ifs(part, out)
    return out


def _reaching_loss_inputs(source: str) -> list[set]:
    """Per loss call of ``forward``, in order: ``"sigmoid"`` and/or ``"outside"`` for the
    definitions of ``x`` that reach it."""
    unit = _forward(source)
    out = []
    for ev in unit.of_kind("loss_input"):
        arg = ev.extra["arg"]
        found = reaching_definitions(unit, arg.sym, ev.raw)
        out.append({"outside" if d == OUTSIDE else "sigmoid" for d in found if d == OUTSIDE or type(d) is Assign})
    return out


def test_the_two_tests_of_an_init_only_attribute_are_one():
    source = LOSS.replace("CHANGE", "pass")
    assert [n.constant for n in _ifs(_forward(source).ir, [])] == [True, True]
    assert _reaching_loss_inputs(source) == [{"outside"}, {"sigmoid"}]


@pytest.mark.parametrize("first", ["self.raw is False", "self.raw == False", "self.raw is None"])
def test_a_comparison_with_a_falsy_literal_says_the_attribute_is_falsy(first: str):
    source = LOSS.replace("CHANGE", "pass").replace("if not self.raw:", f"if {first}:")
    assert _reaching_loss_inputs(source)[0] == {"outside"}


@pytest.mark.parametrize("change", [
    "self.raw = not self.raw",  # (in the method itself)
    "self.raw.append(1)",  # a call that receives the object the attribute holds
    "self.__init__(True)",
])
def test_an_event_that_may_change_the_attribute_ends_what_the_path_knows(change: str):
    assert _reaching_loss_inputs(LOSS.replace("CHANGE", change))[0] == {"outside", "sigmoid"}


def test_a_call_of_a_method_that_does_not_assign_it_keeps_what_the_path_knows():
    source = LOSS.replace("CHANGE", "self.log(x)").replace(
        "    def forward", "    def log(self, x):\n        print(x.shape)\n\n    def forward")
    assert _reaching_loss_inputs(source)[0] == {"outside"}


@pytest.mark.parametrize("more", [
    "\n\n    def use_raw(self):\n        self.raw = True\n",  # another method
    "\n\n    @property\n    def scale(self):\n        return 1\n\n    raw_default = False\n",  # (no: other names)
])
def test_only_another_method_assigning_it_drops_the_fact(more: str):
    source = LOSS.replace("CHANGE", "pass").replace("        return loss\n", "        return loss\n" + more)
    assert [n.constant for n in _ifs(_forward(source).ir, [])] == ["self.raw = True" not in more] * 2


@pytest.mark.parametrize("more", [
    "\n\nclass Sub(Loss):\n    def flip(self):\n        self.raw = False\n",  # a subclass's method
    "\n\ncriterion = Loss(False)\ncriterion.raw = True\n",  # from outside
    "\n\nclass Holder:\n    def __init__(self):\n        self.loss = Loss(False)\n        self.loss.raw = True\n",
    "\n\ndef configure(obj, name):\n    setattr(obj, name, True)\n",  # a write it does not name
    "\n\nclass Late(Loss):\n    def __init__(self):\n        super().__init__(False)\n\n"
    "        def later():\n            self.raw = True\n        self.later = later\n",  # a function __init__ defines
])
def test_any_other_write_of_the_attribute_drops_the_fact(more: str):
    source = LOSS.replace("CHANGE", "pass") + more
    assert [n.constant for n in _ifs(_forward(source).ir, [])] == [False, False]
    assert _reaching_loss_inputs(source)[0] == {"outside", "sigmoid"}


def test_a_subclass_init_assigning_it_keeps_the_fact():
    source = LOSS.replace("CHANGE", "pass") + "\n\nclass Raw(Loss):\n    def __init__(self):\n        super().__init__(True)\n        self.raw = True\n"
    assert [n.constant for n in _ifs(_forward(source).ir, [])] == [True, True]


def test_a_property_of_that_name_drops_the_fact():
    source = LOSS.replace("CHANGE", "pass").replace("self.raw = raw", "self._raw = raw").replace(
        "    def forward", "    @property\n    def raw(self):\n        return self._raw\n\n    def forward")
    assert [n.constant for n in _ifs(_forward(source).ir, [])] == [False, False]


def test_the_mode_attribute_is_no_such_attribute():
    source = LOSS.replace("CHANGE", "pass").replace("self.raw", "self.training")
    assert [n.constant for n in _ifs(_forward(source).ir, [])] == [False, False]


def test_one_test_alone_is_not_marked():
    source = LOSS.replace("CHANGE", "pass").replace("if self.raw:", "if x.dim() > 1:")
    assert [n.constant for n in _ifs(_forward(source).ir, [])] == [False, False]


@pytest.mark.parametrize("change", [
    "h = self.raw\n        h.append(1)",  # a write through an alias
    "keep(self.raw)",  # the object passed to a call, which may keep it
    "for h in [self.raw]:\n            h.append(1)",  # a loop over it
    "box = {'h': self.raw}",  # stored in another object
])
def test_another_name_for_a_value_that_may_be_mutable_drops_the_fact(change: str):
    source = LOSS.replace("CHANGE", change)
    assert _reaching_loss_inputs(source)[0] == {"outside", "sigmoid"}


@pytest.mark.parametrize("value", ["False", "None", "0", "-1.5", "'sum'", "(1, 2)"])
def test_another_name_for_an_immutable_literal_keeps_the_fact(value: str):
    source = LOSS.replace("CHANGE", "h = self.raw\n        print(h)").replace("self.raw = raw", f"self.raw = {value}")
    assert [n.immutable for n in _ifs(_forward(source).ir, [])] == [True, True]
    assert _reaching_loss_inputs(source)[0] == {"outside"}


@pytest.mark.parametrize("value", ["[]", "raw", "(raw,)", "{}"])
def test_a_value_that_may_be_mutable_is_not_immutable(value: str):
    source = LOSS.replace("CHANGE", "pass").replace("self.raw = raw", f"self.raw = {value}")
    assert [n.immutable for n in _ifs(_forward(source).ir, [])] == [False, False]
    assert _reaching_loss_inputs(source)[0] == {"outside"}  # (nothing gives it another name)
