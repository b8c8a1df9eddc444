"""Find the files to check under the paths a user gives, as ruff does, ignoring what git ignores.

Directories are searched for ``*.py`` and ``*.ipynb`` files:

* Inside a git work tree, with ``respect-gitignore`` on (the default) and ``git`` on the
  ``PATH``, the files are those git lists: ``git ls-files --cached --others
  --exclude-standard`` (tracked files, and untracked files that no ``.gitignore``, nested
  ones and their ``!`` re-includes included, nor ``.git/info/exclude`` nor the global
  excludes file ``core.excludesFile`` ignores). Files of submodules and of nested
  repositories are not listed, as git does not list them.
* Elsewhere (no git, not a repository, or ``respect-gitignore = false``), the directory is
  walked, and with ``respect-gitignore`` the ``.gitignore`` files on the way are read with
  pathspec's ``GitIgnoreSpec`` (each relative to its own directory, up to the repository
  root). Lines pathspec cannot compile are read as git reads them: a reversed range ``[z-a]``
  matches its first character, and a line git matches nothing with (``build\\``, a lone ``!``)
  is skipped.

Either way, what the ``exclude`` and ``extend-exclude`` settings match is skipped (by default
``.git``, virtualenv, cache and build directories: :data:`loopcheck.workspace.config.DEFAULT_EXCLUDE`),
and so are virtualenvs (a directory holding ``pyvenv.cfg``). Each directory is judged by the
settings of the directory it is in (see :class:`loopcheck.workspace.config.Resolver`); whether git
decides is the setting of the directory named on the command line. Paths named explicitly
are always checked, unless ``force_exclude`` applies the exclusions to them too (for
pre-commit, which passes file names), or their suffix is not a Python one
(:data:`NAMED_SUFFIXES`: ``notes.txt`` is skipped with a warning).

Problems are reported through ``on_problem`` and the search goes on: a directory that
cannot be read, and a ``*.py`` symbolic link that leads nowhere (a loop, a missing target),
are errors; an entry that is not a regular file (a FIFO, a socket, a device) is never
opened, and is a warning.
"""

from __future__ import annotations

import os
import re
import stat
import subprocess
from pathlib import Path
from typing import Callable, Iterator

import pathspec

from loopcheck.workspace.config import DEFAULT_EXCLUDE, Options, Resolver, Settings, directory_prefix

SOURCE_SUFFIXES = (".py", ".ipynb")
#: The suffixes of a file named on the command line that is checked (a file without a suffix,
#: a script, is too); another (``notes.txt``) is skipped with a warning.
NAMED_SUFFIXES = (".py", ".pyw", ".pyi", ".ipynb")
SKIP_DIRS = set(DEFAULT_EXCLUDE)  # kept for callers of the first version
GIT_TIMEOUT = 60  # seconds for ``git ls-files``

SettingsFor = Callable[[Path], Settings]
#: ``on_directory(path)``: a directory whose entries the walk read, or looked for by name
#: (``pyvenv.cfg``, ``.gitignore``): what it finds depends on them (:mod:`loopcheck.workspace.listing`).
OnDirectory = Callable[[str], None]
#: ``on_problem(path, message, is_error)``: a path that was not searched or not read, and a
#: sentence that says so (``cannot read directory build: Permission denied``).
OnProblem = Callable[[Path, str, bool], None]

# Environment variables that would point git at another repository or index than the
# directory's own (pre-commit and git hooks set some of them).
_GIT_ENV = ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_COMMON_DIR", "GIT_OBJECT_DIRECTORY",
            "GIT_NAMESPACE", "GIT_CEILING_DIRECTORIES", "GIT_DISCOVERY_ACROSS_FILESYSTEM")
_GIT_UNREADABLE = re.compile(rb"^warning: could not open directory '(.*)': (.*)$", re.MULTILINE)


def _ignore(path: Path, message: str, is_error: bool) -> None:
    pass


def _is_virtualenv(path: Path) -> bool:
    try:
        return (path / "pyvenv.cfg").is_file()
    except OSError:
        return False


# ------------------------------------------------------------------------------ .gitignore without git

_REVERSED_RANGE = re.compile(r"(?<!\\)\[(!?)([^\]]*)\]")


def _git_bracket(m: re.Match) -> str:
    """A bracket expression with its reversed ranges (``z-a``) made what git's wildmatch
    makes them: the first character alone."""
    body, out, i = m.group(2), [], 0
    while i < len(body):
        if i + 2 < len(body) and body[i + 1] == "-" and body[i] > body[i + 2]:
            out.append(body[i])
            i += 3
        else:
            out.append(body[i])
            i += 1
    return f"[{m.group(1)}{''.join(out)}]"


def gitignore_spec(lines: list[str]) -> pathspec.GitIgnoreSpec:
    """Compile ``.gitignore`` lines with pathspec, reading the lines it rejects as git does:
    reversed ranges match their first character; a line that is still rejected (``build\\``:
    a trailing backslash, a lone ``!``) matches nothing in git, and is skipped."""
    try:
        return pathspec.GitIgnoreSpec.from_lines(lines)
    except Exception:  # noqa: BLE001 - pathspec raises several types; sort the lines one by one
        pass
    kept = []
    for line in lines:
        for candidate in (line, _REVERSED_RANGE.sub(_git_bracket, line)):
            try:
                pathspec.GitIgnoreSpec.from_lines([candidate])
            except Exception:  # noqa: BLE001
                continue
            kept.append(candidate)
            break
    return pathspec.GitIgnoreSpec.from_lines(kept)


def _load_gitignore(directory: Path) -> pathspec.GitIgnoreSpec | None:
    f = directory / ".gitignore"
    try:
        if not f.is_file():
            return None
        lines = f.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return None
    return gitignore_spec(lines)


def _parent_specs(directory: Path) -> list[tuple[Path, pathspec.GitIgnoreSpec]]:
    """The .gitignore files of the directories above ``directory``, up to the repository root."""
    specs = []
    for parent in Path(os.path.realpath(directory)).parents:
        spec = _load_gitignore(parent)
        if spec is not None:
            specs.append((parent, spec))
        if (parent / ".git").exists():
            break
    return list(reversed(specs))


# ------------------------------------------------------------------------------ git


def git_listing(directory: Path) -> tuple[list[Path], list[tuple[Path, str]]] | None:
    """The files git lists under ``directory``: tracked ones, and untracked ones no ignore
    rule excludes (``git ls-files --cached --others --exclude-standard -z``).

    Git runs with ``core.fsmonitor`` off (a repository's configuration cannot make it run a
    command) and without the ``GIT_DIR``-like variables of the caller's environment.

    Returns:
        ``(files, unreadable)``: the listed paths (below ``directory``; tracked files missing
        from the work tree included) and the directories git could not open, with the
        reason; ``None`` when git is not installed or ``directory`` is not in a work tree.
    """
    if not may_be_work_tree(directory):
        return None  # git would say so too, after a process start (3 ms or more, per path given)
    env = {k: v for k, v in os.environ.items() if k not in _GIT_ENV}
    env["GIT_OPTIONAL_LOCKS"] = "0"
    try:
        done = subprocess.run(
            ["git", "-c", "core.fsmonitor=false", "-c", "core.quotePath=false", "-C", str(directory),
             "ls-files", "--cached", "--others", "--exclude-standard", "-z", "--", "."],
            stdin=subprocess.DEVNULL, capture_output=True, env=env, timeout=GIT_TIMEOUT, check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    if done.returncode != 0:
        return None
    files = [directory / os.fsdecode(name) for name in done.stdout.split(b"\0") if name and not name.endswith(b"/")]
    unreadable = [
        (directory / os.fsdecode(m.group(1)).rstrip("/"), os.fsdecode(m.group(2)))
        for m in _GIT_UNREADABLE.finditer(done.stderr)
    ]
    return files, unreadable


def may_be_work_tree(directory: Path) -> bool:
    """Whether ``directory`` or a directory above it holds a ``.git`` (a directory, or the file
    of a linked work tree or submodule): without one, git finds no repository (the caller's
    ``GIT_DIR`` is not passed on)."""
    path = Path(os.path.abspath(directory))
    return any(os.path.lexists(p / ".git") for p in (path, *path.parents))


# ------------------------------------------------------------------------------ exclusions


class _Exclusions:
    """Whether the exclusions skip a path found under ``root``, each directory judged by the
    settings of the directory it is in. Below a directory that is excluded but was named
    explicitly (or lies in one that was), entries are judged by their own names only."""

    def __init__(self, settings_for: SettingsFor) -> None:
        self.settings_for = settings_for
        self._dirs: dict[Path, bool] = {}

    def entry(self, path: Path, is_dir: bool) -> bool:
        """Whether the entry ``path`` of its directory is excluded (not its directories)."""
        settings = self.settings_for(path.parent)
        if settings.is_excluded(path.parent, is_dir=True):
            return settings.excludes_name(path.name, is_dir)
        return settings.is_excluded(path, is_dir)

    def directory(self, directory: Path, root: Path) -> bool:
        """Whether ``directory`` (below ``root``) or a directory between them is skipped:
        excluded, or a virtualenv."""
        if directory == root:
            return False
        found = self._dirs.get(directory)
        if found is None:
            found = (
                self.directory(directory.parent, root)
                or self.entry(directory, True)
                or _is_virtualenv(directory)
            )
            self._dirs[directory] = found
        return found


# ------------------------------------------------------------------------------ the search


def is_source_file(path: Path) -> bool:
    """Whether the search picks up ``path``: a Python file or a Jupyter notebook (by name)."""
    return is_source_name(path.name)


def is_source_name(name: str) -> bool:
    """:func:`is_source_file` for a file's name (the walk judges entries before it builds
    their paths)."""
    return name.endswith(SOURCE_SUFFIXES)


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
    on_problem: OnProblem | None = None,
    use_git: bool = True,
    on_directory: OnDirectory | None = None,
) -> Iterator[Path]:
    """Yield the Python files and notebooks under ``paths`` (files given directly as-is).

    Args:
        paths: files or directories, as given on the command line.
        settings_for: the settings of the entries of a directory (default: the defaults).
        force_exclude: also apply the exclusions to ``paths`` themselves.
        on_problem: told of each directory or entry that was not searched or not read
            (see the module's docstring); by default they are skipped silently.
        use_git: ask git which files it ignores when a directory is in a work tree (off:
            always walk, reading ``.gitignore`` files with pathspec).
        on_directory: told of each directory below ``paths`` that the walk reads or looks
            into (not where git lists the files); ``paths`` themselves and the directories
            above them are not told.

    Raises:
        FileNotFoundError: a path does not exist.
        loopcheck.workspace.config.ConfigError: from ``settings_for``.
    """
    if settings_for is None:
        settings_for = Resolver(Options(), isolated=True).for_directory
    report = on_problem or _ignore
    exclusions = _Exclusions(settings_for)
    seen: set[Path] = set()
    for raw in paths:
        root = Path(raw)
        if not os.path.lexists(root):
            raise FileNotFoundError(raw)
        if force_exclude and is_force_excluded(root, settings_for):
            continue
        if not root.is_dir():  # a file, or what the reader refuses to open (a FIFO, a loop)
            if root.suffix and root.suffix not in NAMED_SUFFIXES:
                # notes.txt: not Python (a script without a suffix is checked, as ruff does)
                report(root, f"skipped {raw}: not a Python file ({', '.join(NAMED_SUFFIXES)})", False)
                continue
            if root not in seen:
                seen.add(root)
                yield root
            continue
        listing = None
        if use_git and settings_for(Path(os.path.abspath(root))).respect_gitignore:
            listing = git_listing(root)
        if listing is not None:
            yield from _from_git(root, listing, exclusions, seen, report)
        else:
            # each parent .gitignore judges paths relative to its directory, through the
            # real directories (symbolic links resolved) below it
            real = os.path.realpath(root)
            base_specs = [(spec, directory_prefix(os.path.relpath(real, base))) for base, spec in _parent_specs(root)] \
                if settings_for(root).respect_gitignore else []
            yield from _walk(root, base_specs, settings_for, seen, report, on_directory or _ignore_directory)


def iter_python_files(paths: list[str], respect_gitignore: bool = True) -> Iterator[Path]:
    """:func:`iter_source_files` with default settings (the first version's interface)."""
    resolver = Resolver(Options(respect_gitignore=respect_gitignore), isolated=True)
    return iter_source_files(paths, resolver.for_directory)


def _from_git(root: Path, listing, exclusions: _Exclusions, seen: set[Path], report: OnProblem) -> Iterator[Path]:
    files, unreadable = listing
    for directory, reason in unreadable:
        report(directory, f"cannot read directory {directory}: {reason}", True)
    absolute_root = Path(os.path.abspath(root))
    for path in sorted(files):
        if not is_source_file(path):
            continue
        absolute = Path(os.path.abspath(path))
        if exclusions.directory(absolute.parent, absolute_root) or exclusions.entry(absolute, False):
            continue
        if path in seen:
            continue
        try:
            st = os.lstat(path)
        except FileNotFoundError:  # tracked, but deleted from the work tree
            continue
        except OSError as err:
            report(path, f"cannot read {path}: {err.strerror}", True)
            continue
        if not _regular(path, st, report):
            continue
        seen.add(path)
        yield path


def _regular(path: Path, st: os.stat_result, report: OnProblem) -> bool:
    """Whether ``path`` (``st``: its ``lstat``) is, or links to, a regular file; reports why not."""
    if stat.S_ISLNK(st.st_mode):
        try:
            st = os.stat(path)
        except OSError as err:  # a loop, a missing target
            report(path, f"cannot read {path}: {err.strerror}", True)
            return False
    if stat.S_ISREG(st.st_mode):
        return True
    if not stat.S_ISDIR(st.st_mode):
        report(path, f"skipped {path}: not a regular file (a FIFO, socket or device is never read)", False)
    return False


def _ignore_directory(path: str) -> None:
    pass


def _walk(directory: Path, specs: list[tuple[pathspec.GitIgnoreSpec, str]], settings_for: SettingsFor,
          seen: set[Path], report: OnProblem, on_directory: OnDirectory) -> Iterator[Path]:
    """The source files under ``directory``, in name order, depth first.

    Args:
        directory: the directory, as the user's path leads to it.
        specs: the ``.gitignore`` specs that apply, each with ``directory``'s path relative
            to the spec's own directory (:func:`loopcheck.workspace.config.directory_prefix`): an entry ``name`` is matched as
            ``prefix + name`` (``+ "/"`` for a directory). The walk never enters a symbolic
            link, so a subdirectory's prefix is its parent's and its name.
    """
    settings = settings_for(directory)
    respect_gitignore = settings.respect_gitignore
    # A directory walked although excluded was named explicitly (or lies in one that was):
    # its entries are excluded by their own names only, not for being inside it.
    inside_excluded = settings.is_excluded(directory, is_dir=True)
    excludes = settings.exclude.match_file
    start = "" if inside_excluded else settings.entry_prefix(directory)

    def excluded(name: str, is_dir: bool) -> bool:
        return bool(excludes(start + name + ("/" if is_dir else "")))

    def ignored(name: str, is_dir: bool) -> bool:
        tail = name + "/" if is_dir else name
        return any(spec.match_file(prefix + tail) for spec, prefix in specs)

    if respect_gitignore:
        own = _load_gitignore(directory)
        if own is not None:
            specs = specs + [(own, "")]
    try:
        entries = sorted(os.scandir(directory), key=lambda e: e.name)
    except OSError as err:
        report(directory, f"cannot read directory {directory}: {err.strerror}", True)
        return
    for entry in entries:
        name = entry.name
        try:
            is_dir = entry.is_dir(follow_symlinks=False)
        except OSError:
            is_dir = False
        if is_dir:
            path = Path(entry.path)
            if excluded(name, True):
                continue
            on_directory(entry.path)
            if _is_virtualenv(path) or (respect_gitignore and ignored(name, True)):
                continue
            yield from _walk(path, [(spec, f"{prefix}{name}/") for spec, prefix in specs], settings_for, seen, report,
                             on_directory)
        elif is_source_name(name):
            if excluded(name, False):
                continue
            if respect_gitignore and ignored(name, False):
                continue
            path = Path(entry.path)
            if path in seen:
                continue
            try:
                st = entry.stat(follow_symlinks=False)
            except OSError as err:
                report(path, f"cannot read {path}: {err.strerror}", True)
                continue
            if not _regular(path, st, report):
                continue
            seen.add(path)
            yield path
