"""The loops a framework runs for the user's class, built as entry points of their own.

A *driver* (``[[driver]]`` in ``loopcheck/knowledge/``, :class:`~loopcheck.engine.knowledge.Driver`)
says which methods of a subclass of its base class the framework calls, in which loop, mode and
grad mode, and which training events it performs itself around them. For each class of the
checked module that derives from a driver's base, :func:`driver_unit` builds that program as
IR: an epoch loop around a batch loop that inline the user's methods (their bodies read as
for any call of the project), with the framework's own calls (``optimizer.step()``,
``loss.backward()``, ``scheduler.step()``, ``eval()``) as raw calls on the objects the
user's code gives it. The rules then read it as any other loop.

Those calls are reported at the code that configures them: an optimizer's or a scheduler's
call at the expression that hands the object to the framework (the scheduler's config dict
in the returned value), ``backward()`` at the method whose result is backpropagated, a mode
switch at the method that runs under it.

Precision: the framework's optimization events (steps marked ``automatic``) are built only
when the class leaves the driver's ``automatic`` attribute alone and the method that returns
the optimizers returns exactly one optimizer, in one of the shapes the driver lists, named
by a local variable or an attribute of ``self``; a scheduler is stepped only when its config
is read whole (literal keys, a literal interval, no monitored metric). Otherwise the loop
keeps the user's methods, modes and grad modes, and no optimization event.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import libcst as cst

from loopcheck.engine.builder import (
    Callee, ClassRef, Frame, UnitBuilder, all_param_names, bound_names, find_method, is_generator,
)
from loopcheck.engine.ir import Arg, Assign, Call, Context, If, Loop, LoopInfo, Node, Seq
from loopcheck.engine.knowledge import Driver, knowledge
from loopcheck.engine.names import dotted_name


def driver_of(cls: ClassRef, _seen: frozenset = frozenset()) -> Driver | None:
    """The driver that runs ``cls``: one whose base class it derives from (through the
    project's classes), else ``None``."""
    info = cls.info
    if info is None or cls in _seen:
        return None
    kb = knowledge()
    for base in info.bases:
        found = kb.driver(base)
        if found is not None:
            return found
        ref = cls.module.class_ref(base) or cls.module.class_ref(base, qualified=True)
        if ref is not None:
            found = driver_of(ref, _seen | {cls})
            if found is not None:
                return found
    return None


@dataclass
class _Scheduler:
    """A scheduler the framework steps: its symbol in the driver's frame, the loop it steps
    in (``"batch"``/``"epoch"``), the node that configures it, and the node of a frequency
    other than a literal 1 (its step then runs on some iterations only)."""

    sym: str
    loop: str
    node: cst.CSTNode
    every: cst.CSTNode | None = None


@dataclass
class _Build:
    """The state of one driver program being built."""

    builder: UnitBuilder
    cls: ClassRef
    driver: Driver
    frame: Frame
    automatic: bool
    slots: dict = field(default_factory=dict)  # slot name -> (symbol, node to report at)
    schedulers: list = field(default_factory=list)
    over: list = field(default_factory=list)  # the nodes of the loops being built, innermost last

    def sym(self, name: str) -> str:
        return f"{self.frame.fid}:{name}"


def driver_unit(builder: UnitBuilder, cls: ClassRef, driver: Driver) -> Seq:
    """The IR of the program ``driver`` runs for an instance of ``cls`` (see module docstring)."""
    self_sym = f"self@{cls.name}"
    fid = f"f{builder._tag}_{next(builder._ids)}"
    names = {name for steps in driver.blocks.values() for step in steps for name in _slot_names(step)}
    frame = Frame(fid, {}, names, cls.module, cls, {}, None, def_class=cls, self_sym=self_sym)
    state = _Build(builder, cls, driver, frame, not _hands_over(cls, driver.automatic))
    state.slots["self"] = (self_sym, cls.info.node)
    state.over.append(cls.info.node)
    return _block(state, "run", Context())


def _slot_names(step: dict) -> list[str]:
    out = list(step.get("args", ()))
    for key in ("result", "save_mode", "restore_mode"):
        if key in step:
            out.append(step[key])
    return out


def _hands_over(cls: ClassRef, attribute: str | None, _seen: frozenset = frozenset()) -> bool:
    """Whether ``cls`` (or a project base) sets ``attribute`` to anything but ``True``: as a
    class attribute, or on ``self`` in a method (``self.automatic_optimization = False``)."""
    if attribute is None or cls.info is None or cls in _seen:
        return False
    for node in _assignments(cls.info.node):
        target, value = node
        name = dotted_name(target)
        if name is not None and name.rpartition(".")[2] == attribute and name.count(".") <= 1:
            if not (type(value) is cst.Name and value.value == "True"):
                return True
    return any(_hands_over(base, attribute, _seen | {cls}) for base in cls.bases())


def _assignments(node: cst.CSTNode):
    """``(target, value)`` of every assignment in a class body and its methods' bodies."""
    found = []

    class Visit(cst.CSTVisitor):
        def visit_Assign(self, n: cst.Assign) -> None:
            found.extend((t.target, n.value) for t in n.targets)

        def visit_AnnAssign(self, n: cst.AnnAssign) -> None:
            if n.value is not None:
                found.append((n.target, n.value))

        def visit_FunctionDef(self, n: cst.FunctionDef) -> None:  # a property: not a plain value
            if n.name.value == "automatic_optimization":
                found.append((cst.Name(n.name.value), n))

    node.visit(Visit())
    return found


def _block(state: _Build, name: str, ctx: Context) -> Seq:
    seq = Seq()
    for step in state.driver.blocks[name]:
        _step(state, step, ctx, seq.items)
    return seq


def _step(state: _Build, step: dict, ctx: Context, out: list[Node]) -> None:
    kind = next(iter(step))
    if step.get("automatic") and not state.automatic:
        return
    if kind == "call":
        if _user_call(state, step, ctx, out):
            return
        if step.get("default") is not None:
            out.extend(_block(state, step["default"], ctx).items)
    elif kind == "loop":
        _loop(state, step, ctx, out)
    elif kind == "block":
        when = step.get("when")
        found = find_method(state.cls, when) if when is not None else None
        if when is not None and found is None:
            return  # the framework runs it only for a class that defines that method
        state.over.append(found[1] if found is not None else state.over[-1])
        try:
            out.extend(_block(state, step["block"], ctx).items)
        finally:
            state.over.pop()
    elif kind == "grad":
        out.extend(_block(state, step["body"], replace(ctx, grad=step["grad"], grad_inherited=False, grad_asked=False)).items)
    elif kind == "method":
        slot = state.slots.get(step["on"])
        if slot is not None:
            node = slot[1] if step["on"] != "self" else state.over[-1]
            out.append(_call(state, f"{slot[0]}.{step['method']}", [], node, ctx))
    elif kind == "schedulers":
        for sched in state.schedulers:
            if sched.loop != step["schedulers"]:
                continue
            call = _call(state, f"{sched.sym}.step", [], sched.node, ctx)
            if sched.every is None:
                out.append(call)
            else:  # stepped every ``frequency`` iterations
                inner = replace(ctx, conds=ctx.conds + (sched.every,))
                call.ctx = inner
                state.builder._place(sched.every, state.cls.module)
                out.append(If(sched.every, Seq([call]), Seq()))
    elif kind == "save_mode":
        self_sym, _ = state.slots["self"]
        node = state.over[-1]
        out.append(Assign(node, state.sym(step["save_mode"]), "=", None, f"{self_sym}.training", "expr",
                          frozenset({f"{self_sym}.training"}), ctx))
        state.builder.n_events += 1
    elif kind == "restore_mode":
        self_sym, _ = state.slots["self"]
        var = step["restore_mode"]
        arg = Arg(None, cst.Name(var), state.sym(var), frozenset({state.sym(var)}))
        out.append(_call(state, f"{self_sym}.train", [arg], state.over[-1], ctx))


def _call(state: _Build, func: str, args: list[Arg], node: cst.CSTNode, ctx: Context) -> Call:
    """A call the framework makes (``optimizer.step()``), reported at ``node``."""
    state.builder._place(node, state.cls.module)
    state.builder.n_events += 1
    return Call(node, func, args, ctx, framework=state.driver.name)


def _loop(state: _Build, step: dict, ctx: Context, out: list[Node]) -> None:
    over = step.get("over")
    found = find_method(state.cls, over) if over else None
    if over and found is None:
        return  # the framework runs no such loop for this class
    node = found[1] if found is not None else state.cls.info.node
    targets = ("batch", "batch_idx") if step["loop"] == "batch" else ("epoch",)
    info = LoopInfo(node, tuple(state.sym(t) for t in targets), (), (), None)
    state.builder._place(node, (found[0] if found is not None else state.cls).module)
    state.over.append(node)
    try:
        body = _block(state, step["body"], replace(ctx, loops=ctx.loops + (info,), conds=()))
    finally:
        state.over.pop()
    out.append(Loop(info, body, Seq()))


def _user_call(state: _Build, step: dict, ctx: Context, out: list[Node]) -> bool:
    """Inline the class's own method ``step["call"]`` (a method of the project: the driver's
    base class is not read), its arguments bound to the driver's slots; ``False`` when the
    class does not define it."""
    builder, name = state.builder, step["call"]
    found = find_method(state.cls, name)
    if found is None:
        return False
    def_cls, func = found
    if is_generator(func) or func in builder._stack:
        return True  # it runs, but not as a call the IR can inline
    args = []
    for slot in step.get("args", ()):
        sym = state.slots[slot][0] if slot in state.slots else state.sym(slot)
        args.append(Arg(None, cst.Name(slot), sym, frozenset({sym})))
    result = step.get("result")
    configures = name == state.driver.optimizers.get("method")
    if configures:
        result = "configured"  # what it returns, when that is a call (a constructor)
    raw = Call(func, None, args, ctx)
    builder._place(func, def_cls.module)
    builder.called.add(func)
    callee = Callee(func, def_cls.module, state.frame.self_sym, state.cls, def_cls)
    targets = (state.sym(result),) if result else ()
    inlined = builder.inline(state.frame, callee, raw, ctx, targets)
    out.append(inlined)
    if result and any(value is not None for value in _returns(func)):
        state.slots[result] = (state.sym(result), func)
    if configures:
        _configured(state, func, def_cls.module, inlined.fid, ctx, out)
    return True


# -- the optimizers and schedulers the user's method returns --------------------------------


def _configured(state: _Build, func: cst.FunctionDef, module, fid: str, ctx: Context, out: list[Node]) -> None:
    """Read the optimizer and schedulers ``func`` (of ``module``, inlined as ``fid``) returns, and bind them
    to the driver's slots (``optimizer``) and schedulers. Not understood: no optimizer slot,
    and the framework's optimization events are not built."""
    returns = _returns(func)
    fmt = state.driver.optimizers
    if len(returns) != 1 or returns[0] is None:
        state.automatic = False
        return
    shape = _shape(returns[0], fmt)
    if shape is None or len(shape[0]) != 1:
        state.automatic = False  # several optimizers need the user's own optimization
        return
    optimizers, schedulers = shape
    resolve = _resolver(state, func, module, fid, returns[0])
    opt = resolve(optimizers[0])
    if opt is None:
        state.automatic = False
        return
    state.slots["optimizer"] = (state.sym("optimizer"), optimizers[0])
    out.append(_bind(state, "optimizer", opt, optimizers[0], ctx))
    for i, (expr, loop, node, every) in enumerate(schedulers):
        sym = resolve(expr)
        if sym is None or loop is None:
            continue
        name = f"scheduler{i}"
        out.append(_bind(state, name, sym, expr, ctx))
        state.schedulers.append(_Scheduler(state.sym(name), loop, node, every))


def _bind(state: _Build, slot: str, sym: str, node: cst.BaseExpression, ctx: Context) -> Assign:
    """``slot = <the object the user's code named>`` in the driver's frame."""
    state.builder._place(node, state.cls.module)
    state.builder.n_events += 1
    return Assign(node, state.sym(slot), "=", node, sym, "expr", frozenset({sym}), ctx)


def _returns(func: cst.FunctionDef) -> list[cst.BaseExpression | None]:
    """The values of the ``return`` statements of ``func`` (not of functions it defines)."""
    found: list = []

    class Visit(cst.CSTVisitor):
        def visit_FunctionDef(self, n: cst.FunctionDef) -> bool:
            return n is func

        def visit_ClassDef(self, n: cst.ClassDef) -> bool:
            return False

        def visit_Lambda(self, n: cst.Lambda) -> bool:
            return False

        def visit_Return(self, n: cst.Return) -> None:
            found.append(n.value)

    func.visit(Visit())
    return found


def _resolver(state: _Build, func: cst.FunctionDef, module, fid: str, returned: cst.BaseExpression):
    """The symbol of an object the method returns: a local variable (``fid:name``), an
    attribute of ``self``, or the whole value ``returned`` when it is the construction of a
    library optimizer (``return torch.optim.Adam(...)``, bound to the driver's
    ``configured``); ``None`` for anything else."""
    params = all_param_names(func)
    self_name = params[0] if params else None
    local = bound_names(func.body)[0] | set(params[1:])

    def resolve(expr: cst.BaseExpression) -> str | None:
        if expr is returned and type(expr) is cst.Call:
            dotted = dotted_name(expr.func)
            q = module.imports.qualify(dotted) if dotted else None
            summary = knowledge().callable(q) if q else None
            built = summary is not None and summary.returns is not None and summary.returns.role == "optimizer"
            return state.sym("configured") if built else None
        dotted = dotted_name(expr)
        if dotted is None:
            return None
        head, dot, rest = dotted.partition(".")
        if head == self_name and rest:
            return f"{state.frame.self_sym}.{rest}"
        if head in local:
            return f"{fid}:{dotted}"
        return None

    return resolve


def _string(node: cst.BaseExpression | None) -> str | None:
    return node.evaluated_value if type(node) is cst.SimpleString else None


def _entries(node: cst.Dict) -> dict[str, cst.DictElement] | None:
    """A dict display's entries by literal string key; ``None`` when a key is not one."""
    out = {}
    for el in node.elements:
        key = _string(getattr(el, "key", None))
        if key is None:
            return None
        out[key] = el
    return out


def _shape(value: cst.BaseExpression, fmt: dict):
    """``([optimizer expressions], [(scheduler expression, loop, config node, frequency
    node)])`` of a returned value in the shapes the driver lists; ``None`` when it is none
    of them. A scheduler whose loop cannot be read has loop ``None``."""
    if type(value) is cst.Dict:
        entries = _entries(value)
        if entries is None or fmt.get("optimizer_key") not in entries:
            return None
        monitored = fmt.get("monitor_key") in entries
        schedulers = []
        if fmt.get("scheduler_key") in entries:
            schedulers.append(_scheduler(entries[fmt["scheduler_key"]].value, fmt, monitored))
        return [entries[fmt["optimizer_key"]].value], schedulers
    if type(value) in (cst.Tuple, cst.List):
        items = [el.value for el in value.elements]
        if any(type(el) is cst.StarredElement for el in value.elements):
            return None
        if len(items) == 2 and type(items[0]) is cst.List and type(items[1]) in (cst.List, cst.Tuple):
            optimizers = [el.value for el in items[0].elements]
            return optimizers, [_scheduler(el.value, fmt, False) for el in items[1].elements]
        if len(items) == 2 and type(items[0]) is cst.List:
            return [el.value for el in items[0].elements], [_scheduler(items[1], fmt, False)]
        if all(type(i) is cst.Dict for i in items):
            return None  # one config per optimizer: several optimizers
        if all(dotted_name(i) is not None for i in items):
            return items, []
        return None
    if dotted_name(value) is not None or type(value) is cst.Call:
        return [value], []
    return None


def _scheduler(value: cst.BaseExpression, fmt: dict, monitored: bool):
    """``(scheduler expression, loop, node, frequency node)`` of one scheduler or config."""
    intervals = fmt.get("intervals", {})
    default = intervals.get(fmt.get("default_interval"))
    if type(value) is not cst.Dict:
        return value, None if monitored else default, value, None
    keys = fmt.get("config", {})
    entries = _entries(value)
    if entries is None or keys.get("scheduler") not in entries or monitored or keys.get("monitor") in entries:
        return value, None, value, None
    loop = default
    if keys.get("interval") in entries:
        loop = intervals.get(_string(entries[keys["interval"]].value))
    every = None
    if keys.get("frequency") in entries:
        freq = entries[keys["frequency"]].value
        if not (type(freq) is cst.Integer and freq.evaluated_value == 1):
            every = freq
    return entries[keys["scheduler"]].value, loop, value, every
