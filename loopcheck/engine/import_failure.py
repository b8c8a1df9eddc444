"""Modules whose import provably fails: a training loop there never runs.

A script whose top-level ``from pkg.models import ResNet`` raises ``ImportError`` (the project's
``pkg/models.py`` defines no ``ResNet``), or imports a project module that does not compile (a
file left with merge-conflict markers), stops before its first line of training: no rule's
harm can happen there. :func:`failing_import` finds such an import, and only when the project's
own files prove it; anything it cannot decide counts as an import that works.

An import statement counts when it is at the module's top level (not under ``if``, ``try``,
``with``, nor in a function or class) and, in the checked file, when no top-level statement
before it may run a training loop or move where modules are found: a ``for``/``while`` loop, a
call of a function or class the file defines, a use of ``sys.path`` or ``site.addsitedir``
(nor, in any module loaded before it, a use of ``sys.path``: ``import _init_paths``); a
relative one is taken as the file's package makes it
(``..utils`` in ``pkg/models/train.py`` is ``pkg.utils``), and left alone in a file of no
package; in a project module the import loads, in the package it is loaded into
(``.content`` in ``core/models/__init__.py`` loaded as ``core.models`` is
``core.models.content``, even when ``core`` is a namespace package). ``from pkg import name``,
where ``pkg``'s ``__init__`` binds no ``name`` (or ``pkg`` is a namespace package), imports the
submodule ``pkg.name`` as Python does, and its loading is followed as well. Its
module is looked up as the engine looks up every project module
(:meth:`~loopcheck.engine.project.Project.find_module`); a module found nowhere in the project,
or one of a package the library knowledge names (a ``torch.py`` beside the script), is a
library's, which is taken to import; so is a name of the standard library. Absolute names
are looked up as the checked file runs them (from its ``sys.path``), whichever module imports;
a name that more than one of those directories holds as a module or package (``utils.py``
beside the script and ``utils/`` at the root), or a directory holds both as ``x.py`` and
``x/__init__.py``, depends on how the script is run and is not decided; so is a name that code
run before the import (a module loaded so far, the checked file's statements before it) puts
in ``sys.modules`` by name (``sys.modules["pkg.data"] = m``), or a module under that name: the
import gets that object. Such a registration makes only that name importable: another name is
decided as if it were not there. It fails when:

- a module it loads (the package ``pkg``, then ``pkg.models``) does not compile with CPython's
  parser (a ``SyntaxError``) nor parse with LibCST's (whose grammar follows newer Pythons:
  a module written for Python 3.12 is not decided), for a reason that is not Python 2's
  syntax (a ``print`` statement: the project may run on Python 2), or one of that module's own counted imports fails (followed
  :data:`MAX_DEPTH` modules deep; an import cycle counts as working);
- ``import pkg.sub`` or ``from pkg.sub import x`` names a submodule that the package's
  directory does not hold (no ``sub.py``, ``sub/``, nor ``sub.*`` extension), in a package whose
  ``__init__`` does not touch ``__path__``, when no module run before it (the package's
  ``__init__``, the project modules loaded so far, the checked file's statements before the
  import) may register modules (``sys.modules``, ``sys.meta_path``, ``sys.path_hooks``,
  ``exec``: :func:`_registers`; a star import or a module ``__getattr__`` binds names, never a
  submodule, and does not keep this from being decided), in a project whose build compiles no
  extension modules (one that does may make ``pkg._C``), and that the repository's
  ``.gitignore`` does not keep out (a module built in place, or made from a sample:
  ``global_config.py``);
- ``from pkg.models import N`` names something the module does not bind at its top level (by
  any assignment, ``def``, ``class``, import, loop or ``with`` target, in any branch), that is
  not a submodule of a package (nor, in a project that builds extensions, may be one), in a
  module that has no module
  ``__getattr__``, no ``global N`` in a function, and no ``globals()``, ``setattr``, ``exec``,
  ``sys.modules``, ``__dict__`` or ``vars()`` that could bind it unseen; its star imports
  (``from x import *``) must each be of a project module whose names are all known, and none
  of them may bind ``N`` (:meth:`~loopcheck.engine.project.Project.stars_bind`: ``x``'s
  ``__all__``, else its names not starting with ``_``, its own star imports followed; a star
  import of a library's module may bind any name and leaves the import undecided).
- ``import name`` or ``from name... import x`` names a top-level module that no folder of the
  checked script's search path holds, nor any the engine looks in, while the project holds a
  module of exactly that name in another folder (the author's own module, that Python will not
  find: :func:`~loopcheck.engine.search_path.off_the_path`). The search path is the script's
  folder and the folders its top-level statements before the import add to ``sys.path``, read
  to literal folders (:func:`~loopcheck.engine.search_path.folders_before`); it is decided only
  when every change is read, no project module loaded so far uses ``sys.path`` and none may
  register modules, the project builds no extension modules and its ``.gitignore`` keeps no
  module of that name out of a folder on the path. An import in a package's module also finds
  that module's own folder (Python 2's implicit relative imports).

What stays undecided on purpose: a submodule missing from a namespace package (a directory
without ``__init__.py``): Python merges every folder of ``sys.path`` that holds a directory of
that name, and one outside the project may hold the submodule; and an absolute name, after
code run before the import appended a folder that is not read to a literal
(``sys.path.append(os.path.dirname(__file__)[:k])``), that the script's own folder does not
hold: the appended folder may hold a package of that name, which then wins.

The answers are computed once per version of each file (``Project.memo``).
"""

from __future__ import annotations

import ast
import re
import sys
from importlib.machinery import EXTENSION_SUFFIXES
from dataclasses import dataclass, field
from pathlib import Path

import pathspec

from loopcheck.engine.interrupts import NODES, checkpoint
from loopcheck.engine.project import Project, absolute_module, module_name
from loopcheck.engine.search_path import folders_before, off_the_path

#: How many project modules deep an import's own imports are followed.
MAX_DEPTH = 8
#: How code uses ``sys.path`` (:func:`_path_move`): not at all; only to append directories
#: (``sys.path.append``, ``.extend``, ``site.addsitedir``: they come after the script's own
#: directory, which still wins); any other way (``sys.path.insert(0, ...)``, an assignment).
NO_MOVE, APPENDS, MOVES = 0, 1, 2
#: Words without which a text does not use ``sys.path`` (skips :func:`_path_move`'s walk).
_PATH_WORDS = re.compile(r"\bsys\s*\.\s*path\b|addsitedir|\bfrom\s+sys\s+import\b")
#: Names whose use may bind module attributes no statement names.
_DYNAMIC = frozenset({"globals", "setattr", "exec", "vars", "__dict__", "modules", "__getattr__"})
#: Attributes of ``sys`` through which code makes a module importable that no file holds
#: (``sys.modules["pkg.sub"] = m``, a finder put on ``sys.meta_path`` or ``sys.path_hooks``).
_REGISTRIES = frozenset({"modules", "meta_path", "path_hooks"})
#: Words without which a text does not register modules (skips :func:`_registers`' walk).
_REGISTRY_WORDS = re.compile(r"\bsys\b|\bexec\b")
#: Methods of ``sys.modules`` that only read it.
_READS_MODULES = frozenset({"get", "keys", "values", "items", "copy", "__contains__", "__getitem__"})


@dataclass(frozen=True)
class ImportFailure:
    """A top-level import of the checked file that fails.

    Attributes:
        line: the line of the import statement in the checked file (1-based).
        reason: what fails, in words (``"pkg/models.py defines no name 'ResNet'"``).
    """

    line: int
    reason: str


@dataclass(frozen=True)
class _Module:
    """What this analysis reads of one project module: its counted imports, whether it
    compiles, the names it binds, and whether something may bind names unseen."""

    compiles: bool
    imports: tuple  # ((line, module, names or None for ``import module``), ...)
    bound: frozenset[str]
    open: bool  # a module __getattr__, globals(), setattr... : any name may be bound
    touches_path: bool  # assigns or changes __path__ (a package that extends where it looks)
    changes_path: int = NO_MOVE  # how it uses sys.path (:func:`_path_move`): later imports may look elsewhere
    runs_from: int | None = None  # the first top-level statement that may run a loop
    path_moves: tuple = ()  # ((line, how), ...): its top-level statements that use sys.path
    registers: bool = False  # may make a module importable that no file holds (:func:`_registers`)
    # the lines of its top-level statements (no ``def``) that may register any module: read for
    # the checked file, whose statements after an import have not run when it runs
    registers_at: tuple = ()
    registered: frozenset = frozenset()  # the module names it puts in ``sys.modules`` by name
    # ((line, names), ...): the module names each top-level statement (no ``def``) puts in
    # ``sys.modules`` by name (``sys.modules["x"] = m``: only ``x``), read for the checked file
    registered_at: tuple = ()
    stars: bool = False  # has ``from x import *``: the names it binds are known only through x


def failing_import(project: Project | None, source: str, path: Path | str | None) -> ImportFailure | None:
    """The first top-level import of the file ``path`` (text ``source``) that the project's
    files prove fails (see the module docstring), or ``None``.

    Args:
        project: the checked file's project (``None``: nothing is decided).
        source: the checked file's text.
        path: its path on disk (``None`` or a path that is no file: nothing is decided).
    """
    if project is None or not path:
        return None
    near = Path(path).resolve()
    tree = _parse(source)
    mod = _read(source, tree)
    if mod is None or not mod.compiles:
        return None  # a file that does not compile is LC001's
    state = _Loading(source=source, tree=tree)
    for line, module, names in mod.imports:
        if mod.runs_from is not None and line > mod.runs_from:
            return None  # a loop may run before it: not decided
        state.path_moved = max([state.path_moved, *(how for at, how in mod.path_moves if at < line)])
        state.registers = state.registers or any(at < line for at in mod.registers_at)
        state.registered.update(name for at, names in mod.registered_at if at < line for name in names)
        state.line = line
        reason = _fails(project, module, names, near, near, (near,), state)
        if reason is not None:
            return ImportFailure(line, reason)
    return None


@dataclass
class _Loading:
    """What one check has learned while following the checked file's imports, in the order
    Python runs them: why each project module's loading fails (``None``: it is not proven to),
    and how the code run so far uses ``sys.path`` (:func:`_path_move`: from then on, an absolute
    name is found where the engine looks only when the script's own directory holds it, or not
    known at all)."""

    reasons: dict = field(default_factory=dict)
    path_moved: int = 0
    registers: bool = False  # a module run so far may make a module importable that no file holds
    registered: set = field(default_factory=set)  # ... and the names modules run so far register
    source: str = ""  # the checked file's text
    line: int = 0  # the line of the checked file's import being followed
    # a project module loaded so far used sys.path: the search path is not read to its folders
    path_unread: bool = False
    _folders: dict | None = None  # :func:`~loopcheck.engine.search_path.folders_before`, once
    tree: ast.Module | None = None  # the checked file's tree (parsed once for both readings)

    def search(self, entry: Path) -> tuple[Path, ...] | None:
        """The folders the checked file ``entry`` put on ``sys.path`` before the import being
        followed (its own folder first), or ``None`` when they are not all read
        (:func:`~loopcheck.engine.search_path.folders_before`), or a module loaded so far may
        have changed ``sys.path`` or registered modules."""
        if self.path_unread or self.registers:
            return None
        if self._folders is None:
            self._folders = folders_before(self.source, entry, self.tree) or {}
        return self._folders.get(self.line)


def _parse(source: str) -> ast.Module | None:
    """The tree of ``source`` (CPython's parser), or ``None`` when it rejects it."""
    try:
        return ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None


def _read(source: str, tree: ast.Module | None = None) -> _Module | None:
    """:class:`_Module` of a text (``compiles`` false when CPython's parser rejects it);
    ``tree``: its tree, when already parsed. A cancellation point per top-level statement
    (:func:`~loopcheck.engine.interrupts.checkpoint`)."""
    try:
        tree = ast.parse(source) if tree is None else tree
    except SyntaxError as err:
        if _older_python(err) or _newer_python(source):
            return None  # valid in Python 2 or in a newer Python (``type X = ...``): not decided
        return _Module(False, (), frozenset(), True, False)
    except (ValueError, RecursionError, MemoryError):
        return None  # a NUL byte, a text nested too deeply: not decided
    imports = []
    runs_from = None
    changes_path = _path_move(tree) if _PATH_WORDS.search(source) else NO_MOVE
    path_moves = () if changes_path == NO_MOVE else tuple(
        (stmt.lineno, how) for stmt in tree.body if (how := _path_move(stmt)))
    defined = {s.name for s in tree.body if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))}
    for stmt in tree.body:
        checkpoint()
        if runs_from is None and _may_run_first(stmt, defined):
            runs_from = stmt.lineno
        if isinstance(stmt, ast.Import):
            imports.extend((stmt.lineno, alias.name, None) for alias in stmt.names)
        elif isinstance(stmt, ast.ImportFrom) and (stmt.level or stmt.module):
            written = "." * stmt.level + (stmt.module or "")
            imports.append((stmt.lineno, written, tuple(a.name for a in stmt.names)))
    registered: set[str] = set()
    registers = bool(_REGISTRY_WORDS.search(source)) and _registers(tree, registered)
    registers_at, registered_at = [], []
    if registers or registered:
        aliases = frozenset(a.asname for node in ast.walk(tree) if isinstance(node, ast.Import)
                            for a in node.names if a.name == "sys" and a.asname)
        for stmt in tree.body:
            if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue  # (runs when called: a call before an import keeps it from being decided)
            names: set[str] = set()
            if _registers(stmt, names, aliases):
                registers_at.append(stmt.lineno)
            if names:
                registered_at.append((stmt.lineno, frozenset(names)))
    bound: set[str] = set()
    is_open = touches_path = has_stars = False
    stack: list[ast.AST] = list(tree.body)
    visited = 0
    while stack:
        node = stack.pop()
        visited += 1
        if not visited % NODES:
            checkpoint()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            checkpoint()  # (its body is walked whole below)
            bound.add(node.name)
            if node.name == "__getattr__":
                is_open = True
            # a function may bind globals (``global N``) or module attributes dynamically
            for inner in ast.walk(node):
                if isinstance(inner, ast.Global):
                    bound.update(inner.names)
                elif _dynamic(inner):
                    is_open = True
            continue
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            for alias in node.names:
                if alias.name == "*":
                    has_stars = True  # (what it binds: :meth:`Project.stars_bind`)
                else:
                    bound.add(alias.asname or alias.name.split(".")[0])
        elif isinstance(node, ast.ExceptHandler) and node.name:
            bound.add(node.name)  # ``except OSError as err``
        elif isinstance(node, (ast.MatchAs, ast.MatchStar)) and node.name:
            bound.add(node.name)  # a capture pattern of ``match``
        elif isinstance(node, ast.MatchMapping) and node.rest:
            bound.add(node.rest)
        if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
            bound.add(node.id)
            touches_path = touches_path or node.id == "__path__"
        elif _dynamic(node):
            is_open = True
        elif isinstance(node, ast.Name) and node.id == "__path__":
            touches_path = True
        stack.extend(ast.iter_child_nodes(node))
    return _Module(True, tuple(imports), frozenset(bound), is_open, touches_path, changes_path, runs_from,
                   path_moves, registers, tuple(registers_at), frozenset(registered), tuple(registered_at),
                   has_stars)


def _libraries() -> frozenset[str]:
    """The top-level packages the library knowledge names (``[packages]``: ``torch``,
    ``transformers``, ``jax``, ...): an import of one is the library's."""
    from loopcheck.engine.knowledge import knowledge

    kb = knowledge()
    return frozenset(kb.torch_packages) | frozenset(kb.other_frameworks)


#: CPython's messages for syntax that is Python 2's (a print or exec statement,
#: ``except E, e``, an octal ``0777``): a project of such modules may run on Python 2, where
#: they compile.
_PYTHON2_MESSAGES = (
    "Missing parentheses in call to", "multiple exception types must be parenthesized",
    "leading zeros in decimal integer literals",
)


def _older_python(err: SyntaxError) -> bool:
    """Whether CPython rejected a text for syntax of Python 2 (:data:`_PYTHON2_MESSAGES`):
    the project may run on Python 2, where the module imports."""
    return any(message in (err.msg or "") for message in _PYTHON2_MESSAGES)


def _newer_python(source: str) -> bool:
    """Whether LibCST, whose grammar follows newer Pythons than the one running (3.12's ``type``
    statements and type parameters), parses a text CPython's parser rejected: the project may
    target that Python."""
    from loopcheck.parsing import parse_module

    try:
        parse_module(source)
    except Exception:  # noqa: BLE001 - a syntax error, or a text nested too deeply
        return False
    return True


def _dynamic(node: ast.AST) -> bool:
    """A use of a name that may bind module attributes unseen (``globals()``, ``setattr``,
    ``exec``, ``sys.modules``, ``vars()``, ``__dict__``)."""
    if isinstance(node, ast.Name):
        return node.id in _DYNAMIC
    return isinstance(node, ast.Attribute) and node.attr in _DYNAMIC


def _registers(tree: ast.AST, named: set[str] | None = None, sys_names: frozenset[str] = frozenset()) -> bool:
    """Whether the code ``tree`` (a module or a statement, function bodies included) may make any
    module importable that no file holds: it changes ``sys.modules`` (but for an assignment to
    a written name, ``sys.modules["pkg.Optim"] = m``, which is added to the set ``named``
    instead when one is given), or uses ``sys.meta_path``
    or ``sys.path_hooks`` (:data:`_REGISTRIES`; ``sys`` under any name ``import sys as s``
    gives it), imports one of them (``from sys import modules``), or calls ``exec``. Reading
    ``sys.modules`` (``sys.modules[__name__]``, ``sys.modules.get(name)``, ``name in
    sys.modules``) registers nothing; nor do ``model.modules()`` or ``self.__dict__``. A star
    import, a module ``__getattr__`` or ``globals()`` only bind names in the module's namespace:
    ``import pkg.sub`` looks in ``sys.modules`` and the finders, never at ``pkg``'s attributes.
    ``sys_names``: other names bound to ``sys`` outside ``tree`` (a statement of a module
    whose ``import sys as _s`` is another statement)."""
    names = {"sys", *sys_names}
    parents: dict[int, ast.AST] = {}
    for node in ast.walk(tree):
        for child in ast.iter_child_nodes(node):
            parents[id(child)] = node
        if isinstance(node, ast.Import):
            names.update(a.asname for a in node.names if a.name == "sys" and a.asname)
        elif isinstance(node, ast.ImportFrom) and node.module == "sys" and any(
                a.name in _REGISTRIES or a.name == "*" for a in node.names):
            return True
        elif isinstance(node, ast.Name) and node.id == "exec":
            return True
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Attribute) and node.attr in _REGISTRIES
                and isinstance(node.value, ast.Name) and node.value.id in names):
            continue
        if node.attr != "modules":
            return True
        parent = parents.get(id(node))
        if (isinstance(parent, ast.Subscript) and parent.value is node and isinstance(parent.ctx, ast.Store)
                and isinstance(parent.slice, ast.Constant) and isinstance(parent.slice.value, str)):
            if named is not None:
                named.add(parent.slice.value)  # ``sys.modules["pkg.Optim"] = m``: that name only
                continue
            return True
        reads = (
            (isinstance(parent, ast.Subscript) and parent.value is node and isinstance(parent.ctx, ast.Load))
            or (isinstance(parent, ast.Attribute) and parent.attr in _READS_MODULES)
            or (isinstance(parent, ast.Compare) and node is not parent.left)
        )
        if not reads:
            return True
    return False


def _path_move(tree: ast.AST) -> int:
    """How the code ``tree`` (a statement or a module, function bodies included) uses
    ``sys.path``: :data:`NO_MOVE`, :data:`APPENDS` or :data:`MOVES`."""
    appended: set[int] = set()
    how = NO_MOVE
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            if node.func.attr in ("append", "extend") and _is_sys_path(node.func.value):
                appended.add(id(node.func.value))
            elif node.func.attr == "addsitedir":
                how = max(how, APPENDS)
        elif isinstance(node, ast.ImportFrom) and node.module == "sys" and any(a.name == "path" for a in node.names):
            how = MOVES  # ``from sys import path``: its uses are not followed
        elif _is_sys_path(node):
            how = max(how, APPENDS if id(node) in appended else MOVES)
    return how


def _is_sys_path(node: ast.AST) -> bool:
    """Whether ``node`` is the expression ``sys.path``."""
    return (isinstance(node, ast.Attribute) and node.attr == "path" and isinstance(node.value, ast.Name)
            and node.value.id == "sys")


def _may_run_first(stmt: ast.stmt, defined: set[str]) -> bool:
    """Whether the top-level statement ``stmt`` may run a training loop before the imports after
    it run: it holds a ``for``/``while`` loop, a call of a
    function or class the module defines (``defined``: their names; ``main()``,
    ``Trainer().fit()``). Function bodies
    are not looked into (they run when called); decorators, defaults and class bodies are."""
    if isinstance(stmt, (ast.Import, ast.ImportFrom)):
        return False
    stack: list[ast.AST] = [stmt]
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.For, ast.AsyncFor, ast.While)):
            return True
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in defined:
            return True
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            stack.extend(node.decorator_list)
            stack.extend(d for d in (*node.args.defaults, *node.args.kw_defaults) if d is not None)
            continue
        if isinstance(node, ast.Lambda):
            continue
        stack.extend(ast.iter_child_nodes(node))
    return False


def _module_at(project: Project, path: Path) -> _Module | None:
    """:class:`_Module` of the project file ``path``, once per version of it."""
    stamp, text = project.source_of(path)
    if text is None:
        return None
    memo = project.memo.setdefault("import_failure", {})
    key = (path, stamp)
    if key not in memo:
        memo[key] = _read(text)
    return memo[key]


def _fails(project: Project, module: str, names: tuple | None, near: Path, entry: Path, stack: tuple,
           state: _Loading, package: str | None = None) -> str | None:
    """Why ``import module`` (``names`` ``None``) or ``from module import names``, run by the
    file ``near``, fails, or ``None`` when it is not proven to. An absolute name is looked up
    from ``entry``, the checked file (Python's ``sys.path`` is the running script's, whichever
    module imports), a relative one from ``near``'s package: ``package``, the dotted name of
    the package ``near`` was loaded into (``"core.models"`` for ``core/models/__init__.py``
    loaded by ``from core import models``, even when ``core`` has no ``__init__.py``), or,
    for the checked file (``None``), the package its place makes it. ``stack``: the modules
    being loaded (a cycle counts as working); ``state``: what the check learned so far.

    ``from pkg import name``, where ``pkg``'s ``__init__`` does not bind ``name`` (or ``pkg``
    is a namespace package, which binds nothing), imports the submodule ``pkg.name``, as
    Python's ``from`` import does: its loading is followed, and its failure is this import's."""
    if module.startswith("."):
        module = _relative(module, near) if package is None else _within(module, package)
        if not module:
            return None
    elif (reason := _off_the_path(project, module, near, entry, state)) is not None:
        return reason
    elif state.path_moved == MOVES:
        return None  # code run before moved sys.path: the name may be found elsewhere
    parts = module.split(".")
    if parts[0] in _libraries() or parts[0] in sys.stdlib_module_names:
        return None  # a file of the project named like a library: which one runs is not decided
    found: Path | None = None  # the file of the last module loaded (None: a namespace package)
    where: list[Path] = []  # the directories of the last package
    for i in range(1, len(parts) + 1):
        dotted = ".".join(parts[:i])
        if dotted in state.registered:
            return None  # code run before put a module in ``sys.modules`` by that name: the import gets it
        path = project.find_module(dotted, entry)
        candidates = _candidates(project, project.roots_for(entry) if i == 1 else where, parts[i - 1])
        if path is not None and candidates != {path}:
            return None  # several files Python may take for it (or one it would not): not decided
        if i == 1 and state.path_moved == APPENDS and (path is None or _home(path) not in (
                entry.parent, project.roots_for(entry)[0])):
            return None  # an appended directory may hold it: only the script's own directory wins
        if path is None and candidates:
            return None  # (an extension module, or a file the engine did not take)
        if path is None:
            # a namespace package (a directory without __init__.py) is looked into, unloaded
            bases = project.roots_for(entry) if i == 1 else where
            where = [d / parts[i - 1] for d in bases if (d / parts[i - 1]).is_dir()]
            if where:
                found = None
                continue
            if i == 1:
                return None  # not a project module: a library's
            if found is None or state.registers or dotted in state.registered:
                return None  # (a module run so far may have put it in ``sys.modules``)
            return _missing_submodule(project, found, parts[i - 1], dotted)
        reason = _loads(project, path, entry, stack, state, dotted)
        if reason is not None:
            return reason
        found, where = path, [path.parent]
    if not names:
        return None
    if found is None:
        # a namespace package binds no name: ``from core import models`` imports ``core.models``
        # (a name no directory of it holds may be in another portion of it: not decided)
        for name in names:
            if name != "*" and (reason := _fails(project, f"{module}.{name}", None, near, entry, stack, state)):
                return reason
        return None
    info = _module_at(project, found)
    if info is None or info.open:
        return None
    bound = info.bound
    if info.stars:
        starred = project.stars_bind(found)
        if starred is None:
            return None  # a star import of a library's module (or one not known) may bind any name
        bound = bound | starred
    for name in names:
        if name == "*" or name in bound:
            continue
        if found.name == "__init__.py" and (
            info.touches_path or _submodule_present(found.parent, name) or _builds_extensions(project)
            or _ignored(project, found.parent / name)
        ):
            # (a submodule: ``from pkg import sub``, maybe one the build makes); one the package's
            # directory holds is imported then, and its loading may fail
            if not info.touches_path and (reason := _fails(
                    project, f"{module}.{name}", None, near, entry, stack, state)):
                return reason
            continue
        return f"{_shown(project, found)} defines no name {name!r}"
    return None


def _off_the_path(project: Project, module: str, near: Path, entry: Path, state: _Loading) -> str | None:
    """Why the absolute import of ``module`` by the file ``near`` fails because its top-level
    name is on no folder of the checked file's search path while the project holds a module of
    that name elsewhere (:func:`~loopcheck.engine.search_path.off_the_path`), or ``None``.
    ``near``'s own folder counts as searched: in Python 2 an import in a package's module finds
    its siblings first (an implicit relative import: ``from squad_eval import f1`` in
    ``helpers/generic.py`` is ``helpers.squad_eval``). Only when every change
    of ``sys.path`` run so far is read to its folders, and no module run so far may register
    one (:meth:`_Loading.search`), the project compiles no extension modules, and its
    ``.gitignore`` keeps no module of that name out of a folder on the path."""
    top = module.split(".")[0]
    if top in state.registered:
        return None
    folders = state.search(entry)
    if folders is None:
        return None
    if near != entry:
        folders = (*folders, near.parent)
    reason = off_the_path(project, top, entry, folders)
    if reason is None or _builds_extensions(project):
        return None  # (a build may make a module of that name in place)
    if any(_ignored(project, d / top) for d in (*project.roots_for(entry), *folders)):
        return None  # a module the repository keeps out (made from a sample) may be there
    return reason


def _relative(written: str, near: Path) -> str:
    """The absolute name of the relative import ``written`` in the file ``near``, or ``""``
    when the file is in no package or the dots climb above its top package (how it is run
    decides then: not decided)."""
    name, _ = module_name(near)
    package = name.split(".") if near.stem == "__init__" else name.split(".")[:-1]
    up = len(written) - len(written.lstrip(".")) - 1
    if not name or not [p for p in package if p] or up >= len(package):
        return ""
    return absolute_module(written, near)


def _within(written: str, package: str) -> str:
    """The absolute name of the relative import ``written`` (``..utils``) run by a module loaded
    into the package ``package`` (dotted; ``""``: a top-level module), or ``""`` when the dots
    climb above its top package (Python raises ``ImportError`` then; not decided here)."""
    dotted = written.lstrip(".")
    parts = package.split(".") if package else []
    up = len(written) - len(dotted) - 1
    if up >= len(parts):
        return ""
    return ".".join([*parts[: len(parts) - up], *filter(None, [dotted])])


def _missing_submodule(project: Project, parent: Path, name: str, dotted: str) -> str | None:
    """Why submodule ``name`` of the project module ``parent`` (its file) is missing, or
    ``None`` when it may be there (a package that extends ``__path__`` or may register modules,
    :func:`_registers`; a directory or an extension module of that name; a module that is no
    package: not decided). A star import or a module ``__getattr__`` in the package binds
    names, never a submodule: they do not keep it from being decided."""
    if parent.name != "__init__.py":
        return None
    info = _module_at(project, parent)
    if info is None or info.touches_path or info.registers or dotted in info.registered or _submodule_present(
            parent.parent, name):
        return None
    if _builds_extensions(project):
        return None  # ``pkg._C``: a module the build makes
    if _ignored(project, parent.parent / name):
        return None  # a file the repository keeps out (built, or made from a sample): it may be there
    return f"no module {dotted!r}: {_shown(project, parent.parent)} holds no {name}.py"


#: Words of a build configuration that compiles extension modules into the packages
#: (setuptools' ``ext_modules``, ``Extension``, ``build_ext``; Cython's ``cythonize``; PyTorch's
#: ``CppExtension``/``CUDAExtension``; pybind11's ``Pybind11Extension``).
_EXTENSION_WORDS = ("ext_modules", "Extension", "build_ext", "cythonize")


def _builds_extensions(project: Project) -> bool:
    """Whether the project's build (``setup.py``, ``setup.cfg``, ``pyproject.toml`` at its root)
    may compile extension modules: an import of a submodule missing from the source tree may
    then be one the build makes (``maskrcnn_benchmark._C``)."""
    memo = project.memo.setdefault("builds_extensions", {})
    if "answer" not in memo:
        texts = []
        for name in ("setup.py", "setup.cfg", "pyproject.toml"):
            try:
                texts.append((project.root / name).read_text(encoding="utf-8", errors="replace"))
            except OSError:
                pass
        memo["answer"] = any(word in text for text in texts for word in _EXTENSION_WORDS)
    return memo["answer"]


def _candidates(project: Project, directories: list[Path], name: str) -> set[Path]:
    """The files Python may load for the module ``name`` from ``directories`` (a package's,
    or the checked file's search roots): ``name.py``, ``name/__init__.py`` and extension
    modules ``name.<suffix>`` in each, resolved (once per directory and name in ``project``)."""
    memo = project.memo.setdefault("import_candidates", {})
    out: set[Path] = set()
    for directory in directories:
        key = (directory, name)
        if key not in memo:
            files = [directory / f"{name}.py", directory / name / "__init__.py"]
            files += [directory / f"{name}{suffix}" for suffix in EXTENSION_SUFFIXES]
            memo[key] = frozenset(f.resolve() for f in files if f.is_file())
        out |= memo[key]
    return out


def _ignored(project: Project, path: Path) -> bool:
    """Whether the repository's ``.gitignore`` (at the project root, or in the module's
    directory) keeps a module file ``path`` (without suffix: ``layers/_ext``) or ``path.py``
    out of version control: a module built in place (``_ext`` of a cffi build) or one its users
    make from a sample (``global_config.py``), which the checkout lacks and their disk holds.
    The patterns are git's, matched by pathspec's ``GitIgnoreSpec`` (negations included)."""
    root = project.root.resolve()
    try:
        rel = path.relative_to(root).as_posix()
    except ValueError:
        return False
    names = (rel, rel + ".py")
    for ignore in {root / ".gitignore", path.parent / ".gitignore"}:
        base = "" if ignore.parent == root else ignore.parent.relative_to(root).as_posix() + "/"
        spec = _spec(project, ignore)
        if spec is not None and any(n.startswith(base) and spec.match_file(n[len(base):]) for n in names):
            return True
    return False


def _spec(project: Project, ignore: Path) -> "pathspec.GitIgnoreSpec | None":
    """The patterns of the ``.gitignore`` file ``ignore`` (``None`` when it is missing or does
    not compile), once per project."""
    memo = project.memo.setdefault("gitignore", {})
    if ignore not in memo:
        try:
            lines = ignore.read_text(encoding="utf-8", errors="replace").splitlines()
            memo[ignore] = pathspec.GitIgnoreSpec.from_lines(lines)
        except Exception:  # noqa: BLE001 - unreadable, or a pattern pathspec cannot compile
            memo[ignore] = None
    return memo[ignore]


def _submodule_present(directory: Path, name: str) -> bool:
    """Whether ``directory`` may hold a submodule ``name``: ``name.py``, a directory
    ``name`` (a package or a namespace package), or an extension module ``name.*``."""
    try:
        return any(p.name == name or p.name.startswith(name + ".") for p in directory.iterdir())
    except OSError:
        return True


def _loads(project: Project, path: Path, entry: Path, stack: tuple, state: _Loading,
           dotted: str | None = None) -> str | None:
    """Why loading the project module file ``path`` fails (it does not compile, or one of its
    counted imports fails), or ``None`` (also past :data:`MAX_DEPTH`, and for a module whose
    loading is under way: a cycle). As in Python, a module is loaded once per check: its
    answer is kept in ``state``, and a module that uses ``sys.path`` sets
    :attr:`_Loading.path_moved` before its imports are followed (one that may register modules,
    :attr:`_Loading.registers`). ``dotted``: the name it is loaded under (``"core.models"``),
    from which its relative imports are resolved (``None``: from its place, :func:`_relative`)."""
    if path in state.reasons:
        return state.reasons[path]
    if path in stack or len(stack) > MAX_DEPTH:
        return None
    info = _module_at(project, path)
    reason = None
    if info is not None and not info.compiles:
        reason = f"{_shown(project, path)} does not compile (SyntaxError)"
    elif info is not None:
        state.path_moved = max(state.path_moved, info.changes_path)
        state.path_unread = state.path_unread or info.changes_path != NO_MOVE
        state.registers = state.registers or info.registers
        state.registered.update(info.registered)
        package = None
        if dotted is not None:
            package = dotted if path.name == "__init__.py" else dotted.rpartition(".")[0]
        for _line, module, names in info.imports:
            reason = _fails(project, module, names, path, entry, (*stack, path), state, package)
            if reason is not None:
                break
    state.reasons[path] = reason
    return reason


def _home(path: Path) -> Path:
    """The directory a module is found from: ``a/`` for ``a/b.py`` and ``a/b/__init__.py``."""
    return path.parent.parent if path.name == "__init__.py" else path.parent


def _shown(project: Project, path: Path) -> str:
    """``path`` relative to the project root when it lies under it."""
    try:
        return str(path.relative_to(project.root.resolve()))
    except ValueError:
        return str(path)
