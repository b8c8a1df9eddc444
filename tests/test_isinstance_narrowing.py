"""``isinstance`` narrowing: an ``if`` whose test says an object is an instance of none of some
classes (``If.not_instance``), and LC203, which a path on which ``isinstance(s,
ReduceLROnPlateau)`` was found false does not reach with a ReduceLROnPlateau."""

from __future__ import annotations

import textwrap

import libcst as cst
import pytest

from loopcheck.analysis import build_units, check_source
from loopcheck.engine.ir import If, parts


def _not_instance(test: str) -> tuple:
    source = textwrap.dedent(f"""
        import torch
        from torch.optim.lr_scheduler import ReduceLROnPlateau, StepLR
        s = make()
        if {test}:
            print(1)
    """)
    unit = build_units(cst.parse_module(source))[0]
    found = []

    def visit(node):
        if isinstance(node, If) and isinstance(node.node, cst.If):  # (not an ``and`` operand's)
            found.append(node.not_instance)
        for part in parts(node):
            visit(part)

    visit(unit.ir)
    return found[0]


P = "torch.optim.lr_scheduler.ReduceLROnPlateau"


@pytest.mark.parametrize("test, expected", [
    ("isinstance(s, ReduceLROnPlateau)", (("s", False, (P,)),)),
    ("not isinstance(s, ReduceLROnPlateau)", (("s", True, (P,)),)),
    ("not not isinstance(s, ReduceLROnPlateau)", (("s", False, (P,)),)),
    ("isinstance(s, (StepLR, torch.optim.lr_scheduler.ReduceLROnPlateau))",
     (("s", False, ("torch.optim.lr_scheduler.StepLR", P)),)),
    ("isinstance(s, kinds[0])", ()),  # a class computed at run time
    ("isinstance(s, ReduceLROnPlateau) and s.patience > 1", ()),  # false: either conjunct
    ("s is None", ()),
    # compound tests: the arm where every operand has a known value
    ("s and not isinstance(s, ReduceLROnPlateau)", (("s", True, (P,)),)),
    ("(\n            s is not None\n            and not isinstance(\n                s, ReduceLROnPlateau\n"
     "            )\n        )", (("s", True, (P,)),)),  # (indented for the dedent of the module)
    ("s and s.patience > 1 and not isinstance(s, ReduceLROnPlateau)", (("s", True, (P,)),)),
    ("s is None or isinstance(s, ReduceLROnPlateau)", (("s", False, (P,)),)),
    ("not (s and not isinstance(s, ReduceLROnPlateau))", (("s", False, (P,)),)),
    ("not (s is None or isinstance(s, ReduceLROnPlateau))", (("s", True, (P,)),)),
    ("s or not isinstance(s, ReduceLROnPlateau)", ()),  # true: either disjunct
    ("s is None or not isinstance(s, ReduceLROnPlateau)", ()),
])
def test_if_records_the_classes_a_test_excludes(test, expected):
    assert _not_instance(test) == expected


WRAPPER = '''
import torch
import torch.nn as nn
from torch.optim.lr_scheduler import ReduceLROnPlateau


class Wrapper:
    def __init__(self, after):
        self.after = after
        self.net = nn.Linear(4, 1)

    def step(self, metric):
{body}


model = nn.Linear(4, 1)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
after = ReduceLROnPlateau(optimizer)
scheduler = Wrapper(after)
for _ in range(3):
    loss = model(torch.randn(2, 4)).sum()
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    scheduler.step(loss.item())
'''


@pytest.mark.parametrize("body, reported", [
    ("        if isinstance(self.after, ReduceLROnPlateau):\n            return self.after.step(metric)\n"
     "        self.after.step()", False),
    ("        if isinstance(self.after, ReduceLROnPlateau):\n            self.after.step(metric)\n"
     "        else:\n            self.after.step()", False),
    ("        if not isinstance(self.after, ReduceLROnPlateau):\n            self.after.step()", False),
    # the test falls through: the plain step also runs for a ReduceLROnPlateau
    ("        if isinstance(self.after, ReduceLROnPlateau):\n            self.after.step(metric)\n"
     "        self.after.step()", True),
    # the scheduler bound again after the test: the test says nothing of the new one
    ("        if not isinstance(self.after, ReduceLROnPlateau):\n            self.after = after\n"
     "            self.after.step()", True),
    # a call that is not inlined and receives the wrapper may bind the attribute again
    ("        if not isinstance(self.after, ReduceLROnPlateau):\n            print(1)\n"
     "            hook(self)\n            self.after.step()", True),
    ("        self.after.step()", True),
    # a compound test, true only when the scheduler is no ReduceLROnPlateau
    ("        if self.after and not isinstance(self.after, ReduceLROnPlateau):\n            self.after.step()", False),
    ("        if self.after or not isinstance(self.after, ReduceLROnPlateau):\n            self.after.step()", True),
    # the forward of a model the wrapper holds receives that model, not the wrapper; a model
    # given the wrapper may bind its attribute
    ("        if not isinstance(self.after, ReduceLROnPlateau):\n            self.net(torch.randn(2, 4))\n"
     "            self.after.step()", False),
    ("        if not isinstance(self.after, ReduceLROnPlateau):\n            self.net(self)\n"
     "            self.after.step()", True),
])
def test_plateau_step_on_a_path_that_found_it_is_none(body, reported):
    source = WRAPPER.replace("{body}", body).replace("def step(self, metric):", "def step(self, metric, hook=print):")
    codes = [f.code for f in check_source(source, "snippet.py")]
    assert codes == (["LC203"] if reported else [])
