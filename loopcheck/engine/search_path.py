"""Where a script run as ``python path/to/script.py`` finds its absolute imports, when the
analysis can read it to the last folder; and which of the project's own modules lie off it.

Python's ``sys.path`` for such a run starts with the script's own folder (``sys.path[0]``), then
``PYTHONPATH``, then the installed packages. A script that puts the wrong folder on it
(``sys.path.append(os.path.join(ROOT_DIR, 'models'))`` where the folder is ``model/``) and then
imports the author's own module from there (``from model_util import ...``) stops with
``ImportError`` at that import: nothing after it runs.

:func:`folders_before` reads the checked file's ``sys.path`` changes to literal folders;
:func:`off_the_path` decides, for one top-level name, that it resolves on none of them while
the project holds a module of exactly that name elsewhere. Anything the analysis cannot read
leaves the name undecided (it imports):

* a ``sys.path`` change whose folder is not a literal one (a relative string: it depends on the
  current directory; a name bound under a branch, a call the evaluator does not know), one that
  is neither ``append``, ``insert`` nor ``extend`` of a literal list (an assignment,
  ``sys.path[0] = ...``, ``sys.path`` handed to a call), ``from sys import path``, ``sys``
  under another name, ``site.addsitedir``;
* a repository that sets ``PYTHONPATH`` anywhere, or names source roots an editor adds to it
  (:func:`sets_pythonpath`: shell scripts, Makefile, Dockerfile, README, ``.env``, launch
  configurations, ``setup.cfg``/``pyproject.toml``/``pytest.ini``'s ``pythonpath``, a
  PyCharm ``sourceFolder``);
* a module home that packaging may install (:func:`installed`: a ``setup.py``,
  ``setup.cfg`` or ``pyproject.toml`` in that folder, or one above it that names the folder);
* a name of the standard library, of a library the knowledge names, or of a requirement the
  repository lists (it may be installed); a name the project holds nowhere;
* a name found in any folder the engine looks in for the file
  (:meth:`~loopcheck.engine.project.Project.roots_for`: the file's folder, its top package's
  parent, the project root and ``src/``, the configured source roots, and every folder between
  the file and the root). These cover ``python -m pkg.script`` too: run as a module of a
  package (a folder with ``__init__.py``, or a namespace package), the script gets the current
  directory instead of its own on ``sys.path``, and that directory is one from which its dotted
  name resolves: its top package's parent or a folder above it up to the root, all looked in;
* (:func:`loopcheck.engine.import_failure.failing_import` adds) a module file the
  repository's ``.gitignore`` keeps out of one of those folders, a project whose build compiles
  extension modules.
"""

from __future__ import annotations

import ast
import os
import re
import sys
from pathlib import Path

from loopcheck.engine.interrupts import NODES, checkpoint
from loopcheck.engine.project import Project

#: Words that say a repository sets the search path for its runs: ``PYTHONPATH`` (any case:
#: pytest's ``pythonpath`` option too), or a PyCharm source folder (its run configurations add
#: source roots to ``PYTHONPATH``).
_SETS_PATH = re.compile(rb"pythonpath|<sourceFolder\s", re.IGNORECASE)
#: Files read for :data:`_SETS_PATH`, by suffix; files without a suffix (``Makefile``,
#: ``Dockerfile``, ``.env``, a shell script) are read too.
_TEXT_SUFFIXES = frozenset({
    ".sh", ".bash", ".zsh", ".bat", ".cmd", ".ps1", ".md", ".rst", ".txt", ".json", ".xml", ".iml",
    ".cfg", ".ini", ".toml", ".yml", ".yaml", ".env", ".py", ".ipynb", ".mk", ".slurm", ".sbatch",
    ".job", ".pbs", ".dockerfile",
})
#: Folders never walked: version control, caches, and installed environments (a module there is
#: a library's copy, not the project's).
_SKIPPED_FOLDERS = frozenset({".git", ".hg", ".svn", "__pycache__", "node_modules", "site-packages",
                              "dist-packages", ".tox", ".nox", ".mypy_cache", ".pytest_cache",
                              ".loopcheck_cache", ".venv", "venv"})
_MAX_TEXT_BYTES = 1_000_000
#: Files walked at most (:func:`_walk`); a larger repository is not decided.
_MAX_FILES = 100_000
_PACKAGING = ("setup.py", "setup.cfg", "pyproject.toml")
_REQUIREMENTS = re.compile(r"requirements.*\.txt$|environment.*\.ya?ml$|Pipfile$", re.IGNORECASE)

#: Calls that keep a path's folder (``os.path.abspath(x)`` is ``x``'s), by qualified name.
_SAME = frozenset({"os.path.abspath", "os.path.realpath", "os.path.normpath", "str", "os.fspath",
                   "pathlib.Path", "pathlib.PurePath", "pathlib.PosixPath"})
_PARENT = frozenset({"os.path.dirname"})
_JOIN = frozenset({"os.path.join"})


class _Unknown(Exception):
    """An expression whose value as a folder the evaluator cannot read."""


def folders_before(source: str, entry: Path, tree: ast.Module | None = None) -> dict[int, tuple[Path, ...] | None] | None:
    """For each top-level statement's line of the script ``entry`` (text ``source``, or its
    tree ``tree`` when already parsed), the
    folders its ``sys.path`` holds before that statement runs, beyond the engine's own: the
    script's folder and each folder the statements before it added (``None`` from the first
    change that cannot be read to a literal folder on). ``None`` when the text does not parse.
    A change inside a function defined before the line counts as if it had run (more folders
    only leave more names undecided). A cancellation point per top-level statement
    (:func:`~loopcheck.engine.interrupts.checkpoint`)."""
    if tree is None:
        try:
            tree = ast.parse(source)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            return None
    names = _aliases(tree)
    if names is None:
        return {stmt.lineno: None for stmt in tree.body}
    env: dict[str, str | None] = {"__file__": str(entry)}
    folders: list[Path] | None = [entry.parent]
    out: dict[int, tuple[Path, ...] | None] = {}
    for stmt in tree.body:
        checkpoint()
        out[stmt.lineno] = tuple(folders) if folders is not None else None
        if folders is not None:
            added = _path_changes(stmt, env, names)
            folders = None if added is None else folders + added
        _bind(stmt, env, names)
    return out


def _aliases(tree: ast.Module) -> dict[str, str] | None:
    """Local name → qualified name for the modules and functions the evaluator knows
    (``osp`` → ``os.path``, ``join`` → ``os.path.join``, ``Path`` → ``pathlib.Path``), or
    ``None`` when ``sys`` or its ``path`` is bound under a name this reading does not follow
    (``import sys as s``, ``from sys import path``)."""
    names: dict[str, str] = {}
    for i, node in enumerate(ast.walk(tree)):
        if not i % NODES:
            checkpoint()
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name == "sys" and alias.asname not in (None, "sys"):
                    return None
                if alias.asname:
                    names[alias.asname] = alias.name
                else:
                    names[alias.name.split(".")[0]] = alias.name.split(".")[0]
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            if node.module == "sys" and any(a.name in ("path", "*") for a in node.names):
                return None
            for alias in node.names:
                names[alias.asname or alias.name] = f"{node.module}.{alias.name}"
    return names


def _qualified(node: ast.AST, names: dict[str, str]) -> str | None:
    """``os.path.join`` for ``osp.join`` (``import os.path as osp``), or ``None``."""
    if isinstance(node, ast.Name):
        return names.get(node.id)
    if isinstance(node, ast.Attribute):
        base = _qualified(node.value, names)
        return f"{base}.{node.attr}" if base else None
    return None


def _is_sys_path(node: ast.AST) -> bool:
    return (isinstance(node, ast.Attribute) and node.attr == "path" and isinstance(node.value, ast.Name)
            and node.value.id == "sys")


def _path_changes(stmt: ast.stmt, env: dict, names: dict[str, str]) -> list[Path] | None:
    """The folders the statement ``stmt`` (its functions' bodies included) puts on
    ``sys.path``, or ``None`` when one cannot be read to a literal folder, or it uses
    ``sys.path`` otherwise than to add folders or to test membership, or calls
    ``site.addsitedir``."""
    parents: dict[int, ast.AST] | None = None  # made at the first ``sys.path`` (most statements have none)
    added: list[Path] = []
    for node in ast.walk(stmt):
        if isinstance(node, ast.Call) and (_qualified(node.func, names) or "").endswith("addsitedir"):
            return None
        if not _is_sys_path(node):
            continue
        if parents is None:
            parents = _parents(stmt)
        parent = parents.get(id(node))
        if isinstance(parent, ast.Compare) and all(isinstance(op, (ast.In, ast.NotIn)) for op in parent.ops):
            continue  # ``if d not in sys.path``: a read
        call = parents.get(id(parent))
        if not (isinstance(parent, ast.Attribute) and parent.attr in ("append", "insert", "extend")
                and isinstance(call, ast.Call) and call.func is parent and not call.keywords):
            return None
        try:
            if parent.attr == "append" and len(call.args) == 1:
                values = [call.args[0]]
            elif parent.attr == "insert" and len(call.args) == 2:
                values = [call.args[1]]
            elif parent.attr == "extend" and len(call.args) == 1 and isinstance(call.args[0], (ast.List, ast.Tuple)):
                values = list(call.args[0].elts)
            else:
                return None
            local = _locals_of(node, parents)
            added.extend(Path(_folder(v, env, names, local)) for v in values)
        except _Unknown:
            return None
    return added


def _parents(tree: ast.AST) -> dict[int, ast.AST]:
    """``id(node)`` → its parent, for the nodes of ``tree``."""
    parents: dict[int, ast.AST] = {}
    for node in ast.walk(tree):
        for child in ast.iter_child_nodes(node):
            parents[id(child)] = node
    return parents


def _locals_of(node: ast.AST, parents: dict[int, ast.AST]) -> set[str]:
    """The names a function around ``node`` binds: their values there are not the module's."""
    local: set[str] = set()
    parent = parents.get(id(node))
    while parent is not None:
        if isinstance(parent, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            for inner in ast.walk(parent):
                if isinstance(inner, ast.Name) and isinstance(inner.ctx, ast.Store):
                    local.add(inner.id)
                elif isinstance(inner, ast.arg):
                    local.add(inner.arg)
        parent = parents.get(id(parent))
    return local


def _bind(stmt: ast.stmt, env: dict, names: dict[str, str]) -> None:
    """Record what the top-level statement ``stmt`` binds: ``NAME = expr`` its folder (``None``
    when it cannot be read); any other binding of a name (in a branch, a loop, ``+=``, an import,
    a walrus) makes it unknown."""
    if isinstance(stmt, ast.Assign) and all(isinstance(t, ast.Name) for t in stmt.targets):
        try:
            value: str | None = _value(stmt.value, env, names, set())
        except _Unknown:
            value = None
        for target in stmt.targets:
            env[target.id] = value
        return
    for node in ast.walk(stmt):
        if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
            env[node.id] = None
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            for alias in node.names:
                env[(alias.asname or alias.name).split(".")[0]] = None
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node is stmt:
            env[node.name] = None
            break  # (its body binds its own names)


def _folder(node: ast.expr, env: dict, names: dict[str, str], local: set[str]) -> str:
    """The absolute, normalized folder the expression ``node`` names; :class:`_Unknown` when it
    is not one the evaluator reads, or a relative one (it depends on the current directory)."""
    value = _value(node, env, names, local)
    if not os.path.isabs(value):
        raise _Unknown
    return os.path.normpath(value)


def _value(node: ast.expr, env: dict, names: dict[str, str], local: set[str]) -> str:
    """The text of a path expression: ``__file__``, string constants, names bound to such,
    ``os.path.abspath``/``realpath``/``normpath``/``dirname``/``join``, ``str``, ``Path(...)``,
    ``.parent``, ``.parents[n]``, ``.resolve()``/``.absolute()``, ``/`` and ``+``."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.Name):
        if node.id in local or env.get(node.id) is None:
            raise _Unknown
        return env[node.id]
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div):
        return os.path.join(_value(node.left, env, names, local), _value(node.right, env, names, local))
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        return _value(node.left, env, names, local) + _value(node.right, env, names, local)
    if isinstance(node, ast.Attribute) and node.attr == "parent":
        return os.path.dirname(os.path.normpath(_value(node.value, env, names, local)))
    if (isinstance(node, ast.Subscript) and isinstance(node.value, ast.Attribute) and node.value.attr == "parents"
            and isinstance(node.slice, ast.Constant) and type(node.slice.value) is int and node.slice.value >= 0):
        value = os.path.normpath(_value(node.value.value, env, names, local))
        for _ in range(node.slice.value + 1):
            value = os.path.dirname(value)
        return value
    if not isinstance(node, ast.Call) or node.keywords:
        raise _Unknown
    func = node.func
    if isinstance(func, ast.Attribute) and func.attr in ("resolve", "absolute") and not node.args:
        return _value(func.value, env, names, local)
    called = _qualified(func, names)
    args = [_value(a, env, names, local) for a in node.args]
    if called in _SAME and len(args) == 1:
        return args[0]
    if called in _PARENT and len(args) == 1:
        return os.path.dirname(args[0])
    if called in _JOIN and args:
        return os.path.join(*args)
    raise _Unknown


def off_the_path(project: Project, name: str, entry: Path, folders: tuple[Path, ...]) -> str | None:
    """Why ``import name`` (a top-level name) fails for the script ``entry`` whose ``sys.path``
    holds ``folders`` (:func:`folders_before`) beyond the engine's own: no folder Python or the
    engine looks in holds a module of that name, while the project holds one elsewhere, that no
    packaging installs and no ``PYTHONPATH`` reaches (see the module docstring). ``None`` when
    that is not established."""
    if name in sys.stdlib_module_names or _library(name) or entry.suffix != ".py":
        return None
    searched = list(dict.fromkeys([*project.roots_for(entry), *folders]))
    for folder in searched:
        # (noted for the command line's cache: a module created there changes the answer)
        project.note_probe(folder / f"{name}.py")
        project.note_probe(folder / name / "__init__.py")
        if _holds(project, folder, name):
            return None
    homes = [home for home in module_homes(project, name) if home.parent not in searched]
    if not homes:
        return None  # the project holds no such module: a library's
    if any(installed(project, home.parent) for home in homes):
        return None
    if required(project, name):
        return None
    if sets_pythonpath(project):
        return None
    shown = ", ".join(dict.fromkeys(_shown(project, f) for f in folders))
    return f"no module {name!r} on the script's search path ({shown}); the project's is {_shown(project, homes[0])}"


def _library(name: str) -> bool:
    """Whether the knowledge names ``name`` as a library (PyTorch's, another framework's, or
    one that builds no modules: ``numpy``, ``scipy``)."""
    from loopcheck.engine.knowledge import knowledge

    kb = knowledge()
    return name in kb.torch_packages or name in kb.other_frameworks or name in kb.no_module_packages


def _holds(project: Project, folder: Path, name: str) -> bool:
    """Whether ``folder`` holds something Python may import as ``name``: ``name.py``, a
    directory ``name`` (a package, or a namespace package), or an extension module ``name.*``
    (each folder listed once per project)."""
    memo = project.memo.setdefault("folder_stems", {})
    stems = memo.get(folder)
    if stems is None:
        try:
            stems = memo[folder] = frozenset(p.name.split(".")[0] for p in folder.iterdir())
        except OSError:
            stems = memo[folder] = frozenset()
    return name in stems


def _walk(project: Project):
    """``(folder, its file names)`` for every folder under the project root but
    :data:`_SKIPPED_FOLDERS`; :class:`_TooLarge` past :data:`_MAX_FILES` files."""
    count = 0
    for folder, dirs, files in os.walk(project.root):
        dirs[:] = [d for d in dirs if d not in _SKIPPED_FOLDERS and not d.endswith(".egg-info")]
        count += len(files)
        if count > _MAX_FILES:
            raise _TooLarge
        yield Path(folder), files


class _TooLarge(Exception):
    """A repository of more files than this analysis walks (a data set checked in)."""


def module_homes(project: Project, name: str) -> list[Path]:
    """The files of the project's modules whose own name is ``name``: ``name.py`` or
    ``name/__init__.py`` in any folder (resolved; the folders are walked once per project)."""
    memo = project.memo.setdefault("module_homes", {})
    if not memo:
        index: dict[str, list[Path]] = {}
        try:
            for folder, files in _walk(project):
                for f in files:
                    if f.endswith(".py") and f != "__init__.py":
                        index.setdefault(f[:-3], []).append((folder / f).resolve())
                    elif f == "__init__.py" and folder != project.root:
                        index.setdefault(folder.name, []).append((folder / f).resolve())
        except _TooLarge:
            index = {}  # (no module is found elsewhere: nothing is decided)
        memo["index"] = index
    return memo["index"].get(name, [])


def sets_pythonpath(project: Project) -> bool:
    """Whether any text file of the repository (:data:`_TEXT_SUFFIXES`, or without a suffix)
    sets or names ``PYTHONPATH``, or names a PyCharm source folder (:data:`_SETS_PATH`): a run
    may then find modules in folders no code names. Read once per project."""
    memo = project.memo.setdefault("sets_pythonpath", {})
    if "answer" not in memo:
        try:
            memo["answer"] = any(_names_path(folder / f) for folder, files in _walk(project) for f in files
                                 if Path(f).suffix.lower() in _TEXT_SUFFIXES or not Path(f).suffix
                                 or f.startswith(".env") or f.lower().startswith(("dockerfile", "makefile")))
        except _TooLarge:
            memo["answer"] = True  # (not read to the end: it may)
    return memo["answer"]


def _names_path(path: Path) -> bool:
    try:
        if path.stat().st_size > _MAX_TEXT_BYTES:
            return False
        return _SETS_PATH.search(path.read_bytes()) is not None
    except OSError:
        return False


def installed(project: Project, home: Path) -> bool:
    """Whether packaging may install the modules of the folder ``home``: a ``setup.py``,
    ``setup.cfg`` or ``pyproject.toml`` there (the folder is a project root), or in a folder
    above it within the project that names it (``package_dir={"": "model"}``, ``py_modules``
    under a path, ``where = ["model"]``) by its path from there or its own name."""
    root = project.root.resolve()
    for folder in (home, *home.parents):
        for name in _PACKAGING:
            text = _text(folder / name)
            if text is None:
                continue
            if folder == home:
                return True
            rel = home.relative_to(folder).as_posix()
            if rel in text or home.name in text:
                return True
        if folder == root or root not in folder.parents:
            break
    return False


def required(project: Project, name: str) -> bool:
    """Whether a requirements file of the repository (``requirements*.txt``,
    ``environment*.yml``, ``Pipfile``, at any depth) lists a distribution spelled like the module
    ``name`` (``-`` and ``_`` alike, any case): it may be installed."""
    memo = project.memo.setdefault("requirements", {})
    if "names" not in memo:
        found: set[str] = set()
        try:
            for folder, files in _walk(project):
                for f in files:
                    if _REQUIREMENTS.search(f):
                        text = _text(folder / f) or ""
                        found.update(w.lower().replace("-", "_") for w in re.findall(r"[A-Za-z0-9_.\-]+", text))
        except _TooLarge:
            found = set()  # (module_homes() found nothing then: nothing is asked)
        memo["names"] = found
    return name.lower().replace("-", "_") in memo["names"]


def _text(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None


def _shown(project: Project, path: Path) -> str:
    try:
        return path.resolve().relative_to(project.root.resolve()).as_posix() or "."
    except ValueError:
        return str(path)
