"""Suppression comments, as flake8 and ruff read them.

- ``# noqa: LC101`` or ``# noqa: LC101, LC301`` on a finding's ``noqa_row`` (the row it
  starts on) suppresses those codes there; a bare ``# noqa`` suppresses every code. Codes of
  other tools in the same comment (``# noqa: E501, LC101``) are allowed.
- ``# loopcheck: skip-file`` in any comment of a file skips the whole file, and so does a bare
  ``# loopcheck: noqa`` or ``# flake8: noqa`` (as ruff's ``# ruff: noqa``; flake8 skips such a
  file, so the flake8 plugin's findings and the command line's agree);
  ``# loopcheck: noqa: LC101, LC301`` (or ``# flake8: noqa: ...``, as ruff reads it)
  suppresses those codes in the whole file.
- LC002 (``unused-noqa``, as ruff's RUF100): a ``# noqa: LC...`` comment naming a loopcheck
  code that suppresses nothing on its row (:func:`unused_noqa`); codes of other tools are
  left alone. Its fix removes the unused codes (the whole comment when none is left).

Comments are found with :mod:`tokenize`, so text inside strings does not count; a file the
tokenizer rejects (one with a syntax error) is read line by line instead.
"""

from __future__ import annotations

import io
import re
import tokenize
from dataclasses import dataclass, field
from typing import Collection, Iterable, Iterator

from loopcheck.findings import Finding

# ``# noqa``, optionally followed by ``:`` and codes separated by commas or spaces.
NOQA = re.compile(
    r"#\s*noqa\b(?:\s*:\s*(?P<codes>[A-Z]+[0-9]+(?:(?:\s*,\s*|\s+)[A-Z]+[0-9]+)*))?",
    re.IGNORECASE,
)
SKIP_FILE = re.compile(r"#\s*loopcheck\s*:\s*skip-file\b", re.IGNORECASE)
# ``# loopcheck: noqa`` (the whole file) or ``# loopcheck: noqa: LC101, LC301`` (those codes in
# it); ``# flake8: noqa`` likewise, as flake8 (which skips such a file before its plugins run)
# and ruff honour it.
FILE_NOQA = re.compile(
    r"#\s*(?:loopcheck|flake8)\s*:\s*noqa\b(?:\s*:\s*(?P<codes>[A-Z]+[0-9]+(?:(?:\s*,\s*|\s+)[A-Z]+[0-9]+)*))?",
    re.IGNORECASE,
)
UNUSED_NOQA = "LC002"


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
    file_codes: frozenset[str] = frozenset()  # ``# loopcheck: noqa: CODES``

    def suppresses(self, finding: Finding) -> bool:
        """Whether a comment suppresses ``finding``."""
        if self.skip_file or finding.code in self.file_codes:
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
        whole = FILE_NOQA.search(text)
        if whole:
            if whole.group("codes") is None:
                d.skip_file = True
            else:
                d.file_codes |= {c.upper() for c in re.split(r"[,\s]+", whole.group("codes")) if c}
            continue
        codes = parse_noqa(text)
        if codes is False:
            continue
        if codes is None or d.noqa.get(row, frozenset()) is None:
            d.noqa[row] = None
        else:
            d.noqa[row] = d.noqa.get(row, frozenset()) | codes
    return d


def may_suppress(source: str) -> bool:
    """Whether ``source`` holds text a suppression comment is made of. Exact, and cheap
    next to :func:`scan`: a comment runs from its ``#`` to the end of its line, so a pattern
    found in a comment is found in the text (tokenizing a whole script to learn that it has
    no ``# noqa`` is not)."""
    return bool(NOQA.search(source) or FILE_NOQA.search(source) or SKIP_FILE.search(source))


def is_skipped(source: str) -> bool:
    """Whether ``source`` holds ``# loopcheck: skip-file`` or a bare ``# loopcheck: noqa``
    (a cheap test first)."""
    return bool(SKIP_FILE.search(source) or FILE_NOQA.search(source)) and scan(source).skip_file


def has_skip_file(source: str) -> bool:
    """Whether a comment of ``source`` is ``# loopcheck: skip-file`` (which ``--ignore-noqa``
    still honours: it is no suppression comment but a request not to check the file)."""
    return bool(SKIP_FILE.search(source)) and any(SKIP_FILE.search(text) for _, text in comments(source))


def filter_findings(findings: Iterable[Finding], source: str) -> list[Finding]:
    """The findings no suppression comment of ``source`` covers."""
    findings = list(findings)
    if not findings or not may_suppress(source):
        return findings
    directives = scan(source)
    return [f for f in findings if not directives.suppresses(f)]


# --- LC002 unused-noqa ---------------------------------------------------------------


def _noqa_comments(source: str) -> Iterator[tuple[int, int, str]]:
    """``(row, column, text)`` of each comment holding ``# noqa: CODES`` (0-based column)."""
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(source).readline))
    except (tokenize.TokenError, SyntaxError):
        return
    for tok in tokens:
        if tok.type == tokenize.COMMENT and "noqa" in tok.string.lower():
            yield tok.start[0], tok.start[1], tok.string


def _may_name_our_codes(source: str) -> bool:
    """Whether a ``# noqa: ...`` in the text of ``source`` names an ``LC`` code. When none
    does, no comment does, and the file need not be tokenized (``# noqa: E501`` alone is
    common): the ``#`` of a comment's directive starts a match in the text too, with at least
    the comment's codes (a match ends before the next ``#``)."""
    for m in NOQA.finditer(source):
        if any(code.upper().startswith("LC") for code in re.split(r"[,\s]+", m.group("codes") or "")):
            return True
    return False


def _remove_codes(comment: str, unused: set[str]) -> str:
    """The comment text without the ``unused`` codes of its ``# noqa: ...`` (``""`` when it
    was only a ``# noqa`` whose codes are all unused)."""
    def sub(m: re.Match) -> str:
        if m.group("codes") is None:
            return m.group(0)
        kept = [c for c in re.split(r"[,\s]+", m.group("codes")) if c and c.upper() not in unused]
        return f"# noqa: {', '.join(kept)}" if kept else ""

    text = NOQA.sub(sub, comment).rstrip()
    return "" if text in ("", "#") else text


def unused_noqa(findings: Iterable[Finding], source: str, filename: str,
                selected: Collection[str] | None = None) -> list[Finding]:
    """LC002 findings: ``# noqa: LC...`` codes that suppress nothing on their row.

    Args:
        findings: every finding of ``source`` before ``# noqa`` filtering.
        source: the checked program.
        filename: the name the findings carry.
        selected: the codes enabled for the file (``None``: all); a code that is not enabled
            is reported as ``non-enabled``, an ``LC`` code no rule has as ``unknown``.

    Returns:
        One LC002 finding per such comment, on the ``# noqa`` text, with a safe fix that
        removes the unused codes (the comment, and the spaces before it, when none is left).
    """
    from loopcheck.fixes.model import SAFE, Edit, Fix
    from loopcheck.catalog import INFOS

    if "noqa" not in source.lower() or (selected is not None and UNUSED_NOQA not in selected):
        return []
    if not _may_name_our_codes(source):
        return []
    used: dict[int, set[str]] = {}
    for f in findings:
        used.setdefault(f.noqa_row if f.noqa_row is not None else f.row, set()).add(f.code)
    lines = source.splitlines()
    out: list[Finding] = []
    for row, col, text in _noqa_comments(source):
        kinds: dict[str, list[str]] = {"unused": [], "non-enabled": [], "unknown": []}
        for m in NOQA.finditer(text):
            for code in re.split(r"[,\s]+", m.group("codes") or ""):
                code = code.upper()
                if not code.startswith("LC") or code == UNUSED_NOQA or code in used.get(row, ()):
                    continue
                if code not in INFOS:
                    kinds["unknown"].append(code)
                elif selected is not None and code not in selected:
                    kinds["non-enabled"].append(code)
                else:
                    kinds["unused"].append(code)
        found = [(kind, codes) for kind, codes in kinds.items() if codes]
        if not found:
            continue
        m = NOQA.search(text)
        start, end = col + m.start(), col + m.end()
        detail = "; ".join(f"{kind}: {', '.join(f'`{c}`' for c in codes)}" for kind, codes in found)
        new_comment = _remove_codes(text, {c for _, codes in found for c in codes})
        line = lines[row - 1] if row <= len(lines) else ""
        if new_comment:
            edit = Edit(new_comment, row, col + 1, row, col + len(text) + 1)
        else:  # drop the comment and the blanks before it
            cut = len(line[:col].rstrip())
            edit = Edit("", row, cut + 1, row, col + len(text) + 1)
        finding = Finding(UNUSED_NOQA, f"Unused `noqa` directive ({detail})", filename,
                          row, start + 1, row, end + 1, [], row)
        finding.fix = Fix(SAFE, "Remove unused `noqa` directive", (edit,))
        out.append(finding)
    return out


def apply_noqa(findings: Iterable[Finding], source: str, filename: str,
               selected: Collection[str] | None = None) -> list[Finding]:
    """The findings no suppression comment covers, plus the LC002 findings of unused
    ``# noqa`` codes (:func:`unused_noqa`, themselves subject to ``# noqa``), sorted."""
    findings = list(findings)
    extra = unused_noqa(findings, source, filename, selected)
    if not extra:
        return filter_findings(findings, source)
    kept = filter_findings(findings + extra, source)
    return sorted(kept, key=lambda f: f.sort_key)


def remove_unused_noqa(source: str, filename: str, selected: Collection[str] | None = None) -> tuple[str, int]:
    """``source`` with the fixes of its LC002 findings applied (``--fix``; checked here with
    the ``selected`` codes), and how many were applied."""
    if "noqa" not in source.lower() or (selected is not None and UNUSED_NOQA not in selected):
        return source, 0
    from loopcheck.analysis import check_source
    from loopcheck.fixes.model import apply_edits

    directives = scan(source)
    fixes = [f for f in unused_noqa(check_source(source, filename, selected), source, filename, selected)
             if not directives.suppresses(f)]
    if not fixes:
        return source, 0
    return apply_edits(source, [e for f in fixes for e in f.fix.edits]), len(fixes)
