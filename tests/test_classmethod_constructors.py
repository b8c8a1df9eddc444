"""A model built by a ``@classmethod`` of its class (``Net.from_config(cfg)``, which returns
``cls(...)``) is an instance of that class: :func:`loopcheck.engine.values.classmethod_construction`,
and the builder's binding of a classmethod's parameters (``cls`` is the class, the first
argument goes to the next parameter)."""

from __future__ import annotations

import textwrap
from pathlib import Path

import libcst as cst
import pytest

from loopcheck.analysis import check_source
from loopcheck.engine.builder import index_module
from loopcheck.engine.values import classmethod_construction

MODULE = '''
import torch
import torch.nn as nn


class Net(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.fc = nn.Linear(d, 1)

    @classmethod
    def direct(cls, cfg):
        return cls(cfg["d"])

    @classmethod
    def named(cls, cfg, with_extra=False):
        model = cls(cfg["d"])
        if with_extra:
            return model, cfg
        return model

    @classmethod
    def loaded(cls, path):
        return torch.load(path)

    @classmethod
    def two_ways(cls, cfg):
        if cfg:
            return cls(1)
        return cls(2)

    @classmethod
    def rebinds(cls, cfg):
        cls = Other
        return cls(cfg)

    @staticmethod
    def static(cfg):
        return Net(cfg["d"])

    def plain(self, cfg):
        return type(self)(cfg["d"])


class Sub(Net):
    pass


def build(cfg):
    return Net(cfg["d"])
'''


@pytest.mark.parametrize("dotted, cls, call", [
    ("Net.direct", "Net", 'cls(cfg["d"])'),
    ("Net.named", "Net", 'cls(cfg["d"])'),  # the tuple return is no module: passed over
    ("Sub.direct", "Sub", 'cls(cfg["d"])'),  # inherited: cls is the class the call goes through
    ("Net.loaded", None, None),  # returns what torch.load unpickles
    ("Net.two_ways", None, None),  # two constructions
    ("Net.rebinds", None, None),  # cls re-bound
    ("Net.static", None, None),  # no class parameter
    ("Net.plain", None, None),  # not a classmethod
    ("Net.missing", None, None),
    ("build", None, None),  # a function, not a method
    ("torch.load", None, None),  # a library function
])
def test_the_construction_a_classmethod_returns(dotted: str, cls: str | None, call: str | None):
    module = cst.parse_module(MODULE)
    found = classmethod_construction(index_module(module), dotted)
    if cls is None:
        assert found is None
    else:
        assert (found[0].name, module.code_for_node(found[1])) == (cls, call)


TRAIN = '''
import torch
import torch.nn.functional as F

from models import Net


def train():
    model = Net.from_config({"d": 4}, 0.1)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    val_loader = [torch.randn(8, 4)]
    for epoch in range(2):
        model.train()
        for x in [torch.randn(8, 4)]:
            loss = F.mse_loss(model(x), x[:, :1])
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        with torch.no_grad():
            for x in val_loader:
                out = model(x)


train()
'''

MODELS = '''
import torch.nn as nn


class Net(nn.Module):
    def __init__(self, d, p=0.0):
        super().__init__()
        self.fc = nn.Linear(d, 1)
        if p > 0:
            self.drop = nn.Dropout(p)

    def forward(self, x):
        return self.fc(x)

    @classmethod
    def from_config(cls, cfg, p):
        return cls(cfg["d"], {p})
'''


@pytest.mark.parametrize("p, reported", [("0.0", False), ("p", True), ("0.5", True)])
def test_a_classmethod_of_another_module_binds_cls_to_the_class(tmp_path: Path, p: str, reported: bool):
    """``Net.from_config({"d": 4}, 0.1)``, inlined from models.py: ``cfg`` is given the dict and
    ``p`` the rate (not ``cls``: Python binds it to ``Net``), and ``cls(...)`` builds a Net, read
    with the arguments it is given: a Dropout of rate 0 is none, one of rate ``p`` (0.1) or 0.5
    is active in the validation."""
    (tmp_path / "models.py").write_text(textwrap.dedent(MODELS).replace("{p}", p))
    path = tmp_path / "train.py"
    path.write_text(TRAIN)
    found = [(f.code, f.row) for f in check_source(TRAIN, str(path), select=["LC303"])]
    assert found == ([("LC303", 21)] if reported else [])
