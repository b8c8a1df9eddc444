"""The model changed after its optimizer was built, at runtime (LC501; LC503 for an FSDP wrapper).

A mixin of :class:`~loopcheck.trace.watch.Watcher`. Once an optimizer exists, modules built
are remembered with their line (:mod:`~loopcheck.trace.forwards`); conversions are watched
(``Module._apply``, which
``to()``, ``cuda()``, ``half()``, ``double()`` ... all go through):

- a conversion that replaces parameter objects an optimizer holds: the optimizer keeps the old
  tensors (LC501 at the conversion);
- a conversion that changes the dtype or device of parameters whose optimizer state already
  exists (momentum, Adam moments): the next step fails or mixes precisions (LC501 there),
  unless the optimizer's ``step()`` moves its state itself (:func:`moves_state`);
- at a step, trainable parameters of the trained model that no optimizer holds, built after the
  optimizer: a replaced layer (``model.fc = nn.Linear(...)``) or a rebound model
  (``model = build()``), reported at the assignment found in the user's code, else where the
  module was built. Parameters left out of every optimizer before it was built are a note, not
  an LC501 finding (freezing by leaving them out is common).
"""

from __future__ import annotations

import torch
from torch import nn

from . import codesearch, holders
from .state import OptState, guarded, subject, where


def moves_state(opt) -> bool:
    """Whether the knowledge entry of the optimizer's class says its ``step()`` moves each
    parameter's existing state to that parameter's device and dtype before using it
    (``moves_state``: fairseq's and transformers' ``Adafactor``): a conversion after the state
    exists breaks none of its steps."""
    from loopcheck.engine.knowledge import knowledge

    if opt is None:
        return False
    cls = type(opt)
    entry = knowledge().cls(f"{cls.__module__}.{cls.__name__}")
    returns = entry.ctor.returns if entry is not None and entry.ctor is not None else None
    return bool(returns is not None and returns.get("moves_state"))


class SetupChecks:
    """LC501 (mixed into the watcher)."""

    def _install_setup(self) -> None:
        self._wrap(nn.Module, "_apply", self._apply_wrapper)

    def _apply_wrapper(self, orig):
        probe = self

        def _apply(self_, *args, **kwargs):
            if probe._apply_depth or not probe._opts:
                return orig(self_, *args, **kwargs)
            pending = probe._before_apply(self_)
            probe._apply_depth += 1
            try:
                return orig(self_, *args, **kwargs)
            finally:
                probe._apply_depth -= 1
                if pending:
                    probe._on_apply(self_, *pending)

        return _apply

    @guarded
    def _before_apply(self, module):
        """``(parameters before, their dtype/device, optimizers holding them)``, or ``None``."""
        opts = self._opts_for_module(module)
        if not opts:
            return None
        before = list(module.named_parameters())
        return before, {id(p): (p.dtype, p.device) for _, p in before}, opts

    @guarded
    def _on_apply(self, module, before, meta, opts) -> None:
        site = self.site()
        self._next()
        after = dict(module.named_parameters())
        held = set().union(*(o.ids for o in opts))
        old = dict(before)
        swapped = [n for n in old if n in after and after[n] is not old[n] and id(old[n]) in held]
        txt = subject(site, "model.to()")
        opt = opts[0]
        opt_at = f" ({where(opt.site, site)})" if opt.site else ""
        if swapped:
            for n in swapped:
                self._orphans_seen[after[n]] = True
            # a dtype change is a conversion (LC501); the same dtype, a move to a device (LC502)
            code = "LC501" if any(after[n].dtype != old[n].dtype for n in swapped) else "LC502"
            self.observe(
                code, site, f"{txt} replaces the parameters the optimizer{opt_at} holds",
                f"Runtime: {len(swapped)} of {type(module).__name__}'s {len(after)} parameters are new tensors "
                f"after the conversion ({', '.join(swapped[:3])}{'...' if len(swapped) > 3 else ''}); the "
                "optimizer keeps updating the old ones, and the model never trains. Build the optimizer after "
                "converting or moving the model.",
                [(opt.site, "the optimizer was built here")], step=opt.steps, value=float(len(swapped)))
            return
        mismatched = []
        for o in opts:
            if moves_state(o.ref()):
                continue  # its step() puts the state where the parameters are: nothing breaks
            state = getattr(o.ref(), "state", None) or {}
            for name, p in after.items():
                st = state.get(p)
                if not st or meta.get(id(p)) == (p.dtype, p.device):
                    continue
                for key, v in st.items():
                    if isinstance(v, torch.Tensor) and v.dim() and (v.dtype != p.dtype or v.device != p.device):
                        mismatched.append((name, key, v, p))
                        break
        if not mismatched:
            return
        name, key, v, p = mismatched[0]
        what = (f"{str(v.dtype).replace('torch.', '')} vs {str(p.dtype).replace('torch.', '')}"
                if v.dtype != p.dtype else f"{v.device} vs {p.device}")
        self.observe(
            "LC501" if v.dtype != p.dtype else "LC502", site,
            f"{txt} converts the model after the optimizer{opt_at} built its state",
            f"Runtime: after step {opt.steps}, {len(mismatched)} parameters no longer match their optimizer state "
            f"({name}: {key} {what}); the next step fails or mixes precisions. Convert the model before building "
            "the optimizer.",
            [(opt.site, "the optimizer was built here")], step=opt.steps, value=float(len(mismatched)))

    # ---------------------------------------------------------------- at a step
    @guarded
    def _setup_at_step(self, o: OptState, n: int) -> None:
        self._orphans_dirty = False
        opts = self._live_opts()
        held = set().union(*(x.ids for x in opts)) if opts else set()
        for module, _ in self._trained.items():
            named = [(name, p) for name, p in module.named_parameters() if p.requires_grad]
            missing = [(name, p) for name, p in named if id(p) not in held and p not in self._orphans_seen]
            if not missing:
                continue
            for _, p in missing:
                self._orphans_seen[p] = True
            if len(missing) == len(named):
                self._orphan_model(module, o, n, len(named))
            else:
                self._orphan_parts(module, missing, o, n, len(named))

    def _store_line(self, o: OptState, **what):
        """The first assignment (``name=`` a variable, ``attr=`` an attribute) after the optimizer's line."""
        for f in self.user.frames():
            after = o.site.line if o.site and o.site.filename == f.f_code.co_filename else 0
            site = codesearch.find_store(f.f_code, after=after, **what)
            if site is not None:
                return site
        return None

    def _orphan_model(self, module, o: OptState, n: int, count: int) -> None:
        created = self._created.get(module)
        if created is None or created[0] < o.seq:
            self.notes.append(
                f"{type(module).__name__}: none of its {count} trainable parameters is in an optimizer; it runs "
                "forward and backward but never changes")
            return
        site = None
        for f in self.user.frames():
            for name in holders.names_bound_to(f, module):
                site = self._store_line(o, name=name)
                if site is not None:
                    break
            if site is not None:
                break
        site = site or created[1]
        opt_at = f" ({where(o.site, site)})" if o.site else ""
        # a sharding wrapper (FSDP) built after the optimizer is LC503's case: the same model, with
        # its parameters flattened into new ones
        code = "LC503" if type(module).__module__.startswith("torch.distributed.fsdp") else "LC501"
        self.observe(
            code, site, f"the model trained here was built after the optimizer{opt_at}, which holds none of it",
            f"Runtime: at step {n} none of {type(module).__name__}'s {count} trainable parameters is in any "
            "optimizer: the optimizer updates a model that is no longer used. Build it after the model.",
            [(o.site, "the optimizer was built here")], step=n, value=float(count))

    def _orphan_parts(self, module, missing, o: OptState, n: int, count: int) -> None:
        owners: dict[str, list[str]] = {}
        for name, _ in missing:
            owners.setdefault(name.rpartition(".")[0], []).append(name)
        subs = dict(module.named_modules())
        for owner, names in owners.items():
            sub = subs.get(owner)
            created = self._created.get(sub) if sub is not None else None
            listed = f"{', '.join(names[:3])}{'...' if len(names) > 3 else ''}"
            if created is None or created[0] < o.seq:
                self.notes.append(
                    f"{type(module).__name__}: {len(names)} trainable parameters are in no optimizer ({listed}); "
                    "they get gradients but never change")
                continue
            # the part as the code names it: a submodule's attribute path (``encoder.fc``), or, for
            # parameters registered on the trained module itself (owner ""), their own names
            attr = owner.rpartition(".")[2] if owner else names[0]
            site = self._store_line(o, attr=attr) or created[1]
            opt_at = f" ({where(o.site, site)})" if o.site else ""
            if owner:
                message = (f"{owner} of the model is replaced after the optimizer{opt_at} was built: its new "
                           "parameters never train")
            else:
                verb, never = ("are", "they never train") if len(names) > 1 else ("is", "it never trains")
                message = f"{listed} of the model {verb} replaced after the optimizer{opt_at} was built: {never}"
            self.observe(
                "LC501", site, message,
                f"Runtime: at step {n}, {len(names)} of {type(module).__name__}'s {count} trainable parameters "
                f"are in no optimizer ({listed}). Build the optimizer after the change.",
                [(o.site, "the optimizer was built here")], step=n, value=float(len(names)))
