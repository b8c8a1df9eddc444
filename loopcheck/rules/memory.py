"""Memory rule (LC401): a tensor with an autograd graph kept across optimizer steps.

Knowledge: a tensor computed under autograd references its ``grad_fn`` graph; a container that
keeps it (``losses.append(loss)``, ``total += loss``, ``history["loss"] = loss``) keeps that
graph alive, and ``total += loss`` chains a new node onto it every step (PyTorch FAQ, "My model
reports cuda runtime error(2): out of memory"). ``loss.item()``, ``float(loss)`` and
``loss.detach()`` keep no graph. Which values carry a graph is the engine's fact
(:mod:`loopcheck.engine.graphs`); this rule follows how long the containers keep them.
"""

from __future__ import annotations

from typing import Iterable, Iterator

from loopcheck.catalog import INFOS
from loopcheck.engine.calls import arg_at, summary_of
from loopcheck.engine.dataflow import Machine
from loopcheck.engine.events import Event
from loopcheck.engine.forwards import forward_returns_no_graph
from loopcheck.engine.graphs import graph_stores
from loopcheck.engine.ir import Assign, Call, Inline, Jump, Loop, LoopInfo, Seq, parts, walk_events
from loopcheck.engine.unit import Unit
from loopcheck.engine.values import binds_each_iteration, yields_fresh_items
from loopcheck.findings import Report
from loopcheck.rules.base import Rule, register
from loopcheck.rules.modes import modes_at

EMPTY, GONE = "empty", "gone"
#: ``how`` of a store → what the kept graphs do, for the note.
_EFFECT = {
    "append": "Every step adds a tensor whose autograd graph stays referenced, so memory grows with every step",
    "total": "Each step chains its autograd graph onto the total, so the graph and memory grow with every step",
    "entry": "The entry keeps the last step's tensor and its autograd graph alive until it is replaced",
    "entries": "Each entry keeps its step's tensor and autograd graph alive until its key is written again: "
               "a key that changes every step keeps one more graph per step",
}
_FORWARD_ONLY = (
    "No backward() runs in the loop, so each kept graph holds the activations its forward pass saved: "
    "memory grows with every iteration (measured, CPU, torch 2.13: +3.6 MiB per batch of 256 through a "
    "2048-wide MLP, +387 MiB after 100 batches against +23 MiB with .item())"
)
_MEASURED = " (measured, CPU, torch 2.13: +10 live autograd graph nodes per step)"
#: what a kept graph also holds when no backward() ever runs on it (a rollout's critic values)
_UNFREED = "; no backward() runs on what it keeps, so each kept graph also holds the activations its forward pass saved"


class KeptGraphMachine(Machine):
    """What one container holds: ``"empty"`` (no graph), ``("held", stores)`` (graphs kept by
    those store events since the last optimizer step), ``("past", step, stores)`` (graphs kept
    by those stores that survived the optimizer ``step`` event), ``"gone"`` (a local of an
    inlined call that returned). A container that is (an attribute of) the object a ``for``
    target binds from a loader whose items are built anew (``yields_fresh_items``: a
    DataLoader's batch) is another, empty object on each iteration: what the previous batch
    kept goes with it, as at any other re-binding of the name."""

    kinds = frozenset({"graph_store", "graph_release", "step", "scaler_step"})

    def __init__(self, container: str, roles) -> None:
        self.container = container
        self.subjects = frozenset({container})
        self.roles = roles

    def loop_entry(self, state, loop: Loop):
        if state == EMPTY or not binds_each_iteration(loop.info, self.container.partition(".")[0]):
            return state
        return EMPTY if yields_fresh_items(loop.info, self.roles) else state

    def initial(self):
        return EMPTY

    def absent(self):
        return GONE

    def transfer(self, state, ev: Event):
        if ev.kind == "graph_store" and ev.subject == self.container:
            if ev.extra.get("freed") and ev.extra.get("fixed"):
                return state  # the entry keeps a graph whose saved tensors backward() freed
            if state in (EMPTY, GONE):
                return ("held", frozenset({ev}))
            return (*state[:-1], state[-1] | {ev})
        if ev.kind == "graph_release" and ev.subject == self.container:
            return EMPTY
        if ev.kind in ("step", "scaler_step") and isinstance(state, tuple) and state[0] == "held":
            return ("past", ev, state[1])
        return state


def _stored_in_callee(unit: Unit, ev: Event) -> bool:
    """Whether the stored value was computed in the same inlined call as the store, by a name
    defined there or by the stored expression itself (then the store is reported where it is
    written; else at the call that passed the value in: ``meter.update(loss)``)."""
    raw = ev.raw
    names = set(raw.sources.names) if isinstance(raw, Assign) and raw.sources is not None else set()
    if ev.extra.get("value"):
        names.add(ev.extra["value"])
    names &= unit.roles.graph  # self.sum += val * n: the loss, not the count
    if not names:
        return True  # the graph is made in the stored expression itself (outs += model(x))
    for other in walk_events(unit.ir):
        if other.ctx.calls != raw.ctx.calls:
            continue
        targets = (other.target,) if isinstance(other, Assign) else other.targets
        if any(t in names for t in targets if t) and other is not raw:
            return True
    return False


@register
class LossTensorKept(Rule):
    """LC401 loss-tensor-kept.

    Reported when: a value the engine establishes to carry an autograd graph
    (:mod:`loopcheck.engine.graphs`; the forward of a module not established to hold a
    parameter records none of its own) is stored into a container or a total (``graph_store``)
    while that container still holds what the same store kept before an optimizer ``step``, on
    a path where the container was neither re-bound nor cleared (``graph_release``, or the head
    of a ``for`` whose target binds it from a loader that builds each item anew) since: the
    graphs of earlier steps are still referenced when the next step's is added; except an
    entry of a literal key whose graph a ``backward()`` frees in every iteration that stores it
    (``freed``: one step's scalar and emptied nodes, no saved tensor), and except an append
    whose value is so freed in a loop over a list or tuple display that the block holding the
    loop starts with an empty container (:func:`_freed_in_fixed_run`: one emptied graph per
    item the code names). Or the store
    (not an entry of a literal key: it keeps the last graph only)
    reaches itself again in a loop that runs a model's forward (not only of the module the
    loop's target binds: a stage of one pass) but no backward, no step and no gradient query
    (``torch.autograd.grad``, a differentiable optimizer's ``step``) whose loss is the stored value
    or computed from it (the losses of an unrolled inner loop, differentiated with
    ``create_graph=True`` for the meta-gradient), and nothing computed from the container is
    backpropagated (by ``backward()`` or a gradient query) or returned by the entry function
    (whose unseen caller may backpropagate it: a forward's output) or by the inlined call the
    container is a local of (:func:`_returned_by_owner`), the store does not run a fixed number
    of times in a unit with no optimizer step (:func:`_fixed_size_computation`), and the pile-up is not let
    go in each iteration of an enclosing loop that trains (an optimizer step runs in it, and no
    step before the store in program order, one of a later iteration, is reached while the
    container still holds those graphs: a rollout buffer re-bound or cleared after the update
    that consumes it); each graph keeps its activations. A container reset after
    each step, a local of a function that has returned, a loss stored and backpropagated within
    one step, and a value without a graph (``loss.item()``, a count from the labels, the output
    of a model whose ``forward`` in the model's mode at the call returns what it computes with
    gradients off: :func:`~loopcheck.engine.forwards.forward_returns_no_graph`), and ``x = f(x)``
    where the innermost loop's target re-binds ``x`` on every pass (no total: it never reads
    its own earlier value) are not reported; nor is anything in a unit with no optimizer step. A store under a test of a loop's
    counter (``if step == 0:``, :attr:`~loopcheck.engine.ir.If.counts`) is reached on one pass
    of each run of that loop only (the dataflow knows the test false on the later passes)."""

    info = INFOS["LC401"]

    def check(self, unit: Unit) -> Iterable[Report]:
        stores = unit.of_kind("graph_store")
        for container in dict.fromkeys(ev.subject for ev in stores):
            flow = unit.flow(("graph_keep", container), lambda c=container: KeptGraphMachine(c, unit.roles))
            for ev in stores:
                if ev.subject != container or (ev.extra.get("freed") and ev.extra.get("fixed")):
                    continue
                # the same store reached again: its earlier graphs are still held
                states = [s for s in flow.states(ev) if isinstance(s, tuple) and ev in s[-1]]
                steps = [s[1] for s in states if s[0] == "past"]
                again = any(s[0] == "held" for s in states)
                if steps:
                    if not _freed_in_fixed_run(unit, ev) and _kept_by_mode(unit, ev):
                        yield self._report(unit, ev, min(steps, key=unit.order))
                elif (again and not ev.extra.get("fixed") and _forward_only(unit, ev)
                        and not _fixed_size_computation(unit, ev) and not _returned_by_owner(unit, ev)
                        and not _let_go_each_training_iteration(unit, flow, ev) and _kept_by_mode(unit, ev)):
                    # (an entry of a fixed key keeps the last iteration's graph only: none pile up)
                    yield self._report(unit, ev, None)

    def _report(self, unit: Unit, ev: Event, step: Event | None) -> Report:
        """The finding at a store that keeps graphs past ``step`` (``None``: across the
        iterations of a loop that never runs backward)."""
        node = ev.ctx.calls[-1] if ev.ctx.calls and not _stored_in_callee(unit, ev) else ev.node
        how = ev.extra["how"]
        if step is not None:
            def message(d):
                return f"{d.code(node, 60)} keeps a tensor and its autograd graph past {d.call(step.node)} at line {d.line(step.node)}"
            related = [(step.node, "the optimizer step the kept graph survives")]
            if how == "entry" and not ev.extra.get("fixed"):
                how = "entries"
            if _never_backpropagated(unit, ev):
                effect = _EFFECT[how] + _UNFREED  # the measured node count is of a backpropagated loss
            else:
                effect = _EFFECT[how] + (_MEASURED if how not in ("entry", "entries") else "")
        else:
            loop = ev.ctx.loops[-1].node

            def message(d):
                return f"{d.code(node, 60)} keeps a tensor and its autograd graph from every iteration of line {d.line(loop)}"
            related = [(loop, "the loop that runs no backward()")]
            effect = _FORWARD_ONLY
        return Report(
            self.info.code, node, message, related,
            note=lambda d: f"{effect}. Store loss.item() (or loss.detach()).",
            at=ev if node is ev.node else None,
        )


def _freed_in_fixed_run(unit: Unit, ev: Event) -> bool:
    """Whether append ``ev`` keeps at most one emptied graph per item the code names: a
    ``backward()`` without ``retain_graph`` frees the graph of what it appends in every
    iteration that appends it (``freed``), its innermost loop goes over a list or tuple display
    (:attr:`~loopcheck.engine.ir.LoopInfo.display`: ``for x_in in [x_real, x_fake]:``, one pass
    per item written there), and the block that holds that loop re-binds or clears the
    container before it (:func:`_emptied_before`), so every run of the loop starts from an
    empty container. The list then holds at most that many scalars and emptied graph nodes (no
    saved tensor), let go at the next run: the losses of a two-critic update, each
    backpropagated as it is stored. Appended in a loop over steps (``range(n)``, a loader), or
    into a list the loop does not start empty, it grows with the steps: reported."""
    if ev.extra.get("how") != "append" or not ev.extra.get("freed") or not ev.ctx.loops:
        return False
    loop = ev.ctx.loops[-1]
    return loop.display and _emptied_before(unit, loop, ev.subject)


def _emptied_before(unit: Unit, loop: LoopInfo, container: str) -> bool:
    """Whether a statement of the block that holds ``loop`` (not nested in an ``if``, a loop or
    a ``try`` of it) re-binds or clears ``container`` (``graph_release``) before the loop: every
    path into the loop passes it."""
    block = unit.cached("LC401 loop blocks", lambda: dict(_loop_blocks(unit.ir)))
    found = block.get(id(loop))
    if found is None:
        return False
    seq, index = found
    return any(
        e.kind == "graph_release" and e.subject == container
        for raw in _plain_raws(seq.items[:index]) for e in raw.typed
    )


def _loop_blocks(node) -> Iterator[tuple[int, tuple[Seq, int]]]:
    """``(id of a loop's LoopInfo, (the Seq that holds the loop, its index there))`` for each
    loop of the IR ``node``."""
    if type(node) is Seq:
        for i, item in enumerate(node.items):
            if type(item) is Loop:
                yield id(item.info), (node, i)
    if isinstance(node, (Assign, Call)):
        return
    for part in parts(node):
        yield from _loop_blocks(part)


def _plain_raws(items) -> Iterator:
    """The raw events among ``items`` that run whenever the block does: the raws themselves and
    those of plain nested blocks, not of an ``if``, a loop, a ``try`` or an inlined call."""
    for item in items:
        if isinstance(item, (Assign, Call)):
            yield item
        elif type(item) is Seq:
            yield from _plain_raws(item.items)


def _fixed_size_computation(unit: Unit, ev: Event) -> bool:
    """Whether store ``ev`` runs a number of times the code fixes in a unit that steps no
    optimizer: every loop around it has a fixed count (:attr:`~loopcheck.engine.ir.LoopInfo.count`:
    ``for _ in range(50):``, ``range(SEQ)`` with ``SEQ = 16`` bound once). What it keeps is
    then one computation of a fixed size, like the forward of a recurrent network over a fixed
    number of time steps (a unit test that unrolls a cell), freed when the unit's function
    returns; graphs pile up with the steps of a run only across a loop over data or a loop of
    unknown length (``range(steps)``, a loader): reported."""
    if unit.of_kind("step", "scaler_step"):
        return False
    return all(loop.count is not None for loop in ev.ctx.loops)


def _returned_by_owner(unit: Unit, ev: Event) -> bool:
    """Whether the container of store ``ev`` is a local variable of an inlined call (its symbol
    carries the call's prefix, ``f3_1:res``: a new one on each call, gone when the call returns)
    from which a value that call returns is computed (outside ``.item()``, ``float()``,
    ``.detach()``: :class:`~loopcheck.engine.ir.Sources`): ``res.append(out)`` over the
    sentences of one document, then ``return torch.stack(res)``. The graphs the container keeps
    are then the graph of the call's result, held by the caller as long as it keeps that
    result: what the caller does with it is judged at the caller's own stores (and LC302 judges
    a forward in eval mode with gradients on). The entry function's own returns are
    :func:`_backpropagated`'s; a sum returned as ``float(total)`` keeps nothing the result
    needs: reported."""
    fid, sep, _name = ev.subject.partition(":")
    if not sep:
        return False
    inline = next((n for n in _inlines(unit.ir) if n.fid == fid), None)
    if inline is None:
        return False
    defs = unit.cached("LC401 definitions", lambda: _definitions(unit))
    return ev.subject in _flows_from(defs, set(_returned(inline.body)))


def _inlines(node) -> Iterator[Inline]:
    """Every inlined call of the IR ``node``."""
    if isinstance(node, (Assign, Call)):
        return
    if type(node) is Inline:
        yield node
    for part in parts(node):
        yield from _inlines(part)


def _kept_by_mode(unit: Unit, ev: Event) -> bool:
    """Whether store ``ev`` still stores a value with a graph once the forwards that return none
    in the mode their model is in are known (``forward_returns_no_graph``: an eval-mode call of a
    model whose ``forward`` computes its predictions under ``no_grad``). Read last: it needs
    the mode flows and the model classes' source."""
    kept = unit.cached("LC401 stores by mode", lambda: _stores_by_mode(unit))
    return kept is None or id(ev.raw) in kept


def _stores_by_mode(unit: Unit) -> frozenset[int] | None:
    """The ids of the raw events that store a value with a graph when the forwards of the unit
    that return none are known; ``None`` when there are no such forwards (nothing changes)."""
    free = frozenset(
        id(f.raw) for f in unit.of_kind("forward")
        if f.ctx.grad == "enabled" and forward_returns_no_graph(unit, f, _training(unit, f))
    )
    if not free:
        return None
    _carriers, stores = graph_stores(unit.raws(), unit.roles, free)
    return frozenset(id(st.raw) for st in stores)


def _training(unit: Unit, fwd: Event) -> bool | None:
    """The value of ``model.training`` at forward ``fwd`` when its mode is the same on every path
    that reaches it (``None``: not known)."""
    kinds = {s.kind for s in modes_at(unit, fwd.subject, fwd)} if fwd.subject is not None else set()
    return kinds == {"train"} if kinds in ({"train"}, {"eval"}) else None


def _forward_only(unit: Unit, ev: Event) -> bool:
    """Whether the loop around ``ev`` runs a model's forward pass in every iteration but no
    ``backward()``, no optimizer step and no gradient query (``torch.autograd.grad``, a
    differentiable optimizer's ``step``) on what the store keeps (:func:`_differentiated_in`),
    and nothing the container keeps is ever backpropagated: each kept graph holds the
    activations its forward pass saved."""
    if not ev.ctx.loops:
        return False
    loop = ev.ctx.loops[-1]
    # a forward of the module the loop's own target binds (``for layer in layers: x = layer(x)``)
    # is one stage of a pass through those modules, bounded by their number: not a pass per
    # iteration over new data
    if not any(loop in f.ctx.loops and not _called_loop_target(loop, f) for f in unit.of_kind("forward")):
        return False  # a loop over layers or dict entries inside a forward: no pass per iteration
    training = unit.of_kind("backward", "step", "scaler_step", "havoc")
    if any(loop in e.ctx.loops for e in training if e.kind != "havoc" or e.may_change("grads")):
        return False
    if _differentiated_in(unit, ev, loop):
        return False
    return ev.subject not in _backpropagated(unit)


def _differentiated_in(unit: Unit, ev: Event, loop) -> bool:
    """Whether a gradient query in ``loop`` (``torch.autograd.grad``, a differentiable
    optimizer's ``step``) runs backward through what store ``ev`` keeps: its loss is the stored
    value, the container, or computed from one of them (one whose loss the engine cannot name
    counts). Like ``backward()`` it frees the saved tensors of the graph it differentiates, or,
    with ``create_graph=True``, keeps them on purpose for a higher-order gradient: the losses of
    an unrolled inner loop (MAML) whose fast weights carry every step's graph to the
    meta-gradient. A query on another value (the support loss of a test-time adaptation, when
    the store keeps the query loss) frees nothing the store keeps."""
    queries = [g for g in unit.of_kind("grad_query") if loop in g.ctx.loops]
    if not queries:
        return False
    kept = _stored_names(unit, ev) | {ev.subject}
    defs = unit.cached("LC401 definitions", lambda: _definitions(unit))
    for g in queries:
        roots = _query_loss(unit, g)
        if roots is None or kept & _flows_from(defs, roots):
            return True
    return False


def _query_loss(unit: Unit, g: Event) -> set[str] | None:
    """The symbols the loss of gradient query ``g`` names: its subject, or the names its loss
    argument mentions (``torch.autograd.grad(loss.sum(), x)``); ``None`` when not known."""
    if g.subject is not None:
        return {g.subject}
    summary = summary_of(g.raw, unit.roles) if isinstance(g.raw, Call) else None
    for eff in summary.effects if summary is not None else ():
        if eff.event == "grad_query":
            arg = arg_at(g.raw, eff.get("loss"))
            if arg is not None and arg.mentions:
                return {unit.roles.canon(m) for m in arg.mentions}
    return None


def _stored_names(unit: Unit, ev: Event) -> set[str]:
    """The symbols of the value store ``ev`` keeps: the stored name, or the names with a graph
    the stored expression is computed from (``total += val_loss``: the loss)."""
    names: set[str] = set()
    if ev.extra.get("value"):
        names.add(ev.extra["value"])
    raw = ev.raw
    if isinstance(raw, Assign) and raw.sources is not None:
        names |= set(raw.sources.names) & unit.roles.graph
    return names


def _let_go_each_training_iteration(unit: Unit, flow, ev: Event) -> bool:
    """Whether the graphs that store ``ev`` piles up in its forward-only loop are let go in
    each iteration of an enclosing loop that trains: that loop runs an optimizer step, and no
    step that comes before the store in program order (so one of a later iteration) is reached
    while the container still holds them: it is re-bound or cleared in between (a rollout
    buffer emptied after the update that consumes it: ``self.values = []`` after the
    ``step()``). At most one iteration's collection is then alive at any step, and memory does
    not grow across the updates (one that is kept into the next iteration's steps is a pile-up:
    reported)."""
    outer = ev.ctx.loops[:-1]
    steps = unit.of_kind("step", "scaler_step")
    if not any(loop in s.ctx.loops for s in steps for loop in outer):
        return False  # no enclosing loop trains: an evaluation that piles up its graphs
    here = unit.order(ev)
    return not any(
        unit.order(s) < here and any(isinstance(st, tuple) and ev in st[-1] for st in flow.states(s))
        for s in steps
    )


def _never_backpropagated(unit: Unit, ev: Event) -> bool:
    """Whether no ``backward()`` of the unit runs on what store ``ev`` keeps: neither the stored
    value nor anything computed from the container flows into one (nor out of the entry
    function, whose caller may backpropagate it; :func:`_backpropagated`). Its kept graphs then
    still hold the activations their forward passes saved, not only their nodes."""
    out = unit.cached("LC401 backpropagated", lambda: _backpropagated(unit))
    names = {ev.subject} | _stored_names(unit, ev)
    return "*" not in out and not names & out


def _called_loop_target(loop, f: Event) -> bool:
    """Whether forward ``f`` calls a module that ``loop``'s target binds (another module in
    each iteration)."""
    func = getattr(f.raw, "func", None)
    return bool(func) and binds_each_iteration(loop, func)


def _backpropagated(unit: Unit) -> set[str]:
    """The symbols whose values flow into a ``backward()`` or a gradient query
    (``torch.autograd.grad``: :func:`_query_loss`) of the unit, or into the value its entry
    function returns (every symbol, through ``"*"``, when a backward's loss, or the loss of a
    gradient query, is not known). A returned value goes to a caller the unit does not see,
    which may backpropagate it: a module's ``forward`` returns the output its caller's loss is
    computed from (one collected per branch or per time step is that output, not graphs
    piling up)."""
    defs = unit.cached("LC401 definitions", lambda: _definitions(unit))
    todo = set(_returned(unit.ir))
    for b in unit.of_kind("backward", "grad_query"):
        roots = ({b.subject} if b.subject is not None else None) if b.kind == "backward" else _query_loss(unit, b)
        if roots is None:
            return {"*"} | set(defs)
        todo |= roots
    return _flows_from(defs, todo)


def _definitions(unit: Unit) -> dict[str, set[str]]:
    """For each symbol of the unit, the symbols its values are computed from (an assignment's
    sources, what a method call of an object is given, what a store puts in a container)."""
    defs: dict[str, set[str]] = {}
    for raw in walk_events(unit.ir):
        names = set(raw.sources.names) if raw.sources is not None else set()
        for t in ((raw.target,) if isinstance(raw, Assign) else raw.targets):
            if t:
                defs.setdefault(t, set()).update(names)
        if not isinstance(raw, Assign) and raw.receiver and raw.args:
            # ``outs.append(self.out(h))``: an object may keep what its method is given
            defs.setdefault(raw.receiver, set()).update(m for a in raw.args for m in a.mentions)
    for ev in unit.of_kind("graph_store"):  # a container holds what is stored into it
        raw = ev.raw
        if isinstance(raw, Assign):
            names = set(raw.sources.names) if raw.sources is not None else set()
        else:
            names = {m for a in raw.args for m in a.mentions}
        defs.setdefault(ev.subject, set()).update(names)
    return defs


def _flows_from(defs: dict[str, set[str]], roots) -> set[str]:
    """``roots`` and every symbol their values are computed from, through ``defs`` (a symbol
    to the symbols its values are computed from, :func:`_definitions`). A member is computed
    from the object it is read from, at every level of its dotted name: ``probs.squeeze`` (the
    ``probs.squeeze()`` a forward returns) from ``probs`` and what was stored into it,
    ``self@M.buf.view`` from ``self@M.buf`` and from ``self@M``."""
    todo = list(roots)
    out: set[str] = set()
    while todo:
        sym = todo.pop()
        if sym in out:
            continue
        out.add(sym)
        todo.extend(defs.get(sym, ()))
        dot = sym.rfind(".")
        if dot > 0:
            todo.append(sym[:dot])  # the object the member is read from, then its own object
    return out


def _returned(node) -> Iterator[str]:
    """The symbols the values returned by the unit's entry function are computed from (the
    ``return`` statements of its own body, not those of inlined calls, whose values stay in
    the unit)."""
    if type(node) is Jump:
        if node.kind == "return":
            yield from node.values
        return
    if type(node) is not Inline:
        for part in parts(node):
            yield from _returned(part)
