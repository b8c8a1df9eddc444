"""The first pass of a counted loop (:meth:`loopcheck.engine.builder.UnitBuilder.first_pass`,
:attr:`loopcheck.engine.ir.If.first_pass`): a test of the loop's counter that its first value
decides, and the arm that a path on that pass cannot take in the dataflow
(:class:`loopcheck.engine.dataflow._Interpreter`); and :meth:`Machine.goes_round`, the state of
a path that goes round a loop."""

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


def _first_pass(source: str) -> list:
    """``(outcome, the loop it belongs to is the module's first loop)`` of each ``if`` of the
    module's own code, ``None`` where the ``If`` has no ``first_pass``."""
    index = index_module(cst.parse_module(textwrap.dedent(source)))
    ir = UnitBuilder(index).module_unit()
    loops = _nodes(ir, Loop, [])
    out = []
    for node in _nodes(ir, If, []):
        fp = node.first_pass
        out.append(None if fp is None else (fp[1], fp[0] is loops[0].info.node))
    return out


def _loop(head: str, test: str, body: str = "") -> str:
    return f"{head}\n{body}    if {test}:\n        f()\n"


@pytest.mark.parametrize("head, test, outcome, body", [
    ("for e in range(n):", "e != 0", False, ""),
    ("for e in range(n):", "e > 0", False, ""),
    ("for e in range(n):", "0 < e", False, ""),
    ("for e in range(n):", "e >= 0 + 1", False, ""),
    ("for e in range(n):", "not e == 0", False, ""),
    ("for e in range(n):", "e", False, ""),
    ("for e in range(n):", "e % 2 == 1", False, ""),
    ("for e in range(n):", "e == 0", True, ""),
    ("for e in range(n):", "e != 1", True, ""),
    ("for e in range(n):", "not e", True, ""),
    ("for e in range(0, n):", "e > 0", False, ""),
    ("for e in range(1, n + 1):", "e > 1", False, ""),
    ("for e in range(1, n + 1):", "e != 0", True, ""),
    ("for e in range(2, n, 2):", "e == 2", True, ""),
    ("S = 3\nfor e in range(S, n):", "e > S", False, ""),  # a run constant
    ("for i, x in enumerate(xs):", "i > 0", False, ""),
    ("for i, x in enumerate(xs, 1):", "i > 1", False, ""),
    ("for i, x in enumerate(xs, start=1):", "i == 1", True, ""),
    ("for e in range(args.start, n):", "e != 0", None, ""),  # the first value is not known
    ("for e in range(start, n):", "e != 0", None, ""),
    ("for i, x in enumerate(xs, start=k):", "i > 0", None, ""),
    ("for e in range(n):", "e > 0 and flag", None, ""),  # another value decides it too
    ("for e in range(n):", "e > k", None, ""),
    ("for e in range(n):", "f(e)", None, ""),
    ("for e in epochs:", "e != 0", None, ""),  # not a counter
    ("for e in range(n):", "e != 0", None, "    e = e + 1\n"),  # the body re-binds ``e``
])
def test_first_pass_outcome(head, test, outcome, body):
    assert _first_pass(_loop(head, test, body)) == [None if outcome is None else (outcome, True)]


def test_the_innermost_counter_that_decides():
    source = "for e in range(n):\n    for i in range(1, m):\n        if i > 1:\n            f()\n        if e > 0:\n            f()\n"
    index = index_module(cst.parse_module(source))
    ir = UnitBuilder(index).module_unit()
    outer, inner = _nodes(ir, Loop, [])
    first, second = _nodes(ir, If, [])
    assert first.first_pass == (inner.info.node, False)
    assert second.first_pass == (outer.info.node, False)


class _Stepped(Machine):
    """Whether ``optimizer`` has stepped since it was built, and (:meth:`goes_round`) ``"idle"``
    once the loop ``loop`` goes round with it not stepped, when ``idle`` is set."""

    kinds = frozenset({"opt_build", "step", "sched_step"})

    def __init__(self, idle: bool = False) -> None:
        self.idle = idle

    def initial(self):
        return None

    def transfer(self, s, ev):
        return {"opt_build": False, "step": True}.get(ev.kind, s)

    def goes_round(self, s, loop):
        return "idle" if self.idle and s is False and loop.info.node.target.value == "epoch" else s


_PROGRAM = """
import torch
model = torch.nn.Linear(4, 4)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
scheduler = torch.optim.lr_scheduler.ExponentialLR(optimizer, gamma=0.5)
for epoch in {iterable}:
    if {test}:
        scheduler.step()
    for x in loader:
        if x.sum() == 0:
            continue
        model(x).sum().backward()
        optimizer.step()
"""


def _states(test: str, iterable: str = "range(10)", idle: bool = False) -> set:
    (unit,) = build_units(cst.parse_module(_PROGRAM.format(test=test, iterable=iterable)))
    (ev,) = [ev for ev in unit.events if ev.kind == "sched_step"]
    return run(_Stepped(idle), unit.ir).states(ev)


@pytest.mark.parametrize("test, iterable, idle, states", [
    # the first pass cannot take the arm: only the states of later passes reach the step
    ("epoch != 0", "range(10)", False, {True, False}),  # (False: a pass whose every batch was skipped)
    ("epoch != 0", "range(10)", True, {True, "idle"}),
    ("epoch > 0", "range(10)", True, {True, "idle"}),
    ("epoch >= 2", "range(1, 10)", True, {True, "idle"}),
    # the first pass takes it: the optimizer built and not stepped
    ("epoch != 1", "range(10)", True, {False, True, "idle"}),
    ("epoch != 0", "range(args.start_epoch, 10)", True, {False, True, "idle"}),
    ("epoch != 0", "epochs", True, {False, True, "idle"}),
    ("epoch == 0", "range(10)", True, {False}),
])
def test_states_at_a_step_the_first_pass_skips(test, iterable, idle, states):
    assert _states(test, iterable, idle) == states


def test_a_loop_run_once_per_object_has_no_first_pass():
    """``for i, opt in enumerate(optimizers):`` under a machine that re-binds its object on each
    pass runs its body once, for every pass: ``if i > 0:`` may then be taken."""

    class _Rebinding(_Stepped):
        def rebinds(self, loop):
            return True

    source = (
        "import torch\nmodel = torch.nn.Linear(4, 4)\n"
        "optimizer = torch.optim.SGD(model.parameters(), lr=0.1)\n"
        "scheduler = torch.optim.lr_scheduler.ExponentialLR(optimizer, gamma=0.5)\n"
        "for i in range(3):\n    if i > 0:\n        scheduler.step()\n    optimizer.step()\n"
    )
    (unit,) = build_units(cst.parse_module(source))
    (ev,) = [ev for ev in unit.events if ev.kind == "sched_step"]
    assert run(_Rebinding(), unit.ir).states(ev) == {False}
    assert run(_Stepped(), unit.ir).states(ev) == {True}
