"""Train/eval mode and grad mode at runtime (LC301, LC302).

A mixin of :class:`~loopcheck.trace.watch.Watcher`. Every forward of a watched model (see
:mod:`~loopcheck.trace.forwards`) run with grad enabled gets a pre-hook on its output's graph
node (one under ``no_grad``/``inference_mode`` costs nothing):

- the hook fires inside a backward that reaches an optimizer, and that optimizer steps, while
  the forward ran in eval mode, the optimizer holding parameters of the model (an adversarial
  perturbation's own optimizer trains no model): the model trained in eval mode. Reported (LC301) at the
  ``eval()`` call that put it there (``Module.eval`` is wrapped to remember where), when the
  model has Dropout (p > 0) or BatchNorm layers that eval mode switches (without them eval mode
  changes nothing) and no frozen parameter (a frozen backbone kept in eval mode under a trained
  head is a linear probe, as the static rule reads it);
- the graph node dies (or the run ends) without the hook having fired: an evaluation forward
  recorded a graph no backward used, in eval mode or not. Reported (LC302) at the forward's
  line once it happened twice there (one forward outside a loop is not per-batch evaluation).
"""

from __future__ import annotations

import weakref

import torch
from torch import nn

from .sites import Site
from .state import Event, OptState, guarded, ref, subject

_MODE_LAYERS = (nn.modules.dropout._DropoutNd, nn.modules.batchnorm._BatchNorm)


def mode_layers(module: nn.Module) -> dict[str, int]:
    """Layers of ``module`` that behave differently in eval mode and are in eval mode now:
    ``{"Dropout": 2, "BatchNorm1d": 1}`` (Dropout with ``p == 0`` does not count)."""
    out: dict[str, int] = {}
    for m in _eval_mode_layers(module):
        out[type(m).__name__] = out.get(type(m).__name__, 0) + 1
    return out


def mode_effects(module: nn.Module) -> str:
    """What eval mode changes in ``module`` now, for the layers it has: ``"Dropout off"``,
    ``"BatchNorm on its running statistics"``, or both joined by ``", "`` (``""``: nothing)."""
    kinds = {isinstance(m, nn.modules.dropout._DropoutNd) for m in _eval_mode_layers(module)}
    return ", ".join(text for kind, text in ((True, "Dropout off"), (False, "BatchNorm on its running statistics"))
                     if kind in kinds)


def _eval_mode_layers(module: nn.Module):
    for m in module.modules():
        if isinstance(m, _MODE_LAYERS) and not m.training:
            if isinstance(m, nn.modules.dropout._DropoutNd) and not getattr(m, "p", 0):
                continue
            yield m


def first_graph_tensor(output):
    """The first tensor with a ``grad_fn`` in a forward's output (tensor, sequence or mapping)."""
    if isinstance(output, torch.Tensor):
        return output if output.grad_fn is not None else None
    items = output.values() if isinstance(output, dict) else output if isinstance(output, (list, tuple)) else ()
    for v in list(items)[:8]:
        if isinstance(v, torch.Tensor) and v.grad_fn is not None:
            return v
    return None


class EvalForward:
    """A forward of a watched model run with grad enabled: did a backward go through its output?"""

    __slots__ = ("site", "module", "seq", "fired", "hook", "step", "training", "__weakref__")

    def __init__(self, site: Site | None, module: nn.Module, seq: int, step: int, training: bool) -> None:
        self.site, self.module, self.seq, self.step = site, weakref.ref(module), seq, step
        self.training = training
        self.fired = False
        self.hook = None


class FireHook:
    """Registered on the output's graph node: marks the forward as back-propagated."""

    __slots__ = ("rec", "__weakref__")

    def __init__(self, rec: EvalForward) -> None:
        self.rec = rec

    def __call__(self, grad_outputs):
        self.rec.fired = True
        return None


class ModeChecks:
    """LC301, LC302 (mixed into the watcher)."""

    def _install_modes(self) -> None:
        self._wrap(nn.Module, "eval", self._eval_wrapper)

    def _eval_wrapper(self, orig):
        """``Module.eval`` (not ``train``, which recurses through every submodule and which
        transformers calls at every step): where each module was last put in eval mode."""
        probe = self

        def eval(self_):
            try:
                return orig(self_)
            finally:
                probe._evaluated(self_)

        return eval

    @guarded
    def _evaluated(self, module) -> None:
        self.seq += 1
        self._modes[module] = (False, self.seq, self.site())

    # ---------------------------------------------------------------- forwards
    def _eval_forward_start(self, module, site, seq, opts) -> None:
        if self._eval_fwds:
            self._sweep_eval()
        step = max((o.steps for o in opts), default=0)
        self._eval_pending = EvalForward(site, module, seq, step, module.training)

    @guarded
    def _eval_forward_end(self, module, output) -> None:
        rec, self._eval_pending = self._eval_pending, None
        if rec.module() is not module:
            return
        t = first_graph_tensor(output)
        if t is None:
            return
        hook = FireHook(rec)
        t.grad_fn.register_prehook(hook)
        rec.hook = weakref.ref(hook)
        self._eval_fwds.append(rec)

    def _sweep_eval(self, final: bool = False) -> None:
        """Eval-mode forwards whose graph died (or, at the end, still lives) without a backward."""
        keep = []
        for rec in self._eval_fwds:
            if rec.fired:
                continue
            alive = rec.hook is not None and rec.hook() is not None
            if alive and not final:
                keep.append(rec)
                continue
            self._validation_graph(rec)
        self._eval_fwds = keep

    def _validation_graph(self, rec: EvalForward) -> None:
        """One more forward at ``rec.site`` whose graph no backward used; LC302 once it is a pattern:
        twice for eval-mode forwards of the same model; for train-mode ones, also at most once per two optimizer steps
        of the model (an evaluation every N steps or per epoch; a GAN's ``G(z).detach()`` every
        step is the training's own forward, not an evaluation)."""
        if rec.site is None:
            return
        module = rec.module()
        # per model: ``[net(x) for net in nets]`` is one forward of each model, not a pattern
        entry = self._val_counts.setdefault((rec.site.key, id(module)), [rec, 0])
        entry[1] += 1
        n = entry[1]
        if n < 2:
            return
        if rec.training:
            steps = max((o.steps for o in self._opts_for_module(module)), default=0) if module is not None else 0
            if 2 * n > steps:
                return
        mode = "eval-mode" if not rec.training else "train-mode"
        note = (f"Runtime: {n} {mode} forwards at this line ran with grad enabled: their outputs carried a "
                "grad_fn, and no backward went through them; autograd recorded a graph and saved activations "
                "for each. Wrap the evaluation in torch.no_grad() or torch.inference_mode().")
        obs = self.observations.get(("LC302", rec.site.key))
        if obs is not None:
            obs.value, obs.count, obs.note = float(n), n, note
            return
        fwd = subject(rec.site, "model()")
        message = (f"{fwd} runs in eval mode without torch.no_grad()" if not rec.training
                   else f"{fwd} evaluates without torch.no_grad(): no backward uses its graph")
        self.observe("LC302", rec.site, message, note, step=rec.step, value=float(n))

    # ---------------------------------------------------------------- backward and step
    def _modes_at_backward(self, reached: list[OptState], site: Site | None) -> None:
        fired = [r for r in self._eval_fwds if r.fired]  # called only while some are watched
        if not fired:
            return
        self._eval_fwds = [r for r in self._eval_fwds if not r.fired]
        in_eval = [r for r in fired if not r.training]
        if in_eval:
            for o in reached:
                o.eval_trained = {"forward": in_eval[-1], "backward": site}

    def _modes_at_step(self, o: OptState, step: Event, n: int) -> None:
        pending, o.eval_trained = o.eval_trained, None
        if o.state != "filled":
            return
        rec = pending["forward"]
        module = rec.module()
        if module is None:
            return
        if not any(id(p) in o.ids for p in module.parameters()):
            return  # it steps none of the model's parameters (a perturbation's own optimizer): no model trains
        layers = mode_layers(module)
        if not layers or any(not p.requires_grad for p in module.parameters()):
            return  # eval mode changes nothing here, or a frozen part is kept in eval mode on purpose
        eval_site = self._eval_site(module)
        site = eval_site or rec.site
        layer_txt = ", ".join(f"{k} x{v}" for k, v in sorted(layers.items()))
        self.observe(
            "LC301", site,
            f"{subject(eval_site, 'model.eval()')} is still in effect when {ref(step.site, 'optimizer.step()', site)} "
            "trains the model",
            f"Runtime: step {n} trained on a forward pass of {type(module).__name__} in eval mode ({layer_txt} "
            f"inactive: {mode_effects(module)}). Call model.train() before the next training step.",
            [(rec.site, "forward pass in eval mode"), (pending["backward"], "its backward()"),
             (step.site, "the training step")],
            step=n, value=float(sum(layers.values())))

    def _eval_site(self, module) -> Site | None:
        """Where ``module`` (or a module containing it) was last put in eval mode."""
        best = None
        for m, (mode, seq, site) in self._modes.items():
            if mode or site is None:
                continue
            if m is module or any(sub is module for sub in m.modules()):
                if best is None or seq > best[0]:
                    best = (seq, site)
        return best[1] if best else None

    def _modes_at_end(self) -> None:
        self._sweep_eval(final=True)

