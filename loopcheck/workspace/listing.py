"""The files a directory search found, kept in the cache while nothing on its way changed.

Finding the files of a directory that is not in a git work tree means walking it and matching
every entry against the ``.gitignore`` files on the way, which pathspec compiles into one
regular expression per line: a large share of a warm run. What the walk finds depends only
on

- the directories it read or looked into (their entries), and the directories above the
  paths given (their ``.gitignore``, configuration files and ``.git``, up to the root): a
  directory's modification time changes whenever an entry is created, removed or renamed in it;
- the contents of the ``.gitignore`` and configuration files in those directories (the
  modification time and size of each);
- the paths given, the current directory, the command line's settings, and loopcheck itself.

So the list is stored in the cache (:class:`loopcheck.workspace.cache.Cache`) with those times, and a
later search with the same arguments whose directories and files all have the times they had
gives the same list without walking. Nothing is stored when the search reported a problem
(an unreadable directory, a broken link), when it found a symbolic link (its target can
change without any directory on the way changing), or when a recorded time is less than
:data:`RACY_SECONDS` before the search began (a change in the same tick of the file system's
clock would keep the time: git calls such entries racy). Paths inside a git work tree are
listed by git (:func:`loopcheck.workspace.discovery.git_listing`), which is fast: they are not stored.
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
import time
from pathlib import Path
from typing import TYPE_CHECKING

from loopcheck.workspace.config import CONFIG_NAMES, Resolver

if TYPE_CHECKING:
    from loopcheck.workspace.cache import Cache
    from loopcheck.workspace.discovery import OnProblem

_FORMAT = 1
#: A time this close (seconds) before the search began may not show a change made after it.
RACY_SECONDS = 2.0
#: The files of a directory whose contents decide the search (their names, when absent, are
#: covered by the directory's time).
_READ = (".gitignore", *CONFIG_NAMES)


def source_files(paths: list[str], resolver: Resolver, force_exclude: bool = False,
                 on_problem: OnProblem | None = None, cache: Cache | None = None) -> list[Path]:
    """The files :func:`loopcheck.workspace.discovery.iter_source_files` finds under ``paths`` with the
    settings of ``resolver``, taken from ``cache`` when its stored list still holds (see the
    module docstring), else searched (and stored).

    Raises:
        FileNotFoundError: a path does not exist.
        loopcheck.workspace.config.ConfigError: a configuration file on the way is invalid.
    """
    from loopcheck.workspace.discovery import may_be_work_tree, iter_source_files

    roots = [os.path.abspath(p) for p in paths]
    if cache is None or not all(os.path.isdir(r) for r in roots) or any(may_be_work_tree(Path(r)) for r in roots):
        return list(iter_source_files(paths, resolver.for_directory, force_exclude, on_problem))
    entry_path = cache.listings / _entry_name(paths, resolver, force_exclude, cache.fingerprint)
    stored = cache.load_json(entry_path)
    if stored is not None and _holds(stored):
        return [Path(p) for p in stored["found"]]
    writable = cache.prepare()  # made before the search: making it changes a directory above
    started = time.time_ns()
    directories: set[str] = set()
    problems = []

    def problem(path: Path, message: str, is_error: bool) -> None:
        problems.append(path)
        if on_problem is not None:
            on_problem(path, message, is_error)

    found = list(iter_source_files(paths, resolver.for_directory, force_exclude, problem, on_directory=directories.add))
    for root in roots:  # the paths themselves, and above them their .gitignore, configuration and .git
        directories.update(str(p) for p in (Path(root), *Path(root).parents))
        real = Path(os.path.realpath(root))
        directories.update(str(p) for p in (real, *real.parents))
    config = resolver.fixed.config_path if resolver.fixed is not None else None
    if writable and not problems:
        entry = _record(directories, [str(config)] if config is not None else [], found, started)
        if entry is not None:
            cache.store_json(entry_path, entry)
    return found


def _entry_name(paths: list[str], resolver: Resolver, force_exclude: bool, fingerprint: str) -> str:
    """A hash of what the search depends on besides the file system: the paths as given, the
    current directory, the command line's settings, ``--config`` or ``--isolated``, and
    loopcheck itself (``fingerprint``)."""
    fixed = resolver.fixed
    key = json.dumps([
        _FORMAT, fingerprint, os.getcwd(), list(paths), force_exclude, repr(resolver.cli),
        fixed is not None, str(fixed.config_path) if fixed is not None else None,
    ], ensure_ascii=True, default=str)
    return hashlib.sha256(key.encode("ascii")).hexdigest()[:40]


def _record(directories: set[str], read: list[str], found: list[Path], started: int) -> dict | None:
    """The stored form of a search that looked into ``directories`` and read the files
    ``read`` (besides their :data:`_READ` files), or ``None`` when it must not be stored (a
    link among the files found, a directory gone meanwhile, a time too close to the search)."""
    racy = started - int(RACY_SECONDS * 1e9)
    dirs, files = [], []
    candidates = [*read, *(os.path.join(d, name) for d in sorted(directories) for name in _READ)]
    try:
        for path in found:
            if stat.S_ISLNK(os.lstat(path).st_mode):
                return None
        for d in sorted(directories):
            st = os.stat(d)
            if st.st_mtime_ns >= racy:
                return None
            dirs.append([d, st.st_mtime_ns])
        for f in candidates:
            try:
                st = os.stat(f)
            except FileNotFoundError:
                continue  # absent: its directory's time tells when it comes
            if st.st_mtime_ns >= racy:
                return None
            files.append([f, st.st_mtime_ns, st.st_size])
    except OSError:
        return None
    return {"dirs": dirs, "files": files, "found": [str(p) for p in found]}


def _holds(stored: dict) -> bool:
    """Whether every directory and file of a stored search has the time (and size) it had."""
    try:
        for d, mtime in stored["dirs"]:
            if os.stat(d).st_mtime_ns != mtime:
                return False
        for f, mtime, size in stored["files"]:
            st = os.stat(f)
            if st.st_mtime_ns != mtime or st.st_size != size:
                return False
        return isinstance(stored["found"], list) and all(isinstance(p, str) for p in stored["found"])
    except (OSError, KeyError, TypeError, ValueError):
        return False
