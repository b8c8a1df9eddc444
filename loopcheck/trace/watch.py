"""The runtime watcher of ``loopcheck trace``: the verify probes, turned into rule checks.

:class:`Watcher` builds on :class:`loopcheck.verify.probes.Probe` (same install/uninstall
mechanics, same places to hook: global optimizer step hooks, global module forward hooks, thin
wrappers around ``torch.autograd.backward``, ``clip_grad_norm_``/``clip_grad_value_``,
``zero_grad``, ``LRScheduler.step``, ``DataLoader.__iter__`` and ``GradScaler``), plus
wrappers around ``Optimizer.__init__``/``add_param_group``, ``Module.train``,
``Module._apply``, ``Module.__init__``, ``GradScaler.unscale_`` and
``DistributedSampler``. Where verify records everything of a fixture's run, the watcher
keeps, per optimizer, a small state machine that the rules' static typestates describe —
gradients *empty* → *filled* (a backward reached its parameters) → *applied* (its step ran),
their scale relative to the true gradient, how many backward passes they sum — and turns
each violation into an :class:`Observation` under the rule's code, at the user's line that
caused it (:mod:`loopcheck.trace.sites`).

Cheap on the hot path: no saved-tensor hooks, no parameter snapshots, no gradient norms
except when a finding is being measured; per step it compares gradient identities and
version counters (which backward reached which optimizer) and walks a few frames.

What each code means at runtime:

- LC101: a clip ran while the optimizer's gradients were empty (or still the previous
  step's, with a new forward since), then a backward filled them and the step applied them.
- LC102: a clip ran on gradients the optimizer had already applied, and the next step applied
  a gradient no clip saw.
- LC103: ``zero_grad()`` emptied gradients a backward had filled, and the step found none.
- LC104: a step ran between a training forward and the backward of that forward.
- LC105: two steps in a row applied gradients that still held earlier steps' backward passes.
- LC201: an epoch-style scheduler stepped once per batch with a period shorter than an epoch.
- LC202: ``scheduler.step()`` ran before its optimizer's first step.
- LC203: ``ReduceLROnPlateau.step()`` ran without a metric.
- LC301: a backward that reached the optimizer went through a forward run in eval mode
  (with Dropout/BatchNorm layers switched off), reported at the ``eval()`` call.
- LC302: eval-mode forwards with grad enabled built graphs that no backward used.
- LC401: a loss tensor (or its graph) outlived the next optimizer step, kept by a user
  variable (list, dict, object, running sum).
- LC501: parameters the trained model uses that no optimizer holds, created or replaced after
  the optimizer was built; or the model converted after the optimizer has state.
- LC601/LC602/LC603: gradients still scaled by the GradScaler when clipped / applied, or
  unscaled twice (backward on the unscaled loss).
- LC604/LC605: ``scaler.step()`` twice without ``update()``; ``unscale_()`` after ``step()`` or
  twice.
"""

from __future__ import annotations

import linecache
import math
import os
import weakref
from dataclasses import dataclass, field

import torch
from torch import nn

from loopcheck.verify.probes import Probe, _as_float, grad_norm

from . import codesearch, holders
from .sites import Site, UserCode

SCALED = 1.5  # a gradient factor above this (or below its inverse) is a scale left in


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


# ------------------------------------------------------------------------------------ text


def call_text(site: Site | None, default: str) -> str:
    """``optimizer.step()`` for a site: the callee of the call at ``site``, then ``()``."""
    if site is None:
        return default
    text = linecache.getline(site.filename, site.line)
    if site.col is not None:
        raw = text.encode("utf-8")
        end = site.end_col if site.end_line == site.line and site.end_col is not None else len(raw)
        text = raw[site.col:end].decode("utf-8", "ignore")
    text = " ".join(text.split())
    if "(" in text:
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


def _g(x) -> str:
    return "-" if x is None else f"{x:.3g}"


# ------------------------------------------------------------------------------------ state


class _Event:
    __slots__ = ("seq", "site")

    def __init__(self, seq: int, site: Site | None) -> None:
        self.seq, self.site = seq, site


class _Opt:
    """What the watcher knows about one optimizer."""

    def __init__(self, opt, site: Site | None, seq: int) -> None:
        self.ref = weakref.ref(opt)
        self.name = type(opt).__name__
        self.site, self.seq = site, seq
        self.params: list = []
        self.ids: frozenset = frozenset()
        self.refresh()
        self.steps = 0                  # completed steps
        self.state = "empty"            # empty | filled | applied
        self.accum = 0                  # backward passes summed in .grad
        self.since_step = 0             # backward passes since the last step
        self.carry_run = 0              # consecutive steps whose .grad held older backward passes
        self.factor = 1.0               # .grad / true gradient (GradScaler)
        self.internal_unscale = None    # scale a fused optimizer removes inside its step
        self.last_backward: _Event | None = None
        self.last_forward: _Event | None = None
        self.last_step: _Event | None = None
        self.clip_ok_seq = -1           # last clip that ran on filled gradients
        self.clip_ok_site = self.clip_ok_limit = self.clip_ok_kind = None
        self.clip_after_refuted: set = set()   # sites of after-step clips a later clip made harmless
        self.clip_before: dict | None = None   # LC101 candidate
        self.clip_after: dict | None = None    # LC102 candidate
        self.wipe: dict | None = None          # LC103 candidate: cleared gradients, no backward since
        self.last_wipe: dict | None = None     # LC103 candidate: cleared gradients since the last step
        self.last_unscale: dict | None = None  # LC605 candidate: unscale_() on applied gradients
        self.stale: dict | None = None         # LC104 candidate
        self.eval_trained: dict | None = None  # LC301 candidate
        self.sched_early: dict | None = None   # LC202 candidate
        self.losses: list = []                 # LC401 watch records
        self.scaler_attempted = False
        self.closure_step = False

    def refresh(self) -> None:
        opt = self.ref()
        if opt is None:
            return
        self.params = [p for g in opt.param_groups for p in g["params"]]
        self.ids = frozenset(id(p) for p in self.params)

    def signature(self) -> list:
        return [None if (g := p.grad) is None else (id(g), g._version) for p in self.params]

    def grads(self) -> list:
        return [p.grad for p in self.params]


class _Sched:
    __slots__ = ("kind", "period", "gamma", "pass_id", "in_pass", "steps", "flagged")

    def __init__(self, sched) -> None:
        self.kind = type(sched).__name__
        self.period = _period(sched)
        self.gamma = _as_float(getattr(sched, "gamma", None)) if self.kind == "ExponentialLR" else None
        self.pass_id = None
        self.in_pass = 0
        self.steps = 0
        self.flagged = False


EPOCH_SCHEDULERS = {"StepLR": "step_size", "MultiStepLR": "milestones", "CosineAnnealingLR": "T_max",
                    "ExponentialLR": None, "PolynomialLR": "total_iters", "LinearLR": "total_iters",
                    "ConstantLR": "total_iters"}


def _period(sched) -> int | None:
    """The number of ``step()`` calls an epoch-style scheduler's schedule spans, if it has one."""
    attr = EPOCH_SCHEDULERS.get(type(sched).__name__)
    if attr is None:
        return None
    value = getattr(sched, attr, None)
    if attr == "milestones":
        try:
            return max(value) if value else None
        except (TypeError, ValueError):
            return None
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


class _EvalForward:
    """An eval-mode forward run with grad enabled: did a backward go through its output?"""

    __slots__ = ("site", "module", "seq", "fired", "hook", "step", "__weakref__")

    def __init__(self, site, module, seq, step) -> None:
        self.site, self.module, self.seq, self.step = site, weakref.ref(module), seq, step
        self.fired = False
        self.hook = None


class _FireHook:
    """Registered on the output's graph node: marks the forward as back-propagated."""

    __slots__ = ("rec", "__weakref__")

    def __init__(self, rec: _EvalForward) -> None:
        self.rec = rec

    def __call__(self, grad_outputs):
        self.rec.fired = True
        return None


class _LossMark:
    """Stored in a loss's graph node ``metadata``: lives exactly as long as that node."""

    __slots__ = ("__weakref__",)


class _LossWatch:
    __slots__ = ("mark", "tensor", "site", "o_steps")

    def __init__(self, mark, tensor, site, o_steps) -> None:
        self.mark, self.tensor, self.site, self.o_steps = weakref.ref(mark), weakref.ref(tensor), site, o_steps


_MODE_LAYERS = (nn.modules.dropout._DropoutNd, nn.modules.batchnorm._BatchNorm)


def mode_layers(module: nn.Module) -> dict[str, int]:
    """Layers of ``module`` that behave differently in eval mode and are in eval mode now:
    ``{"Dropout": 2, "BatchNorm1d": 1}`` (Dropout with ``p == 0`` does not count)."""
    out: dict[str, int] = {}
    for m in module.modules():
        if isinstance(m, _MODE_LAYERS) and not m.training:
            if isinstance(m, nn.modules.dropout._DropoutNd) and not getattr(m, "p", 0):
                continue
            out[type(m).__name__] = out.get(type(m).__name__, 0) + 1
    return out


# ------------------------------------------------------------------------------------ watcher


class Watcher(Probe):
    """Hooks into torch for one traced run and collects :class:`Observation` objects.

    Args:
        user: decides which frames are the user's (:class:`~loopcheck.trace.sites.UserCode`).
        max_steps: stop the run (raise :class:`TraceStop`) before any optimizer's step number
            ``max_steps + 1``; ``None`` runs to the end.
        measure_limit: how many occurrences per site get a measured value (a gradient norm);
            later ones are only counted.
    """

    def __init__(self, user: UserCode, max_steps: int | None = None, measure_limit: int = 3) -> None:
        super().__init__()
        self.user = user
        self.max_steps = max_steps
        self.measure_limit = measure_limit
        self.observations: dict[tuple, Observation] = {}
        self.notes: list[str] = []
        self.seq = 0
        self.stopped = False
        self.total_steps = 0
        self.most_steps = 0             # steps of the optimizer that stepped most
        self.total_backwards = 0
        self._opts: dict[int, _Opt] = {}
        self._opt_version = 0
        self._module_opts: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
        self._scheds: dict[int, _Sched] = {}
        self._modes: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
        self._created: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
        self._trained: weakref.WeakSet = weakref.WeakSet()
        self._fwd_since_bwd: list = []
        self._orphans_dirty = False
        self._orphans_seen: set = set()
        self._eval_fwds: list[_EvalForward] = []
        self._eval_pending: _EvalForward | None = None
        self._val_counts: dict[tuple, list] = {}
        self._last_loss = None
        self._kept_external = 0
        self._kept_sites: dict[tuple, object] = {}
        self._pass: dict | None = None
        self._passes = 0
        self._depth = 0
        self._bwd_depth = 0
        self._clip_depth = 0
        self._zero_depth = 0
        self._train_depth = 0
        self._apply_depth = 0
        self._scaler_step_depth = 0
        self._samplers: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()

    # ---------------------------------------------------------------- install
    def install(self) -> "Watcher":
        """Install every hook and wrapper; returns ``self``."""
        from torch.nn.modules import module as module_mod
        from torch.optim import lr_scheduler
        from torch.optim import optimizer as optim_mod

        self._handles += [
            optim_mod.register_optimizer_step_pre_hook(self._step_pre),
            optim_mod.register_optimizer_step_post_hook(self._step_post),
            module_mod.register_module_forward_pre_hook(self._fwd_pre),
            module_mod.register_module_forward_hook(self._fwd_post, always_call=True),
        ]
        self._wrap(torch.autograd, "backward", self._backward_wrapper)
        import torch.nn.utils as nn_utils
        import torch.nn.utils.clip_grad as clip_mod
        for mod in (nn_utils, clip_mod):
            self._wrap(mod, "clip_grad_norm_", self._trace_clip_wrapper("norm"))
            self._wrap(mod, "clip_grad_value_", self._trace_clip_wrapper("value"))
        self._wrap(torch.optim.Optimizer, "__init__", self._opt_init_wrapper)
        self._wrap(torch.optim.Optimizer, "add_param_group", self._add_group_wrapper)
        self._wrap(torch.optim.Optimizer, "zero_grad", self._opt_zero_wrapper)
        self._wrap(nn.Module, "zero_grad", self._module_zero_wrapper)
        self._wrap(nn.Module, "train", self._train_wrapper)
        self._wrap(nn.Module, "_apply", self._apply_wrapper)
        self._wrap(nn.Module, "__init__", self._module_init_wrapper)
        for cls in vars(lr_scheduler).values():
            if isinstance(cls, type) and issubclass(cls, lr_scheduler.LRScheduler) and "step" in vars(cls):
                self._wrap(cls, "step", self._trace_sched_wrapper)
        self._wrap(torch.utils.data.DataLoader, "__iter__", self._trace_loader_wrapper)
        from torch.utils.data.distributed import DistributedSampler
        self._wrap(DistributedSampler, "__iter__", self._sampler_iter_wrapper)
        from torch.amp.grad_scaler import GradScaler
        self._wrap(GradScaler, "scale", self._trace_scale_wrapper)
        self._wrap(GradScaler, "_unscale_grads_", self._trace_unscale_grads_wrapper)
        self._wrap(GradScaler, "unscale_", self._unscale_wrapper)
        self._wrap(GradScaler, "step", self._trace_scaler_step_wrapper)
        return self

    # ---------------------------------------------------------------- bookkeeping
    def _next(self) -> int:
        self.seq += 1
        return self.seq

    def site(self) -> Site | None:
        """The innermost user line of the current stack."""
        return self.user.site()

    def observe(self, code: str, site: Site | None, message, note, related=(), step: int = 0,
                value: float | None = None) -> Observation | None:
        """Record a finding at ``site`` (merged with an earlier one at the same place).

        ``message`` and ``note`` may be callables, evaluated only for the first occurrence."""
        if site is None:
            return None
        key = (code, site.key)
        obs = self.observations.get(key)
        if obs is not None:
            obs.count += 1
            return obs
        obs = Observation(code, site, message() if callable(message) else message,
                          note() if callable(note) else note,
                          [(s, m) for s, m in related if s is not None], step, value)
        self.observations[key] = obs
        return obs

    def _opt(self, opt) -> _Opt | None:
        if opt is None:
            return None
        o = self._opts.get(id(opt))
        if o is not None and o.ref() is opt:
            return o
        if not isinstance(opt, torch.optim.Optimizer) or not hasattr(opt, "param_groups"):
            inner = getattr(opt, "optimizer", None)  # accelerate's AcceleratedOptimizer, Lightning's wrapper
            return self._opt(inner) if inner is not None and inner is not opt else None
        if "param_groups" not in vars(opt):
            inner = getattr(opt, "optimizer", None)
            if inner is not None and inner is not opt:
                return self._opt(inner)
        o = _Opt(opt, None, self._next())
        self._opts[id(opt)] = o
        self._opt_version += 1
        return o

    def _live_opts(self) -> list[_Opt]:
        dead = [k for k, o in self._opts.items() if o.ref() is None]
        for k in dead:
            del self._opts[k]
        return list(self._opts.values())

    def _opts_for_module(self, module) -> list[_Opt]:
        hit = self._module_opts.get(module)
        if hit is not None and hit[0] == self._opt_version:
            return hit[1]
        pids = {id(p) for p in module.parameters()}
        opts = [o for o in self._live_opts() if not o.ids.isdisjoint(pids)]
        self._module_opts[module] = (self._opt_version, opts)
        return opts

    def _opts_for_params(self, params) -> list[_Opt]:
        pids = {id(p) for p in params}
        return [o for o in self._live_opts() if not o.ids.isdisjoint(pids)]

    # ---------------------------------------------------------------- optimizers
    def _opt_init_wrapper(self, orig):
        probe = self

        def __init__(self_, *args, **kwargs):
            orig(self_, *args, **kwargs)
            site = probe.site()
            o = _Opt(self_, site, probe._next())
            probe._opts[id(self_)] = o
            probe._opt_version += 1

        return __init__

    def _add_group_wrapper(self, orig):
        probe = self

        def add_param_group(self_, *args, **kwargs):
            out = orig(self_, *args, **kwargs)
            o = probe._opts.get(id(self_))
            if o is not None and o.ref() is self_:
                o.refresh()
                probe._opt_version += 1
            return out

        return add_param_group

    # ---------------------------------------------------------------- forward hooks
    def _fwd_pre(self, module, args):
        depth = self._depth
        self._depth = depth + 1
        if depth or not (module._parameters or module._modules):
            return
        if not torch.is_grad_enabled() or torch.is_inference_mode_enabled():
            return
        if next(module.parameters(), None) is None:
            return
        seq = self._next()
        site = self.site()
        ev = _Event(seq, site)
        for o in self._opts_for_module(module):
            o.last_forward = ev
        self._fwd_since_bwd.append(weakref.ref(module))
        if self._eval_fwds:
            self._sweep_eval()
        if not module.training and any(p.requires_grad for p in module.parameters()):
            step = max((o.steps for o in self._opts_for_module(module)), default=0)
            self._eval_pending = _EvalForward(site, module, seq, step)

    def _fwd_post(self, module, args, output):
        self._depth = max(0, self._depth - 1)
        if self._depth or self._eval_pending is None:
            return
        rec, self._eval_pending = self._eval_pending, None
        if rec.module() is not module:
            return
        t = _first_graph_tensor(output)
        if t is None:
            return
        hook = _FireHook(rec)
        t.grad_fn.register_prehook(hook)
        rec.hook = weakref.ref(hook)
        self._eval_fwds.append(rec)

    def _sweep_eval(self, final: bool = False) -> None:
        """Eval-mode forwards whose graph died (or, at the end, still lives) without a backward."""
        keep = []
        for rec in self._eval_fwds:
            alive = rec.hook is not None and rec.hook() is not None
            if rec.fired:
                continue
            if alive and not final:
                keep.append(rec)
                continue
            self._validation_graph(rec)
        self._eval_fwds = keep

    def _validation_graph(self, rec: _EvalForward) -> None:
        entry = self._val_counts.setdefault(rec.site.key, [rec, 0])
        entry[1] += 1
        n = entry[1]
        if n < 2:
            return
        obs = self.observations.get(("LC302", rec.site.key))
        if obs is not None:
            obs.value = float(n)
            obs.count = n
            obs.note = _lc302_note(n)
            return
        fwd = call_text(rec.site, "model()")
        self.observe(
            "LC302", rec.site,
            f"{fwd} runs in eval mode with grad enabled: autograd records a graph for every batch "
            f"that no backward uses; wrap the evaluation in torch.no_grad()",
            _lc302_note(n), step=rec.step, value=float(n))

    # ---------------------------------------------------------------- backward
    def _backward_wrapper(self, orig):
        probe = self

        def backward(tensors, *args, **kwargs):
            if probe._bwd_depth:
                return orig(tensors, *args, **kwargs)
            t = tensors[0] if isinstance(tensors, (tuple, list)) and tensors else tensors
            if not isinstance(t, torch.Tensor):
                return orig(tensors, *args, **kwargs)
            site = probe.site()
            factor = float(getattr(t, "_loopcheck_scale", 1.0))
            loss = getattr(t, "_loopcheck_loss", None)
            loss = loss if isinstance(loss, torch.Tensor) else t
            opts = probe._live_opts()
            before = [o.signature() for o in opts]
            states = [(o.state, o) for o in opts]
            zeros = {id(o): _all_zero(o.grads()) for st, o in states
                     if st == "applied" and any(g is not None for g in o.grads())}
            mark = None
            if loss.grad_fn is not None:
                mark = _LossMark()
                try:
                    loss.grad_fn.metadata[holders.MARK] = mark
                except (AttributeError, RuntimeError):
                    mark = None
            probe._bwd_depth += 1
            try:
                return orig(tensors, *args, **kwargs)
            finally:
                probe._bwd_depth -= 1
                probe._after_backward(opts, before, zeros, site, factor, loss, mark)

        return backward

    def _after_backward(self, opts, before, zeros, site, factor, loss, mark) -> None:
        seq = self._next()
        self.total_backwards += 1
        ev = _Event(seq, site)
        reached = []
        for o, sig in zip(opts, before):
            if o.signature() == sig:
                continue
            reached.append(o)
            fresh = all(s is None for s in sig) or o.state == "empty" or zeros.get(id(o), False)
            prev = o.last_backward
            if fresh:
                o.accum, o.factor = 1, factor
            else:
                o.accum += 1
                if o.factor != factor:
                    o.factor = float("nan")
            o.since_step += 1
            if o.clip_ok_seq > (prev.seq if prev is not None else -1) and o.clip_before is None:
                o.clip_before = {"site": o.clip_ok_site, "state": "filled", "seq": o.clip_ok_seq,
                                 "limit": o.clip_ok_limit, "norm": None, "kind": o.clip_ok_kind}
            o.state = "filled"
            o.last_backward = ev
            o.wipe = None
            if o.stale is not None:
                if o.last_forward is o.stale["forward"]:
                    self._confirm_stale(o, o.stale, ev)
                o.stale = None
        for ref in self._fwd_since_bwd:
            m = ref()
            if m is not None and m not in self._trained:
                self._trained.add(m)
                self._orphans_dirty = True
        self._fwd_since_bwd = []
        if reached:
            self._last_loss = weakref.ref(loss)
            if mark is not None:
                o = reached[0]
                o.losses.append(_LossWatch(mark, loss, site, o.steps))
        fired = [r for r in self._eval_fwds if r.fired]
        if fired:
            self._eval_fwds = [r for r in self._eval_fwds if not r.fired]
            if reached:
                for o in reached:
                    o.eval_trained = {"forward": fired[-1], "backward": site}

    # ---------------------------------------------------------------- steps
    def _step_pre(self, opt, args, kwargs):
        o = self._opt(opt)
        if o is None:
            return
        if self.max_steps is not None and o.steps >= self.max_steps:
            self.stopped = True
            raise TraceStop(f"stopped after {o.steps} optimizer steps (--steps {self.max_steps})")
        closure = args[1] if len(args) > 1 else kwargs.get("closure")
        o.closure_step = closure is not None
        if not o.closure_step:
            self._on_step(o)

    def _step_post(self, opt, args, kwargs):
        o = self._opt(opt)
        if o is None:
            return
        if o.closure_step:
            self._on_step(o)
            o.closure_step = False
        o.steps += 1
        self.total_steps += 1
        self.most_steps = max(self.most_steps, o.steps)

    def _on_step(self, o: _Opt) -> None:
        seq = self._next()
        site = self.site()
        n = o.steps + 1
        ev = _Event(seq, site)
        in_scaler = self._scaler_step_depth > 0
        step_txt = call_text(site, "optimizer.step()")
        if o.sched_early is not None:
            self._confirm_sched_early(o, n, site)
        stale = o.last_forward is not None and (o.last_backward is None or o.last_forward.seq > o.last_backward.seq)
        if o.state == "empty" and o.wipe is not None and not stale:
            self._confirm_wipe(o, ev, n)
        elif o.state == "filled" and o.last_wipe is not None and o.since_step > o.accum:
            self._confirm_partial_wipe(o, ev, n)
        o.wipe = o.last_wipe = None
        if o.state == "filled":
            last_bwd = o.last_backward.seq if o.last_backward else -1
            if o.clip_before is not None and o.clip_ok_seq < last_bwd:
                self._confirm_clip(o, "LC101", o.clip_before, ev, n)
            if o.clip_after is not None and o.clip_ok_seq < last_bwd:
                self._confirm_clip(o, "LC102", o.clip_after, ev, n)
        if o.clip_after is not None and o.state == "filled" and o.clip_ok_seq > o.clip_after["seq"]:
            o.clip_after_refuted.add(o.clip_after["site"].key if o.clip_after["site"] else None)
        o.clip_before = o.clip_after = None
        if stale:
            o.stale = {"forward": o.last_forward, "step": ev, "n": n, "state": o.state,
                       "text": step_txt}
        carried = o.state == "filled" and o.accum > o.since_step
        o.carry_run = o.carry_run + 1 if carried else 0
        if o.carry_run >= 2:
            self._lc105(o, ev, n)
        factor = o.factor / (o.internal_unscale or 1.0)
        if o.state == "filled" and not math.isnan(factor):
            if not in_scaler and factor > SCALED:
                self.observe(
                    "LC602", site,
                    f"{step_txt} applies gradients still multiplied by the GradScaler's scale "
                    f"({factor:g}): call scaler.step(optimizer) instead",
                    f"Runtime: step {n} applied gradients {factor:g}x the true gradient; scaler.step() would "
                    "have unscaled them and skipped steps with inf/nan gradients.",
                    [(o.last_backward.site if o.last_backward else None, "backward() of the scaled loss")],
                    step=n, value=factor)
            if in_scaler and factor > SCALED and o.last_unscale is not None:
                u = o.last_unscale
                self.observe(
                    "LC605", u["site"],
                    f"{call_text(u['site'], 'scaler.unscale_()')} runs after scaler.step() applied the gradients: "
                    f"the GradScaler counts it for the next step, which applies gradients {factor:g}x too large; "
                    "call it between backward() and scaler.step()",
                    f"Runtime: unscale_() ran on gradients step {u['n']} had already applied; step {n} then applied "
                    f"gradients {factor:g}x the true gradient (scaler.step() skipped its own unscale_()).",
                    [(site, "this step applies still-scaled gradients")], step=n, value=factor)
            if in_scaler and factor < 1 / SCALED:
                bwd = o.last_backward.site if o.last_backward else None
                self.observe(
                    "LC603", bwd,
                    f"{call_text(bwd, 'loss.backward()')} back-propagates the unscaled loss but scaler.step() "
                    f"unscales the gradients: every update shrinks by {1 / factor:g}; call "
                    f"scaler.scale(loss).backward()",
                    f"Runtime: step {n} applied gradients {factor:.3g}x the true gradient "
                    f"(the GradScaler divided unscaled gradients by its scale {1 / factor:g}).",
                    [(site, "scaler.step() unscales here")], step=n, value=factor)
        if o.eval_trained is not None and o.state == "filled":
            self._confirm_eval_trained(o, ev, n)
        o.eval_trained = None
        if o.losses:
            self._check_losses(o, n)
        if self._orphans_dirty or o.steps == 0:
            self._check_orphans(o, n)
        o.last_unscale = None
        o.state = "applied"
        o.since_step = 0
        o.last_step = ev

    # ---------------------------------------------------------------- LC101 / LC102
    def _trace_clip_wrapper(self, kind):
        probe = self

        def make(orig):
            def clip(parameters, *args, **kwargs):
                if probe._clip_depth:
                    return orig(parameters, *args, **kwargs)
                params = [parameters] if isinstance(parameters, torch.Tensor) else list(parameters)
                site = probe.site()
                limit = args[0] if args else kwargs.get("max_norm", kwargs.get("clip_value"))
                opts = probe._opts_for_params(params)
                scaled = [(o, o.factor / (o.internal_unscale or 1.0)) for o in opts if o.state == "filled"]
                probe._clip_depth += 1
                try:
                    out = orig(params, *args, **kwargs)
                except Exception as exc:
                    probe._clip_failed(kind, site, _as_float(limit), opts, params, exc)
                    raise
                finally:
                    probe._clip_depth -= 1
                probe._on_clip(kind, site, _as_float(limit), out, opts, scaled)
                return out

            return clip

        return make

    def _on_clip(self, kind, site, limit, out, opts, scaled) -> None:
        seq = self._next()
        clip_txt = call_text(site, f"clip_grad_{kind}_()")
        for o, factor in scaled:
            if not math.isnan(factor) and factor > SCALED:
                self.observe(
                    "LC601", site,
                    f"{clip_txt} clips gradients still multiplied by the GradScaler's scale ({factor:g}): "
                    f"call scaler.unscale_(optimizer) before clipping",
                    lambda o=o, factor=factor: (
                        f"Runtime: at step {o.steps + 1} the clip saw gradients {factor:g}x the true ones, so "
                        f"max_norm {_g(limit)} acted as {_g(limit / factor if limit else None)} on the true "
                        "gradient."),
                    [(o.last_backward.site if o.last_backward else None, "backward() of the scaled loss")],
                    step=o.steps + 1, value=factor)
        rec = {"site": site, "seq": seq, "limit": limit, "norm": out if isinstance(out, torch.Tensor) else None,
               "kind": kind}
        for o in opts:
            if o.state == "filled":
                o.clip_ok_seq = seq
                o.clip_ok_site, o.clip_ok_limit, o.clip_ok_kind = site, limit, kind
            elif o.state == "empty" or (o.last_forward is not None and o.last_step is not None
                                        and o.last_forward.seq > o.last_step.seq):
                o.clip_before = dict(rec, state=o.state)
            else:  # applied, no forward since the step: the clip is the step's own, after it
                o.clip_after = dict(rec, step=o.steps)

    def _clip_failed(self, kind, site, limit, opts, params, exc) -> None:
        """A clip that raised on parameters without any gradient: the clip runs before backward."""
        if any(p.grad is not None for p in params):
            return
        for o in opts:
            if o.state == "applied" and not (o.last_forward and o.last_step and o.last_forward.seq > o.last_step.seq):
                continue
            self.observe(
                "LC101", site,
                f"{call_text(site, f'clip_grad_{kind}_()')} runs before any backward pass filled the gradients: "
                "there is nothing to clip, and here it fails",
                f"Runtime: at step {o.steps + 1} none of the {len(params)} parameters had a gradient when the clip "
                f"ran; it raised {type(exc).__name__}: {str(exc).splitlines()[0][:120] if str(exc) else ''}",
                step=o.steps + 1)
            return

    def _confirm_clip(self, o: _Opt, code: str, clip: dict, step: _Event, n: int) -> None:
        site = clip["site"]
        measure = self._measures(code, site)
        norm = grad_norm(o.grads()) if measure else None
        limit = clip.get("limit")
        clip_txt = call_text(site, "clip_grad_norm_()")
        bwd = o.last_backward.site if o.last_backward else None
        if code == "LC101":
            found = {"empty": "found no gradient", "applied": "found the previous step's gradient",
                     "filled": "ran before the last backward pass"}.get(clip.get("state"), "")
            message = (f"{clip_txt} runs before {call_text(bwd, 'loss.backward()')} at {where(bwd, site)} fills "
                       f"the gradients: step {n} applied a gradient it never clipped")
            related = [(bwd, "backward() fills .grad only here"), (step.site, "step() applies the unclipped gradient")]
            note = (f"Runtime: at step {n} the clip {found}; the gradient the step applied had norm {_g(norm)}"
                    + (f" (max_norm {limit:g})" if limit is not None and clip["kind"] == "norm" else "") + ".")
        else:
            message = (f"{clip_txt} runs after {call_text(o.last_step.site if o.last_step else None, 'optimizer.step()')}"
                       f" at {where(o.last_step.site if o.last_step else None, site)} applied the gradients: step "
                       f"{n} applied a gradient no clip saw")
            related = [(o.last_step.site if o.last_step else None, "step() already applied the gradient it clips"),
                       (step.site, "the next step applies an unclipped gradient")]
            note = (f"Runtime: the clip after step {n - 1} clipped gradients that step had applied; step {n} "
                    f"applied a gradient of norm {_g(norm)}"
                    + (f" (max_norm {limit:g})" if limit is not None and clip["kind"] == "norm" else "") + ".")
        self.observe(code, site, message, note, related, step=n, value=norm)

    def _measures(self, code: str, site: Site | None) -> bool:
        if site is None:
            return False
        obs = self.observations.get((code, site.key))
        return obs is None or obs.count < self.measure_limit

    # ---------------------------------------------------------------- zero_grad (LC103)
    def _opt_zero_wrapper(self, orig):
        probe = self

        def zero_grad(self_, *args, **kwargs):
            if probe._zero_depth:
                return orig(self_, *args, **kwargs)
            o = probe._opt(self_)
            probe._zero_depth += 1
            try:
                return orig(self_, *args, **kwargs)
            finally:
                probe._zero_depth -= 1
                if o is not None:
                    probe._on_zero([o])

        return zero_grad

    def _module_zero_wrapper(self, orig):
        probe = self

        def zero_grad(self_, *args, **kwargs):
            if probe._zero_depth:
                return orig(self_, *args, **kwargs)
            opts = probe._opts_for_module(self_)
            probe._zero_depth += 1
            try:
                return orig(self_, *args, **kwargs)
            finally:
                probe._zero_depth -= 1
                probe._on_zero(opts)

        return zero_grad

    def _on_zero(self, opts) -> None:
        if not opts:
            return
        site = self.site()
        seq = self._next()
        for o in opts:
            if o.state == "filled" and o.last_backward is not None and o.accum <= o.since_step:
                # gradients of backward passes since the last step only (not a step's leftovers)
                o.wipe = o.last_wipe = {"site": site, "seq": seq, "backward": o.last_backward}
            o.state = "empty"
            o.accum = 0
            o.factor = 1.0

    def _confirm_partial_wipe(self, o: _Opt, step: _Event, n: int) -> None:
        w = o.last_wipe
        site = w["site"]
        bwd = w["backward"].site
        self.observe(
            "LC103", site,
            f"{call_text(site, 'optimizer.zero_grad()')} runs between the backward passes that "
            f"{call_text(step.site, 'optimizer.step()')} at {where(step.site, site)} should sum: it clears the "
            "accumulated gradients, so the step applies only the last ones",
            f"Runtime: step {n} applied {o.accum} of the {o.since_step} backward passes run since the previous step; "
            "zero_grad() cleared the others.",
            [(bwd, "backward() filled the gradients here"), (step.site, "step() applies only what is left")],
            step=n, value=float(o.accum))

    def _confirm_wipe(self, o: _Opt, step: _Event, n: int) -> None:
        w = o.wipe
        site = w["site"]
        bwd = w["backward"].site
        have = sum(1 for g in o.grads() if g is not None and (not self._measures("LC103", site) or bool(g.any())))
        self.observe(
            "LC103", site,
            f"{call_text(site, 'optimizer.zero_grad()')} runs after {call_text(bwd, 'loss.backward()')} at "
            f"{where(bwd, site)} and before {call_text(step.site, 'optimizer.step()')} at {where(step.site, site)}: "
            "the step applies no gradient",
            f"Runtime: step {n} found {have} of {len(o.params)} parameters with a nonzero gradient; the backward "
            "pass's gradients were cleared before the step.",
            [(bwd, "backward() filled the gradients here"), (step.site, "step() finds them cleared")],
            step=n, value=float(have))

    # ---------------------------------------------------------------- LC104, LC105
    def _confirm_stale(self, o: _Opt, stale: dict, bwd: _Event) -> None:
        step = stale["step"]
        fwd = stale["forward"].site
        found = {"empty": "found no gradient", "applied": "applied the previous batch's gradient again",
                 "filled": "applied the previous batch's gradient"}.get(stale["state"], "")
        self.observe(
            "LC104", step.site,
            f"{stale['text']} runs after the forward pass at {where(fwd, step.site)} but before its "
            f"{call_text(bwd.site, 'loss.backward()')} at {where(bwd.site, step.site)}: the step applies no "
            "gradient of this batch",
            f"Runtime: step {stale['n']} {found}; the backward of the forward before it ran only after the step.",
            [(fwd, "the forward pass of this batch"), (bwd.site, "its backward() runs after the step")],
            step=stale["n"])

    def _lc105(self, o: _Opt, step: _Event, n: int) -> None:
        self.observe(
            "LC105", step.site,
            lambda: (f"{call_text(step.site, 'optimizer.step()')} applies gradients that were never cleared: each "
                     f"step adds this batch's backward to all earlier ones; call optimizer.zero_grad() every step"),
            lambda: (f"Runtime: step {n} applied the sum of {o.accum} backward passes "
                     f"(steps {n - 1} and {n} both kept the gradients of earlier steps)."),
            [(o.last_backward.site if o.last_backward else None, "backward() adds to .grad")],
            step=n, value=float(o.accum))
        obs = self.observations.get(("LC105", step.site.key)) if step.site else None
        if obs is not None:
            obs.value = float(o.accum)

    # ---------------------------------------------------------------- LC301
    def _train_wrapper(self, orig):
        probe = self

        def train(self_, mode=True):
            if probe._train_depth:
                return orig(self_, mode)
            probe._train_depth += 1
            try:
                return orig(self_, mode)
            finally:
                probe._train_depth -= 1
                probe._modes[self_] = (bool(mode), probe._next(), probe.site())

        return train

    def _eval_site(self, module) -> Site | None:
        best = None
        for m, (mode, seq, site) in list(self._modes.items()):
            if mode or site is None:
                continue
            if m is module or any(sub is module for sub in m.modules()):
                if best is None or seq > best[0]:
                    best = (seq, site)
        return best[1] if best else None

    def _confirm_eval_trained(self, o: _Opt, step: _Event, n: int) -> None:
        rec = o.eval_trained["forward"]
        module = rec.module()
        if module is None:
            return
        layers = mode_layers(module)
        if not layers:
            return
        eval_site = self._eval_site(module)
        site = eval_site or rec.site
        eval_txt = call_text(eval_site, "model.eval()")
        layer_txt = ", ".join(f"{k} x{v}" for k, v in sorted(layers.items()))
        self.observe(
            "LC301", site,
            f"{eval_txt} is still in effect when {call_text(step.site, 'optimizer.step()')} at "
            f"{where(step.site, site)} trains the model: no train() call comes in between, so Dropout stays off "
            "and BatchNorm stops updating its statistics",
            f"Runtime: step {n} trained on a forward pass of {type(module).__name__} in eval mode ({layer_txt} "
            "inactive).",
            [(rec.site, "forward pass in eval mode"), (o.eval_trained["backward"], "its backward()"),
             (step.site, "the training step")],
            step=n, value=float(sum(layers.values())))

    # ---------------------------------------------------------------- LC401
    def _check_losses(self, o: _Opt, n: int) -> None:
        keep = []
        for w in o.losses:
            if w.mark() is None:
                continue
            if o.steps <= w.o_steps:
                keep.append(w)
                continue
            self._kept(w, o, n)
        o.losses = keep

    def _kept(self, w: _LossWatch, o: _Opt, n: int) -> None:
        key = w.site.key if w.site else None
        known = self._kept_sites.get(key)
        if known is False:
            return
        if isinstance(known, Observation):
            known.count += 1
            known.value = float(known.count)
            known.note = _lc401_note(known.count, known.step)
            return
        frames = self.user.frames()
        mark = w.mark()
        tensor = w.tensor()
        holder = holders.find_holder(frames, tensor, mark) if mark is not None else None
        if holder is None or holder.kind == "variable":
            self._kept_sites[key] = False
            if holder is None:
                self._kept_external += 1
            return
        latest = self._last_loss() if self._last_loss is not None else None
        value_names = holders.names_bound_to(holder.frame, latest) if latest is not None else set()
        if tensor is not None:
            value_names |= holders.names_bound_to(holder.frame, tensor)
        value_names = value_names or {"loss"}
        site = codesearch.find_keeping(holder.frame.f_code, holder.path, value_names) or w.site
        bwd_txt = call_text(w.site, "loss.backward()")
        related = [(w.site, "the loss back-propagated here stays alive")]
        obs = self.observe(
            "LC401", site, _lc401_message(holder, bwd_txt, where(w.site, site)),
            _lc401_note(1, n), related, step=n, value=1.0)
        self._kept_sites[key] = obs

    # ---------------------------------------------------------------- LC501
    def _module_init_wrapper(self, orig):
        probe = self

        def __init__(self_, *args, **kwargs):
            if probe._opts:
                probe._created[self_] = (probe._next(), probe.site())
                probe._orphans_dirty = True
            return orig(self_, *args, **kwargs)

        return __init__

    def _apply_wrapper(self, orig):
        probe = self

        def _apply(self_, *args, **kwargs):
            if probe._apply_depth or not probe._opts:
                return orig(self_, *args, **kwargs)
            before = list(self_.named_parameters())
            opts = [o for o in probe._opts_for_module(self_) if o.ref() is not None]
            meta = {id(p): (p.dtype, p.device) for _, p in before}
            probe._apply_depth += 1
            try:
                return orig(self_, *args, **kwargs)
            finally:
                probe._apply_depth -= 1
                if opts:
                    probe._on_apply(self_, before, meta, opts)

        return _apply

    def _on_apply(self, module, before, meta, opts) -> None:
        site = self.site()
        self._next()
        after = dict(module.named_parameters())
        swapped = [n for n, p in before if n in after and after[n] is not p]
        held = set().union(*(o.ids for o in opts))
        swapped = [n for n in swapped if id(dict(before)[n]) in held]
        txt = call_text(site, "model.to()")
        opt = opts[0]
        opt_txt = f"{opt.name} at {where(opt.site, site)}" if opt.site else opt.name
        if swapped:
            self._orphans_seen.update(id(after[n]) for n in swapped)
            self.observe(
                "LC501", site,
                f"{txt} replaces the parameters the optimizer ({opt_txt}) holds: it keeps updating the old "
                "tensors and the model never learns; build the optimizer after converting the model",
                f"Runtime: {len(swapped)} of {type(module).__name__}'s {len(after)} parameters are new tensors "
                f"after the conversion ({', '.join(swapped[:3])}{'...' if len(swapped) > 3 else ''}); "
                f"the optimizer holds none of them.",
                [(opt.site, "the optimizer was built here")], step=opt.steps, value=float(len(swapped)))
            return
        mismatched = []
        for o in opts:
            state = getattr(o.ref(), "state", {}) or {}
            for name, p in after.items():
                st = state.get(p)
                if not st or meta.get(id(p)) == (p.dtype, p.device):
                    continue
                for k, v in st.items():
                    if isinstance(v, torch.Tensor) and v.dim() and (v.dtype != p.dtype or v.device != p.device):
                        mismatched.append((name, k, v.dtype, p.dtype, v.device, p.device))
                        break
        if mismatched:
            name, k, sd, pd, sdev, pdev = mismatched[0]
            what = f"{str(sd).replace('torch.', '')} vs {str(pd).replace('torch.', '')}" if sd != pd \
                else f"{sdev} vs {pdev}"
            self.observe(
                "LC501", site,
                f"{txt} converts the model after the optimizer ({opt_txt}) built its state: the state tensors "
                "keep the old dtype/device; convert the model before building the optimizer",
                f"Runtime: after step {opt.steps}, {len(mismatched)} parameters no longer match their optimizer "
                f"state ({name}: {k} {what}); the next step fails or mixes precisions.",
                [(opt.site, "the optimizer was built here")], step=opt.steps, value=float(len(mismatched)))

    def _check_orphans(self, o: _Opt, n: int) -> None:
        self._orphans_dirty = False
        opts = self._live_opts()
        held = set().union(*(x.ids for x in opts)) if opts else set()
        for module in list(self._trained):
            named = [(name, p) for name, p in module.named_parameters() if p.requires_grad]
            missing = [(name, p) for name, p in named if id(p) not in held and id(p) not in self._orphans_seen]
            if not missing:
                continue
            self._orphans_seen.update(id(p) for _, p in missing)
            if len(missing) == len(named):
                self._orphan_model(module, o, n, len(named))
            else:
                self._orphan_parts(module, missing, o, n, len(named))

    def _frames_code(self):
        return self.user.frames()

    def _orphan_model(self, module, o: _Opt, n: int, count: int) -> None:
        created = self._created.get(module)
        if created is None or created[0] < o.seq:
            self.notes.append(
                f"{type(module).__name__}: none of its {count} trainable parameters is in an optimizer, but "
                "it was built before the optimizers: it is trained without being updated")
            return
        site = None
        for f in self._frames_code():
            for name in holders.names_bound_to(f, module):
                after = o.site.line if o.site and o.site.filename == f.f_code.co_filename else 0
                site = codesearch.find_store(f.f_code, name=name, after=after)
                if site is not None:
                    break
            if site is not None:
                break
        site = site or created[1]
        opt_txt = f"{o.name} at {where(o.site, site)}" if o.site else o.name
        self.observe(
            "LC501", site,
            f"the model trained here was built after the optimizer ({opt_txt}), which holds none of its "
            "parameters: the optimizer updates a model that is no longer used; build it after the model",
            f"Runtime: at step {n} none of {type(module).__name__}'s {count} trainable parameters is in any "
            "optimizer.",
            [(o.site, "the optimizer was built here")], step=n, value=float(count))

    def _orphan_parts(self, module, missing, o: _Opt, n: int, count: int) -> None:
        owners: dict[str, list[str]] = {}
        for name, _ in missing:
            owner = name.rpartition(".")[0]
            owners.setdefault(owner, []).append(name)
        subs = dict(module.named_modules())
        for owner, names in owners.items():
            sub = subs.get(owner)
            created = self._created.get(sub) if sub is not None else None
            if created is None or created[0] < o.seq:
                self.notes.append(
                    f"{type(module).__name__}: {len(names)} trainable parameters are in no optimizer "
                    f"({', '.join(names[:3])}{'...' if len(names) > 3 else ''}); they get gradients but never change")
                continue
            attr = owner.rpartition(".")[2]
            site = None
            for f in self._frames_code():
                after = o.site.line if o.site and o.site.filename == f.f_code.co_filename else 0
                site = codesearch.find_store(f.f_code, attr=attr, after=after)
                if site is not None:
                    break
            site = site or created[1]
            opt_txt = f"{o.name} at {where(o.site, site)}" if o.site else o.name
            self.observe(
                "LC501", site,
                f"{owner} of the model is replaced after the optimizer ({opt_txt}) was built: its new "
                "parameters are in no optimizer and never train; build the optimizer after the change",
                f"Runtime: at step {n}, {len(names)} of {type(module).__name__}'s {count} trainable parameters "
                f"are in no optimizer ({', '.join(names[:3])}).",
                [(o.site, "the optimizer was built here")], step=n, value=float(len(names)))

    # ---------------------------------------------------------------- schedulers (LC201-LC203)
    def _trace_sched_wrapper(self, orig):
        probe = self

        def step(self_, *args, **kwargs):
            outer = probe._sched_depth == 0
            initial = getattr(self_, "_is_initial", False) or getattr(self_, "_step_count", 1) == 0
            if outer and not initial:
                probe._on_sched(self_, args, kwargs)
            probe._sched_depth += 1
            try:
                return orig(self_, *args, **kwargs)
            finally:
                probe._sched_depth -= 1

        return step

    @staticmethod
    def _lr(sched):
        opt = getattr(sched, "optimizer", None)
        try:
            return _as_float(opt.param_groups[0]["lr"])
        except (AttributeError, IndexError, KeyError, TypeError):
            return None

    def _on_sched(self, sched, args, kwargs) -> None:
        site = self.site()
        s = self._scheds.get(id(sched))
        if s is None:
            s = self._scheds[id(sched)] = _Sched(sched)
        s.steps += 1
        o = self._opt(getattr(sched, "optimizer", None))
        txt = call_text(site, "scheduler.step()")
        if s.kind == "ReduceLROnPlateau":
            if not args and not kwargs:
                self.observe(
                    "LC203", site,
                    f"{txt} passes no metric, but ReduceLROnPlateau needs the monitored value "
                    "(step(val_loss)); the call raises TypeError",
                    "Runtime: ReduceLROnPlateau.step() was called without a metric.", step=o.steps if o else 0)
            return
        if o is not None and o.steps == 0 and not o.scaler_attempted and o.sched_early is None:
            o.sched_early = {"site": site, "lr_before": self._lr(sched), "kind": s.kind}
        self._check_per_batch(sched, s, o, site, txt)

    def _confirm_sched_early(self, o: _Opt, n: int, step_site: Site | None) -> None:
        e = o.sched_early
        o.sched_early = None
        if n != 1:
            return
        opt = o.ref()
        lr = _as_float(opt.param_groups[0].get("lr")) if opt is not None else None
        self.observe(
            "LC202", e["site"],
            f"{call_text(e['site'], 'scheduler.step()')} runs before {call_text(step_site, 'optimizer.step()')} at "
            f"{where(step_site, e['site'])}: the scheduler moves to its second value before the first update, "
            "so the first LR of the schedule is never used",
            f"Runtime: {e['kind']}.step() ran before the optimizer's first step; step 1 used lr {_g(lr)} instead "
            f"of the schedule's first value {_g(e['lr_before'])}.",
            [(step_site, "the optimizer step that should come first")], step=1, value=lr)

    def _check_per_batch(self, sched, s: _Sched, o: _Opt | None, site, txt) -> None:
        p = self._pass
        if p is None or s.kind not in EPOCH_SCHEDULERS or s.flagged:
            return
        if s.pass_id == p["id"]:
            s.in_pass += 1
        else:
            s.pass_id, s.in_pass = p["id"], 1
        steps_in_pass = self.total_steps - p["steps0"]
        if s.in_pass < 2 or steps_in_pass < 2 or s.in_pass * 2 < steps_in_pass:
            return
        bwd_in_pass = self.total_backwards - p["bwd0"]
        per_step = max(1.0, bwd_in_pass / steps_in_pass) if steps_in_pass else 1.0
        epoch_steps = p["len"] / per_step
        if s.kind == "ExponentialLR":
            short = s.gamma is not None and s.gamma < 0.99
            why = f"its gamma {_g(s.gamma)} decays the LR to {_g(s.gamma ** epoch_steps if s.gamma else None)}x per epoch"
        else:
            short = s.period is not None and s.period < epoch_steps
            what = {"StepLR": "step_size", "MultiStepLR": "last milestone", "CosineAnnealingLR": "T_max"}.get(
                s.kind, "total_iters")
            why = f"its {what} {s.period} is shorter than one epoch of {p['len']} batches"
        if not short:
            return
        s.flagged = True
        opt = getattr(sched, "optimizer", None)
        try:
            initial = _as_float(opt.param_groups[0].get("initial_lr"))
        except (AttributeError, IndexError, TypeError):
            initial = None
        lr = self._lr(sched)
        self.observe(
            "LC201", site,
            f"{txt} runs once per batch, but {s.kind} counts its period in epochs: the schedule advances "
            f"len(loader) times per epoch; step it once per epoch, after the batch loop",
            f"Runtime: {s.kind}.step() ran {s.in_pass} times in the first {steps_in_pass} optimizer steps of a "
            f"pass over a {p['len']}-batch loader; {why}; the LR went from {_g(initial)} to {_g(lr)} in "
            f"{s.in_pass - 1} scheduler steps.",
            [(p.get("site"), "the batch loop's DataLoader pass starts here")],
            step=(o.steps + 1) if o else 0, value=float(s.in_pass))

    def _trace_loader_wrapper(self, orig):
        probe = self

        def __iter__(self_):
            try:
                n = len(self_)
            except TypeError:
                n = None
            if n and n >= 2:
                probe._passes += 1
                probe._pass = {"id": probe._passes, "len": n, "steps0": probe.total_steps,
                               "bwd0": probe.total_backwards, "site": probe.site()}
            return orig(self_)

        return __iter__

    def _sampler_iter_wrapper(self, orig):
        probe = self

        def __iter__(self_):
            if getattr(self_, "shuffle", False):
                seen = probe._samplers.setdefault(self_, {"epochs": [], "site": probe.site()})
                seen["epochs"].append(getattr(self_, "epoch", 0))
            return orig(self_)

        return __iter__

    # ---------------------------------------------------------------- GradScaler (LC6xx)
    def _trace_scale_wrapper(self, orig):
        def scale(self_, outputs):
            out = orig(self_, outputs)
            if self_.is_enabled() and isinstance(out, torch.Tensor) and isinstance(outputs, torch.Tensor):
                out._loopcheck_scale = float(self_.get_scale())
                out._loopcheck_loss = outputs
            return out

        return scale

    def _trace_unscale_grads_wrapper(self, orig):
        probe = self

        def _unscale_grads_(self_, optimizer, inv_scale, *args, **kwargs):
            out = orig(self_, optimizer, inv_scale, *args, **kwargs)
            o = probe._opt(optimizer)
            if o is not None:
                o.factor *= float(inv_scale)
            return out

        return _unscale_grads_

    @staticmethod
    def _stage(scaler, optimizer) -> str | None:
        states = getattr(scaler, "_per_optimizer_states", None)
        if not isinstance(states, dict):
            return None
        st = dict.get(states, id(optimizer))
        stage = st.get("stage") if st else None
        return getattr(stage, "name", None)

    def _never_scaled(self, scaler, o: _Opt | None, call: str) -> None:
        """LC603 when the GradScaler is used on gradients although ``scale()`` never ran."""
        if getattr(scaler, "_scale", 0) is not None or o is None or o.last_backward is None:
            return
        bwd = o.last_backward.site
        self.observe(
            "LC603", bwd,
            f"{call_text(bwd, 'loss.backward()')} back-propagates the unscaled loss, but {call} follows as if it "
            "were scaled: call scaler.scale(loss).backward()",
            f"Runtime: {call} ran before any scaler.scale(); PyTorch raises AssertionError "
            "(\"Attempted unscale_ but _scale is None\").",
            [(self.site(), f"{call} expects scaled gradients")], step=o.steps + 1)

    def _unscale_wrapper(self, orig):
        probe = self

        def unscale_(self_, optimizer):
            if probe._scaler_step_depth == 0 and self_.is_enabled():
                stage = probe._stage(self_, optimizer)
                o = probe._opt(optimizer)
                probe._never_scaled(self_, o, "scaler.unscale_()")
                if o is not None and o.state == "applied":
                    o.last_unscale = {"site": probe.site(), "n": o.steps}
                if stage in ("UNSCALED", "STEPPED"):
                    site = probe.site()
                    o = probe._opt(optimizer)
                    when = "after scaler.step()" if stage == "STEPPED" else "a second time before scaler.step()"
                    probe.observe(
                        "LC605", site,
                        f"{call_text(site, 'scaler.unscale_()')} runs {when} without scaler.update() in between: "
                        "unscale_() belongs between backward() and scaler.step(), once per step",
                        f"Runtime: at step {(o.steps if o else 0) + (0 if stage == 'STEPPED' else 1)} the GradScaler's "
                        f"state for this optimizer was {stage}; the call raises RuntimeError.",
                        step=(o.steps if o else 0))
            return orig(self_, optimizer)

        return unscale_

    def _trace_scaler_step_wrapper(self, orig):
        probe = self

        def step(self_, optimizer, *args, **kwargs):
            o = probe._opt(optimizer)
            enabled = self_.is_enabled()
            if enabled:
                probe._never_scaled(self_, o, "scaler.step()")
            if enabled and probe._stage(self_, optimizer) == "STEPPED":
                site = probe.site()
                probe.observe(
                    "LC604", site,
                    f"{call_text(site, 'scaler.step()')} runs again without scaler.update() since the previous "
                    "scaler.step(): call scaler.update() once after every scaler.step()",
                    f"Runtime: scaler.step() was called for step {(o.steps + 1) if o else '?'} with no update() since "
                    "the last one; PyTorch raises RuntimeError.", step=(o.steps + 1) if o else 0)
            if o is not None:
                o.scaler_attempted = True
                stage = probe._stage(self_, optimizer) or "READY"
                if enabled and getattr(optimizer, "_step_supports_amp_scaling", False) and stage == "READY":
                    o.internal_unscale = float(self_.get_scale())
            probe._scaler_step_depth += 1
            try:
                return orig(self_, optimizer, *args, **kwargs)
            finally:
                probe._scaler_step_depth -= 1
                if o is not None and o.internal_unscale:
                    o.factor /= o.internal_unscale
                    o.internal_unscale = None

        return step

    # ---------------------------------------------------------------- end of run
    def finish(self) -> None:
        """Resolve what only the end of the run settles (call once the script returned)."""
        self._sweep_eval(final=True)
        for o in self._live_opts():
            c = o.clip_after
            if c is not None and c["site"] is not None and c["site"].key not in o.clip_after_refuted:
                site = c["site"]
                step_site = o.last_step.site if o.last_step else None
                self.observe(
                    "LC102", site,
                    f"{call_text(site, 'clip_grad_norm_()')} runs after {call_text(step_site, 'optimizer.step()')} "
                    f"at {where(step_site, site)} applied the gradients: the step never applies clipped gradients",
                    f"Runtime: the clip after step {o.steps} clipped gradients that step had already applied.",
                    [(step_site, "step() already applied the gradient it clips")], step=o.steps)
        for sampler, seen in list(self._samplers.items()):
            epochs = seen["epochs"]
            if len(epochs) >= 2 and len(set(epochs)) < len(epochs):
                s = seen["site"]
                at = f" (iterated at {os.path.basename(s.filename)}:{s.line})" if s else ""
                self.notes.append(
                    f"DistributedSampler{at} was iterated {len(epochs)} times without set_epoch() between "
                    "passes: every epoch uses the same shuffled order")
        if self._kept_external:
            self.notes.append(
                f"{self._kept_external} loss graph(s) outlived their optimizer step, kept by objects outside your "
                "code (not reported)")

    def results(self) -> list[Observation]:
        """The observations, in the order they were first seen."""
        return list(self.observations.values())


# ------------------------------------------------------------------------------------ helpers


def _first_graph_tensor(output):
    """The first tensor with a ``grad_fn`` in a forward's output (tensor, sequence or mapping)."""
    if isinstance(output, torch.Tensor):
        return output if output.grad_fn is not None else None
    items = output.values() if isinstance(output, dict) else output if isinstance(output, (list, tuple)) else ()
    for v in list(items)[:8]:
        if isinstance(v, torch.Tensor) and v.grad_fn is not None:
            return v
    return None


def _all_zero(grads) -> bool:
    return all(g is None or not bool(g.detach().any()) for g in grads)


def _lc302_note(n: int) -> str:
    return (f"Runtime: {n} eval-mode forwards at this line ran with grad enabled; their outputs carried a "
            "grad_fn and no backward went through them.")


def _lc401_message(holder, bwd_txt: str, at: str) -> str:
    name = holder.name
    if holder.kind == "graph":
        return (f"{name} adds up loss tensors, not numbers: its autograd graph chains the graph of every loss "
                f"of {bwd_txt} at {at}; accumulate loss.item() instead")
    what = {"list": "a list", "dict": "a dict", "object": "an object"}.get(holder.kind, "a variable")
    return (f"{name} ({what}) keeps the loss tensor of {bwd_txt} at {at} with its autograd graph after the "
            "step; store loss.item() instead")


def _lc401_note(count: int, first: int) -> str:
    return (f"Runtime: {count} loss tensor(s) were still alive, with their autograd graphs, one optimizer step "
            f"after their own (first seen at step {first}).")
