"""Gradients written into ``.grad`` in place, and what a ``zero_grad`` leaves there (LC103)."""

from __future__ import annotations

from pathlib import Path

import libcst as cst
import pytest

from loopcheck.analysis import build_units, check_source
from loopcheck.engine.events import grad_owner

PROGRAM = """
import torch
import torch.nn as nn

model = nn.Linear(4, 1)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for _ in range(3):
    model(torch.randn(2, 4)).sum().backward()
    g = [p.grad.clone() for p in model.parameters()]
    optimizer.zero_grad({args})
    for p, t in zip(model.parameters(), g):
        {write}
    optimizer.step()
"""


def _events(source: str, kinds: tuple[str, ...]) -> list:
    (unit,) = build_units(cst.parse_module(source))
    return [ev for ev in unit.events if ev.kind in kinds]


@pytest.mark.parametrize(("sym", "owner"), [
    ("p.grad", "p"), ("p.grad.data", "p"), ("f2_1:p.grad", "f2_1:p"), ("model.fc.weight.grad", "model.fc.weight"),
    ("grad", None), ("p.gradient", None), ("p.grad.sum", None), (None, None),
])
def test_grad_owner(sym, owner):
    assert grad_owner(sym) == owner


@pytest.mark.parametrize(("args", "none"), [
    ("", "default"), ("set_to_none=False", False), ("set_to_none=True", True), ("False", False),
    ("set_to_none=flag", None), ("**kwargs", None),
])
def test_zero_grad_says_what_it_leaves_in_grad(args, none):
    source = "flag = kwargs = None\n" + PROGRAM.format(args=args, write="p.grad = t")
    (zg,) = _events(source, ("zero_grad",))
    assert zg.extra["set_to_none"] == none


@pytest.mark.parametrize(("write", "kind", "extra"), [
    ("p.grad.copy_(t)", "grad_set", {"inplace": True}),
    ("p.grad.data.copy_(t)", "grad_set", {"inplace": True}),
    ("p.grad.data = t", "grad_set", {"inplace": True}),
    ("p.grad = t", "grad_set", {}),
    ("p.grad = None", "zero_grad_all", {"set_to_none": True}),
    ("p.grad = torch.zeros_like(p)", "zero_grad_all", {"set_to_none": False}),
])
def test_writes_into_grad_are_typed(write, kind, extra):
    events = _events(PROGRAM.format(args="", write=write), ("grad_set", "zero_grad_all"))
    assert [(ev.kind, ev.subject.rpartition(":")[2] if ev.subject else None,
             {k: v for k, v in ev.extra.items() if k in ("inplace", "set_to_none")}) for ev in events] == [
        (kind, "p" if kind == "grad_set" else None, extra)]


@pytest.mark.parametrize(("args", "write", "guarded", "reported"), [
    ("", "p.grad.copy_(t)", True, True),  # None from 2.0: the guarded write skips every parameter
    ("", "p.grad = t", False, False),  # a new tensor: written whatever .grad held
    ("set_to_none=False", "p.grad.copy_(t)", True, False),
    ("set_to_none=False", "p.grad.copy_(t)", False, False),
    ("set_to_none=False", "p.grad.data = t", False, False),
    ("", "p.grad.data = t", False, True),  # None.data: raises
    ("set_to_none=flag", "p.grad.copy_(t)", False, False),  # not known: silent
    ("set_to_none=False", "p.grad.mul_(0.5)", False, True),  # scales the zeros: writes no gradient
])
def test_lc103_reads_what_the_write_finds_in_grad(args, write, guarded, reported):
    line = f"if p.grad is not None:\n            {write}" if guarded else write
    source = "flag = False\n" + PROGRAM.format(args=args, write=line)
    codes = [f.code for f in check_source(source, "train.py") if f.code == "LC103"]
    assert codes == (["LC103"] if reported else [])


@pytest.mark.parametrize(("pin", "sets_none"), [
    (None, True), ("torch==1.10.1", False), ("torch<2.0", False), ("torch==2.0.0", True), ("torch>=1.8", True),
])
def test_zero_grad_default_reads_the_pinned_pytorch(tmp_path: Path, pin, sets_none):
    (tmp_path / "setup.cfg").write_text("[metadata]\nname = x\n", encoding="utf-8")  # the project root
    if pin is not None:
        (tmp_path / "requirements.txt").write_text(pin + "\n", encoding="utf-8")
    path = tmp_path / "train.py"
    source = PROGRAM.format(args="", write="p.grad.copy_(t)")
    path.write_text(source, encoding="utf-8")
    # (rules.gradients.zero_grad_sets_none: the default leaves zeros before 2.0, a copy_ fills them)
    found = [f.code for f in check_source(source, str(path)) if f.code == "LC103"]
    assert found == ([] if not sets_none else ["LC103"])
