"""Output formats, as ruff names them (``--output-format``).

- ``full``: ``path:line:col: CODE message``, then the source line with a caret under the
  span and the related lines with their notes (the default on a terminal);
- ``concise`` (alias ``text``): ``path:line:col: CODE message`` lines and a summary;
- ``json``: a list of ruff's JSON objects (``code``, ``message``, ``filename``,
  ``location``, ``end_location``, ``fix``, ``url``, ``noqa_row``) plus ``related``;
- ``json-lines``: the same objects, one per line;
- ``sarif``: a SARIF 2.1.0 log (GitHub code scanning, IDEs);
- ``github``: GitHub Actions workflow commands, shown as annotations on the pull request.

Findings in notebooks are placed in cells: ``path:cell N:line:col`` in text, ``"cell": N``
and rows within the cell in JSON (as ruff does).
"""

from __future__ import annotations

import json
import os
import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, TextIO
from urllib.parse import quote

import click

from loopcheck import __version__
from loopcheck.findings import Finding
from loopcheck.notebook import Notebook
from loopcheck.rules import INFOS

INFORMATION_URI = "https://github.com/loopcheck/loopcheck"
SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
_LINE_BREAK = re.compile(r"\r\n|\r|\n")


@dataclass
class SourceFile:
    """A checked file as the reporters need it.

    Attributes:
        filename: the name findings carry.
        text: the checked program (a notebook's joined code cells).
        notebook: the cell map of a notebook, else ``None``.
    """

    filename: str
    text: str = ""
    notebook: Notebook | None = None
    _lines: list[str] | None = field(default=None, repr=False)

    @property
    def lines(self) -> list[str]:
        """The text to show for each row (1-based row → index ``row - 1``)."""
        if self._lines is None:
            if self.notebook is not None:
                self._lines = self.notebook.lines
            else:
                self._lines = _LINE_BREAK.split(self.text)
        return self._lines


@dataclass
class Context:
    """What the writers know beyond the findings.

    Attributes:
        sources: the checked files by filename (needed by ``full`` and for notebooks).
        color: colour the text formats (ANSI escapes).
        quiet: leave out the summary line.
        fixed: how many findings ``--fix`` fixed (shown in the summary, as ruff does).
    """

    sources: dict[str, SourceFile] = field(default_factory=dict)
    color: bool = False
    quiet: bool = False
    fixed: int = 0  # findings fixed by --fix in this run
    unsafe_fixes: bool = False  # unsafe fixes count as available (--unsafe-fixes)


@dataclass
class Place:
    """A position as shown: ``cell`` is ``None`` outside notebooks."""

    cell: int | None
    row: int
    column: int


@dataclass
class View:
    """A finding with its positions and message as shown (rows within the cell in notebooks)."""

    finding: Finding
    message: str
    start: Place
    end: Place
    noqa_row: int | None
    related: list[tuple[Place, str]]

    @property
    def code(self) -> str:
        return self.finding.code

    @property
    def filename(self) -> str:
        return self.finding.filename

    @property
    def severity(self) -> str:
        info = INFOS.get(self.code)
        return info.severity if info else "error"

    @property
    def prefix(self) -> str:
        """``path:line:col`` or ``path:cell N:line:col``."""
        cell = f"cell {self.start.cell}:" if self.start.cell is not None else ""
        return f"{self.filename}:{cell}{self.start.row}:{self.start.column}"


def view(f: Finding, ctx: Context | None = None) -> View:
    """How ``f`` is shown: rows and ``line N`` references moved into cells for notebooks."""
    src = ctx.sources.get(f.filename) if ctx else None
    nb = src.notebook if src else None
    if nb is None:
        return View(
            f, f.message, Place(None, f.row, f.column), Place(None, f.end_row, f.end_column),
            f.noqa_row, [(Place(None, r.row, r.column), r.message) for r in f.related],
        )

    def place(row: int, column: int) -> Place:
        cell, r = nb.locate(row)
        return Place(cell, r, column)

    noqa = nb.locate(f.noqa_row)[1] if f.noqa_row is not None else None
    return View(
        f, nb.relabel(f.message), place(f.row, f.column), place(f.end_row, f.end_column), noqa,
        [(place(r.row, r.column), nb.relabel(r.message)) for r in f.related],
    )


def _summary(findings: list[Finding], out: TextIO, ctx: Context) -> None:
    """``Found N errors.`` (``(M fixed, K remaining)`` after ``--fix``), ``All checks
    passed!``, and ``[*] N fixable with the `--fix` option.`` as ruff prints them."""
    if ctx.quiet:
        return
    n = len(findings)
    total = n + ctx.fixed
    if ctx.fixed:
        out.write(f"Found {total} error{'s' if total != 1 else ''} ({ctx.fixed} fixed, {n} remaining).\n")
    elif n:
        out.write(f"Found {n} error{'s' if n != 1 else ''}.\n")
    else:
        out.write("All checks passed!\n")
    fixable = sum(1 for f in findings if f.fix is not None and (ctx.unsafe_fixes or f.fix.applicability == "safe"))
    unsafe = sum(1 for f in findings if f.fix is not None and not ctx.unsafe_fixes and f.fix.applicability != "safe")
    if fixable:
        out.write(f"[*] {fixable} fixable with the `--fix` option")
        out.write(f" ({unsafe} hidden fix{'es' if unsafe != 1 else ''} can be enabled with the `--unsafe-fixes` option).\n" if unsafe else ".\n")
    elif unsafe:
        out.write(f"No fixes available ({unsafe} hidden fix{'es' if unsafe != 1 else ''} can be enabled with the `--unsafe-fixes` option).\n")


def _style(ctx: Context, text: str, **kw) -> str:
    return click.style(text, **kw) if ctx.color else text


def _header(v: View, ctx: Context) -> str:
    if not ctx.color:
        return f"{v.prefix}: {v.code} {v.message}"
    cell = f"cell {v.start.cell}:" if v.start.cell is not None else ""
    colon = _style(ctx, ":", fg="cyan")
    where = colon.join([
        _style(ctx, v.filename, bold=True),
        *([_style(ctx, cell[:-1])] if cell else []),
        str(v.start.row), str(v.start.column),
    ])
    return f"{where}{colon} {_style(ctx, v.code, fg='red', bold=True)} {v.message}"


# --- concise and full ------------------------------------------------------------------


def write_concise(findings: list[Finding], out: TextIO, ctx: Context | None = None) -> None:
    """``path:line:col: CODE message`` per finding, then a summary line."""
    ctx = ctx or Context()
    for f in findings:
        out.write(_header(view(f, ctx), ctx) + "\n")
    _summary(findings, out, ctx)


write_text = write_concise


def _width(line: str, upto: int) -> int:
    """Display width of ``line``'s first ``upto`` characters (tabs expanded)."""
    return len(line[:upto].expandtabs())


def snippet(f: Finding, ctx: Context) -> list[str]:
    """The source lines of a finding: the flagged span under carets, the related lines
    under dashes with their notes; rows far apart are separated by ``...``."""
    src = ctx.sources.get(f.filename)
    if src is None:
        return []
    lines = src.lines
    nb = src.notebook

    def text(row: int) -> str | None:
        return lines[row - 1].rstrip("\r\n") if 1 <= row <= len(lines) else None

    def cell_of(row: int) -> int | None:
        return nb.locate(row)[0] if nb else None

    notes: dict[int, list[tuple[int, int, str, bool]]] = {}
    main = text(f.row)
    if main is None:
        return []
    start = _width(main, f.column - 1)
    end = _width(main, f.end_column - 1) if f.end_row == f.row else len(main.rstrip().expandtabs())
    notes.setdefault(f.row, []).append((start, max(end - start, 1), f.code, True))
    for r in f.related:
        line = text(r.row)
        if line is None:
            continue
        col = _width(line, r.column - 1)
        message = nb.relabel(r.message) if nb else r.message
        notes.setdefault(r.row, []).append((col, max(len(line.rstrip().expandtabs()) - col, 1), message, False))

    main_cell = cell_of(f.row)

    def label(row: int) -> str:
        if nb is None:
            return str(row)
        cell, r = nb.locate(row)
        return str(r) if cell == main_cell else f"cell {cell}:{r}"

    shown: list[int] = []
    for row in sorted(notes):
        if shown and row - shown[-1] <= 3 and cell_of(row) == cell_of(shown[-1]):
            shown.extend(range(shown[-1] + 1, row))
        elif shown:
            shown.append(-1)
        shown.append(row)
    width = max(len(label(r)) for r in shown if r > 0)
    bar = _style(ctx, "|", fg="blue", bold=True)
    out = [f"{'':>{width}} {bar}"]
    for row in shown:
        if row < 0:
            out.append(_style(ctx, "...", fg="blue", bold=True))
            continue
        gutter = _style(ctx, f"{label(row):>{width}}", fg="blue", bold=True)
        out.append(f"{gutter} {bar} {text(row).expandtabs()}".rstrip())
        for col, length, note, is_main in sorted(notes.get(row, []), key=lambda n: (not n[3], n[0])):
            mark = "^" * length if is_main else "-" * length
            styled = _style(ctx, f"{mark} {note}", fg="red" if is_main else "cyan", bold=is_main or None)
            out.append(f"{'':>{width}} {bar} {' ' * col}{styled}")
    out.append(f"{'':>{width}} {bar}")
    return out


def write_full(findings: list[Finding], out: TextIO, ctx: Context | None = None) -> None:
    """Each finding's header line, then its source snippet and a blank line; then a summary."""
    ctx = ctx or Context()
    for f in findings:
        out.write(_header(view(f, ctx), ctx) + "\n")
        lines = snippet(f, ctx)
        if lines:
            out.write("\n".join(lines) + "\n")
        out.write("\n")
    _summary(findings, out, ctx)


# --- JSON ------------------------------------------------------------------------------


def to_json_obj(f: Finding, ctx: Context | None = None) -> dict:
    """One finding as ruff's JSON object (``fix`` in ruff's shape, or null; null in notebooks).

    In notebooks the object also has ``"cell"``, and its rows (and those of ``related``)
    count from the start of that cell.
    """
    v = view(f, ctx)
    info = INFOS.get(f.code)
    obj = {
        "code": f.code,
        "message": v.message,
        "filename": f.filename,
        "location": {"row": v.start.row, "column": v.start.column},
        "end_location": {"row": v.end.row, "column": v.end.column},
        "fix": f.fix.to_json() if f.fix is not None and v.start.cell is None else None,
        "url": info.url if info else None,
        "noqa_row": v.noqa_row,
        "related": [
            {**({"cell": p.cell} if p.cell is not None else {}), **({"filename": r.filename} if r.filename else {}),
             "row": p.row, "column": p.column, "message": m}
            for (p, m), r in zip(v.related, f.related)
        ],
    }
    if v.start.cell is not None:
        obj = {"cell": v.start.cell, **obj}
    return obj


def write_json(findings: list[Finding], out: TextIO, ctx: Context | None = None) -> None:
    """A JSON list of findings."""
    json.dump([to_json_obj(f, ctx) for f in findings], out, indent=2)
    out.write("\n")


def write_json_lines(findings: list[Finding], out: TextIO, ctx: Context | None = None) -> None:
    """One JSON object per line."""
    for f in findings:
        out.write(json.dumps(to_json_obj(f, ctx)) + "\n")


# --- SARIF -----------------------------------------------------------------------------


def _level(severity: str) -> str:
    return "warning" if severity == "warning" else "error"


def sarif_rules() -> list[dict]:
    """``tool.driver.rules``: every rule's metadata, sorted by code."""
    return [
        {
            "id": i.code,
            "name": i.name,
            "shortDescription": {"text": i.summary},
            "helpUri": i.url,
            "defaultConfiguration": {"level": _level(i.severity)},
            "properties": {"severity": i.severity},
        }
        for i in (INFOS[c] for c in sorted(INFOS))
    ]


def _artifact(filename: str) -> dict:
    path = Path(filename)
    if path.is_absolute():
        return {"uri": path.as_uri()}
    return {"uri": quote(path.as_posix()), "uriBaseId": "%SRCROOT%"}


def _sarif_location(filename: str, region: dict, cell: int | None) -> dict:
    loc = {"physicalLocation": {"artifactLocation": _artifact(filename), "region": region}}
    if cell is not None:
        loc["properties"] = {"cell": cell}
    return loc


def to_sarif(findings: list[Finding], ctx: Context | None = None) -> dict:
    """The SARIF 2.1.0 log of one run."""
    index = {c: n for n, c in enumerate(sorted(INFOS))}
    results = []
    for f in findings:
        v = view(f, ctx)
        region = {
            "startLine": v.start.row, "startColumn": v.start.column,
            "endLine": v.end.row, "endColumn": v.end.column,
        }
        result = {
            "ruleId": f.code,
            "level": _level(v.severity),
            "message": {"text": v.message},
            "locations": [_sarif_location(f.filename, region, v.start.cell)],
        }
        if f.code in index:
            result["ruleIndex"] = index[f.code]
        if v.related:
            result["relatedLocations"] = [
                {"id": n, **_sarif_location(f.filename, {"startLine": p.row, "startColumn": p.column}, p.cell),
                 "message": {"text": m}}
                for n, (p, m) in enumerate(v.related)
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


# --- GitHub Actions --------------------------------------------------------------------


def _gh_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _gh_property(text: str) -> str:
    return _gh_data(text).replace(":", "%3A").replace(",", "%2C")


def write_github(findings: list[Finding], out: TextIO, ctx: Context | None = None) -> None:
    """``::error file=...,line=...,col=...,endLine=...,endColumn=...,title=loopcheck (CODE)::CODE message``
    per finding (``::warning`` for warning rules); in notebooks the message starts with
    ``cell N:`` and the lines count from the cell's start."""
    for f in findings:
        v = view(f, ctx)
        props = ",".join([
            f"file={_gh_property(f.filename)}",
            f"line={v.start.row}", f"col={v.start.column}",
            f"endLine={v.end.row}", f"endColumn={v.end.column}",
            f"title={_gh_property(f'loopcheck ({f.code})')}",
        ])
        cell = f"cell {v.start.cell}: " if v.start.cell is not None else ""
        out.write(f"::{_level(v.severity)} {props}::{_gh_data(f'{f.code} {cell}{v.message}')}\n")


# --- statistics ------------------------------------------------------------------------


def write_statistics(findings: list[Finding], out: TextIO, ctx: Context | None = None,
                     as_json: bool = False) -> None:
    """The number of findings per code, most frequent first (``--statistics``)."""
    ctx = ctx or Context()
    counts = sorted(Counter(f.code for f in findings).items(), key=lambda kv: (-kv[1], kv[0]))
    rows = [(code, INFOS[code].name if code in INFOS else "", n) for code, n in counts]
    if as_json:
        json.dump([{"code": c, "name": name, "count": n} for c, name, n in rows], out, indent=2)
        out.write("\n")
        return
    if not rows:
        _summary([], out, ctx)
        return
    width = max(len(str(n)) for _, _, n in rows)
    code_width = max(len(c) for c, _, _ in rows)
    for code, name, n in rows:
        out.write(f"{n:>{width}}\t{code:<{code_width}}\t{name}\n")


Writer = Callable[[list[Finding], TextIO, "Context | None"], None]

WRITERS: dict[str, Writer] = {
    "full": write_full,
    "concise": write_concise,
    "text": write_concise,
    "json": write_json,
    "json-lines": write_json_lines,
    "sarif": write_sarif,
    "github": write_github,
}
