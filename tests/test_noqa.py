"""Suppression comments: ``# noqa``, ``# noqa: CODE[, CODE]`` and ``# loopcheck: skip-file``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from loopcheck.cli import main
from loopcheck.noqa import parse_noqa, scan
from test_cli import BAD, MESSAGE

CLIP = "    nn.utils.clip_grad_norm_(model.parameters(), 1.0)\n"


def with_comment(comment: str) -> str:
    return BAD.replace(CLIP, CLIP.rstrip("\n") + "  " + comment + "\n")


def check(source: str, *args: str):
    Path("train.py").write_text(source)
    return CliRunner().invoke(main, ["train.py", *args])


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
    result = check(with_comment(comment))
    assert (result.exit_code, result.output) == (0, "All checks passed!\n")


@pytest.mark.parametrize("comment", ["# noqa: LC301", "# noqa: E501", "# noqa: LC10", "# noqanything", "# no qa"])
def test_noqa_for_other_codes_does_not_suppress(comment):
    result = check(with_comment(comment))
    assert result.exit_code == 1
    assert result.output == f"train.py:9:5: LC101 {MESSAGE}\nFound 1 error.\n[*] 1 fixable with the `--fix` option.\n"


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


def test_parse_noqa():
    assert parse_noqa("# just a comment") is False
    assert parse_noqa("# noqa") is None
    assert parse_noqa("# noqa:LC101,LC301") == {"LC101", "LC301"}
    assert parse_noqa("# noqa: BLE001 - the exception is the measurement") == {"BLE001"}


def test_scan():
    d = scan("x = 1  # noqa: LC101\ny = 2\nz = 3  # noqa\n# loopcheck: skip-file\n")
    assert d.noqa == {1: {"LC101"}, 3: None}
    assert d.skip_file
