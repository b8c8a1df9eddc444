"""Run loopcheck on the corpus as a user would, and score its findings against human verdicts.

Usage: python scripts/eval/run_corpus.py --split dev|heldout|all [--json OUT] [--repo NAME]
           [--loopcheck CMD] [--context N] [--summary-only] [--skeleton]

For each manifest repository of the split, runs ``loopcheck check <subpaths>`` from the
repository root (its exported tree under /work/corpus/repos), prints every finding with
``--context`` lines around it and its verdict from scripts/eval/verdicts.toml, then the
totals: findings, judged true, judged false, not yet judged, and precision over the judged.

A verdict is keyed by repo, path, code and the stripped text of the flagged line (plus
``cell`` for notebooks), so it survives lines moving; two findings of one code on identical
lines of one file share a verdict. ``--summary-only`` prints the counts without any finding
(for the held-out half, whose findings nobody reads before the end). ``--skeleton`` prints
TOML entries to fill for the findings not yet judged.
"""

from __future__ import annotations

import argparse
import json
import sys
import tomllib
from collections import Counter
from pathlib import Path

from common import HERE, load_manifest, loopcheck_command, run_loopcheck, source_lines


def load_verdicts(path: Path) -> dict[tuple, dict]:
    """Read verdicts.toml: ``[[verdict]]`` tables with repo, path, code, line, verdict (bool),
    reason, ``cell`` for notebooks, and ``row`` (1-based line number) where two findings with the
    same line text in one file need different verdicts. Returns them keyed by (repo, path, code,
    cell, line, row), row None where not given: such an entry covers every finding with its line
    text that has no entry of its own row, and two entries with one key must agree.
    Raises ValueError on a duplicate key whose verdicts differ, or a missing field."""
    if not path.is_file():
        return {}
    with open(path, "rb") as f:
        entries = tomllib.load(f).get("verdict", [])
    table = {}
    for v in entries:
        missing = {"repo", "path", "code", "line", "verdict", "reason"} - v.keys()
        if missing:
            raise ValueError(f"{path}: verdict {v} lacks {sorted(missing)}")
        key = (v["repo"], v["path"], v["code"], v.get("cell"), v["line"], v.get("row"))
        if key in table and table[key]["verdict"] != v["verdict"]:
            raise ValueError(f"{path}: two different verdicts for {key}")
        table[key] = v
    return table


def context(root: Path, f: dict, width: int) -> list[str]:
    """Numbered source lines around the finding, the flagged one marked with ``>``."""
    lines = source_lines(root / f["filename"], f.get("cell"))
    row = f["location"]["row"]
    lo, hi = max(1, row - width), min(len(lines), row + width)
    return [f"  {'>' if n == row else ' '}{n:5} | {lines[n - 1]}" for n in range(lo, hi + 1)]


def toml_str(s: str) -> str:
    """A TOML basic string."""
    return json.dumps(s, ensure_ascii=False)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--split", choices=["dev", "heldout", "census", "all"], required=True)
    parser.add_argument("--json", type=Path, help="write every finding with its verdict here")
    parser.add_argument("--repo", action="append", help="only this repository (repeatable)")
    parser.add_argument("--loopcheck", help="loopcheck command (default: loopcheck on PATH)")
    parser.add_argument("--context", type=int, default=3, help="lines shown on each side")
    parser.add_argument("--verdicts", type=Path, default=HERE / "verdicts.toml")
    parser.add_argument("--summary-only", action="store_true", help="print counts, no finding")
    parser.add_argument("--skeleton", action="store_true", help="print TOML for unjudged findings")
    args = parser.parse_args()

    verdicts = load_verdicts(args.verdicts)
    cmd = loopcheck_command(args.loopcheck)
    _, repos = load_manifest()
    repos = [r for r in repos if args.split in ("all", r.split) and (not args.repo or r.name in args.repo)]
    counts: Counter = Counter()
    per_code: Counter = Counter()
    records, skeleton, used = [], [], set()
    for repo in repos:
        if not repo.root.is_dir():
            print(f"MISSING {repo.name}: run scripts/eval/fetch_corpus.py", file=sys.stderr)
            counts["missing repositories"] += 1
            continue
        paths = [p for p in repo.subpaths if (repo.root / p).exists()]
        findings = run_loopcheck(cmd, paths, repo.root) if paths else []
        for f in findings:
            source = repo.root / f["filename"]
            lines = source_lines(source, f.get("cell")) if source.is_file() else []
            row = f["location"]["row"]
            text = lines[row - 1].strip() if 0 < row <= len(lines) else ""
            key = (repo.name, f["filename"], f["code"], f.get("cell"), text)
            vkey = (*key, row) if (*key, row) in verdicts else (*key, None)
            v = verdicts.get(vkey)
            used.add(vkey)
            state = "unjudged" if v is None else ("true" if v["verdict"] else "false")
            counts[state] += 1
            per_code[f["code"], state] += 1
            records.append({"repo": repo.name, "split": repo.split, "path": f["filename"],
                            "cell": f.get("cell"), "row": row, "code": f["code"], "line": text,
                            "message": f["message"], "verdict": state,
                            "reason": v["reason"] if v else None})
            if v is None and key not in {tuple(s[0]) for s in skeleton}:
                skeleton.append((key, f))
            if args.summary_only or args.skeleton:
                continue
            where = f"{f['filename']}" + (f":cell {f['cell']}" if f.get("cell") else "")
            print(f"{repo.name} {where}:{row}:{f['location']['column']}: {f['code']} {f['message']}")
            print("\n".join(context(repo.root, f, args.context) if lines else []))
            for rel in f.get("related", []):
                print(f"        related {rel.get('filename', '')}:{rel['row']}: {rel['message']}")
            print(f"  verdict: {state}" + (f" ({v['reason']})" if v else "") + "\n")
    if args.skeleton:
        for (repo_name, path, code, cell, text), f in skeleton:
            print("[[verdict]]")
            print(f"repo = {toml_str(repo_name)}\npath = {toml_str(path)}\ncode = {toml_str(code)}")
            if cell is not None:
                print(f"cell = {cell}")
            print(f"line = {toml_str(text)}\n# row {f['location']['row']}: {f['message'][:200]}")
            print("verdict = \nreason = \"\"\n")
    judged = counts["true"] + counts["false"]
    total = counts["true"] + counts["false"] + counts["unjudged"]
    print(f"split {args.split}: {len(repos)} repositories, {total} findings: {counts['true']} judged true, "
          f"{counts['false']} judged false, {counts['unjudged']} not yet judged; precision over judged: "
          + (f"{counts['true'] / judged:.2f} ({counts['true']}/{judged})" if judged else "n/a"))
    for code in sorted({c for c, _ in per_code}):
        print(f"  {code}: " + ", ".join(f"{per_code[code, s]} {s}" for s in ("true", "false", "unjudged")))
    stale = [k for k in verdicts if k[0] in {r.name for r in repos} and k not in used]
    if stale and not args.summary_only:
        print(f"{len(stale)} verdicts match no finding of this run (fixed, or the line changed):")
        for k in stale:
            print(f"  {k[0]} {k[1]} {k[2]} {k[4]!r}")
    if args.json:
        args.json.write_text(json.dumps(records, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
