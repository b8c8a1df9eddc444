"""Re-create /work/corpus/repos from scripts/eval/manifest.toml, or say what is missing.

Usage: python scripts/eval/fetch_corpus.py [--split dev|heldout|all] [--check] [--stats]

For each repository of the manifest: when ``repos/<owner>__<name>/`` holds the pinned commit
(its ``.eval-commit`` file) nothing is done; when the fetch tool's bare mirror
(``/work/.mirror/<owner>+<name>/repo``) has the commit, the tree is exported with
``git cat-file --batch`` (blobs the snapshot lacks are listed in ``.eval-absent``); otherwise the commands to run are printed (the fetch tool is
not a shell command: a session with it calls ``fetch github:owner/name`` and runs this again).
Repositories of ``source = "index"`` are single files read from the search index; missing
ones are listed with the read_file call that gives them.

``--check`` only reports (exports nothing). ``--stats`` prints the Python files, notebooks and
lines (a notebook's code-cell lines) under each repository's subpaths, per split. Exit status 1 when something is
missing or the recorded split is not the seeded draw.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from collections import Counter

from common import CORPUS, Repo, check_split, export_tree, load_manifest

MARK = ".eval-commit"


def present(repo: Repo) -> bool:
    """Whether the repository's tree (or, for an index source, every file) is on disk."""
    if repo.source == "index":
        return all((repo.root / p).is_file() for p in repo.files)
    mark = repo.root / MARK
    return mark.is_file() and mark.read_text().strip() == repo.commit


def mirror_has(repo: Repo) -> bool:
    """Whether the fetch tool's mirror holds the pinned commit."""
    if not repo.mirror.is_dir():
        return False
    res = subprocess.run(["git", "-C", str(repo.mirror), "cat-file", "-e", f"{repo.commit}^{{commit}}"],
                         capture_output=True)
    return res.returncode == 0


def export(repo: Repo) -> None:
    """Write the pinned commit's tree from the mirror to ``repo.root`` (see common.export_tree)."""
    export_tree(repo.mirror, repo.commit, repo.root)
    (repo.root / MARK).write_text(repo.commit + "\n")


def missing_lines(repo: Repo) -> list[str]:
    """What to run to bring a missing repository."""
    if repo.source == "index":
        return [f"  read_file repo={repo.name} path={p} commit={c}  ->  {repo.root / p}"
                for p, c in repo.files.items() if not (repo.root / p).is_file()]
    return [f"  fetch github:{repo.name}   (then run this script again, or:)",
            f"  git -C {repo.mirror} archive {repo.commit} | tar -x -C {repo.root}"]


def count(repo: Repo) -> tuple[int, int, int]:
    """Python files, notebooks, and their lines (a notebook's code-cell lines) under the subpaths."""
    py = nb = lines = 0
    for sub in repo.subpaths:
        top = repo.root / sub
        paths = [top] if top.is_file() else [p for p in top.rglob("*") if p.suffix in (".py", ".ipynb")]
        for p in paths:
            if not p.is_file():
                continue
            if p.suffix == ".ipynb":
                nb += 1
                try:
                    cells = json.loads(p.read_text(encoding="utf-8")).get("cells", [])
                except (ValueError, UnicodeDecodeError):
                    continue
                lines += sum(len("".join(c.get("source", "")).splitlines()) for c in cells
                             if c.get("cell_type") == "code")
            else:
                py += 1
                lines += p.read_bytes().count(b"\n")
    return py, nb, lines


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--split", choices=["dev", "heldout", "census", "all"], default="all")
    parser.add_argument("--check", action="store_true", help="report only, export nothing")
    parser.add_argument("--stats", action="store_true", help="files and lines per split")
    args = parser.parse_args()
    table, repos = load_manifest()
    status = 0
    for line in check_split(table, [(r.name, r.split) for r in repos]):
        print("split differs from the seeded draw:", line)
        status = 1
    totals: Counter = Counter()
    for repo in repos:
        if args.split != "all" and repo.split != args.split:
            continue
        if not present(repo) and not args.check and repo.source == "mirror" and mirror_has(repo):
            print(f"export {repo.name} {repo.commit[:12]}")
            export(repo)
        if not present(repo):
            status = 1
            print(f"MISSING {repo.name} ({repo.split})")
            print("\n".join(missing_lines(repo)))
        elif args.stats:
            py, nb, lines = count(repo)
            totals[repo.split, "repos"] += 1
            totals[repo.split, "py"] += py
            totals[repo.split, "nb"] += nb
            totals[repo.split, "lines"] += lines
            print(f"{repo.split:8} {repo.name:60} {py:5} .py {nb:4} .ipynb {lines:7} lines")
    if args.stats:
        for split in ("dev", "heldout", "census"):
            print(f"{split}: {totals[split, 'repos']} repositories, {totals[split, 'py']} .py files, "
                  f"{totals[split, 'nb']} notebooks, {totals[split, 'lines']} lines")
    print(f"corpus: {CORPUS / 'repos'}")
    return status


if __name__ == "__main__":
    sys.exit(main())
