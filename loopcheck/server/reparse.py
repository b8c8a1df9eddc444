"""Parse the next version of an edited document by reparsing only the statements it changed.

An editor sends a new version of the whole text after each burst of keystrokes, and LibCST
has no incremental parser: a full :func:`~loopcheck.parsing.parse_module` of a long script is
most of a check. :class:`Reparser` keeps the
last tree of one document and the text span of each of its top-level statements; for the
next version it finds the changed characters (the common prefix and suffix of the two
texts), parses only the top-level statements around them (one more on each side, so the
reparsed text starts and ends on statements whose text did not change) as a module of its
own, and splices their nodes between the old ones. The unchanged statements keep their node
objects.

The result is the tree a full parse of the new text builds (``deep_equals``; the test suite
checks it on thousands of random edits of real training scripts). Where that is not certain,
it parses the whole text instead:

* there is no last tree, its statement spans are unknown, or the text uses ``\\r`` line
  endings, lacks a final newline, or starts with a byte order mark (LibCST records those
  per module, not per statement);
* the reparsed statements do not parse on their own (an edit opened a bracket or a string
  that runs on into the next statement, a decorator lost its ``def``, a syntax error): the
  full parse then says what is wrong, as it would without this module;
* the reparsed text indents its blocks with another default indentation than the module's
  (LibCST stores a block's indentation as ``None`` when it is the module's default, which is
  the first indentation of the file), or the edit removed every block from the region that
  held the file's first one;
* the edit leaves no statement in the reparsed region at the top of the file.

The analysis keeps tables about single nodes (the calls of an expression in evaluation
order, the names it reads: :data:`~loopcheck.engine.builder.NODE_TABLES`); :attr:`Reparser.tables`
carries them to the next version, where the nodes a splice kept find their entries again.
"""

from __future__ import annotations

from bisect import bisect_right
from dataclasses import dataclass

import libcst as cst

from loopcheck.engine.builder import NODE_TABLES
from loopcheck.engine.walk import children
from loopcheck.parsing import check_nesting, parse_module, parse_tree, run_deep


@dataclass
class _Spans:
    """Where a module's top-level statements lie in its text (offsets in characters).

    Attributes:
        starts: the offset of each statement of ``module.body``, its leading lines included
            (the first statement's starts after the module's header).
        body_end: where the module's footer starts.
        first_block: the index of the first statement that holds an indented block (the
            file's first indentation, LibCST's default indent), ``None`` when none does.
    """

    starts: list[int]
    body_end: int
    first_block: int | None


def _common_prefix(a: str, b: str) -> int:
    """The length of the longest common prefix of ``a`` and ``b`` (binary search over
    slices compared in C)."""
    lo, hi = 0, min(len(a), len(b))
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if a[lo:mid] == b[lo:mid]:
            lo = mid
        else:
            hi = mid - 1
    return lo


def _common_suffix(a: str, b: str, limit: int) -> int:
    """The length of the longest common suffix of ``a`` and ``b``, at most ``limit``."""
    lo, hi = 0, limit
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if a[len(a) - mid:len(a) - lo] == b[len(b) - mid:len(b) - lo]:
            lo = mid
        else:
            hi = mid - 1
    return lo


def _changed_span(old: str, text: str) -> tuple[int, int]:
    """``(prefix, suffix)``: the lengths of the common prefix and of the common suffix of
    ``old`` and ``text`` (the suffix not overlapping the prefix); what lies between them changed."""
    p = _common_prefix(old, text)
    return p, _common_suffix(old, text, min(len(old), len(text)) - p)


def _first_block(node: cst.CSTNode) -> cst.IndentedBlock | None:
    """The first indented block of a statement in source order (its first ``INDENT`` token),
    or ``None``. Only statements hold blocks, so expressions are not walked."""
    if isinstance(node, cst.IndentedBlock):
        return node
    if isinstance(node, (cst.SimpleStatementLine, cst.SimpleStatementSuite, cst.BaseExpression)):
        return None
    for child in children(node):
        found = _first_block(child)
        if found is not None:
            return found
    return None


def _first_block_index(body) -> int | None:
    """The index of the first statement of ``body`` holding an indented block, else ``None``."""
    return next((k for k, stmt in enumerate(body) if _first_block(stmt) is not None), None)


def spans_of(module: cst.Module, text: str) -> _Spans | None:
    """The statement spans of ``module`` in ``text``, the text it was parsed from (one code
    generation of the whole module: about a quarter of a parse); ``None`` when LibCST's code
    for the module is not ``text`` (a stray backslash line is dropped: LibCST's round trip
    is not exact there)."""
    codes = [module.code_for_node(line) for line in module.header]
    pos = sum(map(len, codes))
    starts = []
    for stmt in module.body:
        starts.append(pos)
        codes.append(module.code_for_node(stmt))
        pos += len(codes[-1])
    codes.extend(module.code_for_node(line) for line in module.footer)
    if "".join(codes) != text:
        return None
    return _Spans(starts, pos, _first_block_index(module.body))


class Reparser:
    """The last parse of one document, reused for its next version (see the module
    docstring). One per document; not thread-safe."""

    def __init__(self) -> None:
        self.text: str | None = None
        self.module: cst.Module | None = None
        self._spans: _Spans | None = None
        self._spans_known = False  # ``_spans`` is computed (``None`` then: not usable)
        self.reparsed = 0  # how many parses reused the last tree (for tests and measurement)
        self.fallback: str | None = None  # why the last parse was a full one
        # The analysis' per-node tables of the last tree (``check_parsed``'s ``tables``): kept
        # across a splice, whose unchanged statements keep their nodes; emptied by a full
        # parse (no node survives it) and when the entries of replaced nodes outgrow the rest.
        # Its other entries (the last check's entry points, ``"units"``: replaced at each check)
        # are kept by the latter.
        self.tables: dict[str, dict] = {}
        self._tables_floor: int | None = None  # their size after the check of a full parse

    def parse(self, text: str) -> cst.Module:
        """The module of ``text``: the last tree spliced when possible, else a full parse.

        Raises:
            libcst.ParserSyntaxError: ``text`` does not parse (as :func:`parse_module`; the
                last tree is kept for the next version).
            RuntimeError: LibCST's native parser panicked.
        """
        if text == self.text and self.module is not None:
            return self.module
        spliced = self._splice(text) if self.module is not None else None
        if spliced is not None:
            self.text, (self.module, self._spans) = text, spliced
            self.reparsed += 1
            self.fallback = None
            self._trim_tables()
            return self.module
        module = parse_module(text)
        self.text, self.module, self._spans, self._spans_known = text, module, None, False
        self._empty_tables()
        self._tables_floor = None
        return module

    def changed(self, text: str) -> int | None:
        """How many characters of ``text`` differ from the last version (those between the
        two texts' common prefix and suffix): the least a reparse parses again; ``None`` when
        there is no last tree."""
        old = self.text
        if old is None or self.module is None:
            return None
        p, s = _changed_span(old, text)
        return len(text) - p - s

    def _trim_tables(self) -> None:
        """Empty the per-node tables of :attr:`tables` when they hold more than twice what a
        whole check of a tree fills them with (each splice leaves the entries of the nodes it
        replaced behind)."""
        size = sum(len(t) for name, t in self.tables.items() if name in NODE_TABLES)
        if self._tables_floor is None:
            self._tables_floor = size
        elif size > 2 * self._tables_floor + 1000:
            self._empty_tables(NODE_TABLES)
            self._tables_floor = None

    def _empty_tables(self, names=None) -> None:
        """Empty :attr:`tables` in place (the caller may hold the dict already): the entries
        ``names`` (all when ``None``); one with a ``release()`` method (the entry points' memo)
        is told first."""
        for name in [n for n in self.tables if names is None or n in names]:
            release = getattr(self.tables[name], "release", None)
            if release is not None:
                release()
            del self.tables[name]

    def _whole(self, why: str) -> None:
        self.fallback = why
        return None

    def prepare(self) -> None:
        """Compute the last tree's statement spans now (after a full parse they are computed
        when the next version needs them; a caller with idle time calls this first)."""
        if self.module is not None and not self._spans_known:
            self._spans, self._spans_known = spans_of(self.module, self.text), True

    def _splice(self, text: str) -> tuple[cst.Module, _Spans] | None:
        old, module = self.text, self.module
        assert old is not None and module is not None
        if "\r" in text or not text.endswith("\n") or text.startswith("\ufeff") or "\r" in old:
            return self._whole("line endings")
        n = len(module.body)
        if n == 0:
            return self._whole("no statement")
        self.prepare()
        spans = self._spans
        if spans is None:
            return self._whole("LibCST's code for the last tree is not its text")
        p, s = _changed_span(old, text)
        changed_end = len(old) - s  # the changed characters of ``old``: [p, changed_end)
        first = bisect_right(spans.starts, p) - 1  # -1: in the header
        last = bisect_right(spans.starts, max(changed_end - 1, p)) - 1
        i, j = max(first - 1, 0), min(last + 2, n)
        start = spans.starts[i] if i > 0 else 0
        end = spans.starts[j] if j < n else len(old)
        delta = len(text) - len(old)
        region = text[start:end + delta]
        try:
            check_nesting(region)
            chunk = run_deep(parse_tree, region)
        except cst.ParserSyntaxError:
            return self._whole("the region does not parse alone")
        except BaseException as err:
            if type(err).__name__ == "PanicException":  # pyo3's: the full parse reports it
                return self._whole("LibCST's parser failed on the region")
            raise
        body, header, footer = list(chunk.body), list(chunk.header), list(chunk.footer)
        own = spans_of(chunk, region)  # the chunk's statement spans, relative to ``region``
        if own is None:
            return self._whole("LibCST's code for the region is not its text")
        if not body and i == 0:
            return self._whole("no statement left at the top")
        if own.first_block is not None:
            if chunk.default_indent != module.default_indent:
                return self._whole("another indentation")
            chunk_block = own.first_block + i
            first_block = chunk_block if spans.first_block is None or spans.first_block >= i else spans.first_block
        elif spans.first_block is not None and spans.first_block < i:
            first_block = spans.first_block
        elif spans.first_block is None or spans.first_block >= j:
            first_block = None if spans.first_block is None else spans.first_block - j + i + len(body)
        else:  # the region held the file's first block and holds none now
            return self._whole("the first block removed")
        footer_len = len(region) - own.body_end
        starts = [*spans.starts[:i], *(start + at for at in own.starts)]  # offsets in the new text
        if i > 0:  # the chunk's header lines lead its first statement, as in the whole text
            if body:
                body[0] = body[0].with_changes(leading_lines=[*header, *body[0].leading_lines])
                starts[i] = start
            else:
                footer = [*header, *footer]
            header = list(module.header)
        tail = list(module.body[j:])
        after = [at + delta for at in spans.starts[j:]]
        if j < n:
            if footer:  # lines after the chunk's last statement lead the next one
                tail[0] = tail[0].with_changes(leading_lines=[*footer, *tail[0].leading_lines])
                after[0] = end + delta - footer_len if body else start
            footer, body_end = list(module.footer), spans.body_end + delta
        else:
            body_end = end + delta - footer_len if body else start
        new = module.with_changes(body=[*module.body[:i], *body, *tail], header=header, footer=footer)
        return new, _Spans([*starts, *after], body_end, first_block)
