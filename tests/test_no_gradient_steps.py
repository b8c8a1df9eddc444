"""Whether an optimizer's steps apply a gradient at all (``rules.gradients.applies_no_gradient``),
which LC201 and LC202 read: a loop that steps the optimizer and its scheduler with no backward
(an LR-curve preview) trains nothing; a backward in a helper the loop calls, a closure given to
the step, an unknown call given the model, or a ``backward`` of an unknown receiver establish
nothing."""

from __future__ import annotations

import textwrap

import libcst as cst
import pytest

from loopcheck.analysis import build_units
from loopcheck.rules.gradients import applies_no_gradient

HEAD = """
import torch
import torch.nn as nn
import somelib

model = nn.Linear(8, 2)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
xs = [torch.randn(4, 8) for _ in range(8)]
"""


def _unit(body: str):
    source = textwrap.dedent(HEAD) + textwrap.dedent(body)
    units = [u for u in build_units(cst.parse_module(source)) if u.of_kind("step")]
    assert len(units) == 1
    return units[0]


def no_gradient(body: str) -> bool:
    return applies_no_gradient(_unit(body), "optimizer")


def test_steps_without_backward_apply_nothing():
    assert no_gradient("""
        for epoch in range(3):
            for x in xs:
                optimizer.step()
        """)


@pytest.mark.parametrize("body", [
    # the backward in a helper the loop calls
    """
    def grads(x):
        optimizer.zero_grad()
        model(x).sum().backward()
    for x in xs:
        grads(x)
        optimizer.step()
    """,
    # a backward after the loop fills what the next pass of the outer loop applies
    """
    for epoch in range(3):
        for x in xs:
            optimizer.step()
        model(xs[0]).sum().backward()
    """,
    # gradients written by hand
    """
    for x in xs:
        for p in model.parameters():
            p.grad = torch.ones_like(p)
        optimizer.step()
    """,
    # an unknown function given the model may run a backward
    """
    for x in xs:
        somelib.train_batch(model, x)
        optimizer.step()
    """,
    # a backward of an unknown receiver
    """
    engine = somelib.Engine()
    for x in xs:
        engine.backward(model(x).sum())
        optimizer.step()
    """,
    # gradients written in forms the machine does not type: over the optimizer's param_groups,
    # by setattr, through .data, in place, added to, from autograd.grad
    """
    for x in xs:
        grads = torch.autograd.grad(model(x).sum(), list(model.parameters()))
        for p, g in zip(optimizer.param_groups[0]["params"], grads):
            p.grad = g
        optimizer.step()
    """,
    """
    for x in xs:
        for p in optimizer.param_groups[0]["params"]:
            setattr(p, "grad", torch.ones_like(p))
        optimizer.step()
    """,
    """
    for x in xs:
        for p in optimizer.param_groups[0]["params"]:
            p.__setattr__("grad", torch.ones_like(p))
        optimizer.step()
    """,
    """
    for x in xs:
        for p in model.parameters():
            p.grad.data = torch.ones_like(p)
        optimizer.step()
    """,
    """
    for x in xs:
        for p in model.parameters():
            p.grad.copy_(torch.ones_like(p))
        optimizer.step()
    """,
    """
    for x in xs:
        for p in model.parameters():
            p.grad += 1
        optimizer.step()
    """,
    # a backward of anything, through getattr too
    """
    for x in xs:
        getattr(model(x).sum(), "backward")()
        optimizer.step()
    """,
    """
    for x in xs:
        torch.autograd.backward(model(x).sum())
        optimizer.step()
    """,
    # an unknown method of an unknown object
    """
    trainer = somelib.Trainer()
    for x in xs:
        trainer.fit_batch()
        optimizer.step()
    """,
    # a closure given to the step runs its own backward
    """
    for x in xs:
        def closure():
            optimizer.zero_grad()
            loss = model(x).sum()
            loss.backward()
            return loss
        optimizer.step(closure)
    """,
])
def test_steps_that_may_apply_gradients(body):
    assert not no_gradient(body)


def test_step_closure_argument_is_read():
    unit = _unit("""
        def closure():
            return model(xs[0]).sum()
        optimizer.step(closure)
        optimizer.step(closure=closure)
        optimizer.step()
        """)
    assert [ev.extra["closure"] for ev in unit.of_kind("step")] == [True, True, False]


def test_a_list_built_here_records_what_the_steps_do_without_a_gradient():
    """``lrs.append(...)`` on a list display runs no code that could write a gradient."""
    assert no_gradient("""
        lrs = []
        for x in xs:
            optimizer.step()
            lrs.append(optimizer.param_groups[0]["lr"])
        """)
