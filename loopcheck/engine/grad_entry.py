"""Grad mode at the entry of a unit: off when every call the project makes of its entry runs with gradients off.

A function or method read as an entry point of its own (no caller in its module) starts with
gradients on. When the project's code calls it only inside ``with torch.no_grad():`` (or from a
``@torch.no_grad()`` function, or after ``torch.set_grad_enabled(False)``), and nothing outside
the project can call it, its forwards record no graph: :func:`entry_grad_off` says so for an
event whose grad mode is its entry's. Module-level functions' calls are found by
:func:`loopcheck.engine.callers.callers_grad_off`; methods' calls by their name
(:func:`method_callers_grad_off`). This module sits above :mod:`~loopcheck.engine.callers`
and :mod:`~loopcheck.engine.unreferenced`, which find the files and the calls.
"""

from __future__ import annotations

import ast
from pathlib import Path

from loopcheck.engine.callers import _all_off, _scanned, callers_grad_off, project_files, scan_files
from loopcheck.engine.entry_defaults import _scope_nodes
from loopcheck.engine.unreferenced import _looks_up_names, method_naming_files


def entry_grad_off(unit, ev) -> bool:
    """Whether event ``ev`` of ``unit`` runs with gradients off because its unit's entry does
    at every call the project makes of it: ``ev``'s grad mode is its entry's (no ``with``,
    decorator or statement on the way set one), the entry is a module-level function of a
    module with a file in a project, and :func:`callers_grad_off` holds for it, or a method of
    a module-level class there, and :func:`method_callers_grad_off` holds for it."""
    func = unit.entry
    index = unit.module
    if not ev.ctx.grad_inherited or func is None or index is None:
        return False
    project, path = getattr(index, "project", None), getattr(index, "path", None)
    if project is None or path is None:
        return False
    cls_name = getattr(index, "method_class", {}).get(func)
    if cls_name is not None:  # a method: its calls are found by its name
        info = index.classes.get(cls_name)
        node = info.node if info is not None else None
        return node is not None and bool(unit.cached(
            ("method_callers_grad_off", cls_name, func.name.value),
            lambda: method_callers_grad_off(project, index, func, node)))
    name = func.name.value
    return bool(unit.cached(("callers_grad_off", name), lambda: callers_grad_off(project, Path(path), name)))


def method_callers_grad_off(project, index, func, cls) -> bool:
    """Whether every call the project's code may make of method ``func`` (a LibCST
    ``FunctionDef``) of module-level class ``cls`` of module ``index`` runs with gradients
    off, at least one call being found.

    The calls are found as :mod:`loopcheck.engine.entry_defaults` finds them, by the method's
    name alone, whatever object they are made on (a call too many, ``decoder.recognize()`` of
    another class, can only keep gradients on): in the files whose code may call the method
    when only the project's code can
    (:func:`~loopcheck.engine.unreferenced.method_naming_files`, a library base such as
    ``torch.nn.Module`` allowed for a public name it does not define), each ``obj.name``
    there the callee of a call, no plain ``name`` in a class body (``fit = train``), and no
    string that is the name in a file that may look names up by a string. Each call's mode is
    read as for a module-level function's callers (:class:`_Scan`): inside ``with
    torch.no_grad():``, after ``torch.set_grad_enabled(False)``, in a function decorated with
    ``@torch.no_grad()``, or in a module-level function every call of which runs with
    gradients off (:func:`_all_off`). A call inside a method runs in the mode its callers give
    that method, which is not followed: only a ``with`` or a decorator inside it turns
    gradients off there. Not kept (the files' scans are, by their versions: an edit of a caller
    is seen by the next check)."""
    if project is None or getattr(index, "path", None) is None:
        return False
    files = method_naming_files(project, index, func, cls, library_bases=True)
    if files is None:
        return False
    everything = None  # the project's files, for the callers of an enclosing function
    found = 0
    for scanned in scan_files(project, files, func.name.value, _method_calls):
        if scanned is None:
            return False  # unreadable, not parsed, or a mention not a call: it may call the method
        file, _info, sites = scanned
        for mode, where in sites:
            found += 1
            if mode == "disabled":
                continue
            if mode == "enabled" and where[0] == "function":
                everything = everything if everything is not None else project_files(Path(project.root))
                if everything is not None and _all_off(project, everything, Path(file).resolve(), where[1], 1, frozenset()):
                    continue  # its enclosing function runs with gradients off wherever it is called
            return False
    return found > 0


def _method_calls(project, file: Path, stamp: tuple, text: str, name: str, imports) -> list | None:
    """``(grad mode, where)`` of each call ``obj.name(...)`` in ``file``'s text (``where`` as
    in :func:`~loopcheck.engine.callers._sites`); ``None`` when the text does not parse, or names the method otherwise
    than as the callee of such a call (see :func:`method_callers_grad_off`). Kept in the
    project's memo by file, stamp and name."""
    def read(tree: ast.AST, nodes: list) -> list | None:
        if not nodes:
            return []
        callees = {id(node.func) for node in ast.walk(tree) if isinstance(node, ast.Call)}
        in_class_body = {id(n) for c in ast.walk(tree) if isinstance(c, ast.ClassDef) for n in _scope_nodes(c.body)}
        out = []
        for node, mode, where in nodes:
            if isinstance(node, ast.Attribute):
                if id(node) not in callees or not isinstance(node.ctx, ast.Load):
                    return None  # ``f = obj.name``, ``partial(obj.name)``, ``obj.name = g``
                out.append((mode, where))
            elif id(node) in in_class_body:
                return None  # ``fit = train`` in a class body: another name for the method
        if _looks_up_names(text) and any(isinstance(n, ast.Constant) and n.value == name for n in ast.walk(tree)):
            return None  # ``getattr(model, "name")``
        return out

    return _scanned(project, "callers.method_calls", file, stamp, text, name, imports, read)
