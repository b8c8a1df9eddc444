"""Suppression comments, as flake8 and ruff read them.

- ``# noqa: LC101`` or ``# noqa: LC101, LC301`` on a finding's ``noqa_row`` (the row it
  starts on) suppresses those codes there; a bare ``# noqa`` suppresses every code. Codes of
  other tools in the same comment (``# noqa: E501, LC101``) are allowed.
- ``# loopcheck: skip-file`` in any comment of a file skips the whole file.

Comments are found with :mod:`tokenize`, so text inside strings does not count; a file the
tokenizer rejects (one with a syntax error) is read line by line instead.
"""

from __future__ import annotations

import io
import re
import tokenize
from dataclasses import dataclass, field
from typing import Iterable, Iterator

from loopcheck.findings import Finding

# ``# noqa``, optionally followed by ``:`` and codes separated by commas or spaces.
NOQA = re.compile(
    r"#\s*noqa\b(?:\s*:\s*(?P<codes>[A-Z]+[0-9]+(?:(?:\s*,\s*|\s+)[A-Z]+[0-9]+)*))?",
    re.IGNORECASE,
)
SKIP_FILE = re.compile(r"#\s*loopcheck\s*:\s*skip-file\b", re.IGNORECASE)


def comments(source: str) -> Iterator[tuple[int, str]]:
    """``(row, text)`` of each comment of ``source`` (1-based rows, text from the ``#``)."""
    found: list[tuple[int, str]] = []
    try:
        for tok in tokenize.generate_tokens(io.StringIO(source).readline):
            if tok.type == tokenize.COMMENT:
                found.append((tok.start[0], tok.string))
    except (tokenize.TokenError, SyntaxError):
        found = []
        for row, line in enumerate(source.splitlines(), 1):
            at = line.find("#")
            if at >= 0:
                found.append((row, line[at:]))
    return iter(found)


@dataclass
class Directives:
    """The suppression comments of one file.

    Attributes:
        noqa: row → the codes its ``# noqa`` names (``None``: a bare ``# noqa``, all codes).
        skip_file: the file holds ``# loopcheck: skip-file``.
    """

    noqa: dict[int, frozenset[str] | None] = field(default_factory=dict)
    skip_file: bool = False

    def suppresses(self, finding: Finding) -> bool:
        """Whether a comment suppresses ``finding``."""
        if self.skip_file:
            return True
        row = finding.noqa_row if finding.noqa_row is not None else finding.row
        if row not in self.noqa:
            return False
        codes = self.noqa[row]
        return codes is None or finding.code in codes


def parse_noqa(comment: str) -> frozenset[str] | None | bool:
    """What one comment suppresses: ``False`` nothing, ``None`` everything, else codes."""
    result: frozenset[str] | None | bool = False
    for m in NOQA.finditer(comment):
        if m.group("codes") is None:
            return None
        codes = frozenset(c.upper() for c in re.split(r"[,\s]+", m.group("codes")) if c)
        result = codes if result is False else result | codes
    return result


def scan(source: str) -> Directives:
    """Read every suppression comment of ``source``."""
    d = Directives()
    for row, text in comments(source):
        if SKIP_FILE.search(text):
            d.skip_file = True
        codes = parse_noqa(text)
        if codes is False:
            continue
        if codes is None or d.noqa.get(row, frozenset()) is None:
            d.noqa[row] = None
        else:
            d.noqa[row] = d.noqa.get(row, frozenset()) | codes
    return d


def is_skipped(source: str) -> bool:
    """Whether ``source`` holds ``# loopcheck: skip-file`` (a cheap test first)."""
    return bool(SKIP_FILE.search(source)) and scan(source).skip_file


def filter_findings(findings: Iterable[Finding], source: str) -> list[Finding]:
    """The findings no suppression comment of ``source`` covers."""
    findings = list(findings)
    if not findings or "#" not in source:
        return findings
    directives = scan(source)
    return [f for f in findings if not directives.suppresses(f)]
