"""The binding sites of a scope: Python's binding forms, lowered once.

Python binds a name in many forms: ``x = v``, ``x: T = v``, ``x += v``, ``a, *b = v``, a
``for`` target, ``with ... as x``, ``except E as x``, ``import x``, ``def x``, ``class x``,
``(x := v)``, a ``match`` capture, ``del x``, ``type X = ...``, a parameter, and the
``global``/``nonlocal`` declarations that send a name's bindings to another scope. Each
walk of the engine that asks "which names does this code bind, and how" reads them here
(:func:`block_sites`, :func:`statement_sites`, :func:`scope_sites`), as a flat tuple of
:class:`Site` records, rather than enumerating the forms itself: a form is taught once.

What a scope's code is, as Python's compiler sees it: the statements of a module, or of a
function, lambda or class body, without entering nested functions, lambdas or classes except
for the name their definition binds. A comprehension is a scope of its own: its ``for``
targets are not sites of the code around it, but a walrus inside it binds in the enclosing
scope (PEP 572), so it is one.

Users: the builder (:mod:`loopcheck.engine.builder`): ``bound_names``, the binding nodes
of each name (``_sites``, read by ``_name_bindings``, ``_locals_not_defs`` and
``_bound_otherwise``), ``single_bindings``, ``_plain_int_bindings`` and the names of loop
targets; the module bindings of :mod:`loopcheck.engine.import_raises`; the ``del`` targets
of :mod:`loopcheck.engine.undefined`. Each reads the sites through its own filter of forms.

The sites of a statement are computed each time they are asked for, and nothing is kept:
LibCST nodes cannot be weakly referenced, and a process-wide memo keyed by node would keep
every tree it saw alive (the language server checks on every edit); computing them again
costs no measurable time.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable

import libcst as cst

from loopcheck.engine.names import dotted_name
from loopcheck.engine.walk import children

#: The forms of a binding site (:attr:`Site.form`).
ASSIGN = "assign"            # ``x = v``, ``a = x = v``; ``a, x = v`` with ``unpacked``
ANNOTATED = "annotated"      # ``x: T = v``, ``x: T`` (declares the name local; value None)
AUGMENTED = "augmented"      # ``x += v`` (``op``: the operator node)
FOR = "for"                  # ``for x in ...`` (the target of a ``for`` statement)
WITH = "with"                # ``with ... as x``
EXCEPT = "except"            # ``except E as x`` (``except*`` too)
IMPORT = "import"            # ``import x``, ``import x.y`` (binds ``x``), ``from m import x as y``
DEF = "def"                  # ``def x``
CLASS = "class"              # ``class x``
WALRUS = "walrus"            # ``(x := v)``
MATCH = "match"              # a capture of a ``case`` pattern: ``case [x, *rest]``, ``case {**rest}``
DEL = "del"                  # ``del x``
TYPE_ALIAS = "type"          # ``type X = ...``
GLOBAL = "global"            # ``global x`` (a declaration: the bindings are the module's)
NONLOCAL = "nonlocal"        # ``nonlocal x``
PARAMETER = "parameter"      # a parameter of the scope's function or lambda


@dataclass(frozen=True, slots=True)
class Site:
    """One name bound (or declared) by one form.

    ``node``: the node that binds, the one the builder records for the name: the small
    statement (assignments, imports, ``del``, ``global``, a type alias), the ``for``
    statement, the ``with`` item, the ``except`` handler, the ``def``/``class`` statement, the
    ``NamedExpr``, the ``match`` pattern node (``MatchAs``, ``MatchStar``, ``MatchMapping``),
    the ``Param``. ``value``: the expression bound when the form binds one plain value to a
    plain name (``x = v``, ``x: T = v``, the operand of ``x += v``, ``(x := v)``), else
    ``None``. ``unpacked``: the name is an element of a tuple, list or starred target
    (``a, *x = v``, ``for i, x in ...``). ``compound``: the site is part of a compound
    statement (``if``, a loop, ``try``, ``with``, ``match``: its header or its body) rather
    than a statement at the scope's own level. ``target``: the ``Name`` bound (``None`` for
    an import without ``as``, whose name is the first part of the module's dotted name)."""

    name: str
    form: str
    node: cst.CSTNode
    value: cst.BaseExpression | None = None
    op: cst.CSTNode | None = None
    unpacked: bool = False
    compound: bool = False
    target: cst.CSTNode | None = None



_SCOPES = (cst.FunctionDef, cst.ClassDef, cst.Lambda)


def block_sites(statements: Iterable[cst.CSTNode] | cst.BaseSuite, compound: bool = False) -> tuple[Site, ...]:
    """The sites of a block: a list of statements, an ``IndentedBlock`` or a one-line
    ``SimpleStatementSuite`` (``if x: a = 1``), in the order of its statements.
    ``compound``: the block is the body of a compound statement."""
    if type(statements) is cst.SimpleStatementSuite:
        return statement_sites(statements, compound)
    body = statements.body if isinstance(statements, cst.BaseSuite) else statements
    out: list[Site] = []
    for st in body:
        out.extend(statement_sites(st, compound))
    return tuple(out)


def scope_sites(scope: cst.CSTNode) -> tuple[Site, ...]:
    """The sites of a scope's own code: a module's statements, a class's body, or a
    function's (a lambda's) parameters then its body."""
    t = type(scope)
    if t is cst.Module:
        return block_sites(scope.body)
    if t is cst.ClassDef:
        return block_sites(scope.body)
    out = list(_parameter_sites(scope.params))
    if t is cst.Lambda:
        _walrus_sites(scope.body, out, False)
    else:
        out.extend(block_sites(scope.body))
    return tuple(out)


def statement_sites(st: cst.CSTNode, compound: bool = False) -> tuple[Site, ...]:
    """The sites of one statement (a compound one's body included; a ``def`` or ``class``
    binds its name only), in the order the statement binds them. ``compound``: the statement
    sits inside a compound statement."""
    out: list[Site] = []
    _statement(st, out)
    if not compound:
        return tuple(out)
    return tuple(s if s.compound else _as_compound(s) for s in out)


def _as_compound(s: Site) -> Site:
    return Site(s.name, s.form, s.node, s.value, s.op, s.unpacked, True, s.target)


def target_sites(target: cst.CSTNode, form: str, node: cst.CSTNode, value=None, op=None,
                 compound: bool = False) -> list[Site]:
    """The sites of one assignment-like target (``x``, ``a, (b, *c)``; an attribute or a
    subscript binds no name): ``value`` and ``op`` go to a plain name's site only."""
    out: list[Site] = []
    _targets(target, form, node, value, op, compound, False, out)
    return out


def target_names(target: cst.CSTNode) -> list[str]:
    """The names a target binds, in order (``a``, ``b`` and ``c`` of ``a, (b, *c), d.e``)."""
    return [s.name for s in target_sites(target, ASSIGN, target)]


def _targets(target, form, node, value, op, compound, unpacked, out) -> None:
    t = type(target)
    if t is cst.Name:
        out.append(Site(target.value, form, node, None if unpacked else value, None if unpacked else op,
                        unpacked, compound, target))
    elif t is cst.Tuple or t is cst.List:
        for element in target.elements:
            _targets(element.value, form, node, value, op, compound, True, out)
    elif t is cst.StarredElement:
        _targets(target.value, form, node, value, op, compound, True, out)


def _parameter_sites(params: cst.Parameters) -> list[Site]:
    out = []
    for p in (*params.posonly_params, *params.params, *params.kwonly_params, params.star_arg, params.star_kwarg):
        if type(p) is cst.Param:
            out.append(Site(p.name.value, PARAMETER, p, target=p.name))
    return out


def _statement(st, out: list[Site]) -> None:
    """Append the sites of statement ``st`` (at the scope's level) to ``out``."""
    t = type(st)
    if t is cst.FunctionDef or t is cst.ClassDef:
        for d in st.decorators:
            _walrus_sites(d.decorator, out, False)
        if t is cst.FunctionDef:
            _walrus_in_parameters(st.params, out)
        else:
            for arg in (*st.bases, *st.keywords):
                _walrus_sites(arg.value, out, False)
        out.append(Site(st.name.value, DEF if t is cst.FunctionDef else CLASS, st, target=st.name))
    elif t is cst.SimpleStatementLine or t is cst.SimpleStatementSuite:
        for small in st.body:
            _small(small, out)
    elif t is cst.If:
        _walrus_sites(st.test, out, True)
        _nested(st.body, out)
        if type(st.orelse) is cst.If:
            out.extend(statement_sites(st.orelse, True))
        elif st.orelse is not None:
            _nested(st.orelse.body, out)
    elif t is cst.For:
        _walrus_sites(st.iter, out, True)
        _targets(st.target, FOR, st, None, None, True, False, out)
        _nested(st.body, out)
        if st.orelse is not None:
            _nested(st.orelse.body, out)
    elif t is cst.While:
        _walrus_sites(st.test, out, True)
        _nested(st.body, out)
        if st.orelse is not None:
            _nested(st.orelse.body, out)
    elif t is cst.With:
        for item in st.items:
            _walrus_sites(item.item, out, True)
            if item.asname is not None:
                _targets(item.asname.name, WITH, item, None, None, True, False, out)
        _nested(st.body, out)
    elif t is cst.Try or t.__name__ == "TryStar":
        _nested(st.body, out)
        for h in st.handlers:
            if h.type is not None:
                _walrus_sites(h.type, out, True)
            if h.name is not None:
                _targets(h.name.name, EXCEPT, h, None, None, True, False, out)
            _nested(h.body, out)
        for part in (st.orelse, st.finalbody):
            if part is not None:
                _nested(part.body, out)
    elif t is cst.Match:
        _walrus_sites(st.subject, out, True)
        for case in st.cases:
            _pattern(case.pattern, out)
            if case.guard is not None:
                _walrus_sites(case.guard, out, True)
            _nested(case.body, out)


def _nested(suite, out: list[Site]) -> None:
    """Append the sites of a compound statement's block."""
    out.extend(block_sites(suite, True))


def _pattern(pattern, out: list[Site]) -> None:
    """The captures of a ``case`` pattern (``case Point(x=px)``, ``case [first, *rest]``,
    ``case _ as whole``, ``case {**rest}``), in pre-order."""
    stack = [pattern]
    while stack:
        node = stack.pop()
        tn = type(node)
        name = getattr(node, "name", None)
        if (tn is cst.MatchAs or tn is cst.MatchStar) and type(name) is cst.Name:
            out.append(Site(name.value, MATCH, node, compound=True, target=name))
        elif tn is cst.MatchMapping and type(node.rest) is cst.Name:
            out.append(Site(node.rest.value, MATCH, node, compound=True, target=node.rest))
        stack.extend(reversed(children(node)))


def _small(small, out: list[Site]) -> None:
    """Append the sites of a small statement at the scope's level."""
    ts = type(small)
    if ts is cst.Assign:
        _walrus_sites(small.value, out, False)
        for target in small.targets:
            _targets(target.target, ASSIGN, small, small.value, None, False, False, out)
    elif ts is cst.AnnAssign:
        if small.value is not None:
            _walrus_sites(small.value, out, False)
        _targets(small.target, ANNOTATED, small, small.value, None, False, False, out)
    elif ts is cst.AugAssign:
        _walrus_sites(small.value, out, False)
        _targets(small.target, AUGMENTED, small, small.value, small.operator, False, False, out)
    elif ts is cst.Global or ts is cst.Nonlocal:
        form = GLOBAL if ts is cst.Global else NONLOCAL
        out.extend(Site(x.name.value, form, small, target=x.name) for x in small.names)
    elif ts is cst.Del:
        _targets(small.target, DEL, small, None, None, False, False, out)
    elif ts is cst.Import or ts is cst.ImportFrom:
        if isinstance(small.names, cst.ImportStar):
            return
        for alias in small.names:
            asname = alias.asname.name if alias.asname is not None else None
            if type(asname) is cst.Name:
                out.append(Site(asname.value, IMPORT, small, target=asname))
            else:
                out.append(Site((dotted_name(alias.name) or "").split(".")[0], IMPORT, small))
    elif ts.__name__ == "TypeAlias":
        out.append(Site(small.name.value, TYPE_ALIAS, small, target=small.name))
    else:  # an expression statement, ``return``, ``raise``, ``assert``, ...
        for child in children(small):
            _walrus_sites(child, out, False)


def _walrus_in_parameters(params: cst.Parameters, out: list[Site]) -> None:
    """Walruses of a definition's defaults and annotations (evaluated in the enclosing scope)."""
    for p in (*params.posonly_params, *params.params, *params.kwonly_params, params.star_arg, params.star_kwarg):
        if type(p) is cst.Param:
            if p.default is not None:
                _walrus_sites(p.default, out, False)


def _walrus_sites(expr, out: list[Site], compound: bool) -> None:
    """Append the walrus sites of expression ``expr``: those in its comprehensions too (they
    bind in the enclosing scope), not those of a lambda's body (its own scope). A lambda's
    defaults are evaluated where it is written."""
    stack = [expr]
    while stack:
        n = stack.pop()
        t = type(n)
        if t is cst.NamedExpr:
            found: list[Site] = []
            _walrus_sites(n.value, found, compound)
            out.extend(found)
            if type(n.target) is cst.Name:
                out.append(Site(n.target.value, WALRUS, n, n.value, None, False, compound, n.target))
            continue
        if t is cst.Lambda:
            _walrus_in_parameters(n.params, out)
            continue
        kids = children(n)
        stack.extend(reversed(kids))
