"""Output formats (full, concise, json-lines, sarif, github), statistics, exit and quiet
options, and reading standard input."""

from __future__ import annotations

import json
import re
from pathlib import Path

import jsonschema
import pytest
from click.testing import CliRunner

from loopcheck.cli import lint_text, main
from loopcheck.reporters import Context, write_full
from loopcheck.rules import INFOS
from test_cli import BAD, FIX_EDITS, FIX_MESSAGE, GOOD, MESSAGE

# BAD, and the model left in eval mode for a forward pass with autograd on: LC101, LC301, LC302.
MODES = BAD.replace("    optimizer.step()\n", "    optimizer.step()\n    model.eval()\n    model(x)\n")
SCHEMA = Path(__file__).resolve().parent / "data" / "sarif-schema-2.1.0.json"

FULL = f"""\
bad.py:9:5: LC101 {MESSAGE}
   |
 9 |     nn.utils.clip_grad_norm_(model.parameters(), 1.0)
   |     ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^ LC101
10 |     loss = model(x).pow(2).mean()
11 |     loss.backward()
   |     --------------- backward() fills .grad only here
   |

Found 1 error.
[*] 1 fixable with the `--fix` option.
"""


def run(*args: str, input: str | None = None):
    return CliRunner().invoke(main, list(args), input=input)


@pytest.fixture
def project(tmp_path: Path, monkeypatch) -> Path:
    (tmp_path / "bad.py").write_text(BAD)
    (tmp_path / "good.py").write_text(GOOD)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_full_shows_the_span_and_the_related_lines(project):
    result = run("--output-format", "full", "bad.py", "good.py")
    assert result.exit_code == 1
    assert result.output == FULL


def test_full_separates_distant_lines_and_expands_tabs(project):
    far = BAD.replace("    loss = model(x).pow(2).mean()\n", "    loss = model(x).pow(2).mean()\n" + "    pass\n" * 5)
    (project / "far.py").write_text(far.replace("    ", "\t"))
    result = run("--output-format", "full", "far.py")
    assert result.output.splitlines()[1:8] == [
        "   |",
        " 9 |         nn.utils.clip_grad_norm_(model.parameters(), 1.0)",
        "   |         ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^ LC101",
        "...",
        "16 |         loss.backward()",
        "   |         --------------- backward() fills .grad only here",
        "   |",
    ]


def test_colour_only_when_asked_and_same_text_without_escapes(project):
    assert "\x1b[" not in run("--output-format", "full", "bad.py").output
    findings, source = lint_text(BAD, "bad.py")

    class Out(list):
        write = list.append

    out = Out()
    write_full(findings, out, Context({"bad.py": source}, color=True))
    coloured = "".join(out)
    assert "\x1b[31m\x1b[1mLC101\x1b[0m" in coloured  # the code in bold red
    assert re.sub(r"\x1b\[[0-9;]*m", "", coloured) == FULL


def test_no_color_flag_and_default_format_off_a_terminal(project):
    assert run("--no-color", "bad.py").output == f"bad.py:9:5: LC101 {MESSAGE}\nFound 1 error.\n[*] 1 fixable with the `--fix` option.\n"


def test_concise_and_its_text_alias(project):
    expected = f"bad.py:9:5: LC101 {MESSAGE}\nFound 1 error.\n[*] 1 fixable with the `--fix` option.\n"
    assert run("--output-format", "concise", "bad.py").output == expected
    assert run("--output-format", "text", "bad.py").output == expected


def test_json_lines(project):
    result = run("--output-format", "json-lines", "bad.py", "good.py")
    lines = result.output.splitlines()
    assert len(lines) == 1
    assert json.loads(lines[0]) == {
        "code": "LC101",
        "message": MESSAGE,
        "filename": "bad.py",
        "location": {"row": 9, "column": 5},
        "end_location": {"row": 9, "column": 54},
        "fix": {"applicability": "safe", "message": FIX_MESSAGE, "edits": FIX_EDITS},
        "url": INFOS["LC101"].url,
        "noqa_row": 9,
        "related": [{"row": 11, "column": 5, "message": "backward() fills .grad only here"}],
    }


def test_sarif_is_valid_sarif_2_1_0(project):
    (project / "modes.py").write_text(MODES)
    result = run("--output-format", "sarif", "bad.py", "modes.py")
    assert result.exit_code == 1
    log = json.loads(result.output)
    jsonschema.Draft4Validator(json.loads(SCHEMA.read_text())).validate(log)
    assert log["version"] == "2.1.0"
    (sarif_run,) = log["runs"]
    driver = sarif_run["tool"]["driver"]
    assert driver["name"] == "loopcheck"
    assert [r["id"] for r in driver["rules"]] == sorted(INFOS)
    assert driver["rules"][1] == {
        "id": "LC101",
        "name": "clip-before-backward",
        "shortDescription": {"text": INFOS["LC101"].summary},
        "helpUri": INFOS["LC101"].url,
        "defaultConfiguration": {"level": "error"},
        "properties": {"severity": "error"},
    }
    assert sarif_run["originalUriBaseIds"] == {"%SRCROOT%": {"uri": project.as_uri() + "/"}}
    first = sarif_run["results"][0]
    assert first == {
        "ruleId": "LC101",
        "level": "error",
        "message": {"text": MESSAGE},
        "locations": [
            {
                "physicalLocation": {
                    "artifactLocation": {"uri": "bad.py", "uriBaseId": "%SRCROOT%"},
                    "region": {"startLine": 9, "startColumn": 5, "endLine": 9, "endColumn": 54},
                }
            }
        ],
        "ruleIndex": 1,
        "relatedLocations": [
            {
                "id": 0,
                "physicalLocation": {
                    "artifactLocation": {"uri": "bad.py", "uriBaseId": "%SRCROOT%"},
                    "region": {"startLine": 11, "startColumn": 5},
                },
                "message": {"text": "backward() fills .grad only here"},
            }
        ],
    }
    levels = {(r["ruleId"], r["level"]) for r in sarif_run["results"]}
    assert ("LC302", "warning") in levels


def test_sarif_without_findings_is_valid(project):
    log = json.loads(run("--output-format", "sarif", "good.py").output)
    jsonschema.Draft4Validator(json.loads(SCHEMA.read_text())).validate(log)
    assert log["runs"][0]["results"] == []


def test_github_annotations(project):
    result = run("--output-format", "github", "bad.py", "good.py")
    assert result.exit_code == 1
    assert result.output == (
        "::error file=bad.py,line=9,col=5,endLine=9,endColumn=54,title=loopcheck (LC101)::"
        f"LC101 {MESSAGE}\n"
    )


def test_github_escapes_and_uses_warning_for_warning_rules(project):
    (project / "a,b%.py").write_text(MODES)
    lines = run("--output-format", "github", "--select", "LC302", "a,b%.py").output.splitlines()
    assert len(lines) == 1
    assert lines[0].startswith(
        "::warning file=a%2Cb%25.py,line=14,col=5,endLine=14,endColumn=13,title=loopcheck (LC302)::LC302 model() "
    )


def test_statistics(project):
    (project / "modes.py").write_text(MODES)
    result = run("--statistics", "bad.py", "modes.py")
    assert result.exit_code == 1
    assert result.output == (
        "2\tLC101\tclip-before-backward\n"
        "1\tLC301\teval-mode-not-reset\n"
        "1\tLC302\tvalidation-without-no-grad\n"
    )
    data = json.loads(run("--statistics", "--output-format", "json", "bad.py").output)
    assert data == [{"code": "LC101", "name": "clip-before-backward", "count": 1}]
    assert run("--statistics", "good.py").output == "All checks passed!\n"


def test_exit_zero_and_quiet(project):
    result = run("--exit-zero", "bad.py")
    assert result.exit_code == 0
    assert result.output == f"bad.py:9:5: LC101 {MESSAGE}\nFound 1 error.\n[*] 1 fixable with the `--fix` option.\n"
    result = run("--quiet", "bad.py")
    assert result.exit_code == 1
    assert result.output == f"bad.py:9:5: LC101 {MESSAGE}\n"
    result = run("-q", "good.py")
    assert (result.exit_code, result.output) == (0, "")


def test_exit_zero_keeps_exit_2_for_errors(project):
    (project / "nb.ipynb").write_text("{not json")
    assert run("--exit-zero", "nb.ipynb").exit_code == 2


def test_stdin_with_stdin_filename(project):
    result = run("-", "--stdin-filename", "train.py", input=BAD)
    assert result.exit_code == 1
    assert result.output == f"train.py:9:5: LC101 {MESSAGE}\nFound 1 error.\n[*] 1 fixable with the `--fix` option.\n"
    result = run("--stdin-filename", "train.py", input=BAD)  # no path: standard input too
    assert result.output == f"train.py:9:5: LC101 {MESSAGE}\nFound 1 error.\n[*] 1 fixable with the `--fix` option.\n"
    result = run("-", input=GOOD)
    assert (result.exit_code, result.output) == (0, "All checks passed!\n")


def test_stdin_full_format_shows_the_source(project):
    result = run("-", "--stdin-filename", "bad.py", "--output-format", "full", input=BAD)
    assert result.output == FULL


def test_stdin_cannot_be_mixed_with_paths(project):
    result = run("-", "bad.py", input=BAD)
    assert result.exit_code == 2
    assert "'-' (standard input) cannot be mixed with other paths" in result.output
