"""Fast read-only traversal of LibCST trees.

``CSTNode.visit`` rebuilds every node it passes (it is a transformer underneath), which
costs more than parsing; the analysis only reads, so it walks the dataclass fields instead.
"""

from __future__ import annotations

from typing import Iterator

import libcst as cst

_FIELDS: dict[type, tuple[str, ...]] = {}


def children(node: cst.CSTNode) -> Iterator[cst.CSTNode]:
    """The direct child nodes of ``node`` in source order (whitespace nodes included)."""
    cls = type(node)
    names = _FIELDS.get(cls)
    if names is None:
        names = tuple(cls.__dataclass_fields__)
        _FIELDS[cls] = names
    for name in names:
        value = getattr(node, name)
        if isinstance(value, cst.CSTNode):
            yield value
        elif isinstance(value, (tuple, list)):
            for v in value:
                if isinstance(v, cst.CSTNode):
                    yield v


_SKIP_ALWAYS = (cst.BaseParenthesizableWhitespace, cst.Comment, cst.Newline, cst.EmptyLine)


def walk(node: cst.CSTNode, prune: tuple[type, ...] = ()) -> Iterator[cst.CSTNode]:
    """Pre-order walk of ``node`` and its descendants, not entering nodes of types ``prune``
    (a pruned node itself is not yielded, except when it is ``node``)."""
    stack = [node]
    while stack:
        n = stack.pop()
        yield n
        kids = [c for c in children(n) if not isinstance(c, _SKIP_ALWAYS) and not isinstance(c, prune)]
        stack.extend(reversed(kids))


def calls_in_order(expr: cst.CSTNode) -> list[cst.Call]:
    """The calls inside ``expr`` in evaluation order (arguments before the call), not
    entering lambdas."""
    out: list[cst.Call] = []

    def rec(n: cst.CSTNode) -> None:
        for c in children(n):
            if isinstance(c, (cst.Lambda,) + _SKIP_ALWAYS):
                continue
            rec(c)
        if isinstance(n, cst.Call):
            out.append(n)

    if not isinstance(expr, cst.Lambda):
        rec(expr)
    return out


def dotted_chains(expr: cst.CSTNode) -> list[str]:
    """Maximal ``Name``/``Attribute`` chains in ``expr`` (``model.parameters``, ``lr``)."""
    from loopcheck.engine.names import dotted_name

    out: list[str] = []
    stack = [expr]
    while stack:
        n = stack.pop()
        if isinstance(n, cst.Name):
            out.append(n.value)
            continue
        if isinstance(n, cst.Attribute):
            d = dotted_name(n)
            if d is not None:
                out.append(d)
                continue
        if isinstance(n, (cst.Lambda,) + _SKIP_ALWAYS):
            continue
        stack.extend(children(n))
    return out


def names_in(expr: cst.CSTNode) -> set[str]:
    """Every ``Name`` in ``expr``."""
    return {n.value for n in walk(expr, _SKIP_ALWAYS) if isinstance(n, cst.Name)}
