"""Typed training events: what a raw call or assignment means for the training loop.

:func:`classify` turns each raw event of the IR into zero or more :class:`Event` objects
(``zero_grad``, ``backward``, ``clip``, ``step``, ``sched_step``, ``train``/``eval``,
``mode_part`` (a mode set on some modules of a model: :func:`part_mode`), ``forward``,
``convert``, ...) using the unit's :class:`~loopcheck.engine.roles.Roles` and the
effect summaries of the calls (:mod:`loopcheck.engine.knowledge`): a call with a summary has
exactly the effects it lists. A call the engine cannot see into that receives a tracked object
(``evaluate(model)`` from an unknown library) becomes a ``havoc`` event for that object: the
rules forget what they knew about it and stay silent. A havoc names the *aspects* it may
change (``mode``, ``grads``, ``lr``, ``scale``, ``params``), so a call that cannot change a
state does not erase it: an unknown method of a model (``model.init_hidden()``) changes
nothing the rules follow, an unknown method of an optimizer may change its gradients.
"""

from __future__ import annotations

import functools

import re
from dataclasses import dataclass, field

import libcst as cst

from loopcheck.engine.ir import Assign, Call, RawEvent
from loopcheck.engine.knowledge import ASPECTS, Effect, Summary, knowledge
from loopcheck.engine.names import dotted_name
from loopcheck.engine.roles import (
    ACCELERATOR_NAME, LOSS_NAME, Roles, arg_at, last, looks_up, parameter_owner, receiver_of, same_sym,
    summary_of,
)
from loopcheck.engine.summaries import module_mode
from loopcheck.engine.values import binds_each_iteration
from loopcheck.engine.walk import names_in

DTYPE_WORDS = re.compile(r"(float|half|bfloat16|double|dtype|fp16|bf16|int8)", re.I)
#: The floating point ``torch.dtype`` objects a module conversion names, by their attribute of
#: ``torch`` (``torch.float`` is ``torch.float32``, ``torch.half`` is ``torch.float16``,
#: ``torch.double`` is ``torch.float64``: https://pytorch.org/docs/stable/tensor_attributes.html).
TORCH_DTYPES = {
    "torch.float32": "float32", "torch.float": "float32", "torch.float16": "float16", "torch.half": "float16",
    "torch.float64": "float64", "torch.double": "float64", "torch.bfloat16": "bfloat16",
}
#: Receivers whose methods only log (``logger.info(model)``): untyped, known by name.
LOGGER_NAME = re.compile(r"^(\w*logger|log|writer|tb_writer|summary_writer|tb|pbar|progress\w*|console)$", re.I)
ALL_ASPECTS = ASPECTS
#: Effects typed by :meth:`_Typer.data_effect`.
DATA_EVENTS = frozenset({"loss_input", "set_epoch", "params_replaced", "state_ref", "load_state", "save"})


@dataclass(eq=False)
class Event:
    """One typed training event.

    Attributes:
        kind: what happens (see module docstring).
        subject: the symbol it happens to (optimizer, model, scheduler, scaler, loss), or None.
        node: the LibCST node to report (a ``cst.Call`` or a statement).
        raw: the raw event it came from (its ``ctx`` gives loops, grad mode, conditions).
        extra: kind-specific details (``scaler``, ``models``, ``managed``, ``aspects``, ...).
    """

    kind: str
    subject: str | None
    node: cst.CSTNode
    raw: RawEvent
    extra: dict = field(default_factory=dict)

    @property
    def ctx(self):
        return self.raw.ctx

    def may_change(self, aspect: str) -> bool:
        """For a ``havoc``: whether the call may change ``aspect`` of its subject."""
        return aspect in self.extra.get("aspects", ALL_ASPECTS)


#: The mode each mode event gives the modules it sets.
_SETS_MODE = {"train": "train", "eval": "eval", "mode_unknown": "unknown", "mode_restore": "unknown"}


def sets_mode(ev: Event) -> bool:
    """Whether ``ev`` may change the mode (``nn.Module.training``) of some module: a mode
    event, a construction (a new module starts in train mode), a ``havoc`` that may change
    the ``mode`` aspect."""
    k = ev.kind
    return k in _SETS_MODE or k == "mode_part" or k == "model_build" or (k == "havoc" and ev.may_change("mode"))


def part_mode(model: str, ev: Event) -> str | None:
    """The mode (``"train"``, ``"eval"`` or ``"unknown"``) ``ev`` gives some modules of
    ``model`` without establishing that it gives it to all of them, or ``None``.

    That is a mode event on a part of the model (``model.head.train()`` for ``model``), and a
    ``mode_part`` event (``m.eval()`` for ``m`` in ``model.modules()``, often under an
    ``isinstance(m, nn.BatchNorm2d)`` test; a method of the model's class that does this is
    inlined where it is called) on the model, a part of it, or a model containing it. A model
    in another mode is then partly in each: which parts are in which mode the engine does not
    follow, so LC301 and LC303 read its mode as unknown after it."""
    subject = ev.subject
    if subject is None:
        return None
    if ev.kind == "mode_part":
        overlaps = subject == model or model.startswith(subject + ".") or subject.startswith(model + ".")
        return ev.extra.get("mode", "unknown") if overlaps else None
    if ev.kind in _SETS_MODE and subject.startswith(model + "."):
        return _SETS_MODE[ev.kind]
    return None


def mode_call(ev: Event, holder: tuple[cst.Call, ...] = ()) -> cst.Call | None:
    """The call of the training code that chose the mode a ``train``/``eval`` event sets, when
    the event's call reads it from a parameter that call's literal argument fixed:
    ``model.train(False)`` for the ``super().train(mode)`` of a model's own ``train(self,
    mode=True)``, ``set_mode(model, False)`` for ``m.train(training)`` in a helper. The line
    inside the function is right for every mode; the call chose eval. ``None`` when the mode is
    the event's own (a literal, ``model.eval()``, or a parameter left at its default).

    Args:
        ev: a ``train`` or ``eval`` event.
        holder: the calls (``Context.calls``, outermost first) that lead to the frame the
            finding belongs to (the one that holds the step it is reported with): a literal
            given further out than that frame is passed on by the call of that frame that
            leads to the event, which is returned instead.
    """
    source = ev.extra.get("mode_call")
    if source is None:
        return None
    calls = ev.ctx.calls
    given = next((i for i, c in enumerate(calls) if c is source), None)
    if given is None:
        return None
    shared = 0
    while shared < min(len(calls), len(holder)) and calls[shared] is holder[shared]:
        shared += 1
    at = max(given, shared)
    return calls[at] if at < len(calls) else None


@functools.cache
def tensor_gradient():
    """Where ``Tensor.backward`` takes its gradient argument, from the knowledge's entry (its
    ``gradient`` reference): the engine types ``t.backward(...)`` itself, since the receiver it
    cannot type is usually a tensor."""
    summary = knowledge().method("torch.Tensor", "backward")
    return next((e.get("gradient") for e in summary.effects if e.event == "backward"), None) if summary else None


def models_of(roles: Roles, mentions) -> set[str]:
    """The models whose parameters (or which, named directly) an argument takes:
    ``model.parameters()``, ``model``, or a variable holding ``list(model.parameters())``."""
    out = set()
    for m in mentions:
        owner = parameter_owner(m)
        if owner is not None:
            out.add(roles.canon(owner))
        c = roles.canon(m)
        if c in roles.models:
            out.add(c)
        out |= roles.param_sources.get(m, set())
    return out


def _literal_bool(node: cst.BaseExpression) -> bool | None:
    if isinstance(node, cst.Name) and node.value in ("True", "False"):
        return node.value == "True"
    return None


def _inf_literal(node: cst.BaseExpression) -> bool:
    code = cst.Module([]).code_for_node(node).replace(" ", "")
    return code in ("float('inf')", 'float("inf")', "math.inf", "torch.inf", "np.inf", "inf")


class _Typer:
    """Classifies one raw call."""

    def __init__(self, c: Call, roles: Roles) -> None:
        self.c = c
        self.roles = roles
        self.out: list[Event] = []

    def ev(self, kind: str, subject: str | None, **extra) -> None:
        if kind == "backward" and "models" not in extra:  # the models the loss comes from (None: any)
            extra["models"] = self.roles.provenance.get(subject) if subject else None
        self.out.append(Event(kind, subject, self.c.node, self.c, extra))

    def sym(self, ref) -> str | None:
        """The canonical symbol an argument reference names (``"self"``: the receiver)."""
        if ref == "self":
            return self.roles.canon(receiver_of(self.c))
        a = arg_at(self.c, ref)
        return self.roles.canon(a.sym) if a is not None and a.sym else None

    # -- the call ---------------------------------------------------------------------------
    def run(self) -> list[Event]:
        c, roles = self.c, self.roles
        if self.construction():
            return self.out
        if c.method == "backward" and not c.qualified and self.backward():
            return self.out
        f = roles.canon(c.func) if c.func and not c.qualified and c.inner is None and not c.operands else None
        if f in roles.models and not c.inlined:
            self.forward_clears(f)
            self.ev("forward", f)  # model(x), self.model(x)
            return self.out
        summary = summary_of(c, roles)
        if summary is not None:
            self.apply(summary)
            return self.out
        if c.inlined:
            return self.out  # the callee's body follows in the IR
        self.fallback()
        return self.out

    def forward_clears(self, model: str) -> None:
        """The clears the ``forward`` of a model of the project makes on every call
        (:attr:`Call.forward_clears <loopcheck.engine.ir.Call.forward_clears>`: ``self.zero_grad()``
        at the top of a seq2seq model's ``forward``), as the events ``model.zero_grad()`` (or
        ``model.enc.zero_grad()``, ``model.opt.zero_grad()`` for an optimizer the model holds)
        would make at the call; the clear runs when the ``forward`` does, before any backward of
        what it returns."""
        for path, none in self.c.forward_clears:
            sym = self.roles.canon(model + path)
            role = self.roles.role(sym)
            if role == "optimizer":
                self.ev("zero_grad", sym, set_to_none=none)
            elif role in (None, "model"):
                self.ev("zero_grad_model", sym, set_to_none=none)

    def construction(self) -> bool:
        """``opt_build``/``sched_build``/``scaler_build``/``model_build`` for the call that
        builds the object its target names."""
        c, roles = self.c, self.roles
        target = c.targets[0] if len(c.targets) == 1 else None
        if target is None or looks_up(c, roles):
            return False  # (getattr(self, name) returns an object built elsewhere)
        if target in roles.optimizers and roles.optimizers[target].builds(c):
            info = roles.optimizers[target]
            self.ev("opt_build", target, models=info.models, eager=id(c) in info.eager, stateless=id(c) in info.stateless,
                    own_step=id(c) in info.own_step, moves_state=id(c) in info.moves_state)
            return True
        if target in roles.schedulers and roles.schedulers[target].builds(c):
            self.ev("sched_build", target)
            return True
        if target in roles.scalers and roles.scalers[target] is c:
            self.ev("scaler_build", target)
            return True
        t = roles.canon(target)
        if t in roles.models and target not in roles.alias and not self._wraps(t):
            self.ev("model_build", t)
            # model = Net().to(device): built, then moved
            summary = knowledge().method("torch.nn.Module", c.method or "") if c.inner is not None else None
            for eff in summary.effects if summary is not None else ():
                if eff.event == "convert":
                    self.convert(t, eff.get("how"), eff.get("dtype"), eff.get("layout") or ())
            return True
        return False

    def _wraps(self, t: str) -> bool:
        """``model = DDP(model)``, ``model = convert_sync_batchnorm(model).to(device)``: the same
        module (or a wrapper sharing its parameters), not a new model."""
        c = self.c
        while c is not None:
            # an argument that is a call returning its receiver is that object (DDP(model.cuda()))
            args = (same_sym(a, self.roles) for a in c.args)
            if (any(sym is not None and self.roles.canon(sym) == t for sym in args)
                    or self.roles.canon(c.receiver) == t):
                return True
            c = c.inner
        return False

    def backward(self) -> bool:
        """``loss.backward()``, ``scaler.scale(loss).backward()``, ``(loss / n).backward()``,
        ``losses[-1].backward()``; a ``backward`` method of a typed object (an accelerator, a
        DeepSpeed engine) goes through its summary instead."""
        c, roles = self.c, self.roles
        if c.receiver is not None:
            t = c.base_class or roles.type_of(c.receiver)
            if t is not None:
                # accelerator.backward(loss), engine.backward(loss), self.backward(loss) of a
                # subclass of a library class: summaries
                return False
            if ACCELERATOR_NAME.search(last(c.receiver)) and c.args:
                self.ev("backward", roles.canon(c.args[0].sym) if c.args[0].sym else None, scaler=None, managed=True)
                return True
            gradient = self.gradient(tensor_gradient())
            a0 = c.args[0] if c.args else None
            if (a0 is not None and a0.keyword is None and a0.sym is not None and "grad" not in a0.sym
                    and gradient["gradient_scaler"] is None and roles.canon(c.receiver) not in roles.graph):
                # something.backward(loss) of an unknown engine: nothing known (a receiver
                # established to carry an autograd graph is a tensor: y.backward(dy))
                return True
            # (scaled_name: the name whose value, scaled or not on a path, decides: scale_bind)
            scaled = roles.canon(c.receiver)
            self.ev("backward", c.receiver, scaler=roles.scaled.get(scaled),
                    scaled_name=scaled if scaled in roles.scaled else None, **gradient)
            return True
        inner = c.inner
        if inner is not None:
            if inner.receiver and roles.canon(inner.receiver) in roles.scalers and inner.method == "scale":
                loss = inner.args[0].sym if inner.args else None
                self.ev("backward", loss, scaler=roles.canon(inner.receiver), **self.gradient(tensor_gradient()))
            elif inner.receiver:
                # loss.mean().backward(): computed from the receiver's value; a member called on
                # its object, self.criterion(out, y).backward(), is not: its models are not known
                models = {} if knowledge().method("torch.Tensor", inner.method or "") is not None else {"models": None}
                self.ev("backward", inner.receiver, scaler=None, **models, **self.gradient(tensor_gradient()))
            else:
                self._operands_backward(inner.operands)
            return True
        self._operands_backward(c.operands)
        return True

    def gradient(self, ref) -> dict:
        """The extras of a backward about its gradient argument (``ref``, the knowledge's
        reference to it): ``gradient``, the argument (``None`` when none is given: the
        gradient of a scalar, 1), and ``gradient_scaler``, the GradScaler whose ``scale()``
        returned it (``t.backward(scaler.scale(g))``, ``g = scaler.scale(grad)``,
        ``grad_tensors=[scaler.scale(g)]``), else ``None``, and ``gradient_name``, for a named
        gradient scaled by an assignment (``g = scaler.scale(grad)``), that name: whether it holds
        the scaled value on a path is that path's (``scale_bind``). The gradient argument multiplies
        every gradient the backward fills, so a scaled one leaves them scaled as
        ``scaler.scale(loss).backward()`` does."""
        roles = self.roles
        arg = arg_at(self.c, ref) if ref is not None else None
        if arg is None:
            return {"gradient": None, "gradient_scaler": None}
        scaler = name = None
        if arg.sym:
            scaler = roles.scaled.get(roles.canon(arg.sym))
            name = roles.canon(arg.sym) if scaler is not None else None
        elif isinstance(arg.node, (cst.List, cst.Tuple)) and arg.node.elements:
            # one gradient per tensor: scaled when each is a scale() call of the same scaler
            found = {roles.scaled_calls.get(id(e.value)) for e in arg.node.elements}
            scaler = found.pop() if len(found) == 1 else None
        else:
            scaler = roles.scaled_calls.get(id(arg.node))
        return {"gradient": arg, "gradient_scaler": scaler, "gradient_name": name}

    def _operands_backward(self, operands) -> None:
        """``(weights * loss).mean().backward()``: the backward of the loss operands; its
        models are those of all of them (unknown when one is)."""
        roles = self.roles
        losses = [m for m in (roles.canon(o) for o in operands) if m in roles.losses or m in roles.loss_containers]
        named = [m for m in losses if LOSS_NAME.search(last(m))]
        subject = (named or losses or [None])[0]
        provs = [roles.provenance.get(m) for m in losses]
        models = None if not provs or any(p is None for p in provs) else frozenset().union(*provs)
        self.ev("backward", subject, scaler=None, models=models, **self.gradient(tensor_gradient()))

    # -- summaries ------------------------------------------------------------------------
    def apply(self, summary: Summary) -> None:
        """The events of a call with a summary: exactly its effects."""
        scaler_step = any(e.event == "scaler_step" for e in summary.effects)
        for eff in summary.effects:
            self.effect(eff, scaler_step)

    def effect(self, eff: Effect, scaler_step: bool) -> None:
        c, roles = self.c, self.roles
        k = eff.event
        if k == "backward":
            self.ev("backward", self.sym(eff.get("loss")), scaler=None, managed=bool(eff.get("managed")),
                    **self.gradient(eff.get("gradient")))
        elif k == "clip":
            arg = arg_at(c, eff.get("params"))
            mentions = arg.mentions if arg is not None else frozenset()
            norm = arg_at(c, eff.get("max_norm")) if eff.get("max_norm") is not None else None
            measure = bool(eff.get("measure_only")) or (norm is not None and _inf_literal(norm.node))
            self.ev("clip", None, models=models_of(roles, mentions), params=frozenset(mentions),
                    managed=bool(eff.get("managed")), measure_only=measure, max_norm=norm)
        elif k == "step":
            opt = self.sym(eff.get("optimizer"))
            if opt is not None:
                closure = eff.get("closure")
                self.ev("step", opt, scaler=self.sym("self") if scaler_step else None,
                        closure=closure is not None and arg_at(c, closure) is not None)
        elif k == "zero_grad":
            none = self.set_to_none(eff.get("set_to_none"))
            if eff.get("optimizer") is not None:
                opt = self.sym(eff.get("optimizer"))
                if opt is not None:
                    self.ev("zero_grad", opt, set_to_none=none)
            else:
                model = self.sym(eff.get("params"))
                if model is not None:
                    self.ev("zero_grad_model", model, set_to_none=none)
        elif k == "grad_write":
            owner = grad_owner(c.receiver) if eff.get("tensor") == "self" else None
            if owner is not None:  # p.grad.copy_(g): a gradient written by hand, in place
                self.ev("grad_set", owner, inplace=True)
        elif k == "opt_load_state":
            self.ev("opt_load_state", self.sym(eff.get("optimizer")))
        elif k == "sched_step":
            metric = eff.get("metric")
            given = metric is not None and arg_at(c, metric) is not None
            self.ev("sched_step", self.sym(eff.get("scheduler")), nargs=1 if given or c.args else 0)
        elif k == "train":
            model = self.sym(eff.get("model"))
            arg = arg_at(c, eff.get("mode")) if eff.get("mode") is not None else None
            # a literal, or a parameter the inlined call fixed (super().train(mode) in a model's
            # own train(), called as model.train(False))
            mode = True if arg is None else arg.flag if arg.flag is not None else _literal_bool(arg.node)
            owner = self.submodules_owner(model)
            if owner is not None:  # for m in model.modules(): m.train()
                self.ev("mode_part", owner, mode="train" if mode else "eval" if mode is False else "unknown")
            elif mode is None and isinstance(arg.node, cst.Name):  # model.train(was_training)
                self.ev("mode_restore", model, var=arg.node.value)
            elif arg is not None and arg.flag is not None and arg.flag_call is not None:
                # the mode is the argument of a call of the training code (model.train(False)
                # running the model's own train(), which hands over to nn.Module's): that call
                # chose it (:func:`mode_call`)
                self.ev("train" if mode else "eval", model, mode_call=arg.flag_call)
            else:
                self.ev("train" if mode else "eval" if mode is False else "mode_unknown", model)
        elif k == "eval":
            model = self.sym(eff.get("model"))
            owner = self.submodules_owner(model)
            if owner is not None:  # for m in model.modules(): if isinstance(m, nn.BatchNorm2d): m.eval()
                self.ev("mode_part", owner, mode="eval")
            else:
                self.ev("eval", model)
        elif k == "each_module":
            # model.apply(fn): fn's mode change reaches the modules it picks (module_mode); a
            # function the engine does not find may change any of them
            arg = arg_at(c, eff.get("fn"))
            mode = (module_mode(arg.function, arg.function_bound) if arg is not None and arg.function is not None
                    else "unknown")
            if mode is not None:
                self.ev("mode_part", self.sym(eff.get("model")), mode=mode)
        elif k == "forward":
            self.ev(k, self.sym(eff.get("model")))
        elif k == "grad_query":
            self.ev("grad_query", self.sym(eff.get("loss")))
        elif k == "requires_grad":
            arg = arg_at(c, eff.get("mode")) if eff.get("mode") is not None else None
            on = True if arg is None else _literal_bool(arg.node)
            if on is not None:
                self.ev("unfreeze" if on else "freeze", self.sym(eff.get("model")))
        elif k == "convert":
            self.convert(self.sym(eff.get("model")), eff.get("how"), eff.get("dtype"), eff.get("layout") or ())
        elif k in ("unscale", "scaler_step"):
            self.ev(k, self.sym(eff.get("scaler")), optimizer=self.sym(eff.get("optimizer")))
        elif k == "scaler_update":
            self.ev(k, self.sym(eff.get("scaler")))
        elif k == "store":
            pass  # a value kept with its graph: ``graph_events``
        elif k in DATA_EVENTS:
            self.data_effect(eff)
        elif k == "havoc":
            aspects = frozenset(eff.get("aspects") or ALL_ASPECTS)
            ref = eff.get("arg")
            syms = [roles.canon(a.sym) for a in c.args if a.sym and a.keyword is None] if ref == "*" else [self.sym(ref)]
            for s in dict.fromkeys(syms):
                if roles.tracked(s):
                    self.ev("havoc", s, aspects=aspects)

    def set_to_none(self, ref) -> bool | str | None:
        """What a ``zero_grad`` leaves in each ``.grad``, by its argument ``ref`` (the
        knowledge's reference to ``set_to_none``): ``True`` (None) or ``False`` (zeros) when
        the call gives it as a literal, ``"default"`` when it leaves it out (None from PyTorch
        2.0, zeros before: ``[since] zero_grad_set_to_none``, decided with the project's pins
        by the rules), ``None`` when unknown (a variable, or an entry that names no such
        argument)."""
        if ref is None:
            return None
        arg = arg_at(self.c, ref)
        if arg is None:
            node = self.c.node  # (``*args``/``**kwargs`` may give it)
            return None if isinstance(node, cst.Call) and any(a.star for a in node.args) else "default"
        return _literal_bool(arg.node)

    def data_effect(self, eff: Effect) -> None:
        """Events about the values and objects a call hands around rather than the training
        state: a loss call's input (``loss_input``: ``arg``, ``expects``), a sampler's epoch
        (``set_epoch``), parameters replaced by a wrapper (``params_replaced``), a state dict
        that references live tensors (``state_ref``: ``of`` is ``model``/``optimizer``/
        ``scheduler``), a state loaded (``load_state``: ``state``, the argument) and an object
        saved (``save``: ``arg``)."""
        c, k = self.c, eff.event
        if k == "loss_input":
            arg = arg_at(c, eff.get("input"))
            if arg is not None:
                self.ev("loss_input", None, arg=arg, expects=eff.get("expects"))
        elif k in ("set_epoch", "params_replaced"):
            subject = self.sym(eff.get("sampler" if k == "set_epoch" else "model"))
            if subject is not None:
                self.ev(k, subject)
        elif k in ("state_ref", "load_state"):
            of = next((key for key in ("model", "optimizer", "scheduler") if eff.get(key) is not None), None)
            subject = self.sym(eff.get(of)) if of else None
            if subject is not None:
                state = arg_at(c, eff.get("state")) if k == "load_state" else None
                self.ev(k, subject, of=of, state=state)
        elif k == "save":
            arg = arg_at(c, eff.get("value"))
            if arg is not None:
                self.ev("save", None, arg=arg)

    def convert(self, model: str | None, how: str | None, dtype: str | None = None,
                layout: tuple[str, ...] = ()) -> None:
        """A ``convert`` of ``model``: ``how`` (``"device"``, ``"dtype"``, ``"auto"``: from the
        arguments), ``dtype``: the floating point dtype it gives the parameters, when the entry
        says it (``half()``) or an argument names it (``to(torch.float32)``, ``extra["dtype"]``).
        ``layout``: the entry's keywords that neither move nor cast (``memory_format``,
        ``non_blocking`` of ``Module.to``); an ``"auto"`` call given only those is
        ``how = "layout"`` (``model.to(memory_format=torch.channels_last)``: the parameters keep
        their device and dtype)."""
        c = self.c
        if model is None:
            return
        inner = c.inner
        if c.method == "float" and inner is not None and inner.method in ("half", "bfloat16", "double"):
            self.ev("convert", model, how="restore", dtype=dtype)  # model.half().float(): back to float32
            return
        args = getattr(c.node, "args", ())
        if how == "auto" and args and layout and all(
                a.keyword is not None and a.keyword.value in layout for a in args):  # (``**kw`` has none)
            how = "layout"
        if how == "auto":
            text = " ".join(cst.Module([]).code_for_node(a.node) for a in c.args)
            how = "dtype" if DTYPE_WORDS.search(text) else "device"
        if dtype is None and how == "dtype" and not any(getattr(a, "star", "") for a in getattr(c.node, "args", ())):
            named = {TORCH_DTYPES.get(dotted_name(a.node) or "") for a in c.args if a.keyword in (None, "dtype")}
            named.discard(None)
            dtype = named.pop() if len(named) == 1 else None
        self.ev("convert", model, how=how, target=" ".join(cst.Module([]).code_for_node(a.node) for a in c.args),
                dtype=dtype)

    def submodules_owner(self, sym: str | None) -> str | None:
        """The model whose submodules ``sym`` iterates: ``model`` when ``sym`` is bound by the
        innermost enclosing ``for`` whose target binds it, and that loop iterates a call the
        knowledge says yields modules of its receiver (``returns.value = "submodules"``:
        ``model.modules()``, ``model.named_children()``); ``None`` otherwise. A mode set
        through such a name is set on some modules of the model, which ones the engine does
        not follow (an ``isinstance`` test usually picks them)."""
        if sym is None:
            return None
        loop = next((lp for lp in reversed(self.c.ctx.loops) if binds_each_iteration(lp, sym)), None)
        if loop is None or not isinstance(loop.node, cst.For) or not isinstance(loop.node.iter, cst.Call):
            return None
        if len(loop.iter_calls) != 1:
            return None  # list(model.modules()), filter(f, model.modules()): not read
        receiver, _, method = loop.iter_calls[0].rpartition(".")
        owner = self.roles.canon(receiver) if receiver else None
        if owner is None or self.roles.role(owner) != "model":
            return None
        summary = knowledge().method(self.roles.type_of(owner), method)
        returns = summary.returns if summary is not None else None
        return owner if returns is not None and returns.value == "submodules" else None

    # -- calls no summary describes -----------------------------------------------------
    def fallback(self) -> None:
        c, roles = self.c, self.roles
        if self.set_epoch():
            return
        recv = roles.canon(receiver_of(c)) if c.receiver or c.inner else None
        method = c.method
        if recv is not None:
            role = roles.role(recv)
            if role == "model":
                return  # a method of the model no summary lists: it changes neither mode nor gradients
            if role == "optimizer":
                self.ev("havoc", recv, aspects=frozenset({"grads"}))
                return
            if role in ("scheduler", "scaler", "loader", "accelerator"):
                return
            module = knowledge().method("torch.nn.Module", "zero_grad") if method == "zero_grad" else None
            if role is None and module is not None:
                # zero_grad() of an object of no known role (a model from a factory no knowledge
                # describes, or one where only model.features is known as a model): PyTorch's
                # classes with a zero_grad() are modules and optimizers, and an optimizer's is
                # known, so it clears this module's gradients; which optimizers hold them is
                # decided by what their parameters are known to be (``touches``)
                self.apply(module)
                return
            if role is None and any(recv.startswith(m + ".") for m in roles.models):
                # a method of an attribute of a model that is no module of known role (a
                # parameter: model.weight.requires_grad_()): the torch.Tensor entry describes
                # what it does to the model's requires_grad, and only that is taken from it
                summary = knowledge().method("torch.Tensor", method or "")
                if summary is not None and summary.effects and all(e.event == "requires_grad" for e in summary.effects):
                    self.apply(summary)
                    return
        if c.inner is None and grad_owner(c.receiver) is not None:
            # a method of a parameter's .grad (.grad.data): a tensor, whose methods the
            # torch.Tensor entry describes (p.grad.copy_(g) writes a gradient by hand)
            summary = knowledge().method("torch.Tensor", method or "")
            if summary is not None:
                self.apply(summary)
                return
        if method in ("zero_", "zero") and c.receiver and (c.receiver.endswith(".grad") or c.receiver.endswith(".grad.data")):
            self.ev("zero_grad_all", None)
            return
        if method in ("append", "extend", "add", "insert", "put") and c.args and c.receiver:
            return  # a container keeps the argument: typed by ``graph_events`` when it has a graph
        if c.receiver and LOGGER_NAME.search(last(c.receiver)):
            return
        if c.inner is not None and c.inner.func == "super":
            return  # a library base class's method on the instance (a scheduler's base keeps its optimizer)
        seen = set()
        for a in c.args:
            s = roles.canon(a.sym) if a.sym else None
            if s and s not in seen and roles.tracked(s):
                seen.add(s)
                self.ev("havoc", s, aspects=ALL_ASPECTS)


    def set_epoch(self) -> bool:
        """``loader.sampler.set_epoch(epoch)``, ``batch_sampler.set_epoch(epoch)``, a prepared
        loader's ``set_epoch(epoch)`` (Accelerate): a receiver no entry describes sets the epoch
        of the sampler it is or holds."""
        c = self.c
        if c.method != "set_epoch" or not c.receiver or c.qualified:
            return False
        self.ev("set_epoch", self.roles.canon(c.receiver))
        return True


def classify_call(c: Call, roles: Roles) -> list[Event]:
    """The typed events of one raw call (usually zero or one)."""
    return _Typer(c, roles).run() + graph_events(c, roles)


def classify_assign(a: Assign, roles: Roles) -> list[Event]:
    """Typed events of an assignment: loss values stored, ``.grad`` cleared, submodules replaced."""
    out: list[Event] = []
    target = a.target
    if target is None:
        return out
    if target.endswith(".grad") and a.op == "=":
        if _clears(a.value):  # (None: p.grad = None; zeros: p.grad = torch.zeros_like(p))
            out.append(Event("zero_grad_all", None, a.node, a, {"set_to_none": _is_none(a.value)}))
        else:  # w.grad = g: gradients written by hand
            out.append(Event("grad_set", target[: -len(".grad")], a.node, a))
        return out
    if target.endswith(".grad.data") and a.op == "=" and not _is_none(a.value):
        if _clears(a.value):  # p.grad.data = torch.zeros_like(p): zeros in the tensor .grad holds
            out.append(Event("zero_grad_all", None, a.node, a, {"set_to_none": False}))
        else:  # p.grad.data = g: a gradient written by hand, into the tensor .grad holds
            out.append(Event("grad_set", grad_owner(target), a.node, a, {"inplace": True}))
        return out
    flag = _literal_bool(a.value)
    if flag is None and a.constant and type(a.constant[0]) is bool:
        flag = a.constant[0]  # requires_grad = requires_grad, a parameter left at its default False
    if target.endswith(".requires_grad") and a.op == "=" and flag is not None and a.ctx.loops:
        # for p in model.parameters(): p.requires_grad = False
        # (extra ``part``: the ``if``s inside the loop whose tests read its targets, ``if "fc"
        # not in name:``: they select some of the parameters, which the analysis cannot tell)
        loop = a.ctx.loops[-1]
        owner = next((parameter_owner(n) for n in loop.iter_names if parameter_owner(n)), None)
        if owner is not None and roles.canon(owner) in roles.models:
            kind = "unfreeze" if flag else "freeze"
            part = tuple(c for c in a.ctx.conds if _selects_per_iteration(c, loop.targets))
            return [Event(kind, roles.canon(owner), a.node, a, {"part": part} if part else {})]
    if target.endswith(".requires_grad") and a.op == "=" and flag is not None:
        # model.weight.requires_grad = True: a parameter of the model (a part of it) requires
        # grad again (False: it is frozen)
        tensor = roles.canon(target[: -len(".requires_grad")])
        if any(tensor.startswith(m + ".") for m in roles.models):
            return [Event("unfreeze" if flag else "freeze", tensor, a.node, a)]
    rebound = _optimizer_rebound(a, roles) or _optimizer_bound(a, roles)
    if rebound is not None:
        return [rebound]
    moved = _optimizer_state_moved(a, roles)
    if moved is not None:
        return [moved]
    held = _optimizer_params_set(a, roles)
    if held is not None:
        return [held]
    read = _device_read(a, roles)
    if read is not None:
        return [read]
    bound = _scaled_bound(a, roles)
    if bound is not None:
        out.append(bound)
    container = _plain_container(a)
    if container is not None:
        out.append(container)
    saved = _mode_saved(a, roles)
    if saved is not None:
        out.append(saved)
    counted = _counted(a)
    if counted is not None:
        out.append(counted)
    prefix, _, attr = target.rpartition(".")
    canon_prefix = roles.canon(prefix) if prefix else None
    if (
        a.op == "=" and canon_prefix in roles.models and isinstance(a.value, cst.Call)
        and a.value_kind == "call" and a.module_class is not None  # a new module, not a forward
        and roles.role(roles.canon(target)) in (None, "model")  # self.optimizer = Adam(...) is no layer
    ):
        out.append(Event("submodule_replace", canon_prefix, a.node, a, {"attr": attr}))
        return out
    out += graph_events(a, roles)
    return out


def _selects_per_iteration(cond: cst.CSTNode, targets: tuple[str, ...]) -> bool:
    """Whether the ``if`` statement ``cond`` tests a name its loop binds on each iteration
    (``if "fc" not in name:`` in ``for name, p in model.named_parameters():``): its arms split
    the loop's items, not the paths."""
    test = getattr(cond, "test", None)
    return test is not None and bool(names_in(test) & set(targets))


#: The kinds of the events :func:`graph_events` types.
GRAPH_KINDS = frozenset({"graph_store", "graph_release"})


def retype_graph_events(raw: RawEvent, roles: Roles) -> None:
    """Type the graph events of ``raw`` again, after the graph fact of ``roles`` changed (they
    come last in ``raw.typed``)."""
    raw.typed = [ev for ev in raw.typed if ev.kind not in GRAPH_KINDS] + graph_events(raw, roles)


def graph_events(raw: RawEvent, roles: Roles) -> list[Event]:
    """``graph_store`` for an event that keeps a value with an autograd graph in a container
    (:func:`loopcheck.engine.graphs.graph_stores`; extra ``value``: the stored symbol or
    ``None``, ``how``: ``append``/``total``/``entry``, ``fixed``: an entry of a literal key,
    ``freed``: such an entry, or an appended element, whose graph a ``backward()`` frees in
    the iteration that stores it), and ``graph_release`` for one that
    empties such a container: the container re-bound to another value (``total = 0``,
    ``history = []``, the object that holds it re-bound) or cleared (``history.clear()``)."""
    store = roles.graph_stores.get(id(raw))
    if store is not None:
        return [Event("graph_store", store.container, raw.node, raw,
                      {"value": store.value, "how": store.how, "freed": store.freed, "fixed": store.fixed})]
    if not roles.keepers:
        return []
    if isinstance(raw, Assign):
        target = raw.target if raw.op == "=" else None
        if target is None:
            return []
        return [Event("graph_release", k, raw.node, raw) for k in sorted(roles.keepers)
                if k == target or k.startswith(target + ".")]
    if raw.method == "clear" and raw.receiver in roles.keepers and not raw.args:
        return [Event("graph_release", raw.receiver, raw.node, raw)]
    return []


def _counted(a: Assign) -> Event | None:
    """``n += 1`` (a positive integer literal added to a variable): ``count_up``; ``n = 0`` (an
    integer literal assigned): ``count_reset``; extra ``var``: the variable's name. The gradient
    machine reads them to know a counter is positive since a backward
    (:func:`~loopcheck.rules.gradients.pure_counters` says which variables only ever change so)."""
    if a.target is None or not isinstance(a.value, cst.Integer):
        return None
    var = a.target.rpartition(":")[2]
    if not var.isidentifier():
        return None  # an attribute, an item: not a variable
    if a.op == "AddAssign" and a.value.evaluated_value > 0:
        return Event("count_up", None, a.node, a, {"var": var})
    if a.op == "=":
        return Event("count_reset", None, a.node, a, {"var": var})
    return None


def _mode_saved(a: Assign, roles: Roles) -> Event | None:
    """``was_training = model.training``: the model's mode kept in a local variable
    (``mode_save``, extra ``var``: the variable's name), to be restored by
    ``model.train(was_training)`` or ``if was_training: model.train()``."""
    if a.op != "=" or not a.value_sym or not a.value_sym.endswith(".training") or a.target is None:
        return None
    var = a.target.rpartition(":")[2]  # the variable's name (a frame's symbol names it after its id)
    if not var.isidentifier():
        return None  # an attribute (self.was_training): not a variable
    owner = roles.canon(a.value_sym[: -len(".training")])
    if owner not in roles.models:
        return None
    return Event("mode_save", owner, a.node, a, {"var": var})


_CONTAINERS = (cst.List, cst.Tuple, cst.Set, cst.Dict, cst.ListComp, cst.SetComp, cst.DictComp, cst.GeneratorExp)


def _scaled_bound(a: Assign, roles: Roles) -> Event | None:
    """``loss = scaler.scale(loss)``, ``loss = criterion(out, y)``, ``loss = loss / n``: an
    assignment to a name that a GradScaler's ``scale()`` output is assigned to somewhere in the
    unit (:attr:`~loopcheck.engine.roles.Roles.scaled`, which does not say where). A
    ``scale_bind`` event of that name (its key in ``roles.scaled``), with extra ``scaler``: the
    GradScaler when the value is its ``scale()`` call, else ``None``; ``sources``: the names of
    ``roles.scaled`` the value is computed from (the name itself for ``loss /= n``), whose
    scaling the name keeps. A machine that follows these events knows, per path, whether the
    name holds a scaled value (scaled under ``if scaler is not None:`` only)."""
    if a.target is None or not roles.scaled:
        return None
    key = a.target if a.target in roles.scaled else roles.canon(a.target)
    if key not in roles.scaled:
        return None
    scaler = roles.scaled_calls.get(id(a.value)) if a.op == "=" and a.value is not None else None
    sources = {roles.canon(o) for o in a.operands} | set(a.operands)
    if a.op != "=":
        sources.add(key)
    return Event("scale_bind", key, a.node, a, {"scaler": scaler, "sources": frozenset(sources & roles.scaled.keys())})


def _optimizer_rebound(a: Assign, roles: Roles) -> Event | None:
    """``optimizer = other`` where both names are optimizers the roles keep apart (a helper's
    local returned from one of its ``if`` arms: ``optimizer = Adam(...)`` ... ``return
    optimizer``): the name now holds another optimizer object, whose construction, state and
    gradients are that object's. A ``havoc`` of the name's optimizer (every aspect): what it
    held before tells nothing of the object it holds now."""
    if a.op != "=" or a.target is None or a.value_sym is None:
        return None
    target, value = roles.canon(a.target), roles.canon(a.value_sym)
    if target == value or target not in roles.optimizers or value not in roles.optimizers:
        return None
    return Event("havoc", target, a.node, a)


def _optimizer_bound(a: Assign, roles: Roles) -> Event | None:
    """``self.optimizer = optimizer if optimizer is not None else AdamW(self.model.parameters())``:
    the optimizer's name re-bound by an expression that is not a plain name, whose every call
    is a construction of that optimizer (calls inside a construction's arguments aside) and
    which names no symbol of that optimizer. An ``opt_bind`` of the optimizer; ``builds``: the
    ``id()`` of the raw calls of those constructions made by this run of the statement (a
    function inlined twice has one syntax node and two raw calls per construction). Once the statement has run the name
    holds what the expression gave: on a path that built the optimizer in this statement, that
    construction's object; on any other path (the ``optimizer`` arm, a parameter given the
    caller's object) an object this path did not see built here, not the one the name held
    before. Nothing for a value with another call (an inlined factory may build the optimizer
    inside, ``self.optimizer = make_optimizer(model)``) or one that may be the optimizer itself
    (``self.optimizer = self.optimizer or Adam(...)``)."""
    if (a.op != "=" or a.target is None or a.value is None or a.value_sym is not None or a.sources is None
            or type(a.value) is cst.Call):
        return None  # (a construction alone: its ``opt_build`` is the binding)
    opt = roles.canon(a.target)
    info = roles.optimizers.get(opt)
    if info is None or any(roles.canon(m) == opt for m in a.mentions):
        return None
    ctors = [c for c in (info.ctor, *info.others) if c is not None]
    nodes = {id(c.node) for c in ctors}
    stack: list[cst.CSTNode] = [a.value]
    while stack:
        node = stack.pop()
        if type(node) is cst.Call:
            if id(node) not in nodes:
                return None  # a call that may return anything (a factory, a lookup)
            continue  # the construction's arguments are its own
        if type(node) is cst.Lambda:
            return None
        stack.extend(node.children)
    raws = {id(c) for c in ctors}
    builds = frozenset(id(c) for c in a.sources.calls if id(c) in raws)
    if not builds:
        return None
    return Event("opt_bind", opt, a.node, a, {"builds": builds})


#: The tensor methods that return a copy on a device (``v.to(device)``, ``v.cuda()``, ``v.cpu()``).
_DEVICE_COPIES = ("to", "cuda", "cpu")


def _optimizer_state_moved(a: Assign, roles: Roles) -> Event | None:
    """``state[k] = v.to(device)`` in ``for state in optimizer.state.values(): for k, v in
    state.items():`` (the outer loop may also iterate ``optimizer.state.items()``): each tensor of
    each parameter's state of the optimizer is replaced by its copy on the device the copy names.
    An ``opt_state_move`` of the optimizer; ``call`` is the copy (``v.to(device)``) and
    ``target`` its arguments' text, as a ``convert``'s. The state dict written must be the one
    the outer loop takes from the optimizer's ``state``, and the stored value a copy of a value
    the inner loop takes from that same dict's ``items()``. A loop's targets are the names the
    code spells (``state``), the store's the symbols of its frame (``f0_1:state`` inside an
    inlined function, ``state`` at module level): a name is compared with the symbol's last
    part, both symbols of one frame, and both loops in the same function."""
    if a.op != "[]=" or a.target is None or not isinstance(a.value, cst.Call) or a.sources is None:
        return None
    call = next((c for c in a.sources.calls if c.node is a.value), None)
    if call is None or call.method not in _DEVICE_COPIES or not call.func:
        return None
    receiver = call.func.rpartition(".")[0]  # ``v`` of ``v.to`` (``f0_1:v`` in an inlined frame)
    frame, _, name = a.target.rpartition(":")
    if receiver.rpartition(":")[0] != frame:
        return None
    loops = a.ctx.loops
    outer = next((i for i, lp in enumerate(loops) if lp.targets and name == lp.targets[-1]), None)
    if outer is None:
        return None
    opt = next((roles.canon(n.rpartition(".state.")[0]) for n in loops[outer].iter_calls
                if n.endswith((".state.values", ".state.items"))), None)
    if opt is None or opt not in roles.optimizers:
        return None
    if not any(f"{a.target}.items" in lp.iter_calls and len(lp.targets) == 2
               and receiver.rpartition(":")[2] == lp.targets[1] and lp.function == loops[outer].function
               for lp in loops[outer + 1:]):
        return None
    target = " ".join(cst.Module([]).code_for_node(arg.node) for arg in call.args)
    return Event("opt_state_move", opt, a.node, a, {"call": call, "target": target})


def _optimizer_params_set(a: Assign, roles: Roles) -> Event | None:
    """``optimizer.param_groups[i]["params"][j] = p`` (or ``optimizer.param_groups[i]["params"]
    = [p, q]``): the optimizer now holds ``p`` in that group, and steps it. An
    ``opt_params_set`` of the optimizer; ``params`` are the symbols the stored value may be or
    hold (:attr:`~loopcheck.engine.ir.Assign.held`)."""
    if a.op != "[]=" or a.target is None or not a.target.endswith(".param_groups") or a.slot is None:
        return None
    opt = roles.canon(a.target[: -len(".param_groups")])
    if opt not in roles.optimizers:
        return None
    keys, node = [], a.slot
    while type(node) is cst.Subscript:
        index = node.slice[0].slice if len(node.slice) == 1 else None
        if isinstance(index, cst.Index) and isinstance(index.value, cst.SimpleString):
            keys.append(index.value.evaluated_value)
        node = node.value
    if "params" not in keys:
        return None
    return Event("opt_params_set", opt, a.node, a, {"params": a.held if a.held is not None else a.mentions})


def _device_read(a: Assign, roles: Roles) -> Event | None:
    """``device = next(model.parameters()).device`` (also ``next(iter(model.parameters()))``):
    a variable bound to the device the model's parameters are on at this point
    (``device_read`` of the model, extra ``var``: the variable's symbol, as a move's
    :attr:`~loopcheck.engine.ir.Arg.sym` names it). A later ``model.to(device)`` goes back
    there (LC501). ``None`` for another value, or a target that is no plain variable."""
    value = a.value
    if a.op != "=" or a.target is None or not isinstance(value, cst.Attribute) or value.attr.value != "device":
        return None
    if not a.target.rpartition(":")[2].isidentifier():
        return None  # an attribute (self.device): other code may re-bind it
    call = value.value
    if not isinstance(call, cst.Call) or dotted_name(call.func) != "next" or len(call.args) != 1:
        return None
    inner = call.args[0].value
    if isinstance(inner, cst.Call) and dotted_name(inner.func) == "iter" and len(inner.args) == 1:
        inner = inner.args[0].value
    if not isinstance(inner, cst.Call) or inner.args:
        return None
    func = dotted_name(inner.func)
    if func is None or not func.endswith(".parameters"):
        return None
    owner = next((parameter_owner(m) for m in a.mentions if parameter_owner(m)), None)
    if owner is None or roles.canon(owner) not in roles.models or "next" in a.mentions or "iter" in a.mentions:
        return None
    return Event("device_read", roles.canon(owner), a.node, a, {"var": a.target})


def _plain_container(a: Assign) -> Event | None:
    """``self.layers = [...]``, ``self.heads = {...}``, ``self.blocks = []``: a plain list, tuple,
    set or dict (a display or a comprehension) assigned to an attribute of a name
    (``plain_container``, subject the attribute's symbol; whether the name is a method's ``self``
    and what the container holds are the rules' business)."""
    if a.op != "=" or type(a.value) not in _CONTAINERS or type(a.node) is not cst.Assign:
        return None
    targets = a.node.targets
    target = targets[0].target if len(targets) == 1 else None
    if not (isinstance(target, cst.Attribute) and isinstance(target.value, cst.Name)):
        return None  # x.attr = [...]: the rules check that x is the method's self
    return Event("plain_container", a.target, a.node, a)


def grad_owner(sym: str | None) -> str | None:
    """The tensor whose gradient ``sym`` names: ``p`` of ``p.grad`` and of ``p.grad.data``
    (a view of the same tensor), else ``None``."""
    if sym is None:
        return None
    for suffix in (".grad", ".grad.data"):
        if sym.endswith(suffix) and len(sym) > len(suffix):
            return sym[: -len(suffix)]
    return None


def _is_none(value: cst.BaseExpression | None) -> bool:
    return isinstance(value, cst.Name) and value.value == "None"


def _clears(value: cst.BaseExpression | None) -> bool:
    """``p.grad = None`` or ``p.grad = torch.zeros_like(p)``: the gradient is cleared, not set."""
    if value is None:
        return False
    if isinstance(value, cst.Name) and value.value == "None":
        return True
    if isinstance(value, cst.Call):
        name = value.func.attr.value if isinstance(value.func, cst.Attribute) else getattr(value.func, "value", "")
        return name in ("zeros_like", "zeros")
    return isinstance(value, cst.Integer) and value.value == "0"


def classify(raw: RawEvent, roles: Roles) -> list[Event]:
    """Typed events of one raw event."""
    if isinstance(raw, Call):
        return classify_call(raw, roles)
    return classify_assign(raw, roles)
