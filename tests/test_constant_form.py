"""``constant_form`` and ``single_binding`` (engine/settings.py): two device expressions built of
run constants alone name one device when their forms are equal (census 22,
pablo-reyes8/pytorch-gans: the script and its training function each compute
``torch.device('cuda' if torch.cuda.is_available() else 'cpu')``); anything else has no form."""

from __future__ import annotations

import textwrap

import libcst as cst

from loopcheck.analysis import build_units
from loopcheck.engine.settings import constant_form

SOURCE = """
import torch
import torch.nn as nn
from torch.cuda import is_available

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
other = torch.device("cuda" if is_available() else "cpu")
cpu = torch.device("cpu")
name = "cuda" if torch.cuda.is_available() else "cpu"
named = torch.device(name)
twice = "cpu"
twice = "cuda"


def device(): pass


def train(model, arg_device, args):
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    local = torch.device("cuda" if not torch.cuda.device_count() == 0 else "cpu")
    model.to(device)
    model.to(local)
    model.to(arg_device)
    model.to(args.device)
    model.to(torch.device(args.device))
    model.to(torch.device("cuda" if torch.cuda.is_available() else "cpu"))
    model.to(str(device))
    model.to(named)
    model.to(twice)


model = nn.Linear(2, 1)
model.to(other)
model.to(cpu)
model.to(named)
model.to(device)
"""


def _forms() -> list:
    module = cst.parse_module(textwrap.dedent(SOURCE))
    units = build_units(module)
    unit = units[0]
    targets = [n.args[0].value for n in _calls(module) if isinstance(n.func, cst.Attribute) and n.func.attr.value == "to"]
    return [constant_form(unit, t) for t in targets]


def _calls(node):
    out = []

    class V(cst.CSTVisitor):
        def visit_Call(self, n):
            out.append(n)

    node.visit(V())
    return out


def test_forms_of_device_expressions():
    cuda_if = ("call", "torch.device", ((None, ("if", ("fact", "cuda_available"), ("literal", "str", "cuda"),
                                                 ("literal", "str", "cpu"))),))
    (device, local, arg, option, of_option, inline, as_str, named_in_function, twice,
     other, cpu, named, module_device) = _forms()
    # a local bound once to the expression, and the same expression written in place
    assert device == cuda_if and inline == cuda_if
    # a function's own name, bound once, through a name bound once (a module global the
    # function does not bind), and `from torch.cuda import is_available`
    assert other == cuda_if
    assert named == named_in_function == ("call", "torch.device", ((None, ("if", ("fact", "cuda_available"),
                                                                          ("literal", "str", "cuda"),
                                                                          ("literal", "str", "cpu"))),))
    assert cpu == ("call", "torch.device", ((None, ("literal", "str", "cpu")),))
    # another test of CUDA: another form (not established equal)
    assert local is not None and local != cuda_if
    # a parameter, an option, a function the knowledge does not describe, a name bound twice
    # the module's ``device`` is bound twice (``def device()``)
    assert module_device is None
    assert arg is None and option is None and of_option is None and as_str is None and twice is None
