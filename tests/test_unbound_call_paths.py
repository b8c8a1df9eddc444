"""A call of a project function whose arguments cannot bind raises ``TypeError``: the path
ends there (:meth:`loopcheck.engine.builder.UnitBuilder.call_cannot_bind`), and a function the
program names only after such a call (or after any statement that ends every path) never
runs from there (:meth:`~loopcheck.engine.builder.UnitBuilder.unreached_statements`, read by
:mod:`loopcheck.engine.unreferenced`): its findings go."""
from __future__ import annotations

import textwrap

import libcst as cst
import pytest

from loopcheck.analysis import check_source
from loopcheck.engine.binding import binds
from loopcheck.server.reparse import Reparser
from loopcheck.server.worker import analyze

TRAIN = """\
import sys

import torch
from torch import nn


def train(model):
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda step: 1.0)
    for x, y in [(torch.randn(8, 16), torch.randint(0, 4, (8,)))] * 10:
        loss = nn.functional.cross_entropy(model(x), y)
        loss.backward()
        scheduler.step()
        optimizer.step()
        optimizer.zero_grad()

"""
STEP_ROW = 13  # the scheduler.step() of TRAIN

MAIN = """

def main():
    model = nn.Linear(16, 4)
{CALL}
    train(model)


if __name__ == "__main__":
    main()
"""


def _findings(tmp_path, definition: str, call: str) -> list[tuple[str, int]]:
    source = TRAIN + textwrap.dedent(definition) + MAIN.replace("{CALL}", textwrap.indent(call, "    "))
    script = tmp_path / "run.py"
    script.write_text(source)
    return [(f.code, f.row) for f in check_source(source, str(script))]


#: a model of the project whose forward takes two arguments, and a factory that builds one of
#: the class it is given
NET = """\
class Net(nn.Module):
    def forward(self, x, y):
        return x


def build(model_class):
    return model_class().to("cpu")
"""

#: (definition, call, what the engine decides): "binds" and "undecided" leave the path going
#: on to train() (its LC202 is reported), "raises" ends it there (train() never runs).
CASES = [
    ("def setup(cfg, log, classes):\n    return cfg\n", "setup(1, 2)", "raises"),  # one too few
    ("def setup(cfg, log, classes=4):\n    return cfg\n", "setup(1, 2)", "binds"),  # a default
    ("def setup(cfg):\n    return cfg\n", "setup(1, 2)", "raises"),  # one too many
    ("def setup(cfg, *rest):\n    return cfg\n", "setup(1, 2, 3)", "binds"),
    ("def setup(cfg):\n    return cfg\n", "setup(1, log=2)", "raises"),  # unknown keyword
    ("def setup(cfg, **kw):\n    return cfg\n", "setup(1, log=2)", "binds"),
    ("def setup(cfg, log=None):\n    return cfg\n", "setup(1, cfg=2)", "raises"),  # given twice
    ("def setup(cfg, /, log=None):\n    return cfg\n", "setup(cfg=1)", "raises"),  # positional-only
    ("def setup(cfg, *, log):\n    return cfg\n", "setup(1)", "raises"),  # keyword-only missing
    ("def setup(cfg, log):\n    return cfg\n", "setup(*[1])", "undecided"),  # a spread
    ("def setup(cfg, log):\n    return cfg\n", "setup(**{'cfg': 1})", "undecided"),
    ("def wrap(f):\n    return lambda *a: f(*a, 0)\n\n\n@wrap\ndef setup(cfg, log):\n    return cfg\n",
     "setup(1)", "undecided"),  # a decorator may change the signature
    ("class Setup:\n    def __init__(self, cfg, log):\n        self.cfg = cfg\n", "Setup(1, 2)", "binds"),
    ("class Setup:\n    def __init__(self, cfg, log):\n        self.cfg = cfg\n", "Setup(1)", "raises"),
    ("class Setup:\n    def run(self, cfg):\n        return cfg\n", "Setup().run(1)", "binds"),  # self
    ("class Setup:\n    def run(self, cfg):\n        return cfg\n", "s = Setup()\ns.run(1, 2)", "raises"),
    # an instance the analysis does not hold by a name: its class is not followed
    ("class Setup:\n    def run(self, cfg):\n        return cfg\n", "Setup().run(1, 2)", "undecided"),
    ("class Setup:\n    @staticmethod\n    def run(cfg):\n        return cfg\n", "Setup.run(1)", "binds"),
    ("class Setup:\n    @classmethod\n    def run(cls, cfg):\n        return cfg\n", "Setup.run(1)", "binds"),
    # a dataclass generates its __init__: its fields are not read as parameters
    ("import dataclasses\n\n\n@dataclasses.dataclass\nclass Setup:\n    cfg: int\n", "Setup(1)", "binds"),
    ("import dataclasses\n\n\n@dataclasses.dataclass\nclass Setup:\n    cfg: int\n    def __init__(self):\n"
     "        pass\n", "Setup(1)", "undecided"),
    ("if sys.argv:\n    def setup(cfg, log):\n        return cfg\nelse:\n    def setup(cfg):\n        return cfg\n",
     "setup(1)", "undecided"),  # bound in a branch: which def runs is not known
    # a call of a model: nn.Module.__call__ gives forward the call's arguments (after self)
    (NET, "net = Net()\nnet(1)", "raises"),  # one too few
    (NET, "net = Net().to('cpu')\nnet(1, 2)", "binds"),
    (NET, "net = Net().to('cpu')\nnet(1)", "raises"),  # the receiver .to() returns
    (NET, "net = Net()\nnet(1, 2, z=3)", "raises"),  # unknown keyword
    (NET, "net = build(Net)\nnet(1)", "raises"),  # the class a factory was given
    (NET, "net = build(Net)\nnet(1, 2)", "binds"),
    (NET.replace("x, y", "x, y=None"), "net = Net()\nnet(1)", "binds"),  # a default
    (NET.replace("x, y", "*inputs"), "net = Net()\nnet(1)", "binds"),
    (NET, "net = Net()\nnet(*[1])", "undecided"),  # a spread
    (NET.replace("    def forward", "    def __call__(self, *a):\n        return a\n\n    def forward"),
     "net = Net()\nnet(1)", "undecided"),  # its own __call__ runs
    (NET.replace("    def forward", "    @torch.jit.ignore\n    def forward"),
     "net = Net()\nnet(1)", "undecided"),  # a decorated forward
    (NET, "net = Net()\nnet.register_forward_pre_hook(lambda m, a: (a[0], a[0]))\nnet(1)",
     "undecided"),  # a pre-hook may give forward other arguments
    (NET, "if sys.argv:\n    net = Net()\nelse:\n    net = nn.Linear(2, 2)\nnet(1)",
     "undecided"),  # a name bound to objects of two classes
]


@pytest.mark.parametrize("definition, call, decided", CASES)
def test_the_binding_decision(tmp_path, definition, call, decided):
    expected = [] if decided == "raises" else [("LC202", STEP_ROW)]
    assert _findings(tmp_path, definition, call) == expected


@pytest.mark.parametrize("signature, call", [
    ("setup(cfg, log)", "setup(*[1])"),
    ("setup(cfg, log)", "setup(1)"),
])
def test_undecided_is_not_a_binding_the_signature_allows(signature, call):
    """The "undecided" rows above are not bindings the signature read alone allows: the
    engine leaves them to the run (a spread, a decorator, a branch)."""
    func = cst.parse_statement(f"def {signature}:\n    pass\n")
    assert binds(func, cst.parse_expression(call), False) is (call.startswith("setup(*"))


@pytest.mark.parametrize("end, found", [
    ("return", []),
    ("raise SystemExit(1)", []),
    ("sys.exit(0)", []),
    ("undefined_helper(model)", []),  # NameError
    ("print(model)", [("LC202", STEP_ROW)]),
])
def test_a_function_named_only_after_the_path_ends_never_runs(tmp_path, end, found):
    assert _findings(tmp_path, "", end) == found


def test_a_naming_before_the_path_ends_keeps_the_function(tmp_path):
    definition = "def setup(cfg, log, classes):\n    return cfg\n"
    # train() also runs from main() before the call that raises
    call = "train(model)\nsetup(1, 2)"
    assert _findings(tmp_path, definition, call) == [("LC202", STEP_ROW)]


def test_an_edit_keeps_the_unreached_statements(tmp_path):
    """The language server takes an unchanged entry point's IR again: the statements its build
    left unreached are taken with it, and the finding stays gone."""
    definition = "def setup(cfg, log, classes):\n    return cfg\n"
    source = TRAIN + definition + MAIN.replace("{CALL}", "    setup(1, 2)")
    source += "\n\ndef filler(values):\n    return [v * 2 for v in values]\n"
    path = str(tmp_path / "run.py")
    (tmp_path / "run.py").write_text(source)
    reparser = Reparser()
    first = analyze("python", source, path, None, False, (), reparser)
    edited = source.replace("def filler(values):\n", "def filler(values):  # typed\n")
    second = analyze("python", edited, path, None, False, (), reparser)
    assert reparser.tables["units"].taken > 0
    assert [f.code for f in first.findings] == [f.code for f in second.findings] == []
