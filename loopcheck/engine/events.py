"""Typed training events: what a raw call or assignment means for the training loop.

:func:`classify` turns each raw event of the IR into zero or more :class:`Event` objects
(``zero_grad``, ``backward``, ``clip``, ``step``, ``sched_step``, ``train``/``eval``,
``forward``, ``convert``, ...) using the file's :class:`~loopcheck.engine.roles.Roles`.
Rules only ever see typed events. A call the engine does not understand that receives a
tracked object (``evaluate(model)`` from another module) becomes a ``havoc`` event: the
rules forget what they knew about that object and stay silent.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import libcst as cst

from loopcheck.engine.ir import Assign, Call, RawEvent
from loopcheck.engine.roles import WRAPPERS, Roles, last, parameter_owner

CLIP_FUNCS = {
    "torch.nn.utils.clip_grad_norm_",
    "torch.nn.utils.clip_grad_norm",
    "torch.nn.utils.clip_grad_value_",
    "torch.nn.utils.clip_grad.clip_grad_norm_",
    "torch.nn.utils.clip_grad.clip_grad_value_",
    "torch.nn.utils.get_total_norm",
}
DTYPE_CONVERSIONS = {"half", "float", "double", "bfloat16"}
DEVICE_CONVERSIONS = {"cuda", "cpu", "xpu", "mps"}
DTYPE_WORDS = re.compile(r"(float|half|bfloat16|double|dtype|fp16|bf16|int8)", re.I)
# Methods of nn.Module that change neither its mode, its gradients nor its parameters.
MODEL_READONLY = {
    "parameters", "named_parameters", "state_dict", "modules", "named_modules", "children",
    "named_children", "buffers", "named_buffers", "load_state_dict", "register_forward_hook",
    "register_forward_pre_hook", "register_full_backward_hook", "register_buffer",
    "save_pretrained", "get_input_embeddings", "get_output_embeddings", "num_parameters",
    "resize_token_embeddings", "config", "generate", "print_trainable_parameters",
    "gradient_checkpointing_enable", "tie_weights", "extra_repr", "get_submodule",
    "requires_grad_", "share_memory", "estimate_tokens", "floating_point_ops",
}
METER_NAME = re.compile(r"(meter|avg|average|losses|running)", re.I)
SELF_RETURNING = {"to", "cuda", "cpu", "half", "float", "double", "bfloat16", "train", "eval", "requires_grad_"}
OPT_READONLY = {"state_dict", "add_param_group", "param_groups"}
PURE_FUNCS = re.compile(
    r"^(print|len|str|repr|isinstance|hasattr|getattr|id|type|sum|vars|format|copy\.deepcopy|"
    r"torch\.save|logging\.\w+|wandb\.\w+|\w*logger\.\w+|log\.\w+|pprint\w*)$"
)


@dataclass(eq=False)
class Event:
    """One typed training event.

    Attributes:
        kind: what happens (see module docstring).
        subject: the symbol it happens to (optimizer, model, scheduler, scaler, loss), or None.
        node: the LibCST node to report (a ``cst.Call`` or a statement).
        raw: the raw event it came from (its ``ctx`` gives loops, grad mode, conditions).
        extra: kind-specific details (``scaler``, ``models``, ``managed``, ...).
    """

    kind: str
    subject: str | None
    node: cst.CSTNode
    raw: RawEvent
    extra: dict = field(default_factory=dict)

    @property
    def ctx(self):
        return self.raw.ctx


def _models_of(roles: Roles, mentions) -> set[str]:
    """The models whose parameters (or which, named directly) a clip call's arguments take."""
    out = set()
    for m in mentions:
        owner = parameter_owner(m)
        if owner is not None:
            out.add(roles.canon(owner))
        c = roles.canon(m)
        if c in roles.models:
            out.add(c)
    return out


def _is_false(node: cst.BaseExpression) -> bool:
    return isinstance(node, cst.Name) and node.value == "False"


def _inf_literal(node: cst.BaseExpression) -> bool:
    code = cst.Module([]).code_for_node(node).replace(" ", "")
    return code in ("float('inf')", 'float("inf")', "math.inf", "torch.inf", "np.inf", "inf")


def classify_call(c: Call, roles: Roles) -> list[Event]:
    """The typed events of one raw call (usually zero or one)."""
    out: list[Event] = []
    method = c.method
    recv = roles.canon(c.receiver) if c.receiver else None
    # model.to(device).train(): methods that return the module itself keep the receiver
    if c.inner is not None and c.inner.method in SELF_RETURNING and c.inner.receiver and method != "backward":
        recv = roles.canon(c.inner.receiver)
    q = c.func if c.qualified else None
    target = c.targets[0] if len(c.targets) == 1 else None
    ev = lambda kind, subject, **extra: out.append(Event(kind, subject, c.node, c, extra))  # noqa: E731

    # construction
    if target is not None:
        t = roles.canon(target)
        if target in roles.optimizers and roles.optimizers[target].builds(c):
            info = roles.optimizers[target]
            ev("opt_build", target, models=info.models, eager=info.eager_state)
            return out
        if target in roles.schedulers and roles.schedulers[target].builds(c):
            ev("sched_build", target)
            return out
        if target in roles.scalers and roles.scalers[target] is c:
            ev("scaler_build", target)
            return out
        if t in roles.models and target not in roles.alias and not _wraps(c, roles, t):
            ev("model_build", t)
            return out

    # calls on a call result: scaler.scale(loss).backward(), loss.mean().backward()
    if c.inner is not None and recv is None:
        if method == "backward":
            inner = c.inner
            if inner.receiver and roles.canon(inner.receiver) in roles.scalers and inner.method == "scale":
                loss = inner.args[0].sym if inner.args else None
                ev("backward", loss, scaler=roles.canon(inner.receiver))
            else:
                ev("backward", inner.receiver, scaler=None)
        return out

    if q is not None:
        if q in CLIP_FUNCS:
            params = c.args[0].mentions if c.args else frozenset()
            max_norm = next((a.node for a in c.args[1:2] if a.keyword is None), None)
            for a in c.args:
                if a.keyword in ("max_norm", "clip_value"):
                    max_norm = a.node
            ev("clip", None, models=_models_of(roles, params),
               measure_only=max_norm is not None and _inf_literal(max_norm) or q.endswith("get_total_norm"))
        elif q == "torch.autograd.backward" and c.args:
            ev("backward", c.args[0].sym, scaler=None)
        elif not WRAPPERS.search(q):  # DDP(model), torch.compile(model) share its parameters
            _havoc_args(c, roles, ev)
        return out

    if recv is None:
        # a plain call of a local symbol: the forward pass of a model
        f = roles.canon(c.func) if c.func else None
        if f in roles.models:
            ev("forward", f)
        elif f and not PURE_FUNCS.match(c.func or ""):
            _havoc_args(c, roles, ev)
        return out

    if recv in roles.optimizers:
        if method == "zero_grad":
            ev("zero_grad", recv)
        elif method == "step":
            ev("step", recv, scaler=None, closure=bool(c.args))
        elif method == "load_state_dict":
            ev("opt_load_state", recv)
        elif method not in OPT_READONLY:
            ev("havoc", recv)
        return out
    if recv in roles.schedulers:
        if method == "step":
            ev("sched_step", recv, nargs=len(c.args))
        return out
    if recv in roles.scalers:
        opt = roles.canon(c.args[0].sym) if c.args and c.args[0].sym else None
        if method == "step":
            ev("scaler_step", recv, optimizer=opt)
            if opt is not None:
                ev("step", opt, scaler=recv, closure=False)
        elif method == "unscale_":
            ev("unscale", recv, optimizer=opt)
        elif method == "update":
            ev("scaler_update", recv)
        return out
    if recv in roles.models:
        if method == "train":
            if not c.args:
                ev("train", recv)
            elif _is_false(c.args[0].node):
                ev("eval", recv)
            elif isinstance(c.args[0].node, cst.Name) and c.args[0].node.value == "True":
                ev("train", recv)
            else:
                ev("mode_unknown", recv)
        elif method == "eval":
            ev("eval", recv)
        elif method == "zero_grad":
            ev("zero_grad_model", recv)
        elif method == "forward":
            ev("forward", recv)
        elif method == "float" and c.inner is not None and c.inner.method in DTYPE_CONVERSIONS:
            ev("convert", recv, how="restore")  # model.half().float(): back to float32
        elif method in DTYPE_CONVERSIONS:
            ev("convert", recv, how="dtype")
        elif method in DEVICE_CONVERSIONS:
            ev("convert", recv, how="device")
        elif method in ("to", "type"):
            text = " ".join(cst.Module([]).code_for_node(a.node) for a in c.args)
            ev("convert", recv, how="dtype" if DTYPE_WORDS.search(text) else "device")
        elif method not in MODEL_READONLY:
            ev("havoc", recv)
        return out
    if method == "backward" and c.receiver:
        if c.args and (recv in roles.accelerators or re.search(r"(accelerator|fabric)", last(recv), re.I)):
            ev("backward", c.args[0].sym, scaler=None, managed=True)
        elif not c.args or c.args[0].keyword is not None or c.args[0].sym is None or "grad" in (c.args[0].sym or ""):
            ev("backward", c.receiver, scaler=roles.scaled.get(roles.canon(c.receiver)))
        return out
    if method == "clip_grad_norm_" or method == "clip_grad_value_":
        params = c.args[0].mentions if c.args else frozenset()
        ev("clip", None, models=_models_of(roles, params), managed=True, measure_only=False)
        return out
    if method in ("zero_", "zero") and c.receiver and (c.receiver.endswith(".grad") or c.receiver.endswith(".grad.data")):
        ev("zero_grad_all", None)
        return out
    if method in ("append", "extend", "add", "insert", "put") and c.args:
        a = c.args[-1]
        if a.sym and roles.canon(a.sym) in roles.losses:
            ev("store_loss", recv, loss=roles.canon(a.sym), how=f"{last(c.receiver)}.{method}()")
        return out
    if method == "update" and c.args and METER_NAME.search(last(c.receiver)):
        # AverageMeter.update(val, n): ``self.sum += val * n`` keeps the graph of every step
        a = c.args[0]
        if a.sym and a.keyword is None and roles.canon(a.sym) in roles.losses:
            ev("store_loss", recv, loss=roles.canon(a.sym), how=f"{last(c.receiver)}.update()")
        return out
    if not PURE_FUNCS.match(c.func or ""):
        _havoc_args(c, roles, ev)
    return out


def _wraps(c: Call, roles: Roles, t: str) -> bool:
    """``model = DDP(model)``, ``model = convert_sync_batchnorm(model).to(device)``: the same
    module (or a wrapper sharing its parameters), not a new model."""
    while c is not None:
        if any(roles.canon(a.sym) == t for a in c.args if a.sym) or roles.canon(c.receiver) == t:
            return True
        c = c.inner
    return False


def _havoc_args(c: Call, roles: Roles, ev) -> None:
    seen = set()
    for a in c.args:
        s = roles.canon(a.sym) if a.sym else None
        if s and s not in seen and (s in roles.models or s in roles.optimizers or s in roles.scalers or s in roles.schedulers):
            seen.add(s)
            ev("havoc", s)


def classify_assign(a: Assign, roles: Roles) -> list[Event]:
    """Typed events of an assignment: loss values stored, ``.grad`` cleared, submodules replaced."""
    out: list[Event] = []
    target = a.target
    if target is None:
        return out
    if target.endswith(".grad") and a.op == "=":
        out.append(Event("zero_grad_all", None, a.node, a))
        return out
    prefix, _, attr = target.rpartition(".")
    canon_prefix = roles.canon(prefix) if prefix else None
    if (
        a.op == "=" and canon_prefix in roles.models and isinstance(a.value, cst.Call)
        and a.value_kind == "call" and _builds_module(a.value)
    ):
        out.append(Event("submodule_replace", canon_prefix, a.node, a, {"attr": attr}))
        return out
    if a.op != "=" and a.value_kind == "expr":
        # ``total += loss``, ``self.sum += val * n``: the bare tensor, not loss.item()
        loss = next((roles.canon(m) for m in sorted(a.mentions) if roles.canon(m) in roles.losses), None)
        if loss is not None:
            out.append(Event("store_loss", target, a.node, a, {"loss": loss, "how": a.op}))
    if target in roles.losses or roles.canon(target) in roles.losses:
        out.append(Event("loss_assign", roles.canon(target), a.node, a, {"value_kind": a.value_kind}))
    return out


def _builds_module(call: cst.Call) -> bool:
    """``nn.Linear(...)``, ``Head(...).to(device)``: a call that builds a module (a class name)."""
    name = call.func
    while isinstance(name, (cst.Attribute, cst.Call)):
        if isinstance(name, cst.Call):
            name = name.func
            continue
        if name.attr.value[:1].isupper():
            return True
        name = name.value
    return isinstance(name, cst.Name) and name.value[:1].isupper()


def classify(raw: RawEvent, roles: Roles) -> list[Event]:
    """Typed events of one raw event."""
    if isinstance(raw, Call):
        return classify_call(raw, roles)
    return classify_assign(raw, roles)
