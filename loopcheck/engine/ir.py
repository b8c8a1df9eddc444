"""The intermediate representation: a function's training events inside its control flow.

The builder turns LibCST statements into this small structured program; the dataflow
interpreter (:mod:`loopcheck.engine.dataflow`) runs rule state machines over it. Only
control flow that decides *which* events run and in *what order* is kept: sequences,
``if``/``else``, loops with their back edges, ``break``/``continue``/``return``, ``try``,
and inlined calls to functions of the same file.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import cached_property

import libcst as cst


@dataclass(eq=False)
class LoopInfo:
    """One ``for``/``while`` loop.

    Attributes:
        node: the ``cst.For``/``cst.While`` statement.
        targets: names bound by the ``for`` target (``epoch``, ``batch_idx``, ...).
        function: the name of the function whose body holds the loop (``train_one_epoch``),
            ``None`` at module level.
        iter_names: every dotted name in the iterable expression, resolved to symbols
            (``train_loader``, ``range``, ``args.epochs``, ...).
        iter_calls: qualified names of the calls in the iterable (``enumerate``, ``range``).
        count: how many iterations the loop runs, when run constants alone fix it (``range(90)``,
            ``range(num_epochs)`` with ``num_epochs = 90`` bound once, a display ``[opt_d,
            opt_g]``: :meth:`~loopcheck.engine.builder.UnitBuilder.iteration_count`); ``None``
            otherwise.
        display: the iterable is a list or tuple display (``[opt_d, opt_g]``): one pass per
            item the code names, :attr:`count` of them.
        drawn: ``(target name, symbols)`` for each name of the ``for`` target whose elements
            are known to come from one part of the iterable: the symbols that part reads
            (``for p in model.parameters()``: ``p`` from ``model.parameters``; ``for t, s in
            zip(mirror, model.parameters())``: ``t`` from ``mirror``, ``s`` from
            ``model.parameters``; the second name of ``enumerate(xs)``'s pair from ``xs``).
    """

    node: cst.CSTNode
    targets: tuple[str, ...] = ()
    iter_names: tuple[str, ...] = ()
    iter_calls: tuple[str, ...] = ()
    function: str | None = None  # the name of the function whose body holds the loop
    count: int | None = None
    display: bool = False
    drawn: tuple[tuple[str, frozenset[str]], ...] = ()


@dataclass(frozen=True)
class Context:
    """Where an event sits, independent of the path that reaches it.

    Attributes:
        loops: enclosing loops, outermost first (across inlined calls too).
        grad: ``"enabled"``, ``"disabled"`` (inside ``torch.no_grad()``/``inference_mode``)
            or ``"unknown"``.
        conds: the ``if`` statements between the event and its innermost loop (or the
            entry when it is in no loop), outermost first.
        calls: the calls of inlined functions that lead to the event, outermost first.
        grad_inherited: whether ``grad`` is the mode the unit's entry started in: no ``with``
            item, decorator or ``torch.set_grad_enabled(...)`` statement between the entry and
            the event set a mode (``with torch.enable_grad():`` sets one, even inside code that
            already had gradients on). The mode of such an event is its entry's, which the
            entry's callers in the project may decide (:mod:`loopcheck.engine.callers`).
        grad_asked: whether the innermost ``with`` item or decorator that set the grad mode
            around the event turned gradients on (``with torch.enable_grad():``, ``with
            torch.set_grad_enabled(True):``, ``@torch.enable_grad()``, a context manager or
            decorator of the project that does): a block whose graph the code asks for, even
            where its callers turned gradients off. Not a ``torch.set_grad_enabled(True)``
            statement, which sets the mode of everything after it rather than of a block, nor
            the grad mode a framework's loop runs a method in.
        autocast: the autocast state around the event, as ``(device, enabled)`` pairs,
            outermost first: the state at the unit's entry (device ``"*"``: every device;
            ``False`` for a module's own code, which starts with autocast off, ``None``:
            unknown, a function whose callers are not followed), then one pair per autocast
            block between the entry and the event (a ``with`` item or a decorator: its device
            type, ``"?"`` when not known, and whether it enables autocast, ``None`` when not
            known; ``("*", None)`` for a context manager or decorator that may set it, one of
            the project or an unknown library's). Read by
            :meth:`~loopcheck.engine.builder.UnitBuilder.autocast_state`.
    """

    loops: tuple[LoopInfo, ...] = ()
    grad: str = "enabled"
    conds: tuple[cst.CSTNode, ...] = ()
    calls: tuple[cst.Call, ...] = ()
    grad_inherited: bool = True
    grad_asked: bool = False
    autocast: tuple[tuple[str, bool | None], ...] = (("*", None),)


@dataclass(eq=False)
class Arg:
    """One argument of a call: its keyword (or ``None``), expression, and the symbol it names
    when it is a plain dotted name, plus every symbol mentioned anywhere inside it; ``call``,
    the raw call the expression is when it is a call (``DDP(model.cuda())``: ``model.cuda()``);
    ``constant``, for an argument of a call of a library (``Call.qualified``), the integer it is
    on every run when the code alone fixes it (a literal, or a name bound once to one:
    :meth:`~loopcheck.engine.builder.UnitBuilder.run_constant`; Accelerate's
    ``gradient_accumulation_steps``), else ``None``; ``flag``, for a parameter of the function
    being inlined that the call gave ``True`` or ``False`` (or left at such a default) and the
    function never re-binds (``super().train(mode)`` in a model's own ``train``, called as
    ``model.train(False)``), that value, else ``None``; ``flag_call``, for such a flag that a
    call's literal argument gave (not a default), that call (``model.train(False)``, in the
    code that called the function; the outermost, for a flag passed on by name through
    several calls), else ``None``; ``function``, for an argument of a call of a method the
    knowledge says calls a function it is given (``model.apply(fn)``, an ``each_module``
    effect), the function of the project the argument names (a ``cst.FunctionDef``, or the
    ``cst.Lambda`` it is), else ``None``; ``function_bound``, how many of that function's
    leading parameters the argument binds (1 for a method read from an instance,
    ``self._init_weights``: its module parameter is the one after ``self``); ``held``, for an
    argument of a call with targets, the symbols whose objects its value may be or hold when
    they differ from its mentions (:meth:`~loopcheck.engine.builder.UnitBuilder.held`: a name
    read only in the arguments of a call that builds a new tensor is left out,
    ``Variable(torch.zeros_like(w)[None])`` holds nothing of ``w``), else ``None``."""

    keyword: str | None
    node: cst.BaseExpression
    sym: str | None
    mentions: frozenset[str]
    literal: bool = False  # only numbers, or parameters left at a numeric default
    call: "Call | None" = None
    constant: int | None = None
    flag: bool | None = None
    flag_call: cst.Call | None = None
    function: "cst.FunctionDef | cst.Lambda | None" = None
    function_bound: int = 0
    held: frozenset[str] | None = None

    @property
    def holds(self) -> frozenset[str]:
        """The symbols whose objects the argument's value may be or hold: :attr:`held`, or its
        mentions when that is not set."""
        return self.mentions if self.held is None else self.held


@dataclass(eq=False)
class Call:
    """A raw call event: ``func`` is the callee's symbol or qualified name
    (``"opt.step"``, ``"torch.optim.Adam"``); ``inner`` is set for calls on a call result
    (``scaler.scale(loss).backward()``: ``inner`` is the ``scale`` call, ``func`` is ``".backward"``).

    A method called on another expression (``(loss / n).backward()``, ``losses[-1].backward()``)
    has ``func`` ``".backward"`` and ``operands``: the symbols the expression computes from
    (``loss``, ``n``; ``losses``). ``qualified`` is set for names that come from an import
    (``torch.optim.Adam``) or are Python builtins (``print``, ``sum``)."""

    node: cst.Call
    func: str | None
    args: list[Arg]
    ctx: Context
    targets: tuple[str | None, ...] = ()
    inner: "Call | None" = None
    qualified: bool = False
    typed: list = field(default_factory=list)
    operands: tuple[str, ...] = ()
    inlined: bool = False  # the callee's body follows in the IR (a function of the project)
    sources: "Sources | None" = None  # for calls with targets: what the result is computed from
    cls: object = None  # the project class the call constructs (a builder.ClassRef), if any
    #: for a method called on an instance of a project class (``self.backward(loss)`` in a
    #: subclass of a library's training engine) that neither the class nor its project bases define: the
    #: qualified name of the library base class, with a knowledge entry, the method comes from
    base_class: str | None = None
    #: for ``super().m(...)`` in a method whose project bases do not define ``m``, when the
    #: library base's entry for ``m`` is one an override is read by (``override_body``:
    #: ``super().train(mode)`` in a model's own ``train``): the symbol of the instance (the
    #: method's ``self``), the object the library's method then acts on
    bound_self: str | None = None
    #: for a call a framework's loop makes itself (:mod:`loopcheck.engine.drivers`: the
    #: optimizer step a framework runs after the user's hooks), the framework's name
    #: (:attr:`~loopcheck.engine.knowledge.Driver.name`); its ``node`` is the user's code that
    #: configures it (the optimizer the user's method hands over), not a call
    framework: str | None = None
    #: the call runs a method that a class of the project defines, on an instance of a class of
    #: the project (``gan.train(False, 5)`` for ``class GAN(nn.Module)`` with its own ``def
    #: train``), its body inlined: a library entry for a method of that name describes the
    #: method this one overrides
    project_method: bool = False
    #: for a call of an instance of an ``nn.Module`` class of the project (its ``forward``,
    #: not inlined), the gradients that ``forward`` clears on every call:
    #: ``(path, set_to_none)`` per ``self<path>.zero_grad()``
    #: (:func:`~loopcheck.engine.summaries.forward_clears`)
    forward_clears: tuple = ()
    discarded: bool = False  # the whole of an expression statement: its result is thrown away
    #: what the call may change attributes of, for the facts of attribute values
    #: (:mod:`loopcheck.engine.attr_facts`): object symbols (``args``: every ``args.<attr>``),
    #: attribute names (``.evaluate``: that attribute of any object), or ``"*"`` (anything, until
    #: the builder works it out; nothing for an inlined call, whose body is in the IR)
    clobbers: frozenset = frozenset(("*",))
    #: for a construction whose ``__init__`` is inlined with ``self`` bound to the variable the
    #: instance goes to (:attr:`Inline.new`): that symbol (``trainer`` of ``trainer =
    #: Trainer(args)``); else ``None``
    new: str | None = None
    #: for an inlined call of a function of the project (not a construction) whose result goes
    #: to targets: the events of its body bind each target to what every ``return`` gives
    #: (:func:`~loopcheck.engine.builder.returns_bind_targets`), so the targets' values are those
    #: events', not an unknown result of the call
    returns_bound: bool = False

    # ``func`` never changes once the builder made the event, and the roles and the rules ask
    # for these two many times per event: computed once (``cached_property``)
    @cached_property
    def receiver(self) -> str | None:
        """``"a.b"`` for ``a.b.m(...)``; ``None`` for plain function calls or calls on calls."""
        if self.func is None or self.qualified or "." not in self.func:
            return None
        return self.func.rpartition(".")[0] or None

    @cached_property
    def method(self) -> str | None:
        """The last component of the callee name: ``"step"`` for ``opt.step()``."""
        if self.func is None:
            return None
        return self.func.rpartition(".")[2]


@dataclass(eq=False)
class Assign:
    """A raw assignment event ``target = value`` / ``target op= value`` /
    ``target[key] = value``.

    Attributes:
        target: the assigned symbol (for ``d[k] = v``: ``d``).
        op: ``"="``, the augmented operator's LibCST class name (``"AddAssign"`` for ``+=``), or
            ``"[]="`` for a subscript store.
        value_sym: the symbol when the value is a plain dotted name.
        value_kind: ``"number"`` for ``x.item()``/``float(x)``/``x.tolist()``,
            ``"detached"`` for ``x.detach()``/``x.data``, ``"integer"`` for comparisons and
            integer results (``logits.argmax(1)``), ``"call"`` for other calls,
            ``"expr"`` otherwise.
        mentions: every symbol mentioned in the value.
        operands: the symbols the value is computed from by arithmetic, indexing or tensor
            methods (``raw_loss`` in ``loss = raw_loss + 0.1 * reg``), not through other calls.
        slot: for a subscript store, the subscript written (``d["loss"]`` of ``d["loss"] = v``).
        held: the symbols whose objects the value may be or hold, when they differ from
            ``mentions`` (``w = torch.zeros(x.shape)`` holds nothing of ``x``); a called chain
            is given as ``sym()``, the call's result (``g.style()`` of ``g.style(z)``: the
            output of a forward, not the model); ``None``: ``mentions``.
        module_class: when the value constructs an ``nn.Module`` (or a ``Parameter``): its class,
            a class of the project (a ``builder.ClassRef``) or a library class's qualified name,
            through methods that return their receiver (``Head(n).to(device)``); else ``None``
            (a call of a module the program holds is a forward, not a construction).
        constant: for a value that is a plain variable, ``(literal,)`` when the code fixes the
            literal it holds on every run here (a parameter of the inlined call given a literal
            or left at a literal default and never re-bound, a variable bound once to one:
            ``param.requires_grad = requires_grad`` with ``requires_grad=False`` left out);
            ``()`` otherwise.
        built: see below.
    """

    node: cst.CSTNode
    target: str | None
    op: str
    value: cst.BaseExpression | None
    value_sym: str | None
    value_kind: str
    mentions: frozenset[str]
    ctx: Context
    typed: list = field(default_factory=list)
    operands: tuple[str, ...] = ()
    sources: "Sources | None" = None
    slot: cst.Subscript | None = None
    held: frozenset[str] | None = None
    module_class: object = None
    constant: tuple = ()
    #: the value is a construction whose inlined ``__init__`` ran on ``target`` itself
    #: (:attr:`Call.new`, ``trainer = Trainer(args)``): the object assigned is the one that body
    #: built, so what it made of the target's attributes still holds after the assignment
    built: bool = False


@dataclass(eq=False)
class Sources:
    """What a value is computed from, outside detached parts (``x.detach()``, ``x.item()``,
    ``x.data``): the symbols it reads and the calls it makes (their raw events); ``keyed``,
    those of the names read only through a subscript by a string key (``out["reward"]``: a
    member of a mapping, which may hold anything, not the object itself); ``members``, the
    ``(symbol, key)`` pairs of those read directly by one string literal (``("out", "loss")``
    of ``out["loss"]``: the same member of the same object as another read of it)."""

    names: frozenset[str]
    calls: tuple["Call", ...]
    keyed: frozenset[str] = frozenset()
    members: frozenset[tuple[str, str]] = frozenset()


RawEvent = Call | Assign


@dataclass(eq=False)
class Seq:
    """A sequence of IR nodes. ``outside``: for the body of a function built as an entry point,
    the symbols of its parameters (``f1_1:x``), whose values its callers give: a value from
    outside, which the analysis does not see."""

    items: list["Node"] = field(default_factory=list)
    outside: frozenset = frozenset()


@dataclass(eq=False)
class If:
    """An ``if`` (or a ``match`` case, or the arms of an expression that runs calls on a
    condition: ``a() if c else b()``, ``c and a()``, ``c or a()``).

    Attributes:
        node: the statement or expression (``cst.If``, ``cst.Match``, ``cst.IfExp``,
            ``cst.BooleanOperation``).
        absent_in: ``(symbol, arm)`` pairs: in the arm (``True``: the body, ``False``: the
            else-arm) the test says the symbol's object is not there (``if opt is not None:``
            has ``(opt, False)``; ``if isinstance(net, nn.Module):`` has ``(net, False)``).
        test: the expression whose truth picks the arm (``c`` of ``c and a()``); by default
            the node's own ``test`` (``None`` for a ``match``).
        given: ``(symbol, caller's symbol)`` pairs for the symbols of ``absent_in`` that are,
            at the test, a parameter of an inlined call still holding what its caller passed
            by name (``evaluate(model)`` then ``if model is None:`` in ``evaluate``: the arm
            that says it is absent runs only if the caller's ``model`` is ``None``).
        fact: ``(symbol, name)`` when the test is over one attribute (``if not self.is_test:``,
            ``if args.evaluate:``, ``cfg.mode == "eval"``): its symbol and its dotted name in
            the test; a path on which a literal was assigned to that attribute, and nothing
            since may have changed it, takes one arm only (:mod:`loopcheck.engine.attr_facts`).
        mode_of: ``(symbol, name)`` when the test is over the mode attribute of one module
            (``if model.training:``, ``if not self.reader.training:``,
            :func:`~loopcheck.engine.attr_facts.mode_subject`): the module's symbol and the
            attribute's dotted name in the test; a machine that knows the module's mode on a
            path (``eval()``: ``training`` is ``False``) takes the arm it decides.
        not_instance: ``(symbol, arm, classes)`` triples: in the arm, the test says the
            symbol's object is an instance of none of ``classes`` (qualified names, or the
            names of project classes as written): ``if isinstance(s, ReduceLROnPlateau):`` has
            ``(s, False, ("torch.optim.lr_scheduler.ReduceLROnPlateau",))``, ``if not
            isinstance(...)`` the same with ``True``.
        counts: the ``cst.For`` statement whose counter the test compares with an integer
            literal (``if step == 0:`` in ``for step in range(n):``, the counter taking another
            integer on each pass, its body never re-binding it): true on one pass of a run of
            that loop at most, so a path that found it true is on another pass once the loop
            goes round (:class:`~loopcheck.engine.dataflow._Interpreter`).
        first_pass: ``(loop, outcome)``: the test reads the counter of the ``cst.For`` statement
            ``loop`` of the same function, whose first value the code fixes, and has the value
            ``outcome`` on the first pass of each run of that loop (``if epoch != 0:`` in ``for
            epoch in range(n):`` is false there;
            :meth:`~loopcheck.engine.builder.UnitBuilder.first_pass`): a path on that first
            pass takes the arm ``outcome`` only (:class:`~loopcheck.engine.dataflow._Interpreter`).
        first_pass_given: ``(loop, outcome, symbol, value)``: as ``first_pass``, for a loop
            whose first value is the local variable ``symbol``, every binding of which is a
            plain assignment: the test has the value ``outcome`` on the first pass of a run of
            ``loop`` that the path started with ``symbol`` holding ``value``
            (``start_epoch = 0`` on that path;
            :meth:`~loopcheck.engine.builder.UnitBuilder.first_pass_given`).
        constant: the test is of the truth of :attr:`fact`'s attribute
            (:func:`~loopcheck.engine.attr_facts.truth_arms`: ``if not self.logits:``, ``if
            self.logits:``), an attribute of the method's own instance that only ``__init__``
            assigns (:meth:`~loopcheck.engine.builder.UnitBuilder.init_only`), and another such
            ``if`` of the unit tests it: it holds one value for the whole run of the method, so
            two such ``if``s take agreeing arms on a path where nothing between them may change
            it (:func:`~loopcheck.engine.values.reaching_definitions`).
        immutable: for a :attr:`constant` test, every value ``__init__`` may give the attribute
            is a literal of an immutable type (``False``, ``None``, ``0``, ``"sum"``, a tuple of
            such): no call through another name for the object can change its truth. Otherwise
            (``[]``, a parameter) a write through an alias may, and the analysis follows the
            attribute's truth only where it sees every name of the object
            (:func:`~loopcheck.engine.values.reaching_definitions`).
        learns: ``(arm, symbol, name, kind, value)`` for what entering an arm says of an
            attribute the test compares with a literal or tests the truth of, alone or as a
            conjunct (:func:`~loopcheck.engine.attr_facts.learned`: ``if args.data == "x" and
            args.head == "y":`` says both in its body, ``if args.head != "y":`` says ``args.head
            == "y"`` in its else-arm): ``kind`` ``"=="`` (the attribute holds ``value``), ``"!="``
            (it does not) or ``"truth"`` (``value``: its truth); ``symbol`` and ``name`` as in
            :attr:`fact`. Past a raising guard, an ``if`` one of whose arms never goes on, a path
            knows what the other arm says (:attr:`~loopcheck.engine.dataflow._FactTable.guards`).
    """

    node: cst.CSTNode
    body: Seq
    orelse: Seq
    absent_in: tuple[tuple[str, bool], ...] = ()
    test: cst.BaseExpression | None = None
    given: tuple[tuple[str, str], ...] = ()
    fact: tuple[str, str] | None = None
    mode_of: tuple[str, str] | None = None
    counts: cst.CSTNode | None = None
    not_instance: tuple[tuple[str, bool, tuple[str, ...]], ...] = ()
    first_pass: tuple[cst.CSTNode, bool] | None = None
    first_pass_given: tuple[cst.CSTNode, bool, str, int] | None = None
    constant: bool = False
    immutable: bool = False
    learns: tuple[tuple[bool, str, str, str, object], ...] = ()

    def __post_init__(self) -> None:
        if self.test is None:
            self.test = getattr(self.node, "test", None)


@dataclass(eq=False)
class Loop:
    info: LoopInfo
    body: Seq
    orelse: Seq
    infinite: bool = False  # ``while True``: left only through break/return
    #: the iterable has at most one item (``range(1)``, ``range(num_epochs)`` with
    #: ``num_epochs = 1`` a run constant): the body runs once, the loop has no back edge
    once: bool = False


@dataclass(eq=False)
class Jump:
    kind: str  # "break" | "continue" | "return" | "raise" (to the handlers of an enclosing try)
    values: frozenset[str] = frozenset()  # for a return: the symbols its value is computed from


@dataclass(eq=False)
class Try:
    body: Seq
    handlers: list[Seq]
    orelse: Seq
    final: Seq


@dataclass(eq=False)
class Inline:
    """The body of a called function of the project; its ``return`` ends only itself. ``fid``
    prefixes the symbols of its local variables (``f3_1:optimizer``): when it returns, the objects
    only they name are gone. ``own``: the plain names of its own variables (its locals, and the
    parameters that do not stand for the caller's variable of the same name): when it returns,
    what a test said of them says nothing of the caller's variables that share their spelling.
    ``new``: for the ``__init__`` of a class of the project run by a construction whose
    instance goes to a variable (``trainer = Trainer(model)``), the symbol ``self`` is bound to
    (``trainer``): each run of the body starts on a new object, so no attribute of that symbol
    holds what an earlier object's did until something binds it again; else ``None``.
    ``outside``: the symbols of its parameters that the call binds to no expression of its own
    (left at their defaults, or given through ``*args``/``**kwargs``): values the analysis does
    not see, as :attr:`Seq.outside`."""

    func: cst.CSTNode
    body: Seq
    fid: str = ""
    own: frozenset = frozenset()
    new: str | None = None
    outside: frozenset = frozenset()


Node = Call | Assign | Seq | If | Loop | Jump | Try | Inline


# The IR's classes have no subclasses: ``type(node)`` picks the case (cheaper than an
# ``isinstance`` chain, the walks of the IR being among its most frequent calls).
_PARTS = {
    Seq: lambda node: node.items,
    If: lambda node: [node.body, node.orelse],
    Loop: lambda node: [node.body, node.orelse],
    Try: lambda node: [node.body, *node.handlers, node.orelse, node.final],
    Inline: lambda node: [node.body],
}
_EVENTS = (Call, Assign)


def parts(node: Node) -> list[Node]:
    """The direct sub-programs of a compound IR node (none for events and jumps)."""
    of = _PARTS.get(type(node))
    return of(node) if of is not None else []


def walk_events(node: Node):
    """Yield every raw event of an IR tree in program order."""
    if type(node) in _EVENTS:
        yield node
        return
    # a stack of iterators rather than nested generators: each event is yielded once, not
    # once per level of nesting above it
    stack = [iter(parts(node))]
    while stack:
        for part in stack[-1]:
            if type(part) in _EVENTS:
                yield part
            else:
                inner = parts(part)
                if inner:
                    stack.append(iter(inner))
                    break
        else:
            stack.pop()


def outside_values(node: Node) -> frozenset[str]:
    """The symbols of the parameters of the functions an IR tree runs whose values come from
    outside the code it builds (:attr:`Seq.outside`, :attr:`Inline.outside`)."""
    out: set[str] = set()
    stack = [node]
    while stack:
        n = stack.pop()
        if type(n) in (Seq, Inline):
            out |= n.outside
        stack.extend(parts(n))
    return frozenset(out)


def release(raws: Iterable[RawEvent]) -> None:
    """Break the reference cycles of raw events no one will read again: a raw event and its
    typed events name each other (``raw.typed``, ``event.raw``), and a call's ``sources`` name
    the call itself. Reference counting then frees the IR, and the syntax tree it holds, as
    soon as the check lets go of them; a cycle waits for the garbage collector, which walks
    every object the cycle holds (the whole file's tree, through the module index an event
    names). ``raws``: raw events, such as :func:`walk_events` of an IR."""
    for raw in raws:
        raw.typed, raw.sources = [], None
