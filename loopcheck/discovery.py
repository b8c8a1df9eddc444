"""Find the Python files to check under the paths a user gives, as ruff does.

Directories are walked recursively for ``*.py``; ``.git``, virtualenvs, caches and build
directories are skipped, and so is whatever the ``.gitignore`` files on the way exclude
(matched with pathspec's GitIgnoreSpec, each file relative to its own directory). Files
named explicitly are always checked.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Iterator

import pathspec

SKIP_DIRS = {
    ".git", ".hg", ".svn", ".venv", "venv", ".env", "env", "__pycache__", ".mypy_cache",
    ".pytest_cache", ".ruff_cache", ".tox", ".nox", "node_modules", "build", "dist",
    "site-packages", ".eggs", ".ipynb_checkpoints",
}


def _is_virtualenv(path: Path) -> bool:
    return (path / "pyvenv.cfg").is_file()


def _load_gitignore(directory: Path) -> pathspec.GitIgnoreSpec | None:
    f = directory / ".gitignore"
    if not f.is_file():
        return None
    try:
        lines = f.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return None
    return pathspec.GitIgnoreSpec.from_lines(lines)


def _ignored(path: Path, is_dir: bool, specs: list[tuple[Path, pathspec.GitIgnoreSpec]]) -> bool:
    for base, spec in specs:
        rel = path.relative_to(base).as_posix() + ("/" if is_dir else "")
        if spec.match_file(rel):
            return True
    return False


def _parent_specs(directory: Path) -> list[tuple[Path, pathspec.GitIgnoreSpec]]:
    """The .gitignore files of the directories above ``directory``, up to the repository root."""
    specs = []
    for parent in directory.resolve().parents:
        spec = _load_gitignore(parent)
        if spec is not None:
            specs.append((parent, spec))
        if (parent / ".git").exists():
            break
    return list(reversed(specs))


def iter_python_files(paths: list[str], respect_gitignore: bool = True) -> Iterator[Path]:
    """Yield the Python files under ``paths`` (files given directly are yielded as-is).

    Args:
        paths: files or directories, as given on the command line.
        respect_gitignore: skip what ``.gitignore`` files exclude.

    Raises:
        FileNotFoundError: a path does not exist.
    """
    seen: set[Path] = set()
    for raw in paths:
        root = Path(raw)
        if not root.exists():
            raise FileNotFoundError(raw)
        if root.is_file():
            if root not in seen:
                seen.add(root)
                yield root
            continue
        base_specs = _parent_specs(root) if respect_gitignore else []
        yield from _walk(root, base_specs, respect_gitignore, seen)


def _walk(directory: Path, specs, respect_gitignore: bool, seen: set[Path]) -> Iterator[Path]:
    if respect_gitignore:
        own = _load_gitignore(directory)
        if own is not None:
            specs = specs + [(directory.resolve(), own)]
    try:
        entries = sorted(os.scandir(directory), key=lambda e: e.name)
    except OSError:
        return
    for entry in entries:
        path = Path(entry.path)
        if entry.is_dir(follow_symlinks=False):
            if entry.name in SKIP_DIRS or _is_virtualenv(path):
                continue
            if respect_gitignore and _ignored(path.resolve(), True, specs):
                continue
            yield from _walk(path, specs, respect_gitignore, seen)
        elif entry.name.endswith(".py") and entry.is_file():
            if respect_gitignore and _ignored(path.resolve(), False, specs):
                continue
            if path not in seen:
                seen.add(path)
                yield path
