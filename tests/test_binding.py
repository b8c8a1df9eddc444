"""Whether a call's arguments bind to a function's parameters (engine/binding.py), and the
builder ending the path at a call of a project function that cannot bind."""
from __future__ import annotations

import textwrap

import libcst as cst
import pytest

from loopcheck.analysis import check_source
from loopcheck.engine.binding import binds


def _binds(signature: str, call: str, bound_self: bool = False) -> bool:
    func = cst.parse_statement(f"def {signature}:\n    pass\n")
    return binds(func, cst.parse_expression(call), bound_self)


@pytest.mark.parametrize("signature, call, bound_self, expected", [
    ("f(a, b=1)", "f(1)", False, True),
    ("f(a, b=1)", "f(1, 2)", False, True),
    ("f(a, b=1)", "f(1, 2, 3)", False, False),  # too many positional arguments
    ("f(a, b=1)", "f()", False, False),  # a missing
    ("f(a, b=1)", "f(1, c=2)", False, False),  # no parameter c
    ("f(a, b=1)", "f(1, a=2)", False, False),  # a given twice
    ("f(a, *args)", "f(1, 2, 3)", False, True),
    ("f(a, **kw)", "f(1, c=2)", False, True),
    ("f(a, /, b)", "f(a=1, b=2)", False, False),  # a is positional-only
    ("f(a, /, b, **kw)", "f(1, a=1, b=2)", False, True),
    ("f(a, *, k)", "f(1)", False, False),  # keyword-only k missing
    ("f(a, *, k=0)", "f(1, k=2)", False, True),
    ("f(a)", "f(*xs)", False, True),  # spread: not decided
    ("f(a)", "f(**cfg)", False, True),
    ("__init__(self, conf)", "Learner(conf)", True, True),
    ("__init__(self, conf)", "Learner(conf, True)", True, False),
    ("forward(self, x)", "model(x, labels=y)", True, False),
    ("forward(self, x, **kwargs)", "model(x, labels=y)", True, True),
    ("__init__(*args)", "C(1)", True, True),
    ("set_up(argv=None)", "set_up('aplip', argv)", False, False),
])
def test_binds(signature, call, bound_self, expected):
    assert _binds(signature, call, bound_self) is expected


LEARNER = """\
import torch
from torch import nn


class Learner:
    def __init__(self, conf):
        self.model = nn.Sequential(nn.Linear(8, 8), nn.Dropout(0.5), nn.Linear(8, 2))
"""

SCRIPT = """\
import torch
from learner import Learner

learner = Learner({ARGS})
learner.model.eval()
for x in [torch.randn(4, 8) for _ in range(3)]:
    print(learner.model(x))
"""


@pytest.mark.parametrize("args, found", [
    ("{'lr': 0.1}", [("LC302", 7)]),
    ("{'lr': 0.1}, True", []),  # TypeError at line 4: nothing after it runs
])
def test_the_path_ends_at_a_call_that_cannot_bind(tmp_path, args, found):
    (tmp_path / "learner.py").write_text(LEARNER)
    script = tmp_path / "verify.py"
    source = SCRIPT.replace("{ARGS}", args)
    script.write_text(source)
    assert [(f.code, f.row) for f in check_source(source, str(script))] == found


@pytest.mark.parametrize("learner", [
    LEARNER.replace("class Learner:", "@dataclass_like\nclass Learner:"),  # a decorated class
    LEARNER.replace("class Learner:", "class Learner(Base):").replace("import torch\n", "import torch\nfrom lib import Base\n"),
    LEARNER.replace("    def __init__", "    def __new__(cls, *args):\n        return super().__new__(cls)\n\n    def __init__"),
    LEARNER.replace("    def __init__", "    @staticmethod\n    def make():\n        pass\n\n    @some_decorator\n    def __init__"),
])
def test_a_constructor_whose_binding_is_not_read_from_its_text(tmp_path, learner):
    (tmp_path / "learner.py").write_text(learner)
    script = tmp_path / "verify.py"
    source = SCRIPT.replace("{ARGS}", "{'lr': 0.1}, True")
    script.write_text(source)
    assert [(f.code, f.row) for f in check_source(source, str(script))] == [("LC302", 7)]


def test_a_function_defined_twice_is_not_decided(tmp_path):
    source = textwrap.dedent("""\
        import sys
        import torch
        from torch import nn

        if sys.argv[1:]:
            def setup(argv):
                return argv
        else:
            def setup():
                return None

        setup(sys.argv)
        model = nn.Sequential(nn.Linear(8, 8), nn.Dropout(0.5))
        model.eval()
        for x in [torch.randn(4, 8) for _ in range(3)]:
            print(model(x))
        """)
    script = tmp_path / "run.py"
    script.write_text(source)
    assert [(f.code, f.row) for f in check_source(source, str(script))] == [("LC302", 16)]


@pytest.mark.parametrize("define, found", [
    ("def set_up(argv=None):\n    return argv\n", []),  # TypeError: the path ends
    ("def set_up(name, argv=None):\n    return argv\n", [("LC302", 9)]),
    ("def set_up(argv=None):\n    return argv\n\n\nset_up = print\n", [("LC302", 9)]),
])
def test_a_function_of_another_module(tmp_path, define, found):
    (tmp_path / "settings.py").write_text(define)
    source = textwrap.dedent("""\
        import torch
        from torch import nn
        from settings import set_up

        set_up("aplip", None)
        model = nn.Sequential(nn.Linear(8, 8), nn.Dropout(0.5))
        model.eval()
        for x in [torch.randn(4, 8) for _ in range(3)]:
            print(model(x))
        """)
    script = tmp_path / "run.py"
    script.write_text(source)
    assert [(f.code, f.row) for f in check_source(source, str(script))] == found


@pytest.mark.parametrize("source, once", [
    ("def f(a):\n    pass\n", True),
    ("def f(a):\n    pass\n\n\ndef g():\n    return f(1)\n", True),
    ("if X:\n    def f(a):\n        pass\n", False),  # under an if
    ("def f(a):\n    pass\n\n\ndef f(a, b):\n    pass\n", False),
    ("def f(a):\n    pass\n\n\nf = wrap(f)\n", False),
    ("from lib import f\n\n\ndef f(a):\n    pass\n", False),
    ("def f(a):\n    pass\n\n\nfrom lib import g as f\n", False),
    ("def f(a):\n    pass\n\n\ng, f = 1, 2\n", False),
    ("def f(a):\n    pass\n\n\ndef h():\n    global f\n", False),
])
def test_defined_once_read_from_the_text(source, once):
    from loopcheck.engine.builder import _defined_once_in_text  # noqa: PLC0415

    assert _defined_once_in_text(source, "f") is once


FORWARD = """\
import torch
from torch import nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Sequential(nn.Linear(8, 8), nn.Dropout(0.5), nn.Linear(8, 2))
{CALL}
    def forward(self, input_ids=None, attention_mask=None{EXTRA}):
        return self.fc(input_ids)


model = Model()
model.eval()
for x in [torch.randn(4, 8) for _ in range(3)]:
    logits = model(x, None, labels=x)
    print(logits)
"""


@pytest.mark.parametrize("call, extra, found", [
    ("", "", []),  # forward takes no `labels`: TypeError, the forward never runs
    ("", ", labels=None", [("LC302", 17)]),
    ("", ", **kwargs", [("LC302", 17)]),
    ("\n    def __call__(self, *args, **kwargs):\n        return self.forward(args[0])\n", "", [("LC302", 20)]),
])
def test_a_forward_that_cannot_bind(tmp_path, call, extra, found):
    source = FORWARD.replace("{CALL}", call).replace("{EXTRA}", extra)
    script = tmp_path / "run.py"
    script.write_text(source)
    assert [(f.code, f.row) for f in check_source(source, str(script))] == found


@pytest.mark.parametrize("body, abstract", [
    ('    """Return the loss."""\n    raise NotImplementedError\n', True),
    ("    raise NotImplementedError('subclass')\n", True),
    ("    raise NotImplementedError\n    return 0\n", False),
    ("    raise ValueError\n", False),
    ("    return self.model(batch)\n", False),
])
def test_an_abstract_method_is_one_that_only_raises_not_implemented(body, abstract):
    """``builder._abstract``: a base class's placeholder, not inlined where called through
    ``self`` (the subclass that runs overrides it)."""
    from loopcheck.engine.builder import _abstract  # noqa: PLC0415

    assert _abstract(cst.parse_statement(f"def compute_loss(self, batch):\n{body}")) is abstract


def _seq(*items):
    from loopcheck.engine.ir import Seq  # noqa: PLC0415

    return Seq(list(items))


def _ways_of(node):
    """The ways out of ``node`` that ``dataflow.summaries`` records (``node`` inside a unit)."""
    from loopcheck.engine.dataflow import summaries  # noqa: PLC0415

    return set(summaries(_seq(node))[id(node)].ways)


def test_ways_out_of_each_kind_of_node():
    """``dataflow._ways``: how a path may leave a part of the IR, whatever its tests decide."""
    from loopcheck.engine.ir import If, Inline, Jump, Loop, LoopInfo, Try  # noqa: PLC0415

    def raise_():
        return Jump("raise")

    def loop(body, orelse=(), infinite=False):
        return Loop(LoopInfo(cst.Pass()), _seq(*body), _seq(*orelse), infinite=infinite)

    assert _ways_of(_seq()) == {"normal"}
    assert _ways_of(_seq(raise_(), Jump("return"))) == {"raise"}  # (the return is never reached)
    assert _ways_of(_seq(If(cst.Pass(), _seq(Jump("return")), _seq()), raise_())) == {"return", "raise"}
    assert _ways_of(If(cst.Pass(), _seq(raise_()), _seq(raise_()))) == {"raise"}
    assert _ways_of(If(cst.Pass(), _seq(raise_()), _seq())) == {"raise", "normal"}
    # an inlined call: its return goes on in the caller; a call whose every path raises does not
    assert _ways_of(Inline(cst.Pass(), _seq(raise_()))) == {"raise"}
    assert _ways_of(Inline(cst.Pass(), _seq(If(cst.Pass(), _seq(Jump("return")), _seq()), raise_()))) == {"normal", "raise"}
    # a loop runs its body at least once (as the interpreter takes it); a break goes on after it
    assert _ways_of(loop([raise_()])) == {"raise"}
    assert _ways_of(loop([If(cst.Pass(), _seq(Jump("break")), _seq()), raise_()])) == {"normal", "raise"}
    assert _ways_of(loop([If(cst.Pass(), _seq(Jump("continue")), _seq()), raise_()])) == {"normal", "raise"}
    assert _ways_of(loop([], [raise_()])) == {"raise"}  # its else block runs when it ends
    assert _ways_of(loop([], infinite=True)) == set()  # ``while True:`` without a break
    # a handler catches what the body raises; a finally block that raises replaces the rest
    assert _ways_of(Try(_seq(raise_()), [_seq()], _seq(), _seq())) == {"normal"}
    assert _ways_of(Try(_seq(raise_()), [], _seq(), _seq())) == {"raise"}
    assert _ways_of(Try(_seq(), [], _seq(raise_()), _seq())) == {"raise"}  # the else block
    assert _ways_of(Try(_seq(Jump("return")), [], _seq(), _seq(raise_()))) == {"raise"}


HELPER_MODULE = """\
import torch
from torch.utils.data import TensorDataset


def make_eval_set(root, gray=False):
    return TensorDataset(torch.randn(8, 8))
"""

HELPER_SCRIPT = """\
import torch
from torch import nn
from torch.utils.data import DataLoader
from sets import make_eval_set


class Run:
    def loader(self):
        pairs = make_eval_set("data", {ARGS})
        return DataLoader(pairs, batch_size=2)

    def evaluate(self):
        loader = self.loader()
        model = nn.Sequential(nn.Linear(8, 8), nn.Dropout(0.5))
        model.eval()
        total = 0.0
        for (x,) in loader:
            out = model(x)
            total += float(out.sum())
        return total


print(Run().evaluate())
"""


@pytest.mark.parametrize("args, found", [
    ("gray=True", [("LC302", 18)]),
    ("gray=True, normalize=False", []),  # TypeError inside the helper: evaluate stops there
    ("True, False", []),  # one positional argument too many
])
def test_the_path_ends_after_an_inlined_call_that_raises(tmp_path, args, found):
    """A call that cannot bind inside an inlined helper ends the caller's path too: the
    dataflow does not pass over that call as one that goes on (``_Summary.ways``)."""
    (tmp_path / "sets.py").write_text(HELPER_MODULE)
    script = tmp_path / "evaluate.py"
    source = HELPER_SCRIPT.replace("{ARGS}", args)
    script.write_text(source)
    assert [(f.code, f.row) for f in check_source(source, str(script))] == found
