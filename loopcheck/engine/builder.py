"""Build the event IR of a file: one unit per entry point, called functions inlined.

An *entry point* is the module's top-level code, or a function or method that no code of
the same file calls by name (a ``train()`` run by a framework, a Trainer method called from
elsewhere). Calls to functions, methods (``self.validate()``, ``super().__init__()``) and
classes (``Trainer(...)`` runs ``__init__``) of the same file, and of the other modules of the
project (:mod:`loopcheck.engine.project`: ``from engine import train_one_epoch``, a base class
in ``base/base_trainer.py``), are inlined with their parameters bound to the caller's
symbols, so a loop split into ``train_one_epoch()`` and ``evaluate()`` reads as one loop.

Symbols are dotted names scoped to where they live: the checked module's globals keep their
name (``model``), another module's globals get its name (``engine::device``), a function's
locals get its frame id (``f3_1:model``: the first frame of entry point 3), and ``self``
inside the methods of an instance of class ``Trainer`` is ``self@Trainer``, whichever class
defines the method.
"""

from __future__ import annotations

import builtins
import re
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from itertools import count

import libcst as cst

from loopcheck.engine.ir import (
    Sources,
    Arg,
    Assign,
    Call,
    Context,
    If,
    Inline,
    Jump,
    Loop,
    LoopInfo,
    Node,
    Seq,
    Try,
    parts,
    release,
    walk_events,
)
from loopcheck.engine.attr_facts import (
    ALL, MODE_ATTRIBUTE, dynamic_write, expression_children, fact_subject, learned, mode_subject, received, truth_arms,
    truth_test, written_attributes,
)
from loopcheck.engine import bindings as B
from loopcheck.engine.binding import binds
from loopcheck.engine.bindings import target_names
from loopcheck.engine.calls import ref_parts
from loopcheck.engine.classes import is_module_class
from loopcheck.engine.displays import (
    CALL_HOOK_METHODS, HOOK_METHODS, Display, evaluated_calls, given_arg, literal_display, registers_hooks,
    returned_display, unpacked_count,
)
from loopcheck.engine.knowledge import NO_GRAPH, knowledge
from loopcheck.engine.literals import NO_VALUE, literal_value
from loopcheck.engine.names import STR_TRANSFORMS, ImportMap, dotted_name
from loopcheck.engine.undefined import (
    NOT_DECIDED, Resolution, builds_own_loader, evaluated_before, first_undefined, has_import, head_part, is_program,
    resolve, statement_parts,
)
from loopcheck.engine.summaries import (
    ContextSplit, decorator_grad, forward_clears, is_context_manager, split_context_manager,
)
from loopcheck.engine.walk import calls_in_order, children, dotted_chains, names_in, small_statements, walk
from loopcheck.engine.zero_dim import Binding, Shapes, block_bindings, indexing_subscripts

# The node classes this module tests for are final (no subclasses in LibCST), so it tests
# ``type(node) is cst.X``: ``isinstance`` against LibCST's classes, which derive from ``abc.ABC``,
# takes the slow path for every node of another class (the builder's hottest tests).
BUILTINS = frozenset(dir(builtins))
MAX_INLINE_DEPTH = 6
#: No call is inlined once a check has made this many events (all its entry points together):
#: the bound that keeps a file whose functions call each other at many sites (yolov5's
#: ``train()`` calling ``val.run()``, called twice from ``main()``) linear in its lines (10,000
#: since submodules are not inlined, :meth:`UnitBuilder.try_inline`: no finding changed). A
#: call not inlined for it is opaque to the rules (a ``havoc`` for what it receives).
MAX_EVENTS_PER_UNIT = 10_000
#: How many ``with A if c else B:`` items whose arms set different grad modes may enclose one
#: another with the rest of their statement built once per arm (:meth:`UnitBuilder.with_stmt`):
#: each doubles what it encloses. Deeper, the body's grad mode is ``"unknown"``.
MAX_WITH_SPLITS = 2
#: How many functions :meth:`UnitBuilder.attr_writes` reads for the code one call may run;
#: past it, the call may change any attribute.
MAX_WRITES_SCAN = 64


@dataclass
class ClassInfo:
    node: cst.ClassDef
    methods: dict[str, cst.FunctionDef]
    bases: tuple[str, ...]  # qualified names of the base classes


#: The tables of :attr:`ModuleIndex.cache` whose entries are pure functions of one node's
#: subtree (and of the library knowledge): the calls of an expression in evaluation order, the
#: name chains it reads, its sources plan, whether a function is a generator. LibCST nodes are
#: immutable, so an entry holds for its node in any tree that contains it: the language server
#: carries these tables from one version of a document to the next, whose unchanged statements
#: keep their node objects (:class:`loopcheck.server.reparse.Reparser`).
NODE_TABLES = ("calls", "chains", "sources", "generators")


@dataclass(eq=False)
class ModuleIndex:
    """What one module defines: imports, top-level functions and classes, global names.

    Attributes:
        name: the module's dotted name (``"pkg.engine"``; ``""`` when unknown).
        path: its file, when it has one.
        project: the project its imports are looked up in (``None``: this file alone).
    """

    imports: ImportMap
    functions: dict[str, cst.FunctionDef]
    classes: dict[str, ClassInfo]
    globals: set[str]
    body: list[cst.BaseStatement]
    method_class: dict[cst.FunctionDef, str] = field(default_factory=dict)
    name: str = ""
    path: object = None
    project: object = None
    tree: cst.Module | None = None
    cache: dict = field(default_factory=dict)  # tables derived from the tree, computed on demand
    #: a notebook's cells joined: its names come from cells run in any order, and from its
    #: kernel, so no read is taken to raise ``NameError`` (:func:`undefined_reads`)
    notebook: bool = False

    def class_ref(self, name: str | None, qualified: bool = False) -> "ClassRef | None":
        """The class a name refers to in this module: one defined here (``Trainer``) or, for a
        qualified name, one of another module of the project (``base.base_trainer.BaseTrainer``)."""
        if name is None:
            return None
        if not qualified and name in self.classes:
            return ClassRef(self, name)
        if qualified and self.project is not None:
            member = self.project.lookup(name, self.path)
            if member is not None and member.function is None and member.cls and member.info.index is not None:
                return ClassRef(member.info.index, member.cls)
        return None

    def method(self, cls: str, name: str) -> tuple[str, cst.FunctionDef] | None:
        """Find method ``name`` on class ``cls`` of this module or on its bases (here or in the
        project): ``(defining class name, function)``."""
        found = find_method(ClassRef(self, cls), name)
        return (found[0].name, found[1]) if found else None

    def module_code(self) -> list[cst.BaseStatement]:
        """The module's own code: its top-level statements other than ``def`` and ``class``."""
        return [s for s in self.body if type(s) is not cst.FunctionDef and type(s) is not cst.ClassDef]


@dataclass(frozen=True)
class ClassRef:
    """A class of the project: the module that defines it and its name."""

    module: ModuleIndex
    name: str

    @property
    def info(self) -> ClassInfo | None:
        return self.module.classes.get(self.name)

    @property
    def qualname(self) -> str:
        return f"{self.module.name}.{self.name}" if self.module.name else self.name

    @property
    def described(self) -> bool:
        """Whether the library knowledge describes this class (then it is not read)."""
        return self.module.name != "" and knowledge().cls(self.qualname) is not None

    def bases(self) -> list["ClassRef"]:
        """Its base classes that are classes of the project."""
        info = self.info
        out = []
        for base in info.bases if info else ():
            ref = self.module.class_ref(base) or self.module.class_ref(base, qualified=True)
            if ref is not None:
                out.append(ref)
        return out


def plain_class(cls: ClassRef, _seen: frozenset = frozenset()) -> bool:
    """Whether calling project class ``cls`` runs its ``__init__`` and finds its methods as its
    class statements read: no class of its chain is decorated, given a metaclass or other class
    keywords, or defines ``__new__``, and each base is a class of the project with the same
    property, ``object``, or a class of ``torch`` (a library's base may bring a metaclass that
    builds instances its own way: ``enum.Enum``, pydantic's ``BaseModel``)."""
    info = cls.info
    if info is None or cls in _seen or "__new__" in info.methods:
        return False
    if _decorated_or_keywords(cls):
        return False
    for base in info.bases:
        ref = cls.module.class_ref(base) or cls.module.class_ref(base, qualified=True)
        if ref is not None:
            if not plain_class(ref, _seen | {cls}):
                return False
        elif base != "object" and not base.startswith("torch."):
            return False
    return True


def _decorated_or_keywords(cls: ClassRef) -> bool:
    """Whether the ``class`` statement of ``cls`` has decorators or class keywords
    (``metaclass=``); for an outlined module, read from the lines of its header
    (:meth:`~loopcheck.engine.outline.LazyModuleIndex.text_of`, not parsed)."""
    text_of = getattr(cls.module, "text_of", None)
    if text_of is None:
        node = cls.info.node
        return bool(node.decorators or node.keywords)
    text = text_of(("header", cls.name))
    if text.lstrip().startswith("@"):
        return True
    header = re.search(rf"\bclass\s+{re.escape(cls.name)}\s*(?:\((.*?)\))?\s*:", text, re.S)
    return header is None or "=" in (header.group(1) or "")


def _abstract(func: cst.FunctionDef) -> bool:
    """Whether method ``func`` only raises ``NotImplementedError`` (after its docstring): a
    base class's placeholder, which the subclass whose instance it is overrides."""
    body = func.body.body if type(func.body) is cst.IndentedBlock else func.body.body
    statements = [s for s in body if not (type(s) is cst.SimpleStatementLine and len(s.body) == 1
                                          and type(s.body[0]) is cst.Expr and type(s.body[0].value) in (cst.SimpleString, cst.ConcatenatedString))]
    if len(statements) != 1 or type(statements[0]) is not cst.SimpleStatementLine or len(statements[0].body) != 1:
        return False
    small = statements[0].body[0]
    if type(small) is not cst.Raise or small.exc is None:
        return False
    exc = small.exc.func if type(small.exc) is cst.Call else small.exc
    return type(exc) is cst.Name and exc.value == "NotImplementedError"


def _defined_once(module, func: cst.FunctionDef) -> bool:
    """Whether ``func`` is a statement of its module's top level and no other statement there
    binds its name (a second ``def``, one under an ``if``/``try``, an assignment, a ``global``).
    A module read as an outline (not parsed whole) is asked through its text
    (:func:`_defined_once_in_text`)."""
    name = func.name.value
    source = getattr(module, "source", None)
    if isinstance(source, str):
        return _defined_once_in_text(source, name)
    body = module.body
    if not any(st is func for st in body):
        return False
    for st in body:
        if st is not func:
            names, declared = bound_names(st)
            if name in names or name in declared:
                return False
    return True


def _defined_once_in_text(source: str, name: str) -> bool:
    """:func:`_defined_once` read from a module's text, over-approximating what binds the
    name: one ``def name`` in the whole text, at the start of a line, and no line that may bind
    it otherwise (``name =``, ``name:``, ``, name`` before ``=``, ``as name``, ``import name``,
    ``global ... name``)."""
    word = re.escape(name)
    defs = re.findall(rf"^[ \t]*(?:async[ \t]+)?def[ \t]+{word}\b", source, re.M)
    if len(defs) != 1 or not defs[0].startswith(("def", "async")):
        return False
    other = rf"^[ \t]*{word}[ \t]*[:=,]|,[ \t]*{word}[ \t]*[=,)]|\bas[ \t]+{word}\b|\bimport[ \t]+{word}\b|\b(?:global|nonlocal)[ \t][^\n]*\b{word}\b"
    return re.search(other, source, re.M) is None


def find_method(cls: ClassRef, name: str, _seen: frozenset = frozenset()) -> tuple[ClassRef, cst.FunctionDef] | None:
    """Method ``name`` of ``cls`` or of its bases in the project, in method-resolution order
    (depth first): ``(defining class, function)``."""
    info = cls.info
    if info is None or cls in _seen:
        return None
    if name in info.methods:
        return cls, info.methods[name]
    for base in cls.bases():
        found = find_method(base, name, _seen | {cls})
        if found:
            return found
    return None


def _super_call(func: cst.BaseExpression) -> bool:
    """Whether a call's ``func`` is ``super().m`` (or ``super(...).m``)."""
    return (type(func) is cst.Attribute and type(func.value) is cst.Call
            and dotted_name(func.value.func) == "super")


def super_library_writes(cls: ClassRef, method: str, instances: list[ClassRef]
                         ) -> tuple[tuple[str, ...], list[tuple[cst.FunctionDef, ModuleIndex]]] | None:
    """What ``super().<method>(...)`` in a method of ``cls`` may write of the instance, where it
    runs a library class's method whose entry says which attributes it writes and which methods
    of the instance it calls (:attr:`~loopcheck.engine.knowledge.Summary.writes`,
    :attr:`~loopcheck.engine.knowledge.Summary.self_calls`: ``torch.nn.Module.__init__`` calls
    none, ``LRScheduler.__init__`` calls ``step()`` and ``get_lr()``): ``(attribute names,
    overrides)``, the overrides being the methods of those names that the project's classes of
    ``instances`` (the classes the instance may be of) define, through their bases in the
    project, as ``(method, its module)``: they run instead of the library's, and their code
    says what else may be written. ``None`` otherwise. Only where that library method is the
    one that runs: ``cls`` has no base in the project, its first base is the library class the
    knowledge describes and that class's entry lists ``method`` itself (a library subclass's
    constructor, ``StepLR.__init__``, does more than its base's), and no class of the project
    that one of ``instances`` derives from defines ``method`` unless it derives from ``cls``
    (one that may follow ``cls`` in the method-resolution order would run instead). Every
    class of the project the instance's class derives from must say what its methods are: its
    bases are classes of the project, ``object``, or the library class described or one of
    that entry's bases (an unknown base, a mixin of a module not read, may come before the
    library class in the method-resolution order), and its body binds ``method`` and the
    names of ``self_calls`` by ``def`` statements only (``get_lr = _half_lr`` runs code no
    method of the class shows)."""
    info = cls.info
    if info is None or not info.bases or cls.bases():
        return None
    base = library_base(cls)
    if base is None or base != info.bases[0]:
        return None
    kb = knowledge()
    entry = kb.cls(base)
    summary = entry.methods.get(method) if entry is not None else None
    if summary is None or summary.writes is None:
        return None
    names = {method, *summary.self_calls}
    overrides: list[tuple[cst.FunctionDef, ModuleIndex]] = []
    for instance in instances:
        ancestry = _project_ancestry(instance)
        if any(not _known_bases(other, entry.name) or _bound_otherwise(other, names) for other in ancestry):
            return None
        for other in ancestry:
            if (other != cls and other.info is not None and method in other.info.methods
                    and cls not in _project_ancestry(other)):
                return None
        for name in summary.self_calls:
            found = find_method(instance, name)
            if found is not None and all(found[1] is not f for f, _ in overrides):
                overrides.append((found[1], found[0].module))
    return summary.writes, overrides


def _known_bases(cls: ClassRef, library: str) -> bool:
    """Whether each base of project class ``cls`` is a class of the project the knowledge does
    not describe, ``object``, or library class ``library`` (an entry's name) or one of its bases
    per the knowledge (:meth:`~loopcheck.engine.knowledge.Knowledge.is_subclass`); a base that
    is no dotted name (``class A(make_base()):``) is not."""
    info = cls.info
    if info is None or len(info.bases) != len(info.node.bases):
        return False
    kb = knowledge()
    for base in info.bases:
        ref = cls.module.class_ref(base) or cls.module.class_ref(base, qualified=True)
        if ref is not None and not ref.described:
            continue
        qualname = ref.qualname if ref is not None else base
        entry = kb.cls(qualname)
        if qualname != "object" and not kb.is_subclass(library, entry.name if entry is not None else qualname):
            return False
    return True


def _bound_otherwise(cls: ClassRef, names: set[str]) -> bool:
    """Whether the body of project class ``cls`` binds one of ``names`` other than by a ``def``
    statement of its own (``get_lr = _half_lr``, ``step = staticmethod(...)``, a ``def`` under
    an ``if``, an import): the method of that name is then code its methods do not show."""
    node = cls.info.node
    sites = _sites(node.body)
    own = {id(st) for st in getattr(node.body, "body", ()) if type(st) is cst.FunctionDef}
    return any(id(site) not in own for name in names for site in sites.get(name, ()))


def _locals_not_defs(func: cst.FunctionDef) -> frozenset[str]:
    """The names function ``func`` binds in its own scope other than by a ``def`` statement:
    its parameters, what its statements assign (:func:`_sites`: ``for`` and ``with``
    targets, ``match`` captures, ``del``...) and walrus targets in its body (those of nested
    functions too: more names, not fewer). Imports are left out (the module's imports are read
    wherever they are: :func:`index_module`), and so are ``global``/``nonlocal`` declarations
    (a name bound elsewhere)."""
    sites = _sites(func.body)
    out = set(all_param_names(func))
    for name, nodes in sites.items():
        if any(type(n) not in (cst.FunctionDef, cst.Import, cst.ImportFrom, cst.Global, cst.Nonlocal) for n in nodes):
            out.add(name)
    for n in walk(func.body):
        if type(n) is cst.NamedExpr:
            out.update(target_names(n.target))
    return frozenset(out)


def _project_ancestry(cls: ClassRef) -> list[ClassRef]:
    """``cls`` and the classes of the project it derives from, through its bases in the project."""
    out: list[ClassRef] = []
    todo = [cls]
    while todo:
        c = todo.pop()
        if c in out:
            continue
        out.append(c)
        todo.extend(c.bases())
    return out


def library_base(cls: ClassRef, _seen: frozenset = frozenset()) -> str | None:
    """The qualified name of the first library class the knowledge describes among the bases of
    project class ``cls``, through its bases in the project, depth first (method-resolution
    order): ``"lib.Engine"`` for ``class Runner(Engine)`` with ``from lib import Engine``. A
    method of ``cls`` that no class of the project defines comes from it. ``None`` when no such
    base is known."""
    info = cls.info
    if info is None or cls in _seen:
        return None
    kb = knowledge()
    for base in info.bases:
        ref = cls.module.class_ref(base) or cls.module.class_ref(base, qualified=True)
        if ref is None:
            if kb.cls(base) is not None:
                return base
            continue
        if ref.described:
            return ref.qualname
        found = library_base(ref, _seen | {cls})
        if found is not None:
            return found
    return None


#: The forms :func:`bound_names` counts as binding a name (imports, ``del``, walrus and
#: type aliases aside; ``global``/``nonlocal`` are its declared names).
_BOUND_FORMS = frozenset({B.ASSIGN, B.ANNOTATED, B.AUGMENTED, B.FOR, B.WITH, B.EXCEPT, B.DEF, B.CLASS, B.MATCH})
_DECLARATIONS = frozenset({B.GLOBAL, B.NONLOCAL})
#: The forms whose nodes :func:`_sites` records: those :func:`bound_names` counts, the
#: declarations (a binding elsewhere), imports and ``del``.
_SITE_FORMS = _BOUND_FORMS | _DECLARATIONS | {B.IMPORT, B.DEL}


def _statement_or_block_sites(body) -> tuple[B.Site, ...]:
    """The binding sites of a block (an ``IndentedBlock``, a ``SimpleStatementSuite``) or of
    one statement (:mod:`loopcheck.engine.bindings`)."""
    if isinstance(body, (cst.IndentedBlock, cst.SimpleStatementSuite)):
        return B.block_sites(body)
    return B.statement_sites(body)


#: The most elements of a display a ``for`` is built unrolled over (:meth:`UnitBuilder.unrolled_symbols`).
_MAX_UNROLLED = 8

#: Nodes whose presence in a ``for`` body keeps it a loop: they leave a pass early, or run
#: the body's code later, when the target names the last element only.
_NOT_UNROLLED = (cst.Break, cst.Continue, cst.Return, cst.Yield, cst.Await, cst.FunctionDef, cst.Lambda, cst.ClassDef)


def _is_plain_chain(expr: cst.BaseExpression) -> bool:
    """Whether ``expr`` is a name or an attribute chain of names (``model``, ``self.G``)."""
    while type(expr) is cst.Attribute:
        expr = expr.value
    return type(expr) is cst.Name


def bound_names(body: cst.CSTNode) -> tuple[set[str], set[str]]:
    """``(names bound, names declared global/nonlocal)`` by the statements of a function
    body or module statement, not entering nested functions or classes (whose names are
    their own). Only statements are visited: expressions bind nothing that outlives them
    (walrus targets aside, which are rare in training loops). Imports are not counted (the
    module's imports are read wherever they are: :func:`index_module`)."""
    names: set[str] = set()
    declared: set[str] = set()
    for s in _statement_or_block_sites(body):
        if s.form in _BOUND_FORMS:
            names.add(s.name)
        elif s.form in _DECLARATIONS:
            declared.add(s.name)
    return names, declared


#: The node that binds each name (:func:`_sites`): name -> the binding nodes, a body's in the
#: order of its statements.
Sites = dict[str, list[cst.CSTNode]]


def _sites(suite, sites: Sites | None = None) -> Sites:
    """The binding nodes of each name the statements of a block bind (the small statement,
    the ``for``, the ``with`` item, the handler, the ``def``/``class``, the ``match``
    pattern), and those of the statements that change a name without a value
    :func:`bound_names` counts: ``global``/``nonlocal`` declarations (a binding elsewhere),
    imports and ``del``; added to ``sites`` when given. ``suite``: a block or a statement
    node; a plain list of statements (a module's body) gives no sites."""
    sites = {} if sites is None else sites
    for s in _statement_or_block_sites(suite) if isinstance(suite, cst.CSTNode) else ():
        if s.form in _SITE_FORMS:
            nodes = sites.setdefault(s.name, [])
            if not nodes or nodes[-1] is not s.node:  # ``a, a = ...``: one site
                nodes.append(s.node)
    return sites


def is_generator(func: cst.FunctionDef) -> bool:
    """Whether ``func`` is a generator: a ``yield`` statement or ``x = yield ...`` in its body
    (not counting nested functions)."""
    for small in small_statements(func.body, nested=False):
        value = getattr(small, "value", None)
        if type(value) is cst.Yield:  # ``yield x``, ``y = yield x``
            return True
    return False


def _param_names(func: cst.FunctionDef) -> list[str]:
    p = func.params
    return [x.name.value for x in (*p.posonly_params, *p.params)]


def all_param_names(func: cst.FunctionDef) -> list[str]:
    """The names of every parameter of ``func``, in order (positional-only, ordinary,
    keyword-only, then ``*args`` and ``**kwargs``)."""
    p = func.params
    names = [x.name.value for x in (*p.posonly_params, *p.params, *p.kwonly_params)]
    for star in (p.star_arg, p.star_kwarg):
        if type(star) is cst.Param:
            names.append(star.name.value)
    return names


def undefined_reads(index) -> Resolution:
    """The reads of module ``index`` that no binding resolves
    (:func:`~loopcheck.engine.undefined.resolve`), computed once per index. Decided only for
    a program (:func:`~loopcheck.engine.undefined.is_program`: not a snippet, whose free
    names come from its reader; or a script without a main block that builds its data loader
    from what the module binds itself, :func:`~loopcheck.engine.undefined.builds_own_loader`),
    parsed whole (not read statement by statement, whose nodes are parts of fragments), and
    never for a notebook (:attr:`ModuleIndex.notebook`); a star import of a module of the
    project whose names are all known binds those names
    (:meth:`~loopcheck.engine.project.Project.star_names`)."""
    found = index.cache.get("undefined")
    if found is None:
        if type(index) is not ModuleIndex or index.notebook or index.tree is None or not has_import(index.tree):
            found = NOT_DECIDED
        else:
            found = resolve(index.tree, lambda stars: _star_names(index, stars))
            if found.undefined and not is_program(index.tree) and not builds_own_loader(
                    index.tree, found, index.imports.qualify):
                found = NOT_DECIDED
        index.cache["undefined"] = found
    return found


def _star_names(index: ModuleIndex, stars: int) -> frozenset[str] | None:
    """Every name the ``stars`` star imports of module ``index`` may bind, when each imports
    a module of its project whose names are all known; else ``None``."""
    project, imports = index.project, index.imports
    if project is None or index.path is None or len(imports.stars) != stars:
        return None
    names: set[str] = set()
    for star in imports.stars:
        found = project.star_names(star, index.path)
        if found is None:
            return None
        names |= found
    return frozenset(names)


def index_module(
    module: cst.Module, package: str | None = None, name: str = "", path=None, project=None,
) -> ModuleIndex:
    """Collect imports (anywhere in the file), top-level functions, classes and globals.

    Args:
        module: the parsed module.
        package: its package (for relative imports), ``None`` when unknown.
        name, path, project: its dotted name, file, and the project to resolve imports in.
    """
    imports = ImportMap(package)
    for node in small_statements(module):
        if type(node) is cst.Import or type(node) is cst.ImportFrom:
            imports.add(node)
    if project is not None and path is not None and imports.stars:
        project.bind_stars(imports, path)  # ``from utils import *`` binds what utils imported
    functions: dict[str, cst.FunctionDef] = {}
    classes: dict[str, ClassInfo] = {}
    method_class: dict[cst.FunctionDef, str] = {}
    global_names: set[str] = set()
    for stmt in module.body:
        if type(stmt) is cst.FunctionDef:
            functions[stmt.name.value] = stmt
        elif type(stmt) is cst.ClassDef:
            methods = {
                s.name.value: s for s in stmt.body.body if type(s) is cst.FunctionDef
            }
            bases = tuple(
                q for q in (imports.qualify(dotted_name(a.value)) for a in stmt.bases) if q
            )
            classes[stmt.name.value] = ClassInfo(stmt, methods, bases)
            for m in methods.values():
                method_class[m] = stmt.name.value
        global_names |= bound_names(stmt)[0] if not isinstance(stmt, (cst.FunctionDef, cst.ClassDef)) else {stmt.name.value}
    return ModuleIndex(imports, functions, classes, global_names, list(module.body), method_class, name, path, project,
                       module)


@dataclass
class Callee:
    """A function of the project a call runs: the function, the module it is defined in, the
    symbol and instance class ``self`` is bound to (methods and constructors), the class that
    defines it (for ``super()``), and the frame it was defined in (closures)."""

    func: cst.FunctionDef
    module: ModuleIndex
    self_sym: str | None = None
    cls: ClassRef | None = None
    def_class: ClassRef | None = None
    parent: "Frame | None" = None
    ctor: bool = False  # Trainer(...): the instance is the call's result


@dataclass
class Frame:
    """One activation of a function being built: how its names map to symbols."""

    fid: str
    subst: dict[str, str]
    locals: set[str]
    module: ModuleIndex
    self_class: ClassRef | None = None
    defs: Mapping[str, cst.FunctionDef] = field(default_factory=dict)  # the functions it defines
    parent: "Frame | None" = None
    return_targets: tuple[str | None, ...] = ()
    instances: dict[str, ClassRef] = field(default_factory=dict)  # symbol -> its class
    literal_params: set[str] = field(default_factory=set)  # unbound parameters with a numeric default
    constants: dict = field(default_factory=dict)  # parameter -> the constant it was given (phase="train")
    # parameter of ``constants`` -> the call whose literal argument gave it (``model.train(False)``
    # for ``mode`` in a model's own ``train``; the outermost, for a constant passed on by name)
    constant_calls: dict = field(default_factory=dict)
    # parameter -> the list or tuple display the call gave it, for a parameter the function
    # never re-binds (``fit([(x, y)])``): what a ``for`` over the parameter iterates
    displays: dict = field(default_factory=dict)
    # names an enclosing ``for`` over the builtin ``range``/``enumerate`` binds to an integer on
    # every pass (its body never re-binds them): :meth:`UnitBuilder.integral`
    counters: frozenset = frozenset()
    counter_loops: dict = field(default_factory=dict)  # each name of ``counters`` -> its ``cst.For``
    # each name of ``counters`` -> the integer it is bound to on the first pass of its loop
    # (:meth:`UnitBuilder.counter_start`), for those the code fixes
    counter_starts: dict = field(default_factory=dict)
    # each name of ``counters`` whose first value the code does not fix, but whose loop starts
    # at a local variable every binding of which is a plain ``start = <expression>``
    # (:meth:`UnitBuilder.counter_start_given`) -> ``(symbol of start, its integer literals)``
    counter_given: dict = field(default_factory=dict)
    # name -> the literal values an enclosing ``for name in [1, 0]:`` binds it to, one per pass
    # (its body never re-binds it), narrowed in the arms of the ``if``s it decides there:
    # :meth:`UnitBuilder.choice_split`
    choices: dict = field(default_factory=dict)
    forwarded: dict = field(default_factory=dict)  # *args / **kwargs parameter -> the caller's extra Args
    name: str | None = None  # the function's name (None: module level)
    node: cst.FunctionDef | None = None  # the function (None: module level)
    def_class: ClassRef | None = None  # the class defining the function (for super())
    self_sym: str | None = None
    # a ``@classmethod``'s first parameter -> the class Python binds it to (the class the call
    # goes through, or the instance's class), while the method never re-binds it: ``cls(...)``
    # constructs that class
    class_params: dict = field(default_factory=dict)
    resolved: dict = field(default_factory=dict)  # dotted name -> UnitBuilder.resolve's answer
    # parameter -> the caller's symbol it was given (a plain name), while the function has not
    # re-bound it on the way to the statement being built (see UnitBuilder.stmt)
    given: dict = field(default_factory=dict)
    # parameter -> the caller's symbol, for a parameter the function re-binds to a new object
    # by a statement of its body's top level (UnitBuilder._fresh_rebinds): until that
    # statement the name is the caller's object, after it the local symbol names the new one
    shadow: dict = field(default_factory=dict)
    fresh_at: dict = field(default_factory=dict)  # id(that statement) -> the parameter
    # parameter the function never re-binds -> ``(caller's frame, argument expression)`` the
    # inlined call gave it: what the parameter holds on every run, read where the caller
    # evaluated it (UnitBuilder.holds_object: ``if loader is None:`` for a loader built by
    # the caller)
    passed: dict = field(default_factory=dict)
    # the grad mode ``(grad, grad_inherited, grad_asked)`` of each ``return`` built so far,
    # as the caller sees it once the function has returned (UnitBuilder.grad_on_return)
    grad_exits: list = field(default_factory=list)
    # while a ``with`` block whose items set a grad mode is built: the context the outermost
    # such ``with`` of this function was entered in, the mode its exit restores
    grad_scope: "Context | None" = None
    grad_restored: bool = False  # a decorator sets the body's grad mode, and restores it on return
    end_ctx: "Context | None" = None  # the context after the last statement of a block built
    # the grad mode ``(grad, grad_inherited, grad_asked)`` after each grad set built so far in
    # this function, in order: a statement that sets it, a call that leaves it set, a compound
    # statement whose paths leave it changed (UnitBuilder.stmts); a ``with`` block that sets a
    # mode drops those of its body, which its exit undoes. A nested block that added none set
    # no mode; the ones it added are the modes a jump out of it (``break``, a ``raise`` into a
    # handler) may carry
    grad_log: list = field(default_factory=list)
    # whether a statement of the top level of the block built last sets the grad mode by a
    # library call with the mode as its argument (``torch.set_grad_enabled(True)``): the mode
    # at its end does not depend on the mode the block was entered in (UnitBuilder.stmts)
    end_fixed: bool = False




_SEQUENCES = (cst.Tuple, cst.List)
#: integer arithmetic :meth:`UnitBuilder.int_value` evaluates (a zero divisor is not evaluated)
_INT_OPS = {
    cst.Add: lambda a, b: a + b,
    cst.Subtract: lambda a, b: a - b,
    cst.Multiply: lambda a, b: a * b,
    cst.FloorDivide: lambda a, b: a // b,
    cst.Modulo: lambda a, b: a % b,
}
#: comparisons :meth:`UnitBuilder.decide` evaluates on integers
_COMPARE = {
    cst.Equal: lambda a, b: a == b,
    cst.NotEqual: lambda a, b: a != b,
    cst.LessThan: lambda a, b: a < b,
    cst.LessThanEqual: lambda a, b: a <= b,
    cst.GreaterThan: lambda a, b: a > b,
    cst.GreaterThanEqual: lambda a, b: a >= b,
}


@dataclass(eq=False)
class UnitRecord:
    """How one function's entry point was built, beyond its IR: what the build read and what it
    left in the builder's shared state, so that the next version of the same document can take
    the IR again when none of it changed (:class:`loopcheck.engine.reuse.UnitMemo`).

    Attributes:
        ir: the entry point's IR.
        reads: the functions of the checked module whose nodes the build resolved a call to
            (inlined, or asked whether they are generators, context managers, decorators).
        called: the functions it inlined (:attr:`UnitBuilder.called` grew by these).
        self_calls: the ``(method name, grad mode)`` of its ``self.<name>(...)`` calls.
        placed: ``id()`` of the nodes it mapped to the checked module (``node_module``).
        raws: the ``(call node, raw event)`` pairs it made, in order (``_raw_of``).
        start, events: the event count when it started, and how many events it added (the
            inlining cap, :data:`MAX_EVENTS_PER_UNIT`, counts over a whole check).
        lookups: the ``(qualified name, near)`` it asked the project for, each answered
            ``None`` (a library name, not a module of the project).
        reached, unreached: the statements it built, and those it left unbuilt after a
            statement that ends every path of their block (:attr:`UnitBuilder.reached`).
        misses: the symbols it looked up among closures returned by other calls, not found.
        reusable: ``False`` once the build depends on something the checks above cannot see
            again: another module of the project, a closure made by another entry point, or
            one it made itself for later ones.
    """

    ir: Seq | None = None
    reads: set = field(default_factory=set)
    called: list = field(default_factory=list)
    self_calls: list = field(default_factory=list)
    placed: list = field(default_factory=list)
    raws: list = field(default_factory=list)
    start: int = 0
    events: int = 0
    lookups: list = field(default_factory=list)
    misses: set = field(default_factory=set)
    reached: set = field(default_factory=set)
    unreached: set = field(default_factory=set)
    reusable: bool = True

    def release(self) -> None:
        """Break the reference cycles of a record no check will take again (a raw event and
        its typed events name each other, a call's sources name the call itself), so that
        reference counting frees its IR: the language server's template freezes what a check
        leaves alive (``gc.freeze``), and a frozen cycle is never collected."""
        if self.ir is not None:
            release((*walk_events(self.ir), *(raw for _call, raw in self.raws)))


class UnitBuilder:
    """Builds the IR of one entry point (see module docstring)."""

    def __init__(self, index: ModuleIndex) -> None:
        self.index = index
        self._ids = count(1)
        self._tag = 0  # the entry point being built: its frames are ``f<tag>_<n>``
        self.record: UnitRecord | None = None  # what the entry point being built reads and changes
        self._stack: list[cst.CSTNode] = []
        self.n_events = 0
        self._module_ctors = 0  # how many nn.Module constructors the call being built is inside
        self._with_splits = 0  # how many ``with A if c else B:`` built per arm enclose it
        # id of an inlined call's node -> the grad mode it leaves its caller in, when that
        # differs from the one it was called in (:meth:`grad_on_return`; read by grad_after)
        self._grad_left: dict[int, tuple[str, bool, bool]] = {}
        self._module_classes: dict[ClassRef, bool] = {}
        # the modules whose code the entry point runs so far (set again by :meth:`begin`)
        self._unit_modules: dict[int, ModuleIndex] = {id(index): index}
        self.called: set[cst.FunctionDef] = set()
        # method name → the grad modes of the ``self.<name>(...)`` calls seen (a subclass's
        # override that nothing here calls statically runs in those contexts)
        self.self_calls: dict[str, set[str]] = {}
        self._locals: dict[int, tuple[set[str], set[str]]] = {}
        # the calls in evaluation order and the dotted chains of each expression, and whether a
        # function is a generator, are kept in the index of the module (``ModuleIndex.cache``):
        # an inlined function is rebuilt at every call site, and from every file that calls it
        # symbols bound to a nested function returned by an inlined call (closures)
        self.func_values: dict[str, tuple[cst.FunctionDef, Frame]] = {}
        self._raw_of: dict[cst.Call, Call] = {}  # the latest raw event of each call node
        #: calls of project functions whose arguments cannot bind (:meth:`call_cannot_bind`)
        self.unbound_calls: set[cst.Call] = set()
        #: the statements of blocks built so far, and those a build left after a statement
        #: that ends every path of their block (a ``return``, a ``raise``, ``sys.exit()``, a
        #: call that cannot bind, a name nothing binds): :meth:`unreached_statements`
        self.reached: set[cst.CSTNode] = set()
        self.unreached: set[cst.CSTNode] = set()
        # symbol -> the class of the object its assignments built: a class of the project, or
        # the qualified name of a library class (``"torch.nn.CrossEntropyLoss"``); ``None``
        # once it is bound to anything else (:meth:`_note_value_class`)
        self._value_classes: dict[str, ClassRef | str | None] = {}
        # id(call node) -> the class of what an inlined call of a project function returned
        self._returned_classes: dict[int, ClassRef | str] = {}
        self.node_module: dict[int, ModuleIndex] = {}  # id(node) -> the module it is in
        self._splits: dict[int, ContextSplit | None] = {}
        self._bound_once: dict[int, dict] = {}  # id(function) -> single_bindings of its body (_bound_once_in)
        self._all_bindings: dict[int, dict] = {}  # id(function) -> block_bindings of its body (bindings_of)
        self._held: dict = {}  # (module, class, attribute) -> _held_class's answer
        # the facts of attribute values (loopcheck.engine.attr_facts): id(function) -> what the
        # code a call of it runs may assign (attr_writes); the attribute names assigned through
        # a target that names no symbol (``xs[0].mode = ...``), which no event shows; the
        # ``if``s of the entry point being built that test one attribute
        self._attr_writes: dict = {}  # (and per function, what it does itself: _own_writes)
        self.blind_attrs: set[str] = set()
        self._fact_ifs: list[If] = []
        # the ``if``s of the entry point whose arms say what attributes hold (If.learns) beyond
        # the truth of one attribute alone: a raising guard among them may decide a ``_fact_ifs``
        self._learning_ifs: list[If] = []
        self._literal_attrs: set[str] = set()  # the attribute symbols the entry point assigns a literal
        # the ``if``s of the entry point on the truth of an attribute of their method's own
        # instance, with their frame (If.constant: _constant_truths)
        self._own_truths: list[tuple[If, Frame]] = []
        # the calls of the entry point that stay calls, with their frame and the function of the
        # project each runs (if any): their ``clobbers`` are worked out at its end, when it has
        # a fact to follow (:meth:`_settle_facts`)
        self._pending_calls: list[tuple[Call, Frame, Callee | None]] = []
        self._not_inlined: Callee | None = None  # the function of the project try_inline did not inline

    # -- symbols -------------------------------------------------------------------------
    def resolve(self, frame: Frame, dotted: str | None) -> tuple[str | None, bool]:
        """Map a dotted name in ``frame`` to ``(symbol, qualified)``; qualified names
        come from imports (``torch.optim.Adam``)."""
        if dotted is None:
            return None, False
        # a frame's names, parents and module never change once it is made: one answer per name
        # (but for Frame.shadow, whose end drops the answers it gave)
        known = frame.resolved.get(dotted)
        if known is None:
            known = frame.resolved[dotted] = self._resolve(frame, dotted)
        return known

    def _resolve(self, frame: Frame, dotted: str) -> tuple[str | None, bool]:
        head, dot, rest = dotted.partition(".")
        f: Frame | None = frame
        while f is not None:
            if head in f.shadow:
                return f.shadow[head] + dot + rest, False
            if head in f.subst:
                return f.subst[head] + dot + rest, False
            if head in f.locals:
                base = f"{f.fid}:{head}" if f.fid else head
                return base + dot + rest, False
            f = f.parent
        m = frame.module
        if head in m.imports.aliases and head not in m.globals:
            return m.imports.qualify(dotted), True
        if head in BUILTINS and head not in m.globals:
            return dotted, True
        if m is not self.index and m.name:
            return f"{m.name}::{dotted}", False  # a global of another module
        return dotted, False

    def operands(self, frame: Frame, expr: cst.BaseExpression) -> tuple[str, ...]:
        """The symbols an expression computes its value from, through arithmetic, indexing,
        methods called on them and calls that derive their result from their arguments
        (``(loss / n)`` → ``loss``, ``n``; ``losses[-1]``, ``sum(losses)`` → ``losses``;
        ``loss.mean()`` → ``loss``); not through other calls (``model(x)`` is a new value)."""
        out: list[str] = []
        stack = [expr]
        kb = knowledge()
        while stack:
            e = stack.pop()
            t = type(e)
            if t is cst.Name or t is cst.Attribute:
                dotted = dotted_name(e)
                if dotted is None:
                    stack.append(e.value)
                    continue
                sym, q = self.resolve(frame, dotted)
                if sym and not q:
                    out.append(sym)
            elif t is cst.BinaryOperation:
                stack += [e.right, e.left]
            elif t is cst.UnaryOperation:
                stack.append(e.expression)
            elif t is cst.Subscript:
                stack.append(e.value)
            elif t is cst.Call:
                if type(e.func) is cst.Attribute and dotted_name(e.func) is None:
                    stack.append(e.func.value)  # (a + b).mean(), losses[0].sum()
                    continue
                q, qualified = self.resolve(frame, dotted_name(e.func))
                summary = kb.function(q) if qualified else None
                if summary is not None and summary.returns is not None and summary.returns.value == "derived":
                    stack += [a.value for a in reversed(e.args) if a.keyword is None]
                elif type(e.func) is cst.Attribute and not qualified:
                    stack.append(e.func.value)  # loss.mean(), outputs.loss.float()
            elif t is cst.List or t is cst.Tuple:
                stack += [el.value for el in reversed(e.elements)]
        return tuple(dict.fromkeys(out))

    def sources(self, frame: Frame, expr: cst.BaseExpression) -> Sources:
        """What ``expr`` computes its value from, leaving out the parts it detaches
        (``G(z).detach()``, ``loss.item()``, ``p.data``): the symbols read and the calls made.

        The walk of the expression (:func:`_sources_plan`) is kept with its module; here only
        the names are resolved in ``frame`` (an inlined function's expressions were walked again
        at each call site, and from each file that calls it)."""
        cache = frame.module.cache.setdefault("sources", {})
        plan = cache.get(expr, NO_VALUE)
        if plan is NO_VALUE:
            plan = cache[expr] = _sources_plan(expr, knowledge())
        names: set[str] = set()
        calls: list[Call] = []
        if plan is None:
            return Sources(frozenset(), ())
        kb = knowledge()
        resolve = self.resolve
        stack: list = [(plan, False)]
        keyed: set[str] = set()
        plain: set[str] = set()
        members: set[tuple[str, str]] = set()
        while stack:
            p, under_key = stack.pop()
            t = type(p)
            if t is str:
                sym, q = resolve(frame, p)
                if sym and not q:
                    names.add(sym)
                    (keyed if under_key else plain).add(sym)
            elif t is _Keyed:
                if type(p.plan) is str and p.key is not None:  # out["loss"]: the member "loss" of out
                    sym, q = resolve(frame, p.plan)
                    if sym and not q:
                        members.add((sym, p.key))
                stack.append((p.plan, True))
            elif t is tuple:
                stack.extend((x, under_key) for x in p)
            else:
                fname, fq = resolve(frame, p.func)
                number = kb.function(fname) if fq else None
                if number is not None and number.returns is not None and number.returns.value == "number":
                    continue  # float(loss), int(n): a number
                if not _new_leaf(number):
                    stack.extend((x, under_key) for x in p.args)
                if p.detaches:
                    continue  # x.detach(), x.item(): nothing of x flows on
                raw = self._raw_of.get(p.node)
                if raw is not None:
                    calls.append(raw)
                if p.callee is not None:
                    stack.append((p.callee, under_key))
        keyed -= plain
        return Sources(frozenset(names), tuple(calls), frozenset(keyed), frozenset(m for m in members if m[0] in keyed))

    def held(self, frame: Frame, expr: cst.BaseExpression) -> frozenset[str] | None:
        """The symbols whose objects the value of ``expr`` may be or hold (what an optimizer
        given it may train), when they differ from its mentions:

        - a mention read only in the arguments of a call the library knowledge says builds a
          new tensor is left out (``torch.randn(x.shape)``, ``torch.zeros_like(p)``, and
          ``torch.cat((buf, z))``, which copies them: the tensor shares no memory with them,
          :attr:`~loopcheck.engine.knowledge.Returns.new_memory`), the argument its ``shares``
          entry names excepted (``torch.as_tensor(t)`` may be ``t``, ``torch.cat(xs, out=buf)`` is ``buf``);
        - a chain the expression calls is given as the call's result, ``sym()``
          (``g.style()`` for ``g.style(z)``): what it holds is decided with the roles
          (:meth:`loopcheck.engine.roles._Inference.param_models`: the output of a forward of
          a model holds none of the model's parameters; ``model.parameters()`` holds them).

        ``None`` when the expression holds no such call."""
        if type(expr) in _NO_CALL or (type(expr) is cst.Attribute and dotted_name(expr) is not None):
            return None  # (most values: a name or a literal, no call in them)
        kb = knowledge()
        skipped: list[str] = []
        called: Counter[str] = Counter()
        stack: list[cst.CSTNode] = [expr]
        while stack:
            n = stack.pop()
            t = type(n)
            if t is cst.Lambda:
                continue
            if t is cst.Call:
                callee = dotted_name(n.func)
                q, qualified = self.resolve(frame, callee)
                summary = kb.function(q) if qualified else None
                r = summary.returns if summary is not None else None
                if r is not None and r.new_memory:
                    kept = _arg_node(n, r.get("shares"))
                    for a in n.args:
                        if a is kept:
                            stack.append(a.value)
                        else:
                            skipped.extend(dotted_chains(a.value))
                    continue
                if callee is not None:
                    called[callee] += 1
            stack.extend(children(n))
        if not skipped and not called:
            return None
        left = Counter(dotted_chains(expr))
        left.subtract(skipped)
        out = set()
        for chain, n in left.items():
            if n > 0 and chain not in ("True", "False", "None"):
                sym, qualified = self.resolve(frame, chain)
                if sym and not qualified:
                    k = min(n, called[chain])
                    if k:
                        out.add(sym + "()")
                    if n > k:
                        out.add(sym)
        return frozenset(out)

    def mentions(self, frame: Frame, expr: cst.CSTNode) -> frozenset[str]:
        out = set()
        cache = frame.module.cache.setdefault("chains", {})  # per module: shared by every check
        chains = cache.get(expr)
        if chains is None:
            chains = cache[expr] = dotted_chains(expr)
        for chain in chains:
            if chain in ("True", "False", "None"):
                continue
            sym, qualified = self.resolve(frame, chain)
            if sym and not qualified:
                out.add(sym)
        return frozenset(out)

    def _target_sym(self, frame: Frame, target: cst.BaseExpression) -> str | None:
        sym, qualified = self.resolve(frame, dotted_name(target))
        return None if qualified else sym

    def _target_syms(self, frame: Frame, target: cst.BaseExpression) -> tuple[str | None, ...]:
        """The symbols an assignment target binds: one per element of a tuple target
        (``None`` for nested tuples, subscripts and starred elements)."""
        if type(target) in _SEQUENCES:  # (LibCST's ABCs make isinstance slow; its node classes are final)
            return tuple(
                None if type(el.value) in _SEQUENCES else self._target_sym(frame, el.value)
                for el in target.elements
            )
        return (self._target_sym(frame, target),)

    # -- expressions ---------------------------------------------------------------------
    def expr_events(
        self, frame: Frame, expr: cst.CSTNode | None, ctx: Context, out: list[Node],
        targets: tuple[str | None, ...] = (),
    ) -> dict[cst.Call, Call]:
        """Append the call events of ``expr`` to ``out``; ``targets`` go to its outermost call."""
        if expr is None:
            return {}
        made: dict[cst.Call, Call] = {}
        cache = frame.module.cache.setdefault("calls", {})  # per module: shared by every check
        items = cache.get(expr)
        if items is None:
            items = cache[expr] = evaluation_order(expr)
        self._emit(frame, items, ctx, out, made, targets, expr)
        return made

    def _emit(self, frame: Frame, items: list, ctx: Context, out: list[Node], made: dict, targets, expr) -> None:
        for item in items:
            if isinstance(item, Comprehension):  # [model(x) for x in loader]: a loop
                first = item.node.for_in
                info = self.loop_info(frame, item.node, first.target, first.iter)
                comp = first.inner_for_in
                while comp is not None:
                    info.targets = tuple(sorted({*info.targets, *target_names(comp.target)}))
                    comp = comp.inner_for_in
                body = Seq()
                self._emit(frame, item.body, replace(ctx, loops=ctx.loops + (info,), conds=()), body.items, made, (), expr)
                out.append(Loop(info, body, Seq()))
                continue
            if type(item) is Branch:
                self._branch(frame, item, ctx, out, made, targets if item.node is expr else ())
                continue
            tgt = targets if item is expr else ()
            node = self.make_call(frame, item, ctx, made, tgt)
            if node is not None:
                out.append(node)

    def _branch(self, frame: Frame, item: "Branch", ctx: Context, out: list[Node], made: dict, targets) -> None:
        """The calls of an expression that run on a condition (:class:`Branch`) as an ``If`` of
        the IR, its test that of the expression, so that a later ``if`` on the same test is
        taken together with it (``net.train() if is_train else net.eval()`` ... ``if is_train:
        optimizer.step()``); only the arm a constant parameter decides, as :meth:`if_stmt`.
        ``targets``: where the expression's value goes (to the call an arm is)."""
        decided = self.decide(frame, item.test)
        if decided is not None:
            arm, value = (item.body, item.body_value) if decided else (item.orelse, item.orelse_value)
            self._emit(frame, arm, ctx, out, made, targets, value)
            return
        inner = replace(ctx, conds=ctx.conds + (item.node,))
        body, orelse = Seq(), Seq()
        self._emit(frame, item.body, inner, body.items, made, targets, item.body_value)
        self._emit(frame, item.orelse, inner, orelse.items, made, targets, item.orelse_value)
        self._place(item.node, frame.module)
        out.append(If(item.node, body, orelse, self.absence(frame, item.test), item.test))

    def make_call(
        self, frame: Frame, call: cst.Call, ctx: Context, made: dict[cst.Call, Call],
        targets: tuple[str | None, ...],
    ) -> Node | None:
        inner = None
        operands: tuple[str, ...] = ()
        func_expr = call.func
        if type(func_expr) is cst.Attribute and type(func_expr.value) is cst.Call:
            inner = made.get(func_expr.value)
            func, qualified = "." + func_expr.attr.value, False
        elif type(func_expr) is cst.Attribute and dotted_name(func_expr) is None:
            # a method on an expression: (loss / n).backward(), losses[-1].backward()
            func, qualified = "." + func_expr.attr.value, False
            operands = self.operands(frame, func_expr.value)
        else:
            func, qualified = self.resolve(frame, dotted_name(func_expr))
        args = []
        for a in call.args:
            if a.star and type(a.value) is cst.Name and a.value.value in frame.forwarded:
                args.extend(frame.forwarded[a.value.value])  # f(*args, **kwargs) passes the caller's on
                continue
            sym, q = self.resolve(frame, dotted_name(a.value))
            args.append(
                Arg(
                    a.keyword.value if a.keyword else None,
                    a.value,
                    None if q or a.star else sym,
                    self.mentions(frame, a.value),
                    _is_literal(a.value, frame.literal_params),
                    made.get(a.value) if type(a.value) is cst.Call else None,
                    # (a library's construction argument: Accelerator(gradient_accumulation_steps=n))
                    self.run_constant(frame, a.value) if qualified and not a.star else None,
                    _flag(frame, a),
                    _flag_call(frame, a),
                    # (what the result of a call with targets holds: roles' definitions)
                    held=self.held(frame, a.value) if targets and not a.star else None,
                )
            )
        if func and func.rpartition(".")[2] in knowledge().methods_with("each_module"):
            for arg in args:  # model.apply(fn): the function it runs on each module
                found = self._function_arg(frame, arg.node)
                if found is not None:
                    arg.function, arg.function_bound = found
        raw = Call(call, func, args, ctx, targets, inner, qualified, operands=operands)
        made[call] = raw
        self._raw_of[call] = raw
        if self.record is not None:
            self.record.raws.append((call, raw))
        self._place(call, frame.module)
        if targets:
            raw.sources = self.sources(frame, call)
            local = dotted_name(func_expr)
            if local is not None and func is not None:
                raw.cls = frame.module.class_ref(local) if not qualified else frame.module.class_ref(func, True)
                if raw.cls is None and not qualified:
                    raw.cls = _class_param(frame, local)  # cls(...) in a classmethod
                if raw.cls is None and not qualified:
                    raw.cls = _star_class(frame, local)  # from .ema import *; WeightEMA(...)
        self.n_events += 1
        self._not_inlined = None
        inlined = self.try_inline(frame, raw, ctx)
        if inlined is None:
            # what the call may change, for the facts of attribute values (an inlined call's
            # body is in the IR: it changes what its events change)
            self._pending_calls.append((raw, frame, self._not_inlined))  # (:meth:`_settle_facts`)
            return raw
        raw.inlined = True  # kept for the roles (Trainer(...), scheduler.step() of a local class)
        raw.clobbers = frozenset()
        if type(inlined) is Inline:
            raw.new = inlined.new  # (the assignment of the instance to that variable: assign_event)
        return Seq([raw, inlined])

    # -- what a call may change, for the facts of attribute values ---------------------------
    def _settle_facts(self) -> None:
        """At the end of an entry point: drop :attr:`If.fact` where the attribute is assigned
        where no event shows it (:attr:`blind_attrs`), and, when an ``if`` still tests an
        attribute that the entry point assigns a literal, give each call that stays a call its
        :attr:`Call.clobbers` (the dataflow follows facts only then: the work is not done for
        the others)."""
        live = False
        truths = 0  # the ``if``s on the truth of one attribute (a raising guard's truth may decide them)
        guard = False
        for node in self._fact_ifs:
            if node.fact[1].rpartition(".")[2] in self.blind_attrs:
                node.fact = None
            elif node.fact[0] in self._literal_attrs:
                live = True
            elif truth_test(node.test) is not None:
                truths += 1
                guard = guard or _ends_by_jump(node.body) or _ends_by_jump(node.orelse)
        live = live or guard and truths > 1 or self._learned_guard()
        live = self._constant_truths() or live
        if live:
            for raw, frame, callee in self._pending_calls:
                raw.clobbers = self.attr_writes(callee) if callee is not None else self._call_clobbers(frame, raw)
        self._fact_ifs, self._literal_attrs, self._pending_calls, self._own_truths = [], set(), [], []
        self._learning_ifs = []

    def _learned_guard(self) -> bool:
        """Whether an ``if`` of the entry point with :attr:`If.learns` (not the truth of one
        attribute alone) ends one arm by raising and says, in its other arm, something of an
        attribute that another ``if`` tests (``if args.data == "x" and args.head == "y": ...
        else: raise NotImplementedError`` before ``if args.head == "z":``): the dataflow may
        follow that fact (:func:`~loopcheck.engine.dataflow.fact_table`)."""
        for node in self._learning_ifs:
            raises = [arm for arm, seq in ((True, node.body), (False, node.orelse)) if _ends_by_raise(seq)]
            if len(raises) != 1:
                continue
            said = {sym for arm, sym, *_ in node.learns if arm is not raises[0]}
            if any(other is not node and other.fact is not None and other.fact[0] in said for other in self._fact_ifs):
                return True
        return False

    def _constant_truths(self) -> bool:
        """Mark :attr:`If.constant` the ``if``s of the entry point on the truth of an attribute of
        their method's own instance (``if not self.logits:``) that at least two of them test and
        that only ``__init__`` assigns (:meth:`init_only`); whether any was marked (the calls
        that stay calls then need their :attr:`Call.clobbers`: what may change it on the way)."""
        by_key: dict[str, list] = {}
        for node, frame in self._own_truths:
            if node.fact is not None:  # (not dropped for a write no event shows)
                by_key.setdefault(node.fact[0], []).append((node, frame))
        marked = False
        for key, found in by_key.items():
            frame = found[0][1]
            if len(found) < 2 or not self.init_only(frame, key.rpartition(".")[2]):
                continue
            immutable = self.init_values_immutable(frame, key.rpartition(".")[2])
            for node, _ in found:
                node.constant = True
                node.immutable = immutable
            marked = True
        return marked

    def init_values_immutable(self, frame: Frame, attr: str) -> bool:
        """Whether every value the ``__init__`` of a class that :meth:`init_only` read gives
        attribute ``attr`` (those of the instance's class and bases, and of the other classes of
        their modules that assign it) is a literal of an immutable type
        (:func:`immutable_literal`): its truth then cannot change through another name of the
        object. ``False`` for any other value (a list display, a parameter)."""
        classes = _readable_ancestry(frame.self_class) if frame.self_class is not None else None
        if not classes:
            return False
        for m in dict.fromkeys([self.index, *(c.module for c in classes)]):
            for cls in (_init_only_writes(m.tree, attr) or ()) if m.tree is not None else ():
                values = _attribute_assignments(cls, attr)
                if not all(value is not None and immutable_literal(value) for value in values):
                    return False
        return True

    def init_only(self, frame: Frame, attr: str) -> bool:
        """Whether attribute ``attr`` of the frame's own instance holds, once constructed, the
        value ``__init__`` gave it, whatever the program runs: the code of the instance's class
        and of its bases in the project assigns it, only ever in an ``__init__`` and through that
        method's own ``self`` (:func:`_init_only_writes`), and no code of the checked module or
        of those classes' modules assigns an attribute of that name otherwise (another method,
        a subclass's method, ``obj.attr = ...`` from outside); none of that code writes
        attributes it does not name (``setattr``, ``vars``, ``__dict__``), and none of those
        classes binds the name in its body (a method, a ``property``, a class attribute). Not
        the mode attribute (``training``), which ``train()``/``eval()`` of ``torch.nn.Module``
        set. A subclass in another module, or code outside these modules, may still assign it:
        the same bet as :meth:`_held_class`. The build then depends on other code than the
        entry point's own (:attr:`UnitRecord.reusable`)."""
        cls, own = frame.self_class, frame.self_sym
        if cls is None or own is None or attr == MODE_ATTRIBUTE:
            return False
        if self.record is not None:
            self.record.reusable = False  # (the answer reads the whole of these modules)
        key = ("init only", id(cls.module), cls.name, attr)
        if key in self._held:
            return self._held[key]
        self._held[key] = False
        classes = _readable_ancestry(cls)
        if classes is None or any(_binds_in_body(c.info.node, attr) for c in classes):
            return False
        own_code = False
        for m in dict.fromkeys([self.index, *(c.module for c in classes)]):
            if m.tree is None or _writes_unnamed(m.tree):
                return False
            found = _init_only_writes(m.tree, attr)
            if found is None:
                return False
            own_code = own_code or any(found_in is c.info.node for c in classes for found_in in found)
        self._held[key] = own_code
        return own_code

    def _call_clobbers(self, frame: Frame, raw: Call) -> frozenset:
        """:attr:`Call.clobbers` of a call that runs no function of the project the builder
        found: the objects it receives (its arguments, the receiver of a method, what a call
        on a call's result received), and the attributes the project's code it may run could
        assign: the methods of that name of the module's classes (for an object's own call,
        ``forward`` and ``__call__``); a callable in a plain variable, any attribute the
        module assigns; a callable nobody can name (``getattr(m, name)(...)``), anything."""
        out: set[str] = set()
        own = self._super_library_writes(frame, raw)
        for a in raw.args:
            out.update(received(sym) for sym in a.mentions)
            if a.sym is not None:
                out.add(received(a.sym))
            if type(a.node) is cst.Lambda and any(type(n) is cst.Call for n in walk(a.node.body)):
                return frozenset((ALL,))
            passed = self._passed_function(frame, a.node)  # a function of the project as a callback
            if passed is not None:
                out |= self.attr_writes(passed)
        if own is not None:  # super().__init__() of a library base that writes only its own attributes
            return frozenset(out | own)
        func = raw.func
        if func is None:
            return frozenset((ALL,))
        if func[0] == ".":  # a method of an expression's value
            out.update(raw.operands)
            if raw.inner is not None:
                out |= raw.inner.clobbers
            out |= self._method_writes(frame, func[1:])
        elif not raw.qualified:
            obj, _, method = func.rpartition(".")
            if not obj:  # a callable in a variable
                out.add(func)
                out |= self._module_writes(frame)
            else:
                cls = frame.instances.get(obj) or (frame.self_class if obj == frame.self_sym else None)
                if cls is None:
                    cls = self._held_class(frame, obj)  # ``self.state.model(x)``: ``self.state`` is a TrainState
                if cls is not None and not cls.described and find_method(cls, method) is None:
                    out.add(func)  # ``self.actor(x)``: the object in the attribute is called
                    out |= self._method_writes(frame, "forward") | self._method_writes(frame, "__call__")
                else:
                    out.add(received(obj))
                    out |= self._method_writes(frame, method)
        return frozenset((ALL,)) if ALL in out else frozenset(out)

    def _super_library_writes(self, frame: Frame, raw: Call) -> frozenset | None:
        """What ``super().m(...)`` may change of the instance where it runs a library class's
        method that the knowledge says writes only the attributes it lists and calls only the
        methods of the instance it lists (:func:`super_library_writes`): those attributes of the
        method's instance (by name, and the objects they hold), and what the overrides of those
        methods in the project may assign (:meth:`attr_writes`); else ``None``."""
        func = raw.node.func
        cls, own = frame.def_class, frame.self_sym
        if cls is None or own is None or not _super_call(func):
            return None
        found = super_library_writes(cls, func.attr.value, [frame.self_class or cls])
        if found is None:
            return None
        writes, overrides = found
        out = {w for a in writes for w in (f".{a}", f"{own}.{a}")}
        for method, module in overrides:  # (``get_lr`` of a scheduler subclass, run by the constructor)
            out |= self.attr_writes(Callee(method, module))
        return frozenset(out)

    def _held_class(self, frame: Frame, obj: str) -> ClassRef | None:
        """The project class of the object that attribute ``obj`` of the frame's own instance
        holds (``self.state`` in a method of ``Runner``), when the code of the instance's class
        and of its bases in the project assigns that attribute, and only a construction of that
        one class (``self.state = TrainState(...)`` in ``__init__``), writes no attribute it
        does not name (``setattr``), and no code of the checked module or of those classes'
        modules assigns an attribute of that name anything else. ``None`` otherwise (a subclass
        in another module, or code outside these modules, may still assign it: the same bet as
        :attr:`Frame.instances` makes for a construction seen in the entry point).

        Args:
            frame: the frame of the call (its :attr:`Frame.self_sym` and :attr:`Frame.self_class`).
            obj: a symbol, ``"self@Runner.state"``.

        Returns:
            the :class:`ClassRef` of the attribute's class, or ``None``.
        """
        cls, own = frame.self_class, frame.self_sym
        if cls is None or own is None or obj.rpartition(".")[0] != own:
            return None
        name = obj.rpartition(".")[2]
        key = (id(cls.module), cls.name, name)
        if key in self._held:
            return self._held[key]
        self._held[key] = None  # (while it is worked out, and when it cannot be)
        classes = _readable_ancestry(cls)
        if classes is None:
            return None
        found: set = set()
        for m in dict.fromkeys([self.index, *(c.module for c in classes)]):
            if m.tree is None:
                return None
            for value in _attribute_assignments(m.tree, name):
                ref = _constructed_class(m, value)
                if ref is None:
                    return None
                found.add((id(ref.module), ref.name))
                held = ref
        own_code = [n for c in classes for n in _attribute_assignments(c.info.node, name)]
        if len(found) != 1 or not own_code:
            return None
        self._held[key] = held
        return held

    def _passed_function(self, frame: Frame, expr: cst.BaseExpression) -> Callee | None:
        """The function of the project an argument names: a function of the frame's module
        or one defined in an enclosing function (``map(step, xs)``), a method of the frame's
        class (``self.update``)."""
        t = type(expr)
        if t is cst.Name:
            f: Frame | None = frame
            while f is not None:
                if expr.value in f.defs:
                    return Callee(f.defs[expr.value], f.module, parent=f)
                f = f.parent
            found = frame.module.functions.get(expr.value)
            return Callee(found, frame.module) if found is not None else None
        if (t is cst.Attribute and type(expr.value) is cst.Name and frame.self_class is not None
                and self.resolve(frame, expr.value.value)[0] == frame.self_sym):
            found = find_method(frame.self_class, expr.attr.value)
            return Callee(found[1], found[0].module) if found else None
        return None

    def attr_writes(self, callee: Callee) -> frozenset:
        """What a call of a function of the project that is not inlined may change: the names
        (``.evaluate``) of the attributes its code assigns, and the code of the project it
        calls, by name (functions and classes of its module and the project modules it
        imports, methods of that name of its module's classes); ``{"*"}`` when that code
        writes attributes it does not name (``setattr``, ``vars``, ``__dict__``), calls a
        callable nobody can name, or is more than :data:`MAX_WRITES_SCAN` functions. A
        function defined in a function (a ``collate_fn`` nested in ``get_dataloader``) calls
        the functions its enclosing functions define by name: their code is read too."""
        scope = self._lexical_parent(callee.parent, callee.func) if callee.parent is not None else None
        # (a nested function read without its defining frame names no sibling: kept apart)
        key = id(callee.func) if scope is None else ("scoped", id(callee.func))
        hit = self._attr_writes.get(key)
        if hit is None:
            hit = self._attr_writes[key] = self._scan_writes(callee.func, callee.module, scope)
        return hit

    def _scan_writes(self, func: cst.FunctionDef, module: ModuleIndex, scope: Frame | None = None) -> frozenset:
        """:meth:`attr_writes` of ``func`` of module ``module``, defined in the function of
        frame ``scope`` (``None``: at the top level of its module or in a class)."""
        everything = frozenset((ALL,))
        todo, seen, names = [(func, module, scope)], set(), set()
        while todo:
            f, m, enclosing = todo.pop()
            if id(f) in seen:
                continue
            seen.add(id(f))
            if len(seen) > MAX_WRITES_SCAN:
                return everything
            found = self._own_writes(f, m, enclosing)
            if found is None:
                return everything
            written, code = found
            names |= written
            todo.extend(code)
        return frozenset("." + n for n in names)

    def _own_writes(self, func: cst.FunctionDef, m: ModuleIndex,
                    scope: Frame | None = None) -> tuple[set[str], list] | None:
        """``(attribute names assigned, code of the project called)`` by ``func`` itself
        (:func:`~loopcheck.engine.attr_facts.written_attributes`, :meth:`_code_called`), the
        code as ``(function, its module, the frame of the function defining it or None)``;
        ``None`` when it writes attributes it does not name or calls what nobody can name.
        ``scope``: the frame of the function ``func`` is defined in (``None``: none), whose
        functions, and those of the functions enclosing it, ``func`` may call by name."""
        key = ("own", id(func), scope is not None)
        if key in self._attr_writes:
            return self._attr_writes[key]
        written, dynamic = written_attributes(func)
        result: tuple[set[str], list] | None = None
        if not dynamic:
            nested = {n.name.value for n in walk(func) if type(n) is cst.FunctionDef}
            own = _locals_not_defs(func)
            code: list = []
            written = set(written)
            for call in (n for n in walk(func) if type(n) is cst.Call):
                if _super_call(call.func):
                    found = self._super_writes_in(func, m, call.func.attr.value)
                    if found is not None:  # ``super().__init__()`` of ``torch.nn.Module``
                        written.update(found[0])
                        code.extend((method, module, None) for method, module in found[1])
                        continue
                called = self._code_called(call.func, m, nested, scope, own)
                if called is None and type(call.func) is cst.Name:
                    # ``for layer in self.layers: x = layer(x)``: the modules the list holds
                    called = self._looped_module_code(func, m, call.func.value)
                if called is None:
                    code = None
                    break
                code.extend(entry if len(entry) == 3 else (*entry, None) for entry in called)
            if code is not None:
                result = (written, code)
        self._attr_writes[key] = result
        return result

    @staticmethod
    def _super_writes_in(func: cst.FunctionDef, m: ModuleIndex, method: str
                         ) -> tuple[tuple[str, ...], list[tuple[cst.FunctionDef, ModuleIndex]]] | None:
        """:func:`super_library_writes` of ``super().<method>(...)`` in ``func``, a method of a
        class of module ``m``, the instance of that class or of a class of ``m`` deriving from
        it (the classes of the module, as :meth:`_code_called` reads calls by name); ``None``
        when ``func`` is no method of a class of ``m``."""
        owner_cls = next((ClassRef(m, name) for name, c in m.classes.items()
                          if c.methods.get(func.name.value) is func), None)
        if owner_cls is None:
            return None
        instances = [c for c in (ClassRef(m, name) for name in m.classes) if owner_cls in _project_ancestry(c)]
        return super_library_writes(owner_cls, method, instances)

    def _code_called(self, func: cst.BaseExpression, m: ModuleIndex, nested: set[str],
                     scope: Frame | None = None, own: frozenset[str] = frozenset()) -> list | None:
        """The functions of the project a call of ``func`` in module ``m`` may run, by name
        (``[]``: a library's); ``None`` when nobody can name it. ``nested``: the names of the
        functions the calling function defines; ``own``: the names it binds otherwise
        (:func:`_locals_not_defs`: a parameter, ``def collate(batch, pad=args.pad_fn)``, or a
        variable, which hold what nobody can name); ``scope``: the frame of the function it is
        defined in, if any (a name Python finds there, or in a function enclosing that one,
        before the module's: ``(function, module, its defining frame)``)."""
        if type(func) is cst.Attribute:
            found = self._project_code(m, m.imports.qualify(dotted_name(func)))
            return found if found else self._methods_named(m, func.attr.value)
        if type(func) is not cst.Name:
            return None
        name = func.value
        if name in own:
            return None
        if name in nested:
            return []  # (its body is read with the function that defines it)
        f = scope
        while f is not None:  # a function an enclosing function defines (a sibling)
            if name in f.defs:
                return [(f.defs[name], f.module, f)]
            if name in f.locals or name in f.subst:
                return None  # an enclosing function's variable: nobody can name what it holds
            f = f.parent
        if name in m.functions:
            return [(m.functions[name], m)]
        if name in m.classes:
            return self._class_code(ClassRef(m, name))
        qualified = m.imports.qualify(name)
        if qualified != name:
            return self._project_code(m, qualified)
        return [] if name in BUILTINS else None

    def _looped_module_code(self, func: cst.FunctionDef, m: ModuleIndex, name: str) -> list | None:
        """The code a call of ``name`` in ``func``, a method of a class of module ``m``, runs,
        where ``name`` is bound only as the loop variable of ``for name in self.<attr>:`` (or
        ``for i, name in enumerate(self.<attr>):``, :func:`_loop_bound_attribute`) and that
        attribute holds an ``nn.ModuleList`` whose items are constructions of classes of the
        project (:meth:`_module_list_items`): each class's ``__call__`` if the project defines
        one, else its ``forward``, as ``(method, its module, None)``. ``None`` when any of this
        is not established (the call then runs code nobody names)."""
        attr = _loop_bound_attribute(func, name, m)
        if attr is None:
            return None
        owner = next((ClassRef(m, n) for n, c in m.classes.items() if c.methods.get(func.name.value) is func), None)
        items = self._module_list_items(owner, attr) if owner is not None else None
        if items is None:
            return None
        code = []
        for cls in items:
            found = find_method(cls, "__call__") or find_method(cls, "forward")
            if found is None:
                return None  # (a library base's forward: not described here)
            code.append((found[1], found[0].module, None))
        return code

    def _module_list_items(self, cls: ClassRef, attr: str) -> list[ClassRef] | None:
        """The classes of the modules that attribute ``attr`` of an instance of ``cls`` holds, as
        an ``nn.ModuleList``: every use of an attribute of that name in the code of ``cls``'s
        module, of its bases' in the project and of the checked module is the assignment of
        an ``nn.ModuleList(...)`` of constructions of classes of the project
        (``nn.ModuleList([Block(d) for _ in range(n)])``, ``nn.ModuleList()``), an
        ``.append(...)`` of one (directly, or of a local bound only to such constructions), an
        ``.extend([...])`` of them, a ``for`` over it, an argument of ``enumerate``, ``reversed``,
        ``zip`` or ``len``, or an item read (``self.layers[0]``); and no class on the way
        writes attributes it does not name (``setattr``). ``None`` otherwise (a subclass in
        another module, or code outside these modules, may still change the list: the same bet
        as :meth:`_held_class`)."""
        key = ("module list", id(cls.module), cls.name, attr)
        if key in self._held:
            return self._held[key]
        self._held[key] = None
        classes = _readable_ancestry(cls)
        if classes is None:
            return None
        found: list[ClassRef] = []
        for module in dict.fromkeys([self.index, *(c.module for c in classes)]):
            if module.tree is None:
                return None
            items = _module_list_uses(module, attr)
            if items is None:
                return None
            found.extend(ref for ref in items if ref not in found)
        self._held[key] = found
        return found

    def _project_code(self, m: ModuleIndex, qualname: str | None) -> list:
        """The function, or the constructor of the class, of another project module named
        ``qualname`` (``[]``: none)."""
        if m.project is None or not qualname:
            return []
        member = m.project.lookup(qualname, m.path)
        if member is None or member.info.index is None:
            return []
        if member.function is not None:
            return [(member.function, member.info.index)]
        return self._class_code(ClassRef(member.info.index, member.cls)) if member.cls else []

    def _class_code(self, cls: ClassRef) -> list:
        """What constructing ``cls`` runs: its ``__init__`` (none for a class the library
        knowledge describes)."""
        if cls.described:
            return []
        found = find_method(cls, "__init__")
        return [(found[1], found[0].module)] if found else []

    def _methods_named(self, m: ModuleIndex, name: str) -> list:
        """The methods called ``name`` of the classes of module ``m``."""
        by_name = m.cache.get("methods by name")
        if by_name is None:
            by_name = m.cache["methods by name"] = {}
            for cls in m.classes.values():
                for method_name in cls.methods:  # (names only: a lazy class parses a method when asked)
                    by_name.setdefault(method_name, []).append(cls)
        return [(cls.methods[name], m) for cls in by_name.get(name, ())]

    def _method_writes(self, frame: Frame, name: str) -> frozenset:
        """:meth:`attr_writes` of the methods called ``name`` of the classes of the checked
        module and of the frame's."""
        key = (name, id(frame.module))
        hit = self._attr_writes.get(key)
        if hit is None:
            out: set[str] = set()
            for m in dict.fromkeys((self.index, frame.module)):
                for method, module in self._methods_named(m, name):
                    out |= self.attr_writes(Callee(method, module))
            hit = self._attr_writes[key] = frozenset(out)
        return hit

    def _module_writes(self, frame: Frame) -> frozenset:
        """The names of the attributes the code of the checked module and of the frame's
        assigns (``{"*"}`` when it writes attributes it does not name)."""
        out: set[str] = set()
        for m in dict.fromkeys((self.index, frame.module)):
            found = m.cache.get("attr_writes")
            if found is None:
                names, dynamic = written_attributes(m.tree) if m.tree is not None else (set(), True)
                found = m.cache["attr_writes"] = frozenset((ALL,)) if dynamic else frozenset("." + n for n in names)
            out |= found
        return frozenset(out)

    # -- what an entry point's build depends on ---------------------------------------------
    def _place(self, node: cst.CSTNode, module: ModuleIndex) -> None:
        """Note that ``node`` (of the IR being built) comes from ``module``."""
        self.node_module[id(node)] = module
        if self.record is not None:
            if module is self.index:
                self.record.placed.append(id(node))
            else:
                self.record.reusable = False

    def _read(self, callee: Callee | None) -> Callee | None:
        """Note that the build depends on the function ``callee`` resolves to; return it."""
        if callee is not None and self.record is not None:
            if callee.module is self.index:
                self.record.reads.add(callee.func)
            else:
                self.record.reusable = False
        return callee

    def _closure(self, sym: str | None) -> tuple[cst.FunctionDef, Frame] | None:
        """The nested function a symbol holds (returned by an inlined call), else ``None``."""
        found = self.func_values.get(sym) if sym is not None else None
        if self.record is not None:
            if found is not None:
                self.record.reusable = False  # a frame of another build
            elif sym is not None:
                self.record.misses.add(sym)
        return found

    def begin(self, tag: int, record: UnitRecord | None = None) -> None:
        """Start building entry point number ``tag`` (its frames are named ``f<tag>_<n>``, so
        that its symbols do not depend on the entry points built before it); ``record``
        collects what the build reads and changes (see :class:`UnitRecord`)."""
        self._tag, self._ids = tag, count(1)
        self.record = record
        self._fact_ifs, self._literal_attrs, self._pending_calls, self._own_truths = [], set(), [], []
        self._learning_ifs = []
        self._module_classes = {}  # asked again per entry point: a record lists what its build read
        self._grad_left = {}  # (left by calls inside an expression, which no statement reads)
        self._unit_modules = {id(self.index): self.index}  # the modules whose code the entry point runs so far
        project = self.index.project
        if record is not None:
            record.start = self.n_events
            if project is not None:
                project.recorder = record.lookups

    def end(self) -> None:
        """Finish the entry point :meth:`begin` started."""
        self._settle_facts()
        record, self.record = self.record, None
        project = self.index.project
        if record is not None:
            record.events = self.n_events - record.start
            if project is not None:
                project.recorder = None
            if any(answer is not None for *_, answer in record.lookups):
                record.reusable = False
            record.lookups = list(dict.fromkeys((name, near) for name, near, _ in record.lookups))

    def replay(self, record: UnitRecord) -> None:
        """Bring the shared state where building ``record``'s entry point would leave it (its
        IR is taken from an earlier check of the same module: :mod:`loopcheck.engine.reuse`)."""
        self.called.update(record.called)
        for method, grad in record.self_calls:
            self.self_calls.setdefault(method, set()).add(grad)
        for node_id in record.placed:
            self.node_module[node_id] = self.index
        for call, raw in record.raws:
            self._raw_of[call] = raw
            if raw.cls is not None and raw.cls.module is not self.index:
                # a class of this module (a build that read another one is not kept), named
                # through the index of the check that built or last took it
                raw.cls = ClassRef(self.index, raw.cls.name)
        self.n_events += record.events
        self.reached.update(record.reached)
        self.unreached.update(record.unreached)

    def unreached_statements(self) -> frozenset[cst.CSTNode]:
        """The statements no build reached: each was left after a statement that ends every
        path of its block (:meth:`stmts`), in every build of that block. Code there never runs,
        so what it names (a call of ``train()`` after ``setup(args, log)`` that raises
        ``TypeError``) is never called from there (read by
        :mod:`loopcheck.engine.unreferenced`). A block no build reached at all is not among
        them: nothing is decided for it."""
        return frozenset(self.unreached - self.reached)

    # -- inlining ------------------------------------------------------------------------
    def _callee(self, frame: Frame, raw: Call) -> Callee | None:
        """The function of the project a call runs, with how to bind it, else ``None``."""
        return self._read(self._find_callee(frame, raw))

    def _find_callee(self, frame: Frame, raw: Call) -> Callee | None:
        if raw.func is None:
            return None
        node_func = raw.node.func
        m = frame.module
        if (
            type(node_func) is cst.Attribute and type(node_func.value) is cst.Call
            and dotted_name(node_func.value.func) == "super" and frame.def_class is not None
        ):  # super().__init__(...)
            for base in frame.def_class.bases():
                found = find_method(base, node_func.attr.value)
                if found:
                    return Callee(found[1], found[0].module, frame.self_sym, frame.self_class, found[0])
            self._super_library_method(frame, raw, node_func.attr.value)
            return None
        if raw.inner is not None:
            return None
        dotted = dotted_name(node_func)
        if dotted is None:
            return None
        head, _, rest = dotted.partition(".")
        if not rest:
            sym, qualified = self.resolve(frame, head)
            closure_value = self._closure(sym)
            if closure_value is not None:  # train_op = make_train_op(...); train_op()
                func, closure = closure_value
                return Callee(func, closure.module, parent=closure)
            f: Frame | None = frame
            while f is not None:
                if head in f.defs:
                    return Callee(f.defs[head], f.module, parent=f)
                if head in f.locals and f.fid == "" and head in f.module.classes:
                    return self._constructor(ClassRef(f.module, head), _one(raw.targets))  # a class of the module
                if head in f.class_params:  # cls(...) in a classmethod
                    return self._constructor(f.class_params[head], _one(raw.targets))
                if head in f.locals or head in f.subst:
                    return None
                f = f.parent
            if not qualified and head in m.functions:
                return Callee(m.functions[head], m)
            if not qualified and head in m.classes:
                return self._constructor(ClassRef(m, head), _one(raw.targets))
            if qualified:
                return self._project_callee(m, sym, _one(raw.targets))
            for star in m.imports.stars:
                found = self._project_callee(m, f"{star}.{head}", _one(raw.targets))
                if found is not None:
                    return found
            return None
        sym, qualified = self.resolve(frame, dotted)
        if qualified:  # engine.train_one_epoch(...), models.Net(...)
            return self._project_callee(m, sym, _one(raw.targets))
        recv_sym, _ = self.resolve(frame, dotted.rpartition(".")[0])
        method = dotted.rpartition(".")[2]
        cls = frame.instances.get(recv_sym)
        if cls is None and recv_sym is not None and recv_sym == frame.self_sym:
            cls = frame.self_class
        if recv_sym is not None and recv_sym == frame.self_sym:
            self.self_calls.setdefault(method, set()).add(raw.ctx.grad)
            if self.record is not None:
                self.record.self_calls.append((method, raw.ctx.grad))
        if cls is None or cls.described:
            return None
        found = find_method(cls, method)
        if found is None:
            # a method no class of the project defines: the library base's (``self.backward(loss)``
            # in a subclass of a library's training engine), which the knowledge may describe
            raw.base_class = library_base(cls)
            return None
        return Callee(found[1], found[0].module, recv_sym, cls, found[0])

    def _super_library_method(self, frame: Frame, raw: Call, method: str) -> None:
        """``super().m(...)`` in a method of a class none of whose project bases defines ``m``:
        the library base's ``m`` runs, on the method's instance. Where that method's entry
        says an override is read from its body (``override_body``: ``super().train(mode)`` in
        a model's own ``train``), the call is given the library base (:attr:`Call.base_class`)
        and the instance's symbol (:attr:`Call.bound_self`), so that it has the entry's
        effects on the instance; other ``super()`` calls stay as they are."""
        if frame.self_sym is None or frame.def_class is None:
            return
        base = library_base(frame.def_class)
        summary = knowledge().method(base, method) if base is not None else None
        if summary is not None and summary.override_body:
            raw.base_class, raw.bound_self = base, frame.self_sym

    def _constructor(self, cls: ClassRef, target: str | None = None) -> Callee | None:
        """``Cls(...)``: its ``__init__``, with ``self`` bound to the variable the instance goes
        to (so ``model = GPT(cfg)`` then ``model.configure_optimizers()`` share their
        attributes), or to ``self@Cls`` when it goes to none."""
        if cls.described:
            return None
        found = find_method(cls, "__init__")
        if found is None:
            return None
        return Callee(found[1], found[0].module, target or f"self@{cls.name}", cls, found[0], ctor=True)

    def _function_arg(self, frame: Frame, node: cst.BaseExpression
                      ) -> tuple[cst.FunctionDef | cst.Lambda, int] | None:
        """The function of the project an argument expression names, for :attr:`Arg.function
        <loopcheck.engine.ir.Arg.function>`, and how many of its leading parameters the
        expression binds (:attr:`Arg.function_bound <loopcheck.engine.ir.Arg.function_bound>`):
        a ``lambda`` itself, a ``def`` of the function being built or of one enclosing it, a
        function of the module, or one of another module of the project reached through its
        imports (a star import included), as a call of the name would find it
        (:meth:`_find_callee`), all binding none; a method of the project's class of the
        receiver (:meth:`_method_arg`: ``self._init_weights``). ``None`` for anything else (a
        variable, a library's function, a class, a method of a class not known)."""
        if type(node) is cst.Lambda:
            return node, 0
        if type(node) is cst.Attribute and type(node.value) is cst.Name:
            method = self._method_arg(frame, node.value.value, node.attr.value)
            if method is not None:
                return method
        dotted = dotted_name(node)
        if dotted is None:
            return None
        m = frame.module
        if "." not in dotted:
            f: Frame | None = frame
            while f is not None:
                if dotted in f.defs:
                    return f.defs[dotted], 0
                if dotted in f.locals or dotted in f.subst:
                    return None
                f = f.parent
            if dotted in m.functions:
                return m.functions[dotted], 0
        sym, qualified = self.resolve(frame, dotted)
        if qualified:
            callee = self._project_callee(m, sym)
        elif "." not in dotted and _bound_only_by_star(frame, dotted):
            callee = next((c for c in (self._project_callee(m, f"{star}.{dotted}") for star in m.imports.stars)
                           if c is not None), None)
        else:
            callee = None
        if callee is None or callee.ctor or callee.def_class is not None:
            return None
        return callee.func, 0

    def _method_arg(self, frame: Frame, receiver: str, name: str) -> tuple[cst.FunctionDef, int] | None:
        """The method ``receiver.name`` reads (``self._init_weights``), with the number of its
        leading parameters the read binds: the receiver an instance of a class of the project
        (``self`` of the method being built, or a name :attr:`Frame.instances` knows), its
        method found as :meth:`_find_callee` finds ``receiver.name()`` (:func:`find_method`):
        1 (the instance; the class, for a ``@classmethod``), 0 for a ``@staticmethod``; or the
        receiver a ``@classmethod``'s class parameter (``cls._init``): 1 for a
        ``@classmethod``, 0 for any other (a plain function read from the class). ``None``
        when the class or the method is not known."""
        sym, qualified = self.resolve(frame, receiver)
        if qualified or sym is None:
            return None
        cls = frame.instances.get(sym)
        if cls is None and sym == frame.self_sym:
            cls = frame.self_class
        through_class = False
        if cls is None:
            f: Frame | None = frame
            while f is not None and cls is None:
                if receiver in f.class_params:
                    cls, through_class = f.class_params[receiver], True
                elif receiver in f.locals or receiver in f.subst:
                    break
                f = f.parent
        if cls is None or cls.described:
            return None
        found = find_method(cls, name)
        if found is None:
            return None
        func = found[1]
        kinds = {dotted_name(d.decorator) for d in func.decorators}
        if "staticmethod" in kinds:
            return func, 0
        if "classmethod" in kinds:
            return func, 1
        return func, 0 if through_class else 1

    def _project_callee(self, m: ModuleIndex, qualname: str | None, target: str | None = None) -> Callee | None:
        """A function or class of another module of the project, by qualified name. A name the
        library knowledge describes is not read (the project is that library: the examples of
        accelerate import its own src/accelerate)."""
        if m.project is None or not qualname or knowledge().callable(qualname) is not None:
            return None
        member = m.project.lookup(qualname, m.path)
        if member is None or member.info.index is None:
            return None
        index = member.info.index
        if member.cls is not None and member.function is None:
            return self._constructor(ClassRef(index, member.cls), target)
        if member.cls is not None:  # Class.method(...) through the class
            return Callee(member.function, index, None, None, ClassRef(index, member.cls))
        return Callee(member.function, index)

    def try_inline(self, frame: Frame, raw: Call, ctx: Context) -> Node | None:
        """The call's function of the project inlined (its body built in a frame of its own),
        or ``None`` when it stays a call: not a function of the project, a generator, a
        recursive call, past :data:`MAX_INLINE_DEPTH` or :data:`MAX_EVENTS_PER_UNIT`, or a
        submodule's constructor.

        Submodules are not built: inside the inlined ``__init__`` of an ``nn.Module`` class,
        the construction of another ``nn.Module`` class of the project (``self.block =
        Block(cfg)``) stays a call, its instance's class known (:attr:`Frame.instances`). What a
        submodule's constructor does (define layers, parameters, buffers) changes no state a
        rule follows; inlining it at every construction site was most of the cost of files that
        build a model zoo or a pipeline's components (``get_network()``), and changed no
        finding. The outermost module constructor is still inlined (``model = Net()``:
        its ``self.to(device)``, an optimizer it builds, the attributes the loop reads), as is
        every constructor called outside a module's ``__init__``.
        """
        callee = self._callee(frame, raw)
        if callee is None:
            found = self._instance_forward(frame, raw)
            if self.model_call_cannot_bind(frame, raw):
                self.unbound_calls.add(raw.node)  # ``model(x, labels=y)``: TypeError, no forward
            elif found is not None:
                cls, (owner, forward) = found
                if not find_method(cls, "zero_grad"):
                    # a class of the project with its own ``zero_grad`` may clear nothing:
                    # ``self.zero_grad()`` in its forward runs that method, not nn.Module's
                    raw.forward_clears = self._forward_clears(forward, owner.module)
            return None
        func = callee.func
        if callee.cls is not None and _abstract(func):
            return None  # ``self.compute_loss(batch)`` of a base class: a subclass's override runs
        if self.call_cannot_bind(callee, raw.node):
            self.unbound_calls.add(raw.node)  # TypeError before the body runs: not inlined
            return None
        self._not_inlined = callee  # (what a call that stays a call runs: make_call)
        generators = callee.module.cache.setdefault("generators", {})
        if func not in generators:
            generators[func] = is_generator(func)
        if generators[func]:
            return None  # its body runs at next(), not at the call
        if func in self._stack or len(self._stack) >= MAX_INLINE_DEPTH:
            return None
        if self.n_events > MAX_EVENTS_PER_UNIT:
            return None
        is_init = callee.ctor
        module_ctor = is_init and callee.cls is not None and self._is_module_class(callee.cls)
        if is_init and raw.targets and raw.targets[0] and callee.cls is not None:
            frame.instances[raw.targets[0]] = callee.cls
        if module_ctor and self._module_ctors:
            return None  # a submodule (see above)
        self.called.add(func)
        if self.record is not None:
            self.record.called.append(func)
        self._module_ctors += module_ctor
        # a method of a class of the project on an instance of one: it overrides any library
        # method of the same name (:func:`~loopcheck.engine.calls.summary_of`)
        raw.project_method = not is_init and callee.cls is not None and callee.def_class is not None
        try:
            return self.inline(frame, callee, raw, ctx, () if is_init else raw.targets)
        finally:
            self._module_ctors -= module_ctor

    def call_cannot_bind(self, callee: Callee, call: cst.Call) -> bool:
        """Whether ``call``'s arguments provably do not bind to the parameters of the project
        function ``callee`` runs (:func:`~loopcheck.engine.binding.binds`), so that the call
        raises ``TypeError`` on every run. Decided only where the signature read is the one
        that runs: an undecorated function, defined once at the top level of its module (not
        under an ``if``, not bound again), or a method or constructor of a class
        (:func:`plain_class`) reached through an instance or the class itself. A function
        found among the module frame's own ``def``s (:attr:`Frame.defs` of the module code,
        whose :attr:`Frame.node` is ``None``) is such a top-level function; one nested in a
        function, or a closure, is not decided (its ``def`` may run again with other
        defaults, or be bound by a branch)."""
        func = callee.func
        if func.decorators or callee.parent is not None and callee.parent.node is not None:
            return False
        if callee.cls is not None:
            if not plain_class(callee.cls) or callee.def_class is not None and not plain_class(callee.def_class):
                return False
        elif callee.def_class is not None:
            if not plain_class(callee.def_class):
                return False
        elif not _defined_once(callee.module, func):
            return False
        return not binds(func, call, bound_self=callee.cls is not None)

    def model_call_cannot_bind(self, frame: Frame, raw: Call) -> bool:
        """Whether ``raw`` calls a model whose ``forward`` its arguments provably do not bind
        (:func:`~loopcheck.engine.binding.binds`, after ``self``): ``nn.Module.__call__`` then
        raises ``TypeError`` before any forward runs (``model(x)`` for ``def forward(self, x,
        y):``). The model is the object the called name holds, of the one class of the project
        every binding of the name built (:meth:`_built_class`: a name also bound to an object
        of another class is not decided), whose ``forward`` is the one that runs
        (:meth:`_plain_forward`). Undecided (``False``) for a call that spreads ``*args`` or
        ``**kwargs``, and wherever the class or its ``forward`` is not so known."""
        if raw.inner is not None or raw.qualified or dotted_name(raw.node.func) is None:
            return False
        cls = self._built_class(frame, raw.node.func)
        if type(cls) is not ClassRef:
            return False
        found = self._plain_forward(cls, CALL_HOOK_METHODS)
        if found is None or binds(found[1], raw.node, bound_self=True):
            return False
        if self.record is not None:
            self.record.reusable = False  # (read from the builder's classes of the objects)
        return True

    def _raises_at_binding(self, call: cst.Call, out: list[Node]) -> None:
        """End the path at ``call``, whose arguments cannot bind: the function never runs, so
        its own call event goes (the events of its arguments, evaluated first, stay), and
        ``TypeError`` is raised."""
        raw = self._raw_of.get(call)
        for i in range(len(out) - 1, -1, -1):
            if out[i] is raw:
                del out[i]
                break
        out.append(Jump("raise"))

    def _instance_forward(
        self, frame: Frame, raw: Call,
    ) -> tuple[ClassRef, tuple[ClassRef, cst.FunctionDef]] | None:
        """``(class, (defining class, forward))`` when ``raw`` calls an instance of a class of
        the project (:attr:`Frame.instances`) that defines no ``__call__`` (nor does a base of
        the project) and has an undecorated ``forward``: for an ``nn.Module``, the call runs that
        ``forward`` with the arguments as they are (``nn.Module.__call__``); else ``None``.

        Read from it what it clears (:attr:`Call.forward_clears
        <loopcheck.engine.ir.Call.forward_clears>`), which the events take only for a call of a
        model (:mod:`loopcheck.engine.events`: the roles establish it is a module where its
        bases do not, ``nn`` bound by a chain of star imports the project does not hold)."""
        if raw.inner is not None or raw.qualified:
            return None
        sym, qualified = self.resolve(frame, dotted_name(raw.node.func))
        cls = frame.instances.get(sym) if sym is not None and not qualified else None
        if cls is None or find_method(cls, "__call__"):
            return None
        found = find_method(cls, "forward")
        if found is None or found[1].decorators:
            return None
        return cls, found

    def _forward_clears(self, func: cst.FunctionDef, module: ModuleIndex) -> tuple:
        """:func:`~loopcheck.engine.summaries.forward_clears` of ``func``, read once per function."""
        table = module.cache.setdefault("forward_clears", {})
        if func not in table:
            table[func] = forward_clears(func)
        return table[func]

    def _is_module_class(self, cls: ClassRef) -> bool:
        """:func:`~loopcheck.engine.classes.is_module_class`, asked once per class per entry point."""
        known = self._module_classes.get(cls)
        if known is None:
            known = self._module_classes[cls] = is_module_class(cls)
        return known

    def new_frame(
        self, func: cst.FunctionDef, module: ModuleIndex, parent: Frame | None, subst: dict[str, str],
        self_cls: ClassRef | None = None, def_cls: ClassRef | None = None, self_sym: str | None = None,
    ) -> Frame:
        key = id(func)
        if key not in self._locals:
            self._locals[key] = bound_names(func.body)
        names, declared = self._locals[key]
        fid = f"f{self._tag}_{next(self._ids)}"
        self._unit_modules[id(module)] = module
        local_names = (names | set(all_param_names(func))) - declared - set(subst)
        defs = {s.name.value: s for s in func.body.body if type(s) is cst.FunctionDef}
        return Frame(fid, subst, local_names, module, self_cls, defs, parent, name=func.name.value,
                     def_class=def_cls, self_sym=self_sym, node=func)

    def inline(
        self, frame: Frame, callee_info: Callee, raw: Call, ctx: Context, targets: tuple[str | None, ...],
    ) -> Inline:
        func, self_sym = callee_info.func, callee_info.self_sym
        params = _param_names(func)
        subst: dict[str, str] = {}
        bound: dict[str, Arg] = {}  # parameters given an expression (model.parameters())
        starred = _starred_args(raw)
        positional = _known_positional(raw.args, starred)
        class_params: dict[str, ClassRef] = {}
        if params and _is_classmethod(func):
            # ``Net.from_config(cfg)``, also through an instance: Python binds ``cls`` to the
            # class (the instance's), and the first argument goes to the next parameter
            klass = callee_info.cls or callee_info.def_class
            if klass is not None:
                class_params[params[0]] = klass
            params = params[1:]
        elif self_sym is not None and params and not _is_static(func):
            subst[params[0]] = self_sym
            params = params[1:]
        if any(type(a.node) is cst.StarredElement for a in positional):
            positional = []
        key = id(func)
        if key not in self._locals:
            self._locals[key] = bound_names(func.body)
        assigned = self._locals[key][0]  # a parameter the callee re-binds is its own variable
        given_args: dict[str, Arg] = {}  # parameter -> the argument the call gives it
        for name, arg in zip(params, positional):
            given_args[name] = arg
            if arg.sym is not None and name not in assigned:
                subst[name] = arg.sym
            else:
                bound[name] = arg
        # a parameter that ``*xs`` or ``**kw`` may give holds no default known here
        unknown = _starred_params(func, params, len(positional), set(starred.values()))
        for arg in raw.args:
            if arg.keyword:
                given_args[arg.keyword] = arg
            if arg.keyword and arg.sym is not None and arg.keyword not in assigned:
                subst[arg.keyword] = arg.sym
            elif arg.keyword:
                bound[arg.keyword] = arg
        parent = callee_info.parent or self._lexical_parent(frame, func)
        callee = self.new_frame(func, callee_info.module, parent, subst, callee_info.cls, callee_info.def_class,
                                self_sym)
        p = func.params
        callee.literal_params = {
            x.name.value for x in (*p.params, *p.kwonly_params)
            if x.name.value not in subst and x.default is not None and _is_literal(x.default, set())
        }
        callee.constants = _constants(func, bound, subst, self._locals[key][0] | unknown)
        # (an argument the caller's ``*args``/``**kwargs`` passed on was written further up,
        # where its names mean what they mean there: none is read here)
        written = {id(a.value) for a in raw.node.args} if type(raw.node) is cst.Call else set()
        callee.passed = {name: (frame, arg.node) for name, arg in given_args.items()
                         if name not in assigned and name not in unknown and id(arg.node) in written
                         and (name in params or name in {x.name.value for x in func.params.kwonly_params})}
        callee.constant_calls = {name: raw.node for name in callee.constants if name in bound}
        callee.displays = {
            name: arg.node for name, arg in bound.items()
            if name not in assigned and type(arg.node) in (cst.List, cst.Tuple) and _only_iterated(func, name)
        }
        outer = {f"{frame.fid}:{k}" if frame.fid else k: v for k, v in frame.constants.items()}
        outer_calls = {f"{frame.fid}:{k}" if frame.fid else k: v for k, v in frame.constant_calls.items()}
        for name, sym in subst.items():  # a constant passed on by name: build_model(..., phase)
            if sym in outer and name not in self._locals[key][0]:
                callee.constants[name] = outer[sym]
                if sym in outer_calls:
                    callee.constant_calls[name] = outer_calls[sym]
        callee.class_params = {name: k for name, k in class_params.items() if name not in assigned}
        callee.forwarded = _extra_args(func, raw.args, self_sym is not None and not _is_static(func)
                                       or _is_classmethod(func))
        callee.given = {name: sym for name, sym in subst.items() if sym != self_sym}
        callee.given.update((name, arg.sym) for name, arg in bound.items() if arg.sym is not None and name in callee.locals)
        fresh = self._fresh_rebinds(callee, func, bound)
        callee.shadow = {name: bound[name].sym for name in fresh}
        callee.fresh_at = {id(stmt): name for name, stmt in fresh.items()}
        callee.return_targets = targets
        if any(targets) and not callee_info.ctor:
            raw.returns_bound = returns_bind_targets(func, len(targets))
        callee.instances = frame.instances
        inner_ctx = replace(ctx, calls=ctx.calls + (raw.node,))
        self._stack.append(func)
        try:
            body = self.function_body(callee, func, inner_ctx)
        finally:
            self._stack.pop()
        left = self.grad_on_return(callee, body, inner_ctx)
        if left is not None:
            self._grad_left[id(raw.node)] = left
        returned = self._returned_class(callee, func)
        if returned is not None:
            self._returned_classes[id(raw.node)] = returned
        binds = [
            Assign(raw.node, f"{callee.fid}:{name}", "=", arg.node, arg.sym,
                   "call" if type(arg.node) is cst.Call else "expr", arg.mentions, inner_ctx,
                   operands=self.operands(frame, arg.node), sources=self.sources(frame, arg.node))
            for name, arg in bound.items() if name in callee.locals and name not in fresh
        ]
        if binds:
            body.items[:0] = binds
        # a parameter given the caller's variable of its own name (``run(phase)`` into ``phase``,
        # the ``self`` of ``self.rollout()`` in a method) is that variable: a test of it still
        # holds in the caller after the return
        own = frozenset(callee.locals).union(
            name for name, sym in subst.items()
            if sym.rpartition(":")[2].split(".")[0] != name and self.resolve(frame, name)[0] != sym)
        outside = frozenset(f"{callee.fid}:{name}" for name in all_param_names(func)
                            if name in callee.locals and name not in bound)
        return Inline(func, body, callee.fid, own, self._new_instance(callee_info), outside)

    @staticmethod
    def _new_instance(callee: Callee) -> str | None:
        """:attr:`Inline.new <loopcheck.engine.ir.Inline.new>` of an inlined call: the symbol of
        the instance a construction builds, when it goes to a variable (not ``self@Cls``, which
        every unnamed instance of the class shares) and the class is a :func:`plain_class` (no
        ``__new__``, metaclass or decorator in its chain that may hand back an object that exists
        already)."""
        if not callee.ctor or callee.self_sym is None or callee.self_sym.startswith("self@") or callee.cls is None:
            return None
        return callee.self_sym if plain_class(callee.cls) else None

    @staticmethod
    def grad_on_return(callee: Frame, body: Seq, entry: Context) -> tuple[str, bool, bool] | None:
        """The grad mode an inlined call leaves its caller in, as ``(grad, grad_inherited,
        grad_asked)`` of :class:`~loopcheck.engine.ir.Context`; ``None`` when it is the mode
        the call was made in.

        Grad mode is a state of the thread: a ``torch.set_grad_enabled(False)`` statement in
        the function (or in a function it calls) holds after it returns, until something sets
        it again; a ``with torch.no_grad():`` block and a grad decorator restore on exit the
        mode they were entered in. Read from the function's returns (:attr:`Frame.grad_exits`,
        a ``return`` inside such a block counting with the mode the block restores) and the
        end of its body when the last statement built is not a jump and a path reaches it
        (:attr:`Frame.end_ctx`). The builder follows the mode past each compound statement
        (:meth:`stmts`): after a ``try`` with a ``finally`` block, the mode at the end of that
        block holds, also on each return through it; a mode set inside any other nested block
        (an ``if`` arm, a loop's body, a handler, a ``with`` that sets no mode) leaves the join
        of the statement's paths, known only when they agree, never one arm's mode.

        Args:
            callee: the frame of the function just built, its returns recorded.
            body: the function's body as built.
            entry: the context the body was built in (before its decorators).

        Returns:
            The mode all its ends agree on (``"unknown"`` when they disagree: one path turns
            gradients off, another keeps them, and the mode after the call is not known),
            inherited from the unit's entry when one end kept the entry's mode, asked for when
            every end asked for it; ``None`` when that is ``entry``'s mode: the function sets
            no mode on any path, restores it (a decorator), or never returns (every path raises).
        """
        if callee.grad_restored:
            return None
        ends = list(callee.grad_exits)
        if callee.end_ctx is not None and not (body.items and type(body.items[-1]) is Jump):
            ends.append((callee.end_ctx.grad, callee.end_ctx.grad_inherited, callee.end_ctx.grad_asked))
        if not ends:
            return None
        grads = {grad for grad, _, _ in ends}
        # (ends that agree on the mode but not on who set it: the mode is known, and the
        # entry's callers may still decide it on the ends that kept it)
        left = (grads.pop() if len(grads) == 1 else "unknown",
                any(inherited for _, inherited, _ in ends), all(asked for _, _, asked in ends))
        return None if left == (entry.grad, entry.grad_inherited, entry.grad_asked) else left

    def _fresh_rebinds(self, callee: Frame, func: cst.FunctionDef, bound: dict[str, Arg]) -> dict[str, cst.CSTNode]:
        """The parameters given a caller's object (a plain symbol) that the function re-binds
        first by a statement of its body's top level, ``name = f(...)``, ``f`` a library
        function whose result is a new object (``returns.value = "new"``: ``copy.deepcopy``),
        each with that statement. Every run of the function executes the statements before it
        with the parameter naming the caller's object and those after it with the new one, so
        the name is the caller's symbol up to that call and the local symbol after it (not an
        alias of the caller's: ``model = copy.deepcopy(model); model.eval()`` switches only
        the copy)."""
        wanted = {name for name, arg in bound.items() if arg.sym is not None and name in callee.locals}
        out: dict[str, cst.CSTNode] = {}
        if not wanted or type(func.body) is not cst.IndentedBlock:
            return out
        kb = knowledge()
        for stmt in func.body.body:
            names = bound_names(stmt)[0] & wanted
            if not names:
                continue
            wanted -= names
            if type(stmt) is cst.SimpleStatementLine and len(stmt.body) == 1 and type(stmt.body[0]) is cst.Assign:
                s = stmt.body[0]
                target = s.targets[0].target if len(s.targets) == 1 else None
                if type(target) is cst.Name and target.value in names and type(s.value) is cst.Call:
                    q, qualified = self.resolve(callee, dotted_name(s.value.func))
                    summary = kb.function(q) if qualified else None
                    if summary is not None and summary.returns is not None and summary.returns.value == "new":
                        out[target.value] = stmt
            if not wanted:
                break
        return out

    def _lexical_parent(self, frame: Frame, func: cst.FunctionDef) -> Frame | None:
        f: Frame | None = frame
        while f is not None:
            if f.defs.get(func.name.value) is func:  # (asks for one name: see module_unit)
                return f
            f = f.parent
        return None

    def function_body(self, frame: Frame, func: cst.FunctionDef, ctx: Context) -> Seq:
        grad = ctx.grad
        inherited = ctx.grad_inherited
        asked = ctx.grad_asked
        outer = frame.parent or frame
        blocks = ctx.autocast
        for dec in func.decorators:
            block = self.autocast_block(outer, dec.decorator)  # @torch.autocast("cuda"): the body is its block
            if block is not None:
                blocks = blocks + (block,)
            mode = self.with_grad(outer, dec.decorator, None)
            if mode is None:  # a decorator of the project: @smart_inference_mode()
                target = dec.decorator.func if type(dec.decorator) is cst.Call else dec.decorator
                callee = self._function_named(outer, target)
                if callee is not None:
                    mode = decorator_grad(callee.func, callee.module.imports)
            if mode:
                grad, inherited, asked = mode, False, mode == "enabled"
                frame.grad_restored = True  # (the decorator's exit restores the caller's mode)
        inner_ctx = replace(ctx, grad=grad, grad_inherited=inherited, grad_asked=asked, autocast=blocks)
        return self.block(frame, func.body, inner_ctx)

    def _function_named(self, frame: Frame, expr: cst.BaseExpression) -> Callee | None:
        """The project function an expression names (a decorator, a context manager)."""
        sym, qualified = self.resolve(frame, dotted_name(expr))
        if sym is None:
            return None
        probe = Call(cst.Call(func=expr), sym, [], Context(), (), None, qualified)
        return self._callee(frame, probe)

    def _probe(self, frame: Frame, call: cst.Call, ctx: Context) -> Call:
        """A raw call with resolved arguments, to bind a callee's parameters (emits nothing)."""
        args = []
        for a in call.args:
            sym, q = self.resolve(frame, dotted_name(a.value))
            args.append(Arg(a.keyword.value if a.keyword else None, a.value, None if q or a.star else sym,
                            self.mentions(frame, a.value), _is_literal(a.value, frame.literal_params)))
        self._place(call, frame.module)
        return Call(call, None, args, ctx)

    def _context_class(self, frame: Frame, item: cst.BaseExpression) -> tuple[Callee, Callee | None] | None:
        """``(__enter__, __exit__)`` for a ``with`` item that builds an instance of a project
        class defining ``__enter__``."""
        if type(item) is not cst.Call:
            return None
        ctor = self._function_named(frame, item.func)
        if ctor is None or not ctor.ctor or ctor.cls is None:
            return None
        found = find_method(ctor.cls, "__enter__")
        if found is None:
            return None
        enter = self._read(Callee(found[1], found[0].module, ctor.self_sym, ctor.cls, found[0]))
        out = find_method(ctor.cls, "__exit__")
        exit_ = self._read(Callee(out[1], out[0].module, ctor.self_sym, ctor.cls, out[0])) if out else None
        return enter, exit_

    def _context_manager(self, frame: Frame, item: cst.BaseExpression) -> tuple[Callee, ContextSplit] | None:
        """A ``with`` item that calls a ``@contextmanager`` generator of the project, cut at its yield."""
        if type(item) is not cst.Call:
            return None
        callee = self._function_named(frame, item.func)
        if callee is None or not is_context_manager(callee.func, callee.module.imports):
            return None
        key = id(callee.func)
        if key not in self._splits:
            self._splits[key] = split_context_manager(callee.func, callee.module.imports)
        split = self._splits[key]
        return (callee, split) if split is not None else None

    # -- entry points --------------------------------------------------------------------
    def module_unit(self) -> Seq:
        # (the module's functions as the index has them: a LazyModuleIndex parses one when asked)
        frame = Frame("", {}, set(self.index.globals), self.index, None, self.index.functions, None)
        # (a program starts with autocast off on every device)
        return self.stmts(frame, self.index.module_code(), Context(autocast=(("*", False),)))

    def function_unit(self, func: cst.FunctionDef, grad: str = "enabled", bound_to_constant=None) -> Seq:
        """The IR of a function no one here calls, read on its own (``self`` is ``self@Cls``);
        ``grad``: the gradient mode its body starts in (``"disabled"`` when every
        ``self.<name>(...)`` call of the class family runs under ``torch.no_grad()``);
        ``bound_to_constant``: :func:`loopcheck.engine.entry_defaults.params_bound_to_constant`,
        or ``None`` to take no parameter as a constant (given by the caller: that module reads
        the project's callers, which import the builder)."""
        cls_name = self.index.method_class.get(func)
        cls = ClassRef(self.index, cls_name) if cls_name is not None else None
        subst: dict[str, str] = {}
        params = _param_names(func)
        self_sym = None
        if cls is not None and params and not _is_static(func):
            self_sym = f"self@{cls.name}"
            subst[params[0]] = self_sym
        frame = self.new_frame(func, self.index, None, subst, cls, cls, self_sym)
        if self_sym is not None and not _is_classmethod(func) and bound_to_constant is not None:
            frame.constants = self._entry_constants(func, cls, bound_to_constant)
        self._stack.append(func)
        try:
            body = self.function_body(frame, func, Context(grad=grad))
        finally:
            self._stack.pop()
        body.outside = frozenset(f"{frame.fid}:{name}" for name in all_param_names(func) if name in frame.locals)
        return body

    def _entry_constants(self, func: cst.FunctionDef, cls: ClassRef, bound_to_constant) -> dict:
        """The run constants of method ``func`` of ``cls`` read as an entry point: each
        parameter that every call the project's code may make of it binds to one literal,
        given or left at its default
        (:func:`~loopcheck.engine.entry_defaults.params_bound_to_constant`), that the method
        never binds again and that an ``if``/``while`` test or a conditional expression of its
        body reads. The build then depends on other modules (:attr:`UnitRecord.reusable`)."""
        info = self.index.classes.get(cls.name)
        if info is None or cls.module is not self.index or self.index.project is None:
            return {}
        p = func.params
        assigned = bound_names(func.body)[0]
        tested = {n.value for t in walk(func.body) if type(t) in (cst.If, cst.While, cst.IfExp)
                  for n in walk(t.test) if type(n) is cst.Name}
        candidates = [
            x.name.value for x in (*p.posonly_params, *p.params, *p.kwonly_params)[1:]
            if x.name.value in tested and x.name.value not in assigned
        ]
        if not candidates:
            return {}
        constants = bound_to_constant(self.index.project, self.index, func, info.node, sorted(candidates))
        if constants and self.record is not None:
            self.record.reusable = False  # (the answer reads the project's other files)
        return constants

    # -- statements ----------------------------------------------------------------------
    def block(self, frame: Frame, body: cst.BaseSuite, ctx: Context) -> Seq:
        if type(body) is cst.SimpleStatementSuite:
            return self.small_stmts(frame, body.body, ctx)
        return self.stmts(frame, body.body, ctx)

    def stmts(self, frame: Frame, stmts, ctx: Context) -> Seq:
        """The statements of a block in order. The statements after a ``return``, ``raise``,
        ``break`` or ``continue`` of the block itself never run: they make no events (a
        ``return`` left at the top of a function disables the rest of its body).

        The grad mode is followed from statement to statement: past a small statement that
        sets it (:meth:`grad_after`), and past a compound statement, to the mode its paths
        leave (:meth:`_stmt`'s answer: the join of its arms', a ``finally`` block's end); each
        set goes to :attr:`Frame.grad_log`. :attr:`Frame.end_ctx` is the context at the end,
        ``None`` when a compound statement that set a mode lets no path fall out of it (every
        arm ends in a jump, a ``try`` whose every path returns through its ``finally``): the end
        is not reached."""
        seq = Seq()
        reached, fixed = True, False
        stmts = list(stmts)
        for i, stmt in enumerate(stmts):
            self._mark_reached(stmt)
            after = self.stmt(frame, stmt, ctx, seq.items)
            if seq.items and type(seq.items[-1]) is Jump:
                self._mark_unreached(stmts[i + 1:])
                break
            if type(stmt) is cst.SimpleStatementLine:
                for s in stmt.body:
                    new = self.grad_after(frame, s, ctx)
                    fixed = fixed or new is not ctx and self._grad_statement(frame, s)
                    ctx = self._logged(frame, ctx, new)
            elif after is None:
                reached = False
            elif after != _grad_of(ctx):
                grad, inherited, asked = after
                ctx = self._logged(frame, ctx, replace(ctx, grad=grad, grad_inherited=inherited, grad_asked=asked))
        frame.end_ctx = ctx if reached else None
        frame.end_fixed = fixed
        return seq

    def _mark_reached(self, stmt: cst.CSTNode) -> None:
        """Note that a build reached ``stmt`` (:meth:`unreached_statements`)."""
        self.reached.add(stmt)
        if self.record is not None:
            self.record.reached.add(stmt)

    def _mark_unreached(self, stmts: list) -> None:
        """Note that a build left ``stmts`` unbuilt, after a statement that ends every path of
        their block (:meth:`unreached_statements`)."""
        self.unreached.update(stmts)
        if self.record is not None:
            self.record.unreached.update(stmts)

    @staticmethod
    def _logged(frame: Frame, before: Context, after: Context) -> Context:
        """``after``, the context past a statement; a grad set (a new context: a mode set, even
        to the mode ``before`` had) goes to :attr:`Frame.grad_log`."""
        if after is not before:
            frame.grad_log.append(_grad_of(after))
        return after

    @staticmethod
    def _end(frame: Frame, seq: Seq) -> Grad | None:
        """The grad mode at the end of the block just built as ``seq`` (:attr:`Frame.end_ctx`);
        ``None`` when it ends in a jump (no path falls out of its end)."""
        if seq.items and type(seq.items[-1]) is Jump or frame.end_ctx is None:
            return None
        return _grad_of(frame.end_ctx)

    @staticmethod
    def _arms_join(frame: Frame, ctx: Context, mark: int, ends) -> Grad | None:
        """The grad mode after a compound statement entered in ``ctx`` whose paths fall out of
        it in ``ends`` (``None``: a path that does not): ``ctx``'s mode when it set none
        (:attr:`Frame.grad_log` no longer than ``mark``), else the join of ``ends``
        (:func:`_join_grads`); ``None`` when no path falls out."""
        if len(frame.grad_log) == mark:
            return _grad_of(ctx)
        return _join_grads(ends)

    def small_stmts(self, frame: Frame, stmts, ctx: Context) -> Seq:
        """The small statements of one line (``if x: a(); return``); none after a jump runs.
        The grad mode is followed as in :meth:`stmts`."""
        seq = Seq()
        fixed = False
        for s in stmts:
            self.small_stmt(frame, s, ctx, seq.items)
            if seq.items and type(seq.items[-1]) is Jump:
                break
            new = self.grad_after(frame, s, ctx)
            fixed = fixed or new is not ctx and self._grad_statement(frame, s)
            ctx = self._logged(frame, ctx, new)
        frame.end_ctx = ctx
        frame.end_fixed = fixed
        return seq

    def grad_after(self, frame: Frame, s: cst.CSTNode, ctx: Context) -> Context:
        """The context of the statements after ``s`` in its block: ``torch.set_grad_enabled(False)``
        as a statement sets the grad mode until it is set again (a library function whose entry
        says ``grad = "arg"``: the mode its argument gives; ``torch.no_grad()`` as a statement only
        builds a context manager and changes nothing). :meth:`stmts` follows it to the rest of
        the block, and past the block's end to the mode its enclosing statement leaves.

        Grad mode is a state of the thread, so a call of a project function inlined here
        (``on_start_eval(model)`` as a statement, or the value of an assignment) leaves it
        where the function's returns leave it (:meth:`grad_on_return`): the mode its every
        return agrees on, ``"unknown"`` when they disagree, the caller's when it sets none."""
        call = _statement_call(s)
        if call is not None:
            left = self._grad_left.pop(id(call), None)
            if left is not None:
                grad, inherited, asked = left
                return replace(ctx, grad=grad, grad_inherited=inherited, grad_asked=asked)
        if not self._grad_statement(frame, s):
            return ctx
        return replace(ctx, grad=self.with_grad(frame, s.value, ctx.grad), grad_inherited=False, grad_asked=False)

    def _grad_statement(self, frame: Frame, s: cst.CSTNode) -> bool:
        """Whether small statement ``s`` is a call of a library function whose knowledge entry
        says ``grad = "arg"`` (``torch.set_grad_enabled(False)``): it sets the grad mode its
        argument gives, whatever the mode before it."""
        if type(s) is not cst.Expr or type(s.value) is not cst.Call:
            return False
        q, qualified = self.resolve(frame, dotted_name(s.value.func))
        summary = knowledge().callable(q) if qualified else None
        return summary is not None and summary.grad == "arg"

    def stmt(self, frame: Frame, stmt: cst.CSTNode, ctx: Context, out: list[Node]) -> Grad | None:
        """Build one statement into ``out``; the grad mode after it, as :meth:`_stmt`."""
        if frame.fresh_at and id(stmt) in frame.fresh_at:
            self._fresh_stmt(frame, stmt, ctx, out)
            return _grad_of(ctx)
        if not frame.given:
            return self._stmt(frame, stmt, ctx, out)
        # a parameter keeps the caller's object until a statement re-binds it; a loop, a
        # ``with ... as``, an ``except ... as`` may re-bind it before its body's statements run
        # (a loop's next iteration), an ``if`` only in its arms, after its test
        if type(stmt) is not cst.SimpleStatementLine and type(stmt) is not cst.If:
            self._forget_given(frame, stmt)
        after = self._stmt(frame, stmt, ctx, out)
        self._forget_given(frame, stmt)
        return after

    def _fresh_stmt(self, frame: Frame, stmt: cst.SimpleStatementLine, ctx: Context, out: list[Node]) -> None:
        """``name = copy.deepcopy(name)`` re-binding a parameter of :attr:`Frame.shadow`: the
        call reads the caller's object, its result is bound to the local symbol, which names
        the new object from here on."""
        name = frame.fresh_at.pop(id(stmt))
        s = stmt.body[0]
        self.expr_events(frame, s.value, ctx, out, (f"{frame.fid}:{name}",))
        del frame.shadow[name]
        frame.resolved = {k: v for k, v in frame.resolved.items() if k.partition(".")[0] != name}
        self.assign_event(frame, s, s.targets[0].target, "=", s.value, ctx, out)
        self._forget_given(frame, stmt)

    def _forget_given(self, frame: Frame, stmt: cst.CSTNode) -> None:
        """Drop from :attr:`Frame.given` the parameters ``stmt`` may re-bind."""
        if frame.given:
            names = bound_names(stmt)[0]
            for name in names.intersection(frame.given):
                del frame.given[name]

    def _stmt(self, frame: Frame, stmt: cst.CSTNode, ctx: Context, out: list[Node]) -> Grad | None:
        """Build one statement into ``out``. Returns the grad mode a compound statement leaves
        (``ctx``'s for a simple one, whose sets :meth:`stmts` follows; ``None`` when no path
        falls out of it): the join of the modes its paths fall out in (:meth:`_arms_join`),
        the mode at the end of a ``finally`` block on every path through it
        (:meth:`_try_grad`), the entry's after a ``with`` that sets a mode (its exit restores
        it); a loop's paths include the entry (no iteration) and every mode set in its body
        (a ``break`` may leave in any of them)."""
        mark = len(frame.grad_log)
        if type(stmt) is cst.SimpleStatementLine:
            for s in stmt.body:
                self.small_stmt(frame, s, ctx, out)
                if out and type(out[-1]) is Jump:
                    break  # ``return; model(x)``: the rest of the line never runs
        elif self.raising_read(frame, [head_part(stmt)], ctx, out):
            return None  # its test, iterable or subject reads a name nothing binds: no path falls out
        elif type(stmt) in (cst.If, cst.For, cst.While) and self.indexes_zero_dim(frame, stmt):
            self.expr_events(frame, stmt.iter if type(stmt) is cst.For else stmt.test, ctx, out)
            out.append(Jump("raise"))  # ``if loss.data[0] > best:`` of a 0-dim loss raises IndexError
            return None
        elif type(stmt) is cst.If:
            return self.if_stmt(frame, stmt, ctx, out)
        elif type(stmt) is cst.For and self.unrolled_symbols(frame, stmt) is not None:
            return self.unrolled_for(frame, stmt, ctx, out)
        elif type(stmt) is cst.For:
            self.expr_events(frame, stmt.iter, ctx, out)
            info = self.loop_info(frame, stmt, stmt.target, stmt.iter)
            inner = replace(ctx, loops=ctx.loops + (info,), conds=())
            outer_counters, outer_loops, outer_choices = frame.counters, frame.counter_loops, frame.choices
            outer_starts, outer_given = frame.counter_starts, frame.counter_given
            own = self.loop_counters(frame, stmt)
            frame.counters = outer_counters | own
            if own:
                frame.counter_loops = {**outer_loops, **dict.fromkeys(own, stmt)}
                start = self.counter_start(frame, stmt)
                if start is not None:
                    frame.counter_starts = {**outer_starts, **dict.fromkeys(own, start)}
                else:
                    given = self.counter_start_given(frame, stmt)
                    if given is not None:
                        frame.counter_given = {**outer_given, **dict.fromkeys(own, given)}
            frame.choices = {k: v for k, v in outer_choices.items() if k not in bound_names(stmt)[0]}
            frame.choices.update(self.loop_choices(frame, stmt))
            try:
                body = self.block(frame, stmt.body, inner)
            finally:
                frame.counters, frame.counter_loops, frame.choices = outer_counters, outer_loops, outer_choices
                frame.counter_starts, frame.counter_given = outer_starts, outer_given
            ends = [_grad_of(ctx), self._end(frame, body)]
            orelse = self.block(frame, stmt.orelse.body, ctx) if stmt.orelse else Seq()
            ends.append(self._end(frame, orelse) if stmt.orelse else None)
            info.count = self.iteration_count(frame, stmt.iter)
            info.display = info.count is not None and self.range_length(frame, stmt.iter) is None
            out.append(Loop(info, body, orelse, once=self.at_most_one(frame, stmt.iter)))
            return self._arms_join(frame, ctx, mark, ends + frame.grad_log[mark:])
        elif type(stmt) is cst.While:
            info = self.loop_info(frame, stmt, None, stmt.test)
            inner = replace(ctx, loops=ctx.loops + (info,), conds=())
            body = Seq()
            self.expr_events(frame, stmt.test, inner, body.items)
            built = self.block(frame, stmt.body, inner)
            ends = [_grad_of(ctx), self._end(frame, built)]
            body.items.extend(built.items)
            orelse = self.block(frame, stmt.orelse.body, ctx) if stmt.orelse else Seq()
            ends.append(self._end(frame, orelse) if stmt.orelse else None)
            infinite = type(stmt.test) is cst.Name and stmt.test.value == "True" or (
                type(stmt.test) is cst.Integer and stmt.test.value != "0"
            )
            out.append(Loop(info, body, orelse, infinite))
            return self._arms_join(frame, ctx, mark, ends + frame.grad_log[mark:])
        elif type(stmt) is cst.With:
            return self.with_stmt(frame, stmt, 0, ctx, ctx.grad, out)
        elif type(stmt) is cst.Try or isinstance(stmt, getattr(cst, "TryStar", ())):
            return self._try_stmt(frame, stmt, ctx, out)
        elif isinstance(stmt, cst.Match):
            self.expr_events(frame, stmt.subject, ctx, out)
            branches, ends = [], [_grad_of(ctx)]  # (no case may match)
            for c in stmt.cases:
                branches.append(self.block(frame, c.body, replace(ctx, conds=ctx.conds + (stmt,))))
                ends.append(self._end(frame, branches[-1]))
            node: Node = Seq()
            for branch in reversed(branches):
                node = If(stmt, branch, node if isinstance(node, Seq) else Seq([node]))
            out.append(node)
            return self._arms_join(frame, ctx, mark, ends)
        # FunctionDef / ClassDef: definitions are not executed here.
        return _grad_of(ctx)

    def unrolled_for(self, frame: Frame, stmt: cst.For, ctx: Context, out: list[Node]) -> Grad | None:
        """A ``for`` over a small display of objects (:meth:`unrolled_symbols`) built as its body
        once per element, in order, with the target standing for that element's symbol
        (``for m in [g, d]: m.eval()`` is ``g.eval()`` then ``d.eval()``): what the body does
        to the target it does to every element. The events keep the spans of the body's
        statements. The grad mode runs from one pass into the next; the answer is the mode at
        the end of the last pass (``None``: a pass ends in a jump, a ``raise``)."""
        symbols = self.unrolled_symbols(frame, stmt)
        self.expr_events(frame, stmt.iter, ctx, out)
        name = stmt.target.value
        had, before = name in frame.shadow, frame.shadow.get(name)
        reached: Context | None = ctx
        try:
            for sym in symbols:
                frame.shadow[name] = sym
                self._forget_resolved(frame, name)
                part = self.block(frame, stmt.body, reached)
                out.extend(part.items)
                if self._end(frame, part) is None:
                    reached = None
                    break
                reached = frame.end_ctx
        finally:
            if had:
                frame.shadow[name] = before
            else:
                del frame.shadow[name]
            self._forget_resolved(frame, name)
        return _grad_of(reached) if reached is not None else None

    @staticmethod
    def _forget_resolved(frame: Frame, name: str) -> None:
        """Drop the cached resolutions of ``name`` and its attributes in ``frame``."""
        frame.resolved = {k: v for k, v in frame.resolved.items() if k.partition(".")[0] != name}

    def unrolled_symbols(self, frame: Frame, stmt: cst.For) -> tuple[str, ...] | None:
        """The symbols a ``for`` statement binds its target to, one per pass, when it can be
        built as its body repeated once per element (:meth:`unrolled_for`): its target is a
        plain name the body never re-binds (nor a ``global``/``nonlocal`` names), it has no
        ``else``, its body no ``break``, ``continue``, ``return``, ``yield``, ``await`` or nested
        function, lambda or class, and its iterable is a list or tuple display
        (:meth:`_unrolled_display`) of at most :data:`_MAX_UNROLLED` elements, each a name or an
        attribute chain (``model_sa``, ``self.G``) of the program, not an import. ``None``
        for any other loop."""
        if type(stmt.target) is not cst.Name or stmt.orelse is not None:
            return None
        display = self._unrolled_display(frame, stmt.iter)
        if display is None or not 0 < len(display.elements) <= _MAX_UNROLLED:
            return None
        if any(type(n) in _NOT_UNROLLED for n in walk(stmt.body)):
            return None
        name = stmt.target.value
        rebound, declared = bound_names(stmt.body)
        if frame.node is not None:
            declared = declared | _declarations([frame.node])
        else:
            declared = declared | _declared_global(frame.module)
        if name in rebound or name in declared:
            return None
        symbols = []
        for e in display.elements:
            if type(e) is not cst.Element or not _is_plain_chain(e.value):
                return None
            sym, qualified = self.resolve(frame, dotted_name(e.value))
            if sym is None or qualified:
                return None
            symbols.append(sym)
        return tuple(symbols)

    def _unrolled_display(self, frame: Frame, iterable: cst.BaseExpression) -> cst.List | cst.Tuple | None:
        """The list or tuple display a ``for`` iterates: the iterable itself, or the value of a
        variable of this function (or of the module's own code, at module level) bound once to a
        display and read nowhere but as the iterable of ``for`` statements (nothing can mutate
        it), whose elements' first names are bound at most once there (they name the same
        objects at the loop as at the display). ``None`` otherwise."""
        if type(iterable) in (cst.List, cst.Tuple):
            return iterable
        if type(iterable) is not cst.Name or iterable.value not in frame.locals or iterable.value in frame.shadow:
            return None
        name = iterable.value
        if frame.node is not None:
            if name in all_param_names(frame.node):
                return None
            bound = self._bound_once_in(frame.node)
            scope: list = [frame.node.body]
        else:
            bound = module_bindings(frame.module)
            scope = list(frame.module.body)
        value = bound.get(name)
        if type(value) not in (cst.List, cst.Tuple):
            return None
        params = all_param_names(frame.node) if frame.node is not None else ()
        for e in value.elements:
            if type(e) is not cst.Element or not _is_plain_chain(e.value):
                return None
            head = dotted_name(e.value).partition(".")[0]
            if head in bound and bound[head] is None:
                return None  # bound more than once: the display and the loop may see different objects
            if head in params and head in bound:
                return None  # a parameter re-bound
        # read only as the iterable of ``for`` statements, bound only by its one assignment
        allowed = set()
        for node in scope:
            for n in walk(node):
                if type(n) is cst.For and type(n.iter) is cst.Name:
                    allowed.add(id(n.iter))
                elif type(n) is cst.AssignTarget and type(n.target) is cst.Name:
                    allowed.add(id(n.target))
        for node in scope:
            for n in walk(node):
                if type(n) is cst.Name and n.value == name and id(n) not in allowed:
                    return None
        return value

    def _try_stmt(self, frame: Frame, stmt: cst.Try, ctx: Context, out: list[Node]) -> Grad | None:
        """A ``try`` statement; the grad mode after it (``None``: no path falls out of it).

        Its body, handlers, ``else`` and ``finally`` blocks are each built entered in ``ctx``.
        The mode on leaving the ``try`` part (:func:`_grad_through` carries the mode of each
        path into the block it runs next): the body's end through the ``else`` block, and each
        handler's end, the handler entered in ``ctx``'s mode or in any mode the body set (a
        ``raise`` may come after any of its sets); their join. A ``finally`` block runs on
        every exit: the mode at its end holds after the statement, and on each ``return`` of
        the ``try`` part (:attr:`Frame.grad_exits` recorded while it was built), unless an
        enclosing ``with`` that set a mode restores its own on those returns
        (:attr:`Frame.grad_scope`)."""
        entry, mark = _grad_of(ctx), len(frame.grad_log)
        first_exit = len(frame.grad_exits)
        body = self.block(frame, stmt.body, ctx)
        body_end, body_sets = self._end(frame, body), frame.grad_log[mark:]
        handlers, handler_ends = [], []
        for h in stmt.handlers:
            at = len(frame.grad_log)
            handlers.append(self.block(frame, h.body, ctx))
            handler_ends.append((self._end(frame, handlers[-1]), len(frame.grad_log) > at, frame.end_fixed))
        at = len(frame.grad_log)
        orelse = self.block(frame, stmt.orelse.body, ctx) if stmt.orelse else Seq()
        normal = body_end
        if stmt.orelse and body_end is not None:
            normal = _grad_through(entry, self._end(frame, orelse), len(frame.grad_log) > at, body_end,
                                   frame.end_fixed)
        ends = [normal] + [_grad_through(entry, end, sets, m, fixed)
                           for end, sets, fixed in handler_ends for m in {entry, *body_sets}]
        last_exit, at = len(frame.grad_exits), len(frame.grad_log)
        final = self.block(frame, stmt.finalbody.body, ctx) if stmt.finalbody else Seq()
        out.append(Try(body, handlers, orelse, final))
        if len(frame.grad_log) == mark:
            return entry
        left = _join_grads(ends)
        if not stmt.finalbody:
            return left
        final_end, final_sets, fixed = self._end(frame, final), len(frame.grad_log) > at, frame.end_fixed
        if final_sets and frame.grad_scope is None:
            exits = [_grad_through(entry, final_end, True, m, fixed) for m in frame.grad_exits[first_exit:last_exit]]
            frame.grad_exits[first_exit:last_exit] = [m for m in exits if m is not None]
        return _grad_through(entry, final_end, final_sets, left, fixed) if left is not None else None

    def with_stmt(self, frame: Frame, stmt: cst.With, start: int, ctx: Context, grad: str, out: list[Node],
                  grad_set: bool = False) -> Grad | None:
        """The items of a ``with`` statement from number ``start`` on, entered in grad mode
        ``grad`` (``grad_set``: an item before ``start`` set it), then its body and the exits
        of those items. Returns the grad mode after the statement: ``ctx``'s when an item sets
        a mode (its exit restores the one it was entered in: the sets of the body leave
        :attr:`Frame.grad_log`), else the mode at the body's end (``None``: it ends in a jump).

        An item that picks its context manager by a condition (``with torch.enable_grad() if
        is_train else torch.no_grad():``) and whose arms set different grad modes makes an
        ``If`` on that condition: the rest of the statement is built under each arm's mode, so
        that an ``if is_train:`` in the body is taken with the arm that enabled gradients. Past
        :data:`MAX_WITH_SPLITS` such items around the statement, the body's mode is
        ``"unknown"``. The body runs on either arm: its events keep the ``conds`` of the
        statement."""
        exits: list[Node] = []
        guarded = len(out)  # where the part that the exits close begins (after the first one's entry)
        for i in range(start, len(stmt.items)):
            item = stmt.items[i]
            # (``with grad_context():``, ``grad_context = torch.enable_grad if is_train else
            # torch.no_grad`` bound once: the grad mode of what the variable holds)
            chosen = self.bound_context(frame, item.item)
            block = self.autocast_block(frame, chosen)
            # the items after this one, and the body, run inside its autocast block
            entered = ctx if block is None else replace(ctx, autocast=ctx.autocast + (block,))
            arms = self._grad_arms(frame, chosen, grad)
            if arms is not None and self._with_splits < MAX_WITH_SPLITS:
                if item.asname is not None:
                    self.expr_events(frame, item.item, ctx, out, self._target_syms(frame, item.asname.name))
                test = chosen.test
                sides = []
                self._with_splits += 1
                try:
                    for mode in arms:
                        side = Seq()
                        self.with_stmt(frame, stmt, i + 1, entered, mode, side.items, True)
                        sides.append(side)
                finally:
                    self._with_splits -= 1
                self._place(item.item, frame.module)
                out.append(If(item.item, sides[0], sides[1], self.absence(frame, test), test))
                _close_with(out, guarded, exits)
                return _grad_of(ctx)
            mode = self.with_grad(frame, chosen, grad)  # (arms that disagree, past the splits: "unknown")
            # (an item that sets the mode the block already had sets it all the same)
            grad_set = grad_set or mode != grad or self.with_grad(frame, chosen, None) is not None
            grad = mode
            cm = self._context_manager(frame, item.item)
            if cm is not None:  # with eval_mode(model): the generator's code around the block
                callee, split = cm
                probe = self._probe(frame, item.item, ctx)
                out.append(self.inline(frame, replace(callee, func=split.enter), probe, ctx, ()))
                guarded = len(out) if not exits else guarded
                exits.append(self.inline(frame, replace(callee, func=split.exit), probe, ctx, ()))
                if split.grad:
                    grad, grad_set = split.grad, True
            elif (methods := self._context_class(frame, item.item)) is not None:
                enter, exit_ = methods  # with Timer(model): __init__, __enter__ ... __exit__
                targets = self._target_syms(frame, item.asname.name) if item.asname is not None else ()
                self.expr_events(frame, item.item, ctx, out, targets)
                probe = Call(item.item, None, [], ctx)
                out.append(self.inline(frame, enter, probe, ctx, ()))
                if exit_ is not None:
                    guarded = len(out) if not exits else guarded
                    exits.append(self.inline(frame, exit_, probe, ctx, ()))
            elif item.asname is not None:
                targets = self._target_syms(frame, item.asname.name)
                self.expr_events(frame, item.item, ctx, out, targets)
            block_mode = self._block_mode(frame, item.item, ctx)
            if block_mode is not None:  # with eval_mode(model): (MONAI) model.eval() ... model.train(saved)
                enter, exit_ = block_mode
                out.extend(enter)
                guarded = len(out) if not exits else guarded
                exits.append(Seq(exit_))
            ctx = entered
        inner = replace(ctx, grad=grad, grad_inherited=ctx.grad_inherited and not grad_set,
                        grad_asked=grad == "enabled" if grad_set else ctx.grad_asked)
        scope = frame.grad_scope
        if grad_set and scope is None:
            frame.grad_scope = ctx  # leaving the block restores this mode, also by a return inside it
        mark = len(frame.grad_log)
        try:
            body = self.block(frame, stmt.body, inner)
        finally:
            frame.grad_scope = scope
        out.extend(body.items)
        _close_with(out, guarded, exits)
        if grad_set:
            del frame.grad_log[mark:]
            return _grad_of(ctx)
        return self._end(frame, body) if len(frame.grad_log) > mark else _grad_of(ctx)

    def _block_mode(self, frame: Frame, item: cst.BaseExpression, ctx: Context) -> tuple[list, list] | None:
        """For a ``with`` item calling a library context manager whose entry has a
        ``block_mode`` (MONAI's ``eval_mode(*nets)``: each module put in eval mode for the
        block, then back in the mode it had), the raw events of entering and of leaving:
        per module named by the entry's argument reference, ``saved = model.training`` and
        ``model.eval()`` (or ``model.train()``), then ``model.train(saved)``, the shape the
        rules read as a mode saved and restored. ``None`` for any other item."""
        if type(item) is not cst.Call:
            return None
        q, qualified = self.resolve(frame, dotted_name(item.func))
        summary = knowledge().callable(q) if qualified else None
        if summary is None or summary.block_mode is None:
            return None
        mode, ref = summary.block_mode
        probe = self._probe(frame, item, ctx)
        if ref == "*":
            chosen = [a for a in probe.args if a.keyword is None and type(a.node) is not cst.StarredElement]
        else:
            parts = ref_parts(ref)
            index, keyword = parts if parts is not None else (None, None)
            positional = [a for a in probe.args if a.keyword is None]
            chosen = [a for a in probe.args if keyword is not None and a.keyword == keyword]
            if not chosen and index is not None and index < len(positional):
                chosen = [positional[index]]
        enter: list = []
        exit_: list = []
        for arg in chosen:
            if arg.sym is None:
                continue  # not a plain name (a call's result): no object the rules follow
            var = f"_block_mode_{next(self._ids)}"
            saved = f"{frame.fid}:{var}" if frame.fid else var
            enter.append(Assign(item, saved, "=", None, f"{arg.sym}.training", "expr",
                                frozenset({f"{arg.sym}.training"}), ctx))
            enter.append(Call(item, f"{arg.sym}.{mode}", [], ctx))
            exit_.append(Call(item, f"{arg.sym}.train", [Arg(None, cst.Name(var), saved, frozenset({saved}))], ctx))
        self.n_events += 3 * len(exit_)
        return enter, exit_

    def _grad_arms(self, frame: Frame, item: cst.BaseExpression, grad: str) -> tuple[str, str] | None:
        """For a ``with`` item ``A if c else B`` whose arms set different grad modes (entered in
        mode ``grad``), the modes of its arms (``c`` true, false); ``None`` otherwise. Both arms
        alike give that mode to :meth:`with_grad`; a constant parameter picks its arm there."""
        if type(item) is not cst.IfExp:
            return None
        modes = (self.with_grad(frame, item.body, grad), self.with_grad(frame, item.orelse, grad))
        if modes[0] == modes[1]:
            return None
        if self.decide(frame, item.test) is not None:
            return None
        return modes

    def if_stmt(self, frame: Frame, stmt: cst.If, ctx: Context, out: list[Node]) -> Grad | None:
        """An ``if`` statement: the arm its test decides, else an ``If`` of both. Returns the
        grad mode after it (:meth:`_arms_join` of the arms it may take, a missing ``else`` arm
        keeping ``ctx``'s)."""
        mark = len(frame.grad_log)
        decided = self.decide(frame, stmt.test)
        if decided is None:  # ``if torch.is_autocast_enabled():`` after the autocast block closed
            decided = self.autocast_decided(frame, stmt.test, ctx)
        split = self.choice_split(frame, stmt.test) if decided is None else None
        if split is not None:  # for k in [1, 0]: `if k == 0: ... elif k == 1:` takes one of its arms
            name, yes, no = split
            if not yes or not no:
                decided = bool(yes)
            else:
                outer = frame.choices
                frame.choices = {**outer, name: yes}
                try:
                    body = self.block(frame, stmt.body, replace(ctx, conds=ctx.conds + (stmt,)))
                finally:
                    frame.choices = outer
                return self._if_arms(frame, stmt, ctx, out, body, {**outer, name: no}, mark, self._end(frame, body))
        if decided is not None:  # load_model(..., phase="train"): `if phase == "eval":` is False
            if decided:
                arm = self.block(frame, stmt.body, ctx)
            elif type(stmt.orelse) is cst.If:
                return self.if_stmt(frame, stmt.orelse, ctx, out)
            elif type(stmt.orelse) is cst.Else:
                arm = self.block(frame, stmt.orelse.body, ctx)
            else:
                return _grad_of(ctx)
            out.extend(arm.items)
            return self._arms_join(frame, ctx, mark, [self._end(frame, arm)])
        return self._if_arms(frame, stmt, ctx, out, mark=mark)

    def _if_arms(self, frame: Frame, stmt: cst.If, ctx: Context, out: list[Node], body: Seq | None = None,
                 else_choices: dict | None = None, mark: int = 0, body_end: Grad | None = None) -> Grad | None:
        """The ``If`` of an ``if`` statement its test does not decide (``body``: its first arm,
        already built, ending in grad mode ``body_end``; ``else_choices``: :attr:`Frame.choices` in its other arm). Returns the
        grad mode after it, the join of its arms' (:meth:`_arms_join`; ``mark``: the length of
        :attr:`Frame.grad_log` before the statement)."""
        self.expr_events(frame, stmt.test, ctx, out)
        absent = self.absence(frame, stmt.test)
        given = self._given_at(frame, absent)  # (before the arms, which may re-bind them)
        inner = replace(ctx, conds=ctx.conds + (stmt,))
        if body is None:
            body = self.block(frame, stmt.body, inner)
            body_end = self._end(frame, body)
        ends = [body_end]
        orelse = Seq()
        outer = frame.choices
        if else_choices is not None:
            frame.choices = else_choices
        try:
            if type(stmt.orelse) is cst.If:
                ends.append(self.if_stmt(frame, stmt.orelse, inner, orelse.items))
            elif type(stmt.orelse) is cst.Else:
                orelse = self.block(frame, stmt.orelse.body, inner)
                ends.append(self._end(frame, orelse))
            else:
                ends.append(_grad_of(ctx))
        finally:
            frame.choices = outer
        self._place(stmt, frame.module)
        out.append(If(stmt, body, orelse, absent, given=given, fact=self._fact_of(frame, stmt.test),
                      mode_of=self._mode_of(frame, stmt.test), counts=self._counts(frame, stmt.test),
                      not_instance=self.not_instance(frame, stmt.test), first_pass=self.first_pass(frame, stmt.test),
                      first_pass_given=self.first_pass_given(frame, stmt.test),
                      learns=self._learns(frame, stmt.test)))
        if out[-1].fact is not None:
            self._fact_ifs.append(out[-1])
            if frame.self_sym is not None and out[-1].fact[0].rpartition(".")[0] == frame.self_sym \
                    and truth_arms(stmt.test) is not None:
                self._own_truths.append((out[-1], frame))  # (If.constant: _settle_facts)
        if out[-1].learns and (out[-1].fact is None or truth_test(stmt.test) is None):
            self._learning_ifs.append(out[-1])
        return self._arms_join(frame, ctx, mark, ends)

    def _counts(self, frame: Frame, test: cst.BaseExpression) -> cst.For | None:
        """:attr:`If.counts` of an ``if`` on ``test``: the ``for`` statement of the function
        being built whose counter (:meth:`loop_counters`) the test compares with an integer
        literal (``step == 0``, ``0 == step``), else ``None``."""
        if type(test) is not cst.Comparison or len(test.comparisons) != 1:
            return None
        comp = test.comparisons[0]
        if type(comp.operator) is not cst.Equal:
            return None
        left, right = test.left, comp.comparator
        if type(left) is cst.Integer:
            left, right = right, left
        if type(left) is not cst.Name or type(right) is not cst.Integer:
            return None
        return frame.counter_loops.get(left.value)

    def first_pass(self, frame: Frame, test: cst.BaseExpression) -> tuple[cst.For, bool] | None:
        """:attr:`If.first_pass` of an ``if`` on ``test``: ``(loop, outcome)`` where ``test``
        reads the counter of an enclosing ``for`` of the function being built whose first value
        the code fixes (:attr:`Frame.counter_starts`: ``range(n)``, ``range(1, n)``,
        ``enumerate(xs, start=1)``), and :meth:`decide` gives ``test`` the value ``outcome``
        with the counter bound to that first value (``epoch != 0``, ``epoch > 0``, ``0 < epoch``,
        ``epoch >= 0 + 1``, ``not epoch == 0``, ``epoch``, ``epoch % 2 == 1``: all false at 0);
        ``None`` otherwise (the first value unknown, ``range(args.start_epoch, n)``, or a test
        that other unknown values decide, ``epoch > 0 and flag``). The innermost such loop
        whose first value decides the test is given."""
        if not frame.counter_starts:
            return None
        names = names_in(test)
        outer = frame.constants
        try:
            for name in reversed(frame.counter_starts):
                if name not in names or name in outer:
                    continue
                frame.constants = {**outer, name: frame.counter_starts[name]}
                outcome = self.decide(frame, test)
                if outcome is not None:
                    return frame.counter_loops[name], outcome
        finally:
            frame.constants = outer
        return None

    def first_pass_given(self, frame: Frame, test: cst.BaseExpression) -> tuple[cst.For, bool, str, int] | None:
        """:attr:`If.first_pass_given` of an ``if`` on ``test``, where :meth:`first_pass` gives
        nothing: ``(loop, outcome, symbol, value)`` where ``test`` reads the counter of an
        enclosing ``for`` of the function being built whose first value is the variable
        ``symbol`` (:attr:`Frame.counter_given`: ``range(start_epoch, n)`` after ``start_epoch
        = 0`` on one path and ``start_epoch = ckpt["epoch"]`` on another), and :meth:`decide`
        gives ``test`` the value ``outcome`` with the counter bound to ``value``, an integer
        literal ``symbol`` is bound to (``if epoch != 0:``); ``None`` otherwise. A path on which
        the variable holds ``value`` where the loop starts is on such a first pass."""
        if not frame.counter_given:
            return None
        names = names_in(test)
        outer = frame.constants
        try:
            for name in reversed(frame.counter_given):
                if name not in names or name in outer or name in frame.counter_starts:
                    continue
                sym, values = frame.counter_given[name]
                for value in values:
                    frame.constants = {**outer, name: value}
                    outcome = self.decide(frame, test)
                    if outcome is not None:
                        return frame.counter_loops[name], outcome, sym, value
        finally:
            frame.constants = outer
        return None

    def counter_start_given(self, frame: Frame, stmt: cst.For) -> tuple[str, tuple[int, ...]] | None:
        """:attr:`Frame.counter_given` of ``stmt``, a ``for`` over ``range(start, ...)`` whose
        start :meth:`counter_start` does not fix: ``(symbol, values)`` when ``start`` is a plain
        local variable of the function being built (not a parameter, not a global) every binding
        of which is a plain assignment ``start = <expression>`` (:func:`_plain_int_bindings`:
        each then an ``Assign`` of the IR, whose path the dataflow follows), ``values`` the
        integer literals among those assignments; ``None`` otherwise (an attribute, a parameter,
        a name bound by a loop, an unpacking or ``+=``, declared ``global`` or ``nonlocal``)."""
        it = stmt.iter
        if type(it) is not cst.Call or dotted_name(it.func) != "range" or not 2 <= len(it.args) <= 3:
            return None
        if any(a.star or a.keyword is not None for a in it.args):
            return None
        start = it.args[0].value
        if type(start) is not cst.Name or frame.node is None or start.value not in frame.locals:
            return None
        name = start.value
        if name in frame.subst or name in frame.constants or name in all_param_names(frame.node):
            return None
        values = _plain_int_bindings(frame.node, name)
        if not values:
            return None
        sym, qualified = self.resolve(frame, name)
        if sym is None or qualified:
            return None
        return sym, values

    def counter_start(self, frame: Frame, stmt: cst.For) -> int | None:
        """The integer the counter of ``stmt`` (:meth:`loop_counters`, not empty) is bound to on
        the loop's first pass, where the code fixes it: ``0`` for ``range(n)`` and
        ``enumerate(xs)``, ``a`` for ``range(a, n)`` and ``range(a, n, s)`` and ``k`` for
        ``enumerate(xs, k)`` or ``enumerate(xs, start=k)`` when :meth:`run_constant` knows
        ``a`` or ``k`` (a literal, a name bound once to one); ``None`` otherwise
        (``range(args.start_epoch, n)``, a starred argument). A loop whose iterable is empty
        has no pass: the value is that of the first pass, if any."""
        it = stmt.iter
        args = it.args
        if any(a.star for a in args):
            return None
        if it.func.value == "range":
            if any(a.keyword is not None for a in args) or not 1 <= len(args) <= 3:
                return None
            return 0 if len(args) == 1 else self.run_constant(frame, args[0].value)
        start = [a.value for a in args[1:] if a.keyword is None or a.keyword.value == "start"]
        if not args or args[0].keyword is not None or len(start) != len(args) - 1 or len(start) > 1:
            return None
        return self.run_constant(frame, start[0]) if start else 0

    def _fact_of(self, frame: Frame, test: cst.BaseExpression) -> tuple[str, str] | None:
        """:attr:`If.fact` of an ``if`` on ``test``: the symbol and dotted name of the one
        attribute it tests (:func:`~loopcheck.engine.attr_facts.fact_subject`), not a
        library's (``torch.backends.cudnn.enabled``)."""
        name = fact_subject(test)
        if name is None:
            return None
        sym, qualified = self.resolve(frame, name)
        return (sym, name) if sym is not None and not qualified and "." in sym else None

    def _learns(self, frame: Frame, test: cst.BaseExpression) -> tuple:
        """:attr:`If.learns` of an ``if`` on ``test``: what each arm says of the attributes it
        compares with literals (:func:`~loopcheck.engine.attr_facts.learned`), each attribute
        resolved to its symbol as :meth:`_fact_of` resolves it (not a library's)."""
        if type(test) not in (cst.BooleanOperation, cst.Comparison, cst.UnaryOperation, cst.Attribute):
            return ()
        out = []
        for arm in (True, False):
            for name, kind, what in learned(test, arm):
                sym, qualified = self.resolve(frame, name)
                if sym is None or qualified or "." not in sym:
                    continue
                if kind != "truth":
                    what = literal_value(what)
                    if what is NO_VALUE:
                        continue
                out.append((arm, sym, name, kind, what))
        return tuple(out)

    def _mode_of(self, frame: Frame, test: cst.BaseExpression) -> tuple[str, str] | None:
        """:attr:`If.mode_of` of an ``if`` on ``test``: the symbol of the module whose mode
        attribute it tests (:func:`~loopcheck.engine.attr_facts.mode_subject`), not a
        library's, and the attribute's dotted name in the test."""
        name = mode_subject(test)
        if name is None:
            return None
        sym, qualified = self.resolve(frame, name.rpartition(".")[0])
        return (sym, name) if sym is not None and not qualified else None

    def _given_at(self, frame: Frame, absent: tuple[tuple[str, bool], ...]) -> tuple[tuple[str, str], ...]:
        """The symbols of ``absent`` that hold, here, the object a caller passed by name to a
        parameter (:attr:`Frame.given`), each with the caller's symbol."""
        if not absent or not frame.given:
            return ()
        held = {self.resolve(frame, name)[0]: sym for name, sym in frame.given.items()}
        return tuple((sym, held[sym]) for sym in dict.fromkeys(sym for sym, _ in absent) if sym in held)

    def absence(self, frame: Frame, test: cst.BaseExpression) -> tuple[tuple[str, bool], ...]:
        """Where an ``if`` test says an object is not there: ``x is None`` (body),
        ``x is not None``/``x`` (else-arm), ``isinstance(x, nn.Module)`` (else-arm), and each
        conjunct of an ``and`` for the body."""
        out: list[tuple[str, bool]] = []

        def sym(e) -> str | None:
            s, q = self.resolve(frame, dotted_name(e))
            return None if q else s

        if type(test) is cst.BooleanOperation and isinstance(test.operator, cst.And):
            for part in (test.left, test.right):
                out += [(x, arm) for x, arm in self.absence(frame, part) if arm is True]
            return tuple(out)
        if type(test) is cst.UnaryOperation and isinstance(test.operator, cst.Not):
            return tuple((x, not arm) for x, arm in self.absence(frame, test.expression))
        if type(test) is cst.Comparison and len(test.comparisons) == 1:
            comp = test.comparisons[0]
            if type(comp.comparator) is cst.Name and comp.comparator.value == "None":
                x = sym(test.left)
                if x is not None:
                    if isinstance(comp.operator, cst.Is):
                        out.append((x, True))
                    elif isinstance(comp.operator, cst.IsNot):
                        out.append((x, False))
            return tuple(out)
        if type(test) is cst.Call and dotted_name(test.func) == "isinstance" and len(test.args) == 2:
            classes = test.args[1].value
            names = [dotted_name(e.value) for e in classes.elements] if type(classes) is cst.Tuple else [dotted_name(classes)]
            if any(n and n.rpartition(".")[2] in ("Module", "Optimizer", "LRScheduler", "_LRScheduler") for n in names):
                x = sym(test.args[0].value)
                if x is not None:
                    out.append((x, False))
            return tuple(out)
        if isinstance(test, (cst.Name, cst.Attribute)):
            x = sym(test)
            if x is not None:
                out.append((x, False))
        return tuple(out)

    def not_instance(self, frame: Frame, test: cst.BaseExpression) -> tuple[tuple[str, bool, tuple[str, ...]], ...]:
        """Where an ``if`` test says an object is an instance of none of some classes:
        ``isinstance(x, C)`` or ``isinstance(x, (C, D))`` in the else-arm, ``not
        isinstance(...)`` in the body (see :attr:`If.not_instance`). The object is a dotted
        name the frame resolves to a symbol; the classes are qualified through the imports
        (a name the frame does not import is kept as written).

        A compound test narrows in the arm where each of its operands has a known value: the
        body of ``if s and not isinstance(s, C):`` (both operands true there), the else-arm of
        ``if s is None or isinstance(s, C):`` (both false there); ``not`` around either swaps
        the arms. The other arm says nothing of the object (one operand or another failed)."""
        arm = False
        while type(test) is cst.UnaryOperation and isinstance(test.operator, cst.Not):
            test, arm = test.expression, not arm
        if type(test) is cst.BooleanOperation:
            # ``and`` is true only where both operands are: what an operand says where it is
            # true holds in the arm where the whole is; ``or`` likewise where both are false
            both = type(test.operator) is cst.And
            out = tuple(t for side in (test.left, test.right) for t in self.not_instance(frame, side) if t[1] is both)
            return tuple((x, t_arm is not arm, classes) for x, t_arm, classes in out)
        if type(test) is not cst.Call or dotted_name(test.func) != "isinstance" or len(test.args) != 2 \
                or any(a.keyword is not None or a.star for a in test.args):
            return ()
        if "isinstance" in frame.module.globals:
            return ()  # a function of the module that shadows the builtin
        x, qualified = self.resolve(frame, dotted_name(test.args[0].value))
        if x is None or qualified:
            return ()
        given = test.args[1].value
        parts = [e.value for e in given.elements] if type(given) is cst.Tuple else [given]
        classes = []
        for part in parts:
            d = dotted_name(part)
            if d is None:
                return ()  # a class computed at run time: what it excludes is not known
            q, qual = self.resolve(frame, d)
            classes.append(q if qual and q else d)
        return ((x, arm, tuple(classes)),)

    def with_grad(self, frame: Frame, item: cst.BaseExpression, grad: str) -> str:
        """The grad mode inside ``with item:`` (or a function decorated with ``@item``),
        entered in mode ``grad``: from the library knowledge (``torch.no_grad``: disabled;
        ``torch.set_grad_enabled(x)``: from ``x``); for ``A if c else B``, the arm a constant
        parameter decides, else the mode both arms agree on, else ``"unknown"``."""
        if type(item) is cst.IfExp:
            decided = self.decide(frame, item.test)
            if decided is not None:
                return self.with_grad(frame, item.body if decided else item.orelse, grad)
            modes = {self.with_grad(frame, arm, grad) for arm in (item.body, item.orelse)}
            return modes.pop() if len(modes) == 1 else "unknown"
        call = item if type(item) is cst.Call else None
        dotted = dotted_name(call.func if call else item)
        q, qualified = self.resolve(frame, dotted)
        summary = knowledge().callable(q) if qualified else None
        if summary is None and not qualified and _bound_only_by_star(frame, dotted):
            return "unknown"  # ``torch`` from ``from torch_snippets import *``: it may be no_grad
        mode = summary.grad if summary is not None else None
        if mode == "arg":
            if call is None or not call.args:
                return "unknown"
            v = call.args[0].value
            if type(v) is cst.Name and v.value in ("True", "False"):
                return "enabled" if v.value == "True" else "disabled"
            return "unknown"
        return mode or grad

    def at_most_one(self, frame: Frame, iterable: cst.BaseExpression) -> bool:
        """Whether a ``for`` loop's iterable has at most one item, by run constants alone: the
        builtin ``range`` over integers :meth:`run_constant` knows (``range(1)``,
        ``range(num_epochs)`` with ``num_epochs = 1`` bound once), or a list or tuple display
        of at most one element, also as the argument of a parameter the function never re-binds
        (``fit_generator([(inputs, labels)])`` into ``for batch in generator:``). Its loop
        then has no back edge."""
        if type(iterable) is cst.Name and iterable.value in frame.displays:
            iterable = frame.displays[iterable.value]
        t = type(iterable)
        if t is cst.List or t is cst.Tuple:
            return len(iterable.elements) <= 1 and all(type(e) is cst.Element for e in iterable.elements)
        count = self.range_length(frame, iterable)
        return count is not None and count <= 1

    def iteration_count(self, frame: Frame, iterable: cst.BaseExpression) -> int | None:
        """The number of iterations of a ``for`` loop over ``iterable`` when the code alone fixes
        it (:attr:`LoopInfo.count`): a ``range`` over run constants (:meth:`range_length`), or a
        list or tuple display without a starred element (``for opt in [opt_d, opt_g]:``: two
        passes), written in the loop or given by the inlined call to a parameter the function
        never re-binds (:attr:`Frame.displays`); ``None`` otherwise."""
        if type(iterable) is cst.Name and iterable.value in frame.displays:
            iterable = frame.displays[iterable.value]
        t = type(iterable)
        if t is cst.List or t is cst.Tuple:
            elements = iterable.elements
            return len(elements) if all(type(e) is cst.Element for e in elements) else None
        return self.range_length(frame, iterable)

    def range_length(self, frame: Frame, iterable: cst.BaseExpression) -> int | None:
        """The number of items of a ``for`` loop's iterable when it is the builtin ``range``
        over integers :meth:`run_constant` knows (``range(90)``, ``range(num_epochs)`` with
        ``num_epochs = 90`` bound once), ``None`` otherwise."""
        if type(iterable) is not cst.Call or type(iterable.func) is not cst.Name or iterable.func.value != "range":
            return None
        if self.resolve(frame, "range") != ("range", True):  # a ``range`` of the file's own
            return None
        args = iterable.args
        if not 1 <= len(args) <= 3 or any(a.keyword is not None or a.star for a in args):
            return None
        values = [self.run_constant(frame, a.value) for a in args]
        if None in values or values[2:] == [0]:
            return None
        return len(range(*values))

    def decide(self, frame: Frame, test: cst.BaseExpression) -> bool | None:
        """The value an ``if`` test has on every run, ``None`` when the code alone does not fix
        it: a test over constant parameters (:func:`decide_test`: ``phase == "eval"``, ``not amp``),
        or a comparison of integers :meth:`int_value` knows (``(epoch + 1) % val_interval == 0``
        with ``val_interval = 1`` bound once: always true), ``not`` of one, ``and``/``or`` of
        two; or a test of a name against ``None`` whose value is never ``None`` (:meth:`none_test`).
        Such a test calls nothing, so deciding it drops no event."""
        if frame.constants:
            decided = decide_test(test, frame.constants)
            if decided is not None:
                return decided
        t = type(test)
        if t is cst.Name:  # ``if not use_mxnet:`` with ``use_mxnet = False`` bound once
            value = self.run_literal(frame, test.value)
            return None if value is NO_VALUE else bool(value)
        if t is cst.Comparison and len(test.comparisons) == 1 and type(test.left) is cst.Name:
            # ``if mode == "frozen":`` with ``mode = "frozen"`` bound once
            value = self.run_literal(frame, test.left.value)
            if value is not NO_VALUE:
                decided = decide_test(test, {test.left.value: value})
                if decided is not None:
                    return decided
        if t is cst.Comparison:  # ``if val_loader is None:`` with a DataLoader passed in
            decided = self.none_test(frame, test)
            if decided is not None:
                return decided
        if t is cst.UnaryOperation and type(test.operator) is cst.Not:
            inner = self.decide(frame, test.expression)
            return None if inner is None else not inner
        if t is cst.BooleanOperation:
            left, right = self.decide(frame, test.left), self.decide(frame, test.right)
            if left is None or right is None:
                return None
            return (left and right) if type(test.operator) is cst.And else (left or right)
        if t is not cst.Comparison or len(test.comparisons) != 1:
            return None
        compare = _COMPARE.get(type(test.comparisons[0].operator))
        if compare is None:
            return None
        left = self.int_value(frame, test.left)
        right = self.int_value(frame, test.comparisons[0].comparator) if left is not None else None
        return None if right is None else compare(left, right)

    # -- the autocast state ----------------------------------------------------------------
    def autocast_block(self, frame: Frame, item: cst.BaseExpression) -> tuple[str, bool | None] | None:
        """What ``with item:`` (or a function decorated ``@item``) does to the autocast state,
        as a pair of :attr:`Context.autocast <loopcheck.engine.ir.Context.autocast>`:
        ``(device, enabled)`` for an autocast context manager of the knowledge (``autocast =
        {does = "block"}``: ``torch.autocast("cuda")``, ``torch.cuda.amp.autocast(enabled=False)``;
        the device type ``"?"`` when its argument is not a string the code fixes, ``enabled``
        ``None`` when its argument is not a boolean the code fixes); ``None`` for an item that
        leaves the state alone (a library entry without ``autocast``, ``torch.no_grad()``, a
        builtin, ``open(path)``); ``("*", None)`` for anything else, which may set it (a context
        manager or decorator of the project, a library's without an entry, a variable). ``A if c
        else B``: the arm a constant decides, else the block both arms agree on."""
        if type(item) is cst.IfExp:
            decided = self.decide(frame, item.test)
            if decided is not None:
                return self.autocast_block(frame, item.body if decided else item.orelse)
            arms = {self.autocast_block(frame, arm) for arm in (item.body, item.orelse)}
            return arms.pop() if len(arms) == 1 else ("*", None)
        call = item if type(item) is cst.Call else None
        dotted = dotted_name(call.func if call is not None else item)
        if dotted is None:
            return ("*", None)
        q, qualified = self.resolve(frame, dotted)
        summary = knowledge().callable(q) if qualified else None
        if summary is None:
            builtin = "." not in dotted and hasattr(builtins, dotted) and dotted not in frame.locals \
                and _unshadowed_builtin(frame.module, dotted)
            return None if builtin else ("*", None)
        how = summary.autocast
        if how is None or how.does == "query":
            return None
        if how.does == "set" or call is None:
            return ("*", None)  # (``@torch.autocast`` without a call: not a decorator PyTorch accepts)
        enabled: bool | None = True
        if how.enabled is not None:
            arg = _arg_node(call, how.enabled)
            if arg is not None:
                value = literal_value(arg.value)
                enabled = value if type(value) is bool else self.decide(frame, arg.value)
        return (self._autocast_device(frame, call, how) or "?", enabled)

    def _autocast_device(self, frame: Frame, call: cst.Call, how) -> str | None:
        """The device type a call of an ``autocast`` entry ``how`` names (its fixed device, the
        string its device argument gives, a literal or a name bound once to one, or the
        entry's default when the argument is left out); ``None`` when not known."""
        if how.device is not None:
            return how.device
        if any(a.star for a in call.args):
            return None
        arg = _arg_node(call, how.device_arg) if how.device_arg is not None else None
        if arg is None:
            return how.device_default
        value = literal_value(arg.value)
        if value is NO_VALUE and type(arg.value) is cst.Name:
            value = self.run_literal(frame, arg.value.value)
        return value if isinstance(value, str) else None

    @staticmethod
    def autocast_state(ctx: Context, device: str | None) -> bool | None:
        """Whether autocast of ``device`` (``"cuda"``, ``"cpu"``; ``None``: not known) is enabled
        at a point of context ``ctx``: the innermost block of that device decides, blocks of
        other devices leave it, and outside every block it is the entry's state
        (:attr:`Context.autocast <loopcheck.engine.ir.Context.autocast>`); a block that may be
        of the device adds its value to the state outside it. ``None`` when these disagree or
        one is not known."""
        values: set = set()
        for dev, enabled in reversed(ctx.autocast):
            if dev == "*" or device is not None and dev == device:
                values.add(enabled)
                break
            if dev == "?" or device is None:
                values.add(enabled)  # its device's state, or (another device) the state outside it
        else:
            values.add(None)
        return values.pop() if len(values) == 1 else None

    def autocast_decided(self, frame: Frame, test: cst.BaseExpression, ctx: Context) -> bool | None:
        """The value of an ``if`` test that asks whether autocast is enabled
        (``torch.is_autocast_enabled()``, a function whose entry says ``autocast = {does =
        "query"}``, or ``not`` of one) where the state is known (:meth:`autocast_state`): after
        the ``with torch.autocast(...)`` block has closed, in a module's own code or in a
        function inlined from it, it is ``False``. ``None`` when not established, and wherever
        a module whose code the entry point runs may set the state by a call
        (:meth:`_sets_autocast`). The query changes nothing, so deciding the test drops no event."""
        if type(test) is cst.UnaryOperation and type(test.operator) is cst.Not:
            inner = self.autocast_decided(frame, test.expression, ctx)
            return None if inner is None else not inner
        if type(test) is not cst.Call:
            return None
        q, qualified = self.resolve(frame, dotted_name(test.func))
        summary = knowledge().function(q) if qualified else None
        how = summary.autocast if summary is not None else None
        if how is None or how.does != "query":
            return None
        state = self.autocast_state(ctx, self._autocast_device(frame, test, how))
        if state is None or any(self._sets_autocast(m) for m in (frame.module, *self._unit_modules.values())):
            return None
        return state

    @staticmethod
    def _sets_autocast(module: ModuleIndex) -> bool:
        """Whether the code of ``module`` may set the autocast state by a call outside a
        ``with`` block: a call of a function whose entry says ``autocast = {does = "set"}``
        (``torch.set_autocast_enabled(True)``) or an ``__enter__()`` called by hand (of any
        context manager, an autocast one included). ``True`` when its code is not known."""
        cache = getattr(module, "cache", None)
        if cache is not None and "sets_autocast" in cache:
            return cache["sets_autocast"]
        tree = getattr(module, "tree", None)
        found = tree is None
        for node in walk(tree) if tree is not None else ():
            if type(node) is not cst.Call:
                continue
            dotted = dotted_name(node.func)
            if dotted is None:
                continue
            if dotted.rpartition(".")[2] == "__enter__":
                found = True
                break
            summary = knowledge().function(module.imports.qualify(dotted))
            if summary is not None and summary.autocast is not None and summary.autocast.does == "set":
                found = True
                break
        if cache is not None:
            cache["sets_autocast"] = found
        return found

    def int_value(self, frame: Frame, expr: cst.BaseExpression) -> int | None:
        """The integer ``expr`` evaluates to on every run, ``None`` when the code alone does not
        fix it: a :meth:`run_constant`, integer arithmetic (``+ - * // %``) on such values, and
        ``a % k`` with ``k`` equal to 1 or -1 and ``a`` an integer (:meth:`integral`), which is
        0 whatever ``a`` is (``(epoch + 1) % 1``)."""
        if type(expr) is not cst.BinaryOperation:
            return self.run_constant(frame, expr)
        op = type(expr.operator)
        if op not in _INT_OPS:
            return None
        right = self.int_value(frame, expr.right)
        if op is cst.Modulo and right in (1, -1) and self.integral(frame, expr.left):
            return 0
        left = self.int_value(frame, expr.left) if right is not None else None
        if left is None or (right == 0 and op in (cst.FloorDivide, cst.Modulo)):
            return None
        return _INT_OPS[op](left, right)

    def integral(self, frame: Frame, expr: cst.BaseExpression) -> bool:
        """Whether ``expr`` is an integer on every run (its value may vary): an integer
        :meth:`int_value`, a loop counter of an enclosing ``for`` (:meth:`loop_counters`), or
        integer arithmetic (``+ - * // %``) on such expressions (``epoch + 1``)."""
        t = type(expr)
        if t is cst.Name and expr.value in frame.counters:
            return True
        if t is cst.BinaryOperation:
            return type(expr.operator) in _INT_OPS and self.integral(frame, expr.left) and self.integral(frame, expr.right)
        return self.int_value(frame, expr) is not None

    def loop_choices(self, frame: Frame, stmt: cst.For) -> dict:
        """``{name: values}`` for a ``for name in <display>:`` over a list or tuple display of
        literals (``[1, 0]``, ``("adam", "sgd")``): on each pass ``name`` is one of them. Not a
        name its body re-binds or a ``global``/``nonlocal`` statement names (another function
        may re-bind it)."""
        it, target = stmt.iter, stmt.target
        if type(it) not in (cst.List, cst.Tuple) or type(target) is not cst.Name or not it.elements:
            return {}
        values = []
        for e in it.elements:
            value = literal_value(e.value) if type(e) is cst.Element else NO_VALUE
            if value is NO_VALUE:
                return {}
            values.append(value)
        name = target.value
        rebound, declared = bound_names(stmt.body)
        declared = declared | (_declarations([frame.node]) if frame.node is not None else _declared_global(frame.module))
        return {} if name in rebound or name in declared else {name: tuple(values)}

    def choice_split(self, frame: Frame, test: cst.BaseExpression) -> tuple[str, tuple, tuple] | None:
        """``(name, values that make test true, values that make it false)`` for an ``if`` test
        that :func:`decide_test` decides for every value a loop target of :attr:`Frame.choices`
        may have on this pass (``k == 0`` for ``k`` in ``[1, 0]``); ``None`` otherwise. Such a
        test calls nothing, so deciding it drops no event."""
        for name, values in frame.choices.items():
            outcomes = [decide_test(test, {**frame.constants, name: v}) for v in values]
            if None in outcomes:
                continue
            return (name, tuple(v for v, o in zip(values, outcomes) if o),
                    tuple(v for v, o in zip(values, outcomes) if not o))
        return None

    def loop_counters(self, frame: Frame, stmt: cst.For) -> frozenset:
        """The names a ``for`` statement binds to an integer on each pass: its target over the
        builtin ``range(...)`` (which takes and yields integers only), the first name of its
        target over the builtin ``enumerate(...)`` (the count); not a name its body re-binds
        or a ``global``/``nonlocal`` statement of the module or the function names (another
        function may re-bind it)."""
        it, target = stmt.iter, stmt.target
        if type(it) is not cst.Call or type(it.func) is not cst.Name or it.func.value not in ("range", "enumerate"):
            return frozenset()
        func = it.func.value
        if self.resolve(frame, func) != (func, True):  # a ``range`` of the file's own
            return frozenset()
        if func == "enumerate":
            if type(target) not in _SEQUENCES or not target.elements or type(target.elements[0]) is not cst.Element:
                return frozenset()
            target = target.elements[0].value
        if type(target) is not cst.Name:
            return frozenset()
        name = target.value
        rebound, declared = bound_names(stmt.body)
        if frame.node is not None:
            declared = declared | _declarations([frame.node])
        else:
            declared = declared | _declared_global(frame.module)
        return frozenset() if name in rebound or name in declared else frozenset((name,))

    def _bound_once_in(self, func: cst.FunctionDef) -> dict[str, cst.BaseExpression | None]:
        """:func:`single_bindings` of the body of ``func`` (computed once per function)."""
        bound = self._bound_once.get(id(func))
        if bound is None:
            body = func.body
            bound = self._bound_once[id(func)] = single_bindings(body.body if type(body) is cst.IndentedBlock else [body])
        return bound

    def bound_context(self, frame: Frame, item: cst.BaseExpression) -> cst.BaseExpression:
        """What a ``with`` item stands for, for the grad mode it sets: for ``ctx`` or ``ctx()``
        (``ctx(*args)``) where ``ctx`` is a local variable of the function being built, not a
        parameter, that its body binds exactly once, at its own level (:func:`single_bindings`:
        the binding runs before the ``with``, and nothing re-binds it), the expression bound,
        called as the item calls ``ctx``: ``grad_context = torch.enable_grad if is_train else
        torch.no_grad`` then ``with grad_context():`` stands for ``torch.enable_grad() if
        is_train else torch.no_grad()``. A conditional expression stands in only when its test
        reads plain names that still hold, at the ``with``, what they held when it ran: no
        attribute, subscript or call (a call in between may change them), each name a
        parameter the body never re-binds, or a local bound once. Any other item is its own
        answer.

        Args:
            frame: the frame of the function whose body holds the ``with``.
            item: the ``with`` item's expression (``cst.WithItem.item``).

        Returns:
            the expression whose grad mode :meth:`with_grad` and :meth:`_grad_arms` read. A
            call made here (``torch.no_grad()`` of ``ctx = torch.no_grad`` and ``ctx()``) is in
            no module's tree: the ``If`` a conditional one makes is placed at the ``with`` item,
            its test is the source's (a ``with`` of the same flag lines up with ``if is_train:``).
        """
        call = item if type(item) is cst.Call else None
        name = call.func if call is not None else item
        if type(name) is not cst.Name or frame.node is None or name.value not in frame.locals:
            return item
        if name.value in frame.subst or name.value in frame.constants or name.value in all_param_names(frame.node):
            return item
        bound = self._bound_once_in(frame.node)
        value = bound.get(name.value)
        if value is None:
            return item
        if type(value) is cst.IfExp:
            if not _stable_test(value.test, bound):
                return item
            if call is None:
                return value
            if dotted_name(value.body) is None or dotted_name(value.orelse) is None:
                return item
            return value.with_changes(body=call.with_changes(func=value.body), orelse=call.with_changes(func=value.orelse))
        if call is None:
            return value if type(value) is cst.Call else item
        return call.with_changes(func=value) if dotted_name(value) is not None else item

    def run_constant(self, frame: Frame, expr: cst.BaseExpression) -> int | None:
        """The integer ``expr`` is on every run, ``None`` when the code alone does not fix it:
        an integer literal; a parameter given one by the call being inlined and never re-bound
        (:attr:`Frame.constants`); a local variable of the function, or a global of its module,
        bound exactly once, by ``name = <integer>`` (:func:`single_bindings`, :func:`run_constants`).
        A parameter of an entry point, a name bound twice or by anything else (a loop, an
        import, ``args.epochs``, an assignment under ``if`` or ``try``) is not a run constant."""
        t = type(expr)
        if t is cst.UnaryOperation and type(expr.operator) is cst.Minus and type(expr.expression) is cst.Integer:
            return -expr.expression.evaluated_value
        if t is cst.Integer:
            return expr.evaluated_value
        if t is not cst.Name:
            return None
        value = self.run_literal(frame, expr.value)
        return value if type(value) is int else None

    def run_literal(self, frame: Frame, name: str):
        """The literal (an integer, ``True``, ``False``, ``None``, a string) variable ``name``
        holds on every run where ``frame`` reads it, :data:`NO_VALUE` when the code alone does
        not fix it. Looked up as :meth:`run_constant` does: a parameter given a literal by the
        call being inlined (:attr:`Frame.constants`), a local variable of the function bound
        exactly once or a global of the module (:meth:`value_bound_once`), or a global the module
        imports from a module of its project that binds it once to a literal
        (:func:`imported_literal`: ``from config import *`` then ``range(EPOCHS)``); a parameter
        of an entry point is not fixed."""
        if name in frame.constants:
            return frame.constants[name]
        value = self.value_bound_once(frame, name)
        if value is not None or not _reads_global(frame, name):
            return literal_value(value)
        return imported_literal(frame.module, name, self._reads_other_module)

    def _reads_other_module(self) -> None:
        """The build read a value of another module (:func:`imported_literal`): it depends on
        other code than the entry point's own (:attr:`UnitRecord.reusable`)."""
        if self.record is not None:
            self.record.reusable = False

    def loop_info(self, frame: Frame, node, target, iter_expr) -> LoopInfo:
        self._place(node, frame.module)
        names = set(target_names(target)) if target is not None else set()
        calls = tuple(
            q for q in (self.resolve(frame, dotted_name(c.func))[0] for c in calls_in_order(iter_expr)) if q
        )
        drawn = tuple(self._drawn(frame, target, iter_expr)) if target is not None and iter_expr is not None else ()
        mentions = set(self.mentions(frame, iter_expr))
        if type(iter_expr) is cst.Name:
            # ``params = model.parameters()`` then ``for p in params:``: the loop goes over the
            # value of a variable bound once, so it reads what that value reads
            value = self.value_bound_once(frame, iter_expr.value)
            if value is not None:
                mentions.update(self.mentions(frame, value))
        return LoopInfo(node, tuple(sorted(names)), tuple(sorted(mentions)), calls, frame.name, drawn=drawn)

    def value_bound_once(self, frame: Frame, name: str) -> cst.BaseExpression | None:
        """The expression variable ``name`` is bound to where ``frame`` reads it, when the code
        binds it exactly once by a plain assignment (a local of the function,
        :func:`single_bindings`, or a global of the module, not declared ``global`` anywhere
        nor imported); ``None`` otherwise (a parameter, a name bound twice, in a loop, an ``if``)."""
        f: Frame | None = frame
        while f is not None:
            if name in f.subst:
                return None
            if name in f.locals:
                if f.node is None:
                    break  # the module's own code: a global
                if name in all_param_names(f.node):
                    return None
                return self._bound_once_in(f.node).get(name)
            f = f.parent
        return module_bindings(frame.module).get(name)

    def none_test(self, frame: Frame, test: cst.Comparison) -> bool | None:
        """The value of ``x is None``, ``x is not None``, ``x == None`` or ``x != None``
        (``None`` on either side) on every run, where ``x`` is a plain name that holds an object
        on every run (:meth:`holds_object`): ``False`` for ``is``/``==``, ``True`` for
        ``is not``/``!=``; ``None`` for any other test, or a name that may hold ``None``. Only
        these forms: the truth of an object (``if loader:``) is its own (a DataLoader's is its
        length), not decided here."""
        if len(test.comparisons) != 1:
            return None
        comp = test.comparisons[0]
        op = type(comp.operator)
        if op not in (cst.Is, cst.IsNot, cst.Equal, cst.NotEqual):
            return None
        left, right = test.left, comp.comparator
        if _is_none(left):
            left, right = right, left
        if not _is_none(right) or type(left) is not cst.Name:
            return None
        if not self.holds_object(frame, left):
            return None
        return op in (cst.IsNot, cst.NotEqual)

    def holds_object(self, frame: Frame, expr: cst.BaseExpression, depth: int = 0) -> bool:
        """Whether ``expr``, evaluated where ``frame`` runs, is never ``None``: a call the module
        resolves to a class construction or to a function of the project that returns one on
        every path (:func:`never_none`, its callee's name not a local of the frame); a local of
        the function that only plain assignments bind, each to such a value
        (:func:`_function_env`), or a global the module binds once to one; a parameter of an inlined call whose argument
        is such a value where the caller gave it (:attr:`Frame.passed`, the parameter never
        re-bound). A parameter of an entry point, a name bound any other way (a loop's target,
        an unpacking, ``with ... as``) and anything else may be ``None``."""
        if depth > MAX_NONE_DEPTH:
            return False
        t = type(expr)
        if t is cst.Call:
            name = dotted_name(expr.func)
            if name is None or _names_local(frame, name.partition(".")[0]):
                return False
            return self._never_none(frame.module, expr, depth + 1)
        if t is not cst.Name:
            return False
        name = expr.value
        f: Frame | None = frame
        while f is not None and f.node is not None:
            if name in f.subst or name in f.shadow or name in f.locals:
                if name in f.subst or name in all_param_names(f.node):
                    given = f.passed.get(name)
                    return given is not None and self.holds_object(given[0], given[1], depth + 1)
                values = _function_env(f.module, f.node).get(name)
                return values is not None and all(self.holds_object(f, v, depth + 1) for v in values)
            f = f.parent
        return self._never_none(frame.module, expr, depth + 1)

    def _never_none(self, module: ModuleIndex, expr: cst.BaseExpression, depth: int) -> bool:
        """:func:`never_none` of ``expr``, an expression of ``module`` no local names, noting
        what it read: a function of the checked module as a function the build read
        (:attr:`UnitRecord.reads`), anything else of the project (a class, a global binding,
        another module) as a dependence the memo cannot check (:attr:`UnitRecord.reusable`)."""
        reads: list = []
        found = never_none(module, expr, None, depth, reads)
        if self.record is not None:
            for where, node in reads:
                if where is self.index and node is not None:
                    self.record.reads.add(node)
                else:
                    self.record.reusable = False
        return found

    def _drawn(self, frame: Frame, target: cst.BaseExpression, iterable: cst.BaseExpression):
        """``(name, symbols)`` for each name of a ``for`` target whose elements come from one
        known part of the iterable (:attr:`LoopInfo.drawn`): the whole iterable for a plain
        name; the argument at the same position of ``zip(...)`` for an element of a tuple
        target; the iterable of ``enumerate(...)`` for the second element of its pair (nested
        targets follow nested calls). A starred element or argument, a keyword, or another
        call draws nothing known."""
        if type(target) is cst.Name:
            yield target.value, self.mentions(frame, iterable)
            return
        if type(target) not in _SEQUENCES or type(iterable) is not cst.Call:
            return
        elements = [el.value for el in target.elements]
        args = iterable.args
        if any(type(el) is cst.StarredElement for el in target.elements) or any(a.star or a.keyword for a in args):
            return
        func, qualified = self.resolve(frame, dotted_name(iterable.func))
        if not qualified:
            return
        if func == "zip" and len(elements) == len(args):
            for el, a in zip(elements, args):
                yield from self._drawn(frame, el, a.value)
        elif func == "enumerate" and len(elements) == 2 and len(args) == 1:
            yield from self._drawn(frame, elements[1], args[0].value)

    def small_stmt(self, frame: Frame, s: cst.CSTNode, ctx: Context, out: list[Node]) -> None:
        if self.raising_read(frame, statement_parts(s), ctx, out):
            return  # NameError: the statement stops at a name nothing binds
        call = _statement_call(s)
        if call is not None:
            self._grad_left.pop(id(call), None)  # (set again below if this build inlines it)
        if self.indexes_zero_dim(frame, s):
            # ``loss.data[0]`` of a 0-dim loss raises IndexError: the events its statement made
            # before, then a raise (to the handlers of an enclosing ``try``), and no binding
            value = s.value if type(s) is not cst.Return or s.value is not None else None
            if value is not None:
                self.expr_events(frame, value, ctx, out)
            out.append(Jump("raise"))
            return
        if self.loss_given_display(frame, s):
            # a loss given a tuple or a mapping where it needs a tensor raises TypeError: the
            # events of the statement, then a raise, and no binding
            self.expr_events(frame, s.value, ctx, out)
            out.append(Jump("raise"))
            return
        if type(s) is cst.Expr:
            made = self.expr_events(frame, s.value, ctx, out)
            for value in _values(s.value):
                raw = made.get(value)
                if raw is not None:
                    raw.discarded = True  # x.to(device) on its own line: its result is thrown away
            if type(s.value) is cst.Call and s.value in self.unbound_calls:
                self._raises_at_binding(s.value, out)
            elif type(s.value) is cst.Call and self._exits(frame, s.value):
                out.append(Jump("raise"))  # sys.exit(): this path ends here (SystemExit)
        elif type(s) is cst.Assign:
            if len(s.targets) == 1:
                targets = self._target_syms(frame, s.targets[0].target)
            else:
                targets = ()
            self.expr_events(frame, s.value, ctx, out, targets)
            if s.value in self.unbound_calls:
                self._raises_at_binding(s.value, out)  # ``learner = Learner(conf, True)``
                return
            if len(s.targets) == 1 and self.unpacking_raises(frame, s.targets[0].target, s.value):
                out.append(Jump("raise"))  # ValueError: too many or not enough values to unpack
                return
            for t in s.targets:
                self.assign_event(frame, s, t.target, "=", s.value, ctx, out)
        elif type(s) is cst.AnnAssign:
            if s.value is not None:
                self.expr_events(frame, s.value, ctx, out, self._target_syms(frame, s.target))
                self.assign_event(frame, s, s.target, "=", s.value, ctx, out)
        elif type(s) is cst.AugAssign:
            self.expr_events(frame, s.value, ctx, out)
            self.assign_event(frame, s, s.target, s.operator.__class__.__name__, s.value, ctx, out)
        elif type(s) is cst.Return:
            start = len(out)
            if s.value is not None:
                if frame.return_targets and frame.return_targets[0] and type(s.value) is cst.Name and s.value.value in frame.defs:
                    self.func_values[frame.return_targets[0]] = (frame.defs[s.value.value], frame)
                    if self.record is not None:
                        self.record.reusable = False  # a closure for the entry points built later
                self.expr_events(frame, s.value, ctx, out, frame.return_targets if type(s.value) is cst.Call else ())
                if frame.return_targets and type(s.value) is not cst.Call:
                    values = s.value.elements if type(s.value) is cst.Tuple else None
                    if values is None:
                        self.assign_event(frame, s, None, "=", s.value, ctx, out, frame.return_targets[0])
                    else:
                        for tgt, el in zip(frame.return_targets, values):
                            self.assign_event(frame, s, None, "=", el.value, ctx, out, tgt)
            values = self.sources(frame, s.value).names if s.value is not None else frozenset()
            # ``return self._forward_multi_view(x)``: the value also comes from what the
            # inlined function returns (its locals: ``return [loss_ce, loss_cr]``)
            out.append(Jump("return", values | _inlined_returns(out[start:])))
            # the grad mode this return leaves: the one a ``with`` around it restores, else the
            # one after the call it returns (``return finish_eval(model)``)
            left = frame.grad_scope or self.grad_after(frame, s, ctx)
            frame.grad_exits.append((left.grad, left.grad_inherited, left.grad_asked))
        elif type(s) is cst.Del:
            for target in _deleted(s.target):
                cleared = _whole_slice_of(target)
                if cleared is not None:  # del x[:] empties the list x names: x.clear()
                    call = cst.Call(func=cst.Attribute(value=cleared, attr=cst.Name("clear")))
                    self.make_call(frame, call, ctx, {}, ())
                    out.append(self._raw_of[call])
                    if self.record is not None:
                        self.record.reusable = False  # (a node of this build only)
        elif type(s) is cst.Raise:
            self.expr_events(frame, s.exc, ctx, out)
            out.append(Jump("raise"))
        elif type(s) is cst.Break:
            out.append(Jump("break"))
        elif type(s) is cst.Continue:
            out.append(Jump("continue"))
        elif isinstance(s, cst.Assert):
            if type(s.test) is cst.Name and s.test.value == "False" or (
                type(s.test) is cst.Integer and s.test.value == "0"
            ):
                out.append(Jump("raise"))  # assert False: this path ends here

    def raising_read(self, frame: Frame, parts: list, ctx: Context, out: list[Node]) -> bool:
        """Whether evaluating ``parts`` (the expressions a statement evaluates every time, in
        order; ``None`` items are skipped) reads a name that nothing binds
        (:func:`undefined_reads`): it raises ``NameError`` there. Then the events of what is
        evaluated before that read go to ``out`` (the calls of the earlier parts, and those of
        its own part that complete before it: not the call whose argument it is), and the
        path ends, as at a ``raise``: an enclosing ``try`` sends it to its handlers."""
        undefined = undefined_reads(frame.module).undefined
        if not undefined:
            return False
        for i, part in enumerate(parts):
            name = first_undefined(part, undefined) if part is not None else None
            if name is None:
                continue
            for earlier in parts[:i]:
                self.expr_events(frame, earlier, ctx, out)
            done = evaluated_before(part, name)
            items = [item for item in evaluation_order(part) if getattr(item, "node", item) in done]
            self._emit(frame, items, ctx, out, {}, (), part)
            out.append(Jump("raise"))
            return True
        return False

    def indexes_zero_dim(self, frame: Frame, node: cst.CSTNode) -> bool:
        """Whether statement ``node`` (a small statement: an expression, an assignment, a
        ``return``; or the test of an ``if``/``while``, the iterable of a ``for``) always
        evaluates a subscript that raises ``IndexError`` on PyTorch 0.4 and later: an integer or
        slice index of a value established to be a 0-dim tensor (``loss.data[0]`` of a loss
        reduced to one number; :class:`loopcheck.engine.zero_dim.Shapes`)."""
        t = type(node)
        if t is cst.Expr or t is cst.Assign or t is cst.AugAssign or t is cst.AnnAssign or t is cst.Return:
            value = node.value
        elif t is cst.If or t is cst.While:
            value = node.test
        elif t is cst.For:
            value = node.iter
        else:
            return False
        if value is None:
            return False
        shapes = None
        for sub in indexing_subscripts(value):
            shapes = shapes or self.shapes(frame)
            if shapes.zero_dim(sub.value):
                return True
        return False

    def shapes(self, frame: Frame) -> Shapes:
        """What gives 0-dim tensors where ``frame`` reads names (:class:`Shapes`)."""

        def qualify(dotted: str) -> str | None:
            q, qualified = self.resolve(frame, dotted)
            return q if qualified else None

        return Shapes(qualify, lambda name: self.bindings_of(frame, name))

    def bindings_of(self, frame: Frame, name: str) -> list[Binding] | None:
        """Every binding of variable ``name`` where ``frame`` reads it: those of its function
        when it is a local there (none for a parameter), else those of the module's own code
        (:func:`loopcheck.engine.zero_dim.block_bindings`); ``None`` when some binding is not
        a plain or augmented assignment, or the name is imported, declared ``global`` by a
        function, or a top-level ``def``/``class``."""
        f: Frame | None = frame
        while f is not None:
            if name in f.shadow or name in f.subst:
                return None
            if name in f.locals:
                if f.node is None:
                    break  # the module's own code: a global
                bound = self._all_bindings.get(id(f.node))
                if bound is None:
                    bound = self._all_bindings[id(f.node)] = block_bindings([f.node.body], all_param_names(f.node))
                return bound.get(name)
            f = f.parent
        index = frame.module
        bound = index.cache.get("all_bindings")
        if bound is None:
            bound = block_bindings(index.module_code())
            if "*" in bound:
                bound = {}
            others = set(index.imports.aliases) | _declared_global(index) | set(index.functions) | set(index.classes)
            for other in others:
                bound[other] = None
            index.cache["all_bindings"] = bound
        return bound.get(name)

    def _exits(self, frame: Frame, call: cst.Call) -> bool:
        """Whether ``call`` ends the program (``exit()``, ``sys.exit(1)``): a library function
        whose knowledge entry says ``exits``."""
        q, qualified = self.resolve(frame, dotted_name(call.func))
        summary = knowledge().function(q) if qualified and q else None
        return summary is not None and summary.exits

    def assign_event(
        self, frame: Frame, stmt: cst.CSTNode, target: cst.BaseExpression | None, op: str,
        value: cst.BaseExpression, ctx: Context, out: list[Node], target_sym: str | None = None,
    ) -> None:
        slot = None
        if target is not None:
            if isinstance(target, (cst.Tuple, cst.List)):
                self._unpack(frame, stmt, target, op, value, ctx, out)
                return
            if type(target) is cst.Subscript:
                base = target.value
                while type(base) is cst.Subscript:  # d[i][k] = v writes into an item of what d holds
                    base = base.value
                sym, q = self.resolve(frame, dotted_name(base))
                op, slot = "[]=", target
            else:
                sym, q = self.resolve(frame, dotted_name(target))
                if sym is None and type(target) is cst.Attribute:
                    self.blind_attrs.add(target.attr.value)  # ``xs[0].mode = ...``: no event shows it
            if q:
                return
            target_sym = sym
        if target_sym is None:
            return
        vsym, vq = self.resolve(frame, dotted_name(value))
        if "." in target_sym and literal_value(value) is not NO_VALUE:
            self._literal_attrs.add(target_sym)  # (a fact the dataflow may follow: _settle_facts)
        self._place(stmt, frame.module)
        ref = self._instance_class(frame, value) if type(value) is cst.Call else None
        constant = ()
        made = self._raw_of.get(value) if type(value) is cst.Call and op == "=" and slot is None else None
        if type(value) is cst.Name and value.value not in ("True", "False", "None"):
            fixed = self.run_literal(frame, value.value)  # a parameter left at its literal default
            if fixed is not NO_VALUE:
                constant = (fixed,)
        out.append(
            Assign(stmt, target_sym, op, value, None if vq else vsym, value_kind(frame.module.imports, value),
                   self.mentions(frame, value), ctx, operands=self.operands(frame, value),
                   sources=self.sources(frame, value), slot=slot, held=self.held(frame, value),
                   module_class=self._module_constructed(frame, value, ref) if type(value) is cst.Call else None,
                   constant=constant, built=made is not None and made.new is not None and made.new == target_sym)
        )
        self.n_events += 1
        if ref is not None:
            frame.instances[target_sym] = ref
        self._note_value_class(frame, target_sym, value if op == "=" and slot is None else None)

    def _module_constructed(self, frame: Frame, value: cst.Call, ref: ClassRef | None) -> ClassRef | str | None:
        """The class of the ``nn.Module`` (or ``Parameter``) that call ``value`` constructs
        (:func:`~loopcheck.engine.classes.is_module_class`): ``ref``, the class of the project
        whose instance it is (:meth:`_instance_class`), or a library class the knowledge says is
        one, called directly or through ``torch.nn.Module`` methods that return their receiver
        (``nn.Linear(4, 2).to(device)``: the knowledge's ``same = "self"``); ``None`` for any
        other call: a function, a module the program holds (``self.criterion(out, y)`` is its
        forward), a callee the analysis cannot resolve."""
        if ref is not None:
            return ref if self._is_module_class(ref) else None
        kb = knowledge()
        call = value
        while type(call.func) is cst.Attribute and type(call.func.value) is cst.Call:
            summary = kb.method("torch.nn.Module", call.func.attr.value)
            if summary is None or summary.returns is None or "self" not in summary.returns.same:
                return None
            call = call.func.value
        fname, qualified = self.resolve(frame, dotted_name(call.func))
        return fname if qualified and fname and is_module_class(fname) else None

    def _instance_class(self, frame: Frame, value: cst.Call) -> ClassRef | None:
        """The project class whose instance ``value`` is: ``Net(...)``, also through methods
        that return their receiver (``Net(...).to(device)``, ``.cuda().train()``: the
        ``torch.nn.Module`` entry's ``same = "self"``) when the class is an ``nn.Module``
        that does not define them itself."""
        methods = []
        call = value
        while type(call.func) is cst.Attribute and type(call.func.value) is cst.Call:
            methods.append(call.func.attr.value)
            call = call.func.value
        fname, qualified = self.resolve(frame, dotted_name(call.func))
        ref = frame.module.class_ref(fname, qualified) if fname else None
        if ref is None or not methods:
            return ref
        kb = knowledge()
        for method in methods:
            summary = kb.method("torch.nn.Module", method)
            if summary is None or summary.returns is None or "self" not in summary.returns.same:
                return None
            if find_method(ref, method) is not None:
                return None  # the class's own method: what it returns is not known here
        return ref if self._is_module_class(ref) else None


    # -- values of a known shape (loopcheck.engine.displays) --------------------------------

    def _note_value_class(self, frame: Frame, sym: str, value: cst.BaseExpression | None) -> None:
        """Record for symbol ``sym`` the class of the object ``value`` gives it
        (:meth:`_built_class`; ``value`` ``None``: a binding of something else): a symbol bound
        to objects of two classes, or once to an object of no known class, keeps ``None``. A
        binding of ``None`` changes nothing: calling it, or reading a member of it, raises."""
        if type(value) is cst.Name and value.value == "None":
            return
        cls = self._built_class(frame, value) if value is not None else None
        if sym in self._value_classes and self._value_classes[sym] != cls:
            cls = None
        self._value_classes[sym] = cls

    def _built_class(self, frame: Frame, value: cst.BaseExpression, depth: int = 0) -> ClassRef | str | None:
        """The class of the object ``value`` gives: a construction of a class of the project
        (``Net(...)``) or of the library (``nn.CrossEntropyLoss()``, its qualified name), also
        through ``torch.nn.Module`` methods that return their receiver (``.to(device)``; the
        knowledge's ``same = "self"``, not overridden by the class) and library wrappers that
        run the module they wrap (``nn.DataParallel(net)``: its ``returns.same``); what an
        inlined call of a project function returned (``get_model(...)``); a name whose
        bindings all built objects of one class. ``None`` when not known."""
        if depth > MAX_INLINE_DEPTH:
            return None
        t = type(value)
        if t is cst.Name or t is cst.Attribute:
            sym, qualified = self.resolve(frame, dotted_name(value))
            if sym is None or qualified:
                return None
            if sym in self._value_classes:
                return self._value_classes[sym]
            return frame.instances.get(sym)
        if t is not cst.Call:
            return None
        returned = self._returned_classes.get(id(value))
        if returned is not None:
            return returned
        func = value.func
        kb = knowledge()
        if type(func) is cst.Attribute and (type(func.value) is cst.Call or dotted_name(func) is not None):
            summary = kb.method("torch.nn.Module", func.attr.value)
            if summary is not None and summary.returns is not None and "self" in summary.returns.same:
                receiver = self._built_class(frame, func.value, depth + 1)
                if receiver is None or not is_module_class(receiver):
                    return None
                own = type(receiver) is ClassRef and find_method(receiver, func.attr.value) is not None
                return None if own else receiver
        ref = self._named_class(frame, func)
        if ref is not None:
            return ref
        name, qualified = self.resolve(frame, dotted_name(func))
        entry = kb.cls(name) if name and qualified else None
        if entry is None:
            return None
        same = entry.ctor.returns.same if entry.ctor is not None and entry.ctor.returns is not None else ()
        refs = [r for r in same if r != "*" and r != "self"]
        if not refs:
            return name
        wrapped = given_arg(value, refs[0]) if len(refs) == 1 else None
        return self._built_class(frame, wrapped, depth + 1) if wrapped is not None else None

    def _named_class(self, frame: Frame, func: cst.BaseExpression, depth: int = 0) -> ClassRef | None:
        """The class of the project the callable expression ``func`` read in ``frame`` names:
        a class the name resolves to (``Net``, ``models.Net``), the class a ``@classmethod``
        binds its first parameter to (``cls``), or, for a parameter the call of the function
        being built gave a class (``model_class`` of ``create(Net, args)``, not bound again in
        the function: :attr:`Frame.passed`), that class. ``None`` otherwise."""
        name, qualified = self.resolve(frame, dotted_name(func))
        ref = frame.module.class_ref(name, qualified) if name else None
        if ref is not None or type(func) is not cst.Name or qualified or depth > MAX_INLINE_DEPTH:
            return ref
        ref = _class_param(frame, func.value)
        if ref is not None:
            return ref
        passed = frame.passed.get(func.value)
        return self._named_class(passed[0], passed[1], depth + 1) if passed is not None else None

    def _returned_class(self, callee: Frame, func: cst.FunctionDef) -> ClassRef | str | None:
        """The class of what every ``return`` of inlined function ``func`` gives
        (:meth:`_built_class`, read in its frame ``callee`` once its body is built)."""
        table = callee.module.cache.setdefault("return_values", {})
        values = table.get(func)
        if values is None:
            values = table[func] = tuple(
                node.value for node in walk(func.body, prune=(cst.FunctionDef, cst.ClassDef, cst.Lambda))
                if type(node) is cst.Return)
        if not values or any(v is None for v in values):
            return None
        found = {self._built_class(callee, v) for v in values}
        return found.pop() if len(found) == 1 else None

    def _qualifier(self, frame: Frame):
        """The library name a dotted name read in ``frame`` stands for, ``None`` for a name of
        the code (for :func:`~loopcheck.engine.displays.literal_display`)."""
        def qualify(dotted: str) -> str | None:
            q, qualified = self.resolve(frame, dotted)
            return q if qualified else None
        return qualify

    def known_display(self, frame: Frame, expr: cst.BaseExpression, depth: int = 0) -> Display | None:
        """The shape ``expr`` read in ``frame`` has on every run (:mod:`loopcheck.engine.displays`):
        a tuple or dict display; a name every binding of which has it, or a parameter given an
        argument that has it; a call of a model of the project whose ``forward`` returns it
        (:meth:`_forward_display`), or of a function of the project every ``return`` of which
        gives it. ``None`` when not established."""
        if depth > MAX_INLINE_DEPTH:
            return None
        t = type(expr)
        if t is cst.Tuple or t is cst.Dict or t is cst.Call:
            found = literal_display(expr, self._qualifier(frame))
            if found is not None or t is not cst.Call:
                return found
            return self._call_display(frame, expr)
        if t is not cst.Name:
            return None
        passed = frame.passed.get(expr.value)
        if passed is not None:
            return self.known_display(passed[0], passed[1], depth + 1)
        bindings = self.bindings_of(frame, expr.value)
        if not bindings or any(op != "=" for op, _ in bindings):
            return None
        found = {self.known_display(frame, value, depth + 1) for _, value in bindings}
        return found.pop() if len(found) == 1 and None not in found else None

    def _call_display(self, frame: Frame, call: cst.Call) -> Display | None:
        """:meth:`known_display` of a call: a model's forward, or a function of the project
        (a method, not a constructor) the call runs as it is written."""
        cls = self._built_class(frame, call.func)
        if type(cls) is ClassRef:
            return self._forward_display(cls)
        raw = self._raw_of.get(call)
        callee = self._callee(frame, raw) if raw is not None and raw.node is call else None
        if callee is None or callee.ctor or callee.parent is not None:
            return None
        if callee.cls is not None and not plain_class(callee.cls):
            return None
        return returned_display(callee.func, self._module_qualifier(callee.module))

    def _forward_display(self, cls: ClassRef) -> Display | None:
        """The shape every call of an instance of ``cls`` returns: an ``nn.Module`` of the
        project (a :func:`plain_class`) with no ``__call__`` of its own, whose undecorated
        ``forward`` returns one shape (:func:`~loopcheck.engine.displays.returned_display`),
        in modules that register no forward hook (which may replace the output)."""
        found = self._plain_forward(cls)
        if found is None:
            return None
        owner, forward = found
        return returned_display(forward, self._module_qualifier(owner.module))

    def _plain_forward(
        self, cls: ClassRef, hooks: frozenset = HOOK_METHODS,
    ) -> tuple[ClassRef, cst.FunctionDef] | None:
        """``(defining class, forward)`` of ``cls`` when a call of an instance of it runs that
        ``forward`` as written with the call's arguments: an ``nn.Module`` of the project (a
        :func:`plain_class`) with no ``__call__`` of its own or of a base, an undecorated
        ``forward``, in modules (the one being checked, the class's, the forward's) that name
        none of the hook methods ``hooks`` (:func:`~loopcheck.engine.displays.registers_hooks`);
        else ``None``."""
        if not plain_class(cls) or not self._is_module_class(cls) or find_method(cls, "__call__"):
            return None
        found = find_method(cls, "forward")
        if found is None or found[1].decorators:
            return None
        owner = found[0]
        if any(registers_hooks(index, hooks) for index in (self.index, cls.module, owner.module)):
            return None
        return found

    @staticmethod
    def _module_qualifier(index: ModuleIndex):
        """The library name a dotted name read at the top level of module ``index`` stands for
        (an import, or a builtin the module does not bind), else ``None``."""
        def qualify(dotted: str) -> str | None:
            head = dotted.partition(".")[0]
            if head in index.globals:
                return None
            if head in index.imports.aliases:
                return index.imports.qualify(dotted)
            return dotted if head in BUILTINS else None
        return qualify

    def unpacking_raises(self, frame: Frame, target: cst.BaseExpression, value: cst.BaseExpression) -> bool:
        """Whether ``target = value`` unpacks a value of a known shape (:meth:`known_display`)
        into another number of names (``a, b, c, d = out`` of a 2-tuple, or of a mapping of two
        keys, whose keys unpacking iterates): it raises ``ValueError``."""
        wanted = unpacked_count(target)
        if wanted is None:
            return False
        found = self.known_display(frame, value)
        if found is None or found[1] == wanted:
            return False
        if self.record is not None:
            self.record.reusable = False  # (read from the builder's classes of the objects)
        return True

    def loss_given_display(self, frame: Frame, node: cst.CSTNode) -> bool:
        """Whether small statement ``node`` always calls a library loss (a function, or an
        instance of a loss class, whose knowledge entry has ``tensor_input``) with a tuple or a
        mapping (:meth:`known_display`) as the argument that must be a tensor: the call raises
        ``TypeError`` (or ``AttributeError``)."""
        t = type(node)
        if t is cst.Expr or t is cst.Assign or t is cst.AugAssign or t is cst.AnnAssign or t is cst.Return:
            value = node.value
        else:
            return False
        if value is None:
            return False
        kb = knowledge()
        for call in evaluated_calls(value):
            name, qualified = self.resolve(frame, dotted_name(call.func))
            if name is None:
                continue
            ref = None
            if qualified:
                summary = kb.function(name)
                ref = summary.tensor_input if summary is not None else None
            else:
                cls = self._built_class(frame, call.func)
                entry = kb.cls(cls) if type(cls) is str else None
                ref = entry.ctor.tensor_input if entry is not None and entry.ctor is not None else None
            arg = given_arg(call, ref) if ref is not None else None
            if arg is not None and self.known_display(frame, arg) is not None:
                if self.record is not None:
                    self.record.reusable = False  # (read from the builder's classes of the objects)
                return True
        return False

    def _unpack(
        self, frame: Frame, stmt: cst.CSTNode, target: cst.Tuple | cst.List, op: str,
        value: cst.BaseExpression, ctx: Context, out: list[Node],
    ) -> None:
        """``a, b = x, y`` assigns pairwise; ``loss, aux = criterion(...)`` gives each name a
        part of the call's result (the call event binds the names of the outer tuple); ``a, b
        = out`` gives each name a part of ``out``, and so does each name of a nested tuple
        (``(a, b), c = f(x)``): an assignment computed from what the value is computed from
        (its sources), never the value itself (no ``value_sym``)."""
        elements = [el.value for el in target.elements]
        if isinstance(value, (cst.Tuple, cst.List)) and len(value.elements) == len(elements) and not any(
            type(el) is cst.StarredElement for el in (*target.elements, *value.elements)
        ):
            for t, v in zip(elements, value.elements):
                self.assign_event(frame, stmt, t, op, v.value, ctx, out)
            return
        raw = self._raw_of.get(value) if type(value) is cst.Call else None
        mentions = self.mentions(frame, value)
        computed = None
        for t in _unpacked(elements):
            sym = self._target_sym(frame, t)
            # a target of the call event, which carries its sources (not so for a nested name,
            # nor in ``a, b = out = f(x)``)
            bound = raw is not None and sym is not None and sym in raw.targets
            if type(t) is cst.Attribute and not bound:
                self.blind_attrs.add(t.attr.value)  # ``self.mode, n = pair``: no literal value is known
            if sym is None:
                continue
            self._value_classes[sym] = None  # (an item of the value: its class is not known)
            if not bound and computed is None:  # (what the value reads, once for all targets)
                computed = (self.operands(frame, value), self.sources(frame, value))
            operands, sources = computed if not bound else ((), None)
            self._place(stmt, frame.module)
            out.append(Assign(stmt, sym, op, value, None, "part", mentions, ctx, operands=operands, sources=sources))
            self.n_events += 1


def _unpacked(elements) -> list[cst.BaseExpression]:
    """The names and attributes an unpacking target binds, those of nested tuples and lists
    included (``(a, b), c``); subscripts are left out."""
    out = []
    for t in elements:
        if type(t) in _SEQUENCES:
            out.extend(_unpacked([el.value for el in t.elements]))
        elif type(t) in (cst.Name, cst.Attribute):
            out.append(t)
    return out


_COMPREHENSIONS = (cst.ListComp, cst.SetComp, cst.GeneratorExp, cst.DictComp)


@dataclass(eq=False)
class Comprehension:
    """A comprehension inside an expression: the calls its elements make run once per item."""

    node: cst.CSTNode
    body: list


@dataclass(eq=False)
class Branch:
    """Calls inside an expression that run on a condition: the arms of ``a() if c else b()``,
    the right operand of ``c and a()`` (run when ``c`` is true) or ``c or a()`` (when false).

    Attributes:
        node: the ``cst.IfExp`` or ``cst.BooleanOperation``.
        test: the condition (``c``); its own calls run before, unconditionally.
        body, orelse: the evaluation-order items of the arm run when ``test`` is true / false.
        body_value, orelse_value: the expression each arm gives as the value (``None``: none).
    """

    node: cst.CSTNode
    test: cst.BaseExpression
    body: list
    orelse: list
    body_value: cst.BaseExpression | None
    orelse_value: cst.BaseExpression | None


def evaluation_order(expr: cst.CSTNode) -> list:
    """The calls of ``expr`` in evaluation order (arguments before the call), not entering
    lambdas; a comprehension becomes a :class:`Comprehension` holding the calls it makes per
    item, after the calls of its first iterable; the calls that run on a condition (the arms of
    ``a() if c else b()``, the right of ``c and a()``) a :class:`Branch`, after the calls of its
    condition."""
    out: list = []
    _in_evaluation_order(expr, out)
    return out


def _in_evaluation_order(n: cst.CSTNode, out: list) -> None:
    """Append the calls of ``n`` to ``out`` (:func:`evaluation_order`). A function of the
    module rather than a closure of its caller: a nested function that calls itself is a
    reference cycle (the function, its cell), which holds what it captured until the garbage
    collector walks it (see :func:`loopcheck.check.settle_gc`)."""
    t = type(n)
    if t is cst.Lambda:
        return
    if t in _COMPREHENSIONS:
        first = n.for_in
        _in_evaluation_order(first.iter, out)
        body: list = []
        comp = first
        while comp is not None:
            if comp is not first:
                _in_evaluation_order(comp.iter, body)
            for cond in comp.ifs:
                _in_evaluation_order(cond.test, body)
            comp = comp.inner_for_in
        for part in (getattr(n, "key", None), getattr(n, "value", None), getattr(n, "elt", None)):
            if part is not None:
                _in_evaluation_order(part, body)
        out.append(Comprehension(n, body))
        return
    if t is cst.IfExp:  # the test runs first, then one arm
        _in_evaluation_order(n.test, out)
        body, orelse = [], []
        _in_evaluation_order(n.body, body)
        _in_evaluation_order(n.orelse, orelse)
        if body or orelse:
            out.append(Branch(n, n.test, body, orelse, n.body, n.orelse))
        return
    if t is cst.BooleanOperation:  # the right operand runs only when the left does not decide
        _in_evaluation_order(n.left, out)
        right: list = []
        _in_evaluation_order(n.right, right)
        if right:
            if type(n.operator) is cst.And:
                out.append(Branch(n, n.left, right, [], n.right, None))
            else:
                out.append(Branch(n, n.left, [], right, None, n.right))
        return
    for c in children(n):
        _in_evaluation_order(c, out)
    if t is cst.Call:
        out.append(n)


def _new_leaf(summary) -> bool:
    """Whether a library function with ``summary`` returns a new tensor built from the values
    of its arguments and recording no operation on them (``returns.value = "tensor"`` without
    ``shares``: ``torch.tensor(x)`` copies ``x`` into a new leaf, ``torch.zeros_like(x)`` reads
    only its shape): nothing of the arguments' graphs flows into its result
    (``torch.as_tensor(t)``, which may return ``t`` itself, is not one)."""
    r = summary.returns if summary is not None else None
    return r is not None and r.value == "tensor" and r.get("shares") is None


@dataclass(frozen=True, eq=False)
class _CallPlan:
    """A call in :func:`_sources_plan`: ``func``, the dotted name it calls (``None``: not a
    name); ``args``, the plans of its arguments; ``detaches``, a tensor method whose result
    holds nothing of its receiver (``.item()``, ``.detach()``); ``callee``, the plan of the
    called expression (its receiver), ``None`` when it detaches."""

    node: cst.Call
    func: str | None
    args: tuple
    detaches: bool
    callee: object


def _holds_nothing(plan) -> bool:
    """Whether a value planned by :func:`_sources_plan` is computed from nothing: no plan, a
    call that detaches its receiver and takes no argument (``l.item()``, ``o.detach()``), or a
    tuple of such parts."""
    if plan is None:
        return True
    if type(plan) is tuple:
        return all(_holds_nothing(p) for p in plan)
    return type(plan) is _CallPlan and plan.detaches and not plan.args


def _inlined_returns(nodes: list) -> frozenset[str]:
    """The symbols the functions inlined among ``nodes`` (the IR of one ``return``
    statement's expression, ``a() if c else b()`` included) return values computed from: the
    values of their own ``return`` jumps, which already hold those of the functions whose result
    they return, and not of functions inlined deeper, whose results they computed from."""
    out: set[str] = set()
    todo, inlines = list(nodes), []
    while todo:  # the outermost inlined calls
        node = todo.pop()
        if type(node) is Inline:
            inlines.append(node.body)
        elif type(node) is not Jump:
            todo.extend(parts(node))
    while inlines:  # their own returns
        node = inlines.pop()
        t = type(node)
        if t is Jump:
            if node.kind == "return":
                out |= node.values
        elif t is not Inline:
            inlines.extend(parts(node))
    return frozenset(out)


_STRINGS = (cst.SimpleString, cst.ConcatenatedString, cst.FormattedString)


@dataclass(frozen=True)
class _Keyed:
    """A plan read through a subscript by a string key: its names go to ``Sources.keyed``;
    ``key``, the key when it is one string literal (``"loss"`` of ``out["loss"]``), else
    ``None`` (``out[f"loss_{i}"]``, ``out["a", "b"]``)."""

    plan: object
    key: str | None = None


def _sources_plan(e: cst.CSTNode, kb):
    """The frame-independent part of :meth:`UnitBuilder.sources` for expression ``e``: a dotted
    name (``str``) to resolve, a :class:`_CallPlan`, a tuple of plans (the parts of any other
    node, in the order its walk visits them), or ``None`` for nothing (a lambda, ``p.data``,
    ``True``). Evaluating it with an explicit stack visits names and calls in the order the
    walk of the expression did."""
    t = type(e)
    if t is cst.Name or t is cst.Attribute:
        dotted = dotted_name(e)
        if dotted is not None:
            return None if dotted in ("True", "False", "None") else dotted
        return None if e.attr.value == "data" else _sources_plan(e.value, kb)
    if t is cst.Lambda or t is cst.Comparison:
        return None  # a comparison is a boolean: it carries no graph of its operands
    if t is cst.Subscript and any(type(s.slice) is cst.Index and type(s.slice.value) in _STRINGS for s in e.slice):
        inner = _sources_plan(e.value, kb)  # out["loss"]: a member of a mapping
        if inner is None:
            return None
        key = literal_value(e.slice[0].slice.value) if len(e.slice) == 1 and type(e.slice[0].slice) is cst.Index else NO_VALUE
        return _Keyed(inner, key if type(key) is str else None)
    if t is cst.UnaryOperation and type(e.operator) is cst.Not:
        return None
    if t in _COMPREHENSIONS:
        # its items are what its element makes of each item: ``[float(e > 0.5) for e in out]``
        # holds numbers whatever ``out`` holds, and so does ``[l.item() for l in losses]``;
        # otherwise the items may come from the iterable
        made = (e.key, e.value) if t is cst.DictComp else (e.elt,)
        if all(_holds_nothing(_sources_plan(x, kb)) for x in made):
            return None
    if t is cst.Call:
        f = e.func
        detaches = False
        if type(f) is cst.Attribute:
            m = kb.method("torch.Tensor", f.attr.value)
            detaches = m is not None and m.returns is not None and m.returns.value in NO_GRAPH
        elif type(f) is cst.Name and f.value in BUILTINS:  # float(loss), len(batch)
            m = kb.function(f.value)
            if m is not None and m.returns is not None and m.returns.value in NO_GRAPH:
                return None
        args = tuple(p for p in (_sources_plan(a.value, kb) for a in e.args) if p)
        return _CallPlan(e, dotted_name(f), args, detaches, None if detaches else _sources_plan(f, kb))
    parts = tuple(p for p in (_sources_plan(c, kb) for c in children(e)) if p)
    return parts or None


def immutable_literal(node: cst.CSTNode) -> bool:
    """Whether ``node`` is a literal of an immutable type: ``True``/``False``/``None``, a
    number (signed or not), a string or bytes (an f-string too), or a tuple display of such
    literals."""
    t = type(node)
    if t is cst.Name:
        return node.value in ("True", "False", "None")
    if t in (cst.Integer, cst.Float, cst.Imaginary, cst.SimpleString, cst.ConcatenatedString, cst.FormattedString):
        return True
    if t is cst.UnaryOperation:
        return type(node.operator) in (cst.Minus, cst.Plus) and type(node.expression) in (cst.Integer, cst.Float, cst.Imaginary)
    if t is cst.Tuple:
        return all(type(el) is cst.Element and immutable_literal(el.value) for el in node.elements)
    return False


def _readable_ancestry(cls: ClassRef) -> list[ClassRef] | None:
    """:func:`_project_ancestry` of ``cls``, or ``None`` when one of its classes cannot be read
    (no class node) or writes attributes it does not name (:func:`_writes_unnamed`)."""
    classes = _project_ancestry(cls)
    if any(c.info is None or _writes_unnamed(c.info.node) for c in classes):
        return None
    return classes


def _writes_unnamed(node: cst.CSTNode) -> bool:
    """Whether the code under ``node`` may assign attributes it does not name: some node of it
    is an :func:`~loopcheck.engine.attr_facts.dynamic_write` (``model.eval()``, a method, is
    none)."""
    stack = [node]
    while stack:
        n = stack.pop()
        if dynamic_write(n):
            return True
        stack.extend(expression_children(n))
    return False


def _binds_in_body(cls: cst.ClassDef, name: str) -> bool:
    """Whether the body of class ``cls`` binds ``name`` at its top level: a ``def`` (a method,
    a ``property``), a class attribute, an import; reading ``self.<name>`` may then run code or
    find what the class holds."""
    names, declared = bound_names(cls.body)
    return name in names or name in declared


def _init_only_writes(tree: cst.CSTNode, name: str) -> list[cst.ClassDef] | None:
    """The classes under ``tree`` whose ``__init__`` assigns an attribute called ``name`` of its
    own instance (``self.name = ...`` in the body of ``__init__`` itself, not in a function it
    defines), or ``None`` when some other code under ``tree`` assigns or deletes an attribute
    of that name (another method, a module-level ``obj.name = ...``, another object's in an
    ``__init__``: ``self.loss.name = ...``)."""
    out: list[cst.ClassDef] = []
    stack: list[tuple[cst.CSTNode, cst.ClassDef | None, cst.FunctionDef | None, cst.CSTNode | None]] = [
        (tree, None, None, None)]
    while stack:
        node, cls, func, parent = stack.pop()
        t = type(node)
        targets: list = []
        if t is cst.Assign:
            targets = [target.target for target in node.targets]
        elif t is cst.AugAssign or t is cst.AnnAssign and node.value is not None:
            targets = [node.target]
        elif t is cst.Del or t is cst.For or t is cst.CompFor:
            targets = [node.target]
        elif t is cst.WithItem and node.asname is not None:
            targets = [node.asname.name]
        for target in targets:
            for n in walk(target):
                if type(n) is not cst.Attribute or n.attr.value != name:
                    continue
                init = func is not None and func.name.value == "__init__" and parent is cls and cls is not None
                me = func.params.params[0].name.value if init and func.params.params else None
                if me is None or type(n.value) is not cst.Name or n.value.value != me or t in (cst.Del, cst.For, cst.CompFor):
                    return None
                if cls not in out:
                    out.append(cls)
        if t is cst.ClassDef:
            stack.extend((child, node, None, node) for child in children(node))
        elif t is cst.FunctionDef:
            stack.extend((child, cls, node, func if func is not None else cls) for child in children(node))
        else:
            stack.extend((child, cls, func, parent) for child in children(node))
    return out


def _attribute_assignments(node: cst.CSTNode, name: str) -> list:
    """The values assigned to an attribute called ``name`` (``x.state = value``) under
    ``node``; ``None`` in the list for such an attribute assigned otherwise (``x.state += 1``,
    ``a.state, b = pair``, ``x.state: T``, ``del x.state``)."""
    out: list = []
    stack = [node]
    while stack:
        n = stack.pop()
        t = type(n)
        if t is cst.Assign:
            for target in n.targets:
                if type(target.target) is cst.Attribute and target.target.attr.value == name:
                    out.append(n.value)
                else:
                    found: set[str] = set()
                    _attribute_targets_named(target.target, name, found)
                    out.extend(None for _ in found)
        elif t is cst.AugAssign or t is cst.AnnAssign or t is cst.Del:
            found = set()
            _attribute_targets_named(n.target, name, found)
            if found:
                out.append(n.value if t is cst.AnnAssign and type(n.target) is cst.Attribute and n.value is not None else None)
        stack.extend(children(n))
    return out


#: The builtins a ``for`` over an ``nn.ModuleList`` may pass it through, or that read its length,
#: without changing what it holds (:func:`_module_list_uses`).
_LIST_READERS = frozenset({"enumerate", "reversed", "zip", "len"})


def _name_bindings(scope: cst.CSTNode, name: str) -> list[cst.CSTNode]:
    """The nodes under ``scope`` (a function, class or module; nested functions and classes
    included) that bind ``name``: those of each body's statements (:func:`_sites`:
    assignments of every kind, ``for`` targets, ``with ... as``, ``except ... as``, ``match``
    captures, ``def``/``class`` statements, imports, ``del``, ``global``/``nonlocal``
    declarations), parameters, and the targets of comprehensions and walrus expressions."""
    sites: Sites = {}
    for n in walk(scope):
        t = type(n)
        if t is cst.FunctionDef or t is cst.Lambda:
            p = n.params
            for param in (*p.posonly_params, *p.params, *p.kwonly_params, p.star_arg, p.star_kwarg):
                if type(param) is cst.Param:
                    sites.setdefault(param.name.value, []).append(param)
        if t is cst.FunctionDef or t is cst.ClassDef or t is cst.Module:
            _sites(n.body, sites)
        elif t is cst.CompFor or t is cst.NamedExpr:
            for bound in dict.fromkeys(target_names(n.target)):
                sites.setdefault(bound, []).append(n)
    return sites.get(name, [])


def _own_attribute(expr: cst.BaseExpression, me: str) -> str | None:
    """``attr`` for ``expr`` = ``<me>.attr``, else ``None``."""
    if type(expr) is cst.Attribute and type(expr.value) is cst.Name and expr.value.value == me:
        return expr.attr.value
    return None


def _unshadowed_builtin(m: ModuleIndex, name: str) -> bool:
    """Whether ``name`` in module ``m`` is the builtin of that name (nothing of the module binds it)."""
    return not (name in m.globals or name in m.functions or name in m.classes or name in m.imports.aliases)


def _loop_bound_attribute(func: cst.FunctionDef, name: str, m: ModuleIndex) -> str | None:
    """The attribute of the method's instance whose items ``name`` takes, where the one binding
    of ``name`` in method ``func`` (of module ``m``) is the target of ``for name in
    self.<attr>:`` or ``for i, name in enumerate(self.<attr>, ...):`` (``self``: the method's
    first parameter); ``None`` otherwise."""
    params = func.params.params
    bindings = _name_bindings(func, name)
    if not params or len(bindings) != 1 or type(bindings[0]) is not cst.For:
        return None
    me, loop = params[0].name.value, bindings[0]
    if type(loop.target) is cst.Name:
        return _own_attribute(loop.iter, me)
    it = loop.iter
    if (type(loop.target) is cst.Tuple and len(loop.target.elements) == 2
            and type(loop.target.elements[1].value) is cst.Name and loop.target.elements[1].value.value == name
            and type(loop.target.elements[0].value) is cst.Name
            and type(it) is cst.Call and type(it.func) is cst.Name and it.func.value == "enumerate"
            and _unshadowed_builtin(m, "enumerate") and it.args and it.args[0].keyword is None
            and it.args[0].star == ""):
        return _own_attribute(it.args[0].value, me)
    return None


def _module_list_construction(m: ModuleIndex, value: cst.BaseExpression | None) -> list[ClassRef] | None:
    """The project classes whose constructions ``value``, an ``nn.ModuleList(...)`` call read in
    module ``m``, holds: none for ``nn.ModuleList()``; those of a list or tuple of
    constructions, or of a comprehension of one (``[Block(d) for _ in range(n)]``); ``None``
    for anything else."""
    if type(value) is not cst.Call or m.imports.qualify(dotted_name(value.func) or "") != "torch.nn.ModuleList":
        return None
    if not value.args:
        return []
    if len(value.args) != 1 or value.args[0].star != "":
        return None
    return _constructions(m, value.args[0].value)


def _constructions(m: ModuleIndex, expr: cst.BaseExpression) -> list[ClassRef] | None:
    """The project classes (not described by the knowledge) a list, tuple or list
    comprehension of constructions makes (``[Block(d), Block(d)]``); ``None`` otherwise."""
    t = type(expr)
    if t is cst.ListComp:
        elements = [expr.elt]
    elif t is cst.List or t is cst.Tuple:
        elements = [el.value for el in expr.elements]
        if any(type(el) is not cst.Element for el in expr.elements):
            return None
    else:
        return None
    return _project_classes_constructed(m, elements)


def _project_classes_constructed(m: ModuleIndex, values: list[cst.BaseExpression]) -> list[ClassRef] | None:
    """The project classes (not described by the knowledge) that ``values``, expressions of
    module ``m``, construct, each once, in order; ``None`` when one of them is not the
    construction of such a class (:func:`_constructed_class`)."""
    out: list[ClassRef] = []
    for value in values:
        ref = _constructed_class(m, value)
        if ref is None or ref.described:
            return None
        if ref not in out:
            out.append(ref)
    return out


def _appended_classes(m: ModuleIndex, func: cst.FunctionDef | None, expr: cst.BaseExpression) -> list[ClassRef] | None:
    """The project classes ``expr``, the argument of ``<list>.append(expr)`` in function
    ``func`` of module ``m``, constructs: a construction, or a local of ``func`` every binding of
    which is a plain ``name = <construction>``; ``None`` otherwise."""
    values = [expr]
    if type(expr) is cst.Name:
        if func is None:
            return None
        bindings = _name_bindings(func, expr.value)
        if not bindings or any(type(b) is not cst.Assign or len(b.targets) != 1
                               or type(b.targets[0].target) is not cst.Name for b in bindings):
            return None
        values = [b.value for b in bindings]
    return _project_classes_constructed(m, values)


def _module_list_uses(m: ModuleIndex, attr: str) -> list[ClassRef] | None:
    """The project classes the ``nn.ModuleList`` an attribute called ``attr`` holds is built
    of, read from every use of such an attribute in module ``m`` (see
    :meth:`UnitBuilder._module_list_items`); ``None`` when a use may put something else in it."""
    out: list[ClassRef] = []
    # (node, its parent, its grandparent, the function it is in)
    stack: list = [(m.tree, None, None, None)]
    while stack:
        n, parent, grand, func = stack.pop()
        if type(n) is cst.Attribute and n.attr.value == attr:
            tp, tg = type(parent), type(grand)
            found: list[ClassRef] | None = []
            if tp is cst.AssignTarget and tg is cst.Assign and len(grand.targets) == 1:
                found = _module_list_construction(m, grand.value)
            elif tp is cst.Attribute and parent.value is n and tg is cst.Call and grand.func is parent:
                method, args = parent.attr.value, grand.args
                if len(args) != 1 or args[0].keyword is not None or args[0].star != "":
                    found = None
                elif method == "append":
                    found = _appended_classes(m, func, args[0].value)
                elif method == "extend":
                    found = _constructions(m, args[0].value)
                else:
                    found = None
            elif tp is cst.For and parent.iter is n:
                pass
            elif (tp is cst.Arg and tg is cst.Call and parent.value is n and type(grand.func) is cst.Name
                  and grand.func.value in _LIST_READERS and _unshadowed_builtin(m, grand.func.value)):
                pass
            elif tp is cst.Subscript and parent.value is n and tg not in (cst.AssignTarget, cst.AugAssign, cst.Del, cst.Element):
                pass  # an item read (a store's target is the Subscript itself, whose parent says so;
                # one in a tuple of targets is not told from a read: not taken)
            else:
                found = None
            if found is None:
                return None
            out.extend(ref for ref in found if ref not in out)
        inner = n if type(n) is cst.FunctionDef else func
        stack.extend((c, n, parent, inner) for c in children(n))
    return out


def _attribute_targets_named(target: cst.BaseExpression, name: str, out: set) -> None:
    """Add ``name`` to ``out`` when ``target`` (an assignment or ``del`` target, a tuple of
    them) names an attribute called ``name``."""
    t = type(target)
    if t is cst.Attribute and target.attr.value == name:
        out.add(name)
    elif t is cst.Tuple or t is cst.List:
        for el in target.elements:
            _attribute_targets_named(el.value, name, out)
    elif t is cst.StarredElement:
        _attribute_targets_named(target.value, name, out)


def _constructed_class(m: ModuleIndex, value: cst.BaseExpression | None) -> ClassRef | None:
    """The project class ``value`` constructs, read in module ``m``: ``TrainState(...)``
    with ``TrainState`` a class of ``m`` or imported from the project; ``None`` otherwise."""
    if type(value) is not cst.Call:
        return None
    dotted = dotted_name(value.func)
    if dotted is None:
        return None
    if dotted in m.classes:
        return ClassRef(m, dotted)
    qualified = m.imports.qualify(dotted)
    return m.class_ref(qualified, qualified=True) if qualified != dotted else None


def _bound_only_by_star(frame: "Frame", dotted: str | None) -> bool:
    """Whether the first name of ``dotted`` can only come from a star import the engine did
    not resolve (``from torch_snippets import *`` binds ``torch`` there): not a local or
    parameter of the frames, not a global, a function, a class or an import of the module, not
    a builtin, and the module has a star import."""
    module = frame.module
    if not dotted or not module.imports.stars:
        return False
    head = dotted.partition(".")[0]
    f = frame
    while f is not None:
        if head in f.locals or head in f.subst:
            return False
        f = f.parent
    return not (head in module.imports.aliases or head in module.globals or head in module.functions
                or head in module.classes or hasattr(builtins, head))


def _star_class(frame: "Frame", name: str) -> ClassRef | None:
    """The class of the project a plain name is bound to by a star import of the module
    (``from .optimizer import *`` then ``WeightEMA(...)``), else ``None``: ``name`` is one name
    bound by nothing else (:func:`_bound_only_by_star`), and the star imports are read as
    Python binds them, the last one that defines a class ``name`` winning. The same classes
    :meth:`UnitBuilder._find_callee` inlines the constructor of; a star import of a module not
    in the project gives nothing."""
    if "." in name or not _bound_only_by_star(frame, name):
        return None
    return star_class(frame.module, name)


def star_class(module: ModuleIndex, name: str) -> ClassRef | None:
    """The class of the project that the star imports of ``module`` bind plain name ``name``
    to, the last star import that defines a class ``name`` winning, as Python binds them
    (``from model import *`` then ``EN(...)``); ``None`` when ``name`` is dotted, or bound in
    the module otherwise (an import, a global, a function, a class, a builtin), or no star
    import of a project module defines such a class. The caller rules out local bindings."""
    if "." in name or not module.imports.stars:
        return None
    if (name in module.imports.aliases or name in module.globals or name in module.functions
            or name in module.classes or hasattr(builtins, name)):
        return None
    for star in reversed(module.imports.stars):
        ref = module.class_ref(f"{star}.{name}", qualified=True)
        if ref is not None:
            return ref
    return None


def _bindings(body) -> dict[str, int | None]:
    """``name -> the integer it holds, or None`` for every name a block of statements (a
    function's body, a module's code) binds: the integer when the block binds the name exactly
    once, by a plain ``name = <integer>`` (``name: int = <integer>``) at its own level; ``None``
    when it binds it otherwise (:func:`single_bindings`)."""
    return {n: v.evaluated_value if type(v) is cst.Integer else None for n, v in single_bindings(body).items()}


def _stable_test(test: cst.BaseExpression, bound: dict) -> bool:
    """Whether ``test`` (of a conditional expression bound to a variable) has the same value
    wherever the function uses that variable afterwards: it is made of plain names, literals,
    ``not``, ``and``/``or`` and comparisons only, and each name is either bound nowhere in the
    function (a parameter it never re-binds, a global) or bound exactly once at the body's own
    level (``bound``: :func:`single_bindings` of the body)."""
    stack = [test]
    while stack:
        n = stack.pop()
        t = type(n)
        if t is cst.Name:
            if n.value in bound and bound[n.value] is None:
                return False
        elif t in (cst.Integer, cst.Float, cst.SimpleString):
            pass
        elif t is cst.UnaryOperation and type(n.operator) is cst.Not:
            stack.append(n.expression)
        elif t is cst.BooleanOperation:
            stack.extend((n.left, n.right))
        elif t is cst.Comparison:
            stack.append(n.left)
            stack.extend(c.comparator for c in n.comparisons)
        else:
            return False
    return True


def _plain_int_bindings(func: cst.FunctionDef, name: str) -> tuple[int, ...] | None:
    """The integer literals of the plain assignments ``name = <integer>`` in ``func``, when
    every binding of ``name`` in the function's own scope is a plain ``name = <expression>``
    statement with that one target (a literal or not); ``None`` when any other binds it there
    (``name += 1``, ``a, name = ...``, ``name: int = 0``, a ``for``/``with``/``except`` target,
    an import, ``del``, a walrus, a nested definition of that name) or a ``global``/``nonlocal``
    statement anywhere in the function names it (a nested function may re-bind it)."""
    values: list[int] = []
    for site in B.block_sites(func.body):
        if site.name != name or site.form in _NOT_COUNTED_BY_PLAIN_INT or type(site.node) in _NOT_COUNTED_NODES:
            continue
        if site.form is B.ASSIGN and not site.unpacked and len(site.node.targets) == 1:
            if type(site.value) is cst.Integer:
                values.append(site.value.evaluated_value)
            continue
        return None
    for n in walk(func):  # anywhere in the function, nested functions included
        t = type(n)
        if t is cst.NamedExpr and type(n.target) is cst.Name and n.target.value == name:
            return None
        if (t is cst.Global or t is cst.Nonlocal) and any(x.name.value == name for x in n.names):
            return None
    return tuple(dict.fromkeys(values))


#: The sites :func:`_plain_int_bindings` does not read from the function's own scope: walrus
#: targets and declarations (read anywhere in the function instead), and type aliases.
_NOT_COUNTED_BY_PLAIN_INT = frozenset({B.WALRUS, B.GLOBAL, B.NONLOCAL, B.TYPE_ALIAS})
#: Binding nodes :func:`_plain_int_bindings` does not count: ``case {**rest}`` and ``except*``.
_NOT_COUNTED_NODES = (cst.MatchMapping, cst.ExceptStarHandler)


def single_bindings(body) -> dict[str, cst.BaseExpression | None]:
    """``name -> the expression it is bound to, or None`` for every name a block of statements
    (a function's body, a module's code) binds: the expression when the block binds the name
    exactly once, by a plain ``name = <expression>`` (``name: T = <expression>``) at its own
    level; ``None`` when it binds it otherwise, more than once, or inside a compound statement
    (an ``if``, a loop, a ``try``: a run may bind it there or not, again and again), or when a
    ``global``/``nonlocal`` statement names it (a nested function may re-bind it).

    Public: the builder reads it for its run constants and stable bindings, and
    :mod:`loopcheck.engine.values` and :mod:`loopcheck.engine.settings` for the values a
    function or a module binds once."""
    out: dict[str, cst.BaseExpression | None] = {}
    for st in body:
        t = type(st)
        if t is not cst.SimpleStatementLine and t is not cst.SimpleStatementSuite:
            # a definition or a compound statement: what it binds is not bound once
            for s in B.statement_sites(st):
                if s.form in _BOUND_FORMS or s.form in _DECLARATIONS:
                    out[s.name] = None
            for n in _declarations([st]):
                out[n] = None
            continue
        for s in B.statement_sites(st):
            if s.form is B.WALRUS or s.form is B.TYPE_ALIAS:
                continue  # (not counted)
            once = (s.form is B.ASSIGN and not s.unpacked and len(s.node.targets) == 1) or (
                s.form is B.ANNOTATED and s.value is not None)
            out[s.name] = s.value if once and s.name not in out else None
    return out


def _deleted(target: cst.BaseDelTargetExpression) -> list[cst.BaseExpression]:
    """The targets of ``del a, b[:]``, one by one."""
    if isinstance(target, (cst.Tuple, cst.List)):
        return [t for el in target.elements for t in _deleted(el.value)]
    return [target]


def _whole_slice_of(target: cst.BaseExpression) -> cst.BaseExpression | None:
    """``x`` of ``x[:]`` (a slice with no bound and no step), where ``x`` is a dotted name:
    ``del x[:]`` empties the list as ``x.clear()`` does. ``None`` for any other target."""
    if type(target) is not cst.Subscript or len(target.slice) != 1 or dotted_name(target.value) is None:
        return None
    part = target.slice[0].slice
    if type(part) is not cst.Slice or part.lower or part.upper or part.step:
        return None
    return target.value


def _declarations(stmts) -> set[str]:
    """The names ``global`` and ``nonlocal`` statements declare in ``stmts``, in nested blocks,
    functions and classes too."""
    out: set[str] = set()
    stack = list(stmts)
    while stack:
        st = stack.pop()
        t = type(st)
        if t is cst.Global or t is cst.Nonlocal:
            out.update(x.name.value for x in st.names)
        elif t is cst.SimpleStatementLine or t is cst.SimpleStatementSuite or t is cst.IndentedBlock:
            stack.extend(st.body)
        elif t is cst.If:
            stack.append(st.body)
            if st.orelse is not None:
                stack.append(st.orelse if type(st.orelse) is cst.If else st.orelse.body)
        elif isinstance(st, cst.BaseCompoundStatement):
            if type(st) is not cst.Match:  # a match statement has only its cases
                stack.append(st.body)
            for attr in ("orelse", "finalbody"):
                part = getattr(st, attr, None)
                if part is not None:
                    stack.append(part.body)
            stack.extend(h.body for h in getattr(st, "handlers", ()))
            stack.extend(c.body for c in getattr(st, "cases", ()))
    return out


def run_constants(index) -> dict[str, int]:
    """``global name -> the integer it holds on every run``, for a module
    (:class:`ModuleIndex` or an outlined one): the integers of :func:`literal_constants`.
    Computed once per module."""
    found = index.cache.get("run_constants")
    if found is None:
        found = index.cache["run_constants"] = {k: v for k, v in literal_constants(index).items() if type(v) is int}
    return found


def literal_constants(index) -> dict[str, object]:
    """``global name -> the literal it holds on every run`` (an integer, ``True``, ``False``,
    ``None``, a string: :func:`literal_value`), for a module (:class:`ModuleIndex` or an
    outlined one): its own code binds the name exactly once, by ``name = <literal>``
    (:func:`single_bindings`), no function or method of the module declares it ``global``,
    and it is not imported. Computed once per module."""
    found = index.cache.get("literal_constants")
    if found is None:
        values = {k: literal_value(v) for k, v in module_bindings(index).items() if v is not None}
        found = index.cache["literal_constants"] = {k: v for k, v in values.items() if v is not NO_VALUE}
    return found


def module_bindings(index) -> dict[str, cst.BaseExpression | None]:
    """``global name -> the expression it is bound to, or None`` for a module's own code
    (:func:`single_bindings`), a name imported or declared ``global`` by a function of the
    module being ``None`` (not bound once). Computed once per module."""
    bound = index.cache.get("single_bindings")
    if bound is None:
        bound = single_bindings(index.module_code())
        for name in set(index.imports.aliases) | _declared_global(index):
            bound[name] = None
        index.cache["single_bindings"] = bound
    return bound


#: How many modules :func:`imported_literal` follows a name through (``from config import *``
#: in a module that ``train.py`` star-imports in turn).
IMPORT_DEPTH = 8


def _reads_global(frame: "Frame", name: str) -> bool:
    """Whether ``name``, read in ``frame``, is a global of the frame's module: no enclosing
    function's frame binds it (as a local, a parameter, a symbol substituted by an inlined call)."""
    f: Frame | None = frame
    while f is not None:
        if name in f.subst:
            return False
        if name in f.locals:
            return f.node is None
        f = f.parent
    return True


def imported_literal(index, name: str, on_read=None, _depth: int = 0):
    """The literal (:func:`literal_value`) global ``name`` of module ``index`` holds on every
    run when the module's own code binds it only by importing it from a module of its project
    that binds it exactly once to that literal (:func:`literal_constants`), or imports it so in
    turn (at most :data:`IMPORT_DEPTH` modules); :data:`NO_VALUE` otherwise.

    The import is either one ``from config import EPOCHS`` at the module's top level, and no
    star import of the module may bind the name (each binds names the project knows, none
    of them ``name``: :meth:`~loopcheck.engine.project.Project.star_names`), or a star import:
    the last one whose names hold ``name`` gives it, as Python binds them, and a star import
    after it whose names are not known makes it unknown. A name the module also binds
    otherwise (an assignment, a definition, an import under ``try``, a ``global`` statement
    of one of its functions) is not known, nor one of a module outside the project (a
    library's). ``on_read`` is called when another module's binding is read."""
    project, path = getattr(index, "project", None), getattr(index, "path", None)
    if project is None or path is None or _depth > IMPORT_DEPTH:
        return NO_VALUE
    code = index.module_code()
    if name in single_bindings([st for st in code if not _imports_only(st)]) or name in _declared_global(index):
        return NO_VALUE
    if name in index.functions or name in index.classes:
        return NO_VALUE
    own = _top_level_imports(code, name, index.imports.package)
    stars = [project.star_names(star, path) for star in index.imports.stars]
    if own:
        if len(own) != 1 or own[0] is None or any(names is None or name in names for names in stars):
            return NO_VALUE
        module, _, attr = own[0].rpartition(".")
        return _module_literal(index, module, attr, on_read, _depth)
    for star, names in zip(reversed(index.imports.stars), reversed(stars)):
        if names is None:
            return NO_VALUE
        if name in names:
            return _module_literal(index, star, name, on_read, _depth)
    return NO_VALUE


def _module_literal(index, module: str, name: str, on_read, depth: int):
    """The literal global ``name`` of project module ``module`` (a dotted name, imported by
    module ``index``) holds on every run (:func:`literal_constants`, or :func:`imported_literal`
    when it imports the name in turn); :data:`NO_VALUE` when the module is not the project's."""
    project = index.project
    found = project.find_module(module, index.path) if module else None
    info = project.load(found) if found is not None else None
    other = info.index if info is not None else None
    if other is None:
        return NO_VALUE
    if on_read is not None:
        on_read()
    value = literal_constants(other).get(name, NO_VALUE)
    return value if value is not NO_VALUE else imported_literal(other, name, on_read, depth + 1)


def _imports_only(st: cst.CSTNode) -> bool:
    """Whether statement ``st`` is a line of imports only."""
    return (type(st) is cst.SimpleStatementLine
            and all(type(s) is cst.Import or type(s) is cst.ImportFrom for s in st.body))


def _top_level_imports(code, name: str, package: str | None) -> list[str | None]:
    """What each ``from m import x [as name]`` among the top-level statements ``code`` that
    binds ``name`` imports (``"m.x"``, made absolute as :class:`ImportMap` does), one entry per
    binding; ``None`` for a binding by ``import`` (a module, no constant) or a relative import
    whose package is not known."""
    out: list[str | None] = []
    for st in code:
        if not _imports_only(st):
            continue
        for small in st.body:
            if type(small.names) is cst.ImportStar:
                continue
            for alias in small.names:
                bound = alias.asname.name.value if alias.asname is not None and type(alias.asname.name) is cst.Name \
                    else (dotted_name(alias.name) or "").split(".")[0]
                if bound != name:
                    continue
                if type(small) is cst.Import:
                    out.append(None)
                    continue
                one = ImportMap(package)
                one.add(small)
                out.append(one.aliases.get(name))
    return out


_GLOBAL = re.compile(r"\bglobal[ \t]+([\w \t,]+)")


def _declared_global(index) -> set[str]:
    """The names a module's functions and methods declare ``global`` (or ``nonlocal``): read
    from its text for an outlined module, whose functions are not parsed (a ``global`` in a
    string counts too), from its statements otherwise."""
    source = getattr(index, "source", None)
    if isinstance(source, str):
        return {n.strip() for m in _GLOBAL.finditer(source) for n in m.group(1).split(",")}
    return _declarations(index.body)


def _extra_args(func: cst.FunctionDef, args: list[Arg], method: bool) -> dict[str, list[Arg]]:
    """The arguments of a call that land in the callee's ``*args`` and ``**kwargs``, by the
    name of those parameters (to pass them on when the callee forwards them)."""
    p = func.params
    named = [x.name.value for x in (*p.posonly_params, *p.params)][1 if method else 0:]
    names = set(named) | {x.name.value for x in p.kwonly_params}
    out: dict[str, list[Arg]] = {}
    if type(p.star_arg) is cst.Param:
        positional = [a for a in args if a.keyword is None]
        out[p.star_arg.name.value] = positional[len(named):]
    if type(p.star_kwarg) is cst.Param:
        out[p.star_kwarg.name.value] = [a for a in args if a.keyword is not None and a.keyword not in names]
    return out


def _flag(frame: Frame, a: cst.Arg) -> bool | None:
    """:attr:`Arg.flag <loopcheck.engine.ir.Arg.flag>` of argument ``a`` of a call in ``frame``:
    the ``True``/``False`` its plain name holds as a constant parameter of the inlined call
    (:attr:`Frame.constants`), else ``None``."""
    if a.star or type(a.value) is not cst.Name or not frame.constants:
        return None
    value = frame.constants.get(a.value.value)
    return value if type(value) is bool else None


def _flag_call(frame: Frame, a: cst.Arg) -> cst.Call | None:
    """:attr:`Arg.flag_call <loopcheck.engine.ir.Arg.flag_call>` of argument ``a`` of a call
    in ``frame``: the call whose literal argument gave the parameter ``a`` names its
    ``True``/``False`` (:attr:`Frame.constant_calls`), else ``None`` (no flag, or one left at
    its default)."""
    if _flag(frame, a) is None:
        return None
    return frame.constant_calls.get(a.value.value)


def _statement_call(s: cst.CSTNode) -> cst.Call | None:
    """The call a small statement makes last, whose return the next statement runs after:
    ``f(x)``, ``y = f(x)``, ``y: T = f(x)``, ``return f(x)``; ``None`` for any other."""
    t = type(s)
    value = s.value if t in (cst.Expr, cst.Assign, cst.AnnAssign, cst.Return) else None
    return value if type(value) is cst.Call else None


def _starred_args(raw: Call) -> dict[int, str]:
    """``id()`` of the expression of each argument of ``raw`` that its call unpacks -> ``"*"``
    or ``"**"`` (``f(x, *xs, **kw)``); an unpacking of the caller's own ``*args``/``**kwargs``
    that the builder replaced by the arguments they hold is not among ``raw``'s."""
    node = raw.node
    if type(node) is not cst.Call:
        return {}
    return {id(a.value): a.star for a in node.args if a.star}


def _known_positional(args: list[Arg], starred: dict[int, str]) -> list[Arg]:
    """The positional arguments of a call whose parameter is known: those before the first
    ``*xs`` (what lands after it depends on its length); never a ``**kw``."""
    out = []
    for a in args:
        if a.keyword is not None:
            continue
        kind = starred.get(id(a.node))
        if kind == "*":
            break
        if kind is None:
            out.append(a)
    return out


def _starred_params(func: cst.FunctionDef, params: list[str], given: int, kinds: set[str]) -> set[str]:
    """The parameters of ``func`` that a call's unpacked arguments may give: with ``**kw``,
    every one; with ``*xs``, the positional ones ``params`` (less the bound ``self``) from
    index ``given`` on, ``given`` being how many positional arguments come before it."""
    if "**" in kinds:
        p = func.params
        return {x.name.value for x in (*p.posonly_params, *p.params, *p.kwonly_params)}
    if "*" in kinds:
        return set(params[given:])
    return set()


def _constants(func: cst.FunctionDef, bound: dict, subst: dict, assigned: set[str]) -> dict:
    """The parameters of an inlined call that hold a constant the function never re-binds:
    given a literal argument, or left at a literal default."""
    out = {}
    p = func.params
    for param in (*p.posonly_params, *p.params, *p.kwonly_params):
        name = param.name.value
        if name in assigned or name in subst:
            continue
        if name in bound:
            value = literal_value(bound[name].node)
        else:
            value = literal_value(param.default) if param.default is not None else NO_VALUE
        if value is not NO_VALUE:
            out[name] = value
    return out


def _ends_by_raise(arm: Seq) -> bool:
    """Whether the arm of an ``if`` ends with a ``raise`` (or a call that ends the program) as
    its last item: a raising guard's arm, for :meth:`UnitBuilder._learned_guard`."""
    return bool(arm.items) and isinstance(arm.items[-1], Jump) and arm.items[-1].kind == "raise"


def _ends_by_jump(arm: Seq) -> bool:
    """Whether the arm of an ``if`` ends with a ``raise`` or a ``return`` as its last item: a
    raising guard's arm (:attr:`~loopcheck.engine.dataflow._FactTable.guards`), for the calls'
    :attr:`Call.clobbers` to be worked out (the dataflow decides which arm never goes on)."""
    return bool(arm.items) and isinstance(arm.items[-1], Jump) and arm.items[-1].kind in ("raise", "return")


def decide_test(test: cst.BaseExpression, constants: dict) -> bool | None:
    """The value of an ``if`` test over constant parameters (``phase == "eval"``, ``not amp``,
    ``x is None``), ``None`` when it depends on anything else. ``constants`` maps names, or
    dotted names (``self.training``), to their values."""
    t = type(test)
    if t is cst.Name or t is cst.Attribute:
        key = test.value if t is cst.Name else dotted_name(test)
        return bool(constants[key]) if key in constants else None
    if t is cst.UnaryOperation and isinstance(test.operator, cst.Not):
        inner = decide_test(test.expression, constants)
        return None if inner is None else not inner
    if t is cst.Comparison and len(test.comparisons) == 1:
        left = _constant_operand(test.left, constants)
        if left is NO_VALUE:
            return None
        comp = test.comparisons[0]
        right = literal_value(comp.comparator)
        if right is NO_VALUE:
            return None
        op = comp.operator
        if isinstance(op, cst.Equal):
            return left == right
        if isinstance(op, cst.NotEqual):
            return left != right
        if isinstance(op, (cst.Is, cst.IsNot)):
            same = same_object(left, right, made_at_run_time=type(test.left) is cst.Call)
            return None if same is None else same is isinstance(op, cst.Is)
    return None


#: The strings CPython interns when they are constants of the code: only these name characters.
_INTERNED_CONSTANT = re.compile(r"[A-Za-z0-9_]*")


def same_object(left: object, right: object, made_at_run_time: bool = False) -> bool | None:
    """Whether ``left is right`` holds when both values are constants of the program's code
    (a literal argument, default or comparand), as CPython runs it; ``None`` when that depends
    on the implementation. Different values are different objects; ``None``, ``True`` and
    ``False`` are singletons; CPython interns the string constants made of name characters
    (``phase is 'train'`` with ``phase`` given ``'train'`` holds) and caches the integers from
    -5 to 256. ``made_at_run_time``: ``left`` was made by a string method (``mode.lower()``),
    a new object, so only a different value decides. (The analysis's own copies of the values
    are not compared by identity: two evaluations of one literal need not be one object.)"""
    if type(left) is not type(right) or left != right:
        return False
    if made_at_run_time:
        return None
    if left is None or type(left) is bool:
        return True
    if type(left) is str:
        return True if _INTERNED_CONSTANT.fullmatch(left) else None
    if type(left) is int:
        return True if -5 <= left <= 256 else None
    return None


#: How many names, parameters and calls :meth:`UnitBuilder.holds_object` and
#: :func:`never_none` follow to a value before they give up (it may then be ``None``).
MAX_NONE_DEPTH = 12


def _is_none(expr: cst.BaseExpression) -> bool:
    return type(expr) is cst.Name and expr.value == "None"


def _names_local(frame: Frame, head: str) -> bool:
    """Whether ``head``, read in ``frame``, is a name of a function being built (a local, a
    parameter, a nested ``def``, a class parameter) rather than one of its module."""
    f: Frame | None = frame
    while f is not None and f.node is not None:
        if head in f.locals or head in f.subst or head in f.shadow or head in f.defs or head in f.class_params:
            return True
        f = f.parent
    return False


def never_none(index: ModuleIndex, expr: cst.BaseExpression, env: dict | None, depth: int = 0,
               reads: list | None = None) -> bool:
    """Whether ``expr``, an expression of module ``index``, is never ``None`` on a run that
    evaluates it: a call that constructs an object (:func:`constructs`), or a call of a
    function of the project that returns such a value on every path
    (:func:`returns_never_none`); a name ``env`` (the local names of the function ``expr`` is
    in, :func:`_function_env`) binds to such values only, or, when ``env`` does not name it,
    a global the module binds once to one (:func:`module_bindings`). Anything else may be
    ``None``. ``env`` ``None``: the caller checked that the name called is no local. ``reads``
    gets ``(module, function)`` for each function of the project read, ``(module, None)`` for
    a class of the project or a global binding read (:meth:`UnitBuilder.holds_object`)."""
    if depth > MAX_NONE_DEPTH:
        return False
    t = type(expr)
    if t is cst.Name:
        if env is not None and expr.value in env:
            values = env[expr.value]
            return values is not None and all(never_none(index, v, env, depth + 1, reads) for v in values)
        if reads is not None:
            reads.append((index, None))
        value = module_bindings(index).get(expr.value)
        return value is not None and never_none(index, value, None, depth + 1, reads)
    if t is not cst.Call:
        return False
    name = dotted_name(expr.func)
    if name is None or (env is not None and name.partition(".")[0] in env):
        return False
    if constructs(index, name, reads):
        return True
    found = _module_function(index, name)
    if found is None:
        return False
    if reads is not None:
        reads.append(found)
    return returns_never_none(found[0], found[1], depth + 1, reads)


def constructs(index: ModuleIndex, name: str, reads: list | None = None) -> bool:
    """Whether calling the dotted name ``name`` of module ``index`` constructs an object: a
    library class the knowledge describes (``torch.utils.data.DataLoader``, an optimizer, a
    layer), or a class of the project that :func:`plain_class` finds plain (no ``__new__`` or
    metaclass that may hand back something else; ``reads``: as :func:`never_none`'s)."""
    head, _, rest = name.partition(".")
    if not rest and name in index.classes:
        if reads is not None:
            reads.append((index, None))
        return plain_class(ClassRef(index, name))
    if head not in index.imports.aliases or head in index.globals:
        return False
    q = index.imports.qualify(name)
    if knowledge().cls(q) is not None:
        return True
    ref = index.class_ref(q, qualified=True)
    if ref is not None and reads is not None:
        reads.append((ref.module, None))
    return ref is not None and plain_class(ref)


def _module_function(index: ModuleIndex, name: str) -> tuple[ModuleIndex, cst.FunctionDef] | None:
    """``(module, def)`` of the module-level function of the project the dotted name ``name``
    of module ``index`` refers to: one the module defines, or one it imports from another
    module of the project (not one the library knowledge describes)."""
    head, _, rest = name.partition(".")
    if not rest and name in index.functions:
        return index, index.functions[name]
    project = index.project
    if project is None or head not in index.imports.aliases or head in index.globals:
        return None
    q = index.imports.qualify(name)
    if not q or knowledge().callable(q) is not None:
        return None
    member = project.lookup(q, index.path)
    if member is None or member.function is None or member.cls or member.info.index is None:
        return None
    return member.info.index, member.function


def returns_bind_targets(func: cst.FunctionDef, n: int) -> bool:
    """Whether the events the builder makes for the ``return`` statements of ``func``, inlined
    for a call whose result goes to ``n`` targets, bind each target to what that ``return``
    gives on every path that gives one: a plain ``def`` (no decorator, not ``async``, no
    ``yield``: its call's result is what a ``return`` gives) each of whose ``return``
    statements gives nothing or ``None`` (as does running off the end: for several targets the
    unpacking then raises), a call (whose event binds the targets), any value for one target,
    or, for several, a tuple or list display of exactly ``n`` items, none starred (assigned
    pairwise). Not so for ``return pair`` into ``a, b``: only ``a`` is bound there."""
    if func.decorators or func.asynchronous is not None:
        return False
    for node in walk(func.body, prune=(cst.FunctionDef, cst.ClassDef, cst.Lambda)):
        t = type(node)
        if t is cst.Yield:
            return False
        if t is not cst.Return or node.value is None or n == 1 or type(node.value) is cst.Call:
            continue
        value = node.value
        if type(value) is cst.Name and value.value == "None":
            continue  # unpacking None raises: this path binds nothing
        if type(value) not in (cst.Tuple, cst.List) or len(value.elements) != n or any(
            type(el) is cst.StarredElement for el in value.elements
        ):
            return False
    return True


def returns_never_none(index: ModuleIndex, func: cst.FunctionDef, depth: int = 0, reads: list | None = None) -> bool:
    """Whether every call of ``func``, a function of module ``index``, that returns gives a
    value that is never ``None`` (:func:`never_none`): a plain ``def`` (no decorator, not
    ``async``, no ``yield``) each of whose ``return`` statements returns such a value, and
    whose body cannot run off its end (:func:`_always_leaves`: a path that does returns
    ``None``)."""
    if depth > MAX_NONE_DEPTH or func.decorators or func.asynchronous is not None:
        return False
    if not _always_leaves(_block_statements(func.body)):
        return False
    env = _function_env(index, func)
    returns = []
    for node in walk(func.body, prune=(cst.FunctionDef, cst.ClassDef, cst.Lambda)):
        t = type(node)
        if t is cst.Yield:
            return False
        if t is cst.Return:
            returns.append(node.value)
    return bool(returns) and all(v is not None and never_none(index, v, env, depth + 1, reads) for v in returns)


def _function_env(index: ModuleIndex, func: cst.FunctionDef) -> dict[str, tuple | None]:
    """The local names of ``func`` (a function of module ``index``) for :func:`never_none`:
    each name that only plain assignments bind (``name = v``, ``name: T = v``, ``(name :=
    v)``, at any depth of its body) -> the expressions they bind; a name bound any other way
    too (a parameter, a loop's target, an unpacking, ``+=``, ``with ... as``, ``except ...
    as``, ``del``, an import, ``global``, a nested function's ``nonlocal``) -> ``None``. A read
    of a name of the first kind that succeeds gives one of its expressions' values. Kept per
    function in the module's cache."""
    memo = index.cache.setdefault("plain_bindings", {})
    found = memo.get(id(func))
    if found is None or found[0] is not func:
        values: dict[str, list | None] = {}
        for site in B.scope_sites(func):
            plain = site.form in (B.ASSIGN, B.ANNOTATED, B.WALRUS) and not site.unpacked
            if site.form is B.ANNOTATED and site.value is None:
                continue  # ``name: T`` declares the name, binds nothing
            if not plain or site.value is None:
                values[site.name] = None
            elif values.get(site.name, []) is not None:
                values.setdefault(site.name, []).append(site.value)
        for node in walk(func.body):
            if type(node) is cst.Nonlocal:
                for alias in node.names:
                    values[alias.name.value] = None
        found = memo[id(func)] = (func, {k: tuple(v) if v is not None else None for k, v in values.items()})
    return found[1]


def _block_statements(block: cst.BaseSuite) -> list:
    """The statements of an indented block, or the one line of ``if x: return y``."""
    return list(block.body) if type(block) is cst.IndentedBlock else [block]


def _always_leaves(stmts) -> bool:
    """Whether a block of statements never runs off its end: its last statement is a
    ``return`` or a ``raise`` (the last of its line's small statements), or an
    ``if``/``elif``/``else`` every arm of which never does. A loop, a ``with`` (its manager
    may swallow the exception a ``raise`` makes) or a ``try`` may."""
    if not stmts:
        return False
    last = stmts[-1]
    t = type(last)
    if t is cst.SimpleStatementLine or t is cst.SimpleStatementSuite:
        return bool(last.body) and type(last.body[-1]) in (cst.Return, cst.Raise)
    if t is cst.If:
        orelse = last.orelse
        if orelse is None or not _always_leaves(_block_statements(last.body)):
            return False
        return _always_leaves([orelse] if type(orelse) is cst.If else _block_statements(orelse.body))
    return False


def _constant_operand(expr: cst.BaseExpression, constants: dict) -> object:
    """The value of a compared operand over constant parameters: a name or a dotted name in
    ``constants``, or a string transform of one (``mode.lower()``, :data:`STR_TRANSFORMS`);
    :data:`NO_VALUE` for anything else."""
    t = type(expr)
    if t is cst.Call and not expr.args and type(expr.func) is cst.Attribute and expr.func.attr.value in STR_TRANSFORMS:
        value = _constant_operand(expr.func.value, constants)
        return getattr(value, expr.func.attr.value)() if isinstance(value, str) else NO_VALUE
    if t is cst.Name:
        return constants.get(expr.value, NO_VALUE)
    if t is cst.Attribute:
        return constants.get(dotted_name(expr), NO_VALUE)
    return NO_VALUE


def _values(expr: cst.BaseExpression) -> list[cst.BaseExpression]:
    """The expressions whose value ``expr`` can be: itself, or the arms of a conditional
    expression (``a() if c else b()``) and the operands of ``and``/``or``."""
    t = type(expr)
    if t is cst.IfExp:
        return [*_values(expr.body), *_values(expr.orelse)]
    if t is cst.BooleanOperation:
        return [*_values(expr.left), *_values(expr.right)]
    return [expr]


def _one(targets: tuple) -> str | None:
    return targets[0] if len(targets) == 1 else None


class _NameUses(cst.CSTVisitor):
    """The ``Name`` nodes of one name in a function, and those that are a ``for``'s iterable."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.uses = 0
        self.iterated = 0

    def visit_Name(self, node: cst.Name) -> None:
        if node.value == self.name:
            self.uses += 1

    def visit_For(self, node: cst.For) -> None:
        if type(node.iter) is cst.Name and node.iter.value == self.name:
            self.iterated += 1


def _only_iterated(func: cst.FunctionDef, name: str) -> bool:
    """Whether every read of ``name`` in the body of ``func`` is the iterable of a ``for``
    (``for batch in generator:``): nothing else can add items to the object it names
    (``generator.append(...)``) or hand it on."""
    uses = _NameUses(name)
    func.body.visit(uses)
    return uses.uses == uses.iterated


def _is_static(func: cst.FunctionDef) -> bool:
    return any(dotted_name(d.decorator) == "staticmethod" for d in func.decorators)


def _class_param(frame: Frame, name: str) -> ClassRef | None:
    """The class ``name`` is bound to as the first parameter of a ``@classmethod`` being built
    in ``frame`` or a frame enclosing it (:attr:`Frame.class_params`), else ``None``."""
    f: Frame | None = frame
    while f is not None:
        if name in f.class_params:
            return f.class_params[name]
        if name in f.locals or name in f.subst:
            return None
        f = f.parent
    return None


def _is_classmethod(func: cst.FunctionDef) -> bool:
    """Whether ``func`` is decorated ``@classmethod``: its first parameter is the class."""
    return any(dotted_name(d.decorator) == "classmethod" for d in func.decorators)


def _has_jump(node: Node) -> bool:
    """Whether a ``break``, ``continue``, ``return`` or ``raise`` sits anywhere in ``node``."""
    return type(node) is Jump or any(_has_jump(p) for p in parts(node))


#: a grad mode as ``(grad, grad_inherited, grad_asked)`` of :class:`~loopcheck.engine.ir.Context`
Grad = tuple[str, bool, bool]


def _grad_of(ctx: Context) -> Grad:
    """The grad mode of a context."""
    return ctx.grad, ctx.grad_inherited, ctx.grad_asked


def _join_grads(modes) -> Grad | None:
    """The grad mode after paths that meet, each leaving one of ``modes``: the mode they all
    agree on, ``"unknown"`` when they disagree (never the mode of one path); inherited from the
    unit's entry when one path kept the entry's mode, asked for when every path asked for it.
    ``None`` when no path reaches the meeting point."""
    modes = [m for m in modes if m is not None]
    if not modes:
        return None
    grads = {grad for grad, _, _ in modes}
    return (grads.pop() if len(grads) == 1 else "unknown",
            any(inherited for _, inherited, _ in modes), all(asked for _, _, asked in modes))


def _grad_through(entry: Grad, end: Grad | None, sets: bool, mode: Grad, fixed: bool = False) -> Grad | None:
    """The grad mode after a block that was built entered in ``entry`` and ended in ``end``
    (``None``: no path falls out of it), when it runs entered in ``mode`` instead (a ``finally``
    reached by a ``return``, a handler reached by a ``raise`` after a set). ``sets``: whether the
    block sets a mode anywhere (:attr:`Frame.grad_log` grew while it was built); ``fixed``:
    a statement of its own top level sets the mode by its argument (:attr:`Frame.end_fixed`).

    A block that sets none keeps ``mode``. One whose top level sets it ends in ``end``,
    which the statements from that set on compute from the mode set. One whose end is a known mode other than its
    entry's set that mode on every path (a path that set nothing would have kept ``entry``,
    and the paths' join would not be known), whatever it was entered in. Otherwise the end is
    exact only for a block entered in ``entry``'s mode; in another, ``"unknown"`` (inherited
    when either may be: which paths of the block kept ``mode`` is not known)."""
    if end is None:
        return None
    if not sets:
        return mode
    if fixed or end[0] != "unknown" and end[0] != entry[0] or mode == entry:
        return end
    return "unknown", end[1] or mode[1], end[2] and mode[2]


def _close_with(out: list[Node], guarded: int, exits: list[Node]) -> None:
    """Append the exits of a ``with`` statement's items (last entered, first left) to ``out``,
    whose items from ``guarded`` on are the part they close: a plain sequence, or, when a jump
    may leave that part, a ``try``/``finally`` holding them, so that the exits (the code after a
    ``@contextmanager``'s ``yield``, an ``__exit__``) also run on a ``return``, ``break``,
    ``continue`` or ``raise`` leaving the block, as Python runs them."""
    if not exits:
        return
    if any(_has_jump(node) for node in out[guarded:]):
        body = Seq(out[guarded:])
        del out[guarded:]
        out.append(Try(body, [], Seq(), Seq(list(reversed(exits)))))
    else:
        out.extend(reversed(exits))


def _is_literal(expr: cst.CSTNode, literal_names: set[str]) -> bool:
    """Numbers and arithmetic on them (``30``, ``[30, 60]``, ``2 * 10``), where a name counts
    only if it is in ``literal_names``."""
    t = type(expr)  # final classes: ``type(...) is`` (``isinstance`` on them is slow for others)
    if t is cst.Integer or t is cst.Float:
        return True
    if t is cst.Name:
        return expr.value in literal_names
    if t is cst.List or t is cst.Tuple:
        return all(_is_literal(e.value, literal_names) for e in expr.elements)
    if t is cst.BinaryOperation:
        return _is_literal(expr.left, literal_names) and _is_literal(expr.right, literal_names)
    if t is cst.UnaryOperation:
        return _is_literal(expr.expression, literal_names)
    return False


#: Expressions that hold no call.
_NO_CALL = (cst.Name, cst.Integer, cst.Float, cst.SimpleString)


def _arg_node(call: cst.Call, ref) -> cst.Arg | None:
    """The argument of ``call`` a knowledge reference names (``0``, ``"input"``,
    ``(0, "input")``) in a LibCST call, as :func:`~loopcheck.engine.calls.arg_at` in the IR's;
    ``None`` when absent or when ``ref`` names no single argument."""
    parts = ref_parts(ref)
    if parts is None:
        return None
    index, keyword = parts
    if keyword is not None:
        for a in call.args:
            if a.keyword is not None and a.keyword.value == keyword:
                return a
    if index is not None:
        positional = [a for a in call.args if a.keyword is None and not a.star]
        if index < len(positional):
            return positional[index]
    return None


def value_kind(imports: ImportMap, value: cst.BaseExpression) -> str:
    """Classify an assigned value: ``number`` (``x.item()``, ``float(x)``), ``detached``
    (``x.detach()``, ``x.data``), ``integer`` (``a == b``, ``logits.argmax(1)``), ``call`` or
    ``expr``. What a call returns comes from the
    library knowledge (``torch.Tensor.item`` returns a number, ``float`` too)."""
    if type(value) is cst.Call:
        func = value.func
        kb = knowledge()
        if type(func) is cst.Attribute:
            summary = kb.method("torch.Tensor", func.attr.value)
            if summary is not None and summary.returns is not None and summary.returns.value in NO_GRAPH:
                return summary.returns.value
            if isinstance(func.value, (cst.Call, cst.Attribute)):
                inner = value_kind(imports, func.value)  # v.data.sum(), loss.detach().cpu()
                if inner in NO_GRAPH:
                    return inner
        q = imports.qualify(dotted_name(func))
        summary = kb.function(q)
        if summary is not None and summary.returns is not None and summary.returns.value in NO_GRAPH:
            return summary.returns.value
        return "call"
    if type(value) is cst.Attribute and value.attr.value == "data":
        return "detached"
    if type(value) is cst.Comparison or (type(value) is cst.UnaryOperation and type(value.operator) is cst.Not):
        return "integer"
    if isinstance(value, (cst.Integer, cst.Float)):
        return "number"
    return "expr"
