"""The evaluation scripts of scripts/eval: the seeded splits, the data files, the mutation operators.

The corpus itself (/work/corpus) is not needed: the operators are applied to training scripts
written here, and each mutant must be reported by loopcheck with the operator's code at the
line the operator marked.
"""

from __future__ import annotations

import functools
import sys
from pathlib import Path

import libcst as cst
import pytest

from loopcheck.analysis import check_source
from loopcheck.rules import INFOS

EVAL = Path(__file__).resolve().parent.parent / "scripts" / "eval"
sys.path.insert(0, str(EVAL))

import common  # noqa: E402
import mutate  # noqa: E402
import run_corpus  # noqa: E402

HEADER = '''\
import torch
from torch import nn

model = nn.Sequential(nn.Linear(8, 16), nn.Dropout(0.1), nn.Linear(16, 2))
model.to("cpu")
optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
criterion = nn.CrossEntropyLoss()
train_loader = [(torch.randn(4, 8), torch.randint(0, 2, (4,))) for _ in range(4)]
val_loader = [(torch.randn(4, 8), torch.randint(0, 2, (4,))) for _ in range(2)]
'''

PLAIN = HEADER + '''\
scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=2)
warmup = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda step: min(1.0, (step + 1) / 4))
plateau = torch.optim.lr_scheduler.ReduceLROnPlateau(optimizer)

for epoch in range(3):
    model.train()
    total = 0.0
    for x, y in train_loader:
        optimizer.zero_grad()
        loss = criterion(model(x), y)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        warmup.step()
        total += loss.item()
    scheduler.step()
    model.eval()
    val = 0.0
    with torch.no_grad():
        for x, y in val_loader:
            out = model(x)
            val += criterion(out, y).item()
    plateau.step(val)
'''

AMP_STEP = '''\
scaler = torch.amp.GradScaler("cpu")

for epoch in range(3):
    for x, y in train_loader:
        optimizer.zero_grad()
        with torch.autocast("cpu", dtype=torch.bfloat16):
            loss = criterion(model(x), y)
        scaler.scale(loss).backward()
{clip}        scaler.step(optimizer)
        scaler.update()
'''
AMP = HEADER + AMP_STEP.format(clip="")
AMP_CLIP = HEADER + AMP_STEP.format(
    clip="        scaler.unscale_(optimizer)\n        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)\n")
SCRIPTS = {"plain": PLAIN, "amp": AMP, "amp_clip": AMP_CLIP}

RULES = ["LC101", "LC102", "LC103", "LC104", "LC105", "LC201", "LC202", "LC203", "LC301", "LC302", "LC401",
         "LC502", "LC601", "LC602", "LC603", "LC604", "LC605"]


@functools.cache
def mutants() -> dict[str, list[tuple[str, list[int]]]]:
    """Every mutant of the scripts, by code: (source, expected lines)."""
    out: dict[str, list] = {}
    for source in SCRIPTS.values():
        module = cst.parse_module(source)
        for code, _op, _stmt, edits in mutate.operators(module):
            out.setdefault(code, []).append(mutate.render(module, edits))
    return out


def test_draw_split_is_seeded_and_keeps_acceptance_cases_in_dev():
    names = [f"r{i}" for i in range(20)]
    first = common.draw_split(names, 7, ["r3"])
    assert first == common.draw_split(list(reversed(names)), 7, ["r3"])
    assert first["r3"] == "dev"
    assert sorted(first.values()).count("heldout") == 9  # half of the 19 drawn, rounded down
    assert first != common.draw_split(names, 8, ["r3"])


def test_recorded_splits_are_the_seeded_draws():
    table, repos = common.load_manifest()
    assert common.check_split(table, [(r.name, r.split) for r in repos]) == []
    bugs = common.load_toml("fixed_bugs.toml")
    assert common.check_split(bugs["split"], [(b["id"], b["split"]) for b in bugs["bug"]]) == []


def test_manifest_pins_every_repository():
    _, repos = common.load_manifest()
    assert len(repos) >= 60 and len({r.name for r in repos}) == len(repos)
    for r in repos:
        assert r.subpaths, r.name
        if r.source == "mirror":
            assert len(r.commit) == 40, r.name
        else:
            assert r.files and all(len(c) == 40 for c in r.files.values()), r.name


def test_fixed_bugs_are_complete():
    bugs = common.load_toml("fixed_bugs.toml")["bug"]
    assert len(bugs) >= 40 and len({b["id"] for b in bugs}) == len(bugs)
    for b in bugs:
        assert b["code"] in INFOS or b["code"].startswith("new:"), b["id"]
        assert len(b["fix"]) == 40 and len(b["parent"]) == 40, b["id"]
        assert b["check"] and b["buggy"] and b["summary"], b["id"]
        assert all(loc["line"] > 0 and loc["text"] for loc in b["buggy"]), b["id"]


def test_every_operator_applies_to_the_training_script():
    assert sorted(mutants()) == RULES


@pytest.mark.parametrize("code", RULES)
def test_mutant_is_reported_at_the_marked_line(code):
    for source, lines in mutants()[code]:
        assert lines, code
        assert "@MUTANT@" not in source
        found = {(f.code, f.row) for f in check_source(source, "train.py")}
        assert any((code, n) in found for n in lines), (code, lines, sorted(found))


@pytest.mark.parametrize("name", SCRIPTS)
def test_unmutated_scripts_are_clean(name):
    assert [(f.code, f.row) for f in check_source(SCRIPTS[name], "train.py")] == []


def test_loss_item_is_not_mutated_outside_training_loops():
    evaluation = "for x, y in loader:\n    loss = criterion(model(x), y)\n    total += loss.item()\n"
    assert [c for c, *_ in mutate.operators(cst.parse_module(evaluation))] == []


def test_duplicate_verdicts_must_agree(tmp_path):
    entry = '[[verdict]]\nrepo = "a/b"\npath = "t.py"\ncode = "LC101"\nline = "x"\nverdict = true\nreason = "r"\n'
    path = tmp_path / "v.toml"
    path.write_text(entry)
    assert list(run_corpus.load_verdicts(path)) == [("a/b", "t.py", "LC101", None, "x", None)]
    # Two findings with the same line text in one file share a key: agreeing entries are kept.
    path.write_text(entry + "\n" + entry)
    assert list(run_corpus.load_verdicts(path)) == [("a/b", "t.py", "LC101", None, "x", None)]
    path.write_text(entry + "\n" + entry.replace("verdict = true", "verdict = false"))
    with pytest.raises(ValueError, match="two different verdicts"):
        run_corpus.load_verdicts(path)
    # A `row` tells such findings apart.
    path.write_text(entry + "\n" + entry.replace("verdict = true", "row = 7\nverdict = false"))
    assert list(run_corpus.load_verdicts(path)) == [("a/b", "t.py", "LC101", None, "x", None),
                                                    ("a/b", "t.py", "LC101", None, "x", 7)]
