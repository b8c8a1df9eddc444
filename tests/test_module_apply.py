"""``model.apply(fn)`` (``nn.Module.apply``: ``fn`` runs on every submodule): the mode ``fn``
sets on the module it is given (:func:`loopcheck.engine.summaries.module_mode`), the function
the builder finds for the argument (:attr:`loopcheck.engine.ir.Arg.function`), and LC303."""

from __future__ import annotations

import textwrap

import libcst as cst
import pytest

from loopcheck.analysis import check_source
from loopcheck.engine.knowledge import knowledge
from loopcheck.engine.summaries import module_mode


def _function(source: str):
    node = cst.parse_module(textwrap.dedent(source)).body[0]
    if isinstance(node, cst.SimpleStatementLine):  # f = lambda m: ...
        return node.body[0].value.value if isinstance(node.body[0], cst.Expr) else node.body[0].value
    return node


@pytest.mark.parametrize("source, mode", [
    ("def f(m):\n    if isinstance(m, nn.BatchNorm2d):\n        m.eval()\n", "eval"),
    ("def f(m):\n    name = m.__class__.__name__\n    if name.find('Dropout') != -1:\n        m.train(False)\n", "eval"),
    ("def f(m):\n    m.train()\n", "train"),
    ("def f(m):\n    m.train(mode=True)\n", "train"),
    ("def f(m):\n    m.training = False\n", "eval"),
    ("def f(m, flag=False):\n    m.train(flag)\n", "unknown"),
    ("def f(m):\n    if isinstance(m, nn.Dropout):\n        m.eval()\n    else:\n        m.train()\n", "unknown"),
    ("def f(m):\n    setattr(m, 'training', False)\n", "unknown"),
    ("def f(m):\n    freeze(m)\n", "unknown"),  # the module handed to code not read here
    ("f = lambda m: m.eval()\n", "eval"),
    # what sets no mode: weights initialised, attributes of the module, reading builtins
    ("def f(m):\n    if isinstance(m, nn.Linear):\n        nn.init.xavier_uniform_(m.weight)\n"
     "        m.bias.data.zero_()\n", None),
    ("def f(m):\n    if hasattr(m, 'reset_parameters'):\n        m.reset_parameters()\n", None),
    ("def f(m):\n    setattr(m, 'width_mult', 0.5)\n", None),
    ("def f(m):\n    def g(x):\n        x.eval()\n    return g\n", None),  # a nested function not called here
    ("def f():\n    pass\n", None),
])
def test_the_mode_a_function_sets_on_the_module_it_is_given(source, mode):
    assert module_mode(_function(source)) == mode


def test_the_knowledge_names_the_methods_that_run_a_function_on_each_module():
    assert knowledge().methods_with("each_module") == {"apply"}


PROGRAM = '''
import torch
import torch.nn as nn
{helper}

def validate(model, loader):
{local}
    model.apply({fn})
    with torch.no_grad():
        for x, y in loader:
            print(model(x))


model = nn.Sequential(nn.Linear(8, 8), nn.Dropout(0.5), nn.Linear(8, 2))
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for epoch in range(3):
    model.train()
    for x, y in [(torch.randn(4, 8), torch.randint(0, 2, (4,)))]:
        loss = nn.functional.cross_entropy(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    validate(model, [(torch.randn(4, 8), None)])
'''

EVAL_DEF = "def dropout_eval(m):\n    if isinstance(m, nn.Dropout):\n        m.eval()\n"
INIT_DEF = "def init(m):\n    if isinstance(m, nn.Linear):\n        nn.init.zeros_(m.bias)\n"


@pytest.mark.parametrize("helper, local, fn, reported", [
    (EVAL_DEF, "", "dropout_eval", False),  # a function of the module
    ("", textwrap.indent(EVAL_DEF, "    "), "dropout_eval", False),  # a def of the function
    ("", "", "lambda m: m.eval() if isinstance(m, nn.Dropout) else None", False),
    (INIT_DEF, "", "init", True),  # sets no mode: what is known stays
    ("", "", "lambda m: None", True),
    ("from somewhere import fix_modules\n", "", "fix_modules", False),  # a function not read: may set any mode
])
def test_lc303_after_model_apply(helper, local, fn, reported):
    source = PROGRAM.format(helper=helper, local=local, fn=fn)
    codes = [f.code for f in check_source(source, "snippet.py", select=["LC303"])]
    assert codes == (["LC303"] if reported else [])


@pytest.mark.parametrize("source, bound, mode", [
    # a method read from an instance: the module is the parameter after ``self``
    ("def _init_weights(self, m):\n    if isinstance(m, nn.Linear):\n        nn.init.zeros_(m.bias)\n", 1, None),
    ("def _init_weights(self, module):\n    nn.init.normal_(module.weight, std=self.config.std)\n", 1, None),
    ("def _bn_eval(self, m):\n    if isinstance(m, nn.BatchNorm2d):\n        m.eval()\n", 1, "eval"),
    # a mode set on ``self`` is not the module's
    ("def f(self, m):\n    self.eval()\n", 1, "unknown"),
    ("def f(self, m):\n    self.training = False\n", 1, "unknown"),
    ("def f(self, m):\n    freeze(self)\n", 1, "unknown"),
    ("def f(self):\n    pass\n", 1, None),  # no parameter for the module
    # read unbound, the first parameter is the module
    ("def f(self, m):\n    self.eval()\n", 0, "eval"),
])
def test_the_mode_a_bound_function_sets_on_the_module_it_is_given(source, bound, mode):
    assert module_mode(_function(source), bound) == mode


METHOD_PROGRAM = '''
import torch
import torch.nn as nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 2)
        self.drop = nn.Dropout(0.5)
        self.apply(self.{fn})

    def _init_weights(self, m):
        if isinstance(m, nn.Linear):
            nn.init.zeros_(m.bias)

    @staticmethod
    def _init_static(m):
        if isinstance(m, nn.Linear):
            nn.init.zeros_(m.bias)

    def _dropout_eval(self, m):
        if isinstance(m, nn.Dropout):
            m.eval()

    def _self_eval(self, m):
        self.eval()

    def forward(self, x):
        return self.fc(self.drop(x))


model = Net()
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
train_loader = [(torch.randn(4, 8), torch.randint(0, 2, (4,)))]
val_loader = [(torch.randn(4, 8), torch.randint(0, 2, (4,)))]
for epoch in range(3):
    for x, y in train_loader:
        loss = nn.functional.cross_entropy(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    with torch.no_grad():
        for x, y in val_loader:
            val_loss = nn.functional.cross_entropy(model(x), y)
    print(val_loss.item())
'''


@pytest.mark.parametrize("fn, reported", [
    ("_init_weights", True),  # sets no mode: the model stays in train mode after construction
    ("_init_static", True),
    ("_dropout_eval", False),  # (then the mode is partly eval: not established to be train)
    ("_self_eval", False),  # a mode set on the instance: unknown
])
def test_lc303_after_self_apply_of_a_method_in_the_constructor(fn, reported):
    """``self.apply(self._init_weights)`` in ``__init__`` (the HF/timm/nanoGPT idiom) resolves
    the method through the class, and a method that sets no mode keeps the model's mode."""
    codes = [f.code for f in check_source(METHOD_PROGRAM.format(fn=fn), "snippet.py", select=["LC303"])]
    assert codes == (["LC303"] if reported else [])
