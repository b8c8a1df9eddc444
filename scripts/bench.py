"""Benchmark loopcheck on public repositories against a bare LibCST parse (issue 13's targets).

Usage: python scripts/bench.py [--repeat N] [--skip-large] [--skip-scaling] [--skip-editor] [--manifest FILE]

The repositories are listed, each pinned to a commit, in ``scripts/bench_manifest.toml``; they
are exported to ``/work/corpus/repos/<owner>__<name>/`` (or ``$LOOPCHECK_CORPUS/repos``) by
the evaluation's ``scripts/eval/fetch_corpus.py`` code, which this script calls for any that is
missing (from the fetch tool's mirrors); nothing fetched is committed.

Measured in one run, on this machine, each a median of ``--repeat`` runs (default 1):

- the corpus (set ``corpus``): files and lines (what ``loopcheck --show-files`` lists; a
  notebook's lines are those of its code cells), then
  * bare parse: ``libcst.parse_module`` of each of those files, one after the other in this
    process, texts read beforehand (a notebook: its code cells as loopcheck joins them);
  * loopcheck cold ``-j1 --no-cache``; cold on all cores (``-j0``, an empty cache written);
    warm (the same command again, nothing changed); each a fresh process, wall time;
  * the bare parse again, right after the two cold runs: the speed of this shared machine
    drifts (one bare parse took 11.2 s and another 18.8 s within the same hour), so the
    ratios divide by the mean of the parse before and the parse after the runs they compare;
  * the ratios the issue sets targets on;
- the peak resident memory of the cold all-cores run: the parent, and the largest worker;
- the large repository (set ``large``, huggingface/diffusers): cold on all cores, then warm;
- the scaling series: 1, 2, 4, 8 repositories (set ``scaling``): lines and cold all-cores
  seconds (``--no-cache``), and microseconds per line (flat when the cost grows linearly);
- start-up: ``loopcheck --version`` (``scripts/startup.py``'s measurement);
- the editor: the median time from the last keystroke of a burst to its diagnostics
  (``scripts/lsp_latency.py``'s typing measurement, with a real LSP client; needs the
  ``server`` extra);
- every target of issue 13 this measures: measured, target, met or not.

loopcheck's bytecode is compiled first (:func:`compile_bytecode`), as an installed loopcheck
has it.

Each loopcheck run is ``python scripts/bench.py --child ARGS``: loopcheck's ``main`` in a
fresh process, which reports its own peak memory and its workers' (``getrusage``). The
machine's load average is printed at the start and the end: the numbers are only as quiet as
the machine (other work on the same cores shows as wall time).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
import tomllib
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE / "eval"))
sys.path.insert(0, str(HERE))

# issue 13's targets
COLD_RATIO = 0.75  # cold, all cores, wall / bare single-process parse
WARM_S = 0.5  # warm wall seconds on the ~130k-line corpus
LARGE_COLD_S = 20.0
LARGE_WARM_S = 1.0
WORKER_MB = 200.0
STARTUP_MS = 150.0
EDITOR_MS = 150.0  # last keystroke of a burst -> diagnostics, 2,000-line script


@dataclass
class Entry:
    """One repository of the manifest: ``name`` (owner/name), ``commit``, the ``paths`` checked
    (relative to its root), the ``sets`` it belongs to, its place in the scaling series."""

    name: str
    commit: str
    paths: list[str]
    sets: list[str]
    order: int = 0

    def repo(self):
        from common import Repo

        return Repo(self.name, self.commit, self.paths, "bench")

    def targets(self) -> list[str]:
        return [str(self.repo().root / p) for p in self.paths]


def load(manifest: Path) -> list[Entry]:
    with open(manifest, "rb") as f:
        data = tomllib.load(f)
    return [Entry(r["name"], r["commit"], r["paths"], r["sets"], r.get("scaling-order", 0)) for r in data["repo"]]


def ensure(entries: list[Entry]) -> list[str]:
    """Export what is missing from the fetch tool's mirrors (the evaluation's fetch code);
    return what is still missing, with how to get it."""
    from fetch_corpus import export, mirror_has, missing_lines, present

    missing = []
    for e in entries:
        repo = e.repo()
        if not present(repo) and mirror_has(repo):
            print(f"export {repo.name} {repo.commit[:12]}", flush=True)
            export(repo)
        if not present(repo):
            missing += [f"MISSING {repo.name} at {repo.commit}", *missing_lines(repo)]
    return missing


# --- loopcheck runs ------------------------------------------------------------------------


def child(args: list[str]) -> None:
    """``--child``: run loopcheck's command line in this process, then write our peak memory
    and our workers' (kilobytes, as Linux gives ``ru_maxrss``) to ``$BENCH_RUSAGE``."""
    from loopcheck.cli.commands import main

    code = 0
    try:
        main(args, prog_name="loopcheck")
    except SystemExit as exit:
        code = exit.code if isinstance(exit.code, int) else 1
    me = resource.getrusage(resource.RUSAGE_SELF)
    workers = resource.getrusage(resource.RUSAGE_CHILDREN)
    Path(os.environ["BENCH_RUSAGE"]).write_text(json.dumps({
        "self_kb": me.ru_maxrss, "workers_kb": workers.ru_maxrss,
        "cpu_s": me.ru_utime + me.ru_stime + workers.ru_utime + workers.ru_stime,
    }))
    sys.exit(code)


@dataclass
class Timing:
    wall: float
    cpu: float
    self_mb: float
    workers_mb: float
    code: int
    output: bytes


def loopcheck(args: list[str], cwd: Path) -> Timing:
    """One loopcheck run in a fresh process: wall time and what it reported."""
    with tempfile.NamedTemporaryFile(suffix=".json", delete=False) as f:
        rusage = f.name
    try:
        env = {**os.environ, "BENCH_RUSAGE": rusage, "PYTHONHASHSEED": "0"}
        t = time.perf_counter()
        proc = subprocess.run([sys.executable, __file__, "--child", *args], cwd=cwd, env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        wall = time.perf_counter() - t
        if proc.returncode not in (0, 1):
            sys.exit(f"loopcheck {' '.join(args)} failed ({proc.returncode}):\n{proc.stderr.decode()[-2000:]}")
        usage = json.loads(Path(rusage).read_text())
    finally:
        os.unlink(rusage)
    return Timing(wall, usage["cpu_s"], usage["self_kb"] / 1024, usage["workers_kb"] / 1024, proc.returncode,
                  proc.stdout)


def median_run(args_for, repeat: int, cwd: Path, prepare=None) -> Timing:
    """The run of median wall time among ``repeat`` (``prepare()`` before each, e.g. an empty
    cache directory)."""
    runs = []
    for i in range(repeat):
        if prepare is not None:
            prepare()
        runs.append(loopcheck(args_for(i), cwd))
    runs.sort(key=lambda r: r.wall)
    return runs[len(runs) // 2]


# --- the bare parse ---------------------------------------------------------------------------


def listed_files(targets: list[str], cwd: Path) -> list[str]:
    proc = subprocess.run([sys.executable, "-m", "loopcheck", "--show-files", *targets], cwd=cwd,
                          capture_output=True, text=True, check=True)
    return proc.stdout.splitlines()


def programs(files: list[str]) -> list[str]:
    """What loopcheck analyzes of each file: the program (line endings made ``\\n``), a
    notebook's joined code cells; files that cannot be read are left out."""
    from loopcheck.workspace.files import read_source
    from loopcheck.workspace.notebook import NotebookError, read_notebook

    out = []
    for name in files:
        try:
            source = read_source(Path(name))
            out.append(read_notebook(source.text).source if name.endswith(".ipynb") else source.program)
        except (OSError, ValueError, NotebookError):
            continue
    return out


def bare_parse(texts: list[str], repeat: int) -> tuple[float, float]:
    """Median wall seconds of ``libcst.parse_module`` over ``texts``, one process (a big-stack
    thread, as loopcheck parses; syntax errors count as parsed), and its CPU seconds."""
    import libcst as cst

    from loopcheck.parsing import run_deep

    def parse_all() -> tuple[float, float]:
        t, c = time.perf_counter(), time.process_time()
        for text in texts:
            try:
                cst.parse_module(text)
            except (cst.ParserSyntaxError, RecursionError, ValueError):
                pass
        return time.perf_counter() - t, time.process_time() - c

    runs = sorted(run_deep(parse_all) for _ in range(repeat))
    return runs[len(runs) // 2]


#: What a warm check imports (the rule catalog brings the engine and libcst with it).
WARM_IMPORTS = ("loopcheck.cli.commands", "loopcheck.workspace.config", "loopcheck.cli.reporters", "loopcheck.workspace.cache", "loopcheck.cli.runner",
                "loopcheck.workspace.discovery", "loopcheck.workspace.files", "loopcheck.workspace.notebook")


def compile_bytecode() -> None:
    """Write the bytecode of loopcheck's modules, as an installed loopcheck has it (pip
    compiles a wheel's modules when it installs it). An editable install in an environment
    with ``PYTHONDONTWRITEBYTECODE`` set (this project's sandboxes set it) would otherwise
    compile every module again in every process: about 0.1 s of every run."""
    import compileall

    compileall.compile_dir(str(ROOT / "loopcheck"), quiet=1)


def import_floor(repeat: int = 5) -> tuple[float, float]:
    """Median wall and CPU seconds of a process that only imports what a warm check imports."""
    code = "import " + ", ".join(WARM_IMPORTS)
    walls, cpus = [], []
    for _ in range(repeat):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        t = time.perf_counter()
        subprocess.run([sys.executable, "-c", code], check=True)
        walls.append(time.perf_counter() - t)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpus.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
    return statistics.median(walls), statistics.median(cpus)


def count_lines(texts: list[str]) -> int:
    return sum(t.count("\n") + (not t.endswith("\n") and bool(t)) for t in texts)


# --- the report --------------------------------------------------------------------------------


def editor_median(bursts: int = 10) -> float | None:
    """The median milliseconds from the last keystroke of a burst to its diagnostics
    (``scripts/lsp_latency.py``'s typing measurement, a real LSP client), or ``None``
    without the ``server`` extra."""
    try:
        import asyncio

        import lsp_latency
    except ImportError as err:
        print(f"\neditor: not measured ({err})")
        return None

    async def measure() -> list[float]:
        session = lsp_latency.Session()
        await session.start()
        try:
            return await lsp_latency.typing(session, 2000, bursts, 0.02)
        finally:
            await session.stop()

    latencies = asyncio.run(measure())
    median = statistics.median(latencies)
    print(f"\neditor: last keystroke of a burst of 5 -> diagnostics, {bursts} bursts: median {median:.0f} ms "
          f"(min {min(latencies):.0f}, max {max(latencies):.0f})")
    return median


def verdict(value: float, target: float) -> str:
    return "met" if value <= target else "NOT met"


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        child(sys.argv[2:])
        return
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=1, help="runs per measurement (the median is shown)")
    parser.add_argument("--manifest", type=Path, default=HERE / "bench_manifest.toml")
    parser.add_argument("--skip-large", action="store_true", help="leave out the large repository")
    parser.add_argument("--skip-scaling", action="store_true", help="leave out the scaling series")
    parser.add_argument("--skip-editor", action="store_true", help="leave out the language server's latency")
    args = parser.parse_args()

    entries = load(args.manifest)
    missing = ensure(entries)
    if missing:
        sys.exit("\n".join(missing))
    targets: list[tuple[str, str, float, float]] = []  # (what, unit, measured, target)
    tmp = Path(tempfile.mkdtemp(prefix="loopcheck-bench-"))
    cwd = tmp
    load_start = os.getloadavg()
    print(f"machine: {os.cpu_count()} cores (this process may use {len(os.sched_getaffinity(0))}), "
          f"Python {sys.version.split()[0]}, load average {load_start[0]:.2f} {load_start[1]:.2f} {load_start[2]:.2f}")
    compile_bytecode()
    print("bytecode: loopcheck's modules compiled beforehand, as pip install does"
          + (" (PYTHONDONTWRITEBYTECODE is set here)" if os.environ.get("PYTHONDONTWRITEBYTECODE") else ""))

    # -- the corpus
    corpus = [e for e in entries if "corpus" in e.sets]
    paths = [t for e in corpus for t in e.targets()]
    files = listed_files(paths, cwd)
    texts = programs(files)
    lines = count_lines(texts)
    print(f"\ncorpus: {len(corpus)} repositories, {len(files)} files, {lines:,} lines")
    parse_before, parse_cpu = bare_parse(texts, args.repeat)
    print(f"  bare LibCST parse, one process      {parse_before:8.2f} s  (cpu {parse_cpu:.1f} s, "
          f"{lines / parse_before:,.0f} lines/s)")
    common = ["--output-format", "json", "--exit-zero"]
    serial = median_run(lambda i: [*common, "-j1", "--no-cache", *paths], args.repeat, cwd)
    print(f"  loopcheck cold -j1 (--no-cache)     {serial.wall:8.2f} s  (cpu {serial.cpu:.1f} s)")
    cache = tmp / "cache"

    def empty_cache() -> None:
        subprocess.run(["rm", "-rf", str(cache)], check=True)

    cold = median_run(lambda i: [*common, "-j0", "--cache-dir", str(cache), *paths], args.repeat, cwd, empty_cache)
    print(f"  loopcheck cold, all cores (-j0)     {cold.wall:8.2f} s  (cpu {cold.cpu:.1f} s)")
    parse_after, parse_cpu = bare_parse(texts, args.repeat)
    parse_s = (parse_before + parse_after) / 2
    print(f"  bare LibCST parse again             {parse_after:8.2f} s  (cpu {parse_cpu:.1f} s); mean {parse_s:.2f} s")
    print(f"  ratios to the mean parse: cold -j1 {serial.wall / parse_s:.2f}x, cold all cores {cold.wall / parse_s:.2f}x")
    warm = median_run(lambda i: [*common, "-j0", "--cache-dir", str(cache), *paths], max(args.repeat, 3), cwd)
    print(f"  loopcheck warm (nothing changed)    {warm.wall:8.2f} s  (cpu {warm.cpu:.2f} s)"
          f"  {warm.wall / parse_s:.3f}x parse")
    floor_wall, floor_cpu = import_floor()
    print(f"    of which imports (a process importing what a warm check imports: {floor_wall:.2f} s, cpu {floor_cpu:.2f} s)")
    same = serial.output == cold.output == warm.output
    print(f"  output of -j1, all cores and warm: {'identical' if same else 'DIFFERENT'} "
          f"({len(json.loads(serial.output))} findings)")
    print(f"  peak memory of the cold all-cores run: parent {cold.self_mb:.0f} MB, largest worker {cold.workers_mb:.0f} MB")
    targets += [
        ("cold, all cores / bare parse (corpus)", "x", cold.wall / parse_s, COLD_RATIO),
        ("warm, corpus", "s", warm.wall, WARM_S),
        ("peak memory per worker (corpus)", "MB", cold.workers_mb, WORKER_MB),
    ]

    # -- the large repository
    if not args.skip_large:
        for e in [e for e in entries if "large" in e.sets]:
            large = e.targets()
            big_files = listed_files(large, cwd)
            big_lines = count_lines(programs(big_files))
            big_cache = tmp / "large-cache"
            subprocess.run(["rm", "-rf", str(big_cache)], check=True)
            big_cold = loopcheck([*common, "-j0", "--cache-dir", str(big_cache), *large], cwd)
            big_warm = median_run(lambda i: [*common, "-j0", "--cache-dir", str(big_cache), *large], 3, cwd)
            print(f"\n{e.name} (whole repository): {len(big_files)} files, {big_lines:,} lines")
            print(f"  loopcheck cold, all cores           {big_cold.wall:8.2f} s  (cpu {big_cold.cpu:.1f} s,"
                  f" largest worker {big_cold.workers_mb:.0f} MB)")
            print(f"  loopcheck warm                      {big_warm.wall:8.2f} s"
                  f"  ({'identical' if big_warm.output == big_cold.output else 'DIFFERENT'} output)")
            targets += [(f"{e.name}: cold, all cores", "s", big_cold.wall, LARGE_COLD_S),
                        (f"{e.name}: warm", "s", big_warm.wall, LARGE_WARM_S),
                        (f"peak memory per worker ({e.name})", "MB", big_cold.workers_mb, WORKER_MB)]

    # -- scaling
    if not args.skip_scaling:
        series = sorted((e for e in entries if "scaling" in e.sets), key=lambda e: e.order)
        print("\nscaling (cold, all cores, --no-cache):")
        print(f"  {'repos':>5} {'files':>6} {'lines':>8} {'seconds':>8} {'us/line':>8}")
        for n in (1, 2, 4, 8):
            subset = [t for e in series[:n] for t in e.targets()]
            n_files = listed_files(subset, cwd)
            n_lines = count_lines(programs(n_files))
            run = median_run(lambda i: [*common, "-j0", "--no-cache", *subset], args.repeat, cwd)
            print(f"  {n:>5} {len(n_files):>6} {n_lines:>8,} {run.wall:>8.2f} {run.wall / n_lines * 1e6:>8.1f}")

    # -- start-up
    from startup import timed

    exe = str(Path(sys.executable).with_name("loopcheck"))
    startup_ms, best_ms, _cpu = timed([exe, "--version"], 15, str(tmp))
    print(f"\nstart-up: loopcheck --version median {startup_ms:.0f} ms (best {best_ms:.0f} ms)")
    targets.append(("start-up, loopcheck --version", "ms", startup_ms, STARTUP_MS))

    # -- editor
    if not args.skip_editor:
        editor_ms = editor_median()
        if editor_ms is not None:
            targets.append(("editor: last keystroke -> diagnostics, 2,000 lines", "ms", editor_ms, EDITOR_MS))

    load_end = os.getloadavg()
    print(f"\nload average at the end: {load_end[0]:.2f} {load_end[1]:.2f} {load_end[2]:.2f}")
    print("\ntargets (issue 13):")
    for what, unit, value, target in targets:
        print(f"  {what:<52} {value:9.2f} {unit:<2}  target <= {target:g} {unit:<2}  {verdict(value, target)}")
    subprocess.run(["rm", "-rf", str(tmp)], check=False)


if __name__ == "__main__":
    main()
