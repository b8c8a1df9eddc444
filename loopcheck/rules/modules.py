"""What the optimizer and the devices see of a model (LC503–LC505).

Knowledge (``loopcheck/knowledge/torch.toml``; measured by ``loopcheck verify``, see the pages):

* LC503: ``FullyShardedDataParallel(model)`` flattens the module's parameters into new
  ``FlatParameter`` objects and ``fully_shard(model)`` replaces them with DTensor parameters; an
  optimizer built from ``model.parameters()`` before that holds the old Parameter objects, which
  receive no gradient again ("the optimizer must be initialized after the module has been
  wrapped with FSDP", torch.distributed.fsdp docs). DDP keeps the parameters (not this rule).
* LC504: an ``nn.Module`` registers the modules and parameters assigned to its attributes;
  modules held in a plain ``list``/``tuple``/``dict`` are not registered, so ``parameters()``,
  ``to()``, ``state_dict()`` and ``train()``/``eval()`` skip them (``nn.ModuleList`` /
  ``nn.ModuleDict`` register them; seeds/pytorch-training-deep-dive.md).
* LC505: ``Tensor.to()``, ``cuda()``, ``half()``, ... return a new tensor and leave the receiver
  as it is (``nn.Module.to()`` converts in place): as a statement, its result is discarded
  (seeds/pytorch-training-deep-dive.md, "The .to(device) asymmetry").
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Iterable, NamedTuple

import libcst as cst

from loopcheck.engine.builder import find_method
from loopcheck.engine.callers import project_files

from loopcheck.engine.dataflow import Machine
from loopcheck.engine.events import Event
from loopcheck.engine.ir import Assign, Call, walk_events
from loopcheck.engine.knowledge import knowledge
from loopcheck.engine.names import dotted_name
from loopcheck.engine.roles import last
from loopcheck.engine.unit import Unit
from loopcheck.engine.values import (
    ClassRef, all_calls, class_of_call, classes_of, construction_holds_state, construction_mode_dependent, definitions,
    is_criterion_class, is_module_class, is_tensor,
    discarded, parents,
    raw_call, reaching_definitions, read_after,
    tensor_method,
)
from loopcheck.engine.walk import walk
from loopcheck.findings import Report
from loopcheck.catalog import INFOS
from loopcheck.rules.base import Rule, register


# -- LC503 ----------------------------------------------------------------------------------


class Wrap(NamedTuple):
    """``built``: the optimizer construction on this path; ``replaced``: the wrap that replaced
    the parameters of a model it was built from, after it."""

    built: Event | None
    replaced: Event | None = None


class FsdpMachine(Machine):
    """For one optimizer: was it built before a wrapper replaced its model's parameters?"""

    kinds = frozenset({"opt_build", "params_replaced", "step"})

    def __init__(self, opt: str, models: set[str]) -> None:
        self.opt, self.models = opt, models

    def initial(self) -> Wrap:
        return Wrap(None)

    def transfer(self, s: Wrap, ev: Event) -> Wrap:
        if ev.kind == "opt_build" and ev.subject == self.opt:
            return Wrap(ev)
        if ev.kind == "params_replaced" and s.built is not None and ev.subject in self.models:
            return s._replace(replaced=ev)
        return s


@register
class OptimizerBuiltBeforeFsdp(Rule):
    """LC503 optimizer-built-before-fsdp.

    Reported when: a step of optimizer ``O`` (built in the file from known models' parameters) is
    reached, on some path, after a construction of ``O`` in this unit followed by a call that
    replaces the parameters (``params_replaced``: FSDP, ``fully_shard``) of one of the models ``O``
    was built from, with no new construction of ``O`` in between (:class:`FsdpMachine`). The finding
    is on the wrap, once per wrap (see ``rules/LC503.md``)."""

    info = INFOS["LC503"]

    def check(self, unit: Unit) -> Iterable[Report]:
        if not unit.of_kind("params_replaced"):
            return
        reported = set()
        for opt, info in unit.roles.optimizers.items():
            steps = unit.of_subject(opt, "step")
            if not info.models or not steps:
                continue  # (the roles are the file's: an optimizer that steps elsewhere has no report here)
            flow = unit.flow(("fsdp", opt), lambda opt=opt, info=info: FsdpMachine(opt, set(info.models)))
            for step in steps:
                for s in flow.states(step):
                    if s.replaced is None or id(s.replaced) in reported:
                        continue
                    reported.add(id(s.replaced))
                    yield self._report(s, step)

    def _report(self, s: Wrap, step: Event) -> Report:
        wrap, built = s.replaced, s.built
        return Report(
            self.info.code, wrap.node,
            lambda d: (
                f"{d.call(wrap.node)} replaces the parameters the optimizer at line {d.line(built.node)} holds: "
                "its steps update nothing"
            ),
            [(built.node, "the optimizer, built from the parameters FSDP replaces"),
             (step.node, "the step that updates none")],
            lambda d: (
                "FSDP flattens the wrapped module's parameters into new FlatParameter objects (fully_shard "
                "replaces them with DTensor parameters); the optimizer keeps the old Parameter objects, which "
                "get no gradient, so every step leaves the model as it is (measured on CPU with gloo: 0 of 32 "
                "steps moved a parameter). Build the optimizer after wrapping: "
                "optimizer = torch.optim.AdamW(fsdp_model.parameters())."
            ),
        )


# -- LC504 ----------------------------------------------------------------------------------

#: Calls that only read a container (iterate it, count it): they do not register its modules.
READERS = frozenset({
    "enumerate", "zip", "len", "reversed", "iter", "range", "print", "list", "tuple", "sorted", "isinstance",
    "sum", "min", "max", "map", "filter", "any", "all", "repr", "str",
})
REGISTERS = frozenset({"add_module", "register_module", "register_parameter", "setattr"})
LIST_NODES = (cst.List, cst.Tuple, cst.ListComp, cst.GeneratorExp, cst.Set, cst.SetComp)
DICT_NODES = (cst.Dict, cst.DictComp)


def _elements(value: cst.BaseExpression) -> list[cst.BaseExpression]:
    """The element expressions of a list/tuple/dict display or comprehension."""
    if isinstance(value, (cst.List, cst.Tuple, cst.Set)):
        return [e.value for e in value.elements if not isinstance(e, cst.StarredElement)]
    if isinstance(value, (cst.ListComp, cst.GeneratorExp, cst.SetComp)):
        return [value.elt]
    if isinstance(value, cst.Dict):
        return [e.value for e in value.elements if isinstance(e, cst.DictElement)]
    if isinstance(value, cst.DictComp):
        return [value.value]
    return []


class _Built(NamedTuple):
    kind: str  # "module" or "parameter"
    call: cst.Call


def _builds(unit: Unit, node: cst.BaseExpression, near) -> _Built | None:
    """Whether ``node`` (evaluated in the inlined call of ``near``) is a call that builds a module
    (or an ``nn.Parameter``) whose registration matters: a library module its knowledge entry
    does not say to be empty and mode-free, or a project module established to hold state
    (:func:`~loopcheck.engine.values.construction_holds_state`)."""
    raw = raw_call(unit, node, near)
    if raw is None:
        return None
    cls = class_of_call(unit, raw)
    if cls is None or is_criterion_class(cls) or not is_module_class(cls):
        return None
    entry = knowledge().cls(cls) if isinstance(cls, str) else None
    if entry is not None and entry.parameters is False and entry.modes == "none":
        return None  # nn.Identity(): nothing to register, move, save or switch to eval mode
    if isinstance(cls, ClassRef) and not construction_holds_state(unit, node, near):
        return None  # a project module not established to hold state: nothing established is lost
    kind = "parameter" if isinstance(cls, str) and cls.rpartition(".")[2] == "Parameter" else "module"
    return _Built(kind, node)


def _owner_class(unit: Unit, node: cst.Assign) -> tuple[cst.ClassDef, object] | None:
    """The class (and its module) whose method assigns to an attribute of its ``self`` (the
    method's first parameter) at ``node``."""
    index = unit.module_of(node)
    table = parents(index)
    cur = table.get(node)
    func = None
    while cur is not None and not isinstance(cur, cst.ClassDef):
        if isinstance(cur, cst.FunctionDef) and func is None:
            func = cur
        cur = table.get(cur)
    if cur is None or func is None or not func.params.params:
        return None
    target = node.targets[0].target
    if not (isinstance(target, cst.Attribute) and isinstance(target.value, cst.Name)
            and target.value.value == func.params.params[0].name.value):
        return None
    return cur, index


def _registered(unit: Unit, cls_node: cst.ClassDef, index, attr: str) -> bool:
    """Whether the module registers the container's contents some other way: a call of
    ``add_module``/``register_module``/``setattr`` in its module, or ``self.<attr>`` handed to a
    call that does more than read it (``nn.ModuleList(self.layers)``, ``nn.Sequential(*self.layers)``)."""
    tree = index.tree
    for node in walk(tree):
        if not isinstance(node, cst.Call):
            continue
        name = dotted_name(node.func) or ""
        if last(name) in REGISTERS:
            return True
        if last(name) in READERS and "." not in name:
            continue
        for a in node.args:
            d = dotted_name(a.value)
            if d is not None and d.count(".") == 1 and d.endswith("." + attr):
                return True
    return False


def _deleted_after(unit: Unit, node: cst.Assign, attr: str) -> bool:
    """Whether the method that runs assignment ``node`` (``self.attr = {}``) deletes the
    attribute before it ends, on every path that ends it normally: a statement ``del
    self.attr`` of its body's top level follows the top-level statement that holds ``node``,
    and no ``return`` (nor ``yield``) lies between them. The container is then scratch space
    of that method: once it has run, the module holds it no more, so ``parameters()``,
    ``to()``, ``state_dict()`` and ``eval()`` have nothing of it to miss (the modules it held
    are registered some other way or are gone)."""
    index = unit.module_of(node)
    table = parents(index)
    cur = table.get(node)
    while cur is not None and not isinstance(cur, cst.FunctionDef):
        cur = table.get(cur)
    if cur is None or not isinstance(cur.body, cst.IndentedBlock) or not cur.params.params:
        return False
    me = cur.params.params[0].name.value
    body = list(cur.body.body)
    top = node  # the statement of the body's top level that holds the assignment
    while table.get(top) is not cur.body:
        top = table.get(top)
    for later in body[body.index(top) + 1:]:
        if any(isinstance(n, (cst.Return, cst.Yield)) for n in walk(later)):
            return False
        if isinstance(later, cst.SimpleStatementLine):
            for small in later.body:
                if isinstance(small, cst.Del) and _deletes(small.target, me, attr):
                    return True
    return False


def _deletes(target: cst.BaseExpression, me: str, attr: str) -> bool:
    """Whether a ``del`` target (``self.attr``, ``(self.a, self.attr)``) names ``<me>.attr``."""
    if isinstance(target, (cst.Tuple, cst.List)):
        return any(_deletes(el.value, me, attr) for el in target.elements)
    return (isinstance(target, cst.Attribute) and target.attr.value == attr
            and isinstance(target.value, cst.Name) and target.value.value == me)


#: Methods that put elements into a list: a read of the container to fill it.
_FILLS = frozenset({"append", "extend", "insert"})


def _only_counted(index, attr: str) -> bool:
    """Whether the file reads the objects ``<x>.attr`` holds nowhere: every ``.attr`` in it is
    an assignment's target, the receiver of ``append``/``extend``/``insert`` (which fills the
    container) or the argument of the builtin ``len()`` (``range(len(self.inputs))`` to make
    names), and no string spells ``attr`` (``getattr(self, "inputs")``). Its elements then
    reach no forward, loss or optimizer: ``parameters()``, ``to()`` and ``state_dict()`` miss
    nothing used. Only the whole file's tree is read (an imported module outlined statement by
    statement is not established)."""
    if getattr(index, "fragments", None) is not None or getattr(index, "tree", None) is None:
        return False
    table = parents(index)
    for node in walk(index.tree):
        if isinstance(node, cst.SimpleString):
            if attr in node.value:
                return False
            continue
        if not isinstance(node, cst.Attribute) or node.attr.value != attr:
            continue
        up = table.get(node)
        if isinstance(up, cst.AssignTarget) and up.target is node:
            continue  # self.attr = [...]: binds, reads nothing
        if (isinstance(up, cst.Attribute) and up.value is node and up.attr.value in _FILLS
                and isinstance(table.get(up), cst.Call) and table.get(up).func is up):
            continue  # self.attr.append(p): fills the container
        call = table.get(up) if isinstance(up, cst.Arg) else None
        if (isinstance(call, cst.Call) and len(call.args) == 1 and call.args[0] is up and not up.star
                and isinstance(call.func, cst.Name) and call.func.value == "len"):
            continue  # len(self.attr): counts the elements, reads none
        return False
    return True


#: Methods of ``nn.Module`` whose knowledge entry moves the module to a device.
_MOVES = ("device", "auto")


def _moved(node: cst.BaseExpression) -> bool:
    """Whether ``node``, a container's element, builds its module already moved to a device:
    ``Disc(z).cuda()``, ``Head().to(device)`` (a method of ``nn.Module`` whose knowledge entry
    converts the module in place, to a device or as its argument says)."""
    if not (isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute)):
        return False
    summary = knowledge().method("torch.nn.Module", node.func.attr.value)
    return summary is not None and any(e.event == "convert" and e.get("how") in _MOVES for e in summary.effects)


def _covered(arg: cst.BaseExpression, me: str, attr: str) -> tuple[set[int], bool]:
    """Which modules of the container ``<me>.attr`` an optimizer's parameter argument ``arg``
    takes every parameter of: the indexes ``k`` of ``<me>.attr[k].parameters()`` (an integer
    literal), and whether it takes those of every module (``m.parameters()`` for ``m`` a
    comprehension's target iterating over ``<me>.attr`` itself)."""
    indexes: set[int] = set()
    every = False
    iterated: set[str] = set()
    for node in walk(arg):
        if isinstance(node, cst.CompFor) and isinstance(node.target, cst.Name) \
                and dotted_name(node.iter) == f"{me}.{attr}":
            iterated.add(node.target.value)
    for node in walk(arg):
        if not (isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute)
                and node.func.attr.value == "parameters" and not node.args):
            continue
        owner = node.func.value
        if isinstance(owner, cst.Name) and owner.value in iterated:
            every = True
        elif (isinstance(owner, cst.Subscript) and dotted_name(owner.value) == f"{me}.{attr}"
                and len(owner.slice) == 1 and isinstance(owner.slice[0].slice, cst.Index)
                and isinstance(owner.slice[0].slice.value, cst.Integer)):
            indexes.add(int(owner.slice[0].slice.value.evaluated_value))
    return indexes, every


def _params_arg(node: cst.Call) -> cst.BaseExpression | None:
    """An optimizer construction's parameter argument: ``params=`` or the first positional one."""
    for a in node.args:
        if a.keyword is not None and a.keyword.value == "params":
            return a.value
    first = node.args[0] if node.args else None
    return first.value if first is not None and first.keyword is None and not first.star else None


def _trained_apart(unit: Unit, raw: Assign, value: cst.BaseExpression, built: list[_Built], attr: str) -> bool:
    """Whether every module of the plain list or tuple display ``self.attr = [...]`` (``raw``)
    is kept out of the model's registration and served directly: each element builds a module
    (no parameter, nothing else) already moved to a device (:func:`_moved`: the model's
    ``to()`` has nothing of it to move), one that computes the same in train and eval mode
    (the model's ``train()``/``eval()`` have nothing of it to switch), and every one has all
    its parameters handed to an optimizer the unit builds from this attribute
    (``Adam(self.attr[0].parameters())``, ``[p for m in self.attr for p in m.parameters()]``:
    :func:`_covered`). Then ``parameters()``, ``to()`` and ``eval()`` lose nothing; only the
    model's ``state_dict()`` misses the modules."""
    if not isinstance(value, (cst.List, cst.Tuple)) or not value.elements:
        return False
    elements = [e.value for e in value.elements]
    if any(isinstance(e, cst.StarredElement) for e in value.elements) or len(built) != len(elements):
        return False
    for b in built:
        if b.kind != "module" or not _moved(b.call):
            return False
        inner = raw_call(unit, b.call, raw)
        cls = class_of_call(unit, inner) if inner is not None else None
        ctor = b.call.func.value  # Disc(z) of Disc(z).cuda()
        if cls is None or construction_mode_dependent(unit, cls, ctor if isinstance(ctor, cst.Call) else None):
            return False
    target = raw.node.targets[0].target
    me = target.value.value if isinstance(target, cst.Attribute) and isinstance(target.value, cst.Name) else None
    if me is None:
        return False
    indexes: set[int] = set()
    for info in unit.roles.optimizers.values():
        if raw.target not in info.params:
            continue
        for ctor in [info.ctor, *info.others]:
            node = getattr(ctor, "node", None)
            arg = _params_arg(node) if isinstance(node, cst.Call) else None
            if arg is None:
                continue
            got, every = _covered(arg, me, attr)
            if every:
                return True
            indexes |= got
    return indexes >= set(range(len(elements)))


def _state_words() -> re.Pattern:
    """The words of a file of the project that may save or load a module's state:
    ``state_dict``, and the last component of each base class of a framework that runs (and
    checkpoints) the user's module (the knowledge's ``[[driver]]`` entries)."""
    words = {"state_dict"} | {b.rpartition(".")[2] for d in knowledge().drivers for b in d.bases}
    return re.compile(r"\b(" + "|".join(sorted(map(re.escape, words))) + r")\b")


def _state_saved(unit: Unit) -> bool:
    """Whether the project may save or load a model's state: a ``.py`` file under its root
    mentions ``state_dict`` (``torch.save(model.state_dict(), ...)``,
    ``model.load_state_dict(...)``) or names the base class of a framework that runs the
    user's module (a ``[[driver]]`` of the knowledge: such a framework's trainer saves
    checkpoints itself). ``True`` when the project's files cannot all be read."""
    index = unit.module
    project = getattr(index, "project", None)
    if project is None or getattr(project, "root", None) is None:
        return True

    def scan() -> bool:
        files = project_files(Path(project.root))
        if files is None:
            return True
        words = _state_words()
        for file in files:
            _stamp, text = project.source_of(file)
            if text is None or words.search(text):
                return True
        return False

    return bool(unit.cached(("lc504_state_saved",), scan))


#: The ``nn.Module`` methods that say which parameters the module has: a class that defines one
#: of them decides itself what ``model.parameters()`` gives.
PARAMETER_METHODS = ("parameters", "named_parameters")


def _collects_parameters_itself(cls: ClassRef) -> bool:
    """Whether project class ``cls`` or one of its project bases overrides ``parameters()`` or
    ``named_parameters()`` (``return self.net["feature"].parameters()``): what the optimizer
    built from ``model.parameters()`` gets is then that method's choice, and that it misses the
    modules of a plain container is not established (LC504 is silent)."""
    return any(find_method(cls, name) is not None for name in PARAMETER_METHODS)


def _fills(unit: Unit, raw: Assign, other) -> bool:
    """Whether the container that assignment ``raw`` (``self.attr = {}``) makes may be the one
    the event ``other`` puts an element into (``self.attr[k] = v``, ``self.attr.append(v)``):
    ``raw`` is among the definitions of the attribute that reach ``other`` on some path
    (:func:`~loopcheck.engine.values.reaching_definitions`). An insertion reached only by
    another assignment of the attribute (``self.attr = nn.ModuleDict()`` in the other arm of an
    ``if``) fills that container, not this one."""
    reach = reaching_definitions(unit, raw.target, other)
    return reach is not None and any(isinstance(d, Assign) and d.node is raw.node for d in reach)


def _insertions(unit: Unit, raw: Assign, raws: list) -> tuple[list[_Built], list[cst.CSTNode]]:
    """The modules (or parameters, :func:`_builds`) the unit puts into the empty container of
    ``raw`` (``self.attr = []`` or ``{}``), and the statements that put them there:
    ``self.attr.append/extend/insert(<call>)`` and ``self.attr[k] = <call>`` events of ``raws``
    that this container reaches (:func:`_fills`)."""
    built: list[_Built] = []
    adds: list[cst.CSTNode] = []
    for other in raws:
        if isinstance(other, Call) and other.receiver == raw.target and other.args \
                and other.method in ("append", "extend", "insert"):
            arg = other.args[-1].node
            items = _elements(arg) if other.method == "extend" else [arg]
            b = next((x for x in (_builds(unit, e, other) for e in items) if x is not None), None)
        elif isinstance(other, Assign) and other.op == "[]=" and other.target == raw.target:
            b = _builds(unit, other.value, other)
        else:
            continue
        if b is not None and _fills(unit, raw, other):
            built.append(b)
            adds.append(other.node)
    return built, adds


@register
class SubmodulesInPlainContainer(Rule):
    """LC504 submodules-in-plain-container.

    Reported when (syntax, not paths): ``self.attr = <list/tuple/set/dict display or
    comprehension>`` in a method of a project ``nn.Module`` class holds calls that build modules or
    ``nn.Parameter`` objects (not a module whose entry says it holds no parameters and does the
    same in both modes: ``nn.Identity()`` loses nothing unregistered; a project module only
    when it is established to hold state, a parameter, a buffer or a layer that depends on the
    mode, of its own or given as an argument it keeps and the owner registers nowhere else:
    :func:`~loopcheck.engine.values.construction_holds_state`), or, empty, is filled by
    ``self.attr.append/extend/insert(...)`` or ``self.attr[k] = ...`` with one in the unit that
    the empty container reaches (:func:`_fills`: not an insertion into an ``nn.ModuleDict`` the
    attribute holds on another branch; a library class the knowledge does not describe is not
    established to build a module);
    unless the method deletes it before it ends (:func:`_deleted_after`: scratch space of the
    construction), or the file calls ``add_module``, ``register_module``,
    ``register_parameter`` or ``setattr``, or hands ``<name>.attr`` to a call that is not a
    builtin reader (:func:`_registered`), or the class overrides ``parameters()``
    (:func:`_collects_parameters_itself`), or reads ``.attr`` only to count it
    (:func:`_only_counted`: every ``.attr`` of the file is a target, a receiver of ``append``/
    ``extend``/``insert`` or the argument of ``len()``: the elements reach no computation, so
    nothing used is missed). Known limit: both escapes are by spelling,
    the hand-over by the attribute's name alone (see ``rules/LC504.md``)."""

    info = INFOS["LC504"]

    def check(self, unit: Unit) -> Iterable[Report]:
        seen: set[int] = set()
        raws = None
        for ev in unit.of_kind("plain_container"):
            raw = ev.raw
            if id(raw.node) in seen:
                continue
            attr = raw.node.targets[0].target.attr.value
            value = raw.value
            seen.add(id(raw.node))
            if raws is None:
                raws = list(walk_events(unit.ir))
            built = [b for b in (_builds(unit, e, raw) for e in _elements(value)) if b is not None]
            adds: list[cst.CSTNode] = []
            if not _elements(value):  # self.layers = [] ... self.layers.append(nn.Linear(...))
                built, adds = _insertions(unit, raw, raws)
            if not built:
                continue
            owner = _owner_class(unit, raw.node)
            if owner is None:
                continue
            cls_node, index = owner
            if not is_module_class(ClassRef(index, cls_node.name.value)):
                continue
            if _registered(unit, cls_node, index, attr):
                continue
            if _collects_parameters_itself(ClassRef(index, cls_node.name.value)):
                continue  # its own parameters() decides what the optimizer gets: not established to miss them
            if _only_counted(index, attr):
                continue  # the held objects reach no computation: nothing is missed
            if _deleted_after(unit, raw.node, attr):
                continue  # scratch space of the method that builds it: the module no longer holds it
            apart = _trained_apart(unit, raw, value, built, attr)
            if apart and not _state_saved(unit):
                continue  # trained by their own optimizer, on the device, no mode: only an unsaved state_dict misses them
            yield self._report(raw, attr, value, built, adds, None if apart else self._optimizer(unit, cls_node.name.value),
                               checkpoint=apart)

    @staticmethod
    def _optimizer(unit: Unit, cls_name: str) -> Event | None:
        """The construction of an optimizer built from the parameters of a model of class
        ``cls_name``: the one that misses the unregistered modules."""
        for ev in unit.of_kind("opt_build"):
            for model in ev.extra.get("models") or ():
                if any(getattr(c, "name", None) == cls_name for c in classes_of(unit, model)):
                    return ev
        return None

    def _report(self, raw: Assign, attr: str, value, built: list[_Built], adds: list, opt: Event | None,
                checkpoint: bool = False) -> Report:
        plain = "dict" if isinstance(value, DICT_NODES) else "tuple" if isinstance(value, cst.Tuple) else "list"
        params = all(b.kind == "parameter" for b in built)
        what = "parameters" if params else "modules"
        fix = ("nn.ParameterDict" if plain == "dict" else "nn.ParameterList") if params else (
            "nn.ModuleDict" if plain == "dict" else "nn.ModuleList")
        related = [(n, f"adds a {what[:-1]} to the plain {plain}") for n in adds[:3]]
        if opt is not None:
            related.append((opt.node, f"the optimizer, built from parameters() without these {what}"))
        if checkpoint:
            return Report(
                self.info.code, raw.node,
                lambda d: f"self.{attr} holds {what} in a plain {plain}: not registered, so model.state_dict() does not save them",
                related,
                lambda d: (
                    f"nn.Module registers only the modules assigned to its attributes directly or through "
                    f"nn.ModuleList/nn.ModuleDict; these {what} are trained by their own optimizer and built on their "
                    f"device, but model.state_dict() leaves them out, and the project saves or loads a model's state: "
                    f"a checkpoint does not hold them, and a resume starts them again from their random initialization. "
                    f"Use {fix}(...) (and leave them out of the model's optimizer), or save their state_dict() too."
                ),
            )
        return Report(
            self.info.code, raw.node,
            lambda d: f"self.{attr} holds {what} in a plain {plain}: not registered, so model.parameters() misses them",
            related,
            lambda d: (
                f"nn.Module registers only the modules and parameters assigned to its attributes directly or through "
                f"nn.ModuleList/nn.ModuleDict; {what} in a plain {plain} are missing from model.parameters() (the "
                "optimizer never updates them), model.to(device) does not move them, model.state_dict() does not save "
                f"them, and model.eval() does not reach them (measured: 8,320 of the 9,794 parameter elements the "
                f"loss reached were not in the optimizer). Use {fix}(...)."
            ),
        )


# -- LC505 ----------------------------------------------------------------------------------


def _bindings(defs) -> int:
    """How many statements bind a symbol, of its definitions (``x = f()`` is defined by the
    assignment and by the call whose result it is given: one binding)."""
    return len({id(d.value) if isinstance(d, Assign) else id(getattr(d, "node", d)) for d in defs})


def _made_on_that_device(unit: Unit, c: Call) -> bool:
    """Whether ``c`` is ``x.to(d)`` (one argument, positional or ``device=``) and every
    definition of ``x`` in the unit is a call given the same expression ``d`` as its device:
    a factory's ``device=d`` (``torch.randn(n, device=d)``) or ``.to(d)``. ``Tensor.to``
    returns ``self`` when the tensor already has the device asked for, so the result thrown
    away is the tensor itself. Path-insensitive, and ``d`` is compared as written: each name in
    it must be bound at most once in the unit."""
    if c.method != "to" or len(c.node.args) != 1:
        return False
    if c.node.args[0].keyword is not None and c.node.args[0].keyword.value != "device":
        return False
    device = c.node.args[0].value
    table = definitions(unit)
    if any(_bindings(table.get(sym, ())) > 1 for sym in c.args[0].mentions):
        return False  # device = ...; x = randn(device=device); device = ...: another device now
    defs = table.get(c.receiver)
    if not defs:
        return False
    for d in defs:
        call = d.value if isinstance(d, Assign) else d.node if isinstance(d, Call) else None
        if not isinstance(call, cst.Call):
            return False
        given = [a.value for a in call.args if a.keyword is not None and a.keyword.value == "device"]
        if isinstance(call.func, cst.Attribute) and call.func.attr.value == "to" and len(call.args) == 1:
            given.append(call.args[0].value)
        if not any(g.deep_equals(device) for g in given):
            return False
    return True


CONVERSIONS = frozenset({"to", "cuda", "cpu", "half", "float", "double", "bfloat16", "long", "int", "bool", "type",
                         "pin_memory"})


@register
class TensorConversionDiscarded(Rule):
    """LC505 tensor-to-result-discarded.

    Reported when: an expression statement ``x.m(...)`` with ``m`` a conversion (``CONVERSIONS``)
    that the knowledge lists as a ``torch.Tensor`` method returning a new tensor, on a plain name or
    attribute ``x`` without a role whose every definition in the unit gives a tensor and one makes
    one (:func:`~loopcheck.engine.values.is_tensor`: a tensor factory, a tensor method of a tensor,
    an element of a loader's batch where its collate function makes a tensor,
    :func:`~loopcheck.engine.values.batch_tensor_items`), and ``x`` is read after the call on some path before it is
    bound again (:func:`~loopcheck.engine.values.read_after`): only code that reads ``x`` computes
    with the unconverted tensor; not ``x.to(d)`` of a tensor every definition of which already
    gives it device ``d`` (:func:`_made_on_that_device`: ``to`` returns ``x`` itself). The tensor
    test is path-insensitive (see ``rules/LC505.md``)."""

    info = INFOS["LC505"]

    def check(self, unit: Unit) -> Iterable[Report]:
        for c in all_calls(unit):
            if c.targets or c.inner is not None or c.operands or not c.receiver or c.qualified:
                continue
            if c.method not in CONVERSIONS or not tensor_method(c.method) or not discarded(unit, c):
                continue
            if not is_tensor(unit, c.receiver):
                continue
            if read_after(unit, c, c.receiver) is None:
                continue  # a tensor no later code reads: nothing computes with the old one
            if _made_on_that_device(unit, c):
                continue  # .to(d) of a tensor made on d returns the tensor itself: nothing is lost
            yield self._report(c)

    def _report(self, c: Call) -> Report:
        return Report(
            self.info.code, c.node,
            lambda d: (
                f"{d.code(c.node, 50)} returns a new tensor that is thrown away: "
                f"{d.code(c.node.func.value, 30)} is unchanged"
            ),
            [],
            lambda d: (
                "Tensor.to(), .cuda(), .half() and the other conversions return a converted copy; only nn.Module "
                "converts itself in place. "
                f"Write {d.code(c.node.func.value, 30)} = {d.code(c.node, 50)}. On a GPU the unmoved tensor fails "
                "at the next operation with the model (\"Expected all tensors to be on the same device\"); a dtype "
                "conversion that is dropped fails the same way (measured on CPU: the first forward raised "
                "\"mat1 and mat2 must have the same dtype\") or silently computes in the old dtype."
            ),
        )
