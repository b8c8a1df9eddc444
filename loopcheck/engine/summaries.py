"""Effect summaries the engine infers for the project's own decorators and context managers.

Calls to the project's functions are inlined (:mod:`loopcheck.engine.builder`), but two kinds of
function act on code they do not call directly, so inlining cannot show what they do:

* a **decorator** (or decorator factory) wraps the decorated function: ``@smart_inference_mode()``
  runs it under ``torch.inference_mode()``. :func:`decorator_grad` finds the grad mode a
  decorator runs the function in, in the same vocabulary as the library entries (the ``grad``
  of a :class:`~loopcheck.engine.knowledge.Summary`): a wrapper that calls under
  ``with <context>:``, or ``return <context>()(fn)``, where the context is a library grad
  context, a name assigned one, or ``a if cond else b`` of two that agree.
* a **context manager** runs code before and after a ``with`` block: a ``@contextmanager``
  generator's statements before its ``yield`` run on entering, the ones after it (or in its
  ``finally``) on leaving, and a ``yield`` inside ``with torch.no_grad():`` runs the block
  without grad. :func:`split_context_manager` cuts the generator there.

Both return ``None`` when the shape is not one of these: the engine then knows nothing more.

A module's ``forward`` is not inlined at its call (``model(x)`` is a ``forward`` event), but
what it does to the gradients is read from it: :func:`forward_clears` finds the
``self.zero_grad()`` it makes on every call.
"""

from __future__ import annotations

from dataclasses import dataclass

import libcst as cst

from loopcheck.engine.knowledge import knowledge
from loopcheck.engine.names import dotted_name

MAX_DEPTH = 4
CONTEXTMANAGERS = {"contextlib.contextmanager", "contextmanager", "contextlib.asynccontextmanager"}


def _statements(body: cst.BaseSuite) -> list[cst.BaseStatement]:
    return list(body.body) if isinstance(body, cst.IndentedBlock) else [cst.SimpleStatementLine(body.body)]


def _smalls(stmts) -> list[cst.BaseSmallStatement]:
    out = []
    for st in stmts:
        if isinstance(st, cst.SimpleStatementLine):
            out.extend(st.body)
    return out


def _env(func: cst.FunctionDef) -> dict[str, cst.BaseExpression]:
    """Names a function assigns at its top level: ``ctx = torch.inference_mode if ok else torch.no_grad``."""
    env = {}
    for small in _smalls(_statements(func.body)):
        if isinstance(small, cst.Assign) and len(small.targets) == 1 and isinstance(small.targets[0].target, cst.Name):
            env[small.targets[0].target.value] = small.value
    return env


def grad_of(expr: cst.BaseExpression, imports, env: dict) -> str | None:
    """The grad mode a context expression sets: ``torch.no_grad()``, ``ctx()`` with
    ``ctx = torch.inference_mode if cond else torch.no_grad``, ``torch.no_grad()(fn)``."""
    if isinstance(expr, cst.Call):
        return grad_of(expr.func, imports, env)
    if isinstance(expr, cst.IfExp):
        a, b = grad_of(expr.body, imports, env), grad_of(expr.orelse, imports, env)
        return a if a == b else None
    if isinstance(expr, cst.Name) and expr.value in env:
        return grad_of(env[expr.value], imports, {k: v for k, v in env.items() if k != expr.value})
    summary = knowledge().callable(imports.qualify(dotted_name(expr)))
    grad = summary.grad if summary is not None else None
    return grad if grad in ("disabled", "enabled") else None


def _returns(func: cst.FunctionDef) -> list[cst.BaseExpression]:
    out = []
    stack = list(_statements(func.body))
    while stack:
        st = stack.pop()
        if isinstance(st, cst.SimpleStatementLine):
            out += [s.value for s in st.body if isinstance(s, cst.Return) and s.value is not None]
        elif isinstance(st, (cst.If, cst.Try, cst.With)):
            stack += _statements(st.body)
            orelse = getattr(st, "orelse", None)
            if isinstance(orelse, cst.Else):
                stack += _statements(orelse.body)
            elif isinstance(orelse, cst.If):
                stack.append(orelse)
    return out


def _wrapper_grad(wrapper: cst.FunctionDef, imports, env: dict) -> str | None:
    """A wrapper that calls the decorated function under ``with <context>:``."""
    env = {**env, **_env(wrapper)}
    for st in _statements(wrapper.body):
        if isinstance(st, cst.With):
            modes = {grad_of(item.item, imports, env) for item in st.items} - {None}
            if len(modes) == 1:
                return modes.pop()
    return None


def decorator_grad(func: cst.FunctionDef, imports, env: dict | None = None, depth: int = 0) -> str | None:
    """The grad mode project decorator ``func`` runs the decorated function in, or ``None``.

    ``func`` is the decorator itself (``@no_grad_wrapper``) or a decorator factory
    (``@smart_inference_mode()``): whatever it returns is followed, through nested functions,
    up to :data:`MAX_DEPTH` levels.

    Args:
        func: the function the ``@`` expression names.
        imports: the :class:`~loopcheck.engine.names.ImportMap` of its module.
    """
    if depth > MAX_DEPTH:
        return None
    env = {**(env or {}), **_env(func)}
    nested = {s.name.value: s for s in _statements(func.body) if isinstance(s, cst.FunctionDef)}
    for value in _returns(func):
        if isinstance(value, cst.Name) and value.value in nested:
            inner = nested[value.value]
            grad = _wrapper_grad(inner, imports, env) or decorator_grad(inner, imports, env, depth + 1)
        else:
            grad = grad_of(value, imports, env)  # return torch.no_grad()(fn)
        if grad is not None:
            return grad
    return None


@dataclass
class ContextSplit:
    """A ``@contextmanager`` generator cut at its ``yield``: what runs on entering, what runs
    on leaving, and the grad mode the ``with`` block runs in (``None``: unchanged)."""

    enter: cst.FunctionDef
    exit: cst.FunctionDef
    grad: str | None = None


def is_context_manager(func: cst.FunctionDef, imports) -> bool:
    return any(imports.qualify(dotted_name(d.decorator)) in CONTEXTMANAGERS for d in func.decorators)


def _is_yield(st) -> bool:
    return isinstance(st, cst.SimpleStatementLine) and any(
        isinstance(s, cst.Expr) and isinstance(s.value, cst.Yield) or isinstance(getattr(s, "value", None), cst.Yield)
        for s in st.body
    )


def _cut(stmts, imports, env) -> tuple[list, list, str | None] | None:
    """``(before, after, grad)`` around the one ``yield`` in ``stmts`` (at the top level, in a
    ``try`` body or in a ``with`` body), or ``None``."""
    for i, st in enumerate(stmts):
        if _is_yield(st):
            return stmts[:i], stmts[i + 1:], None
        if isinstance(st, cst.Try):
            inner = _cut(_statements(st.body), imports, env)
            if inner is not None:
                before, after, grad = inner
                final = _statements(st.finalbody.body) if st.finalbody is not None else []
                return stmts[:i] + before, after + final + stmts[i + 1:], grad
        if isinstance(st, cst.With):
            inner = _cut(_statements(st.body), imports, env)
            if inner is not None:
                before, after, grad = inner
                modes = {grad_of(item.item, imports, env) for item in st.items} - {None}
                return stmts[:i] + before, after + stmts[i + 1:], (modes.pop() if len(modes) == 1 else grad)
    return None


def split_context_manager(func: cst.FunctionDef, imports) -> ContextSplit | None:
    """Cut a ``@contextmanager`` generator at its ``yield`` (see :class:`ContextSplit`); the
    parts are new function nodes over the same statements, so callers keep one split per
    function."""
    cut = _cut(_statements(func.body), imports, _env(func))
    if cut is None:
        return None
    before, after, grad = cut

    def part(stmts):
        return func.with_changes(body=cst.IndentedBlock(stmts or [cst.SimpleStatementLine([cst.Pass()])]),
                                 decorators=())

    return ContextSplit(part(before), part(after), grad)


#: What a clear leaves in ``.grad`` when the call leaves ``set_to_none`` out (decided by the
#: rules with the PyTorch the project pins: :meth:`loopcheck.engine.events._Typer.set_to_none`).
DEFAULT = "default"


def _leaves(node: cst.CSTNode) -> bool:
    """Whether statement ``node`` may leave its function, other than by an exception of a call:
    it holds a ``return``, ``raise``, ``yield`` or ``await`` (not in a nested function, class or
    lambda)."""
    stack = [node]
    while stack:
        n = stack.pop()
        if isinstance(n, (cst.Return, cst.Raise, cst.Yield, cst.Await)):
            return True
        if isinstance(n, (cst.FunctionDef, cst.ClassDef, cst.Lambda)):
            continue
        stack.extend(n.children)
    return False


def _set_to_none(call: cst.Call) -> bool | str | None:
    """What ``zero_grad(...)`` leaves in each ``.grad``: its literal ``set_to_none`` (keyword or
    first positional argument), :data:`DEFAULT` when the call leaves it out, ``None`` when a
    variable or ``*args``/``**kwargs`` gives it."""
    if any(a.star for a in call.args):
        return None
    given = [a for a in call.args if a.keyword is None or a.keyword.value == "set_to_none"]
    if not given:
        return DEFAULT
    value = given[0].value
    if isinstance(value, cst.Name) and value.value in ("True", "False"):
        return value.value == "True"
    return None


def forward_clears(func: cst.FunctionDef) -> tuple[tuple[str, bool | str | None], ...]:
    """The gradients method ``func`` (a module's ``forward``) clears on every call that returns:
    ``(path, set_to_none)`` for each statement ``self.zero_grad()`` (``path`` ``""``) or
    ``self.enc.zero_grad()`` (``path`` ``".enc"``, a submodule) at the top level of its body,
    before any statement that may leave it (:func:`_leaves`: a ``return``, ``raise`` or
    ``yield``, also inside an ``if`` or a loop). ``nn.Module.zero_grad()`` clears the ``.grad``
    of every parameter of the module it is called on (PyTorch's ``Module.zero_grad``); a
    ``zero_grad()`` under an ``if``, in a loop or after an early ``return`` runs on some calls
    only and is not counted. ``set_to_none``: :func:`_set_to_none`. ``self`` is the name of the
    method's first parameter.

    Args:
        func: the ``forward`` of a class of the project.

    Returns:
        the clears in the order the body makes them; empty when none is established.
    """
    params = func.params.params
    if not params or not isinstance(func.body, cst.IndentedBlock):
        return ()
    me = params[0].name.value
    out = []
    for stmt in func.body.body:
        if isinstance(stmt, cst.SimpleStatementLine):
            for small in stmt.body:
                if isinstance(small, (cst.Return, cst.Raise)):
                    return tuple(out)
                call = small.value if isinstance(small, cst.Expr) else None
                if (
                    isinstance(call, cst.Call) and isinstance(call.func, cst.Attribute)
                    and call.func.attr.value == "zero_grad"
                ):
                    receiver = dotted_name(call.func.value)
                    if receiver == me or receiver is not None and receiver.startswith(me + "."):
                        out.append((receiver[len(me):], _set_to_none(call)))
        if _leaves(stmt):
            break
    return tuple(out)


#: Builtins that read the module they are given and change none of its state.
_READING = frozenset({"isinstance", "type", "hasattr", "getattr", "id", "len", "print", "str", "repr", "vars", "dir"})


def _mode_value(node: cst.BaseExpression | None) -> str:
    """The mode ``train(node)`` or ``training = node`` sets: ``"train"`` for ``True`` (and
    for a ``train()`` given nothing: ``node`` ``None``), ``"eval"`` for ``False``,
    ``"unknown"`` for any other expression."""
    if node is None:
        return "train"
    if isinstance(node, cst.Name) and node.value in ("True", "False"):
        return "train" if node.value == "True" else "eval"
    return "unknown"


def module_mode(func: cst.FunctionDef | cst.Lambda, bound: int = 0) -> str | None:
    """The mode function ``func`` sets on the module given as its first parameter after the
    ``bound`` ones, when it is called on each module of a model (``model.apply(func)``,
    PyTorch's ``Module.apply``; ``self.apply(self._init_weights)`` binds ``self``).

    Read from its body, nested blocks and conditions included (``if isinstance(m,
    nn.BatchNorm2d): m.eval()`` sets the mode of the modules the test picks): ``m.eval()``,
    ``m.train(False)`` give ``"eval"``; ``m.train()``, ``m.train(True)`` give ``"train"``;
    ``m.training = <literal>`` likewise; ``m.train(flag)``, ``m.training = flag``,
    ``setattr(m, "training", ...)``, ``m.apply(other)``, ``m`` handed whole to any call other
    than a builtin that reads it (``isinstance(m, ...)``), or two different modes, give
    ``"unknown"``. Calls on what the module holds (``nn.init.normal_(m.weight)``,
    ``m.bias.data.zero_()``, ``m.reset_parameters()``) are taken to change no mode (a child's
    ``c.eval()`` in ``for c in m.children():`` is not read). A bound parameter (``self``) read
    the same way gives ``"unknown"`` for any mode it sets or may set (``self.eval()``): that is
    not the picked module's. A nested function or class is not read (it runs only if called,
    and then through the module it is handed).

    Args:
        func: a ``def`` (its first positional parameter after the bound ones is the module) or
            a ``lambda``.
        bound: how many leading parameters the function was given already (1 for a method read
            from an instance, :meth:`~loopcheck.engine.builder.UnitBuilder._function_arg`).

    Returns:
        ``"train"``, ``"eval"`` or ``"unknown"``; ``None`` when the body sets no mode (a
        function that only initialises weights), also for a function without a parameter for
        the module.
    """
    params = [*func.params.posonly_params, *func.params.params]
    if len(params) <= bound:
        return None
    me = params[bound].name.value
    # the names a mode is read on: the module, and each bound parameter (any mode it gets is
    # not the module's, and reads as unknown)
    held = {p.name.value: False for p in params[:bound]}
    held[me] = True
    modes: set[str] = set()
    stack: list[cst.CSTNode] = [func.body]
    while stack:
        n = stack.pop()
        if isinstance(n, (cst.FunctionDef, cst.ClassDef, cst.Lambda)):
            continue
        if isinstance(n, cst.Call):
            f = n.func
            if isinstance(f, cst.Attribute) and isinstance(f.value, cst.Name) and f.value.value in held:
                method = f.attr.value
                if method == "eval":
                    mode = "eval"
                elif method == "train":
                    given = [a for a in n.args if a.keyword is None or a.keyword.value == "mode"]
                    mode = "unknown" if any(a.star for a in n.args) else _mode_value(given[0].value if given else None)
                else:
                    mode = "unknown" if method == "apply" else None
                if mode is not None:
                    modes.add(mode if held[f.value.value] else "unknown")
            elif any(isinstance(a.value, cst.Name) and a.value.value in held for a in n.args):
                name = dotted_name(f)
                if name == "setattr":
                    attr = n.args[1].value if len(n.args) > 1 else None
                    if not isinstance(attr, cst.SimpleString) or attr.evaluated_value == "training":
                        modes.add("unknown")
                elif name not in _READING:
                    modes.add("unknown")  # the module (or what holds it) handed to code not read here
        elif isinstance(n, (cst.Assign, cst.AugAssign, cst.AnnAssign)):
            targets = [t.target for t in n.targets] if isinstance(n, cst.Assign) else [n.target]
            for t in targets:
                if isinstance(t, cst.Attribute) and t.attr.value == "training" \
                        and isinstance(t.value, cst.Name) and t.value.value in held:
                    known = isinstance(n, cst.Assign) and held[t.value.value]
                    modes.add(_mode_value(n.value) if known else "unknown")
        stack.extend(n.children)
    if not modes:
        return None
    return modes.pop() if len(modes) == 1 else "unknown"
