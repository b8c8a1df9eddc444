"""Probes that observe a running training script without editing it.

:class:`Probe` installs, for the duration of one script run (in a child process):

* a global optimizer step pre-hook and post-hook
  (``torch.optim.optimizer.register_optimizer_step_pre_hook`` / ``..._post_hook``): the gradient
  that ``step()`` applies (norm, how many parameters have one, finite or not), the learning rate,
  whether the optimizer still holds the model's parameters, and how far the step moved them;
* global module forward pre-/post-hooks (``torch.nn.modules.module.register_module_forward_*``):
  every top-level forward of a module with parameters ("the model"), its ``training`` flag,
  whether grad mode / autocast were on, whether its output carries a ``grad_fn``;
* ``torch.autograd.graph.saved_tensors_hooks`` (entered by the runner around the script): bytes
  of activations saved for backward, per forward, and the live total (a memory counter);
* thin wrappers (the script still calls the real functions) around ``torch.autograd.backward``
  (used by ``Tensor.backward``), ``clip_grad_norm_`` / ``clip_grad_value_``, ``zero_grad``,
  ``LRScheduler.step`` and its overrides, ``DataLoader.__iter__`` and ``torch.amp.GradScaler``
  (``scale``, the internal unscale, ``step``, ``update``);
* a census of live autograd graphs (``gc`` walk of tensors with a ``grad_fn``) at steps 4, 16,
  64, ... and at the end;
* for the rules added with issue 11: each forward's input dtype and device and, under
  ``no_grad``, whether it changed the model's buffers (BatchNorm statistics); each backward's
  loss value, the leaf parameters its graph reaches and the gradient it adds (so a step can be
  compared with the clipped sum of its micro-batches' gradients); the optimizer's state at each
  step; ``Module.load_state_dict`` (does the loaded state share storage with the parameters it
  is loaded into?); ``DistributedSampler.__iter__`` (the order of each epoch).

Everything is recorded into plain dicts/lists so the runner can dump them as JSON.  This module
imports torch; only the runner's child process imports it.
"""

from __future__ import annotations

import gc
import math
import warnings
import weakref

import torch
from torch import nn

# --------------------------------------------------------------------------------------------
# small measurements


def grad_norm(tensors) -> float:
    """Global 2-norm of the given gradients (``None`` entries skipped; 0.0 if there are none)."""
    ts = [t.detach() for t in tensors if t is not None]
    if not ts:
        return 0.0
    return float(torch.linalg.vector_norm(torch.stack([torch.linalg.vector_norm(t.float()) for t in ts])))


def _buffer_sum(module) -> float:
    """A fingerprint of a module's floating-point buffers (BatchNorm running statistics)."""
    with torch.no_grad():
        return float(sum(float(b.detach().double().sum()) for b in module.buffers() if b.is_floating_point()))


def _scalar(t):
    try:
        return float(t.detach()) if isinstance(t, torch.Tensor) and t.numel() == 1 else None
    except Exception:  # noqa: BLE001
        return None


def _graph_leaves(t) -> dict[int, int]:
    """``id -> numel`` of the leaf tensors requiring grad that ``t``'s autograd graph reaches.

    ``seen`` holds the nodes' Python wrappers, not only their ids: a wrapper can live only as
    long as a reference to it (torch 2.11 builds a new one per ``next_functions`` access), and
    the id of a freed wrapper is reused by the next one, which would then count as visited
    (measured: torch 2.11 found 1 of a Linear-ReLU-Linear's 4 parameters that way).
    """
    out: dict[int, int] = {}
    fn = getattr(t, "grad_fn", None)
    stack, seen = [fn], {}
    while stack:
        f = stack.pop()
        if f is None or id(f) in seen:
            continue
        seen[id(f)] = f
        var = getattr(f, "variable", None)
        if isinstance(var, torch.Tensor):
            out[id(var)] = var.numel()
        for nxt, _ in getattr(f, "next_functions", ()):
            stack.append(nxt)
    return out


def _is_empty(grad) -> bool:
    return grad is None or not bool(grad.detach().any())


def graph_census() -> dict:
    """Live tensors that carry a ``grad_fn`` and the autograd graph nodes reachable from them."""
    keep = {}  # id -> node; holding the Python wrappers keeps their ids stable during the walk
    stack = []
    tensors = 0
    is_tensor_type: dict[type, bool] = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for obj in gc.get_objects():
            cls = type(obj)
            hit = is_tensor_type.get(cls)
            if hit is None:
                hit = is_tensor_type[cls] = issubclass(cls, torch.Tensor)
            if not hit:
                continue
            try:
                fn = obj.grad_fn
            except Exception:  # noqa: BLE001 - exotic tensor subclasses
                continue
            if fn is not None:
                tensors += 1
                stack.append(fn)
    while stack:
        fn = stack.pop()
        if fn is None or id(fn) in keep:
            continue
        keep[id(fn)] = fn
        for nxt, _ in getattr(fn, "next_functions", ()):
            if nxt is not None:
                stack.append(nxt)
    return {"tensors_with_grad_fn": tensors, "graph_nodes": len(keep)}


def _autocast_dtype():
    for dev in ("cuda", "cpu"):
        try:
            if torch.is_autocast_enabled(dev):
                return str(torch.get_autocast_dtype(dev)).replace("torch.", "")
        except Exception:  # noqa: BLE001 - older torch / unknown device type
            continue
    return None


def _as_float(x):
    try:
        return float(x)
    except Exception:  # noqa: BLE001
        return None


class _Saved:
    """What the saved-tensor pack hook stores instead of the tensor: counts live bytes.

    With saved-tensor hooks installed, autograd no longer checks whether a saved tensor was
    modified in place before backward; :meth:`Probe._unpack` repeats that check (same version
    counter test, same error) so that a script fails under the probes exactly where it fails
    without them.
    """

    __slots__ = ("t", "n", "version", "probe", "__weakref__")

    def __init__(self, probe, t, n):
        self.t, self.n, self.version, self.probe = t.detach(), n, t._version, probe
        probe.live_saved += n
        probe.peak_saved = max(probe.peak_saved, probe.live_saved)

    def __del__(self):
        try:
            self.probe.live_saved -= self.n
        except Exception:  # noqa: BLE001 - interpreter shutdown
            pass


# --------------------------------------------------------------------------------------------


class Probe:
    """Install hooks into torch, record what a training script does, uninstall."""

    CENSUS_AT = frozenset(4 ** k for k in range(1, 10))  # after steps 4, 16, 64, ... (a census costs ~0.1 s)

    def __init__(self):
        self.steps: list[dict] = []        # one per optimizer.step() that really ran
        self.forwards: list[dict] = []     # top-level forwards of modules with parameters
        self.backwards: list[dict] = []
        self.clips: list[dict] = []
        self.sched_steps: list[dict] = []
        self.scaler: list[dict] = []       # GradScaler events
        self.loader_iters: list[dict] = []
        self.census: list[dict] = []
        self.zero_grads = 0
        self.live_saved = 0
        self.peak_saved = 0
        self.grad_factor = 1.0             # applied-gradient scale relative to the true gradient
        self.accum = 0                     # backward passes summed into the current .grad
        self._model = None                 # weakref to the last module trained (grad-enabled forward)
        self._current = None               # forward record that saved tensors are charged to
        self._depth = 0
        self._sched_depth = 0
        self._clips_since_step: list[dict] = []
        self._snapshot = None
        self._internal_unscale = None      # scale a fused optimizer removes inside its step
        self._handles = []
        self._patches = []
        self.loads: list[dict] = []        # Module.load_state_dict calls
        self.sampler_orders: list[list] = []  # DistributedSampler: the first indices of each epoch
        self._true_grad = None             # sum of the gradients the backwards since the last step added
        self._leaves: dict[int, int] = {}  # id -> numel of the leaf parameters the last backwards reached

    # ---------------------------------------------------------------- install / uninstall
    def install(self) -> "Probe":
        from torch.nn.modules import module as module_mod
        from torch.optim import optimizer as optim_mod

        self._handles += [
            optim_mod.register_optimizer_step_pre_hook(self._step_pre),
            optim_mod.register_optimizer_step_post_hook(self._step_post),
            module_mod.register_module_forward_pre_hook(self._fwd_pre),
            module_mod.register_module_forward_hook(self._fwd_post, always_call=True),
        ]
        self._wrap(torch.autograd, "backward", self._backward_wrapper)
        import torch.nn.utils as nn_utils
        import torch.nn.utils.clip_grad as clip_mod
        for mod in (nn_utils, clip_mod):
            self._wrap(mod, "clip_grad_norm_", self._clip_wrapper("norm"))
            self._wrap(mod, "clip_grad_value_", self._clip_wrapper("value"))
        self._wrap(torch.optim.Optimizer, "zero_grad", self._zero_grad_wrapper)
        self._wrap(nn.Module, "zero_grad", self._zero_grad_wrapper)
        from torch.optim import lr_scheduler
        for cls in vars(lr_scheduler).values():
            if isinstance(cls, type) and issubclass(cls, lr_scheduler.LRScheduler) and "step" in vars(cls):
                self._wrap(cls, "step", self._sched_wrapper)
        self._wrap(torch.utils.data.DataLoader, "__iter__", self._loader_wrapper)
        from torch.amp.grad_scaler import GradScaler
        self._wrap(GradScaler, "scale", self._scaler_scale_wrapper)
        self._wrap(GradScaler, "_unscale_grads_", self._scaler_unscale_wrapper)
        self._wrap(GradScaler, "step", self._scaler_step_wrapper)
        self._wrap(GradScaler, "update", self._scaler_update_wrapper)
        self._wrap(nn.Module, "load_state_dict", self._load_state_wrapper)
        from torch.utils.data import distributed as dist_data
        self._wrap(dist_data.DistributedSampler, "__iter__", self._sampler_wrapper)
        return self

    def uninstall(self) -> None:
        for h in self._handles:
            h.remove()
        self._handles.clear()
        for owner, name, orig in reversed(self._patches):
            setattr(owner, name, orig)
        self._patches.clear()

    def saved_tensors_hooks(self):
        """Context manager to enter around the script: counts bytes saved for backward."""
        return torch.autograd.graph.saved_tensors_hooks(self._pack, self._unpack)

    def _wrap(self, owner, name, make_wrapper):
        orig = owner.__dict__[name] if isinstance(owner, type) else getattr(owner, name)
        setattr(owner, name, make_wrapper(orig))
        self._patches.append((owner, name, orig))

    # ---------------------------------------------------------------- model bookkeeping
    def model(self):
        return self._model() if self._model is not None else None

    def _model_params(self):
        m = self.model()
        return [p for p in m.parameters() if p.requires_grad] if m is not None else []

    # ---------------------------------------------------------------- forward hooks
    def _fwd_pre(self, module, args):
        if self._depth == 0 and next(module.parameters(), None) is not None:
            p = next(module.parameters())
            rec = {
                "i": len(self.forwards), "module": type(module).__name__, "training": module.training,
                "grad": torch.is_grad_enabled(), "inference": torch.is_inference_mode_enabled(),
                "autocast": _autocast_dtype(), "param_dtype": str(p.dtype).replace("torch.", ""),
                "device": p.device.type, "after_step": len(self.steps), "backward": False,
                "saved_bytes": 0, "live_saved_at_start": self.live_saved, "out_grad_fn": None,
                "input_dtype": None, "input_device": None, "buffers_changed": None,
            }
            x = next((a for a in args if isinstance(a, torch.Tensor)), None)
            if x is not None:
                rec["input_dtype"] = str(x.dtype).replace("torch.", "")
                rec["input_device"] = x.device.type
            if not rec["grad"]:
                rec["_buffers"] = _buffer_sum(module)
            self.forwards.append(rec)
            self._current = rec
            if rec["grad"] and not rec["inference"]:
                self._model = weakref.ref(module)
        self._depth += 1

    def _fwd_post(self, module, args, output):
        self._depth = max(0, self._depth - 1)
        if self._depth == 0 and self._current is not None and self.forwards and self._current is self.forwards[-1]:
            out = output[0] if isinstance(output, (tuple, list)) and output else output
            if isinstance(out, torch.Tensor) and self._current["out_grad_fn"] is None:
                self._current["out_grad_fn"] = out.grad_fn is not None
            before = self._current.pop("_buffers", None)
            if before is not None:
                self._current["buffers_changed"] = _buffer_sum(module) != before

    # ---------------------------------------------------------------- saved tensors
    def _pack(self, t):
        base = t._base if t._base is not None else t
        n = 0 if isinstance(base, nn.Parameter) else t.numel() * t.element_size()
        if self._current is not None:
            self._current["saved_bytes"] += n
        return _Saved(self, t, n)

    @staticmethod
    def _unpack(saved):
        t = saved.t
        if t._version != saved.version:
            raise RuntimeError(
                "one of the variables needed for gradient computation has been modified by an "
                f"inplace operation: [{t.type()} {list(t.shape)}] is at version {t._version}; expected "
                f"version {saved.version} instead. (checked by loopcheck's saved-tensor probe)")
        return t

    # ---------------------------------------------------------------- backward
    def _backward_wrapper(self, orig):
        probe = self

        def backward(tensors, *args, **kwargs):
            probe._on_backward(tensors)
            before = probe._grads_before()
            out = orig(tensors, *args, **kwargs)
            probe._add_true_grad(before)
            return out

        return backward

    def _on_backward(self, tensors):
        t = tensors[0] if isinstance(tensors, (tuple, list)) and tensors else tensors
        factor = float(getattr(t, "_loopcheck_scale", 1.0))
        params = self._model_params()
        if all(_is_empty(p.grad) for p in params):
            self.accum, self.grad_factor = 1, factor
        else:
            self.accum += 1
            if factor != self.grad_factor:
                self.grad_factor = float("nan")  # gradients of differently scaled losses mixed
        fwd = next((f for f in reversed(self.forwards) if f["grad"] and not f["inference"]), None)
        if fwd is not None:
            fwd["backward"] = True
        self.backwards.append({"after_step": len(self.steps), "factor": factor,
                               "forward_training": None if fwd is None else fwd["training"],
                               "accum": self.accum, "loss": _scalar(t)})
        if self.accum == 1:
            self._true_grad, self._leaves = None, {}
        self._leaves.update(_graph_leaves(t))

    def _grads_before(self):
        """The gradients before a backward (to isolate what it adds); ``None`` for big models."""
        params = self._model_params()
        if not params or sum(p.numel() for p in params) > 2_000_000:
            return None
        return params, [None if p.grad is None else p.grad.detach().clone() for p in params]

    def _add_true_grad(self, before) -> None:
        if before is None:
            return
        params, grads = before
        delta = [(torch.zeros_like(p) if p.grad is None else p.grad.detach().float() - (0 if g is None else g.float()))
                 for p, g in zip(params, grads)]
        if self._true_grad is None or len(self._true_grad) != len(delta):
            self._true_grad = delta
        else:
            self._true_grad = [a + b for a, b in zip(self._true_grad, delta)]

    # ---------------------------------------------------------------- optimizer steps
    def _step_pre(self, opt, args, kwargs):
        params = [p for g in opt.param_groups for p in g["params"]]
        grads = [p.grad for p in params]
        norm = grad_norm(grads)
        model_params = self._model_params()
        held = {id(p) for p in params}
        last_fwd = next((f for f in reversed(self.forwards) if f["grad"] and not f["inference"]), None)
        clip = self._clips_since_step[-1] if self._clips_since_step else None
        self._clips_since_step = []
        lr = _as_float(opt.param_groups[0].get("lr"))
        rec = {
            "i": len(self.steps), "optimizer": type(opt).__name__, "lr": lr,
            "initial_lr": _as_float(opt.param_groups[0].get("initial_lr", lr)),
            "grad_norm": norm, "finite": math.isfinite(norm),
            "n_params": len(params), "n_grad": sum(g is not None for g in grads),
            "n_nonzero_grad": sum(not _is_empty(g) for g in grads),
            "model_params": len(model_params),
            "orphans": sum(id(p) not in held for p in model_params),
            "stale": last_fwd is not None and not last_fwd["backward"],
            "accum": self.accum,
            "factor": self.grad_factor / (self._internal_unscale or 1.0),
            "clip": None if clip is None else dict(clip, ratio=(clip["post"] / norm) if norm else None),
            "sched_steps": len(self.sched_steps), "zero_grads": self.zero_grads,
            "update_norm": None, "params_finite": None,
        }
        rec.update(self._step_extras(opt, params, clip))
        self.steps.append(rec)
        numel = sum(p.numel() for p in params)
        self._snapshot = [p.detach().clone() for p in params] if numel <= 5_000_000 else None
        if len(self.steps) in self.CENSUS_AT:
            self.take_census()

    def _step_extras(self, opt, params, clip) -> dict:
        """Optimizer state, parameters the graph trained that the optimizer does not hold, and how far
        the applied gradient is from the (clipped) sum of the micro-batches' own gradients."""
        held = {id(p) for p in params}
        steps = [opt.state[p].get("step") for p in params if p in opt.state and isinstance(opt.state[p], dict)]
        steps = [_as_float(x) for x in steps if x is not None]
        unheld = sum(n for i, n in self._leaves.items() if i not in held)
        out = {"opt_state_step": max(steps) if steps else None, "opt_state_n": len(opt.state),
               "leaf_numel": sum(self._leaves.values()), "unheld_leaf_numel": unheld, "accum_deviation": None}
        model_params = self._model_params()
        true = self._true_grad
        if true is not None and len(true) == len(model_params) and all(p.grad is not None for p in model_params):
            applied = [p.grad.detach().float() for p in model_params]
            norm = grad_norm(true)
            target = true
            if clip is not None and clip.get("kind") == "norm" and clip.get("limit") and norm > clip["limit"]:
                target = [t * (clip["limit"] / norm) for t in true]
            ref = grad_norm(target)
            if ref > 0:
                out["accum_deviation"] = grad_norm([a - t for a, t in zip(applied, target)]) / ref
        return out

    def _step_post(self, opt, args, kwargs):
        if not self.steps or self._snapshot is None:
            return
        params = [p for g in opt.param_groups for p in g["params"]]
        if len(params) != len(self._snapshot):
            return
        with torch.no_grad():
            diff = [(p.detach().float() - q.float()) for p, q in zip(params, self._snapshot)
                    if p.shape == q.shape and p.device == q.device]
            self.steps[-1]["update_norm"] = grad_norm(diff) if diff else None
            self.steps[-1]["params_finite"] = all(bool(torch.isfinite(p).all()) for p in params)
        self._snapshot = None

    def take_census(self, final: bool = False) -> None:
        c = graph_census()
        c.update(after_steps=len(self.steps), live_saved_bytes=self.live_saved, final=final)
        self.census.append(c)

    # ---------------------------------------------------------------- clip, zero_grad
    def _clip_wrapper(self, kind):
        probe = self

        def make(orig):
            def clip(parameters, *args, **kwargs):
                params = [parameters] if isinstance(parameters, torch.Tensor) else list(parameters)
                grads = [p.grad for p in params]
                seen = grad_norm(grads)
                n_grad = sum(not _is_empty(g) for g in grads)
                factor = probe.grad_factor if n_grad else None
                out = orig(params, *args, **kwargs)
                limit = args[0] if args else kwargs.get("max_norm", kwargs.get("clip_value"))
                rec = {"kind": kind, "limit": _as_float(limit), "seen": seen,
                       "post": grad_norm([p.grad for p in params]), "n_grad": n_grad,
                       "factor": factor, "after_step": len(probe.steps)}
                probe.clips.append(rec)
                probe._clips_since_step.append(rec)
                return out

            return clip

        return make

    def _zero_grad_wrapper(self, orig):
        probe = self

        def zero_grad(self_, *args, **kwargs):
            probe.zero_grads += 1
            return orig(self_, *args, **kwargs)

        return zero_grad

    # ---------------------------------------------------------------- schedulers, loaders
    def _sched_wrapper(self, orig):
        probe = self

        def step(self_, *args, **kwargs):
            initial = getattr(self_, "_is_initial", False)
            outer = probe._sched_depth == 0
            probe._sched_depth += 1
            error = None
            try:
                return orig(self_, *args, **kwargs)
            except BaseException as exc:
                error = f"{type(exc).__name__}: {exc}"
                raise
            finally:
                probe._sched_depth -= 1
                if outer and not initial:
                    opt = getattr(self_, "optimizer", None)
                    lr = _as_float(opt.param_groups[0]["lr"]) if opt is not None else None
                    probe.sched_steps.append({
                        "scheduler": type(self_).__name__, "after_step": len(probe.steps),
                        "n_args": len(args) + len(kwargs), "lr": lr, "error": error})

        return step

    def _loader_wrapper(self, orig):
        probe = self

        def __iter__(self_):
            try:
                n = len(self_)
            except TypeError:
                n = None
            probe.loader_iters.append({"loader": id(self_), "len": n, "after_step": len(probe.steps)})
            return orig(self_)

        return __iter__

    # ---------------------------------------------------------------- GradScaler
    def _scaler_scale_wrapper(self, orig):
        probe = self

        def scale(self_, outputs):
            out = orig(self_, outputs)
            if self_.is_enabled():
                s = float(self_.get_scale())
                for t in (out if isinstance(out, (list, tuple)) else [out]):
                    if isinstance(t, torch.Tensor):
                        t._loopcheck_scale = s
                probe.scaler.append({"event": "scale", "scale": s, "after_step": len(probe.steps)})
            return out

        return scale

    def _scaler_unscale_wrapper(self, orig):
        probe = self

        def _unscale_grads_(self_, optimizer, inv_scale, *args, **kwargs):
            out = orig(self_, optimizer, inv_scale, *args, **kwargs)
            inv = float(inv_scale)
            probe.grad_factor *= inv
            probe.scaler.append({"event": "unscale", "scale": 1.0 / inv if inv else None,
                                 "after_step": len(probe.steps)})
            return out

        return _unscale_grads_

    def _scaler_step_wrapper(self, orig):
        probe = self

        def step(self_, optimizer, *args, **kwargs):
            before = len(probe.steps)
            rec = {"event": "step", "scale": float(self_.get_scale()) if self_.is_enabled() else None,
                   "after_step": before, "error": None, "skipped": None}
            probe.scaler.append(rec)
            state = getattr(self_, "_per_optimizer_states", {}).get(id(optimizer), {})
            if (self_.is_enabled() and getattr(optimizer, "_step_supports_amp_scaling", False)
                    and getattr(state.get("stage"), "name", "READY") == "READY"):  # no state yet: READY
                # fused optimizers unscale inside their kernel: the step applies true gradients
                probe._internal_unscale = rec["scale"]
            try:
                return orig(self_, optimizer, *args, **kwargs)
            except BaseException as exc:
                rec["error"] = f"{type(exc).__name__}: {exc}"
                raise
            finally:
                rec["skipped"] = len(probe.steps) == before
                if probe._internal_unscale:
                    probe.grad_factor /= probe._internal_unscale
                    probe._internal_unscale = None

        return step

    def _scaler_update_wrapper(self, orig):
        probe = self

        def update(self_, *args, **kwargs):
            before = float(self_.get_scale()) if self_.is_enabled() else None
            out = orig(self_, *args, **kwargs)
            after = float(self_.get_scale()) if self_.is_enabled() else None
            probe.scaler.append({"event": "update", "scale": before, "new_scale": after,
                                 "after_step": len(probe.steps)})
            return out

        return update

    # ---------------------------------------------------------------- checkpoints, samplers
    def _load_state_wrapper(self, orig):
        probe = self

        def load_state_dict(self_, state_dict, *args, **kwargs):
            own = {k: v for k, v in self_.state_dict().items() if isinstance(v, torch.Tensor)}
            given = {k: v for k, v in state_dict.items() if isinstance(v, torch.Tensor)} if hasattr(state_dict, "items") else {}
            shared = sum(1 for k, v in given.items() if k in own and v.data_ptr() == own[k].data_ptr() and v.numel())
            with torch.no_grad():
                change = sum(float((v.detach().float().cpu() - own[k].detach().float().cpu()).abs().max())
                             for k, v in given.items() if k in own and v.shape == own[k].shape and v.numel()
                             and v.is_floating_point())
            probe.loads.append({"module": type(self_).__name__, "tensors": len(given), "shared": shared,
                                "max_change": change, "after_step": len(probe.steps)})
            return orig(self_, state_dict, *args, **kwargs)

        return load_state_dict

    def _sampler_wrapper(self, orig):
        probe = self

        def __iter__(self_):
            indices = list(orig(self_))
            probe.sampler_orders.append([int(i) for i in indices[:64]])
            return iter(indices)

        return __iter__

    # ---------------------------------------------------------------- result
    def record(self) -> dict:
        """Everything measured, as JSON-able data (call after the script finished)."""
        return {
            "steps": self.steps, "forwards": self.forwards, "backwards": self.backwards,
            "clips": self.clips, "sched_steps": self.sched_steps, "scaler": self.scaler,
            "loader_iters": self.loader_iters, "census": self.census,
            "zero_grads": self.zero_grads, "peak_saved_bytes": self.peak_saved,
            "live_saved_bytes_at_end": self.live_saved,
            "loads": self.loads, "sampler_orders": self.sampler_orders,
        }
