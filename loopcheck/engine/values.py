"""What values and modules are: tensors, logits or probabilities, and what a model is made of.

The dataflow of :mod:`loopcheck.engine.dataflow` follows the *state* of tracked objects
(gradients, modes, schedules). Some rules need to know what a *value* is instead: whether a
name holds a tensor (``x.to(device)`` as a statement then does nothing), whether a loss is
given logits or probabilities, what a model's ``forward`` returns, whether a model has layers
that behave differently in train and eval mode. This module answers those questions from the
unit's raw events and the project's classes, with the library facts of
:mod:`loopcheck.engine.knowledge`:

* a call's result: its entry's ``returns.value`` (``torch.softmax`` → ``"probabilities"``,
  ``torch.randn`` → ``"tensor"``), ``same = "self"`` for tensor methods that keep the kind
  of values of their receiver (``logits.squeeze(1)``), and a model's output for ``model(x)``;
* a name: the values of all its definitions in the unit (assignments, call results, loop
  targets) that reach the point where it is read (:func:`reaching_definitions`); when they
  disagree, or one is not understood, nothing is known;
* a model: the class it is built from (a class of the project, or a library class), the
  layers its ``__init__`` builds, and what its ``forward`` returns (the last statement's value,
  followed through the names ``forward`` assigns at its top level).

Everything here answers ``None`` (unknown) rather than guess.
"""

from __future__ import annotations

import builtins
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator, Literal

import libcst as cst

from loopcheck.engine.attr_facts import assigned_ends, ends, truth_arms
from loopcheck.engine.builder import (
    NO_VALUE, ClassRef, ModuleIndex, all_param_names, bound_names, find_method, single_bindings, star_class,
)
from loopcheck.engine.callers import STARRED, CallSite, call_sites
from loopcheck.engine.classes import CONTAINERS, is_module_class
from loopcheck.engine.ir import Arg, Assign, Call, If, Inline, Jump, Loop, LoopInfo, Node, Seq, Try, parts, walk_events
from loopcheck.engine.graphs import GradInputs, is_true
from loopcheck.engine.knowledge import knowledge
from loopcheck.engine.names import dotted_name, names_variable
from loopcheck.engine.pins import dates_before, pinned_before, scan_text
from loopcheck.engine.calls import arg_at
from loopcheck.engine.roles import ACCELERATOR_NAME, ROLE_TYPES, last
from loopcheck.engine.unreferenced import calling_files, named_outside_code
from loopcheck.engine.walk import children, names_in, walk

#: Kinds of values a loss input can be.
LOGITS, PROBABILITIES, LOG_PROBABILITIES = "logits", "probabilities", "log_probabilities"
KINDS = frozenset({LOGITS, PROBABILITIES, LOG_PROBABILITIES})
SEQUENTIAL = "torch.nn.Sequential"
#: Functional calls whose result depends on ``module.training`` (when given it).
MODE_FUNCTIONS = ("dropout", "batch_norm", "alpha_dropout", "feature_alpha_dropout", "instance_norm")
BUILTINS = frozenset(dir(builtins))
MAX_DEPTH = 4

ClassLike = "ClassRef | str"  # a class of the project, or a library class's qualified name


# -- raw events -----------------------------------------------------------------------------


def _cached(unit, key, compute):
    if key not in unit._flows:
        unit._flows[key] = compute()
    return unit._flows[key]


def raw_calls(unit) -> dict[int, list[Call]]:
    """``id(cst.Call) → [raw Call]``: the unit's raw events of each call node, in program order
    (a function inlined at two call sites has two events per node)."""
    def compute():
        out: dict[int, list[Call]] = {}
        for raw in walk_events(unit.ir):
            if isinstance(raw, Call):
                out.setdefault(id(raw.node), []).append(raw)
        return out

    return _cached(unit, ("values", "calls"), compute)


def all_calls(unit) -> list[Call]:
    """Every raw call event of the unit, in program order."""
    return _cached(unit, ("values", "all_calls"), lambda: [r for r in walk_events(unit.ir) if isinstance(r, Call)])


def setting_calls(unit, setting: str) -> list[Call]:
    """The unit's calls that change process-wide ``setting`` (a name of
    :data:`~loopcheck.engine.knowledge.SETTINGS`: ``torch.set_default_dtype(...)`` for
    ``"default_dtype"``), in program order."""
    return [c for c in all_calls(unit)
            if c.qualified and (s := knowledge().function(c.func)) is not None and setting in s.setting]


def setting_turned_on(unit, setting: str) -> cst.Call | None:
    """The first call that turns boolean ``setting`` on with the literal ``True``
    (``torch.__future__.set_overwrite_module_params_on_conversion(True)``), in the unit or in
    the module code of the unit's module (a process-wide setting made on import holds for
    every function of the module), or ``None``: a value the analysis cannot read does not
    establish it."""
    def on(args) -> bool:
        return bool(args) and is_true(args[0].value)

    for c in setting_calls(unit, setting):
        if on(c.node.args):
            return c.node
    return next((call for call in _module_setting_calls(unit.module, setting, nested=False) if on(call.args)), None)


def setting_called(unit, setting: str) -> bool:
    """Whether the unit, or the top-level code of its module (outside its functions and
    classes, at any depth: ``if cuda: torch.set_default_tensor_type(...)``), calls a function
    that changes process-wide ``setting``, whatever the value."""
    return bool(setting_calls(unit, setting)) or any(_module_setting_calls(unit.module, setting, nested=True))


def _module_setting_calls(module, setting: str, nested: bool) -> Iterator[cst.Call]:
    """The calls of module ``module``'s top-level code that change process-wide ``setting``:
    its top-level expression statements, or, ``nested``, every call outside its functions and
    classes (``if cuda: torch.set_default_tensor_type(...)``)."""
    kb = knowledge()
    for stmt in getattr(module, "body", ()):
        if nested:
            calls = (n for n in walk(stmt, (cst.FunctionDef, cst.ClassDef)) if type(n) is cst.Call)
        elif isinstance(stmt, cst.SimpleStatementLine):
            calls = (small.value for small in stmt.body if isinstance(small, cst.Expr) and isinstance(small.value, cst.Call))
        else:
            continue
        for call in calls:
            d = dotted_name(call.func)
            summary = kb.function(module.imports.qualify(d)) if d is not None else None
            if summary is not None and setting in summary.setting:
                yield call


#: Methods and functions whose call where a module is built may put its parameters on a device
#: other than the default one (``cuda()``, ``to(device)``, the calls that change the default).
DEVICE_CALLS = frozenset({"cuda", "to", "to_empty", "set_default_device", "set_default_tensor_type"})
#: Keyword arguments that name a device to build on (``torch.zeros(3, device=d)``,
#: ``nn.Linear(8, 2, device="cuda")``, ``from_pretrained(..., device_map="auto")``).
DEVICE_KEYWORDS = frozenset({"device", "device_map"})

#: How many classes deep :func:`_init_names_device` reads the classes of the project a module's
#: ``__init__`` builds; deeper, the device is not established.
MAX_INIT_DEPTH = 4
#: How many functions :func:`_init_names_device` reads for one construction at most; past it,
#: the device is not established.
MAX_INIT_FUNCTIONS = 64


def built_on_default_device(unit, c: Call) -> bool:
    """Whether the module construction ``c`` builds (``Net()``, ``nn.Linear(8, 2)``, through
    calls on its result: ``Net().train()``) is established to have its parameters on the CPU,
    PyTorch's default device. It is when

    * the class is a ``torch.nn`` layer with a knowledge entry, or a class of the project
      deriving from ``nn.Module`` whose ``__init__`` (its bases', the methods it calls on
      ``self``, the classes and functions of its module and of the project it calls) makes
      no call that may put tensors on a device (:func:`_names_device`,
      :func:`_init_names_device`);
    * the construction names no device (``Net(device=device)``,
      ``nn.Linear(8, 2, device="cuda")``);
    * no call of the ``default_device`` setting (``torch.set_default_device``,
      ``torch.set_default_tensor_type``) is in the unit or the top-level code of its module,
      and no ``with`` statement of the modules that hold the construction and the inlined
      calls that lead to it enters ``torch.device(...)`` or a context held in a variable
      (:func:`_enters_device`).

    ``False`` for anything else: a factory, a loaded model, a model given as an argument."""
    found = construction_of(unit, c)
    if found is None:
        return False
    cls, node = found
    if isinstance(cls, str):
        if not cls.startswith("torch.nn.") or not is_module_class(cls):
            return False
    elif not is_module_class(cls) or _init_names_device(cls):
        return False
    if _names_device(node):
        return False
    if setting_called(unit, "default_device"):
        return False
    modules = {id(m): m for m in (unit.module_of(n) for n in (node, *c.ctx.calls))}
    return not any(m is None or _enters_device(m) for m in modules.values())


def built_on_named_device(unit, c: Call) -> cst.BaseExpression | None:
    """The device expression a module construction ``c`` (as :func:`built_on_default_device`
    reads it) is established to build all its parameters on, when it is not PyTorch's default:

    * a ``torch.nn`` library construction every layer of which is given the same ``device=``
      expression, apart from containers (``nn.Sequential``) and layers the knowledge says hold no
      parameters (``nn.ReLU``), with no other call that may put tensors on a device
      (``nn.Sequential(nn.Linear(8, 16, device=device), nn.ReLU())``: ``device``);
    * otherwise, a construction that names no device inside ``with torch.device(X):`` of the
      function (or module code) that holds it: ``X``, the innermost such block;
    * otherwise, one that names no device after the only call of the ``default_device`` setting
      reachable from the unit (in it or in its module's top-level code),
      ``torch.set_default_device(X)`` given one argument, made earlier in the unit's program
      order: ``X``.

    The class must be a ``torch.nn`` layer or a class of the project whose ``__init__`` names
    no device (:func:`_init_names_device`). ``None`` for anything else (not established)."""
    found = construction_of(unit, c)
    if found is None:
        return None
    cls, node = found
    index = unit.module_of(node)
    if index is None:
        return None
    if isinstance(cls, str):
        if not cls.startswith("torch.nn.") or not is_module_class(cls):
            return None
    elif not is_module_class(cls) or _init_names_device(cls):
        return None
    code = cst.Module([]).code_for_node
    if _names_device(node):
        return _layers_device(unit, index, node) if isinstance(cls, str) else None
    table = parents(index)
    holder = table.get(node)
    while holder is not None and not isinstance(holder, (cst.FunctionDef, cst.ClassDef, cst.Module)):
        if type(holder) is cst.With and len(holder.items) == 1 and type(holder.items[0].item) is cst.Call:
            e = holder.items[0].item
            d = dotted_name(e.func)
            if (d is not None and index.imports.qualify(d) == "torch.device" and len(e.args) == 1
                    and e.args[0].keyword is None and not e.args[0].star):
                return e.args[0].value
        holder = table.get(holder)
    calls = setting_calls(unit, "default_device")
    module_calls = list(_module_setting_calls(unit.module, "default_device", nested=True))
    if len(calls) != 1 or any(m is not calls[0].node for m in module_calls):
        return None
    setter = calls[0]
    order = all_calls(unit)
    if setter.func != "torch.set_default_device" or len(setter.node.args) != 1 or setter.node.args[0].keyword \
            or setter.node.args[0].star or c not in order or order.index(setter) > order.index(c):
        return None
    return setter.node.args[0].value if code(setter.node.args[0].value) else None


def _layers_device(unit, index, node: cst.CSTNode) -> cst.BaseExpression | None:
    """The one ``device=`` expression every parameter-holding ``torch.nn`` layer of construction
    ``node`` is given (containers and layers without parameters need none), when no other call
    in it may put tensors on a device and every call in it is a ``torch.nn`` construction;
    else ``None``."""
    code = cst.Module([]).code_for_node
    kb = knowledge()
    device = None
    for n in walk(node):
        if type(n) is not cst.Call:
            continue
        d = dotted_name(n.func)
        qualified = index.imports.qualify(d) if d is not None else None
        if qualified is None or not qualified.startswith("torch.nn.") or kb.cls(qualified) is None:
            return None
        given = [a.value for a in n.args if a.keyword is not None and a.keyword.value == "device"]
        if given:
            if device is not None and code(given[0]) != code(device):
                return None
            device = device if device is not None else given[0]
        elif qualified not in CONTAINERS and not construction_without_parameters(unit, n):
            return None
    return device


def _names_device(node: cst.CSTNode) -> bool:
    """Whether code ``node`` holds a call that may put tensors on a device: a call of one of
    :data:`DEVICE_CALLS`, or one given a keyword of :data:`DEVICE_KEYWORDS` other than
    ``None`` (storing a device, ``self.device = None``, builds nothing on it)."""
    for n in walk(node):
        if type(n) is cst.Arg and n.keyword is not None and n.keyword.value in DEVICE_KEYWORDS:
            if not (type(n.value) is cst.Name and n.value.value == "None"):
                return True
        elif type(n) is cst.Call:
            d = dotted_name(n.func)
            name = d.rpartition(".")[2] if d else n.func.attr.value if type(n.func) is cst.Attribute else None
            if name in DEVICE_CALLS:
                return True
    return False


def _init_names_device(cls: ClassRef) -> bool:
    """Whether building ``cls`` may put parameters off the default device, as far as its code
    says: ``__init__`` of the class and of its bases in the project, the methods it calls on
    ``self``, and the functions and classes of the project it calls (their ``__init__``, to
    :data:`MAX_INIT_DEPTH` classes deep) make a call that may put tensors on a device
    (:func:`_names_device`). Past :data:`MAX_INIT_FUNCTIONS` functions read, or at a definition
    of the project that is no function, the answer is ``True``: not read, it may."""
    todo: list[tuple[ModuleIndex, cst.FunctionDef, ClassRef, int]] = []
    classes: set = set()

    def add_class(k: ClassRef, depth: int) -> bool:
        """Queue ``__init__`` of ``k`` and of its bases; ``True`` past the depth bound."""
        if depth > MAX_INIT_DEPTH:
            return True
        stack = [k]
        while stack:
            b = stack.pop()
            if b in classes:
                continue
            classes.add(b)
            stack.extend(b.bases())
            info = b.info
            if info is not None and "__init__" in info.methods:
                todo.append((b.module, info.methods["__init__"], k, depth))
        return False

    add_class(cls, 0)
    done: set = set()
    while todo:
        index, func, owner, depth = todo.pop()
        if func in done:
            continue
        if len(done) >= MAX_INIT_FUNCTIONS:
            return True
        done.add(func)
        if _names_device(func.body):
            return True
        me = _self_name(func)
        for node in walk(func.body):
            if type(node) is not cst.Call or (d := dotted_name(node.func)) is None:
                continue
            head, _, rest = d.partition(".")
            if head == me:
                found = find_method(owner, rest) if rest and "." not in rest else None
                if found is not None:
                    todo.append((found[0].module, found[1], owner, depth))
                continue
            ref = class_of_name(index, d)
            if isinstance(ref, ClassRef):
                if add_class(ref, depth + 1):
                    return True
            elif d in index.functions:
                todo.append((index, index.functions[d], owner, depth))
            elif ref is None and head in index.imports.aliases and head not in index.globals:
                project = index.project
                member = project.lookup(index.imports.qualify(d), index.path) if project is not None else None
                if member is not None:  # a function of another module of the project: read it too
                    if member.function is None or member.info.index is None:
                        return True
                    todo.append((member.info.index, member.function, owner, depth))
    return False


def _enters_device(index: ModuleIndex) -> bool:
    """Whether a ``with`` statement of module ``index`` may make another device the default for
    the code in its block: an item that calls ``torch.device(...)`` (a ``torch.device`` is a
    context manager, PyTorch 2.0), or an item held in a variable (which may be one); ``True``
    when the module cannot be read."""
    if "enters_device" not in index.cache:
        tree = index.tree
        found = tree is None
        for node in walk(tree) if tree is not None else ():
            if type(node) is not cst.With:
                continue
            for item in node.items:
                e = item.item
                if type(e) is cst.Call:
                    d = dotted_name(e.func)
                    found = found or (d is not None and index.imports.qualify(d) == "torch.device")
                else:
                    found = True
            if found:
                break
        index.cache["enters_device"] = found
    return index.cache["enters_device"]


def grad_off_inputs(unit, fwd) -> Call | Literal[True] | None:
    """A call that, before forward ``fwd`` (a typed event), makes values that turn the graph
    off for what is computed from them, in ``fwd``'s function or a function it calls, or in a
    function on the inlined call chain that leads to ``fwd`` (a caller, before the call that
    leads to it: the test loop that makes volatile inputs and calls the model whose own
    ``forward`` holds ``fwd``): a library entry's ``grad_off_arg`` given and not
    ``False``/``None``/``0`` (``Variable(x, volatile=True)``,
    ``Variable(x, volatile=evaluation)``). Code written so is
    for PyTorch <= 0.3, where volatile inputs were how evaluation ran without a graph (from 0.4
    on the argument is ignored): whether ``fwd`` records a graph is not established. ``True``
    when no such call is found but the unit's code is written for a PyTorch before
    ``[since] grad_mode`` (0.4: :func:`written_for_before`, the project's pins or the era of its
    code), where there was no grad mode to turn off and the inputs decided, whichever code made
    them (a dataset object that wraps its batches in volatile Variables); ``None`` otherwise."""
    def off(c: Call) -> bool:
        summary = knowledge().function(c.func) if c.qualified else None
        if summary is None or summary.grad_off_arg is None:
            return False
        arg = arg_at(c, summary.grad_off_arg)
        return arg is not None and not _zero(arg.node)

    def compute():
        calls = all_calls(unit)
        return {id(c): i for i, c in enumerate(calls)}, [(i, c) for i, c in enumerate(calls) if off(c)]

    # Positions in program order and the calls that turn the graph off, once per unit: each
    # forward then looks only at those calls (usually none) instead of every call before it.
    position, offs = _cached(unit, ("values", "grad_off_calls"), compute)
    frame = fwd.ctx.calls
    before = position.get(id(fwd.raw), len(position))
    for i, c in offs:
        if i >= before:
            continue
        calls = c.ctx.calls
        # in fwd's function or one it calls (fwd's chain is a prefix of c's), or in a caller
        # of fwd's function (c's chain is a prefix of fwd's): program order puts c before the
        # call that leads to fwd
        if calls[:len(frame)] == frame or frame[:len(calls)] == calls:
            return c
    # before 0.4 (no torch.no_grad): the inputs decided, whichever code made them volatile
    return True if written_for_before(unit, "grad_mode") is True else None


def written_before(unit) -> tuple[tuple[int, ...], cst.Call] | None:
    """``(version, call)``: the unit's code is written for a PyTorch older than ``version``,
    as ``call`` establishes, a call whose knowledge entry says it only means something before
    that version (``only_before``: ``Variable(x, volatile=True)``, before 0.4), with the
    argument it names given and not ``False``/``None``/``0``. The calls read are those of the
    checked module (any function of it, run or not) and of the project's functions the unit
    inlines; of several, the oldest version. ``None`` when no call establishes one."""
    def dating(summary, given) -> tuple[int, ...] | None:
        if summary is None or summary.only_before is None:
            return None
        before, ref = summary.only_before
        if ref is None:
            return before
        node = given(ref)
        return before if node is not None and not _zero(node) else None

    def in_module(index) -> tuple[tuple[int, ...], cst.Call] | None:
        tree = getattr(index, "tree", None)
        if tree is None:
            return None
        found = None
        for node in walk(tree):
            if type(node) is not cst.Call:
                continue
            summary = knowledge().function(index.imports.qualify(dotted_name(node.func)))
            v = dating(summary, lambda ref, node=node: _cst_arg(node, ref))
            if v is not None and (found is None or v < found[0]):
                found = (v, node)
        return found

    def compute():
        module = unit.module
        if module is None:
            found = None
        else:
            cache = getattr(module, "cache", None)
            if cache is None:
                found = in_module(module)
            else:
                if "written_before" not in cache:
                    cache["written_before"] = in_module(module)
                found = cache["written_before"]
        for c in all_calls(unit):  # the project's functions inlined from other modules
            summary = knowledge().function(c.func) if c.qualified else None
            v = dating(summary, lambda ref, c=c: (a.node if (a := arg_at(c, ref)) is not None else None))
            if v is not None and (found is None or v < found[0]):
                found = (v, c.node)
        return found

    return _cached(unit, ("values", "written_before"), compute)


def written_for_before(unit, behaviour: str) -> bool | None:
    """Whether the unit's code is established to be written for a PyTorch older than the one
    where ``behaviour`` began (its version in ``[since]`` of ``knowledge/torch.toml``:
    ``scheduler_step_after_optimizer``, ``zero_grad_set_to_none``, ``grad_mode``): a call it
    makes only means something before a version no newer than that one (:func:`written_before`)
    and the checked module uses no API that began with the dating call's version or later
    (``[[api_since]]``: ``torch.no_grad``, ``.item()``, 0.4, beside ``volatile=True``: the code
    runs on 0.4 and every later PyTorch, and is run on a current one;
    :func:`~loopcheck.engine.pins.dates_before`): a file is dated by its own code, whatever era
    other files of the project are of and whatever the project pins; or the project allows only
    an older PyTorch, by its pins or by the era of all its code
    (:func:`~loopcheck.engine.pins.pinned_before`; a text checked alone by its own code).
    ``None`` when the knowledge gives the behaviour no version. The answers that do not depend
    on the unit are kept in the checked module's cache (the project's files are read once per
    check, the checked module scanned once)."""
    since = knowledge().since.get(behaviour)
    if since is None:
        return None
    module = unit.module
    cache = getattr(module, "cache", None)
    if cache is None:
        cache = {}
    if "own_scan" not in cache:
        text = _module_text(module)
        cache["own_scan"] = scan_text(text) if text is not None else None
    scan = cache["own_scan"]
    dated = written_before(unit)
    if dated is not None and dates_before(dated[0], scan[1] if scan is not None else None, since):
        return True
    key = ("pinned_before", since)
    if key not in cache:
        cache[key] = pinned_before(getattr(module, "project", None), since, scan=scan)
    return cache[key]


def _module_text(module) -> str | None:
    """The text of a checked module: the source its index holds (a module indexed statement by
    statement keeps it, and asking for its tree would parse it whole), else its tree's code
    (``None`` when it has neither)."""
    source = getattr(module, "source", None)
    if isinstance(source, str):
        return source
    tree = getattr(module, "tree", None)
    return tree.code if tree is not None else None


def _cst_arg(call: cst.Call, ref) -> cst.BaseExpression | None:
    """The value of the argument of ``call`` a knowledge reference names (``2``,
    ``"volatile"``, ``(2, "volatile")``), or ``None`` when it is not given (or a ``*args`` may
    give it)."""
    if ref in ("self", "*"):
        return None
    index, keyword = ref if isinstance(ref, tuple) else (ref, None) if isinstance(ref, int) else (None, ref)
    for a in call.args:
        if keyword is not None and a.keyword is not None and a.keyword.value == keyword:
            return a.value
    positional = [a for a in call.args if a.keyword is None]
    if index is not None and index < len(positional) and not any(a.star for a in positional[:index + 1]):
        return positional[index].value
    return None


def raw_call(unit, node: cst.CSTNode | None, near=None) -> Call | None:
    """The raw event of call ``node`` evaluated in the same inlined call as ``near`` (a raw
    event or a typed event: an argument, an assigned value), else its first event."""
    if not isinstance(node, cst.Call):
        return None
    raws = raw_calls(unit).get(id(node))
    if not raws:
        return None
    if near is not None:
        calls = near.ctx.calls
        for r in raws:
            if r.ctx.calls == calls:
                return r
    return raws[0]


def loops(unit) -> list[tuple[Loop, tuple[LoopInfo, ...]]]:
    """Every loop of the unit with the loops around it (outermost first, across inlined calls)."""
    def compute():
        out: list[tuple[Loop, tuple[LoopInfo, ...]]] = []
        _loops_in(unit.ir, (), out)
        return out

    return _cached(unit, ("values", "loops"), compute)


def _loops_in(node: Node, around: tuple[LoopInfo, ...], out: list) -> None:
    """Append ``(loop, the loops around it)`` for each loop of ``node`` to ``out`` (a function of
    the module: a nested function that calls itself is a reference cycle, see
    :func:`loopcheck.engine.builder._in_evaluation_order`)."""
    if isinstance(node, Loop):
        out.append((node, around))
        _loops_in(node.body, around + (node.info,), out)
        _loops_in(node.orelse, around, out)
        return
    for part in parts(node):
        _loops_in(part, around, out)


def definitions(unit) -> dict[str, list]:
    """``symbol → [definition]``: the assignments (:class:`Assign`), calls whose result it is
    given (:class:`Call`) and loops whose target binds it (:class:`Loop`)."""
    def compute():
        out: dict[str, list] = {}
        for raw in walk_events(unit.ir):
            if isinstance(raw, Assign) and raw.target and raw.op in ("=", "[]="):
                out.setdefault(raw.target, []).append(raw)
            elif isinstance(raw, Assign) and raw.target:
                out.setdefault(raw.target, []).append(None)  # x += ...: not followed
            elif isinstance(raw, Call):
                for t in raw.targets:
                    if t:
                        out.setdefault(t, []).append(raw if len(raw.targets) == 1 else None)
        for loop, _around in loops(unit):
            for t in loop.info.targets:
                sym = _loop_target_symbol(unit, loop, t)
                out.setdefault(sym, []).append(loop)
        return out

    return _cached(unit, ("values", "defs"), compute)


#: What :func:`reaching_definitions` names for the value a symbol held before the unit began:
#: a parameter of the entry function, a global bound elsewhere.
OUTSIDE = "<outside>"


@dataclass
class _Ends:
    """The definitions that reach each way out of a part of the IR."""

    normal: frozenset = frozenset()
    brk: frozenset = frozenset()
    cont: frozenset = frozenset()
    ret: frozenset = frozenset()
    exc: frozenset = frozenset()


def reaching_definitions(unit, sym: str, at) -> frozenset | None:
    """The definitions of ``sym`` (assignments, calls whose result it is given, loops whose
    target binds it) whose value ``sym`` may hold when the raw event ``at`` runs, on some path
    of the unit's control flow; :data:`OUTSIDE` among them when a path reaches ``at`` with
    ``sym`` bound by nothing in the unit. ``if``/``else`` arms, loops (taken to run at least
    once, their last iteration flowing back into the first), jumps, ``try`` and inlined calls
    are followed as :mod:`loopcheck.engine.dataflow` follows them. A test is not decided, but
    the ``if``s on the truth of one attribute that holds one value for the whole run of the
    method (:attr:`~loopcheck.engine.ir.If.constant`: ``if not self.logits:`` then ``if
    self.logits:``) take agreeing arms on a path, until an event that may change that
    attribute (:class:`_Truths`). ``None`` when no path of the unit reaches ``at`` (or it is
    not one of the unit's events)."""
    table = _cached(unit, ("values", "reaching", sym), lambda: _reaching_table(unit, sym))
    return table.get(id(at))


#: An entry point's own frame: the first its build makes (:meth:`UnitBuilder.begin`: ``f<tag>_1``).
_ENTRY_FRAME = re.compile(r"f\d+_1:")


def holds_entry_argument(unit, sym: str | None, at) -> bool:
    """Whether ``sym`` is a parameter of the unit's entry function that may still hold, on
    some path to the raw event ``at``, the argument its caller gave: a value the unit does not
    see (no caller of the entry is read). A parameter of an inlined call is bound to its
    caller's value, not this."""
    entry = unit.entry
    if entry is None or not sym or not _ENTRY_FRAME.match(sym):
        return False
    if sym.partition(":")[2] not in all_param_names(entry):
        return False
    reach = reaching_definitions(unit, sym, at)
    return reach is not None and OUTSIDE in reach


@dataclass
class _Truths:
    """The truths of constant attributes (:attr:`~loopcheck.engine.ir.If.constant`) a path of
    the unit may know, for :func:`_reach`: a path's knowledge is an integer, bit ``2 * i`` for
    attribute ``i`` known truthy, bit ``2 * i + 1`` known falsy.

    Attributes:
        arms: ``id(If) → (body, else-arm)``, each ``(against, known)`` (the bit of a path that
            cannot take the arm, the bit a path that takes it knows) or ``None`` where the arm
            says nothing of the attribute's truth (the else-arm of ``if x.a is False:``).
        ends: ``id(raw event) →`` the bits of the attributes it may change (:func:`_may_change`).
        loops: ``id(Loop) →`` the bits of the attributes whose object a loop's target binds.
    """

    arms: dict
    ends: dict
    loops: dict


#: The most constant attributes :func:`_reach` follows in a unit (each may split every set of
#: definitions in three: known truthy, known falsy, not known).
MAX_TRUTHS = 6


def _truths(unit) -> _Truths | None:
    """:class:`_Truths` of ``unit``; ``None`` when no two ``if``s test the truth of one constant
    attribute, or more than :data:`MAX_TRUTHS` attributes are so tested (then none is
    followed)."""
    def compute():
        tested: dict[str, list[If]] = {}
        for node in _ifs_in(unit.ir, []):
            if node.constant and node.fact is not None:
                tested.setdefault(node.fact[0], []).append(node)
        keys = [key for key, ifs in tested.items() if len(ifs) > 1 and (
            all(node.immutable for node in ifs) or not _escapes(key, unit))]
        if not keys or len(keys) > MAX_TRUTHS:
            return None
        arms: dict[int, tuple] = {}
        for i, key in enumerate(keys):
            for node in tested[key]:
                sides = truth_arms(node.test)
                arms[id(node)] = tuple(
                    None if truth is None else (1 << 2 * i + truth, 1 << 2 * i + (not truth)) for truth in sides)
        ended: dict[int, int] = {}
        for raw in walk_events(unit.ir):
            mask = 0
            for i, key in enumerate(keys):
                if _may_change(key, raw):
                    mask |= 3 << 2 * i
            if mask:
                ended[id(raw)] = mask
        bound: dict[int, int] = {}
        for loop, _ in loops(unit):
            mask = 0
            for i, key in enumerate(keys):
                if key.rpartition(":")[2].split(".")[0] in loop.info.targets:
                    mask |= 3 << 2 * i
            if mask:
                bound[id(loop)] = mask
        return _Truths(arms, ended, bound)

    return _cached(unit, ("values", "truths"), compute)


def _ifs_in(node: Node, out: list) -> list:
    """The ``If``s under ``node``, in program order, appended to ``out``."""
    if type(node) is If:
        out.append(node)
    for part in parts(node):
        _ifs_in(part, out)
    return out


def _escapes(key: str, unit) -> bool:
    """Whether the unit may give the object attribute symbol ``key`` holds another name, which a
    write the analysis does not tie to ``key`` could then change (``h = self.history`` then
    ``h.append(x)``): a value that may be or hold it bound to a variable or stored anywhere,
    the object passed to a call (which may keep it), a loop over it. The truth of an attribute
    whose value may be mutable is followed only where no such event is seen."""
    for raw in walk_events(unit.ir):
        if type(raw) is Assign:
            if raw.target != key and key in (raw.held if raw.held is not None else raw.mentions):
                return True
        elif any(a.sym == key or key in a.mentions for a in raw.args):
            return True
    return any(key in loop.info.iter_names for loop, _ in loops(unit))


def _may_change(key: str, raw) -> bool:
    """Whether the raw event ``raw`` may change the truth of attribute symbol ``key``: an
    assignment to the attribute, to its object or to an attribute of that name on any object
    (:func:`~loopcheck.engine.attr_facts.assigned_ends`), a store into the object it holds
    (``self.d[k] = v`` changes the truth of a dict), a call that may assign it
    (:attr:`~loopcheck.engine.ir.Call.clobbers`, :func:`~loopcheck.engine.attr_facts.ends`) or
    that receives the object it holds (``self.items.append(x)`` changes the truth of a list)."""
    if isinstance(raw, Assign):
        return bool(raw.target) and (assigned_ends(key, raw.target, raw.op) or raw.target == key)
    if any(t and assigned_ends(key, t, "=") for t in raw.targets):
        return True
    return any(ends(key, c) or c == key or c.startswith(key + ".") for c in raw.clobbers)


def _reaching_table(unit, sym: str) -> dict[int, frozenset]:
    """``id(raw event) → the definitions of sym that reach it`` (:func:`reaching_definitions`)."""
    binding = frozenset(id(d.info) for d in definitions(unit).get(sym, ()) if isinstance(d, Loop))
    table: dict[int, frozenset] = {}
    _reach(unit.ir, frozenset({(OUTSIDE, 0)}), sym, binding, table, _truths(unit))
    return {k: frozenset(d for d, _ in found) for k, found in table.items()}


def _join(a: _Ends, b: _Ends) -> _Ends:
    """``a`` with the jumps of ``b`` added (its normal end is ``a``'s)."""
    return _Ends(a.normal, a.brk | b.brk, a.cont | b.cont, a.ret | b.ret, a.exc | b.exc)


def _forget(cur: frozenset, mask: int) -> frozenset:
    """The ``(definition, knowledge)`` pairs ``cur`` without the truths of ``mask``."""
    if not any(k & mask for _, k in cur):
        return cur
    return frozenset((d, k & ~mask) for d, k in cur)


def _enter(cur: frozenset, arm: tuple | None) -> frozenset:
    """The pairs of ``cur`` that can take an arm that says ``arm`` (:attr:`_Truths.arms`) of an
    attribute's truth, each now knowing it."""
    if arm is None:
        return cur
    against, known = arm
    return frozenset((d, k | known) for d, k in cur if not k & against)


def _reach(node: Node, cur: frozenset, sym: str, binding: frozenset, table: dict, truths: _Truths | None) -> _Ends:
    """Run the definitions ``cur`` of ``sym``, ``(definition, knowledge)`` pairs (the truths of
    constant attributes the path knows: :class:`_Truths`), through ``node``, recording in
    ``table`` those that reach each raw event (a function of the module: see :func:`_loops_in`)."""
    kind = type(node)
    if kind is Assign or kind is Call:
        table[id(node)] = table.get(id(node), frozenset()) | cur
        if truths is not None and id(node) in truths.ends:
            cur = _forget(cur, truths.ends[id(node)])
        if kind is Assign and node.target == sym:
            made = frozenset((node, k) for _, k in cur)
            return _Ends(cur | made if node.op == "[]=" else made)  # d[k] = v keeps d
        if kind is Call and sym in node.targets:
            return _Ends(frozenset((node, k) for _, k in cur))
        return _Ends(cur)
    if kind is Jump:
        return _Ends(**{{"break": "brk", "continue": "cont", "return": "ret", "raise": "exc"}[node.kind]: cur})
    if kind is Seq:
        out = _Ends()
        for item in node.items:
            r = _reach(item, cur, sym, binding, table, truths)
            out = _join(out, r)
            cur = r.normal
            if not cur:
                break
        out.normal = cur
        return out
    if kind is If:
        arms = truths.arms.get(id(node)) if truths is not None else None
        if arms is None:
            a = _reach(node.body, cur, sym, binding, table, truths)
            b = _reach(node.orelse, cur, sym, binding, table, truths)
        else:  # (an arm no path can take with what it knows is not reached)
            entry = _enter(cur, arms[0])
            a = _reach(node.body, entry, sym, binding, table, truths) if entry else _Ends()
            entry = _enter(cur, arms[1])
            b = _reach(node.orelse, entry, sym, binding, table, truths) if entry else _Ends()
        return _Ends(a.normal | b.normal, a.brk | b.brk, a.cont | b.cont, a.ret | b.ret, a.exc | b.exc)
    if kind is Loop:
        head = cur
        rebinds = id(node.info) in binding
        bound = truths.loops.get(id(node), 0) if truths is not None else 0
        while True:
            entry = frozenset((node, k) for _, k in head) if rebinds else head
            body = _reach(node.body, _forget(entry, bound) if bound else entry, sym, binding, table, truths)
            new_head = head | body.normal | body.cont
            if node.once or new_head == head:
                break
            head = new_head
        exits = frozenset() if node.infinite else body.normal | body.cont  # (run at least once)
        after = _reach(node.orelse, exits, sym, binding, table, truths) if node.orelse.items else _Ends(exits)
        return _Ends(after.normal | body.brk, after.brk, after.cont, after.ret | body.ret, after.exc | body.exc)
    if kind is Try:
        body = _reach(node.body, cur, sym, binding, table, truths)
        out = _Ends(brk=body.brk, cont=body.cont, ret=body.ret, exc=frozenset() if node.handlers else body.exc)
        if node.orelse.items:
            out.normal = _reach(node.orelse, body.normal, sym, binding, table, truths).normal
        else:
            out.normal = body.normal
        handler_in = cur | body.normal | body.exc
        for h in node.handlers:
            r = _reach(h, handler_in, sym, binding, table, truths)
            out = _join(out, r)
            out.normal |= r.normal
        if node.final.items:  # (it runs on every way out; what it binds is kept on the normal one)
            fin = _reach(node.final, out.normal | out.ret | out.exc, sym, binding, table, truths)
            out = _join(out, fin)
            out.normal = fin.normal
        return out
    if kind is Inline:
        r = _reach(node.body, cur, sym, binding, table, truths)
        return _Ends(r.normal | r.ret, exc=r.exc)  # its return ends only the call
    return _Ends(cur)


def binds_each_iteration(info: LoopInfo, sym: str) -> bool:
    """Whether symbol ``sym`` (``layer``, ``f3_1:layer``) is a name the ``for`` target of the
    loop ``info`` binds: another element of what the loop iterates in each iteration
    (``for layer in layers``)."""
    return any(sym == t or sym.endswith(":" + t) for t in info.targets)


def yields_fresh_items(info: LoopInfo, roles) -> bool:
    """Whether every element the ``for`` loop ``info`` binds is a new object that nothing else
    the program keeps references: the loop iterates a loader whose knowledge entry says its
    iteration builds each item anew (``fresh_items``: a DataLoader's batches), directly or
    through ``enumerate`` (whose counts are new integers). Another iterable (a list the
    program holds, ``zip`` with one) may hand out objects that stay referenced by it."""
    if not set(info.iter_calls) <= {"enumerate"}:
        return False
    names = [n for n in info.iter_names if n != "enumerate"]
    return bool(names) and all(roles.canon(n) in roles.fresh_loaders for n in names)


def _loop_target_symbol(unit, loop: Loop, name: str) -> str:
    """The symbol a loop target name has in the unit (the frame of the loop's events)."""
    for raw in walk_events(loop.body):
        for sym in _symbols_of(raw):
            if last(sym) == name and (sym == name or sym.endswith(":" + name)):
                return sym
    return name


def _symbols_of(raw) -> Iterator[str]:
    if isinstance(raw, Call):
        if raw.receiver:
            yield raw.receiver.partition(".")[0]
        for a in raw.args:
            yield from a.mentions
    else:
        yield from raw.mentions
        if raw.target:
            yield raw.target


# -- expression statements ------------------------------------------------------------------


def discarded(unit, call: Call) -> bool:
    """Whether ``call`` is a whole expression statement (``x.to(device)`` on its own line):
    its result is thrown away (the builder marks it: :attr:`Call.discarded
    <loopcheck.engine.ir.Call.discarded>`), in a module read from its text: one read
    statement by statement (:class:`~loopcheck.engine.outline.LazyModuleIndex`, whose ``tree``
    would parse it whole again, apart), or parsed whole."""
    index = unit.module_of(call.node)
    if not call.discarded or index is None:
        return False
    return getattr(index, "fragments", None) is not None or getattr(index, "tree", None) is not None


def read_after(unit, start: Call, sym: str) -> cst.CSTNode | None:
    """Where ``sym`` may be read after the raw event ``start`` and before it is bound again, on
    some path of the unit (:class:`_Reads`): the node of the first such read found, ``None`` when
    none is. A ``tensor.float()`` whose result is dropped harms only code that reads ``tensor``
    later. A read is an event that names ``sym``, an attribute of it or an object holding it (an
    argument, the receiver of a method, an assigned value, what a loop iterates, a returned
    value) or, for a plain name, an ``if`` test that mentions it; ``start`` itself is none. A name left for the code after the unit (a global read by another
    function, an attribute read by another method) is not followed, nor a read outside any call
    or assignment (a bare ``x`` that a notebook cell displays)."""
    return _Reads(start, sym).found(unit.ir)


class _Reads:
    """A forward walk of the IR for :func:`read_after`, its state a boolean per way out of a
    node: whether, on some path, ``start`` ran and ``sym`` was not bound again since."""

    NONE = (False, False, False, False)

    def __init__(self, start: Call, sym: str) -> None:
        self.start, self.sym = start, sym
        self.plain = "." not in sym
        self.name = sym.rpartition(":")[2]
        self.hit: cst.CSTNode | None = None  # the first read found
        self.around: set[int] = set()  # the nodes that hold ``start``

    def found(self, ir: Node) -> cst.CSTNode | None:
        self._holds(ir)
        self.run(ir, False)
        return self.hit

    def _holds(self, node: Node) -> bool:
        """Whether ``node`` holds ``start`` (recorded in ``around``)."""
        if node is self.start:
            return True
        inside = False
        for part in parts(node):
            inside = self._holds(part) or inside
        if inside:
            self.around.add(id(node))
        return inside

    def _names(self, name: str | None) -> bool:
        """Whether a mention ``name`` is ``sym``, an attribute of it, or an object holding it."""
        s = self.sym
        return bool(name) and (name == s or name.startswith(s + ".") or s.startswith(name + "."))

    def _reads(self, raw) -> bool:
        if raw is self.start:
            return False
        if isinstance(raw, Assign):
            if raw.target is not None and (raw.op != "=" and self._names(raw.target)
                                           or raw.target.startswith(self.sym + ".")):
                return True  # x += 1, x[i] = v, x.data = v: use the tensor itself
            return self._names(raw.value_sym) or any(self._names(m) for m in raw.mentions)
        c = raw
        while c is not None:
            if self._names(c.receiver) or any(self._names(o) for o in c.operands):
                return True
            if any(self._names(a.sym) or any(self._names(m) for m in a.mentions) for a in c.args):
                return True
            c = c.inner
        return False

    def _binds(self, raw) -> bool:
        if isinstance(raw, Assign):
            return raw.op == "=" and raw.target == self.sym
        return self.sym in raw.targets

    def run(self, node: Node, live: bool) -> tuple[bool, bool, bool, bool]:
        """``(normal, break, continue, return or raise)``: whether ``sym`` may be pending on
        leaving ``node`` each way, entering it pending (``live``) or not."""
        if self.hit is not None or not live and id(node) not in self.around and node is not self.start:
            return self.NONE
        t = type(node)
        if t is Call or t is Assign:
            if live and self._reads(node):
                self.hit = node.node
            if node is self.start:
                return True, False, False, False
            return live and not self._binds(node), False, False, False
        if t is Jump:
            if node.kind == "return" and live and any(self._names(v) for v in node.values):
                self.hit = self.start.node  # (a jump has no node: the value leaves with the return)
            return False, live and node.kind == "break", live and node.kind == "continue", live and node.kind in (
                "return", "raise")
        if t is Seq:
            brk = cont = ret = False
            for item in node.items:
                live, b, c, r = self.run(item, live)
                brk, cont, ret = brk or b, cont or c, ret or r
            return live, brk, cont, ret
        if t is If:
            if live and self.plain and node.test is not None and self.name in names_in(node.test):
                self.hit = node.test
            a, b = self.run(node.body, live), self.run(node.orelse, live)
            return a[0] or b[0], a[1] or b[1], a[2] or b[2], a[3] or b[3]
        if t is Loop:
            if live and any(self._names(n) for n in node.info.iter_names):
                self.hit = node.info.node  # the loop iterates it
            rebound = binds_each_iteration(node.info, self.sym)
            head = live
            while True:  # a boolean head only grows: two rounds at most
                body = self.run(node.body, head and not rebound)
                new = head or body[0] or body[2]
                if node.once or new == head:
                    break
                head = new
            # taken to run at least once, as the dataflow interpreter does
            after = self.run(node.orelse, body[0] or body[2])
            return after[0] or body[1], after[1], after[2], after[3] or body[3]
        if t is Try:
            body = self.run(node.body, live)
            # a handler may start anywhere in the body
            into = live or body[0] or body[3] or id(node.body) in self.around
            normal, brk, cont, ret = self.run(node.orelse, body[0])[0], body[1], body[2], body[3]
            for h in node.handlers:
                r = self.run(h, into)
                normal, brk, cont, ret = normal or r[0], brk or r[1], cont or r[2], ret or r[3]
            if node.final.items:
                fin = self.run(node.final, normal or ret)
                normal, ret = fin[0] and normal, ret or fin[3]
            return normal, brk, cont, ret
        if t is Inline:
            r = self.run(node.body, live)
            return r[0] or r[3], False, False, False
        return live, False, False, False


# -- tensors --------------------------------------------------------------------------------


def tensor_method(method: str | None) -> bool:
    """Whether the library knowledge lists ``Tensor.<method>`` as returning a new tensor with
    the receiver's values (``to``, ``cuda``, ``half``, ``squeeze``, ...), leaving it unchanged."""
    if not method:
        return False
    summary = knowledge().method("torch.Tensor", method)
    return summary is not None and summary.returns is not None and "self" in summary.returns.same


def is_tensor(unit, sym: str | None) -> bool:
    """Whether every definition of ``sym`` in the unit gives it a tensor, and one of them makes
    a new one: a tensor factory (``torch.randn(...)``), a tensor method of a tensor
    (``x = x.to(device)``), or a loop target unpacked from a data loader's batch where its
    collate function makes a tensor (``for x, y in loader``, ``for i, (x, y) in
    enumerate(loader)``: :func:`batch_tensor_items`). A name with no definition here (a
    parameter), or whose only definitions convert itself (``self.vae = self.vae.to(dtype)``: a
    module for all we know), is not known to be one."""
    return _tensor_sym(unit, sym, frozenset()) == "yes"


def _tensor_sym(unit, sym: str | None, visiting: frozenset) -> str:
    """``"yes"``, ``"no"``, or ``"same"`` (a definition from itself: neither proves nor refutes)."""
    if sym is None or len(visiting) > MAX_DEPTH:
        return "no"
    if sym in visiting:
        return "same"
    defs = definitions(unit).get(sym)
    roles = unit.roles
    if not defs or roles.role(roles.canon(sym)) is not None:
        return "no"
    visiting = visiting | {sym}
    verdicts = set()
    for d in defs:
        if isinstance(d, Loop):
            verdicts.add("yes" if _batch_element(unit, d, last(sym)) else "no")
        elif isinstance(d, Assign):
            if d.op != "=":
                verdicts.add("no")
            elif d.value_sym is not None:
                verdicts.add(_tensor_sym(unit, d.value_sym, visiting))
            elif isinstance(d.value, cst.Call):
                verdicts.add(_tensor_call(unit, raw_call(unit, d.value, d), visiting))
            else:
                verdicts.add("no")
        else:
            verdicts.add(_tensor_call(unit, d, visiting))
        if "no" in verdicts:
            return "no"
    return "yes" if "yes" in verdicts else "same"


#: The ``returns.value`` of a library call that gives a tensor: a factory, a value computed
#: from its arguments (``torch.stack``), a layer's or an activation's output.
TENSOR_VALUES = frozenset({"tensor", "derived", PROBABILITIES, LOG_PROBABILITIES})


def _tensor_call(unit, c: Call | None, visiting: frozenset) -> str:
    if c is None:
        return "no"
    kb = knowledge()
    if c.qualified:
        summary = kb.callable(c.func)
        tensor = summary is not None and summary.returns is not None and summary.returns.value in TENSOR_VALUES
        return "yes" if tensor else "no"
    if c.receiver and c.inner is None and tensor_method(c.method):
        return _tensor_sym(unit, c.receiver, visiting)
    if c.inner is not None and tensor_method(c.method):
        return _tensor_call(unit, c.inner, visiting)
    return "no"


def _batch_element(unit, loop: Loop, name: str) -> bool:
    """``name`` is an element of a tuple unpacked from the batch of a data loader built in the
    code, at a position where the batch holds a tensor (:func:`batch_tensor_items`: any, for
    the library's default collate function; those a collate function of the project returns
    tensors at). A loader the code does not build (a parameter), or one given a collate
    function that may return anything (``dgl.batch(graphs)``, a lambda), is not known to."""
    node = loop.info.node
    if not isinstance(node, cst.For):
        return False
    target, it = node.target, node.iter
    while isinstance(it, cst.Call) and it.args and dotted_name(it.func) in ("enumerate", "tqdm", "tqdm.tqdm", "iter"):
        if dotted_name(it.func) == "enumerate":
            if not (isinstance(target, cst.Tuple) and len(target.elements) == 2):
                return False
            target = target.elements[1].value
        it = it.args[0].value
    loader = dotted_name(it)
    if loader is None or not isinstance(target, (cst.Tuple, cst.List)):
        return False
    # the position of ``name`` in the tuple (unknown after a starred target, ``*rest``, whose
    # length depends on the batch), and whether it is one of the plain targets at all
    position, plain = None, False
    for i, el in enumerate(target.elements):
        if isinstance(el, cst.StarredElement):
            position = -1 if position is None else position
            continue
        if isinstance(el.value, cst.Name) and el.value.value == name:
            plain = True
            position = i if position is None else position
            break
    if not plain:
        return False
    roles = unit.roles
    for s in loop.info.iter_names:
        items = batch_tensor_items(unit, roles.canon(s))
        if items is None or position in items:
            return True
    return False


def batch_tensor_items(unit, loader: str | None) -> frozenset[int] | None:
    """The positions of the tuple each batch of ``loader`` (a canonical symbol) holds at which
    it holds a tensor, over every construction of the loader in the unit
    (``Roles.loader_builds``): ``None`` for all of them (the library's default collate
    function, which makes tensors of the samples' numbers, arrays and tensors), the positions
    at which every construction's collate function returns a tensor otherwise
    (:func:`collate_tensor_items`); empty for a loader the unit does not build."""
    builds = unit.roles.loader_builds.get(loader) if loader else None
    if not builds:
        return frozenset()
    out: frozenset[int] | None = None
    for b in builds:
        items = None if b.default else collate_tensor_items(unit, b)
        if items is not None:  # (every item: no constraint)
            out = items if out is None else out & items
    return out


def collate_tensor_items(unit, build) -> frozenset[int] | None:
    """What the collate function given to the loader construction ``build`` (a
    :class:`~loopcheck.engine.roles.LoaderBuild`, not the default) returns tensors at: ``None``
    (every item) for a library function whose knowledge says it is the default collate
    (``returns.value = "collated"``: ``torch.utils.data.default_collate``); for a function of
    the project, the positions of the returned tuple at which each of its ``return``
    statements gives a tensor (:func:`_returned_tensor_items`); empty for anything else (a
    lambda, ``functools.partial(...)``, a method, ``**kwargs``, a library function without
    that knowledge)."""
    arg = build.collate
    if build.hidden or arg is None:
        return frozenset()
    d = dotted_name(arg.node)
    index = unit.module_of(build.call.node)
    if d is None or index is None or (arg.sym is not None and ":" in arg.sym):
        return frozenset()  # (a name of the function's frame, ``collate = make()``: not the module's)
    head = d.partition(".")[0]
    q = index.imports.qualify(d)
    if head in index.imports.aliases and head not in index.globals:
        summary = knowledge().function(q)
        if summary is not None:
            return None if summary.returns is not None and summary.returns.value == "collated" else frozenset()
    if "." in d and head not in index.imports.aliases:
        return frozenset()  # self.collate, an object's attribute: not followed
    found = _project_function(index, d, q)
    if found is None:
        return frozenset()
    return _returned_tensor_items(*found)


def _returned_tensor_items(index: ModuleIndex, func: cst.FunctionDef) -> frozenset[int]:
    """The positions of the tuple (or list) function ``func`` of module ``index`` returns at
    which every ``return`` of it gives a tensor (:func:`_tensor_expression`): ``return
    torch.stack(images), torch.tensor(labels)`` gives ``{0, 1}``, ``return dgl.batch(graphs),
    torch.tensor(labels)`` gives ``{1}``. Empty for a generator, a function without a
    ``return`` of a value, or one of whose ``return`` statements gives no literal tuple."""
    scope = (cst.FunctionDef, cst.ClassDef, cst.Lambda)
    returns = []
    for node in walk(func.body, prune=scope):
        if isinstance(node, (cst.Yield, cst.Await)):
            return frozenset()
        if isinstance(node, cst.Return):
            returns.append(node.value)
    if not returns:
        return frozenset()
    env = _simple_bindings(func)
    out: frozenset[int] | None = None
    for value in returns:
        if not isinstance(value, (cst.Tuple, cst.List)):
            return frozenset()
        items = set()
        for i, el in enumerate(value.elements):
            if isinstance(el, cst.StarredElement):
                break
            if _tensor_expression(index, el.value, env, frozenset()):
                items.add(i)
        out = frozenset(items) if out is None else out & items
    return out or frozenset()


def _simple_bindings(func: cst.FunctionDef) -> dict[str, list | None]:
    """Each name ``func`` binds → the values of its assignments (``x = value``, a plain name
    as the target), or ``None`` when any other statement binds it as well (a parameter, an
    unpacking, ``for``, ``with ... as``, ``+=``, ``import``, ``global``, a nested ``def``): a
    value then not known from the assignments alone."""
    env: dict[str, list | None] = {n: None for n in all_param_names(func)}

    def other(names) -> None:
        for n in names:
            env[n] = None

    def assigned(n: str, value) -> None:
        if n in env and env[n] is None:
            return
        env.setdefault(n, []).append(value)

    scope = (cst.FunctionDef, cst.ClassDef, cst.Lambda)
    for node in walk(func.body, prune=scope):
        t = type(node)
        if t is cst.Assign:
            for target in node.targets:
                if type(target.target) is cst.Name:
                    assigned(target.target.value, node.value)
                elif type(target.target) in (cst.Tuple, cst.List, cst.StarredElement):
                    other(names_in(target.target))
        elif t is cst.AnnAssign and type(node.target) is cst.Name:
            if node.value is not None:
                assigned(node.target.value, node.value)
        elif t is cst.AugAssign or t is cst.NamedExpr or t is cst.For or t is cst.CompFor:
            other(names_in(node.target))
        elif t is cst.AsName:  # with ... as x, except E as x, import m as x
            other(names_in(node.name))
        elif t is cst.ImportAlias and node.asname is None:
            other(((dotted_name(node.name) or "").partition(".")[0],))
        elif t is cst.Global or t is cst.Nonlocal:
            other(n.name.value for n in node.names)
        elif t is cst.Del:
            other(names_in(node.target))
        for child in children(node):
            if type(child) is cst.FunctionDef or type(child) is cst.ClassDef:
                other((child.name.value,))  # a nested def binds its name; its body is its own
    return env


def _tensor_expression(index: ModuleIndex, e: cst.BaseExpression, env: dict, visiting: frozenset) -> bool:
    """Whether expression ``e`` of a function of module ``index`` gives a tensor: a call of a
    library function whose knowledge says it returns one (:data:`TENSOR_VALUES`:
    ``torch.stack(xs)``, ``torch.tensor(ys)``), a tensor method returning a new tensor of a
    tensor (``torch.stack(xs).float()``), or a name the function binds only by assignments of
    such values (``env``: :func:`_simple_bindings`)."""
    if len(visiting) > MAX_DEPTH:
        return False
    if isinstance(e, cst.Name):
        values = env.get(e.value)
        if not values or e.value in visiting:
            return False
        return all(_tensor_expression(index, v, env, visiting | {e.value}) for v in values)
    if not isinstance(e, cst.Call):
        return False
    d = dotted_name(e.func)
    if d is not None:
        head = d.partition(".")[0]
        if head in index.imports.aliases and head not in index.globals and head not in env:
            summary = knowledge().callable(index.imports.qualify(d))
            return summary is not None and summary.returns is not None and summary.returns.value in TENSOR_VALUES
    if isinstance(e.func, cst.Attribute) and tensor_method(e.func.attr.value):
        return _tensor_expression(index, e.func.value, env, visiting)
    return False


# -- classes --------------------------------------------------------------------------------


def class_of_call(unit, c: Call) -> "ClassRef | str | None":
    """The class a call constructs: a class of the project, or a library class's qualified
    name (through calls on its result: ``Net().to(device)`` is a ``Net``)."""
    found = construction_of(unit, c)
    return found[0] if found is not None else None


def construction_of(unit, c: Call) -> "tuple[ClassRef | str, cst.Call] | None":
    """``(class, constructor call)`` for a call that constructs an object, through calls on
    its result (``GCN(...).to(device)``: the class ``GCN`` and its call ``GCN(...)``)."""
    kb = knowledge()
    while c is not None:
        if c.qualified and c.inner is None and kb.cls(c.func) is not None:
            return c.func, c.node  # a library class, also in the library's own tree (see class_of_name)
        if c.cls is not None:
            return c.cls, c.node
        if c.inner is None:
            index = unit.module_of(c.node)
            found = class_of_name(index, dotted_name(c.node.func))
            if found is not None:
                return found, c.node
            return classmethod_construction(index, dotted_name(c.node.func))
        c = c.inner
    return None


def classmethod_construction(index: ModuleIndex | None, dotted: str | None) -> "tuple[ClassRef, cst.Call] | None":
    """``(class, constructor call)`` for ``Cls.method`` (``dotted``, a name in module ``index``):
    a ``@classmethod`` of the project class ``Cls`` (or of a base of it in the project) that
    returns an instance it builds with its class parameter, ``return cls(...)`` or ``model =
    cls(...); ...; return model`` (``Transformer.from_args(args)``). The class is ``Cls``, the
    class the call goes through (Python binds ``cls`` to it); the call is the ``cls(...)``
    inside the method, whose arguments fill ``Cls.__init__``'s parameters. ``None`` when
    ``dotted`` is not such a method, or when a ``return`` of it may give anything else (a
    tuple display is no module and is passed over: ``return model, tokenizer`` under a flag)
    or its returns give different constructions."""
    if index is None or dotted is None or "." not in dotted:
        return None
    owner, _, method = dotted.rpartition(".")
    cls = class_of_name(index, owner)
    if not isinstance(cls, ClassRef):
        return None
    found = find_method(cls, method)
    if found is None:
        return None
    func = found[1]
    params = [*func.params.posonly_params, *func.params.params]
    if not params or not any(dotted_name(d.decorator) == "classmethod" for d in func.decorators):
        return None
    me = params[0].name.value
    nodes = list(walk(func.body, prune=(cst.FunctionDef, cst.ClassDef, cst.Lambda)))
    built: dict[str, list] = {}  # name -> the values bound to it
    for n in nodes:
        if isinstance(n, cst.Assign):
            for t in n.targets:
                for name in names_in(t.target) if not isinstance(t.target, cst.Attribute) else ():
                    built.setdefault(name, []).append(n.value if isinstance(t.target, cst.Name) else None)
        elif isinstance(n, (cst.AugAssign, cst.AnnAssign, cst.For, cst.CompFor, cst.NamedExpr, cst.Del)):
            for name in names_in(n.target):
                built.setdefault(name, []).append(None)
        elif isinstance(n, cst.WithItem) and n.asname is not None:
            for name in names_in(n.asname.name):
                built.setdefault(name, []).append(None)

    def construction(value) -> "cst.Call | None":
        if isinstance(value, cst.Name) and len(built.get(value.value, ())) == 1:
            value = built[value.value][0]
        if isinstance(value, cst.Call) and isinstance(value.func, cst.Name) and value.func.value == me \
                and me not in built:
            return value
        return None

    out: set = set()
    for n in nodes:
        if isinstance(n, cst.Return):
            if isinstance(n.value, cst.Tuple):
                continue  # ``return model, tokenizer``: not the module a single name receives
            call = construction(n.value)
            if call is None:
                return None
            out.add(call)
    if len(out) != 1:
        return None
    return cls, out.pop()


def class_of_name(index: ModuleIndex | None, dotted: str | None) -> "ClassRef | str | None":
    """The class a dotted name in module ``index`` refers to (a class defined there, one of
    another module of the project, or a library class with an entry). An imported name the
    library knowledge describes is that library's class, also in the library's own tree (the
    examples of torch_geometric import its own ``torch_geometric.nn``), as the builder does; a
    plain name bound only by star imports is the class a star-imported project module defines
    (:func:`~loopcheck.engine.builder.star_class`)."""
    if index is None or dotted is None:
        return None
    if dotted in index.classes:
        return ClassRef(index, dotted)
    q = index.imports.qualify(dotted)
    # imported: its head is bound by an import (`import fairseq2.nn` binds `fairseq2` to itself,
    # so the qualified name may be the name as written), as the builder resolves names
    head = dotted.partition(".")[0]
    imported = head in index.imports.aliases and head not in index.globals
    known = q is not None and knowledge().cls(q) is not None and (imported or dotted.startswith("torch."))
    if known:
        return q
    ref = index.class_ref(q, qualified=True) if q != dotted or "." in dotted else None
    if ref is not None:
        return ref
    return star_class(index, dotted)  # ``from model import *`` then ``EN(...)``


def classes_of(unit, model: str) -> list:
    """The classes model ``model`` (a canonical symbol) is built from in the unit (its
    ``model_build`` events), or its library type; empty when unknown."""
    out = []
    for ev in unit.of_kind("model_build"):
        if ev.subject == model and isinstance(ev.raw, Call):
            cls = class_of_call(unit, ev.raw)
            if cls is None:
                return []
            out.append(cls)
    if not out:
        t = unit.roles.types.get(model)
        if t is not None:
            out.append(t)
    return out


def is_criterion_class(cls) -> bool:
    """A library loss class (``nn.CrossEntropyLoss``)."""
    if not isinstance(cls, str):
        return False
    summary = knowledge().callable(cls)
    return summary is not None and summary.returns is not None and summary.returns.role == "criterion"


@dataclass
class _Scope:
    """Where an expression of a class's method is read: the module (for imports), the class
    (for ``self.x``), the names assigned at the top of the method before it."""

    index: ModuleIndex
    cls: ClassRef | None
    env: dict


def init_assignments(cls: ClassRef) -> dict[str, tuple[cst.BaseExpression, ModuleIndex]]:
    """``attr → (value, module)`` for ``self.attr = value`` in ``__init__`` (the class's own or
    inherited; the last assignment wins; an attribute assigned twice maps to the last value)."""
    return {attr: values[-1] for attr, values in init_assignment_lists(cls).items()}


def init_assignment_lists(cls: ClassRef) -> dict[str, list[tuple[cst.BaseExpression, ModuleIndex]]]:
    """``attr → [(value, module), ...]`` for every ``self.attr = value`` in ``__init__`` (the
    class's own and those of its first bases, the bases' first), in program order: the arms of
    an ``if`` that chooses among several classes each give one (``self.head = Linear(...)`` or
    ``self.head = Scale(...)``)."""
    out: dict = {}
    seen: set = set()
    ref: ClassRef | None = cls
    chain = []
    while ref is not None and ref not in seen:
        seen.add(ref)
        found = find_method(ref, "__init__")
        if found is None:
            break
        chain.append(found)
        nxt = None
        for b in found[0].bases():
            nxt = b
            break
        ref = nxt
    for owner, func in reversed(chain):
        self_name = _self_name(func)
        for node in walk(func.body):
            if isinstance(node, cst.Assign) and len(node.targets) == 1:
                t = dotted_name(node.targets[0].target)
                if t and self_name and t.startswith(self_name + ".") and t.count(".") == 1:
                    out.setdefault(t.split(".", 1)[1], []).append((node.value, owner.module))
    return out


def _self_name(func: cst.FunctionDef) -> str | None:
    params = func.params.params
    return params[0].name.value if params else None


# -- parameters -----------------------------------------------------------------------------


def construction_without_parameters(unit, node: cst.CSTNode | None, near=None) -> bool:
    """Whether the module a construction call builds (``nn.CrossEntropyLoss()``,
    ``FocalLoss(gamma=2.0).to(device)``) is established to hold no parameters (``near``: as
    :func:`raw_call`, for the arguments' values). It is when the class is

    * a library class whose entry says ``parameters = false`` (losses, activations,
      ``Dropout``, ``Identity``, pooling: ``loopcheck/knowledge/torch.toml``), or an
      ``nn.Sequential`` of such constructions;
    * a class of the project deriving from ``nn.Module`` whose ``__init__``, its bases' and the
      methods they call on ``self`` build no ``nn.Parameter``, register none, and build no
      module that may hold some (:func:`_may_build_parameters`), and whose arguments, when
      ``__init__`` keeps them (stores them on ``self``, hands them to its base), are numbers,
      strings or tensors.

    ``False`` when any of it is unknown (a factory, a module given as an argument, a class the
    knowledge does not describe)."""
    return _construction_without(unit, node, near, frozen=False)


def construction_without_trainable_parameters(unit, node: cst.CSTNode | None, near=None) -> bool:
    """Whether the module a construction call builds (``node``: the call, ``SpikingLinear(784,
    16)``, also through ``.to(device)``; ``near``: as :func:`raw_call`) is established to hold
    no parameter that requires grad when it is built: as :func:`construction_without_parameters`,
    except that a parameter made frozen counts as none (``nn.Parameter(t,
    requires_grad=False)``, also given to ``self.register_parameter``: a class whose knowledge
    entry names its ``requires_grad_arg``, given the literal ``False``), provided that no method
    of the class, of its bases of the project or of the project classes it builds may make a
    parameter that requires grad or set ``requires_grad`` again (``self.weight.requires_grad =
    flag``, ``requires_grad_()``, :func:`_may_unfreeze`), and that no argument of the
    construction is established to require grad (:func:`inputs_require_grad`: a tensor it
    keeps would take part in its forward's graph). A module without parameters holds none
    either. What is done to the module after it is built (``model.requires_grad_()``) is the
    caller's to follow (the ``unfreeze`` events)."""
    if not _construction_without(unit, node, near, frozen=True):
        return False
    raw = raw_call(unit, node, near)
    return raw is None or not inputs_require_grad(unit, raw)


def construction_without_own_parameters(unit, node: cst.CSTNode | None, near=None) -> bool:
    """Whether the module a construction call builds (``node``: the call; ``near``: as
    :func:`raw_call`) is not established to hold a parameter: its class builds none of its own
    (as :func:`construction_without_parameters`), and what ``__init__`` keeps of its arguments
    is not established to be a module or a value with a graph (:func:`_not_established_module`:
    ``FocalLoss(alpha=cfg["alpha"])``, an item of a mapping the analysis cannot classify).
    Such a class holds a parameter only through what it is given, so its forward is not
    established to record a graph of its own. Read by the graph fact only
    (:func:`models_without_own_parameters`): a rule that reports a module for holding no
    parameters needs :func:`construction_without_parameters`."""
    if not _construction_without(unit, node, near, frozen=False, given=True):
        return False
    raw = raw_call(unit, node, near)
    return raw is not None and not inputs_require_grad(unit, raw)


def _not_established_module(unit, index: ModuleIndex, arg: cst.Arg, raw: Arg | None, at: cst.Call) -> bool:
    """Whether argument ``arg`` of construction ``at`` (its raw argument ``raw``) is not
    established to be, or hold, a module or a value with an autograd graph: not starred, naming
    no model of the file nor a member of one (``Wrapper(model)``, ``Head(self.backbone)``), no
    symbol with a definition that carries a graph, and not a construction of a module with
    state or a local bound only to such (:func:`_established_module`)."""
    if raw is None or arg.star:
        return False
    roles = unit.roles
    for m in raw.mentions:
        parts = m.split(".")
        prefixes = {roles.canon(".".join(parts[:i])) for i in range(1, len(parts) + 1)}
        if prefixes & roles.models or m in roles.graph:
            return False
    return not _established_module(index, arg.value, at)


def _construction_without(unit, node: cst.CSTNode | None, near, frozen: bool, given: bool = False) -> bool:
    """:func:`construction_without_parameters` (``frozen``: of
    :func:`construction_without_trainable_parameters`, a parameter made frozen counting as none;
    ``given``: of :func:`construction_without_own_parameters`, an argument not established to
    be a module counting as harmless)."""
    if not isinstance(node, cst.Call):
        return False
    index = unit.module_of(node)
    if index is None:
        return False
    raw = raw_call(unit, node, near)
    syms = {id(a.node): a for a in raw.args} if raw is not None else {}

    def harmless(arg: cst.Arg) -> bool:
        """An argument that cannot be, or hold, a module with parameters: a literal, a name
        of a tensor, a new tensor, a module without parameters (``given``: or one not
        established to be a module)."""
        value = arg.value
        if _constant(value):
            return True
        a = syms.get(id(value))
        if a is not None and (a.literal or is_tensor(unit, a.sym)):
            return True
        if a is not None and (_names_no_module(unit, index, value, a) or _literal_data(unit, index, value, a.mentions, 0)):
            return True
        if a is not None and _tensor_sequence(unit, a.sym):
            return True
        if isinstance(value, cst.Call) and (
                _tensor_factory(index, value) or _builds_no_parameters(index, value, 1, harmless, frozen)):
            return True
        return given and _not_established_module(unit, index, arg, a, node)

    try:
        return _builds_no_parameters(index, node, 0, harmless, frozen)
    finally:
        harmless = None  # noqa: F841 - it refers to itself: break the cycle, free the tree at once


def construction_holds_state(unit, node: cst.CSTNode | None, near=None) -> bool:
    """Whether the module a construction of a project class builds (``node``: the call,
    ``Head(dim)``, also through ``.to(device)``; ``near``: as :func:`raw_call`) is established
    to hold state its owner must register: a parameter, a buffer or a layer that computes
    differently in train and eval mode. It does when the class's own construction builds one
    (:func:`_class_builds_state`: ``nn.Linear``, ``nn.Parameter``, ``register_buffer``,
    ``nn.Dropout(0.1)``, a project submodule that does), or when an argument of the call is
    established to be such a module that the calling module does not register itself
    (:func:`_established_module`: a construction of one, a local name bound only to such
    constructions; not ``self.<submodule>``, which its owner registers) and ``__init__`` keeps
    the parameter it fills (stores it on ``self``, hands it to a method of ``self`` or to its
    base's ``__init__``: :func:`_keeps_given_module`). ``False`` when any of it is unknown: a
    class that builds nothing with state, given values the analysis cannot classify
    (``config["anchors"]``, an attribute of an unknown object, a call of unknown result), is
    not established to hold any."""
    if not isinstance(node, cst.Call):
        return False
    index = unit.module_of(node)
    raw = raw_call(unit, node, near)
    found = construction_of(unit, raw) if raw is not None and index is not None else None
    if found is None or not isinstance(found[0], ClassRef) or not is_module_class(found[0]):
        return False
    cls, call = found
    if _class_builds_state(cls, 0, frozenset()):
        return True
    # the arguments of ``Cls.build(...)`` fill the classmethod's, not ``__init__``'s: not followed
    return call is _constructor(node) and _keeps_given_module(index, cls, call)


def _class_builds_state(cls: ClassRef, depth: int, seen: frozenset) -> bool:
    """Whether an instance of project class ``cls`` is established to hold state: a base of the
    project that does, a library base whose knowledge entry does not say it holds no parameters
    (``class Conv(nn.Conv2d)``), a method of it that registers a buffer or a parameter, or an
    ``__init__`` (with the methods it calls on ``self``) that builds a layer with state and
    keeps it (:func:`_call_builds_state`)."""
    info = cls.info
    if info is None or depth > MAX_DEPTH or cls in seen:
        return False
    seen = seen | {cls}
    kb = knowledge()
    for base in info.bases:
        ref = cls.module.class_ref(base) or cls.module.class_ref(base, qualified=True)
        if ref is not None:
            if _class_builds_state(ref, depth + 1, seen):
                return True
            continue
        entry = kb.cls(base)
        if (entry is not None and entry.parameters is not False and base != "torch.nn.Module"
                and base not in CONTAINERS and is_module_class(base)):
            return True
    methods = info.methods
    for name in (methods.names() if hasattr(methods, "names") else list(methods)):
        func = methods.get(name)
        if func is None:
            continue
        for n in walk(func):
            if (isinstance(n, cst.Call) and isinstance(n.func, cst.Attribute)
                    and n.func.attr.value in ("register_buffer", "register_parameter")):
                return True
    init = info.methods.get("__init__")
    if init is None:
        return False
    for index, func, me, node, d in _init_calls(cls, init):
        if d is None or d.partition(".")[0] == me:
            continue  # a call the engine cannot name, or of the module's own methods (followed)
        if _call_builds_state(index, node, d, depth, seen) and not _result_stays_local(index, func, me, node):
            return True
    return False


def _init_calls(cls: ClassRef, init: cst.FunctionDef):
    """Each call of ``init`` (``__init__`` of ``cls``) and of the methods of the class it calls
    on ``self``, transitively, as ``(module, function, self name, call, dotted name or None)``:
    a ``self.<method>(...)`` of the class (or of a project base) is yielded and also followed
    into that method, each method read once."""
    todo: list[tuple[ModuleIndex, cst.FunctionDef]] = [(cls.module, init)]
    done: set = set()
    while todo:
        index, func = todo.pop()
        if func in done:
            continue
        done.add(func)
        me = _self_name(func)
        for node in walk(func.body):
            if not isinstance(node, cst.Call):
                continue
            d = dotted_name(node.func)
            if d is not None:
                head, _, rest = d.partition(".")
                found = find_method(cls, rest) if head == me and rest and "." not in rest else None
                if found is not None:
                    todo.append((found[0].module, found[1]))
            yield index, func, me, node, d


def _call_builds_state(index: ModuleIndex, node: cst.Call, d: str, depth: int, seen: frozenset) -> bool:
    """Whether call ``node`` (of dotted name ``d``, in module ``index``) is established to
    build a module or a parameter with state: ``nn.Parameter``, a library module class whose
    knowledge entry does not say it holds no parameters (``nn.Linear``), one that depends on
    the mode as built (``nn.Dropout(0.1)``), a library function whose result is a model
    (``torchvision.models.resnet18()``), a project module class that holds state
    (:func:`_class_builds_state`), or a function of the project whose body builds one (a
    factory, ``make_layers(cfg)``). A container (``nn.Sequential(...)``) holds what it is
    given: the calls inside it are read on their own."""
    kb = knowledge()
    cls = class_of_name(index, d)
    if isinstance(cls, str):
        if cls in CONTAINERS or cls == "torch.nn.Module" or is_criterion_class(cls):
            return False
        entry = kb.cls(cls)
        if entry is None:
            return False
        if entry.parameters is not False:
            return cls.rpartition(".")[2] == "Parameter" or is_module_class(cls)
        if entry.modes_none_if_zero or entry.mode_args:
            return _class_mode_dependent(cls, depth + 1, seen, node)
        return False
    if isinstance(cls, ClassRef):
        return is_module_class(cls) and _class_builds_state(cls, depth + 1, seen)
    head = d.partition(".")[0]
    imported = head in index.imports.aliases and head not in index.globals
    q = index.imports.qualify(d) if imported else d
    if imported:
        summary = kb.callable(q)
        if summary is not None and summary.returns is not None and summary.returns.role == "model":
            return True
    found = _project_function(index, d, q)
    if found is None or depth >= MAX_DEPTH:
        return False
    where, func = found
    for n in walk(func.body, prune=(cst.FunctionDef, cst.ClassDef, cst.Lambda)):
        if isinstance(n, cst.Call) and dotted_name(n.func) is not None \
                and _call_builds_state(where, n, dotted_name(n.func), depth + 1, seen):
            return True
    return False


def _keeps_given_module(index: ModuleIndex, cls: ClassRef, call: cst.Call) -> bool:
    """Whether construction ``call`` of project class ``cls`` gives it an argument established
    to be a module with state that its owner does not register itself
    (:func:`_established_module`) and the ``__init__`` that receives it (the class's or a
    base's of the project) keeps the parameter it fills: stores it on ``self``, hands it to a
    method of ``self``, to ``super().__init__`` or to ``setattr`` (:func:`_flows_into_self`).
    A class without such an ``__init__`` whose library base is a container (``class
    Stack(nn.Sequential)``) keeps whatever it is given."""
    found = find_method(cls, "__init__")
    if found is None:
        kept_all = any(b in CONTAINERS for b in cls.info.bases) if cls.info is not None else False
        return kept_all and any(not a.star and _established_module(index, a.value, call) for a in call.args)
    init = found[1]
    me = _self_name(init)
    positional = [p.name.value for p in (*init.params.posonly_params, *init.params.params)][1:]
    keywords = {p.name.value for p in (*init.params.posonly_params, *init.params.params, *init.params.kwonly_params)}
    for i, a in enumerate(call.args):
        if a.star:
            continue
        if a.keyword is not None:
            param = a.keyword.value if a.keyword.value in keywords else None
        else:
            param = positional[i] if i < len(positional) else None
        if param is None or param == me:
            continue
        if _established_module(index, a.value, call) and _flows_into_self(init, me, {param}):
            return True
    return False


def _established_module(index: ModuleIndex, value: cst.BaseExpression, at: cst.CSTNode, depth: int = 0) -> bool:
    """Whether argument ``value`` of the call ``at`` (in module ``index``) is established to be
    a module with state that the module whose method makes the call does not register itself:
    a construction of one (a library layer, a project class that holds state, a model a
    library function returns: :func:`_call_builds_state`), or a local name of that method,
    not one of its parameters, every binding of which is such a construction and which the
    method does not store on ``self`` (``backbone = Backbone(); Views(backbone)``). An
    attribute of ``self`` (``Wrapper(self.backbone)``) does not count: ``nn.Module``
    registers the submodule assigned to it, so ``parameters()``, ``to()``, ``state_dict()``
    and ``eval()`` reach it through the owner whatever the plain container holds."""
    if depth > MAX_DEPTH:
        return False
    if isinstance(value, cst.Call):
        ctor = _constructor(value)
        d = dotted_name(ctor.func)
        if d is None:
            return False
        cls = class_of_name(index, d)
        if isinstance(cls, ClassRef):
            return is_module_class(cls) and (
                _class_builds_state(cls, 0, frozenset()) or _keeps_given_module(index, cls, ctor))
        return _call_builds_state(index, ctor, d, 0, frozenset())
    if isinstance(value, cst.Name):
        func = _enclosing_function(index, at)
        if func is None or value.value in _param_names(func):
            return False
        values = _local_bindings(func, value.value)
        return bool(values) and all(
            v is not None and _established_module(index, v, v, depth + 1) for v in values)
    return False


def _enclosing_function(index: ModuleIndex, node: cst.CSTNode) -> cst.FunctionDef | None:
    """The innermost function of module ``index`` whose body holds ``node``."""
    table = parents(index)
    cur = table.get(node)
    while cur is not None and not isinstance(cur, cst.FunctionDef):
        cur = table.get(cur)
    return cur


def _local_bindings(func: cst.FunctionDef, name: str) -> list[cst.BaseExpression | None] | None:
    """The values bound to local ``name`` in ``func`` (``None`` for a binding whose value is
    not a whole expression: a loop's target, an unpacking, an augmented assignment), or
    ``None`` (no list) when ``func`` stores ``name`` itself on ``self`` (``self.body = name``:
    the owner registers it)."""
    me = _self_name(func)
    out: list = []
    for node in walk(func.body, prune=(cst.FunctionDef, cst.ClassDef, cst.Lambda)):
        if isinstance(node, cst.Assign):
            for t in node.targets:
                target = t.target
                if isinstance(target, cst.Name) and target.value == name:
                    out.append(node.value)
                elif isinstance(target, cst.Attribute) and dotted_name(target.value) == me \
                        and isinstance(node.value, cst.Name) and node.value.value == name:
                    return None
                elif not isinstance(target, cst.Attribute) and name in names_in(target):
                    out.append(None)
        elif isinstance(node, (cst.AugAssign, cst.AnnAssign, cst.For, cst.CompFor, cst.NamedExpr)):
            if name in names_in(node.target):
                out.append(None)
        elif isinstance(node, cst.WithItem) and node.asname is not None and name in names_in(node.asname.name):
            out.append(None)
    return out


def _names_no_module(unit, index: ModuleIndex, value: cst.BaseExpression, arg) -> bool:
    """Whether argument ``value`` (raw argument ``arg``) names an object that is no module: a
    function of the module or of the project, or one the library knowledge describes, handed
    on without being called (``mask_func=attention_mask_func``), or an attribute that the body
    of a class of the project binds to a literal, or any attribute an enum class of the
    project binds (its members: ``AttnMaskType.causal``). A name the unit assigns is a
    variable, not the function of that name."""
    d = dotted_name(value)
    if d is None or (arg.sym is not None and arg.sym in definitions(unit)):
        return False
    head = d.partition(".")[0]
    imported = head in index.imports.aliases and head not in index.globals
    q = index.imports.qualify(d) if imported else d
    if _project_function(index, d, q) is not None:
        return True
    kb = knowledge()
    if imported and kb.callable(q) is not None and kb.cls(q) is None:
        return True  # a library function the knowledge describes
    if not isinstance(value, cst.Attribute):
        return False
    owner = class_of_name(index, dotted_name(value.value))
    return isinstance(owner, ClassRef) and _class_binds_constant(owner, value.attr.value)


def _class_binds_constant(cls: ClassRef, attr: str) -> bool:
    """Whether the body of class ``cls`` binds ``attr`` to a literal (``causal = 2``), or binds
    it at all in an enum class (a member: an instance of the enum, whatever its value)."""
    info = cls.info
    if info is None:
        return False
    enum = any(b.partition(".")[0] == "enum" for b in info.bases)
    for stmt in info.node.body.body:
        if not isinstance(stmt, cst.SimpleStatementLine):
            continue
        for small in stmt.body:
            if isinstance(small, cst.Assign) and small.value is not None:
                targets = [t.target for t in small.targets]
            elif isinstance(small, cst.AnnAssign) and small.value is not None:
                targets = [small.target]
            else:
                continue
            if any(isinstance(t, cst.Name) and t.value == attr for t in targets):
                return enum or _constant(small.value)
    return False


def _literal_data(unit, index: ModuleIndex, expr: cst.BaseExpression, names, depth: int) -> bool:
    """Whether ``expr`` (whose dotted names are the symbols ``names``, in module ``index``) is
    built of literals and numbers only: a literal, a list, tuple, set or dict of them, a call
    the library knowledge says returns numbers (``returns = {value = "number"}``:
    ``np.linspace(0.1, 0.9, 9)``, ``float(s)``), an item of such a value (``config["fp16"]``),
    or a name each definition of which in the unit gives such a value, a loop target included
    (``for config in [{"fp16": True}, ...]``, ``for p in np.linspace(0.1, 0.9, 9)``). Such a
    value is neither a module nor a parameter."""
    if depth > MAX_DEPTH:
        return False
    if _literal_container(expr) or _number_call(index, expr):
        return True
    base = expr
    while isinstance(base, cst.Subscript):
        base = base.value
    if isinstance(base, cst.Attribute) and base is expr:
        return _number_attribute(unit, index, base, names)
    if not isinstance(base, cst.Name):
        return False
    syms = [n for n in names if last(n) == base.value]
    if len(syms) != 1:
        return False
    defs = definitions(unit).get(syms[0])
    if not defs:
        return False
    if all(_number_definition(index, d) for d in _bindings_of(defs)):
        return True  # numbers: handing them on changes nothing in them
    if syms[0] in _handed_on(unit):
        return False
    for d in defs:
        if isinstance(d, Assign) and d.op == "=" and d.value is not None:
            value, mentions = d.value, d.mentions
        elif isinstance(d, Loop) and isinstance(d.info.node, cst.For):
            value, mentions = d.info.node.iter, d.info.iter_names
        else:
            return False
        if not _literal_data(unit, index, value, mentions, depth + 1):
            return False
    return True


def _tensor_sequence(unit, sym: str | None) -> bool:
    """Whether variable ``sym`` holds a plain sequence of new tensors: each of its definitions
    in the unit assigns a list or tuple display each element of which is a call that gives a
    new tensor (``self.lr = [torch.tensor([0.004]).to(device), torch.tensor([-0.003])]``:
    :func:`_tensor_call`), and no call of the unit has it as receiver (``lr.append(m)``) nor
    does an item assignment change it. Such a value is neither a module nor holds one, and
    its tensors require no grad."""
    if sym is None:
        return False
    defs = definitions(unit).get(sym)
    if not defs:
        return False
    for d in defs:
        if not (isinstance(d, Assign) and d.op == "=" and isinstance(d.value, (cst.List, cst.Tuple))
                and d.value.elements):
            return False
        for el in d.value.elements:
            if not (isinstance(el, cst.Element) and isinstance(el.value, cst.Call)
                    and _tensor_call(unit, raw_call(unit, el.value, d), frozenset()) == "yes"):
                return False
    return not any(isinstance(raw, Call) and raw.receiver == sym
                   or isinstance(raw, Assign) and raw.op == "[]=" and raw.target == sym for raw in unit.raws())


def _bindings_of(defs: list) -> list:
    """The definitions ``defs`` of a symbol (:func:`definitions`) less the calls whose result
    an assignment among them binds: ``n = len(xs)`` is one binding, which the assignment
    shows."""
    assigned = {id(d.value) for d in defs if isinstance(d, Assign)}
    return [d for d in defs if not (isinstance(d, Call) and id(d.node) in assigned)]


def _number_attribute(unit, index: ModuleIndex, expr: cst.Attribute, names) -> bool:
    """Whether attribute ``expr`` (``self.num_class``, whose symbol is among ``names``) holds
    a number: each binding of its symbol in the unit assigns a :func:`_number_call`'s result
    (``self.num_class = len(classes)``), and no call that stays a call (not inlined) receives
    its object (``self.reset()``, ``init(self)``), which could bind it where the unit does
    not show it."""
    syms = [n for n in names if "." in n and last(n) == expr.attr.value]
    if len(syms) != 1:
        return False
    defs = definitions(unit).get(syms[0])
    if not defs or not all(_number_definition(index, d) for d in _bindings_of(defs)):
        return False
    return not may_bind_attribute(unit, syms[0])


def may_bind_attribute(unit, sym: str, after: int = 0) -> bool:
    """Whether a call of the unit that stays a call (not inlined), from position ``after`` of
    :meth:`~loopcheck.engine.unit.Unit.raws` on, receives the object of attribute symbol ``sym``
    (``self.reset()``, ``init(self)``): its code, which the unit does not show, could bind the
    attribute. Not a builtin that only reads what it is given (``super(Net, self)``,
    ``isinstance(self, C)``), nor a method of ``torch.nn.Module`` the knowledge describes on an
    object built from project classes that do not define it (``model.parameters()``), nor the
    call of an attribute of the object that the roles know as a model (``self.model(x)``: its
    forward receives the module the attribute holds and the arguments, not the object).
    ``False`` for a plain name (no call binds a caller's variable)."""
    if "." not in sym:
        return False
    obj = sym.rpartition(".")[0]
    raws = unit.raws()
    for raw in raws[after:]:
        if not isinstance(raw, Call) or raw.inlined:
            continue
        if raw.func in _READING_BUILTINS:
            index = unit.module_of(raw.node)
            if index is not None and raw.func not in index.globals:
                continue  # super(Net, self), isinstance(self, ...): read the object, bind nothing in it
        if raw.receiver == obj and _module_method(unit, obj, raw.method):
            continue  # model.parameters(), model.to(device): nn.Module's own, binds no attribute of ours
        if raw.receiver == obj and unit.roles.canon(raw.func) in unit.roles.models \
                and not any(a.sym == obj or obj in a.mentions for a in raw.args):
            continue  # self.model(x): the forward of the module the attribute holds receives that module
        if raw.receiver == obj or any(a.sym == obj or obj in a.mentions for a in raw.args):
            return True
    return False


def narrowing_tests(unit, chosen) -> list:
    """The raw ``isinstance(...)`` calls of the tests of the ``if`` statements of the unit that
    say an object is an instance of none of some classes (:attr:`~loopcheck.engine.ir.If.not_instance`)
    and for which ``chosen(if_node)`` holds."""
    out: list = []
    nodes: list = []

    def visit(node) -> None:
        if isinstance(node, If) and node.not_instance and chosen(node):
            nodes.extend(_isinstance_calls(node.test))
        for part in parts(node):
            visit(part)

    visit(unit.ir)
    if not nodes:
        return out
    wanted = {id(n) for n in nodes}
    return [raw for raw in unit.raws() if isinstance(raw, Call) and id(raw.node) in wanted]


def _isinstance_calls(test: cst.BaseExpression) -> list[cst.Call]:
    """The ``isinstance(...)`` calls an ``if`` test is made of, through ``not``, ``and`` and
    ``or`` (:meth:`UnitBuilder.not_instance <loopcheck.engine.builder.UnitBuilder.not_instance>`
    reads the same forms); an operand of another form holds none of them here."""
    while isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        test = test.expression
    if isinstance(test, cst.BooleanOperation):
        return _isinstance_calls(test.left) + _isinstance_calls(test.right)
    if isinstance(test, cst.Call) and dotted_name(test.func) == "isinstance":
        return [test]
    return []


def _module_method(unit, obj: str, method: str | None) -> bool:
    """Whether ``obj.method(...)`` runs a method of ``torch.nn.Module`` the knowledge describes
    (``parameters``, ``to``, ``train``): ``obj`` is built in the unit from project classes only,
    none of which defines or inherits ``method`` from the project."""
    if not method or knowledge().method("torch.nn.Module", method) is None:
        return False
    classes = classes_of(unit, obj)
    return bool(classes) and all(isinstance(c, ClassRef) and find_method(c, method) is None for c in classes)


#: Builtins that may be handed an object without binding any attribute of it (``setattr``,
#: ``delattr``, ``vars``, ``exec`` and ``eval`` may, and those that call a function they are
#: given: ``map``, ``filter``, ``sorted``/``min``/``max`` with a ``key``, ``iter`` with a callable).
_READING_BUILTINS = frozenset(BUILTINS - {
    "setattr", "delattr", "vars", "exec", "eval", "compile", "__import__", "__build_class__",
    "map", "filter", "sorted", "min", "max", "iter",
})


def _number_definition(index: ModuleIndex, d) -> bool:
    """Whether definition ``d`` (of a unit, in module ``index``) binds a number: an assignment
    of a :func:`_number_call`'s result, or the target of a loop over one
    (``for p in np.linspace(0.1, 0.9, 9)``)."""
    if isinstance(d, Assign):
        return d.op == "=" and d.value is not None and _number_call(index, d.value)
    return isinstance(d, Loop) and isinstance(d.info.node, cst.For) and _number_call(index, d.info.node.iter)


def _number_call(index: ModuleIndex, expr: cst.BaseExpression) -> bool:
    """A call of a library function (or builtin) of module ``index`` that the knowledge says
    returns numbers (``returns = {value = "number"}``: ``np.linspace``, ``float``, ``len``)."""
    if not isinstance(expr, cst.Call):
        return False
    name = dotted_name(expr.func)
    if name is None or name.partition(".")[0] in index.globals:
        return False  # a function of the module (or a variable) that shadows the library's
    summary = knowledge().callable(index.imports.qualify(name))
    return summary is not None and summary.returns is not None and summary.returns.value == "number"


def _handed_on(unit) -> frozenset[str]:
    """The symbols whose value the unit may change or give away after making it: the receiver
    of a method call (``layers.append(nn.Linear(4, 4))``, ``config.update(...)``), an argument
    passed whole to a call, an attribute or item assigned (``config["net"] = net``): a literal
    list or dict may then hold anything."""
    def compute():
        out: set[str] = set()
        for raw in unit.raws():
            if isinstance(raw, Call):
                if raw.receiver:
                    out.add(raw.receiver)
                out.update(a.sym for a in raw.args if a.sym)
            elif isinstance(raw, Assign) and raw.target:
                if raw.op == "[]=":
                    out.add(raw.target)
                elif "." in raw.target:
                    out.add(raw.target.rpartition(".")[0])
        return frozenset(out)

    return _cached(unit, ("values", "handed_on"), compute)


def _literal_container(expr: cst.BaseExpression) -> bool:
    """A literal (:func:`_constant`), or a list, tuple, set or dict of literal containers."""
    if _constant(expr):
        return True
    if isinstance(expr, (cst.List, cst.Tuple, cst.Set)):
        return all(isinstance(el, cst.Element) and _literal_container(el.value) for el in expr.elements)
    if isinstance(expr, cst.Dict):
        return all(isinstance(el, cst.DictElement) and _constant(el.key) and _literal_container(el.value)
                   for el in expr.elements)
    return False


def model_without_parameters(unit, model: str | None) -> bool:
    """Whether model ``model`` (a canonical symbol) is established to hold no parameters: every
    construction of it in the unit (its ``model_build`` events) is a
    :func:`construction_without_parameters`, or, built nowhere here, its library type's entry
    says ``parameters = false``. A submodule (``sampler.grid``) built inside the construction of
    a model established to hold none (its ``__init__``, read inline) holds none either: a module
    without parameters has no submodule with any."""
    if model is None:
        return False
    builds = [ev for ev in unit.of_kind("model_build") if ev.subject == model]
    owner = model.rpartition(".")[0]
    if builds:
        return all(isinstance(ev.raw, Call) and construction_without_parameters(unit, ev.raw.node, ev.raw)
                   or _built_in_parameterless_owner(unit, ev, owner) for ev in builds)
    entry = knowledge().cls(unit.roles.types.get(model))
    return entry is not None and entry.parameters is False


def _built_in_parameterless_owner(unit, build, owner: str) -> bool:
    """Whether event ``build`` lies in the inlined ``__init__`` of a construction of model
    ``owner`` and ``owner`` is established to hold no parameters."""
    if not owner:
        return False
    frames = build.ctx.calls or ()
    nodes = [ev.raw.node for ev in unit.of_kind("model_build") if ev.subject == owner and isinstance(ev.raw, Call)]
    return any(n is c for n in nodes for c in frames) and model_without_parameters(unit, owner)


def inputs_require_grad(unit, call: Call) -> bool:
    """Whether an argument of raw call ``call`` is established to require grad, or to be
    computed from a tensor that does, other than the parameters of a model whose forward
    computed it, in the unit (:meth:`~loopcheck.engine.graphs.GradInputs.any_argument`): the
    forward of a module without parameters records a graph of its own only through such an
    input (given ``net(x)``'s output, it extends the graph ``net``'s forward records, and that
    forward is where the graph is made)."""
    facts = _cached(unit, ("values", "grad_inputs"), lambda: GradInputs(unit.raws(), unit.roles))
    return facts.any_argument(call)


def models_without_parameters(units) -> frozenset[str]:
    """The models of a file (the units share its roles) established to hold no parameters:
    :func:`model_without_parameters` in every unit that builds the model, or, built in none,
    by its library type's entry."""
    if not units:
        return frozenset()
    out = set()
    for model in units[0].roles.models:
        builders = [u for u in units if any(ev.subject == model for ev in u.of_kind("model_build"))]
        if all(model_without_parameters(u, model) for u in builders or units[:1]):
            out.add(model)
    return frozenset(out)


def models_without_own_parameters(units) -> frozenset[str]:
    """The models of a file (the units share its roles) not established to hold a parameter,
    whose forward is then not established to record a graph of its own: built in some unit,
    and every construction of it in every unit that builds it is a
    :func:`construction_without_own_parameters` (``criterion = nn.CrossEntropyLoss()`` in one
    arm, ``FocalLoss(gamma=cfg["gamma"])`` in the other). A model built nowhere here (a
    parameter, a model known by its use) is not one of them."""
    if not units:
        return frozenset()
    out = set()
    for model in units[0].roles.models:
        builders = [u for u in units if any(ev.subject == model for ev in u.of_kind("model_build"))]
        if builders and all(_built_without_own_parameters(u, model) for u in builders):
            out.add(model)
    return frozenset(out)


def _built_without_own_parameters(unit, model: str) -> bool:
    """Whether every ``model_build`` event of ``model`` in the unit is a construction call
    :func:`construction_without_own_parameters`."""
    return all(isinstance(ev.raw, Call) and construction_without_own_parameters(unit, ev.raw.node, ev.raw)
               for ev in unit.of_kind("model_build") if ev.subject == model)


def _constant(expr: cst.BaseExpression) -> bool:
    """A literal: a number, a string, ``True``/``False``/``None``, or a tuple or list of them."""
    if isinstance(expr, (cst.Integer, cst.Float, cst.Imaginary, cst.SimpleString, cst.ConcatenatedString,
                         cst.FormattedString)):
        return True
    if isinstance(expr, cst.Name):
        return expr.value in ("True", "False", "None")
    if isinstance(expr, cst.UnaryOperation):
        return _constant(expr.expression)
    if isinstance(expr, (cst.Tuple, cst.List)):
        return all(isinstance(el, cst.Element) and _constant(el.value) for el in expr.elements)
    return False


def _tensor_factory(index: ModuleIndex, node: cst.Call) -> bool:
    """A call the library knowledge says returns a new tensor (``torch.tensor([1.0, 2.0])``)."""
    summary = knowledge().callable(index.imports.qualify(dotted_name(node.func)))
    return summary is not None and summary.returns is not None and summary.returns.value == "tensor"


def _constructor(node: cst.Call) -> cst.Call:
    """The construction inside ``Head(...).to(device)``: through the ``nn.Module`` methods that
    return the module itself."""
    kb = knowledge()
    while isinstance(node.func, cst.Attribute) and isinstance(node.func.value, cst.Call):
        summary = kb.method("torch.nn.Module", node.func.attr.value)
        if summary is None or summary.returns is None or "self" not in summary.returns.same:
            break
        node = node.func.value
    return node


def _builds_no_parameters(index: ModuleIndex, node: cst.Call, depth: int, harmless, frozen: bool = False) -> bool:
    """:func:`construction_without_parameters` of a call in module ``index``; ``harmless``
    tells an argument that cannot hold a module; ``frozen``: a parameter made frozen counts as
    none (:func:`construction_without_trainable_parameters`)."""
    node = _constructor(node)
    cls = class_of_name(index, dotted_name(node.func))
    if cls is None or depth > MAX_DEPTH:
        return False
    if isinstance(cls, str):
        if cls == SEQUENTIAL:
            return all(
                not a.keyword and not a.star and isinstance(a.value, cst.Call)
                and _builds_no_parameters(index, a.value, depth + 1, harmless, frozen)
                for a in node.args
            )
        entry = knowledge().cls(cls)
        return entry is not None and entry.parameters is False
    if not is_module_class(cls):
        return False
    keeps = _keeps_arguments_if_parameterless(cls, depth, frozenset(), frozen)
    return keeps is not None and (not keeps or all(harmless(a) for a in node.args))


def _keeps_arguments_if_parameterless(cls: ClassRef, depth: int, seen: frozenset, frozen: bool = False) -> bool | None:
    """``None`` when class ``cls`` may build parameters (its ``__init__``, its bases', the
    methods they call on ``self``; with ``frozen``, parameters that require grad, or a method
    of it may make one or set ``requires_grad``: :func:`_may_unfreeze`); else whether it keeps
    its constructor's arguments (stores one on ``self`` or hands one to its base's
    ``__init__``)."""
    info = cls.info
    if info is None or depth > MAX_DEPTH or cls in seen:
        return None
    if frozen and _may_unfreeze(cls):
        return None
    seen = seen | {cls}
    kb = knowledge()
    keeps = False
    for base in info.bases:
        ref = cls.module.class_ref(base) or cls.module.class_ref(base, qualified=True)
        if ref is not None:
            verdict = _keeps_arguments_if_parameterless(ref, depth + 1, seen, frozen)
            if verdict is None:
                return None
            keeps = keeps or verdict
        elif base != "torch.nn.Module":
            entry = kb.cls(base)
            if entry is None or entry.parameters is not False:
                return None  # a library base that may build parameters, or an unknown one
    init = info.methods.get("__init__")
    if init is None:
        return keeps  # the arguments go to the base's __init__
    if _may_build_parameters(cls, init, depth, seen, frozen):
        return None
    kept = _kept(cls.module, init)
    return None if kept is None else keeps or kept


def _may_build_parameters(cls: ClassRef, init: cst.FunctionDef, depth: int, seen: frozenset,
                          frozen: bool = False) -> bool:
    """Whether ``__init__`` of ``cls``, or a method of the class it calls on ``self``, may build
    a parameter: a call of ``nn.Parameter``, ``self.register_parameter``, a module class that may
    hold parameters, a function of the project or of a PyTorch library (a factory), a callable
    held in a variable, or a call the engine cannot name (``getattr(nn, name)()``). With
    ``frozen``, a parameter that requires grad: ``nn.Parameter(t, requires_grad=False)``, and
    ``self.register_parameter(name, p)`` of such a call or of ``None``, build none
    (:func:`_makes_frozen_parameter`)."""
    for index, func, me, node, d in _init_calls(cls, init):
        if d is None:
            if _on_super(node.func):
                continue  # super().__init__(...): the base's, read with the base
            if isinstance(node.func, cst.Attribute) and isinstance(node.func.value, cst.Call) \
                    and _tensor_factory(index, node.func.value):
                continue  # torch.tensor(...).unsqueeze(0): a method of a new tensor gives a tensor
            return True
        head, _, rest = d.partition(".")
        if head == me:
            if rest == "register_parameter":
                if frozen and _registers_frozen(index, node):
                    continue  # the frozen Parameter it is given is read as a call of its own
                return True
            continue  # nn.Module's own methods (register_buffer, apply), a submodule's method, or
            # a method of the class (followed by _init_calls)
        chosen = _local_choice(func, d)
        if chosen is not None:  # window_fn(...) with window_fn = windows.get(name, None)
            if any(_call_may_build(index, node, c, c.partition(".")[0], depth, seen, frozen) for c in chosen) \
                    and not _result_stays_local(index, func, me, node):
                return True
            continue
        if _call_may_build(index, node, d, head, depth, seen, frozen) and not _result_stays_local(index, func, me, node):
            return True
    return False


def _local_choice(func: cst.FunctionDef, name: str) -> list[str] | None:
    """The dotted names of the functions a local variable ``name`` of ``func`` may hold, when
    each of its bindings chooses one from a dict literal bound once in ``func`` whose values
    are dotted names or ``None`` (``fn = windows.get(kind, None)`` or ``fn = windows[kind]``
    after ``windows = {"hann": torch.hann_window, "none": None}``); ``None`` when a binding is
    anything else (a parameter, a loop target, another value): then what it holds is unknown."""
    if "." in name or name in _param_names(func):
        return None
    assigned: dict[str, list] = {}
    for node in walk(func.body):
        if isinstance(node, (cst.For, cst.CompFor, cst.AugAssign, cst.AnnAssign, cst.NamedExpr)):
            others = [node.target]
        elif isinstance(node, cst.With):
            others = [i.asname.name for i in node.items if i.asname is not None]
        else:
            others = []
        if any(isinstance(n, cst.Name) and n.value == name for o in others for n in walk(o)):
            return None  # bound otherwise than by a plain assignment: not followed
        if isinstance(node, cst.Assign):
            for t in node.targets:
                if isinstance(t.target, cst.Name):
                    assigned.setdefault(t.target.value, []).append(node.value)
                elif any(isinstance(n, cst.Name) and n.value == name for n in walk(t.target)):
                    return None  # bound by unpacking: not followed
    values = assigned.get(name)
    if not values:
        return None
    out: list[str] = []
    for value in values:
        table, default = None, None
        if isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute) and value.func.attr.value == "get" \
                and isinstance(value.func.value, cst.Name) and 1 <= len(value.args) <= 2:
            table = value.func.value.value
            default = value.args[1].value if len(value.args) == 2 else None
        elif isinstance(value, cst.Subscript) and isinstance(value.value, cst.Name):
            table = value.value.value
        tables = assigned.get(table or "", [])
        if len(tables) != 1 or not isinstance(tables[0], cst.Dict):
            return None
        choices = [el.value for el in tables[0].elements if isinstance(el, cst.DictElement)]
        if len(choices) != len(tables[0].elements):
            return None  # a ** unpacking in the literal
        for choice in (*choices, *([default] if default is not None else [])):
            if isinstance(choice, cst.Name) and choice.value == "None":
                continue
            d = dotted_name(choice)
            if d is None:
                return None
            out.append(d)
    return out


def _param_names(func: cst.FunctionDef) -> set[str]:
    """The names of the parameters of ``func``."""
    p = func.params
    names = {x.name.value for x in (*p.posonly_params, *p.params, *p.kwonly_params)}
    for star in (p.star_arg, p.star_kwarg):
        if isinstance(star, cst.Param):
            names.add(star.name.value)
    return names


def _result_stays_local(index: ModuleIndex, func: cst.FunctionDef, me: str | None, call: cst.Call) -> bool:
    """Whether what ``call`` in method ``func`` (whose ``self`` is ``me``) returns cannot become
    part of the module: the call is not handed ``self`` (or an attribute of it), its value is
    bound to local names only (``y, x = meshgrid(...)``), and neither those names nor a local
    computed from them is kept on ``self`` other than as a buffer (``register_buffer``: a
    buffer is no parameter), handed to a method of a local, or given to a call other than a
    PyTorch function or a builtin. A factory whose module or parameter is never kept adds
    nothing to the module's parameters."""
    if me is None or any(isinstance(n, cst.Name) and n.value == me for n in walk(call)):
        return False
    bound: set[str] = set()
    for node in walk(func.body):
        if isinstance(node, (cst.Assign, cst.AnnAssign)) and node.value is call:
            targets = [t.target for t in node.targets] if isinstance(node, cst.Assign) else [node.target]
            for t in targets:
                names = [t] if isinstance(t, cst.Name) else [
                    el.value for el in t.elements] if isinstance(t, (cst.Tuple, cst.List)) else [None]
                if not all(isinstance(n, cst.Name) for n in names):
                    return False
                bound.update(n.value for n in names)
    if not bound:
        return False  # a value used in place (an argument, an attribute's value): not followed
    kb = knowledge()
    safe = {a for a in index.imports.aliases if a not in index.globals
            and index.imports.qualify(a).partition(".")[0] in kb.torch_packages}
    safe |= {b for b in BUILTINS if b not in index.globals}
    return not _flows_into_self(func, me, bound, safe_calls=safe)


def _on_super(func: cst.BaseExpression) -> bool:
    """``super().name``: a method of the base class."""
    return isinstance(func, cst.Attribute) and isinstance(func.value, cst.Call) and dotted_name(func.value.func) == "super"


def _call_may_build(index: ModuleIndex, node: cst.Call, d: str, head: str, depth: int, seen: frozenset,
                    frozen: bool = False) -> bool:
    """Whether a call ``d(...)`` in a method of a class of module ``index`` may build a
    parameter (see :func:`_may_build_parameters`; ``frozen``: one that requires grad)."""
    kb = knowledge()
    cls = class_of_name(index, d)
    if frozen and _makes_frozen_parameter(index, node):
        return False
    if isinstance(cls, str):
        if cls in CONTAINERS:
            return cls not in (SEQUENTIAL, "torch.nn.ModuleList", "torch.nn.ModuleDict", "torch.nn.Identity")
        entry = kb.cls(cls)
        if entry is not None and entry.parameters is False:
            return False
        return is_module_class(cls)  # nn.Linear; a library class that is no module builds none
    if cls is not None:
        return is_module_class(cls) and _keeps_arguments_if_parameterless(cls, depth + 1, seen, frozen) is None
    if head in index.imports.aliases and head not in index.globals:
        q = index.imports.qualify(d)
        summary = kb.callable(q)
        if summary is not None:
            return summary.returns is not None and summary.returns.role == "model"
        project = index.project
        if project is not None and project.lookup(q, index.path) is not None:
            return True  # a function of the project
        return q.partition(".")[0] in kb.torch_packages
    if head in index.functions or head in index.classes:
        return True  # a function of the module, a class's factory method (Block.make(...))
    if head in BUILTINS and head not in index.globals:
        return False
    return "." not in d  # a callable in a variable; not a method of a value (x.view(...))


def _makes_frozen_parameter(index: ModuleIndex, node: cst.Call) -> bool:
    """Whether call ``node`` (in module ``index``) makes a parameter that does not require
    grad: a library class whose knowledge entry names its ``requires_grad_arg``
    (``torch.nn.Parameter``'s ``[1, "requires_grad"]``), given the literal ``False`` there
    (``nn.Parameter(torch.rand(4, 2), requires_grad=False)``)."""
    cls = class_of_name(index, dotted_name(node.func))
    entry = knowledge().cls(cls) if isinstance(cls, str) else None
    if entry is None or entry.requires_grad_arg is None:
        return False
    value = _cst_arg(node, entry.requires_grad_arg)
    return isinstance(value, cst.Name) and value.value == "False"


def _registers_frozen(index: ModuleIndex, node: cst.Call) -> bool:
    """Whether ``self.register_parameter(name, param)`` (``node``) registers ``None`` or a
    parameter made frozen by the call it is given (:func:`_makes_frozen_parameter`)."""
    value = _cst_arg(node, (1, "param"))
    if isinstance(value, cst.Name) and value.value == "None":
        return True
    return isinstance(value, cst.Call) and _makes_frozen_parameter(index, value)


def _may_unfreeze(cls: ClassRef) -> bool:
    """Whether a method of project class ``cls`` (any of them, not only those ``__init__``
    calls: the code outside may call it) may make a parameter that requires grad or let one
    require grad again: it assigns a ``requires_grad`` attribute a value other than the literal
    ``False`` (``self.weight.requires_grad = True``, also through ``setattr``), calls
    ``requires_grad_`` with anything but ``False``, makes a parameter that is not made frozen
    (:func:`_makes_frozen_parameter`) or registers one. ``True`` when a method does not parse.
    Its bases are read on their own (:func:`_keeps_arguments_if_parameterless` follows them)."""
    info = cls.info
    if info is None:
        return True
    methods = info.methods
    kb = knowledge()
    for name in (methods.names() if hasattr(methods, "names") else list(methods)):
        func = methods.get(name)
        if func is None:
            return True  # a method that does not parse: not read
        for n in walk(func):
            if isinstance(n, (cst.Assign, cst.AugAssign, cst.AnnAssign)):
                targets = [t.target for t in n.targets] if isinstance(n, cst.Assign) else [n.target]
                value = n.value
                for t in targets:
                    for x in walk(t):
                        if isinstance(x, cst.Attribute) and x.attr.value == "requires_grad" and not (
                                isinstance(n, cst.Assign) and isinstance(value, cst.Name) and value.value == "False"):
                            return True
            if not isinstance(n, cst.Call):
                continue
            func_name = n.func.attr.value if isinstance(n.func, cst.Attribute) else dotted_name(n.func)
            if func_name == "requires_grad_":
                flag = _cst_arg(n, (0, "requires_grad"))
                if not (isinstance(flag, cst.Name) and flag.value == "False"):
                    return True
            elif func_name == "register_parameter":
                if not _registers_frozen(cls.module, n):
                    return True
            elif func_name == "setattr":
                attr = _cst_arg(n, 1)
                if not isinstance(attr, cst.SimpleString) or "requires_grad" in attr.value:
                    return True  # setattr(p, "requires_grad", flag), or a name computed at run time
            else:
                ref = class_of_name(cls.module, dotted_name(n.func)) if dotted_name(n.func) else None
                entry = kb.cls(ref) if isinstance(ref, str) else None
                if entry is not None and entry.requires_grad_arg is not None and not _makes_frozen_parameter(cls.module, n):
                    return True
    return False


def _kept(index: ModuleIndex, init: cst.FunctionDef) -> bool | None:
    """Whether ``__init__`` keeps what it is given: a parameter of it, or a value computed from
    one, appears in a value assigned to an attribute of ``self``, in the arguments of a method
    of ``self`` other than ``register_buffer``, or in the arguments of ``super().__init__`` or
    ``setattr``. ``None`` when it keeps a global variable of its module that way (a module built
    at the top of the file, for all the analysis knows)."""
    me = _self_name(init)
    p = init.params
    given = {x.name.value for x in (*p.posonly_params, *p.params, *p.kwonly_params)} - {me}
    for star in (p.star_arg, p.star_kwarg):
        if isinstance(star, cst.Param):
            given.add(star.name.value)
    variables = index.globals - set(index.functions) - set(index.classes) - set(index.imports.aliases) - given
    if _flows_into_self(init, me, variables):
        return None
    return _flows_into_self(init, me, given)


def _flows_into_self(init: cst.FunctionDef, me: str | None, sources: set[str],
                     safe_calls: set[str] | None = None) -> bool:
    """Whether a name of ``sources``, or a local computed from one, is kept by ``__init__``
    (see :func:`_kept`). With ``safe_calls`` (the names whose calls cannot keep what they are
    given: PyTorch's functions, builtins), also whether one is handed to any other call, or to
    a method of a local (``layers.append(layer)``: the local then holds it)."""
    if not sources:
        return False
    nodes = list(walk(init.body))

    def names(expr) -> set[str]:
        return {n.value for n in walk(expr) if isinstance(n, cst.Name)} if expr is not None else set()

    def stored_on_self(target) -> bool:
        while isinstance(target, (cst.Subscript, cst.Attribute)):
            target = target.value
        return isinstance(target, cst.Name) and target.value == me

    flows = []  # (names read, names bound): local assignments and loops
    sinks = []  # names read by what keeps them
    for node in nodes:
        if isinstance(node, (cst.Assign, cst.AnnAssign, cst.AugAssign)):
            targets = [t.target for t in node.targets] if isinstance(node, cst.Assign) else [node.target]
            read = names(node.value)
            if any(stored_on_self(t) for t in targets):
                sinks.append(read)
            flows.append((read, set().union(*(names(t) for t in targets if not stored_on_self(t)))))
        elif isinstance(node, (cst.For, cst.CompFor)):
            flows.append((names(node.iter), names(node.target)))
        elif isinstance(node, cst.Call):
            d = dotted_name(node.func)
            to_base = _on_super(node.func) or d == "setattr" or (d or "").endswith(".__init__")
            on_self = d is not None and d.partition(".")[0] == me and d != f"{me}.register_buffer"
            given = set().union(*(names(a.value) for a in node.args))
            if to_base or on_self:
                sinks.append(given)
            elif safe_calls is not None and d is not None and d.partition(".")[0] != me:
                head = d.partition(".")[0]
                if head not in safe_calls:
                    sinks.append(given)
                    if "." in d:  # layers.append(layer): the local receiver now holds it
                        flows.append((given, {head}))
    tainted = set(sources)
    changed = True
    while changed:
        changed = False
        for read, bound in flows:
            if not read.isdisjoint(tainted) and not bound <= tainted:
                tainted |= bound
                changed = True
    return any(not read.isdisjoint(tainted) for read in sinks)


# -- mode dependence ------------------------------------------------------------------------


def mode_dependent(unit, model: str, at=None) -> bool:
    """Whether ``model.train()``/``model.eval()`` can change what ``model`` computes: it (or a
    layer it builds) has Dropout, BatchNorm or another layer whose entry does not say
    ``modes = "none"`` (or says it with ``mode_args`` its construction gives a value other than
    0/None, or says ``modes_none_if_zero`` with arguments not all given 0), reads
    ``self.training``, calls a functional dropout or batch norm, or builds layers the engine
    cannot see (a factory, a call it has no entry for). ``False`` when every layer is known
    to behave the same in both modes, and for a model unpickled from a file
    (:func:`unpickled_module`: ``torch.load(path)``, an instance of a class the code does not
    name), whose dependence on the mode cannot be established; another construction reaching
    ``at`` still decides (``torch.load`` on one path, ``Net()`` with a Dropout on the other).

    The layers are those this construction builds: ``__init__`` is read with the values its
    construction gives its parameters (:func:`_init_constants`: literals, defaults left out), so
    a layer under an ``if`` those values decide against (``if dropout > 0:`` with ``dropout``
    left at ``0.0``), or in the arm of a conditional expression they rule out, is not built
    (:func:`_built_nodes`), and ``nn.Dropout(p=dropout)`` with that ``dropout`` is given 0.
    A parameter whose value the construction does not fix (a variable, ``**kwargs``) decides
    nothing. The construction's own arguments are read with the run constants of the code that
    holds it (:func:`run_constants`: ``args.dropout`` of an argparse option that only its
    ``default=`` sets), and a functional dropout (``F.dropout(x, p=self.dropout, ...)``) whose
    rate is such a constant 0 (an attribute ``__init__`` alone sets, :func:`_self_constants`)
    is mode-free as ``nn.Dropout(p=0)`` is (``modes_none_if_zero`` of its function entry).
    A parameter holding a layer class (its default ``norm_layer=nn.InstanceNorm2d``, or the
    class or ``functools.partial(nn.InstanceNorm2d, affine=True)`` the construction gives,
    :func:`_maker_value`) builds that class where ``__init__`` calls it, given the partial's
    arguments (``track_running_stats=True`` decides); a parameter called whose value is not
    known builds a layer the engine cannot see. A factory (``self.build_block(dim, norm_layer,
    use_dropout)``) is read with the values its call gives its parameters.

    ``at``: an event that uses the model (a forward); the model is then the one its
    constructions reaching ``at`` build (a notebook that re-binds ``model = nn.Sequential(...)``
    in later cells validates each model in turn), when one reaches it on every path; otherwise
    any construction of the unit. A construction may go through a classmethod of the class
    (``Transformer.from_args(args)`` returning ``cls(...)``, :func:`classmethod_construction`).
    A model the unit does not build (``self.head`` of an entry method) is read from every
    construction ``__init__`` assigns it (:func:`_init_constructions`), else from the class the
    roles know. A wrapper the knowledge says is its module (``nn.DataParallel(m)``,
    :func:`wrapped_module`) depends on the mode as the module it wraps; ``True`` when any one
    construction may. A copy (``model = copy.deepcopy(base)``, :func:`copied_model`: a call the
    knowledge says returns a copy of an argument) holds the layers of the model it copies, and
    depends on the mode as the constructions of that model reaching the copy do; so does a model
    a function of the project returns (:func:`_returned_models`: ``embed = make_embedding(n).
    to(device)``, the function binding a construction to a variable and returning that variable)."""
    return _mode_dependent(unit, model, at, frozenset())


def _mode_dependent(unit, model: str, at, seen: frozenset) -> bool:
    """:func:`mode_dependent`; ``seen``: the models whose copies are being read (a copy in a
    loop of the model it re-binds, ``model = copy.deepcopy(model)``, reads no further)."""
    if model in seen:
        return True
    seen = seen | {model}
    reaching = None
    if at is not None and unit.built_on_every_path(at, model, "model_build"):
        reaching = {id(ev) for ev in unit.builds_reaching(at, model, "model_build")}
    builds: list = []
    copied = False  # a copy of another model, or a model a helper returned, was read and found mode-free
    loaded = False  # a model restored by unpickling was read: its layers are not in the code
    for ev in unit.of_kind("model_build"):
        if reaching is not None and id(ev) not in reaching:
            continue
        if ev.subject == model and isinstance(ev.raw, Call):
            found = construction_of(unit, ev.raw)
            if found is None and unpickled_module(ev.raw):
                loaded = True
                continue
            if found is None:
                sources = _returned_models(unit, ev.raw)
                if sources is None:
                    source = copied_model(ev.raw)
                    sources = (source,) if source is not None else None
                if sources is None or any(_mode_dependent(unit, source, ev, seen) for source in sources):
                    return True
                copied = True
                continue
            builds.append(found)
    if not builds and (copied or loaded):
        return False
    if not builds:
        # the constructions __init__ makes (their arguments decide), else the class the roles know
        found = _init_constructions(unit, model)
        if found is None:
            t = unit.roles.types.get(model)
            found = [(t, None)] if t is not None else None
        if found is None:
            return True
        builds += found
    return any(_construction_mode_dependent(unit, c, call) for c, call in builds)


def _receiver_call(c: Call) -> Call | None:
    """The innermost call of a chain of ``nn.Module`` methods that return their receiver
    (``make(...).to(device).cuda()``: the knowledge's ``returns.same = "self"``): the call whose
    result the chain returns; ``None`` when a method of the chain may return something else."""
    kb = knowledge()
    while c.inner is not None:
        summary = kb.method("torch.nn.Module", c.method or "")
        if summary is None or summary.returns is None or "self" not in summary.returns.same:
            return None
        c = c.inner
    return c


def _returned_models(unit, c: Call) -> "tuple[str, ...] | None":
    """The models a call of a function of the project returns, through ``nn.Module`` methods
    that return their receiver (``rel_graph_embed(g, 128).to(device)``, the knowledge's
    ``returns.same = "self"``): the variables its ``return`` statements name
    (:func:`inlined_returns`), when every one is a model the unit builds (``embeds =
    HeteroEmbedding(...); return embeds``); ``None`` for a call not inlined, or one that may
    return anything else (``return Wrapper(embeds)``, a bare ``return``)."""
    c = _receiver_call(c)
    if c is None:
        return None
    returned = inlined_returns(unit, c.node)
    if not returned:
        return None
    built = {ev.subject for ev in unit.of_kind("model_build")}
    return tuple(sorted(returned)) if returned <= built else None


def inlined_returns(unit, node: cst.Call) -> "frozenset[str] | None":
    """The symbols of the variables the ``return`` statements of the function of the project
    that the call ``node`` runs give (its body inlined in the unit's IR after the call), when
    each of them returns a plain name (``return model``); ``None`` when the call is not inlined
    in the unit, or a ``return`` gives another expression or nothing (``return Wrapper(model)``
    is computed from ``model`` but is not that object)."""
    return unit.cached("inlined_returns", lambda: _inlined_returns_table(unit.ir)).get(id(node))


def _inlined_returns_table(ir) -> dict:
    """``id(call node) -> returned symbols`` (:func:`inlined_returns`) for every inlined call of
    the IR ``ir`` (the builder places an inlined call's :class:`~loopcheck.engine.ir.Inline`
    right after it)."""
    table: dict = {}
    stack = [ir]
    while stack:
        node = stack.pop()
        if type(node) is Seq:
            for before, after in zip(node.items, node.items[1:]):
                if type(before) is Call and before.inlined and type(after) is Inline:
                    table[id(before.node)] = _own_returns(after.body) if _returns_names(after.func) else None
        stack.extend(parts(node))
    return table


def _returns_names(func: cst.CSTNode) -> bool:
    """Whether every ``return`` of the function ``func`` (not of the functions it defines)
    returns a plain name, and there is one."""
    if type(func) is not cst.FunctionDef:
        return False
    returns = [n for n in walk(func.body, prune=(cst.FunctionDef, cst.ClassDef, cst.Lambda)) if type(n) is cst.Return]
    return bool(returns) and all(type(r.value) is cst.Name for r in returns)


def _own_returns(body) -> frozenset[str]:
    """The symbols the ``return`` jumps of one inlined body give, not those of the functions
    inlined inside it (a value it returns from them already names what they return)."""
    out: set[str] = set()
    stack = [body]
    while stack:
        node = stack.pop()
        if type(node) is Jump:
            if node.kind == "return":
                out |= node.values
        elif type(node) is not Inline:
            stack.extend(parts(node))
    return frozenset(out)


def unpickled_module(c: Call) -> bool:
    """Whether a call returns an object the knowledge says is unpickled from a file
    (``returns.value = "unpickled"``: ``torch.load(path)``, an instance of a class the code does
    not name), also through ``nn.Module`` methods that return their receiver
    (``torch.load(path).to(device)``, ``returns.same = "self"``)."""
    c = _receiver_call(c)
    if c is None:
        return False
    kb = knowledge()
    summary = kb.callable(c.func) if c.qualified and c.func else None
    return summary is not None and summary.returns is not None and summary.returns.value == "unpickled"


def copied_model(c: Call) -> str | None:
    """The symbol of the model a call copies, through calls on its result
    (``copy.deepcopy(model).to(device)``: ``model``): a function whose knowledge names, by
    ``returns.copy_of``, the argument its result is a copy of, given a plain name there;
    ``None`` for any other call."""
    while c is not None:
        if c.inner is None and c.qualified and c.func:
            summary = knowledge().callable(c.func)
            ref = summary.returns.get("copy_of") if summary is not None and summary.returns else None
            arg = arg_at(c, ref) if ref is not None else None
            return arg.sym if arg is not None else None
        c = c.inner
    return None


def construction_mode_dependent(unit, cls, call: cst.Call | None) -> bool:
    """Whether the module built by ``call`` (of class ``cls``: a class of the project or a
    library class's qualified name) may compute differently in train and eval mode; ``True``
    when that cannot be told (see :func:`_construction_mode_dependent`)."""
    return _construction_mode_dependent(unit, cls, call)


def _construction_mode_dependent(unit, c, call: cst.Call | None) -> bool:
    """Whether the module one construction builds may compute differently in train and eval
    mode (``c``: its class, a class of the project or a library class's qualified name;
    ``call``: the constructor call, ``None`` when not seen): a container, by the layers its
    arguments build (:func:`_container_mode_dependent`); a wrapper that is its module for the
    rules (:func:`wrapped_module`: ``nn.DataParallel(m)``), by the module it wraps; any other,
    by its class (:func:`_class_mode_dependent`)."""
    if isinstance(c, str) and call is not None:
        if c in CONTAINERS:
            return _container_mode_dependent(unit, call)
        wrapped = wrapped_module(c, call)
        if wrapped is not None:
            # its forward is the wrapped module's, in the mode train()/eval() set on it too
            return wrapped is True or _modules_mode_dependent(unit, call, [wrapped])
    if call is None:
        return _class_mode_dependent(c, 0, frozenset())
    return _class_mode_dependent(c, 0, frozenset(), call, run_constants(unit, call), unit.module_of(call))


def wrapped_module(cls: str, call: cst.Call) -> "cst.BaseExpression | bool | None":
    """The expression a construction ``call`` of the library class ``cls`` gives the module it
    wraps, when the knowledge says the wrapper is that module for the rules (its ``returns.same``
    names an argument: ``nn.DataParallel(m)``, ``DistributedDataParallel(m)``,
    ``FullyShardedDataParallel(m)`` hold ``m`` as ``.module``, share its parameters and run its
    forward, and ``train()``/``eval()`` on them set ``m``'s mode); ``True`` when ``*args`` or
    ``**kwargs`` may pass it; ``None`` for a class that is no such wrapper, or a construction
    that leaves the argument out."""
    entry = knowledge().cls(cls)
    same = entry.ctor.returns.same if entry is not None and entry.ctor is not None and entry.ctor.returns else ()
    refs = [ref for ref in same if ref != "*"]
    if len(refs) != 1:
        return None
    return _given_arg(refs[0], call)


ARGUMENT_PARSER = "argparse.ArgumentParser"


def run_constants(unit, node: cst.CSTNode) -> dict:
    """``"args.name" -> value`` for the options of an ``argparse`` parser that the code holding
    ``node`` (its function, or the module) parses with ``args = parser.parse_args()`` (no
    arguments: the command line) and that nothing but their ``default=`` literal sets in the
    program as written: ``parser.add_argument("--dropout", type=float, default=0.0)`` gives
    ``args.dropout`` the value ``0.0``. An option added twice, one ``set_defaults`` names, one
    the code assigns (``args.dropout = ...``), or all of them when the code hands the namespace
    to ``setattr``/``vars``/``__dict__``, or binds ``args`` again, is not known. In a function
    whose parameter is handed such a namespace at every call the project makes of it, the
    options that every call's namespace fixes alike (:func:`handed_defaults`)."""
    index = unit.module_of(node)
    if index is None:
        return {}
    table = parents(index)
    holder = table.get(node)
    while holder is not None and not isinstance(holder, (cst.FunctionDef, cst.Module)):
        holder = table.get(holder)
    if holder is None:
        return {}
    key = ("run_constants", id(holder))
    if key in index.cache:
        return index.cache[key]
    out = _argparse_defaults(index, holder)
    if type(holder) is cst.FunctionDef:
        handed = handed_defaults(index, holder)
        if handed:
            out = {**handed, **out}
    index.cache[key] = out
    return out


#: the namespace a function returns, in :func:`_argparse_defaults`'s table
RETURNED = "<return>"


def _argparse_defaults(index: ModuleIndex, holder: cst.CSTNode, _depth: int = 0) -> dict:
    """The option defaults :func:`run_constants` gives for the code of ``holder``. A namespace
    may also come from a function of the project called without arguments (``args =
    set_args()``, in this module or another) that returns its parser's ``parse_args()``: that
    function's defaults, less what ``holder`` changes. What ``holder`` itself returns is keyed
    :data:`RETURNED` (``return parser.parse_args()``, or a namespace it parsed)."""
    body = holder.body if isinstance(holder.body, (tuple, list)) else (holder.body,)
    nodes = [n for part in body for n in walk(part, prune=(cst.FunctionDef, cst.ClassDef, cst.Lambda))]
    parsers: set[str] = set()
    namespaces: dict[str, str] = {}  # args -> its parser
    given: dict[str, dict] = {}  # args -> the defaults of the namespace a project function returned
    returned: list = []
    binds: dict[str, int] = {}
    for n in nodes:
        if isinstance(n, cst.Return):
            returned.append(n.value)
        if isinstance(n, cst.Assign):
            for t in n.targets:
                for name in names_in(t.target) if not isinstance(t.target, cst.Attribute) else ():
                    binds[name] = binds.get(name, 0) + 1
            if len(n.targets) != 1 or not isinstance(n.targets[0].target, cst.Name) \
                    or not isinstance(n.value, cst.Call):
                continue
            target, d = n.targets[0].target.value, dotted_name(n.value.func)
            if d is not None and index.imports.qualify(d) == ARGUMENT_PARSER:
                parsers.add(target)
            elif d is not None and d.endswith(".parse_args") and not n.value.args:
                namespaces[target] = d.rpartition(".")[0]
            elif d is not None and not n.value.args and _depth < 2:
                found = _returned_defaults(index, d, _depth)
                if found is not None:
                    given[target] = found
        elif isinstance(n, (cst.AugAssign, cst.AnnAssign, cst.For, cst.CompFor, cst.NamedExpr, cst.Del)):
            for name in names_in(n.target):
                binds[name] = binds.get(name, 0) + 1
    if len(returned) == 1 and isinstance(returned[0], cst.Call) and not returned[0].args:
        d = dotted_name(returned[0].func)
        if d is not None and d.endswith(".parse_args"):
            namespaces[RETURNED] = d.rpartition(".")[0]
            binds[RETURNED] = 1
    namespaces = {a: p for a, p in namespaces.items() if p in parsers and binds.get(a) == 1 and binds.get(p) == 1}
    out: dict = {}
    for args, parser in [*namespaces.items(), *((a, None) for a in given if binds.get(a) == 1)]:
        defaults: dict = dict(given[args]) if parser is None else {}
        dropped: set[str] = set()
        for n in nodes:
            if isinstance(n, cst.Call):
                d = dotted_name(n.func)
                if parser is not None and d == f"{parser}.add_argument":
                    dest, value = _option_default(n)
                    if dest is None:
                        continue
                    if dest in defaults:
                        dropped.add(dest)
                    defaults[dest] = value
                elif parser is not None and d == f"{parser}.set_defaults":
                    if any(a.star for a in n.args):
                        dropped |= set(defaults) | {"*"}
                    dropped |= {a.keyword.value for a in n.args if a.keyword is not None}
                elif d in ("setattr", "vars", "delattr") and n.args and dotted_name(n.args[0].value) == args:
                    dropped.add("*")
            elif isinstance(n, cst.Attribute) and dotted_name(n.value) == args and n.attr.value == "__dict__":
                dropped.add("*")
            elif isinstance(n, (cst.Assign, cst.AugAssign, cst.AnnAssign)):
                targets = [t.target for t in n.targets] if isinstance(n, cst.Assign) else [n.target]
                for t in targets:
                    for w in walk(t):
                        if isinstance(w, cst.Attribute) and dotted_name(w.value) == args:
                            dropped.add(w.attr.value)
        if "*" in dropped:
            continue
        for dest, value in defaults.items():
            if dest not in dropped and value is not NO_VALUE:
                out[f"{args}.{dest}"] = value
    if len(returned) == 1 and isinstance(returned[0], cst.Name) and returned[0].value in namespaces:
        name = returned[0].value
        out.update([(f"{RETURNED}.{k.partition('.')[2]}", v) for k, v in out.items() if k.partition(".")[0] == name])
    return out


def _returned_defaults(index: ModuleIndex, dotted: str, depth: int) -> dict | None:
    """``option -> default`` of the namespace that function ``dotted`` of the project returns
    (:func:`_argparse_defaults` of its body, :data:`RETURNED`), ``None`` when ``dotted`` is not
    such a function of this module or another module of the project."""
    func, where = index.functions.get(dotted) if "." not in dotted else None, index
    if func is None and index.project is not None:
        member = index.project.lookup(index.imports.qualify(dotted), index.path)
        if member is None or member.function is None or member.cls is not None or member.info.index is None:
            return None
        func, where = member.function, member.info.index
    if func is None or func.decorators:
        return None
    table = _argparse_defaults(where, func, depth + 1)
    found = {k.partition(".")[2]: v for k, v in table.items() if k.partition(".")[0] == RETURNED}
    return found or None


#: How many callers deep :func:`handed_defaults` follows a namespace handed down
#: (``main`` parses, ``run(args)`` calls ``train(args)``).
HANDED_DEPTH = 3


class _ModuleCode:
    """A module's own code (its top-level statements other than ``def`` and ``class``), as the
    holder :func:`_argparse_defaults` reads: its ``body``."""

    def __init__(self, body: list) -> None:
        self.body = body


def handed_defaults(index: ModuleIndex, func: cst.FunctionDef, _depth: int = 0) -> dict:
    """``"p.x" -> value`` for the options of the ``argparse`` namespaces that parameter ``p``
    of ``func`` is handed at every call the project makes of ``func``: ``main()`` parses
    ``args = parser.parse_args()`` and calls ``train(args, model)``, so ``args.accum`` in
    ``train`` holds the ``default=1`` of ``--accum`` on a run that does not pass the option.

    Decided when ``func`` is a module-level function of ``index`` that only the project's code
    can call (:func:`~loopcheck.engine.unreferenced.calling_files`: a script's, or a private
    one; :func:`~loopcheck.engine.unreferenced.named_outside_code`: no shell script, notebook
    or document runs it), every mention of it there is a plain call
    (:func:`~loopcheck.engine.callers.call_sites`: none passes it as a value, none calls it
    with ``*args``/``**kwargs``), at least one call is found, and each hands ``p`` a name (by
    position or keyword) whose options the calling code fixes (:func:`_caller_options`: its
    :func:`_argparse_defaults`, or those handed to it in turn, up to :data:`HANDED_DEPTH`
    callers, less what it and the functions it hands the namespace to assign). An option is
    kept when every call's namespace gives it the same value (a recursive call handing ``p``
    on gives nothing new), and ``func`` neither binds ``p`` again nor writes the option
    (:func:`_namespace_writes`: ``p.x = ...``, ``setattr(p, ...)``, ``vars(p)``, or a function
    of the project it hands ``p`` to doing so). Anything else is left out: ``{}`` when nothing
    is known.

    Args:
        index: the module that defines ``func`` (with its ``path`` and ``project``).
        func: a function of that module.
    """
    key = ("handed_defaults", id(func), _depth)
    if key in index.cache:
        return index.cache[key]
    index.cache[key] = {}  # a cycle of callers ends here, unknown
    out = index.cache[key] = _handed(index, func, _depth)
    return out


def _handed(index: ModuleIndex, func: cst.FunctionDef, depth: int) -> dict:
    project, path, name = index.project, index.path, func.name.value
    if depth > HANDED_DEPTH or project is None or path is None or index.functions.get(name) is not func:
        return {}
    p = func.params
    positional = [x.name.value for x in (*p.posonly_params, *p.params)]
    by_keyword = {x.name.value for x in (*p.params, *p.kwonly_params)}
    # the parameters the function never binds again; asked for its own reads (not as a caller
    # handing a namespace on), those it reads as namespaces (``args.accum``)
    params = set(positional) | by_keyword
    if depth == 0:
        params &= {n.value.value for n in walk(func.body) if type(n) is cst.Attribute and type(n.value) is cst.Name}
    rebound, declared = bound_names(func.body)
    nonlocal_ = {x.name.value for n in walk(func.body) if type(n) is cst.Nonlocal for x in n.names}
    params -= rebound | declared | nonlocal_
    if not params:
        return {}
    files = calling_files(project, index, func)
    sites = call_sites(project, files, Path(path), name) if files is not None else None
    if not sites:
        return {}
    own = Path(path).resolve()
    known: dict[str, dict | None] = dict.fromkeys(sorted(params))  # None: no call has given one yet
    for site in sites:
        if STARRED in site.positional or any(k is None for k, _v in site.keywords):
            return {}  # ``train(*xs)``, ``train(**kw)``: what lands in each parameter is not known
        given = dict(site.keywords)
        for param in list(known):
            at = positional.index(param) if param in positional else None
            if at is not None and at < len(site.positional):
                arg = site.positional[at]
            else:
                arg = given.get(param) if param in by_keyword else None
            if arg == param and site.file == own and site.where == ("function", name):
                continue  # a recursive call hands the namespace on
            options = _caller_options(project, site, arg, depth) if arg is not None and "." not in arg else {}
            before = known[param]
            known[param] = options if before is None else {
                x: v for x, v in before.items() if x in options and type(options[x]) is type(v) and options[x] == v}
            if not known[param]:
                del known[param]
        if not known:
            return {}
    out: dict = {}
    for param, options in known.items():
        written = _namespace_writes(index, func, param)
        if options and "*" not in written:
            out.update((f"{param}.{x}", v) for x, v in options.items() if x not in written)
    if out and named_outside_code(project, index, func):
        return {}  # a shell script or a document may run it with a namespace of its own
    return out


def _caller_options(project, site: CallSite, name: str, depth: int) -> dict:
    """``option -> value`` of namespace ``name`` where ``site`` calls: the
    :func:`_argparse_defaults` of the calling function (or module code), with those handed to
    the calling function in turn (:func:`handed_defaults`), less what the caller hands to a
    function of the project that writes it (:func:`_namespace_writes`)."""
    info = project.load(site.file)
    where = info.index if info is not None else None
    if where is None:
        return {}
    key = ("caller_options", site.where, depth)
    table = where.cache.get(key)
    if table is None:
        if site.where[0] == "function":
            holder = where.functions.get(site.where[1])
            table = {}
            if holder is not None:
                table = {**handed_defaults(where, holder, depth + 1), **_argparse_defaults(where, holder)}
        else:
            holder = _ModuleCode(where.module_code())
            table = _argparse_defaults(where, holder)
        where.cache[key] = table = (holder, table)
    holder, table = table
    options = {k.partition(".")[2]: v for k, v in table.items() if k.partition(".")[0] == name}
    if not options:
        return {}
    written = _namespace_writes(where, holder, name)
    return {} if "*" in written else {x: v for x, v in options.items() if x not in written}


def _namespace_writes(index: ModuleIndex, holder, name: str, follow: bool = True) -> set[str]:
    """The options of namespace ``name`` that the code of ``holder`` (a function, or
    :class:`_ModuleCode`), nested functions included, may write: ``name.x = ...`` (also
    augmented, annotated, ``del``), ``"*"`` for all of them when it hands the namespace to
    ``setattr``/``delattr``/``vars`` or reads its ``__dict__``; with ``follow``, also what a
    function of the project it hands ``name`` to (by position or keyword) writes through the
    parameter that receives it, one call deep."""
    body = holder.body if isinstance(holder.body, (tuple, list)) else (holder.body,)
    out: set[str] = set()
    for part in body:
        for n in walk(part):
            t = type(n)
            if t is cst.Assign or t is cst.AugAssign or t is cst.AnnAssign or t is cst.Del:
                targets = [x.target for x in n.targets] if t is cst.Assign else [n.target]
                for target in targets:
                    for w in walk(target):
                        if type(w) is cst.Attribute and type(w.value) is cst.Name and w.value.value == name:
                            out.add(w.attr.value)
            elif t is cst.Attribute and n.attr.value == "__dict__" and type(n.value) is cst.Name \
                    and n.value.value == name:
                out.add("*")
            elif t is cst.Call:
                handed = [(j, a.keyword.value if a.keyword is not None else None) for j, a in enumerate(n.args)
                          if not a.star and type(a.value) is cst.Name and a.value.value == name]
                if not handed:
                    continue
                d = dotted_name(n.func)
                if d in ("setattr", "delattr", "vars"):
                    out.add("*")
                elif follow and d is not None:
                    out |= _writes_through(index, d, handed, n)
    return out


def _writes_through(index: ModuleIndex, dotted: str, handed: list, call: cst.Call) -> set[str]:
    """What function ``dotted`` of the project (a module-level one) writes through the
    parameters that ``call`` hands the namespace to (``handed``: ``(argument position,
    keyword or None)``); nothing for a callee that is not such a function (a library's, a
    class, a method)."""
    func, where = (index.functions.get(dotted), index) if "." not in dotted else (None, index)
    if func is None and index.project is not None:
        try:
            member = index.project.lookup(index.imports.qualify(dotted), index.path)
        except (RecursionError, AttributeError, KeyError):
            member = None
        if member is not None and member.function is not None and member.cls is None and member.info.index is not None:
            func, where = member.function, member.info.index
    if func is None:
        return set()
    p = func.params
    positional = [x.name.value for x in (*p.posonly_params, *p.params)]
    out: set[str] = set()
    for j, keyword in handed:
        if keyword is not None:
            if keyword not in (*positional, *(x.name.value for x in p.kwonly_params)):
                return {"*"} if type(p.star_kwarg) is cst.Param else set()
            param = keyword
        elif any(a.star for a in call.args[:j]):
            return {"*"}  # after ``*xs``: which parameter receives it is not known
        elif j < len(positional):
            param = positional[j]
        elif type(p.star_arg) is cst.Param:
            return {"*"}  # into ``*args``: the function may write it through any element
        else:
            continue
        out |= _namespace_writes(where, func, param, follow=False)
    return out


def _option_default(call: cst.Call) -> "tuple[str | None, object]":
    """``(dest, default)`` of an ``add_argument`` call of an optional argument (``"--dropout"``
    or ``dest=``): its ``default=`` literal, ``NO_VALUE`` when it has none (or a computed one);
    ``(None, NO_VALUE)`` for a positional argument or a call whose names are computed."""
    flags = [a.value for a in call.args if a.keyword is None and not a.star]
    keywords = {a.keyword.value: a.value for a in call.args if a.keyword is not None}
    if any(a.star for a in call.args) or not flags or not all(isinstance(f, cst.SimpleString) for f in flags):
        return None, NO_VALUE
    names = [f.evaluated_value for f in flags]
    if not all(isinstance(x, str) and x.startswith("-") for x in names):
        return None, NO_VALUE
    if "dest" in keywords:
        dest = _static_value(keywords["dest"], {})
        if not isinstance(dest, str):
            return None, NO_VALUE
    else:
        long = [x for x in names if x.startswith("--")]
        dest = (long[0] if long else names[0]).lstrip("-").replace("-", "_")
    if "default" not in keywords:
        return dest, NO_VALUE
    return dest, _static_value(keywords["default"], {})


def _init_constructions(unit, model: str) -> "list[tuple[ClassRef | str, cst.Call]] | None":
    """``[(class, constructor call), ...]`` of ``self.attr`` (symbol ``self@Cls.attr``) built in
    the ``__init__`` of a class of the checked module, when the unit does not build it (an entry
    method, ``Trainer.validate``, whose model ``__init__`` made): one per assignment of the
    attribute there (:func:`init_assignment_lists`: an ``if`` choosing among classes gives each);
    ``None`` when one of them is not a construction the engine reads. A construction followed by
    ``nn.Module`` methods that the knowledge says return the module itself (``returns.same =
    "self"``: ``Net(...).type(dtype)``, ``Net(...).cuda()``, ``Net(...).to(device)``) is that
    construction (:func:`_constructor`): they move or convert the parameters and build no layer."""
    m = re.fullmatch(r"self@(\w+)\.(\w+)", model.rpartition(":")[2])
    index = unit.module
    if m is None or index is None or m.group(1) not in getattr(index, "classes", {}):
        return None
    out = []
    for value, where in init_assignment_lists(ClassRef(index, m.group(1))).get(m.group(2), ()):
        value = _constructor(value) if isinstance(value, cst.Call) else value
        cls = class_of_name(where, dotted_name(value.func)) if isinstance(value, cst.Call) else None
        if cls is None:
            return None
        out.append((cls, value))
    return out or None


def _container_mode_dependent(unit, call: cst.Call) -> bool:
    """Whether a container built by ``call`` (``nn.Sequential(nn.Linear(1, 10), nn.ReLU())``)
    may compute differently in train and eval mode: one of the layers its arguments build may,
    or an argument is not a construction the engine can read (a layer built elsewhere). A list
    the arguments name (``nn.Sequential(*layers)``, ``nn.ModuleList(layers)``) or spread
    (``*[nn.Linear(n, n) for _ in range(k)]``) gives the layers put in it
    (:func:`_listed_modules`)."""
    values: list = []
    for arg in call.args:
        if arg.star == "**":
            return True
        if arg.star or type(arg.value) is cst.Name:
            listed = _listed_modules(unit, call, arg.value)
            if listed is None:
                return True
            values += listed
        else:
            values.append(arg.value)
    return _modules_mode_dependent(unit, call, values)


_LIST_ADDS = {"append": (0,), "insert": (1,), "extend": ()}


def _listed_modules(unit, call: cst.Call, value: cst.BaseExpression) -> list | None:
    """The expressions of the modules a list holds, the list being ``value``, an argument of
    ``call``: a list display or comprehension (its elements); or a local name of the code that
    holds ``call`` bound once to one, whose other uses (of that variable:
    :func:`~loopcheck.engine.names.names_variable`, not ``model.layers`` or ``dict(layers=3)``)
    only add to it (``layers.append(m)``,
    ``layers.insert(i, m)``, ``layers.extend([...])``, ``layers += [...]``) or read its length
    (``len(layers)``), outside any nested function. ``None`` when the list may hold anything
    else (a parameter, a name bound twice or to another value, handed to a call, indexed,
    mutated another way)."""
    if type(value) in (cst.List, cst.ListComp):
        return _list_items(value)
    index = unit.module_of(call)
    if type(value) is not cst.Name or index is None:
        return None
    name = value.value
    table = parents(index)
    holder = table.get(call)
    while holder is not None and not isinstance(holder, (cst.FunctionDef, cst.Module)):
        holder = table.get(holder)
    if holder is None or type(holder) is cst.FunctionDef and name in all_param_names(holder):
        return None
    items: list = []
    bindings = 0
    for node in walk(holder.body if type(holder) is cst.FunctionDef else holder):
        if type(node) is not cst.Name or node.value != name or node is value or not names_variable(node, table):
            continue  # (the same spelling, not the variable: ``model.layers``, ``dict(layers=3)``)
        up = table.get(node)
        scope = up
        while scope is not None and scope is not holder:
            if type(scope) in (cst.FunctionDef, cst.Lambda, cst.ClassDef):
                break
            scope = table.get(scope)
        if scope is not holder:
            if _own_local(scope, name):
                continue  # another variable: a local of a nested function
            return None  # a nested function may bind or change it
        added = _list_use(index, node, up, table)
        if added is None:
            return None
        if added is _BOUND:
            bindings += 1
            added = _list_items(table[up].value if type(up) is cst.AssignTarget else up.value)
            if added is None:
                return None
        items += added
    return items if bindings == 1 else None


_BOUND = object()


def _own_local(scope: cst.CSTNode, name: str) -> bool:
    """Whether ``name`` is a local variable of the function ``scope`` (a parameter, or a name
    its body binds and declares neither ``global`` nor ``nonlocal``)."""
    if type(scope) is not cst.FunctionDef:
        return False
    names, declared = bound_names(scope.body)
    return name not in declared and (name in names or name in all_param_names(scope))


def _list_items(value: cst.BaseExpression) -> list | None:
    """The element expressions of a list display or comprehension (the one element expression
    of a comprehension stands for all it makes); ``None`` for any other value, or a display
    that spreads another iterable (``[*blocks, head]``)."""
    if type(value) is cst.ListComp:
        return [value.elt]
    if type(value) is cst.List and not any(type(e) is cst.StarredElement for e in value.elements):
        return [e.value for e in value.elements]
    return None


def _list_use(index: ModuleIndex, node: cst.Name, up: cst.CSTNode, table: dict):
    """What a use of a list's name does to it: ``_BOUND`` for the target of a plain assignment
    (``layers = [...]``); the expressions it adds (``layers.append(m)``: ``[m]``;
    ``layers.extend([a, b])``, ``layers += [a, b]``: their elements); ``[]`` for a read that
    changes nothing (``len(layers)``, an argument of a container's construction, which copies
    it: ``nn.ModuleList(layers)``); ``None`` for any other use."""
    if type(up) is cst.AssignTarget and up.target is node and len(table[up].targets) == 1:
        return _BOUND
    if type(up) is cst.AugAssign and up.target is node and type(up.operator) is cst.AddAssign:
        return _list_items(up.value)
    if type(up) is cst.Arg and up.star != "**" and up.keyword is None:
        call = table.get(up)
        if type(call) is cst.Call and dotted_name(call.func) == "len" and not up.star and len(call.args) == 1:
            return []
        if type(call) is cst.Call and class_of_name(index, dotted_name(call.func)) in CONTAINERS:
            return []
        return None
    if type(up) is cst.Attribute and up.value is node and up.attr.value in _LIST_ADDS:
        call = table.get(up)
        if type(call) is not cst.Call or call.func is not up or any(a.star or a.keyword for a in call.args):
            return None
        positional = _LIST_ADDS[up.attr.value]
        if not positional:
            return _list_items(call.args[0].value) if len(call.args) == 1 else None
        return [call.args[positional[0]].value] if len(call.args) == positional[0] + 1 else None
    return None


def _modules_mode_dependent(unit, call: cst.Call, values: list) -> bool:
    """Whether one of the modules that the expressions ``values``, arguments of ``call``, build
    may compute differently in train and eval mode: an expression that is no call (a module
    built elsewhere, of a class the engine does not read here) may; a call builds the layers of
    the calls in it (``Net().cuda()``: ``Net()``), read as ``__init__``'s are."""
    index = unit.module_of(call)
    scope = run_constants(unit, call)
    for value in values:
        if not isinstance(value, cst.Call):
            return True
        for node in walk(value):
            if isinstance(node, cst.Call) and _layer_call_dependent(index, node, 0, frozenset(), scope=scope):
                return True
    return False


def _class_mode_dependent(cls, depth: int, seen: frozenset, call: cst.Call | None = None,
                          scope: dict | None = None, where: ModuleIndex | None = None) -> bool:
    """Whether instances of ``cls`` may compute differently in train and eval mode; ``call``:
    the construction, when known (its arguments decide an entry's ``mode_args`` and
    ``modes_none_if_zero``, and the parameters of a project class's ``__init__``); ``scope``:
    the values known for the names of the code that holds ``call`` (see :func:`_init_constants`);
    ``where``: the module of that code (a class or ``functools.partial`` it passes as an
    argument, ``norm_layer=nn.InstanceNorm2d``, is read there, :func:`_maker_value`)."""
    kb = knowledge()
    scope = scope or {}
    if isinstance(cls, str):
        entry = kb.cls(cls)
        if entry is not None and entry.modes == "none":
            return bool(entry.mode_args) and (call is None or not _mode_args_inert(entry.mode_args, call, scope))
        if entry is not None and entry.modes_none_if_zero and call is not None \
                and _mode_args_zero(entry.modes_none_if_zero, call, scope) \
                and _mode_args_inert(entry.mode_args, call, scope):
            return False  # nn.Dropout(p=0.0); allennlp's Elmo(..., dropout=0) given no biLM module of its own
        return not is_criterion_class(cls)
    if depth > MAX_DEPTH or cls in seen:
        return True
    seen = seen | {cls}
    info = cls.info
    if info is None:
        return True
    # a class without its own __init__ and with one base is built by that base's __init__,
    # with this construction's arguments
    inherited = call if "__init__" not in info.methods and len(info.bases) == 1 else None
    for base in info.bases:
        ref = cls.module.class_ref(base) or cls.module.class_ref(base, qualified=True)
        if ref is not None:
            if _class_mode_dependent(ref, depth + 1, seen, inherited, scope if inherited is not None else None,
                                     where if inherited is not None else None):
                return True
        elif kb.callable(base) is None or (base != "torch.nn.Module" and _class_mode_dependent(base, depth + 1, seen)):
            return True
    # the layers __init__ builds first: a Dropout there answers without reading the other
    # methods (a module outlined for its names parses only what is asked of it)
    found = find_method(cls, "__init__")
    attrs: dict = {}
    if found is not None:
        owner, init = found
        known = _init_constants(init, call, scope, where, owner.module) if call is not None else {}
        for node in _built_nodes(init.body, known):
            if isinstance(node, cst.Call) and _layer_call_dependent(owner.module, node, depth, seen, cls, known, init):
                return True
        attrs = _self_constants(info, init, known)
    for name, func in info.methods.items():
        me = _self_name(func)
        mine = {f"{me}.{a}": v for a, v in attrs.items()} if me is not None else {}
        for node in walk(func):
            if (isinstance(node, cst.Attribute) and node.attr.value == "training"
                    and dotted_name(node.value) == me):
                if _training_argument_of_inert(func, node, cls.module, mine):
                    continue
                return True
            # a functional op (``F.dropout(x, p)``, ``F.batch_norm``) follows its own ``training``
            # argument, not the module's mode: it depends on the mode only when given
            # ``self.training``, which the test above finds (``F.dropout(x, 0.5)`` drops in eval
            # mode too: ``eval()`` changes nothing of it)
    return False


def _inert_mode_call(qualified: str, node: cst.Call, scope: dict) -> bool:
    """Whether a call of a function that may depend on the mode (``F.dropout``) computes the
    same in both modes: its entry's ``modes_none_if_zero`` arguments are each given 0 (a
    literal, or a name or ``self`` attribute ``scope`` knows holds one)."""
    summary = knowledge().callable(qualified)
    return summary is not None and bool(summary.modes_none_if_zero) \
        and _mode_args_zero(summary.modes_none_if_zero, node, scope)


def _training_argument_of_inert(func: cst.FunctionDef, attr: cst.Attribute, index: ModuleIndex, scope: dict) -> bool:
    """Whether ``self.training`` is read only as an argument of a call that is the same in
    both modes (``F.dropout(x, p=self.dropout, training=self.training)`` with ``self.dropout``
    a constant 0, :func:`_inert_mode_call`)."""
    for node in walk(func):
        if isinstance(node, cst.Call) and any(a.value is attr for a in node.args):
            d = dotted_name(node.func)
            q = index.imports.qualify(d) if d else None
            return bool(q) and any(q.endswith("." + f) or q == f for f in MODE_FUNCTIONS) \
                and _inert_mode_call(q, node, scope)
    return False


def _self_constants(info, init: cst.FunctionDef, known: dict) -> dict:
    """``attribute -> value`` for the attributes of ``self`` that ``__init__`` binds once, to a
    value :func:`_static_value` knows (``self.dropout = dropout``, with ``dropout`` fixed by the
    construction, ``known``), and that no statement of the class binds again (another
    assignment, an augmented one, one in another method)."""
    me = _self_name(init)
    if me is None:
        return {}
    values: dict = {}
    counts: dict = {}
    for func in info.methods.values():
        mine = _self_name(func)
        for node in walk(func):
            targets: list = []
            if isinstance(node, cst.Assign):
                targets = [t.target for t in node.targets]
            elif isinstance(node, (cst.AugAssign, cst.AnnAssign)):
                targets = [node.target]
            elif isinstance(node, (cst.For, cst.CompFor)):
                targets = [node.target]
            elif isinstance(node, cst.WithItem) and node.asname is not None:
                targets = [node.asname.name]
            for target in targets:
                for t in walk(target):
                    if isinstance(t, cst.Attribute) and mine is not None and dotted_name(t.value) == mine:
                        a = t.attr.value
                        counts[a] = counts.get(a, 0) + 1
                        if func is init and isinstance(node, cst.Assign) and len(node.targets) == 1 \
                                and node.targets[0].target is t:
                            values[a] = _static_value(node.value, known)
    return {a: v for a, v in values.items() if counts.get(a) == 1 and v is not NO_VALUE}


def _project_function(index: ModuleIndex, name: str, qualified: str) -> tuple[ModuleIndex, cst.FunctionDef] | None:
    """``(module, def)`` of the project function a call's name refers to: one of ``index``'s
    module, or one it imports from another module of the project."""
    if name in index.functions:
        return index, index.functions[name]
    project = getattr(index, "project", None)
    if qualified == name or project is None:
        return None
    member = project.lookup(qualified, index.path)
    if member is None or member.function is None or member.cls or member.info.index is None:
        return None
    return member.info.index, member.function


def _factory_mode_dependent(index: ModuleIndex, func: cst.FunctionDef, depth: int, seen: frozenset,
                            call: cst.Call | None = None, scope: dict | None = None,
                            where: ModuleIndex | None = None, implicit: int = 0) -> bool:
    """Whether a function of the project that ``__init__`` calls (a layer factory, ``def
    WNConv1d(*a, **k): return weight_norm(nn.Conv1d(*a, **k))``, or a method of the class,
    ``UNet._block(...)``, ``self._make_layer(...)``) may build a layer that depends on the mode:
    its calls are read as ``__init__``'s are (a module it is given, ``layer_init(self, m)``, was
    built by its caller, which is read), with the values ``call`` (the call of it, in module
    ``where``, whose names ``scope`` knows; ``implicit``: the leading parameters it does not
    fill, ``self``) gives its parameters (:func:`_init_constants`): ``if use_dropout:`` with
    ``use_dropout`` given ``False`` builds no Dropout, ``norm_layer(dim)`` with ``norm_layer``
    given ``nn.InstanceNorm2d`` builds that class. Read too deep, it may."""
    if depth > MAX_DEPTH or func in seen:
        return True
    seen = seen | {func}
    known = _init_constants(func, call, scope or {}, where, index, implicit) if call is not None else {}
    for node in _built_nodes(func.body, known, prune=True):
        if isinstance(node, cst.Call) and _layer_call_dependent(index, node, depth + 1, seen, scope=known, holder=func):
            return True
    return False


def _implicit_params(func: cst.FunctionDef, through_instance: bool) -> int:
    """How many leading parameters of a method a call of it does not fill: ``self`` of a call
    through an instance (``self._block(...)``), ``cls`` of a classmethod; none of a
    staticmethod or of a plain function called through its class (``UNet._block(...)``)."""
    decorators = {dotted_name(d.decorator) for d in func.decorators}
    if "staticmethod" in decorators:
        return 0
    return 1 if through_instance or "classmethod" in decorators else 0


@dataclass(frozen=True, eq=False)
class _LayerMaker:
    """A callable that builds a layer, held as a value (``norm_layer=nn.InstanceNorm2d``,
    ``functools.partial(nn.InstanceNorm2d, affine=True)``): ``func``, the expression naming it
    in module ``index`` (a class, or a function of the project or of a library), and the
    arguments a ``functools.partial`` fixes (:func:`_frozen_args`: their values in ``values``)."""
    index: ModuleIndex
    func: cst.BaseExpression
    args: tuple = ()
    values: dict | None = None


_MAKER_DEPTH = 8  # names and partials followed to a layer maker, at most
_PLACEHOLDERS = iter(range(1 << 62))


def _argument_value(expr: cst.BaseExpression, scope: dict, index: ModuleIndex | None):
    """The value of an argument (or a default) for :func:`_init_constants`: its
    :func:`_static_value`, else the layer maker it names in module ``index``
    (:func:`_maker_value`); ``NO_VALUE`` when neither is known."""
    value = _static_value(expr, scope)
    if value is NO_VALUE and index is not None:
        value = _maker_value(index, expr, scope)
    return value


def _maker_value(index: ModuleIndex, expr: cst.BaseExpression, scope: dict, depth: int = 0):
    """The :class:`_LayerMaker` an expression of module ``index`` holds: a name ``scope`` maps
    to one (a parameter given one); a dotted name of a class (of the project or with an
    entry), of a function of the project or of a library function the knowledge has; a name
    that the code holding ``expr`` binds once to such an expression (:func:`_bound_once`);
    ``functools.partial(maker, ...)``,
    which adds its arguments to the maker's. ``NO_VALUE`` for anything else (a call of a
    function returning a class, a conditional expression)."""
    if depth > _MAKER_DEPTH:
        return NO_VALUE
    if type(expr) is cst.Name and expr.value in scope:
        value = scope[expr.value]
        return value if isinstance(value, _LayerMaker) else NO_VALUE
    if type(expr) is cst.Call:
        d = dotted_name(expr.func)
        args = expr.args
        if d is None or index.imports.qualify(d) != "functools.partial" or not args or args[0].star \
                or args[0].keyword is not None:
            return NO_VALUE
        inner = _maker_value(index, args[0].value, scope, depth + 1)
        if inner is NO_VALUE:
            return NO_VALUE
        frozen, values = _frozen_args(index, args[1:], scope)
        return _LayerMaker(inner.index, inner.func, _merged_args(inner.args, frozen), {**(inner.values or {}), **values})
    d = dotted_name(expr)
    if d is None:
        return NO_VALUE
    head = d.partition(".")[0]
    if head in BUILTINS and head not in index.globals and head not in index.imports.aliases:
        return NO_VALUE  # int, print: no layer
    q = index.imports.qualify(d)
    if class_of_name(index, d) is not None or _project_function(index, d, q) is not None \
            or (q != d and knowledge().callable(q) is not None):
        return _LayerMaker(index, expr)
    if type(expr) is not cst.Name:
        return NO_VALUE
    holder = parents(index).get(expr)
    while holder is not None and not isinstance(holder, (cst.FunctionDef, cst.Module)):
        holder = parents(index).get(holder)
    bound = _bound_once(index, holder, d) if holder is not None else None
    return _maker_value(index, bound, {}, depth + 1) if bound is not None else NO_VALUE


def _bound_once(index: ModuleIndex, holder: cst.CSTNode, name: str) -> cst.BaseExpression | None:
    """The value of ``name`` where ``holder`` (a function or the module of ``index``) reads
    it, when one plain ``name = value`` at the top level of its code is the name's only binding
    there (:func:`~loopcheck.engine.builder.single_bindings`), or, for a function that neither
    binds it nor takes it as a parameter and is no closure, at the top level of its module.
    ``None`` otherwise (a parameter, a second binding, one under an ``if`` or in a loop)."""
    def bindings(scope) -> dict:
        key = ("bound_once", id(scope))
        if key not in index.cache:
            body = scope.body
            statements = body.body if type(body) is cst.IndentedBlock else [body] if type(scope) is cst.FunctionDef else body
            index.cache[key] = single_bindings(statements)
        return index.cache[key]

    if type(holder) is cst.FunctionDef:
        if name in all_param_names(holder):
            return None
        found = bindings(holder)
        if name in found:
            return found[name]
        if name in bound_names(holder.body)[0]:
            return None  # bound in a nested statement
        up = parents(index).get(holder)
        while up is not None and type(up) is not cst.FunctionDef:
            up = parents(index).get(up)
        if up is not None:
            return None  # a closure's name: the enclosing function may bind it
        holder = getattr(index, "tree", None)
    if type(holder) is not cst.Module:
        return None
    return bindings(holder).get(name)


def _frozen_args(index: ModuleIndex, args, scope: dict) -> tuple[tuple, dict]:
    """The arguments ``args`` (of a call in module ``index``, whose names ``scope`` knows) with
    each value replaced by a fresh name, and the values those names hold: the argument's
    :func:`_static_value` or layer maker (:func:`_maker_value`); a name whose value is not known
    holds nothing. The arguments then read the same in any module."""
    out: list = []
    values: dict = {}
    for arg in args:
        name = f"__arg{next(_PLACEHOLDERS)}__"
        if not arg.star:
            value = _argument_value(arg.value, scope, index)
            if value is not NO_VALUE:
                values[name] = value
        out.append(arg.with_changes(value=cst.Name(name)))
    return tuple(out), values


def _merged_args(first: tuple, second: tuple) -> list:
    """The arguments of ``f(*second)`` when ``f`` is ``functools.partial(g, *first)``: the
    positional ones of ``first``, then of ``second``; the keywords of ``first`` that ``second``
    does not give again, then those of ``second``."""
    def positional(a):
        return a.keyword is None and a.star != "**"
    given = {a.keyword.value for a in second if a.keyword is not None}
    return [*(a for a in first if positional(a)), *(a for a in second if positional(a)),
            *(a for a in first if not positional(a) and (a.keyword is None or a.keyword.value not in given)),
            *(a for a in second if not positional(a))]


def _called_maker(index: ModuleIndex, name: str, scope: dict, holder: cst.FunctionDef | None):
    """What a call of the plain name ``name`` in ``holder`` (the ``__init__`` or factory being
    read, in module ``index``) builds by: the layer maker ``scope`` gives the parameter, or that
    a local bound once holds (``norm = functools.partial(nn.InstanceNorm2d, affine=True)``);
    ``True`` for a parameter whose value is not known (a layer the engine cannot see); ``None``
    for any other name (read as before: a class or function it names)."""
    value = scope.get(name, NO_VALUE)
    if isinstance(value, _LayerMaker):
        return value
    if holder is None or value is not NO_VALUE:
        return None
    if name in all_param_names(holder):
        return True
    if name in BUILTINS and name not in index.globals and name not in bound_names(holder.body)[0]:
        return None  # super(), range(...)
    bound = _bound_once(index, holder, name)
    if type(bound) is not cst.Call:
        return None
    maker = _maker_value(index, bound, scope)
    return maker if isinstance(maker, _LayerMaker) else None


def _maker_call_dependent(index: ModuleIndex, maker: _LayerMaker, node: cst.Call, depth: int,
                          seen: frozenset, scope: dict) -> bool:
    """Whether the call ``node`` (in module ``index``, whose names ``scope`` knows) of a layer
    maker builds a layer that depends on the mode: the call of what the maker names, given the
    maker's arguments and then the call's (``norm_layer(dim)`` with ``norm_layer =
    functools.partial(nn.InstanceNorm2d, track_running_stats=True)`` builds
    ``nn.InstanceNorm2d(dim, track_running_stats=True)``), read in the maker's module."""
    args, values = _frozen_args(index, node.args, scope)
    call = cst.Call(func=maker.func, args=_merged_args(maker.args, args))
    return _layer_call_dependent(maker.index, call, depth, seen, scope={**(maker.values or {}), **values})


def _given_arg(ref, call: cst.Call) -> "cst.BaseExpression | None | bool":
    """The expression a construction gives the argument ``ref`` names (a knowledge reference:
    ``4``, ``"dropout"``, ``[4, "dropout"]``); ``None`` when it leaves it out; ``True`` when
    ``*args`` or ``**kwargs`` may pass it."""
    positional = [a for a in call.args if a.keyword is None and not a.star]
    starred = any(a.star for a in call.args)
    index, keyword = ref if isinstance(ref, tuple) else (ref, None) if isinstance(ref, int) else (None, ref)
    given = next((a.value for a in call.args if keyword is not None and a.keyword is not None
                  and a.keyword.value == keyword), None)
    if given is None and index is not None and index < len(positional) and not starred:
        given = positional[index].value
    return True if given is None and starred else given


def _mode_args_inert(refs, call: cst.Call, scope: dict | None = None) -> bool:
    """Whether a construction leaves each argument ``refs`` names out, or gives it 0
    (:func:`_zero`: ``0``, ``0.0``, ``None``, ``False``, or a name ``scope`` knows holds one):
    no dropout, no normalization. An argument that ``*args`` or ``**kwargs`` may pass is not
    known to be left out."""
    for ref in refs:
        given = _given_arg(ref, call)
        if given is True or (given is not None and not _zero(given, scope)):
            return False
    return True


def _mode_args_zero(refs, call: cst.Call, scope: dict | None = None) -> bool:
    """Whether a construction gives each argument ``refs`` names the value 0 (:func:`_zero`);
    one left out keeps its default, which is not 0 (``modes_none_if_zero``)."""
    for ref in refs:
        given = _given_arg(ref, call)
        if given is None or given is True or not _zero(given, scope):
            return False
    return True


def _zero(node: cst.BaseExpression, scope: dict | None = None) -> bool:
    """``0``, ``0.``, ``0.0``, ``None``, ``False``, or a name (or dotted name) ``scope`` says
    holds one of them."""
    value = _static_value(node, scope or {})
    return value is None or (type(value) in (int, float, bool) and value == 0)


def _static_value(node: cst.BaseExpression, scope: dict):
    """The value of an expression the code alone fixes: a number, a string, ``True``,
    ``False``, ``None``, a sign applied to a number, or a name or dotted name (``args.dropout``,
    ``self.p``) ``scope`` maps to a value; ``NO_VALUE`` otherwise."""
    t = type(node)
    if t in (cst.Integer, cst.Float, cst.SimpleString):
        try:
            return node.evaluated_value
        except Exception:  # noqa: BLE001 - an odd literal
            return NO_VALUE
    if t is cst.Name:
        if node.value in ("True", "False", "None"):
            return {"True": True, "False": False, "None": None}[node.value]
        return scope.get(node.value, NO_VALUE)
    if t is cst.Attribute:
        d = dotted_name(node)
        return scope.get(d, NO_VALUE) if d is not None else NO_VALUE
    if t is cst.UnaryOperation and type(node.operator) in (cst.Minus, cst.Plus):
        inner = _static_value(node.expression, scope)
        if type(inner) in (int, float):
            return -inner if type(node.operator) is cst.Minus else inner
    return NO_VALUE


_ORDER = {
    cst.LessThan: lambda a, b: a < b, cst.LessThanEqual: lambda a, b: a <= b,
    cst.GreaterThan: lambda a, b: a > b, cst.GreaterThanEqual: lambda a, b: a >= b,
    cst.Equal: lambda a, b: a == b, cst.NotEqual: lambda a, b: a != b,
    cst.Is: lambda a, b: a is b, cst.IsNot: lambda a, b: a is not b,
}


def _static_truth(test: cst.BaseExpression, scope: dict) -> bool | None:
    """Whether a test is true on every run, false on every run, or ``None`` when its values
    are not fixed: ``not``, ``and``/``or`` (a false operand of ``and``, a true one of ``or``,
    decides alone), comparisons (``<``, ``==``, ``is``...) and the truth of
    :func:`_static_value` values."""
    t = type(test)
    if t is cst.UnaryOperation and type(test.operator) is cst.Not:
        inner = _static_truth(test.expression, scope)
        return None if inner is None else not inner
    if t is cst.BooleanOperation:
        left, right = _static_truth(test.left, scope), _static_truth(test.right, scope)
        decisive = type(test.operator) is cst.Or  # True decides "or", False decides "and"
        if left is decisive or right is decisive:
            return decisive
        return None if left is None or right is None else not decisive
    if t is cst.Comparison:
        left = _static_value(test.left, scope)
        for comp in test.comparisons:
            right = _static_value(comp.comparator, scope)
            compare = _ORDER.get(type(comp.operator))
            if left is NO_VALUE or right is NO_VALUE or compare is None:
                return None
            try:
                if not compare(left, right):
                    return False
            except TypeError:  # None > 0: raises when run
                return None
            left = right
        return True
    value = _static_value(test, scope)
    return None if value is NO_VALUE else bool(value)


def _init_constants(init: cst.FunctionDef, call: cst.Call, scope: dict, where: ModuleIndex | None = None,
                    home: ModuleIndex | None = None, implicit: int = 1) -> dict:
    """``parameter -> value`` for the parameters of ``__init__`` (or of another function
    ``init``, whose first ``implicit`` parameters the call does not fill: ``self``) that its
    construction ``call`` fixes and ``__init__`` never re-binds: given an argument
    :func:`_static_value` knows (evaluated in ``scope``, the code of ``call``), or left out with
    a literal default; or a layer maker (:func:`_maker_value`: a class, ``functools.partial``
    of one) that the argument names in ``where``, the module of ``call``, or the default left
    out names in ``home``, the module of ``init``. A parameter ``*args`` or ``**kwargs`` of the
    call may fill is not known."""
    p = init.params
    named = [*p.posonly_params, *p.params][implicit:]
    positional = [a for a in call.args if a.keyword is None and not a.star]
    starred = any(a.star == "*" for a in call.args)
    spread = any(a.star == "**" for a in call.args)
    keywords = {a.keyword.value: a.value for a in call.args if a.keyword is not None}
    by_keyword = {x.name.value for x in (*p.params, *p.kwonly_params)}
    out: dict = {}
    for i, param in enumerate((*named, *p.kwonly_params)):
        name = param.name.value
        if name in keywords and name in by_keyword:
            value = _argument_value(keywords[name], scope, where)
        elif i < len(named) and (starred or i < len(positional)):
            value = NO_VALUE if starred else _argument_value(positional[i].value, scope, where)
        elif spread or param.default is None:
            value = NO_VALUE
        else:
            value = _argument_value(param.default, {}, home)
        if value is not NO_VALUE:
            out[name] = value
    for name in _rebound(init):
        out.pop(name, None)
    return out


def _rebound(func: cst.FunctionDef) -> set[str]:
    """The names the body of ``func`` binds or declares (assignments, loops, ``with ... as``,
    ``global``), also in comprehensions, ``:=``, ``del`` and imports: a parameter among them
    does not keep the value it was given."""
    names, declared = bound_names(func.body)
    out = names | declared
    for node in walk(func.body):
        t = type(node)
        if t is cst.CompFor or t is cst.NamedExpr or t is cst.Del:
            out |= names_in(node.target)
        elif t is cst.ImportAlias:
            out.add(dotted_name(node.asname.name) if node.asname is not None else dotted_name(node.name).partition(".")[0])
    return out


def _built_nodes(body: cst.CSTNode, scope: dict, prune: bool = False) -> Iterator[cst.CSTNode]:
    """The nodes of ``body`` (pre-order, as :func:`~loopcheck.engine.walk.walk`) that run for
    the values ``scope`` knows: the arm of an ``if`` or of a conditional expression its test
    rules out (:func:`_static_truth`) is left out. Inside a nested function or class the names
    are their own: it is walked whole, or, with ``prune``, left out."""
    nested = (cst.FunctionDef, cst.ClassDef)
    if not scope:
        yield from walk(body, prune=nested if prune else ())
        return
    stack = [body]
    while stack:
        n = stack.pop()
        t = type(n)
        if prune and t in nested and n is not body:
            continue
        yield n
        if t in (cst.FunctionDef, cst.ClassDef, cst.Lambda):
            kids = [w for c in children(n) for w in walk(c)]  # yielded as they are, undecided
            for w in kids:
                yield w
            continue
        if t is cst.If or t is cst.IfExp:
            truth = _static_truth(n.test, scope)
            kids = [n.test]
            if truth is not False:
                kids.append(n.body)
            if truth is not True and n.orelse is not None:
                kids.append(n.orelse)
        else:
            kids = children(n)
        stack.extend(reversed(kids))


def _layer_call_dependent(index: ModuleIndex, node: cst.Call, depth: int, seen: frozenset, cls=None,
                          scope: dict | None = None, holder: cst.FunctionDef | None = None) -> bool:
    """Whether a call in ``__init__`` builds a layer that depends on the mode (or may); ``cls``:
    the class whose ``__init__`` it is (``self._make_layer(...)``, ``UNet._block(...)``: a
    method of the class that builds layers is read as a factory); ``scope``: the values known
    for ``__init__``'s parameters (:func:`_init_constants`), for the call's arguments;
    ``holder``: the function being read (``__init__``, a factory), whose parameter called
    (``norm_layer(dim)``) builds by the layer maker it is given (:func:`_called_maker`)."""
    scope = scope or {}
    if type(node.func) is cst.Name:
        maker = _called_maker(index, node.func.value, scope, holder)
        if maker is not None:
            return maker is True or _maker_call_dependent(index, maker, node, depth, seen, scope)
    d = dotted_name(node.func)
    if d is None:
        return False  # super().__init__(), a method of a computed value
    head, _, attr = d.partition(".")
    if attr and "." not in attr and (head == "self" and cls is not None or head in index.classes):
        found = find_method(cls if head == "self" else ClassRef(index, head), attr)
        if found is not None:
            return _factory_mode_dependent(found[0].module, found[1], depth, seen, node, scope, index,
                                           _implicit_params(found[1], head == "self"))
    if head == "self" or head in BUILTINS and head not in index.globals and head not in index.imports.aliases:
        return False  # self.register_buffer(...), int(...), range(...)
    cls = class_of_name(index, d)
    if cls is None:
        q = index.imports.qualify(d)
        if q != d and q.partition(".")[0] in knowledge().no_module_packages:
            return False  # np.prod(ratios): no layer
        if q != d and knowledge().callable(q) is not None:
            summary = knowledge().callable(q)
            return summary.returns is not None and summary.returns.role == "model"  # timm.create_model(...)
        factory = _project_function(index, d, q)
        if factory is not None:
            return _factory_mode_dependent(*factory, depth, seen, node, scope, index)
        if d in index.functions or q != d:
            return True  # a factory: unknown layers
        return False
    if isinstance(cls, str):
        if cls in CONTAINERS:
            return False  # its elements are calls of their own
        wrapped = wrapped_module(cls, node)
        if wrapped is not None:
            # nn.DataParallel(Net()): the module it wraps, a call of its own; one built elsewhere may
            return not isinstance(wrapped, cst.Call)
        if not is_module_class(cls) and knowledge().cls(cls) is not None and not (
                cls.startswith("torch.nn.") and cls.rpartition(".")[2][:1].isupper()):
            return False  # a library class that is no layer
        return _class_mode_dependent(cls, depth + 1, seen, node, scope, index)  # nn.Dropout: a layer without bases
    if not is_module_class(cls):
        return False  # a configuration object of the project
    return _class_mode_dependent(cls, depth + 1, seen, node, scope, index)


# -- what values a model or an expression holds --------------------------------------------


def output_kind(unit, model: str) -> str | None:
    """What ``model(x)`` returns (``"logits"``, ``"probabilities"``, ``"log_probabilities"``),
    when every class the model is built from says the same; ``None`` when unknown."""
    key = ("values", "output", model)
    if key in unit._flows:
        return unit._flows[key]
    kinds = set()
    for ev in unit.of_kind("model_build"):
        if ev.subject == model and isinstance(ev.raw, Call):
            kinds.add(_constructed_output(unit, ev.raw))
    if not kinds:
        t = unit.roles.types.get(model)
        kinds.add(_class_output(t, None, 0) if t else None)
    out = kinds.pop() if len(kinds) == 1 else None
    unit._flows[key] = out
    return out


def _constructed_output(unit, c: Call) -> str | None:
    """The output kind of the module a construction call builds (through ``.to(device)`` and
    the other methods called on the new module)."""
    while c.inner is not None:
        c = c.inner
    cls = class_of_call(unit, c)
    if cls is None:
        return None
    return _class_output(cls, c.node, 0, unit.module_of(c.node))


def _class_output(cls, node: cst.Call | None, depth: int, index: ModuleIndex | None = None) -> str | None:
    if depth > MAX_DEPTH or cls is None:
        return None
    kb = knowledge()
    if isinstance(cls, str):
        if cls == SEQUENTIAL:
            if node is None or index is None:
                return None
            positional = [a for a in node.args if a.keyword is None and not a.star]
            if not positional or len(positional) != len(node.args) or not isinstance(positional[-1].value, cst.Call):
                return None
            return _call_output(positional[-1].value, _Scope(index, None, {}), depth + 1)
        summary = kb.method(cls, "__call__")
        return summary.returns.value if summary is not None and summary.returns is not None and summary.returns.value in KINDS else None
    found = find_method(cls, "forward")
    if found is None:
        return None
    owner, forward = found
    return _returns_kind(forward, _Scope(owner.module, cls, {}), depth + 1)


def _returns_kind(func: cst.FunctionDef, scope: _Scope, depth: int) -> str | None:
    """The kind of value a function returns: its body must end with its only ``return``."""
    body = func.body.body if isinstance(func.body, cst.IndentedBlock) else ()
    returns = [s for s in walk(func.body) if isinstance(s, cst.Return)]
    if len(returns) != 1 or not body:
        return None
    last_stmt = body[-1]
    if not (isinstance(last_stmt, cst.SimpleStatementLine) and last_stmt.body and last_stmt.body[-1] is returns[0]):
        return None
    env: dict[str, cst.BaseExpression | None] = {}
    for stmt in body:
        if isinstance(stmt, cst.SimpleStatementLine):
            for small in stmt.body:
                if isinstance(small, cst.Assign) and len(small.targets) == 1 and isinstance(small.targets[0].target, cst.Name):
                    env[small.targets[0].target.value] = small.value
                elif isinstance(small, (cst.Assign, cst.AugAssign, cst.AnnAssign)):
                    for n in walk(small):
                        if isinstance(n, cst.Name):
                            env.setdefault(n.value, None)
        else:
            for n in walk(stmt):  # names bound inside compound statements: unknown
                if isinstance(n, (cst.AssignTarget, cst.AugAssign)):
                    for x in walk(n.target):
                        if isinstance(x, cst.Name):
                            env[x.value] = None
    value = returns[0].value
    if value is None:
        return None
    return _expr_kind(value, _Scope(scope.index, scope.cls, env), depth)


def _expr_kind(expr: cst.BaseExpression, scope: _Scope, depth: int, seen: frozenset = frozenset()) -> str | None:
    if depth > MAX_DEPTH * 2:
        return None
    if isinstance(expr, cst.Name):
        if expr.value in seen or expr.value not in scope.env:
            return None
        value = scope.env[expr.value]
        return _expr_kind(value, scope, depth + 1, seen | {expr.value}) if value is not None else None
    if isinstance(expr, cst.Call):
        return _call_output(expr, scope, depth)
    return None


def _call_output(node: cst.Call, scope: _Scope, depth: int) -> str | None:
    kb = knowledge()
    func = node.func
    d = dotted_name(func)
    if isinstance(func, cst.Attribute) and (d is None or d.partition(".")[0] in scope.env):
        # a method of a value: logits.softmax(-1), x.squeeze(1)
        summary = kb.method("torch.Tensor", func.attr.value)
        if summary is None or summary.returns is None:
            return None
        if summary.returns.value in KINDS:
            return summary.returns.value
        if "self" in summary.returns.same:
            return _expr_kind(func.value, scope, depth + 1)
        return None
    if d is None:
        return None
    if scope.cls is not None and d.startswith("self.") and d.count(".") == 1:
        attr = d.split(".", 1)[1]
        assigned = init_assignments(scope.cls).get(attr)
        if assigned is None or not isinstance(assigned[0], cst.Call):
            return None
        value, index = assigned
        cls = class_of_name(index, dotted_name(value.func))
        return _class_output(cls, value, depth + 1, index)
    cls = class_of_name(scope.index, d)
    if cls is not None:
        return _class_output(cls, node, depth + 1, scope.index)
    q = scope.index.imports.qualify(d)
    summary = kb.callable(q) if q != d or "." in d else None
    if summary is not None and summary.returns is not None and summary.returns.value in KINDS:
        return summary.returns.value
    return None


def value_kind(unit, node: cst.BaseExpression, sym: str | None, near=None) -> str | None:
    """The kind of values (``"logits"``, ``"probabilities"``, ``"log_probabilities"``) an
    argument expression holds in the unit: a call's result, or what every definition of the
    name gives it; ``None`` when unknown or when the definitions disagree. ``near``: the event
    the expression belongs to (which inlined call it is evaluated in)."""
    found = value_origin(unit, node, sym, near)
    return found[0] if found else None


def value_origin(unit, node: cst.BaseExpression, sym: str | None, near=None,
                 _depth: int = 0) -> tuple[str, cst.Call] | None:
    """:func:`value_kind` with the call that made the values so (``F.softmax(...)``, or
    ``model(x)`` for a model whose output they are)."""
    if _depth > MAX_DEPTH:
        return None
    if isinstance(node, cst.Call):
        return call_origin(unit, raw_call(unit, node, near), _depth)
    if sym is None:
        return None
    defs = definitions(unit).get(sym)
    if not defs:
        return None
    reach = reaching_definitions(unit, sym, near) if near is not None else None
    if reach is not None:
        # only the definitions a path brings to ``near``: an assignment in the other arm of an
        # ``if`` is not what that arm reads. A value from before the unit (a parameter of the
        # entry) counts as none, as it did among all definitions; a loop target, or a call's
        # result unpacked into several names, is not followed.
        defs = [d if isinstance(d, Assign) or isinstance(d, Call) and len(d.targets) == 1 else None
                for d in _in_order(unit, reach - {OUTSIDE})]
        if not defs:
            return None
    found = []
    for d in defs:
        if isinstance(d, Assign) and d.op == "=":
            found.append(value_origin(unit, d.value, d.value_sym, d, _depth + 1))
        elif isinstance(d, Call):
            found.append(call_origin(unit, d, _depth))
        else:
            return None
        if found[-1] is None or found[-1][0] != found[0][0]:
            return None
    return found[0] if found else None


#: ``returns.value`` of a GradScaler method whose result is its current loss scale (``get_scale``)
LOSS_SCALE = "loss_scale"


def loss_scale_factor(unit, arg: Arg | None, near) -> str | None:
    """The GradScaler whose current loss scale (``scaler.get_scale()``: the knowledge's
    ``returns.value = "loss_scale"``) the argument ``arg`` of the raw event ``near`` is a
    product with (``max_norm * scaler.get_scale()``; through names every definition reaching
    ``near`` gives such a value: ``scale = scaler.get_scale()``, a parameter given it), else
    ``None``. A threshold so multiplied is in the units of the gradients that scaler scaled."""
    if arg is None:
        return None
    return _scale_factor(unit, arg.node, arg.sym, arg.mentions, near, 0)


def _scale_factor(unit, node, sym: str | None, mentions: frozenset, near, depth: int) -> str | None:
    if depth > MAX_DEPTH:
        return None
    if sym is not None:
        return _scale_of_name(unit, sym, near, depth)
    t = type(node)
    if t is cst.Call:
        return _scale_call(unit, raw_call(unit, node, near))
    if t is cst.BinaryOperation and type(node.operator) is cst.Multiply:
        for side in (node.left, node.right):
            found = _scale_factor(unit, side, _mention_of(mentions, side), mentions, near, depth + 1)
            if found is not None:
                return found
    return None


def _mention_of(mentions: frozenset, node) -> str | None:
    """The symbol among ``mentions`` (an argument's, resolved by the builder) that the plain
    name or attribute chain ``node`` names, when exactly one does: ``f3_2:scale`` for
    ``scale``, ``self@Trainer.scale`` for ``self.scale``."""
    dotted = dotted_name(node) if type(node) in (cst.Name, cst.Attribute) else None
    if dotted is None:
        return None
    head, _, rest = dotted.partition(".")
    found = [
        m for m in mentions
        if m.rpartition(":")[2] == dotted
        or head == "self" and rest and m.startswith("self@") and m.partition(".")[2] == rest
    ]
    return found[0] if len(found) == 1 else None


def _scale_of_name(unit, sym: str, near, depth: int) -> str | None:
    """The GradScaler whose loss scale every definition of ``sym`` reaching ``near`` is a
    product with; ``None`` when one is not (or a value from before the unit reaches it)."""
    reach = reaching_definitions(unit, sym, near)
    if not reach or OUTSIDE in reach:
        return None
    found = set()
    for d in reach:
        if isinstance(d, Assign) and d.op == "=":
            found.add(_scale_factor(unit, d.value, d.value_sym, d.mentions, d, depth + 1))
        elif isinstance(d, Call) and len(d.targets) == 1:
            found.add(_scale_call(unit, d))
        else:
            return None
    return found.pop() if len(found) == 1 else None


def _scale_call(unit, c: Call | None) -> str | None:
    """The GradScaler a call asks for its loss scale (``scaler.get_scale()``), else ``None``."""
    if c is None or c.inner is not None or c.receiver is None:
        return None
    scaler = unit.roles.canon(c.receiver)
    if scaler not in unit.roles.scalers:
        return None
    cls = unit.roles.types.get(scaler) or "torch.amp.GradScaler"
    summary = knowledge().method(cls, c.method or "")
    if summary is None or summary.returns is None or summary.returns.value != LOSS_SCALE:
        return None
    return scaler


def _in_order(unit, raws) -> list:
    """The raw events ``raws`` in the unit's program order."""
    order = _cached(unit, ("values", "order"), lambda: {id(r): i for i, r in enumerate(walk_events(unit.ir))})
    return sorted(raws, key=lambda r: order.get(id(r), -1))


def call_kind(unit, c: Call | None) -> str | None:
    """The kind of values a call returns (see :func:`call_origin`)."""
    found = call_origin(unit, c)
    return found[0] if found else None


def call_origin(unit, c: Call | None, depth: int = 0) -> tuple[str, cst.Call] | None:
    """The kind of values a call returns, and the call that decides it: a library function's
    entry (``torch.softmax``), a tensor method of a value (``logits.softmax(1)``; through
    ``out.squeeze(1)`` to ``out``'s own), or a model's output (``model(x)``)."""
    if c is None or depth > MAX_DEPTH:
        return None
    kb = knowledge()
    roles = unit.roles
    if c.qualified:
        summary = kb.callable(c.func)
        if summary is not None and summary.returns is not None and summary.returns.value in KINDS:
            return summary.returns.value, c.node
        return None
    if c.inlined:
        return None
    if c.func and c.inner is None and not c.operands and roles.canon(c.func) in roles.models:
        kind = output_kind(unit, roles.canon(c.func))
        return (kind, c.node) if kind else None
    summary = kb.method("torch.Tensor", c.method or "")
    if summary is None or summary.returns is None:
        return None
    if summary.returns.value in KINDS:
        return summary.returns.value, c.node
    if "self" not in summary.returns.same:
        return None
    if c.inner is not None:
        return call_origin(unit, c.inner, depth + 1)
    if c.receiver is not None and roles.role(roles.canon(c.receiver)) is None:
        return value_origin(unit, cst.Name("_"), c.receiver, c, depth + 1)
    return None


# -- with blocks ------------------------------------------------------------------------------


def parents(index: ModuleIndex) -> dict:
    """``node → parent`` for the syntax nodes of one module's tree (computed once per module,
    kept with its index); for an imported module read statement by statement
    (:class:`~loopcheck.engine.outline.LazyModuleIndex`), of the statements parsed so far, each
    under its own ``Module``."""
    fragments = getattr(index, "fragments", None)
    if fragments is None:
        tree = getattr(index, "tree", None)
        trees = [tree] if tree is not None else []
    else:
        trees = [module for module, _offset in fragments]
    table = index.cache.get("parents")
    if table is None:
        table = index.cache["parents"] = {}
    done = index.cache.get("parents_of", 0)
    for tree in trees[done:]:
        stack = [tree]
        while stack:
            n = stack.pop()
            for ch in children(n):  # syntax nodes only: whitespace is never looked up
                table[ch] = n
                stack.append(ch)
    index.cache["parents_of"] = len(trees)
    return table


def with_items(unit, node: cst.CSTNode) -> list[cst.WithItem]:
    """The ``with`` items around ``node`` inside its function, innermost first."""
    table = parents(unit.module_of(node))
    out = []
    cur = table.get(node)
    while cur is not None and not isinstance(cur, (cst.FunctionDef, cst.ClassDef, cst.Module)):
        if isinstance(cur, cst.With):
            out.extend(reversed(cur.items))
        cur = table.get(cur)
    return out


def context_of(unit, item: cst.WithItem) -> str | None:
    """The ``context`` the knowledge gives a ``with`` item (``"accumulate"`` for
    ``accelerator.accumulate(model)``): a method of an object whose library class is known, or
    of an accelerator known by its name (as :mod:`loopcheck.engine.roles` knows one)."""
    call = item.item
    if not isinstance(call, cst.Call) or not isinstance(call.func, cst.Attribute):
        return None
    recv = dotted_name(call.func.value)
    if recv is None:
        return None
    roles = unit.roles
    t = next((roles.type_of(s) for s in (*roles.types, *roles.accelerators) if last(s) == last(recv)), None)
    if t is None and ACCELERATOR_NAME.search(last(recv)):
        t = ROLE_TYPES["accelerator"]
    summary = knowledge().method(t, call.func.attr.value) if t else None
    return summary.context if summary is not None else None


def inline_bodies(node: Node) -> Iterator[Inline]:
    """Every inlined call body under ``node``."""
    if isinstance(node, Inline):
        yield node
    for part in parts(node):
        yield from inline_bodies(part)


__all__ = [
    "KINDS", "LOGITS", "PROBABILITIES", "LOG_PROBABILITIES", "Seq", "all_calls", "call_kind", "class_of_call",
    "class_of_name", "raw_call",
    "classes_of", "context_of", "definitions", "discarded", "init_assignments", "is_module_class", "is_tensor",
    "loops", "mode_dependent", "output_kind", "raw_calls", "tensor_method", "value_kind", "with_items",
    "TENSOR_VALUES", "batch_tensor_items", "collate_tensor_items",
    "LOSS_SCALE", "holds_entry_argument", "loss_scale_factor",
]
