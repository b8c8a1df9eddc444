"""What the watcher keeps between hook calls, and how findings name lines.

Plain data (no torch import): :class:`Observation` (one runtime finding), :class:`OptState`
(per optimizer: where its gradients stand), :class:`Event`, :class:`IdMap`, and the text
helpers that turn a :class:`~loopcheck.trace.sites.Site` into the words of a message.
"""

from __future__ import annotations

import ast
import functools
import linecache
import os
import weakref
from dataclasses import dataclass, field

from .sites import Site

SCALED = 1.5  # a gradient factor above this (or below its inverse) is a GradScaler scale left in


def guarded(method):
    """Run a watcher method so that an exception in it can never reach the user's program: it is
    recorded (:meth:`~loopcheck.trace.watch.Watcher.internal_error`) and the method returns
    ``None``. :class:`TraceStop` is a ``BaseException`` and passes through."""

    @functools.wraps(method)
    def run(self, *args, **kwargs):
        try:
            return method(self, *args, **kwargs)
        except Exception as exc:  # noqa: BLE001 - the program must not fail because of the watcher
            self.internal_error(method.__name__, exc)
            return None

    return run


class TraceStop(BaseException):
    """Raised from the step pre-hook once ``--steps`` optimizer steps ran.

    A ``BaseException``, so that the ``except Exception`` of a training script or framework
    does not swallow it; ``loopcheck trace`` catches it around the script.
    """


@dataclass
class Observation:
    """One runtime finding: a rule's symptom seen at a user line.

    Attributes:
        code: the rule code (``"LC101"``).
        site: the user line the finding is reported at.
        message: one sentence naming the lines involved.
        note: what was measured, and at which step.
        related: other user lines and what they did.
        step: the optimizer step (1-based, of the optimizer concerned) it was first seen at.
        value: the measured number behind it (a gradient norm, a count, a scale), if any.
        count: how many times it was seen at this site.
    """

    code: str
    site: Site
    message: str
    note: str
    related: list[tuple[Site, str]] = field(default_factory=list)
    step: int = 0
    value: float | None = None
    count: int = 1


class Event:
    """A moment of the run: its sequence number and the user line it happened at."""

    __slots__ = ("seq", "site")

    def __init__(self, seq: int, site: Site | None) -> None:
        self.seq, self.site = seq, site


class IdMap:
    """A dict keyed by object identity that forgets an object when it is collected.

    Unlike ``WeakKeyDictionary`` it never hashes or compares the keys: some modules define
    ``__hash__``/``__eq__`` from their state (torchmetrics' ``Metric``), which may not exist yet
    or may change.
    """

    def __init__(self) -> None:
        self._items: dict[int, tuple] = {}

    def _forget(self, key: int):
        def forget(ref) -> None:
            hit = self._items.get(key)
            if hit is not None and hit[0] is ref:
                del self._items[key]
        return forget

    def get(self, obj, default=None):
        """The value stored for ``obj`` (this very object), else ``default``."""
        hit = self._items.get(id(obj))
        return hit[1] if hit is not None and hit[0]() is obj else default

    def __setitem__(self, obj, value) -> None:
        self._items[id(obj)] = (weakref.ref(obj, self._forget(id(obj))), value)

    def __contains__(self, obj) -> bool:
        """Whether a value is stored for ``obj`` itself: an object that only reuses the ``id`` of
        a collected one is not in the map (its entry went when that object was collected)."""
        hit = self._items.get(id(obj))
        return hit is not None and hit[0]() is obj

    def items(self) -> list[tuple]:
        """``[(object, value)]`` of the objects still alive."""
        out = []
        for ref, value in list(self._items.values()):
            obj = ref()
            if obj is not None:
                out.append((obj, value))
        return out


class OptState:
    """Where one optimizer's gradients stand, and the candidates waiting for its next step.

    ``state`` is the typestate of the static rules: ``"empty"`` (zeroed, or never filled),
    ``"filled"`` (a backward reached its parameters since), ``"applied"`` (its step ran since).
    """

    def __init__(self, opt, site: Site | None, seq: int) -> None:
        self.ref = weakref.ref(opt)
        self.name = type(opt).__name__
        self.site, self.seq = site, seq
        self.params: list = []
        self.reps: list = []
        self.ids: frozenset = frozenset()
        self.refresh()
        self.steps = 0                  # completed steps
        self.state = "empty"
        self.accum = 0                  # backward passes summed in .grad
        self.since_step = 0             # backward passes since the last step
        self.carry_run = 0              # consecutive steps whose .grad held older steps' backward passes
        self.factor = 1.0               # .grad / true gradient (GradScaler)
        self.internal_unscale = None    # scale a fused optimizer removes inside its step
        self.closure_step = False
        self.scaler_attempted = False
        self.scaler_step_site: Site | None = None
        self.last_backward: Event | None = None
        self.last_forward: Event | None = None
        self.last_step: Event | None = None
        self.clip_ok: Event | None = None       # last clip that ran on filled gradients
        self.clip_ok_rec: dict | None = None
        self.clip_before: dict | None = None    # LC101 candidate
        self.clip_after: dict | None = None     # LC102 candidate
        self.clip_after_refuted: set = set()    # after-step clip sites a proper clip made harmless
        self.wipe: dict | None = None           # LC103: gradients cleared, no backward since
        self.last_wipe: dict | None = None      # LC103: gradients cleared since the last step
        self.spent = False                      # its last backward was applied by another optimizer's step
        self.cleared: frozenset = frozenset()   # ids of its parameters zeroed since its step by zero_grads
        # that each cleared only a part of them (another optimizer's, a submodule's)
        self.cleared_at = 0                     # since_step at the first of those zero_grads
        self.stale: dict | None = None          # LC104 candidate
        self.eval_trained: dict | None = None   # LC301 candidate
        self.sched_early: dict | None = None    # LC202 candidate
        self.last_unscale: dict | None = None   # LC605 candidate
        self.losses: list = []                  # LC401 watches

    def refresh(self) -> None:
        """Re-read the parameter list (after ``add_param_group``)."""
        opt = self.ref()
        if opt is None:
            return
        self.params = [p for g in opt.param_groups for p in g["params"]]
        self.ids = frozenset(id(p) for p in self.params)
        trainable = [p for p in self.params if p.requires_grad] or self.params
        self.reps = list({id(p): p for p in (trainable[:1] + trainable[len(trainable) // 2:][:1]
                                              + trainable[-1:])}.values())

    def signature(self) -> list:
        """Identity and version counter of the gradients of a few representative parameters (the
        first, middle and last trainable ones): they change when a backward reaches them. A few
        rather than all keeps a backward's cost independent of the model's size; a backward that
        reaches only other parameters of this optimizer goes unseen (the checks then stay silent)."""
        return [None if (g := p.grad) is None else (id(g), g._version) for p in self.reps]

    def rep_grads(self) -> list:
        return [p.grad for p in self.reps]

    def grads(self) -> list:
        return [p.grad for p in self.params]

    def stale_now(self) -> bool:
        """A training forward ran since the last backward that reached this optimizer."""
        return self.last_forward is not None and (self.last_backward is None
                                                  or self.last_forward.seq > self.last_backward.seq)


# ------------------------------------------------------------------------------------ text


def source_span(site: Site) -> str:
    """The source text of ``site``'s span (its whole line when no columns are known)."""
    lines = [linecache.getline(site.filename, n) for n in range(site.line, site.end_line + 1)]
    if site.col is None or not lines:
        return lines[0].strip() if lines else ""
    raw = [ln.encode("utf-8") for ln in lines]
    if len(raw) == 1:
        end = site.end_col if site.end_col is not None else len(raw[0])
        return raw[0][site.col:end].decode("utf-8", "ignore")
    last = raw[-1][: site.end_col] if site.end_col is not None else raw[-1]
    return b"".join([raw[0][site.col:], *raw[1:-1], last]).decode("utf-8", "ignore")


def _short(node: ast.AST) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return f"{_short(node.value)}.{node.attr}"
    if isinstance(node, ast.Call):
        return f"{_short(node.func)}({'...' if node.args or node.keywords else ''})"
    if isinstance(node, ast.Subscript):
        return f"{_short(node.value)}[...]"
    return "(...)"


def call_text(site: Site | None, default: str) -> str:
    """``optimizer.step()`` for a site: the callee of the call at ``site``, then ``()``;
    ``Trainer(...).train()`` for a call on a call's result; ``default`` when unknown."""
    if site is None:
        return default
    text = " ".join(source_span(site).split())
    try:
        node = ast.parse(text, mode="eval").body
    except SyntaxError:
        node = None
    if isinstance(node, ast.Call):
        text = f"{_short(node.func)}()"
    elif "(" in text:
        text = text[: text.index("(")] + "()"
    if not text:
        return default
    return text if len(text) <= 60 else text[:57] + "..."


def where(site: Site | None, base: Site | None) -> str:
    """``line 47`` in the same file as ``base``, ``engine.py:47`` in another one."""
    if site is None:
        return "an unknown line"
    if base is not None and site.filename == base.filename:
        return f"line {site.line}"
    return f"{os.path.basename(site.filename)}:{site.line}"


def subject(site: Site | None, what: str) -> str:
    """How a message names the event at its own line: ``loss.backward()``, or, when the event ran
    inside a library the line called, ``optimizer.step() inside lightning``."""
    if site is None:
        return what
    if site.via:
        return f"{what} inside {site.via}"
    return call_text(site, what)


def ref(site: Site | None, what: str, base: Site | None) -> str:
    """How a message names another event, as the static messages do: ``loss.backward() (line
    47)``, ``loss.backward() (engine.py:47)``, or ``loss.backward() inside lightning (line 34)``
    when it ran inside a library the user's line 34 called."""
    if site is None:
        return what
    if site.via:
        return f"{what} inside {site.via} ({where(site, base)})"
    return f"{call_text(site, what)} ({where(site, base)})"


def fmt(x) -> str:
    """A number in three significant digits, ``-`` for ``None``."""
    return "-" if x is None else f"{x:.3g}"
