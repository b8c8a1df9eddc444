"""What library calls do to a training loop, read from declarative entries.

The entries live in ``loopcheck/knowledge/*.toml``, one file per library, beside the engine
(as typeshed is for types). Each entry describes a library function or class in the same
vocabulary the engine uses for the project's own functions (:class:`Summary`): the training
events a call causes on its arguments (``backward`` of argument 0, ``step`` of the receiver,
...), what it returns (one of its arguments, an object with a role such as ``optimizer``, an
instance of a library class whose methods have entries of their own, a number), and the
grad mode its body or ``with`` block runs in. A call that matches an entry has exactly the
effects listed there and no others; a call into a library with no entry is opaque, and the
rules forget what they knew about the tracked objects it receives.

File format (see ``loopcheck/knowledge/README.md``)::

    [[function]]
    names = ["torch.nn.utils.clip_grad_norm_"]     # qualified names; fnmatch patterns allowed
    effects = [{event = "clip", params = 0, max_norm = [1, "max_norm"]}]
    source = "https://pytorch.org/docs/stable/generated/torch.nn.utils.clip_grad_norm_.html"

    [[class]]
    names = ["torch.optim.Adam"]
    bases = ["torch.optim.Optimizer"]              # methods not listed here come from the bases
    returns = {role = "optimizer", params = [0, "params"]}   # what the constructor returns
    [class.methods]
    step = [{event = "step", optimizer = "self"}]

An argument reference is a position (``0``), a keyword (``"params"``), both as a pair
(``[1, "max_norm"]``), ``"self"`` (the receiver of a method call) or ``"*"`` (every
positional argument).

Raises:
    KnowledgeError: at import, when an entry uses a key or an event the engine does not know
        (the entries ship with the package; a bad entry is a bug caught by the tests).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache
from importlib import resources
from typing import Union

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib  # type: ignore[no-redef]

ArgRef = Union[int, str, tuple]  # 0 | "params" | (0, "params") | "self" | "*"

#: Event kinds an entry may name, with the argument keys each takes. The engine's typed
#: events (:mod:`loopcheck.engine.events`) use the same names.
EVENTS: dict[str, frozenset[str]] = {
    "backward": frozenset({"loss", "gradient", "managed"}),
    "clip": frozenset({"params", "max_norm", "managed", "measure_only"}),
    "step": frozenset({"optimizer", "closure"}),
    # set_to_none: the argument that says whether it sets each ``.grad`` to None (the default
    # from PyTorch 2.0, ``[since] zero_grad_set_to_none``) or fills it with zeros
    "zero_grad": frozenset({"optimizer", "params", "set_to_none"}),
    # the call writes values into the tensor ``tensor`` in place (``Tensor.copy_``): into a
    # parameter's ``.grad``, a gradient written by hand, when ``.grad`` holds a tensor
    "grad_write": frozenset({"tensor"}),
    "opt_load_state": frozenset({"optimizer"}),
    "sched_step": frozenset({"scheduler", "metric"}),
    "train": frozenset({"model", "mode"}),
    "eval": frozenset({"model"}),
    "forward": frozenset({"model"}),
    "convert": frozenset({"model", "how", "dtype", "layout"}),
    "unscale": frozenset({"scaler", "optimizer"}),
    "scaler_step": frozenset({"scaler", "optimizer"}),
    "scaler_update": frozenset({"scaler"}),
    "store": frozenset({"value", "container"}),
    "havoc": frozenset({"arg", "aspects"}),
    "requires_grad": frozenset({"model", "mode"}),
    "grad_query": frozenset({"loss"}),
    # what a loss call needs its input to be: "logits", "probabilities" or "log_probabilities"
    "loss_input": frozenset({"input", "expects"}),
    "set_epoch": frozenset({"sampler"}),
    # the module's parameters are replaced by new Parameter objects (FSDP's flat parameters)
    "params_replaced": frozenset({"model"}),
    # the result references the object's live state tensors (``state_dict()``)
    "state_ref": frozenset({"model", "optimizer", "scheduler"}),
    "load_state": frozenset({"model", "scheduler", "state"}),
    "save": frozenset({"value"}),
    # the call runs the function ``fn`` on every submodule of ``model`` and on ``model`` itself
    # (``nn.Module.apply``): what that function does to the module it is given, it does to
    # each of them (:func:`loopcheck.engine.summaries.module_mode`)
    "each_module": frozenset({"model", "fn"}),
}
#: What a havoc can make unknown: a model's train/eval mode, gradients (of a model or an
#: optimizer), a scheduler's position, a GradScaler's state, a model's parameters.
ASPECTS = frozenset({"mode", "grads", "lr", "scale", "params"})
#: ``returns.value`` kinds of a result that carries no autograd graph, whatever its inputs
#: carry: a Python number, a detached tensor, an integer or boolean tensor (only floating
#: point tensors can require gradients, https://pytorch.org/docs/stable/notes/autograd.html).
NO_GRAPH = frozenset({"number", "detached", "integer"})
ROLES = frozenset({"optimizer", "scheduler", "scaler", "loader", "model", "criterion", "loss", "accelerator"})
_ROLE_KEYS = frozenset({
    "role", "params", "eager_state", "moves_state", "state_when", "schedule", "period", "optimizer", "same", "type", "value",
    "sampler", "items", "first_change", "constant_when", "shares", "fresh_items", "accumulation", "copies", "collate",
    "process_fact", "synced", "of_arguments", "copy_of",
})
_ENTRY_KEYS = frozenset({
    "names", "bases", "effects", "returns", "methods", "attributes", "grad", "source", "context", "modes",
    "mode_args", "modes_none_if_zero", "parameters", "setting", "grad_off_arg", "only_before", "block_mode",
    "exits", "requires_grad_arg", "autocast", "zero_dim", "keeps_shape", "tensor_input",
})
#: Process-wide settings a call changes (``setting`` of a function entry; its first argument
#: says the new value): ``overwrite_params_on_conversion``, whether ``Module.to()``/``half()``
#: make new ``Parameter`` objects instead of converting them in place
#: (``torch.__future__.set_overwrite_module_params_on_conversion``); ``default_dtype``, the
#: dtype ``torch.nn`` layers build their parameters in (``torch.set_default_dtype``);
#: ``default_device``, the device they build them on (``torch.set_default_device``; CPU
#: unless changed). ``torch.set_default_tensor_type`` changes both.
SETTINGS = frozenset({"overwrite_params_on_conversion", "default_dtype", "default_device"})
#: Behaviours of PyTorch that rules rely on and that began with a version (the top-level
#: ``[since]`` table gives it): ``scheduler_step_after_optimizer``, from PyTorch 1.1 a scheduler
#: is stepped after ``optimizer.step()`` and a ``scheduler.step()`` before it skips the first value
#: of the schedule (LC202; before 1.1 the constructor did not step, and the documented order was
#: ``scheduler.step()`` at the top of the epoch); ``zero_grad_set_to_none``, from PyTorch 2.0
#: ``Optimizer.zero_grad()`` and ``Module.zero_grad()`` set each ``.grad`` to None unless given
#: ``set_to_none=False`` (before 2.0 they filled it with zeros by default): a gradient then
#: written into ``.grad`` in place (``p.grad.copy_(g)``) finds no tensor to write into;
#: ``grad_mode``, from PyTorch 0.4 whether a computation records a graph is a mode of the thread
#: (``torch.no_grad()``, ``torch.set_grad_enabled()``; LC302's advice), where before 0.4 the
#: inputs decided it (a ``volatile`` ``Variable`` recorded none).
BEHAVIOURS = frozenset({"scheduler_step_after_optimizer", "zero_grad_set_to_none", "grad_mode"})
#: What a ``[packages]`` table may list: ``torch``, the top-level packages that are PyTorch or
#: are built on it (a file that imports none of them is not checked for training rules).
_PACKAGE_KEYS = frozenset({"torch", "other", "no_modules"})
#: What a ``[[builtin]]`` entry holds: the names, what installs them, and the source.
_BUILTIN_KEYS = frozenset({"names", "installed_by", "source"})
#: The keys of a ``[[name_lookup]]`` entry (:meth:`Knowledge._add_name_lookup`).
_NAME_LOOKUP_KEYS = frozenset({"words", "word_prefixes", "called", "read", "dotted", "source"})


@dataclass(frozen=True)
class ApiSince:
    """An ``[[api_since]]`` entry: APIs that began with a PyTorch version, so that code using
    one is written for that version or a later one
    (:func:`loopcheck.engine.pins.code_versions`).

    Attributes:
        version: the PyTorch version that added them (``(0, 4)``).
        names: functions, classes and constants by qualified name (``torch.no_grad``,
            ``torch.device``), used in any way: called, entered, decorating, read.
        methods: tensor methods by name (``item``), called on any value (a receiver's type is
            not known from the text alone).
        source: where the version is documented.
    """

    version: tuple[int, ...]
    names: frozenset[str]
    methods: frozenset[str]
    source: str


def glob(pattern: str) -> re.Pattern:
    """Compile a dotted-name pattern: ``*`` matches within one component (``torch.optim.[A-Z]*``
    matches ``torch.optim.Adam``, not ``torch.optim.lr_scheduler.StepLR``), ``**`` across
    components, ``?`` one character, ``[...]`` a character class."""
    out = []
    i = 0
    while i < len(pattern):
        c = pattern[i]
        if pattern.startswith("**", i):
            out.append(".*")
            i += 2
            continue
        if c == "*":
            out.append(r"[^.]*")
        elif c == "?":
            out.append(r"[^.]")
        elif c == "[":
            j = pattern.index("]", i)
            out.append(pattern[i:j + 1])
            i = j + 1
            continue
        else:
            out.append(re.escape(c))
        i += 1
    return re.compile("".join(out) + r"\Z")


class KnowledgeError(ValueError):
    """A knowledge file has an entry the engine cannot read."""


@dataclass(frozen=True)
class Effect:
    """One training event a call causes.

    Attributes:
        event: a key of :data:`EVENTS` (``"backward"``, ``"step"``, ...).
        args: the event's arguments: argument references (``{"loss": 0}``,
            ``{"optimizer": "self"}``) and flags (``{"managed": True}``, ``{"how": "device"}``,
            ``{"aspects": ("mode",)}``).
    """

    event: str
    args: tuple[tuple[str, object], ...]

    def get(self, key: str, default=None):
        for k, v in self.args:
            if k == key:
                return v
        return default


@dataclass(frozen=True)
class FirstChange:
    """Where a scheduler's schedule first changes the LR (``returns.first_change``).

    Attributes:
        arg: the argument that gives the first position (a scheduler step, counted from 0) at
            which the LR differs from the initial one: StepLR's ``step_size``, MultiStepLR's
            ``milestones`` (a list: its smallest element).
        default: the position when the argument is left out (ConstantLR's ``total_iters``, 5),
            or ``None`` for a required argument.
        change: what happens there, for messages: ``"decay"``, ``"change"``.
    """

    arg: ArgRef
    default: int | None = None
    change: str = "decay"


@dataclass(frozen=True)
class ConstantWhen:
    """The argument value for which a scheduler never changes the LR (``returns.constant_when``:
    StepLR's ``gamma = 1``).

    Attributes:
        arg: the argument.
        value: the value that keeps the LR constant, given as a literal.
    """

    arg: ArgRef
    value: float


@dataclass(frozen=True)
class Accumulation:
    """How many micro-steps an object that runs gradient accumulation accumulates before it
    syncs and steps (``returns.accumulation``: Accelerate's ``Accelerator(gradient_accumulation_steps=N)``).

    Attributes:
        arg: the construction argument that gives the count.
        default: the count when that argument is left out (Accelerate: 1, every micro-step syncs).
        unless: arguments that, given, decide the count instead (a ``GradientAccumulationPlugin``,
            a DeepSpeed plugin whose configuration gives its own): the count is then unknown.
        attribute: the attribute of the instance whose assignment changes the count
            (``accelerator.gradient_accumulation_steps = 4``): one assigned makes it unknown.
        unsynced: arguments that, given a value other than the literal ``True``, make the
            schedulers the instance wraps (a method's ``returns.synced``) step on every call
            instead of only when the flag says the micro-step syncs (Accelerate's
            ``step_scheduler_with_optimizer=False``).
    """

    arg: ArgRef
    default: int
    unless: tuple = ()
    attribute: str | None = None
    unsynced: tuple = ()


@dataclass(frozen=True)
class Returns:
    """What a call returns, as the engine needs to know it.

    Attributes:
        role: the role of a new object (``"optimizer"``, ``"scheduler"``, ``"model"``, ...) or
            ``None``.
        same: argument references whose objects are returned unchanged in role (``"*"``:
            ``accelerator.prepare(model, optimizer)`` returns its arguments; ``0``:
            ``DDP(model)`` shares its module's parameters).
        type: the qualified library class of the returned object, whose methods have entries.
        value: ``"number"`` (``loss.item()``), ``"detached"`` (``loss.detach()``) or
            ``"integer"`` (``logits.argmax(1)``, ``labels.ne(-100)``: an integer or boolean
            tensor) for values that keep no autograd graph (:data:`NO_GRAPH`); ``"derived"`` for a value computed from the positional
            arguments that keeps their graph (``sum(losses)``, ``torch.stack(losses)``);
            ``"existing"`` for an object that exists already, which the call looks up and does
            not build (``getattr(self, f"optim{i}")``); ``"new"`` for an object built from the
            argument that shares no state with it (``copy.deepcopy``): not an alias of it;
            ``"submodules"`` for an iterable over modules of the receiver (``Module.modules()``,
            ``children()``): a mode set through a name a ``for`` takes from it is set on some
            modules of the model only; ``"loss_scale"`` for a GradScaler's current scale
            (``scaler.get_scale()``): a threshold multiplied by it is in scaled units;
            ``"collated"`` for a batch the library's default collate function makes
            (``default_collate``: the samples' structure, each item a tensor); ``"unpickled"``
            for an object restored from a file (``torch.load``): of a class the code does not
            name, so a model bound to it has layers the code does not show (LC301 and LC303
            cannot establish that its output depends on the mode).
        details: role details: ``params`` (the argument that holds an optimizer's parameters),
            ``eager_state``, ``moves_state`` (the optimizer's ``step()`` moves each parameter's
            state to that parameter's device and dtype before using it: a model moved or
            converted after the optimizer has state breaks none of its steps), ``state_when`` (the argument whose value other than a literal 0
            makes an optimizer keep per-parameter state: SGD's ``momentum``), ``schedule`` (``"epoch"``/``"batch"``/``"plateau"``/``"unknown"``),
            ``period`` (the argument that gives an epoch schedule's period), ``optimizer``
            (the argument holding a scheduler's optimizer), ``sampler``, ``first_change``
            (:class:`FirstChange`: the argument giving the first position whose LR differs from
            the initial one; a scheduler without it is taken to change the LR at position 1),
            ``constant_when`` (:class:`ConstantWhen`: the argument value that keeps the LR constant),
            ``shares`` (for a ``"tensor"`` value: the argument whose memory the new tensor may
            share, ``torch.as_tensor(t)``; it shares none of the others; for a ``"derived"``
            value that ``copies``, the argument it is written into, ``out=``), ``copies`` (for a
            ``"derived"`` value: the result is a new tensor sharing no memory with the arguments,
            ``torch.cat``, ``torch.stack``, but the one ``shares`` names, so an optimizer given it
            trains none of their parameters, while the graph it keeps reaches them; see
            :meth:`new_memory`), ``fresh_items`` (a
            loader whose iteration builds each batch anew, by its collate function: an object
            a ``for`` target binds from it is referenced by nothing else the program keeps),
            ``collate`` (for a loader: the argument that replaces its default collate function;
            left out, or ``None``, each batch holds tensors the default collate made from the
            samples; given, the batch is whatever that function returns),
            ``accumulation`` (:class:`Accumulation`: for an accelerator, the construction
            argument that gives its gradient accumulation count), ``synced`` (for a method of
            an accelerator: the role, ``"scheduler"``, of the returned objects that it wraps so
            that their ``step()`` does nothing on a micro-step where the receiver's
            ``accumulation_flag`` is false: ``accelerator.prepare(...)`` returns an
            ``AcceleratedScheduler``, which steps only when the prepared optimizer steps),
            ``process_fact`` (the result tells a fact of the process fixed for the run:
            ``"cuda_available"``), ``of_arguments`` (the result is computed from the arguments
            alone, so equal arguments give equal results: ``torch.device(...)``), ``copy_of``
            (the argument of which the result is a copy: the same classes and layers, built with
            the same settings, ``copy.deepcopy(model)``, a model whose output depends on its mode
            as ``model``'s does).
        items: for a returned tuple, what each element is (``deepspeed.initialize``).
    """

    role: str | None = None
    same: tuple = ()
    type: str | None = None
    value: str | None = None
    details: tuple[tuple[str, object], ...] = ()
    items: tuple["Returns | None", ...] = ()

    def get(self, key: str, default=None):
        for k, v in self.details:
            if k == key:
                return v
        return default

    @property
    def new_memory(self) -> bool:
        """Whether the call's result is a new object sharing no memory with the arguments but
        the one ``shares`` names: a tensor factory (``value = "tensor"``: ``torch.zeros(n)``,
        ``torch.as_tensor(t)`` but ``t``), a ``"derived"`` value that ``copies`` them
        (``torch.cat((a, b))`` but its ``out=``) or a ``"new"`` object (``copy.deepcopy(model)``:
        its own submodules, parameters and buffers). An optimizer given such a tensor, or the
        parameters of such a copy, trains nothing of the other arguments (the knowledge's
        ``value``, ``copies`` and ``shares``)."""
        return self.value in ("tensor", "new") or (self.value == "derived" and bool(self.get("copies")))


#: What a call does to the autocast state (``autocast`` of an entry's ``does``): ``block``, a
#: context manager (or decorator) whose block runs with autocast of one device set, the state
#: it found restored on leaving (``torch.autocast``); ``query``, the result is whether autocast
#: of one device is enabled (``torch.is_autocast_enabled``); ``set``, the call sets the state
#: until it is set again (``torch.set_autocast_enabled``).
AUTOCAST_DOES = frozenset({"block", "query", "set"})


@dataclass(frozen=True)
class Autocast:
    """The ``autocast`` table of an entry: what the call does to PyTorch's autocast state, a
    per-device flag of the thread (https://pytorch.org/docs/stable/amp.html#autocasting).

    Attributes:
        does: ``"block"``, ``"query"`` or ``"set"`` (:data:`AUTOCAST_DOES`).
        device: the device type (``"cuda"``, ``"cpu"``) the call is about when the entry fixes
            it (``torch.cuda.amp.autocast``: ``"cuda"``), else ``None``.
        device_arg: the argument that gives the device type (``torch.autocast``'s ``[0,
            "device_type"]``), else ``None``.
        device_default: the device type when that argument is left out
            (``torch.is_autocast_enabled()``: ``"cuda"``, PyTorch's legacy GPU state), else ``None``.
        enabled: for a ``block``, the argument that says whether the block enables autocast
            (``enabled``, true when left out), else ``None``.
    """

    does: str
    device: str | None = None
    device_arg: ArgRef | None = None
    device_default: str | None = None
    enabled: ArgRef | None = None


#: The literal ``reduction`` values with which a loss returns one number, a 0-dim tensor.
SCALAR_REDUCTIONS = frozenset({"mean", "sum", "batchmean"})


@dataclass(frozen=True)
class ZeroDim:
    """When a call returns a 0-dim tensor (``zero_dim`` of an entry; PyTorch 0.4 and later,
    where a reduction to one number gives a tensor of no dimension, not one of size 1).

    Attributes:
        reduction: for a loss, the keyword naming its reduction: the result is 0-dim when it is
            left out or given as a literal of :data:`SCALAR_REDUCTIONS` (``"none"`` keeps one
            loss per element). On a class, it is read from the construction, and describes a
            call of the instance (``nn.CrossEntropyLoss()(out, y)``).
        reduce: the legacy keyword (``reduce``) that, given anything but the literal ``True``
            or ``None``, may keep one loss per element.
        positional: how many positional arguments a call may give before one could be
            ``reduce`` or ``reduction`` (given more, the result is not known to be 0-dim).
        without: for a reduction (``torch.sum``, ``Tensor.mean``), the arguments that, given,
            keep dimensions (``dim``, ``axis``, an ``other`` tensor): the result is 0-dim when
            none of them is given, nor ``*args``/``**kwargs``.
    """

    reduction: str | None = None
    reduce: str | None = None
    positional: int = 0
    without: tuple = ()


@dataclass(frozen=True)
class Summary:
    """The effect summary of a callable: a library entry, or one the engine inferred from
    the project's code.

    Attributes:
        name: the qualified name it describes.
        effects: the training events a call causes, in order.
        returns: what it returns, or ``None`` when nothing the rules follow.
        grad: ``"disabled"``/``"enabled"`` for a context manager or decorator whose block or
            decorated function runs with autograd off/on; ``"arg"`` when its first argument
            decides (``torch.set_grad_enabled(mode)``); ``None`` otherwise.
        context: ``"accumulate"`` for a context whose block runs gradient accumulation
            micro-steps (``accelerator.accumulate(model)``).
        setting: the process-wide settings (:data:`SETTINGS`) a call changes to its first
            argument (``setting`` in the entry: a name or a list of names); empty for none.
        grad_off_arg: the argument that, given and not ``False``/``None``, makes every
            computation from the result run without an autograd graph (``volatile`` of
            ``torch.autograd.Variable`` in PyTorch <= 0.3), or ``None``.
        only_before: ``(version, argument)`` when a call only means something before that
            PyTorch version (a tuple of integers, ``(0, 4)``): code that makes it, giving the
            argument (not ``False``/``None``/``0``; any call when the argument is ``None``), is
            written for an older PyTorch (``Variable(x, volatile=True)``: before 0.4).
        modes_none_if_zero: for a function whose result depends on the module's mode
            (``torch.nn.functional.dropout``, given ``training=self.training``), the arguments
            (its rate ``[1, "p"]``) that make it the same in both modes when a call gives each
            the value 0.
        block_mode: for a context manager that puts modules in a mode for its ``with`` block
            and puts each back in the mode it had on leaving (MONAI's ``eval_mode(*nets)``),
            ``(mode, models)``: ``"train"`` or ``"eval"``, and the argument reference of the
            modules (``"*"``: every positional argument); ``None`` otherwise.
        source: where the knowledge comes from (documentation or code URL).
        exits: the call ends the program (``sys.exit()``, ``exit()``: it raises
            ``SystemExit``, or ends the process): the code after it does not run.
        override_body: for a method whose effects only the library's own method makes, on
            state the library object keeps (``Module.train``/``eval``: the ``training`` flag of
            each module), a method of the same name that a class of the project defines is not
            described by this entry: a call that runs it has the effects its body has, the
            entry's where the body hands over to the library's method (``super().train(mode)``;
            ``override_body = true`` in the entry).
        writes: for a method, the attributes of the instance it writes where it calls no
            method of the instance but those of :attr:`self_calls` (so no other method a class
            of the project defines runs) and writes no other attribute of it
            (``torch.nn.Module.__init__``: its own bookkeeping, ``training``, ``_parameters``,
            ...; ``writes`` in the entry), the library's own versions of the methods it calls
            included; ``None`` when the entry says nothing of what it writes.
        self_calls: with :attr:`writes`, the methods of the instance the method calls (its
            own code, or the library methods it calls, calls ``self.<name>()``):
            ``LRScheduler.__init__`` calls ``self.step()``, which calls ``self.get_lr()``. Where
            the instance's class in the project defines one of them (an override), that code
            runs instead of the library's, and what it writes is read from it
            (``self_calls`` in the entry; ``()``: it calls none).
        autocast: what the call does to the autocast state (:class:`Autocast`: a ``with``
            block of ``torch.autocast``, a query ``torch.is_autocast_enabled()``, a set
            ``torch.set_autocast_enabled()``), or ``None``: it neither sets nor reads it.
        zero_dim: when the call returns a 0-dim tensor (:class:`ZeroDim`), or ``None``.
        keeps_shape: for a ``torch.Tensor`` method, the result has the receiver's shape
            (``detach()``, ``cpu()``, ``float()``): of a 0-dim tensor, a 0-dim tensor.
        tensor_input: the argument that must be a tensor (a loss's ``input``, ``[0,
            "input"]``): given a tuple or a mapping, the call raises; ``None`` when the entry
            says nothing of it. On a class, it describes a call of the instance.
    """

    name: str
    effects: tuple[Effect, ...] = ()
    returns: Returns | None = None
    grad: str | None = None
    context: str | None = None
    source: str = ""
    setting: tuple[str, ...] = ()
    grad_off_arg: ArgRef | None = None
    only_before: tuple[tuple[int, ...], ArgRef | None] | None = None
    modes_none_if_zero: tuple[ArgRef, ...] = ()
    block_mode: tuple[str, ArgRef] | None = None
    exits: bool = False
    override_body: bool = False
    writes: tuple[str, ...] | None = None
    self_calls: tuple[str, ...] = ()
    autocast: Autocast | None = None
    zero_dim: ZeroDim | None = None
    keeps_shape: bool = False
    tensor_input: ArgRef | None = None


@dataclass
class ClassEntry:
    """A library class: its constructor's summary, its methods and attributes, its bases."""

    name: str
    ctor: Summary
    methods: dict[str, Summary] = field(default_factory=dict)
    attributes: dict[str, str] = field(default_factory=dict)
    bases: tuple[str, ...] = ()
    modes: str | None = None  # "none": train()/eval() change nothing in this module
    # with ``modes``: the arguments (a dropout rate, a normalization) that keep it true only
    # while each is left out or given as the literal 0, 0.0, None or False; with
    # ``modes_none_if_zero``, the arguments that must also be left out or given such a value
    # (allennlp's ``Elmo(module=...)``, a biLM of the caller's in place of its own)
    mode_args: tuple[ArgRef, ...] = ()
    # without ``modes``: the arguments (a dropout rate whose default is not 0) that make
    # train()/eval() change nothing when the construction gives each the value 0
    modes_none_if_zero: tuple[ArgRef, ...] = ()
    # False: an instance holds no parameters, of its own or in submodules (not inherited: a
    # subclass may build some); None: not said
    parameters: bool | None = None
    # a class whose instance is a parameter (``torch.nn.Parameter``): the argument that says
    # whether it requires grad (``[1, "requires_grad"]``, default True); given the literal
    # False, the parameter is made frozen. None: not said
    requires_grad_arg: ArgRef | None = None
    # the attributes whose value is the instance's tensor with its shape (``Tensor.data``): of
    # a 0-dim tensor, a 0-dim tensor
    keeps_shape: tuple[str, ...] = ()


def _shape_attributes(raw, where: str) -> tuple[str, ...]:
    """``keeps_shape`` of a class entry: the attributes that keep the instance's shape."""
    if not isinstance(raw, list) or not all(isinstance(a, str) for a in raw):
        raise KnowledgeError(f"{where}: 'keeps_shape' of a class is a list of attribute names")
    return tuple(raw)


def _arg_ref(value, where: str) -> ArgRef:
    if isinstance(value, bool):
        raise KnowledgeError(f"{where}: an argument reference cannot be a boolean")
    if isinstance(value, (int, str)):
        return value
    if isinstance(value, list) and len(value) == 2 and isinstance(value[0], int) and isinstance(value[1], str):
        return (value[0], value[1])
    raise KnowledgeError(f"{where}: bad argument reference {value!r}")


_REF_KEYS = frozenset({"loss", "gradient", "params", "max_norm", "optimizer", "scheduler", "metric", "model", "scaler",
                       "value", "container", "arg", "mode", "input", "state", "sampler", "set_to_none", "tensor",
                       "fn", "closure"})


def _effect(raw: dict, where: str) -> Effect:
    if not isinstance(raw, dict) or "event" not in raw:
        raise KnowledgeError(f"{where}: an effect is a table with an 'event' key")
    kind = raw["event"]
    if kind not in EVENTS:
        raise KnowledgeError(f"{where}: unknown event {kind!r}")
    args = []
    for k, v in raw.items():
        if k == "event":
            continue
        if k not in EVENTS[kind]:
            raise KnowledgeError(f"{where}: event {kind!r} takes no {k!r}")
        if k == "aspects":
            bad = set(v) - ASPECTS
            if bad:
                raise KnowledgeError(f"{where}: unknown aspects {sorted(bad)}")
            v = tuple(v)
        elif k == "layout":  # keyword names: a list of identifiers
            if not isinstance(v, list) or not all(isinstance(n, str) and n.isidentifier() for n in v):
                raise KnowledgeError(f"{where}: 'layout' is a list of keyword names")
            v = tuple(v)
        elif k in _REF_KEYS:
            v = _arg_ref(v, where)
        args.append((k, v))
    return Effect(kind, tuple(args))


def _returns(raw, where: str) -> Returns | None:
    if raw is None:
        return None
    if not isinstance(raw, dict):
        raise KnowledgeError(f"{where}: 'returns' is a table")
    bad = set(raw) - _ROLE_KEYS
    if bad:
        raise KnowledgeError(f"{where}: unknown 'returns' keys {sorted(bad)}")
    role = raw.get("role")
    if role is not None and role not in ROLES:
        raise KnowledgeError(f"{where}: unknown role {role!r}")
    same = raw.get("same")
    same = () if same is None else tuple(_arg_ref(s, where) for s in (same if isinstance(same, list) else [same]))
    details = []
    for k in ("params", "period", "optimizer", "state_when", "shares", "collate", "copy_of"):
        if k in raw:
            details.append((k, _arg_ref(raw[k], where)))
    for k in ("eager_state", "moves_state", "schedule", "sampler", "fresh_items", "copies", "process_fact",
              "of_arguments"):
        if k in raw:
            details.append((k, raw[k]))
    if "synced" in raw:
        if raw["synced"] not in ROLES:
            raise KnowledgeError(f"{where}: 'synced' is a role")
        details.append(("synced", raw["synced"]))
    if "first_change" in raw:
        details.append(("first_change", _first_change(raw["first_change"], where)))
    if "constant_when" in raw:
        details.append(("constant_when", _constant_when(raw["constant_when"], where)))
    if "accumulation" in raw:
        details.append(("accumulation", _accumulation(raw["accumulation"], where)))
    items = tuple(_returns(item, where) for item in raw.get("items", ()))
    return Returns(role, same, raw.get("type"), raw.get("value"), tuple(details), items)


def _first_change(raw, where: str) -> FirstChange:
    if not isinstance(raw, dict) or "arg" not in raw or set(raw) - {"arg", "default", "change"}:
        raise KnowledgeError(f"{where}: 'first_change' is a table with 'arg' and optional 'default', 'change'")
    default = raw.get("default")
    if default is not None and (isinstance(default, bool) or not isinstance(default, int)):
        raise KnowledgeError(f"{where}: 'first_change' default is an integer")
    return FirstChange(_arg_ref(raw["arg"], where), default, str(raw.get("change", "decay")))


def _accumulation(raw, where: str) -> Accumulation:
    if not isinstance(raw, dict) or "arg" not in raw or "default" not in raw or set(raw) - {
            "arg", "default", "unless", "attribute", "unsynced"}:
        raise KnowledgeError(
            f"{where}: 'accumulation' is a table with 'arg', 'default' and optional 'unless', 'attribute', 'unsynced'")
    default = raw["default"]
    if isinstance(default, bool) or not isinstance(default, int):
        raise KnowledgeError(f"{where}: 'accumulation' default is an integer")
    unless = tuple(_arg_ref(u, where) for u in raw.get("unless", ()))
    unsynced = tuple(_arg_ref(u, where) for u in raw.get("unsynced", ()))
    return Accumulation(_arg_ref(raw["arg"], where), default, unless, raw.get("attribute"), unsynced)


def _constant_when(raw, where: str) -> ConstantWhen:
    if not isinstance(raw, dict) or set(raw) != {"arg", "value"}:
        raise KnowledgeError(f"{where}: 'constant_when' is a table with 'arg' and 'value'")
    value = raw["value"]
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise KnowledgeError(f"{where}: 'constant_when' value is a number")
    return ConstantWhen(_arg_ref(raw["arg"], where), float(value))


def _summary(name: str, raw: dict, where: str) -> Summary:
    effects = tuple(_effect(e, where) for e in raw.get("effects", ()))
    grad = raw.get("grad")
    if grad not in (None, "disabled", "enabled", "arg"):
        raise KnowledgeError(f"{where}: bad grad {grad!r}")
    setting = raw.get("setting")
    setting = () if setting is None else tuple(setting) if isinstance(setting, list) else (setting,)
    for one in setting:
        if one not in SETTINGS:
            raise KnowledgeError(f"{where}: unknown setting {one!r}")
    grad_off = raw.get("grad_off_arg")
    if_zero = raw.get("modes_none_if_zero", [])
    if not isinstance(if_zero, list):
        raise KnowledgeError(f"{where}: 'modes_none_if_zero' is a list of argument references")
    return Summary(name, effects, _returns(raw.get("returns"), where), grad, raw.get("context"), raw.get("source", ""),
                   setting, None if grad_off is None else _arg_ref(grad_off, where),
                   _only_before(raw.get("only_before"), where), tuple(_arg_ref(a, where) for a in if_zero),
                   _block_mode(raw.get("block_mode"), where), bool(raw.get("exits", False)),
                   bool(raw.get("override_body", False)), _writes(raw.get("writes"), where),
                   _self_calls(raw, where), _autocast(raw.get("autocast"), where),
                   _zero_dim(raw.get("zero_dim"), where), _keeps_shape(raw.get("keeps_shape", False), where),
                   None if raw.get("tensor_input") is None else _arg_ref(raw["tensor_input"], where))


def _zero_dim(raw, where: str) -> ZeroDim | None:
    """The ``zero_dim`` table of an entry (:class:`ZeroDim`)."""
    if raw is None:
        return None
    keys = {"reduction", "reduce", "positional", "without"}
    if not isinstance(raw, dict) or set(raw) - keys or not ("reduction" in raw or "without" in raw):
        raise KnowledgeError(f"{where}: 'zero_dim' is a table with 'reduction' (and 'reduce', 'positional')"
                             f" or 'without'")
    positional = raw.get("positional", 0)
    if isinstance(positional, bool) or not isinstance(positional, int) or positional < 0:
        raise KnowledgeError(f"{where}: 'zero_dim' positional is a count")
    for k in ("reduction", "reduce"):
        if k in raw and not isinstance(raw[k], str):
            raise KnowledgeError(f"{where}: 'zero_dim' {k} is a keyword")
    without = raw.get("without", [])
    if not isinstance(without, list):
        raise KnowledgeError(f"{where}: 'zero_dim' without is a list of argument references")
    return ZeroDim(raw.get("reduction"), raw.get("reduce"), positional, tuple(_arg_ref(a, where) for a in without))


def _keeps_shape(raw, where: str) -> bool:
    """``keeps_shape`` of a method entry: whether its result has the receiver's shape."""
    if not isinstance(raw, bool):
        raise KnowledgeError(f"{where}: 'keeps_shape' of a method is true or false")
    return raw


def _autocast(raw, where: str) -> Autocast | None:
    """``autocast = {does = "block", device = {arg = [0, "device_type"]}, enabled = [2, "enabled"]}``
    of an entry (:class:`Autocast`): ``device`` is a device type (``"cuda"``) or a table with
    the argument that gives it (``arg``) and the device when it is left out (``default``)."""
    if raw is None:
        return None
    if not isinstance(raw, dict) or raw.get("does") not in AUTOCAST_DOES or set(raw) - {"does", "device", "enabled"}:
        raise KnowledgeError(f"{where}: 'autocast' is a table with 'does' ({sorted(AUTOCAST_DOES)}) and "
                             "optional 'device', 'enabled'")
    device = raw.get("device")
    fixed = arg = default = None
    if isinstance(device, str):
        fixed = device
    elif isinstance(device, dict) and "arg" in device and not set(device) - {"arg", "default"}:
        arg, default = _arg_ref(device["arg"], where), device.get("default")
        if default is not None and not isinstance(default, str):
            raise KnowledgeError(f"{where}: 'autocast' device default is a device type")
    elif device is not None:
        raise KnowledgeError(f"{where}: 'autocast' device is a device type or a table with 'arg', 'default'")
    if raw["does"] != "set" and fixed is None and arg is None:
        raise KnowledgeError(f"{where}: 'autocast' {raw['does']!r} names its device")
    enabled = raw.get("enabled")
    if enabled is not None and raw["does"] != "block":
        raise KnowledgeError(f"{where}: 'autocast' enabled goes with does = \"block\"")
    return Autocast(raw["does"], fixed, arg, default, None if enabled is None else _arg_ref(enabled, where))


def _writes(raw, where: str) -> tuple[str, ...] | None:
    """``writes = ["training", ...]`` of a method's entry (:attr:`Summary.writes`)."""
    if raw is None:
        return None
    if not isinstance(raw, list) or not all(isinstance(a, str) and a.isidentifier() for a in raw):
        raise KnowledgeError(f"{where}: 'writes' is a list of attribute names")
    return tuple(raw)


def _self_calls(raw: dict, where: str) -> tuple[str, ...]:
    """``self_calls = ["step", ...]`` of a method's entry (:attr:`Summary.self_calls`): method
    names, and only beside ``writes`` (they say which overrides add to what it writes)."""
    calls = raw.get("self_calls")
    if calls is None:
        return ()
    if not isinstance(calls, list) or not all(isinstance(a, str) and a.isidentifier() for a in calls):
        raise KnowledgeError(f"{where}: 'self_calls' is a list of method names")
    if raw.get("writes") is None:
        raise KnowledgeError(f"{where}: 'self_calls' goes with 'writes'")
    return tuple(calls)


def _block_mode(raw, where: str) -> tuple[str, ArgRef] | None:
    """``block_mode = {mode = "eval", models = "*"}`` of a context manager's entry."""
    if raw is None:
        return None
    if not isinstance(raw, dict) or set(raw) != {"mode", "models"} or raw["mode"] not in ("train", "eval"):
        raise KnowledgeError(f"{where}: 'block_mode' is a table with 'mode' (\"train\" or \"eval\") and 'models'")
    return raw["mode"], _arg_ref(raw["models"], where)


def version(text, where: str) -> tuple[int, ...]:
    """``"1.1"`` → ``(1, 1)``: a PyTorch version as the knowledge writes it.

    Raises:
        KnowledgeError: not a dotted string of integers.
    """
    parts = text.split(".") if isinstance(text, str) else []
    if not parts or not all(p.isdigit() for p in parts):
        raise KnowledgeError(f"{where}: bad version {text!r} (a string such as \"1.1\")")
    return tuple(int(p) for p in parts)


def _only_before(raw, where: str) -> tuple[tuple[int, ...], ArgRef | None] | None:
    if raw is None:
        return None
    if not isinstance(raw, dict) or "version" not in raw or set(raw) - {"version", "arg"}:
        raise KnowledgeError(f"{where}: 'only_before' is a table with 'version' and an optional 'arg'")
    arg = raw.get("arg")
    return version(raw["version"], where), None if arg is None else _arg_ref(arg, where)


def _method(cls: str, name: str, raw, source: str, where: str) -> Summary:
    if isinstance(raw, list):
        raw = {"effects": raw}
    return _summary(f"{cls}.{name}", {"source": source, **raw}, where)


class Knowledge:
    """All entries, looked up by qualified name (exact names first, then patterns in the
    order the files list them)."""

    def __init__(self) -> None:
        self.functions: dict[str, Summary] = {}
        self.classes: dict[str, ClassEntry] = {}
        #: Top-level packages that are PyTorch or built on it (``[packages] torch = [...]``).
        self.torch_packages: frozenset[str] = frozenset()
        #: Top-level packages of other deep-learning frameworks (``[packages] other = [...]``):
        #: a file that imports one of them itself, and PyTorch only through the project's
        #: modules, is written against that framework (:func:`loopcheck.analysis.uses_torch`).
        self.other_frameworks: frozenset[str] = frozenset()
        #: Top-level packages whose calls build no ``torch.nn.Module`` (``[packages] no_modules``):
        #: ``np.prod(ratios)`` in a model's ``__init__`` builds no layer.
        self.no_module_packages: frozenset[str] = frozenset()
        #: Frameworks that run the user's subclasses of their classes (``[[driver]]``).
        self.drivers: list[Driver] = []
        #: Names that tools and notebook kernels install as builtins (``[[builtin]]``): a
        #: module reads them without binding them and raises no ``NameError``
        #: (:mod:`loopcheck.engine.import_raises`).
        self.installed_builtins: frozenset[str] = frozenset()
        #: the spellings that say code may look a name up by a string (``[[name_lookup]]``
        #: entries, one pattern; ``None``: none)
        self.name_lookups: re.Pattern | None = None
        #: The PyTorch version each behaviour of :data:`BEHAVIOURS` began with (``[since]``).
        self.since: dict[str, tuple[int, ...]] = {}
        #: APIs that began with a PyTorch version (``[[api_since]]``), oldest first.
        self.api_since: list[ApiSince] = []
        self._function_patterns: list[tuple[re.Pattern, Summary]] = []
        self._class_patterns: list[tuple[re.Pattern, ClassEntry]] = []
        # the pattern each name matched first (or None), per kind of lookup: the builder asks
        # for the same names at every call site, and each miss tried every pattern
        self._matched: dict[tuple[str, str], Summary | ClassEntry | None] = {}
        self._methods_with: dict[str, frozenset[str]] = {}  # (:meth:`methods_with`)

    def load(self, text: str, origin: str) -> None:
        """Add the entries of one TOML document.

        Raises:
            KnowledgeError: an entry uses an unknown key, event, role or aspect.
        """
        data = tomllib.loads(text)
        self._matched.clear()
        for i, raw in enumerate(data.get("function", [])):
            where = f"{origin}: function #{i + 1}"
            self._check_keys(raw, where)
            for name in raw["names"]:
                self._add(name, _summary(name, raw, where), self.functions, self._function_patterns)
        for i, raw in enumerate(data.get("class", [])):
            where = f"{origin}: class #{i + 1}"
            self._check_keys(raw, where)
            source = raw.get("source", "")
            for name in raw["names"]:
                ctor = _summary(name, {k: v for k, v in raw.items()
                                       if k not in ("methods", "attributes", "bases", "modes", "mode_args",
                                                    "modes_none_if_zero", "parameters", "requires_grad_arg",
                                                    "keeps_shape")}, where)
                methods = {m: _method(name, m, v, source, where) for m, v in raw.get("methods", {}).items()}
                if raw.get("modes") not in (None, "none"):
                    raise KnowledgeError(f"{where}: 'modes' can only be \"none\"")
                mode_args = raw.get("mode_args", [])
                if not isinstance(mode_args, list) or (
                        mode_args and raw.get("modes") != "none" and not raw.get("modes_none_if_zero")):
                    raise KnowledgeError(f"{where}: 'mode_args' is a list of argument references, with modes = \"none\""
                                         " or with 'modes_none_if_zero'")
                if_zero = raw.get("modes_none_if_zero", [])
                if not isinstance(if_zero, list) or (if_zero and raw.get("modes") is not None):
                    raise KnowledgeError(f"{where}: 'modes_none_if_zero' is a list of argument references, without 'modes'")
                if raw.get("parameters") not in (None, False):
                    raise KnowledgeError(f"{where}: 'parameters' can only be false")
                entry = ClassEntry(name, ctor, methods, dict(raw.get("attributes", {})), tuple(raw.get("bases", ())),
                                   raw.get("modes"), tuple(_arg_ref(a, where) for a in mode_args),
                                   tuple(_arg_ref(a, where) for a in if_zero), raw.get("parameters"),
                                   None if "requires_grad_arg" not in raw else _arg_ref(raw["requires_grad_arg"], where),
                                   _shape_attributes(raw.get("keeps_shape", []), where))
                self._add(name, entry, self.classes, self._class_patterns)
        packages = data.get("packages", {})
        if not isinstance(packages, dict) or set(packages) - _PACKAGE_KEYS or not all(
            isinstance(names, list) and all(isinstance(n, str) and n.isidentifier() for n in names)
            for names in packages.values()
        ):
            raise KnowledgeError(f"{origin}: [packages] maps {sorted(_PACKAGE_KEYS)} to lists of package names")
        self.torch_packages |= frozenset(packages.get("torch", ()))
        self.other_frameworks |= frozenset(packages.get("other", ()))
        self.no_module_packages |= frozenset(packages.get("no_modules", ()))
        for i, raw in enumerate(data.get("driver", [])):
            where = f"{origin}: driver #{i + 1}"
            if not raw.get("source"):
                raise KnowledgeError(f"{where}: 'source' is required")
            self.drivers.append(_driver(raw, where))
        for i, raw in enumerate(data.get("builtin", [])):
            where = f"{origin}: builtin #{i + 1}"
            names = raw.get("names") if isinstance(raw, dict) else None
            if (not isinstance(names, list) or not names or not all(isinstance(n, str) and n.isidentifier() for n in names)
                    or set(raw) - _BUILTIN_KEYS or not raw.get("source") or not raw.get("installed_by")):
                raise KnowledgeError(f"{where}: 'names' (identifiers), 'installed_by' and 'source' are required,"
                                     f" and only they")
            self.installed_builtins |= frozenset(names)
        since = data.get("since", {})
        if not isinstance(since, dict) or set(since) - BEHAVIOURS:
            raise KnowledgeError(f"{origin}: [since] maps behaviours {sorted(BEHAVIOURS)} to versions")
        for behaviour, text in since.items():
            self.since[behaviour] = version(text, f"{origin}: [since] {behaviour}")
        for i, raw in enumerate(data.get("api_since", [])):
            where = f"{origin}: api_since #{i + 1}"
            if not isinstance(raw, dict) or set(raw) - {"version", "names", "methods", "source"} or not raw.get("source"):
                raise KnowledgeError(f"{where}: a table with 'version', 'names', 'methods' and 'source'")
            names, methods = raw.get("names", []), raw.get("methods", [])
            if not all(isinstance(x, list) and all(isinstance(n, str) for n in x) for x in (names, methods)):
                raise KnowledgeError(f"{where}: 'names' and 'methods' are lists of strings")
            self.api_since.append(ApiSince(version(raw.get("version", ""), where), frozenset(names),
                                           frozenset(methods), raw["source"]))
        self.api_since.sort(key=lambda e: e.version)
        for i, raw in enumerate(data.get("name_lookup", [])):
            self._add_name_lookup(raw, f"{origin}: name_lookup #{i + 1}")
        unknown = set(data) - {"function", "class", "packages", "driver", "builtin", "since", "api_since", "name_lookup"}
        if unknown:
            raise KnowledgeError(f"{origin}: unknown top-level keys {sorted(unknown)}")

    def _add_name_lookup(self, raw: dict, where: str) -> None:
        """Add the spellings of one ``[[name_lookup]]`` entry to :attr:`name_lookups`: whole
        ``words``, words that begin with one of ``word_prefixes``, builtins ``called`` by name
        (``globals(``), names ``read`` and not called (``sys.modules``), ``dotted`` attribute
        chains (``hub.load``).

        Raises:
            KnowledgeError: an unknown key, no ``source``, or a spelling that is not a
                (dotted) identifier.
        """
        if not isinstance(raw, dict) or set(raw) - _NAME_LOOKUP_KEYS or not raw.get("source"):
            raise KnowledgeError(f"{where}: keys {sorted(_NAME_LOOKUP_KEYS)}, with 'source'")
        parts = []
        for key in sorted(_NAME_LOOKUP_KEYS - {"source"}):
            names = raw.get(key, [])
            if not isinstance(names, list) or not all(
                    isinstance(n, str) and all(p.isidentifier() for p in n.split(".")) for n in names):
                raise KnowledgeError(f"{where}: '{key}' is a list of (dotted) identifiers")
            for n in names:
                word = re.escape(n)
                parts.append({"words": rf"\b{word}\b", "word_prefixes": rf"\b{word}\w*\b",
                              "called": rf"(?<![.\w]){word}\s*\(", "read": rf"(?<![\w]){word}\b(?!\s*\()",
                              "dotted": rf"(?<![\w]){word}\b"}[key])
        if parts:
            pattern = "|".join(parts)
            self.name_lookups = re.compile(
                pattern if self.name_lookups is None else f"{self.name_lookups.pattern}|{pattern}")

    @staticmethod
    def _check_keys(raw: dict, where: str) -> None:
        if "names" not in raw or not isinstance(raw["names"], list):
            raise KnowledgeError(f"{where}: 'names' (a list) is required")
        bad = set(raw) - _ENTRY_KEYS
        if bad:
            raise KnowledgeError(f"{where}: unknown keys {sorted(bad)}")

    @staticmethod
    def _add(name: str, value, exact: dict, patterns: list) -> None:
        if any(c in name for c in "*?["):
            patterns.append((glob(name), value))
        else:
            exact.setdefault(name, value)

    def _match(self, kind: str, qualname: str):
        """The value of the first pattern of ``kind`` (``"function"`` or ``"class"``) that
        ``qualname`` matches, or ``None`` (looked up once per name)."""
        key = (kind, qualname)
        if key in self._matched:
            return self._matched[key]
        patterns = self._function_patterns if kind == "function" else self._class_patterns
        hit = self._matched[key] = next((v for p, v in patterns if p.match(qualname)), None)
        return hit

    def function(self, qualname: str | None) -> Summary | None:
        """The summary of library function ``qualname`` (``"torch.nn.utils.clip_grad_norm_"``)."""
        if not qualname:
            return None
        hit = self.functions.get(qualname)
        if hit is None:
            hit = self._match("function", qualname)
        return hit

    def cls(self, qualname: str | None) -> ClassEntry | None:
        """The entry of library class ``qualname`` (``"torch.optim.Adam"``)."""
        if not qualname:
            return None
        hit = self.classes.get(qualname)
        if hit is None:
            hit = self._match("class", qualname)
        return hit

    def callable(self, qualname: str | None) -> Summary | None:
        """What calling ``qualname`` does: a function's summary or a class's constructor
        (exact names before patterns, class patterns before function patterns)."""
        if not qualname:
            return None
        hit = self.functions.get(qualname)
        if hit is not None:
            return hit
        entry = self.classes.get(qualname) or self._match("class", qualname)
        if entry is not None:
            return entry.ctor
        return self._match("function", qualname)

    def methods_with(self, event: str) -> frozenset[str]:
        """The names of the library methods some entry gives an effect ``event``
        (``"each_module"``: ``{"apply"}``); the builder reads the arguments of calls of these
        names more closely (:attr:`loopcheck.engine.ir.Arg.function`)."""
        found = self._methods_with.get(event)
        if found is None:
            found = self._methods_with[event] = frozenset(
                name for entry in self.classes.values() for name, summary in entry.methods.items()
                if any(e.event == event for e in summary.effects))
        return found

    def method(self, cls: str | None, name: str, _seen: frozenset = frozenset()) -> Summary | None:
        """The summary of method ``name`` of library class ``cls``, looked up through the
        entry's bases; ``None`` when no entry lists it."""
        entry = self.cls(cls)
        if entry is None or entry.name in _seen:
            return None
        if name in entry.methods:
            return entry.methods[name]
        for base in entry.bases:
            found = self.method(base, name, _seen | {entry.name})
            if found is not None:
                return found
        return entry.methods.get("*")

    def attribute(self, cls: str | None, name: str, _seen: frozenset = frozenset()) -> str | None:
        """What attribute ``name`` of class ``cls`` is (``"accumulation_flag"``), if known."""
        entry = self.cls(cls)
        if entry is None or entry.name in _seen:
            return None
        if name in entry.attributes:
            return entry.attributes[name]
        for base in entry.bases:
            found = self.attribute(base, name, _seen | {entry.name})
            if found is not None:
                return found
        return None

    def attribute_of_kind(self, cls: str | None, kind: str, _seen: frozenset = frozenset()) -> str | None:
        """The name of the attribute of class ``cls`` that the knowledge says is a ``kind``
        (``"sync_gradients"`` for Accelerate's ``"accumulation_flag"``), looked up through the
        entry's bases; ``None`` when no entry lists one."""
        entry = self.cls(cls)
        if entry is None or entry.name in _seen:
            return None
        for name, what in entry.attributes.items():
            if what == kind:
                return name
        for base in entry.bases:
            found = self.attribute_of_kind(base, kind, _seen | {entry.name})
            if found is not None:
                return found
        return None

    def driver(self, base: str | None) -> "Driver | None":
        """The driver that runs subclasses of library class ``base``, if any."""
        return next((d for d in self.drivers if base in d.bases), None) if base else None

    def is_subclass(self, cls: str | None, base: str, _seen: frozenset = frozenset()) -> bool:
        """Whether library class ``cls`` is ``base`` or derives from it (per the entries)."""
        entry = self.cls(cls)
        if cls == base or (entry is not None and entry.name == base):
            return True
        if entry is None or entry.name in _seen:
            return False
        return any(self.is_subclass(b, base, _seen | {entry.name}) for b in entry.bases)


#: What one step of a driver's program (``[driver.blocks]``) may say, by its kind (the key
#: that names it first) — see :class:`Driver`.
DRIVER_STEPS: dict[str, frozenset[str]] = {
    "call": frozenset({"call", "args", "result", "default", "automatic"}),
    "loop": frozenset({"loop", "over", "body"}),
    "block": frozenset({"block", "when"}),
    "grad": frozenset({"grad", "body"}),
    "method": frozenset({"method", "on", "automatic"}),
    "schedulers": frozenset({"schedulers", "automatic"}),
    "save_mode": frozenset({"save_mode"}),
    "restore_mode": frozenset({"restore_mode"}),
}
_DRIVER_KEYS = frozenset({"name", "bases", "source", "automatic", "optimizers", "blocks"})
_OPTIMIZER_FORMAT_KEYS = frozenset({
    "method", "optimizer_key", "scheduler_key", "monitor_key", "config", "intervals", "default_interval",
})


@dataclass(frozen=True)
class Driver:
    """A framework that runs the user's class: which of its methods it calls, in which loop,
    mode and grad mode, and which training events it performs itself around them (a
    ``[[driver]]`` entry; see ``loopcheck/knowledge/README.md``).

    Attributes:
        bases: the library classes whose subclasses the framework runs.
        automatic: the class attribute that, set to anything but ``True`` in the class,
            hands the optimization to the user's code (the steps marked ``automatic`` are then
            not run), or ``None``.
        optimizers: how the optimizers and LR schedulers are given: ``method`` (the user's
            method that returns them), the keys of a returned dict (``optimizer_key``,
            ``scheduler_key``, ``monitor_key``), the keys of a scheduler's config dict
            (``config``: ``scheduler``, ``interval``, ``frequency``, ``monitor``), which loop
            each interval value steps in (``intervals``: value -> ``"batch"``/``"epoch"``) and
            the interval of a scheduler given without one (``default_interval``).
        blocks: named lists of steps (:data:`DRIVER_STEPS`); ``run`` is the whole program.
        source: the framework's documentation or code.
        name: what findings call the framework (its ``name`` entry) where they name a call it
            makes itself (the optimizer step it runs after the user's hooks); by default the
            last component of the first base.
    """

    bases: tuple[str, ...]
    automatic: str | None
    optimizers: dict
    blocks: dict
    source: str
    name: str = ""


def _driver(raw: dict, where: str) -> Driver:
    """A ``[[driver]]`` entry, checked."""
    bad = set(raw) - _DRIVER_KEYS
    if bad:
        raise KnowledgeError(f"{where}: unknown keys {sorted(bad)}")
    if not isinstance(raw.get("bases"), list) or not raw["bases"]:
        raise KnowledgeError(f"{where}: 'bases' (a list) is required")
    optimizers = raw.get("optimizers", {})
    if set(optimizers) - _OPTIMIZER_FORMAT_KEYS:
        raise KnowledgeError(f"{where}: unknown 'optimizers' keys {sorted(set(optimizers) - _OPTIMIZER_FORMAT_KEYS)}")
    if set(optimizers.get("intervals", {}).values()) - {"batch", "epoch"}:
        raise KnowledgeError(f"{where}: an interval steps in the 'batch' or the 'epoch' loop")
    blocks = raw.get("blocks", {})
    if "run" not in blocks:
        raise KnowledgeError(f"{where}: [driver.blocks] needs a 'run' block")
    for name, steps in blocks.items():
        for step in steps:
            kind = next(iter(step), None)
            if kind not in DRIVER_STEPS or set(step) - DRIVER_STEPS[kind]:
                raise KnowledgeError(f"{where}: block {name!r}: bad step {step!r}")
            for ref in (step.get("body"), step.get("default"), step.get("block")):
                if ref is not None and ref not in blocks:
                    raise KnowledgeError(f"{where}: block {name!r}: no block {ref!r}")
            if kind == "loop" and step["loop"] not in ("epoch", "batch"):
                raise KnowledgeError(f"{where}: block {name!r}: a loop is over 'epoch' or 'batch'")
            if kind == "grad" and step["grad"] not in ("disabled", "enabled"):
                raise KnowledgeError(f"{where}: block {name!r}: bad grad {step['grad']!r}")
            if kind == "schedulers" and step["schedulers"] not in ("batch", "epoch"):
                raise KnowledgeError(f"{where}: block {name!r}: schedulers step in the 'batch' or the 'epoch' loop")
    frozen = {name: tuple(dict(step) for step in steps) for name, steps in blocks.items()}
    name = raw.get("name") or raw["bases"][0].rpartition(".")[2]
    if not isinstance(name, str):
        raise KnowledgeError(f"{where}: 'name' is a string")
    return Driver(tuple(raw["bases"]), raw.get("automatic"), dict(optimizers), frozen, raw.get("source", ""), name)


@lru_cache(maxsize=1)
def knowledge() -> Knowledge:
    """The entries of every ``*.toml`` file in ``loopcheck/knowledge/``, loaded once."""
    kb = Knowledge()
    folder = resources.files("loopcheck").joinpath("knowledge")
    for item in sorted(folder.iterdir(), key=lambda p: p.name):
        if item.name.endswith(".toml"):
            kb.load(item.read_text(encoding="utf-8"), f"knowledge/{item.name}")
    return kb
