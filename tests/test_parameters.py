"""Which modules hold parameters (LC501/LC502 speak only of those): library entries with
``parameters = false``, ``nn.Sequential`` of them, and classes of the project read from their
``__init__``."""

from __future__ import annotations

import pytest

from loopcheck.analysis import check_source
from loopcheck.engine.knowledge import Knowledge, KnowledgeError, knowledge

CLASSES = '''
import torch
import torch.nn as nn

SHARED = nn.Linear(4, 4)


class Focal(nn.Module):
    def __init__(self, gamma=2.0, alpha=None):
        super().__init__()
        self.gamma = gamma
        self.alpha = alpha


class Swish(nn.Module):
    def forward(self, x):
        return x * torch.sigmoid(x)


class SmoothCE(nn.CrossEntropyLoss):
    pass


class Head(nn.Module):
    def __init__(self, n):
        super().__init__()
        self.build(n)

    def build(self, n):
        self.fc = nn.Linear(n, 2)


class Keeps(nn.Module):
    def __init__(self, inner):
        super().__init__()
        self.inner = inner


class Gain(nn.Module):
    def __init__(self, n):
        super().__init__()
        self.register_parameter("g", nn.Parameter(torch.ones(n)))


class Made(nn.Module):
    def __init__(self, name):
        super().__init__()
        self.act = getattr(nn, name)()


class UsesShared(nn.Module):
    def __init__(self):
        super().__init__()
        self.shared = SHARED


def main(backbone, w, batches):
    model = nn.Linear(4, 2)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    model.extra = {value}
    for x, y in batches:
        optimizer.zero_grad()
        loss = nn.functional.cross_entropy(model(x), y)
        loss.backward()
        optimizer.step()
'''


@pytest.mark.parametrize("value, reported", [
    ("nn.CrossEntropyLoss()", False),
    ("nn.MSELoss(reduction='sum')", False),
    ("nn.GELU()", False),
    ("nn.Dropout2d(0.1)", False),
    ("nn.Identity()", False),
    ("nn.AdaptiveAvgPool2d(1)", False),
    ("nn.Sequential(nn.ReLU(), nn.Dropout(0.1))", False),
    ("Focal(gamma=1.5)", False),
    ("Focal(alpha=torch.tensor([1.0, 2.0]))", False),
    ("Focal().to('cpu')", False),
    ("Swish()", False),
    ("SmoothCE(label_smoothing=0.1)", False),
    ("Keeps(nn.ReLU())", False),
    ("nn.Linear(4, 4)", True),
    ("nn.LayerNorm(4)", True),
    ("nn.PReLU()", True),
    ("nn.AdaptiveLogSoftmaxWithLoss(4, 10, [5])", True),
    ("nn.Sequential(nn.ReLU(), nn.Linear(4, 4))", True),
    ("Focal(alpha=w)", True),
    ("Head(4)", True),
    ("Keeps(backbone)", True),
    ("Keeps(nn.Linear(4, 4))", True),
    ("Gain(4)", True),
    ("Made('ReLU')", True),
    ("UsesShared()", True),
])
def test_submodule_replaced_after_the_optimizer(value, reported):
    source = CLASSES.replace("{value}", value)
    codes = [f.code for f in check_source(source, "snippet.py")]
    assert codes == (["LC501"] if reported else [])


def test_the_knowledge_says_which_classes_hold_none():
    kb = knowledge()
    assert kb.cls("torch.nn.CrossEntropyLoss").parameters is False
    assert kb.cls("torch.nn.ReLU").parameters is False
    assert kb.cls("torch.nn.Linear").parameters is None
    assert kb.cls("torch.nn.Embedding").parameters is None
    with pytest.raises(KnowledgeError, match="parameters"):
        Knowledge().load('[[class]]\nnames = ["a.B"]\nparameters = true\n', "test.toml")


NUMBERS = '''
import numpy as np
import torch
import torch.nn as nn


class Focal(nn.Module):
    def __init__(self, gamma=2.0):
        super().__init__()
        self.gamma = gamma


def main(batches, rates, s):
    model = nn.Linear(4, 2)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    {loop}
        model.extra = Focal(gamma=p)
    for x, y in batches:
        optimizer.zero_grad()
        loss = nn.functional.cross_entropy(model(x), y)
        loss.backward()
        optimizer.step()
'''


@pytest.mark.parametrize("loop, reported", [
    ("for p in np.linspace(0.5, 2.0, 4):", False),  # numbers: knowledge says numpy.linspace returns some
    ("for p in np.arange(3):", False),
    ("for p in [float(s)]:", True),  # a loop over a list display: its items are not followed
    ("for p in rates:", True),  # a parameter: anything, a module or an nn.Parameter among them
    ("for p in sorted(rates):", True),  # a builtin whose result is not known to be numbers
])
def test_arguments_made_of_numbers_hold_no_parameters(loop, reported):
    """A class that keeps its constructor's argument holds no parameters when that argument is
    established to be a number: every definition binds the result of a call the knowledge says
    returns numbers, or the target of a loop over one (``values._number_definition``)."""
    source = NUMBERS.replace("{loop}", loop)
    codes = [f.code for f in check_source(source, "snippet.py")]
    assert codes == (["LC501"] if reported else [])


AFTER_FORWARD = '''
import torch
import torch.nn as nn


def validate(model, val_loader):
    model.eval()
    act = nn.Softmax(dim=1)
    for x, y in val_loader:
        h = {value}
        p = act(h)
        print((p.argmax(1) == y).sum().item())
'''


@pytest.mark.parametrize("value, lines", [
    # the graph of the model's weights is recorded by its forward (line 10, reported there);
    # the Softmax holds none and only extends it
    ("model(x)", [10]),
    ("model(x) * 2.0", [10]),
    # an input that requires grad apart from any model's parameters: the Softmax records
    # a graph of its own
    ("x * nn.Parameter(torch.ones(4))", [11]),
    ("torch.randn(2, 4, requires_grad=True)", [11]),
    ("model(torch.randn(2, 4, requires_grad=True))", [10, 11]),
    # no graph at all
    ("model(x).detach()", [10]),
    ("x", []),
])
def test_parameterless_forward_records_through_its_inputs_only(value, lines):
    """LC302 on the forward of a module without parameters: reported only when its input is
    established to require grad other than through the parameters of a model whose forward
    computed it (``values.inputs_require_grad``, ``graphs.GradInputs``)."""
    source = AFTER_FORWARD.replace("{value}", value)
    found = [f.row for f in check_source(source, "snippet.py") if f.code == "LC302"]
    assert found == lines


CONSTRUCTIONS = '''
import torch
import torch.nn as nn
from unknownlib import Block


class Head(nn.Module):
    def __init__(self, n):
        super().__init__()
        self.fc = nn.Linear(n, 2)

    def forward(self, x):
        return self.fc(x)


def main(batches, device, x0):
    model = nn.Linear(4, 2)
    model.Crit = nn.MSELoss()
    model.Proj = nn.Linear(4, 4)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    model.extra = {value}
    for x, y in batches:
        optimizer.zero_grad()
        loss = nn.functional.cross_entropy(model(x), y)
        loss.backward()
        optimizer.step()
'''


@pytest.mark.parametrize("value, reported", [
    # a construction of a module class: of the project, of torch.nn, through methods that
    # return their receiver, or a new nn.Parameter
    ("Head(4)", True),
    ("Head(4).to(device)", True),
    ("nn.Linear(4, 4).to(device).train()", True),
    ("nn.Parameter(torch.ones(4))", True),
    # a call of a module the model holds is a forward: its result is a tensor
    ("model.Proj(x0)", False),
    ("model.Crit(x0, x0)", False),
    # a method that does not return its receiver, a class the analysis cannot resolve
    ("Head(4).state_dict()", False),
    ("Block(4)", False),
])
def test_only_a_construction_of_a_module_replaces_one(value, reported):
    """A submodule is replaced when the assigned call constructs a module
    (``Assign.module_class``, from ``UnitBuilder._module_constructed``): its callee resolves to
    an ``nn.Module`` class, not by the spelling of its name."""
    source = CONSTRUCTIONS.replace("{value}", value)
    codes = [f.code for f in check_source(source, "snippet.py") if f.code == "LC501"]
    assert codes == (["LC501"] if reported else [])


PLAIN_SET = '''
import torch
import torch.nn as nn


class Encoder(nn.Module):
    def __init__(self, num_class):
        super().__init__()
        self.num_class = num_class
        {encoder}

    def forward(self, boxes):
        return boxes * self.num_class


class Detector(nn.Module):
    def __init__(self, classes, hook):
        super().__init__()
        {count}
        self.head = nn.Linear(4, 4)
        self.encoders = {Encoder({arg})}

    def forward(self, x):
        (encoder,) = self.encoders
        return encoder(self.head(x))


model = Detector(["a", "b"], print)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for _ in range(3):
    loss = model(torch.randn(2, 4)).sum()
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
'''


@pytest.mark.parametrize("encoder, count, arg, reported", [
    ("pass", "self.num_class = len(classes)", "self.num_class", False),
    ("pass", "n = len(classes)", "n", False),  # the call len() and its assignment: one binding
    ("self.scale = nn.Dropout(0.0)", "n = len(classes)", "n", False),  # nn.Dropout(p=0): no mode
    ("self.register_buffer('scale', torch.ones(4))", "n = len(classes)", "n", True),  # to() misses it
    ("self.drop = nn.Dropout(0.1)", "n = len(classes)", "n", True),  # eval() misses it
    ("self.fc = nn.Linear(4, 4)", "n = len(classes)", "n", True),  # parameters() misses it
    # a value the analysis cannot classify (hook() may bind it again): not established to be a module
    ("pass", "self.num_class = len(classes); hook(self)", "self.num_class", False),
    # a submodule the detector registers itself: parameters() reaches it through self.head
    ("pass", "self.num_class = len(classes)", "self.head", False),
    ("pass", "n = 0", "nn.Linear(4, 4)", True),  # kept: a module with parameters no one else registers
    ("pass", "body = nn.Linear(4, 4)", "body", True),  # the same, through a local name
    ("pass", "body = nn.Linear(4, 4); self.body = body", "body", False),  # registered by the detector
    ("pass", "n = 0", "nn.ReLU()", False),  # kept, but a module without state
    ("pass", "n = 0", "Encoder(nn.Linear(4, 4))", True),  # a project module that keeps one
])
def test_plain_container_of_modules_without_state(encoder, count, arg, reported):
    """LC504 counts a plain container's project module only when it is established to hold
    state (``values.construction_holds_state``): it builds a parameter, a buffer or a layer
    that depends on the mode, or it keeps an argument established to be a module with state
    that the container's owner does not register itself. A module built from numbers
    (``values._number_attribute``), from values the analysis cannot classify, or from a
    submodule of its owner is not counted."""
    source = PLAIN_SET.replace("{encoder}", encoder).replace("{count}", count).replace("{arg}", arg)
    codes = [f.code for f in check_source(source, "snippet.py")]
    assert codes == (["LC504"] if reported else [])


SCRATCH_DICT = '''
import torch
import torch.nn as nn


class Extractor(nn.Module):
    def __init__(self, flag=True):
        super().__init__()
        self._blocks = {}
        self._blocks[0] = nn.Linear(4, 4)
        self.body = nn.Sequential(self._blocks[0])
        {end}

    def forward(self, x):
        return self.body(x)


model = Extractor()
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for _ in range(3):
    loss = model(torch.randn(2, 4)).sum()
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
'''


@pytest.mark.parametrize("end, reported", [
    ("del self._blocks", False),
    ("del (self.body_name, self._blocks)", False),
    ("pass", True),  # kept on the module
    ("if flag:\n            del self._blocks", True),  # not on every path
    ("if not flag:\n            return\n        del self._blocks", True),  # a return skips it
    ("del self.body", True),  # another attribute
])
def test_plain_container_deleted_by_the_method_that_builds_it(end, reported):
    """LC504 stays silent on a plain container that the method assigning it deletes, at its
    body's top level with no ``return`` before, once done (``rules.modules._deleted_after``)."""
    source = SCRATCH_DICT.replace("{end}", end)
    codes = [f.code for f in check_source(source, "snippet.py")]
    assert codes == (["LC504"] if reported else [])


BRANCHED_DICT = '''
import sys

import torch
import torch.nn as nn
from somelib import DistThing


class Embed(nn.Module):
    def __init__(self, names, plain):
        super().__init__()
        self.proj = nn.Linear(4, 4)
        if plain:
            self.tables = {}
            for name in names:
                self.tables[name] = {held}
        else:
            self.tables = nn.ModuleDict()
            for name in names:
                self.tables[name] = nn.Embedding(10, 4)
        {after}

    def forward(self, name, ids):
        return self.proj(self.tables[name](ids))


model = Embed(["a", "b"], sys.argv[1] == "plain")
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for _ in range(3):
    loss = model("a", torch.randint(0, 10, (2,))).sum()
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
'''


@pytest.mark.parametrize("held, after, related", [
    ("DistThing(10, 4)", "pass", None),  # a library class the knowledge does not describe
    ("nn.Embedding(10, 4)", "pass", [16]),  # only the insertion into the plain dict
    ("DistThing(10, 4)", "self.tables['c'] = nn.Linear(4, 4)", [21]),  # reached by both containers
    # replaced by a ModuleDict before the insertion: the plain dict never holds it
    ("DistThing(10, 4)", "self.tables = nn.ModuleDict()\n        self.tables['c'] = nn.Linear(4, 4)", None),
])
def test_plain_container_counts_only_its_own_insertions(held, after, related):
    """LC504 counts, for an empty plain container, only the modules put into that container:
    the insertions it reaches (``rules.modules._fills``), not those into an ``nn.ModuleDict``
    the same attribute holds on another path; an object of a library class the knowledge does
    not describe is not established to be a module. The related lines are those insertions."""
    source = BRANCHED_DICT.replace("{held}", held).replace("{after}", after)
    found = [f for f in check_source(source, "snippet.py") if f.code == "LC504"]
    if related is None:
        assert found == []
        return
    assert [f.row for f in found] == [14]
    assert [r.row for r in found[0].related if "adds" in r.message] == related
