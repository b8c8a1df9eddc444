"""Loss tensors kept alive at runtime (LC401).

A mixin of :class:`~loopcheck.trace.watch.Watcher`. At every backward the loss's graph node
gets a mark in its ``metadata`` dict (a small object that lives exactly as long as the node);
the watcher keeps a weak reference. At the optimizer's second step after the one that applied
the loss, the mark should be gone: the loop rebound ``loss``, a slot that keeps the latest loss
(``d["loss"] = loss``, whose graph backward() emptied) replaced it, and nothing else refers to
the graph. If it is still alive, the loss (or a tensor built from it: ``total += loss``) is kept: the
holder is looked up once per backward line among the live user variables
(:mod:`loopcheck.trace.holders`) and the statement that stores into it is found in the code
(:mod:`loopcheck.trace.codesearch`). A holder outside the user's code (a framework keeping the
last output) is not reported; a plain variable holding the latest loss is not either.
"""

from __future__ import annotations

import collections
import weakref

from . import codesearch, holders
from .state import Observation, OptState, call_text, guarded, where


class LossMark:
    """Stored in a loss's graph node ``metadata``: lives exactly as long as that node."""

    __slots__ = ("__weakref__",)


class LossWatch:
    """A back-propagated loss: its mark, its backward line, its optimizer's step count then."""

    __slots__ = ("mark", "site", "o_steps")

    def __init__(self, mark, site, o_steps) -> None:
        self.mark, self.site, self.o_steps = weakref.ref(mark), site, o_steps


_ARITHMETIC = {"AddBackward0", "AddBackward1", "SubBackward0", "SubBackward1", "MulBackward0", "MulBackward1",
               "DivBackward0", "DivBackward1", "NegBackward0", "MeanBackward0", "SumBackward0"}


def loss_terms(node, limit: int = 8) -> list:
    """The graph nodes of a loss and of its terms: the loss node, and through arithmetic nodes
    (``raw_loss + 1e-4 * penalty``, ``loss / accum``) the first non-arithmetic node of each branch
    (``raw_loss``'s). Parameters' ``AccumulateGrad`` nodes are never included."""
    out, queue = [], collections.deque([node])  # breadth first: the terms nearest the loss first
    while queue and len(out) < limit:
        n = queue.popleft()
        if n is None or type(n).__name__ == "AccumulateGrad" or any(n is m for m in out):
            continue
        out.append(n)
        if type(n).__name__ in _ARITHMETIC:
            queue.extend(nxt for nxt, _ in n.next_functions)
    return out


def mark_loss(loss) -> LossMark | None:
    """Leave one mark in the ``metadata`` of the loss's graph node and of its terms' nodes
    (``None`` when the loss has no graph node): the mark lives as long as any of them."""
    if loss.grad_fn is None:
        return None
    mark = LossMark()
    try:
        for node in loss_terms(loss.grad_fn):
            node.metadata[holders.MARK] = mark
    except (AttributeError, RuntimeError):
        return None
    return mark


def lc401_message(holder: holders.Holder, bwd_txt: str, at: str) -> str:
    if holder.kind == "graph":
        return f"{holder.name} adds up the loss tensors of {bwd_txt} ({at}), not their values"
    what = {"list": "a list", "dict": "a dict", "object": "an object"}.get(holder.kind, "a variable")
    return f"{holder.name} ({what}) keeps the loss tensor of {bwd_txt} ({at}), not its value"


def lc401_note(count: int, first: int) -> str:
    return (f"Runtime: {count} loss tensor(s) were still alive, with their autograd graphs, two optimizer steps "
            f"after their own (first seen at step {first}). Store loss.item() instead.")


class LossChecks:
    """LC401 (mixed into the watcher)."""

    def _memory_at_backward(self, reached: list[OptState], loss, mark, site) -> None:
        if mark is not None:
            o = reached[0]
            o.losses.append(LossWatch(mark, site, o.steps))

    def _memory_at_step(self, o: OptState, n: int) -> None:
        keep = []
        for w in o.losses:
            if w.mark() is None:
                continue
            if o.steps <= w.o_steps + 1:  # a slot replaced every step keeps it up to the next step
                keep.append(w)
                continue
            self._kept(w, n)
        o.losses = keep

    @guarded
    def _kept(self, w: LossWatch, n: int) -> None:
        key = w.site.key if w.site else None
        known = self._kept_sites.get(key)
        if known is False:
            return
        if isinstance(known, Observation):
            known.count += 1
            known.value = float(known.count)
            known.note = lc401_note(known.count, known.step)
            return
        mark = w.mark()
        holder = holders.find_holder(self.user.frames(), mark) if mark is not None else None
        if holder is None or holder.kind == "variable":
            self._kept_sites[key] = False
            if holder is None:
                self._kept_external += 1
            return
        names = holders.names_of_losses(holder.frame)
        site = codesearch.find_keeping(holder.frame.f_code, holder.path, names or {"loss"}) or w.site
        related = [(w.site, "the loss back-propagated here stays alive")]
        self._kept_sites[key] = self.observe(
            "LC401", site, lc401_message(holder, call_text(w.site, "loss.backward()"), where(w.site, site)),
            lc401_note(1, n), related, step=n, value=1.0)

    def _memory_at_end(self) -> None:
        if self._kept_external:
            self.notes.append(
                f"{self._kept_external} loss graph(s) outlived their optimizer step, kept by objects outside your "
                "code (not reported)")
