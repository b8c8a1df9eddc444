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


@pytest.mark.parametrize("a, b, same", [
    ("phase == 'train'", 'phase == "train"', True),  # quotes are spelling
    ("(i+1)%k==0", "(i + 1) % k == 0", True),  # so is whitespace
    ("a and\n    b", "a and b", True),  # and a test split over lines
    ("phase == 'train'", "phase == 'valid'", False),
    ("x == 1", "x == 1.0", False),  # another literal, though equal in Python
    ("f(", "f(", True),  # not Python: the text itself
])
def test_one_test_however_spelled(a, b, same):
    assert (dataflow.test_text(a) == dataflow.test_text(b)) is same


def test_equality_of_arithmetic_subject_and_parity():
    import libcst as cst
    from loopcheck.engine.dataflow import complementary, equality_test, exclusive

    one = equality_test(cst.parse_expression("t % 2 == 1"))
    zero = equality_test(cst.parse_expression("(t%2) == 0"))
    assert one is not None and zero is not None
    assert exclusive(one, zero) and complementary(one, zero)
    three = equality_test(cst.parse_expression("t % 3 == 0"))
    four = equality_test(cst.parse_expression("t % 3 == 1"))
    assert exclusive(three, four) and not complementary(three, four)
    assert equality_test(cst.parse_expression("f(t) % 2 == 1")) is None
    assert equality_test(cst.parse_expression("self.t % 2 == 1")) is None
