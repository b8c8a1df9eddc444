"""Recall on publicly fixed bugs: run loopcheck on each bug's parent commit and on its fix.

Usage: python scripts/eval/fixed_bugs.py [--split dev|heldout|all] [--bug ID ...]
           [--loopcheck CMD] [--json OUT]

For every bug of scripts/eval/fixed_bugs.toml: the parent and fix trees are exported from the
fetch tool's mirror to /work/corpus/bugs/<id>/{parent,fix}/ (once), loopcheck runs on the
bug's ``check`` files with the tree as the working directory (so imports resolve), and the
bug is scored:

- parent: *found* when a finding of the bug's code sits at, or names among its related lines, one of its ``buggy`` lines (for a
  ``new:<name>`` kind, which no rule covers yet, a finding of any code there); *elsewhere*
  when findings of that code exist but none at those lines; *other code* when only a finding
  of another code sits at a buggy line (LC501 for a ``.to(device, dtype=...)`` tagged LC502);
  else *missed*;
- fix: *silent* when no finding of that code (any code for ``new:``) sits on a line whose text
  is a buggy line's text, else *still flagged*.

Prints one line per bug, then totals per split and per code. A bug whose repository has no
mirror is listed with the fetch call that brings it.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from pathlib import Path

from common import CORPUS, MIRRORS, export_tree, load_toml, loopcheck_command, run_loopcheck, source_lines


def mirror_of(repo: str) -> Path | None:
    """The bare git directory of ``owner/name`` left by the fetch tool, or None."""
    base = MIRRORS / repo.replace("/", "+") / "repo"
    for d in (base, base / ".git"):
        if (d / "HEAD").is_file():
            return d
    return None


def tree(bug: dict, which: str) -> Path:
    """The exported tree of the bug's ``parent`` or ``fix`` commit (exported on first use)."""
    dest = CORPUS / "bugs" / bug["id"] / which
    mark = dest / ".eval-commit"
    if not (mark.is_file() and mark.read_text().strip() == bug[which]):
        export_tree(mirror_of(bug["repo"]), bug[which], dest)
        mark.write_text(bug[which] + "\n")
    return dest


def findings_at(root: Path, files: list[str], cmd: list[str]) -> list[dict]:
    """loopcheck's findings on the existing ``files`` of a tree (file names relative to ``root``)."""
    present = [f for f in files if (root / f).is_file()]
    return run_loopcheck(cmd, present, root) if present else []


def score(bug: dict, cmd: list[str]) -> dict:
    """Run loopcheck at the parent and at the fix; classify as described in the module doc."""
    code, new_kind = bug["code"], bug["code"].startswith("new:")
    wanted = {(b["path"], b["line"]) for b in bug["buggy"]}
    parent = findings_at(tree(bug, "parent"), bug["check"], cmd)
    relevant = [f for f in parent if new_kind or f["code"] == code]
    # at a buggy line, or naming one among the lines that make it a bug (LC901 is reported at
    # the sampler and names the epoch loop the fix changes)
    at = [f for f in relevant if (f["filename"], f["location"]["row"]) in wanted
          or any((r.get("filename") or f["filename"], r["row"]) in wanted for r in f.get("related", []))]
    other = [f for f in parent if (f["filename"], f["location"]["row"]) in wanted]
    if at:
        outcome = "found"
    elif relevant and not new_kind:
        outcome = "elsewhere"
    else:
        outcome = "other code" if other else "missed"
    fix_root = tree(bug, "fix")
    texts = {(b["path"], b["text"]) for b in bug["buggy"]}
    still = []
    for f in findings_at(fix_root, bug["check"], cmd):
        if not (new_kind or f["code"] == code):
            continue
        lines = source_lines(fix_root / f["filename"], f.get("cell"))
        row = f["location"]["row"]
        if 0 < row <= len(lines) and (f["filename"], lines[row - 1].strip()) in texts:
            still.append(f)
    return {"id": bug["id"], "repo": bug["repo"], "split": bug["split"], "code": code, "outcome": outcome,
            "fix": "still flagged" if still else "silent",
            "parent_findings": [(f["code"], f["filename"], f["location"]["row"]) for f in parent],
            "at": [(f["code"], f["filename"], f["location"]["row"]) for f in at]}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--split", choices=["dev", "heldout", "all"], default="dev")
    parser.add_argument("--bug", action="append", help="only this bug id (repeatable)")
    parser.add_argument("--loopcheck", help="loopcheck command (default: loopcheck on PATH)")
    parser.add_argument("--json", type=Path, help="write every bug's result here")
    args = parser.parse_args()
    cmd = loopcheck_command(args.loopcheck)
    bugs = [b for b in load_toml("fixed_bugs.toml")["bug"]
            if args.split in ("all", b["split"]) and (not args.bug or b["id"] in args.bug)]
    results = []
    for bug in bugs:
        if mirror_of(bug["repo"]) is None:
            print(f"MISSING {bug['id']}: call fetch github:{bug['repo']}, then run this again")
            continue
        r = score(bug, cmd)
        results.append(r)
        where = ", ".join(f"{c} {p}:{n}" for c, p, n in r["at"]) or "; ".join(
            f"{c} {p}:{n}" for c, p, n in r["parent_findings"]) or "no finding"
        print(f"{r['split']:8} {r['code']:36} {r['outcome']:9} fix {r['fix']:13} {r['id']}  [{where}]")
    for split in ("dev", "heldout"):
        rs = [r for r in results if r["split"] == split]
        if not rs:
            continue
        c = Counter(r["outcome"] for r in rs)
        silent = sum(r["outcome"] == "found" and r["fix"] == "silent" for r in rs)
        print(f"\n== {split}: {len(rs)} bugs: found {c['found']}, elsewhere {c['elsewhere']}, "
              f"other code {c['other code']}, missed {c['missed']} "
              f"(rule codes only: found {sum(r['outcome'] == 'found' for r in rs if not r['code'].startswith('new:'))}"
              f"/{sum(not r['code'].startswith('new:') for r in rs)}); silent at the fix: {silent} of {c['found']} found")
        for code in sorted({r["code"] for r in rs}):
            cc = Counter(r["outcome"] for r in rs if r["code"] == code)
            print(f"  {code:36} found {cc['found']}/{sum(cc.values())}, elsewhere {cc['elsewhere']}, "
                  f"other code {cc['other code']}, missed {cc['missed']}")
    if args.json:
        args.json.write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
