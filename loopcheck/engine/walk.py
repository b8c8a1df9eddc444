"""Fast read-only traversal of LibCST trees.

``CSTNode.visit`` rebuilds every node it passes (it is a transformer underneath), which
costs more than parsing; the analysis only reads, so it walks the dataclass fields instead.
"""

from __future__ import annotations

import collections.abc
import dataclasses
import typing
from typing import Iterator

import libcst as cst
from libcst import MaybeSentinel

_FIELDS: dict[type, tuple[str, ...]] = {}
#: Whitespace (a line's trailing one too), comments, and the punctuation nodes (parentheses,
#: brackets, braces, commas, dots, colons, semicolons, the ``=`` of a keyword argument): no
#: analysis reads them, and they are a large share of the nodes a walk would visit.
_SKIP_ALWAYS = (
    cst.BaseParenthesizableWhitespace, cst.Comment, cst.Newline, cst.EmptyLine,
    cst.LeftParen, cst.RightParen, cst.LeftSquareBracket, cst.RightSquareBracket, cst.LeftCurlyBrace,
    cst.RightCurlyBrace, cst.Comma, cst.Dot, cst.Colon, cst.Semicolon, cst.AssignEqual, cst.TrailingWhitespace,
)
# type -> "node" (a syntax node), "skip" (whitespace, comments, punctuation) or "" (not a node);
# ``isinstance`` on LibCST's abstract classes is slow, so each type is classified once.
_KIND: dict[type, str] = {}


def _kind(t: type) -> str:
    k = _KIND.get(t)
    if k is None:
        if issubclass(t, _SKIP_ALWAYS):
            k = "skip"
        elif issubclass(t, cst.CSTNode):
            k = "node"
        else:
            k = ""
        _KIND[t] = k
    return k


def _fields(cls: type) -> tuple[str, ...]:
    names = _FIELDS.get(cls)
    if names is None:
        names = _FIELDS[cls] = tuple(cls.__dataclass_fields__)
    return names


_NODE_FIELDS: dict[type, tuple[str, ...]] = {}


def _may_hold_node(annotation) -> bool:
    """Whether a dataclass field of this annotation can hold a syntax node (not whitespace, a
    comment, a string or a sentinel); ``True`` for any annotation not understood."""
    if isinstance(annotation, type):
        if issubclass(annotation, cst.CSTNode):
            return not issubclass(annotation, _SKIP_ALWAYS)
        return annotation not in (str, bool, int, type(None), MaybeSentinel)
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if origin is typing.Literal:
        return False
    if origin in (typing.Union, collections.abc.Sequence) and args:
        return any(_may_hold_node(a) for a in args)
    return True


def _node_fields(cls: type) -> tuple[str, ...]:
    """The fields of a node class that can hold syntax nodes, in order (the others are
    whitespace and strings: not read by :func:`children`)."""
    names = _NODE_FIELDS.get(cls)
    if names is None:
        names = _NODE_FIELDS[cls] = tuple(f.name for f in dataclasses.fields(cls) if _may_hold_node(f.type))
    return names


def children(node: cst.CSTNode) -> list[cst.CSTNode]:
    """The direct child syntax nodes of ``node`` in source order (no whitespace, comments or
    punctuation: :data:`_SKIP_ALWAYS`)."""
    names = _node_fields(type(node))
    out = []
    for name in names:
        value = getattr(node, name)
        t = type(value)
        if t is tuple or t is list:
            for v in value:
                if (_KIND.get(type(v)) or _kind(type(v))) == "node":
                    out.append(v)
        elif (_KIND.get(t) or _kind(t)) == "node":
            out.append(value)
    return out


#: Nodes whose code runs later, per item, or not at all when the expression is evaluated.
_DEFERRED = (cst.Lambda, cst.ListComp, cst.SetComp, cst.DictComp, cst.GeneratorExp, cst.FunctionDef, cst.ClassDef)


def evaluated_children(node: cst.CSTNode) -> list[cst.CSTNode]:
    """The children of ``node`` that every evaluation of it evaluates: none of a lambda, a
    comprehension, a ``def`` or a ``class`` (their bodies run later, per item, or not at all),
    the test of a conditional expression (an arm may not run), the left operand of
    ``and``/``or`` (the right one may not run), every child of anything else."""
    t = type(node)
    if t in _DEFERRED:
        return []
    if t is cst.IfExp:
        return [node.test]
    if t is cst.BooleanOperation:
        return [node.left]
    return children(node)


def walk(node: cst.CSTNode, prune: tuple[type, ...] = ()) -> Iterator[cst.CSTNode]:
    """Pre-order walk of ``node`` and its descendants, not entering nodes of types ``prune``
    (a pruned node itself is not yielded, except when it is ``node``)."""
    stack = [node]
    while stack:
        n = stack.pop()
        yield n
        kids = children(n)
        if prune:
            kids = [c for c in kids if not isinstance(c, prune)]
        stack.extend(reversed(kids))


def calls_in_order(expr: cst.CSTNode) -> list[cst.Call]:
    """The calls inside ``expr`` in evaluation order (arguments before the call), not
    entering lambdas."""
    out: list[cst.Call] = []
    if isinstance(expr, cst.Lambda):
        return out
    # An explicit stack instead of recursion (a 1,000-term chain nests as deep): a call is
    # pushed again under its children, marked, so it comes out after all of them.
    stack: list[tuple[cst.CSTNode, bool]] = [(expr, False)]
    while stack:
        n, children_done = stack.pop()
        if children_done:
            out.append(n)
            continue
        if isinstance(n, cst.Call):
            stack.append((n, True))
        stack.extend((c, False) for c in reversed(children(n)) if type(c) is not cst.Lambda)
    return out


_COMPREHENSIONS = (cst.ListComp, cst.SetComp, cst.GeneratorExp, cst.DictComp)


def dotted_chains(expr: cst.CSTNode) -> list[str]:
    """Maximal ``Name``/``Attribute`` chains in ``expr`` (``model.parameters``, ``lr``): the
    names the expression reads. Keyword names of arguments and the variables a comprehension
    binds (``p`` in ``[p for p in model.parameters()]``) are not read from outside, so they
    are left out; lambdas are not entered."""
    from loopcheck.engine.names import dotted_name

    out: list[str] = []
    stack: list[tuple[cst.CSTNode, frozenset[str]]] = [(expr, frozenset())]
    while stack:
        n, bound = stack.pop()
        t = type(n)
        if t is cst.Name:
            if n.value not in bound:
                out.append(n.value)
            continue
        if t is cst.Attribute:
            d = dotted_name(n)
            if d is not None:
                if d.partition(".")[0] not in bound:
                    out.append(d)
                continue
            # ``f(x).cuda``: the attribute's name is not a name the expression reads
            stack.append((n.value, bound))
            continue
        if t is cst.Lambda:
            continue
        if t is cst.Arg:
            stack.append((n.value, bound))
            continue
        if t in _COMPREHENSIONS:
            targets = set(bound)
            comp = n.for_in
            while comp is not None:
                targets |= names_in(comp.target)
                comp = comp.inner_for_in
            bound = frozenset(targets)
        stack.extend((c, bound) for c in children(n))
    return out


def names_in(expr: cst.CSTNode) -> set[str]:
    """Every ``Name`` in ``expr``."""
    return {n.value for n in walk(expr) if type(n) is cst.Name}


def small_statements(node: cst.CSTNode, nested: bool = True) -> Iterator[cst.BaseSmallStatement]:
    """Every small statement (``import``, assignments, expressions, ...) under ``node``,
    inside compound statements (and nested functions and classes when ``nested``), without
    entering expressions."""
    stack = [node]
    while stack:
        n = stack.pop()
        t = type(n)
        if not nested and n is not node and (t is cst.FunctionDef or t is cst.ClassDef):
            continue
        if t is cst.SimpleStatementLine or t is cst.SimpleStatementSuite:
            yield from n.body
            continue
        body = getattr(n, "body", None)
        if isinstance(body, (list, tuple)):
            stack.extend(reversed(body))
        elif body is not None and not isinstance(body, cst.BaseExpression):
            stack.append(body)
        for attr in ("orelse", "finalbody"):
            part = getattr(n, attr, None)
            if part is not None and not isinstance(part, cst.BaseExpression):
                stack.append(part)
        for h in getattr(n, "handlers", ()):
            stack.append(h)
        for c in getattr(n, "cases", ()):
            stack.append(c)


def parent_table(module: cst.CSTNode) -> dict[cst.CSTNode, cst.CSTNode]:
    """Node -> parent node for every node under ``module``, whitespace and comments included
    (the nodes a LibCST visitor visits), read from the dataclass fields without a visit (a
    visit rebuilds every node: 0.5 s on a 2,000-line file, against 0.05 s). A node's entry
    comes before its children's."""
    parents: dict[cst.CSTNode, cst.CSTNode] = {}
    stack = [module]
    while stack:
        node = stack.pop()
        for name in _fields(type(node)):
            value = getattr(node, name)
            t = type(value)
            if t is tuple or t is list:
                for v in value:
                    if _KIND.get(type(v)) or _kind(type(v)):  # a node, whitespace included
                        parents[v] = node
                        stack.append(v)
            elif _KIND.get(t) or _kind(t):
                parents[value] = node
                stack.append(value)
    return parents
