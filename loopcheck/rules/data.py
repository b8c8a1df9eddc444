"""Data rule (LC901): a DistributedSampler iterated over epochs without ``set_epoch()``.

Knowledge (``loopcheck/knowledge/torch.toml``, torch.utils.data docs): ``DistributedSampler``
shuffles with a generator seeded by ``seed + epoch``; "calling the ``set_epoch()`` method at the
beginning of each epoch before creating the DataLoader iterator is necessary to make shuffling
work properly across multiple epochs. Otherwise, the same ordering will be always used."
"""

from __future__ import annotations

from typing import Iterable

import libcst as cst

from loopcheck.engine.ir import Assign, Call, walk_events
from loopcheck.engine.knowledge import knowledge
from loopcheck.engine.calls import arg_at, summary_of
from loopcheck.engine.roles import ACCELERATOR_NAME, ROLE_TYPES, last
from loopcheck.engine.settings import ruled_out
from loopcheck.engine.unit import Unit
from loopcheck.engine.values import all_calls, loops, raw_call
from loopcheck.findings import Report
from loopcheck.catalog import INFOS
from loopcheck.rules.base import Rule, register

def _distributed(unit: Unit, c: Call | None) -> bool:
    """A call that builds a ``DistributedSampler`` (per the knowledge's ``sampler`` return) that
    shuffles (``shuffle=False`` gives the same order every epoch by design), and that runs: not
    in an arm a test fixed on every run never takes
    (:func:`~loopcheck.engine.settings.ruled_out`: ``RandomSampler(d) if args.local_rank == -1
    else DistributedSampler(d)`` with ``--local_rank`` left at its ``default=-1``)."""
    if c is None or not c.qualified:
        return False
    summary = knowledge().callable(c.func)
    if summary is None or summary.returns is None or summary.returns.get("sampler") != "distributed":
        return False
    shuffle = arg_at(c, (3, "shuffle"))
    if shuffle is not None and isinstance(shuffle.node, cst.Name) and shuffle.node.value == "False":
        return False
    return not ruled_out(unit, c.node)


def _holders(unit: Unit, sym: str) -> set[str]:
    """``sym`` and the symbols a plain assignment gives its object, transitively: the attribute
    a helper's returned sampler is kept in (``self.sampler = sampler``, one element of a returned
    tuple) and a local read back from it (``s = self.sampler``). An inlined method's ``self.x``
    is the instance's attribute, so ``self.x`` in two methods of one object is one symbol. Any
    of them may hold the sampler (another definition of the same symbol does not take that
    away: a ``set_epoch`` through it may set this sampler's epoch)."""
    copies: dict[str, set[str]] = {}  # value symbol -> the targets given it
    for raw in walk_events(unit.ir):
        if isinstance(raw, Assign) and raw.op == "=" and raw.target and raw.value_sym:
            copies.setdefault(raw.value_sym, set()).add(raw.target)
    out, todo = {sym}, [sym]
    while todo:
        for target in copies.get(todo.pop(), ()):
            if target not in out:
                out.add(target)
                todo.append(target)
    return out


@register
class DistributedSamplerWithoutSetEpoch(Rule):
    """LC901 distributed-sampler-without-set-epoch.

    Reported when (placement, not paths): a ``for`` loop nested in another loop iterates a loader
    built with a shuffling ``DistributedSampler`` (inline, or a sampler variable its ``sampler``/
    ``batch_sampler`` argument mentions) and runs an optimizer step (a backward alone changes no
    weight), and no loop around it holds a ``set_epoch`` of the sampler (or of a symbol plain
    assignments gave it: :func:`_holders`) or loader (or of what they hold) or an undescribed call
    given one of them, and no call of the unit given one of them returns it (``accelerator.prepare``). Known
    limit: an untyped receiver named ``*accelerator*``/``*fabric*`` gets the Accelerator's entries
    (see ``rules/LC901.md``)."""

    info = INFOS["LC901"]

    def check(self, unit: Unit) -> Iterable[Report]:
        roles = unit.roles
        samplers: dict[str, Call] = {}
        for c in all_calls(unit):
            if len(c.targets) == 1 and c.targets[0] and _distributed(unit, c):
                samplers[roles.canon(c.targets[0])] = c
        loaders: dict[str, tuple[Call, str | None]] = {}  # loader -> (its sampler's construction, sampler symbol)
        for c in all_calls(unit):
            if len(c.targets) != 1 or not c.targets[0] or roles.canon(c.targets[0]) not in roles.loaders:
                continue
            for key in ("sampler", "batch_sampler"):
                a = arg_at(c, (3, key) if key == "sampler" else key)
                if a is None:
                    continue
                inline = raw_call(unit, a.node, c)
                if _distributed(unit, inline):
                    loaders[roles.canon(c.targets[0])] = (inline, None)
                    break
                hit = next((roles.canon(m) for m in a.mentions if roles.canon(m) in samplers), None)
                if hit is not None:
                    loaders[roles.canon(c.targets[0])] = (samplers[hit], hit)
                    break
        if not loaders:
            return
        reported = set()
        for loop, around in loops(unit):
            if not around or not isinstance(loop.info.node, cst.For):
                continue
            loader = next((roles.canon(n) for n in loop.info.iter_names if roles.canon(n) in loaders), None)
            if loader is None:
                continue
            ctor, sampler = loaders[loader]
            if id(ctor.node) in reported or not self._trains(unit, loop.info):
                continue  # an evaluation pass: the order of its batches changes no result
            if self._epoch_set(unit, around, loader, sampler):
                continue
            reported.add(id(ctor.node))
            yield self._report(loop.info.node, around[-1].node, ctor, loader, sampler)

    @staticmethod
    def _trains(unit: Unit, info) -> bool:
        """Whether an optimizer step runs inside the loop ``info``: the weights change between
        its batches, so their order is the order the model learns in. A backward alone changes
        no weight (gradients summed over the pass, a saliency or head-importance pass): the
        batches' order changes no result."""
        return any(info in ev.ctx.loops for ev in unit.of_kind("step"))

    @staticmethod
    def _epoch_set(unit: Unit, around, loader: str, sampler: str | None) -> bool:
        """Whether the loops around the iteration set the sampler's epoch: a ``set_epoch`` of
        the sampler or the loader (or of something they hold), or a call that is handed one of
        them and may do it (a helper of a library: ``set_sampler_epoch(loader, epoch)``)."""
        names = {loader} | (_holders(unit, sampler) if sampler else set())
        canon = unit.roles.canon

        def mine(sym: str | None) -> bool:
            """``sym`` names the loader or sampler, or something they hold (``self.loader.sampler``,
            through the aliases of its prefixes)."""
            if sym is None:
                return False
            parts = sym.split(".")
            return any(canon(".".join(parts[:k])) in names for k in range(len(parts), 0, -1))

        outer = set(map(id, around))
        for ev in unit.of_kind("set_epoch"):
            if mine(ev.subject) and outer & set(map(id, ev.ctx.loops)):
                return True
        for raw in walk_events(unit.ir):
            if not isinstance(raw, Call) or raw.inlined:
                continue
            if not any(mine(canon(m)) for a in raw.args for m in a.mentions):
                continue
            summary = summary_of(raw, unit.roles)
            if summary is None and raw.receiver and ACCELERATOR_NAME.search(last(raw.receiver)):
                summary = knowledge().method(ROLE_TYPES["accelerator"], raw.method or "")
            if summary is None and not raw.typed and outer & set(map(id, raw.ctx.loops)):
                return True  # a call no entry describes, in the epoch loop: it may set the epoch
            if summary is not None and summary.returns is not None and summary.returns.same:
                return True  # wrapped (accelerator.prepare): the wrapper's loader sets its epoch itself
        return False

    def _report(self, loop: cst.For, epoch_loop: cst.CSTNode, ctor: Call, loader: str, sampler: str | None) -> Report:
        return Report(
            self.info.code, ctor.node,
            lambda d: (
                f"{d.call(ctor.node)} never gets set_epoch(), so each epoch of the loop at line {d.line(loop)} has the "
                "same order"
            ),
            [(loop, f"iterates {last(loader)} in every epoch"),
             (epoch_loop, "the epoch loop, with no set_epoch() call")],
            lambda d: (
                "DistributedSampler shuffles with a generator seeded by seed + epoch, and its epoch stays 0 unless "
                "set_epoch() is called: every epoch visits the samples in the same order on every rank (measured: "
                "4 of 4 epochs had the order of the first). Call "
                f"{last(sampler) if sampler else last(loader) + '.sampler'}.set_epoch(epoch) "
                "at the start of each epoch, before iterating the loader."
            ),
        )
