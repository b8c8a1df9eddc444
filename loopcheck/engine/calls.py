"""A call's argument by knowledge reference, its receiver, and what the library knowledge says
it does. Roles, graphs, values and the rules read these; they sit below
:mod:`loopcheck.engine.roles` because the roles' inference runs :mod:`loopcheck.engine.graphs`,
which needs them too."""

from __future__ import annotations

from typing import TYPE_CHECKING

import libcst as cst

from loopcheck.engine.ir import Arg, Call
from loopcheck.engine.knowledge import Summary, knowledge

if TYPE_CHECKING:
    from loopcheck.engine.roles import Roles


def ref_parts(ref) -> tuple[int | None, str | None] | None:
    """The position and keyword a knowledge reference to an argument names (``0``:
    ``(0, None)``, ``"params"``: ``(None, "params")``, ``(1, "max_norm")``: itself); ``None``
    for a reference that names no single argument (``None``, ``"self"``, ``"*"``)."""
    if isinstance(ref, tuple):
        return ref
    if isinstance(ref, int):
        return ref, None
    if isinstance(ref, str) and ref not in ("self", "*"):
        return None, ref
    return None


def arg_at(call: Call, ref) -> Arg | None:
    """The argument of ``call`` a knowledge reference names (``0``, ``"params"``,
    ``(1, "max_norm")``); ``None`` when absent or when ``ref`` is ``"self"``/``"*"``."""
    parts = ref_parts(ref)
    if parts is None:
        return None
    index, keyword = parts
    if keyword is not None:
        for a in call.args:
            if a.keyword == keyword:
                return a
    if index is not None:
        positional = [a for a in call.args if a.keyword is None]
        if index < len(positional) and not isinstance(positional[index].node, cst.StarredElement):
            return positional[index]
    return None


def receiver_of(call: Call) -> str | None:
    """The receiver symbol of a method call, through calls that return their receiver
    (``model.to(device).train()`` → ``model``), or the instance a ``super()`` call acts on
    (:attr:`Call.bound_self`)."""
    if call.receiver:
        return call.receiver
    if call.bound_self is not None:
        return call.bound_self
    inner = call.inner
    while inner is not None:
        if inner.receiver:
            summary = knowledge().method("torch.nn.Module", inner.method or "")
            if summary is not None and summary.returns is not None and "self" in summary.returns.same:
                return inner.receiver
            return None
        inner = inner.inner
    return None


def summary_of(call: Call, roles: Roles) -> Summary | None:
    """What the library knowledge says a call does, or ``None``: a qualified function or
    class, a method of an object whose library class is known (``writer.add_graph``,
    ``accelerator.prepare``), a method a project class inherits from a library base
    (``self.backward(loss)`` in a subclass of a library's engine: :attr:`Call.base_class`), or
    calling such an object (``loss_scaler(loss, optimizer)``). A method that a class of the
    project defines, run on an instance of it with its body inlined (:attr:`Call.project_method`),
    is not described by the entry of the method it overrides when that entry says so
    (``override_body``: ``gan.train(False, 5)`` runs the GAN's own training loop, no mode switch):
    its body's events say what it does."""
    kb = knowledge()
    if call.qualified:
        return kb.callable(call.func)
    if call.operands:
        return None
    if call.base_class is not None:
        return kb.method(call.base_class, call.method or "")
    if call.project_method and call.inlined:
        summary = _receiver_summary(call, roles)
        return None if summary is not None and summary.override_body else summary
    return _receiver_summary(call, roles)


def _receiver_summary(call: Call, roles: Roles) -> Summary | None:
    """:func:`summary_of` for a call that is no qualified name, no method of an expression and
    no method of a library base: a method of its receiver's library class, or calling an object
    of a known library class."""
    kb = knowledge()
    if call.inner is not None:  # model.to(device).train(): a method of what the inner call returned
        recv = receiver_of(call)
        return kb.method(roles.type_of(recv), call.method or "") if recv else None
    recv = call.receiver
    if recv is not None:
        return kb.method(roles.type_of(recv), call.method or "")
    if call.func is not None:
        t = roles.type_of(call.func)
        if t is not None:
            return kb.method(t, "__call__")
    return None


MAX_NESTED_SAME = 8  # calls in calls followed to the object an argument is (DDP(model.cuda()))


def same_sym(arg: Arg | None, roles: Roles, depth: int = 0) -> str | None:
    """The symbol whose object an argument's expression is: its plain name, or, for a call,
    what that call returns unchanged by its knowledge's ``same`` (:func:`returned_sym`:
    ``DDP(model.cuda())``'s argument is ``model``); ``None`` when not established."""
    if arg is None:
        return None
    if arg.sym is not None or arg.call is None or depth >= MAX_NESTED_SAME:
        return arg.sym
    return returned_sym(arg.call, roles, depth + 1)


def returned_sym(call: Call, roles: Roles, depth: int = 0) -> str | None:
    """The symbol whose object ``call`` returns unchanged, by its summary's ``same`` (its
    receiver: ``model.cuda()``, ``model.to(device).float()``; an argument: ``DDP(model)``,
    followed through arguments that are calls themselves); ``None`` when the knowledge says
    nothing of the kind or the object has no name."""
    summary = summary_of(call, roles)
    if summary is None or summary.returns is None:
        return None
    for ref in summary.returns.same:
        if ref == "self":
            if call.inner is None:
                return call.receiver
            return returned_sym(call.inner, roles, depth + 1) if depth < MAX_NESTED_SAME else None
        if ref == "*":
            positional = [a for a in call.args if a.keyword is None]
            return same_sym(positional[0], roles, depth) if len(positional) == 1 else None
        a = arg_at(call, ref)
        if a is not None:
            return same_sym(a, roles, depth)
    return None
