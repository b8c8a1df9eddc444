"""The dataflow's lowering of a test to its core and polarity (engine/dataflow.py): a test and
its negation are one test, each arm of one the other arm of the other."""
from __future__ import annotations

import libcst as cst
import pytest

from loopcheck.engine import dataflow

_CODE = cst.Module([]).code_for_node


@pytest.mark.parametrize("test, core, negated", [
    ("x is None", "x is None", False),
    ("x is not None", "x is None", True),
    ("not x is not None", "x is None", False),
    ("(i + 1) % k == 0", "(i + 1) % k == 0", False),
    ("(i + 1) % k != 0", "(i + 1) % k == 0", True),
    ("not (i + 1) % k != 0", "(i + 1) % k == 0", False),
    ("name not in done", "name in done", True),
    ("name in done", "name in done", False),
    ("(a != b)", "a == b", True),
    ("a < b", "a < b", False),  # not the negation of a >= b for every type (NaN, sets)
    ("0 != a != b", "0 != a != b", False),  # a chain is left as it is
])
def test_polarity_of_a_test(test, core, negated):
    found, neg = dataflow.test_polarity(cst.parse_expression(test))
    assert (_CODE(found), neg) == (core, negated)
