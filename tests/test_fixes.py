"""Autofixes: each fixer's exact rewrite of its bad fixture, the finding gone after it, fixes
that compose, idempotence, ``# noqa``, safe vs unsafe, declined fixes, the diff, and the fixed
scripts measured clean at runtime."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from loopcheck.analysis import check_source
from loopcheck.findings import Finding
from loopcheck.fixes import (
    FIXABLE, FIXERS, Edit, Fix, apply_edits, apply_fixes, attach_fixes, compute_fix, diff,
    noqa_codes_by_row,
)
from loopcheck.rules import INFOS

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures"
I8 = " " * 8

# code -> (applicability, message, [(old text, new text)]) of the fix of fixtures/CODE_bad.py
EXPECTED = {
    "LC101": ("safe", "Move `clip_grad_norm_()` between `loss.backward()` and `optimizer.step()`", [(
        f"{I8}torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=0.5)  # expect: LC101\n"
        f"{I8}loss.backward()\n",
        f"{I8}loss.backward()\n"
        f"{I8}torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=0.5)  # expect: LC101\n",
    )]),
    "LC102": ("safe", "Move `clip_grad_norm_()` before `optimizer.step()`", [(
        f"{I8}optimizer.step()\n"
        f"{I8}torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=0.5)  # expect: LC102\n",
        f"{I8}torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=0.5)  # expect: LC102\n"
        f"{I8}optimizer.step()\n",
    )]),
    "LC103": ("safe", "Move `optimizer.zero_grad()` after `optimizer.step()`", [(
        f"{I8}optimizer.zero_grad()  # expect: LC103\n{I8}optimizer.step()\n",
        f"{I8}optimizer.step()\n{I8}optimizer.zero_grad()  # expect: LC103\n",
    )]),
    "LC301": ("unsafe", "Call `model.train()` at the start of each training iteration", [(
        "for epoch in range(num_epochs):\n    train_loss = 0.0\n",
        "for epoch in range(num_epochs):\n    model.train()\n    train_loss = 0.0\n",
    )]),
    "LC302": ("safe", "Wrap the loop in `with torch.no_grad():`", [(
        "    correct = 0\n"
        "    for x, y in val_loader:\n"
        f"{I8}x, y = x.to(device), y.to(device)\n"
        f"{I8}logits = model(x)  # expect: LC302\n"
        f"{I8}val_loss += criterion(logits, y).item()\n"
        f"{I8}correct += (logits.argmax(dim=1) == y).sum().item()\n",
        "    correct = 0\n"
        "    with torch.no_grad():\n"
        f"{I8}for x, y in val_loader:\n"
        f"{I8}    x, y = x.to(device), y.to(device)\n"
        f"{I8}    logits = model(x)  # expect: LC302\n"
        f"{I8}    val_loss += criterion(logits, y).item()\n"
        f"{I8}    correct += (logits.argmax(dim=1) == y).sum().item()\n",
    )]),
    "LC401": ("safe", "Use `loss.item()`", [(
        "loss_history.append(loss)  # expect: LC401", "loss_history.append(loss.item())  # expect: LC401",
    )]),
    "LC601": ("safe", "Call `scaler.unscale_(optimizer)` before `clip_grad_norm_()`", [(
        f"{I8}scaler.scale(loss).backward()\n",
        f"{I8}scaler.scale(loss).backward()\n{I8}scaler.unscale_(optimizer)\n",
    )]),
    "LC602": ("safe", "Use `scaler.step(optimizer)` and `scaler.update()`", [(
        f"{I8}optimizer.step()  # expect: LC602\n",
        f"{I8}scaler.step(optimizer)  # expect: LC602\n{I8}scaler.update()\n",
    )]),
    "LC603": ("safe", "Use `scaler.scale(loss).backward()`", [(
        f"{I8}loss.backward()  # expect: LC603\n", f"{I8}scaler.scale(loss).backward()  # expect: LC603\n",
    )]),
    "LC604": ("safe", "Call `scaler.update()` after `scaler.step(optimizer)`", [(
        f"{I8}scaler.step(optimizer)  # expect: LC604\n{I8}train_loss += loss.item()\n    scaler.update()\n",
        f"{I8}scaler.step(optimizer)  # expect: LC604\n{I8}scaler.update()\n{I8}train_loss += loss.item()\n",
    )]),
    "LC504": ("unsafe", "Use `nn.ModuleList`", [(
        "self.blocks = [nn.Linear(hidden, hidden) for _ in range(depth)]",
        "self.blocks = nn.ModuleList([nn.Linear(hidden, hidden) for _ in range(depth)])",
    )]),
    "LC505": ("safe", "Assign the result: `x = x.to(...)`", [(
        f"{I8}x.to(device=device, dtype=torch.float64)  # expect: LC505\n",
        f"{I8}x = x.to(device=device, dtype=torch.float64)  # expect: LC505\n",
    )]),
    "LC701": ("safe", "Pass `logits` instead of `probs`", [(
        "loss = criterion(probs, y)  # expect: LC701", "loss = criterion(logits, y)  # expect: LC701",
    )]),
    "LC702": ("safe", "Use `BCEWithLogitsLoss` for `criterion`", [(
        "criterion = nn.BCELoss()\n", "criterion = nn.BCEWithLogitsLoss()\n",
    )]),
}

# Variants: code -> fixture -> applicability of its fix (None: declined, and why)
VARIANTS = {
    "LC101_bad_alias.py": "safe",
    "LC101_bad_clip_value.py": "safe",
    "LC102_bad_alias.py": "safe",
    "LC102_bad_value.py": "safe",
    "LC102_bad_helper.py": None,  # the clip is inside a helper called after the step
    "LC103_bad_model_zero_grad.py": "safe",
    "LC103_bad_accum_wiped.py": "unsafe",  # moved into the gradient-accumulation ``if``
    "LC301_bad_eval_every_n_steps.py": "unsafe",
    "LC301_bad_evaluate_helper.py": "unsafe",
    "LC301_bad_trainer_class.py": "unsafe",
    "LC302_bad_evaluate_helper.py": "safe",
    "LC401_bad_history_dict.py": "safe",
    "LC401_bad_running_sum.py": "safe",
    "LC603_bad_no_scale.py": "safe",
    "LC504_bad_dict_heads.py": "unsafe",
    "LC702_bad_squeeze.py": "safe",
}


def read(name: str) -> str:
    return (FIXTURES / name).read_text(encoding="utf-8")


def expected_text(code: str) -> str:
    text = read(f"{code}_bad.py")
    for old, new in EXPECTED[code][2]:
        assert text.count(old) == 1, old
        text = text.replace(old, new)
    return text


def fix_file(text: str, name: str, **kw) -> tuple[str, list[Finding]]:
    return apply_fixes(text, check_source(text, name), **kw)


# ------------------------------------------------------------------------------ catalog


def test_fixable_lists_every_rule():
    assert set(FIXABLE) == set(INFOS)
    assert {c for c, a in FIXABLE.items() if a} - {"LC002"} == set(FIXERS) == set(EXPECTED)  # LC002: workspace/noqa.py
    assert set(FIXABLE.values()) == {"safe", "unsafe", None}
    assert FIXABLE["LC401"] == "safe" and FIXABLE["LC301"] == "unsafe" and FIXABLE["LC203"] is None


# ------------------------------------------------------------------------------ per rule


@pytest.mark.parametrize("code", sorted(EXPECTED))
def test_fix_of_bad_fixture(code):
    name = f"{code}_bad.py"
    text = read(name)
    [finding] = attach_fixes(text, check_source(text, name))
    applicability, message, _ = EXPECTED[code]
    assert (finding.code, finding.fix.applicability, finding.fix.message) == (code, applicability, message)
    assert finding.fix.apply(text) == expected_text(code)

    new, fixed = fix_file(text, name, unsafe=True)
    assert new == expected_text(code)
    assert [f.code for f in fixed] == [code] and fixed[0].fix == finding.fix
    assert check_source(new, name) == []
    # idempotent: nothing left to fix, the text stays as it is
    assert fix_file(new, name, unsafe=True) == (new, [])


@pytest.mark.parametrize("name", sorted(VARIANTS))
def test_fix_of_variant(name):
    text = read(name)
    findings = attach_fixes(text, check_source(text, name))
    code = name[:5]
    assert [f.code for f in findings] == [code]
    fix = findings[0].fix
    assert (fix.applicability if fix else None) == VARIANTS[name]
    new, fixed = fix_file(text, name, unsafe=True)
    if fix is None:
        assert (new, fixed) == (text, [])
    else:
        assert [f.code for f in check_source(new, name)] == []
        assert [f.code for f in fixed] == [code]


@pytest.mark.parametrize("name", ["LC203_bad.py", "LC104_bad.py", "LC501_bad.py", "LC605_bad.py"])
def test_rules_without_fix(name):
    text = read(name)
    [finding] = check_source(text, name)
    assert FIXABLE[finding.code] is None
    assert compute_fix(None, text, finding) is None
    assert fix_file(text, name, unsafe=True) == (text, [])


def test_exact_edits_and_json():
    text = read("LC401_bad.py")
    [finding] = attach_fixes(text, check_source(text, "LC401_bad.py"))
    assert finding.fix == Fix("safe", "Use `loss.item()`", (Edit(".item()", 51, 33, 51, 33),))
    assert finding.fix.to_json() == {
        "applicability": "safe",
        "message": "Use `loss.item()`",
        "edits": [{"content": ".item()", "location": {"row": 51, "column": 33},
                   "end_location": {"row": 51, "column": 33}}],
    }
    text = read("LC601_bad.py")
    [finding] = attach_fixes(text, check_source(text, "LC601_bad.py"))
    assert finding.fix.edits == (Edit(f"{I8}scaler.unscale_(optimizer)\n", 53, 1, 53, 1),)


def test_safe_only_by_default():
    text = read("LC301_bad.py")
    assert fix_file(text, "LC301_bad.py") == (text, [])
    new, fixed = fix_file(text, "LC301_bad.py", unsafe=True)
    assert new == expected_text("LC301") and [f.code for f in fixed] == ["LC301"]


ALL_FIXTURES = sorted(FIXTURES.rglob("*.py"))


def test_every_fixture_fixes_to_a_fixpoint():
    """On every fixture (bad, good, valid, seeds): the fixed text parses, has no more findings
    than before, keeps every line a fix did not touch, and fixing it again changes nothing."""
    import libcst as cst

    for path in ALL_FIXTURES:
        text = path.read_text(encoding="utf-8")
        before = check_source(text, path.name)
        new, fixed = apply_fixes(text, before, unsafe=True)
        if not fixed:
            assert new == text, path
            continue
        cst.parse_module(new)
        after = check_source(new, path.name)
        # a fix may settle another finding too (torch.no_grad() around a forward-only loop
        # also stops its totals from keeping graphs: LC302 and LC401), never add one
        assert len(after) + len(fixed) <= len(before), path
        assert apply_fixes(new, after, unsafe=True) == (new, []), path
        comments = [line.split("#", 1)[1] for line in text.splitlines() if "#" in line]
        assert all(c in new for c in comments), path


# ------------------------------------------------------------------------------ composition


AMP = textwrap.dedent("""\
    import torch
    from torch import nn

    model = nn.Sequential(nn.Linear(4, 2), nn.Dropout(0.1))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    scaler = torch.amp.GradScaler("cpu")
    losses = []
    for epoch in range(2):
        for step in range(10):
            x = torch.randn(8, 4)
            optimizer.zero_grad()
            with torch.autocast("cpu", dtype=torch.float16):
                loss = model(x).pow(2).mean()
            # clip the gradients
            nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            scaler.scale(loss).backward()
            scaler.step(optimizer)
            scaler.update()
            losses.append(loss)
        model.eval()
        for i in range(3):
            out = model(torch.randn(2, 4))
    print(sum(losses) / len(losses))
""")

AMP_FIXED = textwrap.dedent("""\
    import torch
    from torch import nn

    model = nn.Sequential(nn.Linear(4, 2), nn.Dropout(0.1))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    scaler = torch.amp.GradScaler("cpu")
    losses = []
    for epoch in range(2):
        model.train()
        for step in range(10):
            x = torch.randn(8, 4)
            optimizer.zero_grad()
            with torch.autocast("cpu", dtype=torch.float16):
                loss = model(x).pow(2).mean()
            scaler.scale(loss).backward()
            scaler.unscale_(optimizer)
            # clip the gradients
            nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            scaler.step(optimizer)
            scaler.update()
            losses.append(loss.item())
        model.eval()
        with torch.no_grad():
            for i in range(3):
                out = model(torch.randn(2, 4))
    print(sum(losses) / len(losses))
""")


def test_fixes_compose_to_a_fixpoint():
    findings = check_source(AMP, "amp.py")
    assert [f.code for f in findings] == ["LC101", "LC401", "LC301", "LC302"]
    new, fixed = apply_fixes(AMP, findings, unsafe=True)
    # moving the clip after the scaled backward needs scaler.unscale_(): LC601 is fixed with it,
    # in the round after the one that moved the clip (the others are fixed with the clip)
    assert [f.code for f in fixed] == ["LC101", "LC401", "LC301", "LC302", "LC601"]
    assert new == AMP_FIXED
    assert check_source(new, "amp.py") == []
    assert apply_fixes(new, check_source(new, "amp.py"), unsafe=True) == (new, [])


def test_select_limits_what_is_fixed():
    new, fixed = apply_fixes(AMP, check_source(AMP, "amp.py"), select={"LC401"})
    assert [f.code for f in fixed] == ["LC401"]
    assert new == AMP.replace("losses.append(loss)", "losses.append(loss.item())")


TRADE = textwrap.dedent("""\
    import torch
    from torch import nn


    def apply_step(s, opt):
        s.step(opt)
        s.update()


    model = nn.Linear(4, 2)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    scaler = torch.amp.GradScaler("cpu")
    for step in range(10):
        x = torch.randn(8, 4)
        optimizer.zero_grad()
        with torch.autocast("cpu", dtype=torch.float16):
            loss = model(x).pow(2).mean()
        nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        scaler.scale(loss).backward()
        optimizer.step()
""")


def test_fix_that_trades_a_bug_for_an_unfixable_one_is_dropped():
    findings = attach_fixes(TRADE, check_source(TRADE, "t.py"))
    assert [(f.code, f.fix.applicability) for f in findings] == [("LC101", "safe"), ("LC602", "safe")]
    # Moving the clip after the scaled backward brings LC601, whose fix needs the optimizer of a
    # scaler.step() after the clip: there is none until LC602 is fixed, which is not selected.
    assert apply_fixes(TRADE, findings, select={"LC101"}) == (TRADE, [])
    # With LC602 fixed first, the clip moves and gets its scaler.unscale_().
    new, fixed = apply_fixes(TRADE, findings)
    assert [f.code for f in fixed] == ["LC602", "LC101", "LC601"]
    assert new == TRADE.replace(
        "    nn.utils.clip_grad_norm_(model.parameters(), 1.0)\n"
        "    scaler.scale(loss).backward()\n"
        "    optimizer.step()\n",
        "    scaler.scale(loss).backward()\n"
        "    scaler.unscale_(optimizer)\n"
        "    nn.utils.clip_grad_norm_(model.parameters(), 1.0)\n"
        "    scaler.step(optimizer)\n"
        "    scaler.update()\n",
    )
    assert check_source(new, "t.py") == []


# ------------------------------------------------------------------------------ unsafe LC401


def test_a_fix_the_safe_run_applies_is_not_verified_again_with_the_unsafe_fixes(monkeypatch):
    """attach_fixes checks the fixed text once with the safe fixes, and again with the unsafe
    ones only for the findings the first run left (a check of the whole file each)."""
    import loopcheck.fixes.apply as fix_apply

    runs = []
    real = fix_apply.apply_fixes

    def counted(source, findings, unsafe=False, **kwargs):
        runs.append(unsafe)
        return real(source, findings, unsafe, **kwargs)

    monkeypatch.setattr(fix_apply, "apply_fixes", counted)
    text = (FIXTURES / "LC101_bad.py").read_text(encoding="utf-8")
    findings = attach_fixes(text, check_source(text, "LC101_bad.py"))
    assert [(f.code, f.fix.applicability) for f in findings] == [("LC101", "safe")]
    assert runs == [False]


def test_loss_item_is_unsafe_when_the_total_is_used_as_a_tensor():
    src = textwrap.dedent("""\
        import torch
        from torch import nn

        model = nn.Linear(4, 2)
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        total = 0.0
        for step in range(10):
            optimizer.zero_grad()
            loss = model(torch.randn(8, 4)).pow(2).mean()
            loss.backward()
            optimizer.step()
            total += loss
        print(total.item())
    """)
    [finding] = attach_fixes(src, check_source(src, "t.py"))
    assert (finding.code, finding.fix.applicability) == ("LC401", "unsafe")
    assert apply_fixes(src, [finding]) == (src, [])
    new, _ = apply_fixes(src, [finding], unsafe=True)
    assert "    total += loss.item()\n" in new


# ------------------------------------------------------------------------------ noqa


def test_noqa_on_the_finding_row():
    text = read("LC401_bad.py")
    for comment in ("# noqa: LC401", "# noqa", "# NOQA:LC101,LC401"):
        src = text.replace("# expect: LC401", comment)
        assert fix_file(src, "x.py") == (src, []), comment
    for comment in ("# noqa: LC101", "# noqa: LC4"):  # other codes; codes are matched exactly
        src = text.replace("# expect: LC401", comment)
        new, fixed = fix_file(src, "x.py")
        assert [f.code for f in fixed] == ["LC401"] and f"append(loss.item())  {comment}" in new
    src = "# loopcheck: skip-file\n" + text
    assert apply_fixes(src, check_source(src, "x.py")) == (src, [])


def test_noqa_codes_by_row_argument():
    text = read("LC401_bad.py")
    findings = check_source(text, "x.py")
    assert apply_fixes(text, findings, noqa_codes_by_row={51: {"LC401"}}) == (text, [])
    assert apply_fixes(text, findings, noqa_codes_by_row={51: None}) == (text, [])
    assert apply_fixes(text, findings, noqa_codes_by_row={51: {"LC101"}})[0] == expected_text("LC401")


def test_noqa_on_a_line_the_fix_would_change():
    # LC604's fix moves the per-epoch scaler.update() into the loop: that line is protected
    text = read("LC604_bad.py").replace("    scaler.update()\n", "    scaler.update()  # noqa: LC604\n")
    assert fix_file(text, "x.py") == (text, [])


def test_noqa_parser():
    src = textwrap.dedent("""\
        a = 1  # noqa
        b = 2  # noqa: LC401
        c = 3  # NOQA:LC401,LC101 reason
        d = "# noqa"
        e = 4  # noqa: this is fine
    """)
    assert noqa_codes_by_row(src) == {
        1: None, 2: frozenset({"LC401"}), 3: frozenset({"LC401", "LC101"}), 5: None,
    }


# ------------------------------------------------------------------------------ text helpers


def test_diff():
    assert diff("a\n", "a\n", "t.py") == ""
    assert diff("a\nb\n", "a\nc\n", "t.py") == "--- t.py\n+++ t.py\n@@ -1,2 +1,2 @@\n a\n-b\n+c\n"
    assert diff("a", "b", "t.py") == (
        "--- t.py\n+++ t.py\n@@ -1 +1 @@\n-a\n\\ No newline at end of file\n+b\n\\ No newline at end of file\n"
    )


def test_apply_edits():
    assert apply_edits("abc\ndef\n", [Edit("X", 1, 2, 2, 2), Edit("!", 3, 1, 3, 1)]) == "aXef\n!"
    with pytest.raises(ValueError):
        apply_edits("abc\n", [Edit("", 1, 1, 1, 3), Edit("", 1, 2, 1, 4)])


def test_crlf_and_tabs_are_kept():
    src = (
        "import torch\r\nfrom torch import nn\r\n\r\nmodel = nn.Linear(4, 2)\r\n"
        "optimizer = torch.optim.SGD(model.parameters(), lr=0.1)\r\nfor step in range(10):\r\n"
        "\tx = torch.randn(8, 4)\r\n\toptimizer.zero_grad()\r\n\tloss = model(x).pow(2).mean()\r\n"
        "\tloss.backward()\r\n\toptimizer.step()\r\n\tnn.utils.clip_grad_norm_(model.parameters(), 1.0)\r\n"
    )
    new, fixed = fix_file(src, "t.py")
    assert [f.code for f in fixed] == ["LC102"]
    assert new == src.replace(
        "\toptimizer.step()\r\n\tnn.utils.clip_grad_norm_(model.parameters(), 1.0)\r\n",
        "\tnn.utils.clip_grad_norm_(model.parameters(), 1.0)\r\n\toptimizer.step()\r\n",
    )


# ------------------------------------------------------------------------------ runtime


RUNTIME_CODES = sorted(code for code, applicability in FIXABLE.items() if applicability and code != "LC002")


def test_fixed_scripts_run_clean(tmp_path):
    """The fixed bad fixtures run to the end under the probes, and ``loopcheck verify``'s
    measurement no longer shows the rule's symptom."""
    pytest.importorskip("torch")
    from loopcheck.verify import runner, symptoms

    scripts = {}
    for code in RUNTIME_CODES:
        new, fixed = fix_file(read(f"{code}_bad.py"), f"{code}_bad.py", unsafe=FIXABLE[code] == "unsafe")
        assert [f.code for f in fixed] == [code]
        path = tmp_path / f"{code}_fixed.py"
        path.write_text(new, encoding="utf-8")
        scripts[code] = str(path)
    records = runner.run_scripts(list(scripts.values()), jobs=len(scripts))
    for code, path in scripts.items():
        m = symptoms.measure(code, records[path])
        assert m["error"] is None, (code, m)
        assert m["shown"] is False, (code, m["detail"])


# ------------------------------------------------------------------------------ cost of fixes


def _many_discarded_conversions(n: int) -> str:
    lines = [
        "import torch", "import torch.nn as nn", "from torch.utils.data import DataLoader, TensorDataset", "",
        'device = "cpu"', "model = nn.Linear(4, 2).double()", "criterion = nn.MSELoss()",
        "optimizer = torch.optim.SGD(model.parameters(), lr=0.1)",
        "loader = DataLoader(TensorDataset(torch.randn(8, 4), torch.randn(8, 2)), batch_size=4)", "",
        "for x, y in loader:",
        *["    x.to(device=device, dtype=torch.float64)"] * n,
        "    optimizer.zero_grad()", "    loss = criterion(model(x), y)", "    loss.backward()", "    optimizer.step()", "",
    ]
    return "\n".join(lines)


def test_fixes_of_many_findings_check_the_file_a_few_times(monkeypatch):
    """Offering and applying the fixes of 45 independent findings checks the file again a
    constant number of times (rounds of fixes), not once per finding (issue 36, F1: 80
    findings of a 643-line file took 43 s)."""
    import loopcheck.analysis as analysis
    import loopcheck.fixes.apply as fix_apply
    from loopcheck.check import lint_text

    text = _many_discarded_conversions(45)
    calls = []
    real = analysis.check_source

    def counted(source, filename, *args, **kwargs):
        calls.append(filename)
        return real(source, filename, *args, **kwargs)

    monkeypatch.setattr(analysis, "check_source", counted)
    monkeypatch.setattr(fix_apply, "_CHECKS", type(fix_apply._CHECKS)())
    findings, _source = lint_text(text, "many.py")
    assert [f.code for f in findings] == ["LC505"] * 45
    assert all(f.fix is not None and f.fix.is_safe for f in findings)
    new, fixed = apply_fixes(text, findings, filename="many.py")
    assert len(fixed) == 45 and new.count("x = x.to(device=device, dtype=torch.float64)") == 45
    assert len(calls) <= 4, len(calls)


def test_a_round_that_is_not_kept_is_bisected(monkeypatch):
    """A fix whose result is rejected (here: every fix of row 14) is found by bisection; the
    other fixes are still applied, in a few checks."""
    import loopcheck.fixes.apply as fix_apply

    text = _many_discarded_conversions(40)
    findings = check_source(text, "many.py")
    real = fix_apply._accept

    def no_row_14(batch, *args):
        return all(f.row != 14 for f, _fix, _key in batch) and real(batch, *args)

    calls = []
    real_check = fix_apply._check

    def counted(source, filename):
        calls.append(1)
        return real_check(source, filename)

    monkeypatch.setattr(fix_apply, "_accept", no_row_14)
    monkeypatch.setattr(fix_apply, "_check", counted)
    new, fixed = apply_fixes(text, findings)
    assert len(fixed) == 39
    assert new.splitlines()[13] == "    x.to(device=device, dtype=torch.float64)"
    assert new.count("x = x.to(") == 39
    assert len(calls) <= 16, len(calls)
