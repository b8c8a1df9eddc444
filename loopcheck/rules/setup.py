"""Setup rule (LC501): the model changed after the optimizer was built from its parameters.

Knowledge (measured by the reference loop, see rules/LC501.md; torch.optim docs):
``optimizer = Adam(model.parameters())`` keeps references to those ``Parameter`` objects.
In PyTorch 2.x ``Module.to()``/``half()``/``cuda()`` convert parameters in place by
default (``param.data`` is swapped), so the optimizer still holds the model's parameters;
but Adam's state, built at the first ``step()``, keeps the old dtype (the next step
raises), and with ``torch.__future__.set_overwrite_module_params_on_conversion(True)``
(the knowledge's ``overwrite_params_on_conversion`` setting) the module gets new Parameter
objects the optimizer never sees; before the optimizer has state, and without that setting,
a conversion breaks nothing. Re-binding the model name
to a new model, or assigning a new submodule, always leaves the optimizer with parameters
the model no longer uses: those never train. A device move once the optimizer has state
breaks its next step only when it puts the parameters on another device than the state (reported
only when both places are established: an unknown place or target is silent), and not when the
model is moved back before it (a checkpoint round trip), the
move goes where the model already is (a model built on the default device is on the CPU), or
the optimizer's ``step()`` moves its state to the parameters (the knowledge's ``moves_state``:
Adafactor); an optimizer that builds its state in ``__init__`` (Adagrad, pytorch/pytorch#7844)
has state from its construction. A module without parameters (a loss, an
activation, ``Dropout``, ``Identity``) can be replaced, re-bound or converted at any time: the
optimizer holds nothing of it.
"""

from __future__ import annotations

import functools
import re
import weakref
from typing import Callable, Iterable, NamedTuple

import libcst as cst

from loopcheck.engine.dataflow import NOT_TAKEN, Machine
from loopcheck.engine.events import DTYPE_WORDS, TORCH_DTYPES, Event
from loopcheck.engine.builder import bound_names
from loopcheck.engine.ir import Assign, Call, If
from loopcheck.engine.names import dotted_name
from loopcheck.engine.knowledge import knowledge
from loopcheck.engine.settings import constant_form, setting_value
from loopcheck.engine.unit import Unit
from loopcheck.engine.values import (
    built_on_default_device, built_on_named_device, construction_without_parameters, model_without_parameters, parents,
    setting_calls, setting_turned_on,
)
from loopcheck.findings import Report
from loopcheck.catalog import INFOS
from loopcheck.rules.base import Rule, register


class S(NamedTuple):
    """What the model went through since one optimizer was built from its parameters.

    built: the optimizer construction on this path (``None``: not built here).
    has_state: the optimizer has state (a step ran, ``load_state_dict``, or it builds its state
        in ``__init__``); ``None`` when unknown.
    pending: the change of the model waiting for the next step (reported there).
    at_build: the device the model was moved to before the optimizer was built (a
        :class:`Place`, :func:`device_of`), or where it was at the last step (its state
        lives there), and current: where it is now; a model built on the default device
        (:func:`~loopcheck.engine.values.built_on_default_device`) is on the CPU until moved;
        ``None``: unknown. Two places are the same as :func:`same_place` decides.
    dtype: the floating point dtype of the model's parameters when known (``"float32"``: built
        from a ``torch.nn`` layer in the default dtype, or converted with ``float()`` /
        ``to(torch.float32)``); ``None`` when unknown.
    cuda: whether the process can use a CUDA device, a fact fixed for the whole run: ``True``
        once a move to a CUDA device returned (:func:`cuda_place`) or an arm of a test of
        ``torch.cuda.is_available()`` or ``torch.cuda.device_count()`` said so
        (:func:`cuda_said`); ``False`` when such an arm said not; ``None``: unknown.
    reads: ``(variable, place)`` pairs: a variable bound to the device of the model's parameters
        (``device = next(model.parameters()).device``, a ``device_read``) while the path knew
        where the model was: the variable names that place (:meth:`S.resolve`), so a later
        ``model.to(device)`` goes there.
    state_at: the device every tensor of the optimizer's state was copied to (an
        ``opt_state_move``, ``state[k] = v.to(device)`` for each value of each parameter's state)
        since it last got its state by a ``step()`` or ``load_state_dict()``; ``None``: not
        copied, the state is where :attr:`at_build` says. A move of the model to that device
        puts the parameters where their state is.
    """

    built: Event | None
    has_state: bool | None = False
    pending: Event | None = None
    at_build: Place | None = None
    current: Place | None = None
    pending_state: bool | None = False  # whether the optimizer had state when ``pending`` ran
    dtype: str | None = None
    cuda: bool | None = None
    reads: frozenset = frozenset()
    state_at: Place | None = None

    def resolve(self, where: "Place") -> "Place":
        """Where a move to ``where`` goes: the place the model was at when the variable
        ``where`` names was read from its parameters (:attr:`reads`), else ``where`` itself."""
        if where.var is not None:
            for var, place in self.reads:
                if var == where.var:
                    return place
        return where

    def read(self, var: str) -> "S":
        """This state once ``var`` is bound to the device of the model's parameters: the place
        the path knows the model is at (``current``), or, unknown, the variable itself."""
        if self.current is None:
            return self._replace(current=Place(var.rpartition(":")[2], var))
        return self._replace(reads=frozenset(
            {(v, p) for v, p in self.reads if v != var} | {(var, self.current)}))


class Place(NamedTuple):
    """Where a device move puts a model: the text of its target (``to(device)`` → ``"device"``,
    ``cuda()`` → ``"cuda"``; a device named by a literal is its name, so ``to("cpu")``,
    ``to(torch.device("cpu"))`` and ``cpu()`` are ``"cpu"``) and, for ``to()`` given a plain
    name, the variable that name resolves to (:attr:`~loopcheck.engine.ir.Arg.sym`), else
    ``None``. Inside an inlined helper, a parameter bound to the caller's argument resolves to
    the caller's variable: ``net.to(device)`` in ``evaluate(model, DEVICE)`` is ``DEVICE``.
    ``form``: the :func:`~loopcheck.engine.settings.constant_form` of the target, when it is
    built of run constants alone (``device`` bound once to ``torch.device('cuda' if
    torch.cuda.is_available() else 'cpu')``), else ``None``. ``kinds``: the kind of device the
    target is established to name (``"cpu"``, ``"cuda"``, ``"mps"``), as a pair ``(where the
    process can use CUDA, where it cannot)``, each ``None`` when not established
    (:func:`place_kinds`); ``None``: read from the text alone (:func:`text_kind`)."""

    text: str
    var: str | None = None
    form: tuple | None = None
    kinds: tuple | None = None


#: The device a model's parameters are on when its construction is
#: :func:`~loopcheck.engine.values.built_on_default_device`: PyTorch's default, as
#: :func:`device_of` names it.
DEFAULT_DEVICE = Place("cpu", kinds=("cpu", "cpu"))

_LITERAL_DEVICE = re.compile(r"""^(?:torch\.device\(\s*)?(["'])(\w+)\1\s*\)?$""")


def device_of(ev: Event) -> Place:
    """Where a device move puts the model (:class:`Place`); for an ``opt_state_move``, where the
    copy puts the optimizer's state (its call, ``extra["call"]``)."""
    target = ev.extra.get("target") or ""
    call = ev.extra.get("call", ev.raw)
    method = call.method or ""
    if method not in ("to", "type", "to_empty"):
        return Place(f"{method}:{target}" if target else method)
    literal = _LITERAL_DEVICE.match(target)
    if literal is not None:
        return Place(literal.group(2))
    var = None
    if method == "to":
        args = getattr(call, "args", ())
        arg = next((a for a in args if a.keyword == "device"), None) or next(
            (a for a in args[:1] if a.keyword is None), None)
        var = arg.sym if arg is not None else None
    return Place(target, var)


def same_place(a: Place | None, b: Place | None) -> bool:
    """Whether two moves are established to go to the same device: both known, and targets of
    one :attr:`Place.form` (two variables each bound once to ``torch.device('cuda' if
    torch.cuda.is_available() else 'cpu')``: equal values on every run), else the same variable
    when both name one (a helper's ``device`` bound to the caller's ``DEVICE`` is ``DEVICE``;
    the same spelling in two calls of a helper given different devices is not the same place),
    else the same text (a literal device by its name)."""
    if a is None or b is None:
        return False
    if a.form is not None and a.form == b.form:
        return True
    if a.var is not None and b.var is not None:
        return a.var == b.var
    return a.text == b.text


_CUDA_TEXT = re.compile(r"""^(?:cuda(?::.*)?|(?:torch\.device\(\s*)?(["'])cuda(?::\d+)?\1\s*\)?)$""")


def both_cuda(a: Place | None, b: Place | None) -> bool:
    """Whether two places are both CUDA devices (``cuda()``, ``cuda(k)``, ``to("cuda:0")``)
    whose indices the analysis cannot tell apart: ``cuda()`` goes to the current device, which
    ``torch.cuda.set_device`` may have made any index. A move between two of them is not
    established to change the device."""
    return a is not None and b is not None and bool(_CUDA_TEXT.match(a.text)) and bool(_CUDA_TEXT.match(b.text))


def cuda_place(p: Place | None) -> bool:
    """Whether a move to ``p`` goes to a CUDA device (``cuda()``, ``cuda(k)``, ``to("cuda:0")``):
    once it returned, the process can use CUDA (``cuda()`` raises where it cannot)."""
    return p is not None and bool(_CUDA_TEXT.match(p.text))


#: The device types PyTorch names (``torch.device("mps")``): a target spelled as one of them,
#: or a string value whose part before ``:`` is one, names that kind of device.
DEVICE_TYPES = frozenset({"cpu", "cuda", "mps", "xpu", "xla", "hpu", "npu", "ipu", "mtia", "meta"})


def device_kind(value: object) -> str | None:
    """The kind of device a value names: a string ``"cuda:1"`` → ``"cuda"``, ``"cpu"`` →
    ``"cpu"``; anything else (not a string, not a device type PyTorch names): ``None``."""
    if not isinstance(value, str):
        return None
    kind = value.partition(":")[0].strip()
    return kind if kind in DEVICE_TYPES else None


def text_kind(p: Place) -> str | None:
    """The kind of device a place names by its text alone, for a target that names no variable:
    ``cpu()``, ``to("cpu")``, ``to(torch.device("cpu"))`` are ``"cpu"``; ``cuda()``, ``cuda(k)``,
    ``to("cuda:0")`` are ``"cuda"`` (:func:`cuda_place`); ``to("mps")`` is ``"mps"``. A variable
    or any other expression: ``None``."""
    if p.var is not None:
        return None
    if cuda_place(p):
        return "cuda"
    return p.text if p.text in DEVICE_TYPES else None


def kind_on(p: Place | None, cuda: bool | None) -> str | None:
    """The kind of device ``p`` is established to name on a path that knows ``cuda`` of whether
    the process can use CUDA (``None``: not known; a script that picks CUDA when it is there
    trains where it is, so its CUDA arm is taken): from :attr:`Place.kinds` when the analysis
    resolved the target, else from its text (:func:`text_kind`); ``None``: not established."""
    if p is None:
        return None
    if p.kinds is not None:
        return p.kinds[1] if cuda is False else p.kinds[0]
    return text_kind(p)


def established_to_differ(a: Place | None, b: Place | None, cuda: bool | None) -> bool:
    """Whether a model at ``a`` moved to ``b`` is established to change device: both kinds are
    established (:func:`kind_on`) and differ. Two CUDA devices are one kind: their indices are
    not told apart (:func:`both_cuda`); an unresolved target (``args.device`` with no known
    default, a parameter of a function whose callers are not all known) establishes nothing."""
    ka, kb = kind_on(a, cuda), kind_on(b, cuda)
    return ka is not None and kb is not None and ka != kb


_NO = object()  # a part of a form whose value is not established

_COMPARE = {"Equal": lambda a, b: a == b, "NotEqual": lambda a, b: a != b, "GreaterThan": lambda a, b: a > b,
            "GreaterThanEqual": lambda a, b: a >= b, "LessThan": lambda a, b: a < b,
            "LessThanEqual": lambda a, b: a <= b, "Is": lambda a, b: a is b, "IsNot": lambda a, b: a is not b}


def form_value(form: tuple | None, cuda: bool) -> object:
    """The value of a :func:`~loopcheck.engine.settings.constant_form` in a process that can use
    CUDA (``cuda``) or cannot: ``torch.cuda.is_available()`` (the ``"cuda_available"`` fact) is
    ``cuda``; ``torch.cuda.device_count()`` is 0 without CUDA and at least 1 with it (compared
    only with 0 or 1, as :func:`cuda_said` reads it); ``torch.device(kind, ...)`` is its first
    argument's value; a conditional expression, ``not``, ``and``/``or`` and comparisons as Python
    evaluates them. Anything else: a private sentinel (not established)."""
    if form is None:
        return _NO
    head = form[0]
    if head == "literal":
        return form[2]
    if head == "fact":
        if form[1] == "cuda_available":
            return cuda
        if form[1] == "cuda_device_count":
            return ("count", cuda)
        return _NO
    if head == "call":
        if form[1] != "torch.device" or not form[2]:
            return _NO
        keyword, first = form[2][0]
        return form_value(first, cuda) if keyword in (None, "type") else _NO
    if head == "if":
        test = _truth(form_value(form[1], cuda))
        return _NO if test is None else form_value(form[2] if test else form[3], cuda)
    if head == "not":
        test = _truth(form_value(form[1], cuda))
        return _NO if test is None else not test
    if head in ("And", "Or"):
        left = _truth(form_value(form[1], cuda))
        if left is None:
            return _NO
        if left == (head == "Or"):  # ``a or b`` with a true, ``a and b`` with a false: a
            return form_value(form[1], cuda)
        return form_value(form[2], cuda)
    if head == "compare" and len(form) == 4:
        left, op, right = form_value(form[1], cuda), form[2][0], form_value(form[3], cuda)
        if isinstance(left, tuple) and left[:1] == ("count",) and right in (0, 1) and not isinstance(right, bool):
            if not left[1]:
                left = 0  # no CUDA: no device
            elif (op, right) in (("GreaterThan", 0), ("GreaterThanEqual", 1), ("NotEqual", 0)):
                return True
            elif (op, right) in (("Equal", 0), ("LessThan", 1), ("LessThanEqual", 0)):
                return False
            else:
                return _NO
        if left is _NO or right is _NO or isinstance(left, tuple) or isinstance(right, tuple) or op not in _COMPARE:
            return _NO
        try:
            return _COMPARE[op](left, right)
        except TypeError:
            return _NO
    return _NO


def _truth(value: object) -> bool | None:
    """Python's truth of a :func:`form_value`, ``None`` when not established."""
    if value is _NO:
        return None
    if isinstance(value, tuple) and value[:1] == ("count",):
        return bool(value[1])
    return bool(value)


_COUNT_SAYS = {  # (operator, literal) -> what the comparison ``device_count() <op> <literal>``
    # says of CUDA when it is true and when it is false (None: nothing)
    (cst.GreaterThan, 0): (True, False), (cst.GreaterThanEqual, 1): (True, False),
    (cst.NotEqual, 0): (True, False), (cst.Equal, 0): (False, True),
    (cst.LessThan, 1): (False, True), (cst.LessThanEqual, 0): (False, True),
}


def cuda_said(unit: Unit) -> Callable[[If, bool], bool | None]:
    """What taking an arm of an ``if`` says of whether the process can use CUDA: ``True`` in the
    arm where ``torch.cuda.is_available()`` is true (``not``, ``and``, ``or`` read as Python
    does: the body of ``a and b`` says what each of them says true; the else-arm of ``a or
    b``, what each says false), or where ``torch.cuda.device_count()`` is above 0 (``> 0``,
    ``>= 1``, ``!= 0``, the bare call); ``False`` where the test says the opposite; ``None``:
    nothing. The calls are recognised by the knowledge (``process_fact`` of
    ``torch.cuda.is_available``, ``"cuda_available"``, and of ``torch.cuda.device_count``,
    ``"cuda_device_count"``), their names qualified by the imports of the test's module. Each
    answer is kept for the ``if``."""
    memo: dict[tuple[int, bool], bool | None] = {}

    def fact(node: cst.BaseExpression, imports) -> str | None:
        if not isinstance(node, cst.Call) or node.args:
            return None
        summary = knowledge().function(imports.qualify(dotted_name(node.func)))
        returns = summary.returns if summary is not None else None
        return returns.get("process_fact") if returns is not None else None

    def says(node: cst.BaseExpression, truth: bool, imports) -> bool | None:
        if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Not):
            return says(node.expression, not truth, imports)
        if isinstance(node, cst.BooleanOperation):
            # ``a and b`` true: both are; ``a or b`` false: both are; otherwise either may be
            if isinstance(node.operator, cst.And) != truth:
                return None
            left, right = says(node.left, truth, imports), says(node.right, truth, imports)
            return left if left is not None else right
        what = fact(node, imports)
        if what is not None:  # a bare call: is_available(), or a count of 0 is false
            return truth
        if isinstance(node, cst.Comparison) and len(node.comparisons) == 1 \
                and fact(node.left, imports) == "cuda_device_count":
            target = node.comparisons[0]
            literal = target.comparator
            if isinstance(literal, cst.Integer):
                said = _COUNT_SAYS.get((type(target.operator), int(literal.value)))
                if said is not None:
                    return said[0] if truth else said[1]
        return None

    def ask(node: If, taken: bool) -> bool | None:
        key = (id(node), taken)
        if key not in memo:
            test = node.test
            if not isinstance(node.node, cst.If) or test is None:
                memo[key] = None
            else:
                imports = getattr(unit.module_of(node.node), "imports", None)
                memo[key] = says(test, taken, imports) if imports is not None else None
        return memo[key]

    return ask


def built_dtype(ev: Event) -> str | None:
    """The dtype of the parameters of a model a ``model_build`` makes, when established: a
    ``torch.nn`` library layer (``nn.Linear(8, 2)``, ``nn.Sequential(nn.Linear(...), ...)``)
    built with no argument that names a dtype has its parameters in the default dtype,
    ``float32``; a conversion later in the chain gives its own (``nn.Linear(8, 2).double()
    .to(device)`` is ``float64``, from the knowledge's ``convert`` effect of ``double``, or a
    dtype a ``to()`` names). A class of the project, a factory or a loaded model: ``None``."""
    c = ev.raw
    if not isinstance(c, Call):
        return None
    while c.inner is not None:  # outermost first: the last conversion of the chain decides
        args = getattr(c.node, "args", ())
        text = " ".join(cst.Module([]).code_for_node(a) for a in args)
        summary = knowledge().method("torch.nn.Module", c.method or "")
        convert = next((e for e in (summary.effects if summary else ()) if e.event == "convert"), None)
        if convert is not None and convert.get("dtype"):
            return convert.get("dtype")
        if DTYPE_WORDS.search(text):  # to(torch.float64), to(dtype=...)
            named = {TORCH_DTYPES.get(dotted_name(a.value) or "") for a in args}
            named.discard(None)
            return named.pop() if len(named) == 1 else None
        c = c.inner
    if DTYPE_WORDS.search(cst.Module([]).code_for_node(c.node)):
        return None  # nn.Linear(8, 2, dtype=torch.float64)
    if not c.qualified or not (c.func or "").startswith("torch.nn.") or knowledge().cls(c.func) is None:
        return None
    return "float32"


def concerns(owned: set[str] | None, subject: str) -> bool:
    """Whether a change of module ``subject`` concerns an optimizer built from the parameters of
    ``owned`` (``None``: unknown, taken to concern it): the module is one of them, a part of
    one (``model.encoder`` of ``model``), or holds one (``model`` of ``model.encoder``)."""
    if owned is None or subject in owned:
        return True
    return any(subject.startswith(m + ".") or m.startswith(subject + ".") for m in owned)


def _device_argument(ev: Event) -> tuple:
    """``(call, argument)`` of a ``to()`` move or an ``opt_state_move`` copy: the call, and the
    argument naming the device (its ``device=`` keyword, else its first positional argument;
    ``None`` when there is none)."""
    call = ev.extra.get("call", ev.raw)
    args = getattr(call, "args", ())
    arg = next((a for a in args if a.keyword == "device"), None) or next(
        (a for a in args[:1] if a.keyword is None), None)
    return call, arg


def device_form(unit: Unit) -> Callable[[Event], tuple | None]:
    """The :func:`~loopcheck.engine.settings.constant_form` of the device a ``to()`` move or an
    ``opt_state_move`` copy names (its ``device=`` keyword, else its first positional argument),
    for :attr:`Place.form`; ``None`` for any other call or target. Each answer is kept for the
    event."""
    memo: dict[int, tuple | None] = {}

    def ask(ev: Event) -> tuple | None:
        if id(ev) not in memo:
            call, arg = _device_argument(ev)
            memo[id(ev)] = (constant_form(unit, arg.node)
                            if getattr(call, "method", None) == "to" and arg is not None else None)
        return memo[id(ev)]

    return ask


def place_kinds(unit: Unit) -> Callable[[Event], tuple | None]:
    """:attr:`Place.kinds` of the device a ``to()`` move or an ``opt_state_move`` copy names
    (its ``device=`` keyword, else its first positional argument), when the analysis resolves
    it: a target built of run constants alone (its
    :func:`~loopcheck.engine.settings.constant_form`, valued by :func:`form_value` with and
    without CUDA: ``torch.device("cuda" if torch.cuda.is_available() else "cpu")`` is
    ``("cuda", "cpu")``), else the value a run that passes no option gives it
    (:func:`~loopcheck.engine.settings.setting_value`: an ``argparse`` default, a configuration
    class's attribute; also inside ``torch.device(...)``), naming a device kind
    (:func:`device_kind`). ``None`` for any other call or target (an unresolved option, a
    parameter, a variable bound on some path to something unknown). Each answer is kept for the
    event."""
    memo: dict[int, tuple | None] = {}

    def ask(ev: Event) -> tuple | None:
        if id(ev) not in memo:
            call, arg = _device_argument(ev)
            kinds = None
            if getattr(call, "method", None) == "to" and arg is not None:
                kinds = expression_kinds(unit, arg.node)
                if kinds is None and type(arg.node) is cst.Name:
                    # a variable bound again: the binding just before the move in its block
                    value = _binding_before(unit, arg.node)
                    kinds = expression_kinds(unit, value) if value is not None else None
                sym, depth = arg.sym, 0
                while kinds is None and sym is not None and depth < 4:
                    # a parameter of an inlined helper names the caller's variable (``arg.sym``):
                    # bound by one assignment of the unit, its value is that assignment's (a
                    # variable in turn, ``self.device = device``: that one's)
                    raw = _single_assigns(unit).get(sym)
                    kinds = expression_kinds(unit, raw.value) if raw is not None else None
                    sym, depth = (raw.value_sym if raw is not None else None), depth + 1
            memo[id(ev)] = kinds
        return memo[id(ev)]

    return ask


def expression_kinds(unit: Unit, node: cst.BaseExpression) -> tuple | None:
    """:attr:`Place.kinds` of a device expression of ``unit``'s code: by its
    :func:`~loopcheck.engine.settings.constant_form` (:func:`form_value` with and without CUDA),
    else by the value a run that passes no option gives it
    (:func:`~loopcheck.engine.settings.setting_value`), also as the first argument of
    ``torch.device(...)``; ``None`` when neither names a device kind."""
    form = constant_form(unit, node)
    if form is not None:
        kinds = (device_kind(form_value(form, True)), device_kind(form_value(form, False)))
        if kinds != (None, None):
            return kinds
    index = unit.module_of(node)
    if (isinstance(node, cst.Call) and index is not None and node.args and node.args[0].keyword is None
            and not node.args[0].star and index.imports.qualify(dotted_name(node.func) or "") == "torch.device"):
        node = node.args[0].value  # torch.device(args.device)
    kind = device_kind(setting_value(unit, node))
    return (kind, kind) if kind is not None else None


def _single_assigns(unit: Unit) -> dict[str, Assign]:
    """``symbol -> assignment`` for each symbol that exactly one raw assignment event of
    ``unit`` (its inlined calls included: a parameter bound to the caller's argument) binds, by
    a plain ``=`` with a value expression."""
    def build() -> dict[str, Assign]:
        found: dict[str, list] = {}
        for raw in unit.raws():
            if isinstance(raw, Assign) and raw.target is not None:
                found.setdefault(raw.target, []).append(raw)
        return {sym: raws[0] for sym, raws in found.items()
                if len(raws) == 1 and raws[0].op == "=" and raws[0].value is not None}
    return unit.cached("setup_single_assigns", build)


def _binding_before(unit: Unit, name: cst.Name) -> cst.BaseExpression | None:
    """The value of the binding of ``name`` that every run of the statement holding it reads:
    the nearest earlier statement of the same block that binds the name, when it is a plain
    ``name = value`` (``device = torch.device("cpu")`` just before ``model.to(device)``);
    ``None`` when no statement of the block before it binds the name, or one that does is any
    other binding (a loop, a tuple target, a compound statement)."""
    index = unit.module_of(name)
    if index is None:
        return None
    table = parents(index)
    stmt, block = name, table.get(name)
    while block is not None and not isinstance(block, (cst.IndentedBlock, cst.Module)):
        if isinstance(block, (cst.FunctionDef, cst.ClassDef, cst.Lambda)):
            return None
        stmt, block = block, table.get(block)
    if block is None:
        return None
    body = list(block.body)
    at = next((i for i, st in enumerate(body) if st is stmt), None)
    for st in reversed(body[:at] if at is not None else ()):
        if name.value not in bound_names(st)[0]:
            continue
        small = st.body if isinstance(st, cst.SimpleStatementLine) else ()
        if (len(small) == 1 and type(small[0]) is cst.Assign and len(small[0].targets) == 1
                and type(small[0].targets[0].target) is cst.Name):
            return small[0].value
        return None
    return None


def built_device(unit: Unit) -> Callable[[Event], Place | None]:
    """Where a ``model_build`` puts the model's parameters: :data:`DEFAULT_DEVICE` when its
    construction is established to build them on PyTorch's default device
    (:func:`~loopcheck.engine.values.built_on_default_device`); the device it names otherwise
    (:func:`~loopcheck.engine.values.built_on_named_device`: every layer's ``device=``, an
    enclosing ``with torch.device(X):``, an earlier ``torch.set_default_device(X)``), a
    :class:`Place` of that expression's text with its :func:`expression_kinds`; else ``None``
    (unknown). Each answer is kept for the event."""
    memo: dict[int, Place | None] = {}

    def ask(ev: Event) -> Place | None:
        if id(ev) not in memo:
            where = None
            if isinstance(ev.raw, Call):
                if built_on_default_device(unit, ev.raw):
                    where = DEFAULT_DEVICE
                else:
                    named = built_on_named_device(unit, ev.raw)
                    if named is not None:
                        where = Place(cst.Module([]).code_for_node(named), None, constant_form(unit, named),
                                      expression_kinds(unit, named))
            memo[id(ev)] = where
        return memo[id(ev)]

    return ask


def may_hold_parameters(unit: Unit) -> Callable[[Event], bool]:
    """Whether the module a change of a model concerns may hold parameters: for a submodule
    replaced, the new submodule; for a model re-bound or converted, the model (all its
    constructions in the unit). ``False`` only when established
    (:func:`~loopcheck.engine.values.construction_without_parameters`,
    :func:`~loopcheck.engine.values.model_without_parameters`: a loss, an activation,
    ``Dropout``, a class of the project whose ``__init__`` builds no parameter). Each answer
    is kept for the event."""
    memo: dict[int, bool] = {}

    def ask(ev: Event) -> bool:
        if id(ev) not in memo:
            if ev.kind == "submodule_replace":
                memo[id(ev)] = not construction_without_parameters(unit, ev.raw.value, ev.raw)
            else:
                memo[id(ev)] = not model_without_parameters(unit, ev.subject)
        return memo[id(ev)]

    return ask


def _is_tensor_test(test: cst.BaseExpression | None) -> cst.BaseExpression | None:
    """The value a test says is a tensor: ``torch.is_tensor(v)``, ``isinstance(v, torch.Tensor)``."""
    if not isinstance(test, cst.Call) or not test.args:
        return None
    func = dotted_name(test.func)
    if func == "torch.is_tensor" and len(test.args) == 1:
        return test.args[0].value
    if func == "isinstance" and len(test.args) == 2 and dotted_name(test.args[1].value) == "torch.Tensor":
        return test.args[0].value
    return None


_GUARDED: "weakref.WeakKeyDictionary[If, tuple[Event, ...]]" = weakref.WeakKeyDictionary()


def _guarded_moves(node: If) -> tuple[Event, ...]:
    """The ``opt_state_move`` events directly in the body of ``node`` that copy the value its
    test says is a tensor (:func:`_is_tensor_test`): ``if torch.is_tensor(v): state[k] =
    v.to(device)``. Kept per ``If`` for as long as the IR lives."""
    if node not in _GUARDED:
        _GUARDED[node] = _find_guarded_moves(node)
    return _GUARDED[node]


def _find_guarded_moves(node: If) -> tuple[Event, ...]:
    value = _is_tensor_test(node.test)
    if value is None:
        return ()
    code = cst.Module([]).code_for_node
    tested = code(value)
    return tuple(
        ev for item in node.body.items for ev in getattr(item, "typed", ())
        if ev.kind == "opt_state_move" and isinstance(ev.extra["call"].node.func, cst.Attribute)
        and code(ev.extra["call"].node.func.value) == tested
    )


def tensor_guarded_move(node: If, opt: str) -> Event | None:
    """The move of ``opt``'s state that ``node`` guards by a tensor test on the value it copies
    (``if torch.is_tensor(v): state[k] = v.to(device)``), else ``None``. A value of the state
    that is no tensor (a step count kept as a number) has no device: the arm that skips it
    leaves nothing behind, as the arm that moves a tensor does."""
    return next((ev for ev in _guarded_moves(node) if ev.subject == opt), None)


class OptimizerModelMachine(Machine):
    """The changes of the models an optimizer was built from, between its construction and
    its steps (:class:`S`); a change of a module that holds no parameters is none."""

    kinds = frozenset({'opt_build', 'opt_bind', 'step', 'opt_load_state', 'opt_state_move', 'opt_params_set', 'havoc',
                       'convert', 'model_build', 'submodule_replace', 'device_read'})
    only_own_events = True

    def __init__(self, opt: str, models: set[str], names: frozenset[str],
                 has_parameters: Callable[[Event], bool] = lambda ev: True,
                 owned: dict[int, set[str] | None] | None = None, known_dtypes: bool = True,
                 home: Callable[[Event], Place | None] = lambda ev: None,
                 overwrite: Callable[[], bool] = lambda: False,
                 cuda: Callable[[If, bool], bool | None] = lambda node, taken: None,
                 bound_once: Callable[[str], bool] = lambda var: True,
                 form: Callable[[Event], tuple | None] = lambda ev: None,
                 kinds: Callable[[Event], tuple | None] = lambda ev: None) -> None:
        self.opt, self.models = opt, models
        self.form = form  # the run-constant form of a move's target (device_form)
        self.place_kinds = kinds  # the kinds of device a move's target is established to name (place_kinds)
        self.bound_once = bound_once  # whether a variable has one binding in the unit
        self.subjects = names  # every name of the optimizer and its models (aliases included)
        self.has_parameters = has_parameters
        self.owned = owned or {}  # id(construction) -> the models whose parameters it takes
        self.known_dtypes = known_dtypes  # the default dtype is PyTorch's (float32)
        self.home = home  # where a model_build puts the parameters (None: unknown)
        self.overwrite = overwrite  # whether conversions make new parameters (asked only at a move)
        self.cuda = cuda  # what an arm of an ``if`` says of CUDA (cuda_said)
        # the inlined call whose local variable the optimizer is (``f3_1`` of ``f3_1:optimizer``)
        self.local_of = opt.partition(":")[0] if ":" in opt else None

    def initial(self) -> S:
        return S(None, None)

    def enter(self, s: S, call) -> S:
        """Each run of the function whose local variable names the optimizer starts with
        that variable unbound: the optimizer of an earlier run is not this one until the body
        builds it again (a path on which it does not, ``return optimizer`` raises). So does each
        construction of a new object whose attribute names the optimizer (``trainer =
        Trainer(model)`` for ``trainer.optimizer``, :attr:`~loopcheck.engine.ir.Inline.new`): the
        optimizer an earlier trainer built is that trainer's, not the new one's, whose
        ``__init__`` builds its own (a path on which it does not, ``trainer.optimizer.step()``
        raises)."""
        if s.built is None:
            return s
        new = getattr(call, "new", None)
        if call.fid != self.local_of and not (new is not None and self.opt.startswith(new + ".")):
            return s
        return S(None, None, None, s.current, s.current, dtype=s.dtype, cuda=s.cuda, reads=s.reads)

    def branch(self, s: S, node: If, taken: bool):
        """An arm whose test says the optimizer or one of its models is not there (``if model
        is None:``), where the tested name is a parameter still holding what the caller passed
        by one of their names, is not taken once the optimizer is built: it was built from
        that model's parameters, so both exist. The arm of ``if torch.is_tensor(v):`` that
        skips a state value no tensor (:func:`tensor_guarded_move`) leaves nothing on a device:
        it ends as the move of the tensors does. Whether the process can use CUDA is fixed for
        the run: an arm whose test says otherwise than the path knows (:func:`cuda_said`,
        ``if torch.cuda.is_available():`` after a ``model.cuda()`` returned) is not taken."""
        said = self.cuda(node, taken)
        if said is not None:
            if s.cuda is not None and s.cuda != said:
                return NOT_TAKEN
            s = s._replace(cuda=said)
        if s.built is None:
            return s
        if not taken:
            move = tensor_guarded_move(node, self.opt)
            if move is not None:
                return self.transfer(s, move)
        for sym, arm in node.absent_in:
            if arm is taken and any(p == sym and c in self.subjects for p, c in node.given):
                return NOT_TAKEN
        return s

    def branches_on(self, node: If) -> bool:
        return (any(c in self.subjects for _, c in node.given) or tensor_guarded_move(node, self.opt) is not None
                or self.cuda(node, True) is not None or self.cuda(node, False) is not None)

    def place(self, ev: Event) -> Place:
        """Where a device move or a state copy puts its tensors (:func:`device_of`), with the
        run-constant form of its target (:attr:`Place.form`)."""
        where = device_of(ev)
        form, kinds = self.form(ev), self.place_kinds(ev)
        if form is not None:
            where = where._replace(form=form)
        return where._replace(kinds=kinds) if kinds is not None else where

    def transfer(self, s: S, ev: Event) -> S:
        k = ev.kind
        if ev.subject == self.opt:
            if k == "opt_build":
                # the construction on this path decides: ``if``/``elif`` arms may build SGD under one
                # test and Adagrad, whose state exists from its constructor, under another
                return S(ev, bool(ev.extra.get("eager")), None, s.current, s.current, dtype=s.dtype, cuda=s.cuda,
                         reads=s.reads)
            if k == "step":
                # an optimizer that keeps no per-parameter state (SGD without momentum) has
                # none after its steps either; load_state_dict may still give it some
                stateless = s.built is not None and s.built.extra.get("stateless")
                # the state a step builds or updates lives where the parameters are now: a move
                # away and back before the next step is a round trip
                moved = s.pending is not None and s.has_state is not False  # a move that breaks it: reported
                # (where the parameters are not known, neither is where the state now lives)
                home = s.at_build if moved else s.current
                return s._replace(has_state=s.has_state if stateless else True, pending=None, at_build=home,
                                  state_at=None)
            if k == "opt_load_state":
                # a new state (``load_state_dict`` casts it to the parameters' device): no copy
                # of the old one tells where it is
                return s._replace(has_state=True, state_at=None)
            if k == "opt_state_move":
                # every state tensor copied to a device: where the parameters were moved, the
                # state follows them and the pending move breaks nothing; before the model's
                # move, the state waits there for the parameters (``state_at``)
                where = s.resolve(self.place(ev))
                if (s.pending is not None and s.pending.kind == "convert" and s.pending.extra["how"] == "device"
                        and same_place(where, s.current)):
                    return s._replace(pending=None, at_build=where, state_at=where)
                return s._replace(state_at=where)
            if k == "opt_params_set":
                # the replaced submodule stored into the optimizer's parameter group: it holds
                # and steps the new parameters, nothing is left out of it
                if (s.pending is not None and s.pending.kind == "submodule_replace"
                        and s.pending.raw.target in ev.extra["params"]):
                    return s._replace(pending=None)
                return s
            if k == "opt_bind":
                # the name re-bound by an expression that builds the optimizer on some path only
                # (``optimizer if optimizer is not None else AdamW(...)``): on a path whose
                # construction is not this statement's, the name now holds another object, whose
                # construction this path did not see; the optimizer built before is not it
                if s.built is not None and id(s.built.raw) in ev.extra["builds"]:
                    return s
                return S(None, None, None, s.current, s.current, dtype=s.dtype, cuda=s.cuda, reads=s.reads)
            if k == "havoc":
                return S(None, None, None, s.current, s.current, dtype=s.dtype, cuda=s.cuda, reads=s.reads)
            return s
        if ev.subject not in self.models:
            return s
        if k == "device_read":
            # ``device = next(model.parameters()).device``: the variable names where the
            # parameters are now (where the path knows they are, else the variable itself), so
            # a later ``model.to(device)`` goes back there
            # (a variable bound again elsewhere may hold another device by the move: only its
            # single binding tells where the move goes)
            if concerns(self.owned.get(id(s.built.raw)) if s.built else None, ev.subject) and (
                    s.current is None or self.bound_once(ev.extra["var"])):
                return s.read(ev.extra["var"])
            return s
        if s.built is not None and not concerns(self.owned.get(id(s.built.raw)), ev.subject):
            return s  # a module whose parameters this construction does not hold
        if k in ("convert", "model_build", "submodule_replace") and s.built is not None and not self.has_parameters(ev):
            return s  # nothing of it is in the optimizer, nothing to orphan or leave behind
        if k == "convert" and ev.extra["how"] == "layout" and not self.overwrite():
            # to(memory_format=...): the same Parameter objects, on the same device, in the same
            # dtype (converted in place); the optimizer's state keeps stepping them
            return s
        if k == "model_build":
            # a new model: its dtype and device are its construction's, not the old model's
            s = s._replace(dtype=built_dtype(ev) if self.known_dtypes else None, current=self.home(ev))
        elif k == "convert" and ev.extra["how"] in ("dtype", "restore"):
            to = ev.extra.get("dtype") if self.known_dtypes else None
            # a model of unknown dtype has its parameters in the default one (float32) unless a
            # conversion on this path changed it: ``float()`` then establishes no change
            if s.built is not None and to is not None and to == (s.dtype or "float32"):
                return s  # to the dtype it already has: nothing changes
            s = s._replace(dtype=to)
        if k == "convert" and ev.extra["how"] == "device":
            where = s.resolve(self.place(ev))
            if cuda_place(where):
                if s.cuda is False:
                    # a move to a CUDA device raises where the process cannot use CUDA (an arm of
                    # ``if torch.cuda.is_available():`` said so): this path never reaches a step
                    return NOT_TAKEN
                s = s._replace(cuda=True)  # the move returned: the process can use CUDA
            if s.built is None:
                return s._replace(current=where)
            if s.pending is not None and s.pending.kind != "convert":
                return s._replace(current=where)  # the new model or submodule stays unknown to the optimizer
            # under the overwrite setting every move makes new parameters, to the same device too
            if (same_place(where, s.current) or both_cuda(where, s.current)) and not self.overwrite():
                return s._replace(current=where)  # a move to where it is (or not known to be elsewhere)
            if (same_place(where, s.at_build) or both_cuda(where, s.at_build)) and s.pending is not None \
                    and not self.overwrite():
                return s._replace(pending=None, current=where)  # back where it was: a round trip
            if ((same_place(where, s.state_at) or both_cuda(where, s.state_at)) and not self.overwrite()
                    and (s.pending is None or s.pending.extra["how"] == "device")):
                # to where every tensor of the optimizer's state was copied: the parameters join
                # their state, which now lives there (a resumed optimizer's state moved to
                # ``device`` before ``model.to(device)``)
                return s._replace(pending=None, current=where, at_build=where)
            if not self.overwrite():
                # the move breaks the next step only when it is established to put the parameters
                # on another device than their state: where the state is (where the parameters
                # were at the last step, or where it was copied) and where the move goes both
                # known, and different (established_to_differ); otherwise the parameters may be
                # beside their state, and a move away made earlier may have been undone
                home = s.state_at if s.state_at is not None else s.at_build
                if not established_to_differ(home, where, s.cuda):
                    away = s.pending is not None and s.pending.extra["how"] == "device"
                    return s._replace(pending=None if away else s.pending, current=where)
            return s._replace(pending=ev, current=where, pending_state=s.has_state)
        if s.built is None:
            return s
        if k == "convert" and ev.extra["how"] == "restore":
            return s._replace(pending=None)  # the conversion just before it is undone
        if k in ("convert", "model_build", "submodule_replace"):
            return s._replace(pending=ev, pending_state=s.has_state)
        return s


def _flows(unit: Unit):
    """``(state, step)`` for each pending change of a model at a step of its optimizer. The
    roles are the file's: an optimizer that does not step in this unit has nothing to report
    here, and its machine is not run (DomainBed's algorithms.py ran 3,066 of these, now 31).
    The optimizers are taken from the unit's steps, in the roles' order: a file of many
    entry points and many optimizers (each inlined frame's ``opt`` is a symbol of its own)
    looked every optimizer up in every unit (the generated 19,577-line helper chains:
    1.7 million lookups, 1.9 s)."""
    optimizers = unit.roles.optimizers
    stepped = unit.by_subject("step")
    # read only at a device move: it parses the top-level code of a module outlined for its names
    overwrite = functools.cache(lambda: setting_turned_on(unit, OVERWRITE) is not None)
    for opt in sorted((opt for opt in stepped if opt in optimizers), key=list(optimizers).index):
        info, steps = optimizers[opt], stepped[opt]
        # the models the optimizer certainly holds (not one arm of `a.parameters() if x else ...`)
        models = info.certain_of() if info.certain else info.models
        if not models:
            continue
        names = frozenset().union(*(unit.roles.names_of(sym) for sym in (opt, *models)))
        flow = unit.flow(
            ("setup", opt),
            lambda opt=opt, models=models, names=names, info=info: OptimizerModelMachine(
                opt, models, names, may_hold_parameters(unit), info.by_ctor,
                not setting_calls(unit, "default_dtype"), built_device(unit), overwrite, cuda_said(unit),
                _bound_once(unit), device_form(unit), place_kinds(unit)),
        )
        for step in steps:
            yield from _pending_at(unit, flow.states(step), step)


def _bound_once(unit: Unit) -> Callable[[str], bool]:
    """Whether a variable's symbol (``f5_45:device``) is the target of exactly one assignment
    among the unit's raw events (its inlined calls included)."""
    def once(var: str) -> bool:
        counts = unit.cached("setup_assign_counts", lambda: _assign_counts(unit))
        return counts.get(var, 0) == 1
    return once


def _assign_counts(unit: Unit) -> dict[str, int]:
    """How many raw assignment events of ``unit`` bind each symbol."""
    counts: dict[str, int] = {}
    for raw in unit.raws():
        if isinstance(raw, Assign) and raw.target is not None:
            counts[raw.target] = counts.get(raw.target, 0) + 1
    return counts


_STATE_RANK = {True: 0, None: 1, False: 2}  # the optimizer had state / may have / had none


def _pending_at(unit: Unit, states, step: Event):
    """One state per pending change of the model at ``step``: the state set has no order, and
    one change can be met with and without optimizer state (a conversion inside the epoch loop
    runs before and after the first step). The worst case is kept (state, then unknown, then
    none; then the earliest optimizer construction), so the report is the same on every run."""
    best: dict[int, S] = {}
    for s in sorted(unit.in_order(states, "built"), key=lambda s: _STATE_RANK[s.pending_state]):
        if s.pending is not None:
            best.setdefault(id(s.pending), s)
    for s in unit.in_order(best.values(), "pending"):
        yield s, step


def _state_follows(s: S) -> bool:
    """A device move or dtype conversion that matters only through the optimizer's state, of an
    optimizer whose ``step()`` may put that state where the parameters are: a class of the
    project that defines its own ``step()``, where it keeps its state is not established
    (mozilla/TTS's RAdam moves it to each parameter's device and dtype with ``type_as`` at
    every step), or a library class whose knowledge says its ``step()`` moves the state
    (``moves_state``: fairseq's and transformers' ``Adafactor`` call ``state[...].to(grad)``
    first). A broken next step is not established."""
    return (s.pending.kind == "convert" and s.pending.extra["how"] != "layout" and s.pending_state is not False
            and bool(s.built.extra.get("own_step") or s.built.extra.get("moves_state")))


def _only_moved(s: S) -> bool:
    """A device move made before the optimizer had state, of an optimizer that builds it lazily."""
    return s.pending.kind == "convert" and s.pending.extra["how"] == "device" and s.pending_state is False


#: The process-wide setting under which a conversion makes new ``Parameter`` objects.
OVERWRITE = "overwrite_params_on_conversion"


def _converted_in_place(s: S, overwrite: Callable[[], cst.Call | None]) -> bool:
    """A dtype conversion made while the optimizer had no state, with PyTorch converting
    parameters in place (``overwrite()``, the call that turned the setting on, is ``None``):
    the optimizer holds the converted parameters and builds its state in their new dtype at
    its first step (``Optimizer.load_state_dict`` casts a loaded state to the parameters'
    dtype), so nothing breaks."""
    return (s.pending.kind == "convert" and s.pending.extra["how"] == "dtype" and s.pending_state is False
            and overwrite() is None)


@register
class ModelConvertedAfterOptimizer(Rule):
    """LC501: on a path from an optimizer's construction to its ``step()``, a model it was built
    from changes in a way that leaves parameters out of it or breaks its state: a submodule
    replaced (``submodule_replace``), the model's name re-bound (``model_build``), a dtype
    conversion, or a device move once the optimizer has state (``convert``). Reported only when
    the module the change concerns may hold parameters (:func:`may_hold_parameters`: not for a
    loss, an activation, ``Dropout``, or a class of the project whose ``__init__`` builds none)
    and the optimizer's construction holds its parameters (:func:`concerns`); a conversion to
    the dtype the model has is none (a model of unknown dtype has the default one, so ``float()``
    establishes no change), a dtype conversion is not reported while an optimizer that keeps no
    per-parameter state (SGD without momentum) has none, and a change that breaks only the state
    is not reported for an optimizer of the project with its own ``step()`` or one whose
    ``step()`` the knowledge says moves its state to the parameters (:func:`_state_follows`). A
    device move is reported only when it is established to put the parameters on another kind of
    device than their state (:func:`established_to_differ`): where the state is (the parameters'
    place at the last step, :attr:`S.at_build`, or where it was copied, :attr:`S.state_at`) and
    where the move goes are both known (:func:`kind_on`: a literal, ``cpu()``/``cuda()``, a
    run-constant target, :func:`place_kinds`; a construction on the default or a named device,
    :func:`built_device`); an unresolved target or an unknown place is silent. A
    device move to where the model is (known from the moves on the path, compared by the variable
    their targets resolve to, a helper's parameter being the caller's argument, else by their
    text, :func:`same_place`, and from a construction established to build on the default
    device, :func:`built_device`) changes nothing, and so does a move followed by a copy of
    every tensor of the optimizer's state to the same place (``opt_state_move``). Whether the
    optimizer has state at its construction is that construction's (Adagrad's ``eager``), not
    another ``if`` arm's. A replaced submodule or parameter stored into the optimizer's
    ``param_groups`` (``opt_params_set``) is held by it. A memory format conversion
    (``to(memory_format=...)`` alone, ``how = "layout"``) keeps the device, the dtype and the
    ``Parameter`` objects: reported only under the overwrite setting, which makes new ones. A
    move to a CUDA device on a path that knows the process cannot use CUDA raises: the path ends
    there (``NOT_TAKEN``)."""

    info = INFOS["LC501"]

    def check(self, unit: Unit) -> Iterable[Report]:
        reported = set()
        # read only for a pending change: it parses the top-level code of a module outlined for its names
        overwrite = functools.cache(lambda: setting_turned_on(unit, OVERWRITE))
        for s, step in _flows(unit):
            if (_only_moved(s) or _converted_in_place(s, overwrite) or _state_follows(s)
                    or id(s.pending) in reported):
                continue
            reported.add(id(s.pending))
            yield self._report(s, step, overwrite())

    def _report(self, s: S, step: Event, overwrite: cst.Call | None) -> Report:
        ev, built = s.pending, s.built
        k = ev.kind
        if k == "model_build":
            short = "binds the model name to a new model after the optimizer at line {n} was built from the old one"
            what = ("The optimizer keeps updating the old model's parameters and the new model never trains "
                    "(measured, CPU, torch 2.13: 4/4 of the trained model's parameters are not in the optimizer).")
        elif k == "submodule_replace":
            short = "after the optimizer at line {n} was built: its new parameters never train"
            what = ("Its new parameters are not in the optimizer (measured, CPU, torch 2.13: 2/4 parameters, the "
                    "new head, never updated).")
        elif ev.extra["how"] == "device":
            short = "moves the model after the optimizer at line {n} has state: the next step() fails"
            what = ("The optimizer's state stays on the old device"
                    + (" (it builds its state in its constructor)" if built.extra.get("eager") else "")
                    + ", so the next step() raises a device mismatch error on a GPU.")
        elif s.pending_state and ev.extra["how"] != "layout":
            short = "changes the model's dtype after the optimizer at line {n} has state: the next step() fails"
            what = ("Adam's state keeps the old dtype (measured, CPU, torch 2.13: RuntimeError 'expected dtype "
                    "float ... but got dtype double' at the next step).")
        else:  # no state yet, or a memory format conversion, under the overwrite setting (_converted_in_place)
            short = "makes new parameters after the optimizer at line {n} was built from the old ones"
            what = ("set_overwrite_module_params_on_conversion(True) makes the conversion build new Parameter objects, "
                    "so the optimizer updates orphaned copies and the model never trains (measured, CPU, torch 2.13: "
                    "6/6 parameters orphaned, 0/32 steps moved the model).")
        related = [(built.node, "the optimizer, built from the old parameters"), (step.node, "the step that follows")]
        if overwrite is not None and k == "convert" and (not s.pending_state or ev.extra["how"] == "layout"):
            related.append((overwrite, "the setting that makes conversions build new parameters"))
        return Report(
            self.info.code, ev.node,
            lambda d: (
                f"{d.code(ev.node.targets[0].target, 40)} is replaced " if k == "submodule_replace" else f"{d.code(ev.node, 50)} "
            ) + short.format(n=d.line(built.node)),
            related,
            note=lambda d: what + " Build the optimizer after the model is final.",
            at=ev, related_at=(built, step),
        )


@register
class ModelMovedAfterOptimizer(Rule):
    """LC502: on a path from an optimizer's construction to its ``step()``, a model it was built
    from is moved to another device (``convert``, ``how = "device"``) before the optimizer has
    any state (no ``step()``, no ``load_state_dict()``, a lazily built state), while the
    program has turned on ``torch.__future__.set_overwrite_module_params_on_conversion(True)``
    (the knowledge's ``overwrite_params_on_conversion`` setting): the move then makes new
    ``Parameter`` objects and the optimizer keeps the old ones. Without that setting PyTorch
    moves the parameters in place and the order breaks nothing: silent. Reported only when
    the moved model may hold parameters (:func:`may_hold_parameters`)."""

    info = INFOS["LC502"]

    def check(self, unit: Unit) -> Iterable[Report]:
        reported = set()
        for s, step in _flows(unit):
            if not _only_moved(s) or id(s.pending) in reported:
                continue
            overwrite = setting_turned_on(unit, OVERWRITE)
            if overwrite is None:
                return
            reported.add(id(s.pending))
            ev, built = s.pending, s.built
            yield Report(
                self.info.code, ev.node,
                lambda d, ev=ev, built=built: (
                    f"{d.code(ev.node, 50)} moves the model into new parameters; the optimizer at line "
                    f"{d.line(built.node)} keeps the old ones"
                ),
                [(built.node, "the optimizer, built before the move"),
                 (overwrite, "the setting that makes conversions build new parameters")],
                note=lambda d: (
                    "set_overwrite_module_params_on_conversion(True) makes the move build new Parameter objects: the "
                    "optimizer updates orphaned copies and the model never trains (measured, CPU, torch 2.13: 6/6 "
                    "parameters orphaned, 0/32 steps moved the model). Move the model before building the optimizer."
                ),
                at=ev, related_at=(built, None),
            )
