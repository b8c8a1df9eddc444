"""The gradient machine's counters: which tests of a count say it is zero (rules/gradients.py)."""
from __future__ import annotations

import libcst as cst
import pytest

from loopcheck.engine.ir import If, Seq
from loopcheck.rules.gradients import _zero_test


def _if(test: str) -> If:
    node = cst.parse_statement(f"if {test}:\n    pass\n")
    return If(node=node, body=Seq(), orelse=Seq(), test=node.test)


@pytest.mark.parametrize("test, zero", [
    ("n == 0", True), ("not n", True), ("n < 1", True), ("n <= 0", True), ("not n > 0", True),
    ("n > 0", False), ("n", False), ("n != 0", False), ("n >= 1", False), ("0 < n", False), ("1 <= n", False),
    ("n > 1", None), ("n >= k", None), ("m > 0", None), ("n > 0 and m", None), ("0 < n < 3", None),
])
def test_zero_test(test, zero):
    assert _zero_test(_if(test), frozenset({"n"})) is zero
