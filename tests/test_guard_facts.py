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


CONSTRUCTED = '''
import torch
from torch import nn

class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(2, 2)

class Trainer:
    def __init__(self, args):
        self.args = args
        self.model = Net()
        if args.half:
            raise NotImplementedError

    def save(self):
        if self.args.half:
            self.model.half()

def main(args):
    trainer = Trainer(args)
    trainer.save()
'''


def _raws(source: str):
    from loopcheck.engine.dataflow import walk_events
    from loopcheck.engine.ir import Assign
    (unit,) = [u for u in build_units(cst.parse_module(source)) if fact_table(u.ir).values]
    table = fact_table(unit.ir)
    return table, [(raw, table.effects.get(id(raw))) for raw in walk_events(unit.ir)], Assign


def test_super_init_of_module_clobbers_only_its_bookkeeping():
    _, raws, _ = _raws(CONSTRUCTED)
    (init,) = [raw for raw, _ in raws if getattr(raw, "func", None) == ".__init__"]
    assert ".args" not in init.clobbers and ".training" in init.clobbers and ".fc" not in init.clobbers
    assert any(c.endswith(":trainer.model.training") for c in init.clobbers)


def test_the_constructed_instance_assigned_to_its_variable_keeps_its_facts():
    table, raws, Assign = _raws(CONSTRUCTED)
    (bound,) = [raw for raw, _ in raws if type(raw) is Assign and raw.target.endswith(":trainer")]
    assert bound.built and table.effects.get(id(bound)) is None
    # the same construction given to another name than the one ``self`` was bound to
    from loopcheck.engine.dataflow import walk_events
    units = build_units(cst.parse_module(CONSTRUCTED.replace("trainer = Trainer(args)", "trainer = other = Trainer(args)")))
    assert not any(type(raw) is Assign and raw.built for u in units for raw in walk_events(u.ir))


def test_super_init_where_a_class_of_the_project_may_follow_in_the_mro_is_not_known():
    # an instance of ``Both(Net, Mixin)``: the analysis does not decide whether ``Mixin.__init__``
    # (which writes ``.args``) runs after ``super().__init__()`` in ``Net``
    source = CONSTRUCTED.replace("class Trainer:", "class Mixin:\n    def __init__(self):\n"
                                 "        self.args = None\n\nclass Both(Net, Mixin):\n    pass\n\nclass Trainer:")
    _, raws, _ = _raws(source.replace("self.model = Net()", "self.model = Both()"))
    (init,) = [raw for raw, _ in raws if getattr(raw, "func", None) == ".__init__"]
    assert ".args" in init.clobbers


NESTED_COLLATE = '''
import torch
from torch.utils.data import DataLoader

def make_loader(samples, args):
    def pad(rows):
        return torch.stack(rows)

    def collate(batch):
        return pad([x for x, _ in batch]), pad([y for _, y in batch])

    return DataLoader(samples, batch_size=args.batch_size, collate_fn=collate)

class Trainer:
    def __init__(self, args):
        self.args = args
        self.model = torch.nn.Linear(2, 2)
        if args.half:
            raise NotImplementedError
        self.loader = make_loader([], args)

    def save(self):
        if self.args.half:
            self.model.half()

def main(args):
    trainer = Trainer(args)
    trainer.save()
'''


def _loader_call(source: str):
    _, raws, _ = _raws(source)
    (loader,) = [raw for raw, _ in raws if getattr(raw, "func", None) == "torch.utils.data.DataLoader"]
    return loader


def test_a_nested_collate_fn_calling_a_sibling_function_changes_no_attribute():
    # ``collate`` calls ``pad``, which ``make_loader`` defines too: its code is read, and
    # neither writes an attribute; the call changes only what it receives
    loader = _loader_call(NESTED_COLLATE)
    assert "*" not in loader.clobbers
    assert sorted(c.rpartition(":")[2] for c in loader.clobbers) == [
        "args.batch_size", "collate", "samples"]


def test_a_sibling_function_that_writes_an_attribute_ends_its_facts():
    loader = _loader_call(NESTED_COLLATE.replace("        return torch.stack(rows)",
                                                 "        args.half = True\n        return torch.stack(rows)"))
    assert ".half" in loader.clobbers and "*" not in loader.clobbers


def test_a_sibling_name_rebound_in_the_enclosing_function_is_not_named():
    # ``pad`` is re-bound to a value nobody can name (a parameter): the call may run anything
    loader = _loader_call(NESTED_COLLATE.replace("def make_loader(samples, args):",
                                                 "def make_loader(samples, args, pad=None):")
                          .replace("    def pad(rows):\n        return torch.stack(rows)\n", ""))
    assert loader.clobbers == frozenset(("*",))


LIBRARY_BASES = '''
import torch
from torch import nn
from torch.optim.lr_scheduler import LRScheduler
from torch.utils.data import BatchSampler

class Warmup(LRScheduler):
    def __init__(self, optimizer, warmup):
        self.warmup = warmup
        super().__init__(optimizer)

    def get_lr(self):
        return [base * min(1.0, self.last_epoch / self.warmup) for base in self.base_lrs]

class Chunks(BatchSampler):
    def __init__(self, sampler, size):
        super().__init__(sampler, batch_size=size, drop_last=False)

class Block(nn.Module):
    def __init__(self, width):
        super().__init__()
        self.fc = nn.Linear(width, width)

    def forward(self, x):
        return self.fc(x)

class Encoder(nn.Module):
    def __init__(self, width):
        super().__init__()
        self.blocks = nn.ModuleList([Block(width) for _ in range(2)])
        for _ in range(2):
            block = Block(width)
            self.blocks.append(block)

    def forward(self, x):
        for i, block in enumerate(self.blocks):
            x = block(x)
        return x

class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.encoder = Encoder(4)

    def forward(self, x):
        return self.encoder(x)

class Trainer:
    def __init__(self, args):
        self.args = args
        self.model = Net()
        self.optimizer = torch.optim.Adam(self.model.parameters())
        if args.half:
            raise NotImplementedError
        self.scheduler = Warmup(self.optimizer, 10)
        self.sampler = Chunks(range(8), 4)

    def save(self, x):
        self.model(x)
        if self.args.half:
            self.model.half()

def main(args):
    trainer = Trainer(args)
    trainer.save(torch.zeros(1, 4))
'''


def _calls(source: str, func: str, text: str):
    _, raws, _ = _raws(source)
    return [raw for raw, _ in raws if getattr(raw, "func", None) == func
            and text in cst.Module([]).code_for_node(raw.node)]


def _names(clobbers) -> list[str]:
    """The clobbered names without the unit's frame prefix (``f1_1:trainer.x`` -> ``trainer.x``)."""
    return sorted(c.partition(":")[2] if ":" in c else c for c in clobbers)


SCHEDULER_WRITES = ["_get_lr_called_within_step", "_is_initial", "_last_lr", "_step_count", "base_lrs",
                    "last_epoch", "optimizer", "step", "verbose"]  # (``step``: the optimizer's, wrapped)


def test_super_init_of_a_scheduler_subclass_writes_its_attributes_and_reads_get_lr():
    # LRScheduler.__init__ calls self.step(), which calls the subclass's get_lr(): it writes
    # nothing, so the construction changes the library's attributes and what it is given only
    (init,) = _calls(LIBRARY_BASES, ".__init__", "optimizer")
    assert _names(init.clobbers) == sorted(
        [f".{a}" for a in SCHEDULER_WRITES] + [f"trainer.scheduler.{a}" for a in SCHEDULER_WRITES]
        + ["trainer.optimizer"])


def test_a_get_lr_override_that_writes_an_option_ends_its_facts():
    source = LIBRARY_BASES.replace("    def get_lr(self):\n", "    def get_lr(self):\n        self.opts.half = True\n")
    (init,) = _calls(source, ".__init__", "optimizer")
    assert ".half" in init.clobbers and "*" not in init.clobbers


def test_super_init_of_a_batch_sampler_subclass_writes_its_three_attributes():
    (init,) = _calls(LIBRARY_BASES, ".__init__", "sampler")
    assert _names(init.clobbers) == [".batch_size", ".drop_last", ".sampler", "sampler", "size",
                                     "trainer.sampler.batch_size", "trainer.sampler.drop_last",
                                     "trainer.sampler.sampler"]


def test_the_constructor_of_a_library_subclass_is_not_its_base_constructor():
    # StepLR.__init__ sets step_size and gamma before LRScheduler.__init__: the base's entry
    # does not describe it
    from loopcheck.engine.builder import ClassRef, super_library_writes
    from loopcheck.engine.builder import index_module
    m = index_module(cst.parse_module("from torch.optim.lr_scheduler import StepLR, LRScheduler\n"
                                      "class A(StepLR):\n    def __init__(self, o):\n        super().__init__(o, 2)\n"
                                      "class B(LRScheduler):\n    def __init__(self, o):\n        super().__init__(o)\n"
                                      "    def step(self):\n        pass\n"))
    assert super_library_writes(ClassRef(m, "A"), "__init__", [ClassRef(m, "A")]) is None
    writes, overrides = super_library_writes(ClassRef(m, "B"), "__init__", [ClassRef(m, "B")])
    assert sorted(writes) == SCHEDULER_WRITES
    assert [f.name.value for f, _ in overrides] == ["step"]


def test_self_calls_go_with_writes():
    import pytest
    from loopcheck.engine.knowledge import Knowledge, KnowledgeError
    kb = Knowledge()
    with pytest.raises(KnowledgeError, match="'self_calls' goes with 'writes'"):
        kb.load('[[class]]\nnames = ["lib.A"]\n[class.methods]\n__init__ = {self_calls = ["step"]}\n', "t")
    kb.load('[[class]]\nnames = ["lib.B"]\n[class.methods]\n__init__ = {self_calls = ["step"], writes = ["x"]}\n', "t")
    assert kb.method("lib.B", "__init__").self_calls == ("step",)
    assert kb.method("lib.B", "__init__").writes == ("x",)


def _encoder_forward_writes(source: str) -> frozenset:
    from loopcheck.engine.builder import Callee, UnitBuilder
    from loopcheck.engine.builder import index_module
    m = index_module(cst.parse_module(source))
    return UnitBuilder(m).attr_writes(Callee(m.classes["Encoder"].methods["forward"], m))


def test_a_loop_over_a_module_list_of_project_blocks_runs_their_forward():
    assert _encoder_forward_writes(LIBRARY_BASES) == frozenset()
    writing = LIBRARY_BASES.replace("        return self.fc(x)", "        self.opts.half = True\n        return self.fc(x)")
    assert _encoder_forward_writes(writing) == frozenset((".half",))


def test_a_module_list_whose_items_are_not_known_runs_code_nobody_names():
    everything = frozenset(("*",))
    # an item put in by a method the list's reading does not follow
    assert _encoder_forward_writes(LIBRARY_BASES.replace(
        "            self.blocks.append(block)", "            self.blocks.insert(0, block)")) == everything
    # a list built by a call of unknown result
    assert _encoder_forward_writes(LIBRARY_BASES.replace(
        "nn.ModuleList([Block(width) for _ in range(2)])", "make_blocks(width)")) == everything
    # an item of a library class (its forward is not read)
    assert _encoder_forward_writes(LIBRARY_BASES.replace(
        "[Block(width) for _ in range(2)]", "[nn.Linear(width, width)]")) == everything
    # the loop variable is bound again in the method
    assert _encoder_forward_writes(LIBRARY_BASES.replace(
        "            x = block(x)", "            block = self.fallback\n            x = block(x)")) == everything
    # an item stored by index
    assert _encoder_forward_writes(LIBRARY_BASES.replace(
        "            self.blocks.append(block)", "            self.blocks[0] = block")) == everything


def _scheduler_module(body: str):
    from loopcheck.engine.builder import index_module
    return index_module(cst.parse_module(
        "from torch.optim.lr_scheduler import LRScheduler\nfrom mixins import Unread\n"
        "def _lr(self):\n    return self.base_lrs\n" + body))


def test_a_method_bound_in_the_class_body_other_than_by_def_makes_the_writes_unknown():
    from loopcheck.engine.builder import ClassRef, super_library_writes
    head = "class W(LRScheduler):\n    def __init__(self, o):\n        super().__init__(o)\n"
    for binding in ("    get_lr = _lr\n", "    step = _lr\n", "    __init__ = _lr\n",
                    "    if True:\n        def get_lr(self):\n            return []\n",
                    "    from helpers import get_lr\n"):
        m = _scheduler_module(head + binding)
        assert super_library_writes(ClassRef(m, "W"), "__init__", [ClassRef(m, "W")]) is None, binding
    # in a subclass of the instance's ancestry too
    m = _scheduler_module(head + "class S(W):\n    get_lr = _lr\n")
    assert super_library_writes(ClassRef(m, "W"), "__init__", [ClassRef(m, "S")]) is None
    # a name the entry does not list, or a def of the class, leaves the writes known
    m = _scheduler_module(head + "    scale = _lr\n    def get_lr(self):\n        return _lr(self)\n")
    writes, overrides = super_library_writes(ClassRef(m, "W"), "__init__", [ClassRef(m, "W")])
    assert sorted(writes) == SCHEDULER_WRITES
    assert [f.name.value for f, _ in overrides] == ["get_lr"]


def test_a_base_the_knowledge_and_the_project_do_not_know_makes_the_writes_unknown():
    from loopcheck.engine.builder import ClassRef, super_library_writes
    head = "class W(LRScheduler):\n    def __init__(self, o):\n        super().__init__(o)\n"
    m = _scheduler_module(head + "class S(Unread, W):\n    pass\n")
    assert super_library_writes(ClassRef(m, "W"), "__init__", [ClassRef(m, "S")]) is None
    m = _scheduler_module(head + "class S(make_base(), W):\n    pass\n")
    assert super_library_writes(ClassRef(m, "W"), "__init__", [ClassRef(m, "S")]) is None
    # a project mixin, object, and the described class itself are known
    m = _scheduler_module(head + "class Mixin(object):\n    def describe(self):\n        return ''\n"
                          "class S(Mixin, W):\n    pass\nclass T(S, LRScheduler):\n    pass\n")
    for instance in ("S", "T"):
        writes, overrides = super_library_writes(ClassRef(m, "W"), "__init__", [ClassRef(m, instance)])
        assert sorted(writes) == SCHEDULER_WRITES and overrides == []


def test_a_name_the_calling_function_binds_itself_is_not_its_sibling_function():
    # ``collate``'s parameter ``pad`` holds what the options carry: not the helper's ``def pad``
    loader = _loader_call(NESTED_COLLATE.replace("    def collate(batch):", "    def collate(batch, pad=args.pad_fn):"))
    assert loader.clobbers == frozenset(("*",))
    # nor a variable of the calling function
    loader = _loader_call(NESTED_COLLATE.replace("    def collate(batch):", "    def collate(batch):\n        pad = args.pad_fn"))
    assert loader.clobbers == frozenset(("*",))


def test_a_name_a_module_function_binds_itself_is_not_the_module_function():
    from loopcheck.engine.builder import Callee, UnitBuilder, index_module
    source = ("import torch\ndef pad(rows):\n    return torch.stack(rows)\n"
              "def collate(batch{}):\n    return pad(batch)\n")
    for params, expected in (("", frozenset()), (", pad=None", frozenset(("*",)))):
        m = index_module(cst.parse_module(source.format(params)))
        assert UnitBuilder(m).attr_writes(Callee(m.functions["collate"], m)) == expected, params


def test_name_bindings_count_match_captures_imports_and_parameters():
    from loopcheck.engine.builder import _name_bindings, bound_names
    func = cst.parse_module(
        "def f(a, *, b=1):\n"
        "    match a:\n"
        "        case [first, *rest]:\n"
        "            pass\n"
        "        case {'k': 1, **extra} as whole:\n"
        "            pass\n"
        "    import os.path\n"
        "    del b\n"
        "    for first in rest:\n"
        "        pass\n"
        "    ys = [y for y in rest if (z := y)]\n"
        "    def inner(c):\n"
        "        first = c\n").body[0]
    kinds = {name: [type(n).__name__ for n in _name_bindings(func, name)]
             for name in ("a", "b", "first", "rest", "extra", "whole", "os", "y", "z", "c", "inner")}
    assert kinds == {"a": ["Param"], "b": ["Param", "Del"], "first": ["MatchAs", "For", "Assign"],
                     "rest": ["MatchStar"], "extra": ["MatchMapping"], "whole": ["MatchAs"],
                     "os": ["Import"], "y": ["CompFor"], "z": ["NamedExpr"], "c": ["Param"],
                     "inner": ["FunctionDef"]}
    assert bound_names(func.body) == ({"first", "rest", "extra", "whole", "ys", "inner"}, set())


def test_dataset_and_sampler_entries_describe_only_their_constructor():
    # The [[class]] entries of Dataset, IterableDataset and Sampler make them the library base
    # of the project's datasets and samplers (``library_base``: ``Call.base_class`` of a method
    # the project does not define); they list no other method and no ``"*"``, so such a call
    # has no summary, as before the entries existed, and no framework runs their subclasses
    # (``unreferenced._project_bases(known_library=True)``: a base that creates no instance).
    from loopcheck.engine.builder import ClassRef, index_module, library_base
    from loopcheck.engine.knowledge import knowledge
    m = index_module(cst.parse_module(
        "from torch.utils.data import Dataset, IterableDataset, Sampler, BatchSampler\n"
        "class A(Dataset):\n    pass\nclass B(IterableDataset):\n    pass\n"
        "class C(Sampler):\n    pass\nclass D(BatchSampler):\n    pass\n"))
    kb = knowledge()
    bases = {name: library_base(ClassRef(m, name)) for name in "ABCD"}
    assert bases == {"A": "torch.utils.data.Dataset", "B": "torch.utils.data.IterableDataset",
                     "C": "torch.utils.data.Sampler", "D": "torch.utils.data.BatchSampler"}
    for base in bases.values():
        assert kb.driver(base) is None
        for method in ("__getitem__", "__len__", "__iter__", "backward", "train", "step", "forward"):
            assert kb.method(base, method) is None, (base, method)
        assert sorted(kb.cls(base).methods) == ["__init__"]


def test_learned_says_what_each_outcome_of_a_comparison_holds():
    from loopcheck.engine.attr_facts import learned

    def said(code: str, outcome: bool):
        return [(name, kind, what if type(what) is bool else what.value) for name, kind, what in learned(_expr(code), outcome)]

    test = 'args.data == "x" and args.head == "y"'
    assert said(test, True) == [("args.data", "==", '"x"'), ("args.head", "==", '"y"')]
    assert said(test, False) == []  # either may be false
    assert said('args.head != "y"', False) == [("args.head", "==", '"y"')]
    assert said('args.head != "y"', True) == [("args.head", "!=", '"y"')]
    assert said('not (args.a != "x" or args.b)', True) == [("args.a", "==", '"x"'), ("args.b", "truth", False)]
    assert said('args.head in ("a", "b")', False) == [("args.head", "!=", '"a"'), ("args.head", "!=", '"b"')]
    assert said('args.head in ("a", "b")', True) == []
    assert said('args.head in ("a",)', True) == [("args.head", "==", '"a"')]
    assert said("args.ckpt is None", True) == [("args.ckpt", "==", "None")]
    assert said('args.head is "y"', True) == []  # identity of a string: not its value
    assert said("head == 'y'", True) == []  # a plain name: not an attribute
    assert said("args.head == other", True) == []  # not a literal


GUARDED_COMPARISON = '''
import sys
import torch

def evaluate(args, model, x):
    if args.head == "linear":
        model(x)
    elif args.head == "attention":
        model(x)

def main(args):
    model = torch.nn.Linear(2, 2)
    if args.data == "bags" and args.head == "attention":
        pass
    else:
        raise NotImplementedError
    evaluate(args, model, torch.zeros(1, 2))
'''


def _decided(source: str) -> list:
    table = _table(source)
    return sorted((arm for ifs in table.arms.values() for _, arm in ifs), key=str)


def test_a_raising_guard_on_a_conjunction_of_comparisons_makes_the_value_of_each_attribute():
    table = _table(GUARDED_COMPARISON)
    ((arm, made, aliased),) = table.guards.values()
    assert arm is True and aliased == ()  # the body goes on, knowing args.head == "attention"
    assert bin(made).count("1") == 1  # (args.data: no other ``if`` tests it)
    assert _decided(GUARDED_COMPARISON) == [False, True]  # "linear" no, "attention" yes


def test_a_guard_that_refuses_one_value_decides_only_the_comparison_with_it():
    source = GUARDED_COMPARISON.replace(
        '    if args.data == "bags" and args.head == "attention":\n        pass\n    else:\n        raise NotImplementedError\n',
        '    if args.head != "linear":\n        sys.exit("only linear")\n')
    table = _table(source)
    ((arm, made, _),) = table.guards.values()
    assert arm is False  # the else-arm goes on, knowing args.head == "linear"
    # the guard's own test (``!=``) false, "linear" true, "attention" false
    assert _decided(source) == [False, False, True]
    refused = source.replace('if args.head != "linear":', 'if args.head == "linear":')
    # past it args.head is not "linear": the guard's own test and "linear" false, "attention"
    # undecided (an ``if`` no fact decides has no arms)
    assert _decided(refused) == [False, False]


def test_no_comparison_guard_when_the_other_arm_goes_on_or_only_returns():
    for end in ("print('no')", "return"):
        source = GUARDED_COMPARISON.replace("raise NotImplementedError", end)
        assert _table(source).guards == {}, end


def test_a_guard_refusing_none_decides_the_identity_tests_of_none():
    from loopcheck.engine.dataflow import _unequal_decides
    assert _unequal_decides(_expr("args.ckpt is None"), None) is False
    assert _unequal_decides(_expr("not args.ckpt is not None"), None) is False
    assert _unequal_decides(_expr("args.ckpt != None"), None) is True
    assert _unequal_decides(_expr('args.ckpt is "x"'), "x") is None  # a string's identity: not decided
    assert _unequal_decides(_expr("args.ckpt == 0"), False) is None  # another type
    assert _unequal_decides(_expr("args.ckpt"), None) is None  # its truth: not decided
