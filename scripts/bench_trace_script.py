"""Measure ``loopcheck trace`` on any training program: overhead per optimizer step, same behaviour.

Usage::

    python scripts/bench_trace_script.py [--steps 20] [--rounds 3] [--skip 5] [--threads 1]
        [--compare REGEX] [--log DIR] [--aa] -- python train.py ARGS...

Runs the program (in the current directory) ``--rounds`` times as it is, ``python train.py
ARGS``, and ``--rounds`` times as ``loopcheck trace --steps N -- python train.py ARGS``,
alternating (plain, traced, traced, plain, ...), and prints:

- **CPU and wall seconds per optimizer step** of the optimizer that steps most, from the end of
  its step ``--skip`` to the end of its step ``--steps`` (start-up, data loading and warm-up
  left out): ``mean`` is the whole window divided by its steps (evaluation or epoch ends that
  fall inside it included), ``step`` the median of the single steps' times (robust to a burst
  of other load on the machine). Each kind's median over the rounds, its spread (min-max), and
  the overhead: the median of the per-round ratios traced/plain - 1. The plain run is stopped
  the way trace stops it: before any optimizer's step N+1, by ``SystemExit`` from a global
  step pre-hook.
- **same behaviour**: the values captured by ``--compare`` (default: the number after each
  ``loss``) in the program's output, plain against traced (trace sends the program's standard
  output to standard error): equal or not, and how many were compared (a program that does not
  seed its random generators differs between any two runs);
- what trace reported (its concise report of the last traced round).

The step times are taken inside each program by global optimizer step hooks that a
``sitecustomize`` module installs (put first on ``PYTHONPATH``, active only in the runs this
script starts): one ``time.perf_counter()``/``time.process_time()`` pair per step, in plain and
traced runs alike. ``OMP_NUM_THREADS``/``MKL_NUM_THREADS`` are set to ``--threads`` in both.
``--aa`` runs plain against plain: the noise floor of these numbers on this machine.
``--log DIR`` keeps each run's output and step times there; ``--from-log DIR`` prints the
numbers again from such a directory without running anything.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

SITECUSTOMIZE = '''\
import os
if os.environ.get("LCBENCH_OUT"):
    import atexit, json, time
    from torch.optim.optimizer import register_optimizer_step_post_hook, register_optimizer_step_pre_hook

    _stamps, _count, _order = [], {}, {}
    _stop = int(os.environ.get("LCBENCH_STOP") or 0)

    def _pre(opt, args, kwargs):
        if _stop and _count.get(id(opt), 0) >= _stop:
            raise SystemExit(0)

    def _post(opt, args, kwargs):
        n = _count[id(opt)] = _count.get(id(opt), 0) + 1
        k = _order.setdefault(id(opt), len(_order))
        _stamps.append((k, n, time.perf_counter(), time.process_time()))

    register_optimizer_step_pre_hook(_pre)
    register_optimizer_step_post_hook(_post)

    @atexit.register
    def _write():
        with open(os.environ["LCBENCH_OUT"], "w") as f:
            json.dump(_stamps, f)
'''

DEFAULT_COMPARE = r"loss\W{0,3}(?:[a-z ]{0,12}\W{0,3})?(-?\d+\.\d+(?:e[-+]?\d+)?)"

#: The statistics printed, as (key, label): seconds per step.
STATS = (("cpu", "cpu mean"), ("cpu_step", "cpu step"), ("wall", "wall mean"))


def step_times(stamps: list, skip: int, last: int) -> dict | None:
    """Seconds per step of the optimizer that stepped most, between the ends of its steps
    ``skip`` and ``last`` (or its last step, if fewer): ``{"wall", "cpu"}`` (the window's mean),
    ``"cpu_step"`` (the median single step) and ``"end"``; ``None`` with too few steps.

    Args:
        stamps: ``[optimizer index, its step number, perf_counter s, process_time s]`` rows, as
            the ``sitecustomize`` hook writes them.
    """
    per: dict[int, list] = {}
    for k, n, wall, cpu in stamps:
        per.setdefault(k, []).append((n, wall, cpu))
    if not per:
        return None
    k = max(per, key=lambda k: (len(per[k]), -k))
    rows = {n: (wall, cpu) for n, wall, cpu in per[k]}
    end = min(last, max(rows))
    if end <= skip or any(n not in rows for n in range(skip, end + 1)):
        return None
    (w0, c0), (w1, c1) = rows[skip], rows[end]
    singles = [rows[n + 1][1] - rows[n][1] for n in range(skip, end)]
    return {"wall": (w1 - w0) / (end - skip), "cpu": (c1 - c0) / (end - skip),
            "cpu_step": statistics.median(singles), "end": end}


def run_once(command: list[str], traced: bool, steps: int, env: dict, workdir: Path, tag: str) -> dict:
    """One run; writes its step stamps and output under ``workdir`` as ``TAG.*``; returns them."""
    out = workdir / f"{tag}.stamps.json"
    out.unlink(missing_ok=True)
    env = dict(env, LCBENCH_OUT=str(out))
    if traced:
        cmd = [sys.executable, "-m", "loopcheck", "trace", "--steps", str(steps), "--output-format", "concise",
               "--", *command]
        env.pop("LCBENCH_STOP", None)
    else:
        cmd = [sys.executable if Path(command[0]).name.startswith("python") else command[0], *command[1:]]
        env["LCBENCH_STOP"] = str(steps)
    proc = subprocess.run(cmd, check=False, env=env, capture_output=True, text=True)
    (workdir / f"{tag}.stdout").write_text(proc.stdout)
    (workdir / f"{tag}.stderr").write_text(proc.stderr)
    (workdir / f"{tag}.rc").write_text(str(proc.returncode))
    return load_run(workdir, tag, traced)


def load_run(workdir: Path, tag: str, traced: bool) -> dict:
    """A run's stamps, exit status, the program's output (stdout plain; stderr traced, where the
    report is on stdout) and trace's report, read back from ``workdir``."""
    stamps = workdir / f"{tag}.stamps.json"
    stdout, stderr = (workdir / f"{tag}.stdout").read_text(), (workdir / f"{tag}.stderr").read_text()
    rc = workdir / f"{tag}.rc"
    return {"stamps": json.loads(stamps.read_text()) if stamps.exists() else [],
            "rc": int(rc.read_text()) if rc.exists() else None,
            "program": stderr if traced else stdout + stderr, "report": stdout if traced else ""}


def summarize(runs: dict, skip: int, steps: int, compare: re.Pattern, aa: bool) -> list[str]:
    """The printed result for ``runs`` (``{False: [plain runs], True: [traced runs]}``)."""
    lines = []
    times = {}
    for traced in (False, True):
        rows = [step_times(r["stamps"], skip, steps) for r in runs[traced]]
        name = "traced" if traced else "plain"
        codes = sorted({r["rc"] for r in runs[traced]}, key=str)
        if not rows or any(r is None for r in rows):
            lines.append(f"{name:6s}: too few optimizer steps (exit {codes})")
            times[traced] = None
            continue
        times[traced] = rows
        parts = []
        for key, label in STATS:
            vals = [r[key] for r in rows]
            parts.append(f"{label} {statistics.median(vals):.4f} ({min(vals):.4f}-{max(vals):.4f})")
        lines.append(f"{name:6s}: s/step over steps {skip}->{rows[0]['end']}: {', '.join(parts)}; exit {codes}")
    if times[False] and times[True]:
        for key, label in STATS:
            ratios = [b[key] / a[key] - 1 for a, b in zip(times[False], times[True])]
            lines.append(f"overhead {label:9s}: {100 * statistics.median(ratios):+5.1f} % (rounds: "
                         f"{', '.join(f'{100 * r:+.1f}' for r in ratios)})")
    values = [[m.group(1) for m in compare.finditer(r["program"])] for r in runs[False] + runs[True]]
    same = all(v == values[0] for v in values)
    differing = [i for i, v in enumerate(values) if v != values[0]]
    verdict = "nothing to compare" if not values[0] else "yes" if same else "NO"
    lines.append(f"same output: {verdict} ({len(values[0])} values compared in each of "
                 f"{len(values)} runs{'' if same else f'; runs differing from the first: {differing}'})")
    if not aa:
        lines.append("trace reported:")
        report = runs[True][-1]["report"].splitlines() if runs[True] else []
        lines += [f"  {line}" for line in report] or ["  (nothing)"]
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--skip", type=int, default=5, help="steps left out at the start (warm-up)")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--compare", default=DEFAULT_COMPARE,
                        help="regex whose first group is compared between plain and traced output")
    parser.add_argument("--log", help="directory to keep every run's output in")
    parser.add_argument("--from-log", help="print the numbers of a --log directory again; run nothing")
    parser.add_argument("--aa", action="store_true",
                        help="calibration: the 'traced' runs run plain too (the noise floor of the overhead)")
    parser.add_argument("command", nargs=argparse.REMAINDER)
    args = parser.parse_args()
    compare = re.compile(args.compare, re.IGNORECASE)
    if args.from_log:
        d = Path(args.from_log)
        runs = {t: [load_run(d, p.name[:-len(".stdout")], t and not args.aa)
                    for p in sorted(d.glob(f"{'traced' if t else 'plain'}*.stdout"))] for t in (False, True)}
        print("\n".join(summarize(runs, args.skip, args.steps, compare, args.aa)))
        return
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        parser.error("give the program after --, e.g. -- python train.py")
    with tempfile.TemporaryDirectory(prefix="lcbench-") as helper:
        (Path(helper) / "sitecustomize.py").write_text(SITECUSTOMIZE)
        workdir = Path(args.log) if args.log else Path(helper)
        workdir.mkdir(parents=True, exist_ok=True)
        env = dict(os.environ, OMP_NUM_THREADS=str(args.threads), MKL_NUM_THREADS=str(args.threads),
                   PYTHONPATH=os.pathsep.join([helper, *filter(None, [os.environ.get("PYTHONPATH")])]))
        runs = {False: [], True: []}
        for i in range(2 * args.rounds):
            traced = (i % 4) in (1, 2)  # plain, traced, traced, plain, ...
            tag = f"{'traced' if traced else 'plain'}{len(runs[traced]) + 1}"
            runs[traced].append(run_once(command, traced and not args.aa, args.steps, env, workdir, tag))
        print(f"{' '.join(command)}  (cwd {os.getcwd()}; {'A/A calibration, ' if args.aa else ''}{args.rounds} "
              f"rounds each, {args.threads} thread(s), {os.cpu_count()} CPUs, load average "
              f"{os.getloadavg()[0]:.1f})")
        print("\n".join(summarize(runs, args.skip, args.steps, compare, args.aa)))


if __name__ == "__main__":
    main()
