"""Values that carry an autograd graph, and the containers that keep them.

A tensor computed with grad enabled from the output of a model's forward pass, or from a tensor
that requires grad, references its ``grad_fn`` graph; whatever keeps that tensor keeps the
graph (https://pytorch.org/docs/stable/notes/autograd.html). Nothing else carries one: a Python
number (``loss.item()``, ``float(loss)``), a detached tensor (``loss.detach()``, ``loss.data``),
an integer or boolean tensor (``logits.argmax(1)``, ``labels != -100``, ``mask.long()``: only
floating point tensors can require gradients), a tensor's metadata (``x.shape``), a value
computed under ``torch.no_grad()``/``inference_mode``, or one computed from labels, masks and
counts only.

:func:`graph_stores` decides, for the raw events of one file, which definitions are
*established* to give a value with a graph, and a name read by an event carries one when the
definitions that reach it (the closest one before it in the same loop iteration, else all of
them) all do or decide nothing, and one does. A definition does when it is made with grad
enabled from a model's forward pass (of a model that may hold parameters: one established to
hold none records no operation of its own, nor does one built here only from classes that
build no parameter of their own and given nothing established to be a module, whose
parameters are then not established:
:func:`~loopcheck.engine.values.models_without_own_parameters`), or through calls whose results keep the graph of
their inputs (tensor methods, arithmetic, ``torch.cat``, a loss function, a criterion, the
forward of a model without parameters) from a name
that carries a graph or from a leaf that requires grad (``nn.Parameter(t)``,
``torch.zeros(3, requires_grad=True)``: no graph of its own, but what is computed from it has
one); and when ``backward()`` runs on what it defines (it would raise on a value without a
graph). A definition made under ``no_grad`` or giving a number, a detached or an integer value
refutes the fact, even for a name backpropagated elsewhere.

A definition through a call the engine does not understand (a function of another library, an
unknown method) is not established either way: the rules that read this fact stay silent
rather than guess. A bare number (``total = 0``), an accumulation (``total += x``, judged at
the store) and the call of an inlined function (its ``return`` defines the target) decide
nothing.

:func:`graph_stores` lists the stores of such values into something that outlives the
statement: an element appended or put into a container (``history.append(loss)``,
``d[k] = loss``), a total (``total += loss``, ``total = total + loss``) or a store a library
entry describes (``store`` effects: timm's ``AverageMeter.update``), each with the symbol of the
container that keeps it.
"""

from __future__ import annotations

from dataclasses import dataclass

import libcst as cst

from loopcheck.engine.calls import arg_at, receiver_of, summary_of
from loopcheck.engine.ir import Assign, Call, RawEvent, Sources
from loopcheck.engine.knowledge import NO_GRAPH, knowledge
from loopcheck.engine.walk import walk

#: ``returns.value`` kinds of a library call whose result keeps the graph of its inputs.
_KEEPS_GRAPH = frozenset({"derived", "logits", "probabilities", "log_probabilities"})
#: ``[class.attributes]`` kinds of ``torch.Tensor`` attributes that read no graph.
_NO_GRAPH_ATTRIBUTES = frozenset({"metadata", "detached"})
#: Container methods that keep their (last) argument: ``list.append``, ``set.add``, ``Queue.put``.
_KEEPING_METHODS = frozenset({"append", "extend", "insert", "add", "put", "appendleft"})
_YES, _LEAF, _KEEP, _NO, _NEUTRAL, _UNKNOWN = "yes", "leaf", "keep", "no", "neutral", "unknown"


@dataclass(frozen=True, eq=False)
class GraphStore:
    """A value that carries an autograd graph, kept by a container.

    Attributes:
        raw: the raw event that stores it (an :class:`Assign` or a :class:`Call`).
        container: the symbol of what keeps the value (``history``, ``total``, ``meter.sum``).
        value: the symbol of the stored value (``loss``), ``None`` when it is an expression.
        how: ``"append"`` (a new element every time: what is kept grows), ``"total"`` (an
            accumulator: the graph chains onto the total, which grows), ``"entry"`` (an entry
            replaced: the last value is kept, nothing grows).
        fixed: an entry of a literal key (``d["loss"] = v``): every run of the store replaces
            the same entry (else a key that changes, ``d[step] = v``, may keep one per run).
        freed: for an entry of a fixed key (``d["loss"] = loss``, replaced by each run of the
            store) or an appended element (``losses.append(loss)``), a ``backward()`` without
            ``retain_graph`` runs on the stored value in every iteration that stores it: the
            graph's saved tensors are freed, so each slot or element keeps one step's scalar
            and the emptied nodes of its graph, nothing more (a fixed entry: nothing grows; a
            list still grows by one element per store, which the rule weighs).
    """

    raw: RawEvent
    container: str
    value: str | None
    how: str
    freed: bool = False
    fixed: bool = False


class _Graphs:
    """One file's definitions and their verdicts (see the module docstring).

    A name read by an event is judged by the definitions that reach it: the closest one before
    it in the same iteration of its innermost loop (or before it, outside loops), else all the
    name's definitions. Branches are not told apart: a definition in an arm that is not the
    path's can hide the one that is, which only makes the fact rarer, never wrong in kind."""

    def __init__(self, events: list[RawEvent], roles, no_graph: frozenset[int] = frozenset(),
                 forwards_record: bool = True) -> None:
        self.roles = roles
        self.no_graph = no_graph  # ids of forward calls established to return no graph
        # False: the forward of a model that may hold parameters only keeps the graph of its
        # inputs (the graph of its own parameters is left out: see GradInputs)
        self.forwards_record = forwards_record
        self.kb = knowledge()
        self.order = {id(e): i for i, e in enumerate(events)}
        self.defs: dict[str, list[RawEvent]] = {}
        self.backwards: list[tuple[str, Call]] = []
        self.frees: list[tuple[str, Call]] = []  # (symbol, a backward() that frees its graph)
        # (symbol, key) -> the assignments that bind a name to that member: m = out["loss"]
        self.member_reads: dict[tuple[str, str], list[Assign]] = {}
        # symbol -> the events that may change its members: out["loss"] = v, out.pop("loss")
        self.member_writes: dict[str, list[RawEvent]] = {}
        for e in events:
            if isinstance(e, Assign):
                if e.target and e.op != "[]=":
                    self.defs.setdefault(e.target, []).append(e)
                elif e.target:
                    self.member_writes.setdefault(e.target, []).append(e)
                member = _member_read(e)
                if member is not None:
                    self.member_reads.setdefault(member, []).append(e)
            else:
                for t in e.targets:
                    if t:
                        self.defs.setdefault(t, []).append(e)
                if e.receiver is not None and e.inner is None:
                    self.member_writes.setdefault(e.receiver, []).append(e)
                loss = _backward_loss(e)
                if loss is not None:
                    self.backwards.append((loss, e))
                self.frees.extend((v, e) for v in _freed_by(e, roles))
        self.yes: set[int] = set()  # ids of the definitions that carry a graph
        self.leaf: set[int] = set()  # ids of the definitions of tensors that require grad
        self.neutral: set[int] = set()
        self._reaching: dict[tuple[str, int], list[RawEvent]] = {}
        self._up: dict[tuple[str, int], set[int]] = {}

    def run(self) -> frozenset[str]:
        """The least fixpoint of the definitions' verdicts (a verdict only turns to ``yes`` as
        more definitions carry); returns the symbols with a definition that carries."""
        pending = []
        for sym, ds in self.defs.items():
            for d in ds:
                if _static_neutral(d):
                    self.neutral.add(id(d))
                elif not _makes_no_graph(d):
                    pending.append((d, sym))
        for loss, b in self.backwards if self.forwards_record else ():  # backward() raises on a value without a graph
            for d in self.reaching(loss, b):  # (a graph that may be only the parameters' one)
                if not _makes_no_graph(d) and id(d) not in self.neutral:
                    self.yes.add(id(d))
        changed = True
        while changed:
            changed = False
            for d, sym in pending:
                if id(d) in self.yes or id(d) in self.leaf:
                    continue
                v = self.verdict(d, sym)
                if v in (_YES, _LEAF):
                    (self.yes if v == _YES else self.leaf).add(id(d))
                    changed = True
        return frozenset(sym for sym, ds in self.defs.items() if any(id(d) in self.yes for d in ds))

    def reaching(self, name: str, at: RawEvent) -> list[RawEvent]:
        """The definitions of ``name`` taken to reach event ``at`` (see the class docstring)."""
        key = (name, id(at))
        found = self._reaching.get(key)
        if found is None:
            ds = self.defs.get(name, [])
            pos = self.order.get(id(at), len(self.order))
            loop = at.ctx.loops[-1] if at.ctx.loops else None
            ds = [d for d in ds if not _returned_into(d)] or ds  # the callee's return defines it
            before = [d for d in ds if self.order[id(d)] < pos and (loop is None or loop in d.ctx.loops) and d is not at]
            found = self._reaching[key] = [max(before, key=lambda d: self.order[id(d)])] if before else list(ds)
        return found

    def name_class(self, name: str, at: RawEvent) -> str | None:
        """What dotted ``name``, read by ``at``, holds: ``yes`` (a value with a graph: the
        symbol, or a view of it that keeps the graph, ``x.T``: the ``derived`` attributes of
        the ``torch.Tensor`` knowledge), ``leaf`` (a tensor that requires grad and has no
        graph of its own: ``nn.Parameter(t)``), else ``None``: never for its metadata
        (``logits.shape``) or its detached values (``x.data``), nor for an attribute a tensor
        does not have (``outputs.loss``, ``g.batch_size``: a member of an object, which may
        hold anything; the symbol ``outputs.loss`` itself, when defined, is judged as any
        other)."""
        after: list[str] = []
        while True:
            if name in self.defs:
                kinds = [self.kb.attribute("torch.Tensor", a) for a in after]
                if any(k in _NO_GRAPH_ATTRIBUTES for k in kinds):
                    return None  # x.shape, x.data.sum: what follows the value reads no graph of it
                if any(k is None for k in kinds):
                    # not an attribute of a tensor: the value is an object (a model output, a
                    # batched graph) whose member may be anything (g.batch_size, an int)
                    return None
                ds = self.reaching(name, at)
                if not all(id(d) in self.yes or id(d) in self.leaf or id(d) in self.neutral for d in ds):
                    return None
                if any(id(d) in self.yes for d in ds):
                    return _YES
                return _LEAF if any(id(d) in self.leaf for d in ds) and not after else None
            if "." not in name:
                return None
            name, _, attr = name.rpartition(".")
            after.append(attr)

    def member_carries(self, name: str, key: str, at: RawEvent) -> bool:
        """Whether the member ``key`` of the object of ``name`` (``out["loss"]``), read by
        ``at``, is established to carry a graph: an assignment ``m = name[key]`` before ``at``
        in the same iteration of ``at``'s innermost loop (or before it, outside loops) that
        carries one (``loss = out["loss"]; loss.backward()``), reading the object ``at``
        reads (the same definitions of ``name`` reach both), with no event between them that
        may change the object's members (``out["loss"] = v``, a method of ``out``): the
        same tensor. Nothing is said of any other member (``out["reward"]``)."""
        pos = self.order.get(id(at), len(self.order))
        loop = at.ctx.loops[-1] if at.ctx.loops else None
        before = [
            d for d in self.member_reads.get((name, key), ())
            if self.order[id(d)] < pos and (loop is None or loop in d.ctx.loops) and d is not at
        ]
        if not before:
            return False
        d = max(before, key=lambda d: self.order[id(d)])
        if id(d) not in self.yes:
            return False
        if [id(x) for x in self.reaching(name, d)] != [id(x) for x in self.reaching(name, at)]:
            return False  # out was re-bound between them: another object
        since = self.order[id(d)]
        return not any(since < self.order[id(w)] < pos for w in self.member_writes.get(name, ()))

    def name_carries(self, name: str, at: RawEvent) -> bool:
        """Whether dotted ``name``, read by ``at``, holds a value with a graph (``name_class``)."""
        return self.name_class(name, at) == _YES

    def freed_in_iteration(self, store: Assign) -> bool:
        """Whether the graph of the value ``store`` keeps has its saved tensors freed in every
        iteration that stores it: a ``backward()`` without ``retain_graph`` runs on the value
        (``d["d"] = d_loss``), or on each value with a graph that it is computed from by
        tensor methods and arithmetic (``d["score"] = pred.mean()``, ``pred`` a term of the
        backpropagated loss: no forward pass of its own)."""
        if store.value_sym is not None:
            return self.freed_with(store.value_sym, store)
        src = store.sources
        if src is None or any(self.call_kind(c) not in (_KEEP, _NO) for c in src.calls):
            return False
        names = [n for n in src.names if self.name_class(n, store) is not None]
        return bool(names) and all(self.freed_with(n, store) for n in names)

    def freed_with(self, name: str, at: RawEvent) -> bool:
        """Whether a ``backward()`` that frees the graph runs whenever ``at`` runs (in the same
        iteration of the same innermost loop, or both outside loops, under no ``if`` that
        ``at`` is not under) on a value computed from the value of ``name`` read by ``at``
        (the same definitions): its graph is part of the graph that backward frees."""
        loop = at.ctx.loops[-1] if at.ctx.loops else None
        defs = {id(d) for d in self.reaching(name, at)}
        for sym, b in self.frees:
            if (b.ctx.loops[-1] if b.ctx.loops else None) is not loop or not set(b.ctx.conds) <= set(at.ctx.conds):
                continue
            if defs <= self._upstream(sym, b):
                return True
        return False

    def _upstream(self, name: str, at: RawEvent) -> set[int]:
        """The ids of the definitions the value of ``name`` read by ``at`` is computed from,
        directly or through other names, within the iteration of ``at``'s innermost loop."""
        key = (name, id(at))
        found = self._up.get(key)
        if found is None:
            loop = at.ctx.loops[-1] if at.ctx.loops else None
            found = self._up[key] = set()
            todo = [(name, at)]
            while todo:
                n, e = todo.pop()
                for d in self.reaching(n, e):
                    if id(d) in found or (loop is not None and loop not in d.ctx.loops):
                        continue
                    found.add(id(d))
                    if d.sources is not None:
                        todo.extend((m, d) for m in d.sources.names)
        return found

    def tensor_valued(self, name: str, at: RawEvent, seen: frozenset[str] = frozenset()) -> bool:
        """Whether ``name`` read by ``at`` is established to hold a tensor: every definition
        that reaches it is a library call that returns a new tensor (``torch.zeros(...)``), a
        tensor method on such a value, or another name that holds one (``t = metrics``, a
        parameter bound to the caller's tensor)."""
        ds = self.reaching(name, at)
        if not ds or name in seen:
            return False
        seen = seen | {name}
        for d in ds:
            if isinstance(d, Assign):
                if d.op != "=":
                    return False
                if d.value_sym is not None:
                    if not self.tensor_valued(d.value_sym, d, seen):
                        return False
                    continue
                calls = [c for c in (d.sources.calls if d.sources is not None else ()) if c.node is d.value]
                if not calls or not self._tensor_call(calls[0], seen):
                    return False
            elif not self._tensor_call(d, seen):
                return False
        return True

    def _tensor_call(self, c: Call, seen: frozenset[str]) -> bool:
        """A call whose result is a tensor: a factory the library knowledge says returns a new
        tensor, or a tensor method (``.to(device)``) on a tensor."""
        if c.qualified:
            summary = self.kb.callable(c.func)
            return summary is not None and summary.returns is not None and summary.returns.value == "tensor"
        if c.inner is not None:
            return self.kb.method("torch.Tensor", c.method or "") is not None and self._tensor_call(c.inner, seen)
        if c.receiver is not None and self.kb.method("torch.Tensor", c.method or "") is not None:
            return self.tensor_valued(c.receiver, c, seen)
        return False

    def verdict(self, d: RawEvent, sym: str) -> str:
        """Whether definition ``d`` gives ``sym`` a value with a graph: ``yes``, ``no``,
        ``neutral`` (decides nothing) or ``unknown``."""
        if isinstance(d, Call) and len(d.targets) != 1:
            return _UNKNOWN  # loss, aux = f(...): which element carries what is not known
        src = d.sources
        if src is None:
            return _UNKNOWN
        if isinstance(d, Assign) and d.op == "=":
            whole = self.whole_value(d)
            if whole is not None:
                return whole
        found = self.sources_verdict(src, d, sym, d if isinstance(d, Call) else None)
        if isinstance(d, Call) and found != _UNKNOWN:
            kind = self.call_kind(d)
            found = {_UNKNOWN: _UNKNOWN, _YES: _YES, _NO: _NO, _LEAF: _LEAF}.get(kind, found)
        if found == _YES and d.ctx.grad != "enabled":
            return _UNKNOWN  # torch.set_grad_enabled(flag): either
        return found

    def whole_value(self, a: Assign) -> str | None:
        """What an assigned value is when it is one name or one call that makes a tensor that
        requires grad: ``x = y`` (``y``'s class, or ``no``), ``p = nn.Parameter(t)`` (``leaf``);
        ``None`` for other values."""
        if a.value_sym is not None:
            found = self.name_class(a.value_sym, a)  # x = y: the same tensor
            return found if found is not None else _NO if a.value_sym in self.defs else _UNKNOWN
        if a.sources is not None and any(c.node is a.value and self.call_kind(c) == _LEAF for c in a.sources.calls):
            return _LEAF
        return None

    def sources_verdict(self, src: Sources, at: RawEvent, sym: str | None = None, call: Call | None = None) -> str:
        """``yes`` when a value computed from ``src`` (read by event ``at``) carries a graph,
        ``no`` when it does not, ``unknown`` when a call on the way is not understood or the
        value with a graph is read only through a string key (``out["reward"]``: a member of
        a mapping, which may hold a tensor without one).
        ``sym``: a name left out (a total's own name); ``call``: the call whose own sources
        these are (judged by the caller)."""
        kinds = [self.call_kind(c) for c in src.calls if c is not call]
        if _UNKNOWN in kinds:
            return _UNKNOWN
        names = [n for n in src.names if n != sym and n.partition(".")[0] != sym]
        # computed from a value with a graph, or from a tensor that requires grad (w * x)
        if _YES in kinds or _LEAF in kinds or any(self.name_class(n, at) for n in names if n not in src.keyed):
            return _YES
        if any(n in names and self.member_carries(n, k, at) for n, k in src.members):
            return _YES  # out["loss"], read before as a name that carries a graph: the same tensor
        if any(self.name_class(n, at) for n in names if n in src.keyed):
            return _UNKNOWN  # out["reward"] of an output with a graph: the member may hold none
        return _NO

    def call_kind(self, c: Call) -> str:
        """``yes``: the call is a source of a graph (a forward of a model with grad enabled
        that may hold parameters);
        ``leaf``: it makes a tensor that requires grad (``nn.Parameter(t)``,
        ``torch.zeros(3, requires_grad=True)``): no graph of its own, but what is computed from
        it has one; ``keep``: its result keeps the graph of its inputs (a
        tensor method, a loss function, a criterion, ``torch.cat``, the forward of a model
        established to hold no parameters: ``roles.parameterless``); ``no``: its result carries
        no graph whatever its inputs (``loss.item()``, ``torch.zeros(3)``); ``unknown``: a
        call the engine does not understand."""
        roles, kb = self.roles, self.kb
        if any(a.keyword == "requires_grad" and is_true(a.node) for a in c.args):
            return _LEAF
        if c.qualified:
            if c.func in ("torch.nn.Parameter", "torch.nn.parameter.Parameter"):
                return _LEAF
            summary = kb.callable(c.func)
            r = summary.returns if summary is not None else None
            if r is None:
                return _UNKNOWN
            if r.value in NO_GRAPH or r.value == "tensor":
                return _NO
            return _KEEP if r.value in _KEEPS_GRAPH or r.role == "loss" else _UNKNOWN
        if c.inlined:
            return _UNKNOWN  # its value reaches the expression through no target
        f = roles.canon(c.func) if c.func and c.inner is None and not c.operands else None
        if f is not None and f in roles.models:
            if c.ctx.grad != "enabled" or id(c) in self.no_graph:
                return _NO
            # a model without parameters records no operation of its own: its output has a
            # graph only through inputs that carry one
            return _KEEP if f in roles.parameterless or not self.forwards_record else _YES
        if f is not None and f in roles.criteria:
            return _KEEP
        if c.receiver is not None or c.inner is not None or c.operands:
            if c.receiver is not None and (roles.role(roles.canon(c.receiver)) or roles.type_of(c.receiver)):
                return _UNKNOWN  # a method of a model, an optimizer, a library object
            m = kb.method("torch.Tensor", c.method or "")
            if m is None:
                return _UNKNOWN
            if m.returns is not None and m.returns.value in NO_GRAPH:
                return _NO
            return _LEAF if c.method == "requires_grad_" else _KEEP
        return _UNKNOWN


def _member_read(a: Assign) -> tuple[str, str] | None:
    """``(symbol, key)`` when assignment ``a`` binds a name to one member of an object read by
    a string literal and nothing else (``loss = out["loss"]``), else ``None``."""
    src = a.sources
    if a.op != "=" or not a.target or type(a.value) is not cst.Subscript or src is None or src.calls:
        return None
    if len(src.members) != 1 or len(src.names) != 1:
        return None
    (member,) = src.members
    return member


def _static_neutral(d: RawEvent) -> bool:
    """A definition that decides nothing about a graph: the call of a function whose return
    statement defines the target (``x = helper(...)``, inlined), a bare number (``total =
    0``), an accumulation (``total += x``: the total carries what it carried, or what ``x``
    adds, judged at the store)."""
    if _returned_into(d):
        return True
    return isinstance(d, Assign) and (d.op != "=" or _bare_number(d.value))


def _returned_into(d: RawEvent) -> bool:
    """``x = helper(...)`` of an inlined function (its call, or the assignment of its result):
    the callee's ``return`` defines ``x``."""
    if isinstance(d, Call):
        return d.inlined
    return d.op == "=" and d.sources is not None and any(c.inlined and c.node is d.value for c in d.sources.calls)


def _makes_no_graph(d: RawEvent) -> bool:
    """A definition whose value carries no graph whatever it is computed from: made with grad
    disabled, or a number, a detached or an integer value (``loss.item()``, ``x.detach()``,
    ``a == b``), not a bare number (which decides nothing)."""
    if d.ctx.grad == "disabled":
        return True
    return isinstance(d, Assign) and d.op == "=" and d.value_kind in NO_GRAPH and not _bare_number(d.value)


def _backward_loss(c: Call) -> str | None:
    """The symbol ``loss.backward()`` is called on (``None`` for other calls, and for a
    backward on an expression: its operands are not the value backpropagated)."""
    if c.method != "backward" or c.qualified or c.inner is not None or c.operands:
        return None
    if c.args:
        return None  # engine.backward(loss), loss.backward(gradient): another object's method
    return c.receiver


def _freed_by(c: Call, roles) -> list[str]:
    """The symbols whose graph backward call ``c`` frees: ``loss.backward()``,
    ``scaler.scale(loss).backward()``, ``(loss / n).backward()`` (its operands), without
    ``retain_graph``/``create_graph`` (which keep the graph's saved tensors)."""
    if c.method != "backward" or c.qualified:
        return []
    if any(a.keyword in (None, "retain_graph", "create_graph") for a in c.args):
        return []  # (engine.backward(loss): another object's method, not the tensor's)
    if c.inner is not None:
        inner = c.inner
        if inner.receiver and roles.canon(inner.receiver) in roles.scalers and inner.method == "scale":
            return [inner.args[0].sym] if inner.args and inner.args[0].sym else []
        return [inner.receiver] if inner.receiver else []
    if c.operands:
        return list(c.operands)
    if c.receiver is None or roles.type_of(c.receiver):
        return []
    return [c.receiver]


def _fixed_slot(a: Assign) -> bool:
    """``d["loss"] = v``, ``t[0] = v``: a subscript store whose key is a literal, so every run of
    the store replaces the same entry."""
    if a.slot is None:
        return False
    for el in a.slot.slice:
        index = el.slice
        if not isinstance(index, cst.Index):
            return False  # t[a:b] = v
        value = index.value
        if type(value) is cst.UnaryOperation:
            value = value.expression
        if type(value) not in (cst.SimpleString, cst.Integer, cst.Float):
            return False
    return True


def is_true(node: cst.BaseExpression) -> bool:
    """The literal ``True``."""
    return type(node) is cst.Name and node.value == "True"


def _bare_number(value: cst.BaseExpression | None) -> bool:
    """``0``, ``0.0``, ``-1``, ``None``: an initial value that decides nothing."""
    if type(value) is cst.UnaryOperation:
        value = value.expression
    return type(value) in (cst.Integer, cst.Float) or (type(value) is cst.Name and value.value == "None")


def _rebound_each_pass(e: Assign) -> bool:
    """Whether ``e`` assigns a name that the target of its innermost loop binds (``for x, y in
    loader: x = x.to(device)``): every path from ``e`` back to itself passes the loop's head,
    which re-binds the name to the next element, so ``e`` never reads the value it stored
    before and chains nothing across the iterations; the earlier value, and its graph, is
    freed at the re-binding. A loop nested inside, around ``e``, would let ``e`` read its own
    value again (``for x in xs: for _ in range(k): x = x + loss``): not this case."""
    if not e.ctx.loops:
        return False
    sym = e.target
    return any(sym == t or sym.endswith(":" + t) for t in e.ctx.loops[-1].targets)


def graph_stores(
    events: list[RawEvent], roles, no_graph: frozenset[int] = frozenset(),
) -> tuple[frozenset[str], list[GraphStore]]:
    """The symbols with a definition that carries an autograd graph, and the stores of values
    that carry one into containers: ``c.append(v)`` (and ``extend``, ``insert``, ``add``,
    ``put``), ``d[k] = v``, ``total += v``, ``total = total + v``. A store that computes the
    total with grad disabled (``with torch.no_grad(): total += loss``) makes no graph and is
    not listed, nor is a subscript store into a tensor there (``metrics[0, i:j] = loss``
    copies the values); an element appended there (or put into a dict) still keeps its own.

    Args:
        events: the raw events of every unit of the file, in program order.
        roles: the file's :class:`~loopcheck.engine.roles.Roles` (models and criteria known).
        no_graph: ids of the raw calls of forwards established to return a value without a
            graph (:func:`~loopcheck.engine.forwards.forward_returns_no_graph`, which needs
            the model's mode at the call: a rule reads it from a unit's flows).
    """
    g = _Graphs(events, roles, no_graph)
    carriers = g.run()
    out: list[GraphStore] = []
    for e in events:
        if isinstance(e, Assign):
            if not e.target or e.sources is None:
                continue
            if e.op == "[]=":
                whole = g.whole_value(e)
                if whole is None and e.ctx.grad != "enabled":
                    continue  # t[0] += loss * n under no_grad(): computed without a graph
                if e.ctx.grad == "disabled" and g.tensor_valued(e.target, e):
                    continue  # metrics[0, i] = loss under no_grad(): a copy of the values, no graph
                if (whole if whole is not None else g.sources_verdict(e.sources, e)) == _YES:
                    fixed = _fixed_slot(e)
                    out.append(GraphStore(e, e.target, e.value_sym, "entry", fixed and g.freed_in_iteration(e), fixed))
            elif e.ctx.grad == "enabled" and (e.op != "=" or e.target in e.sources.names):
                if e.op == "=" and g.whole_value(e) == _LEAF:
                    continue  # mask = nn.Parameter(mask): a new leaf, no chain
                if _rebound_each_pass(e):
                    continue  # x = f(x) where the loop re-binds x: never reads its own earlier value
                if g.sources_verdict(e.sources, e, e.target) == _YES:
                    out.append(GraphStore(e, e.target, e.value_sym if e.op != "=" else None, "total"))
            continue
        if e.inlined or not e.args:
            continue
        summary = summary_of(e, roles)
        stores = [eff for eff in summary.effects if eff.event == "store"] if summary is not None else []
        for eff in stores:  # a library's meter: AverageMeter.update(val) keeps val
            a = arg_at(e, eff.get("value"))
            container = roles.canon(receiver_of(e)) if eff.get("container") == "self" else None
            if a is not None and a.sym and container and g.name_carries(a.sym, e):
                out.append(GraphStore(e, container, a.sym, "total"))
        if stores or e.receiver is None or e.method not in _KEEPING_METHODS:
            continue
        if roles.role(roles.canon(e.receiver)) is not None or roles.type_of(e.receiver) is not None:
            continue  # optimizer.add_param_group(...), writer.add(...): not a container
        a = e.args[-1]
        if a.sym is not None and g.name_carries(a.sym, e):
            out.append(GraphStore(e, e.receiver, a.sym, "append", g.freed_with(a.sym, e)))
    return carriers, out


class GradInputs:
    """Which arguments of a call are established to require grad, read from the graph fact of
    a list of raw events (one unit's, in program order), leaving out the parameters of the
    models whose forwards computed them: a model's forward with grad enabled records the graph
    of its own parameters, and that recording is that forward's (LC302 judges it at that
    forward); what the value requires beyond it comes from its inputs."""

    def __init__(self, events: list[RawEvent], roles) -> None:
        self._events = events
        self._graphs = _Graphs(events, roles, forwards_record=False)
        self._graphs.run()

    def any_argument(self, call: Call) -> bool:
        """Whether an argument of raw call ``call`` is established to be, or to be computed
        from, a tensor that requires grad other than a model's parameters: a name whose
        definitions that reach the call do (``x = torch.randn(n, requires_grad=True)``,
        ``h = x * w`` with ``w = nn.Parameter(t)``, ``h = net(x)`` for such an ``x``; the fact
        of :meth:`_Graphs.name_class`, where a model's forward keeps the graph of its inputs
        only), a name made to require grad in place before the call (``x.requires_grad_()``,
        ``x.requires_grad = True``), or a factory in the argument itself given
        ``requires_grad=True`` (``model(torch.zeros(3, requires_grad=True))``). ``h = net(x)``
        of an ``x`` that does not require grad is not: its graph is the one ``net``'s forward
        records of ``net``'s parameters."""
        g = self._graphs
        for a in call.args:
            if any(_requires_grad_call(n) for n in _calls_in(a.node)):
                return True
            for name in a.mentions:
                if g.name_class(name, call) is not None or self._made_leaf(name, call):
                    return True
        return False

    def _made_leaf(self, name: str, call: Call) -> bool:
        """``name.requires_grad_()`` (not given ``False``) or ``name.requires_grad = True``
        before ``call`` in program order."""
        for e in self._events:
            if e is call:
                return False
            if isinstance(e, Assign):
                if e.target == name + ".requires_grad" and e.op == "=" and e.value is not None and is_true(e.value):
                    return True
            elif e.receiver == name and e.method == "requires_grad_" and e.inner is None:
                if not any(a.keyword in (None, "requires_grad") and not is_true(a.node) for a in e.args):
                    return True
        return False


def _calls_in(node: cst.CSTNode) -> list[cst.Call]:
    """The calls inside an expression, itself included."""
    return [n for n in walk(node) if isinstance(n, cst.Call)]


def _requires_grad_call(node: cst.Call) -> bool:
    """A call given ``requires_grad=True``, or ``.requires_grad_()`` not given ``False``."""
    if any(a.keyword is not None and a.keyword.value == "requires_grad" and is_true(a.value) for a in node.args):
        return True
    func = node.func
    if isinstance(func, cst.Attribute) and func.attr.value == "requires_grad_":
        return all(is_true(a.value) for a in node.args)
    return False
