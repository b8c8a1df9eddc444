"""Module-mode rules (LC301–LC302): train()/eval() and gradient tracking around evaluation.

Knowledge: ``nn.Module.eval()`` switches Dropout off and makes BatchNorm use its running
statistics until ``train()`` is called again; a forward pass outside ``torch.no_grad()``
/ ``torch.inference_mode()`` records an autograd graph and keeps the activations it needs
for a backward pass (PyTorch autograd mechanics notes; seeds/annotated-training-loop.md).
"""

from __future__ import annotations

import re
from typing import Iterable, NamedTuple

import libcst as cst

from loopcheck.engine.builder import decide_test
from loopcheck.engine.grad_entry import entry_grad_off
from loopcheck.engine.grad_tests import related
from loopcheck.engine.dataflow import NOT_TAKEN, Machine
from loopcheck.engine.events import Event, mode_call, part_mode
from loopcheck.engine.forwards import forward_computes_gradients, forward_graph_free
from loopcheck.engine.ir import Assign, Call, LoopInfo
from loopcheck.engine.roles import last
from loopcheck.engine.unit import Unit
from loopcheck.engine.values import (
    construction_without_trainable_parameters, grad_off_inputs, inputs_require_grad, mode_dependent,
    model_without_parameters,
)
from loopcheck.findings import Report
from loopcheck.catalog import INFOS
from loopcheck.rules.base import Rule, register
from loopcheck.rules.gradients import may_fill_gradients

class M(NamedTuple):
    """The mode of one model on a path: ``kind`` is ``train``, ``eval`` (``ev``: the eval()
    call), ``unknown`` or ``absent`` (the model does not exist there); ``frozen``: its
    parameters were frozen (``requires_grad_(False)`` or ``p.requires_grad = False`` over its
    ``parameters()``, on it or on a model containing it) and not unfrozen since (on it, a part
    of it or a model containing it); ``fwd``: in eval mode, what became of the forwards of
    the model (or of a part of it, or of a model containing it) run with gradients enabled since
    the ``eval()`` (:data:`NO_FORWARD`, :data:`RAN`, :data:`MISSED`, :data:`THROUGH`): whether a
    backward pass may have trained through one;
    ``part``: some of its parameters were frozen or unfrozen, which ones the analysis cannot tell
    (``M.backbone.requires_grad_(False)``, ``M.head.requires_grad_(True)`` after freezing ``M``,
    ``p.requires_grad = False`` under a test of the loop's item, ``if "fc" not in name:``, in a
    loop over ``M.named_parameters()``, on either arm of that test), and ``M`` was not wholly
    frozen or unfrozen since: which part of ``M`` a step trains is then not known;
    ``pending``: a backward pass that may fill ``M``'s gradients (its loss's models include
    ``M`` or are not known), or a write to a ``.grad``, ran since the last optimizer step (of any
    optimizer): the gradients a step applies may come from it."""

    kind: str
    ev: Event | None = None
    frozen: bool = False
    saved: tuple = ()  # ((variable, kind, ev), ...): modes kept by ``was_training = model.training``
    fwd: str = ""  # NO_FORWARD, RAN, MISSED or THROUGH
    part: bool = False
    pending: bool = False


#: ``M.fwd``: no forward of the model with gradients enabled since the ``eval()``.
NO_FORWARD = ""
#: ``M.fwd``: such a forward ran, and no backward pass since it.
RAN = "ran"
#: ``M.fwd``: such a forward ran, and each backward pass since it is established to leave the
#: model out: its loss was computed through other models only (``D(G(z).detach())``: the
#: detached output cuts the path), so it fills none of the model's gradients.
MISSED = "missed"
#: ``M.fwd``: a backward pass after such a forward may have computed its loss through the model
#: (its loss's models include it, or are not known), or a gradient query or a write to a
#: ``.grad`` followed one: a step can train the model from an eval-mode forward.
THROUGH = "through"


UNKNOWN = M("unknown")
TRAIN = M("train")
TRAIN_FROZEN = M("train", frozen=True)  # built holding no parameter that requires grad
ABSENT = M("absent")  # a path on which the model does not exist (``if model is not None``)
#: Names of loss functions held as modules: ``loss_fct``, ``loss_fn``, ``criterion``, ``focal_loss``.
CRITERION_NAME = re.compile(r"(^|_)(loss|criterion|crit)(_|$)|^loss_f", re.I)
#: Names of data that is evaluated, not trained on: ``val_loader``, ``test_x``, ``dev_iter``.
EVAL_DATA = re.compile(r"(^|_)(val|valid|validation|test|eval|evaluation|dev|holdout)(_|$|\d)", re.I)


class ModeMachine(Machine):
    """``("train", None)``, ``("eval", eval_event)`` or ``("unknown", None)`` for one model.

    ``train()``/``eval()`` on a module also set the mode of its submodules, so events on
    ``model`` apply to a tracked ``model.head`` too. A mode set on some of its modules only
    (:func:`~loopcheck.engine.events.part_mode`: ``model.head.train()`` after ``eval()``,
    ``m.eval()`` for the BatchNorm layers ``m`` of ``model.modules()`` after ``train()``, also
    in a method of the model's class) leaves the model partly in each mode, which parts the
    engine cannot tell: its mode becomes unknown. In eval mode, the state notes a forward
    with gradients enabled of the model, of a part of it or of a model containing it (``fwd``),
    and whether a backward pass since then may have trained through it (:meth:`_backward`);
    in any mode, whether a backward pass that may fill its gradients ran since the last
    optimizer step (:attr:`M.pending`, :meth:`_pending`).
    A mode saved in a variable
    (``was_training = model.training``) is restored by ``model.train(was_training)`` and decides
    ``if was_training:`` tests; saved while unknown, it is learnt from the arm such a test takes
    (:func:`_saved_mode_learnt`); the mode of the model decides tests of its (or a part's) mode
    attribute, ``if model.training:`` (:attr:`~loopcheck.engine.ir.If.mode_of`).
    Freezing (``requires_grad``) the model or a model containing it sets ``frozen``, unfreezing
    it clears it; freezing or unfreezing a part of it, or some of its parameters chosen by a test
    of a loop's item, marks it partly frozen (:attr:`M.part`). A construction that holds no
    parameter requiring grad (a class of the project whose only parameters are made with
    ``nn.Parameter(t, requires_grad=False)``, or that has none:
    :func:`~loopcheck.engine.values.construction_without_trainable_parameters`) starts it
    frozen, in train mode.
    """

    kinds = frozenset({'model_build', 'train', 'eval', 'mode_unknown', 'havoc', 'step', 'forward', 'freeze', 'unfreeze',
                       'mode_save', 'mode_restore', 'mode_part', 'backward', 'grad_query', 'grad_set'})

    def __init__(self, unit: Unit, model: str) -> None:
        self.model = model
        self.subjects = unit.roles.names_of(model)
        self.unit = unit
        self._saved: frozenset[str] | None = None
        self._selecting: frozenset[int] | None = None
        self._built_frozen: dict[int, bool] = {}

    def _frozen_when_built(self, ev: Event) -> bool:
        """Whether ``model_build`` event ``ev`` builds a module holding no parameter that
        requires grad (read once per event)."""
        found = self._built_frozen.get(id(ev))
        if found is None:
            found = self._built_frozen[id(ev)] = isinstance(ev.raw, Call) and \
                construction_without_trainable_parameters(self.unit, ev.raw.node, ev.raw)
        return found

    def initial(self):
        return UNKNOWN

    def absent(self):
        return ABSENT

    def _mine(self, subject: str | None) -> bool:
        return subject is not None and (subject == self.model or self.model.startswith(subject + "."))

    def _part(self, subject: str | None) -> bool:
        """A submodule of the model (``model.head`` of ``model``)."""
        return subject is not None and subject.startswith(self.model + ".")

    def transfer(self, s, ev: Event):
        if ev.kind == "forward" and s.kind == "eval" and s.fwd in (NO_FORWARD, MISSED) and ev.ctx.grad != "disabled" and (
                self._mine(ev.subject) or self._part(ev.subject)):
            return s._replace(fwd=RAN)
        if ev.kind in ("backward", "grad_query", "grad_set"):
            return self._pending(self._backward(s, ev), ev)
        if ev.kind == "step":
            return s._replace(pending=False) if s.pending else s
        part = part_mode(self.model, ev)
        if part is not None:  # model.head.train(), m.eval() over model.modules(): partly in each mode
            mixed = s.kind in ("train", "eval") and part != s.kind
            return s._replace(kind="unknown", ev=None, fwd=NO_FORWARD) if mixed else s
        k = ev.kind
        if k == "unfreeze" and self._part(ev.subject):
            # model.head.requires_grad_(True): the model holds trainable parameters again, some of them
            return s._replace(frozen=False, part=True)
        if k == "freeze" and self._part(ev.subject):
            return s._replace(part=True)  # model.backbone.requires_grad_(False): some of them frozen
        if not self._mine(ev.subject):
            return s
        if k == "model_build" and ev.subject == self.model:
            return TRAIN_FROZEN if self._frozen_when_built(ev) else TRAIN
        if s.kind == "absent":
            return s
        if k == "train":
            return s._replace(kind="train", ev=None, fwd=NO_FORWARD)
        if k == "eval":
            return s._replace(kind="eval", ev=ev, fwd=NO_FORWARD)
        if k in ("freeze", "unfreeze"):  # of the model or of a model containing it (its parameters are among those)
            if ev.extra.get("part"):  # p.requires_grad = False under ``if "fc" not in name:``: some of them
                return s._replace(part=True, frozen=s.frozen and k == "freeze")
            return s._replace(frozen=k == "freeze", part=False)
        if k == "mode_save":
            var = ev.extra["var"]
            return s._replace(saved=(*(x for x in s.saved if x[0] != var), (var, s.kind, s.ev)))
        if k == "mode_restore":
            kept = next((x for x in s.saved if x[0] == ev.extra["var"]), None)
            if kept:
                return s._replace(kind=kept[1], ev=kept[2], fwd=NO_FORWARD)
            return s._replace(kind="unknown", ev=None, fwd=NO_FORWARD)
        if k == "mode_unknown" or (k == "havoc" and ev.may_change("mode")):
            return s._replace(kind="unknown", ev=None, fwd=NO_FORWARD)
        return s

    def _backward(self, s: M, ev: Event) -> M:
        """The state after backward pass ``ev`` (or a gradient query, or a write to a ``.grad``)
        on a path where a forward of the model ran with gradients enabled since its ``eval()``
        (:data:`RAN`, :data:`MISSED`). A backward whose loss's models are known (the event's
        ``models``: the models the loss was computed through, not counting a detached part,
        ``G(z).detach()``, nor values computed under ``no_grad``) and leave out the model, its
        parts and the models containing it fills none of its gradients: :data:`MISSED`. Any
        other (models not known; a gradient query or a ``.grad`` write, whose gradients the code
        may put anywhere) may have trained through the forward: :data:`THROUGH`."""
        if s.kind != "eval" or s.fwd not in (RAN, MISSED):
            return s
        models = ev.extra.get("models") if ev.kind == "backward" else None
        if models is not None and not any(related(m, self.model) for m in models):
            return s._replace(fwd=MISSED)
        return s._replace(fwd=THROUGH)

    def _pending(self, s: M, ev: Event) -> M:
        """The state after backward pass ``ev`` (or a gradient query, or a write to a ``.grad``)
        notes that a gradient of the model may have been filled since the last step: a backward
        whose loss's models are not known or include the model, a part of it or a model
        containing it, or a ``.grad`` write. A gradient query fills no ``.grad`` itself (what
        the code does with its result is another event)."""
        if s.pending or s.kind == "absent" or ev.kind == "grad_query":
            return s
        models = ev.extra.get("models") if ev.kind == "backward" else None
        if models is not None and not any(related(m, self.model) for m in models):
            return s
        return s._replace(pending=True)

    def branches_on(self, node) -> bool:
        if node.mode_of is not None and self._module_of(node.mode_of[0]):
            return True
        if id(node.node) in self._selecting_ifs:
            return True
        test = _saved_mode_test(node)[0]
        return test is not None and test.value in self._saved_vars

    def _module_of(self, sym: str) -> bool:
        """Whether ``sym`` names the model or a part of it (``model.encoder``; a wrapper's
        ``model.module``), whose mode attribute its mode gives."""
        if sym in self.subjects:
            return True
        canon = self.unit.roles.canon(sym)
        return canon == self.model or canon.startswith(self.model + ".")

    @property
    def _saved_vars(self) -> frozenset[str]:
        """The variables a ``mode_save`` event of the unit saves a mode in (``was_training``)."""
        if self._saved is None:
            self._saved = frozenset(ev.extra["var"] for ev in self.unit.of_kind("mode_save"))
        return self._saved

    @property
    def _selecting_ifs(self) -> frozenset[int]:
        """``id`` of the ``if`` statements whose tests choose, item by item of a loop over the
        parameters of the model (or of a model containing it), which of them a ``freeze`` or
        ``unfreeze`` changes (the events' ``part``)."""
        if self._selecting is None:
            self._selecting = frozenset(
                id(c) for ev in self.unit.of_kind("freeze", "unfreeze")
                if ev.extra.get("part") and (self._mine(ev.subject) or self._part(ev.subject))
                for c in ev.extra["part"]
            )
        return self._selecting

    def branch(self, s, node, taken: bool):
        """The else-arm of an ``if`` choosing some parameters of the model to freeze or unfreeze
        (``if "fc" not in name: p.requires_grad = False``) leaves it partly frozen too: whether
        any item of the loop takes the body is not known. ``if was_training:`` (or ``if not was_training:``) with the mode saved in
        ``was_training`` known on this path, and ``if model.training:`` (``if not
        model.training:``, ``model.training == False``: :attr:`~loopcheck.engine.ir.If.mode_of`)
        with the model's mode known on this path (``eval()``: ``training`` is ``False``, also
        for a part of the model): only the arm it decides is taken. ``if was_training:`` with
        the mode saved in ``was_training`` unknown: each arm says what the saved mode was
        (:func:`_saved_mode_learnt`)."""
        if not taken and not s.part and id(node.node) in self._selecting_ifs:
            s = s._replace(part=True)
        if node.mode_of is not None and s.kind in ("train", "eval") and self._module_of(node.mode_of[0]):
            arm = decide_test(node.test, {node.mode_of[1]: s.kind == "train"})
            if arm is not None:
                return s if arm == taken else NOT_TAKEN
        if not s.saved:  # (most paths: no mode saved, nothing to read in the test)
            return s
        test, negated = _saved_mode_test(node)
        want = taken != negated
        if test is None:
            return s
        kept = next((x for x in s.saved if x[0] == test.value), None)
        if kept is None:
            return s
        if kept[1] == "unknown":
            return _saved_mode_learnt(s, test.value, want)
        if kept[1] not in ("train", "eval"):
            return s
        return s if (kept[1] == "train") == want else NOT_TAKEN


def _saved_mode_learnt(s: M, var: str, training: bool) -> M:
    """The state of a path on which the test of ``var``, a variable that saved the model's
    mode while that mode was unknown (``was_training = model.training`` after a call that may
    change it), says what the mode was at the save: ``training`` is the value the arm gives
    ``var`` (``True`` for the body of ``if was_training:``).

    The saved mode becomes the one the test gives (train) where the path can name it, so a later
    ``model.train(was_training)`` restores train mode. On the arm where the model was not
    training at the save, an ``eval()`` since then (the state's ``ev``) changed nothing: the
    model was already in eval mode, for a cause before the save that the path does not know, and
    ``if was_training: model.train()`` leaves it so. The mode is then the unknown one of the save,
    not that ``eval()``'s (and a later ``model.train(was_training)`` restores it unknown too)."""
    if training:
        return s._replace(saved=tuple((var, "train", None) if x[0] == var else x for x in s.saved))
    if s.kind == "eval":
        return s._replace(kind="unknown", ev=None, fwd=NO_FORWARD)
    return s


def _saved_mode_test(node) -> tuple[cst.Name | None, bool]:
    """``(name, negated)`` for ``if name:`` and ``if not name:``, the tests a saved mode can
    decide; ``(None, False)`` for any other test."""
    test, negated = getattr(node.node, "test", None), False
    if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        test, negated = test.expression, True
    return (test, negated) if isinstance(test, cst.Name) else (None, False)


def mode_flow(unit: Unit, model: str):
    return unit.flow(("mode", model), lambda: ModeMachine(unit, model))


def modes_at(unit: Unit, model: str, ev: Event) -> set:
    """The mode states of ``model`` on the paths (where it exists) that reach ``ev``."""
    return {s for s in mode_flow(unit, model).states(ev) if s.kind != "absent"}


def trained_models(unit: Unit, guess: bool = True) -> dict[str, list[Event]]:
    """Models whose parameters a stepping optimizer updates → the steps that update them.

    The models of a step are those of the optimizer constructions that reach it (after
    ``optimizer = Adam([emb])`` ... ``optimizer = Adam(unet.parameters())``, a step in between
    trains only ``emb``); a step of an optimizer established to take no model's parameters (tensors
    built here: ``SGD([delta])`` with ``delta = torch.randn(x.shape)``, or computed from a
    forward's output: ``Adam([w])`` with ``w = g.style(z).mean(0).detach()``) trains none. When the
    parameters' origin is unknown and a single model has its
    mode set in the unit, that model is taken to be the one trained (``guess=False``: it is
    not, and such a step trains no model)."""
    out: dict[str, list[Event]] = {}
    moded = {e.subject for e in unit.of_kind("train", "eval")}
    for step in unit.of_kind("step"):
        info = unit.roles.optimizers.get(step.subject)
        models = None
        ctors = [b.raw for b in unit.builds_reaching(step, step.subject)]
        if info is not None:
            models = info.models_of(ctors)
        if models is None or (not models and not (info and info.by_ctor)):
            models = set(moded) if guess and len(moded) == 1 else set()
        elif info is not None and info.certain:
            sure = info.certain_of(ctors)
            models = {m for m in models if any(m == c or m.startswith(c + ".") for c in sure)}
        for m in models:
            out.setdefault(m, []).append(step)
    return out


def _no_backward_between(unit: Unit, ev: Event, step: Event) -> bool:
    """Whether it is established that nothing that may fill a gradient runs between ``eval()``
    event ``ev`` and optimizer step ``step`` (so not between a forward after ``ev`` and the
    step): ``ev`` comes first in program order, inside no loop that does not hold ``step`` too
    (no path goes around a loop of its own between them), the step takes no closure (whose
    backward the events do not show), and no raw event between them may backpropagate or write
    a gradient: a typed backward, gradient query or ``.grad`` write, a ``havoc`` that may change
    gradients, a step with a closure, or an untyped call
    (:func:`~loopcheck.rules.gradients.may_fill_gradients`: a name ``backward``/``grad``, an
    unknown method of an unknown object)."""
    if step.extra.get("closure") or any(loop not in step.ctx.loops for loop in ev.ctx.loops):
        return False
    started = False
    for raw in unit.raws():
        if raw is step.raw:
            return started
        if not started:
            started = raw is ev.raw
            continue
        if may_fill_gradients(unit, raw) or any(_may_backprop(t) for t in getattr(raw, "typed", ())):
            return False
    return False


def _may_backprop(ev: Event) -> bool:
    """Whether typed event ``ev`` may fill a gradient: a backward, a gradient query, a
    ``.grad`` write, a ``havoc`` that may change gradients, a step given a closure."""
    if ev.kind in ("backward", "grad_query", "grad_set"):
        return True
    if ev.kind == "havoc":
        return ev.may_change("grads")
    return ev.kind == "step" and bool(ev.extra.get("closure"))


def _nearest_step(unit: Unit, ev: Event, steps: list[Event]) -> Event:
    """Of the optimizer steps an ``eval()`` event ``ev`` stays in effect at, the one a finding
    names: the next step a run meets, read from the loops (a step in the innermost loop that
    also holds ``ev`` comes before one that a path reaches only by leaving it: after an
    evaluation inside a phase's batch loop, the same loop's step, not the step of another
    phase's loop the outer loop may enter next), then the first in program order after ``ev``,
    then the first before it (the next iteration's).

    Args:
        unit: the unit of ``ev`` and ``steps``.
        ev: an ``eval()`` event (inlined from a callee or not).
        steps: the ``step`` events of ``unit`` it reaches, at least one.
    """
    loops = ev.ctx.loops

    def shared(step: Event) -> int:
        n = 0
        for a, b in zip(loops, step.ctx.loops):
            if a is not b:
                break
            n += 1
        return n

    after = unit.order(ev)
    return min(steps, key=lambda s: (-shared(s), unit.order(s) < after, unit.order(s)))


@register
class EvalModeNotReset(Rule):
    """LC301 eval-mode-not-reset.

    Reported when: an ``eval()`` of a model ``M`` (or of a model containing it) is the mode in effect
    (:class:`ModeMachine`: no ``train()``, no mode set on some modules of ``M`` only
    (:func:`~loopcheck.engine.events.part_mode`: ``M.head.train()``, ``m.train()`` over
    ``M.children()``), unknown mode or restored mode since), on some path, at an optimizer step
    that trains ``M`` (:func:`trained_models`: the step of an optimizer established to take no
    model's parameters, an adversarial perturbation's own, a latent's made from a generator's
    output, or an input's made from data re-bound from it, ``x = Variable(torch.FloatTensor(a))``
    and later ``a = x.data.numpy()``, trains none; a function parameter's value from the
    callers, read before a re-binding, is not established), a forward of ``M`` (of a part of it
    or of a model containing it) having
    run with gradients enabled on that path since the ``eval()`` and a backward since it that may
    have computed its loss through it, or none yet (:attr:`M.fwd`: :data:`RAN` or
    :data:`THROUGH`; a backward whose loss's models are known and leave ``M`` out,
    ``D(G(z).detach())``, fills none of ``M``'s gradients: :data:`MISSED`; :data:`RAN` after a
    backward that may fill ``M``'s gradients since the last step (:attr:`M.pending`), with
    nothing that may fill a gradient between the ``eval()`` and the step
    (:func:`_no_backward_between`), applies train-mode gradients only: a monitoring forward), ``M`` neither frozen nor partly
    frozen on that path (:attr:`M.part`: which part of it the step trains, and so whether that
    part holds a layer ``eval()`` changes, is not established), and train mode is wanted: ``train()`` of ``M`` somewhere in the unit, train mode at that step
    on another path, or ``M`` built here and surely held by the step's optimizer. Silent when ``M``'s
    output does not depend on its mode (:func:`~loopcheck.engine.values.mode_dependent` of the
    constructions of ``M`` that reach the step, when one reaches it on every path; a deep copy,
``copy.deepcopy(base)``, by the constructions of ``base`` reaching it; a whole model unpickled by
``torch.load``, whose class is not in the code, establishes no dependence). The paths
    come back to a loop's start only when its iterable may have two items (``Loop.once``: not for
    ``range(num_epochs)`` with ``num_epochs = 1`` a run constant). Known
    limit: parameters of unknown origin are taken to be those of the only model with ``train()``/``eval()`` calls, when there is one (see ``rules/LC301.md``)."""

    info = INFOS["LC301"]

    def check(self, unit: Unit) -> Iterable[Report]:
        reported = set()
        known = trained_models(unit, guess=False)
        for model, steps in trained_models(unit).items():
            # a Linear head trained under a frozen backbone in eval(): nothing changes (decided
            # per step for the constructions reaching it: a notebook re-binds the name)
            steps = [step for step in steps if mode_dependent(unit, model, at=step)]
            if not steps:
                continue
            flow = mode_flow(unit, model)
            has_train = any(
                e.kind == "train" and (e.subject == model or model.startswith(e.subject + "."))
                for e in unit.of_kind("train")
            )
            # built here, the model started in train mode: an eval() is then a switch away from it
            built = bool(unit.of_subject(model, "model_build"))
            # each eval() still in effect → the steps it reaches, in the order found
            reaches: dict[int, tuple[Event, list[Event]]] = {}
            for step in steps:
                states = {x for x in flow.states(step) if x.kind != "absent"}
                # train mode is wanted: train() is called, the step runs in it on some path, or
                # the step's optimizer surely holds the parameters of a model built in train mode
                wanted = has_train or built and step in known.get(model, ())
                if not (wanted or any(x.kind == "train" for x in states)):
                    continue
                for x in states:
                    # a frozen model kept in eval() while a head trains is a linear probe; partly
                    # frozen, which part the step trains (and whether it holds a mode-dependent
                    # layer) is not known; without a forward since eval() that a backward may
                    # have trained through (MISSED: every backward since left the model out), the
                    # step trains nothing that ran in eval mode
                    if x.kind != "eval" or x.frozen or x.part or x.fwd not in (RAN, THROUGH) or id(x.ev) in reported:
                        continue
                    if x.fwd == RAN and x.pending and _no_backward_between(unit, x.ev, step):
                        continue  # the step applies gradients computed before the eval(): monitoring forwards
                    reaches.setdefault(id(x.ev), (x.ev, []))[1].append(step)
            for ev, reached in reaches.values():
                if id(ev) in reported:
                    continue
                reported.add(id(ev))
                step = _nearest_step(unit, ev, reached)
                # the call that chose eval, where the event's own line reads the mode from it
                # (model.train(False) running the model's own train(), whose super().train(mode)
                # is right for both modes): the finding is there, the line inside related
                chosen = mode_call(ev, step.ctx.calls)
                node = chosen if chosen is not None else ev.node
                related = [(step.node, "the training step that runs in eval mode")]
                if chosen is not None:
                    related.append((ev.node, "sets the mode this call passes"))
                yield Report(
                    self.info.code, node,
                    lambda d, node=node, step=step: (
                        f"{d.call(node, args=True)} is still in effect when {d.call(step.node)} at line "
                        f"{d.line(step.node)} trains the model"
                    ),
                    related,
                    note=lambda d: (
                        "No train() call comes in between, so Dropout stays off and BatchNorm stops updating "
                        "its statistics (measured, CPU, torch 2.13: 24/32 backward passes went through "
                        "eval-mode forwards). Call model.train() before the next training step."
                    ),
                    at=ev, related_at=(step, ev) if chosen is not None else (step,),
                )


@register
class ValidationWithoutNoGrad(Rule):
    """LC302 validation-without-no-grad.

    Reported when: a forward of model ``M`` with grad enabled, not in a block that the innermost
    ``with`` item or decorator setting a grad mode turns gradients on in (``with
    torch.enable_grad():``, ``with torch.set_grad_enabled(True):``: the code asks for that graph,
    :attr:`~loopcheck.engine.ir.Context.grad_asked`), in a loop not over models, on some path (not
    in the arm of ``if M.training:`` that ``M``'s eval mode rules out on every path,
    :meth:`ModeMachine.branch`), runs with
    ``M`` in eval mode on every path (:func:`modes_at`), or, eval mode on no path, on evaluation data
    (an input argument, or the innermost loop's iterable when that loop does not train); and no
    ``backward()``/``torch.autograd.grad`` follows in program order before ``M``'s next ``train()``
    or construction (or in the next iteration of the forward's innermost loop, on a value computed
    from the forward's output). Silent for
    ``M`` frozen on every path (``requires_grad_(False)`` or ``p.requires_grad = False`` over its
    ``parameters()``, on ``M`` or a model containing it, or built holding no parameter that
    requires grad: :func:`~loopcheck.engine.values.construction_without_trainable_parameters`;
    not unfrozen since on ``M``, a part of it or a model containing it) called on inputs not
    established to require grad (as below), for ``M`` established to hold no
    parameters (:func:`~loopcheck.engine.values.model_without_parameters`) called on inputs not
    established to require grad other than through the parameters of a model whose forward
    computed them (:func:`~loopcheck.engine.values.inputs_require_grad`: ``softmax(model(x))``
    extends the graph ``model``'s forward records, reported there), for ``M`` whose own
    ``forward`` runs its parameterised work with grad off on a path the call can take
    (:func:`~loopcheck.engine.forwards.forward_graph_free`), for ``M`` whose own ``forward``
    computes gradients itself on a path the call takes in ``M``'s mode (``torch.autograd.grad``,
    ``backward()``, a differentiable optimizer's ``step``:
    :func:`~loopcheck.engine.forwards.forward_computes_gradients`), for a forward whose grad mode
    is its entry's in a module-level function every call of which in the project runs with grad
    off (:func:`~loopcheck.engine.grad_entry.entry_grad_off`; a function the project never calls
    keeps grad on), or in a method of a module-level class whose every call the project's code
    may make runs with grad off (:func:`~loopcheck.engine.grad_entry.method_callers_grad_off`), for
    a forward inside a module's ``forward`` read on its own
    (:attr:`~loopcheck.engine.unit.Unit.in_module_forward`: its callers decide whether a backward
    follows) and for a loss module. A forward in the arm of an ``if`` on a parameter that every
    call binds to one literal (given, or left at its default) never runs when the test is false
    for it (the builder decides the test: for an inlined call,
    :meth:`~loopcheck.engine.builder.UnitBuilder.inline`; for a method read on its own,
    :func:`~loopcheck.engine.entry_defaults.params_bound_to_constant`; ``phase is 'train'`` as
    CPython runs it, :func:`~loopcheck.engine.builder.same_object`), nor when a raising guard
    before it fixes the attribute the ``if`` compares (``if args.data == "x" and args.head ==
    "y": ... else: raise NotImplementedError`` before ``if args.head == "z":``, also in an
    inlined call given ``args``; :attr:`~loopcheck.engine.ir.If.learns`,
    :func:`~loopcheck.engine.dataflow._learned_guards`). Known limits:
    evaluation data is recognised by ``EVAL_DATA`` on names, a loss module also by
    ``CRITERION_NAME`` (see ``rules/LC302.md``)."""

    info = INFOS["LC302"]

    def check(self, unit: Unit) -> Iterable[Report]:
        firsts: dict[int, tuple[Event, Event | None]] = {}
        for fwd in unit.of_kind("forward"):
            if fwd.ctx.grad != "enabled" or not _batch_loops(unit, fwd):
                continue  # a single forward outside any loop (a test, an export) costs one graph
            if unit.in_module_forward:
                continue  # inside a module's forward: its callers decide whether a backward follows
            if fwd.ctx.grad_asked:
                continue  # under `with torch.enable_grad():`: the code asks for this graph, no_grad would undo it
            if model_without_parameters(unit, fwd.subject) and not inputs_require_grad(unit, fwd.raw):
                continue  # no parameters (a class whose __init__ builds none), inputs that need no grad beyond
                # the parameters of the model forward that computed them: no graph of its own
            if _loss_module(unit, fwd.subject):
                continue  # a loss module (FocalLoss() or CrossEntropyLoss()) holds no weights to record
            reached = mode_flow(unit, fwd.subject).states(fwd)
            if not reached:
                continue  # no path runs it: the arm of `if M.training:` that M's eval() rules out
            states = {x for x in reached if x.kind != "absent"}
            if states and all(x.frozen for x in states) and not inputs_require_grad(unit, fwd.raw):
                continue  # requires_grad_(False) on every path, or built with frozen parameters only, given
                # inputs that need no grad beyond the parameters of the model that computed them: no graph
            in_eval = bool(states) and all(x.kind == "eval" for x in states)
            if not in_eval and not self._evaluation_pass(unit, fwd, states):
                continue
            if self._followed_by_backward(unit, fwd):
                continue
            # last: it reads the forward of the model's class (parsing its module's fragment)
            if forward_graph_free(unit, fwd):
                continue  # the model's own forward runs its work under no_grad on a path this call takes
            kinds = {x.kind for x in states}
            training = True if kinds == {"train"} else False if kinds == {"eval"} else None
            if forward_computes_gradients(unit, fwd, training):
                continue  # the model's own forward backpropagates through its graph: it needs grad on
            if entry_grad_off(unit, fwd):
                continue  # every call of its function in the project runs it under no_grad (reads the project)
            if grad_off_inputs(unit, fwd) is not None:
                continue  # PyTorch <= 0.3 code: volatile inputs decide whether it records a graph (reads the project)
            # in program order (`states` is a set): the eval() a message names must not change from run to run
            evals = list(dict.fromkeys(x.ev for x in unit.in_order(states, "ev") if x.ev is not None)) if in_eval else []
            for ev in evals or [None]:
                key = id(ev) if ev is not None else id(fwd.ctx.loops[-1])
                if key not in firsts:
                    firsts[key] = (fwd, ev)
        for fwd, ev in firsts.values():
            related = [(ev.node, "model.eval(): this is evaluation")] if ev is not None else []
            yield Report(
                self.info.code, fwd.node,
                lambda d, ev=ev, fwd=fwd: (
                    f"{d.call(fwd.node)} runs in eval mode (line {d.line(ev.node)}) without torch.no_grad()"
                    if ev is not None else f"{d.call(fwd.node)} evaluates without torch.no_grad()"
                ),
                related,
                note=lambda d: (
                    "Each call records an autograd graph and saves activations for a backward pass that never "
                    "comes, and any output kept keeps its graph (measured, CPU, torch 2.13: 55 KiB saved per "
                    "validation batch of 64). Wrap the evaluation in torch.no_grad() or torch.inference_mode()."
                ),
                at=fwd, related_at=(ev,) if ev is not None else (),
            )

    @staticmethod
    def _evaluation_pass(unit: Unit, fwd: Event, states: set) -> bool:
        """A forward that evaluates although ``eval()`` was not called: in a loop over
        validation or test data that neither backpropagates nor steps, or on validation or test
        inputs (``model(test_x)`` every N training steps). The model must not be known to be
        in eval mode on some paths only (that is the eval-mode branch's business)."""
        if any(x.kind == "eval" for x in states):
            return False
        inputs = [a for a in fwd.raw.args if a.keyword in (None, "x", "input", "inputs", "input_ids", "images", "pixel_values")]
        if any(EVAL_DATA.search(last(m)) for arg in inputs for m in arg.mentions):
            return True
        loop = fwd.ctx.loops[-1]
        if not any(EVAL_DATA.search(last(n)) for n in loop.iter_names):
            return False
        return not _trains_in(unit, loop)

    @staticmethod
    def _followed_by_backward(unit: Unit, fwd: Event) -> bool:
        """Gradients wanted on purpose (saliency, attacks, planning by gradient descent on a
        model's inputs): a backward follows before train(), in program order; or one follows
        later in the rest of the forward's iteration, after a ``train()`` or a construction of
        the model, on a value computed from the forward's output (the graph the forward
        records is the one that backward uses, whatever the model's mode is by then:
        :func:`_backpropagated_later`); or one runs in the next iteration of the forward's
        innermost loop on a value computed from the forward's output (an attack whose loop
        backpropagates, at its top, the output its previous iteration computed)."""
        at = unit.order(fwd)
        loop = fwd.ctx.loops[-1] if fwd.ctx.loops else None
        end = len(unit.events)  # where the rest of the forward's iteration ends
        for i in range(at + 1, len(unit.events)):
            ev = unit.events[i]
            if loop is not None and loop not in ev.ctx.loops:
                end = i
                break
            found = _backward_or_train(ev, fwd)
            if found is False and _backpropagated_later(unit, fwd, loop):
                return True  # model.train() for a second loss term, then loss.backward() of both
            if found is not None:
                return found
        if loop is not None:  # the rest of the iteration ran into neither: the next one starts
            # (a backward there counts when it backpropagates what the forward computed)
            derived = {t for t in getattr(fwd.raw, "targets", ()) if t}
            for raw in unit.raws():
                if raw is fwd.raw:
                    break
                if loop not in raw.ctx.loops:
                    continue
                found = None
                for ev in raw.typed:
                    found = _backward_or_train(ev, fwd)
                    if found is False or found and _backpropagates(ev, derived):
                        break
                    found = None
                if found:
                    return True
                if found is False:
                    break  # train() first: what follows the loop may still backpropagate it
                _derive(raw, derived)
            for ev in unit.events[end:]:
                if loop in ev.ctx.loops:
                    continue
                found = _backward_or_train(ev, fwd)
                if found is not None:
                    return found
        return False


def _backward_or_train(ev: Event, fwd: Event) -> bool | None:
    """``True`` at a backward pass or a gradient query, ``False`` at ``train()`` or a
    construction of the model of ``fwd``, else ``None``."""
    if ev.kind in ("train", "model_build") and ev.subject == fwd.subject:
        return False
    if ev.kind in ("backward", "grad_query"):
        return True
    return None


def _backpropagated_later(unit: Unit, fwd: Event, loop: LoopInfo | None) -> bool:
    """Whether a backward pass or a gradient query that runs after forward ``fwd`` in program
    order, in the rest of its innermost loop's iteration (``loop``; the rest of the unit when
    ``None``), runs on a value computed from the forward's output (:func:`_derive`, through
    assignments and calls that take it: ``pred = model(x)``, ``loss = cost(pred)``, ``loss =
    loss + reg``, ``loss.backward()``). The autograd graph the forward records is then used,
    whatever ``train()`` or construction of its model came in between."""
    derived = {t for t in getattr(fwd.raw, "targets", ()) if t}
    if not derived:
        return False
    started = False
    for raw in unit.raws():
        if not started:
            started = raw is fwd.raw
            continue
        if loop is not None and loop not in raw.ctx.loops:
            break
        if any(ev.kind in ("backward", "grad_query") and _backpropagates(ev, derived) for ev in raw.typed):
            return True
        _derive(raw, derived)
        if not derived:
            return False
    return False


def _derive(raw, derived: set) -> None:
    """Update ``derived`` (the names holding values computed from a forward's output) for raw
    event ``raw``: what it assigns from one of them is added, what it assigns from none of
    them (``out = model(x)`` re-bound by the next iteration) is removed. The part of a call's
    result an unpacking gives a name (``pred, _ = model(x)``: an ``Assign`` of kind ``part``
    without sources after the call event), and the ``Assign`` of a call's result to a name the
    call event binds (``pred = model(x)``), are what the call event, which binds that name
    with the call's sources, decided: they change nothing."""
    src = getattr(raw, "sources", None)
    if isinstance(raw, Assign) and (
            (raw.value_kind == "part" and src is None)
            or (src is not None and any(c.node is raw.value and raw.target in c.targets for c in src.calls))):
        return
    targets = (raw.target,) if isinstance(raw, Assign) else raw.targets
    if src is not None and _reads_any(src.names, derived):
        derived.update(t for t in targets if t)
    elif not (isinstance(raw, Assign) and raw.op != "="):  # (x += y keeps what x held)
        derived.difference_update(targets)


def _reads_any(names, derived: set) -> bool:
    """Whether one of the symbols ``names`` is, or is an attribute chain of, a name in
    ``derived`` (``images.view`` of ``images = images.view(n, -1)`` reads ``images``); a chain
    through ``.data`` (``pred.data``) reads its value detached, with no graph of it."""
    for name in names:
        while name:
            if name in derived:
                return True
            name, _, attr = name.rpartition(".")
            if attr == "data":
                break
    return False


def _backpropagates(ev: Event, derived: set) -> bool:
    """Whether backward or gradient query ``ev`` runs on a value named in ``derived``."""
    raw = ev.raw
    names = {raw.receiver} if getattr(raw, "receiver", None) else set()
    for a in getattr(raw, "args", ()):
        names.update(a.mentions)
    return bool(names & derived)


def _loss_module(unit: Unit, sym: str | None) -> bool:
    """A criterion: built as one somewhere (``loss_fct = FocalLoss(...) if focal else
    CrossEntropyLoss()``), or named as a loss function (``loss_fct``, ``criterion``)."""
    if sym is None:
        return False
    return sym in unit.roles.criteria or bool(CRITERION_NAME.search(last(sym)))


def _batch_loops(unit: Unit, fwd: Event) -> list[LoopInfo]:
    """The loops around a forward, less those over models: a loop whose target is the model
    (``[net(x) for net in nets]`` is one forward per model, not one per batch), and a loop
    whose every iteration builds the model anew before the forward (:func:`_built_per_iteration`:
    a unit test that checks a fresh random block in each of 100 configurations)."""
    func = fwd.raw.func or ""
    return [
        loop for loop in fwd.ctx.loops
        if func.split(".")[0] not in loop.targets and not _built_per_iteration(unit, fwd, loop)
    ]


def _built_per_iteration(unit: Unit, fwd: Event, loop: LoopInfo) -> bool:
    """Whether model ``fwd.subject`` is bound to a new object in each iteration of ``loop``
    before forward ``fwd``: an assignment to the model's symbol (or to a model holding it:
    ``block`` of ``block.head(x)``) directly in ``loop`` or in a loop inside it that holds the
    forward too (under no ``if`` of that loop's body), earlier in program order, whose value
    is a call's result (``block = Block(width)``, ``block, params = self.random_block()``,
    ``net = copy.deepcopy(base)``) computed from nothing the model's symbol names (not
    ``model = model.to(device)``) and not a method of a model the roles know (``net =
    self.net.eval()`` is the same object every time). Each iteration then runs its forwards on
    a model of its own, as a loop over models does."""
    model = fwd.subject
    if not model:
        return False
    for raw in unit.raws():
        if raw is fwd.raw:
            return False
        target = raw.target if isinstance(raw, Assign) and raw.op == "=" else None
        if not target or not (model == target or model.startswith(target + ".")):
            continue  # (a binding of the model or of a model holding it: `block` of `block.head(x)`)
        if not raw.ctx.loops or loop not in raw.ctx.loops or raw.ctx.loops[-1] not in fwd.ctx.loops or raw.ctx.conds:
            continue  # (in each iteration of a loop inside `loop` that holds the forward too: fresh in `loop`'s)
        if type(raw.value) is not cst.Call or raw.value_kind not in ("call", "part"):
            continue
        if any(m == target or m.startswith(target + ".") for m in raw.mentions):
            continue
        method = raw.value.func
        if type(method) is cst.Attribute:
            receiver = next((c.receiver for c in (raw.sources.calls if raw.sources else ()) if c.node is raw.value), None)
            if receiver is not None and unit.roles.role(unit.roles.canon(receiver)) == "model":
                continue
        return True
    return False


def _trains_in(unit: Unit, loop: LoopInfo) -> bool:
    """Whether a backward, an optimizer step or an opaque call runs inside ``loop``."""
    for ev in unit.events:
        if loop in ev.ctx.loops and (ev.kind in ("backward", "step", "zero_grad") or ev.kind == "havoc"):
            return True
    return False
