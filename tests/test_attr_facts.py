"""The facts of attribute values: which tests are over one attribute, and which attribute
holds an instance of a known project class (what a call through it may change)."""

from __future__ import annotations

import libcst as cst

from loopcheck.engine.attr_facts import ends, fact_subject, written_attributes
from loopcheck.engine.builder import (
    _attribute_assignments, _constructed_class, _writes_unnamed, index_module,
)


def _expr(code: str) -> cst.BaseExpression:
    return cst.parse_expression(code)


def test_fact_subject_of_attributes_at_any_depth():
    assert fact_subject(_expr("self.is_test")) == "self.is_test"
    assert fact_subject(_expr("not self.state.is_train")) == "self.state.is_train"
    assert fact_subject(_expr("cfg.run.mode == 'eval'")) == "cfg.run.mode"
    assert fact_subject(_expr("is_train")) is None
    assert fact_subject(_expr("states[0].is_train")) is None
    assert fact_subject(_expr("self.get_state().is_train")) is None


def test_a_call_that_may_rebind_an_attribute_ends_the_facts_reached_through_it():
    """A call that may write ``.args`` on some object may re-bind ``trainer.args`` to another
    namespace: a fact about ``trainer.args.fp16`` does not outlive it; a fact about an
    attribute of another name does."""
    assert ends("trainer.args.fp16", ".args")
    assert ends("args.fp16", ".fp16")
    assert not ends("args.fp16", ".args")
    assert not ends("trainer.opts.fp16", ".args")
    assert ends("self.cfg.mode", "self")
    assert not ends("self.cfg.mode", "cfg")
    assert ends("x.y", "*")


SOURCE = '''
class State:
    def __init__(self, model):
        self.model = model

class Runner:
    def __init__(self, model):
        self.state = State(model)

    def reset(self, other):
        self.state += other
        a.state, b = 1, 2

    def stop(self):
        self.model.eval()
'''


def test_attribute_assignments_and_constructed_class():
    index = index_module(cst.parse_module(SOURCE))
    values = _attribute_assignments(index.tree, "state")
    assert [type(v).__name__ if v is not None else None for v in values].count("Call") == 1
    assert values.count(None) == 2  # += and the tuple target
    (call,) = [v for v in values if v is not None]
    ref = _constructed_class(index, call)
    assert ref is not None and ref.name == "State"
    assert _constructed_class(index, _expr("make_state()")) is None
    assert _constructed_class(index, None) is None


def test_writes_unnamed():
    assert not _writes_unnamed(cst.parse_module("model.eval()\nx.vars = 1\n"))
    assert _writes_unnamed(cst.parse_module("setattr(self, k, v)\n"))
    assert _writes_unnamed(cst.parse_module("self.__dict__.update(d)\n"))
    assert _writes_unnamed(cst.parse_module("vars(args)['lr'] = 1\n"))


def test_written_attributes_a_method_called_eval_is_no_dynamic_write():
    # ``model.eval()`` reads a method; only the builtins by name and the dunders write unnamed attributes
    assert written_attributes(cst.parse_module("model.eval()\nself.best = 1\n")) == ({"best"}, False)
    assert written_attributes(cst.parse_module("x.setattr = 2\ndel y.z\n")) == ({"setattr", "z"}, False)
    assert written_attributes(cst.parse_module("setattr(self, k, v)\n")) == (set(), True)
    assert written_attributes(cst.parse_module("self.__dict__.update(d)\n")) == (set(), True)
