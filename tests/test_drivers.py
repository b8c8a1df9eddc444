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
