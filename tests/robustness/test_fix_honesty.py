"""9.10, 10.4 Honest fixes: "safe" is safe on adversarial variants (a non-scalar loss, two
optimizers, two steps), and what is advertised (the JSON ``fix``, ``[*] N fixable``, the
editor's quick fixes) is what ``--fix`` applies."""

from __future__ import annotations

import collections
import re
from dataclasses import replace
import textwrap
from pathlib import Path

import libcst as cst
import pytest

from loopcheck.analysis import check_source
from loopcheck.check import lint_text
from loopcheck.cli.commands import Run, fix_files
from loopcheck.fixes import FIXABLE, apply_fixes, attach_fixes

from .helpers import FIXTURES

SAFE_CODES = sorted(code for code, applicability in FIXABLE.items()
                    if applicability == "safe" and (FIXTURES / f"{code}_bad.py").is_file())


# -------------------------------------------------------------------- adversarial variants


def two_optimizers(text: str) -> str | None:
    """A second optimizer over the same model, cleared and stepped beside the first."""
    m = re.search(r"^(\s*)optimizer = (torch\.optim\.\w+)\(model\.parameters\(\)", text, re.M)
    if m is None:
        return None
    ind = m.group(1)
    text = text.replace(m.group(0), f"{ind}optimizer2 = {m.group(2)}(model.parameters(), lr=0.01)\n{m.group(0)}", 1)
    for pattern, second in ((r"scaler\.step\(optimizer\)", "scaler.step(optimizer2)"),
                            (r"optimizer\.step\(\)", "optimizer2.step()"),
                            (r"optimizer\.zero_grad\(\)", "optimizer2.zero_grad()")):
        text = re.sub(rf"^(\s*)({pattern})(.*)$", lambda m: f"{m.group(1)}{m.group(2)}{m.group(3)}\n{m.group(1)}{second}",
                      text, flags=re.M)
    return text


def two_steps(text: str) -> str | None:
    """The step called twice per iteration."""
    new = re.sub(r"^(\s*)(scaler\.step\(optimizer\)|optimizer\.step\(\))(.*)$",
                 lambda m: f"{m.group(1)}{m.group(2)}{m.group(3)}\n{m.group(1)}{m.group(2)}", text, flags=re.M)
    return new if new != text else None


def non_scalar_loss(text: str) -> str | None:
    """The criterion keeps one loss per sample."""
    new = text.replace("nn.CrossEntropyLoss()", 'nn.CrossEntropyLoss(reduction="none")')
    return new if new != text else None


VARIANTS = {"two_optimizers": two_optimizers, "two_steps": two_steps, "non_scalar_loss": non_scalar_loss}


def adversarial() -> list[tuple[str, str, str]]:
    out = []
    for code in SAFE_CODES:
        base = (FIXTURES / f"{code}_bad.py").read_text(encoding="utf-8")
        for name, make in VARIANTS.items():
            if name == "non_scalar_loss" and code != "LC401":
                continue  # only .item() cares about the loss's shape
            text = make(base)
            if text is not None:
                out.append((code, name, text))
    return out


ADVERSARIAL = adversarial()


@pytest.mark.parametrize("code,variant,text", ADVERSARIAL, ids=[f"{c}-{v}" for c, v, _ in ADVERSARIAL])
def test_each_safe_fix_on_adversarial_variants(code, variant, text):
    """The fixed text parses, has fewer findings of the rule or is left alone, and brings no
    finding of any rule; a fix that is applied was advertised, one that is not was not."""
    before = check_source(text, "v.py")
    attach_fixes(text, before)
    advertised = sum(1 for f in before if f.fix is not None and f.fix.is_safe)
    new, fixed = apply_fixes(text, [f for f in before], filename="v.py")
    cst.parse_module(new)
    after = check_source(new, "v.py")
    b = collections.Counter(f.code for f in before)
    a = collections.Counter(f.code for f in after)
    assert all(a[c] <= b[c] for c in a), (dict(b), dict(a))
    if fixed:
        assert a[code] < b[code]
    else:
        assert new == text
    assert advertised == sum(b.values()) - sum(a.values())


LC401_BASE = (FIXTURES / "LC401_bad.py").read_text(encoding="utf-8")


@pytest.mark.parametrize("old,new,applicability", [
    ("", "", "safe"),  # the fixture: CrossEntropyLoss() (a mean), a list
    ("nn.CrossEntropyLoss()", 'nn.CrossEntropyLoss(reduction="none")', "unsafe"),
    ("nn.CrossEntropyLoss()", "nn.CrossEntropyLoss(reduction=input())", "unsafe"),  # a reduction read at run time
    ("nn.CrossEntropyLoss()", "nn.CrossEntropyLoss(reduce=False)", "unsafe"),
    ("nn.CrossEntropyLoss()", 'nn.CrossEntropyLoss(reduction="sum")', "safe"),
    ("loss_history = []", "from utils import Averager\nloss_history = Averager()", "unsafe"),  # Averager.add reads .data
    ("loss_history = []", "loss_history = torch.zeros(0)", "unsafe"),
    ("loss = criterion(model(x), y)", "loss = model.loss(x, y)", "unsafe"),  # unknown shape
    ("loss = criterion(model(x), y)", "loss = criterion(model(x), y).sum(dim=0)", "unsafe"),
    ("loss = criterion(model(x), y)", "loss = (model(x) - 1).pow(2).mean()", "safe"),
    ("loss = criterion(model(x), y)", "loss = criterion(model(x), y) / 4", "safe"),
    ("loss = criterion(model(x), y)", "loss = nn.functional.cross_entropy(model(x), y)", "safe"),
    ("loss = criterion(model(x), y)", 'loss = nn.functional.cross_entropy(model(x), y, reduction="none")', "unsafe"),
])
def test_lc401_item_fix_is_safe_only_for_known_scalars_and_plain_receivers(old, new, applicability):
    text = LC401_BASE.replace(old, new) if old else LC401_BASE
    assert text != LC401_BASE or not old
    findings = check_source(text, "t.py")
    assert [f.code for f in findings] == ["LC401"]
    [f] = attach_fixes(text, findings)
    assert f.fix is not None and f.fix.applicability == applicability


def test_lc401_running_total_from_a_number_is_safe_and_from_a_tensor_is_not():
    src = textwrap.dedent("""\
        import torch
        from torch import nn

        model = nn.Linear(4, 2)
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        criterion = nn.MSELoss()
        total = 0.0
        for step in range(10):
            x = torch.randn(8, 4)
            optimizer.zero_grad()
            loss = criterion(model(x), torch.zeros(8, 2))
            loss.backward()
            optimizer.step()
            total += loss
        print(total / 10)
    """)
    [f] = attach_fixes(src, check_source(src, "t.py"))
    assert (f.code, f.fix.applicability) == ("LC401", "safe")
    src = src.replace("total = 0.0", "total = torch.zeros(())")
    [f] = attach_fixes(src, check_source(src, "t.py"))
    assert (f.code, f.fix.applicability) == ("LC401", "unsafe")


def test_lc604_update_goes_after_the_last_step_of_the_iteration():
    text = two_optimizers((FIXTURES / "LC604_bad.py").read_text(encoding="utf-8"))
    new, fixed = apply_fixes(text, check_source(text, "t.py"), filename="t.py")
    assert [f.code for f in fixed] == ["LC604"]
    assert (
        "        scaler.step(optimizer)  # expect: LC604\n"
        "        scaler.step(optimizer2)\n"
        "        scaler.update()\n"
    ) in new
    assert check_source(new, "t.py") == []


# -------------------------------------------------------------------- accounting


def _fixture_texts():
    """Each fixable rule's bad fixture, and the variants whose fix is unsafe or composes (the
    adversarial variants are counted in :func:`test_each_safe_fix_on_adversarial_variants`)."""
    names = sorted(p.name for p in FIXTURES.glob("LC[0-9][0-9][0-9]_bad.py") if FIXABLE.get(p.name[:5]))
    names += ["LC103_bad_accum_wiped.py", "LC301_bad_trainer_class.py", "LC401_bad_running_sum.py"]
    return [(name, (FIXTURES / name).read_text(encoding="utf-8")) for name in names]


def test_advertised_fixes_are_what_fix_applies():
    """For the bad fixtures, with ``--fix`` and with
    ``--unsafe-fixes``: ``[*] N fixable`` (the findings with a fix of the mode) is the number
    ``--fix`` removes, and no finding left after ``--fix`` advertises a fix (it was rejected,
    or it would have been applied)."""
    mismatches = []
    for name, text in _fixture_texts():
        found, source = lint_text(text, name)
        for unsafe in (False, True):
            advertised = sum(1 for f in found if f.fix is not None and (unsafe or f.fix.is_safe))
            run = Run([replace(f) for f in found], {name: source}, texts={name: text}, codes={name: None})
            changes = fix_files(run, unsafe, write=False)
            fixed = changes[name][2] if name in changes else 0
            still = [f.code for f in run.findings if f.fix is not None and (unsafe or f.fix.is_safe)]
            if advertised != fixed or still or len(found) != fixed + len(run.findings):
                mismatches.append((name, unsafe, advertised, fixed, still))
    assert mismatches == []


# -------------------------------------------------------------------- at runtime


def test_fixed_adversarial_scripts_run_clean(tmp_path):
    """Two optimizers, two steps: the fixed scripts run under the verify probes without an
    error and without the rule's symptom. (Variants whose symptom measure assumes one
    optimizer stepped once per iteration are left out: LC101/LC102/LC604 count a second
    step as unclipped or un-updated; a double ``scaler.step()`` fails at runtime by itself.)"""
    pytest.importorskip("torch")
    from loopcheck.verify import runner, symptoms

    chosen = {("LC602", "two_optimizers"), ("LC602", "two_steps"), ("LC401", "two_optimizers"),
              ("LC302", "two_steps")}
    scripts = {}
    for code, variant, text in ADVERSARIAL:
        if (code, variant) not in chosen:
            continue
        new, fixed = apply_fixes(text, check_source(text, "v.py"), filename="v.py")
        assert code in [f.code for f in fixed]
        path = tmp_path / f"{code}_{variant}.py"
        path.write_text(new, encoding="utf-8")
        scripts[(code, variant)] = str(path)
    assert len(scripts) == len(chosen)
    records = runner.run_scripts(list(scripts.values()), jobs=len(scripts))
    for (code, _variant), path in scripts.items():
        m = symptoms.measure(code, records[path])
        assert m["error"] is None, (code, m)
        assert m["shown"] is False, (code, m["detail"])
