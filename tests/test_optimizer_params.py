"""Which models an optimizer's parameters come from: a tensor factory's result shares no memory
with its arguments, a name re-bound from its own values holds what its other definitions give,
and the attribute name of a call's result (``.cuda`` of ``torch.randn(3).cuda()``) is no name
the value reads."""

from __future__ import annotations

import textwrap

import libcst as cst
import pytest

from loopcheck.analysis import build_units

HEAD = """
import torch
import torch.nn as nn

def attack(model, x):
    model.eval()
"""


def optimizer_models(body: str):
    """``models_of()`` of the optimizer ``opt`` built in the function ``attack``: ``set()`` for
    none, ``None`` for parameters of unknown origin."""
    source = textwrap.dedent(HEAD) + textwrap.indent(textwrap.dedent(body), "    ")
    for unit in build_units(cst.parse_module(source)):
        for sym, info in unit.roles.optimizers.items():
            if sym.endswith("opt"):
                return info.models_of(())
    raise AssertionError("no optimizer opt")


@pytest.mark.parametrize("body", [
    "delta = torch.randn(x.shape)\nopt = torch.optim.SGD([delta], lr=0.1)\n",
    "delta = 0.001 * torch.randn(x.shape).detach()\ndelta = delta.detach().requires_grad_(True)\n"
    "opt = torch.optim.SGD([delta], lr=0.1)\n",
    "delta = torch.zeros_like(x).requires_grad_(True)\nopt = torch.optim.Adam([delta])\n",
    "delta = torch.zeros(x.size(0), 3).cuda()\nopt = torch.optim.Adam([delta])\n",
    "delta = torch.tensor(x)\nopt = torch.optim.Adam([delta])\n",
])
def test_a_tensor_built_here_holds_no_model_parameters(body):
    assert optimizer_models(body) == set()


def test_an_optimizer_that_also_takes_the_model_parameters_trains_the_model():
    body = "delta = torch.zeros_like(x)\nopt = torch.optim.SGD([delta] + list(model.parameters()), lr=0.1)\n"
    assert {m.rpartition(":")[2] for m in optimizer_models(body)} == {"model"}


@pytest.mark.parametrize("body", [
    "delta = x\nopt = torch.optim.SGD([delta], lr=0.1)\n",
    # as_tensor(t) may return t itself (torch.tensor(t) copies it)
    "delta = torch.as_tensor(x)\nopt = torch.optim.SGD([delta], lr=0.1)\n",
    # a name re-bound only from itself: its first value is the caller's, unknown
    "x = x.detach().requires_grad_()\nopt = torch.optim.SGD([x], lr=0.1)\n",
])
def test_a_tensor_of_unknown_origin_stays_unknown(body):
    assert optimizer_models(body) is None
