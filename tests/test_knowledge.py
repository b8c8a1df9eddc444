"""The library knowledge files: every entry loads, names its source, and is looked up as documented."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from loopcheck.engine.knowledge import ConstantWhen, FirstChange, Knowledge, KnowledgeError, glob, knowledge


def test_every_entry_names_its_source():
    kb = knowledge()
    entries = list(kb.functions.values()) + [s for _, s in kb._function_patterns]
    entries += [c.ctor for c in kb.classes.values()] + [c.ctor for _, c in kb._class_patterns]
    assert len(entries) > 150
    assert [e.name for e in entries if not e.source.startswith("https://")] == []


def test_patterns_match_within_one_component():
    assert glob("torch.optim.[A-Z]*").match("torch.optim.Adam")
    assert not glob("torch.optim.[A-Z]*").match("torch.optim.lr_scheduler.StepLR")
    assert glob("wandb.**").match("wandb.sdk.wandb_run.Run.log")
    assert not glob("torch.[a-z]*").match("torch.nn.functional.relu")


@pytest.mark.parametrize("name, role, detail", [
    ("torch.optim.AdamW", "optimizer", ("params", (0, "params"))),
    ("torch.optim.Adagrad", "optimizer", ("eager_state", True)),
    ("torch.optim.lr_scheduler.StepLR", "scheduler", ("schedule", "epoch")),
    ("torch.optim.lr_scheduler.OneCycleLR", "scheduler", ("schedule", "batch")),
    ("torch.optim.lr_scheduler.StepLR", "scheduler", ("first_change", FirstChange((1, "step_size")))),
    ("torch.optim.lr_scheduler.ConstantLR", "scheduler",
     ("first_change", FirstChange((2, "total_iters"), 5, "change"))),
    ("torch.optim.lr_scheduler.ExponentialLR", "scheduler", ("constant_when", ConstantWhen((1, "gamma"), 1.0))),
    ("torch.optim.lr_scheduler.CosineAnnealingLR", "scheduler", ("first_change", None)),
    ("torch.optim.lr_scheduler.SomeFutureLR", "scheduler", ("schedule", "unknown")),
    ("transformers.get_cosine_schedule_with_warmup", "scheduler", ("schedule", "batch")),
    ("transformers.get_scheduler", "scheduler", ("optimizer", (1, "optimizer"))),
    ("timm.optim.create_optimizer_v2", "optimizer", ("params", (0, "model_or_params"))),
    ("torch.nn.CrossEntropyLoss", "criterion", None),
    ("torch.nn.Conv2d", "model", None),
    ("torch.cuda.amp.GradScaler", "scaler", None),
    ("accelerate.Accelerator", "accelerator", None),
])
def test_constructors_build_their_role(name, role, detail):
    summary = knowledge().callable(name)
    assert summary is not None and summary.returns is not None
    assert summary.returns.role == role
    if detail is not None:
        assert summary.returns.get(detail[0]) == detail[1]


def test_containers_and_dropout_are_not_models():
    for name in ("torch.nn.ModuleList", "torch.nn.Dropout", "torch.nn.Parameter"):
        summary = knowledge().callable(name)
        assert summary is not None and summary.returns is None


def test_methods_come_from_the_bases_and_wildcards():
    kb = knowledge()
    step = kb.method("torch.optim.lr_scheduler.CosineAnnealingLR", "step")
    assert [e.event for e in step.effects] == ["sched_step"]
    assert kb.method("torch.optim.lr_scheduler.CosineAnnealingLR", "get_last_lr").effects == ()
    assert kb.method("torch.utils.tensorboard.SummaryWriter", "add_graph").effects == ()
    assert kb.method("accelerate.Accelerator", "prepare").returns.same == ("*",)
    assert [e.event for e in kb.method("torch.amp.GradScaler", "step").effects] == ["scaler_step", "step"]
    assert kb.method("torch.nn.Module", "init_hidden") is None  # the engine decides: no effect on the mode
    assert kb.method("torch.optim.SGD", "swap_ema") is None


def test_dropout_is_mode_free_only_with_p_zero():
    entry = knowledge().cls("torch.nn.Dropout2d")
    assert entry.modes is None and entry.modes_none_if_zero == ((0, "p"),)


def test_elmo_is_mode_free_with_dropout_zero_and_its_own_bilm():
    entry = knowledge().cls("allennlp.modules.elmo.Elmo")
    assert entry.modes is None and entry.modes_none_if_zero == ("dropout",)
    assert entry.mode_args == ((9, "module"),)
    assert knowledge().cls("allennlp.modules.Elmo") is not None


#: A validation loop that calls Elmo without elmo.eval() (the valid fixture), its Elmo built
#: with ``{args}``.
ELMO = (Path(__file__).resolve().parent.parent / "fixtures" / "valid"
        / "elmo_without_dropout_validated_in_train_mode.py").read_text(encoding="utf-8").replace(
    ', 1, requires_grad=True, dropout=0)', ', 1{args})')


@pytest.mark.parametrize("args, reported", [
    (", requires_grad=True, dropout=0", False),
    (", True, dropout=0.0, module=None", False),
    (", requires_grad=True", True),  # the default dropout=0.5
    (", requires_grad=True, dropout=0.1", True),
    (", requires_grad=True, dropout=0, module=bilm", True),  # a biLM of the caller's: its modes are not known
    (", True, False, 0", True),  # dropout given by position: its place differs across releases
])
def test_elmo_validated_in_train_mode(args, reported):
    """LC303 on allennlp's Elmo follows its knowledge entry: mode-free only with ``dropout``
    given 0 by keyword and ``module`` left out or ``None``."""
    from loopcheck.analysis import check_source

    source = ELMO.replace("{args}", args)
    codes = [f.code for f in check_source(source, "snippet.py") if f.code == "LC303"]
    assert codes == (["LC303"] if reported else [])


def test_grad_contexts():
    kb = knowledge()
    assert kb.callable("torch.no_grad").grad == "disabled"
    assert kb.callable("torch.inference_mode").grad == "disabled"
    assert kb.callable("torch.enable_grad").grad == "enabled"
    assert kb.callable("torch.set_grad_enabled").grad == "arg"
    assert kb.method("accelerate.Accelerator", "accumulate").context == "accumulate"


@pytest.mark.parametrize("text, message", [
    ('[[function]]\nnames = ["x.f"]\neffects = [{event = "jump"}]', "unknown event 'jump'"),
    ('[[function]]\nnames = ["x.f"]\neffects = [{event = "step", model = 0}]', "event 'step' takes no 'model'"),
    ('[[function]]\nnames = ["x.f"]\nreturn = {role = "model"}', "unknown keys ['return']"),
    ('[[function]]\nnames = ["x.f"]\nreturns = {role = "modle"}', "unknown role 'modle'"),
    ('[[function]]\nnames = ["x.f"]\neffects = [{event = "havoc", arg = 0, aspects = ["moods"]}]', "unknown aspects"),
    ('[[class]]\nnames = ["x.C"]\nmodes = "train"', "'modes' can only be"),
    ('[[class]]\nnames = ["x.C"]\nmodes = "none"\nmodes_none_if_zero = [[0, "p"]]', "'modes_none_if_zero' is a list"),
    ('[[class]]\nnames = ["x.C"]\nmode_args = [[0, "p"]]', "'mode_args' is a list of argument references"),
    ('[[function]]\nnames = ["x.f"]\nreturns = {role = "scheduler", first_change = 1}', "'first_change' is a table"),
    ('[[function]]\nnames = ["x.f"]\nreturns = {role = "scheduler", first_change = {arg = 1, default = "5"}}',
     "'first_change' default is an integer"),
    ('[[function]]\nnames = ["x.f"]\nreturns = {role = "scheduler", constant_when = {arg = 2}}',
     "'constant_when' is a table with 'arg' and 'value'"),
    ('[[builtin]]\nnames = ["spark"]\ninstalled_by = "Databricks"', "'installed_by' and 'source' are required"),
    ('[[builtin]]\nnames = ["a.b"]\ninstalled_by = "x"\nsource = "https://x"', "'names' (identifiers)"),
    ('[[builtin]]\nnames = ["x"]\ninstalled_by = "x"\nsource = "https://x"\nkind = 1', "and only they"),
])
def test_a_bad_entry_is_an_error_that_names_it(text, message):
    with pytest.raises(KnowledgeError, match=re.escape(message)):
        Knowledge().load(text, "test.toml")


@pytest.mark.parametrize("name, new, shares", [
    ("torch.zeros", True, None),  # a factory
    ("torch.as_tensor", True, 0),  # a factory that may return its argument
    ("torch.cat", True, "out"),  # derived, copying its arguments, but ``out=``
    ("torch.stack", True, "out"),
    ("copy.deepcopy", True, None),  # a new object: a module's copy has its own parameters
    ("copy.copy", False, None),  # shallow: a module's copy shares its submodules
    ("torch.nn.functional.relu", False, None),
])
def test_new_memory_says_which_results_share_no_memory_with_their_arguments(name, new, shares):
    returns = knowledge().function(name).returns
    assert (returns is not None and returns.new_memory) is new
    assert (returns.get("shares") if returns is not None else None) == shares


def test_installed_builtins_are_knowledge():
    kb = knowledge()
    assert kb.installed_builtins == {"_", "profile", "ic", "display", "get_ipython", "In", "Out", "spark", "sc", "dbutils"}
    one = Knowledge()
    one.load('[[builtin]]\nnames = ["show"]\ninstalled_by = "a kernel"\nsource = "https://x"', "test.toml")
    assert one.installed_builtins == {"show"}
