"""LR schedulers at runtime (LC201–LC203), and the DataLoader passes they are measured against.

A mixin of :class:`~loopcheck.trace.watch.Watcher`. It wraps ``step`` of every
``torch.optim.lr_scheduler`` class that defines one (the outermost call only; the first call
a scheduler makes from its constructor does not count), ``DataLoader.__iter__`` (a pass over a
loader of known length) and ``DistributedSampler.__iter__``:

- a scheduler whose period counts epochs (StepLR, MultiStepLR, CosineAnnealingLR,
  ExponentialLR, PolynomialLR, LinearLR, ConstantLR) stepped about once per optimizer step
  within one pass over a loader, with a period shorter than that epoch (ExponentialLR: gamma
  below 0.99, as the static rule reads it): LC201;
- ``scheduler.step()`` before its optimizer's first step (no ``scaler.step()`` attempt either,
  which may skip a step legitimately): LC202, confirmed when that first step runs. That step's
  LR tells whether the first value was skipped; when it is the initial one, the knowledge entry
  of the scheduler's class (``first_change``, ``constant_when``, read from the instance's
  attributes of the arguments' names) tells a schedule that never changes the LR (nothing to
  report) from one that runs one step ahead;
- ``ReduceLROnPlateau.step()`` without a metric: LC203.

A ``DistributedSampler`` with ``shuffle=True`` iterated twice at the same epoch (no
``set_epoch()`` in between) is a note: no rule covers it.
"""

from __future__ import annotations

import os

import torch

from loopcheck.verify.probes import _as_float

from .state import OptState, fmt, guarded, ref, subject

EPOCH_SCHEDULERS = {"StepLR": "step_size", "MultiStepLR": "milestones", "CosineAnnealingLR": "T_max",
                    "ExponentialLR": None, "PolynomialLR": "total_iters", "LinearLR": "total_iters",
                    "ConstantLR": "total_iters"}


def period(sched) -> int | None:
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


class SchedState:
    """One scheduler: its kind, period, and how often it stepped in the current loader pass."""

    __slots__ = ("kind", "period", "gamma", "pass_id", "in_pass", "flagged")

    def __init__(self, sched) -> None:
        self.kind = type(sched).__name__
        self.period = period(sched)
        self.gamma = _as_float(getattr(sched, "gamma", None)) if self.kind == "ExponentialLR" else None
        self.pass_id = None
        self.in_pass = 0
        self.flagged = False


def schedule_start(sched) -> tuple[str, int | None, str]:
    """How a library scheduler's schedule begins, from the knowledge entry of its class and
    the instance's attributes named as the entry's arguments (StepLR keeps ``step_size`` and
    ``gamma``): ``("constant", None, "")`` when ``constant_when`` holds (``gamma == 1``),
    ``("held", N, change)`` for a ``first_change`` entry (``N`` the first position whose LR
    differs, ``None`` when unreadable), else ``("changes", None, "")``."""
    from loopcheck.engine.knowledge import knowledge

    cls = type(sched)
    entry = knowledge().cls(f"{cls.__module__}.{cls.__name__}")
    returns = entry.ctor.returns if entry is not None else None
    if returns is None:
        return "changes", None, ""

    def attribute(ref):
        name = ref[1] if isinstance(ref, tuple) else ref
        return getattr(sched, name, None) if isinstance(name, str) else None

    constant = returns.get("constant_when")
    if constant is not None and _as_float(attribute(constant.arg)) == constant.value:
        return "constant", None, ""
    first = returns.get("first_change")
    if first is None:
        return "changes", None, ""
    value = attribute(first.arg)
    try:
        at = min(value) if hasattr(value, "__iter__") else int(value)
    except (TypeError, ValueError):
        at = None
    return "held", at if isinstance(at, int) and at >= 2 else None, first.change


def lr_of(sched, key: str = "lr"):
    """``param_groups[0][key]`` of the scheduler's optimizer, or ``None``."""
    try:
        return _as_float(sched.optimizer.param_groups[0].get(key))
    except (AttributeError, IndexError, TypeError):
        return None


class SchedulerChecks:
    """LC201–LC203 (mixed into the watcher)."""

    def _install_schedulers(self) -> None:
        from torch.optim import lr_scheduler
        from torch.utils.data.distributed import DistributedSampler

        for cls in vars(lr_scheduler).values():
            if isinstance(cls, type) and issubclass(cls, lr_scheduler.LRScheduler) and "step" in vars(cls):
                self._wrap(cls, "step", self._trace_sched_wrapper)
        self._wrap(torch.utils.data.DataLoader, "__iter__", self._trace_loader_wrapper)
        self._wrap(DistributedSampler, "__iter__", self._sampler_iter_wrapper)

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

    @guarded
    def _on_sched(self, sched, args, kwargs) -> None:
        site = self.site()
        s = self._scheds.get(sched)
        if s is None:
            s = SchedState(sched)
            self._scheds[sched] = s
        o = self._opt(getattr(sched, "optimizer", None))
        txt = subject(site, "scheduler.step()")
        if s.kind == "ReduceLROnPlateau":
            if not args and not kwargs:
                self.observe(
                    "LC203", site, f"{txt} passes no metric, but ReduceLROnPlateau needs the value it monitors",
                    "Runtime: ReduceLROnPlateau.step() was called without a metric, and raises TypeError. Pass "
                    "the monitored value: scheduler.step(val_loss).", step=o.steps if o else 0)
            return
        if o is not None and o.steps == 0 and not o.scaler_attempted and o.sched_early is None:
            o.sched_early = {"site": site, "lr_before": lr_of(sched), "kind": s.kind, "start": schedule_start(sched)}
        self._check_per_batch(sched, s, o, site, txt)

    def _sched_at_step(self, o: OptState, step_site, n: int) -> None:
        e, o.sched_early = o.sched_early, None
        if e is None or n != 1:
            return
        opt = o.ref()
        lr = _as_float(opt.param_groups[0].get("lr")) if opt is not None else None
        kind, at, change = e["start"]
        head = f"{subject(e['site'], 'scheduler.step()')} runs before {ref(step_site, 'optimizer.step()', e['site'])}"
        if lr is None or lr != e["lr_before"]:
            text = "the first LR of the schedule is skipped"
            note = f"step 1 used lr {fmt(lr)} instead of the schedule's first value {fmt(e['lr_before'])}"
        elif kind == "constant":
            return  # the schedule never changes the LR: stepping it first shifts nothing
        else:
            text = f"each {change or 'change'} comes one step early" + (
                f" (at step {at - 1} instead of {at})" if at is not None else "")
            note = (f"step 1 used the first value, lr {fmt(lr)}, which the schedule also gives at its next "
                    "position, but the schedule now runs one step ahead")
        self.observe(
            "LC202", e["site"], f"{head}: {text}",
            f"Runtime: {e['kind']}.step() ran before the optimizer's first step; {note}. Call scheduler.step() "
            "after optimizer.step().",
            [(step_site, "the optimizer step that should come first")], step=1, value=lr)

    def _check_per_batch(self, sched, s: SchedState, o: OptState | None, site, txt) -> None:
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
        per_step = max(1.0, (self.total_backwards - p["bwd0"]) / steps_in_pass)
        epoch_steps = p["len"] / per_step
        if s.kind == "ExponentialLR":
            if s.gamma is None or s.gamma >= 0.99:
                return
            why = f"its gamma {fmt(s.gamma)} multiplies the LR by {fmt(s.gamma ** epoch_steps)} per epoch"
        else:
            if s.period is None or s.period >= epoch_steps:
                return
            what = {"StepLR": "step_size", "MultiStepLR": "last milestone", "CosineAnnealingLR": "T_max"}.get(
                s.kind, "total_iters")
            why = f"its {what} {s.period} is shorter than one epoch of {p['len']} batches"
        s.flagged = True
        self.observe(
            "LC201", site, f"{txt} runs once per batch, but {s.kind} counts its period in epochs",
            f"Runtime: {s.kind}.step() ran {s.in_pass} times in the first {steps_in_pass} optimizer steps of a "
            f"pass over a {p['len']}-batch loader; {why}; the LR went from {fmt(lr_of(sched, 'initial_lr'))} to "
            f"{fmt(lr_of(sched))} in {s.in_pass - 1} scheduler steps. Step it once per epoch, after the batch "
            "loop.",
            [(p.get("site"), "the pass over the DataLoader starts here")],
            step=(o.steps + 1) if o else 0, value=float(s.in_pass))

    # ---------------------------------------------------------------- loaders, samplers
    def _trace_loader_wrapper(self, orig):
        probe = self

        def __iter__(self_):
            probe._loader_pass(self_)
            return orig(self_)

        return __iter__

    @guarded
    def _loader_pass(self, loader) -> None:
        try:
            n = len(loader)
        except Exception:  # noqa: BLE001 - IterableDataset and friends have no length
            n = None
        if n and n >= 2:
            self._passes += 1
            self._pass = {"id": self._passes, "len": n, "steps0": self.total_steps,
                          "bwd0": self.total_backwards, "site": self.site()}

    def _sampler_iter_wrapper(self, orig):
        probe = self

        def __iter__(self_):
            probe._sampler_pass(self_)
            return orig(self_)

        return __iter__

    @guarded
    def _sampler_pass(self, sampler) -> None:
        if not getattr(sampler, "shuffle", False):
            return
        seen = self._samplers.get(sampler)
        if seen is None:
            seen = {"epochs": [], "site": self.site()}
            self._samplers[sampler] = seen
        epoch = getattr(sampler, "epoch", 0)
        if epoch in seen["epochs"]:
            self._sampler_repeats[id(seen)] = seen  # kept even if the sampler is collected
        seen["epochs"].append(epoch)

    def _schedulers_at_end(self) -> None:
        for seen in self._sampler_repeats.values():
            s = seen["site"]
            at = f" (iterated at {os.path.basename(s.filename)}:{s.line})" if s else ""
            self.notes.append(
                f"DistributedSampler{at} was iterated {len(seen['epochs'])} times without set_epoch() between "
                "passes: every epoch uses the same shuffled order")
