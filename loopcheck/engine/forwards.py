"""Whether the call of a project model runs its parameterised work with gradients on.

A model's ``forward`` may turn gradients off itself for some of its paths: a model with one
entry point for several uses picks the work by an argument (``model(data, mode="inference")``)
and runs the inference branch inside ``torch.no_grad()``. Such a call records no autograd
graph although the caller has gradients on. :func:`forward_graph_free` reads the ``forward``
of the model's class (a class of the project) along the paths the call can take, with the
call's literal arguments (and the parameters' literal defaults) deciding the tests on them,
as the builder decides them for an inlined function (``builder.decide_test``).

The **parameterised work** of a path is what may use the model's parameters:

* a call of an attribute of ``self`` that is not a method of the class (``self.netG(x)``, a
  submodule), unless its ``__init__`` assigns it a callable whose library entry returns a new
  tensor (``self.FloatTensor = torch.cuda.FloatTensor if gpu else torch.FloatTensor``);
  ``super().forward(x)``; a call given ``self`` as an argument;
* a method of the class (``self.generate(x)``), when its body holds such work outside a
  ``with`` block that turns gradients off (read through at most :data:`MAX_DEPTH` methods;
  deeper, it is taken to be work);
* a read of ``self.x`` that ``__init__`` assigns a module or an ``nn.Parameter``
  construction (``x @ self.weight``).

A path is graph-free when it runs parameterised work and all of it with gradients off (a
``with`` item whose entry says ``grad = "disabled"``, or a decorator of ``forward`` that does).
A path that runs no such work (``if x is None: return None``) says nothing about the calls
that take the model's other paths, and paths that end in ``raise`` return nothing: neither is
counted. Anything not read here (a class of a
library, a ``forward`` not found) answers ``False``: nothing is established.
"""

from __future__ import annotations

import libcst as cst

from loopcheck.engine.builder import NO_VALUE, ClassRef, decide_test, literal_value, find_method
from loopcheck.engine.classes import is_module_class
from loopcheck.engine.knowledge import knowledge
from loopcheck.engine.names import dotted_name
from loopcheck.engine.summaries import grad_of
from loopcheck.engine.values import class_of_name, classes_of, init_assignments
from loopcheck.engine.walk import walk

MAX_DEPTH = 4
#: How a path ends: it falls through the statements, returns, or raises.
FALL, RETURN, RAISE = "fall", "return", "raise"
PARAMETER_CLASSES = ("torch.nn.Parameter", "torch.nn.parameter.Parameter")


def forward_graph_free(unit, fwd) -> bool:
    """Whether a forward event ``fwd`` (its raw call: ``model(x, mode="inference")``) is not
    established to record a graph: the model is built from classes
    (:func:`~loopcheck.engine.values.classes_of`) and every class is a class of the project whose ``forward``, on some path the
    call can take that returns, runs all its parameterised work with gradients off. A path the
    call's literal arguments rule out is not taken; a test they do not decide takes both arms."""
    forwards = _forwards(unit, fwd)
    if forwards is None:
        return False
    for cls, owner, func in forwards:
        reader = _Reader(owner, cls, _constants(func, fwd.raw.node))
        grad_off = any(grad_of(d.decorator, owner.module.imports, {}) == "disabled" for d in func.decorators)
        ends = reader.block(func.body, {(FALL, False, False)}, grad_off)
        if not any(end != RAISE and not graph and quiet for end, graph, quiet in ends):
            return False
    return True


def forward_returns_no_graph(unit, fwd, training: bool | None) -> bool:
    """Whether the value a forward event ``fwd`` returns is established to carry no autograd
    graph: the model is built from classes (:func:`~loopcheck.engine.values.classes_of`), every
    one a class of the project whose ``forward`` reaches at least one ``return`` on the paths
    the call can take, and each such ``return`` gives a value made with gradients off
    (:func:`_made_without_graph`). The call's literal arguments decide tests as for
    :func:`forward_graph_free`, and ``training`` (the model's mode at the call when it is known,
    else ``None``) decides tests on ``self.training``: an eval-mode call of a detector whose
    ``forward`` returns the training loss when ``self.training`` and, else, what ``predict()``
    computes under ``torch.no_grad()``, returns no graph, though its own work recorded one (freed
    when the call returns). A ``forward`` that turns gradients off by a decorator returns none."""
    forwards = _forwards(unit, fwd)
    if forwards is None:
        return False
    for cls, owner, func in forwards:
        if any(grad_of(d.decorator, owner.module.imports, {}) == "disabled" for d in func.decorators):
            continue
        if not any(isinstance(n, cst.With) for n in walk(func.body, prune=(cst.FunctionDef, cst.ClassDef, cst.Lambda))):
            return False  # (nothing in it turns gradients off: read no further)
        constants = _constants(func, fwd.raw.node, training)
        reader = _Reader(owner, cls, constants)
        reader.me = _receiver(func)
        reader.block(func.body, {(FALL, False, False)}, False)
        if not reader.returns or not all(_made_without_graph(reader, func, r.value, off) for r, off in reader.returns):
            return False
    return True


def forward_computes_gradients(unit, fwd, training: bool | None = None) -> bool:
    """Whether the ``forward`` of the model of forward event ``fwd`` computes gradients itself,
    so that the call needs gradients on: the model is built from classes
    (:func:`~loopcheck.engine.values.classes_of`), every one a class of the project with a
    ``forward``, and the ``forward`` of one of them, or a method of its class it calls (read to
    :data:`MAX_DEPTH`), makes a call whose library entry has a ``backward`` or ``grad_query``
    effect (:func:`_gradient_call`): ``torch.autograd.grad``, a tensor's ``backward()``, the
    ``step`` of a differentiable optimizer (higher's ``DifferentiableOptimizer.step``, which
    takes the gradients of the loss it is given with ``torch.autograd.grad``). An energy model
    that optimises its input by unrolled gradient steps inside ``forward`` runs backward through
    the graph its own forward records: under ``torch.no_grad()`` that graph does not exist.

    Only the arms of ``forward``'s ``if`` statements the call can take are read: the call's
    literal arguments (and the parameters' literal defaults) decide tests on its parameters, as
    for :func:`forward_graph_free`, and ``training`` (the model's mode at the call when it is
    known, else ``None``) decides tests on ``self.training``: a gradient penalty computed
    ``if self.training:`` does not run in eval mode."""
    forwards = _forwards(unit, fwd)
    if forwards is None:
        return False
    for cls, owner, func in forwards:
        constants = _constants(func, fwd.raw.node, training)
        if _computes_gradients(owner, cls, func, constants, training, 0):
            return True
    return False


#: The events of a library call that run backward through an autograd graph.
GRADIENT_EVENTS = frozenset({"backward", "grad_query"})


def _computes_gradients(
    owner: ClassRef, cls: ClassRef, func: cst.FunctionDef, constants: dict, training: bool | None, depth: int,
) -> bool:
    """Whether method ``func`` of ``cls`` (defined in ``owner``) makes a call that computes
    gradients on the arms ``constants`` leave it, itself or in a method of the class it calls
    (``self.refine(x)``, read with only ``self.training`` known)."""
    me = _receiver(func)
    imports = owner.module.imports
    types = _local_types(func, imports)
    for n in _calls_taken(func.body, constants):
        if _gradient_call(n, me, imports, types):
            return True
        d = dotted_name(n.func)
        if d is not None and d.count(".") == 1 and d.startswith(me + ".") and depth < MAX_DEPTH:
            found = find_method(cls, d.partition(".")[2])
            if found is None:
                continue
            known = {f"{_receiver(found[1])}.training": training} if training is not None else {}
            if _computes_gradients(found[0], cls, found[1], known, training, depth + 1):
                return True
    return False


def _calls_taken(node: cst.CSTNode, constants: dict):
    """The calls in ``node`` (not in nested functions, classes or lambdas) on the arms of its
    ``if`` statements that ``constants`` do not rule out (:func:`~loopcheck.engine.builder.decide_test`)."""
    if isinstance(node, (cst.FunctionDef, cst.ClassDef, cst.Lambda)):
        return
    if isinstance(node, cst.If):
        decided = decide_test(node.test, constants) if constants else None
        if decided is None:
            yield from _calls_taken(node.test, constants)
        if decided is not False:
            yield from _calls_taken(node.body, constants)
        if decided is not True and node.orelse is not None:
            yield from _calls_taken(node.orelse, constants)
        return
    if isinstance(node, cst.Call):
        yield node
    for child in node.children:
        yield from _calls_taken(child, constants)


def _gradient_call(call: cst.Call, me: str, imports, types: dict[str, str]) -> bool:
    """Whether ``call`` computes gradients by its library entry: a function or class the module
    imports (``torch.autograd.grad(e, y)``), a method of a local whose library class is known
    (``opt.step(e)`` with ``opt = higher.get_diff_optim(...)``), or a tensor method of any other
    receiver that is not the module itself or one of its attributes (``e.sum().backward()``,
    ``self.critic(z).sum().backward()``; not ``self.solver.backward(x)``)."""
    kb = knowledge()
    d = dotted_name(call.func)
    if d is not None and d.split(".")[0] in imports.aliases:
        summary = kb.callable(imports.qualify(d))
    elif isinstance(call.func, cst.Attribute):
        recv = call.func.value
        root = recv
        while isinstance(root, cst.Attribute):
            root = root.value
        if isinstance(root, cst.Name) and root.value == me:
            return False  # self.solver.backward(...): an attribute of the module, not a computed tensor
        if isinstance(recv, cst.Name) and recv.value in types:
            summary = kb.method(types[recv.value], call.func.attr.value)
        else:
            summary = kb.method("torch.Tensor", call.func.attr.value)
    else:
        return False
    return summary is not None and any(e.event in GRADIENT_EVENTS for e in summary.effects)


def _local_types(func: cst.FunctionDef, imports) -> dict[str, str]:
    """The library class of each local of ``func`` bound to the result of an imported library
    call whose entry gives it (``returns.type``, or the element's of ``returns.items`` for a
    tuple target): by an assignment or a ``with ... as``."""
    kb = knowledge()
    out: dict[str, str] = {}

    def bind(target: cst.BaseExpression, value: cst.BaseExpression) -> None:
        if not isinstance(value, cst.Call):
            return
        d = dotted_name(value.func)
        if d is None or d.split(".")[0] not in imports.aliases:
            return
        summary = kb.callable(imports.qualify(d))
        ret = summary.returns if summary is not None else None
        if ret is None:
            return
        if isinstance(target, (cst.Tuple, cst.List)) and ret.items:
            for el, item in zip(target.elements, ret.items):
                if isinstance(el.value, cst.Name) and item is not None and item.type:
                    out[el.value.value] = item.type
        elif isinstance(target, cst.Name) and ret.type:
            out[target.value] = ret.type

    for n in walk(func.body, prune=(cst.Lambda, cst.FunctionDef, cst.ClassDef)):
        if isinstance(n, cst.Assign):
            for t in n.targets:
                bind(t.target, n.value)
        elif isinstance(n, cst.WithItem) and n.asname is not None:
            bind(n.asname.name, n.item)
    return out


def _forwards(unit, fwd) -> list[tuple[ClassRef, ClassRef, cst.FunctionDef]] | None:
    """``(class, defining class, forward)`` for each class the model of forward event ``fwd``
    is built from (:func:`~loopcheck.engine.values.classes_of`); ``None`` when one is not a
    class of the project with a ``forward``, or the call is not a plain call."""
    classes = classes_of(unit, fwd.subject) if fwd.subject is not None else []
    if not classes or not isinstance(fwd.raw.node, cst.Call):
        return None
    out = []
    for cls in classes:
        found = find_method(cls, "forward") if isinstance(cls, ClassRef) else None
        if found is None:
            return None
        out.append((cls, *found))
    return out


def _made_without_graph(
    reader: "_Reader", func: cst.FunctionDef, value: cst.BaseExpression | None, off: bool, depth: int = 0,
    all_off: bool = False,
) -> bool:
    """Whether ``return value`` (``off``: in a block with gradients off; ``all_off``: ``func``
    runs whole with them off, a method called there) gives a value with no graph: ``None`` or
    a literal; a tuple, list or dict of such values; a name that ``func`` assigns only with
    gradients off, each time a computed value (:func:`_computed`), and no method call or item
    store changes afterwards (``boxes.append(preds)``); a computed value returned with gradients
    off. A parameter, another name or an attribute may hold a tensor made with gradients on."""
    if value is None or literal_value(value) is not NO_VALUE:
        return True
    if isinstance(value, (cst.Tuple, cst.List)):
        return all(
            not isinstance(e, cst.StarredElement) and _made_without_graph(reader, func, e.value, off, depth, all_off)
            for e in value.elements
        )
    if isinstance(value, cst.Dict):
        return all(
            isinstance(e, cst.DictElement) and _made_without_graph(reader, func, e.value, off, depth, all_off)
            for e in value.elements
        )
    if isinstance(value, cst.Name):
        assigned = _assignments(func, value.value)
        return bool(assigned) and not _changed(func, value.value) and all(
            _computed(reader, v, depth) and (all_off or reader._inside_grad_off(func, stmt)) for stmt, v in assigned
        )
    return (off or all_off) and _computed(reader, value, depth)


def _computed(reader: "_Reader", value: cst.BaseExpression | None, depth: int) -> bool:
    """A new value, when computed with gradients off: an operation; a call of a library
    function or a tensor method; a call of a method of the class whose every ``return`` gives
    such a value (read to :data:`MAX_DEPTH`; one that returns its argument does not); a
    comprehension whose element is one. Not a name, an attribute or an item read."""
    if isinstance(value, (cst.BinaryOperation, cst.UnaryOperation)):
        return True
    if isinstance(value, (cst.ListComp, cst.SetComp, cst.GeneratorExp)):
        return _computed(reader, value.elt, depth)
    if isinstance(value, cst.DictComp):
        return _computed(reader, value.value, depth)
    if not isinstance(value, cst.Call):
        return False
    d = dotted_name(value.func)
    if d is None or not d.startswith(reader.me + ".") or d.count(".") != 1:
        return True  # a library function, a tensor method, a submodule's forward
    found = find_method(reader.cls, d.partition(".")[2])
    if found is None:
        return True  # a submodule (self.decoder(x)) under no_grad
    if depth >= MAX_DEPTH:
        return False
    owner, method = found
    inner = _Reader(owner, reader.cls, {})
    inner.me = _receiver(method)
    returns = [n for n in walk(method.body, prune=(cst.FunctionDef, cst.ClassDef, cst.Lambda)) if isinstance(n, cst.Return)]
    return bool(returns) and all(
        _made_without_graph(inner, method, r.value, True, depth + 1, all_off=True) for r in returns
    )


def _changed(func: cst.FunctionDef, name: str) -> bool:
    """Whether ``func`` calls a method of ``name`` or stores into an item or attribute of it
    (``boxes.append(x)``, ``boxes[0] = x``): what it holds may change after its assignment."""
    for n in walk(func.body, prune=(cst.FunctionDef, cst.ClassDef, cst.Lambda)):
        if isinstance(n, cst.Call) and isinstance(n.func, cst.Attribute) and isinstance(n.func.value, cst.Name) \
                and n.func.value.value == name:
            return True
        if isinstance(n, (cst.Assign, cst.AugAssign)):
            targets = [t.target for t in n.targets] if isinstance(n, cst.Assign) else [n.target]
            for t in targets:
                if isinstance(t, (cst.Subscript, cst.Attribute)) and isinstance(t.value, cst.Name) and t.value.value == name:
                    return True
    return False


def _assignments(func: cst.FunctionDef, name: str) -> list[tuple[cst.CSTNode, cst.BaseExpression | None]]:
    """``(statement, value)`` for each binding of ``name`` in ``func``'s body (``value`` is
    ``None`` for a binding with no single value: a loop target, an augmented assignment, a
    ``with ... as``, a parameter)."""
    if any(p.name.value == name for p in (*func.params.params, *func.params.kwonly_params)):
        return [(func, None)]
    out: list = []
    for n in walk(func.body, prune=(cst.FunctionDef, cst.ClassDef, cst.Lambda)):
        if isinstance(n, cst.Assign):
            for t in n.targets:
                if isinstance(t.target, cst.Name) and t.target.value == name:
                    out.append((n, n.value))
                elif any(isinstance(x, cst.Name) and x.value == name for x in walk(t.target)):
                    out.append((n, None))  # a, res = ...: which element is not read here
        elif isinstance(n, (cst.AugAssign, cst.AnnAssign)) and isinstance(n.target, cst.Name) and n.target.value == name:
            out.append((n, n.value if isinstance(n, cst.AnnAssign) else None))
        elif isinstance(n, (cst.For, cst.CompFor, cst.AsName, cst.NamedExpr)):
            target = n.target if not isinstance(n, cst.AsName) else n.name
            if any(isinstance(x, cst.Name) and x.value == name for x in walk(target)):
                out.append((n, None))
    return out


def _receiver(func: cst.FunctionDef) -> str:
    """The name a method calls its instance by (its first parameter; ``self`` when it has none)."""
    params = func.params.params
    return params[0].name.value if params else "self"


def _constants(func: cst.FunctionDef, call: cst.Call, training: bool | None = None) -> dict:
    """The values the call gives the parameters of ``forward`` (``self`` left out) as literals,
    and the literal defaults of the parameters it does not give. A ``*args`` or ``**kwargs`` at
    the call may give any parameter: then only its literal keywords count. ``training``, when
    known (the model's mode at the call), is the value of ``self.training``."""
    params = list(func.params.params)[1:]
    kwonly = list(func.params.kwonly_params)
    starred = any(a.star for a in call.args)
    out: dict = {}
    given: set = set()
    positional = [a for a in call.args if a.keyword is None and not a.star]
    if not starred:
        for p, a in zip(params, positional):
            given.add(p.name.value)
            value = literal_value(a.value)
            if value is not NO_VALUE:
                out[p.name.value] = value
    for a in call.args:
        if a.keyword is not None:
            given.add(a.keyword.value)
            value = literal_value(a.value)
            if value is not NO_VALUE:
                out[a.keyword.value] = value
    if not starred:
        for p in params + kwonly:
            if p.name.value not in given and p.default is not None:
                value = literal_value(p.default)
                if value is not NO_VALUE:
                    out[p.name.value] = value
    if training is not None:
        out[f"{_receiver(func)}.training"] = training
    return out


class _Reader:
    """Reads a method of class ``cls`` (defined in ``owner``) path by path; ``constants``: the
    parameters' values that decide its tests."""

    def __init__(self, owner: ClassRef, cls: ClassRef, constants: dict) -> None:
        self.owner = owner
        self.cls = cls
        self.constants = constants
        self.index = owner.module
        self.me = "self"
        self.returns: list[tuple[cst.Return, bool]] = []  # the returns a path reaches, gradients off there

    # -- paths ---------------------------------------------------------------------------
    def block(self, body: cst.BaseSuite, states: set, off: bool) -> set:
        """The ends of the paths through ``body`` entered in ``states`` (``(end, graph,
        quiet)``: ``graph``, the path ran parameterised work with gradients on; ``quiet``, it ran
        some with gradients off); ``off``: the gradients are off in the block."""
        stmts = body.body if isinstance(body, cst.IndentedBlock) else [cst.SimpleStatementLine(body.body)]
        return self.stmts(stmts, states, off)

    def stmts(self, stmts, states: set, off: bool) -> set:
        ends: set = set()
        live = {s for s in states if s[0] == FALL}
        ends |= states - live
        for stmt in stmts:
            if not live:
                break
            out = self.stmt(stmt, live, off)
            live = {s for s in out if s[0] == FALL}
            ends |= out - live
        return ends | live

    def stmt(self, stmt: cst.CSTNode, states: set, off: bool) -> set:
        if isinstance(stmt, cst.SimpleStatementLine):
            for small in stmt.body:
                graph, quiet = self.effect(small, off)
                if isinstance(small, cst.Return):
                    self.returns.append((small, off))
                end = RETURN if isinstance(small, cst.Return) else RAISE if isinstance(small, cst.Raise) else (
                    "jump" if isinstance(small, (cst.Break, cst.Continue)) else FALL)
                states = {(end if e == FALL else e, g or graph, q or quiet) for e, g, q in states}
                if end != FALL:
                    break
            return states
        if isinstance(stmt, cst.If):
            return self.if_stmt(stmt, states, off)
        if isinstance(stmt, cst.With):
            states = self.after(states, *(item.item for item in stmt.items), off=off)
            modes = {grad_of(item.item, self.index.imports, {}) for item in stmt.items}
            inner = True if "disabled" in modes else False if "enabled" in modes else off
            return self.block(stmt.body, states, inner)
        if isinstance(stmt, (cst.For, cst.While)):
            head = stmt.iter if isinstance(stmt, cst.For) else stmt.test
            states = self.after(states, head, off=off)
            body = self.block(stmt.body, states, off)
            # a loop's body may run or not; a break or continue leaves it by its end
            after = states | {(FALL if e in (FALL, "jump") else e, g, q) for e, g, q in body}
            if stmt.orelse is not None:
                after = self.block(stmt.orelse.body, after, off)
            return after
        if isinstance(stmt, cst.Try) or isinstance(stmt, getattr(cst, "TryStar", ())):
            body = self.block(stmt.body, states, off)
            # a handler runs after any part of the body: with the work of all of it, or none
            entered = states | {(FALL, g, q) for _, g, q in body}
            ends = set(body)
            for h in stmt.handlers:
                ends |= self.block(h.body, entered, off)
            if stmt.orelse is not None:
                falls = {s for s in ends if s[0] == FALL}
                ends = (ends - falls) | self.block(stmt.orelse.body, falls, off)
            if stmt.finalbody is not None:
                final = self.block(stmt.finalbody.body, {(FALL, False, False)}, off)
                graph, quiet = any(g for _, g, _ in final), any(q for _, _, q in final)
                ends = {(e, g or graph, q or quiet) for e, g, q in ends}
            return ends
        if isinstance(stmt, (cst.FunctionDef, cst.ClassDef)):
            return states  # a definition runs nothing
        # a match or another statement: every part of it may run, in one path
        return self.after(states, stmt, off=off)

    def if_stmt(self, stmt: cst.If, states: set, off: bool) -> set:
        decided = decide_test(stmt.test, self.constants) if self.constants else None
        orelse = stmt.orelse
        if decided is None:
            states = self.after(states, stmt.test, off=off)
        ends: set = set()
        if decided is not False:
            ends |= self.block(stmt.body, states, off)
        if decided is not True:
            if isinstance(orelse, cst.If):
                ends |= self.if_stmt(orelse, states, off)
            elif isinstance(orelse, cst.Else):
                ends |= self.block(orelse.body, states, off)
            else:
                ends |= states
        return ends

    # -- parameterised work -------------------------------------------------------------
    def effect(self, node: cst.CSTNode, off: bool) -> tuple[bool, bool]:
        """``(graph, quiet)`` of ``node``: it runs parameterised work with gradients on; it runs
        some with gradients off (``off``: the block's gradients are off)."""
        graph, quiet = self.works(node)
        return (False, graph or quiet) if off else (graph, quiet)

    def after(self, states: set, *nodes: cst.CSTNode, off: bool) -> set:
        """``states`` after the parts ``nodes`` of one statement ran."""
        graph = quiet = False
        for node in nodes:
            g, q = self.effect(node, off)
            graph, quiet = graph or g, quiet or q
        return {(e, g or graph, q or quiet) for e, g, q in states}

    def works(self, node: cst.CSTNode, depth: int = 0) -> tuple[bool, bool]:
        """``(graph, quiet)`` of ``node`` run with gradients on: it runs parameterised work
        with them on; it runs some with them off (in a ``with`` block inside ``node`` that turns
        them off, or in a method that does)."""
        graph = quiet = False
        for n in walk(node, prune=(cst.Lambda, cst.FunctionDef, cst.ClassDef)):
            if isinstance(n, cst.Call):
                g, q = self._call_works(n, depth)
            elif isinstance(n, cst.Attribute) and dotted_name(n) == f"{self.me}.{getattr(n.attr, 'value', '')}":
                g, q = self._holds_parameters(n.attr.value), False
            else:
                continue
            if (g or q) and self._inside_grad_off(node, n):
                g, q = False, True
            graph, quiet = graph or g, quiet or q
            if graph:
                break
        return graph, quiet

    def _inside_grad_off(self, root: cst.CSTNode, target: cst.CSTNode) -> bool:
        """Whether ``target`` sits in a ``with`` block inside ``root`` that turns gradients off."""
        for n in walk(root, prune=(cst.Lambda, cst.FunctionDef, cst.ClassDef)):
            if isinstance(n, cst.With) and n is not root:
                modes = {grad_of(item.item, self.index.imports, {}) for item in n.items}
                if "disabled" in modes and any(x is target for x in walk(n.body)):
                    return True
        return False

    def _call_works(self, call: cst.Call, depth: int) -> tuple[bool, bool]:
        """``(graph, quiet)`` of the call itself, run with gradients on."""
        func = call.func
        if isinstance(func, cst.Attribute) and isinstance(func.value, cst.Call) and dotted_name(func.value.func) == "super":
            return True, False  # super().forward(x): the base class's work
        if any(isinstance(a.value, cst.Name) and a.value.value == self.me for a in call.args):
            return True, False  # helper(self, x): whatever it does with the model
        d = dotted_name(func)
        if d is None or not d.startswith(self.me + "."):
            return False, False
        attr = d.split(".")[1]
        if d.count(".") == 1:
            found = find_method(self.cls, attr)
            if found is not None:
                return self._method_works(found, depth + 1)
        if d.count(".") == 1 and self._tensor_type(attr):
            return False, False
        return True, False  # a submodule, or an attribute the engine cannot tell from one

    def _method_works(self, found: tuple, depth: int) -> tuple[bool, bool]:
        """``(graph, quiet)`` of a call of the class's method ``found`` (``(owner, def)``)."""
        owner, method = found
        if depth > MAX_DEPTH:
            return True, False
        inner = _Reader(owner, self.cls, {})
        inner.me = _receiver(method)
        graph, quiet = inner.works(method.body, depth)
        if any(grad_of(d.decorator, owner.module.imports, {}) == "disabled" for d in method.decorators):
            return False, graph or quiet
        return graph, quiet

    def _tensor_type(self, attr: str) -> bool:
        """``self.attr`` is assigned in ``__init__`` only a callable whose library entry returns a
        new tensor (``torch.FloatTensor``, or one of two of them by a condition)."""
        assigned = init_assignments(self.cls).get(attr)
        if assigned is None:
            return False
        value, index = assigned
        arms = [value.body, value.orelse] if isinstance(value, cst.IfExp) else [value]
        for arm in arms:
            d = dotted_name(arm)
            q = index.imports.qualify(d) if d else None
            summary = knowledge().callable(q) if q and (q != d or "." in d) else None
            if summary is None or summary.returns is None or summary.returns.value != "tensor":
                return False
        return True

    def _holds_parameters(self, attr: str) -> bool:
        """``self.attr`` is assigned in ``__init__`` a module or an ``nn.Parameter``."""
        assigned = init_assignments(self.cls).get(attr)
        if assigned is None or not isinstance(assigned[0], cst.Call):
            return False
        value, index = assigned
        cls = class_of_name(index, dotted_name(value.func))
        return cls is not None and (cls in PARAMETER_CLASSES or is_module_class(cls))
