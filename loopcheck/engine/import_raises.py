"""Modules whose top-level code raises ``NameError``: nothing after that statement runs.

A script that calls ``sys.path.append(...)`` at its top level but never imports ``sys`` stops
with ``NameError`` at that line, whether it is run or imported: its training loop never runs,
no other module can import its functions, and a finding in them names a harm that does not
happen. :func:`raising_statement` finds such a statement, and :func:`never_reached` says
whether a node of the module lies in code that cannot run because of it.

A statement raises ``NameError`` when:

* it is a simple statement (an expression, an assignment, an augmented or annotated
  assignment) directly in the module's body, not under ``if``, ``try``, ``with``, a loop, a
  function or a class: it runs whenever the module runs (unless an earlier statement stops it,
  which stops what follows all the same);
* it reads, where every run evaluates it, a name that the module binds nowhere. Evaluated
  every time: not the right operand of ``and``/``or``, the arms of ``x if c else y``, the later
  links of a chained comparison, a lambda's body, a comprehension but its first iterable, an
  annotation (``from __future__ import annotations`` defers it), an ``assert`` (``python -O``
  removes it);
* the name is bound nowhere in the module's own scope, by any statement in any branch,
  before or after it: an import, an assignment or annotated one, a ``for``,
  ``with`` or ``except`` target, a ``def`` or ``class``, a ``match`` capture, a ``type``
  alias; nor by a walrus anywhere (one in a comprehension binds the module's name), nor by
  ``global`` in a function (which may assign it);
* the name is not a builtin (:func:`known_names`: the running Python's ``builtins``, those
  of other Python versions, 2 included, and of Windows; a module's own attributes such as
  ``__file__``; and, from the knowledge's ``[[builtin]]`` entries, the names that tools
  install as builtins: ``_`` of ``gettext.install``, ``profile`` of ``kernprof``; and those
  of notebook kernels: ``display``, ``get_ipython``, ``spark``, ``dbutils``);
* the module is a program, not a snippet: it has an import statement of its own in its top
  scope, and an ``if __name__ == "__main__":`` block at its top level (it is meant to be run
  as a whole). A snippet in a README or a fixture reads ``model``, ``Net`` or ``dataset`` from
  the reader's context, often below ``import torch``, and is checked as it always was;
* nothing in the module may bind names unseen: no ``from x import *``, no ``globals()``,
  ``locals()``, ``vars()``, ``exec``, ``execfile``, no use of ``builtins``, ``__builtin__``,
  ``__builtins__``, ``__main__`` or ``sys.modules``.

A notebook is not asked about (:func:`loopcheck.analysis.check_parsed`): its cells run in any
order, and its kernel binds names.

Then (:func:`never_reached`) code of a top-level statement after it never runs, and neither
does the body of a function of the module, wherever it is defined, unless code that runs
before the raise (the top-level statements up to and including the raising one, outside
function bodies) names its outermost function or class, directly or through the functions and
classes it names: the module's own calls come after the raise, and every import of the module
fails. What a statement before the raise runs as it defines runs all the same: a class body
(its methods' bodies excepted), a ``def``'s decorators, defaults and annotations; and a
function or class that such code is handed may run too: one under a decorator (the decorator
may call it, or keep it to call later: ``atexit.register``), a class whose body calls one of
its own functions or decorates one.

What is given up: a script run by another program that defines its free names first
(``exec(open(path).read(), namespace)``, ``runpy.run_path(path, init_globals)``, IPython's
``%run -i``), and one whose imports install the name as a builtin otherwise than
:func:`known_names` knows.
"""

from __future__ import annotations

import builtins
from dataclasses import dataclass
from functools import lru_cache

import libcst as cst

from loopcheck.engine import bindings as B
from loopcheck.engine.bindings import block_sites, target_names
from loopcheck.engine.interrupts import checkpoint
from loopcheck.engine.knowledge import knowledge
from loopcheck.engine.walk import children, walk

#: Names a module reads without binding them, that do not raise ``NameError``, by the
#: language: the running Python's builtins, and those of other versions, platforms and of
#: ``site``. Those tools and notebook kernels install are library knowledge
#: (``[[builtin]]`` in ``loopcheck/knowledge/builtins.toml``; :func:`known_names` adds them).
PYTHON_NAMES = frozenset(dir(builtins)) | frozenset({
    # builtins of other Python 3 versions (the checked code may run on another)
    "aiter", "anext", "EncodingWarning", "ExceptionGroup", "BaseExceptionGroup",
    "PythonFinalizationError", "_IncompleteInputError",
    # Python 2's builtins
    "xrange", "unicode", "raw_input", "basestring", "long", "file", "reduce", "unichr",
    "execfile", "reload", "cmp", "buffer", "apply", "intern", "coerce", "StandardError",
    # Windows's; and those site adds (absent under ``python -S``, present in a normal run)
    "WindowsError", "exit", "quit", "copyright", "credits", "license", "help",
    # a module's own attributes
    "__name__", "__file__", "__doc__", "__package__", "__spec__", "__loader__", "__builtins__",
    "__cached__", "__annotations__", "__path__", "__debug__",
})


@lru_cache(maxsize=1)
def known_names() -> frozenset[str]:
    """Every name a module may read without binding it and without ``NameError``:
    :data:`PYTHON_NAMES`, and the names tools and notebook kernels install as builtins
    (``_`` of ``gettext.install()``, ``profile`` of kernprof, ``display`` and ``spark`` of
    notebook kernels), read from the knowledge's ``[[builtin]]`` entries
    (:attr:`loopcheck.engine.knowledge.Knowledge.installed_builtins`)."""
    return PYTHON_NAMES | knowledge().installed_builtins


#: Names whose use may bind the module's names unseen (or make a builtin of any name).
_OPEN_NAMES = frozenset({"globals", "locals", "vars", "exec", "execfile", "builtins", "__builtin__", "__builtins__", "__main__"})
_COMPREHENSIONS = (cst.ListComp, cst.SetComp, cst.GeneratorExp, cst.DictComp)


@dataclass(frozen=True)
class ModuleRaise:
    """A top-level statement of a module that raises ``NameError`` whenever the module runs.

    Attributes:
        statement: the statement (an element of ``Module.body``, a ``SimpleStatementLine``).
        position: its index in ``Module.body``.
        name: the name it reads that nothing binds (the first in the statement's text).
        may_run: the names of the module's functions and classes that code running before
            the raise (the top-level statements up to the raising one) names or is handed (a
            decorated one), directly or through what they name: their code may run.
    """

    statement: cst.SimpleStatementLine
    position: int
    name: str
    may_run: frozenset[str]


def raising_statement(module: cst.Module) -> ModuleRaise | None:
    """The first top-level statement of ``module`` that raises ``NameError`` every time the
    module runs (see the module docstring), or ``None`` when there is none or the module is
    not decided (a snippet without imports, a module that may bind names unseen).

    Args:
        module: a parsed module (LibCST).
    """
    if not any(is_main_block(stmt) for stmt in module.body):
        return None
    bound, has_import, open_ = _module_bindings(module)
    if not has_import or open_:
        return None
    known = known_names()
    for position, stmt in enumerate(module.body):
        checkpoint()
        if type(stmt) is not cst.SimpleStatementLine:
            continue
        for small in stmt.body:
            names: list[str] = []
            _statement_reads(small, names)
            free = next((n for n in names if n not in bound and n not in known), None)
            if free is not None:
                return ModuleRaise(stmt, position, free, _may_run(module, position))
    return None


def never_reached(raised: ModuleRaise, module: cst.Module, node: cst.CSTNode, table: dict) -> bool:
    """Whether ``node`` of ``module`` lies in code that never runs because the statement
    ``raised`` raises: a top-level statement after it, or the body of a function of a
    statement before it whose outermost function or class no code before the raise names
    (``ModuleRaise.may_run``). ``False`` for a node that is not in ``module``, and for code
    that a statement before the raise runs as it defines (a class body, not its methods'
    bodies; a ``def``'s decorators, defaults and annotations): it runs before the raise.

    Args:
        raised: :func:`raising_statement`'s answer for ``module``.
        module: the parsed module.
        node: a syntax node (a finding's).
        table: ``node → parent`` for ``module`` (:func:`loopcheck.engine.values.parents`).
    """
    outermost = None  # the outermost function or class around the node
    in_body = False  # whether the node is in a function's body (it runs when called)
    top = node
    parent = table.get(top)
    while parent is not None and parent is not module:
        if type(parent) in (cst.FunctionDef, cst.ClassDef):
            outermost = parent
            if type(parent) is cst.FunctionDef and top is parent.body:
                in_body = True
        top = parent
        parent = table.get(top)
    if parent is not module:
        return False
    if type(top) in (cst.FunctionDef, cst.ClassDef):
        outermost = top
    position = next((i for i, stmt in enumerate(module.body) if stmt is top), None)
    if position is None:
        return False
    if position > raised.position:
        return True
    return in_body and outermost is not None and outermost.name.value not in raised.may_run


def is_main_block(stmt: cst.CSTNode) -> bool:
    """Whether ``stmt`` is ``if __name__ == "__main__":`` (either side of the ``==``)."""
    if type(stmt) is not cst.If or type(stmt.test) is not cst.Comparison:
        return False
    test = stmt.test
    if len(test.comparisons) != 1 or type(test.comparisons[0].operator) is not cst.Equal:
        return False
    sides = (test.left, test.comparisons[0].comparator)
    names = [s for s in sides if type(s) is cst.Name and s.value == "__name__"]
    strings = [s for s in sides if type(s) is cst.SimpleString and s.evaluated_value == "__main__"]
    return len(names) == 1 and len(strings) == 1


#: The binding forms :func:`_module_bindings` counts at the module's level (not ``x += 1``,
#: which reads ``x`` first, nor ``del``; ``global`` and walrus expressions are read anywhere).
_MODULE_FORMS = frozenset({B.ASSIGN, B.ANNOTATED, B.FOR, B.WITH, B.EXCEPT, B.MATCH, B.IMPORT, B.DEF, B.CLASS,
                           B.TYPE_ALIAS})


def _module_bindings(module: cst.Module) -> tuple[set[str], bool, bool]:
    """``(names bound in the module's scope, whether it has an import statement there,
    whether something may bind names unseen)``."""
    has_import = False
    open_ = False
    for stmt in _scope_statements(module.body):
        checkpoint()
        if type(stmt) is cst.SimpleStatementLine or type(stmt) is cst.SimpleStatementSuite:
            for small in stmt.body:
                if type(small) is cst.Import or type(small) is cst.ImportFrom:
                    has_import = True
                    open_ = open_ or isinstance(small.names, cst.ImportStar)
    bound = {s.name for s in block_sites(module.body) if s.form in _MODULE_FORMS}
    # anywhere in the module: a walrus (in a comprehension it binds the module's name), a
    # ``global`` declaration (its function may assign the name), and what binds unseen
    for n in walk(module):
        t = type(n)
        if t is cst.NamedExpr:
            bound.update(target_names(n.target))
        elif t is cst.Global:
            bound.update(item.name.value for item in n.names)
        elif t is cst.ImportFrom and isinstance(n.names, cst.ImportStar):
            open_ = True
        elif t is cst.Name and n.value in _OPEN_NAMES:
            open_ = True
        elif t is cst.Attribute and n.attr.value == "modules":  # sys.modules[__name__]
            open_ = True
    return bound, has_import, open_


def _scope_statements(body):
    """Every statement of the module's own scope, in compound statements too, not in
    functions or classes (their ``def``/``class`` statements themselves are yielded)."""
    stack = list(reversed(body))
    while stack:
        stmt = stack.pop()
        yield stmt
        t = type(stmt)
        if t is cst.FunctionDef or t is cst.ClassDef or t is cst.SimpleStatementLine:
            continue
        parts = []
        inner = getattr(stmt, "body", None)
        if isinstance(inner, cst.BaseSuite):
            parts.append(inner)
        for attr in ("orelse", "finalbody"):
            part = getattr(stmt, attr, None)
            if part is not None:
                parts.append(part)
        parts.extend(getattr(stmt, "handlers", ()))
        parts.extend(getattr(stmt, "cases", ()))
        found = []
        for part in parts:
            if type(part) is cst.If:  # an ``elif``
                found.append(part)
                continue
            suite = part if isinstance(part, cst.BaseSuite) else getattr(part, "body", None)
            if type(suite) is cst.IndentedBlock:
                found.extend(suite.body)
            elif type(suite) is cst.SimpleStatementSuite:
                found.append(suite)
            elif isinstance(suite, cst.BaseSuite):
                found.extend(getattr(suite, "body", ()))
        stack.extend(reversed(found))


def _statement_reads(small: cst.BaseSmallStatement, out: list[str]) -> None:
    """The names ``small`` reads every time it runs (see the module docstring), in order."""
    t = type(small)
    if t is cst.Expr:
        _reads(small.value, out)
    elif t is cst.Assign:
        _reads(small.value, out)
        for target in small.targets:
            _target_reads(target.target, out)
    elif t is cst.AugAssign:
        _reads(small.target, out)  # ``x += 1`` reads ``x``
        _reads(small.value, out)
    elif t is cst.AnnAssign and small.value is not None:
        _reads(small.value, out)
        _target_reads(small.target, out)


def _target_reads(target: cst.CSTNode, out: list[str]) -> None:
    """The names an assignment target reads: the object of ``x.a``, ``x[i]``."""
    t = type(target)
    if t is cst.Tuple or t is cst.List:
        for element in target.elements:
            _target_reads(element.value, out)
    elif t is cst.StarredElement:
        _target_reads(target.value, out)
    elif t is cst.Attribute:
        _reads(target.value, out)
    elif t is cst.Subscript:
        _reads(target.value, out)
        for element in target.slice:
            _reads(element, out)


def _reads(node: cst.CSTNode, out: list[str]) -> None:
    """The names that evaluating the expression ``node`` always reads, in order."""
    t = type(node)
    if t is cst.Name:
        out.append(node.value)
    elif t is cst.Attribute:
        _reads(node.value, out)
    elif t is cst.Arg:
        _reads(node.value, out)  # not its keyword
    elif t is cst.BooleanOperation:
        _reads(node.left, out)  # the right operand runs only on some values
    elif t is cst.IfExp:
        _reads(node.test, out)
    elif t is cst.Comparison:
        _reads(node.left, out)  # ``a < b < c``: ``c`` only when ``a < b``
        _reads(node.comparisons[0].comparator, out)
    elif t is cst.Lambda:
        return
    elif t in _COMPREHENSIONS:
        _reads(node.for_in.iter, out)  # the rest runs in the comprehension's scope
    elif t is cst.NamedExpr:
        _reads(node.value, out)
    else:
        for child in children(node):
            _reads(child, out)


def _may_run(module: cst.Module, position: int) -> frozenset[str]:
    """The names of functions and classes of ``module`` that code running before the
    statement at ``position`` (it included) names or is handed (:func:`_handed_over`), and
    what those name in turn."""
    named: set[str] = set()
    for stmt in module.body[: position + 1]:
        _names_run(stmt, named)
    defs: dict[str, list[cst.CSTNode]] = {}
    for stmt in _scope_statements(module.body[:position]):
        if type(stmt) in (cst.FunctionDef, cst.ClassDef):
            defs.setdefault(stmt.name.value, []).append(stmt)
            if _handed_over(stmt):
                named.add(stmt.name.value)
    reached: set[str] = set()
    todo = [n for n in named if n in defs]
    while todo:
        name = todo.pop()
        if name in reached:
            continue
        reached.add(name)
        for definition in defs[name]:
            for n in walk(definition):
                if type(n) is cst.Name and n.value in defs and n.value not in reached:
                    todo.append(n.value)
    return frozenset(reached)


def _handed_over(definition: cst.FunctionDef | cst.ClassDef) -> bool:
    """Whether defining ``definition`` (a statement that runs before the raise) hands one of
    its functions to code that may call it: a decorator receives what it decorates, and may
    call it then (``@run_now``) or keep it to be called later (``@atexit.register`` runs it at
    exit, after the ``NameError`` too); a class body that names one of its own functions
    outside function bodies (``history = fit()`` under ``def fit():``) calls it, and a
    decorator of a method receives the method. The code of the function, and for a class of
    the whole class, may then run."""
    if definition.decorators:
        return True
    if type(definition) is not cst.ClassDef or type(definition.body) is not cst.IndentedBlock:
        return False
    own: set[str] = set()  # the class's functions, in its body's own scope
    for stmt in _scope_statements(definition.body.body):
        if type(stmt) is cst.FunctionDef:
            if stmt.decorators:
                return True
            own.add(stmt.name.value)
    run: set[str] = set()  # what the class body names as it runs
    for stmt in definition.body.body:
        _names_run(stmt, run)
    return not own.isdisjoint(run)


def _names_run(node: cst.CSTNode, out: set[str]) -> None:
    """Every name in ``node`` outside the bodies of functions (a ``def`` runs its decorators
    and defaults, a ``class`` its body)."""
    if type(node) is cst.FunctionDef:
        for part in (*node.decorators, node.params, node.returns):
            if part is not None:
                _names_run(part, out)
        return
    if type(node) is cst.Name:
        out.add(node.value)
        return
    for child in children(node):
        if type(node) is cst.ClassDef and child is node.name:
            continue  # defining a class names it, and runs nothing of it but its body
        _names_run(child, out)
