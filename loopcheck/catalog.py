"""The rule catalog: each rule's code, name, severity and one-line summary, readable without
importing the analysis (the configuration, the reporters, ``loopcheck rules`` and a run answered
from the cache need these, and the engine's imports cost a third of a warm run).

The rule itself, its ``check`` and its messages, live in the module named after each entry
(``loopcheck/rules/<module>``), as ``info = INFOS["LCxxx"]`` on a ``Rule`` class. To add a
rule: an entry here, the class there, ``fixtures/LCxxx_bad.py``/``_good.py`` and a page
``rules/LCxxx.md``; ``tests/test_fixtures.py`` checks that every entry has a registered rule.
An entry with ``preview=True`` is a rule in preview: off unless asked for (see
:attr:`RuleInfo.preview`); flipping that one argument moves a rule in or out of preview. A rule
is out of preview when the latest census that gave it at least 5 findings (``scripts/eval``: code
it was not tuned on, measured before the fixes that follow) measured its precision at 95 % or
more, and back in preview when a later census measures it below (each rule page's "Precision").
LC001 is never in preview: a file that does not parse is one loopcheck could not check, and
passing it in silence would report it clean.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# Where the project lives: the one place to change when it moves or is forked. Every link
# loopcheck writes is built here: a rule's page in JSON and JSON Lines (``url``), in SARIF
# (``helpUri``; ``informationUri`` is REPOSITORY_URL), in the editor (``codeDescription.href``)
# and in ``loopcheck rules --output-format json``. ``pyproject.toml``'s ``[project.urls]`` and the
# VS Code extension's ``repository`` name the same repository (tests/test_release.py checks).
REPOSITORY_URL = "https://github.com/loopcheck/loopcheck"
# A rule's page in the source of the version that reports it: ``{ref}`` is that release's tag.
RULE_URL = REPOSITORY_URL + "/blob/{ref}/rules/{code}.md"
# A release (or pre-release) version, as setuptools-scm derives it from a tag ``vX.Y.Z``.
_RELEASE = re.compile(r"\d+(?:\.\d+)*(?:(?:a|b|rc)\d+)?")


def docs_ref(version: str) -> str:
    """The git ref whose rule pages are those of ``version``: the tag ``v<version>`` of a release
    (``0.2.0`` -> ``v0.2.0``); ``main`` for a development build (``0.2.1.dev3+g1a2b3c4``), whose
    commit may not be pushed anywhere."""
    return f"v{version}" if _RELEASE.fullmatch(version) else "main"


def rule_url(code: str, version: str | None = None) -> str:
    """The address of rule ``code``'s page (``rules/<code>.md``) for ``version`` (default: the
    running loopcheck's)."""
    if version is None:
        from loopcheck import __version__ as version
    return RULE_URL.format(ref=docs_ref(version), code=code)


@dataclass(frozen=True)
class RuleInfo:
    """Metadata of a rule.

    Attributes:
        code: stable code, ``LC`` + family digit + number (``LC101``).
        name: short kebab-case name (``clip-before-backward``).
        severity: ``"error"`` (training is wrong) or ``"warning"`` (memory or speed).
        summary: one line for ``loopcheck rules``.
        preview: the rule is not proven yet (its measured precision on code it was not tuned on
            is too low): it is off unless preview is on (``--preview``, ``preview = true``) or
            it is selected by its exact code or name, as ruff's preview rules.
    """

    code: str
    name: str
    severity: str
    summary: str
    preview: bool = False

    @property
    def url(self) -> str:
        """The rule's page for the running version (:func:`rule_url`)."""
        return rule_url(self.code)


_CATALOG = (
    RuleInfo(
        "LC001", "syntax-error", "error",
        "The file does not parse, so it was not checked.",
    ),  # base.py
    RuleInfo(
        "LC002", "unused-noqa", "warning",
        "A `# noqa` comment names a loopcheck code that suppresses nothing on its line.",
    ),  # base.py
    RuleInfo(
        "LC101", "clip-before-backward", "error",
        "Gradient clipping runs before backward(): .grad is empty or stale, so nothing is clipped.",
        preview=True,
    ),  # gradients.py
    RuleInfo(
        "LC102", "clip-after-step", "error",
        "Gradient clipping runs after optimizer.step(): it clips gradients that were already applied.",
    ),  # gradients.py
    RuleInfo(
        "LC103", "zero-grad-between-backward-and-step", "error",
        "zero_grad() runs after backward() and before step(): the step applies no gradients.",
        preview=True,
    ),  # gradients.py
    RuleInfo(
        "LC104", "step-before-backward", "error",
        "optimizer.step() runs before loss.backward() in the same iteration: it applies no gradients.",
        preview=True,
    ),  # gradients.py
    RuleInfo(
        "LC105", "missing-zero-grad", "error",
        "backward() and step() run every iteration with no zero_grad(): gradients pile up across steps.",
        preview=True,
    ),  # gradients.py
    RuleInfo(
        "LC106", "clip-or-unscale-on-every-micro-step", "error",
        "Gradients are clipped on every accumulation micro-step while step() runs every N: partial "
        "sums are clipped.",
        preview=True,
    ),  # accumulation.py
    RuleInfo(
        "LC107", "step-inside-accumulation-loop", "error",
        "optimizer.step() runs inside the loop meant to accumulate micro-batches: nothing accumulates.",
        preview=True,
    ),  # accumulation.py
    RuleInfo(
        "LC201", "epoch-scheduler-stepped-per-batch", "error",
        "An epoch-based LR scheduler is stepped inside the batch loop: the LR decays len(loader) "
        "times too fast.",
        preview=True,
    ),  # schedulers.py
    RuleInfo(
        "LC202", "scheduler-step-before-optimizer-step", "warning",
        "scheduler.step() runs before optimizer.step(): the first value of the LR schedule is skipped.",
        preview=True,
    ),  # schedulers.py
    RuleInfo(
        "LC203", "plateau-scheduler-without-metric", "error",
        "ReduceLROnPlateau.step() is called without the metric it monitors.",
        preview=True,
    ),  # schedulers.py
    RuleInfo(
        "LC301", "eval-mode-not-reset", "error",
        "model.eval() reaches the next training step without model.train(): the model trains in eval mode.",
        preview=True,
    ),  # modes.py
    RuleInfo(
        "LC302", "validation-without-no-grad", "warning",
        "An evaluation forward pass runs without torch.no_grad(): autograd records a graph for every batch.",
        preview=True,
    ),  # modes.py
    RuleInfo(
        "LC303", "validation-in-train-mode", "error",
        "A validation pass runs after training with the model still in train mode: Dropout is on, "
        "BatchNorm updates.",
        preview=True,
    ),  # evaluation.py
    RuleInfo(
        "LC401", "loss-tensor-kept", "warning",
        "A tensor with an autograd graph is kept across optimizer steps instead of loss.item(): the graphs pile up.",
        preview=True,
    ),  # memory.py
    RuleInfo(
        "LC501", "model-converted-after-optimizer", "error",
        "The model is replaced, or converted once the optimizer has state, after the optimizer was "
        "built from its parameters.",
        preview=True,
    ),  # setup.py
    RuleInfo(
        "LC502", "model-moved-after-optimizer", "error",
        "The model is moved to a device after the optimizer was built, while conversions make new "
        "parameters (set_overwrite_module_params_on_conversion): the model never trains.",
        preview=True,
    ),  # setup.py
    RuleInfo(
        "LC503", "optimizer-built-before-fsdp", "error",
        "The optimizer is built before FSDP wraps the model: it holds the replaced parameters and "
        "updates nothing.",
        preview=True,
    ),  # modules.py
    RuleInfo(
        "LC504", "submodules-in-plain-container", "error",
        "Submodules held in a plain list or dict are not registered: parameters(), to() and "
        "state_dict() miss them.",
        preview=True,
    ),  # modules.py
    RuleInfo(
        "LC505", "tensor-to-result-discarded", "error",
        "tensor.to(device), .cuda() or .half() as a statement: it returns a new tensor and leaves "
        "the tensor as it is.",
        preview=True,
    ),  # modules.py
    RuleInfo(
        "LC601", "clip-without-unscale", "error",
        "Gradients are clipped while still multiplied by the GradScaler's scale: call "
        "scaler.unscale_() first.",
    ),  # amp.py
    RuleInfo(
        "LC602", "optimizer-step-bypasses-scaler", "error",
        "optimizer.step() is called directly on gradients scaled by a GradScaler: use "
        "scaler.step(optimizer).",
        preview=True,
    ),  # amp.py
    RuleInfo(
        "LC603", "backward-on-unscaled-loss", "error",
        "loss.backward() on the unscaled loss while scaler.step() unscales: updates shrink by the scale.",
        preview=True,
    ),  # amp.py
    RuleInfo(
        "LC604", "scaler-step-without-update", "error",
        "scaler.step() is not followed by scaler.update() before the next scaler.step().",
        preview=True,
    ),  # amp.py
    RuleInfo(
        "LC605", "unscale-misplaced", "error",
        "scaler.unscale_() runs after scaler.step() instead of between backward and step, or twice "
        "before one step.",
        preview=True,
    ),  # amp.py
    RuleInfo(
        "LC701", "probabilities-to-logits-loss", "error",
        "Softmax or sigmoid outputs are passed to a loss that applies (log-)softmax or sigmoid itself.",
        preview=True,
    ),  # losses.py
    RuleInfo(
        "LC702", "logits-to-probability-loss", "error",
        "Raw logits are passed to BCELoss (which expects probabilities) or NLLLoss (log-probabilities).",
        preview=True,
    ),  # losses.py
    RuleInfo(
        "LC801", "best-state-not-copied", "error",
        "A 'best' state_dict() is kept without a copy while training goes on: it holds the last "
        "weights, not the best.",
        preview=True,
    ),  # checkpoints.py
    RuleInfo(
        "LC802", "resume-without-optimizer-state", "error",
        "Training resumes from a checkpoint that saved the optimizer (or scheduler) state, without "
        "loading it.",
        preview=True,
    ),  # checkpoints.py
    RuleInfo(
        "LC901", "distributed-sampler-without-set-epoch", "warning",
        "A DistributedSampler is iterated over several epochs without set_epoch(): every epoch sees "
        "the same order.",
        preview=True,
    ),  # data.py
)

#: Every rule's metadata by code, ``LC001`` and ``LC002`` (reported by the command line itself)
#: included.
INFOS: dict[str, RuleInfo] = {info.code: info for info in _CATALOG}
#: The codes of the rules in preview (:attr:`RuleInfo.preview`).
PREVIEW: frozenset[str] = frozenset(info.code for info in _CATALOG if info.preview)
#: Every rule's metadata by name (``clip-before-backward``).
BY_NAME: dict[str, RuleInfo] = {info.name: info for info in _CATALOG}
SYNTAX_ERROR = INFOS["LC001"]
UNUSED_NOQA = INFOS["LC002"]
