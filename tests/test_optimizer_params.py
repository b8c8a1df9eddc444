"""Which models an optimizer's parameters come from: a tensor factory's result (and the copy
``torch.cat`` or ``torch.stack`` makes, but its ``out=``) shares no memory with its arguments, a name re-bound from its own values holds what its other definitions give,
the attribute name of a call's result (``.cuda`` of ``torch.randn(3).cuda()``) is no name
the value reads, and the output of a forward of a model (or of a submodule of it) holds none of
its parameters, while a method of its class may return anything."""

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
    # torch.cat and torch.stack copy their arguments (the knowledge's ``copies``): the caller's
    # tensor, or a buffer of the model, is not what the optimizer updates
    "delta = torch.cat((x, torch.zeros(1, 3).cuda()), 0).cuda()\nopt = torch.optim.Adam([delta], 0.1)\n",
    "delta = torch.stack([x, x])\ndelta.requires_grad = True\nopt = torch.optim.Adam([delta])\n",
    "delta = torch.cat((model.buffer[1:], torch.zeros(1, 3)))\nopt = torch.optim.Adam([delta])\n",
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
    # torch.cat(..., out=buf) writes into buf and returns it: the caller's tensor
    "delta = torch.cat((torch.zeros(1, 3), torch.zeros(1, 3)), out=x)\nopt = torch.optim.SGD([delta], lr=0.1)\n",
])
def test_a_tensor_of_unknown_origin_stays_unknown(body):
    assert optimizer_models(body) is None


GENERATOR = """
import torch
import torch.nn as nn

class Generator(nn.Module):
    def __init__(self):
        super().__init__()
        self.style = nn.Linear(4, 4)
        self.body = nn.Sequential(nn.Linear(4, 4), nn.Dropout(0.1))

    def make_noise(self):
        return [self.body[0].weight]

    def forward(self, w):
        return self.body(w)

g = Generator()
g.eval()
"""


def generator_optimizer_models(body: str):
    """``models_of()`` of the optimizer ``opt`` built after a generator ``g`` of a project
    class (``GENERATOR``)."""
    source = textwrap.dedent(GENERATOR) + textwrap.dedent(body)
    for unit in build_units(cst.parse_module(source)):
        for sym, info in unit.roles.optimizers.items():
            if sym.endswith("opt"):
                return info.models_of(())
    raise AssertionError("no optimizer opt")


@pytest.mark.parametrize("body", [
    # the output of a forward of a submodule, of the model: no parameters of it
    "w = g.style(torch.randn(10, 4)).mean(0)\nw_in = w.detach().clone().unsqueeze(0)\n"
    "opt = torch.optim.Adam([w_in], lr=0.1)\n",
    "w = g(torch.randn(10, 4))\nopt = torch.optim.Adam([w.detach().clone()], lr=0.1)\n",
])
def test_a_forward_output_holds_no_parameters_of_the_model(body):
    assert generator_optimizer_models(body) == set()


def test_parameters_beside_a_forward_output_are_the_model_s():
    body = "w = g.style(torch.randn(10, 4))\nopt = torch.optim.Adam([{'params': g.parameters()}, {'params': [w]}])\n"
    assert generator_optimizer_models(body) == {"g"}


def test_a_method_of_the_model_class_may_return_its_parameters():
    # make_noise is the class's own method, not a submodule: what it returns is not known
    body = "noises = g.make_noise()\nopt = torch.optim.Adam(noises, lr=0.1)\n"
    assert generator_optimizer_models(body) is None
