"""Raising guards (:attr:`loopcheck.engine.dataflow._FactTable.guards`): past ``if args.x:
raise ...`` a path knows ``args.x`` falsy, and so through a name assigned that object
(``self.args = args``); :func:`loopcheck.engine.attr_facts.truth_test` says which tests that
truth decides."""

from __future__ import annotations

import libcst as cst

from loopcheck.analysis import build_units
from loopcheck.engine.attr_facts import truth_test
from loopcheck.engine.dataflow import Alias, Truth, fact_table


def _expr(code: str) -> cst.BaseExpression:
    return cst.parse_expression(code)


def test_truth_test_of_one_attribute_alone():
    assert truth_test(_expr("args.fp16")) is True
    assert truth_test(_expr("not self.args.fp16")) is False
    assert truth_test(_expr("not not args.fp16")) is True
    assert truth_test(_expr("args.fp16 == 0")) is None  # a falsy value may equal 0 or not
    assert truth_test(_expr("args.fp16 is None")) is None
    assert truth_test(_expr("fp16")) is None
    assert truth_test(_expr("args.get('fp16')")) is None


GUARDED = '''
import torch

class Trainer:
    def setup(self, args, model):
        self.args = args
        self.model = model

    def save(self):
        if self.args.half:
            self.model.half()

def main(args):
    model = torch.nn.Linear(2, 2)
    trainer = Trainer()
    trainer.setup(args, model)
    if args.half:
        raise NotImplementedError
    trainer.save()
    if args.half:
        model.float()
'''


def _table(source: str):
    (unit,) = [u for u in build_units(cst.parse_module(source)) if u.entry is not None]
    return fact_table(unit.ir)


def test_a_raising_guard_makes_the_truth_of_its_attribute_and_of_its_alias():
    table = _table(GUARDED)
    ((arm, made, aliased),) = table.guards.values()
    assert arm is False  # the else-arm goes on
    # fact bits: the truth of args.half on the arm that goes on, and of trainer.args.half
    # where the path knows trainer.args holds args
    assert made != 0 and len(aliased) == 1
    ((alias_bit, truth_bit),) = aliased
    assert table.needs == {(truth_bit.bit_length() - 1) // 2: alias_bit}
    decided = sorted(arm for ifs in table.arms.values() for _, arm in ifs)
    assert decided == [False, False, False]  # the guard, the alias's test, the later test


def test_truth_and_alias_values():
    assert Truth(False) != Truth(True)
    assert Alias("f:args").source == "f:args"


def test_no_guard_when_both_arms_go_on():
    table = _table(GUARDED.replace("raise NotImplementedError", "print('half')"))
    assert table.guards == {}
