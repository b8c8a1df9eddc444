"""Gradient accumulation in an ``accelerator.accumulate(model)`` block (Hugging Face Accelerate).

Knowledge (``loopcheck/knowledge/accelerate.toml``): entering the block sets the accelerator's
``sync_gradients`` (an ``accumulation_flag`` attribute), true on every N-th micro-step, N the
count its construction gives (``Accelerator(gradient_accumulation_steps=N)``, 1 when left out);
inside the block the prepared optimizer's ``step()`` and ``zero_grad()`` do nothing unless it is
true (``AcceleratedOptimizer.step``: https://huggingface.co/docs/accelerate/usage_guides/gradient_accumulation),
and so does the ``step()`` of a scheduler the accelerator prepared (``returns.synced``: an
``AcceleratedScheduler`` returns at once ``if not self.gradient_state.sync_gradients``, and when
an optimizer's step was skipped; https://github.com/huggingface/accelerate/blob/main/src/accelerate/scheduler.py),
unless the accelerator was built with ``step_scheduler_with_optimizer=False`` (knowledge
``accumulation.unsynced``): it steps exactly when the prepared optimizer steps.

:func:`lower_accumulate_blocks` writes that into a unit's IR, where the dataflow sees it: each
such ``step()``/``zero_grad()`` goes under ``if accelerator.sync_gradients:``, and the block's
entry re-binds ``accelerator.sync_gradients`` (a new value on each entry), so that a path that
took ``if accelerator.sync_gradients:`` elsewhere in the same pass (a running loss reset there)
takes the same arm at the step (:class:`~loopcheck.engine.dataflow._Interpreter`'s remembered
tests), and a new pass knows nothing of the last one's. An accelerator whose count is
established to be 1 syncs on every micro-step: its steps stay unconditional.
"""

from __future__ import annotations

import weakref
from dataclasses import replace

import libcst as cst

from loopcheck.engine.ir import Assign, Call, Context, If, Loop, Node, Seq, parts, walk_events
from loopcheck.engine.knowledge import knowledge
from loopcheck.engine.names import dotted_name
from loopcheck.engine.roles import ROLE_TYPES
from loopcheck.engine.values import context_of, parents, with_items

#: The ``accumulation_flag`` attribute kind of the knowledge (``[class.attributes]``).
FLAG = "accumulation_flag"
#: The events a block's accumulation gates, of a prepared optimizer.
GATED = frozenset({"step", "zero_grad"})
#: The event a block's accumulation gates, of a scheduler the accelerator prepared.
SCHEDULER_GATED = "sched_step"


def accumulate_item(unit, node: cst.CSTNode) -> cst.WithItem | None:
    """The innermost ``with`` item around ``node`` (in its function) whose knowledge context is
    ``"accumulate"`` (``accelerator.accumulate(model)``), if any."""
    for item in with_items(unit, node):
        if context_of(unit, item) == "accumulate":
            return item
    return None


def _receiver(item: cst.WithItem) -> str | None:
    """``accelerator`` of ``accelerator.accumulate(model)``, ``self.accelerator`` of
    ``self.accelerator.accumulate(model)``."""
    call = item.item
    if type(call) is not cst.Call or type(call.func) is not cst.Attribute:
        return None
    return dotted_name(call.func.value)


def accumulation_steps(unit, item: cst.WithItem) -> int | None:
    """The gradient accumulation count of the accelerator of an ``accumulate()`` item: the one
    its construction gives (:attr:`~loopcheck.engine.roles.Roles.accumulation`), when every
    accelerator the unit constructs under that name (a function's local, a global) gives the
    same; ``None`` when not established (an accelerator the unit does not construct, a
    parameter of an inlined function, a count read from the command line)."""
    recv = _receiver(item)
    if recv is None:
        return None
    counts = {n for sym, n in unit.roles.accumulation.items() if sym.rpartition(":")[2] == recv}
    return counts.pop() if len(counts) == 1 else None


def syncs_every_step(unit, item: cst.WithItem) -> bool:
    """Whether the accelerator of an ``accumulate()`` item is established to sync on every
    micro-step (count 1: ``Accelerator()``, ``gradient_accumulation_steps=1`` or a name bound
    once to 1): its block accumulates nothing, the steps inside run on every micro-step."""
    return accumulation_steps(unit, item) == 1


def _flag(unit, item: cst.WithItem) -> str | None:
    """The name of the accumulation flag of the accelerator's class (``sync_gradients``)."""
    recv = _receiver(item)
    if recv is None:
        return None
    roles = unit.roles
    t = next((roles.type_of(s) for s in (*roles.types, *roles.accelerators) if s.rpartition(":")[2] == recv), None)
    # (an untyped receiver that context_of took for an accelerator by its name: the role's class)
    return knowledge().attribute_of_kind(t or ROLE_TYPES["accelerator"], FLAG)


#: The IRs :func:`lower_accumulate_blocks` changed (the language server may check them again).
_LOWERED: "weakref.WeakSet[Seq]" = weakref.WeakSet()


def _synthetic(node: Node) -> bool:
    """Whether an IR node is one :func:`lower_accumulate_blocks` made (its ``node`` is the
    ``with`` item)."""
    t = type(node)
    return (t is If or t is Assign) and type(node.node) is cst.WithItem


def _strip(node: Node) -> bool:
    """Take out what an earlier :func:`lower_accumulate_blocks` made (the IR of an unchanged
    function is taken again by the language server); whether there was any."""
    found = False
    if type(node) is Seq and any(_synthetic(item) for item in node.items):
        found = True
        items = []
        for item in node.items:
            if type(item) is If and _synthetic(item):
                items.extend(item.body.items)
            elif not _synthetic(item):
                items.append(item)
        node.items[:] = items
    for part in parts(node):
        found = _strip(part) or found
    return found


def _inside(table: dict, node: cst.CSTNode, block: cst.CSTNode) -> bool:
    """Whether syntax node ``node`` is under ``block`` (``table``: the module's parents)."""
    cur = table.get(node)
    while cur is not None:
        if cur is block:
            return True
        cur = table.get(cur)
    return False


def _anchor(node: Node) -> cst.CSTNode | None:
    """The syntax node an IR item stands for (``None``: a part with none of its own, read
    through: a sequence, a ``try``, an inlined call's body)."""
    t = type(node)
    if t is Call or t is Assign or t is If:
        return node.node
    if t is Loop:
        return node.info.node
    return None


def _program_order(unit) -> tuple[dict[int, int], dict[str, list[int]]]:
    """``(order, bindings)`` of ``unit``'s IR: ``id(raw event) →`` its position in program
    order, and name → the positions of the assignments that bind it (the builder follows a
    call that binds names, ``a, b = f(...)``, with an assignment of each)."""
    order: dict[int, int] = {}
    bindings: dict[str, list[int]] = {}
    for i, raw in enumerate(walk_events(unit.ir)):
        order[id(raw)] = i
        if type(raw) is Assign and raw.target:
            bindings.setdefault(raw.target, []).append(i)
    return order, bindings


def synced_at(unit, raw: Call, program: tuple[dict[int, int], dict[str, list[int]]]) -> bool:
    """Whether the scheduler of the raw ``scheduler.step()`` ``raw`` (every typed event of it a
    ``sched_step`` without argument) is, where it runs, one an accelerator wrapped to step only
    when its accumulation flag is true (:attr:`~loopcheck.engine.roles.Roles.synced`:
    ``scheduler = accelerator.prepare(scheduler)``): a call that wraps it runs on every path
    to ``raw`` (before it in program order, under no ``if`` of its own, in no loop ``raw`` is
    not in), the only assignment of the scheduler's names between them in program order is
    its own (not ``scheduler = ExponentialLR(...)`` again), and its accelerator is not one a
    construction makes step its schedulers on every call
    (:attr:`~loopcheck.engine.roles.Roles.unsynced`).
    ``program``: :func:`_program_order` of the unit. A scheduler that no such call wraps steps
    on every micro-step."""
    roles = unit.roles
    order, bindings = program
    at = order.get(id(raw))
    if not raw.typed or at is None:
        return False
    for ev in raw.typed:
        if ev.kind != SCHEDULER_GATED or ev.extra.get("nargs"):
            return False
        sym = roles.canon(ev.subject)
        bound = [i for name in roles.names_of(sym) for i in bindings.get(name, ()) if i < at]
        if not any(
                order.get(id(c), at) < at and sum(1 for i in bound if i > order[id(c)]) == 1
                and not c.ctx.conds
                and all(any(li is mine for mine in raw.ctx.loops) for li in c.ctx.loops)
                and roles.canon(c.receiver) not in roles.unsynced
                for c in roles.synced.get(sym, ())):
            return False
    return True


def lower_accumulate_blocks(unit) -> bool:
    """Lower the steps of ``accumulate()`` blocks in ``unit``'s IR (see the module docstring):
    each raw ``optimizer.step()``/``optimizer.zero_grad()`` (every event of it a ``step`` or
    ``zero_grad`` of an optimizer, not inlined), and each raw ``scheduler.step()`` of a
    scheduler the accelerator prepared (:func:`synced_at`), whose innermost accumulation ``with`` item
    (:func:`accumulate_item`) belongs to an accelerator not established to sync on every
    micro-step goes under an ``If`` on ``<accelerator>.<flag>`` (``accelerator.sync_gradients``);
    an ``Assign`` to that attribute (no value, no event) goes before the first item of each
    run of the block's items. Both have the ``with`` item as their ``node``. Returns whether
    the IR changed (the caller then drops what the dataflow derived from it)."""
    stripped = unit.ir in _LOWERED and _strip(unit.ir)
    _LOWERED.discard(unit.ir)
    roles = unit.roles
    gates: dict[int, tuple[cst.WithItem, cst.Attribute]] = {}  # id(raw) -> (item, test)
    blocks: dict[int, tuple[cst.WithItem, cst.Attribute, cst.CSTNode]] = {}  # id(block) -> (item, test, block)
    table = None
    order = None
    for ev in unit.events:
        raw = ev.raw
        if ev.kind not in GATED and ev.kind != SCHEDULER_GATED:
            continue
        if id(raw) in gates or type(raw) is not Call or raw.inlined:
            continue
        if ev.kind == SCHEDULER_GATED:
            if not roles.synced:
                continue
            if order is None:
                order = _program_order(unit)
            if not synced_at(unit, raw, order):
                continue
        elif not all(e.kind in GATED and roles.role(roles.canon(e.subject)) == "optimizer" for e in raw.typed):
            continue
        item = accumulate_item(unit, raw.node)
        if item is None or syncs_every_step(unit, item):
            continue
        flag = _flag(unit, item)
        if flag is None:
            continue
        if table is None:
            table = parents(unit.module_of(raw.node))
        with_stmt = table.get(item)
        if type(with_stmt) is not cst.With:
            continue
        key = id(with_stmt.body)
        if key not in blocks:
            blocks[key] = (item, cst.Attribute(value=item.item.func.value, attr=cst.Name(flag)), with_stmt.body)
        gates[id(raw)] = blocks[key][:2]
    if not gates:
        return stripped
    for item, test, block in blocks.values():
        _enter(unit.ir, item, test, block, table)
    _gate(unit.ir, gates)
    _LOWERED.add(unit.ir)
    return True


def _enter(ir: Node, item: cst.WithItem, test: cst.Attribute, block: cst.CSTNode, table: dict) -> None:
    """Put an ``Assign`` to ``test``'s attribute before the first item of each run of items
    inside ``block`` (the ``with`` statement's body), in program order: a block inlined twice,
    or built once per arm of a grad-mode ``with`` item, has a run in each copy."""
    target = dotted_name(test)
    inside = [False]  # whether the last item met in program order is in the block

    def entry(first: Node) -> Assign:
        raw = next(walk_events(first), None)
        ctx = raw.ctx if raw is not None else Context()
        ctx = replace(  # where the ``with`` statement is: without the loops, ifs and calls inside it
            ctx, loops=tuple(x for x in ctx.loops if not _inside(table, x.node, block)),
            conds=tuple(c for c in ctx.conds if not _inside(table, c, block)),
            calls=tuple(c for c in ctx.calls if not _inside(table, c, block)))
        return Assign(item, target, "=", None, None, "expr", frozenset(), ctx)

    def visit(node: Node) -> None:
        if type(node) is not Seq:
            for part in parts(node):
                visit(part)
            return
        i = 0
        while i < len(node.items):
            it = node.items[i]
            anchor = _anchor(it)
            if anchor is not None and _inside(table, anchor, block):
                if not inside[0]:
                    node.items.insert(i, entry(it))
                    i += 1
                inside[0] = True
            elif anchor is not None:
                inside[0] = False
                for part in parts(it):  # an ``if`` or a loop around the block: each arm anew
                    inside[0] = False
                    visit(part)
                inside[0] = False
            else:
                visit(it)  # a sequence, a ``try``, an inlined call's body: read through
            i += 1

    visit(ir)


def _gate(node: Node, gates: dict) -> None:
    """Put each raw event of ``gates`` (``id(raw) -> (with item, test)``) under an ``If`` on
    its test."""
    if type(node) is Seq:
        for i, it in enumerate(node.items):
            found = gates.get(id(it)) if type(it) is Call else None
            if found is not None:
                node.items[i] = If(found[0], Seq([it]), Seq(), test=found[1])
    for part in parts(node):
        if type(part) is not If or type(part.node) is not cst.WithItem:
            _gate(part, gates)
