"""0-dim tensors and the subscripts of them that raise (:mod:`loopcheck.engine.zero_dim`): a
statement indexing a value established to be a 0-dim tensor (``loss.data[0]`` of a loss reduced
to one number) ends its path, as a ``raise`` does
(:meth:`loopcheck.engine.builder.UnitBuilder.indexes_zero_dim`)."""

from __future__ import annotations

import textwrap

import libcst as cst
import pytest

from loopcheck.engine.builder import UnitBuilder, index_module
from loopcheck.engine.ir import Call, Jump, Try, parts

HEAD = """\
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
a = torch.randn(4)
b = torch.randn(4)
"""


def _walk(node, out):
    out.append(node)
    for part in parts(node):
        _walk(part, out)
    return out


def _called(source: str) -> list[str]:
    """The callees of the call events of the module's own code, in IR order."""
    index = index_module(cst.parse_module(HEAD + textwrap.dedent(source)))
    ir = UnitBuilder(index).module_unit()
    return [n.func for n in _walk(ir, []) if type(n) is Call]


def _raises(expr: str, setup: str = "") -> bool:
    """Whether ``print(<expr>)``, after ``setup``, ends the path: ``after()`` makes no event."""
    return "after" not in _called(f"{setup}\nprint({expr})\nafter()\n")


@pytest.mark.parametrize("setup, expr", [
    ("loss = F.mse_loss(a, b)", "loss.data[0]"),
    ("loss = F.mse_loss(a, b)", "loss[0]"),
    ("loss = F.mse_loss(a, b)", "loss[0].item()"),
    ("loss = F.mse_loss(a, b)", "loss[-1]"),
    ("loss = F.mse_loss(a, b)", "loss[:]"),
    ("loss = F.mse_loss(a, b)", "loss[0, 0]"),
    ("loss = F.mse_loss(a, b, reduction='sum')", "loss.data[0]"),
    ("loss = F.cross_entropy(a, b, reduction='mean')", "loss.data[0]"),
    ("criterion = nn.CrossEntropyLoss()\nloss = criterion(a, b)", "loss.data[0]"),
    ("criterion = nn.MSELoss().cuda()\nloss = criterion(a, b)", "loss.data[0]"),
    ("criterion = nn.NLLLoss(None)\nloss = criterion(a, b)", "loss.data[0]"),  # weight
    ("", "nn.L1Loss()(a, b).data[0]"),
    ("s = a.sum()", "s.data[0]"),
    ("s = torch.stack([a, b]).mean()", "s.data[0]"),
    ("s = (a - b).float().mean()", "s.data[0]"),
    ("s = torch.sum(a)", "s[0]"),
    ("s = torch.mean(a - b)", "s[0]"),
    ("s = torch.max(a)", "s[0]"),
    ("s = torch.norm(a, 2)", "s[0]"),
    ("s = 0.5 * (torch.mean(a) + torch.mean(b)) - 1", "s.data[0]"),
    ("s = -torch.mean(a)", "s.detach().cpu().float()[0]"),
    ("s = torch.mean(a)\ns += torch.sum(b)", "s[0]"),
    ("w = 0.1\ns = w * torch.mean(a)", "s[0]"),
])
def test_index_of_a_zero_dim_tensor_raises(setup, expr):
    assert _raises(expr, setup)


@pytest.mark.parametrize("setup, expr", [
    ("loss = F.mse_loss(a, b)", "loss[...]"),
    ("loss = F.mse_loss(a, b)", "loss[()]"),
    ("loss = F.mse_loss(a, b)", "loss[None]"),
    ("loss = F.mse_loss(a, b)", "loss.item()"),
    ("loss = F.mse_loss(a, b)\ni = 0", "loss[i]"),  # an index the code does not write
    ("loss = F.mse_loss(a, b, reduction='none')", "loss.data[0]"),
    ("loss = F.mse_loss(a, b, reduce=False)", "loss.data[0]"),
    ("loss = F.mse_loss(a, b, reduction=kind)", "loss.data[0]"),
    ("loss = F.mse_loss(a, b, None, False)", "loss.data[0]"),  # legacy reduce, by position
    ("loss = F.mse_loss(*ab)", "loss.data[0]"),
    ("criterion = nn.MSELoss(reduction='none')\nloss = criterion(a, b)", "loss.data[0]"),
    ("criterion = nn.MSELoss(False, False)\nloss = criterion(a, b)", "loss.data[0]"),
    ("s = a.sum(1)", "s[0]"),
    ("s = a.sum(dim=0)", "s[0]"),
    ("s = torch.sum(a, 1)", "s[0]"),
    ("s = torch.max(a, 1)", "s[0]"),  # (values, indices)
    ("s = torch.max(a, b)", "s[0]"),  # the elementwise maximum
    ("s = df.sum()", "s[0]"),  # a receiver not known to be a tensor (a DataFrame's sum is a Series)
    ("s = np.mean(a)", "s[0]"),
    ("s = model(a)", "s[0]"),
    ("loss = F.mse_loss(a, b)\nloss = model(a)", "loss[0]"),  # one binding not 0-dim
    ("total = 0\ntotal += torch.sum(a)", "total[0]"),  # an int until the loop ran
    ("loss = F.mse_loss(a, b)\nloss = loss.view(1)", "loss[0]"),
    ("loss = F.mse_loss(a, b)\nloss = loss.unsqueeze(0)", "loss[0]"),
    ("loss = F.mse_loss(a, b)", "[loss[0] for _ in xs]"),  # may not run
    ("loss = F.mse_loss(a, b)", "flag and loss[0]"),
    ("loss = F.mse_loss(a, b)", "loss[0] if flag else 0"),
    ("loss = F.mse_loss(a, b)", "(lambda: loss[0])"),
    ("for loss in losses:\n    pass", "loss[0]"),
])
def test_other_subscripts_do_not_end_the_path(setup, expr):
    assert not _raises(expr, setup)


def test_a_function_local_parameter_is_not_known():
    called = _called("""
        def log(loss):
            print(loss.data[0])
            after()
        log(F.mse_loss(a, b))
    """)
    assert "after" in called


def test_a_function_local_loss_ends_the_function():
    called = _called("""
        def train():
            loss = F.mse_loss(a, b)
            total = loss.data[0]
            after()
        train()
    """)
    assert "after" not in called


def test_statement_kinds_and_compound_headers():
    for line in ("total = loss.data[0]", "total += loss.data[0]", "total: float = loss.data[0]",
                 "if loss.data[0] > 1:\n    pass", "for v in loss[0]:\n    pass",
                 "while loss.data[0] > 1:\n    pass"):
        assert "after" not in _called(f"loss = F.mse_loss(a, b)\ntotal = 0.0\n{line}\nafter()\n"), line


def test_the_raise_is_caught_by_an_enclosing_handler():
    index = index_module(cst.parse_module(HEAD + textwrap.dedent("""
        loss = F.mse_loss(a, b)
        try:
            print(loss.data[0])
        except IndexError:
            print(loss.item())
        after()
    """)))
    ir = UnitBuilder(index).module_unit()
    nodes = _walk(ir, [])
    tries = [n for n in nodes if type(n) is Try]
    assert tries and any(type(n) is Jump and n.kind == "raise" for n in _walk(tries[0].body, []))
    assert "after" in [n.func for n in nodes if type(n) is Call]


def test_events_of_the_statement_before_the_raise_stay():
    called = _called("loss = F.mse_loss(a, b)\nlogger.log(step(), loss.data[0])\nafter()\n")
    assert "step" in called and "after" not in called
