"""GradScaler rules (LC601–LC605): automatic mixed precision with float16.

Knowledge: ``torch.amp.GradScaler`` docs and the AMP examples ("Working with unscaled
gradients"): ``scaler.scale(loss).backward()`` leaves gradients multiplied by the scale;
``scaler.unscale_(optimizer)`` divides them back once per step, and must come before
clipping; ``scaler.step(optimizer)`` unscales (if needed), skips the step on inf/NaN, and
``scaler.update()`` adapts the scale once per iteration. GradScaler keeps its state (unscaled,
stepped) per optimizer between ``update()``s, so one machine per optimizer follows it; several
optimizers each unscaled and stepped once, then one ``update()``, is the documented recipe
("Working with Multiple Models, Losses, and Optimizers"). A loop that binds the optimizer's name
anew on each iteration (``for opt in optimizers:``) is followed once per optimizer; an event
whose optimizer cannot be named concerns none.
"""

from __future__ import annotations

from typing import Iterable, Iterator, NamedTuple

from loopcheck.engine.dataflow import Machine, always_follows
from loopcheck.engine.events import Event
from loopcheck.engine.ir import Loop
from loopcheck.engine.unit import Unit
from loopcheck.engine.values import holds_entry_argument, loss_scale_factor
from loopcheck.findings import Report
from loopcheck.catalog import INFOS
from loopcheck.rules.base import Rule, register
from loopcheck.rules.gradients import built_here, reaches, rebinding_loops, touches


class A(NamedTuple):
    """Scaling state of one optimizer's gradients.

    phase: ``absent`` (not built on this path) | ``unknown`` | ``none`` | ``scaled`` (after
    scaler.scale(loss).backward()) | ``unscaled`` (after unscale_) | ``plain`` (after a
    backward on the unscaled loss).
    bw: the backward that put the gradients in this phase.
    unscale: the ``unscale_`` since the last ``scaler.update()`` (GradScaler allows one per
        optimizer until then; a backward after it starts a new scaled phase but the scaler still
        remembers it).
    scaler_step: the ``scaler.step(opt)`` since the last ``update()``.
    last_step: the last ``scaler.step(opt)``, updated or not.
    plain: the names a ``scale()`` output is assigned to somewhere (``loss =
        scaler.scale(loss)``) that hold no scaled value on this path: their last assignment
        (``scale_bind``) gave them a value computed from no scaled one (``loss =
        criterion(out, y)`` where ``if scaler is not None:`` skipped the scaling). A name
        never assigned on the path may hold a scaled value.
    """

    phase: str
    bw: Event | None = None
    unscale: Event | None = None
    scaler_step: Event | None = None
    last_step: Event | None = None
    plain: frozenset = frozenset()


ABSENT = A("absent")


class ScalingMachine(Machine):
    kinds = frozenset({'backward', 'unscale', 'scaler_step', 'step', 'scaler_update', 'opt_build', 'zero_grad',
                       'zero_grad_model', 'zero_grad_all', 'havoc', 'clip', 'scale_bind'})
    own_events_complete = True

    def __init__(self, unit: Unit, opt: str) -> None:
        self.unit, self.opt = unit, opt
        self.subjects = unit.roles.names_of(opt)
        self._rebinding = rebinding_loops(unit, opt)

    def initial(self) -> A:
        return ABSENT if built_here(self.unit, self.opt) else A("unknown")

    def absent(self) -> A:
        return ABSENT

    def rebinds(self, loop: Loop) -> bool:
        # ``for opt in optimizers: scaler.unscale_(opt)`` unscales each optimizer once
        return id(loop) in self._rebinding

    def transfer(self, s: A, ev: Event) -> A:
        if ev.kind == "scale_bind":
            return s._replace(plain=bound_plain(s.plain, ev))
        out = self._transfer(s, ev)
        return out if out.plain == s.plain else out._replace(plain=s.plain)

    def _transfer(self, s: A, ev: Event) -> A:
        k = ev.kind
        if k == "opt_build" and ev.subject == self.opt:
            return A("none")
        if s.phase == "absent":
            return s
        if k == "backward":
            if not reaches(self.unit, self.opt, ev):
                return s
            if ev.extra.get("managed"):
                return A("unknown")
            # scaled when the tensor back-propagated is a scale() output, or the gradient given
            # to backward() is (it multiplies every gradient the backward fills); a name that
            # holds a scale() output on other paths only holds none on this one
            if scaled_on_path(s.plain, ev):
                phase = "scaled" if s.phase in ("none", "scaled", "unknown", "unscaled") else "unknown"
            elif given_from_outside(self.unit, ev):
                # a parameter of the entry whose caller is not read: its value, scaled or not,
                # is unknown, so the backward establishes nothing about the scaling
                phase = "unknown"
            else:
                phase = "plain" if s.phase in ("none", "plain", "unknown") else "unknown"
            return s._replace(phase=phase, bw=ev, last_step=None)
        if k == "unscale" and ev.extra.get("optimizer") == self.opt:
            return s._replace(phase="unscaled" if s.phase == "scaled" else s.phase, unscale=ev)
        if k == "scaler_step" and ev.extra.get("optimizer") == self.opt:
            return A("none", None, s.unscale, ev, ev)
        if k == "step" and ev.subject == self.opt and not ev.extra.get("scaler"):
            return s._replace(phase="none", bw=None, last_step=None)
        if k == "scaler_update":
            return s._replace(scaler_step=None, unscale=None)
        if k == "havoc" and (ev.may_change("grads") or ev.may_change("scale")) and touches(self.unit, self.opt, ev):
            return A("unknown")
        if k in ("zero_grad", "zero_grad_model", "zero_grad_all") and (k == "zero_grad_all" or touches(self.unit, self.opt, ev)):
            return s._replace(phase="none", bw=None)
        return s


def bound_plain(plain: frozenset, ev: Event) -> frozenset:
    """``plain`` (:attr:`A.plain`) after the ``scale_bind`` event ``ev``: its name holds a
    scaled value when it is assigned a ``scale()`` output or a value computed from a name that
    may hold one on the path, else none."""
    name = ev.subject
    scaled = ev.extra.get("scaler") is not None or any(src not in plain for src in ev.extra.get("sources", ()))
    if scaled:
        return plain - {name} if name in plain else plain
    return plain if name in plain else plain | {name}


def scaled_on_path(plain: frozenset, ev: Event) -> bool:
    """Whether the backward ``ev`` back-propagates a ``scale()`` output, or is given one as its
    gradient, on a path where the names of ``plain`` hold no scaled value."""
    if ev.extra.get("scaler") and ev.extra.get("scaled_name") not in plain:
        return True
    return bool(ev.extra.get("gradient_scaler")) and ev.extra.get("gradient_name") not in plain


def given_from_outside(unit: Unit, ev: Event) -> bool:
    """Whether the backward ``ev`` back-propagates, or is given as its gradient, an argument of
    the entry function whose callers the unit does not read (``def backward(self, loss):
    loss.backward()`` analysed on its own): scaled or not, its value is unknown."""
    gradient = ev.extra.get("gradient")
    names = [ev.subject if ev.extra.get("scaler") is None else None, gradient.sym if gradient is not None else None]
    return any(holds_entry_argument(unit, sym, ev.raw) for sym in names)


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


def scaling_states(unit: Unit, opt: str, ev: Event) -> set:
    """The scaling states of ``opt`` on the paths (where it exists) that reach ``ev``."""
    return {s for s in scaling_flow(unit, opt).states(ev) if s.phase != "absent"}


def _all(states, phase: str) -> bool:
    return bool(states) and all(s.phase == phase for s in states)


def reached_only_in(unit: Unit, kind: str, phase: str, accept) -> Iterator[tuple[Event, Event]]:
    """``(event, backward)`` for each event of ``kind`` that ``accept(event, optimizer)``
    relates to a scaled optimizer and that runs only while its gradients are in ``phase``;
    ``backward`` is the backward that put them there."""
    for opt in scaled_optimizers(unit):
        for ev in unit.of_kind(kind):
            if not accept(ev, opt):
                continue
            states = scaling_states(unit, opt, ev)
            if _all(states, phase):
                yield ev, next(s.bw for s in states)


def clips_in_scaled_units(unit: Unit, clip: Event, bw: Event) -> bool:
    """Whether the clip's threshold is a product with the loss scale of the GradScaler that
    scaled the gradients of ``bw`` (``clip_grad_norm_(params, max_norm * scaler.get_scale())``):
    it is then in the same scaled units as the gradients, and clips at ``max_norm`` in true ones."""
    scaler = bw.extra.get("scaler") or bw.extra.get("gradient_scaler")
    return scaler is not None and loss_scale_factor(unit, clip.extra.get("max_norm"), clip.raw) == scaler


@register
class ClipWithoutUnscale(Rule):
    """LC601: a clip of optimizer ``O``'s parameters runs while, on every path, ``O``'s gradients
    come from ``scaler.scale(loss).backward()`` with no ``scaler.unscale_(O)`` since, and its
    threshold is not a product with that GradScaler's ``get_scale()`` (see ``rules/LC601.md``)."""

    info = INFOS["LC601"]

    def check(self, unit: Unit) -> Iterable[Report]:
        def accept(ev: Event, opt: str) -> bool:
            return not ev.extra.get("managed") and not ev.extra.get("measure_only") and touches(unit, opt, ev)

        for ev, bw in reached_only_in(unit, "clip", "scaled", accept):
            if clips_in_scaled_units(unit, ev, bw):
                continue
            yield Report(
                self.info.code, ev.node,
                lambda d, ev=ev, bw=bw: (
                    f"{d.call(ev.node)} clips still-scaled gradients of {d.code(bw.node, 40)} (line {d.line(bw.node)})"
                ),
                [(bw.node, "the scaled backward")],
                note=lambda d: (
                    "Every step is clipped to max_norm in scaled units, so the update shrinks to max_norm / scale "
                    "(measured, CPU float16 autocast, torch 2.13: clip saw gradients 65536x the true ones). Call "
                    "scaler.unscale_(optimizer) before clipping."
                ),
                at=ev, related_at=(bw,),
            )


@register
class StepBypassesScaler(Rule):
    """LC602: a plain ``O.step()`` runs while, on every path, ``O``'s gradients come from a scaled
    backward, still scaled on at least one; or while they come on every path from one backward,
    scaled on some paths and not on others (its loss re-bound to ``scale(loss)`` under a test),
    when the step follows every run of that backward whatever the tests decide (see
    ``rules/LC602.md``)."""

    info = INFOS["LC602"]

    def check(self, unit: Unit) -> Iterable[Report]:
        for opt in scaled_optimizers(unit):
            for ev in unit.of_kind("step"):
                if ev.subject != opt or ev.extra.get("scaler"):
                    continue
                states = scaling_states(unit, opt, ev)
                # scaled on every path, or on some while unscale_ ran on the others (clipping
                # switched off skips unscale_): both mean scaled gradients reach the step
                if not states or any(s.phase not in ("scaled", "unscaled", "plain") for s in states):
                    continue
                scaled = [s.bw for s in states if s.phase == "scaled"]
                if not scaled:
                    continue
                # the same backward on an unscaled loss on other paths (the loss scaled only
                # under ``if scaler is not None:``): those paths may be the only ones that take
                # the arm of the step, unless the step follows every run of that backward (a
                # backward of its own on the other paths, in the other arm of an ``if``, is
                # another case: not reported)
                mixed = any(s.phase == "plain" for s in states)
                if mixed and not (
                    {id(s.bw) for s in states if s.phase == "plain"} <= {id(bw) for bw in scaled}
                    and all(always_follows(unit.ir, bw.raw, ev.raw) for bw in scaled)
                ):
                    continue
                yield self._report(ev, scaled[0], mixed)

    def _report(self, ev: Event, bw: Event, mixed: bool) -> Report:
        return Report(
            self.info.code, ev.node,
            lambda d: (
                f"{d.call(ev.node)} bypasses the GradScaler: it applies the scaled gradients of "
                f"{d.code(bw.node, 40)} (line {d.line(bw.node)})" + (" if scaled" if mixed else "")
            ),
            [(bw.node, "the scaled backward")],
            note=lambda d: (
                "The gradients are still multiplied by the loss scale, and inf/NaN gradients are applied instead "
                "of skipped (measured, CPU float16 autocast, torch 2.13: gradients applied 65536x too large, "
                "31/32 steps applied inf/NaN). Use scaler.step(optimizer) and scaler.update()."
            ),
            at=ev, related_at=(bw,),
        )


@register
class BackwardOnUnscaledLoss(Rule):
    """LC603: ``scaler.step(O)`` runs while, on every path, ``O``'s gradients come from an
    unscaled backward: neither the tensor back-propagated nor the gradient given to
    ``backward()`` is the output of the GradScaler's ``scale()`` (a parameter holds what its
    caller passes; one of the entry function, whose callers are not read, establishes nothing);
    reported on that backward (see ``rules/LC603.md``)."""

    info = INFOS["LC603"]

    def check(self, unit: Unit) -> Iterable[Report]:
        reported = set()
        for ev, bw in reached_only_in(unit, "scaler_step", "plain", lambda ev, opt: ev.extra.get("optimizer") == opt):
            if id(bw) in reported:
                continue
            reported.add(id(bw))
            yield Report(
                self.info.code, bw.node,
                lambda d, ev=ev, bw=bw: (
                    f"{d.call(bw.node)} "
                    + ("back-propagates an unscaled gradient" if bw.extra.get("gradient") else "runs on the unscaled loss")
                    + f", but {d.call(ev.node)} (line {d.line(ev.node)}) unscales the gradients"
                ),
                [(ev.node, "scaler.step() that unscales")],
                note=lambda d: (
                    "scaler.step() divides the gradients by the loss scale, so every update is scale x too small "
                    "and float16 gradients can underflow (measured, CPU float16 autocast, torch 2.13: applied "
                    "gradients 1.5e-05 x the true ones). Use scaler.scale(loss).backward() (or pass "
                    "scaler.scale(gradient) to backward())."
                ),
                at=bw, related_at=(ev,),
            )


@register
class ScalerStepWithoutUpdate(Rule):
    """LC604: ``scaler.step(O)`` in a loop runs while, on some path with ``O``'s state known, the
    scaler has already stepped ``O`` since its last ``update()``; reported on that earlier
    step. The paths are those on which the scaler's calls complete: no ``except`` arm is
    entered from a ``scaler.step()``/``scaler.update()`` that raised
    (:attr:`~loopcheck.engine.dataflow.Machine.own_events_complete`; see ``rules/LC604.md``)."""

    info = INFOS["LC604"]

    def check(self, unit: Unit) -> Iterable[Report]:
        reported = set()
        for opt in scaled_optimizers(unit):
            for ev in unit.of_kind("scaler_step"):
                if ev.extra.get("optimizer") != opt or not ev.ctx.loops:
                    continue
                for s in scaling_states(unit, opt, ev):
                    prev = s.scaler_step
                    if prev is None or id(prev) in reported or s.phase == "unknown":
                        continue
                    reported.add(id(prev))
                    yield self._report(prev, ev)

    def _report(self, prev: Event, nxt: Event) -> Report:
        loop = prev.ctx.loops[-1] if prev.ctx.loops else nxt.ctx.loops[-1]
        return Report(
            self.info.code, prev.node,
            lambda d: (
                f"{d.call(prev.node)} runs again on the next iteration without scaler.update() in between"
                if prev is nxt else
                f"{d.call(prev.node)} is not followed by scaler.update() before {d.call(nxt.node)} "
                f"(line {d.line(nxt.node)}) runs again"
            ),
            [(nxt.node, "the next scaler.step()"), (loop.node, "the loop")],
            note=lambda d: (
                "The second scaler.step() on the same optimizer raises RuntimeError (measured, CPU, torch 2.13: "
                "'step() has already been called since the last update()'), and the loss scale could never "
                "adapt. Call scaler.update() once per iteration, after the step."
            ),
            at=prev, related_at=(nxt, None),
        )


@register
class UnscaleMisplaced(Rule):
    """LC605: ``scaler.unscale_(O)`` runs, with ``O``'s state known and not from an unscaled-loss
    backward on every path, while on some path the scaler has already unscaled ``O`` since its
    last ``update()``, or while on every path ``scaler.step(O)`` ran with no backward since
    (see ``rules/LC605.md``)."""

    info = INFOS["LC605"]

    def check(self, unit: Unit) -> Iterable[Report]:
        for opt in scaled_optimizers(unit):
            for ev in unit.of_kind("unscale"):
                if ev.extra.get("optimizer") != opt:
                    continue
                states = scaling_states(unit, opt, ev)
                if not states or any(s.phase in ("unknown", "plain") for s in states):
                    continue
                twice = [s for s in states if s.unscale is not None]
                if twice:
                    yield self._twice(ev, twice[0].unscale)
                elif all(s.phase == "none" and s.last_step is not None for s in states):
                    prev = next(s.last_step for s in states)
                    yield self._after_step(ev, prev, updated=all(s.scaler_step is None for s in states))

    def _twice(self, ev: Event, prev: Event) -> Report:
        again = prev is ev
        return Report(
            self.info.code, ev.node,
            lambda d: (
                f"{d.call(ev.node)} runs again on the next iteration before scaler.update(): GradScaler raises"
                if again else
                f"{d.call(ev.node)} runs a second time after {d.call(prev.node)} (line {d.line(prev.node)}) "
                "before scaler.update()"
            ),
            [] if again else [(prev.node, "the first unscale_()")],
            note=lambda d: (
                "GradScaler allows one unscale_() per optimizer between updates and raises RuntimeError "
                "('unscale_() has already been called on this optimizer since the last update()')."
                + (" Unscale (and clip) only on the iterations that step." if again else "")
            ),
            at=ev, related_at=() if again else (prev,),
        )

    def _after_step(self, ev: Event, prev: Event, updated: bool) -> Report:
        return Report(
            self.info.code, ev.node,
            lambda d: (
                f"{d.call(ev.node)} runs after {d.call(prev.node)} (line {d.line(prev.node)}): "
                + ("the next step applies still-scaled gradients" if updated else "GradScaler raises")
            ),
            [(prev.node, "scaler.step() that already ran")],
            note=lambda d: (
                ("GradScaler counts the next iteration's gradients as already unscaled, so the next "
                 "scaler.step() applies them multiplied by the loss scale (measured, CPU float16 autocast, "
                 "torch 2.13: gradients applied 65536x too large). "
                 if updated else
                 "unscale_() after scaler.step() and before scaler.update() raises RuntimeError. ")
                + "Unscale between backward() and scaler.step()."
            ),
            at=ev, related_at=(prev,),
        )
