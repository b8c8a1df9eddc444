"""Output formats (full, concise, json-lines, sarif, github), statistics, exit and quiet
options, and reading standard input."""

from __future__ import annotations

import io
import json
import re
from pathlib import Path

import jsonschema
import pytest
from click.testing import CliRunner

from loopcheck.check import lint_text
from loopcheck.cli.commands import main
from loopcheck.cli.reporters import Context, to_json_obj, to_sarif, write_concise, write_full
from loopcheck.rules import INFOS
from test_cli import BAD, FIX_EDITS, FIX_MESSAGE, GOOD, MESSAGE, NOTE

# BAD, and the model left in eval mode for a forward pass with autograd on: LC101, LC301, LC302.
MODES = BAD.replace("    optimizer.step()\n", "    optimizer.step()\n    model.eval()\n    model(x)\n")
SCHEMA = Path(__file__).resolve().parent / "data" / "sarif-schema-2.1.0.json"
LC301_BAD = (Path(__file__).resolve().parent.parent / "fixtures" / "LC301_bad.py").read_text()

FULL = f"""\
LC101 [*] {MESSAGE}
  --> bad.py:9:5
   |
 9 |     nn.utils.clip_grad_norm_(model.parameters(), 1.0)
   |     ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^
10 |     loss = model(x).pow(2).mean()
11 |     loss.backward()
   |     --------------- backward() fills .grad only here
   |
help: {FIX_MESSAGE}
   |
 8 |     optimizer.zero_grad()
   -     nn.utils.clip_grad_norm_(model.parameters(), 1.0)
 9 |     loss = model(x).pow(2).mean()
10 |     loss.backward()
11 +     nn.utils.clip_grad_norm_(model.parameters(), 1.0)
12 |     optimizer.step()
   |
note: {NOTE}

Found 1 error.
[*] 1 fixable with `--fix`.
"""


def run(*args: str, input: str | None = None):
    """Run the check with ``--preview``: LC101, the rule the inputs here break, is in preview
    (tests/test_preview.py tests the default selection)."""
    return CliRunner().invoke(main, ["--preview", *args], input=input)


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
    assert result.output.splitlines()[1:9] == [
        "  --> far.py:9:2",
        "   |",
        " 9 |         nn.utils.clip_grad_norm_(model.parameters(), 1.0)",
        "   |         ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^",
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
    assert "\x1b[91m\x1b[1mLC101\x1b[0m [\x1b[96m\x1b[1m*\x1b[0m]" in coloured  # the code in bold red, [*] cyan
    assert re.sub(r"\x1b\[[0-9;]*m", "", coloured) == FULL


def test_no_color_flag_and_default_format_off_a_terminal(project):
    assert run("--no-color", "bad.py").output == f"bad.py:9:5: LC101 [*] {MESSAGE}\nFound 1 error.\n[*] 1 fixable with `--fix`.\n"


def test_concise_and_its_text_alias(project):
    expected = f"bad.py:9:5: LC101 [*] {MESSAGE}\nFound 1 error.\n[*] 1 fixable with `--fix`.\n"
    assert run("--output-format", "concise", "bad.py").output == expected
    assert run("--output-format", "text", "bad.py").output == expected


def test_json_lines(project):
    result = run("--output-format", "json-lines", "bad.py", "good.py")
    lines = result.output.splitlines()
    assert len(lines) == 1
    assert json.loads(lines[0]) == {
        "cell": None,
        "code": "LC101",
        "message": MESSAGE,
        "filename": str(project / "bad.py"),
        "location": {"row": 9, "column": 5},
        "end_location": {"row": 9, "column": 54},
        "fix": {"applicability": "safe", "message": FIX_MESSAGE, "edits": FIX_EDITS},
        "url": INFOS["LC101"].url,
        "name": "clip-before-backward",
        "severity": "error",
        "noqa_row": 9,
        "note": NOTE,
        "related": [{"cell": None, "column": 5, "filename": str(project / "bad.py"), "row": 11,
                     "message": "backward() fills .grad only here"}],
    }
    assert lines[0].startswith('{"cell": null, "code": "LC101", "end_location": {"column": 54, "row": 9}, ')


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
    assert driver["rules"][2] == {
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
                    "artifactLocation": {"uri": (project / "bad.py").as_uri()},
                    "region": {"startLine": 9, "startColumn": 5, "endLine": 9, "endColumn": 54},
                }
            }
        ],
        "ruleIndex": 2,
        "relatedLocations": [
            {
                "id": 0,
                "physicalLocation": {
                    "artifactLocation": {"uri": (project / "bad.py").as_uri()},
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
        f"::error title=loopcheck (LC101),file={project}/bad.py,line=9,col=5,endLine=9,endColumn=54::"
        f"bad.py:9:5: LC101 {MESSAGE}%0A  help: {FIX_MESSAGE}\n"
    )


def test_github_escapes_and_uses_warning_for_warning_rules(project):
    (project / "a,b%.py").write_text(MODES)
    lines = run("--output-format", "github", "--select", "LC302", "a,b%.py").output.splitlines()
    assert len(lines) == 1
    assert lines[0].startswith(
        f"::warning title=loopcheck (LC302),file={project}/a%2Cb%25.py,line=14,col=5,endLine=14,endColumn=13::a,b%25.py:14:5: "
        "LC302 model() "
    )


def test_statistics(project):
    (project / "modes.py").write_text(MODES)  # LC101 (safe fix), LC302 (a warning, unsafe fix)
    (project / "lc301.py").write_text(LC301_BAD)  # LC301 (unsafe fix)
    result = run("--statistics", "bad.py", "modes.py", "lc301.py")
    assert result.exit_code == 1
    assert result.output == (
        "2\tLC101\t[*] clip-before-backward\n"
        "1\tLC301\t[ ] eval-mode-not-reset\n"
        "1\tLC302\t[ ] validation-without-no-grad\n"
        "Found 3 errors, 1 warning.\n"
        "[*] 2 fixable with `--fix` (2 unsafe fixes available with `--fix --unsafe-fixes`).\n"
    )
    assert run("--statistics", "--unsafe-fixes", "modes.py", "lc301.py").output == (
        "1\tLC101\t[*] clip-before-backward\n"
        "1\tLC301\t[*] eval-mode-not-reset\n"
        "1\tLC302\t[*] validation-without-no-grad\n"
        "Found 2 errors, 1 warning.\n"
        "[*] 3 fixable with `--fix`.\n"
    )
    assert run("--statistics", "--select", "LC302", "modes.py").output == (  # no fixable column without a fix
        "1\tLC302\tvalidation-without-no-grad\n"
        "Found 1 warning.\n"
        "1 unsafe fix available with `--fix --unsafe-fixes`.\n"
    )
    data = json.loads(run("--statistics", "--output-format", "json", "bad.py", "modes.py", "lc301.py").output)
    assert data == [
        {"code": "LC101", "name": "clip-before-backward", "count": 2, "fixable": True, "fixable_count": 2},
        {"code": "LC301", "name": "eval-mode-not-reset", "count": 1, "fixable": False, "fixable_count": 0},
        {"code": "LC302", "name": "validation-without-no-grad", "count": 1, "fixable": False, "fixable_count": 0},
    ]
    assert run("--statistics", "good.py").output == ""  # as ruff: nothing to count, nothing printed


def test_exit_zero_and_quiet(project):
    result = run("--exit-zero", "bad.py")
    assert result.exit_code == 0
    assert result.output == f"bad.py:9:5: LC101 [*] {MESSAGE}\nFound 1 error.\n[*] 1 fixable with `--fix`.\n"
    result = run("--quiet", "bad.py")
    assert result.exit_code == 1
    assert result.output == f"bad.py:9:5: LC101 [*] {MESSAGE}\n"
    result = run("-q", "good.py")
    assert (result.exit_code, result.output) == (0, "")


def test_exit_zero_keeps_exit_2_for_errors(project):
    (project / "nb.ipynb").write_text("{not json")
    assert run("--exit-zero", "nb.ipynb").exit_code == 2


def test_stdin_with_stdin_filename(project):
    result = run("-", "--stdin-filename", "train.py", input=BAD)
    assert result.exit_code == 1
    assert result.output == f"train.py:9:5: LC101 [*] {MESSAGE}\nFound 1 error.\n[*] 1 fixable with `--fix`.\n"
    result = run("--stdin-filename", "train.py", input=BAD)  # no path: standard input too
    assert result.output == f"train.py:9:5: LC101 [*] {MESSAGE}\nFound 1 error.\n[*] 1 fixable with `--fix`.\n"
    result = run("-", input=GOOD)
    assert (result.exit_code, result.output) == (0, "All checks passed!\n")


def test_stdin_full_format_shows_the_source(project):
    result = run("-", "--stdin-filename", "bad.py", "--output-format", "full", input=BAD)
    assert result.output == FULL


def test_stdin_cannot_be_mixed_with_paths(project):
    result = run("-", "bad.py", input=BAD)
    assert result.exit_code == 2
    assert "'-' (standard input) cannot be mixed with other paths" in result.output


# ------------------------------------------------------------------ notes, other files


HELPER = "def train_step(model, loss):\n    loss.backward()\n    return loss\n"


def finding_with_note_and_other_file(project: Path):
    """LC101 of bad.py as a rule would report it with an explanation and a related line in
    another file (helper.py)."""
    from loopcheck.findings import Related

    (project / "helper.py").write_text(HELPER)
    findings, source = lint_text(BAD, "bad.py")
    f = findings[0]
    f.note = "clip_grad_norm_() measured a norm of 0 in 32 of 32 steps\nmove it after backward()"
    f.related.append(Related(2, 5, "the other backward()", filename="helper.py"))
    return f, source


def test_full_shows_the_note_and_a_related_line_of_another_file(project):
    f, source = finding_with_note_and_other_file(project)
    out = io.StringIO()
    write_full([f], out, Context({"bad.py": source}, quiet=True))
    lines = out.getvalue().splitlines()
    assert lines[:13] == [
        f"LC101 [*] {MESSAGE}",
        "  --> bad.py:9:5",
        "   |",
        " 9 |     nn.utils.clip_grad_norm_(model.parameters(), 1.0)",
        "   |     ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^",
        "10 |     loss = model(x).pow(2).mean()",
        "11 |     loss.backward()",
        "   |     --------------- backward() fills .grad only here",
        "   |",
        "  ::: helper.py:2:5",
        "   |",
        " 2 |     loss.backward()",
        "   |     --------------- the other backward()",
    ]
    assert lines[13:15] == ["   |", f"help: {FIX_MESSAGE}"]
    assert lines[-4:] == [
        "   |",
        "note: clip_grad_norm_() measured a norm of 0 in 32 of 32 steps",
        "      move it after backward()",
        "",
    ]


def test_json_and_sarif_give_the_note_and_each_related_file(project):
    f, source = finding_with_note_and_other_file(project)
    ctx = Context({"bad.py": source})
    obj = to_json_obj(f, ctx)
    assert obj["note"] == f.note
    assert obj["related"] == [
        {"cell": None, "column": 5, "filename": str(project / "bad.py"), "message": "backward() fills .grad only here",
         "row": 11},
        {"cell": None, "column": 5, "filename": str(project / "helper.py"), "message": "the other backward()", "row": 2},
    ]
    sarif = to_sarif([f], ctx)
    related = sarif["runs"][0]["results"][0]["relatedLocations"]
    assert [r["physicalLocation"]["artifactLocation"]["uri"] for r in related] == [
        (project / "bad.py").as_uri(), (project / "helper.py").as_uri()]
    assert related[1]["physicalLocation"]["region"] == {"startLine": 2, "startColumn": 5}
    jsonschema.Draft4Validator(json.loads(SCHEMA.read_text())).validate(sarif)


def test_full_with_an_unreadable_related_file(project):
    from loopcheck.findings import Related

    findings, source = lint_text(BAD, "bad.py")
    findings[0].related.append(Related(7, 1, "elsewhere", filename="gone.py"))
    out = io.StringIO()
    write_full(findings, out, Context({"bad.py": source}))
    assert "  ::: gone.py:7:1 (7:1: elsewhere)" in out.getvalue().splitlines()


# ------------------------------------------------------------------ severities, colour, files


def test_warnings_and_errors_are_counted_and_coloured_apart(project):
    (project / "modes.py").write_text(MODES)
    result = run("--select", "LC302", "modes.py")
    assert result.output.splitlines()[-2] == "Found 1 warning."
    assert run("modes.py").output.splitlines()[-2] == "Found 1 error, 1 warning."
    (project / "lc301.py").write_text(LC301_BAD)
    assert run("modes.py", "lc301.py").output.splitlines()[-2] == "Found 2 errors, 1 warning."
    findings, source = lint_text(MODES, "modes.py")
    more, other = lint_text(LC301_BAD, "lc301.py")
    out = io.StringIO()
    write_concise(findings + more, out, Context({"modes.py": source, "lc301.py": other}, color=True))
    text = out.getvalue()
    assert "\x1b[91m\x1b[1mLC301\x1b[0m" in text  # errors in red
    assert "\x1b[33m\x1b[1mLC302\x1b[0m" in text  # warnings in yellow


def test_force_color_and_no_color(project, monkeypatch):
    monkeypatch.setenv("FORCE_COLOR", "1")
    assert "\x1b[" in run("--output-format", "concise", "bad.py").output  # not a terminal, still colour
    assert "\x1b[" not in run("--output-format", "concise", "--no-color", "bad.py").output
    assert "\x1b[" not in run("--output-format", "json", "bad.py").output  # never in JSON
    monkeypatch.setenv("FORCE_COLOR", "")
    monkeypatch.setenv("NO_COLOR", "1")
    assert "\x1b[" not in run("--output-format", "concise", "bad.py").output


def test_output_file(project):
    result = run("--output-format", "json", "-o", "report.json", "bad.py")
    assert (result.exit_code, result.output) == (1, "")
    assert json.loads((project / "report.json").read_text())[0]["code"] == "LC101"
    result = run("--output-file", "report.txt", "good.py")
    assert (result.exit_code, (project / "report.txt").read_text()) == (0, "All checks passed!\n")
    result = run("--output-file", str(project / "missing" / "r.txt"), "bad.py")
    assert result.exit_code == 2 and "cannot write" in result.output


# ------------------------------------------------------------ the formats ruff users reach for


def test_grouped(project):
    (project / "sub").mkdir()
    (project / "sub" / "modes.py").write_text(MODES)
    result = run("--output-format", "grouped", "--select", "LC101,LC302", "sub/modes.py", "bad.py")
    assert result.exit_code == 1
    assert result.output == (
        "bad.py:\n"
        f"  9:5 LC101 [*] {MESSAGE}\n"
        "\n"
        "sub/modes.py:\n"
        f"   9:5 LC101 [*] {MESSAGE}\n"
        "  14:5 LC302 model() runs in eval mode (line 13) without torch.no_grad()\n"
        "\n"
        "Found 2 errors, 1 warning.\n"
        "[*] 2 fixable with `--fix` (1 unsafe fix available with `--fix --unsafe-fixes`).\n"
    )


def test_pylint(project):
    result = run("--output-format", "pylint", "bad.py", "good.py")
    assert result.exit_code == 1
    assert result.output == f"bad.py:9: [LC101] {MESSAGE}\n"


def test_azure(project):
    (project / "modes.py").write_text(MODES)
    result = run("--output-format", "azure", "--select", "LC101,LC302", "bad.py", "modes.py")
    assert result.exit_code == 1
    lines = result.output.splitlines()
    assert lines[0] == (f"##vso[task.logissue type=error;sourcepath={project}/bad.py;linenumber=9;columnnumber=5;"
                        f"code=LC101;]{MESSAGE}")
    assert lines[2].startswith(f"##vso[task.logissue type=warning;sourcepath={project}/modes.py;linenumber=14;"
                               "columnnumber=5;code=LC302;]model() runs in eval mode (line 13)")
    assert len(lines) == 3


def test_gitlab_code_quality(project, monkeypatch):
    (project / "sub").mkdir()
    (project / "sub" / "bad.py").write_text(BAD + BAD[BAD.index("for step"):])  # two LC101 on the same text
    result = run("--output-format", "gitlab", "bad.py", "sub/bad.py", "good.py")
    assert result.exit_code == 1
    report = json.loads(result.output)
    fingerprints = [issue.pop("fingerprint") for issue in report]
    assert report == [
        {"check_name": "LC101", "description": f"LC101: {MESSAGE}", "severity": "major",
         "location": {"path": "bad.py", "lines": {"begin": 9, "end": 9}}},
        {"check_name": "LC101", "description": f"LC101: {MESSAGE}", "severity": "major",
         "location": {"path": "sub/bad.py", "lines": {"begin": 9, "end": 9}}},
        {"check_name": "LC101", "description": f"LC101: {MESSAGE.replace('line 11', 'line 18')}", "severity": "major",
         "location": {"path": "sub/bad.py", "lines": {"begin": 16, "end": 16}}},
    ]
    assert len(set(fingerprints)) == 3 and all(re.fullmatch("[0-9a-f]{32}", f) for f in fingerprints)
    # the same finding keeps its fingerprint when lines are added above it
    (project / "bad.py").write_text("# a comment\n" + BAD)
    moved = json.loads(run("--output-format", "gitlab", "bad.py").output)
    assert moved[0]["fingerprint"] == fingerprints[0] and moved[0]["location"]["lines"]["begin"] == 10
    # paths relative to $CI_PROJECT_DIR when GitLab sets it
    monkeypatch.setenv("CI_PROJECT_DIR", str(project.parent))
    (issue,) = json.loads(run("--output-format", "gitlab", "bad.py").output)
    assert issue["location"]["path"] == f"{project.name}/bad.py"
    assert json.loads(run("--output-format", "gitlab", "good.py").output) == []


def test_rdjson(project):
    result = run("--output-format", "rdjson", "bad.py")
    assert result.exit_code == 1
    assert json.loads(result.output) == {
        "source": {"name": "loopcheck", "url": "https://github.com/loopcheck/loopcheck"},
        "severity": "warning",
        "diagnostics": [{
            "message": MESSAGE,
            "code": {"value": "LC101", "url": INFOS["LC101"].url},
            "location": {"path": str(project / "bad.py"),
                         "range": {"start": {"line": 9, "column": 5}, "end": {"line": 9, "column": 54}}},
            "severity": "ERROR",
            "suggestions": [
                {"range": {"start": {"line": e["location"]["row"], "column": e["location"]["column"]},
                           "end": {"line": e["end_location"]["row"], "column": e["end_location"]["column"]}},
                 "text": e["content"]}
                for e in FIX_EDITS
            ],
        }],
    }
    assert json.loads(run("--output-format", "rdjson", "good.py").output)["diagnostics"] == []


def test_junit_is_xml_with_a_failed_test_case_per_finding(project):
    import xml.etree.ElementTree as ET

    (project / "sub").mkdir()
    (project / "sub" / "a<b>.py").write_text(BAD)
    result = run("--output-format", "junit", "bad.py", "sub/a<b>.py", "good.py")
    assert result.exit_code == 1
    assert result.output.startswith('<?xml version="1.0" encoding="UTF-8"?>\n'
                                    '<testsuites name="loopcheck" tests="2" failures="2" errors="0">\n'
                                    '    <testsuite name="bad.py" tests="1" disabled="0" errors="0" failures="1" '
                                    'package="org.loopcheck">\n'
                                    '        <testcase name="org.loopcheck.LC101" classname="bad" line="9" column="5">\n')
    root = ET.fromstring(result.output.encode())
    assert root.tag == "testsuites" and root.attrib == {"name": "loopcheck", "tests": "2", "failures": "2", "errors": "0"}
    suites = root.findall("testsuite")
    assert [s.get("name") for s in suites] == ["bad.py", "sub/a<b>.py"]
    case = suites[1].find("testcase")
    assert case.attrib == {"name": "org.loopcheck.LC101", "classname": "sub/a<b>", "line": "9", "column": "5"}
    failure = case.find("failure")
    assert failure.get("message") == MESSAGE and failure.text == f"line 9, col 5, {MESSAGE}"


def test_junit_without_findings_has_one_passing_case(project):
    import xml.etree.ElementTree as ET

    result = run("--output-format", "junit", "good.py")
    assert result.exit_code == 0
    root = ET.fromstring(result.output.encode())
    (suite,) = root.findall("testsuite")
    (case,) = suite.findall("testcase")
    assert case.attrib == {"name": "No errors found", "classname": "loopcheck"} and list(case) == []


def test_output_format_from_the_environment(project, monkeypatch):
    monkeypatch.setenv("LOOPCHECK_OUTPUT_FORMAT", "pylint")
    assert run("bad.py").output == f"bad.py:9: [LC101] {MESSAGE}\n"
    assert run("--output-format", "concise", "-q", "bad.py").output == f"bad.py:9:5: LC101 [*] {MESSAGE}\n"
    monkeypatch.setenv("LOOPCHECK_OUTPUT_FORMAT", "nope")
    result = run("bad.py")
    assert result.exit_code == 2 and "'nope' is not one of" in result.output
