"""Roles: what each symbol of a file is — model, optimizer, LR scheduler, GradScaler, loss.

Roles are inferred flow-insensitively from all raw events of a file, first from how a
symbol is built (``torch.optim.Adam(model.parameters())``), then from how it is used
(``x.zero_grad()`` and ``x.step()`` make an optimizer), then from its name as a last
resort for ``.step()`` receivers (``lr_scheduler``). A symbol whose role stays unclear
gets none, and rules ignore it.

Knowledge sources: the ``torch.optim`` and ``torch.optim.lr_scheduler`` API reference
(which schedulers are meant to be stepped per epoch or per batch, which constructor
argument is the period), ``torch.amp.GradScaler``, transformers/diffusers/timm scheduler
factories, and the seeds in ``shared/seeds``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import libcst as cst

from loopcheck.engine.builder import ModuleIndex
from loopcheck.engine.ir import Assign, Call, RawEvent
from loopcheck.engine.walk import names_in

# -- knowledge tables ---------------------------------------------------------------------

OPTIMIZER_FACTORIES = {
    "timm.optim.create_optimizer_v2",
    "timm.optim.create_optimizer",
    "timm.optim.optim_factory.create_optimizer_v2",
    "transformers.AdamW",
    "transformers.optimization.AdamW",
    "transformers.Adafactor",
    "torch.distributed.optim.ZeroRedundancyOptimizer",
}
OPTIMIZER_MODULE_PREFIXES = ("torch.optim.", "bitsandbytes.optim.", "apex.optimizers.", "torch_optimizer.")
EAGER_STATE_OPTIMIZERS = {"torch.optim.Adagrad"}

# Schedulers meant to be stepped once per epoch, with the positional index and keyword of
# the argument that gives the schedule's period (None: no period argument).
EPOCH_SCHEDULERS = {
    "StepLR": (1, "step_size"),
    "MultiStepLR": (1, "milestones"),
    "CosineAnnealingLR": (1, "T_max"),
    "ExponentialLR": (None, None),
    "PolynomialLR": (1, "total_iters"),
    "LinearLR": (3, "total_iters"),
    "ConstantLR": (2, "total_iters"),
}
BATCH_SCHEDULERS = {"OneCycleLR", "CyclicLR"}
PLATEAU_SCHEDULERS = {"ReduceLROnPlateau"}
SCHEDULER_MODULES = ("torch.optim.lr_scheduler.", "torch.optim.")
BATCH_SCHEDULER_FACTORY = re.compile(
    r"^(transformers|diffusers\.optimization|transformers\.optimization)\.get_\w*(schedule|scheduler)\w*$"
)
OTHER_SCHEDULER_FACTORY = re.compile(r"^timm\.scheduler\.\w+$")

SCALERS = {
    "torch.amp.GradScaler",
    "torch.cuda.amp.GradScaler",
    "torch.cpu.amp.GradScaler",
    "torch.amp.grad_scaler.GradScaler",
    "torch.cuda.amp.grad_scaler.GradScaler",
}
LOADERS = {"torch.utils.data.DataLoader", "torch.utils.data.dataloader.DataLoader"}
MODEL_FACTORIES = re.compile(
    r"^(torch\.nn\.(?!functional)[A-Z]\w*|torchvision\.models\.\w+(\.\w+)?|timm\.create_model|"
    r"transformers\.\w*(Model|For)\w*\.from_pretrained|transformers\.\w*(Model|For)\w*|"
    r"torch\.hub\.load)$"
)
WRAPPERS = re.compile(
    r"(^|\.)(DistributedDataParallel|DataParallel|DDP|compile|prepare|prepare_model|setup|"
    r"setup_module|initialize|convert_sync_batchnorm|to|cuda|half|float|double|bfloat16|"
    r"train|eval|module)$"
)
NOT_MODELS = re.compile(r"(Loss|Dropout|Parameter|ModuleList|ModuleDict|ParameterList)$")
ACCELERATOR_CTORS = re.compile(r"^(accelerate\.Accelerator|lightning\.\w*\.?Fabric|lightning\.fabric\.Fabric|lightning\.Fabric)$")
FUNCTIONAL_LOSS = re.compile(
    r"^torch\.nn\.functional\.(\w*loss\w*|cross_entropy|binary_cross_entropy\w*|kl_div|\w+_loss)$"
)
OPTIMIZER_NAME = re.compile(r"^(optimizer|optimiser|optim|opt)(_\w+)?$|_(optimizer|optimiser|opt|optim)$|^optimizer\w*$")
SCHEDULER_NAME = re.compile(r"sched")
SCALER_NAME = re.compile(r"scaler")
LOADER_NAME = re.compile(r"(loader|_dl$|^dl$|dataloader|batches)", re.I)


def last(sym: str) -> str:
    """``"f3:self@T.train_loader"`` → ``"train_loader"``."""
    return sym.rpartition(".")[2].rpartition(":")[2]


@dataclass
class OptimizerInfo:
    """An optimizer symbol: its constructor call, qualified class, the model symbols whose
    parameters it was built from, and whether it builds its state in ``__init__``."""

    ctor: Call | None
    qualname: str | None
    models: set[str] = field(default_factory=set)
    eager_state: bool = False
    others: list[Call] = field(default_factory=list)  # more constructions (``if``/``elif`` arms)

    def builds(self, call: Call) -> bool:
        """Whether ``call`` constructs this optimizer."""
        return call is self.ctor or any(call is c for c in self.others)


@dataclass
class SchedulerInfo:
    """An LR scheduler symbol.

    Attributes:
        kind: ``"epoch"`` (StepLR, MultiStepLR, CosineAnnealingLR, ...), ``"batch"``
            (OneCycleLR, CyclicLR, transformers ``get_*_schedule*``), ``"plateau"``
            (ReduceLROnPlateau) or ``"unknown"``.
        unit: for epoch schedulers, what the period argument counts: ``"epochs"``,
            ``"steps"``, ``"literal"`` (a number) or ``"unknown"``.
    """

    ctor: Call | None
    qualname: str | None
    kind: str
    unit: str = "unknown"
    optimizer: str | None = None
    others: list[Call] = field(default_factory=list)  # more constructions (``if``/``elif`` arms)

    def builds(self, call: Call) -> bool:
        """Whether ``call`` constructs this scheduler."""
        return call is self.ctor or any(call is c for c in self.others)


@dataclass
class Roles:
    optimizers: dict[str, OptimizerInfo] = field(default_factory=dict)
    schedulers: dict[str, SchedulerInfo] = field(default_factory=dict)
    scalers: dict[str, Call | None] = field(default_factory=dict)
    models: set[str] = field(default_factory=set)
    loaders: set[str] = field(default_factory=set)
    losses: set[str] = field(default_factory=set)
    criteria: set[str] = field(default_factory=set)  # ``criterion = nn.CrossEntropyLoss()``
    accelerators: set[str] = field(default_factory=set)
    local_modules: set[str] = field(default_factory=set)
    alias: dict[str, str] = field(default_factory=dict)
    scaled: dict[str, str] = field(default_factory=dict)  # ``x = scaler.scale(loss)``: x → scaler

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


def _is_optimizer_ctor(q: str | None) -> bool:
    if not q:
        return False
    if q in OPTIMIZER_FACTORIES:
        return True
    if "lr_scheduler" in q or "swa_utils" in q:
        return False
    name = q.rpartition(".")[2]
    return q.startswith(OPTIMIZER_MODULE_PREFIXES) and name[:1].isupper() and name != "Optimizer"


def scheduler_kind(q: str | None) -> str | None:
    """``"epoch"``/``"batch"``/``"plateau"``/``"unknown"`` for a scheduler constructor's
    qualified name, ``None`` when ``q`` is not a scheduler."""
    if not q:
        return None
    if BATCH_SCHEDULER_FACTORY.match(q):
        return "batch"
    if OTHER_SCHEDULER_FACTORY.match(q):
        return "unknown"
    if not q.startswith("torch.optim.lr_scheduler."):
        return None
    name = q.rpartition(".")[2]
    if name in EPOCH_SCHEDULERS:
        return "epoch"
    if name in BATCH_SCHEDULERS:
        return "batch"
    if name in PLATEAU_SCHEDULERS:
        return "plateau"
    return "unknown" if name[:1].isupper() else None


STEP_WORDS = re.compile(r"(steps|iter|batch|total|num_training|updates|^len$)", re.I)
EPOCH_WORDS = re.compile(r"epoch", re.I)


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


def _arg(call: Call, index: int | None, keyword: str | None):
    for a in call.args:
        if keyword is not None and a.keyword == keyword:
            return a
    positional = [a for a in call.args if a.keyword is None]
    if index is not None and index < len(positional):
        return positional[index]
    return None


def exponential_unit(call: Call) -> str:
    """ExponentialLR has no period: a gamma below 0.99 only makes sense per epoch."""
    arg = _arg(call, 1, "gamma")
    if arg is not None and isinstance(arg.node, cst.Float):
        try:
            return "literal" if float(arg.node.value) < 0.99 else "steps"
        except ValueError:
            return "unknown"
    return "unknown"


def parameter_owner(chain: str) -> str | None:
    """``"model.backbone"`` for ``"model.backbone.parameters"`` (also ``named_parameters``);
    ``None`` when the chain does not take a module's parameters."""
    for marker in (".parameters", ".named_parameters"):
        if chain.endswith(marker) or (marker + ".") in chain:
            return chain.split(marker)[0]
    return None


def _param_models(mentions, defs: dict[str, list[frozenset[str]]], depth: int = 0) -> set[str]:
    """Modules whose parameters an optimizer's arguments take, following up to three
    assignments (``params = [p for p in model.parameters() if p.requires_grad]``)."""
    out: set[str] = set()
    for m in mentions:
        owner = parameter_owner(m)
        if owner is not None:
            out.add(owner)
        if depth < 3 and m in defs:
            for d in defs[m]:
                out |= _param_models(d, defs, depth + 1)
    return out


def infer_roles(index: ModuleIndex, events: list[RawEvent]) -> Roles:
    """Infer the roles of every symbol from the raw events of all units of one file."""
    roles = Roles()
    for name, info in index.classes.items():
        if any(b.startswith("torch.nn.") or b in index.classes for b in info.bases):
            roles.local_modules.add(name)
    # local classes that subclass local modules
    changed = True
    while changed:
        changed = False
        for name, info in index.classes.items():
            if name not in roles.local_modules and any(b in roles.local_modules for b in info.bases):
                roles.local_modules.add(name)
                changed = True

    defs: dict[str, list[frozenset[str]]] = {}
    methods: dict[str, set[str]] = {}
    calls = [e for e in events if isinstance(e, Call)]
    for e in events:
        if isinstance(e, Assign) and e.op == "=":
            defs.setdefault(e.target, []).append(e.mentions)
        elif isinstance(e, Call):
            for t in e.targets:
                if t:
                    defs.setdefault(t, []).append(frozenset().union(*(a.mentions for a in e.args)) if e.args else frozenset())
            if e.receiver and e.method:
                methods.setdefault(e.receiver, set()).add(e.method)

    # 1. construction
    for c in calls:
        q = c.func if c.qualified else None
        target = c.targets[0] if len(c.targets) == 1 else None
        if target is None:
            continue
        if c.qualified is False and c.func in index.classes and c.func in roles.local_modules:
            roles.models.add(target)
        elif _is_optimizer_ctor(q):
            mentions = frozenset().union(*(a.mentions for a in c.args)) if c.args else frozenset()
            models = _param_models(mentions, defs)
            known = roles.optimizers.get(target)
            if known is not None and known.ctor is not None:  # built in each arm of an if/elif
                known.others.append(c)
                known.models |= models
                known.eager_state = known.eager_state or q in EAGER_STATE_OPTIMIZERS
            else:
                roles.optimizers[target] = OptimizerInfo(c, q, models, q in EAGER_STATE_OPTIMIZERS)
        elif (kind := scheduler_kind(q)) is not None:
            info = SchedulerInfo(c, q, kind)
            name = (q or "").rpartition(".")[2]
            if kind == "epoch":
                if name == "ExponentialLR":
                    info.unit = exponential_unit(c)
                else:
                    idx, kw = EPOCH_SCHEDULERS[name]
                    arg = _arg(c, idx, kw)
                    info.unit = "literal" if arg is None or arg.literal else period_unit(arg.node)
            opt_arg = _arg(c, 0, "optimizer")
            info.optimizer = opt_arg.sym if opt_arg else None
            known = roles.schedulers.get(target)
            if known is not None and known.ctor is not None:  # one scheduler per if/elif arm
                known.others.append(c)
                if (known.kind, known.unit) != (info.kind, info.unit):
                    known.kind, known.unit = "unknown", "unknown"
            else:
                roles.schedulers[target] = info
        elif q in SCALERS:
            roles.scalers[target] = c
        elif q in LOADERS:
            roles.loaders.add(target)
        elif q and q.startswith("torch.nn.") and q.endswith("Loss"):
            roles.criteria.add(target)
        elif q and ACCELERATOR_CTORS.match(q):
            roles.accelerators.add(target)
        elif q and MODEL_FACTORIES.match(q) and not NOT_MODELS.search(q):
            roles.models.add(target)

    # 1b. plain re-bindings of constructed objects (``optimizer, sched = build(...)``)
    constructed = set(roles.optimizers) | set(roles.schedulers) | set(roles.scalers) | set(roles.models) | roles.criteria
    for e in events:
        if isinstance(e, Assign) and e.op == "=" and e.value_sym in constructed and e.target not in constructed:
            roles.alias[e.target] = e.value_sym

    # 2. usage
    for sym, ms in methods.items():
        if sym in roles.alias or sym in roles.optimizers or sym in roles.schedulers or sym in roles.scalers:
            continue
        name = last(sym)
        if "zero_grad" in ms and "step" in ms and sym not in roles.models:
            roles.optimizers[sym] = OptimizerInfo(None, None)
        elif {"train", "eval"} & ms and "step" not in ms:
            roles.models.add(sym)
        elif "step" in ms and SCHEDULER_NAME.search(name) and "scale" not in ms:
            roles.schedulers[sym] = SchedulerInfo(None, None, "unknown")
        elif "scale" in ms and ("update" in ms or SCALER_NAME.search(name)):
            roles.scalers[sym] = None
    for c in calls:
        if c.receiver in roles.scalers and c.method in ("step", "unscale_") and c.args:
            sym = c.args[0].sym
            if sym and sym not in roles.optimizers:
                roles.optimizers[sym] = OptimizerInfo(None, None)
        elif (
            c.method == "step" and c.receiver and not c.args and c.receiver not in roles.optimizers
            and c.receiver not in roles.alias
            and c.receiver not in roles.schedulers and OPTIMIZER_NAME.search(last(c.receiver))
            and c.receiver not in roles.models
        ):
            roles.optimizers[c.receiver] = OptimizerInfo(None, None)

    # 2b. optimizers known by use but built by a factory (``model.configure_optimizers()``,
    # ``smart_optimizer(model, ...)``): the one call they are assigned from builds them
    built_by: dict[str, list[Call]] = {}
    for c in calls:
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
            info.models = _param_models(mentions, defs) | {m for m in mentions if m in roles.models}

    # 3. aliases: wrappers share parameters with the wrapped model
    tracked = set(roles.optimizers) | set(roles.models) | set(roles.schedulers) | set(roles.scalers)
    for c in calls:
        if not c.targets:
            continue
        func = c.func or ""
        if c.inner is None and WRAPPERS.search(func):
            positional = [a.sym for a in c.args if a.keyword is None]
            recv = c.receiver if not c.qualified else None
            if recv in tracked and len(c.targets) == 1 and c.targets[0] and c.targets[0] != recv:
                roles.alias[c.targets[0]] = recv
            elif len(c.targets) == len(positional):
                for t, a in zip(c.targets, positional):
                    if t and a and t != a and a in tracked:
                        roles.alias[t] = a
            elif len(c.targets) == 1 and c.targets[0] and positional and positional[0] in tracked:
                if c.targets[0] != positional[0]:
                    roles.alias[c.targets[0]] = positional[0]
    for e in events:
        if isinstance(e, Assign) and e.op == "=" and e.value_sym and e.target != e.value_sym:
            v = roles.canon(e.value_sym)
            if v in tracked and e.target not in tracked:
                roles.alias[e.target] = v

    # the models an optimizer updates, through their aliases; they are models too
    for info in roles.optimizers.values():
        info.models = {roles.canon(m) for m in info.models}  # type: ignore[misc]
        roles.models |= info.models
    for c in calls:
        if c.method == "scale" and c.receiver and roles.canon(c.receiver) in roles.scalers:
            for t in c.targets:
                if t:
                    roles.scaled[t] = roles.canon(c.receiver)
    # 4. losses: what backward() is called on, and what a loss function returns
    for c in calls:
        if len(c.targets) == 1 and c.targets[0] and c.inner is None and (
            (not c.qualified and roles.canon(c.func) in roles.criteria)
            or (c.qualified and FUNCTIONAL_LOSS.match(c.func or ""))
        ):
            roles.losses.add(c.targets[0])
        if c.method == "backward":
            if c.inner is not None and c.inner.method == "scale" and c.inner.args and c.inner.args[0].sym:
                roles.losses.add(c.inner.args[0].sym)
            elif c.inner is not None and c.inner.receiver:
                roles.losses.add(c.inner.receiver)
            elif c.receiver:
                roles.losses.add(c.receiver)
            elif c.args and c.args[0].sym and c.func and not c.qualified:
                roles.losses.add(c.args[0].sym)
            elif c.qualified and c.func == "torch.autograd.backward" and c.args and c.args[0].sym:
                roles.losses.add(c.args[0].sym)
    return roles
