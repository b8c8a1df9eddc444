"""Gradient-order rules (LC101–LC105): where zero_grad, backward, clipping and step sit.

Knowledge: PyTorch accumulates into ``.grad`` on every ``backward()``;
``optimizer.step()`` applies whatever ``.grad`` holds; ``zero_grad()`` empties it
(torch.optim.Optimizer docs; seeds/annotated-training-loop.md, table "What breaks").

One typestate machine per optimizer tracks its gradients, over the parameters its groups
cover (the models whose parameters it takes, the tensors it was built from)::

    empty --backward--> filled --step--> applied --backward--> filled (stale)
      ^                   |                  |
      +----zero_grad------+ (wiped)          +--zero_grad--> empty

and each rule reads the states that reach one kind of event. The events are those that concern
the optimizer (:func:`touches`, :func:`reaches`): a backward whose loss can reach its
parameters, its own step, a ``zero_grad`` of it or of a model holding its parameters. Another
optimizer's step that applies the backward which filled these gradients marks them *spent*:
that backward was the other optimizer's (a GAN's generator loss runs through the
discriminator), and clearing what it left is no wipe. Gradients belong to parameters: zero_grads
of other optimizers or of models that each clear a part of the optimizer's models, and together
cover all of them after its step, clear what that step applied (:func:`cleared_part`). A loop that binds the optimizer's name
anew on each iteration (``for opt in optimizers:``) is followed once per optimizer.
"""

from __future__ import annotations

import re
from typing import Iterable, NamedTuple

import libcst as cst

from loopcheck.engine.dataflow import NOT_TAKEN, Machine
from loopcheck.engine.events import Event
from loopcheck.engine.grad_tests import decided_by_gradients, decided_by_unseen_call, related
from loopcheck.engine.ir import Assign, Call, If, Loop, walk_events
from loopcheck.engine.knowledge import knowledge
from loopcheck.engine.names import dotted_name
from loopcheck.engine.unit import Unit
from loopcheck.engine.values import definitions, loops as all_loops, written_for_before
from loopcheck.findings import Report
from loopcheck.catalog import INFOS
from loopcheck.rules.base import Rule, register

# The guard of a step skipped for gradient accumulation: a counter modulo, or a named flag.
# A run-constant option (``if args.use_optimizer:``) is not accumulation.
ACCUMULATION_TEST = re.compile(r"%|accum|sync_grad|update_freq|grad_acc", re.I)


class G(NamedTuple):
    """Gradient state of one optimizer.

    phase: ``unknown`` | ``absent`` (not built yet) | ``empty`` | ``filled`` | ``applied`` | ``wiped``.
    bw, step, zg: the last backward / step / wiping zero_grad event (or None).
    stale: gradients include contributions a previous step already applied (None: unknown).
    stepped: a step ran before on this path.
    skip: the step was skipped by a gradient-accumulation ``if`` (the step event in it).
    spent: the gradients were filled by a backward that another optimizer's step has applied
        since (a GAN's generator loss runs through the discriminator): that backward was the
        other optimizer's, and what it left in these gradients is for a zero_grad to clear.
    counted: while ``filled``, the counters (:func:`pure_counters`) incremented since the
        gradients were filled: each is positive on this path, so a test that the counter is
        zero is false (``if accum_count > 0:`` before a step that flushes what is left).
    none: while ``empty`` or ``wiped``, what the clear left in each ``.grad``: ``True`` None
        (``zero_grad()`` from PyTorch 2.0, ``set_to_none=True``, ``p.grad = None``), ``False``
        a tensor of zeros (``set_to_none=False``, ``zero_grad()`` before 2.0), ``None`` unknown,
        ``"default"`` a ``zero_grad()`` without ``set_to_none`` (decided where it matters).
        A gradient written into ``.grad`` in place (``p.grad.copy_(g)``) fills the gradients
        only where a tensor is there to write into.
    unseen: while ``filled`` or ``wiped``, the step skipped on this path since the gradients
        were filled (the step event in the arm not taken) by an ``if`` whose test computes from
        a call the analysis cannot see into that may reach the optimizer or its models
        (:func:`~loopcheck.engine.grad_tests.decided_by_unseen_call`): that call may have used
        the gradients (stepped a copy of the parameters) and said the step is done, so what
        they were used for on this path is not established.
    """

    phase: str
    bw: Event | None = None
    step: Event | None = None
    zg: Event | None = None
    stale: bool | None = False
    stepped: bool = False
    skip: Event | None = None
    spent: bool = False
    cleared: frozenset = frozenset()
    built: Event | None = None  # the construction of the optimizer on this path, when seen
    counted: frozenset = frozenset()
    none: bool | str | None = None
    unseen: Event | None = None


UNKNOWN = G("unknown", stale=None)
ABSENT = G("absent")  # the optimizer is built later in this unit


def built_here(unit: Unit, opt: str) -> bool:
    """Whether the unit itself constructs optimizer ``opt`` (before that, it does not exist)."""
    return any(e.kind == "opt_build" and e.subject == opt for e in unit.events)


def rebinding_loops(unit: Unit, opt: str) -> frozenset[int]:
    """``id``s of the loops in which the names of optimizer ``opt`` may name another optimizer
    on each iteration: the loop binds one as its target (``for opt in optimizers:``), or its
    body assigns one a value that is not ``opt`` itself (``opt = optimizers[i]``)."""
    roles = unit.roles
    info = roles.optimizers.get(opt)
    names = roles.names_of(opt)
    defs = definitions(unit)
    loops_of = {id(loop.info): loop for loop, _around in all_loops(unit)}
    out: set[int] = set()
    for name in names:
        for d in defs.get(name, ()):
            if isinstance(d, Loop):
                out.add(id(d))
            elif d is None or isinstance(d, Call) and (
                info is not None and info.builds(d)
                or d.receiver in names or any(not names.isdisjoint(a.mentions) for a in d.args)
            ):
                # x += ...: no re-binding; a construction is the machine's own event; a call
                # given the optimizer (accelerator.prepare(optimizer)) may return the same one
                continue
            elif not (isinstance(d, Assign) and d.value_sym and roles.canon(d.value_sym) == opt):
                out.update(id(loops_of[id(li)]) for li in d.ctx.loops if id(li) in loops_of)
    return frozenset(out)


def touches(unit: Unit, opt: str, ev: Event, built: Event | None = None) -> bool:
    """Whether ``ev`` (zero_grad of a model, clip, havoc, a ``.grad`` set) concerns optimizer
    ``opt``: the event names it, or a model whose parameters it takes (for ``model.zero_grad()``:
    a model that holds them, ``model`` for ``model.features``; ``built``: the construction of
    ``opt`` on this path, whose parameters are the ones that count), or a tensor it was built
    from (for a clip), or — when the optimizer's parameters are not known — possibly so."""
    info = unit.roles.optimizers.get(opt)
    models = info.models if info else set()
    if ev.kind == "zero_grad" and ev.subject is not None and ev.subject != opt and _share_param_groups(unit, opt, ev.subject):
        return True  # SAM: self.param_groups = self.base_optimizer.param_groups
    if ev.kind == "zero_grad_model":
        own = info.only_models(_ctors(built)) if info else None
        if own is not None:  # all its parameters are known models': it clears them all, or a part
            return all(_within(m, ev.subject) for m in own)
        return not models or any(_within(m, ev.subject) for m in models)
    if ev.kind == "havoc":
        return ev.subject == opt or ev.subject in models
    if ev.kind == "clip":
        if info is not None and info.params & ev.extra.get("params", frozenset()):
            return True  # it clips a tensor the optimizer was built from (Adam([log_alpha]))
        clip_models = ev.extra.get("models") or set()
        if clip_models and models:
            return bool(clip_models & models)
        if clip_models and info is not None and info.no_model:
            return False  # Adam([w]) does not step the clipped model
        return len(active_optimizers(unit)) == 1
    if ev.kind == "grad_set":
        base = ev.subject
        if info is None or base is None or any(v is None for v in info.by_ctor.values()) or not info.by_ctor:
            return True  # the optimizer's parameters are not known
        return any(t in info.params or any(t == m or t.startswith(m + ".") for m in models)
                   for t in (base, *drawn_from(ev, base)))
    return ev.subject == opt


def drawn_from(ev: Event, sym: str) -> frozenset[str]:
    """The symbols the object ``sym`` names at ``ev`` is an element of, when ``sym`` is the
    target of a ``for`` around ``ev`` whose elements come from a known part of its iterable
    (:attr:`~loopcheck.engine.ir.LoopInfo.drawn`): ``t`` of ``for t, s in zip(mirror,
    model.parameters()):`` is an element of ``mirror``, so ``t.grad = s.grad.clone()`` sets the
    gradient of a tensor of ``mirror``, not of the model. The innermost loop that binds the
    name counts."""
    for loop in reversed(ev.ctx.loops):
        for name, syms in loop.drawn:
            if sym == name or sym.endswith(":" + name):
                return syms
        if any(sym == t or sym.endswith(":" + t) for t in loop.targets):
            return frozenset()  # bound by this loop, from a part not known
    return frozenset()


def _share_param_groups(unit: Unit, a: str, b: str) -> bool:
    """Whether optimizers ``a`` and ``b`` hold the same parameter groups: one's
    ``param_groups`` is assigned the other's (``self.param_groups =
    self.base_optimizer.param_groups``, a wrapping optimizer such as SAM), or one is built from
    the other's (``base_optimizer(self.param_groups)``). ``zero_grad()`` of one then clears the
    gradients of the other's parameters."""
    pairs = unit.cached("optimizers sharing param_groups", lambda: _param_group_pairs(unit))
    names_a, names_b = unit.roles.names_of(a), unit.roles.names_of(b)
    return any(x in names_a and y in names_b or x in names_b and y in names_a for x, y in pairs)


def _param_group_pairs(unit: Unit) -> frozenset[tuple[str, str]]:
    """``(x, y)`` for each ``x.param_groups = y.param_groups`` and each construction of ``x``
    given ``y.param_groups``, in the unit."""
    out = set()
    roles = unit.roles
    for raw in unit.raws():
        if isinstance(raw, Assign):
            if raw.target and raw.target.endswith(".param_groups") and raw.value_sym and raw.value_sym.endswith(".param_groups"):
                out.add((roles.canon(raw.target[: -len(".param_groups")]), roles.canon(raw.value_sym[: -len(".param_groups")])))
        else:
            for t in raw.targets:
                for a in raw.args if t else ():
                    for m in a.mentions:
                        if m.endswith(".param_groups"):
                            out.add((roles.canon(t), roles.canon(m[: -len(".param_groups")])))
    return frozenset(out)


def _ctors(built: Event | None) -> tuple:
    """The construction an ``opt_build`` event stands for, as :meth:`OptimizerInfo.only_models`
    takes it (none: every construction)."""
    return (built.raw,) if built is not None and built.raw is not None else ()


def params_known(unit: Unit, opt: str, built: Event | None = None) -> bool:
    """Whether some of optimizer ``opt``'s parameters are known to be a model's (all of them,
    or at least one model it trains; ``built``: the construction of ``opt`` that counts, none:
    every construction): then a model's ``zero_grad()`` is known to clear them or not
    (:func:`touches`)."""
    info = unit.roles.optimizers.get(opt)
    return info is not None and (bool(info.models) or info.only_models(_ctors(built)) is not None)


def cleared_part(unit: Unit, opt: str, ev: Event, built: Event | None = None) -> frozenset[str]:
    """The models of optimizer ``opt`` whose gradients a ``zero_grad`` that does not concern
    ``opt`` as a whole (:func:`touches`) clears: of a model holding some of them, or of another
    optimizer that certainly takes their parameters (``opt_d.zero_grad()`` clears the ``D`` part
    of an optimizer over ``G`` and ``D``). Empty unless every parameter of ``opt`` is known to
    be a model's (:meth:`OptimizerInfo.only_models`): gradients belong to parameters, and a
    part is cleared only where the parameters are known."""
    roles = unit.roles
    info = roles.optimizers.get(opt)
    own = info.only_models(_ctors(built)) if info else None
    if own is None:
        return frozenset()
    if ev.kind == "zero_grad_model":
        clearing = {ev.subject}
    elif ev.kind == "zero_grad" and ev.subject is not None and ev.subject not in roles.names_of(opt):
        other = roles.optimizers.get(roles.canon(ev.subject))
        clearing = other.held_models() if other is not None else set()
    else:
        return frozenset()
    return frozenset(m for m in own if any(_within(m, c) for c in clearing))


def reaches(unit: Unit, opt: str, ev: Event) -> bool:
    """Whether a backward can fill optimizer ``opt``'s gradients: always, unless both the
    models its loss comes from and the models the optimizer trains are known, and disjoint
    (a discriminator loss on ``G(z).detach()`` does not reach the generator's optimizer)."""
    models = ev.extra.get("models")
    info = unit.roles.optimizers.get(opt)
    if models is None or info is None or not info.by_ctor or any(v is None for v in info.by_ctor.values()):
        return True
    return not info.models or any(related(m, o) for m in models for o in info.models)


def _within(part: str, whole: str | None) -> bool:
    """Model ``part`` is model ``whole`` or one of its submodules (``model.features`` is within
    ``model``): ``whole.zero_grad()`` clears ``part``'s gradients."""
    return whole is not None and (part == whole or part.startswith(whole + "."))


def present(states) -> set:
    """The states of the paths on which the optimizer exists."""
    return {s for s in states if s.phase != "absent"}


def active_optimizers(unit: Unit) -> list[str]:
    """Optimizers of the unit that step (the ones the gradient rules follow)."""
    key = ("active_optimizers",)
    if key not in unit._flows:
        seen: list[str] = []
        for ev in unit.events:
            if ev.kind == "step" and ev.subject not in seen:
                seen.append(ev.subject)
        unit._flows[key] = seen
    return unit._flows[key]


def _step_in(node, opt: str) -> Event | None:
    for raw in walk_events(node):
        for ev in raw.typed:
            if ev.kind == "step" and ev.subject == opt:
                return ev
    return None


def next_backward(unit: Unit, opt: str, after: Event) -> Event | None:
    """The first backward after ``after`` in its loop that can fill ``opt``'s gradients (a
    generator's reconstruction loss is not the discriminator's backward)."""
    loops = after.ctx.loops
    bw = unit.next_event(after, ("backward",))
    while bw is not None and not reaches(unit, opt, bw):
        bw = unit.next_event(bw, ("backward",), same_loop=False)
        if bw is not None and bw.ctx.loops[: len(loops)] != loops:
            bw = None
    return bw


def _has_backward(node) -> bool:
    return any(ev.kind == "backward" for raw in walk_events(node) for ev in raw.typed)


class GradientMachine(Machine):
    """Typestate of one optimizer's gradients (see module docstring)."""

    kinds = frozenset({'opt_build', 'backward', 'step', 'zero_grad', 'zero_grad_model', 'zero_grad_all', 'havoc', 'clip',
                       'grad_set'})
    #: followed only in a unit that has :func:`pure_counters` (elsewhere an ``if`` whose arm
    #: only resets a variable, ``if logged > 100: logged = 0``, stays free for the dataflow)
    counter_kinds = frozenset({'count_up', 'count_reset'})
    own_events_complete = True

    def __init__(self, unit: Unit, opt: str) -> None:
        self.unit = unit
        self.opt = opt
        self.subjects = unit.roles.names_of(opt)
        self._if_steps: dict[int, tuple] = {}
        self._unseen_tests: dict[int, bool] = {}
        self._rebinding = rebinding_loops(unit, opt)
        self._counters: frozenset[str] | None = None
        if self.counters():
            self.kinds = self.kinds | self.counter_kinds

    def initial(self) -> G:
        return ABSENT if built_here(self.unit, self.opt) else UNKNOWN

    def absent(self) -> G:
        return ABSENT

    def transfer(self, s: G, ev: Event) -> G:
        k = ev.kind
        if k == "count_up":
            if s.phase == "filled" and ev.extra["var"] not in s.counted and ev.extra["var"] in self.counters():
                return s._replace(counted=s.counted | {ev.extra["var"]})
            return s
        if k == "count_reset":
            return s._replace(counted=s.counted - {ev.extra["var"]}) if ev.extra["var"] in s.counted else s
        if k == "opt_build" and ev.subject == self.opt:
            return G("empty", built=ev)
        if s.phase == "absent":
            return s
        if k == "backward":
            if not reaches(self.unit, self.opt, ev):
                return s
            if s.phase in ("applied",):
                return s._replace(phase="filled", bw=ev, stale=True, spent=False)
            if s.phase in ("empty", "wiped"):
                return s._replace(phase="filled", bw=ev, zg=None, stale=False, skip=None, spent=False, unseen=None)
            if s.phase == "unknown":
                return G("filled", bw=ev, stale=None, built=s.built)
            return s._replace(bw=ev, spent=False)
        if k == "step" and ev.subject == self.opt:
            if ev.extra.get("closure"):
                return UNKNOWN
            return G("applied", bw=s.bw, step=ev, stale=s.stale, stepped=True, built=s.built)
        if k == "step":
            # another optimizer applies the backward that filled these gradients: it was its own
            if (s.phase == "filled" and not s.spent and s.bw is not None and s.bw.kind == "backward"
                    and ev.subject not in self.subjects and reaches(self.unit, ev.subject, s.bw)):
                return s._replace(spent=True)
            return s
        if k == "zero_grad_model" and not self._params_known(s.built) and touches(self.unit, self.opt, ev, s.built):
            # the optimizer's parameters are not known to be any model's: this zero_grad may
            # clear its gradients or other ones (a second optimizer over prompt embeddings)
            return G("unknown", stale=None, stepped=s.stepped, built=s.built)
        if (k in ("zero_grad", "zero_grad_model") and touches(self.unit, self.opt, ev, s.built)) or k == "zero_grad_all":
            none = ev.extra.get("set_to_none")  # ("default": read at an in-place write, _sets_none)
            if s.phase == "filled" and not s.spent:
                return G("wiped", bw=s.bw, zg=ev, stepped=s.stepped, skip=s.skip, built=s.built, none=none,
                         unseen=s.unseen)
            return G("empty", stepped=s.stepped, built=s.built, none=none)
        if k in ("zero_grad", "zero_grad_model"):
            part = cleared_part(self.unit, self.opt, ev, s.built)
            if part:
                return self._clear_part(s, part)
        if k == "havoc" and ev.may_change("grads") and touches(self.unit, self.opt, ev):
            return UNKNOWN
        if k == "grad_set" and touches(self.unit, self.opt, ev):
            if ev.extra.get("inplace") and s.phase in ("empty", "wiped"):
                # p.grad.copy_(g) writes into the tensor .grad holds: after a clear that set
                # .grad to None there is none (the write raises, or an ``if p.grad is not
                # None`` around it skips it), and the step still finds no gradient
                none = self._sets_none(s.none)
                if none is True:
                    return s
                if none is None:
                    return G("unknown", stale=None, stepped=s.stepped, built=s.built)
            return G("filled", bw=ev, stale=False, stepped=s.stepped, built=s.built)  # written by hand
        return s

    def acts(self, s: G, ev: Event) -> bool:
        """A backward that can fill these gradients acts on them also where the state stays
        ``filled`` (it adds to them)."""
        return ev.kind == "backward" and s.phase != "absent" and reaches(self.unit, self.opt, ev)

    def _sets_none(self, none) -> bool | None:
        """What a clear left in each ``.grad``, from :attr:`G.none` (a clear's ``set_to_none``,
        :meth:`loopcheck.engine.events._Typer.set_to_none`): ``"default"`` is read as the
        PyTorch the code is written for gives it (:func:`zero_grad_sets_none`), only here, at
        an in-place write after the clear (it reads the project's pins, which the cache then
        records as read)."""
        if none == "default":
            return self.unit.cached("zero_grad sets None", lambda: zero_grad_sets_none(self.unit))
        return none

    def _params_known(self, built: Event | None) -> bool:
        return params_known(self.unit, self.opt, built)

    def _clear_part(self, s: G, part: frozenset) -> G:
        """A zero_grad clears the gradients of ``part`` of the optimizer's models. It matters
        only to gradients a step of the optimizer already applied: once such clears cover all
        its models, none of what that step applied is left (empty, or only backwards since)."""
        if s.phase not in ("applied", "filled") or s.phase == "filled" and s.stale is not True:
            return s
        cleared = s.cleared | part
        own = self.unit.roles.optimizers[self.opt].only_models(_ctors(s.built)) or set()
        if not own <= cleared:
            return s._replace(cleared=cleared)
        if s.phase == "applied":
            return G("empty", stepped=s.stepped, built=s.built)
        return s._replace(stale=False, cleared=frozenset())

    def rebinds(self, loop: Loop) -> bool:
        # ``for opt in optimizers: opt.step()`` steps each optimizer once
        return id(loop) in self._rebinding

    def branches_on(self, node: If) -> bool:
        # it decides only an ``if`` with a step of its optimizer in one arm: that ``if`` holds
        # an event of its kinds, which is enough for the dataflow to follow its arms
        return False

    def counters(self) -> frozenset[str]:
        """The unit's :func:`pure_counters` (computed once per unit)."""
        if self._counters is None:
            self._counters = self.unit.cached("pure counters", lambda: pure_counters(self.unit))
        return self._counters

    def branch(self, s: G, node: If, taken: bool) -> G:
        if s.phase == "wiped" and _absent_grad_arm(node) is taken and self._sets_none(s.none) is False:
            # ``if p.grad is not None: p.grad.copy_(g)`` after a clear that left zeros: every
            # gradient the backward filled is still a tensor, so the arm where it is None skips
            # only parameters the backward gave none (nothing of theirs was wiped)
            return NOT_TAKEN
        if s.phase != "filled":
            return s
        if s.counted:
            zero = _zero_test(node, s.counted)
            if zero is not None and zero == taken:
                return NOT_TAKEN  # the counter is positive since the backward: it is not zero
        key = id(node)
        if key not in self._if_steps:
            test = node.node.test if hasattr(node.node, "test") else None
            accum = test is not None and ACCUMULATION_TEST.search(cst.Module([]).code_for_node(test))
            self._if_steps[key] = (
                accum, _step_in(node.body, self.opt), _step_in(node.orelse, self.opt),
                _has_backward(node.body), _has_backward(node.orelse),
            )
        accum, in_body, in_else, bw_body, bw_else = self._if_steps[key]
        other, mine, other_bw = (in_else, in_body, bw_else) if taken else (in_body, in_else, bw_body)
        if other is None or mine is not None or other_bw:
            return s  # not the arm that skips the step
        if accum:
            s = s._replace(skip=other)
        if self._skipped_by_unseen_call(node, other):
            s = s._replace(unseen=other)
        return s

    def _skipped_by_unseen_call(self, node: If, step: Event) -> bool:
        """Whether the test of ``node``, an ``if`` with ``step`` in one arm only, computes from a
        call the analysis cannot see into (:func:`decided_by_unseen_call`; once per ``if``)."""
        key = id(node)
        if key not in self._unseen_tests:
            self._unseen_tests[key] = node.test is not None and step.raw is not None and decided_by_unseen_call(
                self.unit, self.opt, node.test, step.raw)
        return self._unseen_tests[key]


def zero_grad_sets_none(unit: Unit) -> bool:
    """Whether ``zero_grad()`` without ``set_to_none`` sets each ``.grad`` to None in the
    unit's code: from PyTorch 2.0 (``[since] zero_grad_set_to_none``, ``knowledge/torch.toml``)
    it does, before it filled them with zeros; ``False`` when the code is established to be
    written for an older PyTorch (the project pins one, :func:`~loopcheck.engine.pins.pinned_before`,
    or it makes a call that only means something before that version,
    :func:`~loopcheck.engine.values.written_before`)."""
    return written_for_before(unit, "zero_grad_set_to_none") is not True


def _absent_grad_arm(node: If) -> bool | None:
    """For an ``if`` that tests whether a tensor's ``.grad`` is None (``p.grad is not None``,
    ``p.grad is None``) and, in the arm where it is not, writes that ``.grad`` in place
    (``p.grad.copy_(g)``, a ``grad_set`` event of ``p`` with ``inplace``): whether the arm
    where ``.grad`` is None is the body (``True``) or the else arm (``False``); else ``None``."""
    test = node.test
    if not isinstance(test, cst.Comparison) or len(test.comparisons) != 1:
        return None
    comp = test.comparisons[0]
    op = type(comp.operator)
    if op not in (cst.Is, cst.IsNot) or not (isinstance(comp.comparator, cst.Name) and comp.comparator.value == "None"):
        return None
    left = test.left
    if not (isinstance(left, cst.Attribute) and left.attr.value == "grad"):
        return None
    owner = dotted_name(left.value)
    if owner is None:
        return None
    present = node.body if op is cst.IsNot else node.orelse
    written = any(
        ev.kind == "grad_set" and ev.extra.get("inplace") and ev.subject is not None
        and (ev.subject == owner or ev.subject.endswith(":" + owner))
        for raw in walk_events(present) for ev in raw.typed
    )
    return (op is cst.Is) if written else None


def pure_counters(unit: Unit) -> frozenset[str]:
    """The variables of ``unit`` that only ever count up from a literal: every assignment to
    the name is ``n = <integer>`` or ``n += <positive integer>`` (events ``count_reset`` and
    ``count_up``), and no loop binds it. Such a counter, once incremented after a backward,
    stays positive until it is assigned again."""
    counts: set[str] = set()
    other: set[str] = set()
    for raw in unit.raws():
        for loop in raw.ctx.loops:
            other.update(t.rpartition(":")[2] for t in loop.targets)
        if not isinstance(raw, Assign) or raw.target is None:
            continue
        var = raw.target.rpartition(":")[2]
        if any(ev.kind in ("count_up", "count_reset") for ev in raw.typed):
            counts.add(var)
        else:
            other.add(var)
    return frozenset(counts - other)


def _zero_test(node: If, counters: frozenset[str]) -> bool | None:
    """For an ``if`` whose test compares one of ``counters`` (a count, never negative) with
    zero: ``True`` when the test holds exactly when the counter is zero (``n == 0``, ``not n``,
    ``n < 1``), ``False`` when it holds exactly when it is positive (``n > 0``, ``n``, ``n != 0``,
    ``n >= 1``); else ``None``."""
    test = node.test
    negated = False
    while isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        test, negated = test.expression, not negated
    if isinstance(test, cst.Name):
        return negated if test.value in counters else None
    if not isinstance(test, cst.Comparison) or len(test.comparisons) != 1:
        return None
    left, comp = test.left, test.comparisons[0]
    right, op = comp.comparator, type(comp.operator)
    if isinstance(left, cst.Integer) and isinstance(right, cst.Name):  # 0 < n: n > 0
        left, right = right, left
        op = {cst.LessThan: cst.GreaterThan, cst.GreaterThan: cst.LessThan, cst.LessThanEqual: cst.GreaterThanEqual,
              cst.GreaterThanEqual: cst.LessThanEqual}.get(op, op)
    if not (isinstance(left, cst.Name) and left.value in counters and isinstance(right, cst.Integer)):
        return None
    k = right.evaluated_value
    zero = {(cst.Equal, 0): True, (cst.NotEqual, 0): False, (cst.GreaterThan, 0): False,
            (cst.GreaterThanEqual, 1): False, (cst.LessThan, 1): True, (cst.LessThanEqual, 0): True}.get((op, k))
    return None if zero is None else zero != negated


def gradient_flow(unit: Unit, opt: str):
    return unit.flow(("grad", opt), lambda: GradientMachine(unit, opt))


#: The names through which code reaches gradients outside the events the machine types: a
#: tensor's gradient (``p.grad = g``, ``p.grad.copy_(g)``, ``p.grad += g``, ``torch.autograd.grad``)
#: and the backward of a graph (``engine.backward(loss)``, ``getattr(loss, "backward")()``).
GRADIENT_NAMES = frozenset({"grad", "backward"})
#: Builtins and dunder methods that read or set an attribute named by a value (``setattr(p,
#: "grad", g)``, ``p.__setattr__("grad", g)``, ``getattr(loss, name)()``).
ATTRIBUTE_BY_NAME = frozenset({"setattr", "getattr", "delattr", "__setattr__", "__getattribute__",
                               "__getattr__", "__delattr__", "vars", "__dict__"})
#: The methods of Python's list, dict and set: on a container the code builds as a display they
#: run no code of a library or of the project.
CONTAINER_METHODS = frozenset({
    "append", "extend", "insert", "pop", "clear", "remove", "copy", "index", "count", "reverse",
    "update", "get", "setdefault", "keys", "values", "items", "popitem", "add", "discard",
})
_DISPLAYS = (cst.List, cst.Tuple, cst.Dict, cst.Set, cst.ListComp, cst.DictComp, cst.SetComp)


def _names_gradients(tree: cst.CSTNode | None) -> bool:
    """Whether the code of ``tree`` names a gradient or a backward anywhere (an attribute or a
    name ``grad``/``backward``, a string ``"grad"``/``"backward"``) or reads or sets an
    attribute by a name given as a value (``setattr``, ``getattr``, ``__setattr__``): it may
    write gradients in a form the events do not type. ``True`` when there is no tree."""
    if tree is None:
        return True
    stack = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, cst.Attribute) and (node.attr.value in GRADIENT_NAMES or node.attr.value in ATTRIBUTE_BY_NAME):
            return True
        if isinstance(node, cst.Name) and (node.value in GRADIENT_NAMES or node.value in ATTRIBUTE_BY_NAME):
            return True
        if isinstance(node, cst.SimpleString) and node.evaluated_value in GRADIENT_NAMES:
            return True
        stack.extend(node.children)
    return False


def _touches_gradients(raw) -> bool:
    """Whether raw event ``raw`` (of any function the unit inlines, another module's too)
    reaches a gradient or a backward by name: an assignment to an attribute ``grad`` or inside
    one (``p.grad = g``, ``p.grad.data = g``, ``p.grad += g``), a call of a method or function
    named ``grad``/``backward``, a call on a ``.grad`` (``p.grad.copy_(g)``), one that sets or
    reads an attribute by name, or one whose callee is computed (``getattr(loss, name)()``)."""
    if isinstance(raw, Assign):
        return raw.target is not None and "grad" in re.split(r"[.:]", raw.target)
    if not isinstance(raw, Call):
        return False
    if raw.func is None:
        return True
    name = raw.func.rpartition(".")[2]
    if name in GRADIENT_NAMES or name in ATTRIBUTE_BY_NAME:
        return True
    used = [raw.receiver or ""] + list(raw.operands)
    return any("grad" in re.split(r"[.:]", u) for u in used)


def _unknown_method_call(unit: Unit, raw) -> bool:
    """Whether ``raw`` is a method call that may run a backward the events do not type: not
    inlined, typed as nothing, on a receiver of no role and no known type, of a method that is
    no tensor method the knowledge describes, nor a container method on a list, dict or set the
    unit builds as a display (``lrs.append(lr)``). What an unknown method of an unknown object
    does is not known (``engine.step_batch()``)."""
    if not isinstance(raw, Call) or raw.inlined or raw.typed or raw.qualified or raw.receiver is None:
        return False
    roles = unit.roles
    recv = roles.canon(raw.receiver)
    if roles.role(recv) is not None or recv in roles.types:
        return False
    if knowledge().method("torch.Tensor", raw.method or "") is not None:
        return False
    if raw.method in CONTAINER_METHODS:
        built = [r for r in unit.raws() if isinstance(r, Assign) and r.target == raw.receiver and r.op == "="]
        if built and all(isinstance(r.value, _DISPLAYS) for r in built):
            return False
    return True


def may_write_gradients(unit: Unit) -> bool:
    """Whether something in the program may write a gradient in a form the gradient machine
    does not type (:func:`_touches_gradients` of an event, :func:`_names_gradients` of the
    unit's module, :func:`_unknown_method_call`): then that no step applies a gradient is not
    established."""
    if any(may_fill_gradients(unit, raw) for raw in unit.raws()):
        return True
    return _names_gradients(getattr(unit.module, "tree", None))


def may_fill_gradients(unit: Unit, raw) -> bool:
    """Whether raw event ``raw`` may run a backward or write a gradient in a form the events
    do not type: it reaches a gradient or a backward by name (:func:`_touches_gradients`) or is
    an unknown method of an unknown object (:func:`_unknown_method_call`)."""
    return _touches_gradients(raw) or _unknown_method_call(unit, raw)


def applies_no_gradient(unit: Unit, opt: str) -> bool:
    """Whether it is established that no ``step()`` of optimizer ``opt`` applies a gradient:
    the unit builds ``opt`` (of a class whose ``step()`` is not the project's own), steps it
    without a closure, and on every path that reaches one of its steps the gradients are
    *empty* or *applied* with no backward reaching ``opt`` (nor a ``.grad`` written by hand)
    ever before (:class:`GradientMachine`: a loop that steps the optimizer and a scheduler to
    plot the LR curve, with no forward, loss or backward). A backward in a function the loop
    calls is inlined and counts; a call that may change the gradients (an unknown function given
    the model or the optimizer) leaves them *unknown*; and nothing is established (``False``)
    when the program may write a gradient in a form the machine does not type
    (:func:`may_write_gradients`: a ``.grad`` stored, set by ``setattr`` or changed in place,
    ``autograd.grad``, a ``backward`` of anything, an unknown method of an unknown object)."""
    info = unit.roles.optimizers.get(opt)
    if info is None or not built_here(unit, opt) or info.own_step:
        return False  # a step of the project's own may update the parameters by other means
    steps = unit.of_subject(opt, "step")
    if not steps or any(ev.extra.get("closure") for ev in steps) or may_write_gradients(unit):
        return False
    flow = gradient_flow(unit, opt)
    seen = False
    for ev in steps:
        for s in present(flow.states(ev)):
            if s.phase not in ("empty", "applied") or s.bw is not None:
                return False
            seen = True
    return seen


def _steps(unit: Unit) -> Iterable[tuple[Event, set]]:
    """Each ``optimizer.step()`` inside a loop with the gradient states that reach it."""
    for opt in active_optimizers(unit):
        flow = gradient_flow(unit, opt)
        for ev in unit.of_kind("step"):
            if ev.subject == opt and ev.ctx.loops:
                yield ev, present(flow.states(ev))


def _clips(unit: Unit) -> Iterable[tuple[Event, str, set]]:
    for ev in unit.of_kind("clip"):
        if ev.extra.get("measure_only"):
            continue
        for opt in active_optimizers(unit):
            if touches(unit, opt, ev):
                yield ev, opt, present(gradient_flow(unit, opt).states(ev))


@register
class ClipBeforeBackward(Rule):
    """LC101: a clip concerning optimizer ``O`` runs while, on every path, ``O``'s gradients are
    empty (cleared, no backward reaching ``O`` since) or already applied by ``O.step()``, and
    empty on at least one. The gradients start empty only where the unit builds ``O`` (a lookup,
    ``getattr(self, name)``, builds nothing), else unknown (see ``rules/LC101.md``, "Reported
    when")."""

    info = INFOS["LC101"]

    def check(self, unit: Unit) -> Iterable[Report]:
        for ev, opt, states in _clips(unit):
            phases = {s.phase for s in states}
            if not phases or phases - {"empty", "applied"} or phases == {"applied"}:
                continue
            bw = next_backward(unit, opt, ev)
            related = [(bw.node, "backward() fills .grad only here")] if bw else []
            yield Report(
                self.info.code, ev.node,
                lambda d, ev=ev, bw=bw: (
                    f"{d.call(ev.node)} runs before {d.call(bw.node)} (line {d.line(bw.node)}), on empty gradients"
                    if bw else f"{d.call(ev.node)} runs before any backward(), on empty gradients"
                ),
                related,
                note=lambda d: (
                    "The gradients it clips are empty or were already applied by the previous step, so the step "
                    "that follows applies unclipped gradients (measured, CPU, torch 2.13: 32/32 steps unclipped, "
                    "gradient norm up to 1.97 x max_norm). Clip between backward() and step()."
                ),
                at=ev, related_at=(bw,) if bw else (),
            )


@register
class ClipAfterStep(Rule):
    """LC102 clip-after-step.

    Reported when: a clip concerning optimizer ``O`` (:func:`touches`; not a measurement) runs
    while, on every path that reaches it where ``O`` exists, ``O``'s gradients are *applied*:
    ``O.step()`` ran and no backward reaching ``O``, no ``zero_grad`` concerning ``O``, no ``.grad``
    written by hand and no call that may change ``O``'s gradients ran since (:class:`GradientMachine`).
    Silent when any such path has them empty, filled or unknown (``O`` not built in the unit and
    not stepped yet, ``step(closure)``), and for a clip inside the ``step()`` of an optimizer class
    of the project (it clips before that step updates the parameters). The clip need not be in a
    loop (see ``rules/LC102.md``)."""

    info = INFOS["LC102"]

    def check(self, unit: Unit) -> Iterable[Report]:
        for ev, _opt, states in _clips(unit):
            if not states or any(s.phase != "applied" for s in states):
                continue
            step = next(s.step for s in states)
            if step is not None and any(c is step.node for c in ev.ctx.calls):
                continue  # a clip inside the optimizer's own step(), before its update (BertAdam's max_grad_norm)
            yield Report(
                self.info.code, ev.node,
                lambda d, ev=ev, step=step: (
                    f"{d.call(ev.node)} runs after {d.call(step.node)} at line {d.line(step.node)}: "
                    "the step was not clipped"
                ),
                [(step.node, "the step that already applied the gradients")],
                note=lambda d: (
                    "Clipping after optimizer.step() changes gradients that were already applied, so clipping has "
                    "no effect (measured, CPU, torch 2.13: 32/32 steps unclipped, gradient norm up to "
                    "1.97 x max_norm). Clip between backward() and step()."
                ),
                at=ev, related_at=(step,),
            )


def applied_backwards(unit: Unit, opt: str, flow) -> frozenset[int]:
    """``id``s of the backwards (and hand-written gradients) whose gradients a step of optimizer
    ``opt`` applies on some path: a state filled by them reaches one of ``opt``'s steps. A
    backward not among them fills ``opt``'s parameters only where ``opt`` does not step before
    they are cleared: its loss is another optimizer's, and what it leaves in ``opt``'s
    parameters is a by-product (TD3's actor loss runs through the critic on the iterations on
    which only the actor steps)."""
    return frozenset(
        id(s.bw) for ev in unit.of_kind("step") if ev.subject == opt
        for s in flow.states(ev) if s.phase == "filled" and s.bw is not None
    )


def made_by_framework(ev: Event) -> str | None:
    """The name of the framework whose loop makes the call of event ``ev`` itself (the optimizer
    step it runs after the user's hooks, :attr:`~loopcheck.engine.ir.Call.framework`), else ``None``."""
    return getattr(ev.raw, "framework", None)


def _hook_of(ev: Event) -> str | None:
    """The name of the user's method a framework's loop called that holds event ``ev`` (the
    outermost inlined call, when it is a method the loop calls by its definition: a hook it
    runs after the backward), else ``None``."""
    calls = ev.ctx.calls
    return calls[0].name.value if calls and type(calls[0]) is cst.FunctionDef else None


@register
class ZeroGradBetweenBackwardAndStep(Rule):
    """LC103: a ``zero_grad`` concerning optimizer ``O`` clears, on some path, the gradients of a
    backward no other optimizer's step has applied, before ``O.step()`` (in the ``zero_grad``'s
    loop, no backward in between, not skipped by accumulation); or it runs every iteration
    while ``O``'s accumulation-guarded step was skipped, over gradients of a backward that some
    step of ``O`` applies on another path (:func:`applied_backwards`) and that no other
    optimizer's step has applied since (:attr:`G.spent`: a by-product, as in the first form). An ``except`` arm entered
    where the backward (or another event of ``O``'s gradients) itself raised is no path of the
    ordering (:attr:`~loopcheck.engine.dataflow.Machine.own_events_complete`): a ``zero_grad``
    there clears what a failed call left. A ``zero_grad`` under a test that reads ``O``'s
    gradients (:func:`~loopcheck.engine.grad_tests.decided_by_gradients`: a step skipped on non-finite gradients) decides
    about them and is not reported. A path on which ``O``'s step was skipped by an ``if`` whose
    test computes from a call the analysis cannot see into (:attr:`G.unseen`,
    :func:`~loopcheck.engine.grad_tests.decided_by_unseen_call`) counts for neither form: that
    call may have used the gradients. Where ``O.step()`` is a framework's own call
    (:func:`made_by_framework`), the message names that step and the hook it follows (see
    ``rules/LC103.md``)."""

    info = INFOS["LC103"]

    def check(self, unit: Unit) -> Iterable[Report]:
        for opt in active_optimizers(unit):
            flow = gradient_flow(unit, opt)
            reported = set()
            applied = None  # (applied_backwards, computed at the first accumulation candidate)
            for ev in unit.events:
                states = present(flow.states(ev))
                if ev.kind == "step" and ev.subject == opt:
                    for s in unit.in_order(states, "zg", "bw"):
                        if (
                            s.phase == "wiped" and s.zg is not None and s.skip is None and s.unseen is None
                            and id(s.zg) not in reported and unit.order(s.bw) < unit.order(s.zg)
                            # zero_grad in the backward's loop or an enclosing one (after the
                            # micro-batch loop that accumulates), and the step in zero_grad's loop
                            and s.bw.ctx.loops[:len(s.zg.ctx.loops)] == s.zg.ctx.loops
                            and ev.ctx.loops == s.zg.ctx.loops
                            and not decided_by_gradients(unit, opt, s.zg, lambda clip: touches(unit, opt, clip))
                        ):
                            reported.add(id(s.zg))
                            yield self._wiped(s, ev)
                elif ev.kind in ("zero_grad", "zero_grad_model") and touches(unit, opt, ev) or ev.kind == "zero_grad_all":
                    for s in unit.in_order(states, "skip", "bw"):
                        if (
                            s.phase == "filled" and s.skip is not None and s.unseen is None and not s.spent
                            and id(ev) not in reported
                            and ev.ctx.loops and s.skip.ctx.loops and ev.ctx.loops[-1] is s.skip.ctx.loops[-1] and not ev.ctx.conds
                        ):
                            if applied is None:
                                applied = applied_backwards(unit, opt, flow)
                            if id(s.bw) not in applied:
                                continue  # gradients the optimizer's step never applies: a by-product
                            reported.add(id(ev))
                            yield self._accumulation(s, ev)

    def _wiped(self, s: G, step: Event) -> Report:
        zg, bw = s.zg, s.bw
        framework = made_by_framework(step)
        if framework is None:
            related = [(bw.node, "backward() that filled the gradients"), (step.node, "step() that then sees none")]

            def message(d) -> str:
                return (f"{d.call(zg.node)} runs between backward() (line {d.line(bw.node)}) and "
                        f"{d.call(step.node)} (line {d.line(step.node)})")
        else:
            # the step is the framework's own call: its node is the optimizer the user's code
            # hands over, not a step() to quote
            hook = _hook_of(zg)
            after = f"after {hook}()" if hook else "next"
            filled = ("backward() that filled the gradients" if made_by_framework(bw) is None
                      else f"{framework} runs backward() on the loss this method returns")
            related = [(bw.node, filled), (step.node, f"the optimizer {framework} steps {after}, on no gradients")]

            def message(d) -> str:
                return (f"{d.call(zg.node)} runs between backward() (line {d.line(bw.node)}) and "
                        f"the optimizer step {framework} runs {after}")
        return Report(
            self.info.code, zg.node,
            message,
            related,
            note=lambda d: (
                "The step sees no gradients, so the parameters do not move (measured, CPU, torch 2.13: 32/32 "
                "steps found no gradient, total parameter movement 0). Call zero_grad() before backward() "
                "or after step()."
            ),
            at=zg, related_at=(bw, step),
        )

    def _accumulation(self, s: G, zg: Event) -> Report:
        step, bw = s.skip, s.bw
        return Report(
            self.info.code, zg.node,
            lambda d: (
                f"{d.call(zg.node)} runs every iteration but {d.call(step.node)} (line {d.line(step.node)}) "
                "only on some"
            ),
            [(step.node, "the conditional step"), (bw.node, "backward() whose gradients are cleared")],
            note=lambda d: (
                f"The gradients {d.call(bw.node)} at line {d.line(bw.node)} accumulates are cleared before the "
                "conditional step uses them, so each step applies one micro-batch. Move zero_grad() under the "
                "step's condition, after the step."
            ),
            at=zg, related_at=(step, bw),
        )


def _forward_before(unit: Unit, step: Event) -> bool:
    """Whether a forward runs in ``step``'s innermost loop before it, in the same iteration: the
    step then falls between a forward and the backward of its loss."""
    return any(unit.order(f) < unit.order(step) for f in unit.in_loop(step.ctx.loops[-1], "forward"))


@register
class StepBeforeBackward(Rule):
    """LC104: ``O.step()`` in a loop runs while, on every path, ``O``'s gradients are empty or
    hold only a backward later in the loop body, and a backward that can reach ``O`` follows in
    the same loop; where they may hold that later backward (the previous iteration's), a
    forward also runs before the step in the iteration (a step first in the iteration is
    step-first accumulation). See ``rules/LC104.md``."""

    info = INFOS["LC104"]

    def check(self, unit: Unit) -> Iterable[Report]:
        for ev, states in _steps(unit):
            if ev.extra.get("closure"):
                continue
            # gradients emptied, or only from a backward later in the loop body (the previous
            # iteration's); a wipe after a backward of this iteration is LC103's, not this rule's
            if not states or not all(
                s.phase == "empty" or s.phase in ("filled", "wiped") and unit.order(s.bw) > unit.order(ev)
                for s in states
            ):
                continue
            bw = next_backward(unit, ev.subject, ev)
            if bw is None or bw.ctx.loops != ev.ctx.loops:
                continue
            if not all(s.phase == "empty" for s in states) and not _forward_before(unit, ev):
                continue  # a step first in the iteration applies the previous iterations' gradients
            yield Report(
                self.info.code, ev.node,
                lambda d, ev=ev, bw=bw: (
                    f"{d.call(ev.node)} runs before {d.call(bw.node)} at line {d.line(bw.node)}: "
                    "it applies no gradient of this batch"
                ),
                [(bw.node, "backward() that comes after the step")],
                note=lambda d: (
                    "The gradients are empty (or the previous iteration's) when the step runs (measured, CPU, "
                    "torch 2.13: 32/32 steps ran before their batch's backward). Call step() after backward()."
                ),
                at=ev, related_at=(bw,),
            )


@register
class MissingZeroGrad(Rule):
    """LC105: ``O.step()`` in a loop applies, on some path, a backward added onto gradients
    ``O``'s previous step already applied, where that previous step is this one or one after it
    in the loop (the gradients outlive an iteration: nothing clears them between steps), with no
    path on which ``O``'s state is unknown or cleared (see ``rules/LC105.md``). A second step
    later in the same iteration over gradients an earlier step applied is another harm (the
    same gradients applied twice), not this one."""

    info = INFOS["LC105"]

    def check(self, unit: Unit) -> Iterable[Report]:
        reported = set()
        for ev, states in _steps(unit):
            if not any(s.phase == "filled" and s.stale is True
                       and (s.step is None or unit.order(s.step) >= unit.order(ev)) for s in states):
                continue
            if any(s.phase in ("unknown", "wiped") for s in states):
                continue
            if any(s.phase == "filled" and s.stale is False and s.stepped for s in states):
                continue
            bw = next(s.bw for s in states if s.stale)
            if id(bw) in reported:  # one finding per backward, however many steps apply it
                continue
            reported.add(id(bw))
            yield Report(
                self.info.code, ev.node,
                lambda d, ev=ev, bw=bw: (
                    f"nothing clears the gradients: each {d.call(ev.node)} applies the sum of every "
                    f"{d.call(bw.node)} (line {d.line(bw.node)}) so far"
                ),
                [(bw.node, "backward() that adds to .grad every iteration")],
                note=lambda d: (
                    "backward() adds into .grad; without zero_grad() every step applies all past gradients "
                    "(measured, CPU, torch 2.13: the last step's gradient summed 32 backward passes). Call "
                    "optimizer.zero_grad() once per step."
                ),
                at=ev, related_at=(bw,),
            )
