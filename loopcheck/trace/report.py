"""Turn a traced run into findings, set them beside the static ones, and print them.

Every runtime :class:`~loopcheck.trace.watch.Observation` becomes a
:class:`~loopcheck.findings.Finding` at the user's line (``# noqa`` and the configuration's
rule selection apply as in the static check). Each file the run touched (the script, and
every file a finding points into) is also checked statically; a static finding is

- **confirmed** when a runtime finding of the same code sits on its line (or on one of the
  lines it names): one finding is printed, the static message with the runtime measurement;
  further runtime findings of that code on its line (another column of the statement) add to
  its count, not to the findings;
- **not observed** otherwise: printed with that mark, since the run may simply not have taken
  the path (validation never reached, a ``--steps`` stop before the epoch ended).

A runtime finding no static finding matches is printed as **runtime** (the static pass could
not see it: a framework's loop, a hook, code built at run time). The mark starts the message
(``[confirmed at step 3]``, ``[runtime, step 9]``, ``[not observed in this run]``), so every
output format carries it; JSON objects and SARIF results also get a ``trace`` object with the
status, step, measured value and count. The writers are those of :mod:`loopcheck.cli.reporters`.
"""

from __future__ import annotations

import json
import os
import sys
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TextIO

from loopcheck.workspace.config import ConfigError, Options, Resolver
from loopcheck.findings import Finding, Related
from loopcheck.workspace.noqa import filter_findings
from loopcheck.check import SourceFile
from loopcheck.cli.reporters import Context, WRITERS, to_json_obj, to_sarif
from loopcheck.trace import WATCHED_CODES

NOT_OBSERVED_HINTS = {
    "LC301": "no training step ran on a forward pass in eval mode with active Dropout or BatchNorm layers",
    "LC302": "no eval-mode forward pass ran with grad enabled (the run may not have reached validation)",
    "LC401": "no loss tensor outlived the second optimizer step after its own",
    "LC501": "every trainable parameter of the trained model was in an optimizer, and no optimizer state was "
             "converted",
}


@dataclass
class TraceReport:
    """The findings of one traced run, ready for the writers.

    Attributes:
        findings: runtime, confirmed and not-observed findings, sorted by place.
        trace: per finding (by ``id``): ``{"status", "step", "value", "count"}``.
        sources: the files the findings point into, for the ``full`` format.
        static_checked: the files that were also checked statically (display names).
    """

    findings: list[Finding]
    trace: dict[int, dict]
    sources: dict[str, SourceFile]
    static_checked: list[str] = field(default_factory=list)

    def status(self, f: Finding) -> str:
        """``"confirmed"``, ``"runtime"`` or ``"not-observed"``."""
        return self.trace[id(f)]["status"]

    def count(self, status: str) -> int:
        return sum(1 for f in self.findings if self.status(f) == status)

    @property
    def runtime(self) -> int:
        """Findings seen at runtime (confirmed or runtime-only)."""
        return self.count("confirmed") + self.count("runtime")


def display_name(path: str) -> str:
    """``path`` relative to the current directory when it lies inside it, else absolute."""
    absolute = os.path.abspath(path)
    try:
        rel = os.path.relpath(absolute)
    except ValueError:  # another drive on Windows
        return absolute
    return absolute if rel.startswith("..") else rel


def _read(path: str) -> str | None:
    try:
        return Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None


def _to_finding(obs, name: str, lines: list[str]) -> Finding:
    col, end_row, end_col = obs.site.columns(lines)
    related = []
    for site, message in obs.related:
        other = _read(site.filename) if site.filename != obs.site.filename else None
        rel_lines = other.splitlines() if other is not None else lines
        rcol = site.columns(rel_lines)[0]
        filename = None if site.filename == obs.site.filename else display_name(site.filename)
        related.append(Related(site.line, rcol, message, filename))
    return Finding(obs.code, obs.message, name, obs.site.line, col, end_row, end_col, related,
                   obs.site.line, obs.note)


def _matches(static: Finding, runtime: Finding) -> bool:
    if static.code != runtime.code or static.filename != runtime.filename:
        return False
    if static.row == runtime.row:
        return True
    static_rows = {r.row for r in static.related if r.filename is None}
    runtime_rows = {r.row for r in runtime.related if r.filename is None}
    return runtime.row in static_rows or static.row in runtime_rows


def _status_text(status: str, step: int | None) -> str:
    if status == "confirmed":
        return f"[confirmed at step {step}]" if step else "[confirmed]"
    if status == "runtime":
        return f"[runtime, step {step}]" if step else "[runtime]"
    return "[not observed in this run]"


def build_report(result, static: bool = True, resolver: Resolver | None = None) -> TraceReport:
    """The findings of ``result`` (a :class:`~loopcheck.trace.run.TraceResult`).

    Args:
        result: the traced run.
        static: also check the touched files statically and mark their findings.
        resolver: the configuration (rule selection, ``per-file-ignores``); default: the
            closest configuration file of each file.
    """
    from loopcheck.check import lint_text

    resolver = resolver or Resolver(Options())
    texts: dict[str, str] = {}
    names: dict[str, str] = {}
    runtime: list[tuple[Finding, object]] = []
    for obs in result.observations:
        path = os.path.abspath(obs.site.filename)
        if path not in texts:
            text = _read(path)
            if text is None:
                continue
            texts[path] = text
        name = names.setdefault(path, display_name(path))
        runtime.append((_to_finding(obs, name, texts[path].splitlines()), obs))
    files = [result.script] + [p for p in texts if p != result.script]
    for path in files:
        if path not in texts and (text := _read(path)) is not None:
            texts[path] = text
        names.setdefault(path, display_name(path))

    findings: list[Finding] = []
    trace: dict[int, dict] = {}
    checked = []
    for path in files:
        if path not in texts:
            continue
        name = names[path]
        try:
            settings = resolver.for_file(Path(path))
            codes, src = settings.codes_for(Path(path)), settings.src
        except ConfigError as err:
            print(f"loopcheck: {err}", file=sys.stderr)
            codes, src = None, ()
        mine = [(f, o) for f, o in runtime if f.filename == name and (codes is None or f.code in codes)]
        kept = {id(f) for f in filter_findings([f for f, _ in mine], texts[path])}
        mine = [(f, o) for f, o in mine if id(f) in kept]
        static_found: list[Finding] = []
        if static and path.endswith(".py"):
            try:
                static_found, _ = lint_text(texts[path], name, codes, src)
                checked.append(name)
            except Exception as err:  # noqa: BLE001 - the runtime findings still count
                print(f"loopcheck: static check of {name} failed: {type(err).__name__}: {err}", file=sys.stderr)
        used = set()
        confirmed_at: dict[tuple[str, int], Finding] = {}  # (code, row) -> the static finding confirmed there
        for s in static_found:
            match = next(((f, o) for f, o in mine if id(f) not in used and _matches(s, f)), None)
            if match is None:
                if s.code not in WATCHED_CODES:
                    hint = "loopcheck trace has no runtime check for this rule yet (the static finding stands)"
                else:
                    hint = NOT_OBSERVED_HINTS.get(s.code, "its runtime symptom did not occur in this run")
                note = f"Not observed at runtime: {hint}." + (f"\n{s.note}" if s.note else "")
                g = replace(s, message=f"{_status_text('not-observed', None)} {s.message}", note=note)
                trace[id(g)] = {"status": "not-observed", "step": None, "value": None, "count": 0}
            else:
                f, o = match
                used.add(id(f))
                note = o.note + (f"\n{s.note}" if s.note else "")
                g = replace(s, message=f"{_status_text('confirmed', o.step)} {s.message}", note=note)
                trace[id(g)] = {"status": "confirmed", "step": o.step, "value": o.value, "count": o.count}
                confirmed_at.setdefault((g.code, g.row), g)
            g.fix = s.fix
            findings.append(g)
        for f, o in mine:
            if id(f) in used:
                continue
            # one finding per line and code: a runtime event at a line a static finding of its code
            # names (another column, another part of the same statement) confirms that finding once
            # more and adds no finding (every static finding there is confirmed by now: it matches)
            confirmed = confirmed_at.get((f.code, f.row))
            if confirmed is not None:
                trace[id(confirmed)]["count"] += o.count
                continue
            g = replace(f, message=f"{_status_text('runtime', o.step)} {f.message}")
            trace[id(g)] = {"status": "runtime", "step": o.step, "value": o.value, "count": o.count}
            findings.append(g)
    findings.sort(key=lambda f: f.sort_key)
    sources = {names[p]: SourceFile(names[p], texts[p]) for p in texts}
    return TraceReport(findings, trace, sources, checked)


# ------------------------------------------------------------------------------------ output


def _trace_obj(report: TraceReport, f: Finding) -> dict:
    t = dict(report.trace[id(f)])
    if t.get("value") is not None and not isinstance(t["value"], (int, float)):
        t["value"] = None
    if isinstance(t.get("value"), float) and t["value"] != t["value"]:  # NaN is not JSON
        t["value"] = None
    return t


def write_report(report: TraceReport, fmt: str, out: TextIO, color: bool = False) -> None:
    """Print the findings in ``fmt`` (any of ``loopcheck --output-format``'s formats)."""
    ctx = Context(report.sources, color=color, quiet=True)
    if fmt in ("json", "json-lines"):
        objs = []
        for f in report.findings:
            obj = to_json_obj(f, ctx)
            obj["note"] = f.note
            obj["trace"] = _trace_obj(report, f)
            objs.append(obj)
        if fmt == "json":
            json.dump(objs, out, indent=2)
            out.write("\n")
        else:
            for obj in objs:
                out.write(json.dumps(obj) + "\n")
        return
    if fmt == "sarif":
        log = to_sarif(report.findings, ctx)
        for f, result in zip(report.findings, log["runs"][0]["results"]):
            result.setdefault("properties", {})["trace"] = _trace_obj(report, f)
        json.dump(log, out, indent=2)
        out.write("\n")
        return
    WRITERS[fmt](report.findings, out, ctx)


def summary(report: TraceReport, result) -> list[str]:
    """Closing lines for people: what ran, how far, what was found, notes, the program's error."""
    how = ""
    if result.stopped:
        how = " (stopped by --steps)"
    elif result.interrupted:
        how = " (interrupted)"
    lines = [f"Traced {result.target.describe()}: {result.steps} optimizer step{'s' if result.steps != 1 else ''}"
             f"{how} in {result.seconds:.1f} s."]
    n_run, n_conf, n_not = report.runtime, report.count("confirmed"), report.count("not-observed")
    if n_run:
        lines.append(f"Found {n_run} runtime finding{'s' if n_run != 1 else ''}"
                     + (f" ({n_conf} confirm{'s' if n_conf == 1 else ''} a static finding)" if n_conf else "") + ".")
    else:
        lines.append("No runtime findings.")
    if n_not:
        lines.append(f"{n_not} static finding{'s' if n_not != 1 else ''} not observed in this run.")
    for note in result.notes:
        lines.append(f"note: {note}")
    if result.error:
        e = result.error
        at = f" at {display_name(e['site'].filename)}:{e['site'].line}" if e.get("site") else ""
        lines.append(f"The program raised {e['type']}{at}: {e['message']}")
    elif result.exit_code is not None:
        lines.append(f"The program exited with status {result.exit_code}.")
    return lines
