"""Facts of attribute values along a path: ``obj.attr`` assigned a literal keeps that value
until something may change it.

``self.is_test = True`` followed by ``self.select_action(s)``, whose store runs under ``if not
self.is_test:``, or ``args.evaluate = True`` on one branch followed by ``if args.evaluate:
validate(); return`` before the training loop: on such a path the test has one value. The
builder marks the tests over one attribute (:func:`fact_subject`, :attr:`~loopcheck.engine.ir.If.fact`)
and, for each call that stays a call, what it may change (:attr:`~loopcheck.engine.ir.Call.clobbers`);
the dataflow (:mod:`loopcheck.engine.dataflow`) carries the facts of each path and takes one arm
of such a test where the path knows the attribute's value.

A fact ends (:func:`ends`) at anything that may change the attribute:

* an assignment to it, to its object's name, or to an attribute of the same name on any
  object (which may be the same object under another name), or a subscript store into its
  object (``cfg["mode"] = ...`` on a dict-like config);
* a call that receives its object (an argument, the receiver of a method of unknown class,
  ``vars(args)``, ``args.__dict__``), or an object that holds it (``f(self)`` for
  ``self.cfg.mode``);
* a call of the project's code that is not inlined: every fact of an attribute its code (and
  the code it calls) may assign (:meth:`loopcheck.engine.builder.UnitBuilder.attr_writes`);
* a call of code nobody can see (a callable in a variable, ``getattr(m, name)(...)``): every
  fact.

An inlined call is no end: its body is in the IR, and it sees the caller's values at its
entry. A loop carries the facts of its body's end to its next iteration.

A raising guard makes facts too: past ``if args.data == "x" and args.head == "y": ... else:
raise NotImplementedError`` the path knows both values, past ``if args.head == "z": sys.exit()``
that ``args.head`` is not ``"z"`` (:func:`learned`, :attr:`~loopcheck.engine.ir.If.learns`).

Without a literal, an attribute of a method's own instance that only ``__init__`` assigns
(:meth:`loopcheck.engine.builder.UnitBuilder.init_only`) still holds one value for the whole
run of the method: two ``if``s on its truth (:func:`truth_arms`: ``if not self.logits:``, ``if
self.logits:``) are outcomes of one test (:attr:`~loopcheck.engine.ir.If.constant`), which the
reaching definitions of :mod:`loopcheck.engine.values` follow until what may change it.
"""

from __future__ import annotations

import libcst as cst

from loopcheck.engine.names import dotted_name
from loopcheck.engine.walk import children

#: A :attr:`~loopcheck.engine.ir.Call.clobbers` entry: the call may change anything.
ALL = "*"

_LITERAL_NAMES = ("True", "False", "None")


def _is_literal(node: cst.BaseExpression) -> bool:
    t = type(node)
    return t is cst.Integer or t is cst.SimpleString or (t is cst.Name and node.value in _LITERAL_NAMES)


def _tested(test: cst.BaseExpression) -> cst.BaseExpression | None:
    """The expression ``test`` tests alone: ``x`` of ``x``, ``not x``, ``x == literal``
    (``!=``, ``is``, ``is not``); ``None`` for any other test."""
    while type(test) is cst.UnaryOperation and type(test.operator) is cst.Not:
        test = test.expression
    if type(test) is cst.Comparison:
        if len(test.comparisons) != 1:
            return None
        comp = test.comparisons[0]
        if type(comp.operator) not in (cst.Equal, cst.NotEqual, cst.Is, cst.IsNot) or not _is_literal(comp.comparator):
            return None
        return test.left
    return test


def fact_subject(test: cst.BaseExpression) -> str | None:
    """The dotted name ``obj.attr`` (``obj`` a plain name, ``self`` included) that ``test``
    is a test of, alone: ``obj.attr``, ``not obj.attr``, ``obj.attr == literal`` (``!=``,
    ``is``, ``is not``); ``None`` for any other test."""
    node = _tested(test)
    if type(node) is not cst.Attribute:
        return None
    return dotted_name(node)


def truth_test(test: cst.BaseExpression) -> bool | None:
    """Whether ``test`` is the truth of one attribute alone (``obj.attr``, ``not obj.attr``,
    any number of ``not``): ``True`` when it is true where the attribute is truthy, ``False``
    when where it is falsy (an odd number of ``not``); ``None`` for any other test (a
    comparison, a call, a plain name)."""
    negated = False
    while type(test) is cst.UnaryOperation and type(test.operator) is cst.Not:
        test, negated = test.expression, not negated
    if type(test) is not cst.Attribute or dotted_name(test) is None:
        return None
    return not negated


#: ``(operator, literal)`` of a comparison of an attribute with a literal -> the attribute's
#: truth where the comparison is true: ``x is False`` and ``x == False`` only where ``x`` is
#: falsy, ``x is True`` and ``x == True`` only where it is truthy (``False == 0``, ``True ==
#: 1``), ``x is None`` and ``x == None`` only where it is falsy.
_COMPARED_TRUTH = {
    (cst.Is, "True"): True, (cst.Equal, "True"): True,
    (cst.Is, "False"): False, (cst.Equal, "False"): False,
    (cst.Is, "None"): False, (cst.Equal, "None"): False,
}
_NEGATIONS = {cst.IsNot: cst.Is, cst.NotEqual: cst.Equal}


def truth_arms(test: cst.BaseExpression) -> tuple[bool | None, bool | None] | None:
    """The truth of the one attribute ``test`` tests (``obj.attr``) in each arm of an ``if``
    on it, ``(body, else-arm)``, each ``True`` (truthy), ``False`` (falsy) or ``None`` (either):
    ``x.a`` gives ``(True, False)``, ``not x.a`` ``(False, True)``; ``x.a is False`` (``==
    False``, ``is None``) ``(False, None)``, where the else-arm may hold ``None`` or a truthy
    value; ``x.a is True`` ``(True, None)``; ``is not`` and ``!=`` swap the arms, and so does
    each ``not``. So ``if not x.a:``, ``if x.a is False:`` and ``if x.a:`` are outcomes of one
    test, the truth of ``x.a``. ``None`` for any other test."""
    negated = False
    while type(test) is cst.UnaryOperation and type(test.operator) is cst.Not:
        test, negated = test.expression, not negated
    if type(test) is cst.Attribute:
        arms: tuple[bool | None, bool | None] = (True, False)
    elif type(test) is cst.Comparison and len(test.comparisons) == 1 and type(test.left) is cst.Attribute:
        comp = test.comparisons[0]
        op, right = type(comp.operator), comp.comparator
        if op in _NEGATIONS:
            op, negated = _NEGATIONS[op], not negated
        truth = _COMPARED_TRUTH.get((op, right.value)) if type(right) is cst.Name else None
        if truth is None:
            return None
        arms, test = (truth, None), test.left
    else:
        return None
    if dotted_name(test) is None:
        return None
    return (arms[1], arms[0]) if negated else arms


#: Literals an attribute compared by identity with is then equal to (``x is None``).
_SINGLETONS = ("True", "False", "None")


def learned(test: cst.BaseExpression, outcome: bool) -> list[tuple[str, str, object]]:
    """What the outcome ``outcome`` of ``test`` says of attributes (``obj.attr``, a dotted name
    of plain names) compared with literals: ``(name, kind, what)`` triples, ``kind`` ``"=="``
    (the attribute equals the literal node ``what``), ``"!="`` (it does not) or ``"truth"``
    (``what``: its truth). ``args.a == "x"`` true gives ``("args.a", "==", "x")``, false
    ``("args.a", "!=", "x")``; ``not`` swaps the outcome; ``A and B`` true gives what both give
    true (false: nothing, as either may be false), ``A or B`` false what both give false;
    ``x in ("a", "b")`` false gives ``!=`` of each (true, of one literal only, its ``==``);
    ``x is None`` (``True``, ``False``) is ``x == None``. Any other test gives nothing."""
    t = type(test)
    if t is cst.UnaryOperation and type(test.operator) is cst.Not:
        return learned(test.expression, not outcome)
    if t is cst.BooleanOperation:
        conj = type(test.operator) is cst.And
        if outcome is not conj:
            return []
        return [*learned(test.left, outcome), *learned(test.right, outcome)]
    if t is cst.Attribute:
        name = dotted_name(test)
        return [(name, "truth", outcome)] if name is not None else []
    if t is not cst.Comparison or len(test.comparisons) != 1 or type(test.left) is not cst.Attribute:
        return []
    name = dotted_name(test.left)
    if name is None:
        return []
    comp = test.comparisons[0]
    op, right = type(comp.operator), comp.comparator
    if op in (cst.Is, cst.IsNot):
        if type(right) is not cst.Name or right.value not in _SINGLETONS:
            return []
        op = cst.Equal if op is cst.Is else cst.NotEqual
    if op in (cst.Equal, cst.NotEqual):
        if not _is_literal(right):
            return []
        return [(name, "==" if (op is cst.Equal) is outcome else "!=", right)]
    if op in (cst.In, cst.NotIn) and type(right) in (cst.Tuple, cst.List, cst.Set):
        if not right.elements or any(type(el) is not cst.Element for el in right.elements):
            return []
        items = [el.value for el in right.elements]
        if not all(_is_literal(el) for el in items):
            return []
        inside = (op is cst.In) is outcome
        if inside:
            return [(name, "==", items[0])] if len(items) == 1 else []
        return [(name, "!=", el) for el in items]
    return []


#: The attribute of ``torch.nn.Module`` that ``train()`` and ``eval()`` set on the module and
#: all its submodules (https://pytorch.org/docs/stable/generated/torch.nn.Module.html).
MODE_ATTRIBUTE = "training"


def mode_subject(test: cst.BaseExpression) -> str | None:
    """The dotted name ``m.training`` (``m`` a dotted name of plain names: ``model``,
    ``self.reader``) that ``test`` is a test of, alone, in the shapes of :func:`fact_subject`
    (``m.training``, ``not m.training``, ``m.training == literal``); ``None`` for any other
    test. The mode a path knows ``m`` is in decides it (``eval()``: ``m.training`` is
    ``False``), which :class:`~loopcheck.rules.modes.ModeMachine` reads."""
    node = _tested(test)
    if type(node) is not cst.Attribute or node.attr.value != MODE_ATTRIBUTE:
        return None
    return dotted_name(node)


def owner(key: str) -> str:
    """The object symbol of an attribute symbol (``args`` of ``args.evaluate``)."""
    return key.rpartition(".")[0]


def ends(key: str, clobber: str) -> bool:
    """Whether a call whose :attr:`~loopcheck.engine.ir.Call.clobbers` holds ``clobber`` may
    change attribute ``key``: ``"*"``; an attribute name (``.evaluate``) equal to the key's or
    to an attribute it is reached through (``.args`` ends ``trainer.args.fp16``: the call may
    re-bind ``trainer.args`` to another object); an object symbol that is the key's object or
    holds it (``self`` for ``self.cfg.mode``)."""
    if clobber == ALL:
        return True
    if clobber[0] == ".":
        return clobber[1:] in key.split(".")[1:]
    obj = owner(key)
    return obj == clobber or obj.startswith(clobber + ".")


def assigned_ends(key: str, target: str, op: str) -> bool:
    """Whether an assignment to symbol ``target`` (``op``: ``"="``, ``"+="``, ``"[]="`` for a
    subscript store into ``target``) may change attribute ``key``: the key itself, its object
    or one that holds it re-bound, an attribute of the same name on another object (an alias
    of the key's object), a subscript store into the key's object."""
    if op == "[]=":
        return ends(key, target)
    if key == target or key.startswith(target + "."):
        return True
    return "." in target and key.rpartition(".")[2] == target.rpartition(".")[2]


def received(sym: str) -> str:
    """The object a call that receives ``sym`` may change the attributes of: ``sym`` itself,
    the object of an ``__dict__`` (``args.__dict__.update(...)`` changes ``args``)."""
    head, _, last = sym.rpartition(".")
    return head if last == "__dict__" and head else sym


#: Names whose use lets code write attributes it does not name (``setattr(self, k, v)``).
DYNAMIC_WRITES = frozenset({"setattr", "delattr", "vars", "exec", "eval", "__dict__", "__setattr__", "__delattr__"})


def dynamic_write(node: cst.CSTNode) -> bool:
    """Whether ``node`` itself lets code assign attributes it does not name: a use by name of
    the builtins ``setattr``, ``delattr``, ``vars``, ``exec``, ``eval``, or an object's
    ``__dict__``, ``__setattr__``, ``__delattr__``. ``model.eval`` reads a method: the name
    of an attribute is no such use unless it is one of the dunders. Callers walk the tree and
    must not descend into an attribute's ``attr`` name (:func:`expression_children`)."""
    t = type(node)
    if t is cst.Name:
        return node.value in DYNAMIC_WRITES and not node.value.startswith("__")
    if t is cst.Attribute:
        return node.attr.value in DYNAMIC_WRITES and node.attr.value.startswith("__")
    return False


def expression_children(node: cst.CSTNode) -> list:
    """``node``'s children to walk for :func:`dynamic_write`: an attribute's object only
    (its ``attr`` is a name of the attribute, not a use of a variable)."""
    if type(node) is cst.Attribute:
        return [node.value]
    return list(children(node))


def written_attributes(func: cst.CSTNode) -> tuple[set[str], bool]:
    """``(attribute names assigned or deleted, dynamic)`` by the code of ``func`` (nested
    functions included): ``x.a = ...``, ``x.a += ...``, ``del x.a`` name ``a``; ``dynamic``
    when some node of it is a :func:`dynamic_write`."""
    names: set[str] = set()
    dynamic = False
    stack = [func]
    while stack:
        n = stack.pop()
        t = type(n)
        if dynamic_write(n):
            dynamic = True
        elif t is cst.Assign:
            for target in n.targets:
                _attribute_targets(target.target, names)
        elif t is cst.AugAssign or t is cst.AnnAssign:
            _attribute_targets(n.target, names)
        elif t is cst.Del:
            _attribute_targets(n.target, names)
        stack.extend(expression_children(n))
    return names, dynamic


def _attribute_targets(target: cst.BaseExpression, out: set[str]) -> None:
    t = type(target)
    if t is cst.Attribute:
        out.add(target.attr.value)
    elif t is cst.Tuple or t is cst.List:
        for el in target.elements:
            _attribute_targets(el.value, out)
    elif t is cst.StarredElement:
        _attribute_targets(target.value, out)
