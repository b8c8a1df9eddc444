"""Shared helpers of the evaluation scripts: the manifest, the seeded split, running loopcheck.

The corpus lives outside the repository (default ``/work/corpus``, or ``$LOOPCHECK_CORPUS``):
``repos/<owner>__<name>/`` holds each manifest repository exported at its pinned commit,
``bugs/`` the trees of the fixed-bug commits. Nothing under it is committed.
"""

from __future__ import annotations

import json
import os
import random
import shlex
import subprocess
import sys
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
CORPUS = Path(os.environ.get("LOOPCHECK_CORPUS", "/work/corpus"))
MIRRORS = Path(os.environ.get("LOOPCHECK_MIRRORS", "/work/.mirror"))
SPLITS = ("dev", "heldout")
#: Repositories chosen for a census after the code was done (issue 32): never drawn, never
#: developed on; their findings are judged once and reported, not tuned on.
CENSUS = "census"


@dataclass
class Repo:
    """One manifest entry.

    name: ``owner/name`` as GitHub spells it; commit: the 40-hex commit exported;
    subpaths: paths relative to the repository root that loopcheck is run on;
    split: ``"dev"`` or ``"heldout"``; source: ``"mirror"`` (a whole tree from the fetch
    tool) or ``"index"`` (single files read from the search index, each pinned in ``files``
    as ``{path: commit}``, because the repository is too large to fetch).
    """

    name: str
    commit: str
    subpaths: list[str]
    split: str
    source: str = "mirror"
    files: dict[str, str] = field(default_factory=dict)

    @property
    def dirname(self) -> str:
        """The directory name under ``repos/``: ``owner__name``."""
        return self.name.replace("/", "__")

    @property
    def root(self) -> Path:
        """Where the exported tree lives."""
        return CORPUS / "repos" / self.dirname

    @property
    def mirror(self) -> Path:
        """The bare git directory the fetch tool leaves (``/work/.mirror/owner+name/repo``)."""
        return MIRRORS / self.name.replace("/", "+") / "repo"


def load_toml(name: str) -> dict:
    """Read ``scripts/eval/<name>`` as TOML (raises FileNotFoundError, tomllib.TOMLDecodeError)."""
    with open(HERE / name, "rb") as f:
        return tomllib.load(f)


def load_manifest() -> tuple[dict, list[Repo]]:
    """Return the manifest's ``[split]`` table and its repositories, in file order."""
    data = load_toml("manifest.toml")
    repos = [
        Repo(r["name"], r["commit"], r["subpaths"], r["split"], r.get("source", "mirror"), r.get("files", {}))
        for r in data["repo"]
    ]
    return data["split"], repos


def draw_split(names: list[str], seed: int, fixed_dev: list[str]) -> dict[str, str]:
    """The seeded draw that assigns every name to ``dev`` or ``heldout``.

    The names in ``fixed_dev`` (the acceptance cases) are dev. The others are sorted, shuffled
    with ``random.Random(seed)``; the first ``len // 2`` go to heldout, the rest to dev.
    The same names and seed always give the same split.
    """
    rest = sorted(n for n in names if n not in fixed_dev)
    random.Random(seed).shuffle(rest)
    half = len(rest) // 2
    split = {n: ("heldout" if i < half else "dev") for i, n in enumerate(rest)}
    split.update({n: "dev" for n in fixed_dev})
    return split


def check_split(table: dict, entries: list[tuple[str, str]]) -> list[str]:
    """Compare recorded ``(name, split)`` pairs with the draw of ``table`` (seed, fixed_dev).

    Returns one line per disagreement (empty when the recorded split is the draw).
    """
    entries = [(n, s) for n, s in entries if s != CENSUS]  # chosen later, outside the draw
    drawn = draw_split([n for n, _ in entries], table["seed"], table["fixed_dev"])
    return [f"{n}: recorded {s}, drawn {drawn[n]}" for n, s in entries if drawn[n] != s]


def export_tree(mirror: Path, commit: str, dest: Path) -> None:
    """Write the tree of ``commit`` from the bare git directory ``mirror`` to ``dest`` (replaced).

    Snapshots may lack their largest blobs; those files are skipped and listed in
    ``.eval-absent`` (git archive would stop at the first one). Submodules are skipped.
    """
    subprocess.run(["rm", "-rf", str(dest)], check=True)
    dest.mkdir(parents=True)
    listing = subprocess.run(["git", "-C", str(mirror), "ls-tree", "-r", "-z", commit],
                             capture_output=True, check=True).stdout.split(b"\0")
    entries = []
    for item in filter(None, listing):
        meta, path = item.split(b"\t", 1)
        mode, kind, sha = meta.split()
        if kind == b"blob":
            entries.append((mode, sha, path.decode("utf-8", "surrogateescape")))
    absent = []
    with subprocess.Popen(["git", "-C", str(mirror), "cat-file", "--batch"],
                          stdin=subprocess.PIPE, stdout=subprocess.PIPE) as cat:
        for mode, sha, path in entries:
            cat.stdin.write(sha + b"\n")
            cat.stdin.flush()
            header = cat.stdout.readline().split()
            if header[-1] == b"missing":
                absent.append(path)
                continue
            data = cat.stdout.read(int(header[2]))
            cat.stdout.read(1)
            out = dest / path
            out.parent.mkdir(parents=True, exist_ok=True)
            if mode == b"120000":
                out.symlink_to(data.decode("utf-8", "surrogateescape"))
            else:
                out.write_bytes(data)
        cat.stdin.close()
    if absent:
        (dest / ".eval-absent").write_text("\n".join(absent) + "\n")


def loopcheck_command(arg: str | None) -> list[str]:
    """The loopcheck command line: ``--loopcheck CMD`` split like a shell, else ``loopcheck``
    from PATH, else ``python -m loopcheck``."""
    if arg:
        return shlex.split(arg)
    return ["loopcheck"] if _on_path("loopcheck") else [sys.executable, "-m", "loopcheck"]


def _on_path(prog: str) -> bool:
    return any((Path(d) / prog).is_file() for d in os.environ.get("PATH", "").split(os.pathsep) if d)


def preview_flag(cmd: list[str]) -> list[str]:
    """``["--preview"]`` when ``cmd check`` has that option (older loopchecks do not), else
    ``[]``: the evaluation measures the rules in preview too, since their measured precision
    decides when they leave preview."""
    key = tuple(cmd)
    if key not in _PREVIEW:
        help_text = subprocess.run([*cmd, "check", "--help"], capture_output=True, text=True).stdout
        _PREVIEW[key] = "--preview" in help_text
    return ["--preview"] if _PREVIEW[key] else []


_PREVIEW: dict[tuple[str, ...], bool] = {}


def run_loopcheck(cmd: list[str], paths: list[str], cwd: Path, timeout: float = 900) -> list[dict]:
    """Run ``cmd check --output-format json --isolated --exit-zero PATHS`` in ``cwd``, with
    ``--preview`` where ``cmd`` has it (:func:`preview_flag`).

    Returns loopcheck's JSON findings (ruff's fields plus ``related`` and, for notebooks,
    ``cell``), with ``filename`` (and related ones) made relative to ``cwd`` where they lie under it.
    Raises RuntimeError when loopcheck prints no JSON (an exit status 2 with JSON, a file it
    could not read, is reported on standard error and the findings are kept).
    ``--isolated`` keeps the configuration files of the checked repository out of the way.
    """
    proc = subprocess.run(
        [*cmd, "check", "--output-format", "json", "--isolated", "--exit-zero", *preview_flag(cmd), *paths],
        cwd=cwd, capture_output=True, text=True, timeout=timeout,
    )
    if not proc.stdout.strip():
        raise RuntimeError(f"loopcheck failed in {cwd} on {paths}: {proc.stderr.strip()[-2000:]}")
    try:
        findings = json.loads(proc.stdout)
    except json.JSONDecodeError:
        raise RuntimeError(f"loopcheck failed in {cwd} on {paths}: {proc.stderr.strip()[-2000:]}") from None
    if proc.returncode == 2:  # a file it could not read (a notebook that is not JSON): the others' findings stand
        print(f"loopcheck exited with 2 in {cwd}: {proc.stderr.strip()[-500:]}", file=sys.stderr)
    for f in findings:
        f["filename"] = relative(f["filename"], cwd)
        for rel in f.get("related", []):
            if rel.get("filename"):
                rel["filename"] = relative(rel["filename"], cwd)
    return findings


def relative(name: str, root: Path) -> str:
    """A file name relative to ``root`` when it lies under it (loopcheck's JSON, like ruff's, gives
    absolute paths), normalised; other names unchanged."""
    path = Path(name)
    if path.is_absolute():
        try:
            return os.path.normpath(path.relative_to(Path(root).resolve()))
        except ValueError:
            return name
    return os.path.normpath(name)


def line_text(root: Path, finding: dict, row: int | None = None) -> str:
    """The stripped text of the flagged line (or of ``row``) of a finding, read from disk.

    For a notebook finding (with ``cell``), rows count from the start of that cell, as
    loopcheck reports them; cells are counted from 1 over every cell of the notebook.
    """
    row = finding["location"]["row"] if row is None else row
    lines = source_lines(root / finding["filename"], finding.get("cell"))
    return lines[row - 1].strip() if 0 < row <= len(lines) else ""


def source_lines(path: Path, cell: int | None = None) -> list[str]:
    """The lines of a Python file, or of cell ``cell`` (1-based) of a notebook."""
    text = path.read_text(encoding="utf-8", errors="replace")
    if cell is None:
        return text.splitlines()
    cells = json.loads(text)["cells"]
    src = cells[cell - 1]["source"]
    return ("".join(src) if isinstance(src, list) else src).splitlines()
