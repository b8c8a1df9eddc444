"""The results cache of the command line: ``.loopcheck_cache/``, as ruff keeps ``.ruff_cache/``.

Where it is: ``--cache-dir DIR``, else ``$LOOPCHECK_CACHE_DIR``, else ``.loopcheck_cache`` in
the project root of the current directory (:func:`default_directory`). It is created on the
first write, with a ``.gitignore`` holding ``*`` (git never lists it) and a ``CACHEDIR.TAG``
(backup tools skip it). ``--no-cache`` neither reads nor writes it.

What is in it: ``<dir>/<loopcheck version>/<entry>``, one JSON file per checked file and rule
selection, named by a hash of the file's real path, the name it is reported under, its rule
codes (after per-file-ignores) and the project's ``src`` roots. Preview enters the key
through the codes: a rule in preview is among them only when ``--preview`` (or an exact
selection) enabled it, so a run that enables one never reads an entry of a run that did not.
An entry holds:

- ``engine``: :func:`engine_fingerprint`: loopcheck's version, the size and modification
  time of each of its modules, the contents of its knowledge files, the Python version, and
  where libcst, nbformat and IPython are installed (a reinstall or an upgrade changes it);
- ``content``: the SHA-256 of the text that was checked, and ``source``: the file's size and
  modification time when it was read (:func:`source_stamp`; ``null`` when too recent to
  tell): a file that has them still is not read again when its entry holds no findings
  (:meth:`Cache.unchanged`);
- ``modules``: the project modules the analysis read, each with the SHA-256 of its bytes
  (``null``: it could not be read or did not exist) and its size and modification time (a
  module with the same size and time is not read again: git's index does the same), and
  ``probes``: the paths an import was looked for at, and whether a file was there (a module
  created where there was none changes what an import means), grouped by directory with the
  directory's modification time (while it holds, nothing was created there; see
  :func:`_short_probes`). A time less than :data:`RACY_NS` before the entry was written is
  not kept (a change in the same tick of the file system's clock would not show);
- ``findings`` and ``notebook``: the result (findings with their fixes, and a notebook's cell
  map).

An entry is used only when all of these still hold; otherwise the file is checked again and
the entry rewritten. Settings that only decide which files are read (``exclude``,
``max-file-size``, ...) need not be part of it, nor do the output format and ``--fix``
options, which apply to the findings afterwards.

Beside the entries, ``<dir>/listings/<loopcheck version>/`` keeps the files a directory search
found (:mod:`loopcheck.workspace.listing`).

Safety: entries are written to a temporary file in the same directory and moved into place
with ``os.replace``, so a concurrent reader sees a whole entry, old or new, never part of one;
two runs writing the same entry leave one of them. An entry that cannot be read, is cut short,
is not JSON, or holds anything but the expected shape is a miss, never an error; a cache that
cannot be written (a read-only directory) is silently not written. Entries are JSON decoded
into a fixed set of classes (:data:`_TYPES`), never pickles: a cache directory that came with
a repository cannot make loopcheck run code.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import time
from dataclasses import fields, is_dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Collection, Mapping

if TYPE_CHECKING:
    from loopcheck.engine.project import Reads
    from loopcheck.findings import Finding
    from loopcheck.workspace.notebook import Notebook

#: The cache directory's name in the project root.
DIRECTORY_NAME = ".loopcheck_cache"
#: The environment variable naming the cache directory (``--cache-dir`` wins over it).
ENVIRONMENT_VARIABLE = "LOOPCHECK_CACHE_DIR"
#: Files that mark a project root (where the cache directory goes), closest first.
ROOT_MARKERS = ("pyproject.toml", "loopcheck.toml", ".loopcheck.toml", "setup.py", "setup.cfg", ".git")
CACHEDIR_TAG = (
    "Signature: 8a477f597d28d172789f06886806bc55\n"
    "# This file is a cache directory tag created by loopcheck.\n"
    "# For information about cache directory tags, see https://bford.info/cachedir/\n"
)
_FORMAT = 2  # the entries' layout: part of every entry's name
#: A modification time this close (nanoseconds) before an entry is stored may not show a
#: change made after it (a file system's clock ticks coarsely): such a time is not stored.
RACY_NS = 2_000_000_000


def default_directory(cwd: Path | None = None) -> Path:
    """``.loopcheck_cache`` in the project root of ``cwd`` (default: the current directory):
    the closest directory at or above it holding one of :data:`ROOT_MARKERS`, else ``cwd``."""
    start = Path(os.path.abspath(cwd or os.getcwd()))
    for d in (start, *start.parents):
        if any(os.path.exists(d / m) for m in ROOT_MARKERS):
            return d / DIRECTORY_NAME
    return start / DIRECTORY_NAME


def cache_directory(option: str | os.PathLike | None, cwd: Path | None = None) -> Path:
    """The cache directory: ``option`` (``--cache-dir``), else ``$LOOPCHECK_CACHE_DIR``, else
    :func:`default_directory`; a relative path is relative to ``cwd``."""
    chosen = option if option else os.environ.get(ENVIRONMENT_VARIABLE) or None
    if chosen is None:
        return default_directory(cwd)
    return Path(os.path.abspath(os.path.join(cwd or os.getcwd(), os.fspath(chosen))))


def _stamp(path: Path | str | None) -> str:
    try:
        st = os.stat(path) if path is not None else None
    except OSError:
        st = None
    return f"{path}:{st.st_size}:{st.st_mtime_ns}" if st is not None else f"{path}:-"


def engine_fingerprint() -> str:
    """What the results depend on besides the checked files and settings, as one hash:
    loopcheck's version, the size and modification time of each of its modules, the contents
    of its knowledge files (``loopcheck/knowledge/*.toml``), the Python version, and the
    installed ``__init__.py`` of libcst, nbformat and IPython (a syntax error's wording comes
    from Python, parsing from libcst, notebooks from nbformat and IPython). Costs about a
    hundred ``stat`` calls and 40 kB of reading; imports nothing."""
    import importlib.util

    import loopcheck

    h = hashlib.sha256()
    h.update(f"{loopcheck.__version__}\0{sys.version}\0{sys.implementation.cache_tag}\0".encode())
    package = Path(loopcheck.__file__).resolve().parent
    skip = {"__pycache__", "pages", "fixtures"}
    for dirpath, dirnames, filenames in os.walk(package):
        dirnames[:] = sorted(d for d in dirnames if d not in skip)
        for name in sorted(filenames):
            path = os.path.join(dirpath, name)
            if name.endswith(".toml"):
                h.update(path[len(str(package)):].encode("utf-8", "surrogateescape") + b"\0")
                h.update((_file_hash(path) or "-").encode())
            elif name.endswith(".py"):
                h.update((_stamp(path)[len(str(package)):] + "\0").encode("utf-8", "surrogateescape"))
    for dependency in ("libcst", "nbformat", "IPython"):
        try:
            spec = importlib.util.find_spec(dependency)
        except (ImportError, ValueError):
            spec = None
        h.update((_stamp(spec.origin if spec is not None else None) + "\0").encode("utf-8", "surrogateescape"))
    return h.hexdigest()


def content_hash(text: str) -> str:
    """SHA-256 (hex) of a text, as UTF-8 (lone surrogates of undecodable names kept)."""
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def _file_hash(path: str) -> str | None:
    try:
        with open(path, "rb") as f:
            return hashlib.sha256(f.read()).hexdigest()
    except OSError:
        return None


# --- (de)serialization: JSON, into known classes only ----------------------------------------


def _types() -> dict[str, type]:
    from loopcheck.findings import Finding, Related
    from loopcheck.fixes.model import Edit, Fix
    from loopcheck.workspace.notebook import CellText, Notebook

    return {cls.__name__: cls for cls in (Finding, Related, Fix, Edit, Notebook, CellText)}


_TYPES: dict[str, type] | None = None  # filled on first use (the classes' modules import libcst)


def encode(value):
    """A JSON-able form of findings, fixes and notebooks: a dataclass is ``{"@": name, field:
    value, ...}``, a tuple ``{"@t": [...]}``.

    Raises:
        TypeError: a value of another kind (it is then not cached).
    """
    if value is None or isinstance(value, (str, bool, int, float)):
        return value
    if isinstance(value, list):
        return [encode(v) for v in value]
    if isinstance(value, tuple):
        return {"@t": [encode(v) for v in value]}
    if is_dataclass(value) and not isinstance(value, type):
        out = {"@": type(value).__name__}
        for f in fields(value):
            if f.init:
                out[f.name] = encode(getattr(value, f.name))
        return out
    raise TypeError(f"cannot cache a {type(value).__name__}")


def decode(value):
    """The inverse of :func:`encode`, for a value already read from JSON.

    Raises:
        KeyError, TypeError, ValueError: the data is not something :func:`encode` wrote
        (an unknown class, a missing or extra field).
    """
    if isinstance(value, list):
        return [decode(v) for v in value]
    if isinstance(value, dict):
        return _revive({k: decode(v) for k, v in value.items()})
    if value is None or isinstance(value, (str, bool, int, float)):
        return value
    raise TypeError(f"unexpected {type(value).__name__} in a cache entry")


def _revive(obj: dict):
    """One JSON object of :func:`encode`'s output as the tuple or dataclass it stands for (used
    as ``json.loads``'s ``object_hook``, which calls it innermost first)."""
    global _TYPES
    if "@t" in obj:
        return tuple(obj["@t"])
    if "@" not in obj:
        return obj  # the entry itself, and the plain tables in it
    if _TYPES is None:
        _TYPES = _types()
    kwargs = dict(obj)
    return _TYPES[kwargs.pop("@")](**kwargs)


# --- the cache ---------------------------------------------------------------------------------


class Cache:
    """Per-file results in ``directory`` (see the module docstring).

    Args:
        directory: the cache directory (created on the first write).
        fingerprint: :func:`engine_fingerprint` (computed when not given).

    Instances are picklable: the pool's workers write the entries of the files they check.
    """

    def __init__(self, directory: Path, fingerprint: str | None = None) -> None:
        import loopcheck

        self.directory = Path(directory)
        self.fingerprint = fingerprint or engine_fingerprint()
        self.version = loopcheck.__version__
        self._hashes: dict[str, str | None] = {}
        self._seen: dict[str, bool | None] = {}
        self._real_dirs: dict[str, str] = {}
        self._dirs: dict[str, int | None] = {}
        self._probe_memo = _ProbeMemo()  # for put()
        self._entries_name: str | None = None
        self._ready = False

    def __getstate__(self) -> dict:
        return {"directory": self.directory, "fingerprint": self.fingerprint, "version": self.version}

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        self._hashes, self._seen, self._real_dirs, self._dirs, self._ready = {}, {}, {}, {}, False
        self._probe_memo = _ProbeMemo()
        self._entries_name = None

    @property
    def entries(self) -> Path:
        """The directory of this version's entries."""
        return self.directory / self.version.replace(os.sep, "_")

    @property
    def _entries(self) -> str:
        """:attr:`entries` as a string, made once (a lookup per file)."""
        if self._entries_name is None:
            self._entries_name = str(self.entries)
        return self._entries_name

    def entry_name(self, filename: str, codes: Collection[str] | None, src: tuple = ()) -> str:
        """The entry of a file checked as ``filename`` with the rule ``codes`` (``None``: all)
        and the project's ``src`` roots: a hex name."""
        key = json.dumps([
            _FORMAT, self._realpath(filename), filename,
            None if codes is None else sorted(codes), [os.fspath(s) for s in src],
        ], ensure_ascii=True, default=str)
        return hashlib.sha256(key.encode("ascii")).hexdigest()[:40]

    def _realpath(self, filename: str) -> str:
        """``os.path.realpath(filename)``, resolving each directory once per run (realpath
        ``lstat``s every component of the path)."""
        directory, name = os.path.split(os.path.abspath(filename))
        if not name or ".." in filename.split(os.sep) or os.path.islink(filename):
            return os.path.realpath(filename)  # (``link/..`` is not what abspath makes of it)
        real = self._real_dirs.get(directory)
        if real is None:
            real = self._real_dirs[directory] = os.path.realpath(directory)
        return os.path.join(real, name)

    # -- lookup -------------------------------------------------------------------------------

    def _hash_now(self, path: str, stamp: list | None = None) -> str | None:
        """The SHA-256 of ``path``'s bytes now, once per run; ``stamp``: the file's
        ``[size, mtime_ns, digest]`` when it was stored: a file with that size and time is
        taken to hold those bytes, as git's index does (:func:`_stamp_of` stores no stamp for
        a time too recent to tell)."""
        if path not in self._hashes:
            if stamp is not None:
                st = _stat(path)
                if st is not None and [st.st_size, st.st_mtime_ns] == stamp[:2]:
                    self._hashes[path] = stamp[2]
                    return stamp[2]
            self._hashes[path] = _file_hash(path)
        return self._hashes[path]

    def _unchanged_directory(self, path: str, mtime: int | None) -> bool:
        """Whether directory ``path`` has the modification time ``mtime`` (``None``: unknown)."""
        if mtime is None:
            return False
        now = self._dirs.get(path, self._dirs)
        if now is self._dirs:
            st = _stat(path)
            now = self._dirs[path] = st.st_mtime_ns if st is not None else None
        return now == mtime

    def _entry(self, name: str) -> dict | None:
        """Entry ``name`` as stored (findings revived), or ``None`` when it is absent,
        unreadable or of another engine."""
        try:
            with open(os.path.join(self._entries, name), "rb") as f:
                entry = json.loads(f.read(), object_hook=_revive)
        except Exception:  # noqa: BLE001 - absent, partial, corrupt or foreign: a miss
            return None
        return entry if isinstance(entry, dict) and entry.get("engine") == self.fingerprint else None

    def _reads_hold(self, entry: dict) -> bool:
        """Whether what the entry's check read is still as it was: each module's bytes, and
        each place an import was looked for (see :func:`_short_probes`)."""
        try:
            for path, digest, stamp in entry["modules"]:
                if self._hash_now(path, stamp) != digest:
                    return False
            seen = self._seen
            for directory, mtime, probes in entry["probes"]:
                if self._unchanged_directory(directory, mtime):
                    continue  # no entry of it was made, removed or renamed
                for name, was in probes:
                    path = os.path.join(directory, name)
                    now = seen.get(path, seen)
                    if now is seen:
                        now = seen[path] = _state(path)
                    if now is not was and (was is not False or now is not None):
                        return False  # (a path that was no file may be absent now: same thing)
        except Exception:  # noqa: BLE001 - an entry of another shape: a miss
            return False
        return True

    def get(self, name: str, text: str, stamp: list | None = None) -> tuple[list[Finding], Notebook | None] | None:
        """The findings and notebook stored in entry ``name`` for ``text``, or ``None`` (a
        miss) when there is no entry, it is unreadable or of another shape, or anything it
        depends on changed: loopcheck, the text, a module the analysis read, or an import's
        resolution.

        ``stamp``: the file's :func:`source_stamp` when ``text`` was read; an entry that holds
        another one is given this one (its file was touched, not changed: ``git checkout``),
        so that the next run knows it unchanged without reading it (:meth:`unchanged`)."""
        entry = self._entry(name)
        if entry is None or entry.get("content") != content_hash(text) or not self._reads_hold(entry):
            return None
        findings, notebook = entry.get("findings"), entry.get("notebook")
        from loopcheck.findings import Finding
        from loopcheck.workspace.notebook import Notebook

        if not isinstance(findings, list) or not all(isinstance(f, Finding) for f in findings):
            return None
        if notebook is not None and not isinstance(notebook, Notebook):
            return None
        if stamp is not None and entry.get("source") != stamp:
            raw = self.load_json(self.entries / name)
            if isinstance(raw, dict) and raw.get("content") == entry["content"]:
                raw["source"] = stamp
                self.store_json(self.entries / name, raw)
        return findings, notebook

    def unchanged(self, name: str, stamp: list | None) -> bool:
        """Whether entry ``name`` holds a result with no findings for a file that still has
        ``stamp`` (:func:`source_stamp`), and everything else it depends on holds as for
        :meth:`get`: such a file need not be read at all (a warm run of a large repository
        reads only the files with findings). A file with the same size and modification
        time is taken to hold the same bytes, as git's index does; :func:`source_stamp`
        gives no stamp for a time too recent to tell."""
        return self.freshness(name, stamp) == "unchanged"

    def freshness(self, name: str, stamp: list | None) -> str | None:
        """What entry ``name`` tells of a file that has ``stamp`` now, without reading it:
        ``"unchanged"`` (:meth:`unchanged`: it need not be read); ``"stamped"``: it holds
        findings for a file that still has ``stamp``, and everything else it read holds, so
        that the file is read for its findings and answered from the entry (unless its bytes
        changed under the same size and time); ``None``: it is to be checked."""
        if stamp is None:
            return None
        entry = self._entry(name)
        if entry is None or entry.get("source") != stamp or not self._reads_hold(entry):
            return None
        return "unchanged" if entry.get("findings") == [] and entry.get("notebook") is None else "stamped"

    @property
    def listings(self) -> Path:
        """The directory of this version's file listings (:mod:`loopcheck.workspace.listing`)."""
        return self.directory / "listings" / self.version.replace(os.sep, "_")

    def load_json(self, path: Path):
        """The JSON value stored at ``path`` (:meth:`store_json`), or ``None`` when there is
        none or it cannot be read."""
        try:
            with open(path, "rb") as f:
                return json.loads(f.read())
        except (OSError, ValueError):
            return None

    # -- store --------------------------------------------------------------------------------

    def store_json(self, path: Path, value) -> bool:
        """Store a JSON value at ``path``, a file in the cache directory (whole or not at all);
        ``False`` when it cannot be."""
        try:
            data = json.dumps(value, ensure_ascii=True, separators=(",", ":")).encode("ascii")
            self._prepare()
            path.parent.mkdir(parents=True, exist_ok=True)
            _write_atomic(path, data)
            return True
        except (OSError, TypeError, ValueError, UnicodeError):
            return False

    def _prepare(self) -> None:
        if self._ready:
            return
        self.entries.mkdir(parents=True, exist_ok=True)
        for name, content in ((".gitignore", "# Automatically created by loopcheck.\n*\n"),
                              ("CACHEDIR.TAG", CACHEDIR_TAG)):
            path = self.directory / name
            if not path.exists():
                _write_atomic(path, content.encode("utf-8"))
        self._ready = True

    def prepare(self) -> bool:
        """Create the directory, its ``.gitignore`` and ``CACHEDIR.TAG``; ``False`` when it
        cannot be written (the run then writes no entries)."""
        try:
            self._prepare()
            return True
        except OSError:
            return False

    def put(self, name: str, text: str, findings: list[Finding], notebook: Notebook | None,
            reads: Reads | None, stamp: list | None = None) -> bool:
        """Store the result of checking ``text`` in entry ``name``, with what the check read
        (``reads``, from :meth:`loopcheck.engine.project.Project.recording`) and the file's
        :func:`source_stamp` when ``text`` was read (``None``: none to keep).

        Nothing is stored (``False``) when a module the check read changed on disk meanwhile
        (its bytes no longer decode to the text the analysis used), when the result cannot
        be encoded, or when the directory cannot be written.
        """
        try:
            modules: list[list] = []
            probes: list[list] = []
            if reads is not None:
                read = {path: source for path, source in reads.texts.items() if path not in reads.modules}
                read.update((path, info.source if info is not None else None) for path, info in reads.modules.items())
                racy = time.time_ns() - RACY_NS
                for path, source in sorted(read.items()):
                    digest = _checked_hash(path, source)
                    if digest is False:
                        return False
                    modules.append([str(path), digest, _stamp_of(path, digest, racy)])
                probes = _short_probes(reads.probes, racy, self._probe_memo)
            entry = {
                "engine": self.fingerprint, "content": content_hash(text), "modules": modules,
                "probes": probes, "findings": encode(findings), "notebook": encode(notebook),
                "source": stamp,
            }
        except (OSError, TypeError, ValueError, UnicodeError):
            return False
        return self.store_json(self.entries / name, entry)


def _stat(path: str) -> os.stat_result | None:
    try:
        return os.stat(path)
    except (OSError, ValueError):
        return None


def source_stamp(path: str | os.PathLike) -> list | None:
    """``[size, mtime_ns]`` of a file about to be read, to recognize it unchanged in the next
    run without reading it (:meth:`Cache.unchanged`); ``None`` when it is not a regular file
    or its time is less than :data:`RACY_NS` old (a change in the same tick of the file
    system's clock would keep it). Take it *before* reading: a change made after it shows as
    another time."""
    return _settled(os.fspath(path), time.time_ns() - RACY_NS)


def _settled(path: str, racy: int) -> list | None:
    """``[size, mtime_ns]`` of a regular file, ``None`` when there is none or its time is later
    than ``racy`` (a change made in the same tick of the file system's clock would keep it)."""
    import stat

    st = _stat(path)
    if st is None or not stat.S_ISREG(st.st_mode) or st.st_mtime_ns >= racy:
        return None
    return [st.st_size, st.st_mtime_ns]


def _stamp_of(path: Path, digest: str | None, racy: int) -> list | None:
    """``[size, mtime_ns, digest]`` of a module just hashed, to recognize it unchanged without
    reading it; ``None`` when it is absent or too recent (:func:`_settled`)."""
    stamp = _settled(str(path), racy) if digest is not None else None
    return None if stamp is None else [*stamp, digest]


def _state(path: str) -> bool | None:
    """``True``: a file is there; ``False``: something else (a directory); ``None``: nothing."""
    import stat

    st = _stat(path)
    return None if st is None else stat.S_ISREG(st.st_mode)


class _ProbeMemo:
    """What :func:`_short_probes` learned of the file system, for the entries one
    :class:`Cache` writes in one task (the files of a project import the same modules, so
    their checks probe the same candidates). Each answer is the first look at its path, as the analysis keeps its own
    (:class:`loopcheck.engine.project.Project` probes a candidate once per run): a directory's
    time taken no later than it would be without the memo, so a change made since shows on
    lookup as another time."""

    def __init__(self) -> None:
        self._short: dict[Path, tuple[str, bool | None]] = {}
        self._is_dir: dict[str, bool] = {}
        self._mtime: dict[str, int | None] = {}
        self._link: dict[str, bool] = {}

    def short(self, path: Path) -> tuple[str, bool | None]:
        """``(path, False)`` for a candidate not found in a directory that exists, else
        ``(the highest missing directory on its way, None)``."""
        hit = self._short.get(path)
        if hit is None:
            missing, state = str(path), False
            parent = os.path.dirname(missing)
            while not self._exists_dir(parent) and parent != missing:
                missing, state, parent = parent, None, os.path.dirname(parent)
            hit = self._short[path] = (missing, state)
        return hit

    def _exists_dir(self, d: str) -> bool:
        known = self._is_dir.get(d)
        if known is None:
            known = self._is_dir[d] = os.path.isdir(d)
        return known

    def mtime(self, directory: str, racy: int) -> int | None:
        """A directory's modification time (ns), ``None`` when it is missing or not before
        ``racy`` (at the first look)."""
        if directory not in self._mtime:
            st = _stat(directory)
            self._mtime[directory] = st.st_mtime_ns if st is not None and st.st_mtime_ns < racy else None
        return self._mtime[directory]

    def is_link(self, path: str) -> bool:
        if path not in self._link:
            self._link[path] = os.path.islink(path)
        return self._link[path]


def _short_probes(probes: Mapping[Path, bool], racy: int, memo: _ProbeMemo) -> list[list]:
    """The import candidates a check looked at, as ``[path, state]`` (:func:`_state`) to
    compare on lookup: a candidate that was a file stays ``[path, true]``; one that was not,
    in a directory that exists, ``[path, false]``; one whose directory does not exist is
    replaced by the highest missing directory on its way, ``[dir, null]`` (so the candidates
    of ``torch.nn.functional``, ``torch.optim``, ... next to a script are one ``torch``
    that does not exist).

    Grouped by directory, each with its modification time: ``[dir, mtime_ns, [[name,
    state], ...]]``. While a directory has that time, no entry was made, removed or renamed
    in it, and its candidates need no look; the time is ``null`` when it is later than
    ``racy`` (at the first look of ``memo``, which keeps the answers for the next entries, of
    the whole :class:`Cache`: a memo per entry looked at the same paths again)."""
    out: dict[str, bool | None] = {}
    for path, was_file in probes.items():
        if was_file:
            out[str(path)] = True
        else:
            out.setdefault(*memo.short(path))
    groups: dict[str, list] = {}
    for p in sorted(out):
        directory, name = os.path.split(p)
        groups.setdefault(directory, []).append([name, out[p]])
    stored = []
    for directory, names in groups.items():
        mtime = memo.mtime(directory, racy)
        if any(was and memo.is_link(os.path.join(directory, name)) for name, was in names):
            mtime = None  # a link's target can go without its directory changing
        stored.append([directory, mtime, names])
    return stored


def _checked_hash(path: Path, source: str | None) -> str | None | bool:
    """The SHA-256 of ``path``'s bytes (``None``: unreadable or absent), or ``False`` when the
    file no longer decodes to ``source``, the text the analysis read from it."""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError:
        return None if source is None else False
    if source is not None and _decode_module(data) != source:
        return False
    return hashlib.sha256(data).hexdigest()


def _decode_module(data: bytes) -> str | None:
    """A module's text as :func:`loopcheck.engine.project.read_source` decodes it."""
    import io
    import tokenize

    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
        text = data.decode(encoding)
    except (SyntaxError, UnicodeDecodeError, LookupError):
        return None
    return text[1:] if text.startswith("\ufeff") else text


def _write_atomic(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` through a temporary file of the same directory and
    ``os.replace`` (no ``fsync``: a cache entry lost in a crash is a miss).

    Raises:
        OSError: the directory cannot be written.
    """
    import tempfile

    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
