"""Who keeps an object alive: the user variable behind a kept loss or a replaced model.

Used only once a symptom is seen (a loss tensor alive two optimizer steps after its own, a
trained model that shares no parameter with its optimizer), never on the hot path.
The search looks at the variables of the live user frames (and their module globals), one or
two levels deep: a list or dict holding the loss, an object attribute (an ``AverageMeter``,
``self.losses``), or a tensor whose autograd graph still contains the loss's graph node (a
running sum ``total += loss``). Graph nodes are recognised by a mark that the watcher left in
the node's ``metadata`` dict when the loss was back-propagated.
"""

from __future__ import annotations

import collections
import types
from dataclasses import dataclass

import torch

MARK = "loopcheck_trace_loss"
_GRAPH_LIMIT = 50_000
_ITEMS_LIMIT = 5_000
_SKIP_TYPES = (types.ModuleType, types.FunctionType, types.BuiltinFunctionType, types.MethodType, type,
               str, bytes, int, float, bool, complex)


@dataclass
class Holder:
    """Where a kept object was found.

    Attributes:
        frame: the user frame whose variable (or whose module's global) holds it.
        path: the holder as code names it: ``["loss_history"]``, ``["self", "losses"]``.
        kind: ``"list"``, ``"dict"``, ``"graph"`` (a tensor whose graph contains it),
            ``"object"`` or ``"variable"`` (the variable itself is the object).
        size: how many kept items the container holds, when it is a container.
    """

    frame: types.FrameType
    path: list[str]
    kind: str
    size: int | None = None

    @property
    def name(self) -> str:
        """``loss_history``, ``self.losses``."""
        return ".".join(self.path)


def graph_has_mark(tensor: torch.Tensor, mark) -> bool:
    """Whether the autograd graph of ``tensor`` contains the node marked with ``mark``."""
    root = getattr(tensor, "grad_fn", None)
    if root is None:
        return False
    seen: set[int] = set()
    stack = [root]
    while stack and len(seen) < _GRAPH_LIMIT:
        node = stack.pop()
        if node is None or id(node) in seen:
            continue
        seen.add(id(node))
        try:
            if node.metadata.get(MARK) is mark:
                return True
        except (AttributeError, RuntimeError):
            pass
        stack.extend(nxt for nxt, _ in getattr(node, "next_functions", ()) if nxt is not None)
    return False


def is_marked(value, mark) -> bool:
    """Whether ``value`` is the marked loss (or loss term) tensor itself: a scalar whose own graph
    node carries ``mark``."""
    if isinstance(value, torch.Tensor) and value.grad_fn is not None and value.dim() == 0:
        try:
            return value.grad_fn.metadata.get(MARK) is mark
        except (AttributeError, RuntimeError):
            return False
    return False


def _count(items) -> int:
    return sum(1 for v in items if isinstance(v, torch.Tensor) and v.grad_fn is not None)


def _inside(value, mark, depth: int) -> tuple[str, int | None, list[str]] | None:
    """``(kind, size, attribute path)`` when ``value`` keeps the marked loss, else ``None``."""
    if isinstance(value, torch.Tensor):
        if value.grad_fn is not None and value.dim() == 0 and graph_has_mark(value, mark):
            return ("graph", None, [])  # a scalar built from the loss: a running sum of losses
        return None
    if isinstance(value, (list, tuple, collections.deque, set, frozenset)):
        items = list(value)[-_ITEMS_LIMIT:]
        if any(is_marked(v, mark) for v in items):
            return ("list", _count(items), [])
        if depth > 0:
            for v in items[-50:]:
                found = _inside(v, mark, depth - 1)
                if found:
                    return found[0], found[1], []
        return None
    if isinstance(value, dict):
        items = list(value.items())[-_ITEMS_LIMIT:]
        if any(is_marked(v, mark) for _, v in items):
            return ("dict", _count(v for _, v in items), [])
        if depth > 0:
            for _, v in items[-50:]:
                found = _inside(v, mark, depth - 1)
                if found:
                    return found[0], found[1], []
        return None
    if isinstance(value, _SKIP_TYPES) or depth <= 0:
        return None
    attrs = getattr(value, "__dict__", None)
    if not isinstance(attrs, dict):
        return None
    for k, v in list(attrs.items()):
        if k.startswith("__") or isinstance(v, _SKIP_TYPES):
            continue
        if is_marked(v, mark):
            return ("object", None, [k])
        found = _inside(v, mark, depth - 1)
        if found:
            return found[0], found[1], [k, *found[2]]
    return None


def find_holder(frames, mark) -> Holder | None:
    """The first user variable (innermost frame first, locals before module globals) that keeps
    the loss whose graph node is marked with ``mark``: the tensor itself, or a tensor whose graph
    contains that node.

    Args:
        frames: live user frames, innermost first.
        mark: the object stored under :data:`MARK` in the loss node's ``metadata``.
    """
    seen_globals: set[int] = set()
    scopes = [(f, f.f_locals) for f in frames]
    for f in frames:
        if id(f.f_globals) not in seen_globals:
            seen_globals.add(id(f.f_globals))
            scopes.append((f, f.f_globals))
    for frame, names in scopes:
        for name, value in list(names.items()):
            if name.startswith("__") or isinstance(value, _SKIP_TYPES):
                continue
            if is_marked(value, mark):
                return Holder(frame, [name], "variable")
            found = _inside(value, mark, 2)
            if found:
                kind, size, attrs = found
                return Holder(frame, [name, *attrs], kind, size)
    return None


def names_of_losses(frame) -> set[str]:
    """Names of ``frame``'s variables bound to a loss or loss term of a backward pass (a tensor
    whose own graph node carries a mark): ``loss``, ``raw_loss``."""
    out = set()
    for name, value in frame.f_locals.items():
        if isinstance(value, torch.Tensor) and value.grad_fn is not None:
            try:
                if MARK in value.grad_fn.metadata:
                    out.add(name)
            except (AttributeError, RuntimeError):
                pass
    return out


def names_bound_to(frame, obj) -> set[str]:
    """Names of ``frame``'s locals (module globals at module level) bound to ``obj``."""
    return {n for n, v in frame.f_locals.items() if v is obj}
