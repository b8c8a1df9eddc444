"""Whether a function's callers in its project all run it with gradients off.

A function that no one in its own module calls is read as an entry point of its own
(:func:`loopcheck.analysis.build_units`), starting with gradients on, as a caller that does
not say otherwise would run it. Helpers of a package are often called only from the project's
scripts, each inside ``with torch.no_grad():`` (``mesh.create_mesh()`` called by
``reconstruct.py`` and ``generate_meshes.py`` under ``no_grad``): their forwards then never
record a graph. :func:`~loopcheck.engine.grad_entry.entry_grad_off` says so for an event whose
grad mode is its entry's (:attr:`Context.grad_inherited <loopcheck.engine.ir.Context.grad_inherited>`).

The callers are found in the text of the project's files, read with :mod:`ast` (the scan
happens only when a rule asks, for an event it would report):

* the project is the ``.py`` files under the project root
  (:attr:`Project.root <loopcheck.engine.project.Project.root>`), less the directories
  :data:`~loopcheck.workspace.config.DEFAULT_EXCLUDE` names; more than :data:`MAX_FILES`
  of them, and nothing is decided;
* every mention of the function's name in a file that has the word (a ``Name``, or an
  ``Attribute`` ending with it) is resolved through the file's imports
  (:meth:`Project.member <loopcheck.engine.project.Project.member>`): a name bound to another
  definition, or imported from a module the project does not hold (a library's), is not the
  function; a mention that is the function and not the callee of a call (``callback=f``,
  ``partial(f)``), or that cannot be resolved (``self.f()``, ``obj.f()``), leaves the callers
  unknown;
* a call runs with gradients off when it is inside ``with`` an item whose library entry turns
  them off (``torch.no_grad()``, ``torch.inference_mode()``, ``torch.set_grad_enabled(False)``),
  after ``torch.set_grad_enabled(False)`` as a statement earlier in its block, or in a function
  decorated with ``@torch.no_grad()`` (a library's entry: a decorator or context manager of
  the project is not read here), with nothing inside turning them on again; a call in a
  module-level function otherwise running with gradients on runs with them off when every
  call of that function does, followed up to :data:`MAX_DEPTH` callers deep (a recursive call
  runs in the mode of the call that entered the function).

Gradients are off at the entry when at least one call was found and every call runs with
them off. A function nobody in the project calls (a library's public function, a script's
``main``) stays as it was read: with gradients on. What is given up: callers outside the
project (users of an installed library calling a function its own scripts only call under
``no_grad``), calls in files created since the check (the command line's cache keeps the
files it read, not the directories' listings), and calls through names the project binds at
run time (``sys.path`` edits, ``importlib``) are not seen.

A method of a module-level class read as an entry point runs with gradients off at its
entry when every call the project's code may make of it runs with them off
(:func:`~loopcheck.engine.grad_entry.method_callers_grad_off`, asked by
:func:`~loopcheck.engine.grad_entry.entry_grad_off` as for a function): ``model.tag_all(batches)``
only inside ``with torch.no_grad():`` in the project's scripts. Its calls are found by the
method's name, as
:mod:`loopcheck.engine.entry_defaults` finds them, in the files
:func:`~loopcheck.engine.unreferenced.method_naming_files` names.
"""

from __future__ import annotations

import ast
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator, NamedTuple

from loopcheck.engine.knowledge import knowledge
from loopcheck.engine.outline import ast_dotted_name

#: Beyond this many ``.py`` files under the project root, the callers are not looked for.
MAX_FILES = 5000
#: How many functions deep a call's mode is followed through its enclosing function's callers.
MAX_DEPTH = 3
#: Directories not searched (mirrors the default ``exclude`` of the settings).
SKIP_DIRS = frozenset({
    ".bzr", ".direnv", ".eggs", ".env", ".git", ".hg", ".ipynb_checkpoints", ".loopcheck_cache",
    ".mypy_cache", ".nox", ".pytest_cache", ".pytype", ".ruff_cache", ".svn", ".tox", ".venv",
    "__pycache__", "__pypackages__", "_build", "build", "dist", "env", "node_modules",
    "site-packages", "venv",
})

_MODULE = ("module",)  # a statement of the module's own code
_OTHER = ("other",)  # inside a method, a nested function or a lambda


def callers_grad_off(project, path: Path, name: str) -> bool:
    """Whether the project calls module-level function ``name`` of file ``path`` at least
    once, and every call of it runs with gradients off (see the module docstring)."""
    files = project_files(Path(project.root))
    if files is None:
        return False
    return _all_off(project, files, Path(path).resolve(), name, 0, frozenset())


def project_files(root: Path) -> list[Path] | None:
    """The ``.py`` files under ``root`` (resolved, sorted), less :data:`SKIP_DIRS` and
    virtualenvs; ``None`` when there are more than :data:`MAX_FILES`."""
    out: list[Path] = []
    for directory, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d not in SKIP_DIRS and not os.path.isfile(os.path.join(directory, d, "pyvenv.cfg")))
        for f in sorted(files):
            if f.endswith(".py"):
                try:
                    out.append(Path(directory, f).resolve())
                except (OSError, RuntimeError):  # a symbolic link loop: no module there
                    continue
                if len(out) > MAX_FILES:
                    return None
    return out


def _all_off(project, files: list[Path], path: Path, name: str, depth: int, stack: frozenset) -> bool:
    """Whether ``files`` call module-level function ``name`` of ``path`` at least once, and
    every call runs with gradients off, an enclosing function's callers followed from
    ``depth`` on (``stack``: the functions being followed, a recursion not entered again)."""
    stack = stack | {(path, name)}
    found = 0
    for scanned in scan_files(project, files, name, _mentions):
        sites = None if scanned is None else _sites(project, scanned, path, name)
        if sites is None:
            return False  # unreadable, not parsed, or a mention not known: it may call the function
        file = scanned.file
        for mode, where in sites:
            found += 1
            if mode == "disabled":
                continue
            if where == ("function", name) and file == path:
                continue  # a recursive call: it runs in the mode of the call that entered
            if mode == "enabled" and where[0] == "function" and depth < MAX_DEPTH and (file, where[1]) not in stack:
                if _all_off(project, files, file, where[1], depth + 1, stack):
                    continue  # its enclosing function runs with gradients off wherever it is called
            return False
    return found > 0


def _sites(project, scanned: Scanned, path: Path, name: str) -> list[tuple[str, tuple]] | None:
    """The calls of function ``name`` of ``path`` in a file's mentions of the name
    (:func:`scan_files` with :func:`_mentions`): ``(grad mode, where)`` for each, ``where``
    being ``("function", f)`` inside module-level function ``f``, :data:`_MODULE` or
    :data:`_OTHER`; ``None`` when a mention of the function is not a call, or a mention of
    the name cannot be resolved."""
    _file, info, mentions = scanned
    out = []
    for dotted, is_call, mode, where in mentions:
        if dotted is None:
            return None  # ``make().f``: what it is is not known
        try:
            member = project.member(info, dotted.split("."))
        except (RecursionError, AttributeError, KeyError):
            return None
        if member is None:
            head = dotted.split(".")[0]
            if head in info.index.imports.aliases and head not in info.index.functions:
                continue  # an import of a module the project does not hold: a library's
            return None  # ``self.f()``, a local name, a star import's: unknown
        if member.function is None or member.cls is not None or Path(member.info.path).resolve() != path:
            continue  # another definition of the same name
        if member.function.name.value != name:
            continue
        if not is_call:
            return None  # the function passed as a value: called from where it is not known
        out.append((mode, where))
    return out


class Scanned(NamedTuple):
    """One file of the project that has the word of a name, as :func:`scan_files` read it."""

    #: The file, as given.
    file: Path
    #: What :meth:`Project.load <loopcheck.engine.project.Project.load>` read of it (its
    #: ``index`` is there).
    info: object
    #: What the scan returned for the file's mentions of the name.
    found: list


def scan_files(project, files: list[Path], name: str, scan) -> Iterator[Scanned | None]:
    """The files of ``files`` whose text has the word ``name``, in their order, each with what
    ``scan(project, file, stamp, text, name, imports)`` finds of its mentions of the name (one
    of :func:`_mentions`, :func:`_call_mentions`, kept in the project's memo by the file's
    version). ``None``, and nothing after it, where a file cannot be read, indexed or parsed,
    or the scan returns ``None``: the callers of the name are then not known. A file without
    the word is not parsed. The one walk over a project's call sites that
    :func:`callers_grad_off`, :func:`call_sites` and
    :func:`~loopcheck.engine.grad_entry.method_callers_grad_off` share."""
    word = re.compile(rf"\b{re.escape(name)}\b")
    for file in files:
        stamp, text = project.source_of(file)
        if text is None:
            yield None  # unreadable or too large
            return
        if not word.search(text):
            continue
        info = project.load(file)
        if info is None or info.index is None:
            yield None
            return
        found = scan(project, file, stamp, text, name, info.index.imports)
        if found is None:
            yield None
            return
        yield Scanned(file, info, found)


#: Beyond this many entries, :func:`_mentions`'s memo is emptied (a long-lived process).
MAX_MEMO = 20000


def _mentions(project, file: Path, stamp: tuple, text: str, name: str, imports) -> list | None:
    """The mentions of ``name`` in ``file``'s text: ``(dotted name or None, whether it is the
    callee of a call, grad mode, where)`` each; ``None`` when the text does not parse. Kept in
    the project's memo by file, stamp and name (checks of several files ask for the same
    names, ``evaluate``, ``validate``)."""
    def read(tree: ast.AST, nodes: list) -> list:
        callees = {id(node.func) for node in ast.walk(tree) if isinstance(node, ast.Call)} if nodes else set()
        return [(ast_dotted_name(node), id(node) in callees, mode, where) for node, mode, where in nodes]

    return _scanned(project, "callers.mentions", file, stamp, text, name, imports, read)


def _scanned(project, kind: str, file: Path, stamp: tuple, text: str, name: str, imports, read) -> list | None:
    """``read(tree, mentions)`` for the module ``text`` of ``file``, its mentions of ``name``
    collected by :class:`_Scan` (``(node, mode, where)`` each), kept in the project's memo
    ``kind`` by file, stamp and name; ``None`` when the text does not parse."""
    memo = project.memo.setdefault(kind, {})
    key = (file, stamp, name)
    if key in memo:
        return memo[key]
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        found = None
    else:
        nodes: list[tuple[ast.AST, str, tuple]] = []
        _Scan(name, imports, nodes).body(tree.body, "enabled", _MODULE)
        found = read(tree, nodes)
    if len(memo) >= MAX_MEMO:
        memo.clear()
    memo[key] = found
    return found


class _Scan:
    """Walks a module's statements in order with the grad mode each runs in, collecting the
    mentions of one name (``(node, mode, where)``)."""

    def __init__(self, name: str, imports, out: list) -> None:
        self.name, self.imports, self.out = name, imports, out

    def grad(self, expr: ast.AST) -> str | None:
        """The grad mode a ``with`` item or a decorator sets (``None``: it sets none)."""
        if isinstance(expr, ast.IfExp):
            a, b = self.grad(expr.body), self.grad(expr.orelse)
            return a if a == b else "unknown"
        call = expr if isinstance(expr, ast.Call) else None
        dotted = ast_dotted_name(call.func if call is not None else expr)
        summary = knowledge().callable(self.imports.qualify(dotted)) if dotted else None
        mode = summary.grad if summary is not None else None
        if mode == "arg":
            if call is None or not call.args or not isinstance(call.args[0], ast.Constant):
                return "unknown"
            value = call.args[0].value
            return ("enabled" if value else "disabled") if isinstance(value, bool) else "unknown"
        return mode

    def body(self, stmts: list, mode: str, where: tuple) -> None:
        for st in stmts:
            self.stmt(st, mode, where)
            if isinstance(st, ast.Expr) and isinstance(st.value, ast.Call):
                dotted = ast_dotted_name(st.value.func)
                summary = knowledge().callable(self.imports.qualify(dotted)) if dotted else None
                if summary is not None and summary.grad == "arg":  # torch.set_grad_enabled(False)
                    mode = self.grad(st.value) or mode

    def stmt(self, st: ast.AST, mode: str, where: tuple) -> None:
        if isinstance(st, (ast.FunctionDef, ast.AsyncFunctionDef)):
            inner = "enabled"  # the body runs when it is called, not where it is defined
            for dec in st.decorator_list:
                self.expr(dec, mode, where)
                inner = self.grad(dec) or inner
            self.expr(st.args, mode, where)
            if st.returns is not None:
                self.expr(st.returns, mode, where)
            self.body(st.body, inner, ("function", st.name) if where == _MODULE else _OTHER)
            return
        if isinstance(st, ast.ClassDef):
            for part in (*st.decorator_list, *st.bases, *st.keywords):
                self.expr(part, mode, where)
            self.body(st.body, mode, _OTHER if where != _MODULE else ("class", st.name))
            return
        if isinstance(st, (ast.With, ast.AsyncWith)):
            inner = mode
            for item in st.items:
                self.expr(item, mode, where)
                inner = self.grad(item.context_expr) or inner
            self.body(st.body, inner, where)
            return
        for _field, value in ast.iter_fields(st):
            if isinstance(value, list) and value and isinstance(value[0], ast.stmt):
                self.body(value, mode, where)
            elif isinstance(value, list):
                for v in value:
                    if isinstance(v, (ast.excepthandler, getattr(ast, "match_case", ast.excepthandler))):
                        self.stmt(v, mode, where)
                    elif isinstance(v, ast.AST):
                        self.expr(v, mode, where)
            elif isinstance(value, ast.AST):
                self.expr(value, mode, where)

    def expr(self, node: ast.AST, mode: str, where: tuple) -> None:
        stack = [node]
        while stack:
            n = stack.pop()
            if isinstance(n, ast.Lambda):
                self.expr(n.args, mode, where)
                self.expr(n.body, "enabled", _OTHER)  # runs when it is called
                continue
            if isinstance(n, ast.Name) and n.id == self.name or isinstance(n, ast.Attribute) and n.attr == self.name:
                self.out.append((n, mode, where))
            stack.extend(ast.iter_child_nodes(n))


#: In :attr:`CallSite.positional`, an argument unpacked with ``*``.
STARRED = "*"


@dataclass(frozen=True)
class CallSite:
    """One call of a module-level function, as a file of the project writes it.

    Attributes:
        file: the file (resolved) that holds the call.
        where: ``("function", f)`` for a call in module-level function ``f`` of ``file``,
            :data:`_MODULE` (``("module",)``) for one in the module's own code.
        positional: the dotted name of each positional argument (``"args"``), ``None`` for
            one that is not a name (``get_args()``), :data:`STARRED` for ``*xs``.
        keywords: ``(keyword, dotted name of the value or None)`` for each keyword argument,
            the keyword ``None`` for ``**kwargs``.
    """

    file: Path
    where: tuple
    positional: tuple
    keywords: tuple


def call_sites(project, files: list[Path], path: Path, name: str) -> list[CallSite] | None:
    """Every call that ``files`` make of module-level function ``name`` of file ``path``.

    ``files`` are the files that may name the function (its own and those importing its
    module: :func:`loopcheck.engine.unreferenced.calling_files`), read with :mod:`ast`. Each
    mention of the name is resolved through the file's imports
    (:meth:`Project.member <loopcheck.engine.project.Project.member>`): a bare name, or a
    dotted one whose head the file imports (``run.train``), that is another definition is not
    the function; an attribute of anything else (``model.train()``, ``self.train()``) is an
    attribute of an object, not a module's function. ``None`` when one mention is the function
    and is not the callee of a call (``callback=train``, ``partial(train)``: called from where
    it is not known), lies in a method, a nested function, a lambda or a class body, or cannot
    be resolved (a bare name the file does not bind to a definition), or a file cannot be read
    or parsed. What is given up: a module reached through a variable (``m = run; m.train()``).
    """
    path = Path(path).resolve()
    out: list[CallSite] = []
    for scanned in scan_files(project, files, name, _call_mentions):
        if scanned is None:
            return None
        file, info, found = scanned
        aliases = info.index.imports.aliases
        for dotted, call, where in found:
            if dotted is None:
                continue  # ``make().train``: an attribute of an object
            head = dotted.split(".")[0]
            if "." in dotted and head not in aliases:
                continue  # ``model.train()``: an attribute of an object, not a module's function
            try:
                member = project.member(info, dotted.split("."))
            except (RecursionError, AttributeError, KeyError):
                return None
            if member is None:
                if head in aliases and head not in info.index.functions:
                    continue  # an import of a module the project does not hold: a library's
                return None  # a local name, a star import's: unknown
            if member.function is None or member.cls is not None or Path(member.info.path).resolve() != path \
                    or member.function.name.value != name:
                continue  # another definition of the same name
            if call is None or where[0] not in ("function", "module"):
                return None
            out.append(CallSite(Path(file).resolve(), where, *call))
    return out


def _call_mentions(project, file: Path, stamp: tuple, text: str, name: str, imports) -> list | None:
    """The mentions of ``name`` in ``file``'s text: ``(dotted name or None, (positional,
    keywords) of the call it is the callee of or None, where)`` each (see :class:`CallSite`);
    ``None`` when the text does not parse. Kept in the project's memo by file, stamp and name."""
    def read(tree: ast.AST, nodes: list) -> list:
        calls = {id(node.func): node for node in ast.walk(tree) if isinstance(node, ast.Call)} if nodes else {}
        found = []
        for node, _mode, where in nodes:
            call = calls.get(id(node))
            shape = None
            if call is not None:
                shape = (
                    tuple(STARRED if isinstance(a, ast.Starred) else ast_dotted_name(a) for a in call.args),
                    tuple((k.arg, ast_dotted_name(k.value)) for k in call.keywords),
                )
            found.append((ast_dotted_name(node), shape, where))
        return found

    return _scanned(project, "callers.calls", file, stamp, text, name, imports, read)
