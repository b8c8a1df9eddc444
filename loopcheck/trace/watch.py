"""The runtime watcher of ``loopcheck trace``: the verify probes, turned into rule checks.

:class:`Watcher` builds on :class:`loopcheck.verify.probes.Probe` (same install/uninstall
mechanics, same places to hook: global optimizer step hooks, global module forward hooks, thin
wrappers around ``torch.autograd.backward``, ``clip_grad_norm_``/``clip_grad_value_``,
``zero_grad``, ``LRScheduler.step``, ``DataLoader.__iter__`` and ``GradScaler``), plus
wrappers around ``Optimizer.__init__``/``add_param_group`` (to know every optimizer and where
it was built). Where verify records everything of a fixture's run, the watcher keeps, per
optimizer, a small state machine (:class:`~loopcheck.trace.state.OptState`) like the static
rules' typestates — gradients *empty* → *filled* (a backward reached its parameters) →
*applied* (its step ran), their scale, how many backward passes they sum — and turns each
violation into an :class:`~loopcheck.trace.state.Observation` under the rule's code, at the
user's line that caused it (:mod:`loopcheck.trace.sites`).

The checks live by rule family, as in ``loopcheck/rules``: :mod:`~loopcheck.trace.gradients`
(LC101–LC105), :mod:`~loopcheck.trace.schedulers` (LC201–LC203), :mod:`~loopcheck.trace.modes`
(LC301, LC302), :mod:`~loopcheck.trace.memory` (LC401), :mod:`~loopcheck.trace.setup` (LC501),
:mod:`~loopcheck.trace.amp` (LC601–LC605). This module holds what they share: the optimizer
registry, forward hooks, the backward wrapper (which optimizers a backward reached: their
gradients' identities and version counters changed), and the step hooks.

Cheap on the hot path: no saved-tensor hooks, no parameter snapshots, no gradient norms
except to measure a finding; per step it compares gradient identities and version counters
and walks a few frames. An optimizer step called with a closure (Lightning runs forward and
backward inside ``optimizer.step(closure)``) is checked when the step returns.
"""

from __future__ import annotations

import torch

from loopcheck.verify.probes import Probe

from .amp import ScalerChecks
from .forwards import ForwardWatch
from .gradients import GradientChecks
from .memory import LossChecks, mark_loss
from .modes import ModeChecks
from .schedulers import SchedulerChecks
from .setup import SetupChecks
from .sites import Site, UserCode
from .state import Event, IdMap, Observation, OptState, TraceStop, guarded

__all__ = ["Watcher", "Observation", "TraceStop"]


def _all_zero(grads) -> bool:
    return all(g is None or not bool(g.detach().any()) for g in grads)


class Watcher(ForwardWatch, GradientChecks, SchedulerChecks, ModeChecks, LossChecks, SetupChecks, ScalerChecks,
              Probe):
    """Hooks into torch for one traced run and collects :class:`Observation` objects.

    Args:
        user: decides which frames are the user's (:class:`~loopcheck.trace.sites.UserCode`).
        max_steps: stop the run (raise :class:`~loopcheck.trace.state.TraceStop`) before any
            optimizer's step number ``max_steps + 1``; ``None`` runs to the end.
        measure_limit: how many occurrences per site get a measured value (a gradient norm);
            later ones are only counted.
    """

    def __init__(self, user: UserCode, max_steps: int | None = None, measure_limit: int = 3) -> None:
        super().__init__()
        self.user = user
        self.max_steps = max_steps
        self.measure_limit = measure_limit
        self.observations: dict[tuple, Observation] = {}
        self.notes: list[str] = []
        self.seq = 0
        self.stopped = False
        self.total_steps = 0
        self.total_backwards = 0
        self.most_steps = 0              # steps of the optimizer that stepped most
        self._opts: dict[int, OptState] = {}
        self._all_opts: list[OptState] = []  # every optimizer seen, alive or not (for the end of the run)
        self._opt_version = 0
        self._live: list[OptState] = []
        self._live_version = -1
        self._module_opts = IdMap()      # module -> (optimizer version, [OptState], has parameters, parameter ids)
        self._fwd_since_bwd: list = []
        self._trained = IdMap()          # modules whose forward a backward followed -> True
        self._bwd_depth = 0
        self._clip_depth = 0
        self._zero_depth = 0
        self._apply_depth = 0
        self._scaler_step_depth = 0
        # schedulers
        self._scheds = IdMap()
        self._pass: dict | None = None
        self._passes = 0
        self._samplers = IdMap()
        self._sampler_repeats: dict[int, dict] = {}
        # modes
        self._modes = IdMap()            # module -> (mode, seq, site) of its last train()/eval() call
        self._eval_fwds: list = []
        self._eval_pending = None
        self._val_counts: dict[tuple, list] = {}
        # memory
        self._kept_external = 0
        self._kept_sites: dict = {}
        # setup
        self._created = IdMap()          # module -> (seq, site), for modules built once an optimizer exists
        self._orphans_dirty = False
        # parameters already reported outside every optimizer (or replaced by a conversion), by
        # identity: a parameter of a later model may reuse the id of a collected one
        self._orphans_seen = IdMap()
        self._init_forwards()
        self.errors: list[str] = []

    def internal_error(self, where: str, exc: Exception) -> None:
        """Record an exception raised inside the watcher (the first few, as notes); the run goes on."""
        text = f"{where}: {type(exc).__name__}: {exc}"
        if text not in self.errors and len(self.errors) < 5:
            self.errors.append(text)
            self.notes.append(f"loopcheck trace: internal error in {text} (the run went on; findings may be "
                              "incomplete)")

    # ---------------------------------------------------------------- install
    def install(self) -> "Watcher":
        """Install every hook and wrapper; returns ``self``."""
        from torch.optim import optimizer as optim_mod

        self._handles += [
            optim_mod.register_optimizer_step_pre_hook(self._step_pre),
            optim_mod.register_optimizer_step_post_hook(self._step_post),
        ]
        self._wrap(torch.autograd, "backward", self._backward_wrapper)
        self._wrap(torch.optim.Optimizer, "__init__", self._opt_init_wrapper)
        self._wrap(torch.optim.Optimizer, "add_param_group", self._add_group_wrapper)
        self._install_forwards()
        self._install_gradients()
        self._install_schedulers()
        self._install_modes()
        self._install_setup()
        self._install_amp()
        return self

    def uninstall(self) -> None:
        """Remove every hook and wrapper (the model classes' ``__call__`` too)."""
        self._uninstall_forwards()
        super().uninstall()

    # ---------------------------------------------------------------- bookkeeping
    def _next(self) -> int:
        self.seq += 1
        return self.seq

    def site(self) -> Site | None:
        """The innermost user line of the current stack."""
        return self.user.site()

    def observe(self, code: str, site: Site | None, message, note, related=(), step: int = 0,
                value: float | None = None) -> Observation | None:
        """Record a finding at ``site``, or count one more at a place already recorded.

        ``message`` and ``note`` may be callables, evaluated only for the first occurrence.
        Returns the :class:`Observation` (``None`` without a user site)."""
        if site is None:
            return None
        key = (code, site.key)
        obs = self.observations.get(key)
        if obs is not None:
            obs.count += 1
            return obs
        obs = Observation(code, site, message() if callable(message) else message,
                          note() if callable(note) else note,
                          [(s, m) for s, m in related if s is not None], step, value)
        self.observations[key] = obs
        return obs

    def _measures(self, code: str, site: Site | None) -> bool:
        """Whether this occurrence still gets a measured value (the first few per site)."""
        if site is None:
            return False
        obs = self.observations.get((code, site.key))
        return obs is None or obs.count < self.measure_limit

    # ---------------------------------------------------------------- optimizers
    def _opt(self, opt) -> OptState | None:
        """The state of ``opt``; wrappers (accelerate's, Lightning's) resolve to the optimizer inside."""
        if opt is None:
            return None
        o = self._opts.get(id(opt))
        if o is not None and o.ref() is opt:
            return o
        inner = getattr(opt, "optimizer", None)
        if inner is not None and inner is not opt and (not isinstance(opt, torch.optim.Optimizer)
                                                         or "param_groups" not in vars(opt)):
            return self._opt(inner)
        if not isinstance(opt, torch.optim.Optimizer):
            return None
        o = OptState(opt, None, self._next())
        self._opts[id(opt)] = o
        self._all_opts.append(o)
        self._opt_version += 1
        return o

    def _live_opts(self) -> list[OptState]:
        """The optimizers still alive (the list is rebuilt only after one was built or collected)."""
        if self._live_version != self._opt_version:
            for k in [k for k, o in self._opts.items() if o.ref() is None]:
                del self._opts[k]
            self._live = list(self._opts.values())
            self._live_version = self._opt_version
        if any(o.ref() is None for o in self._live):
            self._opt_version += 1
            return self._live_opts()
        return self._live

    def _module_info(self, module) -> tuple[list[OptState], bool]:
        """The optimizers holding some of ``module``'s parameters, and whether it has any
        (cached until an optimizer is built or changes)."""
        hit = self._module_cache(module)
        return hit[1], hit[2]

    def _module_pids(self, module) -> frozenset:
        """The ``id``s of ``module``'s parameters (cached as :meth:`_module_info`)."""
        return self._module_cache(module)[3]

    def _module_cache(self, module) -> tuple:
        hit = self._module_opts.get(module)
        if hit is not None and hit[0] == self._opt_version:
            return hit
        pids = frozenset(id(p) for p in module.parameters())
        opts = [o for o in self._live_opts() if not o.ids.isdisjoint(pids)]
        hit = self._module_opts[module] = (self._opt_version, opts, bool(pids), pids)
        return hit

    def _opts_for_module(self, module) -> list[OptState]:
        return self._module_info(module)[0]

    def _opts_for_params(self, params) -> list[OptState]:
        """The optimizers holding the first or the last of ``params`` (a clip's parameters)."""
        if not params:
            return []
        first, last = id(params[0]), id(params[-1])
        return [o for o in self._live_opts() if first in o.ids or last in o.ids]

    def _opt_init_wrapper(self, orig):
        probe = self

        def __init__(self_, *args, **kwargs):
            orig(self_, *args, **kwargs)
            probe._new_optimizer(self_)

        return __init__

    @guarded
    def _new_optimizer(self, opt) -> None:
        o = OptState(opt, self.site(), self._next())
        self._opts[id(opt)] = o
        self._all_opts.append(o)
        self._opt_version += 1
        self._refresh_roots()

    def _add_group_wrapper(self, orig):
        probe = self

        def add_param_group(self_, *args, **kwargs):
            out = orig(self_, *args, **kwargs)
            probe._new_group(self_)
            return out

        return add_param_group

    @guarded
    def _new_group(self, opt) -> None:
        o = self._opts.get(id(opt))
        if o is not None and o.ref() is opt:
            o.refresh()
            self._opt_version += 1
            self._refresh_roots()

    # ---------------------------------------------------------------- backward
    def _backward_wrapper(self, orig):
        probe = self

        def backward(tensors, *args, **kwargs):
            if probe._bwd_depth:
                return orig(tensors, *args, **kwargs)
            pending = probe._before_backward(tensors, args[0] if args else kwargs.get("grad_tensors"))
            probe._bwd_depth += 1
            try:
                return orig(tensors, *args, **kwargs)
            finally:
                probe._bwd_depth -= 1
                if pending is not None:
                    probe._after_backward(*pending)

        return backward

    @guarded
    def _before_backward(self, tensors, grad_tensors=None):
        """What the backward pass is compared against afterwards: every live optimizer's gradient
        signature, whether its (applied) gradients are zero, and the loss with its graph marked.
        The factor of the gradients it fills is the scale of the tensor back-propagated times
        that of the gradient given for it (``t.backward(scaler.scale(g))``: ``grad_tensors``
        multiplies every gradient the backward fills)."""
        t = tensors[0] if isinstance(tensors, (tuple, list)) and tensors else tensors
        if not isinstance(t, torch.Tensor):
            return None
        g = grad_tensors[0] if isinstance(grad_tensors, (tuple, list)) and grad_tensors else grad_tensors
        if self._roots_dirty:
            self._refresh_roots()
        site = self.site()
        factor = float(getattr(t, "_loopcheck_scale", 1.0))
        if isinstance(g, torch.Tensor):
            factor *= float(getattr(g, "_loopcheck_scale", 1.0))
        loss = getattr(t, "_loopcheck_loss", None)
        loss = loss if isinstance(loss, torch.Tensor) else t
        opts = self._live_opts()
        before = [o.signature() for o in opts]
        zeros = {id(o): _all_zero(o.rep_grads()) for o in opts
                 if o.state == "applied" and any(g is not None for g in o.rep_grads())}
        return opts, before, zeros, site, factor, loss, mark_loss(loss)

    @guarded
    def _after_backward(self, opts, before, zeros, site, factor, loss, mark) -> None:
        self.seq += 1
        ev = Event(self.seq, site)
        self.total_backwards += 1
        reached = []
        for o, sig in zip(opts, before):
            if o.signature() == sig:
                continue
            reached.append(o)
            fresh = all(s is None for s in sig) or o.state == "empty" or zeros.get(id(o), False)
            self._gradients_at_backward(o, fresh, factor, ev)
        if reached and not self._fwd_since_bwd:
            self._forwards_missed()
        for m in self._fwd_since_bwd:
            if self._trained.get(m) is None:
                self._trained[m] = True
                self._orphans_dirty = True
        self._fwd_since_bwd = []
        if reached:
            self._memory_at_backward(reached, loss, mark, site)
        if self._eval_fwds:
            self._modes_at_backward(reached, site)

    # ---------------------------------------------------------------- steps
    def _step_pre(self, opt, args, kwargs):
        o = self._step_state(opt)
        if o is None:
            return
        if self.max_steps is not None and o.steps >= self.max_steps:
            self.stopped = True
            raise TraceStop(f"stopped after {o.steps} optimizer steps (--steps {self.max_steps})")
        closure = args[1] if len(args) > 1 else kwargs.get("closure")
        o.closure_step = closure is not None
        if not o.closure_step:
            self._on_step(o)

    @guarded
    def _step_state(self, opt) -> OptState | None:
        if self._roots_dirty:
            self._refresh_roots()
        return self._opt(opt)

    @guarded
    def _step_post(self, opt, args, kwargs):
        o = self._opt(opt)
        if o is None:
            return
        if o.closure_step:
            self._on_step(o)
            o.closure_step = False
        o.steps += 1
        self.total_steps += 1
        self.most_steps = max(self.most_steps, o.steps)

    @guarded
    def _on_step(self, o: OptState) -> None:
        """Check everything pending for ``o`` at its step ``o.steps + 1``, then mark its gradients applied.

        The family checks are called only when something is pending for them (the common case
        of a correct loop costs a few attribute tests)."""
        self.seq += 1
        ev = Event(self.seq, self.site())
        n = o.steps + 1
        if o.sched_early is not None:
            self._sched_at_step(o, ev.site, n)
        self._gradients_at_step(o, ev, n, o.stale_now())
        self._gradients_spent(o)
        if o.factor != 1.0 or o.internal_unscale or o.last_unscale is not None:
            self._amp_at_step(o, ev, n)
        if o.eval_trained is not None:
            self._modes_at_step(o, ev, n)
        if o.losses:
            self._memory_at_step(o, n)
        if self._orphans_dirty or o.steps == 0:
            self._setup_at_step(o, n)
        o.last_unscale = None
        o.state = "applied"
        o.spent = False
        o.since_step = 0
        o.cleared = frozenset()
        o.last_step = ev

    # ---------------------------------------------------------------- end of run
    def finish(self) -> None:
        """Resolve what only the end of the run settles (call once the program returned)."""
        for check in (self._modes_at_end, self._gradients_at_end, self._schedulers_at_end, self._memory_at_end):
            try:
                check()
            except Exception as exc:  # noqa: BLE001
                self.internal_error(check.__name__, exc)

    def results(self) -> list[Observation]:
        """The observations, in the order they were first seen."""
        return list(self.observations.values())

