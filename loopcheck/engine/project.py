"""The project: the modules a checked file imports, found as Python would find them.

A training loop is rarely one file: ``main.py`` drives ``engine.train_one_epoch()``, the
trainer's base class lives in ``base/base_trainer.py``, ``evaluate()`` in ``eval.py``. The
engine reads those modules too (as mypy follows imports), so a call into them is understood
as well as a call into the same file; findings are still reported only for the files that
were asked for.

Where modules are looked for, in order:

1. the directory that holds the checked file's top package (the checked file's own directory
   for a plain script; for ``pkg/sub/train.py`` with ``__init__.py`` files, the parent of ``pkg``);
2. the checked file's directory;
3. the project root: the closest directory above the file with a ``pyproject.toml``,
   ``setup.py``, ``setup.cfg`` or ``.git`` (with none, the current directory when it holds the
   file, as ruff does), and its ``src/`` directory;
4. the source roots the configuration names (``src = ["lib"]``, relative to the root);
5. the directories between the checked file's directory and the project root, nearest first:
   a project kept in a subdirectory is run from there (``projects/nerf/tests/test_x.py``
   importing ``nerf.raysampler`` from ``projects/nerf/nerf/``); only names found nowhere
   before are looked up there.

Only files under these directories are read: an import that resolves nowhere there is a
library's (its behaviour comes from :mod:`loopcheck.engine.knowledge`). A module that does
not parse, or cannot be read, is treated as unknown; import cycles are followed once.
Each module is read and outlined once per :class:`Project` (and again only when the
file changes on disk, or after :meth:`Project.trim` let it go), however many files import it;
LibCST parses it only when the analysis needs its code (:mod:`loopcheck.engine.outline`).
"""

from __future__ import annotations

import os
import time
import weakref
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterator

import libcst as cst

from loopcheck.engine.names import ImportMap
from loopcheck.parsing import parse_tree

ROOT_MARKERS = ("pyproject.toml", "setup.py", "setup.cfg", ".git")
MAX_MODULE_BYTES = 2_000_000  # larger modules are not read for their definitions
#: Texts read by :meth:`Project.source_of`, by ``(path, stamp)`` (:func:`file_stamp`), shared by
#: the projects of one process (a test run makes a project per check, a server one per root): a
#: file as it was is read from disk once. Only a text read, of a file :func:`settled`, is kept
#: (a failed read is tried again). At most :data:`_SHARED_TEXTS_MAX` entries, the oldest dropped
#: first.
_SHARED_TEXTS: dict[tuple[Path, tuple], str] = {}
_SHARED_TEXTS_MAX = 20_000
#: How recent (ns) a file's change may be for its stamp to say it is unchanged: a file written
#: again within one tick of a coarse file system clock (FAT's 2 s) keeps its times, as git's
#: "racy clean" rule says.
RACY_NS = 2_000_000_000
MAX_REEXPORT_DEPTH = 8
#: Source text of the modules a project keeps between checks (:meth:`Project.trim`).
MAX_KEPT_BYTES = 3_000_000


def file_stamp(st: os.stat_result) -> tuple[int, int, int, int]:
    """The stamp a project reads a file's version by, from its ``os.stat`` ``st``:
    ``(mtime_ns, size, inode, ctime_ns)``. The change time, which no program can set, and the
    inode tell a rewrite that keeps the modification time and the size (``cp -p``, ``rsync
    -t``, an archive unpacked, a formatter's same-size edit) from the file as it was."""
    return st.st_mtime_ns, st.st_size, st.st_ino, st.st_ctime_ns


def settled(stamp: tuple) -> bool:
    """Whether a file of :func:`file_stamp` ``stamp`` last changed more than :data:`RACY_NS`
    ago, so that a later change must change its stamp (``False`` for ``()``, no file)."""
    if not stamp:
        return False
    return max(stamp[0], stamp[3]) < time.time_ns() - RACY_NS


def find_root(path: Path) -> Path:
    """The closest directory at or above ``path``'s directory holding a project marker
    (``pyproject.toml``, ``setup.py``, ``setup.cfg``, ``.git``); else, as ruff takes it when it
    finds no configuration, the current directory when it holds ``path`` (``loopcheck .`` in a
    repository of scripts and packages without markers: ``scripts/train.py`` imports
    ``mel2wav.modules`` from there); else ``path``'s directory."""
    start = path.parent if path.suffix else path
    for d in (start, *start.parents):
        if any((d / m).exists() for m in ROOT_MARKERS):
            return d
    try:
        cwd = Path.cwd().resolve()
    except OSError:
        return start
    return cwd if cwd == start or cwd in start.parents else start


def _directory(near: Path | None) -> str | None:
    """The directory of ``near`` as text, a memo key (a new ``Path``, ``near.parent``, hashes
    its parts each time)."""
    return os.path.dirname(str(near)) if near is not None else None


def module_name(path: Path, is_file: Callable[[Path], bool] = Path.is_file) -> tuple[str, Path]:
    """``("pkg.sub.train", search root)`` for ``.../pkg/sub/train.py`` when ``pkg`` holds an
    ``__init__.py``; ``("train", its directory)`` for a plain script. ``pkg/sub`` need not
    hold one: a directory directly inside a package is its subpackage all the same (a
    namespace package, as Python imports it), so the search root is still the one ``pkg``
    is found from. A directory without ``__init__.py`` whose parent has none either ends the
    name (where its package would start is not known). ``is_file`` tells whether a path is
    a file (a project passes its memo of that)."""
    parts = [] if path.stem == "__init__" else [path.stem]
    d = path.parent
    here = is_file(d / "__init__.py")
    while d.name:
        above = is_file(d.parent / "__init__.py")  # each directory looked at once
        if not (here or above):
            break
        parts.insert(0, d.name)
        d, here = d.parent, above
    return ".".join(parts), d


@dataclass(eq=False)
class ModuleInfo:
    """One module of the project.

    Attributes:
        path: its file (absolute).
        name: its dotted name from its search root (``"pkg.utils"``).
        source: its text.
        module: the parsed tree, ``None`` when it does not parse (or, for a module read as an
            outline, until LibCST has parsed it).
        index: what it defines (:class:`loopcheck.engine.builder.ModuleIndex`, or a
            :class:`loopcheck.engine.outline.LazyModuleIndex` for an imported module), ``None``
            when it does not parse.
    """

    path: Path
    name: str
    source: str
    module: cst.Module | None
    index: object | None
    stamp: tuple = ()


@dataclass
class Reads:
    """What the checks run inside :meth:`Project.recording` read of the project (for the
    command line's cache: a result stays valid while these files are as they were).

    Attributes:
        modules: the module files asked for (absolute, resolved) -> their
            :class:`ModuleInfo`, or ``None`` when the file could not be read, was too large
            or did not exist.
        probes: every candidate file looked at to resolve an import (absolute) -> whether
            it was a file then (a module created where none was changes the resolution).
        texts: module files whose text only was read (:meth:`Project.source_of`, the
            pre-filter) -> that text, or ``None`` when it could not be read.
    """

    modules: dict[Path, ModuleInfo | None] = field(default_factory=dict)
    probes: dict[Path, bool] = field(default_factory=dict)
    texts: dict[Path, str | None] = field(default_factory=dict)


@dataclass
class Member:
    """A definition found in a project module: a function, a class, or a class's method."""

    info: ModuleInfo
    function: cst.FunctionDef | None = None
    cls: str | None = None  # the class name (for a class or a method)


def absolute_module(relative: str, near: Path) -> str:
    """The dotted name of a relative import's module (``..data`` in ``pkg/sub/main.py``:
    ``pkg.data``), as :class:`~loopcheck.engine.names.ImportMap` qualifies it (dots that climb
    above the top package stop there)."""
    name, _ = module_name(near)
    dotted = relative.lstrip(".")
    package = [p for p in (name.split(".") if near.stem == "__init__" else name.split(".")[:-1]) if p]
    up = len(relative) - len(dotted) - 1
    return ".".join([*package[: max(len(package) - up, 0)], *filter(None, [dotted])])


@dataclass(eq=False)
class Project:
    """The modules a check may read, found from ``root`` (see module docstring).

    Args:
        root: the project root.
        src: extra source roots (absolute, or relative to ``root``).
    """

    root: Path
    src: tuple[Path, ...] = ()
    _modules: dict[Path, ModuleInfo] = field(default_factory=dict)
    _found: dict[tuple, tuple[Path | None, tuple[tuple[Path, bool], ...]]] = field(default_factory=dict)
    # like _found, for the process's life: a directory's search roots, and each candidate
    # file's presence (a large project resolves the same imports from many directories)
    _roots: dict[str | None, list[Path]] = field(default_factory=dict, repr=False)
    _is_file: dict[Path, bool] = field(default_factory=dict, repr=False)
    _found_in: dict[tuple[Path, str], tuple] = field(default_factory=dict, repr=False)  # _find_in
    _reads: Reads | None = field(default=None, repr=False)
    memo: dict = field(default_factory=dict)  # callers' answers about modules, by their own keys
    _texts: dict[Path, tuple[tuple, str | None]] = field(default_factory=dict, repr=False)  # source_of
    # for the check under way (emptied by trim(), between checks): path -> resolved path, and
    # resolved path -> the module found current (a lookup resolves and stats its file each time)
    _resolved: dict[Path, Path] = field(default_factory=dict, repr=False)
    _current: dict[Path, ModuleInfo | None] = field(default_factory=dict, repr=False)
    # ... and (qualified name, directory) -> what lookup() found (the builder looks the same
    # names up at every call site)
    _members: dict[tuple, Member | None] = field(default_factory=dict, repr=False)
    # when set, lookup() appends ``(qualified name, near, answer)`` to it (the builder notes
    # what an entry point's build asked: :class:`loopcheck.engine.builder.UnitRecord`)
    recorder: list | None = field(default=None, repr=False)

    @contextmanager
    def recording(self) -> Iterator[Reads]:
        """Record, while the ``with`` block runs, the module files the analysis reads and the
        candidate paths it probes (:class:`Reads`); nested blocks share one record."""
        if self._reads is not None:
            yield self._reads
            return
        self._reads = Reads()
        try:
            yield self._reads
        finally:
            self._reads = None

    def roots_for(self, path: Path | None) -> list[Path]:
        """The directories modules are looked up in, for code in file ``path`` (the same for
        every file of a directory)."""
        key = _directory(path)
        roots = self._roots.get(key)
        if roots is None:
            roots = self._roots[key] = self._roots_for(path)
        return roots

    def _roots_for(self, path: Path | None) -> list[Path]:
        out: list[Path] = []
        if path is not None:
            out += [module_name(path, self._file)[1], path.parent]
        out += [self.root, self.root / "src"]
        out += [p if p.is_absolute() else self.root / p for p in self.src]
        if path is not None:  # last: a directory a project under the root is run from
            out += [d for d in path.parent.parents if d != self.root and self.root in d.parents]
        seen: list[Path] = []
        for d in out:
            if d not in seen:
                seen.append(d)
        return seen

    def find_module(self, dotted: str, near: Path | None) -> Path | None:
        """The file of module ``dotted`` (``a/b.py`` or ``a/b/__init__.py``), or ``None``."""
        key = (dotted, _directory(near))
        hit = self._found.get(key)
        if hit is None:
            found = None
            probes: list[tuple[Path, bool]] = []
            if dotted:
                for root in self.roots_for(near):
                    found, tried = self._find_in(root, dotted)
                    probes.extend(tried)
                    if found is not None:
                        break
            hit = self._found[key] = (found, tuple(probes))
        if self._reads is not None:
            self._reads.probes.update(hit[1])
        return hit[0]

    def _find_in(self, root: Path, dotted: str) -> tuple[Path | None, tuple[tuple[Path, bool], ...]]:
        """Module ``dotted`` under one search root: ``(its file or None, the candidate files
        tried and whether each is a file)``, once per root and name for the process's life
        (most roots are shared by every directory)."""
        key = (root, dotted)
        hit = self._found_in.get(key)
        if hit is None:
            found = None
            probes: list[tuple[Path, bool]] = []
            rel = Path(*dotted.split("."))
            for cand in (root / rel.with_suffix(".py") if rel.name else None, root / rel / "__init__.py"):
                if cand is None:
                    continue
                is_file = self._file(cand)
                probes.append((cand, is_file))
                if is_file:
                    found = cand.resolve()
                    break
            hit = self._found_in[key] = (found, tuple(probes))
        return hit

    def note_probe(self, path: Path) -> None:
        """Record, while :meth:`recording`, that an answer depends on whether ``path`` is a
        file (as :meth:`find_module` records the candidates it tries)."""
        if self._reads is not None:
            self._reads.probes[path] = path.is_file()

    def _file(self, path: Path) -> bool:
        """Whether ``path`` is a file, looked at once per process (as import candidates are)."""
        is_file = self._is_file.get(path)
        if is_file is None:
            is_file = self._is_file[path] = path.is_file()
        return is_file

    def load(self, path: Path) -> ModuleInfo | None:
        """Read, parse and index ``path`` once (again only when it changed on disk)."""
        resolved = self._resolved.get(path)
        if resolved is None:
            resolved = self._resolved[path] = path.resolve()
        if resolved in self._current:
            info = self._current[resolved]
            if info is not None and self._modules.get(resolved) is info:
                self._modules[resolved] = self._modules.pop(resolved)  # the most recently used last
        else:
            info = self._current[resolved] = self._load(resolved)
        if self._reads is not None:
            self._reads.modules[resolved] = info
        return info

    def _load(self, path: Path) -> ModuleInfo | None:
        try:
            st = path.stat()
        except OSError:
            return None
        stamp = file_stamp(st)
        info = self._modules.get(path)
        if info is not None and info.stamp == stamp and self._stars_current(info):
            self._modules[path] = self._modules.pop(path)  # the most recently used last
            return info
        if st.st_size > MAX_MODULE_BYTES:
            return None
        try:
            source = read_source(path)
        except (OSError, UnicodeDecodeError, SyntaxError):
            return None
        return self.add(path, source, stamp, lazy=True)

    def _stars_current(self, info: ModuleInfo) -> bool:
        """Whether the modules whose imports ``info``'s star imports took
        (:meth:`bind_stars`) are as they were then (else the module is read again)."""
        imports = getattr(info.index, "imports", None)
        if imports is None or not imports.star_sources:
            return True
        return all(self.source_of(p)[0] == stamp for p, stamp in imports.star_sources.items())

    def source_of(self, path: Path) -> tuple[tuple, str | None]:
        """``(stamp, text)`` of module ``path`` as :meth:`load` reads it, without parsing it: the
        loaded module's text when it is current, else the file's. ``text`` is ``None`` when the
        file cannot be read or decoded, or is larger than :data:`MAX_MODULE_BYTES`; ``stamp``
        is :func:`file_stamp`'s (``()`` when the file cannot be read). ``path`` is resolved,
        as :meth:`find_module` gives it (resolving it again costs ``lstat`` calls per import
        per file)."""
        try:
            st = path.stat()
        except OSError:
            if self._reads is not None:
                self._reads.texts.setdefault(path, None)  # (a file made there later changes the result)
            return (), None
        stamp = file_stamp(st)
        info = self._modules.get(path)
        known = self._texts.get(path)
        if info is not None and info.stamp == stamp:
            text = info.source
        elif known is not None and known[0] == stamp:
            text = known[1]
        elif (path, stamp) in _SHARED_TEXTS:
            text = _SHARED_TEXTS[path, stamp]
            self._texts[path] = (stamp, text)
        else:
            text = None
            if st.st_size <= MAX_MODULE_BYTES:
                try:
                    text = read_source(path)
                except (OSError, UnicodeDecodeError, SyntaxError):
                    pass
            self._texts[path] = (stamp, text)
            if text is not None and settled(stamp):
                if len(_SHARED_TEXTS) >= _SHARED_TEXTS_MAX:
                    del _SHARED_TEXTS[next(iter(_SHARED_TEXTS))]
                _SHARED_TEXTS[path, stamp] = text
        if self._reads is not None:
            self._reads.texts.setdefault(path, text)
        return stamp, text

    def add(self, path: Path, source: str, stamp: tuple = (), module: cst.Module | None = None,
            keep: bool = True, lazy: bool = False, parse: bool = True) -> ModuleInfo:
        """Index the text ``source`` (already parsed as ``module``, when given) as module
        ``path``: the checked file, an editor buffer. With ``keep``, the module is kept for
        later :meth:`load` calls (it is reused only while the file on disk has ``stamp``); the
        checked file's text, which may differ from the file, is not kept. With ``lazy`` (an
        imported module, a checked file read statement by statement), the index is read from
        an :mod:`ast` outline and LibCST parses the text only when a syntax node is needed
        (:mod:`loopcheck.engine.outline`); a text CPython cannot parse is then parsed whole
        with LibCST, or, without ``parse``, not indexed (``index`` ``None``)."""
        from loopcheck.engine.builder import index_module

        path = path.resolve()
        self._current.pop(path, None)
        name, _root = module_name(path)
        package = name.rpartition(".")[0] if path.stem != "__init__" else name
        if lazy and module is None:
            from loopcheck.engine.outline import LazyModuleIndex, outline

            seen = outline(source, package, stars=lambda imports: self.bind_stars(imports, path))
            if seen is not None:
                info = ModuleInfo(path, name, source, None, None, stamp)
                # ``info`` holds the index, which holds this function: named weakly, or the cycle
                # would keep a module :meth:`trim` lets go (see ``outline.LazyClassInfo``)
                ref = weakref.ref(info)

                def parsed(tree: cst.Module | None) -> None:
                    target = ref()
                    if target is not None:
                        target.module = tree

                info.index = LazyModuleIndex(source, seen, name, path, self, on_parse=parsed)
                if keep:
                    self._modules.pop(path, None)
                    self._modules[path] = info
                return info
            if not parse:
                return ModuleInfo(path, name, source, None, None, stamp)
        if module is None:
            try:
                module = parse_tree(source)
            except (cst.ParserSyntaxError, RecursionError, MemoryError, ValueError):
                module = None
        index = index_module(module, package=package, name=name, path=path, project=self) if module is not None else None
        info = ModuleInfo(path, name, source, module, index, stamp)
        if keep:
            self._modules.pop(path, None)
            self._modules[path] = info
        return info

    def trim(self, max_bytes: int = MAX_KEPT_BYTES) -> None:
        """Forget the least recently used modules until the kept ones hold at most
        ``max_bytes`` of source text (their trees take about 30 bytes of memory per byte of
        source; a module only outlined counts for a :data:`OUTLINE_DISCOUNT`-th). Call it
        between checks, never during one: a module read again is a new tree, and one check
        must see one tree per module. The texts read for the pre-filter only
        (:meth:`source_of`) are forgotten by this project; the copy the projects of the
        process share (:data:`_SHARED_TEXTS`) is used again only for a file whose stamp
        (:func:`file_stamp`: times, size, inode) is unchanged and was settled when it was
        read."""
        self._texts.clear()
        self._resolved.clear()
        self._current.clear()
        self._members.clear()
        total = sum(_weight(info) for info in self._modules.values())
        for path in list(self._modules):
            if total <= max_bytes:
                break
            total -= _weight(self._modules.pop(path))

    def close(self) -> None:
        """Let go of every module this project holds (text, tree, index) and every answer
        about them, as :func:`forget_projects` does when it drops the project. A module's
        index names its project (to resolve the imports it makes), so a project and its
        modules are a reference cycle: emptied, they are freed by their reference counts, and
        no collection of every object of the process is needed to find them
        (:func:`loopcheck.check.settle_gc`). A project closed and used again reads its
        modules again."""
        self._modules.clear()
        self.memo.clear()
        self.trim()

    def lookup(self, qualname: str | None, near: Path | None, _depth: int = 0) -> Member | None:
        """The project definition a qualified name refers to (``engine.train_one_epoch``,
        ``models.Net``, ``trainer.Trainer.fit``, or a name re-exported by a package's
        ``__init__.py``), or ``None`` for names of libraries."""
        if _depth:
            return self._lookup(qualname, near, _depth)
        # once per name and directory in a check (the reads were recorded by the first one)
        key = (qualname, _directory(near))
        if key not in self._members:
            self._members[key] = self._lookup(qualname, near, 0)
        found = self._members[key]
        if self.recorder is not None:
            self.recorder.append((qualname, near, found))
        return found

    def _lookup(self, qualname: str | None, near: Path | None, _depth: int) -> Member | None:
        if not qualname or _depth > MAX_REEXPORT_DEPTH:
            return None
        parts = qualname.split(".")
        for i in range(len(parts) - 1, 0, -1):
            path = self.find_module(".".join(parts[:i]), near)
            if path is None:
                continue
            info = self.load(path)
            if info is None or info.index is None:
                return None
            return self.member(info, parts[i:], _depth)
        return None

    def member(self, info: ModuleInfo, rest: list[str], _depth: int = 0) -> Member | None:
        """``rest`` (``["Trainer", "fit"]``) looked up in module ``info``."""
        index = info.index
        name = rest[0]
        if name in index.functions and len(rest) == 1:
            return Member(info, index.functions[name])
        if name in index.classes:
            if len(rest) == 1:
                return Member(info, None, name)
            if len(rest) == 2 and rest[1] in index.classes[name].methods:
                return Member(info, index.classes[name].methods[rest[1]], name)
            return None
        target = index.imports.aliases.get(name)
        if target is not None and target != f"{info.name}.{name}":
            return self._lookup(".".join([target, *rest[1:]]), info.path, _depth + 1)
        for star in index.imports.stars:
            found = self._lookup(".".join([star, *rest]), info.path, _depth + 1)
            if found is not None:
                return found
        return None

    def bind_stars(self, imports: ImportMap, near: Path) -> None:
        """Add to ``imports`` (those of file ``near``) the imported names its star imports of
        project modules bind (:meth:`star_aliases`): after ``from utils import *``, where
        ``utils.py`` does ``import torch``, ``torch`` is ``torch`` here too. A name the file
        imports itself keeps its own meaning; of two star imports binding a name, the later
        one's meaning is taken, as Python does. Star imports of modules not found in the
        project bind nothing here (a library's names are not guessed)."""
        bound: dict[str, str] = {}
        for star in imports.stars:
            bound.update(self.star_aliases(star, near, read=imports.star_sources))
        for name, target in bound.items():
            imports.aliases.setdefault(name, target)

    def star_aliases(self, dotted: str, near: Path | None, _stack: tuple[Path, ...] = (),
                     read: dict | None = None) -> dict[str, str]:
        """The names ``from <dotted> import *`` (in file ``near``) binds to what project module
        ``dotted`` imported (``{"torch": "torch", "nn": "torch.nn", "optim": "torch.optim"}``
        for its ``import torch``, ``import torch.nn as nn``, ``from torch import optim``), as
        Python decides: the names of its ``__all__`` when it has one, else those not starting
        with ``_``; a name the module also binds otherwise (a definition, an assignment) is
        not an import's. Followed through the module's own star imports (a chain of them, at
        most :data:`MAX_REEXPORT_DEPTH` deep; a module already on the chain, an import cycle,
        adds nothing). ``{}`` for a module not found in the project, one that cannot be read
        or parsed, or one whose ``__all__`` is not a literal (what it exports is unknown). The
        functions and classes the module defines are not among them: calls find those
        through :attr:`ImportMap.stars <loopcheck.engine.names.ImportMap.stars>`. ``read``,
        when given, gets each module file read and its stamp."""
        path = self.find_module(dotted, near)
        if path is None or path in _stack or len(_stack) > MAX_REEXPORT_DEPTH:
            return {}
        stamp, exports = self._star_exports(path)
        if read is not None:
            read[path] = stamp
        if exports is None or exports.opaque:
            return {}
        found: dict[str, str] = {}
        for star in exports.imports.stars:
            found.update(self.star_aliases(star, path, (*_stack, path), read))
        found.update(exports.imports.aliases)  # its own imports win over what its stars bind
        return {name: target for name, target in found.items()
                if exports.exported(name) and name not in exports.defined}

    def star_names(self, dotted: str, near: Path | None, _stack: tuple[Path, ...] = ()) -> frozenset[str] | None:
        """Every name ``from <dotted> import *`` (in file ``near``) may bind, a superset, when
        ``dotted`` is a module of the project whose names are all known: its ``__all__``
        when it has a literal one, else each name not starting with ``_`` that it binds
        anywhere (:attr:`~loopcheck.engine.outline.StarExports.bindable`), and what its own
        star imports bind. ``None`` when it is not known: a module not found in the project
        (a library's), one that cannot be read, whose ``__all__`` is not a literal, that may
        bind names unseen, or an import cycle or a chain of star imports past
        :data:`MAX_REEXPORT_DEPTH`."""
        path = self.find_module(dotted, near)
        if path is None or path in _stack or len(_stack) > MAX_REEXPORT_DEPTH:
            return None
        _stamp, exports = self._star_exports(path)
        if exports is None or exports.opaque or exports.bindable is None:
            return None
        if len(exports.imports.stars) != exports.star_count:
            return None  # a relative star import whose module is not known
        if exports.public is not None:
            return exports.public
        names = set(exports.bindable) | set(exports.imports.aliases)
        for star in exports.imports.stars:
            inner = self.star_names(star, path, (*_stack, path))
            if inner is None:
                return None
            names |= inner
        return frozenset(n for n in names if not n.startswith("_"))

    def stars_bind(self, path: Path) -> frozenset[str] | None:
        """Every name the star imports of the project module file ``path`` may bind, a
        superset: the union of :meth:`star_names` of each, and, for one of a package without
        a literal ``__all__``, the names of the package's directory (``from pkg import *``
        also binds the public submodules loaded so far). ``None`` when one of them is not
        known (a library's module, a relative one not resolved, one that may bind names
        unseen); an empty set for a module without star imports."""
        _stamp, exports = self._star_exports(path)
        if exports is None or len(exports.imports.stars) != exports.star_count:
            return None
        names: set[str] = set()
        for star in exports.imports.stars:
            found = self.star_names(star, path)
            if found is None:
                return None
            names |= found
            source = self.find_module(star, path)
            if source is not None and source.name == "__init__.py" and self._star_exports(source)[1].public is None:
                try:
                    names.update(p.name.split(".")[0] for p in source.parent.iterdir()
                                 if not p.name.startswith("_"))
                except OSError:
                    return None
        return frozenset(names)

    def module_exports(self, path: Path):
        """The :class:`~loopcheck.engine.outline.StarExports` of project module file ``path``:
        the imports of its module level and the other names it binds there; ``None`` when it
        cannot be read or parsed. Read once per version of the file."""
        return self._star_exports(path)[1]

    def _star_exports(self, path: Path):
        """``(stamp, star_exports)``: the stamp of project module ``path``'s file and its
        :func:`~loopcheck.engine.outline.star_exports` (``None`` when it cannot be read or
        parsed), read once per version of the file."""
        from loopcheck.engine.outline import star_exports

        stamp, text = self.source_of(path)
        memo = self.memo.setdefault("star_exports", {})
        key = (path, stamp)
        if key not in memo:
            name, _root = module_name(path)
            package = name.rpartition(".")[0] if path.stem != "__init__" else name
            memo[key] = star_exports(text, package) if text is not None else None
        return stamp, memo[key]

    def module_of(self, path: Path) -> ModuleInfo | None:
        return self._modules.get(path.resolve())


#: How much less memory a module read only as an outline takes than a parsed one, per byte of
#: source: its text and a few name tables, against a LibCST tree of about 30 bytes per byte.
OUTLINE_DISCOUNT = 16


def _weight(info: ModuleInfo) -> int:
    """What a kept module counts for in :meth:`Project.trim`: its source size when it has a
    LibCST tree; while it is outlined, a :data:`OUTLINE_DISCOUNT`-th of it plus the size of
    the statements parsed so far (:class:`~loopcheck.engine.outline.LazyModuleIndex`), up to
    its size."""
    parsed = getattr(info.index, "parsed_chars", None)
    if info.module is None and parsed is not None:
        return min(len(info.source), len(info.source) // OUTLINE_DISCOUNT + parsed)
    return len(info.source)


def read_source(path: Path) -> str:
    """A Python file's text, decoded as Python does (BOM, ``# -*- coding: ... -*-``).

    Raises:
        OSError: the file cannot be read.
        SyntaxError: its coding cookie names an unknown encoding.
        UnicodeDecodeError: it is not valid in its encoding.
    """
    import tokenize

    with open(path, "rb") as f:
        data = f.read()
    import io

    encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    text = data.decode(encoding)
    return text[1:] if text.startswith("\ufeff") else text


_PROJECTS: dict[tuple, Project] = {}


def project_for(path: str | os.PathLike | None, src: tuple = ()) -> Project | None:
    """The project a checked file belongs to, shared by every file of the same root in this
    process (so each module is read once per run); ``None`` for text with no file
    (standard input without a name)."""
    if path is None or str(path) in ("", "-"):
        return None
    p = Path(path).resolve()
    root = find_root(p)
    key = (root, tuple(src))
    proj = _PROJECTS.get(key)
    if proj is None:
        proj = _PROJECTS[key] = Project(root, tuple(Path(s) for s in src))
    return proj


def forget_projects(keep: Project | None = None) -> int:
    """Drop the projects :func:`project_for` shares in this process (the text, tree and index
    of every module read), except ``keep``, each emptied (:meth:`Project.close`): for a
    process that checks one project after another, or whose memory grew too large. A dropped
    project's modules are read again when a later check needs them (the results do not
    change). Returns how many were dropped."""
    dropped = 0
    for key, proj in list(_PROJECTS.items()):
        if proj is not keep:
            del _PROJECTS[key]
            proj.close()
            dropped += 1
    return dropped
