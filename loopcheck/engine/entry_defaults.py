"""Which parameters of a method read as an entry point every call of the project binds to one constant.

A method that no one in its own module calls is read as an entry point of its own
(:func:`loopcheck.analysis.build_units`), its parameters unknown. A trainer's
``train(self, epochs, save_path=None)`` called only by a script of the project, as
``trainer.train(epochs)``, holds ``save_path = None`` on every run: the ``if save_path is not
None:`` in its body never runs its arm. Likewise ``run_epoch(self, loader, phase)`` that every
call of the project gives ``phase='train'`` (by position or by keyword) never runs the arm of
``if phase == 'train': ... else: model.eval()`` that evaluates. :func:`params_bound_to_constant`
names such parameters and their constant, and the builder gives each as a run constant of the
entry point (:meth:`UnitBuilder.function_unit
<loopcheck.engine.builder.UnitBuilder.function_unit>`), so that
:func:`~loopcheck.engine.builder.decide_test` decides the tests on it.

A parameter is bound to a constant when every call found binds it to the same literal (a
string, an integer, a float, ``True``, ``False`` or ``None``, of one type: ``1`` and ``True``
differ), a call that leaves it out binding it to its default (a literal too). Calls with
different constants, an argument that is no literal, or a left-out parameter without a literal
default leave it unknown.

The calls are found by the method's name alone, whatever object they are made on, which
over-counts them (``model.train()`` counts as a call of ``Trainer.train``: a call too many only
takes constants away) and never misses one that the project's code writes:

* the files are those whose code may call the method, when only the project's code can
  (:func:`~loopcheck.engine.unreferenced.method_naming_files`: no decorator, the class's bases
  in the project, no lookup of names at run time, no notebook, shell script, document or
  packaging file naming it, a module of scripts);
* every ``obj.name`` there must be the callee of a call (``f = obj.name``,
  ``partial(obj.name, ...)``, ``obj.name = g`` leave the callers unknown), with neither
  ``*args`` nor ``**kwargs``; a plain ``name`` in a class body (``fit = train``) leaves them
  unknown too, and elsewhere names another function; a string that is the name counts as a
  mention that is no call where the file may look names up by a string;
* a call through a class (``Trainer.run_epoch(t, loader, 'train')``) passes ``self`` among its
  positional arguments. A call whose object may be a class (:func:`_may_be_class`: a name the
  file binds by a ``class`` statement or an import, or never binds, or binds to such a name;
  ``type(x)``; ``x.__class__``) is read both ways, and binds a parameter to a constant only
  when both readings give it the same one.

At least one call must be found. What is given up: callers outside the project, a library
calling the method of an object the project hands it (``fit(trainer)``), and code that
reaches it through an alias of the object's class made at run time (a class passed as an
argument, kept in an attribute).
"""

from __future__ import annotations

import ast

import libcst as cst

from loopcheck.engine.literals import NO_VALUE, ast_literal_value, literal_value
from loopcheck.engine.unreferenced import _looks_up_names, _text, method_naming_files

#: No constant: a parameter given a value that is no literal, or left out without a literal default.
UNKNOWN = NO_VALUE


def params_bound_to_constant(project, index, func: cst.FunctionDef, cls: cst.ClassDef,
                             candidates: list[str]) -> dict[str, object]:
    """The parameters of ``candidates`` (of method ``func`` of module-level class ``cls`` of the
    module ``index``, ``self`` excluded) that every call the project's code may make of the
    method binds to one literal constant, with that constant, when at least one call is found;
    the empty dict when nothing is decided (see the module docstring). Kept per function in the
    module's cache."""
    memo = index.cache.setdefault("entry_defaults", {})
    key = (id(func), tuple(candidates))
    if key not in memo:
        memo[key] = _bound(project, index, func, cls, candidates)
    return memo[key]


def _bound(project, index, func: cst.FunctionDef, cls: cst.ClassDef, candidates: list[str]) -> dict[str, object]:
    if project is None or index is None or index.path is None or not candidates:
        return {}
    files = method_naming_files(project, index, func, cls)
    if files is None:
        return {}
    p = func.params
    positional = [x.name.value for x in (*p.posonly_params, *p.params)][1:]  # less ``self``
    keyword_ok = {x.name.value for x in (*p.params, *p.kwonly_params)}
    defaults = {x.name.value: literal_value(x.default) if x.default is not None else UNKNOWN
                for x in (*p.posonly_params, *p.params, *p.kwonly_params)}
    values: dict[str, tuple] = {}  # parameter -> (type, value) every call so far binds it to
    found = 0
    for file in files:
        text = _text(project, file)
        if text is None:
            return {}
        calls = _calls(text, func.name.value, _looks_up_names(text))
        if calls is None:
            return {}
        for args, keywords, through_class in calls:
            found += 1
            readings = [args, args[1:]] if through_class else [args]
            for name in candidates:
                if values.get(name, ()) is UNKNOWN:
                    continue
                given = {_binding(name, reading, keywords, positional, keyword_ok, defaults) for reading in readings}
                value = given.pop() if len(given) == 1 else UNKNOWN
                if value is UNKNOWN or values.setdefault(name, value) != value:
                    values[name] = UNKNOWN
    if not found:
        return {}
    return {name: v[1] for name, v in values.items() if v is not UNKNOWN}


def _binding(name: str, args: list, keywords: dict, positional: list[str], keyword_ok: set[str],
             defaults: dict) -> tuple | object:
    """``(type, value)`` of the literal one call, with positional arguments ``args`` and keyword
    arguments ``keywords`` (``ast`` expressions), binds parameter ``name`` to; :data:`UNKNOWN`
    when it is no literal, or left out without a literal default."""
    if name in keywords and name in keyword_ok:
        value = ast_literal_value(keywords[name])
    elif name in positional and positional.index(name) < len(args):
        value = ast_literal_value(args[positional.index(name)])
    else:
        value = defaults.get(name, UNKNOWN)
    return UNKNOWN if value is UNKNOWN else (type(value), value)


def _calls(text: str, name: str, strings: bool) -> list[tuple[list, dict, bool]] | None:
    """``(positional arguments, keyword arguments by name, whether the object may be a class)``
    of each call of ``something.name(...)`` in Python code ``text``; ``None`` when the code does
    not parse, or mentions the method otherwise than as the callee of such a call (see the
    module docstring)."""
    if name not in text:
        return []
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError):
        return None
    callees = {id(n.func): n for n in ast.walk(tree) if isinstance(n, ast.Call)}
    in_class_body = {id(n) for c in ast.walk(tree) if isinstance(c, ast.ClassDef) for n in _scope_nodes(c.body)}
    classes = None
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr == name:
            call = callees.get(id(node))
            if call is None or not isinstance(node.ctx, ast.Load):
                return None
            if any(isinstance(a, ast.Starred) for a in call.args) or any(k.arg is None for k in call.keywords):
                return None
            if classes is None:
                classes = _class_names(tree)
            out.append((call.args, {k.arg: k.value for k in call.keywords}, _may_be_class(node.value, *classes)))
        elif isinstance(node, ast.Name) and node.id == name and id(node) in in_class_body:
            return None
        elif strings and isinstance(node, ast.Constant) and node.value == name:
            return None
    return out


def _class_names(tree: ast.Module) -> tuple[set[str], set[str]]:
    """``(classes, bound)`` of the file ``tree``: the names that may hold a class (those a
    ``class`` statement or an import binds, and those an assignment binds to such a name, to
    ``type(...)`` or to ``x.__class__``), and all the names the file binds."""
    classes: set[str] = set()
    bound: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef):
            classes.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            classes |= {(a.asname or a.name).split(".")[0] for a in node.names if a.name != "*"}
        elif isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
            bound.add(node.id)
        elif isinstance(node, ast.arg):
            bound.add(node.arg)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            bound.add(node.name)
        elif isinstance(node, ast.ExceptHandler) and node.name:
            bound.add(node.name)
        elif isinstance(node, (ast.MatchAs, ast.MatchStar)) and node.name:
            bound.add(node.name)
    assigns = [n for n in ast.walk(tree)
               if isinstance(n, (ast.Assign, ast.AnnAssign, ast.NamedExpr)) and n.value is not None]
    grew = True
    while grew:  # (an alias of an alias)
        grew = False
        for node in assigns:
            if not _may_be_class(node.value, classes, None):
                continue
            for t in node.targets if isinstance(node, ast.Assign) else [node.target]:
                if isinstance(t, ast.Name) and t.id not in classes:
                    classes.add(t.id)
                    grew = True
    return classes, bound | classes


def _may_be_class(expr: ast.expr, classes: set[str], bound: set[str] | None) -> bool:
    """Whether the object ``expr`` a method is looked up on may be a class, not an instance:
    a name of ``classes``, or one the file never binds (not in ``bound``, when given: a star
    import's), ``type(...)``, ``x.__class__`` (:func:`_class_names`)."""
    if isinstance(expr, ast.Name):
        return expr.id in classes or bound is not None and expr.id not in bound
    if isinstance(expr, ast.Attribute):
        return expr.attr == "__class__"
    if isinstance(expr, ast.Call):
        return isinstance(expr.func, ast.Name) and expr.func.id == "type"
    return False


def _scope_nodes(stmts: list):
    """The nodes of a class body's own scope: its statements' nodes, not those inside the
    bodies of the functions, lambdas and classes defined there (their names are not the
    class's), but their decorators, defaults and bases."""
    stack = list(stmts)
    while stack:
        node = stack.pop()
        yield node
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                # its decorators, defaults and bases run in the class's scope
                stack += child.decorator_list
                stack += child.bases if isinstance(child, ast.ClassDef) else [
                    *child.args.defaults, *(d for d in child.args.kw_defaults if d is not None)]
            elif not isinstance(child, ast.Lambda):
                stack.append(child)
