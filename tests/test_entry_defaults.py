"""The calls :mod:`loopcheck.engine.entry_defaults` reads, and the constant each binds."""

from __future__ import annotations

from loopcheck.engine.entry_defaults import UNKNOWN, _binding, _calls

POSITIONAL = ["loader", "phase", "log_every"]
KEYWORDS = {"loader", "phase", "log_every"}
DEFAULTS = {"loader": UNKNOWN, "phase": UNKNOWN, "log_every": 10}


def _bindings(text: str, name: str) -> list[set]:
    """For each call of ``run_epoch`` in ``text``: the bindings of ``name`` its readings give."""
    out = []
    for args, keywords, through_class in _calls(text, "run_epoch", False):
        readings = [args, args[1:]] if through_class else [args]
        out.append({_binding(name, r, keywords, POSITIONAL, KEYWORDS, DEFAULTS) for r in readings})
    return out


def test_positional_keyword_and_default():
    text = "t = make()\nt.run_epoch(data, 'train')\nt.run_epoch(data, phase='train', log_every=-1)\nt.run_epoch(data, 'train')\n"
    assert _bindings(text, "phase") == [{(str, "train")}] * 3
    assert _bindings(text, "log_every") == [{(int, 10)}, {(int, -1)}, {(int, 10)}]


def test_no_literal_is_unknown():
    assert _bindings("t = make()\nt.run_epoch(data, mode)\n", "phase") == [{UNKNOWN}]
    assert _bindings("t = make()\nt.run_epoch(data, 'val', log_every=n)\n", "log_every") == [{UNKNOWN}]


def test_literal_types_differ():
    assert _bindings("t = make()\nt.run_epoch(data, 'x', True)\nt.run_epoch(data, 'x', 1)\n", "log_every") == [
        {(bool, True)}, {(int, 1)}]


def test_call_through_the_class_is_read_both_ways():
    text = "from training import Trainer\nt = Trainer()\nTrainer.run_epoch(t, 'train', 'val')\n"
    assert _bindings(text, "phase") == [{(str, "val"), (str, "train")}]
    text = "t = make()\ntype(t).run_epoch(t, data, 'val')\nt.__class__.run_epoch(t, data, 'val')\n"
    assert _bindings(text, "phase") == [{UNKNOWN, (str, "val")}] * 2


def test_star_arguments_and_references_leave_the_calls_unknown():
    assert _calls("t = make()\nt.run_epoch(*xs)\n", "run_epoch", False) is None
    assert _calls("t = make()\nt.run_epoch(data, **kw)\n", "run_epoch", False) is None
    assert _calls("t = make()\nf = t.run_epoch\n", "run_epoch", False) is None
