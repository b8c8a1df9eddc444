"""Autofixes: rewrite the flagged lines of a training loop (``loopcheck --fix``).

A fixer per rule code takes the parsed file and one :class:`~loopcheck.findings.Finding`
(its span, its ``related`` rows) and returns a :class:`Fix` — an applicability (``"safe"``:
applied by ``--fix``; ``"unsafe"``: only with ``--unsafe-fixes``, review it), a short
message, and text edits with 1-based, end-exclusive row/column ranges — or ``None`` when no
local fix is certain. Fixers find nodes by position (LibCST ``PositionProvider``), change the
tree (statements moved, inserted, replaced; comments and formatting kept), and the edits are
the text difference, so they are small and apply to the text as it is.

API (what the command line and the language server use)::

    apply_fixes(source, findings, unsafe=False, noqa_codes_by_row=None, *, filename=None,
                select=None) -> tuple[str, list[Finding]]
        Apply fixes to a fixpoint: in rounds of fixes on rows apart, the file re-checked once
        per round (a round not kept is bisected) (only the ``select`` codes, default: those of
        ``findings``), a fix kept only if it removes a finding of its code without leaving a
        new finding that has no fix; returns the new
        text and the findings fixed (``.fix`` set). Findings on a ``# noqa`` row for their
        code, and fixes whose edits would change such a row, are skipped.
    diff(old, new, filename) -> str
        Unified diff (``--diff``); ``""`` when nothing changed.
    compute_fix(module, source, finding) -> Fix | None
        The fix for one finding (``module``: the parsed ``source`` or ``None``).
    attach_fixes(source, findings) -> list[Finding]
        Set ``finding.fix`` on every finding of one file (one parse).
    noqa_codes_by_row(source) -> dict[int, frozenset[str] | None]
        The ``# noqa`` comments of a file (``None``: bare ``# noqa``).
    Fix.to_json() / Edit.to_json()
        ruff's JSON shape: ``{"applicability", "message", "edits": [{"content",
        "location": {"row", "column"}, "end_location": {"row", "column"}}]}``.
    FIXABLE
        Rule code -> the applicability of its fix (``None``: no fix), below.

What each fix does, and when it declines (``None``):

* LC101 clip before backward: move the clip statement to just before the optimizer step
  that follows the backward, in the same block; ``None`` if the step is not in that block,
  another step or zero_grad sits in between, or a statement it crosses binds a name it uses.
  Safe.
* LC102 clip after step: move the clip statement to just before that step (same block, no
  backward/zero_grad/unscale_ crossed). Safe.
* LC103 zero_grad between backward and step: move it to just after the step (after
  ``scaler.update()`` when that follows). Safe; when the step is under a gradient-accumulation
  ``if`` of the same block, into that ``if`` after the step: unsafe.
* LC301 eval mode not reset: insert ``model.train()`` as the first statement of the training
  loop (the loop around the step that holds the ``eval()``, else the outermost one). Always
  unsafe: where the mode switches back is the author's choice.
* LC302 validation without no_grad: wrap the loop holding the flagged forward (after
  ``model.eval()``, same block) in ``with torch.no_grad():`` — safe when the loop makes no
  training call; otherwise the statements from the forward to the next training call:
  unsafe. ``None`` when ``torch`` is not imported under a usable name.
* LC401 loss tensor kept: ``xs.append(loss)`` → ``xs.append(loss.item())``, ``total += loss``
  → ``total += loss.item()``, ``d[k] = loss`` → ``d[k] = loss.item()``. Safe, unless the
  container is used as a tensor elsewhere (a tensor method on it or an element, or passed to
  ``torch.*``): unsafe. (``.item()`` needs a one-element loss; loopcheck's loss roles are
  reductions.)
* LC601 clip without unscale: insert ``scaler.unscale_(optimizer)`` before the clip, the
  scaler from the scaled backward, the optimizer from the ``scaler.step(...)`` that follows.
  Safe.
* LC602 step bypasses scaler: ``optimizer.step()`` → ``scaler.step(optimizer)`` and make
  ``scaler.update()`` follow: inserted, or a single once-per-epoch update moved after the
  step. Safe; unsafe when other ``update()`` calls exist elsewhere.
* LC603 backward on unscaled loss: ``loss.backward()`` → ``scaler.scale(loss).backward()``.
  Safe.
* LC604 scaler.step without update: ``scaler.update()`` right after ``scaler.step(opt)`` (the
  once-per-epoch update moved there, as LC602). Safe.

* LC504 submodules in a plain container: ``self.layers = [...]`` → ``nn.ModuleList([...])``, a dict
  → ``nn.ModuleDict``, parameters → ``nn.ParameterList``/``ParameterDict``, an empty list filled by
  ``append`` → ``nn.ModuleList()``. Unsafe: the modules' parameters join ``model.parameters()``
  and the ``state_dict()`` keys change (old checkpoints no longer load strictly). ``None`` when a
  dict has keys that are not strings.
* LC505 tensor conversion discarded: ``x.to(device)`` → ``x = x.to(device)`` (a name or an
  attribute receiver). Safe.
* LC701 probabilities to a logits loss: drop the ``softmax``/``sigmoid`` in the loss's argument,
  or pass the activation's input when the statement just before made the probabilities from a
  name not re-bound in between; ``softmax`` → ``log_softmax`` for NLLLoss. Safe. ``None`` when the
  activation is inside the model.
* LC702 logits to a probability loss: ``F.binary_cross_entropy`` →
  ``F.binary_cross_entropy_with_logits``, ``F.nll_loss`` → ``F.cross_entropy``, and
  ``nn.BCELoss(...)`` → ``nn.BCEWithLogitsLoss(...)``, ``nn.NLLLoss(...)`` →
  ``nn.CrossEntropyLoss(...)`` where the criterion is built, when this call is its only use. Safe.

No fix: LC001 (syntax), LC104 and LC105 (where the step or the missing ``zero_grad()`` goes
depends on the intended accumulation), LC201 and LC202 (the scheduler call moves to another
loop level, or its period must change: the author's choice), LC203 (the metric to pass is not
in the code), LC501 (rebuilding the optimizer or moving the conversion means reordering setup
code across functions), LC605 (where ``unscale_()`` belongs relative to the clip is not local),
LC106/LC107 (moving the clip into the accumulation condition, or the step out of the inner loop,
changes which statements run per micro-step: the author's call), LC303 (where eval() and train()
go), LC503 (rebuilding the optimizer after the wrap), LC801 (a deep copy doubles the model's
memory: the author's call), LC802 (the checkpoint keys to load are the author's), LC901 (the
epoch variable to pass).
"""

import importlib

# The parts that need LibCST are imported when first used (PEP 562): a run answered from the
# cache reads ``Fix``/``Edit`` and ``FIXABLE`` and never parses.
_PARTS = {
    "apply_fixes": "apply", "attach_fixes": "apply", "compute_fix": "apply", "diff": "apply",
    "FIXERS": "fixers", "noqa_codes_by_row": "noqa",
    "SAFE": "model", "UNSAFE": "model", "Edit": "model", "Fix": "model", "apply_edits": "model",
}


def __getattr__(name: str):
    part = _PARTS.get(name)
    if part is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{part}"), name)
    globals()[name] = value
    return value

#: Rule code -> applicability of its fix: "safe", "unsafe" (always needs --unsafe-fixes) or
#: None (no fix). "safe" fixers may still return an unsafe fix in the cases listed above.
FIXABLE: dict[str, str | None] = {
    "LC001": None,
    "LC002": "safe",  # unused-noqa: fixed by loopcheck.workspace.noqa.remove_unused_noqa, not by a fixer
    "LC101": "safe",
    "LC102": "safe",
    "LC103": "safe",
    "LC104": None,
    "LC105": None,
    "LC201": None,
    "LC202": None,
    "LC203": None,
    "LC301": "unsafe",
    "LC302": "safe",
    "LC401": "safe",
    "LC501": None,
    "LC502": None,
    "LC601": "safe",
    "LC602": "safe",
    "LC603": "safe",
    "LC604": "safe",
    "LC605": None,
    "LC106": None,
    "LC107": None,
    "LC303": None,
    "LC503": None,
    "LC504": "unsafe",
    "LC505": "safe",
    "LC701": "safe",
    "LC702": "safe",
    "LC801": None,
    "LC802": None,
    "LC901": None,
}

__all__ = [
    "FIXABLE", "FIXERS", "SAFE", "UNSAFE", "Edit", "Fix", "apply_edits", "apply_fixes",
    "attach_fixes", "compute_fix", "diff", "noqa_codes_by_row",
]
