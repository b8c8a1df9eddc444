"""The value a setting read in a training loop has on every run, where the code alone fixes it.

Scripts read their settings from an ``argparse`` namespace (``args.gradient_accumulation_steps``),
a configuration class (``Config.gradient_accumulation_steps``, ``class Config:`` with the value
as a class attribute) or a dict built from either (``conf["gradient_accumulation_steps"]``).
:func:`setting_value` gives the value when the program as written fixes it:

* a literal;
* a variable bound once to a literal: a local of the reading function (``accum = 1``), or a
  global of its module that the function does not bind (bound there, or imported from a module
  of the project that binds it so: ``from config import *``);
* an option of a namespace the code parses from the command line, at its ``default=``, when
  nothing else in the program sets it (:func:`loopcheck.engine.values.run_constants`, which
  also follows ``args = set_args()`` into a function of the project that returns
  ``parser.parse_args()``): the value of a run that does not pass the option;
* a class attribute of a class of the project, bound once in the class body to a literal, when
  no assignment to an attribute of that name appears in the class or in the module reading it;
  read on the class (``Config.x``) or on an instance bound once (``config = Config()``, then
  ``config.x``) of a class with no decorator, metaclass or base but ``object``, whose
  ``__init__`` therefore cannot set ``x`` on the instance unless the class's own code does;
* an entry of a dict literal the reading function binds once and never writes into, read with
  a literal key: the value of the entry's expression, by the same rules.

Anything else is :data:`~loopcheck.engine.builder.NO_VALUE`. An option read through a
parameter (``train(args)``) counts when every call of the function hands it such a namespace
(:func:`loopcheck.engine.values.handed_defaults`).

:func:`setting_truth` gives the truth of a test over such values on every run
(``args.local_rank == -1``), and :func:`ruled_out` whether a node lies in an arm of a
conditional expression or an ``if`` that such a test never takes.
"""

from __future__ import annotations

import libcst as cst

from loopcheck.engine.builder import (
    NO_VALUE, ClassRef, all_param_names, bound_names, imported_literal, literal_constants, literal_value,
    single_bindings,
)
from loopcheck.engine.knowledge import knowledge
from loopcheck.engine.names import dotted_name
from loopcheck.engine.values import class_of_name, parents, run_constants
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
        if t is cst.Name:
            found = _holder(unit, expr)
            return _name_literal(found[0], found[1], expr.value) if found is not None else NO_VALUE
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
    """``Config.x``: the literal class ``Config`` of the project binds ``x`` to in its body; also
    ``config.x`` for ``config = Config()`` bound once (:func:`_instance_class`)."""
    found = _holder(unit, expr)
    if found is None:
        return NO_VALUE
    index, holder = found
    head, attr = expr.value.value, expr.attr.value
    cls = index.class_ref(head) or index.class_ref(index.imports.qualify(head), qualified=True)
    if cls is None:  # ``config = Config()`` then ``config.x``: the class attribute, unless set on the instance
        cls = _instance_class(index, holder, head)
        if cls is None or cls.info is None or not _plain_class(cls.info.node):
            return NO_VALUE
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


def _name_literal(index, holder: cst.CSTNode, name: str):
    """The literal ``name`` holds on every run where ``holder`` (a function or the module) reads
    it: a local bound once by ``name = <literal>`` at the function's own level
    (:func:`~loopcheck.engine.builder.single_bindings`), or, when the function neither binds it
    nor takes it as a parameter, a global of the module bound so
    (:func:`~loopcheck.engine.builder.literal_constants`) or imported so from a module of the
    project (:func:`~loopcheck.engine.builder.imported_literal`); else ``NO_VALUE``."""
    if type(holder) is cst.FunctionDef:
        if name in all_param_names(holder):
            return NO_VALUE
        names, declared = bound_names(holder.body)
        if name in declared:
            return NO_VALUE
        if name in names:
            value = single_bindings(holder.body.body).get(name)
            return literal_value(value) if value is not None else NO_VALUE
        if _enclosing_function(index, holder) is not None:
            return NO_VALUE  # a closure's name: the enclosing function may bind it
    value = literal_constants(index).get(name, NO_VALUE)
    return value if value is not NO_VALUE else imported_literal(index, name)


def _enclosing_function(index, node: cst.CSTNode) -> cst.FunctionDef | None:
    """The function whose body holds ``node`` (a function or class definition), if any."""
    table = parents(index)
    up = table.get(node)
    while up is not None and type(up) is not cst.FunctionDef:
        up = table.get(up)
    return up


def _instance_class(index, holder: cst.CSTNode, name: str) -> ClassRef | None:
    """The class of the project whose instance ``name`` holds where ``holder`` (a function or
    the module) reads it: ``name`` is bound once, ``name = Config(...)``
    (:func:`single_binding`). ``None`` otherwise."""
    value = single_binding(index, holder, name)
    if type(value) is not cst.Call:
        return None
    cls = class_of_name(index, dotted_name(value.func))
    return cls if isinstance(cls, ClassRef) else None


def single_binding(index, holder: cst.CSTNode, name: str) -> cst.BaseExpression | None:
    """The value of the one binding of ``name`` that ``holder`` (a function or the module of
    ``index``) reads: a plain ``name = value`` that is the name's only binding in ``holder``'s
    code, or, when a function neither binds it nor takes it as a parameter, in the top level of
    its module, which no function rebinds (``global name``). Python reads a local bound there
    only after that statement ran (else ``UnboundLocalError``), so every read sees the value it
    computed then. ``None`` otherwise (a parameter, a second binding, a ``for`` or ``with``
    target, a closure's name, ...)."""
    scopes = [holder]
    if type(holder) is cst.FunctionDef:
        if name in all_param_names(holder) or name in bound_names(holder.body)[1]:
            return None
        if not _bindings(holder, name):
            if _enclosing_function(index, holder) is not None:
                return None  # a closure's name: the enclosing function may bind it
            scopes = [index.tree]
    for scope in scopes:
        if scope is None:
            return None
        found = _bindings(scope, name)
        if len(found) != 1 or found[0] is None:
            return None
        if type(scope) is cst.Module and any(
                type(n) is cst.Global and any(g.name.value == name for g in n.names) for n in walk(scope)):
            return None  # a function may rebind the module's name
        return found[0]
    return None


_FORM_DEPTH = 8  # names followed to their binding, and nested parts, at most


def constant_form(unit, expr: cst.BaseExpression, _depth: int = 0) -> tuple | None:
    """A structure of ``expr`` such that two expressions with equal forms give equal values
    wherever a run evaluates them, or ``None`` when not established. Built only of run
    constants: a literal; a name bound once (:func:`single_binding`) to such an expression (its
    value is the form's, wherever it is read); a call of a library function the knowledge says
    tells a fact of the process fixed for the run (``process_fact``: ``torch.cuda.is_available()``,
    no argument) or computes its result from its arguments alone (``of_arguments``:
    ``torch.device(...)``), given such arguments; a conditional expression, ``not``,
    ``and``/``or`` and comparisons of such parts. So
    ``torch.device('cuda' if torch.cuda.is_available() else 'cpu')`` written in two places names
    one device. An option (``args.device``), a parameter or a call of anything else: ``None``.

    Args:
        unit: the :class:`~loopcheck.engine.unit.Unit` whose code holds ``expr``.
        expr: an expression of one of the unit's modules.
    """
    if _depth > _FORM_DEPTH:
        return None
    value = literal_value(expr)
    if value is not NO_VALUE:
        return ("literal", type(value).__name__, value)
    t = type(expr)
    if t is cst.Name:
        found = _holder(unit, expr)
        bound = single_binding(found[0], found[1], expr.value) if found is not None else None
        return constant_form(unit, bound, _depth + 1) if bound is not None else None
    if t is cst.Call:
        return _call_form(unit, expr, _depth)
    if t is cst.IfExp:
        parts = (constant_form(unit, e, _depth + 1) for e in (expr.test, expr.body, expr.orelse))
        return _all_known("if", parts)
    if t is cst.UnaryOperation and type(expr.operator) is cst.Not:
        return _all_known("not", [constant_form(unit, expr.expression, _depth + 1)])
    if t is cst.BooleanOperation:
        return _all_known(type(expr.operator).__name__,
                          (constant_form(unit, e, _depth + 1) for e in (expr.left, expr.right)))
    if t is cst.Comparison:
        parts = [constant_form(unit, expr.left, _depth + 1)]
        for target in expr.comparisons:
            parts += [(type(target.operator).__name__,), constant_form(unit, target.comparator, _depth + 1)]
        return _all_known("compare", parts)
    return None


def _all_known(head: str, parts) -> tuple | None:
    """``(head, *parts)``, or ``None`` when a part is unknown."""
    out = (head, *parts)
    return None if any(p is None for p in out) else out


def _call_form(unit, call: cst.Call, _depth: int) -> tuple | None:
    """:func:`constant_form` of a call of a library function (its name qualified by the imports
    of the call's module) whose knowledge entry says its result is a fact of the process
    (``process_fact``, called with no argument) or a value of its arguments alone
    (``of_arguments``)."""
    index = unit.module_of(call)
    dotted = dotted_name(call.func)
    if index is None or dotted is None or index.imports.aliases.get(dotted.partition(".")[0]) is None:
        return None  # not a name an import binds: a function of the project, a variable
    qualified = index.imports.qualify(dotted)
    summary = knowledge().function(qualified)
    returns = summary.returns if summary is not None else None
    if returns is None:
        return None
    if returns.get("process_fact") is not None:
        return ("fact", returns.get("process_fact")) if not call.args else None
    if not returns.get("of_arguments") or any(a.star for a in call.args):
        return None
    args = [(a.keyword.value if a.keyword else None, constant_form(unit, a.value, _depth + 1)) for a in call.args]
    if any(form is None for _, form in args):
        return None
    return ("call", qualified, tuple(args))


def _bindings(scope: cst.CSTNode, name: str) -> list:
    """What each binding of ``name`` in the code of ``scope`` (a function or module, without
    nested functions and classes) binds: the value of a plain ``name = value``, ``None`` for any
    other binding (a tuple target, ``for``, ``with ... as``, ``+=``, ``import``, ``del``, ...)."""
    body = scope.body if isinstance(scope.body, (tuple, list)) else (scope.body,)
    out: list = []
    for part in body:
        if type(part) in (cst.FunctionDef, cst.ClassDef):
            # a module's own function or class: it binds its name, and its body binds none of
            # the module's (``walk`` enters the node it starts from)
            if part.name.value == name:
                out.append(None)
            continue
        for n in walk(part, prune=(cst.FunctionDef, cst.ClassDef, cst.Lambda)):
            t = type(n)
            if t is cst.Assign:
                for target in n.targets:
                    if type(target.target) is cst.Name and target.target.value == name:
                        out.append(n.value)
                    elif _binds_name(target.target, name):
                        out.append(None)
            elif t in (cst.AugAssign, cst.AnnAssign, cst.For, cst.CompFor, cst.NamedExpr, cst.AsName, cst.Del):
                if _binds_name(n.name if t is cst.AsName else n.target, name):
                    out.append(None)
            elif t is cst.ImportAlias and n.asname is None and dotted_name(n.name) == name:
                out.append(None)
    return out


def _binds_name(target: cst.CSTNode, name: str) -> bool:
    """Whether the target ``target`` binds the plain name ``name`` (itself, or an element of a
    tuple or list target; not an attribute or item, which binds nothing)."""
    t = type(target)
    if t is cst.Name:
        return target.value == name
    if t is cst.Tuple or t is cst.List:
        return any(_binds_name(e.value, name) for e in target.elements)
    if t is cst.StarredElement:
        return _binds_name(target.value, name)
    return False


def _plain_class(node: cst.ClassDef) -> bool:
    """Whether an instance of class ``node`` reads a class attribute its own body binds, unless
    an assignment sets it on the instance: no decorator (``@dataclass`` makes ``__init__`` set
    the fields), no metaclass or keyword, no base but ``object`` (a base's ``__init__`` could
    set the attribute on the instance)."""
    return not node.decorators and not node.keywords and all(
        a.keyword is None and dotted_name(a.value) in ("object", "builtins.object") for a in node.bases)


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


def _operand(unit, expr: cst.BaseExpression):
    """The value of an operand of a test on every run: :func:`setting_value`, a float literal,
    or a sign applied to a number of them (``-1``); ``NO_VALUE`` otherwise."""
    t = type(expr)
    if t is cst.Float:
        return expr.evaluated_value
    if t is cst.UnaryOperation and type(expr.operator) in (cst.Minus, cst.Plus):
        inner = _operand(unit, expr.expression)
        if type(inner) in (int, float):
            return -inner if type(expr.operator) is cst.Minus else inner
        return NO_VALUE
    if t is cst.List or t is cst.Tuple or t is cst.Set:
        values = [_operand(unit, e.value) if type(e) is cst.Element else NO_VALUE for e in expr.elements]
        return NO_VALUE if any(v is NO_VALUE for v in values) else tuple(values)
    return setting_value(unit, expr)


_ARITHMETIC = {cst.Add: lambda a, b: a + b, cst.Subtract: lambda a, b: a - b, cst.Multiply: lambda a, b: a * b}


def integer_setting(unit, expr: cst.BaseExpression) -> int | None:
    """The integer ``expr`` is on every run: a :func:`setting_value` that is an ``int`` (not a
    ``bool``: ``args.epochs`` at its ``default=100``, ``EPOCHS`` imported from a config
    module), or ``+``, ``-``, ``*`` of such values (``args.epochs + 1``); ``None`` otherwise."""
    if type(expr) is cst.BinaryOperation and type(expr.operator) in _ARITHMETIC:
        left, right = integer_setting(unit, expr.left), integer_setting(unit, expr.right)
        return None if left is None or right is None else _ARITHMETIC[type(expr.operator)](left, right)
    value = setting_value(unit, expr)
    return value if type(value) is int else None


def range_iterations(unit, loop) -> int | None:
    """How many iterations the ``for`` loop ``loop`` (a :class:`~loopcheck.engine.ir.LoopInfo`)
    runs on every run: its :attr:`~loopcheck.engine.ir.LoopInfo.count` when the builder's run
    constants fix it, else, for a loop over the builtin ``range`` (not re-bound by its module)
    with one to three positional arguments, the length of that range over
    :func:`integer_setting` values (``range(args.epochs)`` with ``default=100``; ``range(1,
    cfg.EPOCHS + 1)``); ``None`` otherwise."""
    if loop.count is not None:
        return loop.count
    node = loop.node
    call = node.iter if type(node) is cst.For else None
    if type(call) is not cst.Call or type(call.func) is not cst.Name or call.func.value != "range":
        return None
    index = unit.module_of(node)
    if index is None or any("range" in names for names in (index.imports.aliases, index.globals, index.functions)):
        return None
    args = call.args
    if not 1 <= len(args) <= 3 or any(a.keyword is not None or a.star for a in args):
        return None
    values = [integer_setting(unit, a.value) for a in args]
    if None in values or values[2:] == [0]:
        return None
    return len(range(*values))


_COMPARE = {
    cst.LessThan: lambda a, b: a < b, cst.LessThanEqual: lambda a, b: a <= b,
    cst.GreaterThan: lambda a, b: a > b, cst.GreaterThanEqual: lambda a, b: a >= b,
    cst.Equal: lambda a, b: a == b, cst.NotEqual: lambda a, b: a != b,
    cst.Is: lambda a, b: a is b, cst.IsNot: lambda a, b: a is not b,
    cst.In: lambda a, b: a in b, cst.NotIn: lambda a, b: a not in b,
}


def setting_truth(unit, test: cst.BaseExpression) -> bool | None:
    """Whether ``test`` is true on every run (``True``), false on every run (``False``), or
    ``None`` when the code alone does not fix it: ``not``, ``and``/``or`` (a false operand of
    ``and``, a true one of ``or``, decides alone: the operands call nothing), comparisons
    (``<``, ``==``, ``is``, ``in`` a display of values...) of values :func:`setting_value` knows
    (``args.local_rank == -1`` with ``--local_rank`` left at its ``default=-1``), and the truth of
    one such value.

    Args:
        unit: the :class:`~loopcheck.engine.unit.Unit` whose code holds ``test``.
        test: an expression of one of the unit's modules.
    """
    t = type(test)
    if t is cst.UnaryOperation and type(test.operator) is cst.Not:
        inner = setting_truth(unit, test.expression)
        return None if inner is None else not inner
    if t is cst.BooleanOperation:
        left, right = setting_truth(unit, test.left), setting_truth(unit, test.right)
        decisive = type(test.operator) is cst.Or  # True decides ``or``, False decides ``and``
        if left is decisive or right is decisive:
            return decisive
        return None if left is None or right is None else not decisive
    if t is cst.Comparison:
        left = _operand(unit, test.left)
        for comp in test.comparisons:
            right = _operand(unit, comp.comparator)
            compare = _COMPARE.get(type(comp.operator))
            if left is NO_VALUE or right is NO_VALUE or compare is None:
                return None
            if type(comp.operator) in (cst.In, cst.NotIn) and type(right) is not tuple:
                return None  # ``x in name``: a string's or a container's membership, not fixed here
            try:
                if not compare(left, right):
                    return False
            except TypeError:  # ``None > 0``: raises when run
                return None
            left = right
        return True
    value = _operand(unit, test)
    return None if value is NO_VALUE or type(value) is tuple else bool(value)


def ruled_out(unit, node: cst.CSTNode) -> bool:
    """Whether ``node`` never runs because it lies in an arm that a test fixed on every run
    (:func:`setting_truth`) never takes: the body of a conditional expression (``a if test
    else b``) or of an ``if`` whose test is false, or the ``else`` arm (an ``elif`` among them)
    whose test is true. Read up to the enclosing function (its callers are not read).

    Args:
        unit: the :class:`~loopcheck.engine.unit.Unit` whose code holds ``node``.
        node: a node of one of the unit's modules.
    """
    index = unit.module_of(node)
    if index is None:
        return False
    table = parents(index)
    child, up = node, table.get(node)
    while up is not None and type(up) is not cst.FunctionDef and type(up) is not cst.Module:
        t = type(up)
        if t is cst.IfExp or t is cst.If:
            arm = True if child is up.body else False if child is up.orelse else None
            if arm is not None and setting_truth(unit, up.test) is (not arm):
                return True
        child, up = up, table.get(up)
    return False
