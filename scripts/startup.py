"""Measure loopcheck's start-up: wall time of short commands, and what ``--version`` imports.

Usage: python scripts/startup.py [--repeat 15]

Runs each command ``--repeat`` times in a fresh process (the installed ``loopcheck`` console
script next to this Python) and prints the median and the best wall time and the median CPU
time (user + system) in milliseconds:
``--version``, ``--help``, ``rules``, a check of a file without a training loop (no parse) and
of one with a loop (LibCST parse and the analysis), and, for scale, ``python -c pass``. Then
the ten largest cumulative imports of ``loopcheck --version`` (``python -X importtime``).
Target (issue 13): ``loopcheck --version`` <= 150 ms.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TARGET_MS = 150.0


def timed(cmd: list[str], repeat: int, cwd: str) -> tuple[float, float, float]:
    """Median and best wall time, and median CPU time (user + system, which other load on
    the machine disturbs less), in milliseconds."""
    times, cpu = [], []
    for _ in range(repeat):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        t = time.perf_counter()
        subprocess.run(cmd, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        times.append((time.perf_counter() - t) * 1000)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu.append((after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime) * 1000)
    return statistics.median(times), min(times), statistics.median(cpu)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=15)
    args = parser.parse_args()
    exe = str(Path(sys.executable).with_name("loopcheck"))
    if not os.path.exists(exe):
        sys.exit("no loopcheck console script next to this Python: pip install -e .")
    with tempfile.TemporaryDirectory() as tmp:
        Path(tmp, "utils.py").write_text("def mean(xs):\n    return sum(xs) / len(xs)\n")
        Path(tmp, "train.py").write_text((ROOT / "fixtures" / "LC101_bad.py").read_text())
        runs = {
            "python -c pass": [sys.executable, "-c", "pass"],
            "loopcheck --version": [exe, "--version"],
            "loopcheck --help": [exe, "--help"],
            "loopcheck rules": [exe, "rules"],
            "loopcheck utils.py (no training loop)": [exe, "utils.py"],
            "loopcheck train.py (a training loop)": [exe, "train.py"],
        }
        for name, cmd in runs.items():
            median, best, cpu = timed(cmd, args.repeat, tmp)
            note = f"  (target {TARGET_MS:.0f} ms: {'met' if median <= TARGET_MS else 'NOT met'})" \
                if name == "loopcheck --version" else ""
            print(f"{name:<40} median {median:6.0f} ms   best {best:6.0f} ms   cpu {cpu:6.0f} ms{note}")
        proc = subprocess.run([sys.executable, "-X", "importtime", exe, "--version"], cwd=tmp,
                              capture_output=True, text=True)
    rows = []
    for line in proc.stderr.splitlines():
        if line.startswith("import time:") and "|" in line and "cumulative" not in line:
            _self, cumulative, name = line[len("import time:"):].split("|")
            rows.append((int(cumulative), name.rstrip()))
    print("\nlargest cumulative imports of `loopcheck --version` (us):")
    for cumulative, name in sorted(rows, reverse=True)[:10]:
        print(f"{cumulative:>9}  {name}")


if __name__ == "__main__":
    main()
