"""Symbols bound to an instance of a class of the project with no role (or to ``None``) on
every path, also through other names and an inlined function's returns: their roles are not
guessed from their names (:meth:`loopcheck.engine.roles._Inference.plain_values`)."""
from __future__ import annotations

import textwrap

import libcst as cst
import pytest

from loopcheck.analysis import build_units
from loopcheck.engine.builder import returns_bind_targets

_HEAD = """
    import torch

    class Warmup:
        def __init__(self, optimizer):
            self.optimizer = optimizer
            self.epoch = 0

        def step(self):
            self.epoch += 1
            for group in self.optimizer.param_groups:
                group["lr"] = 0.01 * self.epoch

    model = torch.nn.Linear(4, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
"""


def _schedulers(source: str) -> set[str]:
    """The symbols of the module code of ``_HEAD + source`` that have a scheduler role."""
    unit = build_units(cst.parse_module(textwrap.dedent(_HEAD) + textwrap.dedent(source)))[0]
    return set(unit.roles.schedulers)


def test_a_warmup_returned_in_a_tuple_by_an_inlined_factory_is_no_scheduler():
    """``return main, warmup`` unpacked by the caller, ``warmup`` a ``Warmup`` or ``None`` by
    its ``if``/``else`` arms: the caller's ``warmup_sched`` is a plain object; the torch
    scheduler beside it keeps its role."""
    found = _schedulers("""
        def make(optimizer, n):
            main = torch.optim.lr_scheduler.StepLR(optimizer, step_size=1)
            if n > 0:
                warmup = Warmup(optimizer)
            else:
                warmup = None
            return main, warmup

        lr_sched, warmup_sched = make(opt, 3)
        for x in loader:
            warmup_sched.step()
            opt.zero_grad(); model(x).sum().backward(); opt.step()
            lr_sched.step()
    """)
    assert "warmup_sched" not in found
    assert any(s.endswith("main") for s in found)


def test_a_name_given_a_plain_instance_through_another_name_is_no_scheduler():
    found = _schedulers("""
        warmup = Warmup(opt)
        warmup_sched = warmup
        for x in loader:
            warmup_sched.step()
            opt.zero_grad(); model(x).sum().backward(); opt.step()
    """)
    assert "warmup_sched" not in found


def test_a_name_bound_by_an_unknown_call_on_some_path_keeps_its_role_by_use():
    """On one path a call the analysis does not read (``get_scheduler``) binds it: not a
    plain object on every path."""
    found = _schedulers("""
        import sys
        from mylib import get_scheduler
        warmup = Warmup(opt)
        if len(sys.argv) > 1:
            warmup_sched = warmup
        else:
            warmup_sched = get_scheduler(opt)
        for x in loader:
            warmup_sched.step()
            opt.zero_grad(); model(x).sum().backward(); opt.step()
    """)
    assert "warmup_sched" in found


def test_a_returned_pair_not_read_item_by_item_is_not_followed():
    """``return pair`` into ``a, b``: the events bind only ``a``; ``b`` is not known to be plain."""
    found = _schedulers("""
        def make(optimizer):
            pair = (torch.optim.lr_scheduler.StepLR(optimizer, step_size=1), Warmup(optimizer))
            return pair

        lr_sched, warmup_sched = make(opt)
        for x in loader:
            warmup_sched.step()
            opt.zero_grad(); model(x).sum().backward(); opt.step()
    """)
    assert "warmup_sched" in found


def _func(text: str) -> cst.FunctionDef:
    return cst.parse_module(textwrap.dedent(text)).body[0]


@pytest.mark.parametrize(("body", "n", "expected"), [
    ("return a, b", 2, True),
    ("if c:\n        return a, b\n    return None", 2, True),
    ("return make(a)", 2, True),
    ("return pair", 2, False),
    ("return a, b, c", 2, False),
    ("return (*a,)", 1, True),
    ("return [*a, b]", 2, False),
    ("yield a, b", 2, False),
    ("return pair", 1, True),
])
def test_returns_bind_targets(body, n, expected):
    assert returns_bind_targets(_func(f"def f(a, b, c, pair):\n    {body}\n"), n) is expected


def test_a_decorated_function_s_returns_do_not_bind_its_targets():
    assert not returns_bind_targets(_func("@cache\ndef f(a, b):\n    return a, b\n"), 2)
