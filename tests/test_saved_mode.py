"""LC301's mode machine (:class:`loopcheck.rules.modes.ModeMachine`) reads a mode saved in a
variable (``was_training = model.training``) on each path: ``if was_training:`` decides the mode
the save held, and where the save held an unknown mode the arm it takes says which mode that was."""

from __future__ import annotations

import libcst as cst

from loopcheck.analysis import build_units
from loopcheck.rules.modes import mode_flow

HEAD = '''
import torch

def run(model, optimizer, x, hook):
    hook(model)  # a call that may set the mode: the mode saved below is unknown
'''


def _kinds_at_step(body: str, head: str = HEAD) -> list[str]:
    """The mode kinds of ``model`` at the ``optimizer.step()`` of the entry point that holds
    one, sorted."""
    (unit,) = [u for u in build_units(cst.parse_module(head + body)) if u.of_kind("step")]
    (step,) = unit.of_kind("step")
    (model,) = unit.roles.models
    return sorted({s.kind for s in mode_flow(unit, model).states(step)})


RESTORE_BY_TEST = '''
    was_training = model.training
    model.eval()
    with torch.no_grad():
        model(x)
    if was_training:
        model.train()
    model(x)
    optimizer.step()
'''


def test_unknown_saved_mode_false_arm_keeps_the_unknown_mode():
    # the arm where was_training is false: the model was already in eval mode before eval()
    assert _kinds_at_step(RESTORE_BY_TEST) == ["train", "unknown"]


def test_known_saved_mode_decides_the_test():
    assert _kinds_at_step(RESTORE_BY_TEST, HEAD.replace("    hook(model)", "    model.train()\n    hook")) == ["train"]


def test_test_of_unknown_saved_mode_tells_the_restore():
    # the arm where was_training is true learns the save held train mode: train(was_training)
    # restores it; on the other arm the restore gives back the unknown mode
    body = '''
    was_training = model.training
    model.eval()
    with torch.no_grad():
        model(x)
    if was_training:
        model.train()
    model.eval()
    with torch.no_grad():
        model(x)
    model.train(was_training)
    model(x)
    optimizer.step()
'''
    assert _kinds_at_step(body) == ["train", "unknown"]


def test_restore_of_unknown_saved_mode_stays_unknown():
    body = '''
    was_training = model.training
    model.eval()
    with torch.no_grad():
        model(x)
    model.train(was_training)
    model(x)
    optimizer.step()
'''
    assert _kinds_at_step(body) == ["unknown"]


def test_return_before_the_restore_keeps_eval():
    # a helper that restores only on some path: its early return leaves eval() in effect
    helper = HEAD.replace("def run(", "def validate(") + '''
    was_training = model.training
    model.eval()
    with torch.no_grad():
        out = model(x)
    if out is None:
        return out
    if was_training:
        model.train()


def run(model, optimizer, x, hook):
    validate(model, optimizer, x, hook)
    model(x)
'''
    assert _kinds_at_step("    optimizer.step()\n", helper) == ["eval", "train", "unknown"]
