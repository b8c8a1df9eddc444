"""The first pass of a loop that starts at a local variable (:meth:`loopcheck.engine.builder.
UnitBuilder.first_pass_given`, :attr:`loopcheck.engine.ir.If.first_pass_given`): ``for epoch in
range(start, n):`` where ``start = 0`` on one path and a checkpoint's epoch on another; the
dataflow (:class:`loopcheck.engine.dataflow._Interpreter`) keeps a path off the arm that the
loop's first pass cannot take only where that path bound the variable to the deciding value."""

from __future__ import annotations

import textwrap

import libcst as cst
import pytest

from loopcheck.analysis import build_units
from loopcheck.engine.builder import UnitBuilder, index_module
from loopcheck.engine.dataflow import Machine, run
from loopcheck.engine.ir import If, Loop, parts


def _nodes(node, kind, out):
    if isinstance(node, kind):
        out.append(node)
    for part in parts(node):
        _nodes(part, kind, out)
    return out


def _given(body: str, test: str = "e != 0", head: str = "for e in range(start, n):") -> list:
    """``(outcome, symbol's name, value)`` of ``If.first_pass_given`` of the ``if`` in a function
    ``f(flag, n, p)`` made of ``body`` then ``head`` and ``if test:``; ``None`` where it has none."""
    source = "def f(flag, n, p):\n" + textwrap.indent(textwrap.dedent(body), "    ")
    source += f"    {head}\n        if {test}:\n            g()\n\nimport sys\nf(*sys.argv)\n"
    index = index_module(cst.parse_module(source))
    (unit,) = build_units(cst.parse_module(source))
    (loop,) = [n for n in _nodes(unit.ir, Loop, []) if n.info.node.target.value == "e"]
    out = []
    for node in _nodes(unit.ir, If, []):
        fp = node.first_pass_given
        if fp is not None:
            assert fp[0] is loop.info.node
        out.append(None if fp is None else (fp[1], fp[2].rpartition(":")[2], fp[3]))
    return out[-1:]


@pytest.mark.parametrize("body, test, given", [
    ("if flag:\n    start = p\nelse:\n    start = 0\n", "e != 0", (False, "start", 0)),
    ("if flag:\n    start = p\nelse:\n    start = 0\n", "e > 0", (False, "start", 0)),
    ("if flag:\n    start = p\nelse:\n    start = 0\n", "e", (False, "start", 0)),
    ("if flag:\n    start = p\nelse:\n    start = 0\n", "e == 0", (True, "start", 0)),
    ("start = 1\nif flag:\n    start = p\n", "e > 1", (False, "start", 1)),
    ("if flag:\n    start = p\nelse:\n    start = 0\n", "e > 0 and p.x", None),  # another value decides it too
    ("if flag:\n    start = p\n", "e != 0", None),  # no integer literal: nothing to decide with
    ("start = 0\nif flag:\n    start += p\n", "e != 0", None),  # bound otherwise than by ``start = ...``
    ("start = 0\nif flag:\n    a, start = p\n", "e != 0", None),
    ("start = 0\nfor start in p:\n    pass\n", "e != 0", None),
    ("start = 0\nif flag:\n    with p as start:\n        pass\n", "e != 0", None),
    ("start = 0\ndef h():\n    nonlocal start\n    start = 5\n", "e != 0", None),  # a nested function may re-bind it
])
def test_first_pass_given(body, test, given):
    assert _given(body, test) == [given]


def test_a_parameter_start_has_no_given_value():
    assert _given("start = p\n", head="for e in range(n, 9):") == [None]
    assert _given("x = 0\n", head="for e in range(flag, n):") == [None]  # a parameter


def test_a_known_start_keeps_first_pass():
    source = "def f(n):\n    start = 0\n    for e in range(start, n):\n        if e != 0:\n            g()\n\nf(3)\n"
    (unit,) = build_units(cst.parse_module(source))
    (node,) = _nodes(unit.ir, If, [])
    assert node.first_pass is not None and node.first_pass_given is None


class _Stepped(Machine):
    """Whether ``optimizer`` has stepped since it was built: ``None`` (unknown) after its
    ``load_state_dict()``."""

    kinds = frozenset({"opt_build", "step", "sched_step", "opt_load_state"})

    def initial(self):
        return None

    def transfer(self, s, ev):
        return {"opt_build": False, "step": True, "opt_load_state": None}.get(ev.kind, s)


_PROGRAM = """
import torch


def train(resume, ckpt, loader, n):
    model = torch.nn.Linear(4, 4)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    scheduler = torch.optim.lr_scheduler.ExponentialLR(optimizer, gamma=0.5)
{setup}
    for epoch in range(start, n):
        if epoch != 0:
            scheduler.step()
        for x in loader:
            model(x).sum().backward()
            optimizer.step()


import sys
train(len(sys.argv) > 1, torch.load(sys.argv[1]), [], 3)
"""


def _states(setup: str) -> set:
    source = _PROGRAM.format(setup=textwrap.indent(textwrap.dedent(setup), "    "))
    (unit,) = build_units(cst.parse_module(source))
    (ev,) = [ev for ev in unit.events if ev.kind == "sched_step"]
    return run(_Stepped(), unit.ir).states(ev)


@pytest.mark.parametrize("setup, states", [
    # the fresh run starts at 0 (its first pass skips the step), the resumed one loaded the state
    ("if resume:\n    optimizer.load_state_dict(ckpt['o'])\n    start = ckpt['epoch']\nelse:\n    start = 0\n",
     {None, True}),
    ("start = 0\nif resume:\n    optimizer.load_state_dict(ckpt['o'])\n    start = ckpt['epoch']\n", {None, True}),
    # the resumed run keeps a fresh optimizer and starts where nothing establishes the guard false
    ("if resume:\n    start = ckpt['epoch']\nelse:\n    start = 0\n", {False, True}),
    # a start of 1 makes ``epoch != 0`` true on the first pass
    ("if resume:\n    optimizer.load_state_dict(ckpt['o'])\n    start = ckpt['epoch']\nelse:\n    start = 1\n",
     {False, None, True}),
    # bound again after the ``0``, to an unknown value: the fact that it holds 0 ends
    ("start = 0\nif resume:\n    optimizer.load_state_dict(ckpt['o'])\nstart = ckpt['epoch'] if resume else start\n",
     {False, None, True}),
])
def test_states_at_a_step_the_first_pass_skips(setup, states):
    assert _states(setup) == states
