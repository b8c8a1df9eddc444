"""Accelerate's ``accumulate()`` blocks (:mod:`loopcheck.engine.accumulation`): the accumulation
count an Accelerator's construction gives, and the lowering of the prepared optimizer's steps
under ``if accelerator.sync_gradients:``."""

from __future__ import annotations

from pathlib import Path

import libcst as cst
import pytest

from loopcheck.analysis import build_units
from loopcheck.engine.accumulation import accumulate_item, accumulation_steps, lower_accumulate_blocks
from loopcheck.engine.ir import Assign, Call, If, Loop, Seq, parts
from loopcheck.server.reparse import Reparser
from loopcheck.server.worker import analyze

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"

LOOP = """
for x in loader:
    with accelerator.accumulate(model):
        loss = model(x).sum()
        accelerator.backward(loss)
        optimizer.step()
        optimizer.zero_grad()
"""


def _program(ctor: str, before: str = "", after: str = "") -> str:
    return (
        "import torch\nfrom accelerate import Accelerator, GradientAccumulationPlugin\n"
        f"{before}accelerator = {ctor}\n{after}"
        "model = torch.nn.Linear(4, 4)\noptimizer = torch.optim.SGD(model.parameters(), lr=0.1)\n"
        "model, optimizer = accelerator.prepare(model, optimizer)\n" + LOOP
    )


def _unit(source: str):
    (unit,) = build_units(cst.parse_module(source))
    return unit


def _count(source: str) -> int | None:
    unit = _unit(source)
    step = next(ev for ev in unit.events if ev.kind == "step")
    return accumulation_steps(unit, accumulate_item(unit, step.node))


@pytest.mark.parametrize("ctor, before, after, count", [
    ("Accelerator()", "", "", 1),
    ("Accelerator(gradient_accumulation_steps=1)", "", "", 1),
    ("Accelerator(gradient_accumulation_steps=4)", "", "", 4),
    ("Accelerator(None, None, 'no', 2)", "", "", 2),  # the 4th positional argument
    ("Accelerator(gradient_accumulation_steps=STEPS)", "STEPS = 1\n", "", 1),
    ("Accelerator(gradient_accumulation_steps=STEPS)", "STEPS = 1\nSTEPS = 2\n", "", None),
    ("Accelerator(gradient_accumulation_steps=args.accum)", "", "", None),
    ("Accelerator(**config)", "", "", None),
    ("Accelerator(gradient_accumulation_plugin=GradientAccumulationPlugin(num_steps=1))", "", "", None),
    ("Accelerator()", "", "accelerator.gradient_accumulation_steps = 1\n", None),
])
def test_the_count_is_the_run_constant_of_the_construction_argument(ctor, before, after, count):
    assert _count(_program(ctor, before, after)) == count


def _body(unit) -> list:
    """The items of the innermost loop of the unit."""
    loop = next(item for item in unit.ir.items if type(item) is Loop)
    return loop.body.items


def _shape(items: list) -> list:
    out = []
    for item in items:
        if type(item) is If:
            out.append(("if", cst.Module([]).code_for_node(item.test), _shape(item.body.items)))
        elif type(item) is Assign:
            out.append(("=", item.target))
        elif type(item) is Call:
            out.append(item.func)
        elif type(item) is Seq:
            out.extend(_shape(item.items))
    return out


def test_the_steps_go_under_the_flag_and_the_entry_rebinds_it():
    unit = _unit(_program("Accelerator(gradient_accumulation_steps=4)"))
    assert _shape(_body(unit)) == [
        ("=", "accelerator.sync_gradients"),
        "model", ".sum", ("=", "loss"), "accelerator.backward",
        ("if", "accelerator.sync_gradients", ["optimizer.step"]),
        ("if", "accelerator.sync_gradients", ["optimizer.zero_grad"]),
    ]
    # lowering again (the IR of an unchanged function, taken again) gives the same program
    before = _shape(_body(unit))
    assert lower_accumulate_blocks(unit) is True
    assert _shape(_body(unit)) == before


def test_a_count_of_one_leaves_the_steps_unconditional():
    unit = _unit(_program("Accelerator()"))
    assert _shape(_body(unit)) == [
        "model", ".sum", ("=", "loss"), "accelerator.backward", "optimizer.step", "optimizer.zero_grad"]
    assert not any(type(p) is If for p in parts(unit.ir))


RUNNING = """import torch
from accelerate import Accelerator

accelerator = Accelerator(gradient_accumulation_steps=4)


def scale(values):
    return [v * 2 for v in values]


def train(loader):
    model = torch.nn.Linear(4, 2)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    model, optimizer, loader = accelerator.prepare(model, optimizer, loader)
    running = 0
    for x, y in loader:
        with accelerator.accumulate(model):
            loss = torch.nn.functional.cross_entropy(model(x), y)
            running += loss
            accelerator.backward(loss)
            if accelerator.sync_gradients:
                print(running.item())
                running = 0
            optimizer.step()
            optimizer.zero_grad()
"""


def test_a_reused_ir_is_lowered_by_the_count_of_the_new_check():
    """The language server takes the IR of the unchanged training function again; the edited
    construction of the Accelerator decides anew whether its steps are gated."""
    reparser = Reparser()

    def codes(text):
        found = analyze("python", text, str(FIXTURES / "edited.py"), None, True, (), reparser)
        return [(f.code, f.row) for f in found.findings]

    assert codes(RUNNING) == []
    assert codes(RUNNING) == []  # (the same text: every entry point taken again, lowered again)
    # count 1: the optimizer steps on every micro-step, and the analysis does not read the
    # flag's value at the reset (always true then): the total is reported, as in a fresh check
    edited = RUNNING.replace("gradient_accumulation_steps=4", "gradient_accumulation_steps=1")
    assert codes(edited) == [("LC401", 19)]
    assert reparser.tables["units"].taken >= 1  # ``train`` taken again, lowered anew
    assert codes(RUNNING) == []
    assert reparser.tables["units"].taken >= 1  # and back
    fresh = analyze("python", edited, str(FIXTURES / "edited.py"), None, True, (), None)
    assert [(f.code, f.row) for f in fresh.findings] == [("LC401", 19)]


SUBSTEPS = """
for x in loader:
    with accelerator.accumulate(model):
        accelerator.backward(model(x).sum())
        optimizer.step()
        scheduler.step()
        optimizer.zero_grad()
"""


def _scheduled(ctor: str, prepared: str, between: str = "") -> str:
    return (
        "import torch\nfrom accelerate import Accelerator\n"
        f"accelerator = {ctor}\n"
        "model = torch.nn.Linear(4, 4)\noptimizer = torch.optim.SGD(model.parameters(), lr=0.1)\n"
        "scheduler = torch.optim.lr_scheduler.ExponentialLR(optimizer, gamma=0.9)\n"
        f"{prepared} = accelerator.prepare({prepared})\n{between}" + SUBSTEPS
    )


def test_a_prepared_scheduler_steps_under_the_flag_with_its_optimizer():
    unit = _unit(_scheduled("Accelerator(gradient_accumulation_steps=4)", "model, optimizer, scheduler"))
    assert _shape(_body(unit)) == [
        ("=", "accelerator.sync_gradients"),
        "model", ".sum", "accelerator.backward",
        ("if", "accelerator.sync_gradients", ["optimizer.step"]),
        ("if", "accelerator.sync_gradients", ["scheduler.step"]),
        ("if", "accelerator.sync_gradients", ["optimizer.zero_grad"]),
    ]
    # the flag is read once per micro-step: where the scheduler steps, the optimizer has stepped
    from loopcheck.rules.schedulers import _SteppedMachine
    opt = next(ev.subject for ev in unit.events if ev.kind == "step")
    flow = unit.flow(("stepped", opt), lambda: _SteppedMachine(opt, unit.roles.names_of(opt)))
    (sched,) = unit.of_kind("sched_step")
    assert flow.states(sched) == {True}


@pytest.mark.parametrize("ctor, prepared, between", [
    # not passed through prepare(): a plain scheduler steps on every micro-step
    ("Accelerator(gradient_accumulation_steps=4)", "model, optimizer", ""),
    # the accelerator does not tie its schedulers to the optimizer's steps
    ("Accelerator(gradient_accumulation_steps=4, step_scheduler_with_optimizer=False)", "model, optimizer, scheduler", ""),
    ("Accelerator(gradient_accumulation_steps=4, step_scheduler_with_optimizer=args.tie)", "model, optimizer, scheduler", ""),
    # bound anew to a scheduler that was not prepared
    ("Accelerator(gradient_accumulation_steps=4)", "model, optimizer, scheduler",
     "scheduler = torch.optim.lr_scheduler.ExponentialLR(optimizer, gamma=0.9)\n"),
])
def test_a_scheduler_not_established_prepared_steps_on_every_micro_step(ctor, prepared, between):
    unit = _unit(_scheduled(ctor, prepared, between))
    shape = _shape(_body(unit))
    assert "scheduler.step" in shape  # unconditional, beside the gated optimizer steps
    assert ("if", "accelerator.sync_gradients", ["optimizer.step"]) in shape


def test_step_scheduler_with_optimizer_true_keeps_the_scheduler_synced():
    unit = _unit(_scheduled("Accelerator(gradient_accumulation_steps=4, step_scheduler_with_optimizer=True)",
                            "model, optimizer, scheduler"))
    assert ("if", "accelerator.sync_gradients", ["scheduler.step"]) in _shape(_body(unit))


def test_a_prepare_under_an_if_does_not_establish_the_wrapper():
    source = _scheduled("Accelerator(gradient_accumulation_steps=4)", "model, optimizer").replace(
        "model, optimizer = accelerator.prepare(model, optimizer)\n",
        "model, optimizer = accelerator.prepare(model, optimizer)\n"
        "if wrap:\n    scheduler = accelerator.prepare(scheduler)\n")
    assert "scheduler.step" in _shape(_body(_unit(source)))
