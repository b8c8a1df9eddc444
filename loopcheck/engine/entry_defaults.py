"""Which parameters of a method read as an entry point every call of the project leaves out.

A method that no one in its own module calls is read as an entry point of its own
(:func:`loopcheck.analysis.build_units`), its parameters unknown. A trainer's
``train(self, epochs, save_path=None)`` called only by a script of the project, as
``trainer.train(epochs)``, holds ``save_path = None`` on every run: the ``if save_path is not
None:`` in its body never runs its arm. :func:`params_left_at_default` names such parameters,
and the builder gives each its default as a run constant of the entry point
(:meth:`UnitBuilder.function_unit <loopcheck.engine.builder.UnitBuilder.function_unit>`), so
that :func:`~loopcheck.engine.builder.decide_test` decides the tests on it.

The calls are found by the method's name alone, whatever object they are made on, which
over-counts them (``model.train()`` counts as a call of ``Trainer.train``) and never misses
one that the project's code writes:

* the files are those whose code may call the method, when only the project's code can
  (:func:`~loopcheck.engine.unreferenced.method_naming_files`: no decorator, the class's bases
  in the project, no lookup of names at run time, no notebook, shell script, document or
  packaging file naming it, a module of scripts);
* every ``obj.name`` there must be the callee of a call (``f = obj.name``,
  ``partial(obj.name, ...)``, ``obj.name = g`` leave the callers unknown), with neither
  ``*args`` nor ``**kwargs``; a plain ``name`` in a class body (``fit = train``) leaves them
  unknown too, and elsewhere names another function; a string that is the name counts as a
  mention that is no call where the file may look names up by a string;
* a call leaves a parameter out when it does not name it as a keyword and gives fewer
  positional arguments than there are parameters before it, ``self`` not counted (a call
  through the class, ``Trainer.train(t, 5)``, counts its ``self`` among them, so this
  over-counts it too).

At least one call must be found. What is given up: callers outside the project, a library
calling the method of an object the project hands it (``fit(trainer)``), and code that
reaches it through an alias of the object's class made at run time.
"""

from __future__ import annotations

import ast

import libcst as cst

from loopcheck.engine.unreferenced import _looks_up_names, _text, method_naming_files


def params_left_at_default(project, index, func: cst.FunctionDef, cls: cst.ClassDef, candidates: list[str]) -> set[str]:
    """The parameters of ``candidates`` (of method ``func`` of module-level class ``cls`` of the
    module ``index``, ``self`` excluded) that no call the project's code may make of the method
    gives a value, when at least one call is found; the empty set when nothing is decided (see
    the module docstring). Kept per function in the module's cache."""
    memo = index.cache.setdefault("entry_defaults", {})
    key = (id(func), tuple(candidates))
    if key not in memo:
        memo[key] = _left_out(project, index, func, cls, candidates)
    return memo[key]


def _left_out(project, index, func: cst.FunctionDef, cls: cst.ClassDef, candidates: list[str]) -> set[str]:
    if project is None or index is None or index.path is None or not candidates:
        return set()
    files = method_naming_files(project, index, func, cls)
    if files is None:
        return set()
    p = func.params
    positional = [x.name.value for x in (*p.posonly_params, *p.params)][1:]  # less ``self``
    left = set(candidates)
    found = 0
    for file in files:
        text = _text(project, file)
        if text is None:
            return set()
        calls = _calls(text, func.name.value, _looks_up_names(text))
        if calls is None:
            return set()
        for n_positional, keywords in calls:
            found += 1
            for name in list(left):
                at = positional.index(name) if name in positional else len(positional)
                if name in keywords or n_positional > at:
                    left.discard(name)
    return left if found else set()


def _calls(text: str, name: str, strings: bool) -> list[tuple[int, set[str]]] | None:
    """``(number of positional arguments, keywords)`` of each call of ``something.name(...)``
    in Python code ``text``; ``None`` when the code does not parse, or mentions the method
    otherwise than as the callee of such a call (see the module docstring)."""
    if name not in text:
        return []
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError):
        return None
    callees = {id(n.func): n for n in ast.walk(tree) if isinstance(n, ast.Call)}
    in_class_body = {id(n) for c in ast.walk(tree) if isinstance(c, ast.ClassDef) for n in _scope_nodes(c.body)}
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr == name:
            call = callees.get(id(node))
            if call is None or not isinstance(node.ctx, ast.Load):
                return None
            if any(isinstance(a, ast.Starred) for a in call.args) or any(k.arg is None for k in call.keywords):
                return None
            out.append((len(call.args), {k.arg for k in call.keywords}))
        elif isinstance(node, ast.Name) and node.id == name and id(node) in in_class_body:
            return None
        elif strings and isinstance(node, ast.Constant) and node.value == name:
            return None
    return out


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
