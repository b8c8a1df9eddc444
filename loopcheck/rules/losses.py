"""Loss-input rules (LC701–LC702): a loss given probabilities where it expects logits, or the
reverse.

Knowledge (``loopcheck/knowledge/torch.toml``, from the loss functions' docs):
``nn.CrossEntropyLoss``/``F.cross_entropy`` and ``nn.BCEWithLogitsLoss`` expect unnormalized
logits and apply (log-)softmax or sigmoid themselves; ``nn.NLLLoss`` expects log-probabilities;
``nn.BCELoss`` expects probabilities in [0, 1]. What a value is comes from
:mod:`loopcheck.engine.values` (softmax/sigmoid outputs, a model whose forward ends in a Linear
layer or in ``nn.Softmax``). ``log_softmax`` into ``CrossEntropyLoss`` is not reported:
log_softmax is idempotent, so the loss and its gradients are those of the logits (measured).
"""

from __future__ import annotations

from typing import Iterable

from loopcheck.engine.events import Event
from loopcheck.engine.ir import Call
from loopcheck.engine.knowledge import NO_GRAPH, knowledge
from loopcheck.engine.unit import Unit
from loopcheck.engine.values import LOG_PROBABILITIES, LOGITS, PROBABILITIES, all_calls, value_origin
from loopcheck.findings import Report
from loopcheck.catalog import INFOS
from loopcheck.rules.base import Rule, register

WHAT = {LOGITS: "raw logits", PROBABILITIES: "probabilities", LOG_PROBABILITIES: "log-probabilities"}


def _loss_inputs(unit: Unit, given: str, expects: tuple[str, ...]) -> Iterable[tuple[Event, object]]:
    """``(loss_input event, origin call)`` for the loss calls whose input holds ``given`` values
    while they expect one of ``expects``."""
    for ev in unit.of_kind("loss_input"):
        if ev.extra.get("expects") not in expects:
            continue
        arg = ev.extra["arg"]
        found = value_origin(unit, arg.node, arg.sym, ev.raw)
        if found is not None and found[0] == given:
            yield ev, found[1]


def _criterion_ctor(unit: Unit, ev: Event) -> Call | None:
    """The construction of the criterion a loss call calls (``criterion = nn.BCELoss()``)."""
    raw = ev.raw
    if not isinstance(raw, Call) or raw.qualified or not raw.func:
        return None
    canon = unit.roles.canon
    for c in all_calls(unit):
        if len(c.targets) == 1 and c.targets[0] and canon(c.targets[0]) == canon(raw.func) and c.qualified:
            return c
    return None


def loss_class(unit: Unit, ev: Event) -> str:
    """The qualified name of the loss a ``loss_input`` event comes from (the function, or the
    criterion's library class)."""
    raw = ev.raw
    if not isinstance(raw, Call) or not raw.func:
        return ""
    if raw.qualified:
        return raw.func
    return unit.roles.type_of(raw.func) or ""


def value_only(unit: Unit, ev: Event) -> bool:
    """Whether the loss a ``loss_input`` event computes can train nothing: it is computed with
    grad disabled (``torch.no_grad()``/``inference_mode``), or its result is turned at once into
    a value without a graph (``F.nll_loss(out, y).item()``, ``float(criterion(out, y))``: what
    the library knowledge says returns a number or a detached tensor). Such a loss is only read
    as a number (a metric, a log line), never backpropagated."""
    if ev.ctx.grad == "disabled":
        return True
    raw = ev.raw
    if not isinstance(raw, Call):
        return False
    kb = knowledge()
    for c in all_calls(unit):
        if c.inner is raw and c.method:
            m = kb.method("torch.Tensor", c.method)
            if m is not None and m.returns is not None and m.returns.value in NO_GRAPH:
                return True  # F.nll_loss(out, y).item()
        elif c.qualified and c.func and any(a.node is raw.node for a in c.args):
            f = kb.function(c.func)
            if f is not None and f.returns is not None and f.returns.value in NO_GRAPH:
                return True  # float(F.nll_loss(out, y))
    return False


@register
class ProbabilitiesToLogitsLoss(Rule):
    """LC701 probabilities-to-logits-loss.

    Reported when: a ``loss_input`` event whose loss expects logits or log-probabilities gets an
    input that :func:`~loopcheck.engine.values.value_origin` establishes to hold probabilities: a
    call, or a name every definition of which that reaches the call
    (:func:`~loopcheck.engine.values.reaching_definitions`: not one in the other arm of an ``if``)
    gives the same kind (softmax/sigmoid functions and tensor methods, a model whose classes
    output probabilities, value-keeping tensor methods of those). Tests are not decided, but two
    tests of the truth of one attribute only ``__init__`` assigns (``if not self.logits:``, ``if
    self.logits:``) take agreeing arms (:attr:`~loopcheck.engine.ir.If.constant`; for a value
    that may be mutable, only where the method gives its object no other name); an inlined
    project function or unknown call gives no kind (see ``rules/LC701.md``)."""

    info = INFOS["LC701"]

    def check(self, unit: Unit) -> Iterable[Report]:
        for ev, origin in _loss_inputs(unit, PROBABILITIES, (LOGITS, LOG_PROBABILITIES)):
            yield self._report(unit, ev, origin)

    def _report(self, unit: Unit, ev: Event, origin) -> Report:
        expects = ev.extra["expects"]
        arg = ev.extra["arg"].node
        q = loss_class(unit, ev)
        binary = "BCE" in q or "binary" in q
        ctor = _criterion_ctor(unit, ev)
        related = [] if origin is arg else [(origin, "the probabilities are made here")]
        if ctor is not None:
            related.append((ctor.node, "the loss, which expects " + WHAT[expects]))
        return Report(
            self.info.code, ev.node,
            lambda d: (
                f"{d.call(ev.node)} is given probabilities ({d.code(origin, 40)}) but expects {WHAT[expects]}"
            ),
            related,
            lambda d: (
                ("CrossEntropyLoss applies log_softmax to its input: on softmax outputs it computes "
                 "log_softmax(softmax(z)), whose values lie in [0, 1], so the loss cannot go below about "
                 "log(1 + (C - 1)/e) (0.313 for 2 classes) and its gradients are several times smaller (measured: "
                 "training loss 0.37 vs 0.12 on logits; 0.11 of the gradient norm at initialization, 10 classes). "
                 "Pass the logits."
                 if expects == LOGITS and not binary else
                 "BCEWithLogitsLoss applies sigmoid to its input: on sigmoid outputs it computes "
                 "sigmoid(sigmoid(z)), which stays between 0.5 and 0.73, so the loss of a positive target never "
                 "falls below 0.313 and the gradients vanish (measured: 0.3133 for a confident positive "
                 "prediction). Pass the logits."
                 if expects == LOGITS else
                 "NLLLoss expects log-probabilities: on probabilities it minimizes -p instead of -log p, whose "
                 "gradient vanishes for wrong answers (measured: 0.11 of the gradient norm of NLLLoss on "
                 "log_softmax at initialization, 10 classes). Use log_softmax instead of softmax.")
            ),
        )


@register
class LogitsToProbabilityLoss(Rule):
    """LC702 logits-to-probability-loss.

    Reported when: a ``loss_input`` event whose loss expects probabilities or log-probabilities gets
    an input that :func:`~loopcheck.engine.values.value_origin` establishes to hold raw logits (a
    model whose every constructed class ends in a layer the knowledge says returns logits, possibly
    through value-keeping tensor methods), read as in LC701 (see ``rules/LC702.md``). What it
    says of ``NLLLoss`` depends on whether the loss can train anything: one computed with grad
    disabled or turned at once into a number (:func:`value_only`) is only a reported value,
    which is not a negative log-likelihood; otherwise training pushes the target's logit up
    without bound."""

    info = INFOS["LC702"]

    def check(self, unit: Unit) -> Iterable[Report]:
        for ev, origin in _loss_inputs(unit, LOGITS, (PROBABILITIES, LOG_PROBABILITIES)):
            yield self._report(unit, ev, origin)

    def _report(self, unit: Unit, ev: Event, origin) -> Report:
        expects = ev.extra["expects"]
        metric = value_only(unit, ev)
        ctor = _criterion_ctor(unit, ev)
        related = [] if origin is ev.extra["arg"].node else [(origin, "raw logits: no sigmoid or softmax on the way")]
        if ctor is not None:
            related.append((ctor.node, "the loss, which expects " + WHAT[expects]))
        return Report(
            self.info.code, ev.node,
            lambda d: (
                f"{d.call(ev.node)} on raw logits ({d.code(origin, 30)}) reports -logit[target], not a negative "
                "log-likelihood"
                if metric and expects == LOG_PROBABILITIES else
                f"{d.call(ev.node)} is given raw logits ({d.code(origin, 40)}) but expects {WHAT[expects]}"
            ),
            related,
            lambda d: (
                ("BCELoss takes probabilities in [0, 1]: a logit outside that range raises \"all elements of input "
                 "should be between 0 and 1\" (measured at the first batch), and logits inside it give a wrong "
                 "loss. Use BCEWithLogitsLoss (sigmoid and BCE in one numerically stable step)."
                 if expects == PROBABILITIES else
                 "NLLLoss takes log-probabilities and returns -input[target]: on raw logits the value computed "
                 "here (read as a number, never backpropagated) is the mean (or sum) of -logit[target], not a negative "
                 "log-likelihood: it ignores the other classes, goes negative as the model grows confident, and "
                 "is not comparable with a cross-entropy training loss (measured, CPU, torch 2.13: a classifier "
                 "trained with cross_entropy for 200 SGD steps reported -3.02 where cross_entropy gives 0.80 on "
                 "the same held-out batch). Use CrossEntropyLoss (log_softmax and NLLLoss in one step)."
                 if metric else
                 "NLLLoss takes log-probabilities and returns -input[target]: on raw logits it just pushes the "
                 "target's logit up without bound and ignores the other classes (measured: the loss of a linear "
                 "model went 0.24 -> -8.27 in 200 SGD steps, its weight norm 0.70 -> 5.93). Use "
                 "CrossEntropyLoss (log_softmax and NLLLoss in one step).")
            ),
        )
