"""LR-scheduler rules (LC201–LC203).

Knowledge: ``torch.optim.lr_scheduler`` docs — StepLR, MultiStepLR, ExponentialLR,
CosineAnnealingLR, PolynomialLR, LinearLR and ConstantLR count their period in calls to
``step()``, which the docs' examples make once per epoch; OneCycleLR and CyclicLR are
stepped per batch; ReduceLROnPlateau.step() takes the metric. Since PyTorch 1.1 (knowledge
``[since] scheduler_step_after_optimizer``), ``scheduler.step()`` must follow
``optimizer.step()``, otherwise the schedule runs one step ahead (PyTorch warns once at
runtime): its first value is skipped when positions 0 and 1 differ, each decay comes one step
early when they agree (knowledge ``first_change``), nothing moves for a constant schedule
(``constant_when``); before 1.1 the documented order was ``scheduler.step()`` at the top of the
epoch.
"""

from __future__ import annotations

from typing import Iterable

from loopcheck.engine.dataflow import Machine
from loopcheck.engine.events import Event
from loopcheck.engine.ir import LoopInfo
from loopcheck.engine.knowledge import knowledge
from loopcheck.engine.roles import LOADER_NAME, ScheduleStart, SchedulerInfo, last
from loopcheck.engine.settings import range_iterations
from loopcheck.engine.unit import Unit
from loopcheck.engine.values import definitions, loops as all_loops, may_bind_attribute, narrowing_tests, written_for_before
from loopcheck.findings import Report
from loopcheck.catalog import INFOS
from loopcheck.rules.base import Rule, register
from loopcheck.rules.gradients import applies_no_gradient, rebinding_loops


def is_loader_loop(unit: Unit, loop: LoopInfo) -> bool:
    """A loop over a data loader: its iterable names a DataLoader or a ``*loader*`` symbol."""
    for name in loop.iter_names:
        base = unit.roles.canon(name)
        if base in unit.roles.loaders or LOADER_NAME.search(last(name)):
            return True
    return False


def steps_each_iteration(unit: Unit, loop: LoopInfo) -> bool:
    """Whether an ``optimizer.step()`` runs in each iteration of ``loop`` itself: its innermost
    loop is ``loop``, or the loops between them go over optimizers (``for opt in optimizers:
    opt.step()``). A step inside another loop within ``loop`` (the batch loop of a
    ``train_epoch()`` the epoch loop calls) runs many times per iteration of ``loop``."""
    node_of: dict[int, int] | None = None
    for step in unit.of_kind("step"):
        loops = step.ctx.loops
        at = next((i for i, li in enumerate(loops) if li is loop), None)
        if at is None:
            continue
        inner = loops[at + 1:]
        if not inner:
            return True
        if node_of is None:
            node_of = {id(node.info): id(node) for node, _around in all_loops(unit)}
        over_optimizers = rebinding_loops(unit, step.subject)
        if all(node_of.get(id(li)) in over_optimizers for li in inner):
            return True
    return False


def schedule_loops(info: SchedulerInfo, ev: Event) -> tuple[LoopInfo, ...]:
    """The loops of ``ev`` that the scheduler outlives: those around its ``step()`` that do not
    also hold one of its constructions. A loop that builds the scheduler anew in each iteration
    (one fine-tuning run per task, each with its own optimizer and schedule) starts a fresh
    schedule every time: it is not an epoch loop of that schedule."""
    building = {id(li) for c in (info.ctor, *info.others) if c is not None for li in c.ctx.loops}
    return tuple(li for li in ev.ctx.loops if id(li) not in building)


def batch_loop(unit: Unit, ev: Event, loops: tuple[LoopInfo, ...] | None = None) -> LoopInfo | None:
    """The batch loop ``ev`` runs in directly, or ``None``.

    A batch loop is the innermost of ``loops`` (default: all loops of the event; LC201 passes
    the loops the scheduler outlives, :func:`schedule_loops`) when it iterates a data loader,
    or when it sits inside another of them (the epoch loop) and steps an optimizer in each of
    its iterations (:func:`steps_each_iteration`).
    """
    loops = ev.ctx.loops if loops is None else loops
    if not loops:
        return None
    loop = loops[-1]
    if is_loader_loop(unit, loop):
        return loop
    if len(loops) >= 2 and steps_each_iteration(unit, loop):
        return loop
    return None


def changes_after_run(info: SchedulerInfo, epochs: int | None) -> bool:
    """Whether, counted in epochs, the schedule would never change the LR of any epoch in a run
    of ``epochs`` epochs (the number of iterations of the loop around the batch loop, when run
    constants fix it: :attr:`~loopcheck.engine.ir.LoopInfo.count`): every construction's first
    change of the LR comes at a known position (knowledge ``first_change``, a literal or a run
    constant: ``StepLR(step_size=10000)``, the smallest milestone of a ``MultiStepLR``) of
    beyond ``epochs``, the most positions one step per epoch reaches: such a period can only
    count steps. A change at position ``epochs`` exactly (``StepLR(step_size=2)`` in a 2-epoch
    run) is not counted: no epoch would train at it, but a schedule that short is as likely an
    epoch schedule of a short run as a step schedule, so the finding stays."""
    if epochs is None or not info.starts:
        return False
    return all(s.kind == "held" and s.at is not None and s.at > epochs for s in info.starts)


def trains_nothing(unit: Unit, info: SchedulerInfo) -> bool:
    """Whether it is established that the scheduler's optimizer applies no gradient in any of
    its steps (:func:`~loopcheck.rules.gradients.applies_no_gradient`: nothing in the program
    may write a gradient, no backward, no ``.grad`` written in any form, no unknown method of an
    unknown object, and none reaches its parameters before any step, a script that only steps
    it to plot the LR curve): the LRs
    the schedule sets are used by no update, so where they fall does not change training.
    ``False`` when the optimizer is not known."""
    opt = unit.roles.canon(info.optimizer) if info.optimizer else None
    return opt is not None and applies_no_gradient(unit, opt)


def in_epoch_function(loop: LoopInfo) -> bool:
    """A loop in a function named for one epoch (``train_one_epoch``, ``run_epoch``): its
    caller runs the epochs."""
    return loop.function is not None and "epoch" in loop.function.lower()


@register
class EpochSchedulerPerBatch(Rule):
    """LC201 epoch-scheduler-stepped-per-batch.

    Reported when (construction and placement, not paths): ``scheduler.step()`` without argument,
    for a scheduler whose constructions the knowledge types ``schedule = "epoch"`` with a period
    that is absent, a number, or read as epochs (:func:`~loopcheck.engine.roles.period_unit`), whose
    innermost loop is a batch loop (:func:`batch_loop`) among the loops the scheduler outlives
    (:func:`schedule_loops`: a loop holding its construction starts a fresh schedule each
    iteration); with a numeric period also in two such loops or
    in a function named ``*epoch*``; and not under an ``if`` unless some optimizer step is under the
    same ``if`` statements in the same loops. Silent when the loop around the batch loop runs a
    number of epochs the code fixes (:func:`~loopcheck.engine.settings.range_iterations`: run
    constants, a constant imported from a module of the project, an argparse default) and,
    read in epochs, every construction's first change comes at that number or after
    (:func:`changes_after_run`): stepped once per epoch the schedule would never change the LR
    of any epoch, so its period counts steps (unknown either number: reported); and when no step of the
    scheduler's optimizer is established to apply a gradient (:func:`trains_nothing`: a loop that
    steps both only to plot the LR curve, in a program where nothing may write a gradient: no
    backward, no ``.grad`` written in any form, no unknown method of an unknown object). Known limits: the period's unit is read from names
    (``STEP_WORDS``/``EPOCH_WORDS``), a loader loop may be recognised by ``LOADER_NAME``, an epoch
    function by ``epoch`` in its name (see ``rules/LC201.md``)."""

    info = INFOS["LC201"]

    def check(self, unit: Unit) -> Iterable[Report]:
        for ev in unit.of_kind("sched_step"):
            info = unit.roles.schedulers.get(ev.subject)
            if info is None or info.kind != "epoch" or ev.extra.get("nargs"):
                continue
            if info.unit not in ("epochs", "literal"):
                continue
            loops = schedule_loops(info, ev)
            if not loops or loops[-1] is not ev.ctx.loops[-1]:
                continue  # built anew in the loop that steps it: no schedule outlives one pass
            loop = batch_loop(unit, ev, loops)
            if loop is None or (info.unit == "literal" and len(loops) < 2 and not in_epoch_function(loop)):
                continue
            if len(loops) >= 2 and changes_after_run(info, range_iterations(unit, loops[-2])):
                continue  # read in epochs, it would never change the LR of this run: it counts steps
            if ev.ctx.conds and not self._with_step(unit, ev):
                continue
            if trains_nothing(unit, info):
                continue  # no step applies a gradient: no update runs at the LR this schedule sets
            name = (info.qualname or "scheduler").rpartition(".")[2]
            ctor = info.ctor
            related = [(loop.node, "the batch loop")]
            if ctor is not None:
                related.insert(0, (ctor.node, f"{name} counts its period in epochs"))
            yield Report(
                self.info.code, ev.node,
                lambda d, ev=ev, ctor=ctor, name=name: (
                    f"{d.call(ev.node)} runs once per batch, but {name}"
                    + (f" (line {d.line(ctor.node)})" if ctor is not None else "")
                    + " counts its period in epochs"
                ),
                related,
                note=lambda d, loop=loop: (
                    f"The schedule advances once per batch of the loop at line {d.line(loop.node)}, len(loader) times "
                    "per epoch (measured, CPU, torch 2.13: 8 scheduler steps per epoch, the LR schedule used up "
                    "in the first epoch). Step it once per epoch, after the batch loop."
                ),
                at=ev,
            )

    @staticmethod
    def _with_step(unit: Unit, ev: Event) -> bool:
        """Stepped under the same condition as optimizer.step() (gradient accumulation)."""
        return any(s.ctx.conds == ev.ctx.conds and s.ctx.loops == ev.ctx.loops for s in unit.of_kind("step"))


#: :class:`_SteppedMachine`'s state where the optimizer has not stepped since it was built and
#: a pass of the loop it watches has ended since.
IDLE = "idle"


class _SteppedMachine(Machine):
    """Whether an optimizer has stepped since it was built: ``True``, ``False``, ``None``
    (unknown), or :data:`IDLE` where it has not and, since it was built, a pass of ``loop``
    (the innermost loop of a ``scheduler.step()``) has ended: the whole pass stepped it on no
    path (every batch of the epoch left by a ``continue`` before ``optimizer.step()``), so a
    ``scheduler.step()`` at that pass's end, where LC202's fix puts it, would have come before
    the optimizer's first step as well."""

    kinds = frozenset({'opt_build', 'step', 'havoc', 'opt_load_state', 'sched_step'})
    only_own_events = True

    def __init__(self, opt: str, names: frozenset[str], loop: LoopInfo | None = None) -> None:
        self.opt = opt
        self.subjects = names  # the optimizer's names (aliases included)
        self.loop = loop

    def initial(self):
        return None

    def goes_round(self, s, loop):
        return IDLE if s is False and loop.info is self.loop else s

    def transfer(self, s, ev: Event):
        if ev.subject != self.opt:
            return s
        if ev.kind == "opt_build":
            return False
        if ev.kind == "step":
            return True
        if ev.kind in ("havoc", "opt_load_state"):
            return None
        return s


#: :class:`_TrainsOnMachine`'s states: the ``scheduler.step()`` it follows has run (``ARMED``),
#: then a step of its optimizer (``STEPPED``), then the pass of the call's loop ended (``ROUND``).
ARMED, STEPPED, ROUND = "armed", "stepped", "round"


class _TrainsOnMachine(Machine):
    """Whether training goes on past an early ``scheduler.step()`` (the event ``ev``): a path
    that ran it, then a step of the optimizer ``O`` (the update its LR is for), and then ended
    the pass of ``loop``, the call's innermost loop, going round to the next (:data:`ROUND`), or
    reached the unit's end (:data:`STEPPED` in :attr:`Flow.exit`). A path that ends in an
    exception before (``loss.data[0]`` of a 0-dim loss after the first ``optimizer.step()``,
    :mod:`loopcheck.engine.zero_dim`) follows no schedule: the run dies on its first batch."""

    kinds = frozenset({'step', 'sched_step'})

    def __init__(self, ev: Event, opt: str, names: frozenset[str], loop: LoopInfo) -> None:
        self.ev = ev
        self.opt = opt
        self.subjects = names
        self.loop = loop

    def initial(self):
        return None

    def transfer(self, s, ev: Event):
        if ev is self.ev:
            return ARMED if s is None else s
        if s == ARMED and ev.kind == "step" and ev.subject == self.opt:
            return STEPPED
        return s

    def goes_round(self, s, loop):
        return ROUND if s == STEPPED and loop.info is self.loop else s


#: LC202's harm where positions 0 and 1 of the schedule give different LRs.
SKIPPED = "the first LR of the schedule is skipped"
#: LC202's harm where they may agree: the whole schedule shifted by one position.
AHEAD = "the schedule runs one step ahead"

#: The note of each harm (:func:`harm_of`).
_NOTES = {
    SKIPPED: (
        "The scheduler moves to its second value before the first update and PyTorch warns once "
        "(measured, CPU, torch 2.13: the first step used lr 0.025 instead of 0.05). Call it after "
        "optimizer.step()."
    ),
    AHEAD: (
        "The schedule runs one step ahead: every update uses the LR of the schedule's next position, so "
        "each change of the LR comes one step early, and PyTorch warns once (measured, CPU, torch 2.13: "
        "StepLR(step_size=3) decayed from epoch index 2 instead of 3). Call it after optimizer.step()."
    ),
}


def harm_of(starts: list[ScheduleStart]) -> tuple[str, str] | None:
    """What stepping a scheduler before its optimizer does, from how each of its constructions'
    schedules begins (:func:`~loopcheck.engine.roles.schedule_start`): ``(kind, text)``, kind
    :data:`SKIPPED` or :data:`AHEAD`, text for the message; ``None`` when every construction is
    known to keep the LR constant (nothing is skipped or shifted) or to be of a class of the
    project with a ``step()`` of its own (kind ``"own"``: what stepping it first does is that
    code's, not established).

    Positions 0 and 1 differ (or nothing establishes otherwise): the first LR is skipped. They
    agree and the LR changes later (StepLR with ``step_size`` 2 or more, a MultiStepLR whose
    first milestone is 2 or more): the schedule runs one step ahead, each change one step early,
    at position N-1 instead of N when a literal gives N. A constant construction, or one of a
    class with its own ``step()``, among others (an ``if``/``elif`` arm) is left out: the others
    are the harm."""
    live = [s for s in starts if s.kind not in ("constant", "own")]
    if starts and not live:
        return None
    kinds = {s.kind for s in live}
    if not live or kinds == {"changes"}:
        return SKIPPED, SKIPPED
    if "changes" in kinds:
        return AHEAD, AHEAD  # if/elif arms of both kinds: only the shift holds for both
    changes = {s.change for s in live}
    change = changes.pop() if len(changes) == 1 else "change"
    text = f"each {change} comes one step early"
    ats = {s.at for s in live}
    if len(ats) == 1 and None not in ats:
        at = ats.pop()
        text += f" (at step {at - 1} instead of {at})"
    return AHEAD, text


@register
class SchedulerBeforeOptimizerStep(Rule):
    """LC202 scheduler-step-before-optimizer-step.

    Reported when: ``scheduler.step()`` without argument, in a loop, for a scheduler built in the
    file (not ``ReduceLROnPlateau``) whose optimizer ``O`` is known, runs on some path on which ``O``
    was built in this unit and has not stepped since (:class:`_SteppedMachine`; unknown before a
    construction and after ``O``'s ``load_state_dict()``, an unknown method of ``O`` or an opaque call
    given ``O``), and a step of ``O`` follows in program order inside the call's innermost loop.
    A path on which a pass of that loop ended without stepping ``O`` since its construction
    (:data:`IDLE`) does not count: a step at the pass's end would have come first too. Some
    path must go on after the call to a step of ``O`` and then round that loop or to the unit's
    end (:class:`_TrainsOnMachine`): where each dies first (``loss.data[0]`` of a 0-dim loss,
    :mod:`loopcheck.engine.zero_dim`), no schedule is followed. The paths
    follow the loop's first pass (:attr:`~loopcheck.engine.ir.If.first_pass`: ``if epoch != 0:``
    in ``for epoch in range(n):`` is not entered on it; nor, by :attr:`~loopcheck.engine.ir.If.first_pass_given`,
    in ``for epoch in range(start, n):`` on a path that bound ``start = 0``). Inside an ``accelerator.accumulate()`` block the prepared optimizer's step, and the step of a
    scheduler the accelerator prepared, run only on a micro-step that syncs (lowered under ``if
    accelerator.sync_gradients:`` by :func:`~loopcheck.engine.accumulation.lower_accumulate_blocks`;
    knowledge ``returns.synced``): such a scheduler steps exactly when its optimizer does.
    Silent when ``O`` is not built in the unit, when no step of ``O`` is established to apply a
    gradient (:func:`~loopcheck.rules.gradients.applies_no_gradient`: the skipped LR is used by
    no update), for a scheduler of the project whose ``get_lr()``
    gives positions 0 and 1 the same value (``SchedulerInfo.same_first``: its position clamped
    with ``max(self.last_epoch, 1)``, so nothing is skipped), and for code established to be written for a
    PyTorch older than the version that began this order (knowledge ``[since]
    scheduler_step_after_optimizer``, 1.1; :func:`~loopcheck.engine.values.written_before`:
    ``Variable(x, volatile=True)``; or a project whose dependency files pin such a PyTorch:
    :func:`~loopcheck.engine.pins.pinned_before`), where stepping the scheduler first skips
    nothing. Silent, too, when every construction of the scheduler is established to keep the LR
    constant (knowledge ``constant_when``: a literal ``gamma=1``), or of a class of the project
    with a ``step()`` of its own, defined by it or a base of the project and not shown to hand
    over to torch's (:func:`~loopcheck.engine.roles.steps_on_its_own`): that step is the
    project's code, which may set the position from the optimizer's step count or be written to
    run before the update, and no skipped value is established. The message says the harm
    (:func:`harm_of`): the first LR skipped where positions 0 and 1 of the schedule differ (or
    nothing establishes otherwise), each decay one step early where they agree (knowledge
    ``first_change``: ``StepLR(step_size=3)``) (see ``rules/LC202.md``)."""

    info = INFOS["LC202"]

    def check(self, unit: Unit) -> Iterable[Report]:
        for ev in unit.of_kind("sched_step"):
            info = unit.roles.schedulers.get(ev.subject)
            if info is None or info.kind == "plateau" or info.same_first or not ev.ctx.loops:
                continue
            if ev.extra.get("nargs"):
                continue  # scheduler.step(epoch): the LR of that epoch, in closed form; nothing is skipped
            opt = unit.roles.canon(info.optimizer) if info.optimizer else None
            if opt is None:
                continue
            # (IDLE, not reported: a pass of the call's loop ended since the optimizer was built
            # without stepping it, which a step at the pass's end would not have fixed)
            loop = ev.ctx.loops[-1]
            flow = unit.flow(("stepped", opt, id(loop)),
                             lambda opt=opt, loop=loop: _SteppedMachine(opt, unit.roles.names_of(opt), loop))
            if False not in flow.states(ev):
                continue
            step = next(
                (s for s in unit.of_kind("step")
                 if s.subject == opt and unit.order(s) > unit.order(ev) and ev.ctx.loops[-1] in s.ctx.loops),
                None,
            )
            if step is None:
                continue
            if not self._trains_on(unit, ev, opt, loop):
                continue  # every path that steps the optimizer after it dies before the next pass
            if applies_no_gradient(unit, opt):
                continue  # no update runs at any LR of the schedule: none is skipped or shifted for training
            harm = harm_of(info.starts)
            if harm is None:
                continue  # the schedule never changes the LR: stepping it first shifts nothing
            if self._older_pytorch(unit):
                return  # written for a PyTorch whose schedulers expected this order
            yield Report(
                self.info.code, ev.node,
                lambda d, ev=ev, step=step, text=harm[1]: (
                    f"{d.call(ev.node)} runs before {d.call(step.node)} at line {d.line(step.node)}: {text}"
                ),
                [(step.node, "the optimizer step that should come first")],
                note=lambda d, kind=harm[0]: _NOTES[kind],
                at=ev, related_at=(step,),
            )

    @staticmethod
    def _trains_on(unit: Unit, ev: Event, opt: str, loop: LoopInfo) -> bool:
        """Whether some path runs ``ev``, then a step of ``opt``, and then goes round ``ev``'s
        innermost ``loop`` or reaches the unit's end (:class:`_TrainsOnMachine`): the schedule
        the early step shifts is followed by the training."""
        flow = unit.flow(("trains_on", opt, id(ev)),
                         lambda: _TrainsOnMachine(ev, opt, unit.roles.names_of(opt), loop))
        return ROUND in flow.states(ev) or STEPPED in flow.exit

    @staticmethod
    def _older_pytorch(unit: Unit) -> bool:
        """Whether the unit's code is established to be written for a PyTorch before the one
        where ``scheduler.step()`` began to belong after ``optimizer.step()``."""
        return written_for_before(unit, "scheduler_step_after_optimizer") is True


def _plateau_class(name: str) -> bool:
    """Whether the knowledge types class ``name`` (qualified) as a scheduler stepped with the
    value it monitors (``schedule = "plateau"``: ``ReduceLROnPlateau``)."""
    entry = knowledge().cls(name)
    returns = entry.ctor.returns if entry is not None else None
    return returns is not None and returns.get("schedule") == "plateau"


class _NotPlateauMachine(Machine):
    """For one scheduler: has the path found it to be no ``ReduceLROnPlateau``? ``True`` in
    the arm of an ``if`` whose test says it is an instance of none of some classes one of which
    the knowledge types ``schedule = "plateau"`` (``if isinstance(s, ReduceLROnPlateau):
    return ...``, then the rest of the function: :attr:`~loopcheck.engine.ir.If.not_instance`);
    ``False`` in the other arm of such a test (it is one), at the start, and after a
    construction of the scheduler (``sched_build``)."""

    kinds = frozenset({"sched_build", "sched_step"})

    def __init__(self, unit: Unit, sched: str) -> None:
        self.unit, self.sched = unit, sched

    def initial(self) -> bool:
        return False

    def transfer(self, s: bool, ev: Event) -> bool:
        return False if ev.kind == "sched_build" and ev.subject == self.sched else s

    def _tests(self, node) -> list[bool]:
        canon = self.unit.roles.canon
        return [arm for sym, arm, classes in node.not_instance
                if canon(sym) == self.sched and any(_plateau_class(c) for c in classes)]

    def branches_on(self, node) -> bool:
        return bool(node.not_instance) and bool(self._tests(node))

    def branch(self, s: bool, node, taken: bool) -> bool:
        arms = self._tests(node)
        return s if not arms else arms[0] is taken


def _bound_before(unit: Unit, sched: str, tests: list) -> bool:
    """Whether every binding in the unit (:func:`~loopcheck.engine.values.definitions`) of
    scheduler ``sched`` (a canonical symbol) and of each alias of it comes, in program order,
    before the first of the raw calls ``tests`` (the ``isinstance`` calls of the tests that
    narrow it), and, for an attribute, no call that stays a call from there on receives the
    attribute's object (:func:`~loopcheck.engine.values.may_bind_attribute`): no path then
    binds the scheduler again after a test, and the object a test found no
    ``ReduceLROnPlateau`` is the one every later step is called on."""
    raws = unit.raws()
    order = {id(r): i for i, r in enumerate(raws)}
    first = min((order.get(id(t), -1) for t in tests), default=-1)
    if first < 0:
        return False
    table = definitions(unit)
    for name in unit.roles.names_of(sched):  # (``self.after_scheduler`` and the parameter it was given by)
        for d in table.get(name, ()):
            if d is None or order.get(id(d), len(raws)) >= first:
                return False
        if may_bind_attribute(unit, name, after=first):
            return False
    return True


@register
class PlateauWithoutMetric(Rule):
    """LC203 plateau-scheduler-without-metric.

    Reported when: a ``step()`` with no argument at all runs on a scheduler whose constructions the
    knowledge types ``schedule = "plateau"`` (``ReduceLROnPlateau``), wherever it sits: the call
    itself is the fault. Silent for a scheduler known only by its use (kind unknown), for
    ``if``/``elif`` constructions of different kinds, for any argument, and where every path to
    the step found the scheduler no ``ReduceLROnPlateau`` by an ``isinstance`` test with no
    binding of it between (:meth:`_not_plateau_here`; see ``rules/LC203.md``)."""

    info = INFOS["LC203"]

    def check(self, unit: Unit) -> Iterable[Report]:
        for ev in unit.of_kind("sched_step"):
            info = unit.roles.schedulers.get(ev.subject)
            if info is None or info.kind != "plateau" or ev.extra.get("nargs"):
                continue
            if self._not_plateau_here(unit, ev):
                continue  # an isinstance test found it no ReduceLROnPlateau on every path here
            ctor = info.ctor
            yield Report(
                self.info.code, ev.node,
                lambda d, ev=ev, ctor=ctor: (
                    f"{d.call(ev.node)} passes no metric, but ReduceLROnPlateau"
                    + (f" (line {d.line(ctor.node)})" if ctor is not None else "")
                    + " needs the value it monitors"
                ),
                [(ctor.node, "the ReduceLROnPlateau scheduler")] if ctor is not None else [],
                note=lambda d: "The call raises TypeError when it runs. Pass the metric: scheduler.step(val_loss).",
                at=ev,
            )

    @staticmethod
    def _not_plateau_here(unit: Unit, ev: Event) -> bool:
        """Whether every path to step ``ev`` tested its scheduler with ``isinstance`` against
        ``ReduceLROnPlateau`` and found it is not one (:class:`_NotPlateauMachine`), and no
        binding of the scheduler can run between such a test and the step (:func:`_bound_before`)."""
        sched = ev.subject
        tests = narrowing_tests(unit, lambda node: any(
            unit.roles.canon(sym) == sched and any(_plateau_class(c) for c in classes)
            for sym, _, classes in node.not_instance))
        if not tests:
            return False
        flow = unit.flow(("not_plateau", sched), lambda: _NotPlateauMachine(unit, sched))
        states = flow.states(ev)
        return bool(states) and all(states) and _bound_before(unit, sched, tests)
