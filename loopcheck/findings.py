"""Findings: what a rule reports, before and after source positions are known."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Callable

if TYPE_CHECKING:
    import libcst as cst

    from loopcheck.fixes.model import Fix


class Describe:
    """Gives rule messages the line and short source text of LibCST nodes.

    Positions are resolved once per file, only when something is reported.
    """

    def __init__(self, module: cst.Module, positions) -> None:
        self.module = module
        self.positions = positions

    def line(self, node: cst.CSTNode) -> int:
        """1-based line where ``node`` starts."""
        return self.positions[node].start.line

    def code(self, node: cst.CSTNode, limit: int = 60) -> str:
        """The node's source on one line, shortened to ``limit`` characters."""
        text = " ".join(self.module.code_for_node(node).split())
        return text if len(text) <= limit else text[: limit - 3] + "..."

    def call(self, node: cst.CSTNode, args: bool = False) -> str:
        """``optimizer.step()`` for a call node: its callee followed by ``()``; with ``args``,
        the call as written, for a call whose arguments say what it does
        (``model.train(False)`` switches to eval mode, ``model.train(mode)`` to either)."""
        import libcst as cst  # not at the top: the findings of a warm run need no parser

        if isinstance(node, cst.Call):
            if args and node.args:
                return self.code(node, 60)
            return self.code(node.func, 40) + "()"
        return self.code(node)


@dataclass(eq=False)
class Report:
    """What a rule returns: the node to flag, a message builder, and the related nodes.

    Attributes:
        code: the rule code (``"LC101"``).
        node: the LibCST node the finding points at.
        message: ``message(describe) -> str``: one sentence, under 120 characters, that says
            what is wrong and names the lines of the related nodes.
        related: ``[(node, note)]`` — the other lines that make it a bug.
        note: ``note(describe) -> str`` or ``None``: the explanation (what breaks at runtime,
            the measured numbers, the fix), shown by the ``full`` output and in JSON.
        at: the event flagged (its ``ctx.calls`` say through which inlined calls it was
            reached; the same line of a helper can be reached from several call sites).
        related_at: the events of the related lines, when known (same order, ``None`` for
            a line that is no event, a loop).
    """

    code: str
    node: cst.CSTNode
    message: Callable[[Describe], str]
    related: list[tuple[cst.CSTNode, str]] = field(default_factory=list)
    note: Callable[[Describe], str] | None = None
    at: object = None
    related_at: tuple = ()


@dataclass
class Related:
    """Another line that makes a finding a bug.

    Attributes:
        row, column: 1-based position in ``filename``.
        message: what that line does (``"backward() fills .grad only here"``).
        filename: the file it is in, when it is not the finding's own file (a loop split
            across modules); ``None`` for the finding's file.
    """

    row: int
    column: int
    message: str
    filename: str | None = None


@dataclass
class Finding:
    """A finding with resolved positions (1-based rows and columns, end exclusive).

    Attributes:
        code, message, filename: as in ruff's JSON output.
        row, column, end_row, end_column: the span of the flagged node.
        related: the other lines involved.
        noqa_row: the row a ``# noqa`` comment must be on to suppress the finding.
        note: the explanation beyond the one-sentence message, or ``None``.
        fix: the finding's fix, when computed (``loopcheck.fixes.attach_fixes``); ``None``
            when not computed or when no fix exists.
    """

    code: str
    message: str
    filename: str
    row: int
    column: int
    end_row: int
    end_column: int
    related: list[Related] = field(default_factory=list)
    noqa_row: int | None = None
    note: str | None = None
    fix: Fix | None = field(default=None, compare=False, repr=False)

    @property
    def sort_key(self) -> tuple:
        return (self.filename, self.row, self.column, self.code)
