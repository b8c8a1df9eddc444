"""The index of an imported module, read with :mod:`ast` first and with LibCST only when needed.

A checked file's imports reach far: ``from diffusers import UNet2DConditionModel`` reads the
package's ``__init__.py``, the module the name is re-exported from, and the modules its base
classes live in. Most of those modules are read only to resolve a name (is it a class of the
project? what are its bases? is there a method ``fit``?); their code is never inlined. A
LibCST parse costs several times CPython's own, so :class:`LazyModuleIndex` answers those
questions from an :mod:`ast` outline, and parses with LibCST only the statements whose syntax
nodes a caller needs (a function or a method to inline), each on its own.

The outline must name exactly what :func:`loopcheck.engine.builder.index_module` would find
(imports anywhere in the file, in the same order; the top-level functions and classes; their
methods and qualified bases; the global names): ``tests/test_outline.py`` compares the two.
"""

from __future__ import annotations

import ast
import re
import warnings
import weakref
from array import array
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field

import libcst as cst

from loopcheck.engine.names import ImportMap
from loopcheck.parsing import LINE_END, line_starts, parse_tree

_DEFS = (ast.FunctionDef, ast.AsyncFunctionDef)
_BLANK = re.compile(r"[^\r\n]+")  # a line's text, its line end left
#: A word of a text, read without parsing it: every identifier of the code is one (strings and
#: comments give words too).
WORD = re.compile(r"\w+")


@dataclass
class Outline:
    """What an :mod:`ast` read of a module gives: ``imports`` (an :class:`ImportMap`),
    ``functions`` (top-level function names), ``classes`` (name → ``(qualified bases,
    method names)``) and ``globals`` (names bound at module level), as
    :func:`loopcheck.engine.builder.index_module` defines them."""

    imports: ImportMap
    functions: list[str] = field(default_factory=list)
    classes: dict[str, tuple[tuple[str, ...], list[str]]] = field(default_factory=dict)
    globals: set[str] = field(default_factory=set)
    #: ``("def" or "class", name) → (first line, last line)`` of each top-level function and
    #: class statement, decorators included (1-based; the last definition of a name wins, as
    #: in ``index_module``)
    spans: dict[tuple[str, str], tuple[int, int]] = field(default_factory=dict)
    #: ``class name → {method name → (first line, last line)}``: the methods of each class
    #: (of its last definition), as for ``spans``
    method_spans: dict[str, dict[str, tuple[int, int]]] = field(default_factory=dict)


def outline(source: str, package: str | None, stars: Callable[[ImportMap], None] | None = None) -> Outline | None:
    """The outline of a module's text, or ``None`` when CPython cannot parse it (then the
    caller parses with LibCST, which decides). Warnings the compiler gives (an invalid escape
    sequence) are not shown: the text is only read. ``stars`` adds to the imports what the
    module's star imports bind (:meth:`loopcheck.engine.project.Project.bind_stars`), before
    its classes' bases are qualified, as ``index_module`` does."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    imports = ImportMap(package)
    for node in _small_statements(tree):
        if type(node) is ast.Import or type(node) is ast.ImportFrom:
            _add_import(imports, node)
    if stars is not None and imports.stars:
        stars(imports)
    out = Outline(imports)
    for stmt in tree.body:
        if isinstance(stmt, _DEFS):
            out.functions.append(stmt.name)
            out.globals.add(stmt.name)
            out.spans["def", stmt.name] = _span(stmt)
        elif isinstance(stmt, ast.ClassDef):
            bases = tuple(q for q in (imports.qualify(ast_dotted_name(_unstarred(b))) for b in stmt.bases) if q)
            out.classes[stmt.name] = (bases, [s.name for s in stmt.body if isinstance(s, _DEFS)])
            out.globals.add(stmt.name)
            out.spans["class", stmt.name] = _span(stmt)
            out.method_spans[stmt.name] = {s.name: _span(s) for s in stmt.body if isinstance(s, _DEFS)}
        else:
            _bound(stmt, out.globals)
    return out


@dataclass
class StarExports:
    """What ``from <module> import *`` may take from a module, read from its text: its
    module-level imports, the names it binds otherwise (definitions and assignments, which
    shadow an import of the same name), and its ``__all__``.

    Attributes:
        imports: the imports of its module level (inside ``if``/``try`` blocks too, not
            inside functions or classes: those bind no global).
        defined: the other names it binds at module level.
        public: the names its ``__all__`` lists, when it is a list or tuple of string
            literals (``+=`` of one included); ``None`` when it has no ``__all__``.
        opaque: ``__all__`` is bound or changed in a way not read here (computed, extended
            by a call): what the star import binds is then unknown.
        bindable: every name the module may bind at its level, and more (each name its
            code binds anywhere: a superset); ``None`` when it may bind names unseen
            (``globals()``, ``exec``, ``setattr`` on an imported module, ``sys.modules``): the names
            a star import of it binds are then not all known
            (:meth:`loopcheck.engine.project.Project.star_names`).
        star_count: how many star imports it has (``imports.stars`` lacks those whose
            relative module is not known).
    """

    imports: ImportMap
    defined: set[str] = field(default_factory=set)
    public: frozenset[str] | None = None
    opaque: bool = False
    bindable: frozenset[str] | None = None
    star_count: int = 0

    def exported(self, name: str) -> bool:
        """Whether ``from <module> import *`` binds ``name`` (as Python decides: the names of
        ``__all__`` when there is one, else every name not starting with ``_``)."""
        if self.opaque:
            return False
        return name in self.public if self.public is not None else not name.startswith("_")


def star_exports(source: str, package: str | None) -> StarExports | None:
    """:class:`StarExports` of a module's text (``package``: its package, for its relative
    imports), or ``None`` when CPython cannot parse it."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    out = StarExports(ImportMap(package))
    public: set[str] | None = None
    for node in _module_level(tree):
        if type(node) is ast.Import or type(node) is ast.ImportFrom:
            _add_import(out.imports, node)
        names = _all_literal(node)
        if names is not None:
            public = (public or set()) | names[1] if names[0] else names[1]
        elif any(isinstance(n, ast.Name) and n.id == "__all__" for n in ast.walk(node)):
            out.opaque = True  # ``__all__`` built, extended or re-bound otherwise
    for stmt in tree.body:
        _bound(stmt, out.defined)
    out.defined.discard("__all__")
    out.public = frozenset(public) if public is not None else None
    stars = [0]
    out.bindable = _bindable(tree, stars)
    out.star_count = stars[0]
    return out


#: Names whose use may bind a module's names unseen (:func:`_bindable`).
_OPENING = frozenset({
    "globals", "locals", "vars", "exec", "eval", "execfile", "__import__",
    "builtins", "__builtin__", "__builtins__", "__main__",
})


#: Nodes whose code binds names in a scope of its own (a class body's names are its class's).
_SCOPES = (*_DEFS, ast.Lambda, ast.ClassDef, ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)


def _main_guard(node: ast.AST) -> bool:
    """Whether ``node`` is ``if __name__ == "__main__":`` (either side of the ``==``)."""
    if type(node) is not ast.If or type(node.test) is not ast.Compare:
        return False
    test = node.test
    if len(test.ops) != 1 or type(test.ops[0]) is not ast.Eq:
        return False
    sides = (test.left, test.comparators[0])
    return (sum(type(x) is ast.Name and x.id == "__name__" for x in sides) == 1
            and sum(type(x) is ast.Constant and x.value == "__main__" for x in sides) == 1)


def _walk_scoped(tree: ast.Module) -> Iterator[tuple[ast.AST, bool]]:
    """Each node of ``tree`` with whether it lies in a scope of its own (:data:`_SCOPES`: the
    body, parameters and targets of a function, lambda, class or comprehension), rather than
    at the module's level, or in the body of a main guard, ``if __name__ == "__main__":``, at
    the module's level (a module imported by a star import runs under its own name, so that
    body does not run). A definition's own name, decorators and defaults are of the level
    around it; a comprehension's first iterable too."""
    stack: list[tuple[ast.AST, bool]] = [(tree, False)]
    while stack:
        node, inner = stack.pop()
        yield node, inner
        if node in tree.body and _main_guard(node):
            body = {id(n) for n in node.body}
            stack.extend((child, inner or id(child) in body) for child in ast.iter_child_nodes(node))
        elif isinstance(node, _SCOPES):
            outer: list[ast.AST] = []
            if isinstance(node, (*_DEFS, ast.Lambda)):
                outer = [*node.args.defaults, *(d for d in node.args.kw_defaults if d is not None)]
            if isinstance(node, (*_DEFS, ast.ClassDef)):
                outer += [*node.decorator_list]
            if isinstance(node, ast.ClassDef):
                outer += [*node.bases, *node.keywords]
            if isinstance(node, (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)):
                outer.append(node.generators[0].iter)
            kept = {id(n) for n in outer}
            stack.extend((child, inner or id(child) not in kept) for child in ast.iter_child_nodes(node))
        else:
            stack.extend((child, inner) for child in ast.iter_child_nodes(node))


def _bindable(tree: ast.Module, stars: list[int]) -> frozenset[str] | None:
    """Every name ``tree`` may bind at its module level (names, definitions, imports,
    ``except ... as``, match captures, at that level; ``global`` declarations and walrus
    targets anywhere: a superset), or ``None`` when something in it may bind names unseen
    (see :attr:`StarExports.bindable`); ``stars[0]`` counts its star imports. A name bound
    only inside a function, a class body or a comprehension (a parameter, a local) is not a
    name of the module."""
    names: set[str] = set()
    sys_names: set[str] = set()  # names bound to the ``sys`` module
    modules_of: set[str] = set()  # ``x`` of each ``x.modules`` (``sys.modules[__name__]``)
    imported: set[str] = set()  # names bound by imports (modules, for ``setattr``)
    set_on: set[str] = set()  # ``m`` of each ``setattr(m, ...)``
    walrus: set[int] = set()  # ``id`` of the targets of ``:=`` (they may bind the function's name)
    for node, inner in _walk_scoped(tree):
        t = type(node)
        if t is ast.NamedExpr:
            walrus.add(id(node.target))
        if t is ast.Name:
            if node.id in _OPENING:
                return None
            if type(node.ctx) is not ast.Load and (not inner or id(node) in walrus):
                names.add(node.id)
        elif isinstance(node, (*_DEFS, ast.ClassDef)):
            if not inner:
                names.add(node.name)
        elif t is ast.alias:
            if node.name == "*":
                stars[0] += 1  # (its names: :meth:`Project.star_names` follows it)
                continue
            if not inner:
                names.add(node.asname or node.name.partition(".")[0])
            imported.add(node.asname or node.name.partition(".")[0])
            if node.name == "sys":
                sys_names.add(node.asname or "sys")
        elif t is ast.ImportFrom and node.module == "sys" and any(a.name == "modules" for a in node.names):
            return None
        elif t is ast.Global or t is ast.Nonlocal:
            names.update(node.names)
        elif t is ast.Attribute and node.attr == "modules" and type(node.value) is ast.Name:
            modules_of.add(node.value.id)
        elif (t is ast.Call and type(node.func) is ast.Name and node.func.id == "setattr" and node.args
              and type(node.args[0]) is ast.Name):
            set_on.add(node.args[0].id)
        elif inner:
            continue
        elif t is ast.ExceptHandler and node.name:
            names.add(node.name)
        elif type(getattr(node, "name", None)) is str:  # match captures (``MatchAs``, ...)
            names.add(node.name)
        elif type(getattr(node, "rest", None)) is str:
            names.add(node.rest)
    if not modules_of.isdisjoint(sys_names) or not set_on.isdisjoint(imported):
        return None
    return frozenset(names)


def _all_literal(node: ast.stmt) -> tuple[bool, set[str]] | None:
    """``(whether it adds to it, the names)`` when a statement binds ``__all__`` to a list or
    tuple of string literals (``__all__ = [...]``, ``__all__: list = [...]``) or adds one to it
    (``__all__ += [...]``); ``None`` for any other statement."""
    if isinstance(node, ast.Assign) and len(node.targets) == 1:
        target, value, adds = node.targets[0], node.value, False
    elif isinstance(node, ast.AnnAssign) and node.value is not None:
        target, value, adds = node.target, node.value, False
    elif isinstance(node, ast.AugAssign) and isinstance(node.op, ast.Add):
        target, value, adds = node.target, node.value, True
    else:
        return None
    if not (isinstance(target, ast.Name) and target.id == "__all__" and isinstance(value, (ast.List, ast.Tuple))):
        return None
    if not all(isinstance(e, ast.Constant) and isinstance(e.value, str) for e in value.elts):
        return None
    return adds, {e.value for e in value.elts}


def _module_level(tree: ast.Module) -> Iterator[ast.stmt]:
    """The simple statements a module runs at its level: in its blocks (``if``, ``try``,
    ``with``, loops, ``match``), not in the bodies of its functions and classes."""
    stack: list = [tree.body]
    while stack:
        n = stack.pop()
        if isinstance(n, list):
            stack.extend(reversed(n))
            continue
        if isinstance(n, (*_DEFS, ast.ClassDef)):
            continue
        body = getattr(n, "body", None)
        if not isinstance(body, list) and not isinstance(n, ast.Match):
            yield n
            continue
        for part in (body, getattr(n, "orelse", None), getattr(n, "finalbody", None),
                     *(h.body for h in getattr(n, "handlers", ())), *(c.body for c in getattr(n, "cases", ()))):
            if part:
                stack.append(part)


def _span(stmt: ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) -> tuple[int, int]:
    return min([stmt.lineno, *(d.lineno for d in stmt.decorator_list)]), stmt.end_lineno or stmt.lineno


def span_offsets(starts, span: tuple[int, int], size: int) -> tuple[int, int]:
    """Where lines ``span`` (first, last; 1-based, as :attr:`Outline.spans` gives them) begin
    and end in a text of ``size`` characters, their line ends included; ``starts``:
    :func:`~loopcheck.parsing.line_starts` of the text."""
    return starts[span[0] - 1], starts[span[1]] if span[1] < len(starts) else size


def span_text(source: str, starts, span: tuple[int, int]) -> str:
    """Lines ``span`` of ``source`` (:func:`span_offsets`)."""
    begin, end = span_offsets(starts, span, len(source))
    return source[begin:end]


def module_code_text(source: str, starts, spans) -> str:
    """``source`` with the lines of its top-level functions and classes (``spans``, as
    :attr:`Outline.spans` gives them) left empty, their line ends kept: the module's own code,
    on the file's lines."""
    pieces, at = [], 0
    for span in sorted(spans):
        begin, end = span_offsets(starts, span, len(source))
        if begin >= at:
            pieces += [source[at:begin], _BLANK.sub("", source[begin:end])]
            at = end
    pieces.append(source[at:])
    return "".join(pieces)


def _unstarred(expr: ast.expr) -> ast.expr:
    return expr.value if isinstance(expr, ast.Starred) else expr  # LibCST keeps ``*bases`` among the bases


def ast_dotted_name(expr: ast.expr) -> str | None:
    """``"a.b.c"`` for a Name/Attribute chain (as :func:`loopcheck.engine.names.dotted_name`)."""
    parts: list[str] = []
    while isinstance(expr, ast.Attribute):
        parts.append(expr.attr)
        expr = expr.value
    if not isinstance(expr, ast.Name):
        return None
    parts.append(expr.id)
    return ".".join(reversed(parts))


def _add_import(imports: ImportMap, node: ast.Import | ast.ImportFrom) -> None:
    """:meth:`ImportMap.add` for an :mod:`ast` import statement."""
    if isinstance(node, ast.Import):
        for alias in node.names:
            imports.add_import(alias.name, alias.asname)
        return
    star = len(node.names) == 1 and node.names[0].name == "*"
    names = None if star else [(alias.name, alias.asname) for alias in node.names]
    imports.add_from(node.module or "", node.level, names)


def _small_statements(tree: ast.Module) -> Iterator[ast.stmt]:
    """The simple statements of a module, nested ones included, in the order
    :func:`loopcheck.engine.walk.small_statements` visits LibCST's (a statement's body,
    then its ``else``, ``finally``, handlers and cases, each taken last-pushed first)."""
    stack: list = [tree.body]
    while stack:
        n = stack.pop()
        if isinstance(n, list):  # a block: its statements in order
            stack.extend(reversed(n))
            continue
        body = getattr(n, "body", None)
        if not isinstance(body, list) and not isinstance(n, ast.Match):
            yield n  # a simple statement
            continue
        if body:
            stack.append(body)
        for attr in ("orelse", "finalbody"):
            part = getattr(n, attr, None)
            if part:
                stack.append(part)
        for h in getattr(n, "handlers", ()):
            stack.append(h.body)
        for c in getattr(n, "cases", ()):
            stack.append(c.body)


def _targets(target: ast.expr, out: set[str]) -> None:
    if isinstance(target, ast.Name):
        out.add(target.id)
    elif isinstance(target, (ast.Tuple, ast.List)):
        for el in target.elts:
            _targets(el, out)
    elif isinstance(target, ast.Starred):
        _targets(target.value, out)


def _bound(st: ast.stmt, names: set[str]) -> None:
    """The names a module-level statement binds, as :func:`loopcheck.engine.builder.bound_names`
    counts them (assignments, ``for`` and ``with`` targets, handler names, definitions, inside
    compound statements; not imports; ``global`` declarations bind nothing here)."""
    if isinstance(st, (*_DEFS, ast.ClassDef)):
        names.add(st.name)
    elif isinstance(st, ast.Assign):
        for t in st.targets:
            _targets(t, names)
    elif isinstance(st, (ast.AnnAssign, ast.AugAssign)):
        _targets(st.target, names)
    elif isinstance(st, ast.If):
        for s in (*st.body, *st.orelse):
            _bound(s, names)
    elif isinstance(st, (ast.For, ast.AsyncFor)):
        _targets(st.target, names)
        for s in (*st.body, *st.orelse):
            _bound(s, names)
    elif isinstance(st, ast.While):
        for s in (*st.body, *st.orelse):
            _bound(s, names)
    elif isinstance(st, (ast.With, ast.AsyncWith)):
        for item in st.items:
            if item.optional_vars is not None:
                _targets(item.optional_vars, names)
        for s in st.body:
            _bound(s, names)
    elif isinstance(st, (ast.Try, getattr(ast, "TryStar", ast.Try))):
        for s in st.body:
            _bound(s, names)
        for h in st.handlers:
            if h.name is not None:
                names.add(h.name)
            for s in h.body:
                _bound(s, names)
        for s in (*st.orelse, *st.finalbody):
            _bound(s, names)
    elif isinstance(st, ast.Match):
        for case in st.cases:
            for s in case.body:
                _bound(s, names)


class _Lazy(Mapping):
    """A name → syntax node table whose names are known from the outline and whose nodes are
    parsed the first time they are asked for (``node(name)``: the node, ``None`` when LibCST
    cannot parse it). A name the outline does not have is answered without parsing; a name it
    has is parsed (so a statement LibCST cannot parse is not in the table)."""

    def __init__(self, names, node) -> None:
        self._names = dict.fromkeys(names)  # in the outline's order, each name once
        self._node = node

    def __contains__(self, name) -> bool:
        return name in self._names and self._node(name) is not None

    def __iter__(self):
        return (name for name in self._names if self._node(name) is not None)

    def __len__(self) -> int:
        return sum(1 for _ in self)

    def __getitem__(self, name):
        found = self._node(name) if name in self._names else None
        if found is None:
            raise KeyError(name)
        return found

    def get(self, name, default=None):
        found = self._node(name) if name in self._names else None
        return default if found is None else found

    def names(self) -> list[str]:
        """The names the outline has, in its order, without parsing any of them."""
        return list(self._names)


class LazyClassInfo:
    """:class:`loopcheck.engine.builder.ClassInfo` of an outlined module: ``bases`` from the
    outline, ``methods`` each parsed alone on first use (:meth:`LazyModuleIndex.method_statement`),
    ``node`` (its whole ``class`` statement, whose methods are other nodes) when asked for."""

    def __init__(self, index: "LazyModuleIndex", name: str, bases: tuple[str, ...], methods: list[str]) -> None:
        # the index is named weakly: it holds this class info, and a reference cycle would keep
        # an index no one uses (a checked file's, one :meth:`Project.trim` lets go) and its
        # parsed statements until the garbage collector walks them (once frozen, until the
        # memory safety net unfreezes them: :func:`loopcheck.check.settle_gc`)
        self._index = ref = weakref.ref(index)
        self._name = name
        self.bases = bases
        self.methods = _Lazy(methods, lambda method: ref().method_statement(name, method))

    @property
    def node(self) -> cst.ClassDef:
        node = self._index().statement("class", self._name)
        if node is None:
            raise KeyError(self._name)
        return node


class LazyModuleIndex:
    """A :class:`loopcheck.engine.builder.ModuleIndex` of an imported module that answers
    name questions from its :class:`Outline` and parses with LibCST only the statements whose
    syntax nodes are asked for: a top-level function (``functions[name]``) or a class
    (``classes[name].node``) or a class's method (``classes[name].methods[name]``), each on its
    own, once, so that nodes keep their identity for the whole check. A module's code is mostly
    read for a few of its classes and functions.

    Each statement is parsed from its own lines (:attr:`fragments`: the parsed statement as a
    module, and how many lines of the file come before it); a node's line in the file is its
    line in its fragment plus that offset (columns are the same: the statements are at the top
    level, a method under a ``class`` line of its own). ``tree`` and ``body`` parse the whole
    module apart, for the questions about all of its code
    (:func:`loopcheck.rules.modules._registered`): their nodes are not the fragments' nodes.

    Args:
        source: the module's text.
        outline: its outline (:func:`outline`).
        name, path, project: its dotted name, file and project, as for ``index_module``.
        on_parse: called with the tree of the whole module (``None`` when LibCST cannot parse
            it), once, when ``tree`` is first asked for.
    """

    def __init__(self, source: str, outline: Outline, name: str, path, project, on_parse=None) -> None:
        self.source = source
        self.imports = outline.imports
        self.globals = outline.globals
        self.name = name
        self.path = path
        self.project = project
        self.cache: dict = {}
        self.fragments: list[tuple[cst.Module, int]] = []
        self.parsed_chars = 0  # of the source, parsed with LibCST so far
        self._on_parse = on_parse
        self._full = None
        self._parsed = False
        self._spans = outline.spans
        self._method_spans = outline.method_spans
        self._starts: array | None = None  # where each line of the source starts (4 bytes a line)
        self._statements: dict[tuple, cst.CSTNode | None] = {}
        self._code: list | None = None
        #: the class of each method parsed so far (as :attr:`ModuleIndex.method_class
        #: <loopcheck.engine.builder.ModuleIndex>` has every method's)
        self.method_class: dict[cst.FunctionDef, str] = {}
        #: whether a statement LibCST could not parse was asked for (its node is then missing)
        self.unparsed = False
        statement = weakref.WeakMethod(self.statement)  # (not ``self``: see :class:`LazyClassInfo`)
        self.functions = _Lazy(outline.functions, lambda func: statement()("def", func))
        self.classes = {
            cls: LazyClassInfo(self, cls, bases, methods) for cls, (bases, methods) in outline.classes.items()
        }

    def statement(self, kind: str, name: str) -> cst.FunctionDef | cst.ClassDef | None:
        """The top-level ``def`` (``kind`` ``"def"``) or ``class`` (``"class"``) statement
        ``name``, parsed alone the first time; ``None`` when the outline has none or LibCST
        cannot parse it."""
        key = (kind, name)
        if key in self._statements:
            return self._statements[key]
        node = None
        span = self._spans.get(key)
        if span is not None:
            text = self._lines(span)
            module = self._parse(text)
            want = cst.FunctionDef if kind == "def" else cst.ClassDef
            if module is not None and len(module.body) == 1 and type(module.body[0]) is want:
                node = module.body[0]
                self.fragments.append((module, span[0] - 1))
            else:
                self.unparsed = True
        self._statements[key] = node
        return node

    def method_statement(self, cls: str, name: str) -> cst.FunctionDef | None:
        """Method ``name`` of the top-level class ``cls``, parsed alone the first time (under a
        line ``class <cls>:`` of its own: its columns and its class's name are those of the
        file), else taken from its whole class statement; ``None`` when the outline has none or
        LibCST cannot parse it. A class is mostly read for a few of its methods."""
        key = ("method", cls, name)
        if key in self._statements:
            return self._statements[key]
        node = None
        span = self._method_spans.get(cls, {}).get(name)
        if span is not None:
            text = self._lines(span)
            line_end = LINE_END.search(text)
            newline = line_end.group() if line_end else "\n"
            module = self._parse(f"class {cls}:{newline}{text}")
            if module is not None and len(module.body) == 1 and type(module.body[0]) is cst.ClassDef:
                body = module.body[0].body.body
                if len(body) == 1 and type(body[0]) is cst.FunctionDef and body[0].name.value == name:
                    node = body[0]
                    self.fragments.append((module, span[0] - 2))  # (its line 1 is the class line)
        if node is None:  # not alone: from the whole class, as Python reads it
            whole = self.statement("class", cls)
            found = [s for s in whole.body.body if type(s) is cst.FunctionDef and s.name.value == name] if whole else []
            node = found[-1] if found else None
        if node is not None:
            self.method_class[node] = cls
        elif span is not None:
            self.unparsed = True
        self._statements[key] = node
        return node

    def module_code(self) -> list[cst.BaseStatement]:
        """The module's own code: its top-level statements other than ``def`` and ``class``,
        parsed once from the text with those statements' lines left empty (so its lines are
        the file's: a fragment with no offset), as
        :meth:`ModuleIndex.module_code <loopcheck.engine.builder.ModuleIndex.module_code>`
        gives them; ``[]`` (and :attr:`unparsed` set) when LibCST cannot parse it."""
        if self._code is None:
            module = self._parse(module_code_text(self.source, self._line_starts(), self._spans.values()))
            self._code = []
            if module is not None:
                self.fragments.append((module, 0))
                self._code = [s for s in module.body if type(s) is not cst.FunctionDef and type(s) is not cst.ClassDef]
        return self._code

    def text_of(self, key: tuple) -> str:
        """The lines of a statement, unparsed: ``("def", name)`` a top-level function,
        ``("method", cls, name)`` a method, ``("header", cls)`` a class's lines before its
        first method (decorators, bases, docstring, class attributes); ``""`` when the outline
        has none."""
        if key[0] == "method":
            span = self._method_spans.get(key[1], {}).get(key[2])
        elif key[0] == "header":
            span = self._spans.get(("class", key[1]))
            starts = [first for first, _last in self._method_spans.get(key[1], {}).values()]
            if span is not None and starts:
                span = (span[0], max(min(starts) - 1, span[0]))
        else:
            span = self._spans.get(key)
        return self._lines(span) if span is not None else ""

    def _lines(self, span: tuple[int, int]) -> str:
        """Lines ``span`` (first, last; 1-based) of the source, their line ends included."""
        return span_text(self.source, self._line_starts(), span)

    def _line_starts(self) -> array:
        """Where each line of the source starts, computed once."""
        if self._starts is None:
            self._starts = array("I", line_starts(self.source))
        return self._starts

    def _parse(self, text: str) -> cst.Module | None:
        """``text`` parsed with LibCST (``None`` when it cannot be), counted in :attr:`parsed_chars`."""
        self.parsed_chars += len(text)
        try:
            return parse_tree(text)
        except (cst.ParserSyntaxError, RecursionError, MemoryError, ValueError):
            self.unparsed = True
            return None

    def full(self):
        """The LibCST index of the whole module, parsed apart from its statements (``None``
        when LibCST cannot parse it), built once."""
        if not self._parsed:
            from loopcheck.engine.builder import index_module

            self._parsed = True
            try:
                tree = parse_tree(self.source)
            except (cst.ParserSyntaxError, RecursionError, MemoryError, ValueError):
                tree = None
            if tree is not None:
                self.parsed_chars += len(self.source)
                package = self.imports.package
                self._full = index_module(tree, package=package, name=self.name, path=self.path, project=self.project)
                self._full.imports = self.imports  # one table, as the outline read it
            if self._on_parse is not None:
                self._on_parse(tree)
        return self._full

    @property
    def tree(self) -> cst.Module | None:
        full = self.full()
        return full.tree if full is not None else None

    @property
    def body(self) -> list:
        full = self.full()
        return full.body if full is not None else []

    def class_ref(self, name: str | None, qualified: bool = False):
        from loopcheck.engine.builder import ModuleIndex

        return ModuleIndex.class_ref(self, name, qualified)

    def method(self, cls: str, name: str):
        from loopcheck.engine.builder import ModuleIndex

        return ModuleIndex.method(self, cls, name)
