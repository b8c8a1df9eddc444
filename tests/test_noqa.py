"""Suppression comments: ``# noqa``, ``# noqa: CODE[, CODE]`` and ``# loopcheck: skip-file``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from loopcheck.cli.commands import main
from loopcheck.workspace.noqa import parse_noqa, scan
from test_cli import BAD, MESSAGE

CLIP = "    nn.utils.clip_grad_norm_(model.parameters(), 1.0)\n"


def with_comment(comment: str) -> str:
    return BAD.replace(CLIP, CLIP.rstrip("\n") + "  " + comment + "\n")


def check(source: str, *args: str):
    """Write ``source`` to train.py and check it with ``--preview``: LC101, the rule BAD breaks,
    is in preview (tests/test_preview.py tests the default selection)."""
    Path("train.py").write_text(source)
    return CliRunner().invoke(main, ["--preview", "train.py", *args])


@pytest.fixture(autouse=True)
def in_tmp(tmp_path: Path, monkeypatch) -> Path:
    monkeypatch.chdir(tmp_path)
    return tmp_path


@pytest.mark.parametrize(
    "comment",
    ["# noqa", "# noqa: LC101", "#noqa:LC101", "# NOQA: lc101", "# noqa: E501, LC101", "# noqa: LC301 LC101",
     "# type: ignore  # noqa: LC101", "# noqa: LC101 clipping is intended here"],
)
def test_noqa_suppresses(comment):
    result = check(with_comment(comment), "--ignore", "LC002")  # LC002: see test_unused_noqa_*
    assert (result.exit_code, result.output) == (0, "All checks passed!\n")


@pytest.mark.parametrize("comment", ["# noqa: LC301", "# noqa: E501", "# noqa: LC10", "# noqanything", "# no qa"])
def test_noqa_for_other_codes_does_not_suppress(comment):
    result = check(with_comment(comment), "--ignore", "LC002")
    assert result.exit_code == 1
    assert result.output == f"train.py:9:5: LC101 [*] {MESSAGE}\nFound 1 error.\n[*] 1 fixable with `--fix`.\n"


def test_noqa_must_be_on_the_reported_line():
    source = BAD.replace("    loss.backward()\n", "    loss.backward()  # noqa: LC101\n")
    assert check(source).exit_code == 1


def test_noqa_inside_a_string_is_not_a_comment():
    source = BAD.replace(CLIP, CLIP.rstrip("\n").replace("1.0)", '1.0, "# noqa")') + "\n")
    result = check(source)
    assert result.exit_code == 1


def test_noqa_applies_in_json_too():
    result = check(with_comment("# noqa: LC101"), "--output-format", "json")
    assert (result.exit_code, json.loads(result.output)) == (0, [])


def test_skip_file():
    result = check("# loopcheck: skip-file\n" + BAD)
    assert (result.exit_code, result.output) == (0, "All checks passed!\n")
    assert check(BAD + "x = 1  # LoopCheck:skip-file\n").exit_code == 0


def test_skip_file_in_a_string_does_not_skip():
    assert check(BAD + 'note = "# loopcheck: skip-file"\n').exit_code == 1


def test_noqa_on_a_syntax_error_line():
    result = check("import torch\nloss.backward(\ndef f(:  # noqa: LC001\n")
    assert (result.exit_code, result.output) == (0, "All checks passed!\n")


def test_a_file_without_suppression_text_is_not_tokenized(monkeypatch):
    import loopcheck.workspace.noqa as noqa
    from loopcheck.findings import Finding

    finding = Finding("LC101", "m", "train.py", 3, 1, 3, 5, [], 3)
    plain = "import torch\n# a comment\nx = 1  # another\n"
    assert not noqa.may_suppress(plain)
    assert noqa.may_suppress(plain.replace("another", "NOQA:LC101"))
    assert noqa.may_suppress("# loopcheck: skip-file\n") and noqa.may_suppress("#loopcheck:noqa\n")
    monkeypatch.setattr(noqa, "scan", lambda source: pytest.fail("tokenized"))
    assert noqa.filter_findings([finding], plain) == [finding]


def test_a_file_whose_noqa_comments_name_no_loopcheck_code_is_not_tokenized(monkeypatch):
    import loopcheck.workspace.noqa as noqa

    others = "import torch\nx = 1  # noqa: E501\ny = 2  # noqa\ns = '# noqa: F401'\n"
    assert not noqa._may_name_our_codes(others)
    assert noqa._may_name_our_codes(others.replace("E501", "E501, lc301"))  # as the codes are read
    assert noqa._may_name_our_codes(others.replace("# noqa\n", "#NOQA:LC101 W291\n"))
    assert noqa._may_name_our_codes("s = '# noqa: LC101'\n")  # a string: tokenized, then not a comment
    monkeypatch.setattr(noqa, "_noqa_comments", lambda source: pytest.fail("tokenized"))
    assert noqa.unused_noqa([], others, "train.py") == []


def test_parse_noqa():
    assert parse_noqa("# just a comment") is False
    assert parse_noqa("# noqa") is None
    assert parse_noqa("# noqa:LC101,LC301") == {"LC101", "LC301"}
    assert parse_noqa("# noqa: BLE001 - the exception is the measurement") == {"BLE001"}


def test_scan():
    d = scan("x = 1  # noqa: LC101\ny = 2\nz = 3  # noqa\n# loopcheck: skip-file\n")
    assert d.noqa == {1: {"LC101"}, 3: None}
    assert d.skip_file


# ------------------------------------------------------------------ whole-file noqa


def test_file_level_noqa_with_codes_suppresses_them_in_the_whole_file():
    assert check("# loopcheck: noqa: LC101\n" + BAD).output == "All checks passed!\n"
    assert check(BAD + "# Loopcheck: NOQA: lc301, LC101\n").exit_code == 0
    result = check("# loopcheck: noqa: LC301\n" + BAD)
    assert result.exit_code == 1 and result.output.startswith("train.py:10:5: LC101 ")


def test_bare_file_level_noqa_skips_the_file():
    assert check("# loopcheck: noqa\n" + BAD + "x = 1  # noqa: LC999\n").output == "All checks passed!\n"
    assert check('s = "# loopcheck: noqa"\n' + BAD).exit_code == 1  # in a string: not a comment


# ------------------------------------------------------------------ LC002 unused-noqa


def test_unused_noqa_codes_are_reported_with_their_kind():
    line = "    loss.backward()\n"
    source = with_comment("# noqa: LC101, LC301").replace(line, line.rstrip("\n") + "  # noqa: E501, LC999\n")
    result = check(source, "--output-format", "json")
    assert result.exit_code == 1
    found = json.loads(result.output)
    assert [(f["code"], f["location"], f["end_location"], f["message"], f["severity"]) for f in found] == [
        ("LC002", {"row": 9, "column": 56}, {"row": 9, "column": 76},
         "Unused `noqa` directive (unused: `LC301`)", "warning"),
        ("LC002", {"row": 11, "column": 22}, {"row": 11, "column": 41},
         "Unused `noqa` directive (unknown: `LC999`)", "warning"),
    ]
    assert found[0]["fix"] == {"applicability": "safe", "message": "Remove unused `noqa` directive", "edits": [
        {"content": "# noqa: LC101", "location": {"row": 9, "column": 56}, "end_location": {"row": 9, "column": 76}}]}
    assert found[1]["fix"]["edits"][0]["content"] == "# noqa: E501"


def test_unused_noqa_non_enabled_codes_and_its_own_suppression():
    result = check(with_comment("# noqa: LC101"), "--select", "LC3,LC002")
    assert result.output.startswith("train.py:9:56: LC002 [*] Unused `noqa` directive (non-enabled: `LC101`)\n")
    assert check(with_comment("# noqa: LC101, LC301, LC002")).output == "All checks passed!\n"
    assert check(with_comment("# noqa: LC301"), "--ignore", "LC002", "--select", "LC3").exit_code == 0


def test_fix_removes_unused_noqa_codes_and_comments():
    source = with_comment("# noqa: LC101").replace("optimizer.step()\n", "optimizer.step()  # noqa: LC301\n")
    result = check(source, "--fix")
    assert (result.exit_code, result.output) == (0, "Found 1 warning (1 fixed, 0 remaining).\n")
    assert Path("train.py").read_text() == with_comment("# noqa: LC101")


def test_add_noqa_then_nothing_is_reported_and_nothing_is_unused(tmp_path):
    line = "    nn.utils.clip_grad_norm_(model.parameters(), 1.0)"
    source = BAD.replace(line, line + "  # noqa: E501")
    Path("train.py").write_text(source)
    result = CliRunner().invoke(main, ["--preview", "--add-noqa", "train.py"])
    assert (result.exit_code, result.output) == (0, "Added 1 noqa directive.\n")
    assert Path("train.py").read_text() == BAD.replace(line, line + "  # noqa: E501, LC101")
    assert check(Path("train.py").read_text()).output == "All checks passed!\n"
    result = CliRunner().invoke(main, ["--preview", "--add-noqa", "train.py"])
    assert result.output == "Added 0 noqa directives.\n"


def test_flake8_noqa_skips_the_file_as_flake8_does():
    for comment in ("# flake8: noqa", "#flake8:NOQA", "x = 1  # flake8: noqa"):
        result = check(comment + "\n" + BAD)
        assert (result.exit_code, result.output) == (0, "All checks passed!\n"), comment
    # with codes, as ruff reads it: those codes in the whole file
    assert check("# flake8: noqa: LC101\n" + BAD).output == "All checks passed!\n"
    assert check("# flake8: noqa: LC301\n" + BAD).exit_code == 1
    assert check('note = "# flake8: noqa"\n' + BAD).exit_code == 1  # in a string: no comment
    assert check("# ruff: noqa\n" + BAD).exit_code == 1  # ruff's own file directive is ruff's


def test_flake8_noqa_in_the_flake8_plugin():
    from loopcheck.cli.flake8_plugin import Plugin

    lines = ("# flake8: noqa\n" + BAD).splitlines(keepends=True)
    assert list(Plugin(None, lines, "train.py").run()) == []
