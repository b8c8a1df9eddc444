"""GradScaler rules (LC601–LC605): automatic mixed precision with float16.

Knowledge: ``torch.amp.GradScaler`` docs and the AMP examples ("Working with unscaled
gradients"): ``scaler.scale(loss).backward()`` leaves gradients multiplied by the scale;
``scaler.unscale_(optimizer)`` divides them back once per step, and must come before
clipping; ``scaler.step(optimizer)`` unscales (if needed), skips the step on inf/NaN, and
``scaler.update()`` adapts the scale once per iteration.
"""

from __future__ import annotations

from typing import Iterable, Iterator, NamedTuple

from loopcheck.engine.dataflow import Machine
from loopcheck.engine.events import Event
from loopcheck.engine.unit import Unit
from loopcheck.findings import Report
from loopcheck.rules.base import Rule, RuleInfo, register
from loopcheck.rules.gradients import built_here, touches


class A(NamedTuple):
    """Scaling state of one optimizer's gradients.

    phase: ``unknown`` | ``none`` | ``scaled`` (after scaler.scale(loss).backward())
    | ``unscaled`` (after unscale_) | ``plain`` (after a backward on the unscaled loss).
    """

    phase: str
    bw: Event | None = None
    unscale: Event | None = None
    scaler_step: Event | None = None  # scaler.step(opt) since the last update()
    last_step: Event | None = None  # the last scaler.step(opt), update() or not


class ScalingMachine(Machine):
    kinds = frozenset({'backward', 'unscale', 'scaler_step', 'step', 'scaler_update', 'opt_build', 'zero_grad', 'zero_grad_model', 'zero_grad_all', 'havoc', 'clip'})

    def __init__(self, unit: Unit, opt: str) -> None:
        self.unit, self.opt = unit, opt

    def initial(self) -> A:
        return A("absent") if built_here(self.unit, self.opt) else A("unknown")

    def transfer(self, s: A, ev: Event) -> A:
        k = ev.kind
        if s.phase == "absent" and not (k == "opt_build" and ev.subject == self.opt):
            return s
        if k == "backward":
            if ev.extra.get("managed"):
                return A("unknown")
            if ev.extra.get("scaler"):
                phase = "scaled" if s.phase in ("none", "scaled", "unknown") else "unknown"
            else:
                phase = "plain" if s.phase in ("none", "plain", "unknown") else "unknown"
            return A(phase, ev, None, s.scaler_step, None)
        if k == "unscale" and ev.extra.get("optimizer") == self.opt:
            return s._replace(phase="unscaled" if s.phase == "scaled" else s.phase, unscale=ev)
        if k == "scaler_step" and ev.extra.get("optimizer") == self.opt:
            return A("none", None, None, ev, ev)
        if k == "step" and ev.subject == self.opt and not ev.extra.get("scaler"):
            return A("none", None, None, s.scaler_step, None)
        if k == "scaler_update":
            return s._replace(scaler_step=None)
        if k in ("opt_build",) and ev.subject == self.opt:
            return A("none")
        if k in ("zero_grad", "zero_grad_model", "zero_grad_all", "havoc") and (
            k == "zero_grad_all" or touches(self.unit, self.opt, ev)
        ):
            if k == "havoc":
                return A("unknown")
            return A("none", None, None, s.scaler_step, s.last_step)
        return s


def scaled_optimizers(unit: Unit) -> list[str]:
    """Optimizers stepped by a GradScaler (scaler.step(opt)) or next to a scaled backward."""
    if not unit.roles.scalers:
        return []
    opts: list[str] = []
    for ev in unit.events:
        if ev.kind == "step" and ev.subject not in opts:
            opts.append(ev.subject)
    return opts


def scaling_flow(unit: Unit, opt: str):
    return unit.flow(("scaling", opt), lambda: ScalingMachine(unit, opt))


def _all(states, phase: str) -> bool:
    return bool(states) and all(s.phase == phase for s in states)


def reached_only_in(unit: Unit, kind: str, phase: str, accept) -> Iterator[tuple[Event, Event]]:
    """``(event, backward)`` for each event of ``kind`` that ``accept(event, optimizer)``
    relates to a scaled optimizer and that runs only while its gradients are in ``phase``;
    ``backward`` is the backward that put them there."""
    for opt in scaled_optimizers(unit):
        flow = scaling_flow(unit, opt)
        for ev in unit.of_kind(kind):
            if not accept(ev, opt):
                continue
            states = flow.states(ev)
            if _all(states, phase):
                yield ev, next(s.bw for s in states)


@register
class ClipWithoutUnscale(Rule):
    info = RuleInfo(
        "LC601", "clip-without-unscale", "error",
        "Gradients are clipped while still multiplied by the GradScaler's scale: call scaler.unscale_() first.",
    )

    def check(self, unit: Unit) -> Iterable[Report]:
        def accept(ev: Event, opt: str) -> bool:
            return not ev.extra.get("managed") and not ev.extra.get("measure_only") and touches(unit, opt, ev)

        for ev, bw in reached_only_in(unit, "clip", "scaled", accept):
            yield Report(
                self.info.code, ev.node,
                lambda d, ev=ev, bw=bw: (
                    f"{d.call(ev.node)} clips the gradients of {d.code(bw.node, 40)} at line "
                    f"{d.line(bw.node)} while they are still multiplied by the loss scale: every step is "
                    "clipped to max_norm in scaled units, so the gradient step() applies shrinks to "
                    "max_norm / scale; call scaler.unscale_(optimizer) before clipping"
                ),
                [(bw.node, "the scaled backward")],
            )


@register
class StepBypassesScaler(Rule):
    info = RuleInfo(
        "LC602", "optimizer-step-bypasses-scaler", "error",
        "optimizer.step() is called directly on gradients scaled by a GradScaler: use scaler.step(optimizer).",
    )

    def check(self, unit: Unit) -> Iterable[Report]:
        def accept(ev: Event, opt: str) -> bool:
            return ev.subject == opt and not ev.extra.get("scaler")

        for ev, bw in reached_only_in(unit, "step", "scaled", accept):
            yield Report(
                self.info.code, ev.node,
                lambda d, ev=ev, bw=bw: (
                    f"{d.call(ev.node)} applies the gradients of {d.code(bw.node, 40)} at line "
                    f"{d.line(bw.node)} still multiplied by the loss scale, and applies inf/NaN "
                    "gradients instead of skipping them; use scaler.step(optimizer) and scaler.update()"
                ),
                [(bw.node, "the scaled backward")],
            )


@register
class BackwardOnUnscaledLoss(Rule):
    info = RuleInfo(
        "LC603", "backward-on-unscaled-loss", "error",
        "loss.backward() on the unscaled loss while scaler.step() unscales: updates shrink by the scale.",
    )

    def check(self, unit: Unit) -> Iterable[Report]:
        reported = set()
        for ev, bw in reached_only_in(unit, "scaler_step", "plain", lambda ev, opt: ev.extra.get("optimizer") == opt):
            if id(bw) in reported:
                continue
            reported.add(id(bw))
            yield Report(
                self.info.code, bw.node,
                lambda d, ev=ev, bw=bw: (
                    f"{d.call(bw.node)} runs on the unscaled loss, but {d.call(ev.node)} at line "
                    f"{d.line(ev.node)} divides the gradients by the loss scale: every update is scale× "
                    "too small (and fp16 gradients can underflow); use scaler.scale(loss).backward()"
                ),
                [(ev.node, "scaler.step() that unscales")],
            )


@register
class ScalerStepWithoutUpdate(Rule):
    info = RuleInfo(
        "LC604", "scaler-step-without-update", "error",
        "scaler.step() runs in a loop whose iterations never call scaler.update().",
    )

    def check(self, unit: Unit) -> Iterable[Report]:
        updates = [e for e in unit.of_kind("scaler_update", "havoc")]
        for ev in unit.of_kind("scaler_step"):
            if not ev.ctx.loops:
                continue
            loop = ev.ctx.loops[-1]
            if any(u.subject == ev.subject and loop in u.ctx.loops for u in updates):
                continue
            yield Report(
                self.info.code, ev.node,
                lambda d, ev=ev, loop=loop: (
                    f"{d.call(ev.node)} runs every iteration of the loop at line {d.line(loop.node)}, but "
                    "scaler.update() does not: the second scaler.step() on the same optimizer raises "
                    "RuntimeError (and the loss scale could never adapt); call scaler.update() once per "
                    "iteration, after the step"
                ),
                [(loop.node, "the loop without scaler.update()")],
            )


@register
class UnscaleMisplaced(Rule):
    info = RuleInfo(
        "LC605", "unscale-misplaced", "error",
        "scaler.unscale_() runs after scaler.step() instead of between backward and step, or twice before one step.",
    )

    def check(self, unit: Unit) -> Iterable[Report]:
        for opt in scaled_optimizers(unit):
            flow = scaling_flow(unit, opt)
            for ev in unit.of_kind("unscale"):
                if ev.extra.get("optimizer") != opt:
                    continue
                states = flow.states(ev)
                if not states or any(s.phase in ("unknown", "scaled", "plain") for s in states):
                    continue
                if all(s.phase == "unscaled" for s in states):
                    prev = next(s.unscale for s in states)
                    yield Report(
                        self.info.code, ev.node,
                        lambda d, ev=ev, prev=prev: (
                            f"{d.call(ev.node)} runs a second time after {d.call(prev.node)} at line "
                            f"{d.line(prev.node)} before the step: GradScaler allows one unscale_() per "
                            "optimizer per step and raises RuntimeError"
                        ),
                        [(prev.node, "the first unscale_()")],
                    )
                elif all(s.phase == "none" and s.last_step is not None for s in states):
                    prev = next(s.last_step for s in states)
                    updated = all(s.scaler_step is None for s in states)
                    yield Report(
                        self.info.code, ev.node,
                        lambda d, ev=ev, prev=prev, updated=updated: (
                            f"{d.call(ev.node)} runs after {d.call(prev.node)} at line {d.line(prev.node)}, "
                            + (
                                "so GradScaler counts the next iteration's gradients as already unscaled: "
                                "the next scaler.step() applies them still multiplied by the loss scale; "
                                if updated else
                                "before scaler.update(): GradScaler raises RuntimeError; "
                            )
                            + "unscale between backward() and scaler.step()"
                        ),
                        [(prev.node, "scaler.step() that already ran")],
                    )
