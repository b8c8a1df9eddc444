"""Which modules are "the model", and their forward passes.

A mixin of :class:`~loopcheck.trace.watch.Watcher`. The checks need the forward passes of the
models being trained (LC104: a step between a forward and its backward; LC301/LC302: forwards
in eval mode; LC501: which model trains), not of every layer inside them. Global module hooks
(verify's probe uses them) or a wrapper around ``Module.__call__`` would run for every layer
call of the program, and global hooks send each down ``_call_impl``'s slow path, a cost on
every step. Hooks registered on the model instances would be pickled
with ``torch.save(model)`` and deep-copied with it (EMA copies). So the watcher patches
``__call__`` of the *classes* of the model roots only, and acts on calls of the root instances:

- every module built while the program runs is remembered (``Module.__init__`` is wrapped;
  where it was built, too, once an optimizer exists: LC501 uses it);
- when an optimizer is built or gets a parameter group, and before the next ``zero_grad``,
  backward or step after new modules were built, the roots are recomputed: modules that no
  other remembered module has as a child, whose parameters an optimizer holds, or that were
  built after an optimizer and have trainable parameters (a model rebuilt after its
  optimizer: LC501);
- a call of a root instance (not made inside another watched call) is a forward. When a backward
  reaches an optimizer although no watched forward ran since the last one (a
  ``LightningModule`` whose ``training_step`` calls ``self.net(x)``, not ``self(x)``), the
  roots' children are watched too, and so on down to three levels.

Forwards of modules outside the optimizers' models (a frozen teacher, a metric) are not seen.
"""

from __future__ import annotations

import torch
from torch import nn

from .state import Event, IdMap, guarded


class ForwardWatch:
    """Model roots and their forwards (mixed into the watcher)."""

    def _init_forwards(self) -> None:
        self._all_modules = IdMap()     # every module built during the run -> True
        self._hooked = IdMap()          # module instances whose calls are forwards -> True
        self._class_patches: list = []  # (class, its own __call__ or None)
        self._call_wrappers: set = set()
        self._roots_dirty = False
        self._fdepth = 0
        self._hook_levels = 0           # how many levels below the roots are hooked

    def _install_forwards(self) -> None:
        self._wrap(nn.Module, "__init__", self._module_init_wrapper)

    def _module_init_wrapper(self, orig):
        probe = self

        def __init__(self_, *args, **kwargs):
            orig(self_, *args, **kwargs)
            probe._built(self_)

        return __init__

    @guarded
    def _built(self, module) -> None:
        self._all_modules[module] = True
        if self._opts:
            self.seq += 1
            self._created[module] = (self.seq, self.site())
            self._orphans_dirty = True
            self._roots_dirty = True

    # ---------------------------------------------------------------- roots
    @guarded
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
            cls = type(module)
            if cls.__call__ not in self._call_wrappers:
                self._class_patches.append((cls, cls.__dict__.get("__call__")))
                wrapper = self._call_wrapper(cls.__call__)
                self._call_wrappers.add(wrapper)
                cls.__call__ = wrapper
        if levels > 0:
            for child in module.children():
                self._hook(child, levels - 1)

    def _uninstall_forwards(self) -> None:
        for cls, own in reversed(self._class_patches):
            if own is None:
                del cls.__call__
            else:
                cls.__call__ = own
        self._class_patches.clear()
        self._call_wrappers.clear()

    @guarded
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

    # ---------------------------------------------------------------- calls
    def _call_wrapper(self, orig):
        """``__call__`` of a model class: a call of a watched instance, not inside another, is a
        forward; every other call goes straight to the original."""
        probe = self
        compiling = torch.compiler.is_compiling

        def __call__(self_, *args, **kwargs):
            if probe._fdepth or probe._hooked.get(self_) is None or compiling():
                return orig(self_, *args, **kwargs)
            probe._fdepth = 1
            try:
                if torch.is_grad_enabled() and not torch.is_inference_mode_enabled():
                    probe._forward(self_)
                out = orig(self_, *args, **kwargs)
            finally:
                probe._fdepth = 0
            if probe._eval_pending is not None:
                probe._eval_forward_end(self_, out)
            return out

        return __call__

    @guarded
    def _forward(self, module) -> None:
        """A forward of a watched model with grad enabled: its optimizers saw a forward."""
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
        self._eval_forward_start(module, site, seq, opts)
