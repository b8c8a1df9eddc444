"""The autocast state where the code's autocast blocks decide it: an ``if`` on
``torch.is_autocast_enabled()`` takes one arm where the state is known
(:meth:`loopcheck.engine.builder.UnitBuilder.autocast_decided`), both elsewhere. What PyTorch
does (torch 2.13, CPU): the state is off outside every block and restored when a block is left;
``is_autocast_enabled()`` without a device reads CUDA's, so it is False inside
``torch.autocast("cpu")``; ``is_autocast_enabled("cpu")`` is True there."""

from __future__ import annotations

import libcst as cst
import pytest

from loopcheck.analysis import build_units
from loopcheck.engine.builder import UnitBuilder
from loopcheck.engine.ir import Call, Context, walk_events

HEAD = "import torch\nfrom torch.amp import autocast\n"


def _arms(src: str, entry: str | None = None) -> set[str]:
    """The names of ``on()``/``off()`` calls the unit of ``entry`` (``None``: the module's code)
    runs: ``{"on"}`` when the test was decided True, ``{"off"}`` False, both when not decided."""
    units = build_units(cst.parse_module(HEAD + src))
    (unit,) = [u for u in units if (u.entry.name.value if u.entry is not None else None) == entry]
    return {e.func for e in walk_events(unit.ir) if type(e) is Call and e.func in ("on", "off")}


QUERY = "    if torch.is_autocast_enabled({arg}):\n        on()\n    else:\n        off()\n"


@pytest.mark.parametrize("src, expected", [
    # after the block has closed: the state it found, off
    ("def f():\n    with autocast(device_type='cuda'):\n        pass\n" + QUERY.format(arg="") + "f()\n", {"off"}),
    # inside an enabled block of the device asked: on
    ("def f():\n    with torch.autocast('cuda'):\n    " + QUERY.format(arg="").replace("\n    ", "\n        ")
     + "f()\n", {"on"}),
    # a CPU block: the query without a device reads CUDA's state, off; with "cpu", on
    ("def f():\n    with torch.autocast('cpu'):\n    " + QUERY.format(arg="").replace("\n    ", "\n        ")
     + "f()\n", {"off"}),
    ("def f():\n    with torch.autocast('cpu'):\n    " + QUERY.format(arg="'cpu'").replace("\n    ", "\n        ")
     + "f()\n", {"on"}),
    # enabled=False, and torch.cuda.amp.autocast()
    ("def f():\n    with torch.amp.autocast('cuda', enabled=False):\n    "
     + QUERY.format(arg="").replace("\n    ", "\n        ") + "f()\n", {"off"}),
    ("def f():\n    with torch.cuda.amp.autocast():\n    " + QUERY.format(arg="").replace("\n    ", "\n        ")
     + "f()\n", {"on"}),
    # enabled from a flag the code does not fix: not known
    ("def f(flag):\n    with torch.autocast('cuda', enabled=flag):\n    "
     + QUERY.format(arg="").replace("\n    ", "\n        ") + "f(g())\n", {"on", "off"}),
    # a function called inside the caller's block sees the caller's state
    ("def f():\n" + QUERY.format(arg="") + "with torch.autocast('cuda'):\n    f()\n", {"on"}),
    # a decorator
    ("@torch.autocast('cuda')\ndef f():\n" + QUERY.format(arg="") + "f()\n", {"on"}),
    # a context manager of the project may set it: not known
    ("import contextlib\n@contextlib.contextmanager\ndef amp():\n    with autocast('cuda'):\n        yield\n"
     "def f():\n    with amp():\n    " + QUERY.format(arg="").replace("\n    ", "\n        ") + "f()\n",
     {"on", "off"}),
    # a module that sets the state by a call: not known
    ("torch.set_autocast_enabled(True)\ndef f():\n" + QUERY.format(arg="") + "f()\n", {"on", "off"}),
    # `not` of the query
    ("def f():\n    with autocast('cuda'):\n        pass\n    if not torch.is_autocast_enabled():\n"
     "        off()\n    else:\n        on()\nf()\n", {"off"}),
])
def test_decided_in_module_code(src: str, expected: set[str]) -> None:
    assert _arms(src) == expected


def test_function_nobody_calls_is_not_decided() -> None:
    # its callers (none in its module) may run it inside a block: both arms
    src = "def f():\n    with autocast('cuda'):\n        pass\n" + QUERY.format(arg="")
    assert _arms(src, "f") == {"on", "off"}


@pytest.mark.parametrize("blocks, device, expected", [
    ((("*", False),), "cuda", False),
    ((("*", None),), "cuda", None),
    ((("*", False), ("cuda", True)), "cuda", True),
    ((("*", False), ("cpu", True)), "cuda", False),
    ((("*", False), ("cuda", True), ("cuda", False)), "cuda", False),
    ((("*", False), ("?", True)), "cuda", None),  # the block may be CUDA's or another device's
    ((("*", False), ("?", False)), "cuda", False),  # off either way
    ((("*", False), ("cpu", True)), None, None),  # a device not known
    ((("*", False), ("cpu", False)), None, False),
])
def test_autocast_state(blocks, device, expected) -> None:
    assert UnitBuilder.autocast_state(Context(autocast=blocks), device) is expected
