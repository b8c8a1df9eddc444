"""Loops a framework runs (``[[driver]]`` knowledge): the entries load, bad ones are refused,
and no framework is named outside the knowledge data."""

from __future__ import annotations

from pathlib import Path

import pytest

from loopcheck.analysis import check_source
from loopcheck.engine.knowledge import Knowledge, KnowledgeError, knowledge

ROOT = Path(__file__).resolve().parent.parent


def test_both_lightning_packages_have_a_driver():
    kb = knowledge()
    for base in ("lightning.LightningModule", "lightning.pytorch.LightningModule", "pytorch_lightning.LightningModule"):
        driver = kb.driver(base)
        assert driver is not None and driver.source
        assert "run" in driver.blocks


@pytest.mark.parametrize("text, message", [
    ('[[driver]]\nbases = ["a.B"]\nsource = "s"\n[driver.blocks]\nepoch = []\n', "'run' block"),
    ('[[driver]]\nbases = ["a.B"]\n[driver.blocks]\nrun = []\n', "'source'"),
    ('[[driver]]\nbases = ["a.B"]\nsource = "s"\n[driver.blocks]\nrun = [{loop = "epoch", body = "x"}]\n', "no block"),
    ('[[driver]]\nbases = ["a.B"]\nsource = "s"\n[driver.blocks]\nrun = [{jump = "x"}]\n', "bad step"),
])
def test_a_bad_driver_is_an_error(text, message):
    with pytest.raises(KnowledgeError, match=message):
        Knowledge().load(text, "test.toml")


def test_no_framework_is_named_in_the_engine_or_the_rules():
    for folder in ("loopcheck/engine", "loopcheck/rules"):
        for path in (ROOT / folder).glob("*.py"):
            assert "lightning" not in path.read_text(encoding="utf-8").lower(), path


def test_a_file_that_only_subclasses_a_driven_class_is_checked():
    """The repro writes no training call: the framework's loop is what LC201 reads."""
    path = ROOT / "fixtures" / "repro" / "lightning_step_interval_epoch_schedule.py"
    assert [(f.code, f.row) for f in check_source(path.read_text(encoding="utf-8"), str(path))] == [("LC201", 24)]


def test_a_driver_is_named_by_its_entry_or_its_base():
    assert knowledge().driver("pytorch_lightning.LightningModule").name == "Lightning"
    kb = Knowledge()
    kb.load('[[driver]]\nbases = ["a.Engine"]\nsource = "s"\n[driver.blocks]\nrun = []\n', "test.toml")
    assert kb.driver("a.Engine").name == "Engine"


def test_a_clear_before_the_frameworks_step_names_that_step():
    """LC103 on a ``zero_grad`` in a hook the framework runs between its backward and its step:
    the message names the framework's step, not the optimizer's construction as a ``step()``."""
    path = ROOT / "fixtures" / "LC103_bad_lightning_on_after_backward_clears_on_a_counter.py"
    findings = check_source(path.read_text(encoding="utf-8"), str(path), select={"LC103"})
    assert [f.row for f in findings] == [30]
    assert findings[0].message.endswith("and the optimizer step Lightning runs after on_after_backward()")
    assert [(r.row, r.message) for r in findings[0].related] == [
        (21, "Lightning runs backward() on the loss this method returns"),
        (34, "the optimizer Lightning steps after on_after_backward(), on no gradients"),
    ]
