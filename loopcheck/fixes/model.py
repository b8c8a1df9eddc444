"""What a fix is: text edits with 1-based row/column ranges, an applicability and a message.

Positions follow :class:`loopcheck.findings.Finding`: rows and columns are 1-based, columns
count characters (code points), and the end is exclusive. An insertion has ``end == start``.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field
from typing import Collection, Iterable, Sequence

SAFE = "safe"
UNSAFE = "unsafe"


@dataclass(frozen=True)
class Edit:
    """Replace the text from ``(row, column)`` to ``(end_row, end_column)`` with ``content``."""

    content: str
    row: int
    column: int
    end_row: int
    end_column: int

    @property
    def is_insertion(self) -> bool:
        return (self.row, self.column) == (self.end_row, self.end_column)

    def to_json(self) -> dict:
        """ruff's JSON shape of an edit."""
        return {
            "content": self.content,
            "location": {"row": self.row, "column": self.column},
            "end_location": {"row": self.end_row, "column": self.end_column},
        }


@dataclass(frozen=True)
class Fix:
    """A fix for one finding.

    Attributes:
        applicability: ``"safe"`` (applied by ``--fix``) or ``"unsafe"`` (only with
            ``--unsafe-fixes``: it may change behaviour beyond the bug, review it).
        message: a short imperative sentence, as ruff's (``Use `loss.item()```).
        edits: non-overlapping text edits against the source the fix was computed on.
    """

    applicability: str
    message: str
    edits: tuple[Edit, ...] = field(default_factory=tuple)

    @property
    def is_safe(self) -> bool:
        return self.applicability == SAFE

    def to_json(self) -> dict:
        """ruff's JSON shape of a fix (``applicability``, ``message``, ``edits``)."""
        return {
            "applicability": self.applicability,
            "message": self.message,
            "edits": [e.to_json() for e in self.edits],
        }

    def apply(self, source: str) -> str:
        """The source with this fix's edits applied."""
        return apply_edits(source, self.edits)


# ------------------------------------------------------------------------------ offsets


class LineIndex:
    """Converts between character offsets and 1-based ``(row, column)`` positions of a text."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.starts = [0]
        for i, ch in enumerate(text):
            if ch == "\n":
                self.starts.append(i + 1)

    def offset(self, row: int, column: int) -> int:
        if row > len(self.starts):  # one past the last line: the end of the text
            return len(self.text)
        return min(self.starts[row - 1] + column - 1, len(self.text))

    def position(self, offset: int) -> tuple[int, int]:
        lo, hi = 0, len(self.starts) - 1
        while lo < hi:  # last line start <= offset
            mid = (lo + hi + 1) // 2
            if self.starts[mid] <= offset:
                lo = mid
            else:
                hi = mid - 1
        return lo + 1, offset - self.starts[lo] + 1


def edit_span(index: LineIndex, edit: Edit) -> tuple[int, int]:
    return index.offset(edit.row, edit.column), index.offset(edit.end_row, edit.end_column)


def apply_edits(source: str, edits: Iterable[Edit]) -> str:
    """Apply non-overlapping edits (positions refer to ``source``)."""
    index = LineIndex(source)
    spans = sorted(((*edit_span(index, e), e.content) for e in edits), key=lambda s: (s[0], s[1]))
    out, pos = [], 0
    for start, end, content in spans:
        if start < pos:
            raise ValueError("overlapping edits")
        out.append(source[pos:start])
        out.append(content)
        pos = end
    out.append(source[pos:])
    return "".join(out)


def _shared_ends(a: Sequence, b: Sequence) -> tuple[int, int]:
    """How many items ``a`` and ``b`` (lines, characters) share at their start, and then, in
    what is left of both, at their end."""
    n = min(len(a), len(b))
    head = 0
    while head < n and a[head] == b[head]:
        head += 1
    tail = 0
    while tail < n - head and a[-1 - tail] == b[-1 - tail]:
        tail += 1
    return head, tail


def edits_between(old: str, new: str, moved: Collection[str] = ()) -> tuple[Edit, ...]:
    """Small text edits that turn ``old`` into ``new``: changed lines, trimmed to the characters
    that differ. ``moved``: the lines of a statement the fix moves, which are then never the
    lines kept in place (two swapped lines read as the moved one deleted and inserted, not
    the other one moved the other way: the edits are the move the fix's message names)."""
    a = old.splitlines(keepends=True)
    b = new.splitlines(keepends=True)
    index = LineIndex(old)
    line_off = [0]
    for line in a:
        line_off.append(line_off[-1] + len(line))
    edits = []
    junk = frozenset(line.strip() for line in moved) - {""}  # (a moved line may change its indentation)
    # The lines both texts share at their start and end are kept as they are: the matcher
    # (quadratic in the lines it compares) sees only the region between them.
    head, tail = _shared_ends(a, b)
    matcher = difflib.SequenceMatcher((lambda line: line.strip() in junk) if junk else None,
                                      a[head:len(a) - tail], b[head:len(b) - tail], autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            continue
        i1, i2, j1, j2 = i1 + head, i2 + head, j1 + head, j2 + head
        start, end = line_off[i1], line_off[i2]
        old_text, new_text = old[start:end], "".join(b[j1:j2])
        # trim what the changed region keeps at both ends
        p, s = _shared_ends(old_text, new_text)
        start, end = start + p, end - s
        content = new_text[p:len(new_text) - s]
        (r1, c1), (r2, c2) = index.position(start), index.position(end)
        edits.append(Edit(content, r1, c1, r2, c2))
    return tuple(edits)


def touched_rows(edit: Edit) -> range:
    """The rows of the original text whose content an edit changes (an insertion at the
    start of a line changes none)."""
    if edit.is_insertion:
        return range(edit.row, edit.row) if edit.column == 1 else range(edit.row, edit.row + 1)
    last = edit.end_row - 1 if edit.end_column == 1 else edit.end_row
    return range(edit.row, max(last, edit.row) + 1)
