"""An analysis unit: one entry point's IR with its typed events and the file's roles."""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from dataclasses import dataclass, field
from typing import Callable, Mapping

from loopcheck.engine.classes import is_module_class
from loopcheck.engine.dataflow import Flow, Machine, run
from loopcheck.engine.events import Event
from loopcheck.engine.ir import Jump, LoopInfo, Seq, parts, walk_events
from loopcheck.engine.roles import Roles


class _Builds(Machine):
    """The construction of a symbol that reaches each point (reaching definitions)."""

    only_own_events = True

    def __init__(self, sym: str, kind: str, queried: str, names: frozenset[str]) -> None:
        self.sym, self.kind = sym, kind
        self.kinds = frozenset({kind, queried})  # the queried events must be visited too
        self.subjects = names  # the symbol's names (aliases included)

    def initial(self):
        return frozenset()

    def transfer(self, state, event: Event):
        if event.kind == self.kind and event.subject == self.sym:
            return frozenset({event})
        return state


@dataclass(eq=False)
class Unit:
    """One entry point (module code or an uncalled function) ready for the rules.

    Attributes:
        ir: the event IR.
        roles: the roles of the file's symbols.
        events: the typed events in program order (inlined calls included).
        module: the index of the checked module (its entry points are the unit's).
        node_module: ``id(node) → index`` of the module each IR node comes from (calls of
            other modules of the project are inlined).
        entry: the function the unit reads on its own (no one in its module calls it), ``None``
            for the module's code and for the loops a framework runs.
        peers: weak references to every unit of the same checked module, this one included
            (set by :func:`loopcheck.analysis.build_units`; weak, so that units and their list
            make no reference cycle): what other entry points of the module do at a node that
            this one reaches too (:meth:`peer_units`).
    """

    ir: Seq
    roles: Roles
    events: list[Event] = field(default_factory=list)
    module: object = None
    node_module: dict = field(default_factory=dict)
    entry: object = None
    peers: tuple = ()
    _flows: dict = field(default_factory=dict)
    _order: dict = field(default_factory=dict)
    _chains: dict = field(default_factory=dict)
    _by_kind: dict = field(default_factory=dict)  # kind -> program-order indexes of its events
    _kinds: dict = field(default_factory=dict)  # tuple of kinds -> (events, their indexes)

    def __post_init__(self) -> None:
        if not self.events:
            self.events = [ev for raw in walk_events(self.ir) for ev in raw.typed]
        self._order = {id(ev): i for i, ev in enumerate(self.events)}

    def raws(self) -> list:
        """The raw events of the unit in program order (computed once)."""
        if "raws" not in self._flows:
            self._flows["raws"] = list(walk_events(self.ir))
        return self._flows["raws"]

    def cached(self, key: str, compute: Callable[[], object]) -> object:
        """``compute()``, computed once per unit and ``key`` (a fact a rule derives from the
        unit's flows, such as which forwards return no graph)."""
        if key not in self._flows:
            self._flows[key] = compute()
        return self._flows[key]

    def returned(self) -> frozenset[str]:
        """The symbols the unit's functions return values computed from (``return lbox + lobj``)."""
        if "returned" not in self._flows:
            out: set[str] = set()
            stack = [self.ir]
            while stack:
                node = stack.pop()
                if isinstance(node, Jump) and node.kind == "return":
                    out |= node.values
                stack.extend(parts(node))
            self._flows["returned"] = frozenset(out)
        return self._flows["returned"]

    @property
    def in_module_forward(self) -> bool:
        """Whether the unit reads the ``forward`` of an ``nn.Module`` class of the project on its
        own (no one in its module calls it). Its callers, which the unit does not see, decide
        whether a pass through it evaluates or trains: an ``eval()`` of a layer inside it, or a
        loop in it, establishes no evaluation pass (a backward may follow the call)."""
        entry = self.entry
        if entry is None or entry.name.value != "forward":
            return False
        index = self.module
        name = getattr(index, "method_class", {}).get(entry)
        ref = index.class_ref(name) if name is not None else None
        return ref is not None and is_module_class(ref)

    def module_of(self, node) -> object:
        """The index of the module a node of the IR comes from."""
        return self.node_module.get(id(node), self.module)

    def calls_to(self, node) -> tuple | None:
        """The inlined calls that lead to the event at ``node``, outermost first (``None``
        when no event of the unit is at ``node``)."""
        if not self._chains:
            for raw in walk_events(self.ir):
                self._chains.setdefault(id(raw.node), raw.ctx.calls)
        return self._chains.get(id(node))

    def order(self, event: Event) -> int:
        """Program-order index of an event within this unit."""
        return self._order[id(event)]

    def in_order(self, states, *fields: str) -> list:
        """``states`` (a machine's set of states at one event, which has no order of its own)
        sorted by the program order of the events in ``fields`` (``None`` first, an event of
        another unit last), so that a rule reporting the first state of a kind reports the same
        one on every run."""

        def position(ev) -> int:
            if ev is None:
                return -1
            return self._order.get(id(ev), len(self._order))

        return sorted(states, key=lambda s: tuple(position(getattr(s, f)) for f in fields))

    def flow(self, key: tuple, factory: Callable[[], Machine]) -> Flow:
        """Run (once, then cached under ``key``) the machine ``factory()`` over the unit."""
        if key not in self._flows:
            self._flows[key] = run(factory(), self.ir)
        return self._flows[key]

    def builds_reaching(self, event: Event, sym: str, kind: str = "opt_build") -> list[Event]:
        """The constructions of ``sym`` (events of ``kind``) that can reach ``event``: after
        ``opt = Adam([w])`` ... ``opt = Adam(model.parameters())``, a step in between is the
        first optimizer's. Empty when none of the unit's constructions reaches it."""
        flow = self.flow(
            ("builds", sym, kind, event.kind), lambda: _Builds(sym, kind, event.kind, self.roles.names_of(sym))
        )
        return [b for states in flow.states(event) for b in states]

    def built_on_every_path(self, event: Event, sym: str, kind: str = "opt_build") -> bool:
        """Whether a construction of ``sym`` (an event of ``kind``) reaches ``event`` on every
        path that reaches it: ``False`` where ``sym`` may still hold an object from outside the
        unit there (a parameter, a global bound elsewhere), so :meth:`builds_reaching` does not
        name all it may hold."""
        flow = self.flow(
            ("builds", sym, kind, event.kind), lambda: _Builds(sym, kind, event.kind, self.roles.names_of(sym))
        )
        states = flow.states(event)
        return bool(states) and frozenset() not in states

    def objects_at(self, event: Event, sym: str, kind: str = "opt_build") -> frozenset:
        """The objects ``sym`` may name at ``event`` (an event of this unit), by where each was
        created: ``("built", id(node))`` for each construction of ``sym`` (an event of
        ``kind``: ``opt_build``, ``sched_build``) that reaches ``event``, the node being its
        constructor call (``torch.optim.Adam(...)``: one creation site, whichever inlined call
        of its function runs it); and ``("given", id(self), sym)`` where some path reaches
        ``event`` with none of the unit's constructions (the object the entry point is given:
        a parameter, a global bound elsewhere; the same binding of this unit only). Empty when
        no path reaches ``event``."""
        flow = self.flow(
            ("builds", sym, kind, event.kind), lambda: _Builds(sym, kind, event.kind, self.roles.names_of(sym))
        )
        out: set = set()
        for states in flow.states(event):
            out |= {("built", id(b.node)) for b in states} if states else {("given", id(self), sym)}
        return frozenset(out)

    def peer_units(self) -> list["Unit"]:
        """The units of the same checked module (:attr:`peers`) still alive, this one
        included; ``[self]`` when none were set."""
        found = [u for u in (ref() for ref in self.peers) if u is not None]
        return found or [self]

    def _of_kinds(self, kinds: tuple[str, ...]) -> tuple[list[Event], list[int]]:
        """The events of ``kinds`` in program order and their program-order indexes, computed
        once per tuple of kinds (rules ask for the same kinds once per event they look at)."""
        hit = self._kinds.get(kinds)
        if hit is None:
            if not self._by_kind:
                for i, ev in enumerate(self.events):
                    self._by_kind.setdefault(ev.kind, []).append(i)
            wanted = set(kinds)
            if len(wanted) == 1:
                orders = self._by_kind.get(kinds[0], [])
            else:
                orders = sorted(i for k in wanted for i in self._by_kind.get(k, ()))
            hit = self._kinds[kinds] = ([self.events[i] for i in orders], orders)
        return hit

    def of_kind(self, *kinds: str) -> list[Event]:
        """The events of ``kinds`` in program order (a new list)."""
        return list(self._of_kinds(kinds)[0])

    def _groups(self, how: str, kinds: tuple[str, ...], key: Callable[[Event], object]) -> dict:
        """The events of ``kinds`` grouped by ``key`` (``None``: in no group), in program order
        in each group; computed once per ``how`` and tuple of kinds (a rule asking once per
        event would otherwise scan every event of the unit for each)."""
        groups = self._kinds.get((how, kinds))
        if groups is None:
            groups = self._kinds[(how, kinds)] = {}
            for ev in self._of_kinds(kinds)[0]:
                k = key(ev)
                if k is not None:
                    groups.setdefault(k, []).append(ev)
        return groups

    def in_loop(self, loop: LoopInfo, *kinds: str) -> list[Event]:
        """The events of ``kinds`` whose innermost loop is ``loop``, in program order."""
        groups = self._groups("in_loop", kinds, lambda ev: id(ev.ctx.loops[-1]) if ev.ctx.loops else None)
        return list(groups.get(id(loop), ()))

    def by_subject(self, *kinds: str) -> Mapping[str, list[Event]]:
        """The events of ``kinds`` grouped by subject, each group in program order (the table
        :meth:`of_subject` reads; not to be changed by the caller)."""
        return self._groups("of_subject", kinds, lambda ev: ev.subject)

    def of_subject(self, subject: str, *kinds: str) -> list[Event]:
        """The events of ``kinds`` whose subject is ``subject`` (``optimizer``'s steps), in
        program order; empty for ``None`` (events without a subject are in no group)."""
        return list(self.by_subject(*kinds).get(subject, ()))

    def next_event(self, after: Event, kinds: tuple[str, ...], same_loop: bool = True) -> Event | None:
        """The first event of ``kinds`` after ``after`` in program order (inside the same
        innermost loop when ``same_loop``), or ``None``."""
        events, orders = self._of_kinds(tuple(kinds))
        loops = after.ctx.loops
        for i in range(bisect_right(orders, self.order(after)), len(events)):
            ev = events[i]
            if not same_loop or ev.ctx.loops[: len(loops)] == loops:
                return ev
        return None

    def prev_event(self, before: Event, kinds: tuple[str, ...]) -> Event | None:
        """The last event of ``kinds`` before ``before`` in the same innermost loop."""
        events, orders = self._of_kinds(tuple(kinds))
        loops = before.ctx.loops
        for i in range(bisect_left(orders, self.order(before)) - 1, -1, -1):
            ev = events[i]
            if ev.ctx.loops[: len(loops)] == loops:
                return ev
        return None
