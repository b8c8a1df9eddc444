"""Run the rule fixtures under the probes and put the measurements into a table.

:func:`verify_rules` is the whole of ``loopcheck verify`` minus the command line: it finds each
rule's fixtures, runs them (one subprocess per fixture, in parallel), measures each rule's
symptom in the bad and the good run, and returns JSON-able rows.  :func:`format_table` renders
them for a terminal.

Fixtures per rule ``LCxxx`` in the fixtures directory:

* ``LCxxx_bad.py`` and ``LCxxx_good.py``: the canonical pair;
* ``LCxxx_bad_runtime.py`` (optional): a runnable variant for a rule whose canonical bad fixture
  does not show the bug at runtime in this PyTorch; it is then used as the bad run, and the
  canonical bad fixture's measurement is still reported (``canonical_bad``).
"""

from __future__ import annotations

from pathlib import Path

from . import runner, symptoms


class FixturesMissing(RuntimeError):
    """The installed package holds no fixtures (a broken install)."""


def default_fixtures_dir() -> Path:
    """The fixtures shipped with the package that is running.

    An installed wheel holds them in ``loopcheck/fixtures/`` (package data built from the
    checkout's ``fixtures/``); a source checkout (an editable install, or ``python -m`` from the
    checkout) holds them in ``fixtures/`` beside the package. The current working directory is
    never looked at: ``loopcheck verify`` runs these scripts, so only the package's own count.

    Raises:
        FixturesMissing: neither place holds the fixtures.
    """
    package = Path(__file__).resolve().parents[1]
    shipped = package / "fixtures"
    if shipped.is_dir():
        return shipped
    checkout = package.parent
    if (checkout / "pyproject.toml").is_file() and (checkout / "fixtures").is_dir():
        return checkout / "fixtures"
    raise FixturesMissing(f"no fixtures in {shipped}: reinstall loopcheck")


def _plan(codes, fixtures_dir: Path) -> list[dict]:
    plan = []
    for code in codes:
        bad = fixtures_dir / f"{code}_bad.py"
        runtime = fixtures_dir / f"{code}_bad_runtime.py"
        good = fixtures_dir / f"{code}_good.py"
        plan.append({
            "code": code,
            "bad": runtime if runtime.is_file() else bad,
            "canonical_bad": bad if runtime.is_file() else None,
            "good": good,
        })
    return plan


def _side(code: str, path: Path | None, records: dict) -> dict | None:
    if path is None:
        return None
    if not path.is_file():
        return {"file": path.name, "value": None, "shown": None, "detail": "fixture missing",
                "error": "fixture missing"}
    m = symptoms.measure(code, records[str(path)])
    m["file"] = path.name
    m["seconds"] = records[str(path)].get("seconds")
    return m


def verify_rules(codes=None, fixtures_dir=None, jobs=None) -> dict:
    """Run the fixtures of ``codes`` (default: every rule with a symptom) and measure them."""
    codes = list(codes or symptoms.SYMPTOMS)
    fixtures_dir = Path(fixtures_dir) if fixtures_dir else default_fixtures_dir()
    plan = _plan(codes, fixtures_dir)
    scripts = [p[k] for p in plan for k in ("bad", "canonical_bad", "good") if p[k] and p[k].is_file()]
    records = runner.run_scripts(scripts, jobs=jobs)
    rows, torch_version = [], None
    for p in plan:
        sym = symptoms.SYMPTOMS[p["code"]]
        bad = _side(p["code"], p["bad"], records)
        good = _side(p["code"], p["good"], records)
        canonical = _side(p["code"], p["canonical_bad"], records)
        rec = records.get(str(p["bad"])) or records.get(str(p["good"])) or {}
        torch_version = torch_version or rec.get("torch")
        info = symptoms.run_info(rec)
        rows.append({
            "code": p["code"], "symptom": sym.name, "unit": sym.unit,
            "device": info["device"], "dtype": info["dtype"], "torch": rec.get("torch"),
            "bad": bad, "good": good, "canonical_bad": canonical,
            "verdict": symptoms.verdict(bad, good),
        })
    return {"torch": torch_version, "fixtures": str(fixtures_dir), "rules": rows,
            "ok": all(r["verdict"] == "reproduced" for r in rows)}


def measure_scripts(pairs, jobs=None) -> list[dict]:
    """Run scripts under the probes and measure each with a rule's symptom.

    Args:
        pairs: ``(code, path)`` tuples: a rule code with a symptom (``"LC501"``) and a script
            to run, typically one of the rule's ``LCxxx_bad_*.py`` variants.
        jobs: scripts run at the same time (default: CPU count).

    Returns:
        One row per pair, in order: the measurement of :func:`symptoms.measure` (``value``,
        ``shown``, ``detail``, ``error``) with ``code``, ``file``, ``seconds`` and the run's
        ``device``, ``dtype`` and ``torch`` version.
    """
    pairs = [(code, Path(path)) for code, path in pairs]
    records = runner.run_scripts([p for _, p in pairs if p.is_file()], jobs=jobs)
    rows = []
    for code, path in pairs:
        row = _side(code, path, records)
        rec = records.get(str(path), {})
        row.update(code=code, torch=rec.get("torch"), **symptoms.run_info(rec))
        rows.append(row)
    return rows


def _cell(code, side) -> str:
    if side is None:
        return "-"
    if side["value"] is None:
        return "error" if side.get("error") else "-"
    return symptoms.SYMPTOMS[code].format(side["value"])


def format_table(result: dict, details: bool = False) -> str:
    """A plain-text table (one row per rule, the unit the bad and good numbers are counted in),
    notes, and optionally each run's detail."""
    head = ["rule", "device", "dtype", "torch", "symptom", "bad", "good", "verdict", "unit"]
    body = [[r["code"], r["device"], r["dtype"], r["torch"] or "-", r["symptom"],
             _cell(r["code"], r["bad"]), _cell(r["code"], r["good"]), r["verdict"], r["unit"]]
            for r in result["rules"]]
    widths = [max(len(str(x)) for x in col) for col in zip(head, *body)]
    lines = ["  ".join(str(x).ljust(w) for x, w in zip(row, widths)).rstrip()
             for row in [head, ["-" * w for w in widths], *body]]
    notes = []
    for r in result["rules"]:
        if r["canonical_bad"]:
            notes.append(f"{r['code']}: bad run = {r['bad']['file']}; {r['canonical_bad']['file']} measured "
                         f"{_cell(r['code'], r['canonical_bad'])}: {r['canonical_bad']['detail']}")
        for side in ("bad", "good"):
            s = r[side]
            if details:
                notes.append(f"{r['code']} {side} ({s['file']}): {s['detail']}")
            elif s.get("error"):
                notes.append(f"{r['code']} {side} ({s['file']}) raised {s['error']}")
    if notes:
        lines += [""] + notes
    n_ok = sum(r["verdict"] == "reproduced" for r in result["rules"])
    lines += ["", f"{n_ok}/{len(result['rules'])} rules reproduced (torch {result['torch']})"]
    return "\n".join(lines)
