"""``param.requires_grad = requires_grad`` in a constructor freezes the model when the code fixes
the parameter's value (``Assign.constant``: left at its literal default, or given a literal):
a ``freeze`` event, as ``param.requires_grad = False`` makes."""

from __future__ import annotations

import libcst as cst
import pytest

from loopcheck.analysis import build_units
from loopcheck.engine.ir import Assign, walk_events

SOURCE = '''
import torch
import torch.nn as nn


class Features(nn.Module):
    def __init__(self, width=4, requires_grad=False):
        super().__init__()
        self.fc = nn.Linear(width, width)
        {rebind}
        for param in self.parameters():
            param.requires_grad = requires_grad


flag = {flag}
model = Features({args})
out = model(torch.randn(2, 4))
'''


def _assign_and_events(args: str, flag: str = "True", rebind: str = "pass"):
    source = SOURCE.replace("{args}", args).replace("{flag}", flag).replace("{rebind}", rebind)
    unit = build_units(cst.parse_module(source))[0]
    assign = next(r for r in walk_events(unit.ir) if isinstance(r, Assign) and r.target
                  and r.target.endswith(".requires_grad"))
    kinds = [ev.kind for ev in unit.events if ev.kind in ("freeze", "unfreeze")]
    return assign.constant, kinds


@pytest.mark.parametrize("args, flag, rebind, constant, kinds", [
    ("", "True", "pass", (False,), ["freeze"]),  # the default, left out
    ("4, False", "True", "pass", (False,), ["freeze"]),
    ("requires_grad=True", "True", "pass", (True,), ["unfreeze"]),
    ("requires_grad=flag", "True", "pass", (), []),  # a variable given: its value is not followed
    ("", "True", "requires_grad = not torch.cuda.is_available()", (), []),  # re-bound in __init__
])
def test_a_parameter_fixed_by_the_call_freezes_or_unfreezes(args, flag, rebind, constant, kinds):
    assert _assign_and_events(args, flag, rebind) == (constant, kinds)
