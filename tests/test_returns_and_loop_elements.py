"""The IR facts behind two census 14 fixes: what a ``return`` of an inlined call's result is
computed from (``Jump.values``), and what a ``for`` target's elements are drawn from
(``LoopInfo.drawn``)."""

from __future__ import annotations

import textwrap

import libcst as cst

from loopcheck.analysis import build_units
from loopcheck.engine.ir import Jump, Loop, parts, walk_events


def _units(source: str):
    return build_units(cst.parse_module(textwrap.dedent(source)))


def _entry_returns(node) -> list[frozenset[str]]:
    """The values of the return jumps of the unit's entry function (not of inlined calls)."""
    out = []
    stack = [node]
    while stack:
        n = stack.pop()
        if type(n) is Jump and n.kind == "return":
            out.append(n.values)
        elif type(n).__name__ != "Inline":
            stack.extend(parts(n))
    return out


def test_return_of_an_inlined_call_is_computed_from_what_the_callee_returns():
    [unit] = [u for u in _units("""
        import torch
        from torch import nn

        class M(nn.Module):
            def _losses(self, x):
                total = 0
                for i in range(x.shape[0]):
                    total += self.crit(x[i])
                return [x.sum(), total]

            def forward(self, x):
                return self._losses(x)
    """) if u.entry is not None and u.entry.name.value == "forward"]
    [values] = _entry_returns(unit.ir)
    locals_returned = {v.rpartition(":")[2] for v in values if ":" in v}
    assert {"total", "x"} <= locals_returned
    assert "i" not in locals_returned  # the loop's counter is not returned


def test_loop_elements_drawn_from_zip_and_enumerate():
    [unit] = [u for u in _units("""
        import torch

        def copy_grads(shadow, model, opt):
            for copy, param in zip(shadow, model.parameters()):
                copy.grad = param.grad.clone()
            for i, (a, b) in enumerate(zip(shadow, model.parameters())):
                a.grad = None
            for p in model.parameters():
                p.grad = None
            opt.step()
    """) if u.entry is not None]
    loops = [n.info for n in _walk(unit.ir) if type(n) is Loop]
    drawn = [{name: {s.rpartition(":")[2] for s in syms} for name, syms in info.drawn} for info in loops]
    assert drawn == [
        {"copy": {"shadow"}, "param": {"model.parameters"}},
        {"a": {"shadow"}, "b": {"model.parameters"}},
        {"p": {"model.parameters"}},
    ]


def _walk(node):
    yield node
    for p in parts(node):
        yield from _walk(p)
