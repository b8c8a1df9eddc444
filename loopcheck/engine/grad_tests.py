"""Whether a test around an event reads an optimizer's gradients.

A ``zero_grad()`` that runs only where a test of the gradients it clears holds (``if not
torch.isfinite(p.grad).all(): optimizer.zero_grad()``, a step skipped on non-finite
gradients) decides about those gradients: it does not lose them by mistake.
:func:`decided_by_gradients` says so for an event and an optimizer; the gradient rules ask it
(LC103). What it reads: the conditions of the event's context
(:attr:`Context.conds <loopcheck.engine.ir.Context.conds>`), the dotted names and calls in
their tests, the loops around the event (their targets and what they are drawn from), the
comprehensions in a test, the definitions of a variable that reach the test
(:func:`~loopcheck.engine.values.reaching_definitions`), and the optimizer's models and
parameters (:attr:`Roles.optimizers <loopcheck.engine.roles.Roles.optimizers>`). Whether a
clip concerns the optimizer is the rule's to say (the ``clips`` predicate): the norm it
returns is a read of those gradients.
"""

from __future__ import annotations

from typing import Callable

import libcst as cst

from loopcheck.engine.calls import receiver_of, summary_of
from loopcheck.engine.events import Event
from loopcheck.engine.ir import Assign, Call
from loopcheck.engine.names import dotted_name
from loopcheck.engine.unit import Unit
from loopcheck.engine.values import definitions, raw_calls, reaching_definitions

#: How many definitions :func:`decided_by_gradients` follows from a test to a read of the
#: gradients (a flag assigned from a finiteness check of a norm a clip returned).
GRADIENT_READ_DEPTH = 4
#: The methods of ``nn.Module`` whose result holds the module's parameters: ``for p in
#: model.parameters()`` draws the parameters of ``model``, and of any submodule of it.
PARAMETER_METHODS = frozenset({"parameters", "named_parameters"})


def decided_by_gradients(unit: Unit, opt: str, ev: Event, clips: Callable[[Event], bool]) -> bool:
    """Whether an ``if`` around ``ev`` (a ``zero_grad``: its ``ctx.conds``) tests a value that
    depends on optimizer ``opt``'s gradients: the test reads the ``.grad`` of a tensor drawn
    from ``opt``'s parameters (a loop or a comprehension over a model it trains, one of its
    models' attributes, its ``param_groups``), or the norm a clip of those gradients returned,
    directly or through variables whose definitions reaching the ``if`` compute from such a
    read or run under a test that does (``finite = not torch.isnan(p.grad).any()``, ``if not
    torch.isfinite(p.grad).all(): bad = True``). Such a clear is a decision about the gradients
    it discards (a step skipped on non-finite gradients), not gradients lost by mistake. Where
    ``opt``'s parameters are not known, a read of any ``.grad`` counts. ``clips``: whether a
    ``clip`` event clips ``opt``'s gradients (its norm is then a read of them)."""
    seen: set[int] = set()
    for cond in ev.ctx.conds:
        test = _test_of(cond)
        if test is not None and _reads_gradients(unit, opt, clips, test, ev.raw, GRADIENT_READ_DEPTH, seen):
            return True
    return False


def _test_of(cond: cst.CSTNode) -> cst.BaseExpression | None:
    """The expression whose truth picks the arm of a condition of a context: the ``test`` of an
    ``if``, the left operand of ``c and f()``; ``None`` for a ``match``."""
    if type(cond) is cst.BooleanOperation:
        return cond.left
    return getattr(cond, "test", None)


def _dotted_reads(expr: cst.CSTNode) -> list[str]:
    """The dotted names ``expr`` reads (``p.grad``, ``finite``, ``torch.isnan``): each whole
    ``Name``/``Attribute`` chain once, not the attribute names inside it; the receiver chain of
    a method called on another value (``x`` of ``f(x).any``) is read through that value."""
    out: list[str] = []
    stack: list[cst.CSTNode] = [expr]
    while stack:
        node = stack.pop()
        t = type(node)
        if t is cst.Name or t is cst.Attribute:
            dotted = dotted_name(node)
            if dotted is not None:
                out.append(dotted)
                continue
            if t is cst.Attribute:
                stack.append(node.value)
                continue
        if t is cst.Lambda:
            continue  # a function defined, not a value read
        stack.extend(node.children)
    return out


def _comprehension_sources(expr: cst.CSTNode) -> dict[str, list[str]]:
    """``name → dotted names of its iterable`` for each name a comprehension inside ``expr``
    binds (``p`` of ``any(torch.isnan(p.grad).any() for p in model.parameters())``)."""
    out: dict[str, list[str]] = {}
    stack: list[cst.CSTNode] = [expr]
    while stack:
        node = stack.pop()
        if type(node) is cst.CompFor:
            sources = _dotted_reads(node.iter)
            targets = node.target.elements if type(node.target) is cst.Tuple else [node.target]
            for el in targets:
                name = el.value if type(el) is cst.Element else el
                if type(name) is cst.Name:
                    out.setdefault(name.value, []).extend(sources)
        stack.extend(node.children)
    return out


def _plain(sym: str) -> str:
    """The spelling of a symbol in code: ``p.grad`` of ``f3_2:p.grad``, ``self.net`` of
    ``self@Model.net``."""
    local = sym.rpartition(":")[2]
    head, dot, rest = local.partition(".")
    if "@" in head:
        head = head.partition("@")[0]
    return head + dot + rest


def _spells_part_of(unit: Unit, opt: str, spelled: str) -> bool:
    """Whether the dotted name ``spelled`` names optimizer ``opt``, one of the models or tensors
    its parameters are, a part of one, or a module holding one whose parameters it reads
    (``model.parameters``, ``self.named_parameters`` for a model ``self.body``); ``True`` when
    ``opt``'s parameters are not known."""
    info = unit.roles.optimizers.get(opt)
    if info is None or not (info.models or info.params):
        return True
    known = {_plain(m) for m in (*info.models, *info.params)} | {_plain(n) for n in unit.roles.names_of(opt)}
    forms = {spelled}
    holder, _, method = spelled.rpartition(".")
    if method in PARAMETER_METHODS and holder:
        forms.add(holder)
    return any(related(form, k) for form in forms for k in known)


def _drawn_from_optimizer(unit: Unit, opt: str, owner: str, at, bound: dict, depth: int) -> bool:
    """Whether the tensor ``owner`` (a dotted name read where raw event ``at`` runs) is one of
    optimizer ``opt``'s parameters: a target of a comprehension in the test (``bound``) or of a
    loop around ``at`` drawn from them (``for p in model.parameters()``, ``for p in
    group["params"]`` inside ``for group in opt.param_groups``), or a variable defined from
    them, or a part of one of its models."""
    head = owner.split(".")[0]
    if head in bound:
        return any(_spells_part_of(unit, opt, s) or depth > 0 and _drawn_from_optimizer(unit, opt, s, at, {}, depth - 1)
                   for s in bound[head])
    for loop in reversed(at.ctx.loops):
        if head not in {t.rpartition(":")[2] for t in loop.targets}:
            continue
        sources = next((syms for name, syms in loop.drawn if name.rpartition(":")[2] == head), None)
        if not sources:
            sources = loop.iter_names
        return any(_spells_part_of(unit, opt, _plain(s)) or depth > 0 and _drawn_from_optimizer(
            unit, opt, _plain(s), at, {}, depth - 1) for s in sources)
    if _spells_part_of(unit, opt, owner):
        return True
    if depth > 0 and "." not in owner:
        for d in _reaching_definitions_of(unit, owner, at):
            value = d.value if type(d) is Assign else d.node if type(d) is Call else None
            if value is not None and any(_drawn_from_optimizer(unit, opt, s, d, {}, depth - 1)
                                         for s in _dotted_reads(value)):
                return True
    return False


def _reaching_definitions_of(unit: Unit, name: str, at) -> list:
    """The assignments and calls that define a variable spelled ``name`` and may give it the
    value it holds where raw event ``at`` runs: a local of the function around ``at`` or of a
    function that called it, an attribute, a global."""
    out = []
    for sym in definitions(unit):
        if _plain(sym) != name:
            continue
        for d in reaching_definitions(unit, sym, at) or ():
            if type(d) not in (Assign, Call):
                continue
            if ":" in sym and d.ctx.calls != at.ctx.calls[: len(d.ctx.calls)]:
                continue  # a local of another function
            out.append(d)
    return out


def _reads_gradients(unit: Unit, opt: str, clips: Callable[[Event], bool], expr: cst.CSTNode, at, depth: int,
                     seen: set) -> bool:
    """Whether ``expr``, evaluated where raw event ``at`` runs, reads optimizer ``opt``'s
    gradients (see :func:`decided_by_gradients`; ``clips`` as there); ``depth``: how many
    definitions more to follow."""
    calls = raw_calls(unit)
    for node in _calls_in(expr):
        if any(ev.kind == "clip" and clips(ev) for raw in calls.get(id(node), ()) for ev in raw.typed):
            return True  # the norm a clip of these gradients returns
    bound = _comprehension_sources(expr)
    for name in _dotted_reads(expr):
        parts = name.split(".")
        if "grad" in parts[1:]:
            owner = ".".join(parts[: parts.index("grad", 1)])
            if _drawn_from_optimizer(unit, opt, owner, at, bound, GRADIENT_READ_DEPTH):
                return True
        elif depth > 0 and parts[0] not in bound:
            for d in _reaching_definitions_of(unit, name, at):
                if _definition_reads_gradients(unit, opt, clips, d, at, depth - 1, seen):
                    return True
    return False


def _calls_in(expr: cst.CSTNode) -> list[cst.Call]:
    """Every call in ``expr``."""
    out, stack = [], [expr]
    while stack:
        node = stack.pop()
        if type(node) is cst.Call:
            out.append(node)
        stack.extend(node.children)
    return out


def _definition_reads_gradients(unit: Unit, opt: str, clips: Callable[[Event], bool], d, at, depth: int,
                                seen: set) -> bool:
    """Whether the definition ``d`` (an assignment, or a call whose result a variable is given)
    of a variable read where raw event ``at`` runs computes its value from optimizer ``opt``'s
    gradients, or runs only under a test that reads them (an ``if`` around ``d`` that is not
    around ``at``: ``if not torch.isfinite(p.grad).all(): finite = False``)."""
    if id(d) in seen:
        return False
    seen.add(id(d))
    value = d.value if type(d) is Assign else d.node
    if value is not None and _reads_gradients(unit, opt, clips, value, d, depth, seen):
        return True
    around = {id(c) for c in at.ctx.conds}
    return any(
        id(cond) not in around and (test := _test_of(cond)) is not None
        and _reads_gradients(unit, opt, clips, test, d, depth, seen)
        for cond in d.ctx.conds
    )


def related(a: str, b: str) -> bool:
    """One model is the other or a submodule of it (``model`` and ``model.fc1``)."""
    return a == b or a.startswith(b + ".") or b.startswith(a + ".")


#: How many definitions :func:`decided_by_unseen_call` follows from a test to a call.
UNSEEN_CALL_DEPTH = 4


def decided_by_unseen_call(unit: Unit, opt: str, test: cst.BaseExpression, at) -> bool:
    """Whether ``test`` (the test of an ``if`` with a step of optimizer ``opt`` in one arm
    only), evaluated where raw event ``at`` runs (the step in that arm), has a value computed
    from a call the analysis cannot see into that may have used ``opt``'s gradients itself
    (:func:`unseen_call`): directly (``if not handler.after_backward():``), or through
    variables whose definitions reaching the test compute from such a call or run under a test
    that does (``done = hooks.step(); if not done:``). Such a call may have stepped the
    optimizer, or a copy of its parameters, and returned that the step is done: on the arm
    that skips the step, what the gradients were used for is not established. A counter, a
    flag, a loss value or a setting read from a configuration decides nothing of the kind."""
    return _reads_unseen_call(unit, opt, test, at, UNSEEN_CALL_DEPTH, set())


def unseen_call(unit: Unit, opt: str, call: Call) -> bool:
    """Whether raw ``call`` runs code the analysis does not follow and that may reach optimizer
    ``opt`` or the models it trains: a method of an object of no known role, not a value the
    roles know as a tensor (a loss), that no knowledge entry describes; a function of the
    project (its body inlined) given the optimizer or one of those models, or whose body reads
    them (a method of an object that holds them); a function nothing describes (a library's,
    one the analysis does not find) given them. A method of a model, an optimizer or another
    object of known role is what the knowledge and the events say it is."""
    roles = unit.roles
    if call.inlined:
        return _given(unit, opt, call) or _body_reads(unit, opt, call)
    if summary_of(call, roles) is not None:
        return False
    receiver = receiver_of(call) if not call.qualified else None
    if receiver is not None:
        owner = roles.canon(receiver)
        if roles.role(owner) is not None or _tensor_value(unit, owner):
            return False
        return True
    return _given(unit, opt, call)


def _tensor_value(unit: Unit, sym: str | None) -> bool:
    """Whether the roles know the object ``sym`` names as a tensor: a loss, a container of
    losses, a value that carries a graph."""
    roles = unit.roles
    return sym is not None and (sym in roles.losses or sym in roles.loss_containers or sym in roles.graph)


def _reaches_optimizer(unit: Unit, opt: str, sym: str | None) -> bool:
    """Whether the symbol ``sym`` names optimizer ``opt``, one of the models it trains (any
    model, when those are not known), or a part of one."""
    roles = unit.roles
    if sym is None:
        return False
    own = roles.canon(sym)
    if own in roles.names_of(opt) or roles.canon(opt) == own:
        return True
    info = roles.optimizers.get(opt)
    models = info.models if info is not None and info.models else roles.models
    return any(related(own, m) for m in models)


def _given(unit: Unit, opt: str, call: Call) -> bool:
    """Whether ``call`` is given optimizer ``opt`` or one of its models: as an argument, or as
    the object whose method it runs."""
    if _reaches_optimizer(unit, opt, receiver_of(call)):
        return True
    return any(_reaches_optimizer(unit, opt, s) for a in call.args for s in a.holds)


def _body_reads(unit: Unit, opt: str, call: Call) -> bool:
    """Whether the inlined body of ``call`` (the raw events some of whose enclosing calls it
    is) reads optimizer ``opt`` or one of its models."""
    for raw in unit.raws():
        if not any(c is call.node for c in raw.ctx.calls):
            continue
        if type(raw) is Call:
            names = {receiver_of(raw), *(s for a in raw.args for s in a.holds), *raw.operands}
        else:
            names = set(raw.mentions)
        if any(_reaches_optimizer(unit, opt, s) for s in names):
            return True
    return False


def _raws_of(unit: Unit, node: cst.Call, at) -> list[Call]:
    """The raw events of the call ``node`` made where raw event ``at`` runs: at the same
    inlined call site (all of them when none is)."""
    raws = raw_calls(unit).get(id(node), ())
    same = [r for r in raws if r.ctx.calls == at.ctx.calls]
    return same or list(raws)


def _reads_unseen_call(unit: Unit, opt: str, expr: cst.CSTNode, at, depth: int, seen: set) -> bool:
    """Whether ``expr``, evaluated where raw event ``at`` runs, computes from an
    :func:`unseen_call` (see :func:`decided_by_unseen_call`); ``depth``: how many definitions
    more to follow."""
    for node in _calls_in(expr):
        if any(unseen_call(unit, opt, raw) for raw in _raws_of(unit, node, at)):
            return True
    if depth <= 0:
        return False
    bound = _comprehension_sources(expr)
    for name in _dotted_reads(expr):
        if name.split(".")[0] in bound:
            continue
        for d in _reaching_definitions_of(unit, name, at):
            if id(d) in seen:
                continue
            seen.add(id(d))
            value = d.value if type(d) is Assign else d.node
            if value is not None and _reads_unseen_call(unit, opt, value, d, depth - 1, seen):
                return True
            around = {id(c) for c in at.ctx.conds}
            if any(id(cond) not in around and (test := _test_of(cond)) is not None
                   and _reads_unseen_call(unit, opt, test, d, depth - 1, seen) for cond in d.ctx.conds):
                return True
    return False
