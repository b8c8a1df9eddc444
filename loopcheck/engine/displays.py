"""Values of a known shape: a tuple of ``n`` items, a mapping of ``n`` keys.

Two statements raise on every run when such a value reaches them, and the code after them on
that path never runs:

* unpacking it into another number of names: ``a, b, c, d = out`` where ``out`` is a 2-tuple
  raises ``ValueError: not enough values to unpack``, and where ``out`` is a mapping of two
  keys (unpacking iterates its keys) the same;
* giving it as the input of a library loss (``criterion(out, y)``, ``F.mse_loss(out, y)``):
  the loss needs a tensor there (``tensor_input`` of its knowledge entry) and raises
  ``TypeError`` (``argument 'input' must be Tensor, not tuple``) or ``AttributeError``
  (``'tuple' object has no attribute 'size'``).

This module reads the shape from the code: a tuple display without a starred item, a dict
display whose keys are distinct literals and that unpacks no other mapping, ``dict(...)`` or
``collections.OrderedDict(...)`` given only keywords; and what a function returns when every
``return`` of it gives one such display of the same shape (:func:`returned_display`). The
builder (:meth:`loopcheck.engine.builder.UnitBuilder.known_display`) follows names, model
calls and project calls to these, and ends the path at such a statement, as at a ``raise``.
Anything not established has no known shape.
"""

from __future__ import annotations

from collections.abc import Callable

import libcst as cst

from loopcheck.engine.names import dotted_name
from loopcheck.engine.walk import evaluated_children, walk
from loopcheck.engine.zero_dim import block_bindings

#: A value's shape: ``("tuple", n)`` or ``("dict", n)`` (``n`` keys).
Display = tuple[str, int]
#: Library callables that build a mapping from keyword arguments, one key per keyword.
MAPPING_BUILDERS = frozenset({"dict", "collections.OrderedDict"})
#: Methods a hook on a module is registered with: a forward hook may replace what ``forward``
#: returns, so a module of a file that registers one has no known output.
HOOK_METHODS = frozenset({"register_forward_hook", "register_module_forward_hook"})
#: Methods a hook that runs before ``forward`` is registered with: a forward pre-hook may
#: replace the arguments ``forward`` is given, so no call of a module of a file that registers
#: one (or a forward hook) is decided not to bind.
PRE_HOOK_METHODS = frozenset({"register_forward_pre_hook", "register_module_forward_pre_hook"})
CALL_HOOK_METHODS = HOOK_METHODS | PRE_HOOK_METHODS
_SCOPES = (cst.FunctionDef, cst.ClassDef, cst.Lambda)


def literal_display(expr: cst.BaseExpression, qualify: Callable[[str], str | None]) -> Display | None:
    """The shape of the display ``expr`` writes: ``(a, b)`` → ``("tuple", 2)``, ``{"x": a, "y":
    b}`` or ``dict(x=a, y=b)`` → ``("dict", 2)``; ``None`` for anything else (a starred item,
    a ``**`` unpacking, keys that are not distinct string or integer literals, a call of
    something that is not the builtin ``dict`` or ``collections.OrderedDict``).

    Args:
        expr: the expression.
        qualify: the library name a dotted name stands for where ``expr`` is read (``"dict"``,
            ``"collections.OrderedDict"``), ``None`` when it names something of the code.
    """
    t = type(expr)
    if t is cst.Tuple:
        if any(type(el) is cst.StarredElement for el in expr.elements):
            return None
        return "tuple", len(expr.elements)
    if t is cst.Dict:
        keys = set()
        for el in expr.elements:
            if type(el) is not cst.DictElement:
                return None  # **other
            key = _literal_key(el.key)
            if key is None or key in keys:
                return None
            keys.add(key)
        return "dict", len(keys)
    if t is cst.Call:
        dotted = dotted_name(expr.func)
        if dotted is None or qualify(dotted) not in MAPPING_BUILDERS:
            return None
        if any(a.keyword is None or a.star for a in expr.args):
            return None  # dict(pairs), dict(**other): keys not read here
        return "dict", len({a.keyword.value for a in expr.args})
    return None


def _literal_key(key: cst.BaseExpression) -> object | None:
    """A dict key written as a string or integer literal, else ``None``."""
    if type(key) is cst.SimpleString:
        return ("str", key.evaluated_value)
    if type(key) is cst.Integer:
        return ("int", key.evaluated_value)
    return None


def returned_display(func: cst.FunctionDef, qualify: Callable[[str], str | None]) -> Display | None:
    """The shape of what ``func`` returns on every call: every ``return`` gives a value of the
    same shape, a display (:func:`literal_display`) or a local name every binding of which is
    one, and the body ends with a ``return`` (no path falls off its end). ``None`` for a
    generator or a coroutine, a decorated function, a bare ``return``, or a return of anything
    else."""
    if func.decorators or func.asynchronous is not None:
        return None
    body = func.body.body if type(func.body) is cst.IndentedBlock else ()
    if not body or type(body[-1]) is not cst.SimpleStatementLine or type(body[-1].body[-1]) is not cst.Return:
        return None
    returns = []
    for node in walk(func.body, prune=_SCOPES):
        t = type(node)
        if t is cst.Yield or t is cst.Await:
            return None
        if t is cst.Return:
            if node.value is None:
                return None
            returns.append(node.value)
    bindings = None
    found: set = set()
    for value in returns:
        if type(value) is cst.Name:
            if bindings is None:
                bindings = block_bindings([func.body], _param_names(func))
            assigned = bindings.get(value.value)
            if not assigned or any(op != "=" for op, _ in assigned):
                return None
            found.update(literal_display(v, qualify) for _, v in assigned)
        else:
            found.add(literal_display(value, qualify))
        if None in found or len(found) > 1:
            return None
    return found.pop() if len(found) == 1 else None


def _param_names(func: cst.FunctionDef) -> list[str]:
    p = func.params
    names = [x.name.value for x in (*p.posonly_params, *p.params, *p.kwonly_params)]
    for star in (p.star_arg, p.star_kwarg):
        if isinstance(star, cst.Param):
            names.append(star.name.value)
    return names


def registers_hooks(index, methods: frozenset = HOOK_METHODS) -> bool:
    """Whether the code of module ``index`` (a :class:`~loopcheck.engine.builder.ModuleIndex`
    or a lazily parsed one) names one of ``methods``, methods that register a hook on a module
    (:data:`HOOK_METHODS`, :data:`CALL_HOOK_METHODS`); ``True`` when its code cannot be read."""
    table = index.cache.setdefault("registers_hooks", {})
    cached = table.get(methods)
    if cached is None:
        source = getattr(index, "source", None)
        if source is None and getattr(index, "tree", None) is not None:
            source = index.tree.code
        cached = table[methods] = source is None or any(m in source for m in methods)
    return cached


def given_arg(call: cst.Call, ref) -> cst.BaseExpression | None:
    """The expression ``call`` gives the argument a knowledge reference names (``0``,
    ``"input"``, ``(0, "input")``); ``None`` when it leaves it out or ``*args``/``**kwargs``
    may pass it."""
    index, keyword = ref if isinstance(ref, tuple) else (ref, None) if isinstance(ref, int) else (None, ref)
    if any(a.star for a in call.args):
        return None
    for a in call.args:
        if keyword is not None and a.keyword is not None and a.keyword.value == keyword:
            return a.value
    positional = [a for a in call.args if a.keyword is None]
    if index is not None and index < len(positional):
        return positional[index].value
    return None


def unpacked_count(target: cst.BaseExpression) -> int | None:
    """How many values a tuple or list target takes (``a, b, c = v``: 3); ``None`` for
    another target or one with a starred name."""
    if type(target) not in (cst.Tuple, cst.List):
        return None
    if any(type(el) is cst.StarredElement for el in target.elements):
        return None
    return len(target.elements)


def evaluated_calls(node: cst.CSTNode):
    """The calls under ``node`` that each evaluation of it makes, in source order: not those in
    a lambda, a comprehension, an arm of a conditional expression or the right operand of
    ``and``/``or`` (which may not run)."""
    for child in evaluated_children(node):
        yield from evaluated_calls(child)
    if type(node) is cst.Call:
        yield node
