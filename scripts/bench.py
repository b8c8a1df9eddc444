"""Measure loopcheck's speed on a directory of Python files.

Usage: python scripts/bench.py PATH [--repeat N]

Prints files, lines, the time to parse with LibCST alone, the time of a full check, and
lines per second (best of N runs, one process, files read beforehand).
"""

from __future__ import annotations

import argparse
import time

import libcst as cst

from loopcheck.analysis import check_source
from loopcheck.discovery import iter_python_files


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("path")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    files = [(str(p), p.read_text(encoding="utf-8", errors="replace")) for p in iter_python_files([args.path])]
    lines = sum(src.count("\n") + 1 for _, src in files)

    def best(fn) -> float:
        times = []
        for _ in range(args.repeat):
            t = time.perf_counter()
            fn()
            times.append(time.perf_counter() - t)
        return min(times)

    def parse_all() -> None:
        for _, src in files:
            try:
                cst.parse_module(src)
            except cst.ParserSyntaxError:
                pass

    findings = 0

    def check_all() -> None:
        nonlocal findings
        findings = sum(len(check_source(src, name)) for name, src in files)

    t_parse = best(parse_all)
    t_check = best(check_all)
    print(f"files {len(files)}  lines {lines}  findings {findings}")
    print(f"parse only  {t_parse:.2f} s  ({lines / t_parse:,.0f} lines/s)")
    print(f"full check  {t_check:.2f} s  ({lines / t_check:,.0f} lines/s)")


if __name__ == "__main__":
    main()
