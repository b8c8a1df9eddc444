"""The value a setting read in a training loop has on every run, where the code alone fixes it.

Scripts read their settings from an ``argparse`` namespace (``args.gradient_accumulation_steps``),
a configuration class (``Config.gradient_accumulation_steps``, ``class Config:`` with the value
as a class attribute) or a dict built from either (``conf["gradient_accumulation_steps"]``).
:func:`setting_value` gives the value when the program as written fixes it:

* a literal;
* an option of a namespace the code parses from the command line, at its ``default=``, when
  nothing else in the program sets it (:func:`loopcheck.engine.values.run_constants`, which
  also follows ``args = set_args()`` into a function of the project that returns
  ``parser.parse_args()``): the value of a run that does not pass the option;
* a class attribute of a class of the project, bound once in the class body to a literal, when
  no assignment to an attribute of that name appears in the class or in the module reading it;
* an entry of a dict literal the reading function binds once and never writes into, read with
  a literal key: the value of the entry's expression, by the same rules.

Anything else is :data:`~loopcheck.engine.builder.NO_VALUE`.
"""

from __future__ import annotations

import libcst as cst

from loopcheck.engine.builder import NO_VALUE, ClassRef, literal_value
from loopcheck.engine.names import dotted_name
from loopcheck.engine.values import parents, run_constants
from loopcheck.engine.walk import walk


def setting_value(unit, expr: cst.BaseExpression, _depth: int = 0):
    """The value ``expr`` has on every run (see the module docstring), else ``NO_VALUE``.

    Args:
        unit: the :class:`~loopcheck.engine.unit.Unit` whose code holds ``expr``.
        expr: an expression of one of the unit's modules.
    """
    value = literal_value(expr)
    if value is not NO_VALUE or _depth > 3:
        return value
    t = type(expr)
    if t is cst.Name or t is cst.Attribute:
        d = dotted_name(expr)
        table = run_constants(unit, expr)
        if d is not None and d in table:
            return table[d]
        if t is cst.Attribute and type(expr.value) is cst.Name:
            return _class_attribute(unit, expr)
        return NO_VALUE
    if t is cst.Subscript and type(expr.value) is cst.Name and len(expr.slice) == 1:
        index = expr.slice[0].slice
        key = literal_value(index.value) if type(index) is cst.Index else NO_VALUE
        entry = _dict_entry(unit, expr, expr.value.value, key) if key is not NO_VALUE else None
        return setting_value(unit, entry, _depth + 1) if entry is not None else NO_VALUE
    return NO_VALUE


def _holder(unit, node: cst.CSTNode):
    """``(module index, the function or module whose code holds node)``, or ``None``."""
    index = unit.module_of(node)
    if index is None:
        return None
    table = parents(index)
    holder = table.get(node)
    while holder is not None and not isinstance(holder, (cst.FunctionDef, cst.Module)):
        holder = table.get(holder)
    return (index, holder) if holder is not None else None


def _class_attribute(unit, expr: cst.Attribute):
    """``Config.x``: the literal class ``Config`` of the project binds ``x`` to in its body."""
    found = _holder(unit, expr)
    if found is None:
        return NO_VALUE
    index, _holder_node = found
    head, attr = expr.value.value, expr.attr.value
    cls = index.class_ref(head) or index.class_ref(index.imports.qualify(head), qualified=True)
    if not isinstance(cls, ClassRef) or cls.info is None:
        return NO_VALUE
    node = cls.info.node
    values = []
    for st in node.body.body:
        names = _bound_in_class_statement(st)
        if attr in names:
            values.append(_class_literal(st, attr))
    if len(values) != 1 or values[0] is NO_VALUE:
        return NO_VALUE
    for where in (node, index.tree):
        if where is not None and _assigns_attribute(where, attr):
            return NO_VALUE  # ``self.x = ...`` in a method, ``Config.x = ...`` in the reading module
    return values[0]


def _bound_in_class_statement(st: cst.CSTNode) -> set[str]:
    """The names a statement of a class body binds (over-approximated: every name of its targets,
    and every name a compound statement, ``def`` or ``class`` binds)."""
    if type(st) is cst.SimpleStatementLine:
        out: set[str] = set()
        for small in st.body:
            if type(small) is cst.Assign:
                for t in small.targets:
                    out |= {n.value for n in walk(t.target) if type(n) is cst.Name}
            elif type(small) in (cst.AnnAssign, cst.AugAssign):
                out |= {n.value for n in walk(small.target) if type(n) is cst.Name}
        return out
    if type(st) in (cst.FunctionDef, cst.ClassDef):
        return {st.name.value}
    return {n.value for n in walk(st) if type(n) is cst.Name}  # an ``if`` or loop in a class body


def _class_literal(st: cst.CSTNode, attr: str):
    """The literal of ``attr = <literal>`` (or ``attr: T = <literal>``), alone on its line."""
    if type(st) is not cst.SimpleStatementLine or len(st.body) != 1:
        return NO_VALUE
    small = st.body[0]
    if type(small) is cst.Assign and len(small.targets) == 1 and type(small.targets[0].target) is cst.Name:
        return literal_value(small.value) if small.targets[0].target.value == attr else NO_VALUE
    if type(small) is cst.AnnAssign and type(small.target) is cst.Name and small.target.value == attr:
        return literal_value(small.value)
    return NO_VALUE


def _assigns_attribute(node: cst.CSTNode, attr: str) -> bool:
    """Whether some assignment under ``node`` targets an attribute called ``attr``, or some call
    may set attributes it does not name (``setattr``)."""
    for n in walk(node):
        t = type(n)
        if t is cst.Assign:
            targets = [x.target for x in n.targets]
        elif t is cst.AugAssign or t is cst.AnnAssign:
            targets = [n.target]
        elif t is cst.Call and dotted_name(n.func) in ("setattr", "vars"):
            return True
        else:
            continue
        for target in targets:
            if any(type(w) is cst.Attribute and w.attr.value == attr for w in walk(target)):
                return True
    return False


def _dict_entry(unit, node: cst.CSTNode, name: str, key) -> cst.BaseExpression | None:
    """The expression of entry ``key`` of the dict literal that the function holding ``node``
    binds ``name`` to, once, and never writes into (no item assignment, ``update``,
    ``setdefault``, ``pop``, no other binding of ``name``, no call that receives it)."""
    found = _holder(unit, node)
    if found is None:
        return None
    index, holder = found
    body = holder.body if isinstance(holder.body, (tuple, list)) else (holder.body,)
    literal = None
    for part in body:
        for n in walk(part, prune=(cst.FunctionDef, cst.ClassDef, cst.Lambda)):
            t = type(n)
            if t is cst.Assign:
                for target in n.targets:
                    hit = [w for w in walk(target.target) if type(w) is cst.Name and w.value == name]
                    if hit and (type(target.target) is not cst.Name or literal is not None or type(n.value) is not cst.Dict):
                        return None
                    if hit:
                        literal = n.value
            elif t in (cst.AugAssign, cst.AnnAssign, cst.For, cst.CompFor, cst.NamedExpr, cst.Del):
                if any(type(w) is cst.Name and w.value == name for w in walk(n.target)):
                    return None
            elif t is cst.Call:
                if dotted_name(n.func) in {f"{name}.update", f"{name}.setdefault", f"{name}.pop", f"{name}.clear"}:
                    return None
                if any(type(a.value) is cst.Name and a.value.value == name for a in n.args) \
                        and not _library_call(index, n):
                    return None  # handed to a function of the project, which may write into it
    if literal is None or _written_item(body, name):
        return None
    entries = [e for e in literal.elements if type(e) is cst.DictElement and literal_value(e.key) == key]
    if len(entries) != 1 or any(type(e) is cst.StarredDictElement for e in literal.elements):
        return None
    return entries[0].value


def _library_call(index, call: cst.Call) -> bool:
    """Whether ``call`` runs a function the module imports from a library (not the project):
    a configuration dict handed to it (``deepspeed.initialize(config=conf)``) is read, not
    rewritten."""
    d = dotted_name(call.func)
    if d is None:
        return False
    qualified = index.imports.qualify(d)
    if qualified == d and d.partition(".")[0] not in index.imports.aliases:
        return False  # not imported: a local or a function of the module
    project = index.project
    return project is None or project.lookup(qualified, index.path) is None


def _written_item(body, name: str) -> bool:
    """Whether some statement of ``body`` assigns or deletes an item of ``name``."""
    for part in body:
        for n in walk(part, prune=(cst.FunctionDef, cst.ClassDef, cst.Lambda)):
            t = type(n)
            targets = [x.target for x in n.targets] if t is cst.Assign else [n.target] if t in (cst.AugAssign, cst.AnnAssign, cst.Del) else []
            for target in targets:
                if any(type(w) is cst.Subscript and dotted_name(w.value) == name for w in walk(target)):
                    return True
    return False
