"""Output formats: ``text`` (``path:line:col: CODE message``, as flake8 and ruff print) and
``json`` (ruff's JSON fields, plus ``related``)."""

from __future__ import annotations

import json
from typing import TextIO

from loopcheck.findings import Finding
from loopcheck.rules import INFOS


def to_json_obj(f: Finding) -> dict:
    """One finding as ruff's JSON object (``fix`` is always null for now)."""
    info = INFOS.get(f.code)
    return {
        "code": f.code,
        "message": f.message,
        "filename": f.filename,
        "location": {"row": f.row, "column": f.column},
        "end_location": {"row": f.end_row, "column": f.end_column},
        "fix": None,
        "url": info.url if info else None,
        "noqa_row": f.noqa_row,
        "related": [{"row": r.row, "column": r.column, "message": r.message} for r in f.related],
    }


def write_text(findings: list[Finding], out: TextIO) -> None:
    """``path:line:col: CODE message`` per finding, then a summary line."""
    for f in findings:
        out.write(f"{f.filename}:{f.row}:{f.column}: {f.code} {f.message}\n")
    n = len(findings)
    if n:
        out.write(f"Found {n} error{'s' if n != 1 else ''}.\n")
    else:
        out.write("All checks passed!\n")


def write_json(findings: list[Finding], out: TextIO) -> None:
    """A JSON list of findings."""
    json.dump([to_json_obj(f) for f in findings], out, indent=2)
    out.write("\n")


WRITERS = {"text": write_text, "json": write_json}
