"""Roles: what each symbol of a unit is — model, optimizer, LR scheduler, GradScaler, loss.

Roles are inferred flow-insensitively from all raw events of a file, in this order:

1. **construction**: a call whose summary returns a role (``torch.optim.Adam(...)`` builds an
   optimizer; the library summaries come from :mod:`loopcheck.engine.knowledge`), a project
   class deriving from ``nn.Module`` or from a library class with a role;
2. **usage**: ``x.zero_grad()`` and ``x.step()`` make an optimizer, ``x.train()``/``x.eval()``
   a model, ``x.scale()`` with ``x.update()`` a GradScaler, and names as a last resort for
   ``.step()`` receivers (``lr_scheduler``); an object known by use but assigned from one
   call was built by that call (a factory);
3. **aliases**: calls whose summary returns their arguments (``DDP(model)``,
   ``accelerator.prepare(model, optimizer)``, ``model.to(device)``) and plain re-bindings
   (``self.model = model``) name the same object;
4. **losses**: what ``backward()`` runs on, the output of a criterion or a loss function, and
   what flows into those through arithmetic.

A symbol whose role stays unclear gets none, and rules ignore it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import NamedTuple

import libcst as cst

from loopcheck.engine.builder import ModuleIndex, find_method
from loopcheck.engine.calls import arg_at, receiver_of, same_sym, summary_of
from loopcheck.engine.graphs import graph_stores
from loopcheck.engine.interrupts import NODES, checkpoint
from loopcheck.engine.ir import Arg, Assign, Call, RawEvent, Sources
from loopcheck.engine.knowledge import Returns, Summary, knowledge
from loopcheck.engine.walk import calls_in_order, dotted_chains, names_in

# -- naming heuristics (last resort, when construction and usage say nothing) -----------------

OPTIMIZER_NAME = re.compile(r"^(optimizer|optimiser|optim|opt)(_\w+)?$|_(optimizer|optimiser|opt|optim)$|^optimizer\w*$")
SCHEDULER_NAME = re.compile(r"sched")
SCALER_NAME = re.compile(r"scaler")
LOADER_NAME = re.compile(r"(loader|_dl$|^dl$|dataloader|batches)", re.I)
ACCELERATOR_NAME = re.compile(r"(accelerator|fabric)", re.I)
LOSS_NAME = re.compile(r"(loss|cost|objective|nll|elbo)", re.I)
#: Method names that return the object they are called on or wrap it, for receivers of unknown
#: type (an accelerator passed in as a parameter, ``model.module``).
WRAPPERS = re.compile(
    r"(^|\.)(DistributedDataParallel|DataParallel|DDP|compile|prepare|prepare_model|setup|"
    r"setup_module|initialize|convert_sync_batchnorm|to|cuda|half|float|double|bfloat16|"
    r"train|eval|module)$"
)
#: The library class a role's objects are taken to be when nothing says more.
ROLE_TYPES = {
    "optimizer": "torch.optim.Optimizer",
    "scheduler": "torch.optim.lr_scheduler.LRScheduler",
    "scaler": "torch.amp.GradScaler",
    "model": "torch.nn.Module",
    "loader": "torch.utils.data.DataLoader",
    "accelerator": "accelerate.Accelerator",
}


MAX_ALIAS_PASSES = 8

#: What a value computed without a graph is computed from, for the provenance of losses.
_NO_SOURCES = Sources(frozenset(), ())


def _same_nodes(a: tuple, b: tuple) -> bool:
    """Whether two tuples hold the same syntax nodes (by identity)."""
    return len(a) == len(b) and all(x is y for x, y in zip(a, b))


def _rebinds(d: RawEvent) -> bool:
    """Whether definition ``d`` binds its target to a new value (``x = ...``, ``x = f(...)``),
    not a change of the value it held (``x += y``, ``x[k] = v``), which keeps what it held."""
    return isinstance(d, Call) or d.op == "="


def _dominates(d: RawEvent, at: RawEvent, spans: "_Spans | None" = None) -> bool:
    """Whether every path to ``at`` from the start of its innermost loop's iteration (or of its
    function) passes ``d``, ``d`` coming first in the code: the same loops and inlined calls,
    and every ``if`` around ``d`` (within its loop) around ``at`` too, ``at`` in the same arm of
    it (the body, the ``else``, an ``elif``, a ``case``: ``spans`` tells which arm holds a node;
    without it, or when a node is not found, ``d`` dominates nothing under an ``if``)."""
    dc, ac = d.ctx, at.ctx
    if not (len(dc.loops) == len(ac.loops) and all(x is y for x, y in zip(dc.loops, ac.loops))
            and _same_nodes(dc.calls, ac.calls) and _same_nodes(dc.conds, ac.conds[:len(dc.conds)])):
        return False
    if not dc.conds:
        return True
    if spans is None:
        return False
    for cond in dc.conds:
        arm = spans.arm(cond, d.node)
        if arm is None or arm != spans.arm(cond, at.node):
            return False
    return True


#: The forms that bind a name besides ``=``: their targets (``Name`` nodes, or expressions
#: holding them) by node type.
_BINDING_TARGETS = {
    cst.AnnAssign: lambda n: (n.target,),
    cst.AugAssign: lambda n: (n.target,),
    cst.For: lambda n: (n.target,),
    cst.CompFor: lambda n: (n.target,),
    cst.NamedExpr: lambda n: (n.target,),
    cst.WithItem: lambda n: (n.asname.name,) if n.asname is not None else (),
    cst.ExceptHandler: lambda n: (n.name.name,) if n.name is not None else (),
    cst.Del: lambda n: (n.target,),
    cst.FunctionDef: lambda n: (n.name,),
    cst.ClassDef: lambda n: (n.name,),
    cst.MatchAs: lambda n: (n.name,) if n.name is not None else (),
    cst.MatchStar: lambda n: (n.name,) if n.name is not None else (),
    cst.MatchMapping: lambda n: (n.rest,) if n.rest is not None else (),
    cst.Global: lambda n: tuple(item.name for item in n.names),
    cst.Nonlocal: lambda n: tuple(item.name for item in n.names),
}
if hasattr(cst, "ExceptStarHandler"):
    _BINDING_TARGETS[cst.ExceptStarHandler] = lambda n: (n.name.name,) if n.name is not None else ()


def _bound_names(node: cst.CSTNode) -> tuple[str, ...]:
    """The names ``node`` binds or changes in place, when it is a binding form (an assignment
    of any kind, a ``for`` or comprehension target, a walrus, ``with ... as``, ``except ... as``,
    a ``match`` capture, an import, ``del``, a ``def`` or ``class``, ``global``): the ``Name``s of
    its targets, through tuples, lists, stars and the object of a subscript (``x[k] = v``
    changes what ``x`` holds); else ``()``."""
    if isinstance(node, cst.Assign):
        targets: tuple = tuple(t.target for t in node.targets)
    elif isinstance(node, (cst.Import, cst.ImportFrom)):
        if isinstance(node.names, cst.ImportStar):
            return ("*",)
        out = []
        for alias in node.names:
            name = alias.asname.name if alias.asname is not None else alias.name
            while isinstance(name, cst.Attribute) and alias.asname is None:
                name = name.value
            if isinstance(name, cst.Name):
                out.append(name.value)
        return tuple(out)
    else:
        get = _BINDING_TARGETS.get(type(node))
        if get is None:
            return ()
        targets = tuple(t for t in get(node) if t is not None)
    names: list[str] = []
    stack = list(targets)
    while stack:
        t = stack.pop()
        if isinstance(t, cst.Name):
            names.append(t.value)
        elif isinstance(t, (cst.Tuple, cst.List)):
            stack.extend(e.value for e in t.elements)
        elif isinstance(t, (cst.StarredElement, cst.Element)):
            stack.append(t.value)
        elif isinstance(t, cst.Subscript):
            stack.append(t.value)
        elif isinstance(t, cst.Del):
            stack.append(t.target)
    return tuple(names)


#: The nodes whose names are their own (a comprehension's targets are not its function's).
_SCOPES = (cst.FunctionDef, cst.Lambda, cst.ListComp, cst.SetComp, cst.DictComp, cst.GeneratorExp)


class _Spans:
    """Where the nodes of one tree lie in the order of the code: each node's pre-order index and
    the last index of its subtree, and the sites that bind each name (:func:`_bound_names`),
    computed on the first question (one walk of the tree)."""

    def __init__(self, tree: cst.CSTNode | None) -> None:
        self.tree = tree
        self._span: dict[int, tuple[int, int]] | None = None
        self.sites: dict[str, list[cst.CSTNode]] = {}
        self.scopes: list[cst.CSTNode] = []  # the functions, lambdas and comprehensions, in the order of the code

    def span(self, node: cst.CSTNode) -> tuple[int, int] | None:
        """``(first, last)`` pre-order indices of ``node``'s subtree; ``None`` when ``node`` is
        not in the tree (a node of another module, one the builder made)."""
        if self._span is None:
            self._walk()
        return self._span.get(id(node))  # type: ignore[union-attr]

    def _walk(self) -> None:
        """Number the tree's nodes and find its scopes and binding sites; the tables are kept
        only once the walk is complete (a cancellation point every
        :data:`~loopcheck.engine.interrupts.NODES` nodes may end it)."""
        span: dict[int, tuple[int, int]] = {}
        sites: dict[str, list[cst.CSTNode]] = {}
        scopes: list[cst.CSTNode] = []
        counter = 0
        stack: list[tuple[cst.CSTNode, bool]] = [(self.tree, False)] if self.tree is not None else []
        first: dict[int, int] = {}
        while stack:
            node, closing = stack.pop()
            if closing:
                span[id(node)] = (first[id(node)], counter - 1)
                continue
            if not counter % NODES:
                checkpoint()
            first[id(node)] = counter
            counter += 1
            if isinstance(node, _SCOPES):
                scopes.append(node)
            for name in _bound_names(node):
                sites.setdefault(name, []).append(node)
            stack.append((node, True))
            stack.extend((child, False) for child in reversed(node.children))
        self._span, self.sites, self.scopes = span, sites, scopes

    def scope(self, node: cst.CSTNode, binding: bool = False) -> cst.CSTNode | None:
        """The innermost function, lambda or comprehension around ``node``; ``None`` at the
        module's level (or when ``node`` is not in the tree). A ``def`` statement's own name is
        in the scope around it; a walrus (``binding`` site) binds in the function around the
        comprehensions it is in."""
        found = None
        for f in self.scopes:
            if f is not node and self.within(node, f) and not (
                    binding and isinstance(node, cst.NamedExpr) and not isinstance(f, (cst.FunctionDef, cst.Lambda))):
                found = f  # (scopes come outermost first)
        return found

    def sites_in_scope(self, name: str, node: cst.CSTNode) -> list[cst.CSTNode]:
        """The sites binding ``name`` in the scope of ``node`` (:meth:`scope`)."""
        if self.span(node) is None:
            return []
        scope = self.scope(node)
        return [site for site in self.sites.get(name, []) + self.sites.get("*", []) if self.scope(site, True) is scope]

    def within(self, inner: cst.CSTNode, outer: cst.CSTNode) -> bool:
        """Whether ``inner`` is ``outer`` or lies inside it."""
        a, b = self.span(inner), self.span(outer)
        return a is not None and b is not None and b[0] <= a[0] <= b[1]

    def arm(self, cond: cst.CSTNode, node: cst.CSTNode) -> int | None:
        """The index among ``cond``'s children of the one holding ``node`` (for an ``if``: its
        test, its body or its ``else``/``elif``; for a ``match``: its subject or one case);
        ``None`` when ``node`` is not inside ``cond``."""
        for i, child in enumerate(cond.children):
            if self.within(node, child):
                return i
        return None

    def binds_between(self, name: str, start: cst.CSTNode, end: cst.CSTNode, known: list[cst.CSTNode]) -> bool:
        """Whether a site binding ``name`` (any form, :func:`_bound_names`) comes after the
        start of ``start`` and before ``end`` in the code, other than those holding one of the
        ``known`` nodes (the definitions already counted), and other than an assignment or walrus
        around ``end`` (whose value is computed first). ``True`` also when a node is not found."""
        a, b = self.span(start), self.span(end)
        if a is None or b is None:
            return True
        for site in self.sites.get(name, ()) + self.sites.get("*", []):
            s = self.span(site)
            if s is None or not a[0] < s[0] <= b[0]:
                continue
            if s[0] <= b[0] <= s[1] and isinstance(site, (cst.Assign, cst.AnnAssign, cst.AugAssign, cst.NamedExpr)):
                continue  # (the read is in the value)
            if isinstance(site, (cst.Assign, cst.AnnAssign, cst.AugAssign)) and any(self.within(k, site) for k in known):
                continue
            return True
        return False


def _nodes_in_try(tree: cst.Module | None) -> set[int]:
    """The ``id``s of the nodes inside the ``try`` statements of ``tree``; only statements are
    walked outside them (an expression holds no ``try``). A cancellation point every
    :data:`~loopcheck.engine.interrupts.NODES` nodes outside them, and at each ``try``."""
    out: set[int] = set()
    stack: list[cst.CSTNode] = [tree] if tree is not None else []
    visited = 0
    while stack:
        node = stack.pop()
        visited += 1
        if not visited % NODES:
            checkpoint()
        if isinstance(node, (cst.Try, cst.TryStar)):
            checkpoint()
            inner = [node]
            while inner:
                n = inner.pop()
                out.add(id(n))
                inner.extend(n.children)
        elif not isinstance(node, (cst.BaseExpression, cst.SimpleStatementLine, cst.SimpleStatementSuite)):
            stack.extend(node.children)
    return out


def under_no_grad(e: RawEvent) -> bool:
    """Whether definition ``e`` may compute a new value with gradients disabled (inside
    ``torch.no_grad()``/``inference_mode``): an assignment of a value that is not a plain name,
    or a call's result. Whether it does is for :meth:`_Inference.computed_without_graph`."""
    if e.ctx.grad != "disabled":
        return False
    return not isinstance(e, Assign) or (e.op == "=" and e.value_sym is None)


def last(sym: str) -> str:
    """``"f3_1:self@T.train_loader"`` → ``"train_loader"``."""
    return sym.rpartition(".")[2].rpartition(":")[2]


def own_methods(c: Call, names: tuple[str, ...]) -> bool:
    """Whether ``c`` constructs a class of the project (one the library knowledge does not
    describe) that defines, or inherits from a class of the project, one of the methods ``names``."""
    return (c.cls is not None and not c.cls.described
            and any(find_method(c.cls, name) is not None for name in names))


def clamps_first_position(c: Call) -> bool:
    """Whether ``c`` constructs a scheduler class of the project whose ``get_lr()`` reads its
    position only clamped to at least 1 (every ``self.last_epoch`` it reads is an argument of
    ``max(..., k)`` with an integer literal ``k >= 1``, as mozilla/TTS's NoamLR): positions 0
    and 1 of its schedule give the same learning rate."""
    if c.cls is None or c.cls.described:
        return False
    found = find_method(c.cls, "get_lr")
    if found is None:
        return False
    reads, clamped = [0], [0]

    def position(node: cst.CSTNode) -> bool:
        return (isinstance(node, cst.Attribute) and node.attr.value == "last_epoch"
                and isinstance(node.value, cst.Name) and node.value.value == "self")

    class Reads(cst.CSTVisitor):
        def visit_Attribute(self, node: cst.Attribute) -> None:
            reads[0] += position(node)

        def visit_Call(self, node: cst.Call) -> None:
            if not (isinstance(node.func, cst.Name) and node.func.value == "max"):
                return
            floors = [a for a in node.args if isinstance(a.value, cst.Integer)
                      and int(a.value.evaluated_value) >= 1]
            if floors:
                clamped[0] += sum(position(a.value) for a in node.args)

    found[1].body.visit(Reads())
    return reads[0] > 0 and reads[0] == clamped[0]


@dataclass
class OptimizerInfo:
    """An optimizer symbol: its constructor calls, qualified class, the model symbols whose
    parameters it was built from, and whether it builds its state in ``__init__``.

    Attributes:
        ctor: the first construction (``None`` when built outside the file).
        models: models whose parameters any of its constructions takes.
        by_ctor: ``id(construction) → models`` it takes, ``None`` when they cannot be told
            (parameters from an unknown source); ``set()`` means known to take no model's
            parameters (``Adam([embedding])``).
        others: more constructions (``if``/``elif`` arms, a later re-binding of the name).
    """

    ctor: Call | None
    qualname: str | None
    models: set[str] = field(default_factory=set)
    eager_state: bool = False
    others: list[Call] = field(default_factory=list)
    by_ctor: dict[int, set[str] | None] = field(default_factory=dict)
    params: set[str] = field(default_factory=set)  # the symbols its parameter arguments name
    certain: dict[int, set[str]] = field(default_factory=dict)  # per construction: the models in
    # every alternative of its parameter argument (``a.parameters() if x else b.parameters()``: none)
    # ``id()`` of the constructions established to keep no per-parameter state (:func:`keeps_no_state`)
    stateless: set[int] = field(default_factory=set)
    # ``id()`` of the constructions whose parameter argument takes nothing but models'
    # parameters (every source understood, no tensor of its own): ``Adam(chain(G.parameters(),
    # D.parameters()))``, not ``Adam([log_alpha])`` nor ``Adam(list(m.parameters()) + [w])``
    model_only: set[int] = field(default_factory=set)
    # ``id()`` of the constructions of a class of the project that defines its own ``step()``:
    # what that step does with the state (where it keeps it, in which dtype) is the project's
    own_step: set[int] = field(default_factory=set)
    # ``id()`` of the constructions whose class's ``step()`` moves the state to each parameter's
    # device and dtype (the knowledge's ``moves_state``: fairseq's and transformers' Adafactor)
    moves_state: set[int] = field(default_factory=set)
    # ``id()`` of the constructions whose class builds its state in ``__init__`` (the knowledge's
    # ``eager_state``: Adagrad); ``eager_state`` above says whether any construction does, but an
    # ``if``/``elif`` arm building SGD has no state because another arm builds Adagrad
    eager: set[int] = field(default_factory=set)

    def certain_of(self, ctors=()) -> set[str]:
        """The models the given constructions (all when empty) certainly take."""
        keys = [id(c) for c in ctors] or list(self.certain)
        return set().union(*(self.certain.get(k, set()) for k in keys)) if keys else set(self.models)

    def held_models(self) -> set[str]:
        """The models whose parameters every construction certainly takes: a ``zero_grad()``
        of this optimizer clears their gradients (all of them, whichever construction ran)."""
        keys = [id(c) for c in (self.ctor, *self.others) if c is not None]
        if not keys:
            return set()
        return set.intersection(*(set(self.certain.get(k, ())) for k in keys))

    def only_models(self, ctors=()) -> set[str] | None:
        """The models whose parameters hold every parameter this optimizer takes (it may take a
        part of them), ``None`` when it may take others (a tensor of its own, a source not
        understood, a construction found only by its target): clearing these models'
        gradients clears all of this optimizer's. ``ctors``: the constructions to answer for
        (the one that built the optimizer on a path); all of them when empty."""
        calls = list(ctors) or [c for c in (self.ctor, *self.others) if c is not None]
        if not calls or any(id(c) not in self.model_only for c in calls):
            return None
        return self.models_of(calls) or None

    @property
    def no_model(self) -> bool:
        """Known to train no model's parameters (only tensors built here: ``Adam([w])``)."""
        return bool(self.by_ctor) and all(v == set() for v in self.by_ctor.values())

    def builds(self, call: Call) -> bool:
        """Whether ``call`` constructs this optimizer."""
        return call is self.ctor or any(call is c for c in self.others)

    def models_of(self, ctors) -> set[str] | None:
        """The models trained by the given constructions (all of them when ``ctors`` is
        empty); ``None`` when one of them takes parameters of unknown origin."""
        calls = list(ctors) or [c for c in (self.ctor, *self.others) if c is not None]
        if not calls:
            return set(self.models) or None
        out: set[str] = set()
        for c in calls:
            m = self.by_ctor.get(id(c), set(self.models))
            if m is None:
                return None
            out |= m
        return out


@dataclass
class SchedulerInfo:
    """An LR scheduler symbol.

    Attributes:
        kind: ``"epoch"`` (StepLR, MultiStepLR, CosineAnnealingLR, ...), ``"batch"``
            (OneCycleLR, CyclicLR, transformers ``get_*_schedule*``), ``"plateau"``
            (ReduceLROnPlateau) or ``"unknown"``.
        unit: for epoch schedulers, what the period argument counts: ``"epochs"``,
            ``"steps"``, ``"literal"`` (a number) or ``"unknown"``.
        optimizer: the optimizer symbol it schedules, when known.
        same_first: some construction is of a class of the project whose ``get_lr()`` gives
            the same learning rate at positions 0 and 1 (:func:`clamps_first_position`).
        starts: for each construction, how its schedule begins (:func:`schedule_start`).
    """

    ctor: Call | None
    qualname: str | None
    kind: str
    unit: str = "unknown"
    optimizer: str | None = None
    others: list[Call] = field(default_factory=list)
    same_first: bool = False
    starts: list["ScheduleStart"] = field(default_factory=list)

    def builds(self, call: Call) -> bool:
        """Whether ``call`` constructs this scheduler."""
        return call is self.ctor or any(call is c for c in self.others)


@dataclass(frozen=True, eq=False)
class LoaderBuild:
    """One construction of a loader whose knowledge entry names the argument that replaces its
    default collate function (``returns.collate``: the DataLoader's ``collate_fn``).

    Attributes:
        call: the constructor call (``DataLoader(ds, batch_size=8, collate_fn=pad)``).
        collate: that argument as given (``pad``), ``None`` when it is left out.
        hidden: whether ``*args`` or ``**kwargs`` of the call may give it instead.
    """

    call: Call
    collate: Arg | None
    hidden: bool = False

    @property
    def default(self) -> bool:
        """Whether the loader keeps the library's default collate function: the argument left
        out, or the literal ``None``, and no ``*args``/``**kwargs`` that may give it."""
        if self.hidden:
            return False
        return self.collate is None or (type(self.collate.node) is cst.Name and self.collate.node.value == "None")


@dataclass
class Roles:
    """The roles of a unit's symbols (see module docstring).

    Attributes:
        types: symbol → qualified library class of the object, when known.
        provenance: loss symbol → the models whose forward passes it is computed from (not
            counting detached parts: ``D(G(z).detach())`` is D's only; nor values computed
            under ``no_grad``, :meth:`_Inference.computed_without_graph`); ``None`` when a call on the way
            is opaque.
        loss_containers: lists and dicts of loss tensors whose elements are backpropagated
            (``losses[-1].backward()``, ``sum(losses).backward()``).
        alias: symbol → the symbol of the same object (``model = DDP(model)``).
        scaled: ``x = scaler.scale(loss)``: x → scaler; also a parameter of an inlined function
            given a ``scale()`` call (``f(scaler.scale(loss))``).
        scaled_calls: ``id(node) →`` scaler for each ``scaler.scale(...)`` call node, so that
            a call's argument that is one (``t.backward(scaler.scale(g))``) is known scaled.
        graph: symbols with a definition established to carry an autograd graph
            (:func:`loopcheck.engine.graphs.graph_stores`).
        graph_stores: ``id(raw event) →`` :class:`~loopcheck.engine.graphs.GraphStore`: the
            events that keep a value with a graph in a container.
        keepers: the containers of those stores.
        fresh_loaders: loaders whose knowledge entry says their iteration builds each item
            anew (``fresh_items``: a DataLoader's batches, made by its collate function).
        loader_builds: loader → its constructions whose knowledge names a ``collate``
            argument (:class:`LoaderBuild`), in the order of the code; what a collate function
            the code gives returns is judged by
            :func:`loopcheck.engine.values.batch_tensor_items`.
        accumulation: accelerator → the gradient accumulation count its construction gives
            (knowledge ``returns.accumulation``: ``Accelerator(gradient_accumulation_steps=1)``,
            or the argument left out), ``None`` when the code does not fix it (a count read
            from the command line, a plugin that gives its own, constructions that disagree,
            the attribute assigned later); an accelerator the unit does not construct is absent.
        synced: scheduler → the calls that return it wrapped so that its ``step()`` runs only
            on a micro-step where the accelerator's accumulation flag is true (knowledge
            ``returns.synced = "scheduler"``: ``accelerator.prepare(..., scheduler)``, which
            returns an ``AcceleratedScheduler``), in the order of the code.
        unsynced: accelerators some construction of which makes the schedulers they wrap step
            on every call (knowledge ``accumulation.unsynced``:
            ``Accelerator(step_scheduler_with_optimizer=False)``, or any value but a literal
            ``True``).
        parameterless: models established to hold no parameters
            (:func:`loopcheck.engine.values.models_without_parameters`) or not established to
            hold any (:func:`loopcheck.engine.values.models_without_own_parameters`: built only
            from classes that build none, given nothing established to be a module): their
            forward passes make no graph of their own (set by
            :func:`know_models_without_parameters`; read by the graph fact only).
    """

    optimizers: dict[str, OptimizerInfo] = field(default_factory=dict)
    schedulers: dict[str, SchedulerInfo] = field(default_factory=dict)
    scalers: dict[str, Call | None] = field(default_factory=dict)
    models: set[str] = field(default_factory=set)
    loaders: set[str] = field(default_factory=set)
    fresh_loaders: set[str] = field(default_factory=set)
    loader_builds: dict[str, list[LoaderBuild]] = field(default_factory=dict)
    losses: set[str] = field(default_factory=set)
    loss_containers: set[str] = field(default_factory=set)
    criteria: set[str] = field(default_factory=set)
    accelerators: set[str] = field(default_factory=set)
    samplers: dict[str, str] = field(default_factory=dict)
    types: dict[str, str] = field(default_factory=dict)
    alias: dict[str, str] = field(default_factory=dict)
    scaled: dict[str, str] = field(default_factory=dict)
    scaled_calls: dict[int, str] = field(default_factory=dict)
    param_sources: dict[str, set[str]] = field(default_factory=dict)
    provenance: dict[str, frozenset[str] | None] = field(default_factory=dict)
    graph: frozenset[str] = frozenset()
    graph_stores: dict = field(default_factory=dict)
    keepers: frozenset[str] = frozenset()
    parameterless: frozenset[str] = frozenset()
    accumulation: dict[str, int | None] = field(default_factory=dict)
    synced: dict[str, list[Call]] = field(default_factory=dict)
    unsynced: set[str] = field(default_factory=set)

    def canon(self, sym: str | None) -> str | None:
        """The representative of a symbol's alias class; ``model.module`` → ``model``."""
        if sym is None:
            return None
        seen = set()
        while True:
            while sym.endswith(".module") or sym.endswith("._orig_mod"):
                sym = sym.rpartition(".")[0]
            nxt = self.alias.get(sym)
            if nxt is None or nxt in seen:
                return sym
            seen.add(sym)
            sym = nxt

    def names_of(self, sym: str) -> frozenset[str]:
        """Every symbol that names the same object as ``sym`` (its aliases and itself)."""
        out = {sym}
        for a in self.alias:
            if self.canon(a) == sym:
                out.add(a)
        return frozenset(out)

    def role(self, sym: str | None) -> str | None:
        """``"optimizer"``, ``"scheduler"``, ``"scaler"``, ``"model"``, ``"loader"``,
        ``"accelerator"`` or ``None`` for a (canonical) symbol."""
        if sym is None:
            return None
        if sym in self.optimizers:
            return "optimizer"
        if sym in self.schedulers:
            return "scheduler"
        if sym in self.scalers:
            return "scaler"
        if sym in self.models:
            return "model"
        if sym in self.accelerators:
            return "accelerator"
        if sym in self.loaders:
            return "loader"
        return None

    def tracked(self, sym: str | None) -> bool:
        """Whether a rule follows the state of this object (model, optimizer, scheduler, scaler)."""
        return self.role(sym) in ("optimizer", "scheduler", "scaler", "model")

    def type_of(self, sym: str | None) -> str | None:
        """The library class of a symbol's object: its own, or its role's."""
        if sym is None:
            return None
        c = self.canon(sym)
        t = self.types.get(sym) or self.types.get(c)
        if t is not None:
            return t
        role = self.role(c)
        return ROLE_TYPES.get(role) if role else None


# -- what construction arguments establish (schedules, optimizer state) ------------------------


@dataclass(frozen=True)
class ScheduleStart:
    """How a library scheduler's schedule begins, from its knowledge entry and the literal
    arguments of its construction (what a ``scheduler.step()`` before ``optimizer.step()`` does).

    Attributes:
        kind: ``"constant"`` (the schedule never changes the LR: ``constant_when``, StepLR's
            ``gamma=1``), ``"held"`` (positions 0 and 1 give the same LR and the first change
            comes later: ``first_change``, StepLR's ``step_size``), ``"changes"`` (the LR of
            position 1 differs from position 0, or nothing establishes otherwise) or ``"own"``
            (a class of the project whose ``step()`` is its own code, :func:`steps_on_its_own`:
            what a step before the optimizer's does is not established).
        at: for ``"held"``, the position of the first change when a literal gives it (a
            ``step_size`` of 20: 20), else ``None``.
        change: for ``"held"``, what happens there (``"decay"``, ``"change"``).
    """

    kind: str
    at: int | None = None
    change: str = "decay"


def _number(node: cst.BaseExpression | None) -> float | None:
    """The value of an integer or float literal, else ``None``."""
    if isinstance(node, (cst.Integer, cst.Float)):
        return float(node.evaluated_value)
    return None


def _first_position(node: cst.BaseExpression) -> int | None:
    """The position an integer literal gives, or the smallest of a list/tuple of them
    (MultiStepLR's ``milestones``); ``None`` for anything else."""
    if isinstance(node, cst.Integer):
        return int(node.evaluated_value)
    if isinstance(node, (cst.List, cst.Tuple)) and node.elements:
        values = [e.value for e in node.elements if not isinstance(e, cst.StarredElement)]
        if len(values) == len(node.elements) and all(isinstance(v, cst.Integer) for v in values):
            return min(int(v.evaluated_value) for v in values)
    return None


def _calls_base_step(fn: cst.FunctionDef) -> bool:
    """Whether method ``fn`` (a ``step()``) is shown to advance the schedule as torch's
    ``LRScheduler.step()`` does: one statement of its body, run on every call, is
    ``super().step()`` (or ``super(Cls, self).step()``, or its ``return``) without argument,
    and no other statement mentions ``last_epoch`` or ``param_groups``, the position and the
    LRs that torch's ``step()`` keeps."""
    calls, other = 0, [False]

    def base_step(node: cst.BaseExpression | None) -> bool:
        return (isinstance(node, cst.Call) and not node.args
                and isinstance(node.func, cst.Attribute) and node.func.attr.value == "step"
                and isinstance(node.func.value, cst.Call)
                and isinstance(node.func.value.func, cst.Name) and node.func.value.func.value == "super")

    class Mentions(cst.CSTVisitor):
        def visit_Attribute(self, node: cst.Attribute) -> None:
            if node.attr.value in ("last_epoch", "param_groups"):
                other[0] = True

        def visit_Name(self, node: cst.Name) -> None:
            if node.value in ("last_epoch", "param_groups"):
                other[0] = True

    body = fn.body.body if isinstance(fn.body, cst.IndentedBlock) else (fn.body,)
    for stmt in body:
        small = stmt.body if isinstance(stmt, cst.SimpleStatementLine) else None
        if small is not None and len(small) == 1 and isinstance(small[0], (cst.Expr, cst.Return)) \
                and base_step(small[0].value):
            calls += 1
            continue
        stmt.visit(Mentions())
    return calls == 1 and not other[0]


def steps_on_its_own(cls, _seen: frozenset = frozenset()) -> bool:
    """Whether the scheduler class of the project ``cls`` has a ``step()`` of its own: it, or
    a base class of the project, defines ``step()`` (method-resolution order), and that method
    is not shown to hand over to the next ``step()`` up (:func:`_calls_base_step`; then the
    next one decides, down to torch's). Such a ``step()`` is the project's code: it may set the
    position from the optimizer's own step count, or be written to run before the update, so
    stepping it first is not established to skip a value (NVIDIA's ``PolyWarmUpScheduler``)."""
    found = find_method(cls, "step")
    if found is None or found[0] in _seen:
        return False
    owner, fn = found
    if not _calls_base_step(fn):
        return True
    return any(steps_on_its_own(base, _seen | {owner}) for base in owner.bases())


def schedule_start(c: Call, r) -> ScheduleStart:
    """How the schedule that ``c`` builds begins (``r``: its ``returns`` entry).

    ``"constant"`` when the entry's ``constant_when`` argument is given as that literal;
    ``"held"`` when the entry has ``first_change`` and the argument's literal (or run constant,
    :attr:`~loopcheck.engine.ir.Arg.constant`: a name bound once to an integer; or, left out
    with no ``*args``/``**kwargs`` that could give it, its default) is not 1 or below: a value
    of 2 or more gives ``at``, anything else is unknown (``at = None``). A position of 1 is
    ``"changes"``, as are a scheduler without these entries and a class of the project, whose
    arguments the library's entry does not describe; ``"own"`` for a class of the project whose
    ``step()`` is its own code (:func:`steps_on_its_own`)."""
    if c.cls is not None and not c.cls.described:
        return ScheduleStart("own" if steps_on_its_own(c.cls) else "changes")
    constant = r.get("constant_when")
    if constant is not None:
        arg = arg_at(c, constant.arg)
        if arg is not None and _number(arg.node) == constant.value:
            return ScheduleStart("constant")
    first = r.get("first_change")
    if first is None:
        return ScheduleStart("changes")
    arg = arg_at(c, first.arg)
    if arg is not None:
        at = _first_position(arg.node)
        if at is None and arg.constant is not None:
            at = arg.constant  # ``step_size=STEP_SIZE`` with ``STEP_SIZE = 2000`` bound once
    elif any(a.star for a in getattr(c.node, "args", ())):
        at = None
    else:
        at = first.default
    if at is not None and at <= 1:
        # at 1 the LR changes at position 1; a position of 0 or below changes it at the
        # constructor's own step: positions 0 and 1 agree then, but no later change is told
        return ScheduleStart("changes") if at == 1 else ScheduleStart("held", None, first.change)
    return ScheduleStart("held", at, first.change)


def accumulation_count(call: Call, acc) -> int | None:
    """The gradient accumulation count the construction ``call`` gives (``acc``: the entry's
    :class:`~loopcheck.engine.knowledge.Accumulation`): the run constant of its argument
    (:attr:`~loopcheck.engine.ir.Arg.constant`), or the default when it is left out; ``None``
    when the code does not fix it (a count from ``args``, an argument of ``acc.unless`` given,
    ``*args``/``**kwargs`` that could give either)."""
    if any(a.star for a in getattr(call.node, "args", ())):
        return None
    if any(arg_at(call, ref) is not None for ref in acc.unless):
        return None
    arg = arg_at(call, acc.arg)
    return acc.default if arg is None else arg.constant


def steps_schedulers_on_sync(call: Call, acc) -> bool:
    """Whether the accelerator construction ``call`` leaves the schedulers it wraps stepping
    only when its accumulation flag is true (``acc``: the entry's
    :class:`~loopcheck.engine.knowledge.Accumulation`): no argument of ``acc.unsynced`` is
    given, or each is the literal ``True`` (``Accelerator(step_scheduler_with_optimizer=True)``,
    the default). ``**kwargs`` that could give one establish nothing against it."""
    for ref in acc.unsynced:
        arg = arg_at(call, ref)
        if arg is not None and not (type(arg.node) is cst.Name and arg.node.value == "True"):
            return False
    return True


def keeps_no_state(call: Call, r) -> bool:
    """Whether the optimizer ``call`` builds is established to keep no per-parameter state:
    its entry names the argument that would give it some (``state_when``: SGD's ``momentum``)
    and that argument is absent or a literal ``0``, with no ``*args``/``**kwargs`` that could
    hold it. ``r``: the call's ``returns`` entry."""
    ref = r.get("state_when")
    if ref is None or any(a.star for a in getattr(call.node, "args", ())):
        return False
    arg = arg_at(call, ref)
    if arg is None:
        return True
    node = arg.node
    return type(node) in (cst.Integer, cst.Float) and node.evaluated_value == 0


def looks_up(call: Call, roles: Roles) -> bool:
    """Whether the knowledge says ``call`` returns an object that exists already
    (``returns.value = "existing"``: ``getattr(self, f"optim{i}")``): it constructs nothing, so
    assigning its result is no construction of an optimizer, a scheduler or a model."""
    summary = summary_of(call, roles)
    return summary is not None and summary.returns is not None and summary.returns.value == "existing"


# -- inference ----------------------------------------------------------------------------------


def parameter_owner(chain: str) -> str | None:
    """``"model.backbone"`` for ``"model.backbone.parameters"`` (also ``named_parameters``);
    ``None`` when the chain does not take a module's parameters."""
    for marker in (".parameters", ".named_parameters"):
        if chain.endswith(marker) or (marker + ".") in chain:
            return chain.split(marker)[0]
    return None


def period_unit(node: cst.BaseExpression | None) -> str:
    """What a scheduler period expression counts: ``"epochs"`` (names with *epoch* and no
    step-like name), ``"steps"`` (``len(loader) * epochs``, ``total_steps``, ``max_iters``),
    ``"literal"`` (only numbers) or ``"unknown"``."""
    if node is None:
        return "unknown"
    names = sorted(names_in(node))
    if not names:
        return "literal"
    if any(STEP_WORDS.search(n) for n in names):
        return "steps"
    if any(EPOCH_WORDS.search(n) for n in names):
        return "epochs"
    return "unknown"


STEP_WORDS = re.compile(r"(steps|iter|batch|total|num_training|updates|^len$)", re.I)
EPOCH_WORDS = re.compile(r"epoch", re.I)


def exponential_unit(call: Call) -> str:
    """ExponentialLR has no period: a gamma below 0.99 only makes sense per epoch."""
    arg = arg_at(call, (1, "gamma"))
    if arg is not None and isinstance(arg.node, cst.Float):
        try:
            return "literal" if float(arg.node.value) < 0.99 else "steps"
        except ValueError:
            return "unknown"
    return "unknown"


def _common(a: set[str], b: set[str]) -> set[str]:
    """The models two sets both reach, a submodule counting for the model that holds it
    (``{model}`` and ``{model.head}`` share ``model.head``)."""
    out = set()
    for x in a:
        for y in b:
            if x == y or y.startswith(x + "."):
                out.add(y)
            elif x.startswith(y + "."):
                out.add(x)
    return out


def _reads(mentions, sym: str) -> bool:
    """Whether ``mentions`` name ``sym`` or an attribute of it (``delta.data`` of ``delta``)."""
    return any(x == sym or x.startswith(sym + ".") for x in mentions)


def _module_without_method(cls, name: str, _seen: frozenset = frozenset()) -> bool:
    """Whether project class ``cls`` derives from ``torch.nn.Module`` through classes of the
    project only, none of which defines a method ``name``."""
    info = cls.info
    if info is None or cls in _seen or name in info.methods:
        return False
    if not info.bases:
        return False
    for base in info.bases:
        ref = cls.module.class_ref(base) or cls.module.class_ref(base, qualified=True)
        if ref is not None:
            if not _module_without_method(ref, name, _seen | {cls}):
                return False
        elif base != "torch.nn.Module":
            return False  # a library class: its methods are not all known here
    return True


def _loop_reads(e: RawEvent) -> frozenset[str]:
    """The symbols an event reads that a loop's target may bind: what its result is computed
    from (:attr:`Sources.names`) and, for a call, what it is called on and given
    (``(loss / n).backward()`` reads ``loss`` in ``for loss, last in model(x):``), through the
    calls it is made on (``scaler.scale(loss).backward()``)."""
    out = set(e.sources.names) if e.sources is not None else set()
    c = e if isinstance(e, Call) else None
    while c is not None:
        if c.receiver:
            out.add(c.receiver)
        out.update(c.operands)
        for a in c.args:
            out.update(a.mentions)
        c = c.inner
    return frozenset(out)


#: The suffix of the mention that stands for the value a parameter arrives with, from the
#: function's callers (:meth:`_Inference._incoming_read`): no definition here, not understood.
OUTSIDE = "<outside>"


#: The list methods that put a value into the container they are called on.
STORE_METHODS = frozenset({"append", "extend", "insert"})
#: Builtins whose iteration gives the elements of their arguments (or pairs holding them).
ITERATION_BUILTINS = frozenset({"enumerate", "zip", "reversed", "sorted", "list", "tuple", "iter"})


#: How a binding event binds a symbol (:meth:`_Inference._binding_kinds`): to an instance of a
#: class of the project with no role, to ``None``, or to any other value.
_PLAIN, _NONE, _OTHER = object(), object(), object()


class _Held(NamedTuple):
    """What an optimizer's parameter argument, or one symbol it mentions, may hold
    (:meth:`_Inference.param_models`): the models whose parameters it takes, whether every
    source was understood, the symbols on the followed path it came back to (``cuts``: a
    cycle of definitions), and whether some definition leads out of such a cycle
    (``grounded``)."""

    models: frozenset
    known: bool
    cuts: frozenset = frozenset()
    grounded: bool = True


class _Inference:
    """One pass of role inference over the raw events of a file."""

    def __init__(self, index: ModuleIndex, events: list[RawEvent], project_classes=None,
                 outside: frozenset[str] = frozenset()) -> None:
        self.index = index
        self.kb = knowledge()
        self.roles = Roles()
        self.events = events
        self.calls = [e for e in events if isinstance(e, Call)]
        self.project_classes = project_classes
        # symbol → definitions: (the symbols whose objects the value may be or hold, kind) for
        # each assignment or call target
        self.defs: dict[str, list[tuple[frozenset[str], str]]] = {}
        self.methods: dict[str, set[str]] = {}
        # symbol -> (definition, what its value is computed from) per definition, in the
        # order of the code (a value computed under no_grad from nothing: computed_without_graph)
        self.source_defs: dict[str, list[tuple[RawEvent, object]]] = {}
        self.order = {id(e): i for i, e in enumerate(events)}
        self._guarded: set[int] | None = None  # ids of the nodes in try statements (_unguarded)
        self._spans: _Spans | None = None  # the order of the module's nodes (_reaching)
        self._bindings_memo: dict[str, list | None] = {}  # (_other_bindings)
        self._loop_infos: dict[int, object] | None = None  # (_loops_by_node)
        self.by_usage: set[str] = set()  # models known only from their train()/eval() calls
        # symbols bound to an instance of a class of the project that has no role (a class that
        # derives from no library class with one), or on every path to one or to None, also
        # through other names and an inlined function's returns (:meth:`plain_values`): its
        # methods are the project's, read where they are called, so its role is not guessed
        # from its name or its methods' names
        self.plain_objects: set[str] = set()
        # container symbol → the calls that put a value into it (``losses.append(loss)``), and
        # the raw events of each call expression, to follow provenance into what they store
        self.stores: dict[str, list[Call]] = {}
        self.raw_calls: dict[int, list[Call]] = {}
        # symbol → the loops whose target binds it where an event reads it (the innermost loop
        # around the event whose target has the symbol's name)
        self.loop_targets: dict[str, list] = {}
        for e in events:
            for sym in _loop_reads(e) if e.ctx.loops else ():
                name = sym.rpartition(":")[2].partition(".")[0]
                loop = next((li for li in reversed(e.ctx.loops) if name in li.targets), None)
                if loop is not None:
                    found = self.loop_targets.setdefault(sym.partition(".")[0], [])
                    if loop not in found:
                        found.append(loop)
            if e.sources is not None:
                src = e.sources  # (those computed without a graph are emptied in run())
                for t in (e.targets if isinstance(e, Call) else (e.target,)):
                    if t:
                        self.source_defs.setdefault(t, []).append((e, src))
            if isinstance(e, Assign) and e.op == "=":
                held = e.mentions if e.held is None else e.held
                self.defs.setdefault(e.target, []).append((held, e.value_kind))
            elif isinstance(e, Call):
                for t in e.targets:
                    if t:
                        self.defs.setdefault(t, []).append((self.held_by_call(e), "call"))
                if isinstance(e, Call) and e.receiver and e.method and not (e.inlined and e.method in ("train", "eval")):
                    self.methods.setdefault(e.receiver, set()).add(e.method)
                if e.receiver and e.method in STORE_METHODS and e.args:
                    self.stores.setdefault(e.receiver, []).append(e)
                self.raw_calls.setdefault(id(e.node), []).append(e)
        for sym in outside:
            if sym in self.defs and self._incoming_read(sym):
                self.defs[sym].insert(0, (frozenset({sym + OUTSIDE}), "outside"))

    def held_by_call(self, c: Call) -> frozenset[str]:
        """The symbols whose objects the result of ``c`` may be or hold: those its arguments
        hold (:attr:`Arg.holds <loopcheck.engine.ir.Arg.holds>`: not a name read only in a
        nested call that builds a new tensor, ``Variable(torch.zeros_like(w)[None])`` holds
        nothing of ``w``) and, for a method, the result of calling it (``x.detach()``: what ``x`` holds;
        ``g.style()``: nothing of ``g`` when it runs a forward, :meth:`forward_of_model`), none
        of them for a call the library knowledge says builds a new tensor (``torch.zeros(n)``,
        ``torch.cat((buf, z))``, which copies them: :attr:`Returns.new_memory
        <loopcheck.engine.knowledge.Returns.new_memory>`) but the argument its ``shares`` entry
        names (``torch.as_tensor(t)``, ``torch.cat(xs, out=buf)``)."""
        summary = self.kb.callable(c.func) if c.qualified else None
        r = summary.returns if summary is not None else None
        if r is not None and r.new_memory:
            kept = arg_at(c, r.get("shares")) if r.get("shares") is not None else None
            return kept.holds if kept is not None else frozenset()
        out = frozenset().union(*(a.holds for a in c.args)) if c.args else frozenset()
        if c.receiver is not None:
            out |= {c.func + "()"}
        if c.inner is not None:
            out |= self.held_by_call(c.inner)
        return out | frozenset(c.operands)

    # -- 0. project classes -------------------------------------------------------------
    def class_summary(self, ref, _seen: frozenset = frozenset()) -> Summary | None:
        """The constructor summary a project class inherits: an ``nn.Module`` subclass builds a
        model; a subclass of a library class with a role builds that role (bases in other
        modules of the project included)."""
        info = ref.info
        if info is None or ref in _seen:
            return None
        if ref.described:
            return self.kb.callable(ref.qualname)
        for base in info.bases:
            bref = ref.module.class_ref(base) or ref.module.class_ref(base, qualified=True)
            found = self.class_summary(bref, _seen | {ref}) if bref is not None else self.kb.callable(base)
            if found is not None and found.returns is not None and found.returns.role:
                return found
        return None

    # -- 1. construction ----------------------------------------------------------------
    def construction(self, c: Call) -> Summary | None:
        if c.qualified:
            summary = self.kb.callable(c.func)
            if summary is not None:
                return summary
        if c.cls is not None:
            return self.class_summary(c.cls)
        return None

    def construct(self) -> None:
        roles = self.roles
        plain_builds: set[int] = set()  # the calls that build an instance of a class with no role
        for c in self.calls:
            if not c.targets:
                continue
            summary = self.construction(c)
            if summary is None and c.cls is not None and not c.cls.described and len(c.targets) == 1:
                self.plain_objects.add(c.targets[0])  # WeightEMA(model, ema_model): no optimizer
                plain_builds.add(id(c))
            if summary is None or summary.returns is None:
                continue
            ret = summary.returns
            if ret.items:
                pairs = list(zip(c.targets, ret.items))
            elif len(c.targets) == 1:
                pairs = [(c.targets[0], ret)]
            else:
                continue
            for target, r in pairs:
                if target is None or r is None:
                    continue
                if r.type:
                    roles.types[target] = r.type
                elif c.qualified and self.kb.cls(c.func) is not None:
                    roles.types[target] = c.func
                if r.role:
                    self.register(target, r, c, summary)
                if r.get("sampler"):
                    roles.samplers[target] = r.get("sampler")
        self.plain_objects |= self.plain_values(plain_builds)

    def _binding_kinds(self, plain_builds: set[int]) -> dict[str, list]:
        """How each symbol is bound, per binding event: :data:`_PLAIN` (a call in ``plain_builds``:
        an instance of a class of the project with no role), :data:`_NONE` (``x = None``),
        ``None`` (the binding hands over to other events: the assignment that repeats a call
        event's binding of its target, and the call of a function of the project inlined
        whose body binds the target to what each ``return`` gives, :attr:`Call.returns_bound
        <loopcheck.engine.ir.Call.returns_bound>`), a symbol (``x = y``: ``y``'s value), or
        :data:`_OTHER` (any other value; an augmented assignment; a parameter whose callers give
        its value). A subscript store (``d[k] = v``) binds no name."""
        kinds: dict[str, list] = {}
        for sym, defs in self.defs.items():
            if any(kind == "outside" for _held, kind in defs):
                kinds.setdefault(sym, []).append(_OTHER)
        for e in self.events:
            if isinstance(e, Call):
                kind = _PLAIN if id(e) in plain_builds else None if e.inlined and e.returns_bound else _OTHER
                for t in e.targets:
                    if t:
                        kinds.setdefault(t, []).append(kind)
            elif isinstance(e, Assign) and e.target and e.op != "[]=":
                kinds.setdefault(e.target, []).append(self._assigned_kind(e))
        return kinds

    def _assigned_kind(self, e: Assign):
        """:meth:`_binding_kinds` of assignment ``e``."""
        if e.op != "=":
            return _OTHER
        if type(e.value) is cst.Call and any(e.target in c.targets for c in self.raw_calls.get(id(e.value), ())):
            return None  # the call event binds the target (also a part of its result: ``a, b = f()``)
        if type(e.value) is cst.Name and e.value.value == "None":
            return _NONE
        return e.value_sym or _OTHER

    def plain_values(self, plain_builds: set[int]) -> set[str]:
        """The symbols bound, on every path that binds them, to an instance of a class of the
        project with no role (a call in ``plain_builds``) or to ``None`` (whose methods raise),
        directly or through other such symbols (``warmup_sched = warmup``, also the binding of
        an inlined function's ``return a, b`` to the caller's ``x, y = make(...)``), at least
        one binding giving such an instance. A function of the project the unit inlines is not
        an unknown factory: what it returns is read. Like :attr:`plain_objects`, their roles
        are not guessed from their names or their methods' names."""
        kinds = self._binding_kinds(plain_builds)
        # the symbols none of whose bindings gives anything but such values
        candidates = {sym for sym, ks in kinds.items() if _OTHER not in ks}
        changed = True
        while changed:
            changed = False
            for sym in list(candidates):
                if any(type(k) is str and k not in candidates for k in kinds[sym]):
                    candidates.discard(sym)
                    changed = True
        # ... of which those some binding of which gives an instance
        found = {sym for sym in candidates if _PLAIN in kinds[sym]}
        changed = True
        while changed:
            changed = False
            for sym in candidates - found:
                if any(type(k) is str and k in found for k in kinds[sym]):
                    found.add(sym)
                    changed = True
        return found

    def register(self, target: str, r: Returns, c: Call, summary: Summary) -> None:
        roles = self.roles
        role = r.role
        q = c.func if c.qualified else None
        if role == "optimizer":
            arg = arg_at(c, r.get("params", 0))
            models, known = self.param_models(arg.holds if arg else frozenset())
            known = known and arg is not None
            eager = bool(r.get("eager_state"))
            info = roles.optimizers.get(target)
            if info is not None and info.ctor is not None:  # built again: if/elif arms, re-binding
                info.others.append(c)
                info.models |= models
                info.eager_state = info.eager_state or eager
            else:
                info = roles.optimizers[target] = OptimizerInfo(c, q, set(models), eager)
            info.by_ctor[id(c)] = set(models) if known else None
            if keeps_no_state(c, r):
                info.stateless.add(id(c))
            if own_methods(c, ("step",)):
                info.own_step.add(id(c))
            if r.get("moves_state"):
                info.moves_state.add(id(c))
            if eager:
                info.eager.add(id(c))
            info.params |= set(arg.mentions) if arg else set()
            info.certain[id(c)] = self.certain_models(arg, models)
            if known and models and not any(self.takes_other(m) for m in arg.holds):
                info.model_only.add(id(c))
        elif role == "scheduler":
            kind = r.get("schedule", "unknown")
            name = (summary.name or "").rpartition(".")[2]
            info = SchedulerInfo(c, q or summary.name, kind)
            if kind == "epoch":
                if name == "ExponentialLR":
                    info.unit = exponential_unit(c)
                else:
                    arg = arg_at(c, r.get("period"))
                    info.unit = "literal" if arg is None or arg.literal else period_unit(arg.node)
            opt_arg = arg_at(c, r.get("optimizer", 0))
            info.optimizer = opt_arg.sym if opt_arg else None
            info.same_first = clamps_first_position(c)
            info.starts.append(schedule_start(c, r))
            known = roles.schedulers.get(target)
            if known is not None and known.ctor is not None:  # one scheduler per if/elif arm
                known.others.append(c)
                known.same_first = known.same_first or info.same_first
                known.starts.extend(info.starts)
                if (known.kind, known.unit) != (info.kind, info.unit):
                    known.kind, known.unit = "unknown", "unknown"
            else:
                roles.schedulers[target] = info
        elif role == "scaler":
            roles.scalers[target] = c
        elif role == "loader":
            roles.loaders.add(target)
            if r.get("fresh_items"):
                roles.fresh_loaders.add(target)
            if r.get("collate") is not None:
                hidden = any(a.star for a in getattr(c.node, "args", ()))  # (maybe in **kwargs)
                # every construction (if/else arms): the batch holds a tensor where all agree
                roles.loader_builds.setdefault(target, []).append(LoaderBuild(c, arg_at(c, r.get("collate")), hidden))
        elif role == "criterion":
            roles.criteria.add(target)
        elif role == "accelerator":
            roles.accelerators.add(target)
            roles.types.setdefault(target, summary.name)
            acc = r.get("accumulation")
            if acc is not None:
                count = accumulation_count(c, acc)
                if roles.accumulation.get(target, count) != count:
                    count = None  # built twice (if/else arms) with different counts
                roles.accumulation[target] = count
                if not steps_schedulers_on_sync(c, acc):
                    roles.unsynced.add(target)
        elif role == "model":
            roles.models.add(target)
        elif role == "loss":
            roles.losses.add(target)

    def certain_models(self, arg: Arg | None, models: set[str]) -> set[str]:
        """The models an optimizer's parameter argument takes on every path: for
        ``unet.parameters() if train_unet else text_encoder.parameters()``, neither."""
        if arg is None or not isinstance(arg.node, cst.IfExp):
            return set(models)

        def branch(node) -> set[str]:
            chains = set(dotted_chains(node))
            mentions = frozenset(m for m in arg.mentions if m.rpartition(":")[2] in chains)
            return self.param_models(mentions)[0]

        return _common(branch(arg.node.body), branch(arg.node.orelse))

    def _incoming_read(self, sym: str) -> bool:
        """Whether the value parameter ``sym`` arrives with may be read although the function
        binds it again: unless the first event that reads or binds it (in the order of the
        code) binds it at the top level of its function, in no loop, ``if`` or inlined call,
        which every run reaches before any read (``opt = SGD([x])`` before ``x = y`` reads
        the incoming ``x``; the definitions are otherwise read without order)."""
        for e in self.events:
            binds = e.target == sym and e.op == "=" if isinstance(e, Assign) else sym in e.targets
            reads = _reads(e.mentions if isinstance(e, Assign) else _loop_reads(e), sym)
            if reads or (binds and (e.ctx.loops or e.ctx.conds or e.ctx.calls)):
                return True
            if binds:
                return False
        return True

    def param_models(self, mentions, depth: int = 0, memo: dict | None = None) -> tuple[set[str], bool]:
        """Models whose parameters an optimizer's parameter argument takes, following up to
        three assignments (``params = [p for p in model.parameters() if p.requires_grad]``),
        and whether every source was understood (a tensor built here is understood and is
        no model's; a function parameter is not).

        ``memo``: answers per ``(mention, depth)``, shared by calls made while the models and
        the definitions do not change (each name's definitions are then followed once per
        depth, not once per path: ``step = step + 1`` written 200 times is 200 definitions
        of ``step``, each mentioning ``step``)."""
        memo = {} if memo is None else memo
        found = self._param_models(mentions, depth, memo, frozenset())
        return set(found.models), found.known

    def _param_models(self, mentions, depth: int, memo: dict, path: frozenset) -> _Held:
        """:meth:`param_models` of ``mentions``, read while the definitions of the symbols on
        ``path`` are being followed (:meth:`_param_models_of`)."""
        out: set[str] = set()
        known, grounded = True, not mentions
        cuts: frozenset = frozenset()
        for m in mentions:
            sub = self._param_models_of(m, depth, memo, path)
            out |= sub.models
            known = known and sub.known
            cuts |= sub.cuts
            grounded = grounded or sub.grounded
        return _Held(frozenset(out), known, cuts, grounded)

    def takes_other(self, m: str, depth: int = 0) -> bool:
        """Whether mention ``m`` of an optimizer's parameter argument may stand for parameters
        of no model: a tensor built here, or a source not understood (followed through up to
        four assignments, as :meth:`param_models`)."""
        if m.endswith("()"):  # a call's result (see :meth:`_param_models_of`)
            m = m[:-2]
            if parameter_owner(m) is None and self.forward_of_model(m):
                return True
        if parameter_owner(m) is not None or m in self.roles.models:
            return False
        base = m if m in self.defs else m.rpartition(".")[0]
        if depth >= 4 or base not in self.defs:
            return True
        return any(not mentions2 or any(self.takes_other(x, depth + 1) for x in mentions2)
                   for mentions2, _kind in self.defs[base])

    def _param_models_of(self, m: str, depth: int, memo: dict, path: frozenset = frozenset()) -> _Held:
        """:meth:`param_models` of one mention. A mention ``f()`` is the result of a call of
        ``f`` (:meth:`UnitBuilder.held <loopcheck.engine.builder.UnitBuilder.held>`): the
        output of a forward of a model holds none of its parameters; any other call's result
        is read as the chain it calls (``model.parameters()``, ``delta.detach()``).

        A definition that comes back to a symbol whose definitions are being followed (on
        ``path``: ``img = x.detach().numpy()`` for ``x = torch.from_numpy(img)``) adds nothing:
        the symbol's value is made of what its other definitions give, which are followed
        where it was first met; when none of them leads out of the cycle, its value comes from
        outside and is not understood. A function parameter read before a re-binding has the
        value its callers give among its definitions (:meth:`_incoming_read`), which leads out
        of any cycle to a value not understood. An answer that came back to a symbol other than its own is
        not kept in ``memo``: it leaves out what that symbol's other definitions give."""
        key = (m, depth)
        hit = memo.get(key)
        if hit is not None:
            return hit
        if m.endswith("()"):
            m = m[:-2]
            if parameter_owner(m) is None and self.forward_of_model(m):
                memo[key] = res = _Held(frozenset(), True)
                return res
        owner = parameter_owner(m)
        if owner is not None:
            res = _Held(frozenset({owner}), True)
        elif m in self.roles.models:
            res = _Held(frozenset({m}), True)
        elif depth < 4 and (m in self.defs or ("." in m and m.rpartition(".")[0] in self.defs)):
            # a variable built here, or an attribute of one (param_dict.items, args.lr)
            base = m if m in self.defs else m.rpartition(".")[0]
            if base in path:
                return _Held(frozenset(), True, frozenset({base}), False)
            defs = self.defs[base]
            own = [x for x, _kind in defs if not _reads(x, base)]
            sources: set[str] = set()
            built = False  # a definition that mentions nothing: a tensor built here
            for mentions2, _kind in defs:
                if own and _reads(mentions2, base):
                    # ``delta = Variable(delta.data)``: made from the symbol's own earlier value,
                    # which its other definitions give
                    mentions2 = frozenset(x for x in mentions2 if not _reads((x,), base))
                elif not mentions2:
                    built = True
                sources |= mentions2
            sub = self._param_models(sources, depth + 1, memo, path | {base})
            cuts = sub.cuts - {base}
            grounded = built or sub.grounded
            res = _Held(sub.models, sub.known and (grounded or bool(cuts)), cuts, grounded)
            if cuts:
                return res
        else:
            res = _Held(frozenset(), False)
        memo[key] = res
        return res

    def forward_of_model(self, callee: str) -> bool:
        """Whether calling ``callee`` runs a forward of a model, whose output holds none of the
        model's parameters: ``callee`` is a model (``g(z)``), or an attribute of a model built
        here from classes of the project deriving from ``torch.nn.Module`` alone that is
        neither a method of ``nn.Module`` nor one of those classes (``g.style(z)``: a
        submodule ``__init__`` assigned). Not for a method (``g.make_noise()`` may return
        anything) nor an attribute of a model of unknown class."""
        roles = self.roles
        callee = roles.canon(callee)
        if callee in roles.models:
            return True
        owner, _, name = callee.rpartition(".")
        if not owner or owner not in roles.models or self.kb.method("torch.nn.Module", name) is not None:
            return False
        classes = [c.cls for c in self.calls if c.targets == (owner,) and c.cls is not None]
        return bool(classes) and all(_module_without_method(cls, name) for cls in classes)

    # -- 2. usage -----------------------------------------------------------------------
    def usage(self) -> None:
        roles = self.roles
        constructed = set(roles.optimizers) | set(roles.schedulers) | set(roles.scalers) | roles.models | roles.criteria
        for e in self.events:
            if isinstance(e, Assign) and e.op == "=" and e.value_sym in constructed and e.target not in constructed:
                roles.alias[e.target] = e.value_sym
        if roles.accumulation:
            # ``accelerator.gradient_accumulation_steps = n`` after the construction: not known
            for e in self.events:
                if not isinstance(e, Assign) or not e.target:
                    continue
                sym, _, attr = e.target.rpartition(".")
                if sym in roles.accumulation:
                    summary = self.kb.callable(roles.types.get(sym))
                    acc = summary.returns.get("accumulation") if summary and summary.returns else None
                    if acc is not None and attr == acc.attribute:
                        roles.accumulation[sym] = None
        for sym, ms in self.methods.items():
            if sym in roles.alias or sym in roles.optimizers or sym in roles.schedulers or sym in roles.scalers:
                continue
            if sym in self.plain_objects:
                continue
            if sym in roles.accelerators or sym in roles.types:
                continue
            name = last(sym)
            if "zero_grad" in ms and "step" in ms and sym not in roles.models:
                roles.optimizers[sym] = OptimizerInfo(None, None)
            elif {"train", "eval"} & ms and "step" not in ms:
                roles.models.add(sym)
                self.by_usage.add(sym)
            elif "step" in ms and SCHEDULER_NAME.search(name) and "scale" not in ms:
                roles.schedulers[sym] = SchedulerInfo(None, None, "unknown")
            elif "scale" in ms and ("update" in ms or SCALER_NAME.search(name)):
                roles.scalers[sym] = None
            elif ms & {"prepare", "backward", "clip_grad_norm_", "accumulate"} and ACCELERATOR_NAME.search(name):
                roles.accelerators.add(sym)
        for c in self.calls:
            if c.receiver in roles.scalers and c.method in ("step", "unscale_") and c.args:
                sym = c.args[0].sym
                if sym and sym not in roles.optimizers:
                    roles.optimizers[sym] = OptimizerInfo(None, None)
            elif (
                c.method == "step" and c.receiver and not c.args and c.receiver not in roles.optimizers
                and c.receiver not in roles.alias
                and c.receiver not in roles.schedulers and OPTIMIZER_NAME.search(last(c.receiver))
                and c.receiver not in roles.models and c.receiver not in self.plain_objects
            ):
                roles.optimizers[c.receiver] = OptimizerInfo(None, None)

    def factories(self) -> None:
        """Objects known by use but assigned from one call were built by it
        (``model.configure_optimizers()``, ``get_scheduler(optimizer)``); an attribute known by
        use but only ever assigned from a variable (``self.optimizer = optimizer``) gives the
        role to that variable, built by the call that built it."""
        roles = self.roles
        plain: dict[str, set[str | None]] = {}
        for e in self.events:
            if isinstance(e, Assign) and e.op == "=" and e.target:
                plain.setdefault(e.target, set()).add(e.value_sym)
            elif isinstance(e, Call):
                for t in e.targets:
                    if t:
                        plain.setdefault(t, set()).add(None)
        for table in (roles.optimizers, roles.schedulers):
            for sym, info in list(table.items()):
                sources = plain.get(sym, set())
                if info.ctor is None and len(sources) == 1 and None not in sources:
                    src = next(iter(sources))
                    if src not in table and self.roles.role(src) is None and src not in self.plain_objects:
                        table[src] = table.pop(sym)
                        roles.alias[sym] = src
        built_by: dict[str, list[Call]] = {}
        for c in self.calls:
            if looks_up(c, roles):
                continue  # getattr(self, name): an object built elsewhere
            for t in c.targets:
                if t:
                    built_by.setdefault(t, []).append(c)
        for sym, info in roles.optimizers.items():
            if info.ctor is None and len(built_by.get(sym, ())) == 1:
                c = built_by[sym][0]
                mentions = set().union(*(a.mentions for a in c.args)) if c.args else set()
                if c.receiver:
                    mentions.add(c.receiver)
                info.ctor = c
                models, _known = self.param_models(frozenset(mentions))
                info.models = models | {m for m in mentions if m in roles.models}
                info.by_ctor[id(c)] = set(info.models) if info.models else None
        for sym, info in roles.schedulers.items():
            if info.ctor is None and len(built_by.get(sym, ())) == 1:
                c = built_by[sym][0]
                if c.cls is not None:
                    # a class of the project, read: one deriving from a known scheduler was
                    # registered by :meth:`construct`; any other has its own step() (one that
                    # sets the LR of the coming update), not an LRScheduler's behaviour
                    continue
                opt = next((a.sym for a in c.args if a.sym and self.roles.canon(a.sym) in roles.optimizers), None)
                if opt is not None:
                    info.ctor = c
                    info.optimizer = opt

    # -- 3. aliases ---------------------------------------------------------------------
    def aliases(self) -> None:
        roles = self.roles
        for info in roles.optimizers.values():
            roles.models |= info.models
        for _ in range(MAX_ALIAS_PASSES):  # aliases of aliases; the first binding of a name wins
            changed = False
            tracked = set(roles.optimizers) | roles.models | set(roles.schedulers) | set(roles.scalers) | roles.loaders
            for c in self.calls:
                if not c.targets:
                    continue
                for t, a in self._same(c, tracked):
                    if (t and a and t != a and t not in roles.alias and roles.canon(a) in tracked
                            and (t not in tracked or t in self.by_usage) and roles.canon(a) != t):
                        roles.alias[t] = a
                        changed = True
            for e in self.events:
                if isinstance(e, Assign) and e.op == "=" and e.value_sym and e.target != e.value_sym:
                    v = roles.canon(e.value_sym)
                    if (e.target not in roles.alias and v in tracked and (e.target not in tracked or e.target in self.by_usage)
                            and v != e.target):
                        roles.alias[e.target] = v
                        changed = True
            if not changed:
                break
        for info in roles.optimizers.values():
            info.models = {roles.canon(m) for m in info.models}  # type: ignore[misc]
            for k, v in info.certain.items():
                info.certain[k] = {roles.canon(m) for m in v}  # type: ignore[misc]
            for k, v in info.by_ctor.items():
                if v is not None:
                    info.by_ctor[k] = {roles.canon(m) for m in v}  # type: ignore[misc]
            roles.models |= info.models
        for c in self.calls:
            if c.method == "scale" and c.receiver and roles.canon(c.receiver) in roles.scalers:
                roles.scaled_calls[id(c.node)] = roles.canon(c.receiver)
                for t in c.targets:
                    if t:
                        roles.scaled[t] = roles.canon(c.receiver)
        # a parameter given a scale() call (``self._backward(scaler.scale(loss))`` binds the
        # inlined ``loss`` to it): the binding is an assignment of that call's value
        for e in self.events:
            if isinstance(e, Assign) and e.op == "=" and e.target and id(e.value) in roles.scaled_calls:
                roles.scaled[e.target] = roles.scaled_calls[id(e.value)]

    def _summary(self, c: Call):
        """The summary of ``c`` (:func:`summary_of`), or, for a method of an untyped receiver
        named like an accelerator (``self.accelerator.prepare``), Accelerate's method's."""
        summary = summary_of(c, self.roles)
        if summary is None and c.receiver and ACCELERATOR_NAME.search(last(c.receiver)):
            summary = self.kb.method("accelerate.Accelerator", c.method or "")
        return summary

    def synced(self) -> None:
        """:attr:`Roles.synced`: the schedulers a call returns wrapped to step only when the
        accelerator's flag says the micro-step syncs (knowledge ``returns.synced``)."""
        roles = self.roles
        for c in self.calls:
            if not c.targets:
                continue
            summary = self._summary(c)
            if summary is None or summary.returns is None or summary.returns.get("synced") != "scheduler":
                continue
            for t in c.targets:
                sym = roles.canon(t) if t else None
                if sym in roles.schedulers:
                    roles.synced.setdefault(sym, []).append(c)

    def _same(self, c: Call, tracked: set[str]):
        """``(target, argument)`` pairs a call returns unchanged (its summary's ``same``)."""
        summary = self._summary(c)
        # an argument that is itself a call returning its receiver or argument names that
        # object: DDP(model.cuda()) returns model
        positional = [same_sym(a, self.roles) for a in c.args if a.keyword is None]
        if summary is not None:
            same = summary.returns.same if summary.returns is not None else ()
            for ref in same:
                if ref == "*":
                    if len(c.targets) == len(positional):
                        yield from zip(c.targets, positional)
                    elif len(c.targets) == 1 and positional:
                        yield c.targets[0], positional[0]
                elif ref == "self":
                    if len(c.targets) == 1:
                        yield c.targets[0], receiver_of(c)
                else:
                    a = arg_at(c, ref)
                    if a is not None and len(c.targets) == 1:
                        yield c.targets[0], same_sym(a, self.roles)
            return
        # a method of an object of unknown type named like a wrapper (self.accelerator.prepare)
        func = c.func or ""
        if c.inner is None and WRAPPERS.search(func):
            recv = c.receiver if not c.qualified else None
            if recv in tracked and len(c.targets) == 1:
                yield c.targets[0], recv
            elif len(c.targets) == len(positional):
                yield from zip(c.targets, positional)
            elif len(c.targets) == 1 and positional and positional[0] in tracked:
                yield c.targets[0], positional[0]

    # -- 4. losses ----------------------------------------------------------------------
    def losses(self) -> None:
        roles = self.roles
        for c in self.calls:
            if len(c.targets) >= 1 and c.targets[0] and c.inner is None and not c.qualified and (
                roles.canon(c.func) in roles.criteria
            ):
                roles.losses.add(c.targets[0])
            if c.method == "backward" or (c.qualified and c.func == "torch.autograd.backward"):
                for sym in self._backward_operands(c):
                    (roles.loss_containers if self._container(sym) else roles.losses).add(sym)
        # a name given a loss's value holds the same tensor (returned from a helper, re-bound)
        changed = True
        while changed:
            changed = False
            for e in self.events:
                if isinstance(e, Assign) and e.op == "=" and e.value_sym and e.target not in roles.losses:
                    if roles.canon(e.value_sym) in roles.losses or e.value_sym in roles.losses:
                        roles.losses.add(e.target)
                        changed = True
        # what is put into a list of losses that is backpropagated is a loss
        for c in self.calls:
            if c.method in ("append", "extend", "insert") and c.receiver and c.args and roles.canon(c.receiver) in roles.loss_containers:
                sym = c.args[-1].sym
                if sym and self._tensor(sym):
                    roles.losses.add(sym)
        # what flows into a loss through arithmetic is a loss tensor too (raw_loss in
        # ``loss = raw_loss + reg``), if it is a tensor computed here
        defs: dict[str, list[Assign]] = {}
        for e in self.events:
            if isinstance(e, Assign) and e.target and e.op in ("=", "AddAssign", "SubtractAssign", "MultiplyAssign", "DivideAssign"):
                defs.setdefault(e.target, []).append(e)
        todo = list(roles.losses)
        while todo:
            sym = todo.pop()
            for a in defs.get(sym, ()):
                for m in a.operands:
                    if m not in roles.losses and m not in roles.loss_containers and self._tensor(m):
                        (roles.loss_containers if self._container(m) else roles.losses).add(m)
                        todo.append(m)

    def _backward_operands(self, c: Call) -> list[str]:
        roles = self.roles
        if c.qualified:
            return [c.args[0].sym] if c.args and c.args[0].sym else []
        recv = c.receiver
        if recv is not None:
            if roles.canon(recv) in roles.accelerators or ACCELERATOR_NAME.search(last(recv)):
                return [c.args[0].sym] if c.args and c.args[0].sym else []
            if c.args and c.args[0].keyword is None and c.args[0].sym and "grad" not in c.args[0].sym:
                return []  # engine.backward(loss) of an unknown engine: handled by summaries
            return [recv]
        inner = c.inner
        if inner is not None:
            if inner.method == "scale" and inner.args and inner.args[0].sym:
                return [inner.args[0].sym]
            if inner.receiver:
                return [inner.receiver]
            if inner.operands:
                return self._loss_like(inner.operands)
            summary = self.kb.function(inner.func) if inner.qualified else None
            if summary is not None and summary.returns is not None and summary.returns.value == "derived":
                return [a.sym for a in inner.args if a.sym and a.keyword is None]
            return []
        return self._loss_like(c.operands)

    def _loss_like(self, operands) -> list[str]:
        """The operands of a backpropagated expression that are loss tensors: those named
        like a loss, or computed by a call here; ``accum_steps`` and ``args.scale`` are not."""
        out = [m for m in operands if LOSS_NAME.search(last(m)) or self._tensor(m)]
        return out

    def _tensor(self, sym: str) -> bool:
        """Whether ``sym`` holds a value computed here by a call or tensor arithmetic (not a
        number, a configuration attribute or a parameter)."""
        if LOSS_NAME.search(last(sym)) or sym in self.roles.losses:
            return True
        return any(kind in ("call", "part") for _mentions, kind in self.defs.get(sym, ()))

    def _container(self, sym: str) -> bool:
        return "append" in self.methods.get(sym, ()) or "extend" in self.methods.get(sym, ())

    def run(self) -> Roles:
        self.construct()
        self.usage()
        self.factories()
        self.aliases()
        self.synced()
        self.losses()
        self.param_variables()
        self.forget_graph_free()
        for loss in self.roles.losses:
            self.roles.provenance[loss] = self.provenance(loss)
        _derive_graphs(self.roles, self.events)
        return self.roles

    # -- 5. provenance of losses ------------------------------------------------------------
    def provenance(self, sym: str, _visiting: frozenset[str] = frozenset(),
                   _memo: dict[str, frozenset[str] | None] | None = None) -> frozenset[str] | None:
        """The models whose forward passes ``sym`` is computed from, following assignments, what
        is put into a list (``losses.append(loss)``: ``torch.stack(losses)`` is computed from
        ``loss``) and what a loop's target is drawn from (``for scale in d_out: loss +=
        scale.mean()`` is computed from ``d_out``, when ``d_out``'s own models are known);
        ``None`` when a call on the way could hide one (an opaque function or method).
        ``_visiting``: the symbols whose loops led here (a loop over itself is not followed);
        ``_memo``: what each iterated name was found to come from in this query, so that each is
        followed once (names that iterate one another otherwise make the work exponential in
        their number)."""
        roles = self.roles
        memo: dict[str, frozenset[str] | None] = {} if _memo is None else _memo
        models: set[str] = set()
        seen: set = set()  # (symbol, the id of the event that reads it, None: any)
        done: set[str] = set()  # symbols whose loops and stores were followed
        todo: list[tuple[str, RawEvent | None]] = [(sym, None)]

        def follow(calls) -> bool:
            """Add the models ``calls`` run forwards of; ``False`` when one is not understood."""
            for call in calls:
                if not self._understood(call):
                    return False
                f = roles.canon(call.func) if call.func and not call.qualified else None
                if f in roles.models:
                    models.add(f)
                recv = self._model_method_receiver(call)
                if recv is not None:
                    models.add(recv)  # ``critic.Q1(s, a)``: computed through the critic
            return True

        while todo:
            s, at = todo.pop()
            defs = self._reaching(s, at)
            key = (s, id(at) if defs is not None else None)
            if key in seen:
                continue
            seen.add(key)
            c = roles.canon(s)
            if c in roles.models:
                models.add(c)
                continue
            owner = self._owning_model(c)
            if owner is not None:
                models.add(owner)  # ``critic.Q1``: a member of the model, not what it was built from
                continue
            sources = self._defs_for(s)
            extra: list = []
            if defs is None and sources and "." not in s:
                found = self._other_bindings(s, sources)
                if found is None:
                    return None  # a binding whose value is not followed (a walrus, ``with ... as``)
                extra = found
            for d, src in sources if defs is None else defs:
                if not follow(src.calls):
                    return None
                todo.extend((n, d) for n in src.names)
            if s in done:
                continue  # (what its loops and its stores give does not depend on the read)
            done.add(s)
            for loop in self.loop_targets.get(s.partition(".")[0], ()) if not sources else extra:
                # ``for scale in outputs``: an element of what the loop iterates (through
                # ``enumerate``/``zip``...), when that is known to come from models; an iterable
                # whose origin is not known (a data loader built by a dataset class the
                # knowledge does not describe) adds nothing, as before loops were followed
                forwards, understood = self._drawn_from(loop)
                models.update(forwards)  # ``for loss, last in model(x)``: the elements come from its forward
                if not understood:
                    continue  # range(n): integers; another call: not followed
                for name in loop.iter_names:
                    if name in _visiting:
                        continue
                    if name not in memo:
                        memo[name] = frozenset()  # (while it is followed: a cycle back adds nothing)
                        memo[name] = self.provenance(name, _visiting | {sym}, memo)
                    if memo[name] is None:
                        return None  # what the loop draws from may hold a model's output unseen
                    models.update(memo[name])
            # a list filled by ``append``/``extend``/``insert`` holds what was put into it
            for store in self.stores.get(s, ()):
                value = store.args[0] if store.method == "extend" else store.args[-1]
                for node in calls_in_order(value.node):
                    raws = self.raw_calls.get(id(node))
                    if not raws or not follow(raws):
                        return None  # a call the events do not show, or one not understood
                todo.extend((n, None) for n in value.mentions)
        return frozenset(models)

    def forget_graph_free(self) -> None:
        """Empty the sources of the definitions computed without a graph
        (:meth:`computed_without_graph`): a loss computed from them reaches no model through them."""
        for defs in self.source_defs.values():
            for i, (d, _src) in enumerate(defs):
                if under_no_grad(d) and self.computed_without_graph(d):
                    defs[i] = (d, _NO_SOURCES)

    def computed_without_graph(self, e: RawEvent) -> bool:
        """Whether definition ``e`` (under ``no_grad``: :func:`under_no_grad`) is a new value made
        there by autograd's operations, which record nothing: linked to no model's parameters,
        whatever it is computed from (TD3's target action, ``with torch.no_grad(): next_action =
        actor(next_state)``, ``target = reward + gamma * critic(s, a)``). Only a call that makes
        a new tensor counts (:meth:`_makes_new_tensor`), or arithmetic on one: indexing a tuple
        made before (``outputs[0]``), a container display, an attribute, a function of the
        project or unknown return the objects they are given, with their graph."""
        if isinstance(e, Call):
            return self._makes_new_tensor(e)
        return e.value is not None and self._new_tensor_expr(e.value)

    def _new_tensor_expr(self, expr: cst.BaseExpression) -> bool:
        """Whether expression ``expr`` is a new tensor: a call that makes one, arithmetic or a
        comparison with one among its operands, a conditional expression whose arms both are."""
        if isinstance(expr, cst.Call):
            raws = [c for c in self.raw_calls.get(id(expr), ()) if c.node is expr]
            return bool(raws) and all(self._makes_new_tensor(c) for c in raws)
        if isinstance(expr, cst.BinaryOperation):
            return self._new_tensor_expr(expr.left) or self._new_tensor_expr(expr.right)
        if isinstance(expr, cst.UnaryOperation):
            return self._new_tensor_expr(expr.expression)
        if isinstance(expr, cst.Comparison):
            return self._new_tensor_expr(expr.left) or any(self._new_tensor_expr(c.comparator) for c in expr.comparisons)
        if isinstance(expr, cst.IfExp):
            return self._new_tensor_expr(expr.body) and self._new_tensor_expr(expr.orelse)
        return False

    def _makes_new_tensor(self, c: Call) -> bool:
        """Whether call ``c`` makes a new tensor: a forward of a model or a criterion, a function
        of torch the knowledge describes that returns none of its arguments (no ``same``, no
        ``shares``), a tensor method it describes that neither works in place (``add_``) nor
        returns its receiver (``to``, ``float``). A function of the project (it may return what
        it was given) or one nothing describes does not."""
        roles = self.roles
        if c.inlined:
            return False
        f = roles.canon(c.func) if c.func and not c.qualified else None
        if f in roles.models or f in roles.criteria:
            return True
        if c.qualified:
            summary = self.kb.callable(c.func) if (c.func or "").startswith("torch.") else None
        elif c.method and not c.method.endswith("_"):
            summary = self.kb.method("torch.Tensor", c.method)
        else:
            summary = None
        if summary is None:
            return False
        r = summary.returns
        return r is None or not r.same and r.get("shares") is None

    def _reaching(self, sym: str, at: RawEvent | None) -> list | None:
        """The definitions of local variable ``sym`` (with their sources) that can reach the
        event ``at`` that reads it, when a definition *dominates* ``at``: it runs before ``at``
        in the same iteration of the same loops, under no ``if`` that ``at`` is not under, in the
        same call, in the same arm of each ``if`` around it (``state = torch.tensor(state)``
        before ``critic(state, action)``). Every
        path to ``at`` then passes it, so only it and the definitions between them reach ``at``:
        what the name held before (a replay buffer's sample) is not what ``at`` reads. ``None``
        when no definition dominates (an attribute, ``self.x``, which other names of its object
        may set; a name of the module read outside loops; a definition in an arm or a ``try``;
        a binding between them that is no definition here, as a ``for`` target, a walrus, ``with
        ... as``, ``except ... as``, a ``match`` capture, an import or ``del``): then every
        definition counts."""
        if at is None or "." in sym:
            return None  # (an attribute may be set through another name of its object)
        defs = self.source_defs.get(sym)
        pos = self.order.get(id(at))
        if not defs or pos is None or ":" not in sym and not at.ctx.loops:
            # a name of the module, read outside loops: it may be read in a function that
            # runs before or after the module's code assigns it (a loop is one unit's)
            return None
        spans = self._code_spans()
        dominating = [i for i, (d, _) in enumerate(defs)
                      if self.order.get(id(d), pos) < pos and _rebinds(d) and _dominates(d, at, spans)
                      and self._unguarded(d)]
        if not dominating:
            return None
        start = defs[max(dominating, key=lambda i: self.order[id(defs[i][0])])][0]
        first = self.order[id(start)]
        reaching = [(d, src) for d, src in defs if first <= self.order.get(id(d), pos) < pos]
        if spans.binds_between(sym.rpartition(":")[2], start.node, at.node, [d.node for d, _ in reaching]):
            return None  # a re-binding with no definition here (a ``for`` target, a walrus, ``with ... as``)
        return reaching

    def _other_bindings(self, sym: str, sources: list) -> list | None:
        """The bindings of local variable ``sym`` in its scope that are none of its definitions
        ``sources`` (whose values the provenance follows): the loops whose ``for`` target binds
        it, to be followed as the loops of a name with no definition are; ``None`` when another
        form binds it (a walrus, ``with ... as``, ``except ... as``, a ``match`` capture, an
        import, an assignment whose value gave no definition) or a ``for`` whose body the
        events do not show: what it binds is not known. ``del`` and a star import that does
        not bind the name give it no value (:meth:`_binds_no_value`). ``[]`` when the
        definitions' code is not in this module (an inlined function of another)."""
        memo = self._bindings_memo.get(sym, False)
        if memo is not False:
            return memo
        spans = self._code_spans()
        nodes = [d.node for d, _ in sources]
        loops_by_node = self._loops_by_node()
        found: list | None = []
        name = sym.rpartition(":")[2]
        for site in spans.sites_in_scope(name, nodes[0]):
            if isinstance(site, (cst.Assign, cst.AnnAssign, cst.AugAssign)) and any(spans.within(n, site) for n in nodes):
                continue
            if self._binds_no_value(site, name):
                continue
            loop = loops_by_node.get(id(site)) if isinstance(site, cst.For) else None
            if loop is None:
                found = None
                break
            found.append(loop)
        self._bindings_memo[sym] = found
        return found

    def _binds_no_value(self, site: cst.CSTNode, name: str) -> bool:
        """Whether binding site ``site`` of ``name`` gives it no value to follow: ``del name``
        (the name is unbound after it, a read raises), or a star import (at a module's level)
        when the names the module's star imports may bind are known, each of the project
        (:meth:`~loopcheck.engine.project.Project.stars_bind`), and ``name`` is not among them."""
        if isinstance(site, cst.Del):
            return True
        if not (isinstance(site, cst.ImportFrom) and isinstance(site.names, cst.ImportStar)):
            return False
        project, path = getattr(self.index, "project", None), getattr(self.index, "path", None)
        if project is None or path is None:
            return False
        bound = project.stars_bind(path)
        return bound is not None and name not in bound

    def _loops_by_node(self) -> dict[int, object]:
        """``id(for statement) →`` its :class:`~loopcheck.engine.ir.LoopInfo`, for the loops
        around some event."""
        if self._loop_infos is None:
            self._loop_infos = {}
            for e in self.events:
                for loop in e.ctx.loops:
                    self._loop_infos.setdefault(id(loop.node), loop)
        return self._loop_infos

    def _code_spans(self) -> _Spans:
        """The order of this module's nodes and its binding sites (:class:`_Spans`), made once."""
        if self._spans is None:
            self._spans = _Spans(getattr(self.index, "tree", None))
        return self._spans

    def _unguarded(self, d: RawEvent) -> bool:
        """Whether definition ``d`` is in the entry function's own body (not in an inlined call,
        whose function may be another module's) and in no ``try`` statement of this module
        (whose body may stop before it, and whose other blocks run only on some paths):
        :func:`_dominates` knows nothing of ``try``."""
        if d.ctx.calls:
            return False
        if self._guarded is None:
            self._guarded = _nodes_in_try(getattr(self.index, "tree", None))
        return id(d.node) not in self._guarded

    def _drawn_from(self, loop) -> tuple[set[str], bool]:
        """What a ``for`` loop's iterable draws its elements from: the models whose forward
        calls in it (``model`` for ``for loss, last in model(x):``, a forward that returns or
        yields losses), and whether the engine understands every other call in it
        (:meth:`_understood`; the iteration builtins, ``enumerate``, ``zip``, are); when it does
        not (``range(n)``, a loader of a class no knowledge describes), the names the iterable
        reads are not followed."""
        if set(loop.iter_calls) <= ITERATION_BUILTINS:
            return set(), True
        iterable = getattr(loop.node, "iter", None)
        if iterable is None:
            return set(), False
        forwards: set[str] = set()
        understood = True
        for node in calls_in_order(iterable):
            raws = self.raw_calls.get(id(node))
            if not raws:
                understood = False  # a call the events do not show
            for c in raws or ():
                f = self.roles.canon(c.func) if c.func and not c.qualified else None
                if f in self.roles.models:
                    forwards.add(f)
                elif not (c.qualified and c.func in ITERATION_BUILTINS) and not self._understood(c):
                    understood = False
        return forwards, understood

    def _defs_for(self, sym: str) -> list:
        """The definitions of ``sym`` with their sources (``(event, sources)``), or of the
        object it is a member of (``outputs.loss``: what ``outputs`` is computed from)."""
        while True:
            if sym in self.source_defs:
                return self.source_defs[sym]
            if "." not in sym:
                return []
            sym = sym.rpartition(".")[0]

    def _understood(self, c: Call) -> bool:
        """Whether the engine knows which models a call's result can come from: a forward, a
        criterion, a function of the project it read, a library function it has an entry for,
        or a tensor method."""
        roles = self.roles
        if c.inlined:
            return True
        f = roles.canon(c.func) if c.func and not c.qualified else None
        if f in roles.models or f in roles.criteria:
            return True
        if c.qualified:
            return self.kb.callable(c.func) is not None
        recv = c.receiver
        if recv is not None and (recv.startswith("self@") or roles.role(roles.canon(recv)) or recv in roles.types):
            return summary_of(c, roles) is not None or self._model_method_receiver(c) is not None
        if recv is None and c.inner is None and not c.operands:
            return False  # a function no one here defines or describes
        # a method of a value: a tensor method (out.pow(2).mean()) is understood, not mem.sample()
        return self.kb.method("torch.Tensor", c.method or "") is not None

    def _owning_model(self, sym: str) -> str | None:
        """The model ``sym`` is a member of (``critic`` for ``critic.Q1``, a method bound to it,
        or an attribute of it), the nearest enclosing one, or ``None``. A member's values come
        from the model itself: the provenance adds that model rather than following the model's
        own definition (``critic = copy.deepcopy(self.critic)`` builds new parameters, which
        are not ``self.critic``'s)."""
        roles = self.roles
        while "." in sym:
            sym = sym.rpartition(".")[0]
            canon = roles.canon(sym)
            if canon in roles.models:
                return canon
        return None

    def _model_method_receiver(self, c: Call) -> str | None:
        """The model whose method ``c`` calls, when nothing describes that method (a method
        its class defines beside ``forward``, TD3's ``critic.Q1(state, action)``, on a model
        whose class the engine did not follow: a ``copy.deepcopy`` of one, an attribute set in
        another method). Like a forward, such a method computes its result through the
        model's own parameters (its submodules are parts of it) and its arguments, whose models
        the provenance follows on its own: the receiver is the one model it adds. ``None``
        for a call of no model's method, or one a knowledge entry describes (what that entry
        says is what counts), or one inlined (its body's calls are followed instead)."""
        roles = self.roles
        if c.inlined or c.qualified or c.inner is not None or c.operands or not c.method or c.receiver is None:
            return None
        recv = roles.canon(c.receiver)
        if recv not in roles.models or summary_of(c, roles) is not None:
            return None
        return recv

    def param_variables(self) -> None:
        """``params = list(model.parameters())``: a variable holding a model's parameters."""
        memo: dict = {}  # the models do not change here
        for sym in self.defs:
            models, _known = self.param_models(frozenset({sym}), memo=memo)
            if models:
                self.roles.param_sources[sym] = {self.roles.canon(m) for m in models}  # type: ignore[misc]


def _derive_graphs(roles: Roles, events: list[RawEvent]) -> None:
    """Set ``roles.graph``, ``roles.graph_stores`` and ``roles.keepers`` from the raw events."""
    roles.graph, stores = graph_stores(events, roles)
    roles.graph_stores = {id(st.raw): st for st in stores}
    roles.keepers = frozenset(st.container for st in stores)


def know_models_without_parameters(roles: Roles, events: list[RawEvent], models: frozenset[str]) -> None:
    """Record that ``models`` hold no parameters and derive the graph fact again: a forward of
    such a model gives a graph only through inputs that carry one (which models hold none is
    known only once the units' events are typed, after the roles)."""
    roles.parameterless = frozenset(models)
    _derive_graphs(roles, events)


def infer_roles(index: ModuleIndex, events: list[RawEvent], outside: frozenset[str] = frozenset()) -> Roles:
    """Infer the roles of every symbol from the raw events of all units of one file;
    ``outside``: the symbols of parameters whose values the callers give
    (:func:`~loopcheck.engine.ir.outside_values`)."""
    return _Inference(index, events, outside=outside).run()
