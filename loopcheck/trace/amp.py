"""GradScaler use at runtime (LC601–LC605).

A mixin of :class:`~loopcheck.trace.watch.Watcher`. Each optimizer's gradients carry a factor
relative to the true gradient: a backward of ``scaler.scale(loss)`` sets it to the scale (the
``scale`` wrapper tags the scaled tensor), ``_unscale_grads_`` divides it, a fused optimizer
that unscales inside its step is accounted for as verify's probe does. Then:

- a clip on gradients still scaled: LC601 at the clip;
- ``optimizer.step()`` outside ``scaler.step()`` on scaled gradients: LC602 at the step;
- ``scaler.step()`` applying gradients divided by the scale (the loss was not scaled), or a
  GradScaler used before any ``scale()``: LC603 at the backward;
- ``scaler.step()`` again with no ``update()`` since the last one: LC604 at that call (PyTorch
  raises there);
- ``unscale_()`` after the step (the GradScaler then counts it for the *next* step, which
  applies gradients still scaled) or twice before a step: LC605 at that ``unscale_()``.
"""

from __future__ import annotations

import math

import torch

from .state import SCALED, Event, OptState, guarded, ref, subject


def stage(scaler, optimizer) -> str | None:
    """The GradScaler's per-optimizer stage name (``READY``, ``UNSCALED``, ``STEPPED``), or ``None``."""
    states = getattr(scaler, "_per_optimizer_states", None)
    if not isinstance(states, dict):
        return None
    st = dict.get(states, id(optimizer))  # not states.get: a defaultdict would create the entry
    value = st.get("stage") if st else None
    return getattr(value, "name", None)


class ScalerChecks:
    """LC601–LC605 (mixed into the watcher)."""

    def _install_amp(self) -> None:
        from torch.amp.grad_scaler import GradScaler

        self._wrap(GradScaler, "scale", self._trace_scale_wrapper)
        self._wrap(GradScaler, "_unscale_grads_", self._trace_unscale_grads_wrapper)
        self._wrap(GradScaler, "unscale_", self._unscale_wrapper)
        self._wrap(GradScaler, "step", self._trace_scaler_step_wrapper)

    def _trace_scale_wrapper(self, orig):
        probe = self

        def scale(self_, outputs):
            out = orig(self_, outputs)
            if isinstance(out, torch.Tensor) and isinstance(outputs, torch.Tensor):
                probe._tag_scaled(self_, out, outputs)
            return out

        return scale

    @guarded
    def _tag_scaled(self, scaler, out, loss) -> None:
        """Tag ``scaler.scale(loss)``: its backward fills gradients multiplied by the scale."""
        if scaler.is_enabled():
            out._loopcheck_scale = float(scaler.get_scale())
            out._loopcheck_loss = loss

    def _trace_unscale_grads_wrapper(self, orig):
        probe = self

        def _unscale_grads_(self_, optimizer, inv_scale, *args, **kwargs):
            out = orig(self_, optimizer, inv_scale, *args, **kwargs)
            probe._unscaled(optimizer, inv_scale)
            return out

        return _unscale_grads_

    @guarded
    def _unscaled(self, optimizer, inv_scale) -> None:
        o = self._opt(optimizer)
        if o is not None:
            o.factor *= float(inv_scale)

    def _never_scaled(self, scaler, o: OptState | None, call: str) -> None:
        """LC603 when the GradScaler is used on gradients although ``scale()`` never ran."""
        if getattr(scaler, "_scale", 0) is not None or o is None or o.last_backward is None:
            return
        bwd = o.last_backward.site
        self.observe(
            "LC603", bwd,
            f"{subject(bwd, 'loss.backward()')} runs on the unscaled loss, but {ref(self.site(), call, bwd)} "
            "unscales the gradients",
            f"Runtime: {call} ran before any scaler.scale(); PyTorch raises AssertionError "
            "(\"Attempted unscale_ but _scale is None\"). Call scaler.scale(loss).backward().",
            [(self.site(), f"{call} expects scaled gradients")], step=o.steps + 1)

    def _unscale_wrapper(self, orig):
        probe = self

        def unscale_(self_, optimizer):
            if probe._scaler_step_depth == 0 and self_.is_enabled():
                probe._on_unscale(self_, optimizer)
            return orig(self_, optimizer)

        return unscale_

    @guarded
    def _on_unscale(self, scaler, optimizer) -> None:
        o = self._opt(optimizer)
        self._never_scaled(scaler, o, "scaler.unscale_()")
        st = stage(scaler, optimizer)
        site = self.site()
        if o is not None and o.state == "applied":
            o.last_unscale = {"site": site, "n": o.steps}
        if st not in ("UNSCALED", "STEPPED"):
            return
        when = "after scaler.step()" if st == "STEPPED" else "a second time"
        n = (o.steps if o else 0) + (0 if st == "STEPPED" else 1)
        self.observe(
            "LC605", site, f"{subject(site, 'scaler.unscale_()')} runs {when} before scaler.update()",
            f"Runtime: at step {n} the GradScaler's state for this optimizer was {st}; the call raises "
            "RuntimeError. Call unscale_() once, between backward() and scaler.step().", step=n)

    def _trace_scaler_step_wrapper(self, orig):
        probe = self

        def step(self_, optimizer, *args, **kwargs):
            o = probe._before_scaler_step(self_, optimizer)
            probe._scaler_step_depth += 1
            try:
                return orig(self_, optimizer, *args, **kwargs)
            finally:
                probe._scaler_step_depth -= 1
                if o is not None and o.internal_unscale:
                    o.factor /= o.internal_unscale
                    o.internal_unscale = None

        return step

    @guarded
    def _before_scaler_step(self, scaler, optimizer) -> OptState | None:
        o = self._opt(optimizer)
        enabled = scaler.is_enabled()
        if enabled:
            self._never_scaled(scaler, o, "scaler.step()")
        site = self.site()
        if enabled and stage(scaler, optimizer) == "STEPPED":
            prev = (o.scaler_step_site if o is not None else None) or site  # the step no update() followed
            self.observe(
                "LC604", prev, f"{subject(prev, 'scaler.step()')} is not followed by scaler.update() before the "
                "next scaler.step()",
                f"Runtime: scaler.step() was called for step {(o.steps + 1) if o else '?'} with no update() "
                "since the last one; PyTorch raises RuntimeError. Call scaler.update() after every scaler.step().",
                [(site, "the next scaler.step() raises here")] if prev is not site else [],
                step=(o.steps + 1) if o else 0)
        if o is not None:
            o.scaler_step_site = site
            o.scaler_attempted = True
            if enabled and getattr(optimizer, "_step_supports_amp_scaling", False) \
                    and (stage(scaler, optimizer) or "READY") == "READY":
                o.internal_unscale = float(scaler.get_scale())  # fused: unscaled inside the kernel
        return o

    # ---------------------------------------------------------------- clips and steps
    def _scaled_clip(self, site, limit, kind, scales) -> None:
        for o, factor in scales:
            if math.isnan(factor) or factor <= SCALED:
                continue
            self.observe(
                "LC601", site,
                f"{subject(site, f'clip_grad_{kind}_()')} clips gradients still scaled by the GradScaler "
                f"({factor:g}x)",
                f"Runtime: at step {o.steps + 1} the clip saw gradients {factor:g}x the true ones, so the limit "
                f"{limit:g} acted as {limit / factor:.3g} on the true gradient. Call scaler.unscale_(optimizer) "
                "before clipping.",
                [(o.last_backward.site if o.last_backward else None, "backward() of the scaled loss")],
                step=o.steps + 1, value=factor)

    def _amp_at_step(self, o: OptState, ev: Event, n: int) -> None:
        factor = o.factor / (o.internal_unscale or 1.0)
        if o.state != "filled" or math.isnan(factor):
            return
        site = ev.site
        in_scaler = self._scaler_step_depth > 0
        bwd = o.last_backward.site if o.last_backward else None
        if not in_scaler and factor > SCALED:
            self.observe(
                "LC602", site,
                f"{subject(site, 'optimizer.step()')} bypasses the GradScaler: it applies gradients scaled "
                f"{factor:g}x",
                f"Runtime: step {n} applied gradients {factor:g}x the true gradient; scaler.step(optimizer) "
                "would have unscaled them and skipped steps with inf/nan gradients.",
                [(bwd, "backward() of the scaled loss")], step=n, value=factor)
        if in_scaler and factor > SCALED and o.last_unscale is not None:
            u = o.last_unscale
            self.observe(
                "LC605", u["site"],
                f"{subject(u['site'], 'scaler.unscale_()')} runs after scaler.step(): the next step applies "
                "still-scaled gradients",
                f"Runtime: unscale_() ran on gradients step {u['n']} had already applied; the GradScaler counted it "
                f"for step {n}, which then applied gradients {factor:g}x the true gradient. Call unscale_() between "
                "backward() and scaler.step().",
                [(site, "this step applies still-scaled gradients")], step=n, value=factor)
        if in_scaler and factor < 1 / SCALED:
            self.observe(
                "LC603", bwd,
                f"{subject(bwd, 'loss.backward()')} runs on the unscaled loss, but {ref(site, 'scaler.step()', bwd)} "
                "unscales the gradients",
                f"Runtime: step {n} applied gradients {factor:.3g}x the true gradient (the GradScaler divided "
                f"unscaled gradients by its scale {1 / factor:g}). Call scaler.scale(loss).backward().",
                [(site, "scaler.step() unscales here")], step=n, value=factor)

