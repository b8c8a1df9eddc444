"""0-dim tensors, and the subscripts of them that raise.

Since PyTorch 0.4 a reduction to one number (a loss with its default ``reduction="mean"``,
``x.sum()``, ``torch.mean(x)``) returns a tensor of no dimension, and from PyTorch 1.0 (the
release first planned as 0.5; 0.4 only warned) indexing it raises ``IndexError: invalid index
of a 0-dim tensor. Use `tensor.item()` in Python or `tensor.item<T>()` in C++ to convert a 0-dim
tensor to a number`` (torch 2.13; ``x[-1]``, ``x[:]`` and ``x[0, 0]`` raise ``IndexError``
too). Code written for PyTorch 0.3, where the same loss was a tensor of size 1, reads it as
``loss.data[0]``: on every PyTorch loopcheck targets (2.x), that statement raises, and the code
after it on that path never runs. The builder
(:meth:`loopcheck.engine.builder.UnitBuilder.small_stmt`) ends the path there, as at a
``raise``.

What is 0-dim is established from the library knowledge (``zero_dim`` and ``keeps_shape`` of
the entries, ``loopcheck/knowledge/README.md``) and from the bindings of the names read, never
from a name's spelling; anything not established is not 0-dim.
"""

from __future__ import annotations

from collections.abc import Callable

import libcst as cst

from loopcheck.engine.knowledge import SCALAR_REDUCTIONS, ZeroDim, knowledge
from loopcheck.engine.names import dotted_name
from loopcheck.engine.walk import children, evaluated_children, names_in, walk

#: How deep the definitions of names are followed (``a = b + c``, ``b = ...``).
MAX_DEPTH = 8
#: The operators of arithmetic between 0-dim tensors and numbers that give a 0-dim tensor.
_ARITHMETIC = (cst.Add, cst.Subtract, cst.Multiply, cst.Divide, cst.FloorDivide, cst.Modulo, cst.Power)
#: Python builtins whose result is a number.
_NUMBER_BUILTINS = frozenset({"float", "int", "len", "abs", "round"})

#: A binding of a name: its operator (``"="``, or the augmented operator's LibCST class name,
#: ``"AddAssign"``) and the expression bound or combined.
Binding = tuple[str, cst.BaseExpression]


def block_bindings(roots, params=()) -> dict[str, list[Binding] | None]:
    """Each name the code under ``roots`` binds in its own scope → its bindings (``x = v``,
    ``x: T = v``, ``x += v`` with a plain name as the target), or ``None`` when it is also bound
    another way (a parameter, an unpacking, ``for``, ``with ... as``, ``import``, ``del``, a
    nested ``def``, a ``global``/``nonlocal`` anywhere below, nested functions included): its
    value is then not known from the assignments alone. Nested functions, classes and lambdas
    have their own scope and are not read but for their declarations."""
    env: dict[str, list[Binding] | None] = {n: None for n in params}

    def other(names) -> None:
        for n in names:
            env[n] = None

    def bound(n: str, op: str, value) -> None:
        if n in env and env[n] is None:
            return
        env.setdefault(n, []).append((op, value))

    scope = (cst.FunctionDef, cst.ClassDef, cst.Lambda)
    for root in roots:
        for node in walk(root):
            if type(node) is cst.Global or type(node) is cst.Nonlocal:
                other(n.name.value for n in node.names)
        for node in walk(root, prune=scope):
            t = type(node)
            if t is cst.Assign:
                for target in node.targets:
                    if type(target.target) is cst.Name:
                        bound(target.target.value, "=", node.value)
                    elif type(target.target) in (cst.Tuple, cst.List, cst.StarredElement):
                        other(names_in(target.target))
            elif t is cst.AnnAssign and type(node.target) is cst.Name:
                if node.value is not None:
                    bound(node.target.value, "=", node.value)
            elif t is cst.AugAssign and type(node.target) is cst.Name:
                bound(node.target.value, type(node.operator).__name__, node.value)
            elif t is cst.NamedExpr or t is cst.For or t is cst.CompFor or t is cst.AugAssign:
                other(names_in(node.target))
            elif t is cst.AsName:  # with ... as x, except E as x, import m as x
                other(names_in(node.name))
            elif t is cst.ImportAlias and node.asname is None:
                other(((dotted_name(node.name) or "").partition(".")[0],))
            elif t is cst.Del:
                other(names_in(node.target))
            elif t is cst.ImportFrom and isinstance(node.names, cst.ImportStar):
                env["*"] = None
            for child in children(node):
                if type(child) is cst.FunctionDef or type(child) is cst.ClassDef:
                    other((child.name.value,))
    return env


class Shapes:
    """Whether expressions read in one scope give 0-dim tensors.

    Args:
        qualify: the qualified library name a dotted name stands for where it is read
            (``"torch.nn.functional.mse_loss"`` for ``F.mse_loss``), ``None`` when it is not an
            imported name (a variable, a function of the project).
        bindings: the bindings of a plain name read there (:func:`block_bindings` of its scope),
            ``None`` when they are not all known.
    """

    def __init__(self, qualify: Callable[[str], str | None],
                 bindings: Callable[[str], list[Binding] | None]) -> None:
        self.qualify = qualify
        self.bindings = bindings

    # -- 0-dim values ------------------------------------------------------------------

    def zero_dim(self, expr: cst.BaseExpression, seen: frozenset = frozenset()) -> bool:
        """Whether ``expr`` gives a 0-dim tensor on every run: a loss with a reduction to one
        number, a reduction without ``dim``, arithmetic of 0-dim tensors and numbers, a method
        or attribute of a 0-dim tensor that keeps its shape (``detach()``, ``cpu()``,
        ``.data``), or a name every binding of which gives one."""
        if len(seen) > MAX_DEPTH:
            return False
        t = type(expr)
        if t is cst.Name:
            return self._name_all(expr.value, seen, self.zero_dim, augmented=True)
        if t is cst.BinaryOperation:
            if not isinstance(expr.operator, _ARITHMETIC):
                return False
            left, right = expr.left, expr.right
            return (self.zero_dim(left, seen) and (self.zero_dim(right, seen) or self.number(right, seen))) or (
                self.number(left, seen) and self.zero_dim(right, seen))
        if t is cst.UnaryOperation:
            return isinstance(expr.operator, (cst.Minus, cst.Plus)) and self.zero_dim(expr.expression, seen)
        if t is cst.Attribute:
            return expr.attr.value in knowledge().cls("torch.Tensor").keeps_shape and self.zero_dim(expr.value, seen)
        if t is cst.Call:
            return self._call_zero_dim(expr, seen)
        return False

    def _call_zero_dim(self, call: cst.Call, seen: frozenset) -> bool:
        """:meth:`zero_dim` of a call: a library function whose ``zero_dim`` its arguments
        keep (``F.mse_loss(a, b)``, ``torch.sum(x)``), a tensor method on a 0-dim tensor that
        keeps its shape (``loss.detach()``) or a reduction of a tensor (``torch.abs(d).sum()``),
        or a loss module built to reduce (``criterion(out, y)``)."""
        func = call.func
        q = self._library(func)
        if q is not None:
            summary = knowledge().function(q)
            return summary is not None and summary.zero_dim is not None and _reduces(summary.zero_dim, call)
        if type(func) is cst.Attribute:
            method = knowledge().method("torch.Tensor", func.attr.value)
            if method is not None and method.keeps_shape:
                return self.zero_dim(func.value, seen)
            if method is not None and method.zero_dim is not None and method.zero_dim.without:
                return _reduces(method.zero_dim, call) and self.tensor(func.value, seen)
            return False
        return self._criterion(func, seen, True)

    def number(self, expr: cst.BaseExpression, seen: frozenset = frozenset()) -> bool:
        """Whether ``expr`` is a Python number: a numeric literal, its negation, a call of
        ``float``/``int``/``len``/..., or a name every binding of which is one."""
        t = type(expr)
        if t is cst.Integer or t is cst.Float:
            return True
        if t is cst.UnaryOperation:
            return isinstance(expr.operator, (cst.Minus, cst.Plus)) and self.number(expr.expression, seen)
        if t is cst.Call:
            return self.qualify(dotted_name(expr.func) or "") in _NUMBER_BUILTINS
        if t is cst.Name and len(seen) <= MAX_DEPTH:
            return self._name_all(expr.value, seen, self.number, augmented=False)
        return False

    # -- tensors -------------------------------------------------------------------------

    def tensor(self, expr: cst.BaseExpression, seen: frozenset = frozenset()) -> bool:
        """Whether ``expr`` gives a tensor (of any shape): a 0-dim one, a loss, a library call
        whose knowledge says it returns a tensor (``torch.abs``, ``torch.stack``: ``value``
        ``"tensor"``, ``"derived"``, ...), a tensor method of a tensor, arithmetic of tensors
        and numbers, or a name every binding of which gives one. (A receiver of ``sum()`` must
        be one: a DataFrame's ``sum()`` is not 0-dim.)"""
        if len(seen) > MAX_DEPTH:
            return False
        if self.zero_dim(expr, seen):
            return True
        t = type(expr)
        if t is cst.Name:
            return self._name_all(expr.value, seen, self.tensor, augmented=True)
        if t is cst.BinaryOperation:
            return isinstance(expr.operator, _ARITHMETIC) and (
                self.tensor(expr.left, seen) and (self.tensor(expr.right, seen) or self.number(expr.right, seen))
                or self.number(expr.left, seen) and self.tensor(expr.right, seen))
        if t is cst.UnaryOperation:
            return isinstance(expr.operator, (cst.Minus, cst.Plus)) and self.tensor(expr.expression, seen)
        if t is cst.Attribute:
            return expr.attr.value in knowledge().cls("torch.Tensor").keeps_shape and self.tensor(expr.value, seen)
        if t is not cst.Call:
            return False
        func = expr.func
        q = self._library(func)
        if q is not None:
            summary = knowledge().function(q)
            returns = summary.returns if summary is not None else None
            return returns is not None and (returns.value in _TENSOR_VALUES or returns.role == "loss")
        if type(func) is cst.Attribute:
            method = knowledge().method("torch.Tensor", func.attr.value)
            if method is not None and (method.keeps_shape or method.zero_dim is not None or (
                    method.returns is not None and "self" in method.returns.same)):
                return self.tensor(func.value, seen)
        return self._criterion(func, seen, False)

    # -- criteria -------------------------------------------------------------------------

    def _criterion(self, func: cst.BaseExpression, seen: frozenset, reduced: bool) -> bool:
        """Whether calling ``func`` calls a loss module of the library (a name every binding
        of which is its construction, ``criterion = nn.MSELoss()``, maybe moved,
        ``nn.MSELoss().cuda()``), and, with ``reduced``, one built to reduce to one number."""
        if type(func) is cst.Name:
            return self._name_all(func.value, seen, lambda v, s: self._criterion_value(v, reduced), augmented=False)
        if type(func) is cst.Call:  # nn.MSELoss()(a, b)
            return self._criterion_value(func, reduced)
        return False

    def _criterion_value(self, value: cst.BaseExpression, reduced: bool) -> bool:
        while type(value) is cst.Call and type(value.func) is cst.Attribute and self._library(value.func) is None:
            method = knowledge().method("torch.nn.Module", value.func.attr.value)
            if method is None or method.returns is None or "self" not in method.returns.same:
                return False
            value = value.func.value  # criterion.cuda(), .to(device): the same module
        if type(value) is not cst.Call:
            return False
        q = self._library(value.func)
        entry = knowledge().cls(q) if q is not None else None
        spec = entry.ctor.zero_dim if entry is not None else None
        return spec is not None and (not reduced or _reduces(spec, value))

    # -- names --------------------------------------------------------------------------

    def _name_all(self, name: str, seen: frozenset, test, augmented: bool) -> bool:
        """Whether ``name`` has bindings and every one passes ``test``; an augmented one
        (``x += v``, with ``augmented``) passes when ``v`` is 0-dim or a number (arithmetic
        keeps 0-dim)."""
        if name in seen:
            return False
        bindings = self.bindings(name)
        if not bindings or not any(op == "=" for op, _ in bindings):
            return False
        inner = seen | {name}
        for op, value in bindings:
            if op == "=":
                if not test(value, inner):
                    return False
            elif not (augmented and op in _AUGMENTED and (self.zero_dim(value, inner) or self.number(value, inner))):
                return False
        return True

    def _library(self, func: cst.BaseExpression) -> str | None:
        dotted = dotted_name(func)
        return self.qualify(dotted) if dotted is not None else None

    # -- subscripts ------------------------------------------------------------------------

    def raising_subscript(self, expr: cst.CSTNode) -> cst.Subscript | None:
        """The first subscript that every evaluation of ``expr`` evaluates and that indexes a
        0-dim tensor by an integer or a slice (``loss.data[0]``, ``loss[0].item()``,
        ``x[-1]``, ``x[:]``): it raises ``IndexError``. Not ``x[...]``, ``x[()]``, ``x[None]``
        (which work on a 0-dim tensor), nor an index the code does not write as a literal; not
        in a lambda, a comprehension, an arm of a conditional expression or the right operand
        of ``and``/``or`` (which may not run)."""
        for sub in indexing_subscripts(expr):
            if self.zero_dim(sub.value):
                return sub
        return None


_TENSOR_VALUES = frozenset({"tensor", "derived", "probabilities", "log_probabilities", "integer", "detached"})
_AUGMENTED = frozenset({"AddAssign", "SubtractAssign", "MultiplyAssign", "DivideAssign", "FloorDivideAssign",
                        "ModuloAssign", "PowerAssign"})


def _reduces(spec: ZeroDim, call: cst.Call) -> bool:
    """Whether ``call``'s arguments keep ``spec``'s 0-dim result: no ``*args``/``**kwargs``;
    for a loss, at most ``positional`` positional arguments, ``reduction`` left out or a
    literal of :data:`SCALAR_REDUCTIONS`, ``reduce`` left out, ``True`` or ``None``; for a
    reduction, none of its ``without`` arguments given."""
    positional = 0
    keywords: dict[str, cst.BaseExpression] = {}
    for arg in call.args:
        if arg.star:
            return False
        if arg.keyword is None:
            positional += 1
        else:
            keywords[arg.keyword.value] = arg.value
    if spec.reduction is not None:
        if positional > spec.positional:
            return False
        reduction = keywords.get(spec.reduction)
        if reduction is not None and not (
                type(reduction) is cst.SimpleString and reduction.evaluated_value in SCALAR_REDUCTIONS):
            return False
        reduce = keywords.get(spec.reduce) if spec.reduce else None
        return reduce is None or type(reduce) is cst.Name and reduce.value in ("True", "None")
    for ref in spec.without:
        index, keyword = (ref, None) if type(ref) is int else (None, ref) if type(ref) is str else ref
        if keyword is not None and keyword in keywords or index is not None and positional > index:
            return False
    return True


def indexing_subscripts(expr: cst.CSTNode):
    """The subscripts every evaluation of ``expr`` evaluates whose index raises on a 0-dim
    tensor (:func:`_raising_index`), in source order (whatever their value)."""
    return (sub for sub in _evaluated_subscripts(expr) if _raising_index(sub))


def _raising_index(sub: cst.Subscript) -> bool:
    """Whether ``sub``'s index raises on a 0-dim tensor: integers (``[0]``, ``[-1]``,
    ``[0, 0]``) and slices, written as literals."""
    for element in sub.slice:
        part = element.slice
        if type(part) is cst.Slice:
            continue
        if type(part) is not cst.Index or part.star is not None:
            return False
        value = part.value
        if type(value) is cst.UnaryOperation and type(value.operator) is cst.Minus:
            value = value.expression
        if type(value) is not cst.Integer:
            return False
    return bool(sub.slice)


def _evaluated_subscripts(node: cst.CSTNode):
    """The subscripts under ``node`` that each evaluation of it evaluates, in source order."""
    if type(node) is cst.Subscript:
        yield from _evaluated_subscripts(node.value)
        yield node
        for element in node.slice:
            yield from _evaluated_subscripts(element)
        return
    for child in evaluated_children(node):
        yield from _evaluated_subscripts(child)

