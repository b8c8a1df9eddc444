"""Grad mode is a state of the thread: the mode a called function of the project leaves set by a
``torch.set_grad_enabled(...)`` statement holds in its caller after it returns
(:meth:`loopcheck.engine.builder.UnitBuilder.grad_on_return`, applied by ``grad_after``)."""

from __future__ import annotations

import libcst as cst
import pytest

from loopcheck.analysis import build_units

HEAD = "import torch\nimport torch.nn as nn\nmodel = nn.Linear(2, 2)\n"


def _modes(helper: str, call: str = "helper()") -> tuple[tuple[str, bool], ...]:
    """``(grad, grad_inherited)`` of ``model(x)`` after the module's top level calls ``call``."""
    src = HEAD + helper + f"\n{call}\nmodel(x)\n"
    (unit,) = [u for u in build_units(cst.parse_module(src)) if u.of_kind("forward")][:1]
    fwds = [f for f in unit.of_kind("forward") if not f.ctx.calls]
    return tuple((f.ctx.grad, f.ctx.grad_inherited) for f in fwds)


@pytest.mark.parametrize("helper, call, expected", [
    # every path turns gradients off: off after the call, set by the program (not inherited)
    ("def helper():\n    torch.set_grad_enabled(False)\n", "helper()", ("disabled", False)),
    ("def helper():\n    torch.autograd.set_grad_enabled(False)\n", "helper()", ("disabled", False)),
    ("def helper():\n    torch.set_grad_enabled(False)\n    return 1\n", "y = helper()", ("disabled", False)),
    # through a function it calls, and on both returns
    ("def off():\n    torch.set_grad_enabled(False)\ndef helper():\n    off()\n", "helper()", ("disabled", False)),
    ("def helper(a):\n    if a:\n        torch.set_grad_enabled(False)\n        return 1\n"
     "    torch.set_grad_enabled(False)\n    return 2\n", "helper(a)", ("disabled", False)),
    # off then on again
    ("def helper():\n    torch.set_grad_enabled(False)\n    torch.set_grad_enabled(True)\n", "helper()",
     ("enabled", False)),
    # one path off, another keeps the entry's mode: unknown (what the entry's callers say holds
    # on the path that kept it)
    ("def helper(a):\n    if a:\n        return 0\n    torch.set_grad_enabled(False)\n", "helper(a)",
     ("unknown", True)),
    # one path sets on, another keeps the (on) mode: on, still the entry's on one path
    ("def helper(a):\n    if a:\n        return 0\n    torch.set_grad_enabled(True)\n", "helper(a)",
     ("enabled", True)),
    # both paths set it, to different modes
    ("def helper(a):\n    if a:\n        torch.set_grad_enabled(True)\n        return 0\n"
     "    torch.set_grad_enabled(False)\n", "helper(a)", ("unknown", False)),
    # an argument the code does not fix: unknown
    ("def helper(flag):\n    torch.set_grad_enabled(flag)\n", "helper(flag)", ("unknown", False)),
    # sets nothing, or restores on exit (a grad block, a grad decorator): the caller's mode
    ("def helper():\n    pass\n", "helper()", ("enabled", True)),
    ("def helper():\n    with torch.no_grad():\n        torch.set_grad_enabled(False)\n", "helper()",
     ("enabled", True)),
    ("def helper():\n    with torch.no_grad():\n        torch.set_grad_enabled(False)\n        return 1\n",
     "helper()", ("enabled", True)),
    ("@torch.no_grad()\ndef helper():\n    torch.set_grad_enabled(False)\n", "helper()", ("enabled", True)),
    # a mode set inside a nested block: the join of its paths, never one arm's mode. One `if`
    # arm turns gradients off, the missing `else` keeps them: unknown (LC302 is silent on it)
    ("def helper(a):\n    if a:\n        torch.set_grad_enabled(False)\n", "helper(a)", ("unknown", True)),
    ("def helper(a):\n    if a: torch.set_grad_enabled(False)\n", "helper(a)", ("unknown", True)),
    # both arms agree: their mode
    ("def helper(a):\n    if a:\n        torch.set_grad_enabled(False)\n    else:\n"
     "        torch.set_grad_enabled(False)\n", "helper(a)", ("disabled", False)),
    # off, then both arms of an if/else turn them on again: on (the top-level off does not hold)
    ("def helper(a):\n    torch.set_grad_enabled(False)\n    if a:\n        torch.set_grad_enabled(True)\n"
     "    else:\n        torch.set_grad_enabled(True)\n", "helper(a)", ("enabled", False)),
    # off, then only one arm turns them on again: unknown
    ("def helper(a):\n    torch.set_grad_enabled(False)\n    if a:\n        torch.set_grad_enabled(True)\n",
     "helper(a)", ("unknown", False)),
    # an elif chain whose every arm turns them off, with an else: off
    ("def helper(a):\n    if a == 1:\n        torch.set_grad_enabled(False)\n    elif a == 2:\n"
     "        torch.set_grad_enabled(False)\n    else:\n        torch.set_grad_enabled(False)\n",
     "helper(a)", ("disabled", False)),
    # a loop body turning them off: the loop may run no iteration, unknown
    ("def helper(a):\n    for v in a:\n        torch.set_grad_enabled(False)\n", "helper(a)", ("unknown", True)),
    ("def helper(a):\n    while a:\n        torch.set_grad_enabled(False)\n        break\n", "helper(a)",
     ("unknown", True)),
    # a break may leave the loop before the body turns them on again: unknown
    ("def helper(a):\n    for v in a:\n        torch.set_grad_enabled(False)\n        if v:\n            break\n"
     "        torch.set_grad_enabled(True)\n", "helper(a)", ("unknown", True)),
    # an except handler turning them off: unknown (the body may not raise)
    ("def helper(a):\n    try:\n        a()\n    except ValueError:\n        torch.set_grad_enabled(False)\n",
     "helper(a)", ("unknown", True)),
    # a `with` that sets no grad mode: the mode at its body's end holds after it
    ("def helper(p):\n    with open(p):\n        torch.set_grad_enabled(False)\n", "helper(p)", ("disabled", False)),
    # try/finally: the mode at the end of the finally block holds on every exit through it
    ("def helper(a):\n    torch.set_grad_enabled(False)\n    try:\n        a()\n    finally:\n"
     "        torch.set_grad_enabled(True)\n", "helper(a)", ("enabled", False)),
    ("def helper(a):\n    torch.set_grad_enabled(False)\n    try:\n        return a()\n    finally:\n"
     "        torch.set_grad_enabled(True)\n", "y = helper(a)", ("enabled", False)),
    ("def helper(a):\n    try:\n        torch.set_grad_enabled(False)\n        if a:\n            return 1\n"
     "        a()\n    except ValueError:\n        return 2\n    finally:\n        torch.set_grad_enabled(True)\n",
     "y = helper(a)", ("enabled", False)),
    # a finally that sets nothing: the try's own mode
    ("def helper(a):\n    try:\n        torch.set_grad_enabled(False)\n    finally:\n        a()\n", "helper(a)",
     ("disabled", False)),
    # a finally turning them on in one arm only, after a try turning them off: unknown (and
    # maybe the entry's: which paths of the finally kept the try's mode is not followed)
    ("def helper(a):\n    try:\n        torch.set_grad_enabled(False)\n    finally:\n        if a:\n"
     "            torch.set_grad_enabled(True)\n", "helper(a)", ("unknown", True)),
    # the finally restores a saved mode the code does not fix: unknown
    ("def helper(a):\n    prev = torch.is_grad_enabled()\n    torch.set_grad_enabled(False)\n    try:\n"
     "        a()\n    finally:\n        torch.set_grad_enabled(prev)\n", "helper(a)", ("unknown", False)),
    # inside the function's own `with torch.no_grad():`, a finally's set is undone by the block's exit
    ("def helper(a):\n    with torch.no_grad():\n        try:\n            return a()\n        finally:\n"
     "            torch.set_grad_enabled(False)\n", "y = helper(a)", ("enabled", True)),
    # torch.no_grad() as a statement builds a context manager and changes nothing
    ("def helper():\n    torch.no_grad()\n", "helper()", ("enabled", True)),
    # every path raises: no return sets the caller's mode (the forward after it, which no path
    # reaches, keeps the mode it had)
    ("def helper():\n    torch.set_grad_enabled(False)\n    raise ValueError\n", "helper()", ("enabled", True)),
])
def test_grad_mode_after_a_call(helper, call, expected):
    assert _modes(helper, call) == (expected,)


def test_caller_block_inside_with_keeps_the_mode_the_call_left():
    # inside the caller's `with torch.no_grad():`, a helper turning gradients on: on after it
    src = (HEAD + "def helper():\n    torch.set_grad_enabled(True)\n"
           "with torch.no_grad():\n    model(x)\n    helper()\n    model(x)\n")
    (unit,) = [u for u in build_units(cst.parse_module(src)) if u.of_kind("forward")][:1]
    assert [(f.ctx.grad, f.ctx.grad_asked) for f in unit.of_kind("forward")] == [
        ("disabled", False), ("enabled", False)]
