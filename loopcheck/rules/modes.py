"""Module-mode rules (LC301–LC302): train()/eval() and gradient tracking around evaluation.

Knowledge: ``nn.Module.eval()`` switches Dropout off and makes BatchNorm use its running
statistics until ``train()`` is called again; a forward pass outside ``torch.no_grad()``
/ ``torch.inference_mode()`` records an autograd graph and keeps the activations it needs
for a backward pass (PyTorch autograd mechanics notes; seeds/annotated-training-loop.md).
"""

from __future__ import annotations

from typing import Iterable

from loopcheck.engine.dataflow import Machine
from loopcheck.engine.events import Event
from loopcheck.engine.unit import Unit
from loopcheck.findings import Report
from loopcheck.rules.base import Rule, RuleInfo, register

UNKNOWN = ("unknown", None)
TRAIN = ("train", None)


class ModeMachine(Machine):
    """``("train", None)``, ``("eval", eval_event)`` or ``("unknown", None)`` for one model.

    ``train()``/``eval()`` on a module also set the mode of its submodules, so events on
    ``model`` apply to a tracked ``model.head`` too.
    """

    kinds = frozenset({'model_build', 'train', 'eval', 'mode_unknown', 'havoc', 'step', 'forward'})

    def __init__(self, model: str) -> None:
        self.model = model

    def initial(self):
        return UNKNOWN

    def _mine(self, subject: str | None) -> bool:
        return subject is not None and (subject == self.model or self.model.startswith(subject + "."))

    def transfer(self, s, ev: Event):
        if not self._mine(ev.subject):
            return s
        k = ev.kind
        if k == "model_build" and ev.subject == self.model:
            return TRAIN
        if k == "train":
            return TRAIN
        if k == "eval":
            return ("eval", ev)
        if k in ("mode_unknown", "havoc"):
            return UNKNOWN
        return s


def mode_flow(unit: Unit, model: str):
    return unit.flow(("mode", model), lambda: ModeMachine(model))


def trained_models(unit: Unit) -> dict[str, list[Event]]:
    """Models whose parameters a stepping optimizer updates → the steps that update them."""
    out: dict[str, list[Event]] = {}
    moded = {e.subject for e in unit.of_kind("train", "eval")}
    for step in unit.of_kind("step"):
        info = unit.roles.optimizers.get(step.subject)
        models = set(info.models) if info and info.models else set()
        if not models and len(moded) == 1:
            models = set(moded)
        for m in models:
            out.setdefault(m, []).append(step)
    return out


@register
class EvalModeNotReset(Rule):
    info = RuleInfo(
        "LC301", "eval-mode-not-reset", "error",
        "model.eval() reaches the next training step without model.train(): the model trains in eval mode.",
    )

    def check(self, unit: Unit) -> Iterable[Report]:
        reported = set()
        for model, steps in trained_models(unit).items():
            flow = mode_flow(unit, model)
            has_train = any(
                e.kind == "train" and (e.subject == model or model.startswith(e.subject + "."))
                for e in unit.of_kind("train")
            )
            for step in steps:
                states = flow.states(step)
                if not (has_train or TRAIN in states):
                    continue
                for kind, ev in states:
                    if kind == "eval" and id(ev) not in reported:
                        reported.add(id(ev))
                        yield Report(
                            self.info.code, ev.node,
                            lambda d, ev=ev, step=step: (
                                f"{d.call(ev.node)} is still in effect when {d.call(step.node)} at line "
                                f"{d.line(step.node)} trains the model: no train() call comes in between, so "
                                "Dropout stays off and BatchNorm stops updating its statistics; call "
                                "model.train() before the next training step"
                            ),
                            [(step.node, "the training step that runs in eval mode")],
                        )


@register
class ValidationWithoutNoGrad(Rule):
    info = RuleInfo(
        "LC302", "validation-without-no-grad", "warning",
        "An evaluation forward pass runs without torch.no_grad(): autograd records a graph for every batch.",
    )

    def check(self, unit: Unit) -> Iterable[Report]:
        firsts: dict[int, tuple[Event, Event]] = {}
        for fwd in unit.of_kind("forward"):
            if fwd.ctx.grad != "enabled" or not fwd.ctx.loops:
                continue  # a single forward outside any loop (a test, an export) costs one graph
            states = mode_flow(unit, fwd.subject).states(fwd)
            if not states or any(kind != "eval" for kind, _ in states):
                continue
            if self._followed_by_backward(unit, fwd):
                continue
            for _, ev in states:
                if id(ev) not in firsts:
                    firsts[id(ev)] = (ev, fwd)
        for ev, fwd in firsts.values():
            yield Report(
                self.info.code, fwd.node,
                lambda d, ev=ev, fwd=fwd: (
                    f"{d.call(fwd.node)} runs in eval mode (set at line {d.line(ev.node)}) without "
                    "torch.no_grad(): each call records an autograd graph and saves activations for a "
                    "backward pass that never comes, and any output kept keeps its graph; wrap the "
                    "evaluation in torch.no_grad() or torch.inference_mode()"
                ),
                [(ev.node, "model.eval(): this is evaluation")],
            )

    @staticmethod
    def _followed_by_backward(unit: Unit, fwd: Event) -> bool:
        """Gradients wanted on purpose (saliency, attacks): a backward follows before train()."""
        for ev in unit.events[unit.order(fwd) + 1:]:
            if ev.kind in ("train", "model_build") and ev.subject == fwd.subject:
                return False
            if ev.kind == "backward":
                return True
        return False
