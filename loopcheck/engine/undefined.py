"""Names read where nothing binds them: evaluating one raises ``NameError``.

``for i, data in enumerate(unlabeled_train):`` in a script that binds ``unlabeled_train``
nowhere stops the script there, on the first epoch; ``optimizer.load_state_dict(...)`` in a
function whose optimizer is ``optimizer_p`` raises before it loads anything. The code after
such a read never runs on that path: the builder ends the path there, as at a ``raise``
(:meth:`loopcheck.engine.builder.UnitBuilder.raising_read`), so every rule sees it end.

:func:`resolve` decides, for every ``Name`` of a module that is evaluated (a load), whether
it resolves to a binding, as Python's scoping rules (and pyflakes' ``undefined name``) say.
A read in a scope is bound when its name is bound:

* in its own scope (function, lambda, comprehension, class body), by any binding form
  anywhere in it, in any branch, before or after the read: an assignment (plain, augmented,
  annotated), a ``for``, ``with`` or ``except`` target, an import, a ``def`` or ``class``, a
  walrus (in a comprehension it binds the enclosing function's or module's name), a ``match``
  capture, a ``del``, a ``type`` alias, a parameter, a ``nonlocal`` declaration;
* in an enclosing function, lambda or comprehension (a class body is seen by its own code
  only, not by the functions in it);
* in the module's scope, or by a ``global`` declaration in any function of the module;
* or it is a builtin (:func:`~loopcheck.engine.import_raises.known_names`: Python's, those of
  other versions and of tools and notebook kernels, and a module's own ``__file__``,
  ``__name__``, ...), or an implicit name of a class body or method (``__module__``,
  ``__qualname__``, ``__class__``).

A name bound only in some branches is bound: whether it is unbound on a path is not decided.
Names only in annotations (never evaluated for a local variable, nor anywhere under ``from
__future__ import annotations``) and in ``del`` targets are not reads.

Nothing is decided (:attr:`Resolution.decided` is false) for a module that may bind names
unseen: a star import (but of a module of the project whose names are all known),
``exec``/``eval``, ``globals()``/``locals()``/``vars()``, the ``builtins``/``__builtins__``/
``__main__`` modules, ``sys.modules`` (the ``modules`` of a name bound to ``sys``), ``__import__``, a
``setattr`` on an imported module, a module-level ``__getattr__``. A notebook is not asked
about: its cells run in any order, and its kernel binds names
(:attr:`loopcheck.engine.builder.ModuleIndex.notebook`).

The builder asks only about a program (:func:`loopcheck.engine.builder.undefined_reads`): a
snippet, as a README or a fixture shows one, reads ``model`` or ``loader`` from the reader's
context. A module is a program when it has an import in its top scope and either an ``if
__name__ == "__main__":`` block (:func:`is_program`) or a data loader it builds from what it
binds itself (:func:`builds_own_loader`: a script without a main block, run as ``python
train.py``, that makes its own data; a snippet leaves out where its data comes from).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import libcst as cst

from loopcheck.engine.bindings import target_names
from loopcheck.engine.import_raises import is_main_block, known_names
from loopcheck.engine.interrupts import checkpoint
from loopcheck.engine.knowledge import knowledge
from loopcheck.engine.names import dotted_name
from loopcheck.engine.walk import children, walk

#: Names a module may use that bind its names unseen, or make a builtin of any name.
OPEN_NAMES = frozenset({
    "globals", "locals", "vars", "exec", "eval", "execfile", "__import__",
    "builtins", "__builtin__", "__builtins__", "__main__",
})
#: Names Python binds implicitly in a class body (``__module__``, ``__qualname__``) and in a
#: method that uses ``super()`` or ``__class__`` (the class cell), and keywords LibCST parses
#: as names.
IMPLICIT_NAMES = frozenset({"__module__", "__qualname__", "__class__", "True", "False", "None"})
_COMPREHENSIONS = (cst.ListComp, cst.SetComp, cst.GeneratorExp, cst.DictComp)


@dataclass(eq=False)
class Scope:
    """One scope of a module: the names bound in it, and the scope around it.

    Attributes:
        kind: ``"module"``, ``"function"`` (a ``def`` or a lambda), ``"class"`` or
            ``"comprehension"``.
        parent: the enclosing scope (``None`` for the module).
        bound: the names its own code binds.
    """

    kind: str
    parent: "Scope | None"
    bound: set[str] = field(default_factory=set)

    def binder(self) -> "Scope":
        """The scope a walrus in this scope binds in: the nearest that is no comprehension."""
        scope = self
        while scope.kind == "comprehension" and scope.parent is not None:
            scope = scope.parent
        return scope


@dataclass(frozen=True)
class Resolution:
    """What :func:`resolve` found in one module.

    Attributes:
        decided: whether the module's names can all be seen (see the module docstring);
            when not, :attr:`undefined` is empty.
        undefined: the ``Name`` nodes evaluated where nothing binds their name.
        module_names: the names bound in the module's scope (``global`` declarations
            included).
        local: the ``Name`` nodes evaluated where a function, lambda, comprehension or class
            body binds their name (a parameter, a local variable): a value that does not
            come from the module's own bindings.
    """

    decided: bool
    undefined: frozenset[cst.Name]
    module_names: frozenset[str]
    local: frozenset[cst.Name] = frozenset()


NOT_DECIDED = Resolution(False, frozenset(), frozenset())


def resolve(module: cst.Module, star_names: Callable[[int], frozenset[str] | None] | None = None) -> Resolution:
    """The reads of ``module`` that no binding resolves (see the module docstring).

    Args:
        module: a whole parsed module (LibCST).
        star_names: for a module with star imports, called with how many it has: every
            name they may bind, when each imports a module of the project whose names are
            all known (:meth:`loopcheck.engine.project.Project.star_names`), else ``None``
            (then nothing is decided). Without it, a star import decides nothing.
    """
    collector = _Collector()
    collector.visit_body(module.body, collector.module)
    if collector.stars and not collector.open:
        names = star_names(collector.stars) if star_names is not None else None
        if names is None:
            collector.open = True
        else:
            collector.module.bound.update(names)
    if collector.open:
        return Resolution(False, frozenset(), frozenset(collector.module.bound))
    known = known_names() | IMPLICIT_NAMES
    undefined = frozenset(
        node for node, scope in collector.reads
        if node.value not in known and not _bound(node.value, scope, collector.module)
    )
    local = frozenset(node for node, scope in collector.reads if _bound_locally(node.value, scope))
    return Resolution(True, undefined, frozenset(collector.module.bound), local)


def has_import(module: cst.Module) -> bool:
    """Whether ``module`` has an import statement in its top scope (one in a function does
    not count)."""
    return any(
        type(stmt) is cst.SimpleStatementLine and any(type(s) in (cst.Import, cst.ImportFrom) for s in stmt.body)
        for stmt in module.body
    )


def is_program(module: cst.Module) -> bool:
    """Whether ``module`` is a program meant to run as a whole, not a snippet: it has an
    import statement in its top scope and an ``if __name__ == "__main__":`` block at its top
    level (as :func:`~loopcheck.engine.import_raises.raising_statement` asks). A snippet, as a
    README or a fixture shows one, reads ``model`` or ``loader`` from the reader's context,
    often below ``import torch``: its free names are not taken to raise. A script without a
    main block may still be a whole program: see :func:`builds_own_loader`."""
    return has_import(module) and any(is_main_block(stmt) for stmt in module.body)


def builds_own_loader(
    module: cst.Module, found: Resolution, qualify: Callable[[str], str | None],
) -> bool:
    """Whether ``module`` builds its data itself: its code (at its top level or in any of its
    functions) constructs a data loader (a library class whose constructor returns the
    ``loader`` role in loopcheck's knowledge: ``torch.utils.data.DataLoader``) from arguments
    whose names all resolve to the module's own bindings or to builtins: none that nothing
    binds (:attr:`Resolution.undefined`), none bound in a function (:attr:`Resolution.local`:
    ``DataLoader(ds)`` in ``def make_loader(ds):`` builds over whatever its caller gives,
    which may be a name the reader's context binds). A snippet leaves out where its data
    comes from and reads ``loader`` or ``train_set`` from the reader's context; a module that
    builds its loader from what it binds itself is a whole program (a script without a main
    block, run as ``python train.py``), and a name it reads that nothing binds raises
    ``NameError``.

    Args:
        module: a whole parsed module.
        found: :func:`resolve`'s answer for ``module``.
        qualify: the module's import aliases, a local dotted name to its qualified name.
    """
    kb = knowledge()
    foreign = found.undefined | found.local
    for node in walk(module):
        if type(node) is not cst.Call:
            continue
        summary = kb.callable(qualify(dotted_name(node.func) or ""))
        if summary is None or summary.returns is None or summary.returns.role != "loader":
            continue
        if not any(reads_any(arg.value, foreign) for arg in node.args):
            return True
    return False


def reads_any(expr: cst.CSTNode, undefined: frozenset[cst.Name]) -> bool:
    """Whether ``expr`` contains, anywhere, a read of ``undefined`` (a set of ``Name`` nodes)."""
    return any(n in undefined for n in walk(expr) if type(n) is cst.Name)


def _bound_locally(name: str, scope: Scope) -> bool:
    """Whether ``name`` read in ``scope`` resolves to a binding of a scope other than the
    module's: its own (a function, lambda, comprehension or class body), or an enclosing
    function's or comprehension's."""
    if scope.kind != "module" and name in scope.bound:
        return True
    outer = scope.parent
    while outer is not None:
        if outer.kind not in ("class", "module") and name in outer.bound:
            return True
        outer = outer.parent
    return False


def _bound(name: str, scope: Scope, module: Scope) -> bool:
    """Whether ``name`` read in ``scope`` resolves to a binding: its own scope's, an enclosing
    function's or comprehension's (not a class body's), or the module's."""
    if name in scope.bound:
        return True
    outer = scope.parent
    while outer is not None:
        if outer.kind != "class" and name in outer.bound:
            return True
        outer = outer.parent
    return name in module.bound


class _Collector:
    """One walk of a module: its scopes with their bindings, its reads with their scopes, and
    whether anything may bind names unseen (:attr:`open`)."""

    def __init__(self) -> None:
        self.module = Scope("module", None)
        self.reads: list[tuple[cst.Name, Scope]] = []
        self.imported: set[str] = set()  # names bound by imports (modules, for ``setattr``)
        self.sys_names: set[str] = set()  # names bound to the ``sys`` module
        self.modules_of: list[cst.Name] = []  # ``x`` of each ``x.modules``
        self.setattr_firsts: list[cst.Name] = []
        self.stars = 0  # star imports
        self.open = False

    # -- statements ------------------------------------------------------------------------
    def visit_body(self, body, scope: Scope) -> None:
        """The statements of a block (or one statement's small statements); a cancellation
        point before each statement of the module's own body
        (:func:`~loopcheck.engine.interrupts.checkpoint`)."""
        top = scope is self.module
        for stmt in body:
            if top:
                checkpoint()
            self.visit(stmt, scope)
        if scope is self.module:
            self._close_module()

    def _close_module(self) -> None:
        """Once the module is walked: a ``setattr`` on an imported module, or a module-level
        ``__getattr__``, may give names no statement binds."""
        if "__getattr__" in self.module.bound:
            self.open = True
        if any(first.value in self.imported for first in self.setattr_firsts):
            self.open = True
        if any(name.value in self.sys_names for name in self.modules_of):
            self.open = True

    def visit(self, node: cst.CSTNode, scope: Scope) -> None:
        """Walk ``node`` in ``scope``: record the names it binds and the names it reads."""
        t = type(node)
        handler = _HANDLERS.get(t)
        if handler is not None:
            handler(self, node, scope)
            return
        if t is cst.Name:
            if node.value in OPEN_NAMES:
                self.open = True
            self.reads.append((node, scope))
            return
        if t in _COMPREHENSIONS:
            self._comprehension(node, scope)
            return
        for child in children(node):
            self.visit(child, scope)

    def bind_target(self, target: cst.CSTNode, scope: Scope) -> None:
        """An assignment target: the names it binds in ``scope``, and what it reads (the object
        of ``x.a`` and ``x[i]``)."""
        t = type(target)
        if t is cst.Name:
            scope.bound.add(target.value)
        elif t is cst.Tuple or t is cst.List:
            for element in target.elements:
                self.bind_target(element.value, scope)
        elif t is cst.StarredElement:
            self.bind_target(target.value, scope)
        else:
            self.visit(target, scope)

    def _function(self, node: cst.FunctionDef, scope: Scope) -> None:
        scope.bound.add(node.name.value)
        for decorator in node.decorators:
            self.visit(decorator.decorator, scope)
        inner = Scope("function", scope)
        self._type_params(node, inner)
        self._params(node.params, scope, inner)
        self.visit_body(node.body.body, inner)

    def _class(self, node: cst.ClassDef, scope: Scope) -> None:
        scope.bound.add(node.name.value)
        for decorator in node.decorators:
            self.visit(decorator.decorator, scope)
        inner = Scope("class", scope)
        self._type_params(node, inner)
        for arg in (*node.bases, *node.keywords):
            self.visit(arg.value, scope)
        self.visit_body(node.body.body, inner)

    @staticmethod
    def _type_params(node, inner: Scope) -> None:
        """PEP 695 type parameters (``def f[T](x: T)``): bound for the code inside."""
        params = getattr(node, "type_parameters", None)
        if params is None:
            return
        for p in params.params:
            name = getattr(p.param, "name", None)
            if type(name) is cst.Name:
                inner.bound.add(name.value)

    def _params(self, params: cst.Parameters, outer: Scope, inner: Scope) -> None:
        """Parameters: defaults evaluated in ``outer``, names bound in ``inner`` (annotations
        are not reads)."""
        for p in (*params.posonly_params, *params.params, *params.kwonly_params):
            inner.bound.add(p.name.value)
            if p.default is not None:
                self.visit(p.default, outer)
        for star in (params.star_arg, params.star_kwarg):
            if type(star) is cst.Param:
                inner.bound.add(star.name.value)

    def _lambda(self, node: cst.Lambda, scope: Scope) -> None:
        inner = Scope("function", scope)
        self._params(node.params, scope, inner)
        self.visit(node.body, inner)

    def _comprehension(self, node, scope: Scope) -> None:
        """The first iterable is evaluated in ``scope``; the rest in the comprehension's own."""
        inner = Scope("comprehension", scope)
        comp = node.for_in
        first = True
        while comp is not None:
            self.visit(comp.iter, scope if first else inner)
            first = False
            self.bind_target(comp.target, inner)
            for cond in comp.ifs:
                self.visit(cond.test, inner)
            comp = comp.inner_for_in
        for part in ("key", "value", "elt"):
            value = getattr(node, part, None)
            if value is not None:
                self.visit(value, inner)

    def _assign(self, node: cst.Assign, scope: Scope) -> None:
        self.visit(node.value, scope)
        for target in node.targets:
            self.bind_target(target.target, scope)

    def _aug_assign(self, node: cst.AugAssign, scope: Scope) -> None:
        self.bind_target(node.target, scope)  # ``x += 1`` binds ``x`` (its read: not decided)
        self.visit(node.value, scope)

    def _ann_assign(self, node: cst.AnnAssign, scope: Scope) -> None:
        if node.value is not None:
            self.visit(node.value, scope)
        self.bind_target(node.target, scope)  # (the annotation is no read)

    def _for(self, node: cst.For, scope: Scope) -> None:
        self.visit(node.iter, scope)
        self.bind_target(node.target, scope)
        self.visit(node.body, scope)
        if node.orelse is not None:
            self.visit(node.orelse, scope)

    def _with(self, node: cst.With, scope: Scope) -> None:
        for item in node.items:
            self.visit(item.item, scope)
            if item.asname is not None:
                self.bind_target(item.asname.name, scope)
        self.visit(node.body, scope)

    def _handler(self, node, scope: Scope) -> None:
        if node.type is not None:
            self.visit(node.type, scope)
        if node.name is not None:
            self.bind_target(node.name.name, scope)
        self.visit(node.body, scope)

    def _import(self, node: cst.Import, scope: Scope) -> None:
        for alias in node.names:
            if alias.asname is not None:
                name = alias.asname.name.value
            else:  # ``import a.b`` binds ``a``
                n = alias.name
                while type(n) is cst.Attribute:
                    n = n.value
                name = n.value
            if name in OPEN_NAMES:
                self.open = True
            if dotted_name(alias.name) == "sys":
                self.sys_names.add(name)
            scope.bound.add(name)
            self.imported.add(name)

    def _import_from(self, node: cst.ImportFrom, scope: Scope) -> None:
        if isinstance(node.names, cst.ImportStar):
            self.stars += 1
            return
        if dotted_name(node.module) == "sys" and not node.relative and any(
            dotted_name(alias.name) == "modules" for alias in node.names
        ):
            self.open = True  # ``from sys import modules``
        for alias in node.names:
            name = alias.asname.name if alias.asname is not None else alias.name
            if type(name) is cst.Name:
                if name.value in OPEN_NAMES:
                    self.open = True
                scope.bound.add(name.value)
                self.imported.add(name.value)

    def _global(self, node: cst.Global, scope: Scope) -> None:
        for item in node.names:
            self.module.bound.add(item.name.value)
            scope.bound.add(item.name.value)

    def _nonlocal(self, node: cst.Nonlocal, scope: Scope) -> None:
        for item in node.names:
            scope.bound.add(item.name.value)

    def _named_expr(self, node: cst.NamedExpr, scope: Scope) -> None:
        self.visit(node.value, scope)
        self.bind_target(node.target, scope.binder())

    def _del(self, node: cst.Del, scope: Scope) -> None:
        scope.bound.update(target_names(node.target))  # (no read: a ``del`` target does not count)

    def _attribute(self, node: cst.Attribute, scope: Scope) -> None:
        if node.attr.value == "modules" and type(node.value) is cst.Name:
            self.modules_of.append(node.value)  # ``sys.modules[__name__]`` (when it is ``sys``)
        self.visit(node.value, scope)

    def _call(self, node: cst.Call, scope: Scope) -> None:
        func = node.func
        if type(func) is cst.Name and func.value == "setattr" and node.args and type(node.args[0].value) is cst.Name:
            self.setattr_firsts.append(node.args[0].value)
        self.visit(func, scope)
        for arg in node.args:
            self.visit(arg.value, scope)

    def _match(self, node, scope: Scope) -> None:
        self.visit(node.subject, scope)
        for case in node.cases:
            self._pattern(case.pattern, scope)
            if case.guard is not None:
                self.visit(case.guard, scope)
            self.visit(case.body, scope)

    def _pattern(self, pattern: cst.CSTNode, scope: Scope) -> None:
        """A ``match`` pattern: its captures bind; its value patterns and classes are reads."""
        t = type(pattern)
        if t is cst.MatchAs:
            if pattern.name is not None:
                scope.bound.add(pattern.name.value)
            if pattern.pattern is not None:
                self._pattern(pattern.pattern, scope)
        elif t is cst.MatchStar:
            if pattern.name is not None:
                scope.bound.add(pattern.name.value)
        elif t is cst.MatchSingleton:
            return
        elif t is cst.MatchValue:
            self.visit(pattern.value, scope)
        elif t is cst.MatchClass:
            self.visit(pattern.cls, scope)
            for p in pattern.patterns:
                self._pattern(p.value, scope)
            for kw in pattern.kwds:
                self._pattern(kw.pattern, scope)
        elif t is cst.MatchMapping:
            for element in pattern.elements:
                self.visit(element.key, scope)
                self._pattern(element.pattern, scope)
            if pattern.rest is not None:
                scope.bound.add(pattern.rest.value)
        elif t is cst.MatchOr:
            for element in pattern.patterns:
                self._pattern(element.pattern, scope)
        elif t is cst.MatchSequence or t is cst.MatchList or t is cst.MatchTuple:
            for element in pattern.patterns:
                self._pattern(getattr(element, "value", element), scope)
        else:
            self.visit(pattern, scope)

    def _type_alias(self, node, scope: Scope) -> None:
        scope.bound.add(node.name.value)  # (its value is evaluated lazily: no read)

    def _skip(self, node, scope: Scope) -> None:
        """A node whose names are not reads (an annotation)."""


_HANDLERS = {
    cst.FunctionDef: _Collector._function,
    cst.ClassDef: _Collector._class,
    cst.Lambda: _Collector._lambda,
    cst.Assign: _Collector._assign,
    cst.AugAssign: _Collector._aug_assign,
    cst.AnnAssign: _Collector._ann_assign,
    cst.For: _Collector._for,
    cst.With: _Collector._with,
    cst.ExceptHandler: _Collector._handler,
    cst.ExceptStarHandler: _Collector._handler,
    cst.Import: _Collector._import,
    cst.ImportFrom: _Collector._import_from,
    cst.Global: _Collector._global,
    cst.Nonlocal: _Collector._nonlocal,
    cst.NamedExpr: _Collector._named_expr,
    cst.Del: _Collector._del,
    cst.Attribute: _Collector._attribute,
    cst.Call: _Collector._call,
    cst.Match: _Collector._match,
    cst.Annotation: _Collector._skip,
}
if getattr(cst, "TypeAlias", None) is not None:
    _HANDLERS[cst.TypeAlias] = _Collector._type_alias


# -- where a statement raises ----------------------------------------------------------------
def first_undefined(expr: cst.CSTNode, undefined: frozenset[cst.Name]) -> cst.Name | None:
    """The first name of ``undefined`` that evaluating ``expr`` reads every time, in
    evaluation order; ``None`` when there is none. Read every time: not the right operand of
    ``and``/``or``, the arms of ``x if c else y``, the later links of a chained comparison, a
    lambda's body, a comprehension's parts but its first iterable."""
    t = type(expr)
    if t is cst.Name:
        return expr if expr in undefined else None
    if t is cst.Lambda:
        return None
    if t is cst.BooleanOperation:
        return first_undefined(expr.left, undefined)
    if t is cst.IfExp:
        return first_undefined(expr.test, undefined)
    if t is cst.Comparison:
        return first_undefined(expr.left, undefined) or first_undefined(expr.comparisons[0].comparator, undefined)
    if t in _COMPREHENSIONS:
        return first_undefined(expr.for_in.iter, undefined)
    if t is cst.NamedExpr:
        return first_undefined(expr.value, undefined)
    if t is cst.Annotation:
        return None
    for child in children(expr):
        found = first_undefined(child, undefined)
        if found is not None:
            return found
    return None


def target_parts(target: cst.CSTNode) -> list[cst.CSTNode]:
    """What an assignment target evaluates before it stores, in order: the object of ``x.a``,
    the object and the subscript of ``x[i]`` (nothing for a plain name)."""
    t = type(target)
    if t is cst.Tuple or t is cst.List:
        return [part for element in target.elements for part in target_parts(element.value)]
    if t is cst.StarredElement:
        return target_parts(target.value)
    if t is cst.Attribute:
        return [target.value]
    if t is cst.Subscript:
        return [target]
    return []


def statement_parts(s: cst.CSTNode) -> list[cst.CSTNode]:
    """The expressions a small statement evaluates every time it runs, in order: an
    expression statement's value, a ``return``'s; an assignment's value, then its targets'
    objects (:func:`target_parts`); an augmented assignment's target's objects, then its
    value. Not an ``assert`` (``python -O`` removes it), a ``del``, a ``raise`` (which raises
    anyway)."""
    t = type(s)
    if t is cst.Expr:
        return [s.value]
    if t is cst.Return:
        return [s.value] if s.value is not None else []
    if t is cst.Assign:
        return [s.value, *(part for target in s.targets for part in target_parts(target.target))]
    if t is cst.AugAssign:
        return [*target_parts(s.target), s.value]
    if t is cst.AnnAssign and s.value is not None:
        return [s.value, *target_parts(s.target)]
    return []


def head_part(stmt: cst.CSTNode) -> cst.CSTNode | None:
    """The expression a compound statement evaluates every time it runs, before any of its
    blocks: an ``if``'s or a ``while``'s test, a ``for``'s iterable, a ``match``'s subject,
    the first item of a ``with`` (a later one is evaluated after the first is entered)."""
    t = type(stmt)
    if t is cst.If or t is cst.While:
        return stmt.test
    if t is cst.For:
        return stmt.iter
    if t is cst.With:
        return stmt.items[0].item
    if isinstance(stmt, cst.Match):
        return stmt.subject
    return None


def evaluated_before(expr: cst.CSTNode, name: cst.Name) -> set[cst.CSTNode]:
    """The nodes of ``expr`` whose evaluation completes before ``name`` is read (Python
    evaluates an expression's parts in their order, a call after its function and arguments):
    those that come before ``name`` and do not hold it."""
    done: set[cst.CSTNode] = set()
    _before(expr, name, done)
    return done


def _before(node: cst.CSTNode, name: cst.Name, done: set) -> bool:
    """Add to ``done`` the nodes under ``node`` completed before ``name``; whether ``name``
    was reached."""
    if node is name:
        return True
    for child in children(node):
        if _before(child, name, done):
            return True
    done.add(node)
    return False
