"""Gradient-accumulation rules (LC106–LC107): what runs per micro-step and what per step.

Knowledge: with accumulation, ``backward()`` runs on every micro-batch and adds to ``.grad``;
``optimizer.step()`` runs once every N micro-batches, under a condition (``if (i + 1) % N == 0``,
``if accelerator.sync_gradients``) or after an inner loop of N micro-batches. Clipping belongs
with the step: "Gradient clipping must also happen after accumulation and before the optimizer
step" (seeds/training-loop-engineering.md, Q2); diffusers fixed ``accelerator.clip_grad_norm_``
on every micro-step (huggingface/diffusers#686). A step inside the inner loop steps every
micro-batch, so nothing accumulates.
"""

from __future__ import annotations

import re
from typing import Iterable, NamedTuple

import libcst as cst

from loopcheck.engine.dataflow import Machine
from loopcheck.engine.events import Event
from loopcheck.engine.ir import Assign, Call, If, LoopInfo, parts, walk_events
from loopcheck.engine.names import dotted_name
from loopcheck.engine.unit import Unit
from loopcheck.engine.accumulation import accumulate_item, syncs_every_step
from loopcheck.engine.builder import literal_value
from loopcheck.engine.settings import setting_value
from loopcheck.engine.values import definitions
from loopcheck.engine.walk import names_in, walk
from loopcheck.findings import Report
from loopcheck.catalog import INFOS
from loopcheck.rules.base import Rule, register
from loopcheck.rules.gradients import (
    ACCUMULATION_TEST, active_optimizers, reaches, rebinding_loops, touches, params_known,
)

#: Names of an accumulation count: ``accum_steps``, ``gradient_accumulation_steps``, ``micro_batches``.
ACCUM_NAME = re.compile(r"(accum|micro|grad_acc|update_freq|chunks)", re.I)


def _code(node: cst.CSTNode) -> str:
    return cst.Module([]).code_for_node(node)


def _short(node: cst.CSTNode) -> str:
    """``clip_grad_norm_()`` for ``torch.nn.utils.clip_grad_norm_(...)``."""
    func = node.func if isinstance(node, cst.Call) else None
    name = func.attr.value if isinstance(func, cst.Attribute) else func.value if isinstance(func, cst.Name) else "clip"
    return f"{name}()"


def accumulation_if(ev: Event) -> cst.CSTNode | None:
    """The gradient-accumulation ``if`` around an event inside its innermost loop, if any."""
    for cond in ev.ctx.conds:
        test = getattr(cond, "test", None)
        if test is not None and ACCUMULATION_TEST.search(_code(test)):
            return cond
    return None


def accumulate_block(unit: Unit, ev: Event) -> cst.WithItem | None:
    """The ``accelerator.accumulate(model)`` item of the ``with`` block around an event (in its
    function), if any (:func:`~loopcheck.engine.accumulation.accumulate_item`)."""
    return accumulate_item(unit, ev.node)


def every_micro_step(unit: Unit, test: cst.BaseExpression, arm: bool = True) -> bool:
    """Whether the arm ``arm`` (``True``: the body, ``False``: the ``else``) of an accumulation
    ``if`` on ``test`` runs on every micro-step: the test is fixed on every run
    (:func:`modulo_one_truth`) and selects that arm."""
    return modulo_one_truth(unit, test) is arm


def modulo_one_truth(unit: Unit, test: cst.BaseExpression) -> bool | None:
    """The truth of an accumulation test on every run, when it compares ``i % k`` with 0 and
    ``k`` is 1 on every run (:func:`~loopcheck.engine.settings.setting_value`: a literal, an
    argparse option left at its ``default=1``, a class attribute ``Config.k = 1`` read on the
    class or an instance, a dict entry built from one): any integer modulo 1 is 0, so
    ``i % k == 0`` and ``not i % k`` are ``True``, ``i % k != 0`` and ``i % k`` are ``False``.
    ``None`` when the test is of another form or ``k`` is not known to be 1.

    Args:
        unit: the :class:`~loopcheck.engine.unit.Unit` whose code holds ``test``.
        test: the test of an ``if``.
    """
    negated = False
    while True:
        while getattr(test, "lpar", None):
            test = test.with_changes(lpar=[], rpar=[])
        if type(test) is cst.UnaryOperation and type(test.operator) is cst.Not:
            negated, test = not negated, test.expression
        else:
            break
    truth: bool
    if type(test) is cst.Comparison and len(test.comparisons) == 1 \
            and type(test.comparisons[0].operator) in (cst.Equal, cst.NotEqual):
        left, right = test.left, test.comparisons[0].comparator
        if literal_value(right) == 0:
            modulo = left
        elif literal_value(left) == 0:
            modulo = right
        else:
            return None
        truth = type(test.comparisons[0].operator) is cst.Equal  # 0 == 0; 0 != 0 is False
    else:
        modulo, truth = test, False  # ``i % k`` alone: 0, false
    while getattr(modulo, "lpar", None):
        modulo = modulo.with_changes(lpar=[], rpar=[])
    if type(modulo) is not cst.BinaryOperation or type(modulo.operator) is not cst.Modulo:
        return None
    count = setting_value(unit, modulo.right)
    if type(count) is not int or count != 1:
        return None
    return truth is not negated


def arm_of(unit: Unit, cond: cst.CSTNode, ev: Event) -> bool | None:
    """Which arm of the ``if`` statement ``cond`` holds ``ev`` in the unit's IR: ``True`` its
    body, ``False`` its ``else`` (or an ``elif`` under it), ``None`` when neither (the IR has no
    ``If`` of ``cond`` around the event's call). Read from the IR, not the text, so that an
    event of a function called in an arm is in that arm."""
    table = unit.cached("accumulation_arms", lambda: _arms(unit.ir))
    return table.get((id(cond), id(ev.raw)))


def _arms(ir) -> dict:
    """``(id(cst If), id(raw event)) -> arm`` for every event under an ``If`` of the IR."""
    out: dict = {}
    stack = [ir]
    while stack:
        node = stack.pop()
        if type(node) is If:
            for arm, part in ((True, node.body), (False, node.orelse)):
                for raw in walk_events(part):
                    out.setdefault((id(node.node), id(raw)), arm)
        stack.extend(parts(node))
    return out


# -- LC106 ----------------------------------------------------------------------------------


class ClippedSums(NamedTuple):
    """What the clips left in one optimizer's gradients on a path (:class:`ClippedSumsMachine`).

    clipped: the clip events that scaled the gradients ``.grad`` holds now, since they were
        last cleared.
    partial: those of them after which a ``backward()`` that reaches the optimizer's parameters
        added to the scaled gradients: ``.grad`` holds a clipped partial sum plus an unclipped
        gradient, which a step would apply (LC106's harm).
    """

    clipped: frozenset = frozenset()
    partial: frozenset = frozenset()


class ClippedSumsMachine(Machine):
    """Whether the gradients a clip scaled are still in optimizer ``opt``'s ``.grad`` when a
    later ``backward()`` adds to them, and then when a step runs (state :class:`ClippedSums`).

    A clip concerning ``opt`` (:func:`~loopcheck.rules.gradients.touches`) adds itself to
    ``clipped``; a backward that can reach ``opt``'s parameters
    (:func:`~loopcheck.rules.gradients.reaches`) adds ``clipped`` to ``partial``; a
    ``zero_grad`` established to clear all of ``opt``'s gradients (of ``opt``, of a model
    holding all its parameters, ``zero_grad_all``) empties both: the scaled sums are thrown
    away. Anything else keeps the state (a ``zero_grad`` of a model whose share of ``opt``'s
    parameters is not known, a partial clear, a ``.grad`` written by hand, a call that may
    change gradients): a call not established to discard the scaled gradients does not
    forget them. ``step()`` leaves ``.grad`` as it is. Read at ``opt``'s steps
    (:func:`clip_reaches_step`)."""

    kinds = frozenset({"backward", "clip", "step", "zero_grad", "zero_grad_model", "zero_grad_all"})
    own_events_complete = True

    def __init__(self, unit: Unit, opt: str) -> None:
        self.unit = unit
        self.opt = opt
        self.subjects = unit.roles.names_of(opt)
        self._rebinding = rebinding_loops(unit, opt)

    def initial(self) -> ClippedSums:
        return ClippedSums()

    def transfer(self, s: ClippedSums, ev: Event) -> ClippedSums:
        k = ev.kind
        if k == "clip":
            if not ev.extra.get("measure_only") and touches(self.unit, self.opt, ev):
                return s._replace(clipped=s.clipped | {ev})
            return s
        if k == "backward":
            if s.clipped <= s.partial or not reaches(self.unit, self.opt, ev):
                return s
            return s._replace(partial=s.partial | s.clipped)
        if k == "zero_grad_all":
            return ClippedSums()
        if k in ("zero_grad", "zero_grad_model") and touches(self.unit, self.opt, ev):
            if k == "zero_grad_model" and not params_known(self.unit, self.opt, None):
                return s  # a model's zero_grad may clear the optimizer's gradients or other ones
            return ClippedSums()
        return s

    def acts(self, s: ClippedSums, ev: Event) -> bool:
        """A backward that can reach the optimizer's parameters adds to its gradients, whatever
        the state says of the clipped sums."""
        return ev.kind == "backward" and reaches(self.unit, self.opt, ev)

    def rebinds(self, loop) -> bool:
        # ``for opt in optimizers: opt.step()``: each iteration is another optimizer's
        return id(loop) in self._rebinding


def clip_reaches_step(unit: Unit, clip: Event, opt: str) -> bool:
    """Whether the gradients ``clip`` scaled can reach a ``step()`` of optimizer ``opt`` (any
    in the unit) with a later backward's gradient added to them, on some path of the unit's
    dataflow (:class:`ClippedSumsMachine`): ``False`` when on every path from the clip to a
    step of ``opt`` either no backward reaching ``opt`` runs in between, or a ``zero_grad``
    clearing all of ``opt``'s gradients runs after the clip and before that backward (the
    scaled partial sums are thrown away, and the step applies the gradients of backwards run
    after the clear, whatever the clip did).

    Args:
        unit: the :class:`~loopcheck.engine.unit.Unit` of the clip.
        clip: a ``clip`` event of the unit.
        opt: the canonical symbol of an optimizer that steps in the unit.
    """
    flow = unit.flow(("clipped sums", opt), lambda: ClippedSumsMachine(unit, opt))
    return any(clip in state.partial for step in unit.of_subject(opt, "step") for state in flow.states(step))



@register
class ClipOnEveryMicroStep(Rule):
    """LC106 clip-or-unscale-on-every-micro-step.

    Reported when (structure, not paths): a clip (not a measurement) in loop ``L`` follows, in
    program order, a backward whose innermost loop is ``L``; the clip is under no accumulation
    ``if``; and every step in ``L`` of the stepping optimizers it concerns is under an accumulation
    ``if`` or in the same ``accelerator.accumulate()`` ``with`` item as the clip, of an accelerator
    whose accumulation count is not established to be 1 (``Accelerator()``,
    ``gradient_accumulation_steps=1``, or a name bound once to 1: every micro-step syncs); and, along
    paths, the partial sums the clip scaled reach a step of such an optimizer with a later backward's
    gradient added (:func:`clip_reaches_step`): silent when a ``zero_grad`` throws them away on
    every path first. Known limit: an
    accumulation ``if`` is one whose test text matches ``ACCUMULATION_TEST`` (``%``, ``accum``,
    ``sync_grad``, ...), and an untyped receiver named ``*accelerator*``/``*fabric*`` is taken for
    an Accelerator (see ``rules/LC106.md``)."""

    info = INFOS["LC106"]

    def check(self, unit: Unit) -> Iterable[Report]:
        for clip in unit.of_kind("clip"):
            if clip.extra.get("measure_only") or not clip.ctx.loops or accumulation_if(clip) is not None:
                continue
            loop = clip.ctx.loops[-1]
            bw = next((b for b in unit.in_loop(loop, "backward") if unit.order(b) < unit.order(clip)), None)
            if bw is None:
                continue
            found = self._conditional_step(unit, clip, loop)
            if found is None:
                continue
            step, why = found
            if not any(clip_reaches_step(unit, clip, opt) for opt in active_optimizers(unit)
                       if touches(unit, opt, clip)):
                # on every path a zero_grad throws the scaled partial sums away before the
                # backward that the step applies: what the clip did on a micro-step never reaches it
                continue
            yield self._report(clip, step, bw, why)

    @staticmethod
    def _conditional_step(unit: Unit, clip: Event, loop: LoopInfo) -> tuple[Event, str] | None:
        """The step of a clipped optimizer in the same loop that only runs on some micro-steps:
        under an accumulation ``if`` that the clip is not under, or (Accelerate) in an
        ``accumulate()`` block, where the prepared optimizer skips non-sync micro-steps, of an
        accelerator not established to sync on every one (a count of 1:
        :func:`~loopcheck.engine.accumulation.syncs_every_step`)."""
        steps = []
        for opt in active_optimizers(unit):
            if not touches(unit, opt, clip):
                continue
            steps += [s for s in unit.in_loop(loop, "step") if s.subject == opt]
        if not steps:
            return None
        block = accumulate_block(unit, clip)
        if block is not None and syncs_every_step(unit, block):
            block = None  # an accelerator whose count is 1: every micro-step syncs and steps
        out = None
        for s in steps:
            cond = accumulation_if(s)
            arm = arm_of(unit, cond, s) if cond is not None else None
            if arm is not None and every_micro_step(unit, cond.test, arm):
                return None  # ``(step + 1) % k == 0`` with k 1 on every run: the step follows every clip
            if cond is not None and cond not in clip.ctx.conds:
                out = out or (s, "if")
            elif cond is None and block is not None and accumulate_block(unit, s) is block:
                out = out or (s, "accumulate")
            else:
                return None  # a step on every micro-step too: not accumulation
        return out

    def _report(self, clip: Event, step: Event, bw: Event, why: str) -> Report:
        return Report(
            self.info.code, clip.node,
            lambda d: (
                f"{_short(clip.node)} runs on every micro-step but {d.call(step.node)} at line {d.line(step.node)} "
                "does not: it clips partial sums"
            ),
            [(step.node, "the step, once per accumulation cycle"), (bw.node, "backward() on every micro-step")],
            lambda d: (
                "Each clip scales the gradients accumulated so far and the next backward() adds unclipped ones, so "
                "the applied gradient is neither the sum of the micro-batches' gradients nor that sum clipped: "
                "earlier micro-batches are shrunk more than later ones (measured: the applied gradient differed "
                "from the clipped sum of its micro-batches' gradients by 0.71 of its norm, median over 32 steps), "
                "and the clip costs a "
                "norm over all parameters on every micro-step (an all-reduce under FSDP/DeepSpeed). Clip once, "
                + ("inside the accumulation `if`, just before the step."
                   if why == "if" else "under `if accelerator.sync_gradients:`, just before the step.")
            ),
        )


# -- LC107 ----------------------------------------------------------------------------------


def _iter_node(loop: LoopInfo) -> cst.CSTNode | None:
    node = loop.node
    if isinstance(node, cst.For):
        return node.iter
    return None


def _divisors(unit: Unit, bw: Event) -> set[str]:
    """Names the backpropagated loss is divided by (``loss / accum_steps``,
    ``loss * (1 / n)``, ``loss /= n``), in the backward expression or the loss's definitions."""
    out: set[str] = set()

    def scan(expr: cst.CSTNode | None) -> None:
        if expr is None:
            return
        for n in walk(expr):
            if isinstance(n, cst.BinaryOperation):
                if isinstance(n.operator, cst.Divide):
                    out.update(names_in(n.right))
                elif isinstance(n.operator, cst.Multiply):
                    for side in (n.left, n.right):
                        if isinstance(side, cst.BinaryOperation) and isinstance(side.operator, cst.Divide):
                            out.update(names_in(side.right))

    raw = bw.raw
    if isinstance(raw, Call) and isinstance(raw.node.func, cst.Attribute):
        scan(raw.node.func.value)
    loss = bw.subject
    if loss:
        for d in definitions(unit).get(loss, ()):
            if isinstance(d, Assign) and d.op == "=":
                scan(d.value)
        for raw2 in _assigns_to(unit, loss):
            if raw2.op == "DivideAssign":
                out.update(names_in(raw2.value))
    return out


def _assigns_to(unit: Unit, sym: str) -> list[Assign]:
    from loopcheck.engine.ir import walk_events

    return [r for r in walk_events(unit.ir) if isinstance(r, Assign) and r.target == sym]


def _accumulation_loop(unit: Unit, loop: LoopInfo, bw: Event) -> bool:
    """Whether ``loop`` is an inner loop over the micro-batches of one step: it iterates
    ``range(N)`` or chunks of a batch, and the loss backpropagated in it is divided by N (or by
    a count named like one: ``accum_steps``)."""
    it = _iter_node(loop)
    if it is None:
        return False
    text = _code(it)
    ranged = "range" in loop.iter_calls or re.search(r"\.(chunk|split)\(|torch\.(chunk|split)\(", text)
    if not ranged:
        return False
    divisors = _divisors(unit, bw)
    if not divisors:
        return False
    iter_names = names_in(it)
    return bool(divisors & iter_names) or any(ACCUM_NAME.search(n) for n in divisors)


@register
class StepInsideAccumulationLoop(Rule):
    """LC107 step-inside-accumulation-loop.

    Reported when (structure, not paths): an ``optimizer.step()`` without closure in two or more
    loops, under no ``if`` in its innermost loop ``L``, where ``L`` is a ``for`` over ``range(...)``
    or over ``.chunk(``/``.split(`` of a tensor, and the first backward in ``L`` backpropagates a
    loss divided (in the backward expression, a ``=`` definition of the loss, or ``loss /= n``) by a
    name that is in ``L``'s iterable or matches ``ACCUM_NAME``. One finding per loop. Known limit:
    the divisor is recognised as an accumulation count by its name when it is not in the iterable
    (see ``rules/LC107.md``)."""

    info = INFOS["LC107"]

    def check(self, unit: Unit) -> Iterable[Report]:
        reported: set[int] = set()
        for step in unit.of_kind("step"):
            if len(step.ctx.loops) < 2 or step.ctx.conds or step.extra.get("closure"):
                continue
            loop = step.ctx.loops[-1]
            if id(loop) in reported:
                continue
            bw = next(iter(unit.in_loop(loop, "backward")), None)
            if bw is None or not _accumulation_loop(unit, loop, bw):
                continue
            reported.add(id(loop))
            yield self._report(step, bw, loop)

    def _report(self, step: Event, bw: Event, loop: LoopInfo) -> Report:
        header = _iter_node(loop) or loop.node
        return Report(
            self.info.code, step.node,
            lambda d: (
                f"{d.call(step.node)} runs on every pass of the micro-batch loop at line {d.line(header)}: "
                "nothing accumulates"
            ),
            [(header, "the loop over micro-batches"), (bw.node, "backward() of the divided loss")],
            lambda d: (
                "The loss is divided by the number of micro-batches so that their gradients add up to one batch's "
                "gradient, but the step (and zero_grad) inside the loop applies each micro-batch's divided gradient "
                "on its own: N times more steps, each on a gradient N times too small and N times noisier "
                "(measured: 4 steps per batch, each applying 1 backward pass). Move step() and zero_grad() after "
                "the inner loop."
            ),
        )
