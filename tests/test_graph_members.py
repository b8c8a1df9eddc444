"""The member of a mapping read by a string key (``out["loss"]``): which reads of a unit the
graph fact establishes (engine/graphs.py, ``_Graphs.member_carries``; ``Sources.members``)."""
from __future__ import annotations

import textwrap

import libcst as cst
import pytest

from loopcheck.analysis import build_units
from loopcheck.engine.graphs import _Graphs
from loopcheck.engine.ir import Assign

HEAD = """
import torch


def train(model, loader):
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    total = 0.0
    for x, y in loader:
        optimizer.zero_grad()
        out = model(x, y)
"""


def _verdict(body: str) -> tuple[frozenset, str]:
    """The members the last ``total += ...`` reads, and the graph verdict of its value."""
    source = HEAD + textwrap.indent(textwrap.dedent(body), " " * 8)
    (unit,) = [u for u in build_units(cst.parse_module(source)) if any(isinstance(e, Assign) for e in u.raws())]
    raws = unit.raws()
    g = _Graphs(raws, unit.roles)
    g.run()
    (store,) = [e for e in raws if isinstance(e, Assign) and e.op == "AddAssign"]
    return frozenset(k for _, k in store.sources.members), g.sources_verdict(store.sources, store, store.target)


@pytest.mark.parametrize("body, members, verdict", [
    # the member a backward ran on, read again: the same tensor
    ('loss = out["loss"]\nloss.backward()\noptimizer.step()\ntotal += out["loss"]\n', {"loss"}, "yes"),
    # another member: nothing established
    ('loss = out["loss"]\nloss.backward()\noptimizer.step()\ntotal += out["reward"]\n', {"reward"}, "unknown"),
    # the member replaced in between (by a store, or by a method of the mapping)
    ('loss = out["loss"]\nloss.backward()\nout["loss"] = loss.detach()\ntotal += out["loss"]\n', {"loss"}, "unknown"),
    ('loss = out["loss"]\nloss.backward()\nout.update(loss=0.0)\ntotal += out["loss"]\n', {"loss"}, "unknown"),
    # the backward on a value computed from the member: the member itself is not established
    ('loss = out["loss"].mean()\nloss.backward()\ntotal += out["loss"]\n', {"loss"}, "unknown"),
    # the member's value detached, or read by a key that is not one literal
    ('loss = out["loss"]\nloss.backward()\ntotal += out["loss"].item()\n', frozenset(), "no"),
    ('loss = out["loss"]\nloss.backward()\ntotal += out[f"lo{1}ss"]\n', frozenset(), "unknown"),
])
def test_member_read_again(body, members, verdict):
    assert _verdict(body) == (frozenset(members), verdict)


def test_member_of_another_object():
    """``out`` re-bound between the two reads: another mapping, whose member is not known."""
    body = 'loss = out["loss"]\nloss.backward()\nout = model(x, y)\ntotal += out["loss"]\n'
    assert _verdict(body) == (frozenset({"loss"}), "unknown")
