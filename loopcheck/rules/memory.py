"""Memory rule (LC401): a loss tensor kept instead of a number.

Knowledge: a tensor produced under autograd references its ``grad_fn`` graph; storing it
(``losses.append(loss)``, ``total += loss``) keeps that graph alive, and ``total += loss``
chains a new node onto it every iteration (PyTorch FAQ, "My model reports cuda runtime
error(2): out of memory"). ``loss.item()``, ``float(loss)`` and ``loss.detach()`` keep no
graph.
"""

from __future__ import annotations

import re
from typing import Iterable

from loopcheck.engine.dataflow import Machine
from loopcheck.engine.events import Event
from loopcheck.engine.ir import Assign, Call, walk_events
from loopcheck.engine.unit import Unit
from loopcheck.findings import Report
from loopcheck.catalog import INFOS
from loopcheck.rules.base import Rule, register


class LossValueMachine(Machine):
    """What a loss symbol holds: ``"tensor"``, ``"number"``, ``"detached"`` or ``None``."""

    kinds = frozenset({'loss_assign', 'store_loss'})

    def __init__(self, loss: str) -> None:
        self.loss = loss

    def initial(self):
        return None

    def transfer(self, s, ev: Event):
        if ev.kind == "loss_assign" and ev.subject == self.loss:
            kind = ev.extra["value_kind"]
            return kind if kind in ("number", "detached") else "tensor"
        return s


def _feeds_backward(unit: Unit) -> set[str]:
    """Symbols whose values flow into a tensor that backward() is called on."""
    defs: dict[str, set[str]] = {}
    for raw in walk_events(unit.ir):
        if isinstance(raw, Assign) and raw.target:
            defs.setdefault(raw.target, set()).update(raw.mentions)
        elif isinstance(raw, Call):
            for t in raw.targets:
                if t:
                    defs.setdefault(t, set()).update(*(a.mentions for a in raw.args))
                    if raw.receiver:
                        defs[t].add(raw.receiver)
    out: set[str] = set()
    todo = list(unit.roles.losses)
    while todo:
        sym = todo.pop()
        for m in defs.get(sym, ()):
            base = m.rsplit(".", 1)[0] if m.endswith((".values", ".items")) else m
            if base not in out:
                out.add(base)
                todo.append(base)
    return out


def _made_without_graph(unit: Unit, loss: str, store: Event, depth: int = 2) -> bool:
    """Whether, in the iteration of the store, the loss was last computed from values made
    without autograd (``with torch.no_grad(): outputs = model(x)`` then ``loss = outputs.loss``)."""
    raws = unit.raws()
    at = next((i for i, raw in enumerate(raws) if raw is store.raw), None)
    loop = store.ctx.loops[-1] if store.ctx.loops else None
    if at is None or loop is None:
        return False
    return _graphless(raws, loop, loss, at, depth)


def _last_def(raws: list, loop, sym: str, before: int):
    """``(index, raw event)`` of the last definition of ``sym`` in ``raws`` before ``before``,
    within the iteration of ``loop``; ``(None, None)`` when there is none."""
    for i in range(before - 1, -1, -1):
        raw = raws[i]
        if loop not in raw.ctx.loops:
            return None, None
        targets = raw.targets if isinstance(raw, Call) else ((raw.target,) if raw.op == "=" else ())
        if sym in targets:
            return i, raw
    return None, None


def _graphless(raws: list, loop, sym: str, before: int, depth: int) -> bool:
    """:func:`_made_without_graph` of ``sym`` defined before ``raws[before]``, following its
    sources ``depth`` definitions back (a function of the module, not a closure that calls
    itself: that is a reference cycle holding the unit's events, see
    :func:`loopcheck.engine.ir.release`)."""
    i, raw = _last_def(raws, loop, sym, before)
    if raw is None:
        return False
    if raw.ctx.grad == "disabled" or (isinstance(raw, Assign) and raw.value_kind in ("number", "detached")):
        return True
    if depth == 0 or isinstance(raw, Call) or raw.sources is None or raw.sources.calls and not all(
        c.receiver is not None or c.inner is not None for c in raw.sources.calls
    ):
        return False
    names = {n.partition(".")[0] if n.partition(".")[0] != sym else n for n in raw.sources.names} - {sym}
    return bool(names) and all(_graphless(raws, loop, n, i, depth - 1) for n in names)


def _local(sym: str | None) -> bool:
    """A local variable of a function (``f3_1:loss_dict``), not an attribute of a long-lived
    object (``self@Trainer.meter``) or a module global."""
    return sym is not None and re.match(r"^f\d+_\d+:[^.@]+$", sym) is not None


def _rebound_in(unit: Unit, sym: str, loop) -> bool:
    """Whether ``sym`` is assigned anew inside ``loop`` (a list started again every step)."""
    canon = unit.roles.canon
    return any(
        isinstance(raw, Assign) and raw.op == "=" and canon(raw.target) == sym and loop in raw.ctx.loops
        for raw in walk_events(unit.ir)
    )


@register
class LossTensorKept(Rule):
    info = INFOS["LC401"]

    @staticmethod
    def _local_to_callee(unit: Unit, ev: Event, loss: str) -> bool:
        """Whether the loss was computed inside the inlined function itself (then the store
        is reported where it is written)."""
        return any(
            e.kind == "loss_assign" and e.subject == loss and e.ctx.calls == ev.ctx.calls
            for e in unit.of_kind("loss_assign")
        )

    def check(self, unit: Unit) -> Iterable[Report]:
        feeds = None
        for ev in unit.of_kind("store_loss"):
            if ev.ctx.grad != "enabled":
                continue
            loss = ev.extra["loss"]
            container = unit.roles.canon(ev.subject)
            if container in unit.roles.losses:
                continue
            if not ev.ctx.loops and _local(container):
                continue  # a dict or list of this call only (loss_dict["ce"] = loss): not kept
            if _local(container) and container in unit.returned():
                continue  # lobj += obji * w; return lbox + lobj: the total is the loss the caller backpropagates
            if feeds is None:
                feeds = _feeds_backward(unit) | unit.roles.loss_containers
            if container in feeds and (not ev.ctx.loops or _rebound_in(unit, container, ev.ctx.loops[-1])):
                continue  # a per-step list of losses that a backward consumes
            states = unit.flow(("loss", loss), lambda loss=loss: LossValueMachine(loss)).states(ev)
            if states != {"tensor"} or _made_without_graph(unit, loss, ev):
                continue
            bw = next((b for b in unit.of_kind("backward") if b.subject == loss), None)
            how = ev.extra["how"]
            if how == "[]=":
                effect = "keeps the tensor and its autograd graph alive until the entry is replaced"
            elif how.endswith("()"):
                effect = "keeps every step's tensor and autograd graph alive, so memory grows with every step"
            else:
                effect = "chains every step's autograd graph onto the total, so memory grows with every step"
            # stored inside a helper of this file (AverageMeter.update): report the call
            node = ev.ctx.calls[-1] if ev.ctx.calls and not self._local_to_callee(unit, ev, loss) else ev.node
            yield Report(
                self.info.code, node,
                lambda d, node=node: f"{d.code(node, 60)} stores the loss tensor, not its value",
                [(bw.node, "the loss whose graph is kept")] if bw else [],
                note=lambda d, bw=bw, effect=effect: (
                    f"It {effect}"
                    + (f" (the graph {d.call(bw.node)} at line {d.line(bw.node)} ran through)" if bw else "")
                    + " (measured, CPU, torch 2.13: +10 live autograd graph nodes per step). Use loss.item() "
                    "(or loss.detach())."
                ),
                at=ev if node is ev.node else None,
            )
