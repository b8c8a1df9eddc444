"""LC501's device places: what an ``if`` says of CUDA's availability (``rules.setup.cuda_said``),
a move to a CUDA device (``cuda_place``), and a device read from a model's parameters
(``device_read`` events, ``engine.events._device_read``)."""

from __future__ import annotations

import libcst as cst
import pytest

from loopcheck.analysis import build_units
from loopcheck.engine.ir import If, parts
from loopcheck.rules.setup import Place, cuda_place, cuda_said


def _unit(source: str):
    (unit,) = build_units(cst.parse_module(source))
    return unit


def _ifs(unit) -> list[If]:
    out, stack = [], [unit.ir]
    while stack:
        node = stack.pop()
        if isinstance(node, If) and isinstance(node.node, cst.If):  # (not an ``a and b()`` operand)
            out.append(node)
        stack.extend(parts(node))
    return out


_MODEL = "import torch\nfrom torch import nn\nmodel = nn.Linear(2, 2)\n"


@pytest.mark.parametrize("test, body, orelse", [
    ("torch.cuda.is_available()", True, False),
    ("not torch.cuda.is_available()", False, True),
    ("torch.cuda.device_count() > 0", True, False),
    ("torch.cuda.device_count() >= 1", True, False),
    ("torch.cuda.device_count() != 0", True, False),
    ("torch.cuda.device_count() == 0", False, True),
    ("torch.cuda.device_count()", True, False),
    ("torch.cuda.device_count() > 1", None, None),  # one GPU makes it false: nothing said
    ("model is not None and torch.cuda.is_available()", True, None),
    ("flag or torch.cuda.is_available()", None, False),
    ("torch.cuda.is_initialized()", None, None),
])
def test_cuda_said(test, body, orelse):
    unit = _unit(_MODEL + f"flag = len(__file__) > 3\nif {test}:\n    model.cuda()\n")
    (node,) = _ifs(unit)
    said = cuda_said(unit)
    assert (said(node, True), said(node, False)) == (body, orelse)


def test_cuda_said_qualifies_by_imports():
    unit = _unit("from torch import nn\nimport torch.cuda as tc\nmodel = nn.Linear(2, 2)\n"
                 "if tc.is_available():\n    model.cuda()\n")
    (node,) = _ifs(unit)
    assert cuda_said(unit)(node, True) is True
    other = _unit("from torch import nn\nimport mylib as torch\nmodel = nn.Linear(2, 2)\n"
                  "if torch.cuda.is_available():\n    model.cuda()\n")
    (node,) = _ifs(other)
    assert cuda_said(other)(node, True) is None


def test_cuda_place():
    assert cuda_place(Place("cuda")) and cuda_place(Place("cuda:gpu_ids[0]")) and cuda_place(Place("cuda:0"))
    assert not cuda_place(Place("cpu")) and not cuda_place(Place("device", "device")) and not cuda_place(None)


def _device_reads(source: str):
    units = build_units(cst.parse_module(source))
    return [(ev.subject, ev.extra["var"]) for unit in units for ev in unit.events if ev.kind == "device_read"]


def test_device_read_of_model_parameters():
    body = ("def fit(model):\n    opt = torch.optim.SGD(model.parameters(), lr=0.1)\n"
            "    {line}\n    opt.step()\n")
    reads = _device_reads(_MODEL + body.format(line="device = next(model.parameters()).device"))
    assert [var.rpartition(":")[2] for _, var in reads] == ["device"]
    assert reads[0][0].rpartition(":")[2] == "model"
    assert len(_device_reads(_MODEL + body.format(line="device = next(iter(model.parameters())).device"))) == 1
    # not the device of the parameters, or not kept in a plain variable: no event
    assert _device_reads(_MODEL + body.format(line="device = next(model.parameters()).dtype")) == []
    assert _device_reads(_MODEL + body.format(line="model.dev = next(model.parameters()).device")) == []
    assert _device_reads(_MODEL + body.format(line="device = next(other.parameters()).device")) == []


def test_device_read_names_the_known_place():
    """``S.read``: a variable read from the parameters while the path knows where the model is
    names that place (``S.resolve``); unknown, the variable itself is where the model is."""
    from loopcheck.rules.setup import S
    here = Place("device", "f0_1:args.device")
    s = S(None, current=here, at_build=here).read("f2_3:device")
    assert s.current == here and s.reads == frozenset({("f2_3:device", here)})
    assert s.resolve(Place("device", "f2_3:device")) == here
    assert s.resolve(Place("cpu")) == Place("cpu")  # a literal device names no variable
    assert s.resolve(Place("device", "f2_4:device")) == Place("device", "f2_4:device")  # another variable
    moved = s._replace(current=Place("cpu")).read("f2_3:device")  # read again once on the CPU
    assert moved.reads == frozenset({("f2_3:device", Place("cpu"))})
    unknown = S(None).read("f2_3:device")
    assert unknown.current == Place("device", "f2_3:device") and unknown.reads == frozenset()


def test_device_kinds_and_established_difference():
    """``kind_on``/``established_to_differ``: a move changes the place only when both kinds are
    established and differ; CUDA indices are one kind; an unresolved target establishes nothing."""
    from loopcheck.rules.setup import DEFAULT_DEVICE, established_to_differ, kind_on
    cuda_if = Place("device", "device", kinds=("cuda", "cpu"))
    assert kind_on(Place("cpu"), None) == "cpu" and kind_on(Place("cuda:0"), None) == "cuda"
    assert kind_on(Place('"mps"'), None) is None and kind_on(Place("mps"), None) == "mps"
    assert kind_on(Place("cpu", "f0:cpu"), None) is None  # a variable named cpu: not its text
    assert kind_on(cuda_if, None) == "cuda" and kind_on(cuda_if, True) == "cuda" and kind_on(cuda_if, False) == "cpu"
    assert established_to_differ(DEFAULT_DEVICE, Place("cuda"), None)
    assert established_to_differ(DEFAULT_DEVICE, cuda_if, None) and not established_to_differ(DEFAULT_DEVICE, cuda_if, False)
    assert not established_to_differ(Place("cuda"), Place("cuda:1"), None)
    assert not established_to_differ(Place("device", "args.device"), Place("cpu"), None)
    assert not established_to_differ(None, Place("cuda"), None)


def test_form_value():
    from loopcheck.rules.setup import device_kind, form_value
    from loopcheck.engine.settings import constant_form

    def kinds(expr: str):
        unit = _unit(_MODEL + f"device = {expr}\nmodel.to(device)\n")
        (move,) = [ev for ev in unit.events if ev.kind == "convert"]
        form = constant_form(unit, move.raw.args[0].node)
        return device_kind(form_value(form, True)), device_kind(form_value(form, False))

    assert kinds('torch.device("cuda" if torch.cuda.is_available() else "cpu")') == ("cuda", "cpu")
    assert kinds('"cpu" if not torch.cuda.is_available() else "cuda:0"') == ("cuda", "cpu")
    assert kinds('torch.device("cuda" if torch.cuda.device_count() > 0 else "cpu")') == ("cuda", "cpu")
    assert kinds('torch.device("cuda:1" if torch.cuda.device_count() > 1 else "cpu")') == (None, "cpu")
    assert kinds('torch.device("cpu")') == ("cpu", "cpu")


@pytest.mark.parametrize("source, named", [
    ("d = 'cuda'\nmodel = nn.Sequential(nn.Linear(2, 2, device=d), nn.ReLU(), nn.Linear(2, 1, device=d))\n", "d"),
    ("d = 'cuda'\nmodel = nn.Sequential(nn.Linear(2, 2, device=d), nn.Linear(2, 1))\n", None),
    ("d = 'cuda'\nmodel = nn.Sequential(nn.Linear(2, 2, device=d), nn.Linear(2, 1, device='cpu'))\n", None),
    ("d = 'cuda'\nwith torch.device(d):\n    model = nn.Linear(2, 2)\n", "d"),
    ("d = 'cuda'\ntorch.set_default_device(d)\nmodel = nn.Linear(2, 2)\n", "d"),
    ("d = 'cuda'\nmodel = nn.Linear(2, 2)\ntorch.set_default_device(d)\n", None),
    ("model = nn.Linear(2, 2)\n", None),  # PyTorch's default: built_on_default_device
])
def test_built_on_named_device(source, named):
    from loopcheck.engine.ir import Call
    from loopcheck.engine.values import built_on_named_device
    unit = _unit("import torch\nfrom torch import nn\n" + source + "opt = torch.optim.SGD(model.parameters(), lr=0.1)\n")
    (build,) = [ev for ev in unit.events if ev.kind == "model_build"]
    assert isinstance(build.raw, Call)
    found = built_on_named_device(unit, build.raw)
    assert (cst.Module([]).code_for_node(found) if found is not None else None) == named
