"""Check one file: parse, build units, infer roles, type events, run rules, place findings."""

from __future__ import annotations

from typing import Collection, Mapping

import libcst as cst
from libcst.metadata import MetadataWrapper, PositionProvider

from loopcheck.engine.builder import UnitBuilder, index_module
from loopcheck.engine.events import classify
from loopcheck.engine.ir import walk_events
from loopcheck.engine.roles import infer_roles
from loopcheck.engine.unit import Unit
from loopcheck.findings import Describe, Finding, Related, Report
from loopcheck.rules import REGISTRY, SYNTAX_ERROR

# A file none of these occur in holds no training loop any rule can speak about.
TRIGGERS = ("backward", ".step(", ".eval(", ".train(")


def might_have_loop(source: str) -> bool:
    """Cheap text test run before parsing: most files of a repository hold no training loop."""
    return any(t in source for t in TRIGGERS)


def _selected(code: str, select: Collection[str] | None) -> bool:
    return select is None or code in select


def build_units(module: cst.Module) -> list[Unit]:
    """The analysis units of a parsed module (module code + functions no one here calls)."""
    index = index_module(module)
    builder = UnitBuilder(index)
    candidates = [(None, builder.module_unit())]
    funcs = list(index.functions.values())
    for cls in index.classes.values():
        funcs.extend(cls.methods.values())
    for func in funcs:
        if func not in builder.called:  # already read inside a caller
            candidates.append((func, builder.function_unit(func)))
    irs = [ir for func, ir in candidates if func is None or func not in builder.called]
    raws = [raw for ir in irs for raw in walk_events(ir)]
    roles = infer_roles(index, raws)
    for raw in raws:
        raw.typed = classify(raw, roles)
    return [Unit(ir, roles) for ir in irs]


def check_module(module: cst.Module, select: Collection[str] | None = None) -> list[Report]:
    """Run the selected rules (codes; ``None`` = all) over a parsed module."""
    reports: list[Report] = []
    seen: set[tuple[str, int]] = set()
    rules = [r for code, r in REGISTRY.items() if _selected(code, select)]
    for unit in build_units(module):
        if not unit.events:
            continue
        for rule in rules:
            for rep in rule.check(unit):
                key = (rep.code, id(rep.node))
                if key not in seen:
                    seen.add(key)
                    reports.append(rep)
    return reports


def check_parsed(
    source: str, filename: str, select: Collection[str] | None = None
) -> tuple[list[Finding], cst.Module | None, Mapping | None]:
    """:func:`check_source`, also returning the parsed module and its positions (both
    ``None`` when nothing was parsed or nothing found), so that fixes reuse them."""
    if not might_have_loop(source):
        return [], None, None
    try:
        module = cst.parse_module(source)
    except cst.ParserSyntaxError as err:
        if not _selected(SYNTAX_ERROR.code, select):
            return [], None, None
        msg = str(err.message).replace("\n", " ")
        row, col = err.raw_line, err.raw_column + 1
        return [Finding(SYNTAX_ERROR.code, f"SyntaxError: {msg}", filename, row, col, row, col, [], row)], None, None
    reports = check_module(module, select)
    if not reports:
        return [], None, None
    wrapper = MetadataWrapper(module, unsafe_skip_copy=True)
    positions = wrapper.resolve(PositionProvider)
    d = Describe(module, positions)
    findings = []
    for rep in reports:
        rng = positions[rep.node]
        related = [
            Related(positions[n].start.line, positions[n].start.column + 1, note) for n, note in rep.related
        ]
        findings.append(
            Finding(
                rep.code, rep.message(d), filename, rng.start.line, rng.start.column + 1,
                rng.end.line, rng.end.column + 1, related, rng.start.line,
                rep.note(d) if rep.note is not None else None,
            )
        )
    findings.sort(key=lambda f: f.sort_key)
    return findings, module, positions


def check_source(source: str, filename: str, select: Collection[str] | None = None) -> list[Finding]:
    """Check the text of one Python file.

    Args:
        source: the file's text.
        filename: the name to put in findings.
        select: rule codes to run (``None``: all).

    Returns:
        Findings sorted by position. A file that does not parse gives one ``LC001``
        finding at the error; this function does not raise on bad input.
    """
    return check_parsed(source, filename, select)[0]
