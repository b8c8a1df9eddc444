"""Checkpoint rules (LC801–LC802): a "best" state that is not a copy, and a resume that leaves
the optimizer or scheduler state behind.

Knowledge (``loopcheck/knowledge/torch.toml``): ``Module.state_dict()`` returns references to
the live parameter and buffer tensors, which every later ``optimizer.step()`` changes in place
(``copy.deepcopy(model.state_dict())`` or ``{k: v.clone() ...}`` is a snapshot);
``load_state_dict()`` copies tensors in. Resuming needs the optimizer's state (Adam's moment
estimates) and the scheduler's position: "Resuming without them is equivalent to restarting the
optimiser cold" (seeds/annotated-training-loop.md, checkpoints).
"""

from __future__ import annotations

from typing import Iterable, NamedTuple

import libcst as cst

from loopcheck.engine.dataflow import Machine
from loopcheck.engine.events import Event
from loopcheck.engine.ir import Assign, Call, walk_events
from loopcheck.engine.knowledge import knowledge
from loopcheck.engine.roles import last
from loopcheck.engine.unit import Unit
from loopcheck.engine.classes import is_module_class
from loopcheck.engine.values import all_calls, definitions, raw_call
from loopcheck.findings import Report
from loopcheck.catalog import INFOS
from loopcheck.rules.base import Rule, register


# -- LC801 ----------------------------------------------------------------------------------


def _state_ref(unit: Unit, node: cst.CSTNode, near, of: str = "model") -> Event | None:
    """The ``state_ref`` event of a ``x.state_dict()`` call node (``of``: what ``x`` is), in the
    inlined call of ``near``."""
    raw = raw_call(unit, node, near)
    if raw is None:
        return None
    return next((ev for ev in raw.typed if ev.kind == "state_ref" and ev.extra.get("of") == of), None)


def live_refs(unit: Unit, value: cst.BaseExpression | None, near) -> list[Event]:
    """The ``model.state_dict()`` calls whose live tensors an expression's value holds: the call
    itself, a dict/list/tuple display holding it, or a comprehension over its ``items()`` /
    ``values()`` that keeps the tensors (``v``, ``v.detach()``, ``v.data`` share storage; any other
    call, ``v.clone()``, ``copy.deepcopy(...)``, makes a copy)."""
    if value is None:
        return []
    ev = _state_ref(unit, value, near)
    if ev is not None:
        return [ev]
    if isinstance(value, (cst.Dict, cst.List, cst.Tuple)):
        out = []
        for el in value.elements:
            inner = getattr(el, "value", None)
            out += live_refs(unit, inner, near)
        return out
    if isinstance(value, cst.DictComp) and isinstance(value.for_in.iter, cst.Call):
        it = value.for_in.iter
        if isinstance(it.func, cst.Attribute) and it.func.attr.value in ("items", "values"):
            refs = live_refs(unit, it.func.value, near)
            if refs and _keeps(value.value):
                return refs
    return []


def _keeps(expr: cst.BaseExpression) -> bool:
    """An element expression that holds the same storage as the loop variable."""
    if isinstance(expr, cst.Name):
        return True
    if isinstance(expr, cst.Attribute) and expr.attr.value == "data":
        return _keeps(expr.value)
    if isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute) and not expr.args:
        summary = knowledge().method("torch.Tensor", expr.func.attr.value)
        if summary is not None and summary.returns is not None and summary.returns.value == "detached":
            return _keeps(expr.func.value)
    return False


def _constant(value: cst.BaseExpression | None) -> bool:
    """``None``, ``{}``, ``[]`` or a number: the initial value of a 'best' holder."""
    if isinstance(value, cst.Name):
        return value.value == "None"
    if isinstance(value, (cst.Dict, cst.List)):
        return not value.elements
    return isinstance(value, (cst.Integer, cst.Float))


class Snap(NamedTuple):
    """``snap``: the state_dict() whose tensors the holder references; ``step``: the optimizer
    step that changed them since (``None``: still the snapshot's values)."""

    snap: Event | None
    step: Event | None = None


class SnapshotMachine(Machine):
    """For one holder of a live state dict: has a step changed the tensors since it was taken?

    The holder is the machine's subject: a local of an inlined call holds nothing once the call
    returns (the next call of the function starts with its own variable), and in the arm of
    ``if holder is None:`` it holds no snapshot."""

    kinds = frozenset({"state_ref", "step", "load_state", "save"})

    def __init__(self, unit: Unit, snaps: dict[int, str], model: str, holder: str) -> None:
        self.snaps = snaps  # id(state_dict node) -> model
        self.model = model
        self.unit = unit
        self.subjects = frozenset({holder})

    def initial(self) -> Snap:
        return Snap(None)

    def absent(self) -> Snap:
        return Snap(None)

    def transfer(self, s: Snap, ev: Event) -> Snap:
        if ev.kind == "state_ref" and id(ev.node) in self.snaps:
            return Snap(ev)
        if ev.kind == "step" and s.snap is not None and s.step is None and _updates(self.unit, ev, self.model):
            return s._replace(step=ev)
        return s


def _updates(unit: Unit, step: Event, model: str) -> bool:
    info = unit.roles.optimizers.get(step.subject)
    models = info.models if info is not None else set()
    return not models or model in models


def _mentions(ev: Event, holder: str) -> bool:
    arg = ev.extra.get("state") if ev.kind == "load_state" else ev.extra.get("arg")
    return arg is not None and (arg.sym == holder or holder in arg.mentions)


@register
class BestStateNotCopied(Rule):
    """LC801 best-state-not-copied.

    Reported when: a holder (:meth:`_holders`: a name every definition of which is a live
    ``M.state_dict()`` of one model, directly, in a display or a sharing comprehension, or a
    constant) is mentioned by a module's ``load_state_dict()`` or a ``torch.save()`` reached, on
    some path, by one of its ``state_dict()`` calls followed by an optimizer step that may update
    ``M`` (:class:`SnapshotMachine`). One finding per ``state_dict()`` call. Assigning the holder a
    constant is no event: it does not end the snapshot; a local of an inlined call holds no
    snapshot once the call returns, nor in the arm of ``if holder is None:`` (see
    ``rules/LC801.md``)."""

    info = INFOS["LC801"]

    def check(self, unit: Unit) -> Iterable[Report]:
        if not unit.of_kind("state_ref"):
            return
        holders = self._holders(unit)
        reported = set()
        for holder, (snaps, model) in holders.items():
            flow = unit.flow(
                ("snapshot", holder), lambda snaps=snaps, model=model, holder=holder: SnapshotMachine(unit, snaps, model, holder)
            )
            for use in unit.of_kind("load_state", "save"):
                if not _mentions(use, holder):
                    continue
                for s in unit.in_order(flow.states(use), "snap", "step"):
                    if s.snap is None or s.step is None or id(s.snap) in reported:
                        continue
                    reported.add(id(s.snap))
                    yield self._report(s, use, holder)

    @staticmethod
    def _holders(unit: Unit) -> dict[str, tuple[dict[int, str], str]]:
        """Names given a live state dict of a model, with the ``state_dict()`` calls that fill
        them; names also given anything but a live state dict or a constant are left out."""
        out: dict[str, tuple[dict[int, str], str]] = {}
        roles = unit.roles
        for sym, defs in definitions(unit).items():
            snaps: dict[int, str] = {}
            ok = True
            for d in defs:
                value = d.value if isinstance(d, Assign) and d.op == "=" else d.node if isinstance(d, Call) else None
                refs = live_refs(unit, value, d)
                if refs:
                    for r in refs:
                        if r.subject in roles.models:
                            snaps[id(r.node)] = r.subject
                elif not (isinstance(d, Assign) and d.op == "=" and _constant(d.value)):
                    ok = False  # also given something else: its values are not followed
            models = set(snaps.values())
            if ok and snaps and len(models) == 1:
                out[sym] = (snaps, models.pop())
        return out

    def _report(self, s: Snap, use: Event, holder: str) -> Report:
        snap, step = s.snap, s.step
        name = last(holder)
        return Report(
            self.info.code, snap.node,
            lambda d: (
                f"{name} references the live weights: {d.call(step.node)} at line {d.line(step.node)} changes them "
                f"before line {d.line(use.node)} uses it"
            ),
            [(step.node, "a step after the snapshot changes the same tensors"), (use.node, "uses the 'best' state")],
            lambda d: (
                "state_dict() returns references to the model's parameter and buffer tensors, not copies; every "
                "optimizer step updates them in place, so the saved or reloaded 'best' state is the model as it is "
                "at that point (measured: the reloaded 'best' weights were the last epoch's, validation loss "
                "0.175 instead of the best 0.142). Take a copy: copy.deepcopy(model.state_dict()) or "
                "{k: v.detach().clone() for k, v in model.state_dict().items()}."
            ),
        )


# -- LC802 ----------------------------------------------------------------------------------


class Saved(NamedTuple):
    """One ``torch.save({...})`` of a checkpoint dict: ``entries``: key → the ``state_ref`` event
    saved under it; ``modules``: ``(object, key)`` for each ``state_dict()`` it saves of an object
    that is or may be a model (a model's ``state_ref``, or an object whose class is unknown or an
    ``nn.Module``: ``target.state_dict()`` of a project module no optimizer trains); the key is
    ``None`` when not a string literal."""

    save: Event
    entries: dict[str, Event]
    modules: frozenset[tuple[str, str | None]] = frozenset()


def _dict_display(unit: Unit, arg) -> cst.Dict | None:
    if isinstance(arg.node, cst.Dict):
        return arg.node
    if arg.sym is None:
        return None
    defs = definitions(unit).get(arg.sym, [])
    dicts = [d.value for d in defs if isinstance(d, Assign) and d.op == "=" and isinstance(d.value, cst.Dict)]
    return dicts[0] if len(dicts) == 1 and len(defs) == 1 else None


def _key(node: cst.BaseExpression | None) -> str | None:
    if isinstance(node, cst.SimpleString):
        return node.evaluated_value if isinstance(node.evaluated_value, str) else None
    return None


def saved_checkpoints(unit: Unit) -> list[Saved]:
    """The checkpoint dicts the unit saves, with the state dicts under their keys."""
    out = []
    for ev in unit.of_kind("save"):
        display = _dict_display(unit, ev.extra["arg"])
        if display is None:
            continue
        entries: dict[str, Event] = {}
        modules: set[tuple[str, str | None]] = set()
        for el in display.elements:
            if not isinstance(el, cst.DictElement):
                continue
            key = _key(el.key)
            raw = raw_call(unit, el.value, ev.raw)
            ref = next((e for e in raw.typed if e.kind == "state_ref"), None) if raw is not None else None
            if key is not None and ref is not None:
                entries[key] = ref
            if ref is not None and ref.extra.get("of") == "model":
                modules.add((ref.subject, key))
            elif ref is None and _may_be_module_state(unit, raw):
                modules.add((unit.roles.canon(raw.receiver), key))
        if entries:
            out.append(Saved(ev, entries, frozenset(modules)))
    return out


def _may_be_module_state(unit: Unit, raw: Call | None) -> bool:
    """Whether ``raw`` is ``x.state_dict()`` of an object that may be a model: one whose class is
    not known, or is an ``nn.Module`` (a GradScaler's or a known helper's state is not)."""
    if raw is None or raw.method != "state_dict" or raw.receiver is None or raw.args:
        return False
    t = unit.roles.type_of(raw.receiver)
    return t is None or is_module_class(t)


def _after(unit: Unit, load: Event, ev: Event) -> bool:
    """Whether ``ev`` comes after ``load`` in program order and some path from the load reaches
    it (:meth:`~loopcheck.engine.unit.Unit.builds_reaching`): a step after a load whose every
    path raises first (a read of a name nothing binds) never follows that load."""
    return unit.order(ev) > unit.order(load) and load in unit.builds_reaching(ev, load.subject, "load_state")


def _restored_entries(unit: Unit) -> set[tuple[str, str]]:
    """``(object, key)`` for each ``obj.load_state_dict(x["key"])`` of the unit, wherever it is:
    the object given the entry a checkpoint holds under that key."""
    out = set()
    for c in all_calls(unit):
        if c.method != "load_state_dict" or c.receiver is None or not isinstance(c.node, cst.Call):
            continue
        key = _subscript_key(c.node.args[0].value) if c.node.args else None
        if key is not None:
            out.add((unit.roles.canon(c.receiver), key))
    return out


def _subscript_key(node: cst.CSTNode | None) -> str | None:
    """``"model"`` for ``ckpt["model"]``; ``None`` for anything else."""
    if isinstance(node, cst.Subscript) and len(node.slice) == 1 and isinstance(node.slice[0].slice, cst.Index):
        return _key(node.slice[0].slice.value)
    return None


def _loaded_key(load: Event) -> str | None:
    """``"model"`` for ``model.load_state_dict(ckpt["model"])``."""
    arg = load.extra.get("state")
    return _subscript_key(arg.node if arg is not None else None)


def _receiver(d, node: cst.CSTNode) -> str:
    """``model`` for ``model.load_state_dict(...)``."""
    func = node.func if isinstance(node, cst.Call) else None
    return d.code(func.value, 30) if isinstance(func, cst.Attribute) else "the model"


def _writers(unit: Unit, candidates: list[Saved], key: str, of: str) -> list[tuple[Unit, Event]]:
    """Every ``x.state_dict()`` of an ``of`` (``"optimizer"``, ``"scheduler"``) that the
    checkpoints a load may read hold under ``key``, with the unit it is an event of: the
    entry of each candidate checkpoint of ``unit``, and the entry of every save, in any unit of
    the same checked module (:meth:`~loopcheck.engine.unit.Unit.peer_units`), at the node of a
    candidate (a ``save_checkpoint(path, model, optimizer)`` helper that another entry point
    calls with an optimizer of its own writes the same checkpoint)."""
    out: list[tuple[Unit, Event]] = []
    nodes = {id(c.save.node) for c in candidates}
    for peer in unit.peer_units():
        if peer is unit:
            chosen = {id(c.save) for c in candidates}
            saves = candidates + [s for s in saved_checkpoints(unit) if id(s.save.node) in nodes and id(s.save) not in chosen]
        else:
            saves = [s for s in peer.cached("lc802_saves", lambda p=peer: saved_checkpoints(p)) if id(s.save.node) in nodes]
        for s in saves:
            ref = s.entries.get(key)
            if ref is not None and ref.extra.get("of") == of:
                out.append((peer, ref))
    return out


def _saved_steps(unit: Unit, candidates: list[Saved], key: str, of: str, steps: list[Event], build: str) -> bool:
    """Whether the ``of`` that ``steps`` (events of ``unit`` after a load) step is the object whose
    state the checkpoints the load may read hold under ``key`` (:func:`_writers`): the same
    creation sites (:meth:`~loopcheck.engine.unit.Unit.objects_at`, constructions of kind
    ``build``) at every entry saved as at the steps. A checkpoint written from another
    optimizer (built in another function or stage, or given to another entry point), followed
    by an optimizer built anew that steps, is a warm start of a new stage: that its state is
    "not restored" cannot be established."""
    stepping = frozenset().union(*(unit.objects_at(s, s.subject, build) for s in steps))
    if not stepping:
        return False
    writers = _writers(unit, candidates, key, of)
    return bool(writers) and all(peer.objects_at(ref, ref.subject, build) == stepping for peer, ref in writers)


@register
class ResumeWithoutOptimizerState(Rule):
    """LC802 resume-without-optimizer-state.

    Reported when (program order, not paths): ``M.load_state_dict(ckpt["k"])`` loads the entry a
    ``torch.save({...})`` of the unit saves as ``M.state_dict()`` under the literal key ``"k"``;
    the load is a resume of that checkpoint: every object whose ``state_dict()`` it holds that is
    or may be a model (a model, or an object whose class is unknown or an ``nn.Module``) is
    given its entry, ``obj.load_state_dict(x["key"])`` with the key it is saved under, somewhere
    in the unit (a load that leaves some of the checkpoint's models fresh takes weights, as
    fine-tuning from a pretrained encoder does, and a fresh optimizer may be intended there); and
    that checkpoint also holds the ``state_dict()`` of an optimizer of ``M`` (or of unknown
    models) that steps after the load (in program order, on a path from the load: :func:`_after`),
    or of a scheduler stepped after the load, with no
    ``load_state_dict()`` of it and no opaque call given it anywhere in the unit; and the object
    that steps after the load is the one every writer of the checkpoints the load may read saved
    under that entry (:func:`_saved_steps`: the same creation sites, the candidate checkpoints of
    the unit and every save at the same node in the module's other entry points): a checkpoint
    saved from another optimizer followed by a newly built one is a new stage's warm start (see
    ``rules/LC802.md``)."""

    info = INFOS["LC802"]

    def check(self, unit: Unit) -> Iterable[Report]:
        loads = [ev for ev in unit.of_kind("load_state") if ev.extra.get("of") == "model"]
        if not loads:
            return
        saves = saved_checkpoints(unit)
        roles = unit.roles
        restored = _restored_entries(unit) | {(ev.subject, _loaded_key(ev)) for ev in loads}
        for load in loads:
            key = _loaded_key(load)
            # the checkpoints of the unit that hold the loaded model under the loaded key, each a
            # resume of that checkpoint (every model it holds given its entry)
            candidates = [
                s for s in saves
                if key in s.entries and s.entries[key].subject == load.subject and s.modules <= restored
            ]
            if not candidates:
                continue
            ckpt = candidates[0]
            later_steps = [s for s in unit.of_kind("step") if _after(unit, load, s)]
            missing = []
            for k, ref in ckpt.entries.items():
                of, obj = ref.extra.get("of"), ref.subject
                if of == "optimizer":
                    info = roles.optimizers.get(obj)
                    if info is None or (info.models and load.subject not in info.models):
                        continue
                    steps = [s for s in later_steps if s.subject == obj]
                    if not steps or self._restored(unit, obj, "optimizer"):
                        continue
                    if not _saved_steps(unit, candidates, k, of, steps, "opt_build"):
                        continue
                    missing.append((k, ref))
                elif of == "scheduler":
                    steps = [e for e in unit.of_kind("sched_step") if e.subject == obj and _after(unit, load, e)]
                    if not steps or self._restored(unit, obj, "scheduler"):
                        continue
                    if not _saved_steps(unit, candidates, k, of, steps, "sched_build"):
                        continue
                    missing.append((k, ref))
            if missing:
                yield self._report(load, key, ckpt, missing)

    @staticmethod
    def _restored(unit: Unit, obj: str, of: str) -> bool:
        """Whether anything may load ``obj``'s state: its ``load_state_dict()``, or a call the
        engine cannot see into that receives it (``accelerator.load_state()``, a helper)."""
        kinds = ("opt_load_state",) if of == "optimizer" else ("load_state",)
        for ev in unit.of_kind(*kinds, "havoc"):
            if ev.subject == obj:
                return True
        return False

    def _report(self, load: Event, key: str, ckpt: Saved, missing: list) -> Report:
        names = ", ".join(f'"{k}"' for k, _ in missing)
        kinds = "/".join(dict.fromkeys(ref.extra.get("of") for _, ref in missing))
        return Report(
            self.info.code, load.node,
            lambda d: (
                f"{_receiver(d, load.node)} is resumed without the {kinds} state saved at line "
                f"{d.line(ckpt.save.node)}"
            ),
            [(ckpt.save.node, f"saves the {kinds} state")]
            + [(ref.node, f"the {ref.extra.get('of')} state saved") for _, ref in missing],
            lambda d: (
                f"The checkpoint's {names} entries hold what resuming needs (Adam's moment estimates, SGD's "
                "momentum buffers, the scheduler's position), but the resume path loads only the model: the "
                "optimizer restarts from zero moments and the schedule from its first value (warm-up again), so the "
                "resumed run is not the run that was interrupted (measured: the first resumed step moved the "
                "weights 5.1 times as far as with the state loaded, at the initial LR 0.01 instead of 0.005). Load "
                "them: optimizer.load_state_dict(ckpt[...]), scheduler.load_state_dict(ckpt[...])."
            ),
        )
