"""Gradient order at runtime (LC101–LC105): clipping, zero_grad, step before backward, accumulation.

A mixin of :class:`~loopcheck.trace.watch.Watcher`: it wraps ``clip_grad_norm_`` /
``clip_grad_value_`` and ``Optimizer.zero_grad`` / ``Module.zero_grad``, and checks each
optimizer step against the optimizer's gradient state (:class:`~loopcheck.trace.state.OptState`):

- a clip on *empty* gradients (or on the previous step's, once a new forward ran), followed by
  a backward and a step that no clip after the backward covered: LC101 at the clip;
- a clip on *applied* gradients right after the step, and a next step no clip covered: LC102;
- ``zero_grad()`` on gradients a backward filled since the step, then a step that finds them
  empty (LC103), or a step that applies fewer backward passes than ran since the last step
  (accumulation wiped, LC103);
- a step between a training forward and that forward's backward: LC104 at the step;
- two steps in a row applying gradients that still hold an earlier step's backward: LC105.

Gradients belong to parameters: a ``zero_grad()`` (an optimizer's or a module's) clears the
gradients of every optimizer holding some of its parameters; one that clears only a part of an
optimizer's parameters counts once such parts, since its step, cover all of them.

A clip with ``max_norm=inf`` is a norm measurement (transformers makes one every step) and does
not count as a clip.
"""

from __future__ import annotations

import math

import torch

from loopcheck.verify.probes import _as_float, grad_norm

from .state import Event, OptState, fmt, guarded, ref, subject, where


class GradientChecks:
    """LC101–LC105 (mixed into the watcher)."""

    def _install_gradients(self) -> None:
        import torch.nn.utils as nn_utils
        import torch.nn.utils.clip_grad as clip_mod
        for mod in (nn_utils, clip_mod):
            self._wrap(mod, "clip_grad_norm_", self._trace_clip_wrapper("norm"))
            self._wrap(mod, "clip_grad_value_", self._trace_clip_wrapper("value"))
        self._wrap(torch.optim.Optimizer, "zero_grad", self._opt_zero_wrapper)
        self._wrap(torch.nn.Module, "zero_grad", self._module_zero_wrapper)

    # ---------------------------------------------------------------- clipping
    def _trace_clip_wrapper(self, kind: str):
        probe = self

        def make(orig):
            def clip(parameters, *args, **kwargs):
                if probe._clip_depth:
                    return orig(parameters, *args, **kwargs)
                params = [parameters] if isinstance(parameters, torch.Tensor) else list(parameters)
                pending = probe._before_clip(params, args, kwargs)
                probe._clip_depth += 1
                try:
                    out = orig(params, *args, **kwargs)
                except Exception as exc:
                    if pending is not None:
                        probe._clip_failed(kind, pending[0], pending[2], params, exc)
                    raise
                finally:
                    probe._clip_depth -= 1
                if pending is not None:
                    probe._on_clip(kind, *pending)
                return out

            return clip

        return make

    @guarded
    def _before_clip(self, params, args, kwargs):
        """``(site, limit, optimizers, [(optimizer, gradient scale)])`` of a clip about to run."""
        limit = _as_float(args[0] if args else kwargs.get("max_norm", kwargs.get("clip_value")))
        opts = self._opts_for_params(params)
        scales = [(o, o.factor / (o.internal_unscale or 1.0)) for o in opts if o.state == "filled"]
        return self.site(), limit, opts, scales

    @guarded
    def _on_clip(self, kind, site, limit, opts, scales) -> None:
        if limit is None or math.isinf(limit):
            return  # clip_grad_norm_(params, inf) measures the norm and clips nothing
        self._scaled_clip(site, limit, kind, scales)
        ev = Event(self._next(), site)
        rec = {"event": ev, "site": site, "limit": limit, "kind": kind}
        for o in opts:
            if o.state == "filled":
                o.clip_ok, o.clip_ok_rec = ev, rec
            elif o.state == "empty" or (o.last_step is not None and o.last_forward is not None
                                        and o.last_forward.seq > o.last_step.seq):
                o.clip_before = dict(rec, state=o.state)
            else:  # applied, and no forward since the step: the clip is that step's, after it
                o.clip_after = dict(rec, step=o.steps)

    @guarded
    def _clip_failed(self, kind, site, opts, params, exc) -> None:
        """A clip that raised on parameters without any gradient: it runs before backward."""
        if any(p.grad is not None for p in params):
            return
        for o in opts:
            if o.state == "applied" and not (o.last_forward and o.last_step and o.last_forward.seq > o.last_step.seq):
                continue
            first = str(exc).splitlines()[0][:120] if str(exc) else ""
            self.observe(
                "LC101", site,
                f"{subject(site, f'clip_grad_{kind}_()')} runs before any backward pass, on empty gradients",
                f"Runtime: at step {o.steps + 1} none of the {len(params)} parameters had a gradient when the "
                f"clip ran, and it raised {type(exc).__name__}: {first}. Clip between loss.backward() and "
                "optimizer.step().",
                step=o.steps + 1)
            return

    def _confirm_clip(self, o: OptState, code: str, clip: dict, step: Event, n: int) -> None:
        site = clip["site"]
        norm = grad_norm(o.grads()) if self._measures(code, site) else None
        limit = f" (max_norm {clip['limit']:g})" if clip["kind"] == "norm" else f" (clip_value {clip['limit']:g})"
        clip_txt = subject(site, f"clip_grad_{clip['kind']}_()")
        bwd = o.last_backward.site if o.last_backward else None
        if code == "LC101":
            found = {"empty": "found no gradient", "applied": "found the previous step's gradient",
                     "filled": "ran before the last backward pass"}.get(clip.get("state"), "")
            message = f"{clip_txt} runs before {ref(bwd, 'loss.backward()', site)}: step {n} was not clipped"
            related = [(bwd, "backward() fills .grad only here"), (step.site, "step() applies the unclipped gradient")]
            note = (f"Runtime: at step {n} the clip {found}; the gradient the step applied had norm {fmt(norm)}"
                    f"{limit}. Clip between loss.backward() and optimizer.step().")
        else:
            prev = o.last_step.site if o.last_step else None
            message = f"{clip_txt} runs after {ref(prev, 'optimizer.step()', site)}: step {n} was not clipped"
            related = [(prev, "step() already applied the gradient it clips"),
                       (step.site, "the next step applies an unclipped gradient")]
            note = (f"Runtime: the clip after step {n - 1} clipped gradients that step had already applied; step {n} "
                    f"applied a gradient of norm {fmt(norm)}{limit}. Clip between loss.backward() and "
                    "optimizer.step().")
        self.observe(code, site, message, note, related, step=n, value=norm)

    # ---------------------------------------------------------------- zero_grad
    def _opt_zero_wrapper(self, orig):
        probe = self

        def zero_grad(self_, *args, **kwargs):
            if probe._zero_depth:
                return orig(self_, *args, **kwargs)
            opts = probe._zero_targets(self_, optimizer=True)
            probe._zero_depth += 1
            try:
                return orig(self_, *args, **kwargs)
            finally:
                probe._zero_depth -= 1
                if opts:
                    probe._on_zero(opts)

        return zero_grad

    def _module_zero_wrapper(self, orig):
        probe = self

        def zero_grad(self_, *args, **kwargs):
            if probe._zero_depth:
                return orig(self_, *args, **kwargs)
            opts = probe._zero_targets(self_, optimizer=False)
            probe._zero_depth += 1
            try:
                return orig(self_, *args, **kwargs)
            finally:
                probe._zero_depth -= 1
                if opts:
                    probe._on_zero(opts)

        return zero_grad

    @guarded
    def _zero_targets(self, owner, optimizer: bool) -> list[tuple[OptState, frozenset | None]]:
        """The optimizers whose gradients ``owner.zero_grad()`` clears (an optimizer, or a
        module), each with the ``id``s of its parameters it clears: ``None`` for all of them.
        Gradients belong to parameters: an optimizer's ``zero_grad()`` also clears the
        gradients of the parameters it shares with other optimizers."""
        if self._roots_dirty:
            self._refresh_roots()
        if optimizer:
            o = self._opt(owner)
            if o is None:
                return []
            pids, opts = o.ids, [p for p in self._live_opts() if p is o or not p.ids.isdisjoint(o.ids)]
        else:
            pids, opts = self._module_pids(owner), self._opts_for_module(owner)
        return [(p, None if p.ids <= pids else p.ids & pids) for p in opts]

    @guarded
    def _on_zero(self, targets) -> None:
        opts = []
        for o, part in targets:
            if part is None or o.ids <= o.cleared | part:
                opts.append(o)
            else:
                self._on_partial_zero(o, part)
        self._on_full_zero(opts)

    def _on_partial_zero(self, o: OptState, part: frozenset) -> None:
        """A zero_grad clears ``part`` of ``o``'s parameters: once such clears since ``o``'s step
        cover all of them, nothing that step applied is left (see :meth:`_on_zero`)."""
        if not o.cleared:
            o.cleared_at = o.since_step
        o.cleared = o.cleared | part

    def _on_full_zero(self, opts) -> None:
        site = None
        for o in opts:
            if o.cleared and o.since_step > o.cleared_at:
                # the last part of clears that began after the step: what is left holds only
                # backward passes since the first of them
                o.accum = min(o.accum, o.since_step - o.cleared_at)
                o.cleared = frozenset()
                continue
            o.cleared = frozenset()
            # gradients of backward passes since the last step only (not a step's leftovers, nor
            # what another optimizer's backward left: a GAN's generator loss reaches the discriminator)
            if o.state == "filled" and o.last_backward is not None and o.accum <= o.since_step and not o.spent:
                site = site or self.site()
                o.wipe = o.last_wipe = {"site": site, "seq": self._next(), "backward": o.last_backward}
            o.state = "empty"
            o.spent = False
            o.accum = 0
            o.factor = 1.0

    # ---------------------------------------------------------------- at a backward
    def _gradients_at_backward(self, o: OptState, fresh: bool, factor: float, ev: Event) -> None:
        prev = o.last_backward
        if fresh:
            o.accum, o.factor = 1, factor
        else:
            o.accum += 1
            if o.factor != factor:
                o.factor = float("nan")  # gradients of differently scaled losses mixed
        o.since_step += 1
        if o.clip_ok is not None and o.clip_ok.seq > (prev.seq if prev is not None else -1) and o.clip_before is None:
            o.clip_before = dict(o.clip_ok_rec, state="filled")  # a clip between two backward passes
        o.state = "filled"
        o.last_backward = ev
        o.spent = False
        o.wipe = None
        if o.stale is not None:
            if o.last_forward is o.stale["forward"]:
                self._confirm_stale(o, o.stale, ev)
            o.stale = None

    # ---------------------------------------------------------------- at a step
    def _gradients_spent(self, o: OptState) -> None:
        """``o``'s step applies its last backward: in every other optimizer that backward filled
        last, its gradients are that backward's leftovers (the backward was ``o``'s)."""
        bwd = o.last_backward
        if bwd is None:
            return
        for p in self._live_opts():
            if p is not o and p.state == "filled" and p.last_backward is bwd:
                p.spent = True

    def _gradients_at_step(self, o: OptState, ev: Event, n: int, stale: bool) -> None:
        if o.state == "empty" and o.wipe is not None and not stale:
            self._confirm_wipe(o, ev, n)
        elif o.state == "filled" and o.last_wipe is not None and o.since_step > o.accum and not o.closure_step:
            # (a closure step, LBFGS's, evaluates the closure several times: each clears and refills)
            self._confirm_partial_wipe(o, ev, n)
        o.wipe = o.last_wipe = None
        if o.state == "filled":
            last_bwd = o.last_backward.seq if o.last_backward else -1
            clipped_after = o.clip_ok is not None and o.clip_ok.seq > last_bwd
            if o.clip_before is not None and not clipped_after:
                self._confirm_clip(o, "LC101", o.clip_before, ev, n)
            if o.clip_after is not None:
                if not clipped_after:
                    self._confirm_clip(o, "LC102", o.clip_after, ev, n)
                else:
                    o.clip_after_refuted.add(o.clip_after["site"].key if o.clip_after["site"] else None)
        o.clip_before = o.clip_after = None
        if stale:
            o.stale = {"forward": o.last_forward, "step": ev, "n": n, "state": o.state}
        carried = o.state == "filled" and o.accum > o.since_step
        o.carry_run = o.carry_run + 1 if carried else 0
        if o.carry_run >= 2:
            self._lc105(o, ev, n)

    def _confirm_wipe(self, o: OptState, step: Event, n: int) -> None:
        w = o.wipe
        site, bwd = w["site"], w["backward"].site
        measured = self._measures("LC103", site)
        have = sum(1 for g in o.grads() if g is not None and (not measured or bool(g.any())))
        self.observe(
            "LC103", site,
            f"{subject(site, 'optimizer.zero_grad()')} runs between {ref(bwd, 'backward()', site)} and "
            f"{ref(step.site, 'optimizer.step()', site)}",
            f"Runtime: step {n} found {have} of {len(o.params)} parameters with a nonzero gradient: the backward "
            "pass's gradients were cleared before the step, which applied nothing. Call zero_grad() before the "
            "backward pass, or after the step.",
            [(bwd, "backward() filled the gradients here"), (step.site, "step() finds them cleared")],
            step=n, value=float(have))

    def _confirm_partial_wipe(self, o: OptState, step: Event, n: int) -> None:
        w = o.last_wipe
        site, bwd = w["site"], w["backward"].site
        self.observe(
            "LC103", site,
            f"{subject(site, 'optimizer.zero_grad()')} clears the gradients between the backward passes that "
            f"{ref(step.site, 'optimizer.step()', site)} accumulates",
            f"Runtime: step {n} applied {o.accum} of the {o.since_step} backward passes run since the previous "
            "step; zero_grad() cleared the others. Call it only after the step.",
            [(bwd, "backward() filled the gradients here"), (step.site, "step() applies only what is left")],
            step=n, value=float(o.accum))

    def _confirm_stale(self, o: OptState, stale: dict, bwd: Event) -> None:
        step = stale["step"]
        fwd = stale["forward"].site
        found = {"empty": "found no gradient", "applied": "applied the previous batch's gradient again",
                 "filled": "applied the previous batch's gradient"}.get(stale["state"], "")
        self.observe(
            "LC104", step.site,
            f"{subject(step.site, 'optimizer.step()')} runs before {ref(bwd.site, 'loss.backward()', step.site)}: "
            "it applies no gradient of this batch",
            f"Runtime: step {stale['n']} {found}; the backward pass of the forward before it (at "
            f"{where(fwd, step.site)}) ran only after the step. Call optimizer.step() after loss.backward().",
            [(fwd, "the forward pass of this batch"), (bwd.site, "its backward() runs after the step")],
            step=stale["n"])

    def _lc105(self, o: OptState, step: Event, n: int) -> None:
        obs = self.observe(
            "LC105", step.site,
            lambda: (f"nothing clears the gradients: each {subject(step.site, 'optimizer.step()')} applies the sum "
                     f"of every {ref(o.last_backward.site if o.last_backward else None, 'backward()', step.site)} "
                     "so far"),
            lambda: (f"Runtime: step {n} applied the sum of {o.accum} backward passes (steps {n - 1} and {n} both "
                     "kept the gradients of earlier steps). Call optimizer.zero_grad() once per step."),
            [(o.last_backward.site if o.last_backward else None, "backward() adds to .grad")],
            step=n, value=float(o.accum))
        if obs is not None:
            obs.value = float(o.accum)

    def _gradients_at_end(self) -> None:
        for o in self._all_opts:
            c = o.clip_after
            if c is None or c["site"] is None or c["site"].key in o.clip_after_refuted:
                continue
            site = c["site"]
            prev = o.last_step.site if o.last_step else None
            self.observe(
                "LC102", site,
                f"{subject(site, 'clip_grad_norm_()')} runs after {ref(prev, 'optimizer.step()', site)}: the step "
                "was not clipped",
                f"Runtime: the clip after step {o.steps} clipped gradients that step had already applied. Clip "
                "between loss.backward() and optimizer.step().",
                [(prev, "step() already applied the gradient it clips")], step=o.steps)
