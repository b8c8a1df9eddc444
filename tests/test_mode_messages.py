"""LC301 and LC303 messages name a mode switch as written when its argument decides the mode
(``model.train(False)`` is an ``eval()``; shortened to ``model.train()`` it says the opposite);
LC302 names the same ``eval()`` on every run."""

from __future__ import annotations

from pathlib import Path

from loopcheck.analysis import check_source

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"


def _messages(name: str, code: str) -> list[str]:
    path = FIXTURES / name
    return [f.message for f in check_source(path.read_text(encoding="utf-8"), str(path)) if f.code == code]


def test_eval_by_positional_argument_is_named_as_written():
    assert _messages("LC301_bad_phase_loop_many_flags_val_only.py", "LC301") == [
        "model.train(False) is still in effect when scaler.step() at line 58 trains the model"
    ]


def test_eval_by_keyword_argument_is_named_as_written():
    assert _messages("LC301_bad_train_mode_false_keyword.py", "LC301") == [
        "model.train(mode=False) is still in effect when optimizer.step() at line 18 trains the model"
    ]


def test_eval_without_arguments_keeps_its_short_name():
    assert _messages("LC301_bad_many_flags_eval_after_epoch.py", "LC301") == [
        "model.eval() is still in effect when scaler.step() at line 46 trains the model"
    ]


def test_lc301_names_the_step_of_the_loop_that_holds_the_eval():
    """After an evaluation inside the second phase's epoch loop, the next step a run meets is
    that loop's own (line 35), not the first phase's (line 29), which comes first in the file."""
    assert _messages("LC301_bad_eval_in_second_phase_names_its_step.py", "LC301") == [
        "model.eval() is still in effect when optimizer.step() at line 35 trains the model"
    ]


def test_lc302_names_the_first_eval_in_program_order_whatever_the_set_order():
    """Two eval() calls reach the forward (one per arm): the message names the first one written,
    on every run (the machine's states are a set, ordered by memory address)."""
    source = (
        "import torch\n"
        "model = torch.nn.Linear(4, 2)\n"
        "opt = torch.optim.SGD(model.parameters(), lr=0.1)\n"
        "def evaluate(loader, quick):\n"
        "    if quick:\n"
        "        model.eval()\n"
        "    else:\n"
        "        model.eval()\n"
        "    for x in loader:\n"
        "        out = model(x)\n"
    )
    messages = {f.message for _ in range(5) for f in check_source(source, "t.py") if f.code == "LC302"}
    assert messages == {"model() runs in eval mode (line 6) without torch.no_grad()"}


def test_lc301_is_at_the_call_that_chose_eval_with_the_override_related():
    """``model.train(False)`` runs the model's own ``train(self, mode)``, whose
    ``super().train(mode)`` sets the mode: the finding is at the call (line 31), that line
    (20) related."""
    path = FIXTURES / "LC301_bad_own_train_method_calls_super.py"
    (finding,) = [f for f in check_source(path.read_text(encoding="utf-8"), str(path)) if f.code == "LC301"]
    assert (finding.row, finding.message) == (
        31, "model.train(False) is still in effect when optimizer.step() at line 37 trains the model")
    assert [(r.row, r.message) for r in finding.related] == [
        (37, "the training step that runs in eval mode"), (20, "sets the mode this call passes")]


def test_mode_call():
    """:func:`mode_call`: the call whose literal argument fixed the mode, or the call of the
    frame holding the step that passes it on; ``None`` for a mode the event's call fixes."""
    import libcst as cst

    from loopcheck.analysis import build_units
    from loopcheck.engine.events import mode_call

    source = (
        "import torch.nn as nn\n"
        "def set_mode(m, training):\n    m.train(training)\n"
        "def outer(m, flag):\n    set_mode(m, flag)\n"
        "def default(m, training=False):\n    m.train(training)\n"
        "model = nn.Linear(2, 2)\n"
        "set_mode(model, False)\n"
        "outer(model, False)\n"
        "default(model)\n"
        "model.eval()\n"
    )
    module = cst.parse_module(source)
    (unit,) = build_units(module)
    code = module.code_for_node
    evals = [ev for ev in unit.of_kind("eval")]
    assert [(code(ev.node), code(mode_call(ev)) if mode_call(ev) else None) for ev in evals] == [
        ("m.train(training)", "set_mode(model, False)"),
        ("m.train(training)", "outer(model, False)"),
        ("m.train(training)", None),  # left at its default: the function chose it
        ("model.eval()", None),
    ]
    nested = evals[1]  # a step inside outer(): the call of that frame passes the flag on
    assert code(mode_call(nested, nested.ctx.calls[:1])) == "set_mode(m, flag)"
