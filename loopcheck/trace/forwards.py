"""Which modules are "the model", and their forward passes.

A mixin of :class:`~loopcheck.trace.watch.Watcher`. The checks need the forward passes of the
models being trained (LC104: a step between a forward and its backward; LC301/LC302: forwards
in eval mode; LC501: which model trains), not of every layer inside them. Global module hooks
(verify's probe uses them) or a wrapper around ``Module.__call__`` would run for every layer
call of the program and send each down ``_call_impl``'s slow path: measured on the reference
loop, 3-15 % of a step. So the watcher hooks only the *model roots*:

- every module built while the program runs is remembered (``Module.__init__`` is wrapped;
  where it was built, too, once an optimizer exists: LC501 uses it);
- when an optimizer is built or gets a parameter group, and before the next ``zero_grad``,
  backward or step after new modules were built, the roots are recomputed: modules that no
  other remembered module has as a child, whose parameters an optimizer holds, or that were
  built after an optimizer and have trainable parameters (a model rebuilt after its
  optimizer: LC501);
- each root gets a forward pre-hook and an always-called forward hook. When a backward reaches
  an optimizer although no hooked forward ran since the last backward (a ``LightningModule``
  whose ``training_step`` calls ``self.net(x)``, not ``self(x)``), the roots' children get
  hooks too, and so on down to three levels. A hooked call made inside another hooked call is
  not a new forward.

Forwards of modules outside the optimizers' models (a frozen teacher, a metric) are not seen.
"""

from __future__ import annotations

import torch
from torch import nn

from .state import Event, IdMap


class ForwardWatch:
    """Model roots and their forwards (mixed into the watcher)."""

    def _init_forwards(self) -> None:
        self._all_modules = IdMap()     # every module built during the run -> True
        self._hooked = IdMap()          # modules with our forward hooks -> True
        self._roots_dirty = False
        self._fdepth = 0
        self._hook_levels = 0           # how many levels below the roots are hooked

    def _install_forwards(self) -> None:
        self._wrap(nn.Module, "__init__", self._module_init_wrapper)

    def _module_init_wrapper(self, orig):
        probe = self

        def __init__(self_, *args, **kwargs):
            orig(self_, *args, **kwargs)
            probe._all_modules[self_] = True
            if probe._opts:
                probe.seq += 1
                probe._created[self_] = (probe.seq, probe.site())
                probe._orphans_dirty = True
                probe._roots_dirty = True

        return __init__

    # ---------------------------------------------------------------- roots
    def _refresh_roots(self) -> None:
        """Recompute the model roots and hook the new ones (and their direct children)."""
        self._roots_dirty = False
        modules = [m for m, _ in self._all_modules.items()]
        children = set()
        for m in modules:
            children.update(id(c) for c in m._modules.values() if c is not None)
        held = set()
        for o in self._live_opts():
            held |= o.ids
        first_opt = min((o.seq for o in self._live_opts()), default=None)
        for m in modules:
            if id(m) in children:
                continue
            params = list(m.parameters())
            if not params:
                continue
            created = self._created.get(m)
            late = created is not None and first_opt is not None and created[0] > first_opt
            if not (late and any(p.requires_grad for p in params)) and not any(id(p) in held for p in params):
                continue
            self._hook(m, self._hook_levels)

    def _hook(self, module, levels: int) -> None:
        if self._hooked.get(module) is None and next(module.parameters(), None) is not None:
            self._hooked[module] = True
            self._handles += [module.register_forward_pre_hook(self._forward_pre),
                              module.register_forward_hook(self._forward_post, always_call=True)]
        if levels > 0:
            for child in module.children():
                self._hook(child, levels - 1)

    def _forwards_missed(self) -> None:
        """A backward reached an optimizer, but no hooked forward ran since the last one: the
        model is called below its root; hook one level deeper."""
        if self._hook_levels < 3:
            self._hook_levels += 1
            for m, _ in self._hooked.items():
                self._hook(m, 1)

    def _roots_fresh(self) -> None:
        if self._roots_dirty:
            self._refresh_roots()

    # ---------------------------------------------------------------- hooks
    def _forward_pre(self, module, args) -> None:
        depth = self._fdepth
        self._fdepth = depth + 1
        if depth or not torch.is_grad_enabled() or torch.is_inference_mode_enabled() \
                or torch.compiler.is_compiling():
            return
        opts = self._opts_for_module(module)
        self.seq += 1
        seq = self.seq
        site = self.site()
        ev = Event(seq, site)
        for o in opts:
            o.last_forward = ev
        since = self._fwd_since_bwd
        if len(since) < 64 and not any(m is module for m in since):  # identity: some modules define __eq__
            since.append(module)
        self._eval_forward_start(module, site, seq)

    def _forward_post(self, module, args, output) -> None:
        self._fdepth = max(0, self._fdepth - 1)
        if self._fdepth == 0 and self._eval_pending is not None:
            self._eval_forward_end(module, output)
