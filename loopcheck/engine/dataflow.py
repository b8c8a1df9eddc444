"""Run a typestate machine over the event IR: a fixpoint over a finite set of states.

A :class:`Machine` has an initial state, a transfer function per typed event and,
optionally, a hook for the arms of an ``if``. :func:`run` interprets the structured IR
with sets of states: ``if`` joins its arms, a loop iterates its body until the states at
its head stop changing (so the last iteration flows back into the first), ``break``,
``continue`` and ``return`` carry their states to where they land, and an inlined
function's ``return`` ends only that function. The result gives, for every typed event,
the set of states in which it can run; rules decide from that set.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Hashable, Iterable

from loopcheck.engine.events import Event
from loopcheck.engine.ir import Assign, Call, If, Inline, Jump, Loop, Node, Seq, Try

State = Hashable


class Machine:
    """Base class of a rule's state machine; states must be hashable."""

    def initial(self) -> State:
        raise NotImplementedError

    def transfer(self, state: State, event: Event) -> State:
        """The state after ``event`` runs in ``state``."""
        return state

    def branch(self, state: State, node: If, taken: bool) -> State:
        """The state on entering the body (``taken``) or the else-arm of ``node``."""
        return state


@dataclass
class _Out:
    normal: set = field(default_factory=set)
    brk: set = field(default_factory=set)
    cont: set = field(default_factory=set)
    ret: set = field(default_factory=set)


@dataclass
class Flow:
    """The result of :func:`run`: ``at[event]`` is the set of states reaching the event;
    ``exit`` the states at the end of the unit."""

    at: dict[Event, set] = field(default_factory=dict)
    exit: set = field(default_factory=set)

    def states(self, event: Event) -> set:
        return self.at.get(event, set())


MAX_LOOP_ITERATIONS = 50


class _Interpreter:
    def __init__(self, machine: Machine) -> None:
        self.m = machine
        self.flow = Flow()

    def events(self, raw: Call | Assign, states: set) -> set:
        for ev in raw.typed:
            self.flow.at.setdefault(ev, set()).update(states)
            states = {self.m.transfer(s, ev) for s in states}
        return states

    def exec(self, node: Node, states: set) -> _Out:
        if not states:
            return _Out()
        if isinstance(node, (Call, Assign)):
            return _Out(self.events(node, states))
        if isinstance(node, Seq):
            out = _Out()
            cur = states
            for item in node.items:
                r = self.exec(item, cur)
                out.brk |= r.brk
                out.cont |= r.cont
                out.ret |= r.ret
                cur = r.normal
                if not cur:
                    break
            out.normal = cur
            return out
        if isinstance(node, If):
            a = self.exec(node.body, {self.m.branch(s, node, True) for s in states})
            b = self.exec(node.orelse, {self.m.branch(s, node, False) for s in states})
            return _Out(a.normal | b.normal, a.brk | b.brk, a.cont | b.cont, a.ret | b.ret)
        if isinstance(node, Loop):
            head = set(states)
            body = _Out()
            for _ in range(MAX_LOOP_ITERATIONS):
                body = self.exec(node.body, head)
                new_head = head | body.normal | body.cont
                if new_head == head:
                    break
                head = new_head
            exits = set() if node.infinite else head
            after = self.exec(node.orelse, exits) if node.orelse.items else _Out(exits)
            return _Out(after.normal | body.brk, after.brk, after.cont, after.ret | body.ret)
        if isinstance(node, Jump):
            if node.kind == "break":
                return _Out(brk=set(states))
            if node.kind == "continue":
                return _Out(cont=set(states))
            return _Out(ret=set(states))
        if isinstance(node, Try):
            body = self.exec(node.body, states)
            handler_in = states | body.normal
            out = _Out(brk=set(body.brk), cont=set(body.cont), ret=set(body.ret))
            normal = self.exec(node.orelse, body.normal).normal if node.orelse.items else set(body.normal)
            for h in node.handlers:
                r = self.exec(h, handler_in)
                normal |= r.normal
                out.brk |= r.brk
                out.cont |= r.cont
                out.ret |= r.ret
            if node.final.items:
                fin = self.exec(node.final, normal | out.ret)
                out.ret |= fin.ret
                normal = fin.normal
            out.normal = normal
            return out
        if isinstance(node, Inline):
            r = self.exec(node.body, states)
            return _Out(r.normal | r.ret)
        raise TypeError(node)


def run(machine: Machine, unit: Seq, initial: Iterable[State] | None = None) -> Flow:
    """Interpret ``unit`` with ``machine``, starting from ``initial`` (default: the
    machine's initial state)."""
    interp = _Interpreter(machine)
    start = set(initial) if initial is not None else {machine.initial()}
    out = interp.exec(unit, start)
    interp.flow.exit = out.normal | out.ret
    return interp.flow
