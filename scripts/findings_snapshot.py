"""Record loopcheck's findings over the fixtures and the dev corpus, or compare two records.

Usage:
    python scripts/findings_snapshot.py record OUT.json [--whole] [--jobs N] [--only NAME]
    python scripts/findings_snapshot.py diff BEFORE.json AFTER.json

``record`` runs the ``loopcheck`` on PATH (``check --output-format json --isolated
--exit-zero``, plus ``--no-cache`` and ``--preview`` when the command has those flags) once per
target and writes, per target, the findings (file names relative to where it ran), the exit
status, the standard error and the child's CPU seconds (user + system, from
``resource.getrusage(RUSAGE_CHILDREN)``) and peak resident memory (MiB). Targets: ``fixtures``
(the repository's ``fixtures/`` directory) and, for each ``dev`` repository of
``scripts/eval/manifest.toml``, its manifest subpaths (``<name>``); with ``--whole``, also the
whole exported tree (``<name>:.``). Held-out repositories are never run. ``--jobs`` runs that
many targets at once (CPU seconds stay per target; wall times then mean little).

``diff`` prints every target whose findings, exit status or standard error differ, finding
by finding, and exits 1 when any does (0 when the two records agree).

This is a development tool for changes that must not change the findings (engine speed
work); it is not a benchmark: use the CPU seconds only as a rough guide.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent / "eval"))
from common import load_manifest, relative  # noqa: E402

REPO = Path(__file__).resolve().parent.parent


def _base_command() -> list[str]:
    help_text = subprocess.run(["loopcheck", "check", "--help"], capture_output=True, text=True).stdout
    cmd = ["loopcheck", "check", "--output-format", "json", "--isolated", "--exit-zero"]
    return cmd + [flag for flag in ("--no-cache", "--preview") if flag in help_text]


def targets(whole: bool) -> list[tuple[str, Path, list[str]]]:
    """``(target name, directory to run in, paths)`` for the fixtures and the dev corpus."""
    out = [("fixtures", REPO, ["fixtures"])]
    _, repos = load_manifest()
    for repo in repos:
        if repo.split != "dev" or not repo.root.is_dir():
            continue
        paths = [p for p in repo.subpaths if (repo.root / p).exists()]
        if paths:
            out.append((repo.name, repo.root, paths))
        if whole and paths != ["."]:
            out.append((f"{repo.name}:.", repo.root, ["."]))
    return out


def run_one(cmd: list[str], cwd: Path, paths: list[str]) -> dict:
    """Run loopcheck on ``paths`` in ``cwd``; its findings, status, stderr, CPU and memory."""
    start = time.perf_counter()
    # getrusage(RUSAGE_CHILDREN) sums over every waited-for child, so measure in a shell
    # that runs only this one and reports its own children's usage.
    probe = (
        "import json, resource, subprocess, sys\n"
        "p = subprocess.run(sys.argv[2:], cwd=sys.argv[1], capture_output=True, text=True)\n"
        "u = resource.getrusage(resource.RUSAGE_CHILDREN)\n"
        "print(json.dumps({'rc': p.returncode, 'out': p.stdout, 'err': p.stderr,"
        " 'cpu': u.ru_utime + u.ru_stime, 'rss': u.ru_maxrss / 1024}))\n"
    )
    proc = subprocess.run([sys.executable, "-c", probe, str(cwd), *cmd, *paths], capture_output=True, text=True)
    res = json.loads(proc.stdout)
    findings = json.loads(res["out"]) if res["out"].strip() else None
    for f in findings or []:
        f["filename"] = relative(f["filename"], cwd)
        for rel in f.get("related", []):
            if rel.get("filename"):
                rel["filename"] = relative(rel["filename"], cwd)
    return {"rc": res["rc"], "stderr": res["err"], "findings": findings, "cpu_s": round(res["cpu"], 2),
            "wall_s": round(time.perf_counter() - start, 2), "max_rss_mib": round(res["rss"], 1)}


def record(out: Path, whole: bool, jobs: int, only: list[str] | None) -> None:
    cmd = _base_command()
    todo = [t for t in targets(whole) if not only or t[0] in only or t[0].split(":")[0] in only]
    result: dict = {}

    def work(t):
        name, cwd, paths = t
        r = run_one(cmd, cwd, paths)
        n = len(r["findings"] or [])
        print(f"{name}: {n} findings, rc {r['rc']}, cpu {r['cpu_s']} s, rss {r['max_rss_mib']} MiB", flush=True)
        return name, r

    with ThreadPoolExecutor(jobs) as pool:
        for name, r in pool.map(work, todo):
            result[name] = r
    out.write_text(json.dumps({"command": cmd, "targets": result}, indent=1, sort_keys=True))
    total = sum(r["cpu_s"] for r in result.values())
    print(f"{len(result)} targets, {sum(len(r['findings'] or []) for r in result.values())} findings, "
          f"cpu {total:.1f} s, max rss {max(r['max_rss_mib'] for r in result.values()):.0f} MiB")


def _key(f: dict) -> str:
    return json.dumps(f, sort_keys=True)


def diff(before: Path, after: Path) -> int:
    a = json.loads(before.read_text())["targets"]
    b = json.loads(after.read_text())["targets"]
    bad = 0
    for name in sorted(set(a) | set(b)):
        if name not in a or name not in b:
            print(f"{name}: only in {'after' if name in b else 'before'}")
            continue
        ra, rb = a[name], b[name]
        if ra["rc"] != rb["rc"] or ra["stderr"] != rb["stderr"]:
            bad += 1
            print(f"{name}: exit {ra['rc']} -> {rb['rc']}; stderr {ra['stderr'][-300:]!r} -> {rb['stderr'][-300:]!r}")
        fa = [_key(f) for f in ra["findings"] or []]
        fb = [_key(f) for f in rb["findings"] or []]
        if fa != fb:
            bad += 1
            gone = [f for f in fa if f not in fb]
            new = [f for f in fb if f not in fa]
            print(f"{name}: {len(fa)} -> {len(fb)} findings" + ("" if gone or new else " (order changed)"))
            for f in gone:
                print(f"  - {f}")
            for f in new:
                print(f"  + {f}")
    ca = sum(r["cpu_s"] for r in a.values())
    cb = sum(r["cpu_s"] for r in b.values())
    print(f"{'DIFFERENT' if bad else 'identical'}: {bad} targets differ; cpu {ca:.1f} s -> {cb:.1f} s")
    return 1 if bad else 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("record")
    r.add_argument("out", type=Path)
    r.add_argument("--whole", action="store_true", help="also each dev repository's whole tree")
    r.add_argument("--jobs", type=int, default=1)
    r.add_argument("--only", action="append", help="only this target (repeatable)")
    d = sub.add_parser("diff")
    d.add_argument("before", type=Path)
    d.add_argument("after", type=Path)
    args = parser.parse_args()
    if args.cmd == "record":
        record(args.out, args.whole, args.jobs, args.only)
        return 0
    return diff(args.before, args.after)


if __name__ == "__main__":
    os.environ.setdefault("PYTHONHASHSEED", "0")
    sys.exit(main())
