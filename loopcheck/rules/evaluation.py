"""Evaluation rule (LC303): a validation pass that runs with the model still in train mode.

Knowledge (``nn.Module.train``/``eval`` docs; seeds/training-loop-engineering.md, "Mistake 2:
Validation in train mode"): ``model.train()`` (and a freshly built model) keeps Dropout active
and makes BatchNorm normalize with the batch's own statistics and update its running
statistics; ``torch.no_grad()`` changes neither. A validation pass in train mode reports noisy,
pessimistic metrics and, with BatchNorm, writes the validation batches into the running
statistics the model is later evaluated and saved with.
"""

from __future__ import annotations

import re
from typing import Iterable, NamedTuple

from loopcheck.engine.dataflow import Machine
from loopcheck.engine.events import Event, part_mode
from loopcheck.engine.ir import LoopInfo
from loopcheck.engine.roles import last
from loopcheck.engine.unit import Unit
from loopcheck.engine.values import mode_dependent
from loopcheck.findings import Report
from loopcheck.catalog import INFOS
from loopcheck.rules.base import Rule, register
from loopcheck.rules.modes import EVAL_DATA

#: Functions whose loops are evaluation passes: ``evaluate``, ``validate``, ``val_epoch``, ``run_test``.
EVAL_FUNCTION = re.compile(r"(^|_)(eval|evaluate|evaluation|validate|validation|valid|val|test|testing)(_|$)", re.I)
INPUTS = (None, "x", "input", "inputs", "input_ids", "images", "pixel_values")


class Mode(NamedTuple):
    """``kind``: ``train``/``eval``/``unknown``/``absent``; ``origin``: the ``train()`` call or
    construction that set train mode; ``trained``: an optimizer step ran since then;
    ``saved``: ``(variable, kind, origin, trained)`` for each variable a ``mode_save`` kept the
    model's mode in (``was_training = model.training``), which ``model.train(was_training)``
    puts back."""

    kind: str
    origin: Event | None = None
    trained: bool = False
    saved: tuple = ()


class TrainModeMachine(Machine):
    """The mode of one model, remembering where train mode was set and whether it trained since.

    A mode set on some of its modules only (:func:`~loopcheck.engine.events.part_mode`:
    ``model.backbone.eval()``, ``m.eval()`` for the BatchNorm layers ``m`` of
    ``model.modules()``, also in a method of the model's class) leaves a model in another mode
    partly in each: its mode becomes unknown, as for LC301's :class:`~loopcheck.rules.modes.ModeMachine`.
    A mode saved in a variable (``was_training = model.training``, also the save a library
    context manager's ``block_mode`` makes: MONAI's ``eval_mode(model)``) is put back by
    ``model.train(was_training)``; a restore from a variable no save on the path filled makes
    the mode unknown."""

    kinds = frozenset({"model_build", "train", "eval", "mode_unknown", "mode_save", "mode_restore", "mode_part",
                       "havoc", "step", "forward"})

    def __init__(self, unit: Unit, model: str) -> None:
        self.model = model
        self.subjects = unit.roles.names_of(model)
        self.steps_me = {id(ev) for ev in unit.of_kind("step") if _trains(unit, ev, model)}

    def initial(self) -> Mode:
        return Mode("unknown")

    def absent(self) -> Mode:
        return Mode("absent")

    def _mine(self, subject: str | None) -> bool:
        return subject is not None and (subject == self.model or self.model.startswith(subject + "."))

    def transfer(self, s: Mode, ev: Event) -> Mode:
        if ev.kind == "step":
            return s._replace(trained=True) if s.kind == "train" and id(ev) in self.steps_me else s
        part = part_mode(self.model, ev)
        if part is not None:  # m.eval() over model.modules(), model.backbone.eval(): partly in each mode
            return Mode("unknown", saved=s.saved) if s.kind in ("train", "eval") and part != s.kind else s
        if not self._mine(ev.subject):
            return s
        k = ev.kind
        if k == "model_build" and ev.subject == self.model:
            return Mode("train", ev, saved=s.saved)
        if s.kind == "absent":
            return s
        if k == "train":
            return Mode("train", ev, saved=s.saved)
        if k == "eval":
            return Mode("eval", saved=s.saved)
        if k == "mode_save":
            var = ev.extra["var"]
            return s._replace(saved=(*(x for x in s.saved if x[0] != var), (var, s.kind, s.origin, s.trained)))
        if k == "mode_restore":
            kept = next((x for x in s.saved if x[0] == ev.extra["var"]), None)
            return Mode(*kept[1:], saved=s.saved) if kept else Mode("unknown", saved=s.saved)
        if k == "mode_unknown" or (k == "havoc" and ev.may_change("mode")):
            return Mode("unknown", saved=s.saved)
        return s


def _trains(unit: Unit, step: Event, model: str) -> bool:
    """Whether a step may update ``model`` (its optimizer's models, or unknown ones)."""
    info = unit.roles.optimizers.get(step.subject)
    models = info.models if info is not None else set()
    return not models or model in models or any(model.startswith(m + ".") for m in models)


def _eval_loop(unit: Unit, fwd: Event) -> LoopInfo | None:
    """The loop that makes ``fwd`` part of an evaluation pass: the innermost loop iterates
    validation or test data, or is in an evaluation function (``evaluate()``, ``val_epoch()``),
    and neither backpropagates nor steps."""
    loop = fwd.ctx.loops[-1] if fwd.ctx.loops else None
    if loop is None or unit.in_module_forward:
        return None  # (in a module's forward its callers decide whether the pass evaluates)
    data = any(EVAL_DATA.search(last(n)) for n in loop.iter_names)
    function = loop.function is not None and EVAL_FUNCTION.search(loop.function)
    if not (data or function):
        return None
    for ev in unit.events:
        if loop in ev.ctx.loops and ev.kind in ("backward", "step", "zero_grad"):
            return None
    return loop


@register
class ValidationInTrainMode(Rule):
    """LC303 validation-in-train-mode.

    Reported when: the first forward of model ``M`` in an evaluation loop (:func:`_eval_loop`: no
    backward, step or ``zero_grad`` inside) is reached with ``M``'s mode known on every path and, on
    some path, in train mode (built here or ``train()``) with an optimizer step that may update
    ``M`` since (:class:`TrainModeMachine`; a mode set on some modules of ``M`` only, such as
    ``m.eval()`` for its BatchNorm layers ``m`` of ``M.modules()``, makes it unknown), and the
    output of the model ``M`` holds there depends on its mode
    (:func:`~loopcheck.engine.values.mode_dependent` of the constructions of ``M`` reaching the
    forward, when one reaches it on every path: the layers each builds with its arguments, so a
    Dropout built only when ``dropout > 0``, or given ``p = 0``, by a construction that leaves
    ``dropout`` at ``0.0`` is none, as is an ``F.dropout`` whose rate is such a constant 0, also
    an argparse option only its ``default=`` sets, and a whole model unpickled by ``torch.load``,
    whose class is not in the code, establishes no dependence,
    :func:`~loopcheck.engine.values.run_constants`; a layer class held as a value, a parameter's
    default or argument or a ``functools.partial`` of one, builds that class with the partial's
    keywords where it is called, ``norm_layer(dim)`` with ``nn.InstanceNorm2d`` none, and a
    factory is read with the values its call gives; a library layer whose knowledge entry says
    ``modes = "none"``, a DGL ``GraphConv`` or a ``GATConv`` left at ``feat_drop=0``, establishes
    none; a model a function of the project returns by naming a variable it binds to a
    construction is that construction). The paths are the IR's: an ``if``
    whose test run constants decide (``(epoch + 1) % val_interval == 0`` with ``val_interval = 1``),
    or a test against ``None`` of a name that holds a constructed object (``if val_loader is
    None: continue`` before ``eval()``, the caller passing a DataLoader:
    :meth:`~loopcheck.engine.builder.UnitBuilder.none_test`), has only its decided arm
    (:meth:`~loopcheck.engine.builder.UnitBuilder.decide`). One finding
    per loop (per inlined copy of a helper's loop: placed at the call through which the copy in
    train mode runs, naming the ``train()`` in effect in the fewest inlined calls). Known limit: the evaluation loop is recognised by names, ``EVAL_DATA`` on what it
    iterates or ``EVAL_FUNCTION`` on the function that holds it (see ``rules/LC303.md``)."""

    info = INFOS["LC303"]

    def check(self, unit: Unit) -> Iterable[Report]:
        reported: set[int] = set()
        for fwd in unit.of_kind("forward"):
            loop = _eval_loop(unit, fwd)
            if loop is None or id(loop) in reported:
                continue
            model = fwd.subject
            flow = unit.flow(("trainmode", model), lambda model=model: TrainModeMachine(unit, model))
            states = {s for s in flow.states(fwd) if s.kind != "absent"}
            if not states or any(s.kind == "unknown" for s in states):
                continue
            bad = [s for s in states if s.kind == "train" and s.trained]
            if not bad or not mode_dependent(unit, model, at=fwd):
                continue
            reported.add(id(loop))
            # of the train() calls still in effect on some path, the one in the fewest inlined
            # calls: the finding is placed in the frame its event and origin share, and one
            # inside a helper of the checked module (a method's self.train() after an
            # earlier validation) would move it to a module that cannot see the mode
            origins = [s.origin for s in bad if s.origin is not None and s.origin.kind == "train"]
            origin = min(origins, key=lambda o: (len(o.ctx.calls or ()), unit.order(o)), default=None)
            yield self._report(fwd, origin)

    def _report(self, fwd: Event, origin: Event | None) -> Report:
        related = [(origin.node, "model.train(): still in effect")] if origin is not None else []
        return Report(
            self.info.code, fwd.node,
            lambda d: (
                f"{d.call(fwd.node)} validates in train mode: no eval() since "
                + (f"{d.call(origin.node, args=True)} at line {d.line(origin.node)}" if origin is not None
                   else "the training steps")
            ),
            related,
            lambda d: (
                "Validation after training steps runs with Dropout active and BatchNorm normalizing each batch with "
                "its own statistics; torch.no_grad() changes neither. The metrics are noisy and pessimistic, and "
                "BatchNorm's running statistics absorb the validation batches (measured: 16 of 16 validation "
                "batches changed them; reported accuracy 0.914 in train mode vs 0.945 after eval()). Call "
                "model.eval() before the validation loop and model.train() before training resumes."
            ),
            # the event, not only its node: a helper's loop inlined at several calls is one
            # node, and the finding belongs to the call whose copy runs in train mode
            at=fwd, related_at=(origin,) if origin is not None else (),
        )
