"""Facts LC401 reads of a unit: what a comprehension's value is computed from
(``builder._sources_plan``: its element, not its iterable, when the element holds nothing) and
which appended values a ``backward()`` frees in the iteration that stores them
(``graphs.graph_stores``, ``GraphStore.freed``)."""
from __future__ import annotations

import textwrap

import libcst as cst
import pytest

from loopcheck.analysis import build_units
from loopcheck.engine.graphs import graph_stores
from loopcheck.engine.ir import Assign

HEAD = """
import torch
from torch import nn

model = nn.Linear(4, 1)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
losses = []
"""


def _unit(body: str):
    (unit,) = build_units(cst.parse_module(HEAD + textwrap.dedent(body)))
    return unit


@pytest.mark.parametrize("value, names", [
    ("[l.item() for l in losses]", set()),
    ("[float(l) for l in losses]", set()),
    ("[(l.item(), l.detach()) for l in losses]", set()),
    ("[l for l in losses]", {"l", "losses"}),  # (the element's name too)
    ("[l * 2 for l in losses]", {"l", "losses"}),
    ("[l.item() + w for l in losses]", {"l", "losses", "w"}),
])
def test_comprehension_sources(value: str, names: set):
    unit = _unit(f"w = 1.0\nr = {value}\n")
    (assign,) = [e for e in unit.raws() if isinstance(e, Assign) and e.target == "r"]
    assert set(assign.sources.names) == names


@pytest.mark.parametrize("body, freed", [
    # backpropagated in the iteration that stores it
    ("for x in [torch.randn(2, 4), torch.randn(2, 4)]:\n    optimizer.zero_grad()\n    loss = model(x).mean()\n"
     "    losses.append(loss)\n    loss.backward()\n    optimizer.step()\n", True),
    # kept with retain_graph: its saved tensors stay
    ("for x in [torch.randn(2, 4), torch.randn(2, 4)]:\n    optimizer.zero_grad()\n    loss = model(x).mean()\n"
     "    losses.append(loss)\n    loss.backward(retain_graph=True)\n    optimizer.step()\n", False),
    # another value backpropagated
    ("for x in [torch.randn(2, 4), torch.randn(2, 4)]:\n    optimizer.zero_grad()\n    loss = model(x).mean()\n"
     "    out = model(x)\n    losses.append(out)\n    loss.backward()\n    optimizer.step()\n", False),
])
def test_appended_value_freed(body: str, freed: bool):
    unit = _unit(body)
    _carriers, stores = graph_stores(unit.raws(), unit.roles)
    (store,) = [s for s in stores if s.how == "append"]
    assert store.freed is freed


def test_a_member_flows_from_each_object_of_its_dotted_name():
    """``memory._flows_from``: a returned ``probs.squeeze`` (of ``return probs.squeeze()``) is
    computed from ``probs`` and from what was stored into it; ``self@M.buf.view`` from
    ``self@M.buf`` and ``self@M``; nothing flows from an object to its other members."""
    from loopcheck.rules.memory import _flows_from

    defs = {"f:probs": {"f:p"}, "f:p": {"self@M.actor"}, "self@M.buf": {"f:h"}}
    assert _flows_from(defs, {"f:probs.squeeze"}) == {"f:probs.squeeze", "f:probs", "f:p", "self@M.actor", "self@M"}
    assert _flows_from(defs, {"self@M.buf.view"}) == {"self@M.buf.view", "self@M.buf", "f:h", "self@M"}
    assert _flows_from(defs, {"f:x"}) == {"f:x"}
