"""Source positions of the nodes a check reports, computed only as far as they are needed.

LibCST gives positions through its metadata: ``MetadataWrapper(module).resolve(PositionProvider)``
generates the module's code while recording where every node starts and ends, and before that
visits the whole tree once more (a visit rebuilds every node). A check needs the positions of a
few nodes only (the flagged ones and their related lines), and nothing at all when it finds
nothing. So :class:`Positions` runs the same code generation as ``PositionProvider`` (same
rules, same :class:`libcst.metadata.CodeRange` values), without the visit, and stops as soon as
the nodes asked for first have been generated; asked for any other node, or iterated (fixes
look at every node), it generates the whole module once.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping

import libcst as cst
from libcst.metadata import CodePosition, CodeRange, MetadataWrapper, PositionProvider
from libcst.metadata.position_provider import PositionProvidingCodegenState

#: Stands for the position of a node not generated yet, once the generation stops early (only
#: the ancestors of the last wanted node look it up then, and their entries are dropped).
_UNKNOWN = CodeRange(CodePosition(1, 0), CodePosition(1, 0))


class _Stop(Exception):
    """Every wanted node has been generated."""


class _Table(dict):
    """``PositionProvider``'s node → range table; after the generation stops, a lookup of a
    node not generated yet answers :data:`_UNKNOWN` instead of failing."""

    stopped = False

    def __missing__(self, node):
        if self.stopped:
            return _UNKNOWN
        raise KeyError(node)


class _State(PositionProvidingCodegenState):
    """LibCST's position-recording code generation, stopping once ``wanted`` is empty."""

    __slots__ = ("wanted", "table")

    def after_codegen(self, node: cst.CSTNode) -> None:
        super().after_codegen(node)
        wanted = self.wanted
        if wanted and node in wanted:
            wanted.discard(node)
            if not wanted:
                self.table.stopped = True
                raise _Stop


def compute_positions(module: cst.Module, wanted: Iterable[cst.CSTNode] | None = None) -> dict:
    """``node → CodeRange`` as ``PositionProvider`` gives them: for every node of ``module``
    (``wanted`` is ``None``), or at least for the nodes of ``wanted`` (nodes of ``module``;
    the generation stops after the last of them, so other nodes may be missing).

    Falls back to LibCST's metadata wrapper when its code generation cannot be driven directly
    (a LibCST release that changed these internals)."""
    provider = PositionProvider()
    table = _Table()
    provider._computed = table
    try:
        state = _State(default_indent=module.default_indent, default_newline=module.default_newline,
                       provider=provider)
        state.wanted = set(wanted) if wanted is not None else None
        state.table = table
        if wanted is not None and not state.wanted:
            return {}
        try:
            module._codegen(state)
        except _Stop:
            pass
    except (AttributeError, TypeError):  # pragma: no cover - LibCST internals changed
        return dict(MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider))
    if table.stopped:
        return {n: table[n] for n in wanted if n in table}
    return dict(table)


class Positions(Mapping):
    """The positions of one module's nodes, as a read-only mapping ``node → CodeRange``.

    Args:
        module: the parsed module.
        first: the nodes asked for first (the reported ones): their positions are computed
            together, by a code generation that stops after the last of them. Any other node,
            ``len()`` or iteration generate the whole module once.
    """

    def __init__(self, module: cst.Module, first: Iterable[cst.CSTNode] = ()) -> None:
        self.module = module
        self._first = list(first)
        self._known: dict | None = None
        self._full = False

    def _ensure(self, node=None) -> dict:
        if self._known is None and self._first:
            self._known = compute_positions(self.module, self._first)
        if not self._full and (node is None or self._known is None or node not in self._known):
            self._known = compute_positions(self.module)
            self._full = True
        return self._known

    def __getitem__(self, node: cst.CSTNode) -> CodeRange:
        known = self._known
        if known is not None and node in known:
            return known[node]
        return self._ensure(node)[node]

    def __contains__(self, node) -> bool:
        try:
            self[node]
        except KeyError:
            return False
        return True

    def __iter__(self) -> Iterator[cst.CSTNode]:
        return iter(self._ensure())

    def __len__(self) -> int:
        return len(self._ensure())
