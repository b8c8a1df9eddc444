"""Build the event IR of a file: one unit per entry point, called functions inlined.

An *entry point* is the module's top-level code, or a function or method that no code of
the same file calls by name (a ``train()`` run by a framework, a Trainer method called from
elsewhere). Calls to functions, methods (``self.validate()``) and classes (``Trainer(...)``
runs ``__init__``) of the same file are inlined with their parameters bound to the
caller's symbols, so a loop split into ``train_one_epoch()`` and ``evaluate()`` reads as
one loop.

Symbols are dotted names scoped to where they live: module globals keep their name
(``model``), a function's locals get its frame id (``f3:model``), and ``self`` inside
methods of class ``Trainer`` is ``self@Trainer`` whoever calls them.
"""

from __future__ import annotations

import builtins
from dataclasses import dataclass, field, replace
from itertools import count

import libcst as cst

from loopcheck.engine.ir import (
    Sources,
    Arg,
    Assign,
    Call,
    Context,
    If,
    Inline,
    Jump,
    Loop,
    LoopInfo,
    Node,
    Seq,
    Try,
)
from loopcheck.engine.knowledge import knowledge
from loopcheck.engine.names import ImportMap, dotted_name
from loopcheck.engine.walk import calls_in_order, children, dotted_chains, small_statements

BUILTINS = frozenset(dir(builtins))
MAX_INLINE_DEPTH = 6
MAX_EVENTS_PER_UNIT = 20_000


@dataclass
class ClassInfo:
    node: cst.ClassDef
    methods: dict[str, cst.FunctionDef]
    bases: tuple[str, ...]  # qualified names of the base classes


@dataclass
class ModuleIndex:
    """What one module defines: imports, top-level functions and classes, global names."""

    imports: ImportMap
    functions: dict[str, cst.FunctionDef]
    classes: dict[str, ClassInfo]
    globals: set[str]
    body: list[cst.BaseStatement]
    method_class: dict[cst.FunctionDef, str] = field(default_factory=dict)

    def method(self, cls: str, name: str, _seen: frozenset = frozenset()) -> tuple[str, cst.FunctionDef] | None:
        """Find method ``name`` on class ``cls`` or on its bases defined in this file."""
        info = self.classes.get(cls)
        if info is None or cls in _seen:
            return None
        if name in info.methods:
            return cls, info.methods[name]
        for base in info.bases:
            found = self.method(base, name, _seen | {cls})
            if found:
                return found
        return None


def _assigned_names(target: cst.BaseExpression, out: set[str]) -> None:
    if isinstance(target, cst.Name):
        out.add(target.value)
    elif isinstance(target, (cst.Tuple, cst.List)):
        for el in target.elements:
            _assigned_names(el.value, out)
    elif isinstance(target, cst.StarredElement):
        _assigned_names(target.value, out)


def bound_names(body: cst.CSTNode) -> tuple[set[str], set[str]]:
    """``(names bound, names declared global/nonlocal)`` by the statements of a function
    body or module statement, not entering nested functions or classes (whose names are
    their own). Only statements are visited: expressions bind nothing that outlives them
    (walrus targets aside, which are rare in training loops)."""
    names: set[str] = set()
    declared: set[str] = set()

    def block(suite) -> None:
        for st in getattr(suite, "body", ()):
            stmt(st)

    def stmt(st) -> None:
        t = type(st)
        if t is cst.FunctionDef or t is cst.ClassDef:
            names.add(st.name.value)
        elif t is cst.SimpleStatementLine or t is cst.SimpleStatementSuite:
            for small in st.body:
                ts = type(small)
                if ts is cst.Assign:
                    for target in small.targets:
                        _assigned_names(target.target, names)
                elif ts is cst.AnnAssign or ts is cst.AugAssign:
                    _assigned_names(small.target, names)
                elif ts is cst.Global or ts is cst.Nonlocal:
                    declared.update(x.name.value for x in small.names)
        elif t is cst.If:
            block(st.body)
            if st.orelse is not None:
                stmt(st.orelse) if type(st.orelse) is cst.If else block(st.orelse.body)
        elif t is cst.For:
            _assigned_names(st.target, names)
            block(st.body)
            if st.orelse is not None:
                block(st.orelse.body)
        elif t is cst.While:
            block(st.body)
            if st.orelse is not None:
                block(st.orelse.body)
        elif t is cst.With:
            for item in st.items:
                if item.asname is not None:
                    _assigned_names(item.asname.name, names)
            block(st.body)
        elif t is cst.Try or t.__name__ == "TryStar":
            block(st.body)
            for h in st.handlers:
                if h.name is not None:
                    _assigned_names(h.name.name, names)
                block(h.body)
            for part in (st.orelse, st.finalbody):
                if part is not None:
                    block(part.body)
        elif t is cst.Match:
            for case in st.cases:
                block(case.body)

    if isinstance(body, (cst.IndentedBlock, cst.SimpleStatementSuite)):
        block(body)
    else:
        stmt(body)
    return names, declared


def is_generator(func: cst.FunctionDef) -> bool:
    """Whether ``func`` is a generator: a ``yield`` statement or ``x = yield ...`` in its body
    (not counting nested functions)."""
    for small in small_statements(func.body, nested=False):
        value = getattr(small, "value", None)
        if type(value) is cst.Yield:  # ``yield x``, ``y = yield x``
            return True
    return False


def _param_names(func: cst.FunctionDef) -> list[str]:
    p = func.params
    return [x.name.value for x in (*p.posonly_params, *p.params)]


def _all_param_names(func: cst.FunctionDef) -> list[str]:
    p = func.params
    names = [x.name.value for x in (*p.posonly_params, *p.params, *p.kwonly_params)]
    for star in (p.star_arg, p.star_kwarg):
        if isinstance(star, cst.Param):
            names.append(star.name.value)
    return names


def index_module(module: cst.Module) -> ModuleIndex:
    """Collect imports (anywhere in the file), top-level functions, classes and globals."""
    imports = ImportMap()
    for node in small_statements(module):
        if type(node) is cst.Import or type(node) is cst.ImportFrom:
            imports.add(node)
    functions: dict[str, cst.FunctionDef] = {}
    classes: dict[str, ClassInfo] = {}
    method_class: dict[cst.FunctionDef, str] = {}
    global_names: set[str] = set()
    for stmt in module.body:
        if isinstance(stmt, cst.FunctionDef):
            functions[stmt.name.value] = stmt
        elif isinstance(stmt, cst.ClassDef):
            methods = {
                s.name.value: s for s in stmt.body.body if isinstance(s, cst.FunctionDef)
            }
            bases = tuple(
                q for q in (imports.qualify(dotted_name(a.value)) for a in stmt.bases) if q
            )
            classes[stmt.name.value] = ClassInfo(stmt, methods, bases)
            for m in methods.values():
                method_class[m] = stmt.name.value
        global_names |= bound_names(stmt)[0] if not isinstance(stmt, (cst.FunctionDef, cst.ClassDef)) else {stmt.name.value}
    return ModuleIndex(imports, functions, classes, global_names, list(module.body), method_class)


@dataclass
class Callee:
    """A function of the project a call runs: the function, the symbol and class ``self`` is
    bound to (methods and constructors), and the frame it was defined in (closures)."""

    func: cst.FunctionDef
    self_sym: str | None = None
    cls: str | None = None
    parent: "Frame | None" = None


@dataclass
class Frame:
    """One activation of a function being built: how its names map to symbols."""

    fid: str
    subst: dict[str, str]
    locals: set[str]
    self_class: str | None = None
    defs: dict[str, cst.FunctionDef] = field(default_factory=dict)
    parent: "Frame | None" = None
    return_targets: tuple[str | None, ...] = ()
    instances: dict[str, str] = field(default_factory=dict)  # symbol -> local class name
    literal_params: set[str] = field(default_factory=set)  # unbound parameters with a numeric default
    name: str | None = None  # the function's name (None: module level)




class UnitBuilder:
    """Builds the IR of one entry point (see module docstring)."""

    def __init__(self, index: ModuleIndex) -> None:
        self.index = index
        self._ids = count(1)
        self._stack: list[cst.CSTNode] = []
        self.n_events = 0
        self.called: set[cst.FunctionDef] = set()
        self._locals: dict[int, tuple[set[str], set[str]]] = {}
        self._generators: dict[cst.FunctionDef, bool] = {}
        # per-expression caches: an inlined function is rebuilt at every call site
        self._calls: dict[cst.CSTNode, list[cst.Call]] = {}
        self._chains: dict[cst.CSTNode, list[str]] = {}
        # symbols bound to a nested function returned by an inlined call (closures)
        self.func_values: dict[str, tuple[cst.FunctionDef, Frame]] = {}
        self._raw_of: dict[cst.Call, Call] = {}  # the latest raw event of each call node

    # -- symbols -------------------------------------------------------------------------
    def resolve(self, frame: Frame, dotted: str | None) -> tuple[str | None, bool]:
        """Map a dotted name in ``frame`` to ``(symbol, qualified)``; qualified names
        come from imports (``torch.optim.Adam``)."""
        if dotted is None:
            return None, False
        head, dot, rest = dotted.partition(".")
        f: Frame | None = frame
        while f is not None:
            if head in f.subst:
                return f.subst[head] + dot + rest, False
            if head in f.locals:
                base = f"{f.fid}:{head}" if f.fid else head
                return base + dot + rest, False
            f = f.parent
        if head in self.index.imports.aliases and head not in self.index.globals:
            return self.index.imports.qualify(dotted), True
        if head in BUILTINS and head not in self.index.globals:
            return dotted, True
        return dotted, False

    def operands(self, frame: Frame, expr: cst.BaseExpression) -> tuple[str, ...]:
        """The symbols an expression computes its value from, through arithmetic, indexing,
        methods called on them and calls that derive their result from their arguments
        (``(loss / n)`` → ``loss``, ``n``; ``losses[-1]``, ``sum(losses)`` → ``losses``;
        ``loss.mean()`` → ``loss``); not through other calls (``model(x)`` is a new value)."""
        out: list[str] = []
        stack = [expr]
        kb = knowledge()
        while stack:
            e = stack.pop()
            t = type(e)
            if t is cst.Name or t is cst.Attribute:
                dotted = dotted_name(e)
                if dotted is None:
                    stack.append(e.value)
                    continue
                sym, q = self.resolve(frame, dotted)
                if sym and not q:
                    out.append(sym)
            elif t is cst.BinaryOperation:
                stack += [e.right, e.left]
            elif t is cst.UnaryOperation:
                stack.append(e.expression)
            elif t is cst.Subscript:
                stack.append(e.value)
            elif t is cst.Call:
                if isinstance(e.func, cst.Attribute) and dotted_name(e.func) is None:
                    stack.append(e.func.value)  # (a + b).mean(), losses[0].sum()
                    continue
                q, qualified = self.resolve(frame, dotted_name(e.func))
                summary = kb.function(q) if qualified else None
                if summary is not None and summary.returns is not None and summary.returns.value == "derived":
                    stack += [a.value for a in reversed(e.args) if a.keyword is None]
                elif isinstance(e.func, cst.Attribute) and not qualified:
                    stack.append(e.func.value)  # loss.mean(), outputs.loss.float()
            elif t is cst.List or t is cst.Tuple:
                stack += [el.value for el in reversed(e.elements)]
        return tuple(dict.fromkeys(out))

    def sources(self, frame: Frame, expr: cst.BaseExpression) -> Sources:
        """What ``expr`` computes its value from, leaving out the parts it detaches
        (``G(z).detach()``, ``loss.item()``, ``p.data``): the symbols read and the calls made."""
        names: set[str] = set()
        calls: list[Call] = []
        kb = knowledge()
        stack: list[cst.CSTNode] = [expr]
        while stack:
            e = stack.pop()
            t = type(e)
            if t is cst.Name or t is cst.Attribute:
                dotted = dotted_name(e)
                if dotted is not None:
                    sym, q = self.resolve(frame, dotted)
                    if sym and not q and dotted not in ("True", "False", "None"):
                        names.add(sym)
                    continue
                if e.attr.value != "data":
                    stack.append(e.value)
                continue
            if t is cst.Lambda:
                continue
            if t is cst.Call:
                f = e.func
                stack.extend(a.value for a in e.args)
                if isinstance(f, cst.Attribute):
                    m = kb.method("torch.Tensor", f.attr.value)
                    if m is not None and m.returns is not None and m.returns.value in ("number", "detached"):
                        continue  # x.detach(), x.item(): nothing of x flows on
                raw = self._raw_of.get(e)
                if raw is not None:
                    calls.append(raw)
                stack.append(f)
                continue
            stack.extend(children(e))
        return Sources(frozenset(names), tuple(calls))

    def mentions(self, frame: Frame, expr: cst.CSTNode) -> frozenset[str]:
        out = set()
        chains = self._chains.get(expr)
        if chains is None:
            chains = self._chains[expr] = dotted_chains(expr)
        for chain in chains:
            if chain in ("True", "False", "None"):
                continue
            sym, qualified = self.resolve(frame, chain)
            if sym and not qualified:
                out.add(sym)
        return frozenset(out)

    def _target_sym(self, frame: Frame, target: cst.BaseExpression) -> str | None:
        sym, qualified = self.resolve(frame, dotted_name(target))
        return None if qualified else sym

    def _target_syms(self, frame: Frame, target: cst.BaseExpression) -> tuple[str | None, ...]:
        """The symbols an assignment target binds: one per element of a tuple target
        (``None`` for nested tuples, subscripts and starred elements)."""
        if isinstance(target, (cst.Tuple, cst.List)):
            return tuple(
                None if isinstance(el.value, (cst.Tuple, cst.List)) else self._target_sym(frame, el.value)
                for el in target.elements
            )
        return (self._target_sym(frame, target),)

    # -- expressions ---------------------------------------------------------------------
    def expr_events(
        self, frame: Frame, expr: cst.CSTNode | None, ctx: Context, out: list[Node],
        targets: tuple[str | None, ...] = (),
    ) -> dict[cst.Call, Call]:
        """Append the call events of ``expr`` to ``out``; ``targets`` go to its outermost call."""
        if expr is None:
            return {}
        made: dict[cst.Call, Call] = {}
        calls = self._calls.get(expr)
        if calls is None:
            calls = self._calls[expr] = calls_in_order(expr)
        for call in calls:
            tgt = targets if call is expr else ()
            node = self.make_call(frame, call, ctx, made, tgt)
            if node is not None:
                out.append(node)
        return made

    def make_call(
        self, frame: Frame, call: cst.Call, ctx: Context, made: dict[cst.Call, Call],
        targets: tuple[str | None, ...],
    ) -> Node | None:
        inner = None
        operands: tuple[str, ...] = ()
        func_expr = call.func
        if isinstance(func_expr, cst.Attribute) and isinstance(func_expr.value, cst.Call):
            inner = made.get(func_expr.value)
            func, qualified = "." + func_expr.attr.value, False
        elif isinstance(func_expr, cst.Attribute) and dotted_name(func_expr) is None:
            # a method on an expression: (loss / n).backward(), losses[-1].backward()
            func, qualified = "." + func_expr.attr.value, False
            operands = self.operands(frame, func_expr.value)
        else:
            func, qualified = self.resolve(frame, dotted_name(func_expr))
        args = []
        for a in call.args:
            sym, q = self.resolve(frame, dotted_name(a.value))
            args.append(
                Arg(
                    a.keyword.value if a.keyword else None,
                    a.value,
                    None if q or a.star else sym,
                    self.mentions(frame, a.value),
                    _is_literal(a.value, frame.literal_params),
                )
            )
        raw = Call(call, func, args, ctx, targets, inner, qualified, operands=operands)
        made[call] = raw
        self._raw_of[call] = raw
        if targets:
            raw.sources = self.sources(frame, call)
        self.n_events += 1
        inlined = self.try_inline(frame, raw, ctx)
        if inlined is None:
            return raw
        raw.inlined = True  # kept for the roles (Trainer(...), scheduler.step() of a local class)
        return Seq([raw, inlined])

    # -- inlining ------------------------------------------------------------------------
    def _callee(self, frame: Frame, raw: Call) -> Callee | None:
        """The function of the project a call runs, with how to bind it, else ``None``."""
        if raw.func is None or raw.inner is not None:
            return None
        dotted = dotted_name(raw.node.func)
        if dotted is None:
            return None
        head, _, rest = dotted.partition(".")
        if not rest:
            sym, _q = self.resolve(frame, head)
            if sym in self.func_values:  # train_op = make_train_op(...); train_op()
                func, closure = self.func_values[sym]
                return Callee(func, parent=closure)
            f: Frame | None = frame
            while f is not None:
                if head in f.defs:
                    return Callee(f.defs[head], parent=f)
                if head in f.locals or head in f.subst:
                    return None
                f = f.parent
            if head in self.index.functions:
                return Callee(self.index.functions[head])
            if head in self.index.classes:
                found = self.index.method(head, "__init__")
                if found:
                    return Callee(found[1], f"self@{found[0]}", found[0])
            return None
        if "." in rest:
            return None
        recv_sym, _ = self.resolve(frame, head)
        cls = None
        if recv_sym is not None and recv_sym.startswith("self@"):
            cls = recv_sym[5:]
        elif recv_sym in frame.instances:
            cls = frame.instances[recv_sym]
        if cls is None:
            return None
        found = self.index.method(cls, rest)
        if found is None:
            return None
        return Callee(found[1], f"self@{found[0]}", found[0])

    def try_inline(self, frame: Frame, raw: Call, ctx: Context) -> Node | None:
        callee = self._callee(frame, raw)
        if callee is None:
            return None
        func, self_sym, cls = callee.func, callee.self_sym, callee.cls
        if func not in self._generators:
            self._generators[func] = is_generator(func)
        if self._generators[func]:
            return None  # its body runs at next(), not at the call
        if func in self._stack or len(self._stack) >= MAX_INLINE_DEPTH:
            return None
        if self.n_events > MAX_EVENTS_PER_UNIT:
            return None
        self.called.add(func)
        is_init = func.name.value == "__init__" and dotted_name(raw.node.func) in self.index.classes
        if is_init and raw.targets and raw.targets[0]:
            frame.instances[raw.targets[0]] = cls
        return self.inline(frame, func, raw, ctx, self_sym, cls, () if is_init else raw.targets, callee.parent)

    def new_frame(
        self, func: cst.FunctionDef, parent: Frame | None, subst: dict[str, str],
        self_cls: str | None,
    ) -> Frame:
        key = id(func)
        if key not in self._locals:
            self._locals[key] = bound_names(func.body)
        names, declared = self._locals[key]
        fid = f"f{next(self._ids)}"
        local_names = (names | set(_all_param_names(func))) - declared - set(subst)
        defs = {s.name.value: s for s in func.body.body if isinstance(s, cst.FunctionDef)}
        return Frame(fid, subst, local_names, self_cls, defs, parent, name=func.name.value)

    def inline(
        self, frame: Frame, func: cst.FunctionDef, raw: Call, ctx: Context,
        self_sym: str | None, cls: str | None, targets: tuple[str | None, ...],
        parent: Frame | None = None,
    ) -> Inline:
        params = _param_names(func)
        subst: dict[str, str] = {}
        bound: dict[str, Arg] = {}  # parameters given an expression (model.parameters())
        positional = [a for a in raw.args if a.keyword is None]
        if self_sym is not None and params:
            subst[params[0]] = self_sym
            params = params[1:]
        if any(isinstance(a.node, cst.StarredElement) for a in positional):
            positional = []
        for name, arg in zip(params, positional):
            if arg.sym is not None:
                subst[name] = arg.sym
            else:
                bound[name] = arg
        for arg in raw.args:
            if arg.keyword and arg.sym is not None:
                subst[arg.keyword] = arg.sym
            elif arg.keyword:
                bound[arg.keyword] = arg
        if parent is None:
            parent = self._lexical_parent(frame, func)
        callee = self.new_frame(func, parent, subst, cls)
        p = func.params
        callee.literal_params = {
            x.name.value for x in (*p.params, *p.kwonly_params)
            if x.name.value not in subst and x.default is not None and _is_literal(x.default, set())
        }
        callee.return_targets = targets
        callee.instances = frame.instances
        inner_ctx = replace(ctx, calls=ctx.calls + (raw.node,))
        self._stack.append(func)
        try:
            body = self.function_body(callee, func, inner_ctx)
        finally:
            self._stack.pop()
        binds = [
            Assign(raw.node, f"{callee.fid}:{name}", "=", arg.node, None, "call" if isinstance(arg.node, cst.Call) else "expr",
                   arg.mentions, inner_ctx, operands=self.operands(frame, arg.node))
            for name, arg in bound.items() if name in callee.locals
        ]
        if binds:
            body.items[:0] = binds
        return Inline(func, body)

    def _lexical_parent(self, frame: Frame, func: cst.FunctionDef) -> Frame | None:
        f: Frame | None = frame
        while f is not None:
            if func in f.defs.values():
                return f
            f = f.parent
        return None

    def function_body(self, frame: Frame, func: cst.FunctionDef, ctx: Context) -> Seq:
        grad = ctx.grad
        for dec in func.decorators:
            grad = self.with_grad(frame.parent or frame, dec.decorator, grad)
        inner_ctx = replace(ctx, grad=grad)
        return self.block(frame, func.body, inner_ctx)

    # -- entry points --------------------------------------------------------------------
    def module_unit(self) -> Seq:
        frame = Frame("", {}, set(self.index.globals), None,
                      dict(self.index.functions), None)
        stmts = [s for s in self.index.body if not isinstance(s, (cst.FunctionDef, cst.ClassDef))]
        return self.stmts(frame, stmts, Context())

    def function_unit(self, func: cst.FunctionDef) -> Seq:
        cls = self.index.method_class.get(func)
        subst: dict[str, str] = {}
        params = _param_names(func)
        if cls is not None and params and not any(
            dotted_name(d.decorator) == "staticmethod" for d in func.decorators
        ):
            subst[params[0]] = f"self@{cls}"
        frame = self.new_frame(func, None, subst, cls)
        self._stack.append(func)
        try:
            return self.function_body(frame, func, Context())
        finally:
            self._stack.pop()

    # -- statements ----------------------------------------------------------------------
    def block(self, frame: Frame, body: cst.BaseSuite, ctx: Context) -> Seq:
        if isinstance(body, cst.SimpleStatementSuite):
            return self.small_stmts(frame, body.body, ctx)
        return self.stmts(frame, body.body, ctx)

    def stmts(self, frame: Frame, stmts, ctx: Context) -> Seq:
        seq = Seq()
        for stmt in stmts:
            self.stmt(frame, stmt, ctx, seq.items)
        return seq

    def small_stmts(self, frame: Frame, stmts, ctx: Context) -> Seq:
        seq = Seq()
        for s in stmts:
            self.small_stmt(frame, s, ctx, seq.items)
        return seq

    def stmt(self, frame: Frame, stmt: cst.CSTNode, ctx: Context, out: list[Node]) -> None:
        if isinstance(stmt, cst.SimpleStatementLine):
            for s in stmt.body:
                self.small_stmt(frame, s, ctx, out)
        elif isinstance(stmt, cst.If):
            self.if_stmt(frame, stmt, ctx, out)
        elif isinstance(stmt, cst.For):
            self.expr_events(frame, stmt.iter, ctx, out)
            info = self.loop_info(frame, stmt, stmt.target, stmt.iter)
            inner = replace(ctx, loops=ctx.loops + (info,), conds=())
            body = self.block(frame, stmt.body, inner)
            orelse = self.block(frame, stmt.orelse.body, ctx) if stmt.orelse else Seq()
            out.append(Loop(info, body, orelse))
        elif isinstance(stmt, cst.While):
            info = self.loop_info(frame, stmt, None, stmt.test)
            inner = replace(ctx, loops=ctx.loops + (info,), conds=())
            body = Seq()
            self.expr_events(frame, stmt.test, inner, body.items)
            body.items.extend(self.block(frame, stmt.body, inner).items)
            orelse = self.block(frame, stmt.orelse.body, ctx) if stmt.orelse else Seq()
            infinite = isinstance(stmt.test, cst.Name) and stmt.test.value == "True" or (
                isinstance(stmt.test, cst.Integer) and stmt.test.value != "0"
            )
            out.append(Loop(info, body, orelse, infinite))
        elif isinstance(stmt, cst.With):
            grad = ctx.grad
            for item in stmt.items:
                grad = self.with_grad(frame, item.item, grad)
                if item.asname is not None:
                    targets = self._target_syms(frame, item.asname.name)
                    self.expr_events(frame, item.item, ctx, out, targets)
            inner = replace(ctx, grad=grad)
            out.extend(self.block(frame, stmt.body, inner).items)
        elif isinstance(stmt, cst.Try) or isinstance(stmt, getattr(cst, "TryStar", ())):
            body = self.block(frame, stmt.body, ctx)
            handlers = [self.block(frame, h.body, ctx) for h in stmt.handlers]
            orelse = self.block(frame, stmt.orelse.body, ctx) if stmt.orelse else Seq()
            final = self.block(frame, stmt.finalbody.body, ctx) if stmt.finalbody else Seq()
            out.append(Try(body, handlers, orelse, final))
        elif isinstance(stmt, cst.Match):
            self.expr_events(frame, stmt.subject, ctx, out)
            branches = [self.block(frame, c.body, replace(ctx, conds=ctx.conds + (stmt,))) for c in stmt.cases]
            node: Node = Seq()
            for branch in reversed(branches):
                node = If(stmt, branch, node if isinstance(node, Seq) else Seq([node]))
            out.append(node)
        # FunctionDef / ClassDef: definitions are not executed here.

    def if_stmt(self, frame: Frame, stmt: cst.If, ctx: Context, out: list[Node]) -> None:
        self.expr_events(frame, stmt.test, ctx, out)
        inner = replace(ctx, conds=ctx.conds + (stmt,))
        body = self.block(frame, stmt.body, inner)
        orelse = Seq()
        if isinstance(stmt.orelse, cst.If):
            self.if_stmt(frame, stmt.orelse, inner, orelse.items)
        elif isinstance(stmt.orelse, cst.Else):
            orelse = self.block(frame, stmt.orelse.body, inner)
        out.append(If(stmt, body, orelse, self.absence(frame, stmt.test)))

    def absence(self, frame: Frame, test: cst.BaseExpression) -> tuple[tuple[str, bool], ...]:
        """Where an ``if`` test says an object is not there: ``x is None`` (body),
        ``x is not None``/``x`` (else-arm), ``isinstance(x, nn.Module)`` (else-arm), and each
        conjunct of an ``and`` for the body."""
        out: list[tuple[str, bool]] = []

        def sym(e) -> str | None:
            s, q = self.resolve(frame, dotted_name(e))
            return None if q else s

        if isinstance(test, cst.BooleanOperation) and isinstance(test.operator, cst.And):
            for part in (test.left, test.right):
                out += [(x, arm) for x, arm in self.absence(frame, part) if arm is True]
            return tuple(out)
        if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
            return tuple((x, not arm) for x, arm in self.absence(frame, test.expression))
        if isinstance(test, cst.Comparison) and len(test.comparisons) == 1:
            comp = test.comparisons[0]
            if isinstance(comp.comparator, cst.Name) and comp.comparator.value == "None":
                x = sym(test.left)
                if x is not None:
                    if isinstance(comp.operator, cst.Is):
                        out.append((x, True))
                    elif isinstance(comp.operator, cst.IsNot):
                        out.append((x, False))
            return tuple(out)
        if isinstance(test, cst.Call) and dotted_name(test.func) == "isinstance" and len(test.args) == 2:
            classes = test.args[1].value
            names = [dotted_name(e.value) for e in classes.elements] if isinstance(classes, cst.Tuple) else [dotted_name(classes)]
            if any(n and n.rpartition(".")[2] in ("Module", "Optimizer", "LRScheduler", "_LRScheduler") for n in names):
                x = sym(test.args[0].value)
                if x is not None:
                    out.append((x, False))
            return tuple(out)
        if isinstance(test, (cst.Name, cst.Attribute)):
            x = sym(test)
            if x is not None:
                out.append((x, False))
        return tuple(out)

    def with_grad(self, frame: Frame, item: cst.BaseExpression, grad: str) -> str:
        """The grad mode inside ``with item:`` (or a function decorated with ``@item``),
        entered in mode ``grad``: from the library knowledge (``torch.no_grad``: disabled;
        ``torch.set_grad_enabled(x)``: from ``x``)."""
        call = item if isinstance(item, cst.Call) else None
        q, qualified = self.resolve(frame, dotted_name(call.func if call else item))
        summary = knowledge().callable(q) if qualified else None
        mode = summary.grad if summary is not None else None
        if mode == "arg":
            if call is None or not call.args:
                return "unknown"
            v = call.args[0].value
            if isinstance(v, cst.Name) and v.value in ("True", "False"):
                return "enabled" if v.value == "True" else "disabled"
            return "unknown"
        return mode or grad

    def loop_info(self, frame: Frame, node, target, iter_expr) -> LoopInfo:
        names: set[str] = set()
        if target is not None:
            _assigned_names(target, names)
        calls = tuple(
            q for q in (self.resolve(frame, dotted_name(c.func))[0] for c in calls_in_order(iter_expr)) if q
        )
        return LoopInfo(node, tuple(sorted(names)), tuple(sorted(self.mentions(frame, iter_expr))), calls, frame.name)

    def small_stmt(self, frame: Frame, s: cst.CSTNode, ctx: Context, out: list[Node]) -> None:
        if isinstance(s, cst.Expr):
            self.expr_events(frame, s.value, ctx, out)
        elif isinstance(s, cst.Assign):
            if len(s.targets) == 1:
                targets = self._target_syms(frame, s.targets[0].target)
            else:
                targets = ()
            self.expr_events(frame, s.value, ctx, out, targets)
            for t in s.targets:
                self.assign_event(frame, s, t.target, "=", s.value, ctx, out)
        elif isinstance(s, cst.AnnAssign):
            if s.value is not None:
                self.expr_events(frame, s.value, ctx, out, self._target_syms(frame, s.target))
                self.assign_event(frame, s, s.target, "=", s.value, ctx, out)
        elif isinstance(s, cst.AugAssign):
            self.expr_events(frame, s.value, ctx, out)
            self.assign_event(frame, s, s.target, s.operator.__class__.__name__, s.value, ctx, out)
        elif isinstance(s, cst.Return):
            if s.value is not None:
                if frame.return_targets and frame.return_targets[0] and isinstance(s.value, cst.Name) and s.value.value in frame.defs:
                    self.func_values[frame.return_targets[0]] = (frame.defs[s.value.value], frame)
                self.expr_events(frame, s.value, ctx, out, frame.return_targets if isinstance(s.value, cst.Call) else ())
                if frame.return_targets and not isinstance(s.value, cst.Call):
                    values = s.value.elements if isinstance(s.value, cst.Tuple) else None
                    if values is None:
                        self.assign_event(frame, s, None, "=", s.value, ctx, out, frame.return_targets[0])
                    else:
                        for tgt, el in zip(frame.return_targets, values):
                            self.assign_event(frame, s, None, "=", el.value, ctx, out, tgt)
            out.append(Jump("return"))
        elif isinstance(s, cst.Raise):
            self.expr_events(frame, s.exc, ctx, out)
            out.append(Jump("return"))
        elif isinstance(s, cst.Break):
            out.append(Jump("break"))
        elif isinstance(s, cst.Continue):
            out.append(Jump("continue"))
        elif isinstance(s, (cst.Assert, cst.Del)):
            pass

    def assign_event(
        self, frame: Frame, stmt: cst.CSTNode, target: cst.BaseExpression | None, op: str,
        value: cst.BaseExpression, ctx: Context, out: list[Node], target_sym: str | None = None,
    ) -> None:
        if target is not None:
            if isinstance(target, (cst.Tuple, cst.List)):
                self._unpack(frame, stmt, target, op, value, ctx, out)
                return
            if isinstance(target, cst.Subscript):
                sym, q = self.resolve(frame, dotted_name(target.value))
                op = "[]="
            else:
                sym, q = self.resolve(frame, dotted_name(target))
            if q:
                return
            target_sym = sym
        if target_sym is None:
            return
        vsym, vq = self.resolve(frame, dotted_name(value))
        out.append(
            Assign(stmt, target_sym, op, value, None if vq else vsym, value_kind(self.index.imports, value),
                   self.mentions(frame, value), ctx, operands=self.operands(frame, value),
                   sources=self.sources(frame, value))
        )
        self.n_events += 1
        if isinstance(value, cst.Call) and dotted_name(value.func) in self.index.classes:
            frame.instances[target_sym] = dotted_name(value.func)  # type: ignore[assignment]


    def _unpack(
        self, frame: Frame, stmt: cst.CSTNode, target: cst.Tuple | cst.List, op: str,
        value: cst.BaseExpression, ctx: Context, out: list[Node],
    ) -> None:
        """``a, b = x, y`` assigns pairwise; ``loss, aux = criterion(...)`` gives each name a
        part of the call's result."""
        elements = [el.value for el in target.elements]
        if isinstance(value, (cst.Tuple, cst.List)) and len(value.elements) == len(elements) and not any(
            isinstance(el, cst.StarredElement) for el in (*target.elements, *value.elements)
        ):
            for t, v in zip(elements, value.elements):
                self.assign_event(frame, stmt, t, op, v.value, ctx, out)
            return
        if not isinstance(value, cst.Call):
            return
        for t in elements:
            if isinstance(t, (cst.Name, cst.Attribute)):
                sym = self._target_sym(frame, t)
                if sym is not None:
                    out.append(Assign(stmt, sym, op, value, None, "part", self.mentions(frame, value), ctx))
                    self.n_events += 1


def _is_literal(expr: cst.CSTNode, literal_names: set[str]) -> bool:
    """Numbers and arithmetic on them (``30``, ``[30, 60]``, ``2 * 10``), where a name counts
    only if it is in ``literal_names``."""
    if isinstance(expr, (cst.Integer, cst.Float)):
        return True
    if isinstance(expr, cst.Name):
        return expr.value in literal_names
    if isinstance(expr, (cst.List, cst.Tuple)):
        return all(_is_literal(e.value, literal_names) for e in expr.elements)
    if isinstance(expr, cst.BinaryOperation):
        return _is_literal(expr.left, literal_names) and _is_literal(expr.right, literal_names)
    if isinstance(expr, cst.UnaryOperation):
        return _is_literal(expr.expression, literal_names)
    return False


def value_kind(imports: ImportMap, value: cst.BaseExpression) -> str:
    """Classify an assigned value: ``number`` (``x.item()``, ``float(x)``), ``detached``
    (``x.detach()``, ``x.data``), ``call`` or ``expr``. What a call returns comes from the
    library knowledge (``torch.Tensor.item`` returns a number, ``float`` too)."""
    if isinstance(value, cst.Call):
        func = value.func
        kb = knowledge()
        if isinstance(func, cst.Attribute):
            summary = kb.method("torch.Tensor", func.attr.value)
            if summary is not None and summary.returns is not None and summary.returns.value in ("number", "detached"):
                return summary.returns.value
            if func.attr.value in ("cpu", "clone", "mean", "sum") and isinstance(func.value, cst.Call):
                return value_kind(imports, func.value)
        q = imports.qualify(dotted_name(func))
        summary = kb.function(q)
        if summary is not None and summary.returns is not None and summary.returns.value in ("number", "detached"):
            return summary.returns.value
        return "call"
    if isinstance(value, cst.Attribute) and value.attr.value == "data":
        return "detached"
    if isinstance(value, (cst.Integer, cst.Float)):
        return "number"
    return "expr"
