"""Measure the per-file cost of loopcheck against a bare LibCST parse, in one process.

Usage:
    python scripts/profile_engine.py [PATH ...] [--split dev] [--repo NAME] [--whole]
        [--repeat N] [--profile OUT.prof] [--top N] [--tracemalloc]

The files: the ``PATH`` arguments, or (default) the subpaths of every ``dev`` repository of
``scripts/eval/manifest.toml`` (``--repo`` to pick some; ``--whole``: their whole trees),
found as the command line finds them (``loopcheck.workspace.discovery.iter_python_files``) and read
beforehand. Held-out repositories are refused.

Two passes, each the best of ``--repeat`` runs, timed in CPU seconds of this process
(``time.process_time``, every thread included):

* ``parse``: ``libcst.parse_module`` of every file's program text (a notebook's code cells);
* ``check``: :func:`loopcheck.check.lint_text` of every file, as the command line runs it (in a
  :func:`loopcheck.parsing.run_deep` worker, noqa and fixes included), with the project cache
  emptied first (a cold run, one process, one core); with ``--analysis-only``,
  :func:`loopcheck.analysis.check_source` instead (the analysis without noqa and fixes).

Printed: files, lines, both times, their ratio, the number of findings, the peak resident
memory of the process (``resource.getrusage``) and, with ``--tracemalloc``, the peak of
Python allocations during one check pass. ``--profile`` runs one more check pass under
cProfile, writes the stats there and prints the ``--top`` functions by own time and the
share of own time per engine area (parse, IR builder, tree walks, positions, dataflow...).
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import resource
import sys
import time
import tracemalloc
from pathlib import Path

import libcst as cst

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE / "eval"))

from common import load_manifest  # noqa: E402

from loopcheck.analysis import check_source  # noqa: E402
from loopcheck.check import lint_text  # noqa: E402
from loopcheck.workspace.discovery import iter_python_files  # noqa: E402
from loopcheck.engine import project as project_mod  # noqa: E402
from loopcheck.workspace.files import read_source  # noqa: E402
from loopcheck.workspace.notebook import read_notebook  # noqa: E402
from loopcheck.parsing import run_deep  # noqa: E402

#: Areas of the profile: (name, substrings of "file:function" that belong to it), first match wins.
AREAS = [
    ("positions (libcst metadata/codegen)", ("libcst/metadata", "libcst/_nodes/internal.py", "_codegen")),
    ("libcst parse", ("libcst/_parser", "native", "parse_module", "libcst/_nodes")),
    ("tree walks (engine/walk.py)", ("engine/walk.py",)),
    ("IR builder (engine/builder.py)", ("engine/builder.py", "engine/names.py", "engine/summaries.py")),
    ("dataflow (engine/dataflow.py)", ("engine/dataflow.py",)),
    ("roles, events, values", ("engine/roles.py", "engine/events.py", "engine/values.py", "engine/knowledge.py")),
    ("rules", ("loopcheck/rules/",)),
    ("unit, analysis, project", ("engine/unit.py", "engine/ir.py", "loopcheck/analysis.py", "engine/project.py")),
    ("fixes, noqa, notebook", ("loopcheck/fixes/", "loopcheck/workspace/noqa.py", "loopcheck/workspace/notebook.py")),
    ("nesting scan (parsing.py)", ("loopcheck/parsing.py",)),
]


def collect(args) -> list[tuple[str, str, str]]:
    """``(filename, text as read, program text)`` for every file to measure."""
    roots: list[Path] = []
    if args.paths:
        roots = [Path(p) for p in args.paths]
    else:
        _, repos = load_manifest()
        for repo in repos:
            if args.repo and repo.name not in args.repo:
                continue
            if repo.split != "dev":
                if args.repo:
                    sys.exit(f"{repo.name} is held out: not measured")
                continue
            if not repo.root.is_dir():
                continue
            subs = ["."] if args.whole else repo.subpaths
            roots += [repo.root / s for s in subs if (repo.root / s).exists()]
    out = []
    for path in iter_python_files([str(r) for r in roots]):
        notebook = path.suffix == ".ipynb"
        try:
            src = read_source(path, notebook=notebook)
        except (OSError, ValueError):
            continue
        text = src.text if notebook else src.program
        program = text
        if notebook:
            try:
                program = read_notebook(text).source
            except Exception:  # noqa: BLE001 - not a notebook: the check reports it
                continue
        out.append((str(path), text, program))
    return out


ANALYSIS_ONLY = False
PROFILED_RECURSION_LIMIT = 8000


def parse_pass(files) -> None:
    for _, _, program in files:
        try:
            run_deep(cst.parse_module, program)
        except Exception:  # noqa: BLE001 - a syntax error costs what it costs
            pass


def check_pass(files, prof: cProfile.Profile | None = None) -> int:
    project_mod._PROJECTS.clear()
    n = 0

    def one(text: str, name: str):
        if prof is not None:
            # Under a profile hook every Python call takes C stack: a lower recursion limit
            # turns the deepest files into a RecursionError instead of a stack overflow.
            sys.setrecursionlimit(PROFILED_RECURSION_LIMIT)
            prof.enable()  # cProfile follows one thread: the run_deep worker's
        try:
            if ANALYSIS_ONLY and not name.endswith(".ipynb"):
                return check_source(text, name), None
            return lint_text(text, name)
        finally:
            if prof is not None:
                prof.disable()

    for name, text, _ in files:
        try:
            n += len(run_deep(one, text, name)[0])
        except Exception as err:  # noqa: BLE001
            print(f"error in {name}: {type(err).__name__}: {err}", file=sys.stderr)
    return n


def best(fn, files, repeat: int) -> tuple[float, object]:
    times, result = [], None
    for _ in range(repeat):
        t = time.process_time()
        result = fn(files)
        times.append(time.process_time() - t)
    return min(times), result


def area_of(key: tuple) -> str:
    where = f"{key[0]}:{key[2]}"
    for name, parts in AREAS:
        if any(p in where for p in parts):
            return name
    return "other"


def report_profile(stats: pstats.Stats, top: int) -> None:
    total = sum(v[2] for v in stats.stats.values())
    rows = sorted(stats.stats.items(), key=lambda kv: kv[1][2], reverse=True)
    print(f"\nprofile: {total:.2f} s of own time; top {top} by own time")
    print(f"{'own s':>7} {'own %':>6} {'cum s':>7} {'calls':>9}  function")
    for key, (cc, nc, tt, ct, _) in rows[:top]:
        short = key[0].split("site-packages/")[-1].split("loopcheck/")[-1]
        print(f"{tt:7.2f} {100 * tt / total:5.1f}% {ct:7.2f} {nc:9}  {short}:{key[1]}({key[2]})")
    areas: dict[str, float] = {}
    for key, v in stats.stats.items():
        if key[0] == "~" and v[4]:  # a builtin: its time goes to the areas of its callers
            for caller, (_cc, _nc, tt, _ct) in v[4].items():
                a = area_of(caller)
                areas[a] = areas.get(a, 0.0) + tt
            continue
        a = area_of(key)
        areas[a] = areas.get(a, 0.0) + v[2]
    print("\nown time by area (a builtin's time counted in its callers' areas):")
    for a, t in sorted(areas.items(), key=lambda kv: kv[1], reverse=True):
        print(f"  {100 * t / total:5.1f}%  {t:6.2f} s  {a}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("paths", nargs="*")
    parser.add_argument("--repo", action="append")
    parser.add_argument("--whole", action="store_true")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--profile", type=Path)
    parser.add_argument("--top", type=int, default=30)
    parser.add_argument("--tracemalloc", action="store_true")
    parser.add_argument("--no-parse", action="store_true", help="skip the bare-parse pass")
    parser.add_argument("--analysis-only", action="store_true",
                        help="check with loopcheck.analysis.check_source (no noqa, no fixes) instead of lint_text")
    args = parser.parse_args()
    global ANALYSIS_ONLY
    ANALYSIS_ONLY = args.analysis_only
    files = collect(args)
    lines = sum(p.count("\n") + 1 for _, _, p in files)
    print(f"files {len(files)}  lines {lines}")
    t_parse = None
    if not args.no_parse:
        t_parse, _ = best(parse_pass, files, args.repeat)
        print(f"parse  {t_parse:7.2f} CPU s  ({lines / t_parse:,.0f} lines/s)")
    t_check, findings = best(check_pass, files, args.repeat)
    print(f"check  {t_check:7.2f} CPU s  ({lines / t_check:,.0f} lines/s)  findings {findings}")
    if t_parse:
        print(f"ratio  check / parse = {t_check / t_parse:.2f}")
    print(f"peak RSS {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MiB")
    if args.tracemalloc:
        tracemalloc.start()
        check_pass(files)
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        print(f"tracemalloc peak during a check pass {peak / 2**20:.0f} MiB")
    if args.profile:
        prof = cProfile.Profile()
        check_pass(files, prof)
        prof.dump_stats(args.profile)
        report_profile(pstats.Stats(str(args.profile)), args.top)
    return 0


if __name__ == "__main__":
    sys.exit(main())
