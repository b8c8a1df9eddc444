"""Find the files to check under the paths a user gives, as ruff does.

Directories are walked recursively for ``*.py`` and ``*.ipynb``. What the ``exclude`` and
``extend-exclude`` settings match is skipped (by default ``.git``, virtualenv, cache and
build directories: :data:`loopcheck.config.DEFAULT_EXCLUDE`), and so are virtualenvs (a
directory holding ``pyvenv.cfg``) and whatever the ``.gitignore`` files on the way exclude
(matched with pathspec's GitIgnoreSpec, each file relative to its own directory) when
``respect-gitignore`` is on. Each directory is judged by the settings of the directory it
is in (see :class:`loopcheck.config.Resolver`). Paths named explicitly are always checked,
unless ``force_exclude`` applies the exclusions to them too (for pre-commit, which passes
file names).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Callable, Iterator

import pathspec

from loopcheck.config import DEFAULT_EXCLUDE, Options, Resolver, Settings

SOURCE_SUFFIXES = (".py", ".ipynb")
SKIP_DIRS = set(DEFAULT_EXCLUDE)  # kept for callers of the first version

SettingsFor = Callable[[Path], Settings]


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


def is_source_file(path: Path) -> bool:
    """Whether the walk picks up ``path``: a Python file or a Jupyter notebook."""
    return path.name.endswith(SOURCE_SUFFIXES)


def is_force_excluded(path: Path, settings_for: SettingsFor) -> bool:
    """Whether ``exclude`` matches ``path`` or one of its directories below the settings' base."""
    path = Path(os.path.abspath(path))
    is_dir = path.is_dir()
    for p in (path, *path.parents):
        settings = settings_for(p.parent)
        if p == settings.base or settings.base not in p.parents:
            break
        if settings.is_excluded(p, is_dir=is_dir or p != path):
            return True
    return False


def iter_source_files(
    paths: list[str],
    settings_for: SettingsFor | None = None,
    force_exclude: bool = False,
) -> Iterator[Path]:
    """Yield the Python files and notebooks under ``paths`` (files given directly as-is).

    Args:
        paths: files or directories, as given on the command line.
        settings_for: the settings of the entries of a directory (default: the defaults).
        force_exclude: also apply the exclusions to ``paths`` themselves.

    Raises:
        FileNotFoundError: a path does not exist.
        loopcheck.config.ConfigError: from ``settings_for``.
    """
    if settings_for is None:
        settings_for = Resolver(Options(), isolated=True).for_directory
    seen: set[Path] = set()
    for raw in paths:
        root = Path(raw)
        if not root.exists():
            raise FileNotFoundError(raw)
        if force_exclude and is_force_excluded(root, settings_for):
            continue
        if root.is_file():
            if root not in seen:
                seen.add(root)
                yield root
            continue
        base_specs = _parent_specs(root)
        yield from _walk(root, base_specs, settings_for, seen)


def iter_python_files(paths: list[str], respect_gitignore: bool = True) -> Iterator[Path]:
    """:func:`iter_source_files` with default settings (the first version's interface)."""
    resolver = Resolver(Options(respect_gitignore=respect_gitignore), isolated=True)
    return iter_source_files(paths, resolver.for_directory)


def _walk(directory: Path, specs, settings_for: SettingsFor, seen: set[Path]) -> Iterator[Path]:
    settings = settings_for(directory)
    respect_gitignore = settings.respect_gitignore
    # A directory walked although excluded was named explicitly (or lies in one that was):
    # its entries are excluded by their own names only, not for being inside it.
    inside_excluded = settings.is_excluded(directory, is_dir=True)

    def excluded(path: Path, is_dir: bool) -> bool:
        if inside_excluded:
            return settings.excludes_name(path.name, is_dir)
        return settings.is_excluded(path, is_dir)
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
            if excluded(path, True) or _is_virtualenv(path):
                continue
            if respect_gitignore and _ignored(path.resolve(), True, specs):
                continue
            yield from _walk(path, specs, settings_for, seen)
        elif is_source_file(path) and entry.is_file():
            if excluded(path, False):
                continue
            if respect_gitignore and _ignored(path.resolve(), False, specs):
                continue
            if path not in seen:
                seen.add(path)
                yield path
