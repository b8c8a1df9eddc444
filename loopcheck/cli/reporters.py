"""Output formats, as ruff (0.17) names and prints them (``--output-format``).

- ``full``: ``CODE [*] message``, `` --> path:line:col``, the source lines with carets under
  the span and the related lines with their notes (a related line of another file under its
  own ``::: path:line:col``), then ``help:`` with the fix's title and its diff, and ``note:``
  lines (the finding's explanation; "This is an unsafe fix ..." for an unsafe fix);
- ``concise`` (alias ``text``): ``path:line:col: CODE [*] message`` lines and a summary;
- ``json``: a list of ruff's JSON objects (``cell``, ``code``, ``end_location``, ``filename``,
  ``fix``, ``location``, ``message``, ``name``, ``noqa_row``, ``severity``, ``url``) plus
  loopcheck's ``note`` and ``related``; keys sorted as ruff prints them;
- ``json-lines``: the same objects, one per line;
- ``sarif``: a SARIF 2.1.0 log (GitHub code scanning, IDEs);
- ``github``: GitHub Actions workflow commands, shown as annotations on the pull request;
- ``gitlab``: a GitLab Code Quality report; ``junit``: JUnit XML; ``rdjson``: reviewdog's
  diagnostic format; ``azure``: Azure Pipelines logging commands; ``pylint``: ``path:row:
  [CODE] message`` lines; ``grouped``: the findings under each file's name, and a summary.

``[*]`` marks a finding whose fix ``--fix`` applies in this run (safe fixes; unsafe ones too
with ``--unsafe-fixes``). Severity shows in colour: errors red, warnings yellow; the summary
counts them apart (``Found 3 errors, 1 warning.``).

Findings in notebooks are placed in cells: ``path:cell N:line:col`` in text, ``"cell": N``
and rows within the cell in JSON (as ruff does). ``github`` and ``sarif`` annotate the
``.ipynb`` file itself, whose lines are JSON, not code: as ruff does, they point at its first
line and give the cell position in the message (and in SARIF's ``properties``).
"""

from __future__ import annotations

import difflib
import json
import os
import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Callable, TextIO
from urllib.parse import quote

import click

from loopcheck import __version__
from loopcheck.catalog import REPOSITORY_URL
from loopcheck.findings import Finding

if TYPE_CHECKING:
    from loopcheck.check import SourceFile
    from loopcheck.workspace.notebook import Notebook

INFORMATION_URI = REPOSITORY_URL  # SARIF's tool.driver.informationUri
SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
UNSAFE_NOTE = "This is an unsafe fix and may change runtime behavior"
_LINE_BREAK = re.compile(r"\r\n|\r|\n")


def display_name(filename: str) -> str:
    """``filename`` as text every output format can carry. A name that is not valid UTF-8
    (the OS gives its bad bytes as lone surrogates) shows those bytes as ``\\xNN``."""
    try:
        filename.encode("utf-8")
        return filename
    except UnicodeEncodeError:
        try:
            return os.fsencode(filename).decode("utf-8", "backslashreplace")
        except UnicodeEncodeError:
            return filename.encode("utf-8", "backslashreplace").decode("utf-8")


def _uri_path(path: str) -> str:
    """A path percent-encoded for a URI from its bytes (a name that is not UTF-8 included)."""
    try:
        return quote(os.fsencode(path))
    except UnicodeEncodeError:
        return quote(path.encode("utf-8", "backslashreplace"))


def _infos():
    from loopcheck.catalog import INFOS

    return INFOS


def severity_of(code: str) -> str:
    """``"error"`` or ``"warning"``: the rule's severity (unknown codes are errors)."""
    info = _infos().get(code)
    return info.severity if info else "error"


@dataclass
class Context:
    """What the writers know beyond the findings.

    Attributes:
        sources: the checked files by filename (needed by ``full`` and for notebooks).
        color: colour the text formats (ANSI escapes).
        quiet: leave out the summary line.
        fixed: how many findings ``--fix`` fixed (shown in the summary, as ruff does).
        fixed_warnings: how many of those were of rules of severity warning.
        unsafe_fixes: unsafe fixes count as applicable (``--unsafe-fixes``).
    """

    sources: dict[str, SourceFile] = field(default_factory=dict)
    color: bool = False
    quiet: bool = False
    fixed: int = 0
    unsafe_fixes: bool = False
    fixed_warnings: int = 0
    _other: dict[str, list[str] | None] = field(default_factory=dict, repr=False)

    def applicable(self, f: Finding) -> bool:
        """Whether ``--fix`` applies ``f``'s fix in this run (``[*]``)."""
        return f.fix is not None and (self.unsafe_fixes or f.fix.is_safe)

    def lines_of(self, filename: str) -> list[str] | None:
        """The lines of a file a related line points into: a checked file's, else read from
        disk (once; ``None`` when it cannot be read)."""
        src = self.sources.get(filename)
        if src is not None and src.notebook is None:
            return src.lines
        if filename not in self._other:
            try:
                self._other[filename] = _LINE_BREAK.split(Path(filename).read_text(encoding="utf-8", errors="replace"))
            except OSError:
                self._other[filename] = None
        return self._other[filename]


@dataclass
class Place:
    """A position as shown: ``cell`` is ``None`` outside notebooks."""

    cell: int | None
    row: int
    column: int


@dataclass
class RelatedView:
    """A related line as shown: its file (the finding's own when the rule gave none)."""

    filename: str
    place: Place
    message: str
    other_file: bool


@dataclass
class View:
    """A finding with its positions and message as shown (rows within the cell in notebooks)."""

    finding: Finding
    message: str
    start: Place
    end: Place
    noqa_row: int | None
    related: list[RelatedView]

    @property
    def code(self) -> str:
        return self.finding.code

    @property
    def filename(self) -> str:
        return display_name(self.finding.filename)

    @property
    def severity(self) -> str:
        return severity_of(self.code)

    @property
    def prefix(self) -> str:
        """``path:line:col`` or ``path:cell N:line:col``."""
        cell = f"cell {self.start.cell}:" if self.start.cell is not None else ""
        return f"{self.filename}:{cell}{self.start.row}:{self.start.column}"


def _notebook(f: Finding, ctx: Context | None) -> Notebook | None:
    src = ctx.sources.get(f.filename) if ctx else None
    return src.notebook if src else None


def view(f: Finding, ctx: Context | None = None) -> View:
    """How ``f`` is shown: rows and ``line N`` references moved into cells for notebooks."""
    nb = _notebook(f, ctx)

    def related(place) -> list[RelatedView]:
        out = []
        for r in f.related:
            other = r.filename is not None and r.filename != f.filename
            if other:
                out.append(RelatedView(r.filename, Place(None, r.row, r.column), r.message, True))
            else:
                out.append(RelatedView(f.filename, place(r.row, r.column), nb.relabel(r.message) if nb else r.message,
                                       False))
        return out

    if nb is None:
        return View(
            f, f.message, Place(None, f.row, f.column), Place(None, f.end_row, f.end_column),
            f.noqa_row, related(lambda row, column: Place(None, row, column)),
        )

    def place(row: int, column: int) -> Place:
        cell, r = nb.locate(row)
        return Place(cell, r, column)

    noqa = nb.locate(f.noqa_row)[1] if f.noqa_row is not None else None
    return View(
        f, nb.relabel(f.message), place(f.row, f.column), place(f.end_row, f.end_column), noqa, related(place),
    )


# --- summary -------------------------------------------------------------------------


def _plural(n: int, word: str, plural: str | None = None) -> str:
    return f"{n} {word if n == 1 else plural or word + 's'}"


def _counts(errors: int, warnings: int) -> str:
    """``3 errors, 1 warning``; ``3 errors`` and ``1 warning`` alone; ``0 errors`` for none."""
    parts = [_plural(errors, "error")] if errors or not warnings else []
    if warnings:
        parts.append(_plural(warnings, "warning"))
    return ", ".join(parts)


def fix_summary(findings: list[Finding], ctx: Context) -> str | None:
    """ruff's line about fixes: ``[*] N fixable with `--fix`.``, with the unsafe fixes that
    ``--unsafe-fixes`` would add, or ``N unsafe fixes available with `--fix --unsafe-fixes`.``;
    ``None`` when no finding has a fix."""
    fixable = sum(1 for f in findings if ctx.applicable(f))
    hidden = sum(1 for f in findings if f.fix is not None and not ctx.applicable(f))
    hidden_text = f"{_plural(hidden, 'unsafe fix', 'unsafe fixes')} available with `--fix --unsafe-fixes`"
    if fixable:
        return f"[*] {fixable} fixable with `--fix`" + (f" ({hidden_text})." if hidden else ".")
    if hidden:
        return hidden_text + "."
    return None


def summary_lines(findings: list[Finding], ctx: Context) -> list[str]:
    """``Found 3 errors, 1 warning.`` (``(M fixed, K remaining)`` after ``--fix``), ``All checks
    passed!``, and the fix line (:func:`fix_summary`), as ruff prints them. Errors and
    warnings are counted apart; with errors only the line is ruff's ``Found N errors.``."""
    warnings = sum(1 for f in findings if severity_of(f.code) == "warning")
    errors = len(findings) - warnings
    lines = []
    if ctx.fixed:
        total = _counts(errors + ctx.fixed - ctx.fixed_warnings, warnings + ctx.fixed_warnings)
        lines.append(f"Found {total} ({ctx.fixed} fixed, {len(findings)} remaining).")
    elif findings:
        lines.append(f"Found {_counts(errors, warnings)}.")
    else:
        lines.append("All checks passed!")
    fixes = fix_summary(findings, ctx)
    if fixes:
        lines.append(fixes)
    return lines


def _summary(findings: list[Finding], out: TextIO, ctx: Context) -> None:
    if not ctx.quiet:
        for line in summary_lines(findings, ctx):
            out.write(line + "\n")


# --- styles --------------------------------------------------------------------------


def _style(ctx: Context, text: str, **kw) -> str:
    return click.style(text, **kw) if ctx.color and text else text


def _severity_colour(severity: str) -> str:
    return "yellow" if severity == "warning" else "bright_red"


def _code(ctx: Context, v: View) -> str:
    return _style(ctx, v.code, fg=_severity_colour(v.severity), bold=True)


def _mark(ctx: Context, f: Finding) -> str:
    """`` [*]`` after the code of a finding ``--fix`` fixes in this run."""
    if not ctx.applicable(f):
        return ""
    return " [" + _style(ctx, "*", fg="bright_cyan", bold=True) + "]"


def _location(ctx: Context, v: View) -> str:
    if not ctx.color:
        return v.prefix
    colon = _style(ctx, ":", fg="cyan")
    cell = [_style(ctx, f"cell {v.start.cell}")] if v.start.cell is not None else []
    return colon.join([_style(ctx, v.filename, bold=True), *cell, str(v.start.row), str(v.start.column)])


def _header(v: View, ctx: Context) -> str:
    """The concise line: ``path:line:col: CODE [*] message``."""
    colon = _style(ctx, ":", fg="cyan")
    return f"{_location(ctx, v)}{colon} {_code(ctx, v)}{_mark(ctx, v.finding)} {v.message}"


# --- concise -------------------------------------------------------------------------


def write_concise(findings: list[Finding], out: TextIO, ctx: Context | None = None) -> None:
    """``path:line:col: CODE [*] message`` per finding, then a summary."""
    ctx = ctx or Context()
    for f in findings:
        out.write(_header(view(f, ctx), ctx) + "\n")
    _summary(findings, out, ctx)


write_text = write_concise


# --- full ----------------------------------------------------------------------------


def _width(line: str, upto: int) -> int:
    """Display width of ``line``'s first ``upto`` characters (tabs expanded)."""
    return len(line[:upto].expandtabs())


@dataclass
class _Mark:
    column: int  # display column, 0-based
    length: int
    label: str
    primary: bool


def _render_block(ctx: Context, rows: list[int], text: Callable[[int], str | None], label: Callable[[int], str],
                  marks: dict[int, list[_Mark]], severity: str, width: int, same_group) -> list[str]:
    """Source rows with a gutter, the marks under their rows, ``...`` between distant rows."""
    shown: list[int] = []
    for row in sorted(rows):
        if shown and row - shown[-1] <= 3 and same_group(row, shown[-1]):
            shown.extend(range(shown[-1] + 1, row))
        elif shown:
            shown.append(-1)
        shown.append(row)
    bar = _style(ctx, "|", fg="bright_blue", bold=True)
    out = [f"{'':>{width}} {bar}"]
    for row in shown:
        if row < 0:
            out.append(_style(ctx, "...", fg="bright_blue", bold=True))
            continue
        gutter = _style(ctx, f"{label(row):>{width}}", fg="bright_blue", bold=True)
        out.append(f"{gutter} {bar} {(text(row) or '').expandtabs()}".rstrip())
        for m in sorted(marks.get(row, []), key=lambda m: (not m.primary, m.column)):
            if m.primary:
                styled = _style(ctx, "^" * m.length + (f" {m.label}" if m.label else ""),
                                fg=_severity_colour(severity), bold=True)
            else:
                styled = _style(ctx, "-" * m.length + (f" {m.label}" if m.label else ""), fg="bright_blue", bold=True)
            out.append(f"{'':>{width}} {bar} {' ' * m.column}{styled}")
    out.append(f"{'':>{width}} {bar}")
    return out


def snippet(f: Finding, ctx: Context) -> list[str]:
    """The source lines of a finding: `` --> path:line:col``, the flagged span under carets,
    the related lines under dashes with their notes (rows far apart separated by ``...``),
    and each other file's related lines under ``::: path:line:col``."""
    src = ctx.sources.get(f.filename)
    v = view(f, ctx)
    arrow_at = f"{v.filename}:{'cell ' + str(v.start.cell) + ':' if v.start.cell is not None else ''}{v.start.row}:{v.start.column}"
    lines = src.lines if src is not None else ctx.lines_of(f.filename) or []
    nb = src.notebook if src is not None else None

    def text(row: int) -> str | None:
        return lines[row - 1].rstrip("\r\n") if 1 <= row <= len(lines) else None

    def cell_of(row: int) -> int | None:
        return nb.locate(row)[0] if nb else None

    main_cell = cell_of(f.row)

    def label(row: int) -> str:
        if nb is None:
            return str(row)
        cell, r = nb.locate(row)
        return str(r) if cell == main_cell else f"cell {cell}:{r}"

    marks: dict[int, list[_Mark]] = {}
    main = text(f.row)
    if main is not None:
        start = _width(main, f.column - 1)
        end = _width(main, f.end_column - 1) if f.end_row == f.row else len(main.rstrip().expandtabs())
        marks.setdefault(f.row, []).append(_Mark(start, max(end - start, 1), "", True))
    others: dict[str, list[RelatedView]] = {}
    for r, rv in zip(f.related, v.related):
        if rv.other_file:
            others.setdefault(rv.filename, []).append(rv)
            continue
        line = text(r.row)
        if line is None:
            continue
        col = _width(line, r.column - 1)
        marks.setdefault(r.row, []).append(_Mark(col, max(len(line.rstrip().expandtabs()) - col, 1), rv.message, False))

    blocks: list[tuple[str | None, list[int], Callable, Callable, dict, Callable]] = []
    widths = [1]
    if marks:
        blocks.append((None, list(marks), text, label, marks, lambda a, b: cell_of(a) == cell_of(b)))
        widths += [len(label(r)) for r in marks]
    unreadable: list[str] = []
    for filename, rvs in others.items():
        other_lines = ctx.lines_of(filename) or []

        def other_text(row: int, other_lines=other_lines) -> str | None:
            return other_lines[row - 1].rstrip("\r\n") if 1 <= row <= len(other_lines) else None

        other_marks: dict[int, list[_Mark]] = {}
        for rv in rvs:
            line = other_text(rv.place.row)
            if line is None:
                continue
            col = _width(line, rv.place.column - 1)
            other_marks.setdefault(rv.place.row, []).append(
                _Mark(col, max(len(line.rstrip().expandtabs()) - col, 1), rv.message, False))
        first = rvs[0].place
        head = f"{display_name(filename)}:{first.row}:{first.column}"
        if not other_marks:  # the file cannot be read: its positions and notes only
            unreadable.append(head + "".join(f" ({rv.place.row}:{rv.place.column}: {rv.message})" for rv in rvs))
            continue
        blocks.append((head, list(other_marks), other_text, str, other_marks, lambda a, b: True))
        widths += [len(str(r)) for r in other_marks]
    width = max(widths)
    out = [f"{' ' * width}{_style(ctx, '-->', fg='bright_blue', bold=True)} {arrow_at}"]
    for head, rows, text_of, label_of, block_marks, group in blocks:
        if head is not None:
            out.append(f"{' ' * width}{_style(ctx, ':::', fg='bright_blue', bold=True)} {head}")
        out.extend(_render_block(ctx, rows, text_of, label_of, block_marks, v.severity, width, group))
    for head in unreadable:
        out.append(f"{' ' * width}{_style(ctx, ':::', fg='bright_blue', bold=True)} {head}")
    return out


def _diff_rows(old: list[str], new: list[str]) -> list[tuple[int | None, str, str]]:
    """ruff's fix diff as ``(new row or None, marker, text)``: context rows (1 line around each
    change) ``|``, removed rows ``-`` (no number), added rows ``+``; ``(None, "...", "")``
    between distant changes."""
    rows: list[tuple[int | None, str, str]] = []
    groups = list(difflib.SequenceMatcher(a=old, b=new, autojunk=False).get_grouped_opcodes(1))
    for n, group in enumerate(groups):
        if n:
            rows.append((None, "...", ""))
        for tag, i1, i2, j1, j2 in group:
            if tag == "equal":
                rows.extend((j + 1, "|", new[j]) for j in range(j1, j2))
                continue
            rows.extend((None, "-", old[i]) for i in range(i1, i2))
            rows.extend((j + 1, "+", new[j]) for j in range(j1, j2))
    return rows


def _diff_block(ctx: Context, parts: list[tuple[list[tuple[int | None, str, str]], Callable[[int], str]]]) -> list[str]:
    """Render :func:`_diff_rows` parts (each with its row labels) under one gutter."""
    width = max([len(label(r)) for rows, label in parts for r, _, _ in rows if r is not None] + [1])
    bar = _style(ctx, "|", fg="bright_blue", bold=True)
    out = [f"{'':>{width}} {bar}"]
    for n, (rows, label) in enumerate(parts):
        if n:
            out.append(_style(ctx, "...", fg="bright_blue", bold=True))
        for row, marker, text in rows:
            gutter = _style(ctx, f"{label(row) if row is not None else '':>{width}}", fg="bright_blue", bold=True)
            if marker == "...":
                out.append(_style(ctx, "...", fg="bright_blue", bold=True))
            elif marker == "|":
                out.append(f"{gutter} {bar} {text.expandtabs()}".rstrip())
            else:
                colour = "red" if marker == "-" else "green"
                out.append(f"{gutter} {_style(ctx, marker, fg=colour, bold=True)} "
                           f"{_style(ctx, text.expandtabs(), fg=colour)}".rstrip())
    out.append(f"{'':>{width}} {bar}")
    return out


def _lines(text: str) -> list[str]:
    lines = _LINE_BREAK.split(text)
    if lines and lines[-1] == "":
        lines.pop()
    return lines


def fix_diff(f: Finding, ctx: Context) -> list[str]:
    """The fix of ``f`` as a diff of the lines it changes (1 line of context, rows of the
    fixed file, as ruff shows them), ``[]`` when it cannot be shown. In notebooks each
    changed cell is shown with rows within the cell (``cell N:row`` for another cell)."""
    src = ctx.sources.get(f.filename)
    if f.fix is None or src is None:
        return []
    try:
        new_program = f.fix.apply(src.text)
    except (ValueError, IndexError):
        return []
    if src.notebook is None:
        rows = _diff_rows(_lines(src.text), _lines(new_program))
        return _diff_block(ctx, [(rows, str)]) if rows else []
    nb = src.notebook
    changes = nb.changed_cells(new_program)
    if not changes:
        return []
    main_cell = nb.locate(f.row)[0]
    parts = [
        (_diff_rows(old, new), str if cell == main_cell else (lambda r, c=cell: f"cell {c}:{r}"))
        for cell, (old, new) in sorted(changes.items())
    ]
    return _diff_block(ctx, parts)


def _note(ctx: Context, kind: str, text: str) -> list[str]:
    head = _style(ctx, kind, fg="bright_cyan" if kind == "help" else None, bold=True)
    first, *rest = text.splitlines() or [""]
    return [f"{head}{_style(ctx, ': ' + first, bold=True) if kind == 'help' else ': ' + first}",
            *(f"{' ' * (len(kind) + 2)}{line}".rstrip() for line in rest)]


def write_full(findings: list[Finding], out: TextIO, ctx: Context | None = None) -> None:
    """Each finding as ruff's ``full`` format shows one: ``CODE [*] message``, the source
    snippet, ``help:`` with the fix title and its diff, ``note:`` lines; a blank line after
    each; then the summary."""
    ctx = ctx or Context()
    for f in findings:
        v = view(f, ctx)
        out.write(f"{_code(ctx, v)}{_mark(ctx, f)} {_style(ctx, v.message, bold=True)}\n")
        lines = snippet(f, ctx)
        if f.fix is not None:
            lines += _note(ctx, "help", f.fix.message)
            lines += fix_diff(f, ctx)
            if not f.fix.is_safe:
                lines += _note(ctx, "note", UNSAFE_NOTE)
        if f.note:
            lines += _note(ctx, "note", nb_relabel(f, ctx, f.note))
        out.write("\n".join(lines) + "\n\n")
    _summary(findings, out, ctx)


def nb_relabel(f: Finding, ctx: Context, text: str) -> str:
    """``text`` with ``line N`` made ``line R of cell C`` when ``f`` is in a notebook."""
    nb = _notebook(f, ctx)
    return nb.relabel(text) if nb is not None else text


# --- JSON ----------------------------------------------------------------------------


def display_filename(filename: str) -> str:
    """A file name as ruff's JSON gives it: absolute (``-`` for unnamed standard input)."""
    return display_name(filename if filename == "-" else os.path.abspath(filename))


def _fix_json(f: Finding, ctx: Context | None, cell: int | None) -> dict | None:
    if f.fix is None:
        return None
    if cell is None:
        return f.fix.to_json()
    nb = _notebook(f, ctx)
    src = ctx.sources.get(f.filename) if ctx else None
    return nb.fix_to_json(f.fix, src.text, cell) if nb is not None and src is not None else None


def to_json_obj(f: Finding, ctx: Context | None = None) -> dict:
    """One finding as ruff's JSON object, plus ``note`` and ``related``.

    ``filename`` is absolute; ``cell`` is ``null`` outside notebooks, and in notebooks rows
    (of ``location``, ``end_location``, ``related`` and the fix's edits) count from the start
    of that cell; each ``related`` entry has its own ``filename`` and ``cell``.
    """
    v = view(f, ctx)
    info = _infos().get(f.code)
    return {
        "cell": v.start.cell,
        "code": f.code,
        "end_location": {"column": v.end.column, "row": v.end.row},
        "filename": display_filename(f.filename),
        "fix": _fix_json(f, ctx, v.start.cell),
        "location": {"column": v.start.column, "row": v.start.row},
        "message": v.message,
        "name": info.name if info else None,
        "noqa_row": v.noqa_row,
        "note": nb_relabel(f, ctx, f.note) if f.note is not None and ctx else f.note,
        "related": [
            {"cell": r.place.cell, "column": r.place.column, "filename": display_filename(r.filename),
             "message": r.message, "row": r.place.row}
            for r in v.related
        ],
        "severity": v.severity,
        "url": info.url if info else None,
    }


def write_json(findings: list[Finding], out: TextIO, ctx: Context | None = None) -> None:
    """A JSON list of findings (keys sorted, 2-space indent, as ruff prints it)."""
    json.dump([to_json_obj(f, ctx) for f in findings], out, indent=2, sort_keys=True)
    out.write("\n")


def write_json_lines(findings: list[Finding], out: TextIO, ctx: Context | None = None) -> None:
    """One JSON object per line."""
    for f in findings:
        out.write(json.dumps(to_json_obj(f, ctx), sort_keys=True) + "\n")


# --- SARIF ---------------------------------------------------------------------------


def _level(severity: str) -> str:
    return "warning" if severity == "warning" else "error"


def sarif_rules() -> list[dict]:
    """``tool.driver.rules``: every rule's metadata, sorted by code."""
    infos = _infos()
    return [
        {
            "id": i.code,
            "name": i.name,
            "shortDescription": {"text": i.summary},
            "helpUri": i.url,
            "defaultConfiguration": {"level": _level(i.severity)},
            "properties": {"severity": i.severity},
        }
        for i in (infos[c] for c in sorted(infos))
    ]


def _artifact(filename: str) -> dict:
    """An absolute ``file://`` URI, as ruff writes it: right whatever directory the job that
    reads the log runs in (a CI step with ``working-directory:``)."""
    return {"uri": "file://" + _uri_path(Path(os.path.abspath(filename)).as_posix())}


def _sarif_location(filename: str, place: Place, end: Place | None = None) -> dict:
    """A physical location; a place in a notebook cell goes on the ``.ipynb`` file's first
    line (its lines are JSON), with the cell position in ``properties``."""
    if place.cell is not None:
        region = {"startLine": 1, "startColumn": 1}
        loc = {"physicalLocation": {"artifactLocation": _artifact(filename), "region": region},
               "properties": {"cell": place.cell, "row": place.row, "column": place.column}}
        return loc
    region = {"startLine": place.row, "startColumn": place.column}
    if end is not None:
        region.update(endLine=end.row, endColumn=end.column)
    return {"physicalLocation": {"artifactLocation": _artifact(filename), "region": region}}


def to_sarif(findings: list[Finding], ctx: Context | None = None) -> dict:
    """The SARIF 2.1.0 log of one run."""
    index = {c: n for n, c in enumerate(sorted(_infos()))}
    results = []
    for f in findings:
        v = view(f, ctx)
        text = v.message if v.start.cell is None else f"cell {v.start.cell}:{v.start.row}:{v.start.column}: {v.message}"
        result = {
            "ruleId": f.code,
            "level": _level(v.severity),
            "message": {"text": text},
            "locations": [_sarif_location(f.filename, v.start, v.end)],
        }
        if f.code in index:
            result["ruleIndex"] = index[f.code]
        if v.related:
            result["relatedLocations"] = [
                {"id": n, **_sarif_location(r.filename, r.place), "message": {"text": r.message}}
                for n, r in enumerate(v.related)
            ]
        results.append(result)
    return {
        "$schema": SARIF_SCHEMA,
        "version": "2.1.0",
        "runs": [
            {
                "tool": {
                    "driver": {
                        "name": "loopcheck",
                        "version": __version__,
                        "informationUri": INFORMATION_URI,
                        "rules": sarif_rules(),
                    }
                },
                "originalUriBaseIds": {"%SRCROOT%": {"uri": Path(os.getcwd()).as_uri().rstrip("/") + "/"}},
                "results": results,
            }
        ],
    }


def write_sarif(findings: list[Finding], out: TextIO, ctx: Context | None = None) -> None:
    """A SARIF 2.1.0 log."""
    json.dump(to_sarif(findings, ctx), out, indent=2)
    out.write("\n")


# --- GitHub Actions ------------------------------------------------------------------


def _gh_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _gh_property(text: str) -> str:
    return _gh_data(text).replace(":", "%3A").replace(",", "%2C")


def write_github(findings: list[Finding], out: TextIO, ctx: Context | None = None) -> None:
    """``::error title=loopcheck (CODE),file=...,line=...,col=...,endLine=...,endColumn=...::path:line:col:
    CODE message`` per finding (``::warning`` for warning rules), the fix title on a ``help:``
    line, as ruff prints them: ``file=`` is absolute (GitHub maps it to the repository, also
    from a step with ``working-directory:``), the message's path as given. A notebook finding annotates line 1 of the ``.ipynb`` file and
    its message starts with ``path:cell N:line:col:``."""
    for f in findings:
        v = view(f, ctx)
        if v.start.cell is None:
            span = (v.start.row, v.start.column, v.end.row, v.end.column)
        else:
            span = (1, 1, 1, 1)
        props = ",".join([
            f"title={_gh_property(f'loopcheck ({f.code})')}",
            f"file={_gh_property(display_filename(f.filename))}",
            f"line={span[0]}", f"col={span[1]}", f"endLine={span[2]}", f"endColumn={span[3]}",
        ])
        text = f"{v.prefix}: {f.code} {v.message}"
        if f.fix is not None:
            text += f"\n  help: {f.fix.message}"
        out.write(f"::{_level(v.severity)} {props}::{_gh_data(text)}\n")


# --- paths as the text formats show them ------------------------------------------


def relative_name(filename: str) -> str:
    """``filename`` relative to the current directory when it is inside it (ruff's
    ``relativize_path``), else as given; ``-`` (standard input) unchanged."""
    if filename == "-" or not os.path.isabs(filename):
        return display_name(filename)
    cwd = os.getcwd()
    try:
        inside = os.path.commonpath([cwd, filename]) == cwd
    except ValueError:  # another drive on Windows
        inside = False
    return display_name(os.path.relpath(filename, cwd) if inside else filename)


def _by_file(findings: list[Finding]) -> dict[str, list[Finding]]:
    """The findings grouped by file, files in the order of their first finding."""
    groups: dict[str, list[Finding]] = {}
    for f in findings:
        groups.setdefault(f.filename, []).append(f)
    return groups


def _cell_text(v: View) -> str:
    """``cell N:row:col: `` for a finding in a notebook (formats that point at the ``.ipynb``
    file's first line say where in the notebook in their message), else ``""``."""
    return f"cell {v.start.cell}:{v.start.row}:{v.start.column}: " if v.start.cell is not None else ""


# --- grouped -------------------------------------------------------------------------


def write_grouped(findings: list[Finding], out: TextIO, ctx: Context | None = None) -> None:
    """ruff's ``grouped``: each file's name and a colon, then ``  row:col CODE [*] message`` per
    finding (rows right-aligned, columns padded to the widest of the file; ``cell N:row:col``
    in notebooks), a blank line after each file, then the summary."""
    ctx = ctx or Context()
    for filename, group in _by_file(findings).items():
        views = [view(f, ctx) for f in group]
        row_width = max(len(str(v.start.row)) for v in views)
        col_width = max(len(str(v.start.column)) for v in views)
        out.write(_style(ctx, relative_name(filename), underline=True) + ":\n")
        colon = _style(ctx, ":", fg="cyan")
        for v in views:
            cell = f"cell {v.start.cell}{colon}" if v.start.cell is not None else ""
            pad = " " * (col_width - len(str(v.start.column)))
            indent = " " * (2 + row_width - len(str(v.start.row)))
            out.write(f"{indent}{cell}{v.start.row}{colon}{v.start.column}{pad} "
                      f"{_code(ctx, v)}{_mark(ctx, v.finding)} {v.message}\n")
        out.write("\n")
    _summary(findings, out, ctx)


# --- pylint --------------------------------------------------------------------------


def write_pylint(findings: list[Finding], out: TextIO, ctx: Context | None = None) -> None:
    """ruff's ``pylint``: ``path:row: [CODE] message`` per finding (row 1 of a notebook, the
    cell position in the message)."""
    for f in findings:
        v = view(f, ctx)
        row = 1 if v.start.cell is not None else v.start.row
        out.write(f"{relative_name(f.filename)}:{row}: [{f.code}] {_cell_text(v)}{v.message}\n")


# --- Azure Pipelines -----------------------------------------------------------------


def _azure_data(text: str) -> str:
    """Text escaped for an Azure Pipelines logging command's message."""
    return text.replace("%", "%AZP25").replace("\r", "%0D").replace("\n", "%0A")


def _azure_property(text: str) -> str:
    """Text escaped for a logging command's property value."""
    return _azure_data(text).replace(";", "%3B").replace("]", "%5D")


def write_azure(findings: list[Finding], out: TextIO, ctx: Context | None = None) -> None:
    """ruff's ``azure``: ``##vso[task.logissue type=error;sourcepath=PATH;linenumber=R;
    columnnumber=C;code=CODE;]message`` per finding (``type=warning`` for warning rules; the
    path absolute; line 1 of a notebook, the cell position in the message)."""
    for f in findings:
        v = view(f, ctx)
        row, col = (1, 1) if v.start.cell is not None else (v.start.row, v.start.column)
        props = (f"type={_level(v.severity)};sourcepath={_azure_property(display_filename(f.filename))};"
                 f"linenumber={row};columnnumber={col};code={f.code};")
        out.write(f"##vso[task.logissue {props}]{_azure_data(_cell_text(v) + v.message)}\n")


# --- GitLab Code Quality -------------------------------------------------------------


def gitlab_path(filename: str) -> str:
    """The path GitLab's report needs: relative to ``$CI_PROJECT_DIR`` when set (as ruff), else
    to the current directory."""
    root = os.environ.get("CI_PROJECT_DIR") or os.getcwd()
    absolute = os.path.abspath(filename)
    try:
        rel = os.path.relpath(absolute, root)
    except ValueError:  # another drive on Windows
        rel = absolute
    return display_name(Path(rel).as_posix())


def to_gitlab(findings: list[Finding], ctx: Context | None = None) -> list[dict]:
    """The GitLab Code Quality report: one issue per finding with ``check_name`` (the code),
    ``description`` (``CODE: message``: GitLab shows no other field), ``fingerprint``,
    ``severity`` (``major`` for error rules, ``minor`` for warning rules) and
    ``location.path``/``location.lines.begin``/``end``.

    The fingerprint is the SHA-256 of the code, the path and the flagged line's text (so it
    stays when lines move above it), made unique within the report by a count, as ruff makes
    its own unique."""
    import hashlib

    seen: set[str] = set()
    issues = []
    for f in findings:
        v = view(f, ctx)
        path = gitlab_path(f.filename)
        lines = ctx.lines_of(f.filename) if ctx is not None else None
        src = ctx.sources.get(f.filename) if ctx is not None else None
        if src is not None:
            lines = src.lines
        text = lines[f.row - 1].strip() if lines and 1 <= f.row <= len(lines) else ""
        salt = 0
        while True:
            key = "\0".join([f.code, path, text, str(salt)])
            fingerprint = hashlib.sha256(key.encode("utf-8", "backslashreplace")).hexdigest()[:32]
            if fingerprint not in seen:
                break
            salt += 1
        seen.add(fingerprint)
        begin, end = (1, 1) if v.start.cell is not None else (v.start.row, v.end.row)
        issues.append({
            "check_name": f.code,
            "description": f"{f.code}: {_cell_text(v)}{v.message}",
            "fingerprint": fingerprint,
            "location": {"lines": {"begin": begin, "end": end}, "path": path},
            "severity": "minor" if v.severity == "warning" else "major",
        })
    return issues


def write_gitlab(findings: list[Finding], out: TextIO, ctx: Context | None = None) -> None:
    """The GitLab Code Quality report (:func:`to_gitlab`), a JSON list, keys sorted."""
    json.dump(to_gitlab(findings, ctx), out, indent=2, sort_keys=True)
    out.write("\n")


# --- rdjson (reviewdog) --------------------------------------------------------------


def _rd_range(row: int, column: int, end_row: int, end_column: int) -> dict:
    return {"end": {"column": end_column, "line": end_row}, "start": {"column": column, "line": row}}


def to_rdjson(findings: list[Finding], ctx: Context | None = None) -> dict:
    """reviewdog's Diagnostic Format, as ruff's ``rdjson``: ``source``, ``severity`` and one
    diagnostic per finding with ``message``, ``code.value``/``code.url``, ``location.path``
    (absolute) and ``location.range``, its ``severity`` (``ERROR``/``WARNING``, the rule's),
    and ``suggestions`` (the fix's edits: ``range`` and ``text``) when it has a fix. A finding
    in a notebook points at the file's first line, the cell position in its message, with no
    suggestions (edits are rows of the cell's code, not of the file)."""
    diagnostics = []
    for f in findings:
        v = view(f, ctx)
        info = _infos().get(f.code)
        in_cell = v.start.cell is not None
        span = (1, 1, 1, 1) if in_cell else (v.start.row, v.start.column, v.end.row, v.end.column)
        item: dict = {
            "code": {"url": info.url if info else None, "value": f.code},
            "location": {"path": display_filename(f.filename), "range": _rd_range(*span)},
            "message": _cell_text(v) + v.message,
            "severity": "WARNING" if v.severity == "warning" else "ERROR",
        }
        if f.fix is not None and not in_cell:
            item["suggestions"] = [
                {"range": _rd_range(e.row, e.column, e.end_row, e.end_column), "text": e.content}
                for e in f.fix.edits
            ]
        diagnostics.append(item)
    return {
        "diagnostics": diagnostics,
        "severity": "warning",
        "source": {"name": "loopcheck", "url": INFORMATION_URI},
    }


def write_rdjson(findings: list[Finding], out: TextIO, ctx: Context | None = None) -> None:
    """The rdjson document (:func:`to_rdjson`), keys sorted, 2-space indent."""
    json.dump(to_rdjson(findings, ctx), out, indent=2, sort_keys=True)
    out.write("\n")


# --- JUnit XML -----------------------------------------------------------------------

# What XML 1.0 cannot hold, even escaped (control characters, lone surrogates, U+FFFE/U+FFFF).
_NOT_XML = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def _xml_attr(text: str) -> str:
    from xml.sax.saxutils import quoteattr

    return quoteattr(_NOT_XML.sub("\ufffd", text), {"\n": "&#10;", "\r": "&#13;", "\t": "&#9;"})


def _xml_text(text: str) -> str:
    from xml.sax.saxutils import escape

    return escape(_NOT_XML.sub("\ufffd", text))


def _classname(filename: str) -> str:
    """JUnit's ``classname`` of a file, as ruff gives it: its path without the extension."""
    path = Path(relative_name(filename))
    return (path.parent / path.stem).as_posix() if path.parent != Path(".") else path.stem


def write_junit(findings: list[Finding], out: TextIO, ctx: Context | None = None) -> None:
    """ruff's ``junit``: a ``<testsuites name="loopcheck">`` document with one ``<testsuite>``
    per file (``package="org.loopcheck"``) and one failed ``<testcase name="org.loopcheck.CODE"
    classname="path/stem" line=".." column="..">`` per finding, its ``<failure message>`` the
    finding's message and its text ``line R, col C, message``; with no finding, one passing
    test case ``No errors found``. A notebook's findings give line 1, column 1 and say the
    cell in the text."""
    w = out.write
    w('<?xml version="1.0" encoding="UTF-8"?>\n')
    n = len(findings)
    if not n:
        w('<testsuites name="loopcheck" tests="1" failures="0" errors="0">\n')
        w('    <testsuite name="loopcheck" tests="1" disabled="0" errors="0" failures="0" package="org.loopcheck">\n')
        w('        <testcase name="No errors found" classname="loopcheck"/>\n')
        w("    </testsuite>\n</testsuites>\n")
        return
    w(f'<testsuites name="loopcheck" tests="{n}" failures="{n}" errors="0">\n')
    for filename, group in _by_file(findings).items():
        k = len(group)
        w(f"    <testsuite name={_xml_attr(relative_name(filename))} tests=\"{k}\" disabled=\"0\" errors=\"0\" "
          f'failures="{k}" package="org.loopcheck">\n')
        for f in group:
            v = view(f, ctx)
            row, col = (1, 1) if v.start.cell is not None else (v.start.row, v.start.column)
            where = f"cell {v.start.cell}, " if v.start.cell is not None else ""
            w(f'        <testcase name="org.loopcheck.{f.code}" classname={_xml_attr(_classname(filename))} '
              f'line="{row}" column="{col}">\n')
            w(f"            <failure message={_xml_attr(v.message)}>"
              f"{_xml_text(f'{where}line {v.start.row}, col {v.start.column}, {v.message}')}</failure>\n")
            w("        </testcase>\n")
        w("    </testsuite>\n")
    w("</testsuites>\n")


# --- statistics ----------------------------------------------------------------------


def write_statistics(findings: list[Finding], out: TextIO, ctx: Context | None = None,
                     as_json: bool = False) -> None:
    """The number of findings per code, most frequent first, as ruff's ``--statistics``:
    ``count<TAB>code<TAB>[*] name`` (the ``[*]``/``[ ]`` fixable column when any finding
    has an applicable fix), then the summary; nothing when nothing was found. JSON: ``{code, name, count, fixable,
    fixable_count}`` per code."""
    ctx = ctx or Context()
    infos = _infos()
    counts = Counter(f.code for f in findings)
    fixable = Counter(f.code for f in findings if ctx.applicable(f))
    order = sorted(counts, key=lambda c: (-counts[c], c))
    rows = [(c, infos[c].name if c in infos else "", counts[c], fixable[c]) for c in order]
    if as_json:
        data = [{"code": c, "name": name, "count": n, "fixable": k > 0, "fixable_count": k} for c, name, n, k in rows]
        json.dump(data, out, indent=2)
        out.write("\n")
        return
    if rows:
        width = max(len(str(n)) for _, _, n, _ in rows)
        code_width = max(len(c) for c, _, _, _ in rows)
        any_fixable = any(k for *_, k in rows)
        for code, name, n, k in rows:
            column = ("[*] " if k else "[ ] ") if any_fixable else ""
            out.write(f"{n:>{width}}\t{code:<{code_width}}\t{column}{name}\n")
        _summary(findings, out, ctx)  # as ruff: nothing at all when nothing was found


Writer = Callable[[list[Finding], TextIO, "Context | None"], None]

WRITERS: dict[str, Writer] = {
    "full": write_full,
    "concise": write_concise,
    "text": write_concise,
    "json": write_json,
    "json-lines": write_json_lines,
    "sarif": write_sarif,
    "github": write_github,
    "gitlab": write_gitlab,
    "grouped": write_grouped,
    "pylint": write_pylint,
    "azure": write_azure,
    "rdjson": write_rdjson,
    "junit": write_junit,
}
