"""LC106's dataflow (:func:`loopcheck.rules.accumulation.clip_reaches_step`): whether the
partial sums a clip scaled on a micro-step reach an optimizer step with a later backward's
gradient added, or a zero_grad throws them away first."""

from __future__ import annotations

import libcst as cst
import pytest

from loopcheck.analysis import build_units, check_source
from loopcheck.rules.accumulation import clip_reaches_step

HEAD = """import torch
from torch import nn

model = nn.Linear(4, 2)
other = nn.Linear(4, 2)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
optimizer_other = torch.optim.SGD(other.parameters(), lr=0.1)
"""


def _loop(before_backward: str, step_test: str = "i % 4 == 0", after_step: str = "", after_loop: str = "") -> str:
    return HEAD + (
        "for i, x in enumerate(loader):\n"
        "    loss = model(x).sum()\n"
        f"{before_backward}"
        "    loss.backward()\n"
        "    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)\n"
        f"    if {step_test}:\n"
        "        optimizer.step()\n"
        f"{after_step}"
        f"{after_loop}"
    )


ZERO_ON_STEP = "    if i % 4 == 0:\n        optimizer.zero_grad()\n"


@pytest.mark.parametrize("source, reaches", [
    # zero_grad before backward on the step's iteration: the scaled sums are thrown away
    (_loop(ZERO_ON_STEP), False),
    (_loop("    model.zero_grad()\n"), False),  # every iteration, before backward: nothing accumulates
    (_loop("    optimizer.zero_grad()\n"), False),
    # zero_grad opens the cycle, the step closes it: the scaled sums reach the step
    (_loop(ZERO_ON_STEP, step_test="(i + 1) % 4 == 0"), True),
    # the usual accumulation: zero_grad after the step
    (_loop("", after_step="        optimizer.zero_grad()\n"), True),
    # another optimizer's zero_grad clears other parameters
    (_loop("    if i % 4 == 0:\n        optimizer_other.zero_grad()\n"), True),
    # a step after the loop applies what the last micro-steps left, clipped partial sums
    (_loop(ZERO_ON_STEP, after_loop="optimizer.step()\n"), True),
])
def test_a_clip_reaches_a_step_unless_a_zero_grad_discards_its_partial_sums(source, reaches):
    (unit,) = [u for u in build_units(cst.parse_module(source)) if u.of_kind("clip")]
    (clip,) = unit.of_kind("clip")
    assert clip_reaches_step(unit, clip, "optimizer") is reaches


METHOD = """import torch
from torch import nn


class Trainer(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.config = config
        self.net = nn.Linear(4, 2)

    def train_epoch(self, loader, optimizer):
        batch_count = 0
        for x in loader:
            batch_count += 1
            loss = self.net(x).sum()
            if {zero_test}:
                optimizer.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(self.parameters(), 5.0)
            if batch_count % self.config.BATCH_SIZE == 0:
                optimizer.step()
                batch_count = 0


trainer = Trainer(config)
trainer.train_epoch(loader, torch.optim.SGD(trainer.parameters(), lr=0.1))
"""


@pytest.mark.parametrize("zero_test, found", [
    # the clear on the step's iteration, before its backward: the step applies one micro-batch
    ("batch_count % self.config.BATCH_SIZE == 0", []),
    # the clear on the first micro-step of a cycle: the scaled sums reach the step
    ("batch_count == 1", ["LC106"]),
])
def test_lc106_in_a_method_with_a_counter_reset_at_the_step(zero_test, found):
    source = METHOD.replace("{zero_test}", zero_test)
    assert [f.code for f in check_source(source, "train.py", select={"LC106"})] == found
