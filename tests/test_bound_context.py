"""A ``with`` item through a variable bound once: what :func:`single_bindings` records and
which tests of a conditional expression still hold at the ``with`` (:func:`_stable_test`)."""

from __future__ import annotations

import libcst as cst

from loopcheck.engine.builder import _bindings, single_bindings, _stable_test

BODY = cst.parse_module(
    "ctx = torch.no_grad if not is_train else nullcontext\n"
    "n = 3\n"
    "m: int = 4\n"
    "k = 1\n"
    "k = 2\n"
    "if fast:\n"
    "    mode = 'eval'\n"
    "for step in range(n):\n"
    "    pass\n"
).body


def test_single_bindings():
    bound = single_bindings(BODY)
    assert type(bound["ctx"]) is cst.IfExp
    assert type(bound["n"]) is cst.Integer and type(bound["m"]) is cst.Integer
    assert bound["k"] is None and bound["mode"] is None and bound["step"] is None
    assert _bindings(BODY) == {"ctx": None, "n": 3, "m": 4, "k": None, "mode": None, "step": None}


def test_stable_test():
    bound = single_bindings(BODY)
    stable = [
        "is_train", "not is_train", "is_train and n == 3", "phase == 'train'", "n > 0 or flag",
    ]
    unstable = ["mode == 'eval'", "k", "step == 0", "args.train", "cfg['train']", "is_training()"]
    assert [t for t in stable if not _stable_test(cst.parse_expression(t), bound)] == []
    assert [t for t in unstable if _stable_test(cst.parse_expression(t), bound)] == []
