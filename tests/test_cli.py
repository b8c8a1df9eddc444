"""The command line as a user meets it: formats, exit codes, rules, explain, discovery."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from click.testing import CliRunner

from loopcheck import __version__
from loopcheck.cli.commands import main
from loopcheck.rules import INFOS

BAD = textwrap.dedent(
    """\
    import torch
    from torch import nn

    model = nn.Linear(4, 2)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for step in range(10):
        x = torch.randn(8, 4)
        optimizer.zero_grad()
        nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        loss = model(x).pow(2).mean()
        loss.backward()
        optimizer.step()
    """
)
GOOD = BAD.replace(
    "    nn.utils.clip_grad_norm_(model.parameters(), 1.0)\n", ""
).replace("    loss.backward()\n", "    loss.backward()\n    nn.utils.clip_grad_norm_(model.parameters(), 1.0)\n")

MESSAGE = (
    "nn.utils.clip_grad_norm_() runs before loss.backward() (line 11), on empty gradients"
)
NOTE = (
    "The gradients it clips are empty or were already applied by the previous step, so the step that follows "
    "applies unclipped gradients (measured, CPU, torch 2.13: 32/32 steps unclipped, gradient norm up to "
    "1.97 x max_norm). Clip between backward() and step()."
)
FIX_MESSAGE = "Move `clip_grad_norm_()` between `loss.backward()` and `optimizer.step()`"
FIX_EDITS = [
    {"content": "", "location": {"row": 9, "column": 1}, "end_location": {"row": 10, "column": 1}},
    {
        "content": "    nn.utils.clip_grad_norm_(model.parameters(), 1.0)\n",
        "location": {"row": 12, "column": 1},
        "end_location": {"row": 12, "column": 1},
    },
]


# what the command line reads as a command, not as the check's first argument
NOT_CHECK = {*main.commands, "-h", "--help", "-V", "--version"}


def run(*args: str, cwd: Path | None = None):
    """Run the command line; a check (the default command) with ``--preview``: LC101, the rule
    BAD breaks, is in preview (tests/test_preview.py tests the default selection)."""
    args = list(args) if args and args[0] in NOT_CHECK else ["--preview", *args]
    runner = CliRunner()
    if cwd is None:
        return runner.invoke(main, args)
    with runner.isolated_filesystem(temp_dir=cwd):
        return runner.invoke(main, args)


@pytest.fixture
def project(tmp_path: Path, monkeypatch) -> Path:
    (tmp_path / "bad.py").write_text(BAD)
    (tmp_path / "good.py").write_text(GOOD)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_text_output_and_exit_code_1(project):
    result = run("bad.py", "good.py")
    assert result.exit_code == 1
    assert result.output == (
        f"bad.py:9:5: LC101 [*] {MESSAGE}\nFound 1 error.\n[*] 1 fixable with `--fix`.\n"
    )


def test_clean_file_exits_0(project):
    result = run("good.py")
    assert result.exit_code == 0
    assert result.output == "All checks passed!\n"


def test_json_output(project):
    result = run("--output-format", "json", "bad.py")
    assert result.exit_code == 1
    assert json.loads(result.output) == [
        {
            "cell": None,
            "code": "LC101",
            "end_location": {"column": 54, "row": 9},
            "filename": str(project / "bad.py"),
            "fix": {
                "applicability": "safe",
                "message": FIX_MESSAGE,
                "edits": FIX_EDITS,
            },
            "location": {"column": 5, "row": 9},
            "message": MESSAGE,
            "name": "clip-before-backward",
            "noqa_row": 9,
            "note": NOTE,
            "related": [{"cell": None, "column": 5, "filename": str(project / "bad.py"), "row": 11,
                         "message": "backward() fills .grad only here"}],
            "severity": "error",
            "url": INFOS["LC101"].url,
        }
    ]
    # ruff's key order (sorted), so tools written for ruff see the same document shape
    assert list(json.loads(result.output)[0]) == sorted(json.loads(result.output)[0])


def test_default_path_is_current_directory(project):
    result = run()
    assert result.exit_code == 1
    assert result.output.startswith("bad.py:9:5: LC101 ")


def test_select_and_ignore(project):
    assert run("--select", "LC3", "bad.py").exit_code == 0
    assert run("--ignore", "LC101", "bad.py").exit_code == 0
    assert run("--select", "LC1", "--ignore", "LC102", "bad.py").exit_code == 1


def test_unknown_code_is_a_usage_error(project):
    result = run("--select", "XYZ", "bad.py")
    assert result.exit_code == 2
    assert "unknown rule code or prefix 'XYZ'" in result.output


def test_missing_path_is_a_usage_error(project):
    result = run("missing.py")
    assert result.exit_code == 2
    assert "no such file or directory: missing.py" in result.output


def test_syntax_error_is_reported_and_other_files_still_checked(project):
    (project / "broken.py").write_text("import torch\nloss.backward(\ndef f(:\n")
    result = run("broken.py", "bad.py")
    assert result.exit_code == 1
    lines = result.output.splitlines()
    assert lines[0].startswith("bad.py:9:5: LC101 ")
    assert lines[1].startswith("broken.py:3:")
    assert " LC001 SyntaxError: " in lines[1]
    assert lines[2] == "Found 2 errors."


def test_valid_python_libcst_cannot_read_is_not_called_a_syntax_error(project):
    # CPython's own test/ann_module.py has this line; LibCST's parser rejects it
    (project / "annotated.py").write_text("import torch\n(pars): bool = True\nloss.backward()\n")
    result = run("annotated.py")
    assert result.exit_code == 1
    assert result.output.splitlines()[0] == (
        "annotated.py:2:9: LC001 LibCST cannot parse this line of valid Python, so the file was not checked"
    )


def test_directory_walk_respects_gitignore_and_skips_virtualenvs(project):
    sub = project / "pkg"
    sub.mkdir()
    (sub / "ignored.py").write_text(BAD)
    (sub / "kept.py").write_text(BAD)
    (project / ".gitignore").write_text("pkg/ignored.py\n")
    venv = project / "env1"
    venv.mkdir()
    (venv / "pyvenv.cfg").write_text("home = /usr\n")
    (venv / "lib.py").write_text(BAD)
    (project / "notes.txt").write_text(BAD)
    result = run("--quiet", ".")
    files = sorted({line.split(":")[0] for line in result.output.splitlines()})
    assert files == ["bad.py", "pkg/kept.py"]
    result = run("--quiet", "--no-respect-gitignore", ".")
    files = sorted({line.split(":")[0] for line in result.output.splitlines()})
    assert files == ["bad.py", "pkg/ignored.py", "pkg/kept.py"]


def test_rules_lists_every_rule_with_its_fix():
    result = run("rules")
    assert result.exit_code == 0
    lines = result.output.splitlines()
    assert lines[0].split() == ["code", "name", "severity", "fix", "preview", "summary"]
    assert [line.split()[0] for line in lines[1:]] == sorted(INFOS)
    rows = {line.split()[0]: line.split()[:5] for line in lines[1:]}
    assert rows["LC101"] == ["LC101", "clip-before-backward", "error", "safe", "yes"]
    assert rows["LC301"] == ["LC301", "eval-mode-not-reset", "error", "unsafe", "yes"]
    assert rows["LC203"] == ["LC203", "plateau-scheduler-without-metric", "error", "-", "yes"]
    assert rows["LC202"] == ["LC202", "scheduler-step-before-optimizer-step", "warning", "-", "yes"]  # back in (census 17)
    assert rows["LC302"] == ["LC302", "validation-without-no-grad", "warning", "safe", "yes"]  # in preview (census 17: 139 of 172)
    assert rows["LC105"] == ["LC105", "missing-zero-grad", "error", "-", "yes"]  # back in preview (census 16)
    assert rows["LC901"] == ["LC901", "distributed-sampler-without-set-epoch", "warning", "-", "yes"]  # back in (census 18: 0 of 6)
    assert rows["LC601"] == ["LC601", "clip-without-unscale", "error", "safe", "-"]  # out of preview (census 10)
    assert rows["LC001"][4] == "-"
    assert rows["LC002"] == ["LC002", "unused-noqa", "warning", "safe", "-"]
    assert rows["LC401"] == ["LC401", "loss-tensor-kept", "warning", "safe", "yes"]


def test_rules_json():
    data = json.loads(run("rules", "--output-format", "json").output)
    assert [d["code"] for d in data] == sorted(INFOS)
    assert data[2] == {
        "code": "LC101",
        "name": "clip-before-backward",
        "severity": "error",
        "fix": "safe",
        "preview": True,
        "summary": INFOS["LC101"].summary,
        "url": INFOS["LC101"].url,
    }
    assert {d["code"]: d["fix"] for d in data}["LC203"] is None
    assert {d["code"] for d in data if d["preview"]} == {c for c, i in INFOS.items() if i.preview}
    assert {d["code"]: d["preview"] for d in data}["LC401"] is True
    assert {d["code"]: d["preview"] for d in data}["LC001"] is False


def test_explain_prints_the_rule_page():
    # a rule out of preview: its page as it is (a rule in preview's gets a notice, tests/test_preview.py)
    result = run("explain", "lc001")
    assert result.exit_code == 0
    page = (Path(__file__).resolve().parent.parent / "rules" / "LC001.md").read_text()
    assert result.output == page.rstrip("\n") + "\n"


def test_explain_by_name():
    by_code = run("explain", "LC101").output
    assert run("explain", "clip-before-backward").output == by_code
    assert run("explain", "Clip_Before_Backward").output == by_code


def test_explain_unknown_code():
    result = run("explain", "LC999")
    assert result.exit_code == 2
    assert "unknown rule code or name 'LC999'" in result.output


def test_every_rule_has_a_page():
    root = Path(__file__).resolve().parent.parent / "rules"
    assert sorted(p.stem for p in root.glob("LC*.md")) == sorted(INFOS)


def test_console_script_runs(project):
    exe = Path(sys.executable).with_name("loopcheck")
    cmd = [str(exe)] if exe.exists() else [sys.executable, "-m", "loopcheck"]
    proc = subprocess.run([*cmd, "--preview", "bad.py"], capture_output=True, text=True)
    assert proc.returncode == 1
    assert proc.stdout.splitlines()[0] == f"bad.py:9:5: LC101 [*] {MESSAGE}"
    assert proc.stderr == ""


def test_fix_rewrites_the_file_and_reports_what_remains(project):
    result = run("--fix", "bad.py")
    assert result.exit_code == 0
    assert result.output == "Found 1 error (1 fixed, 0 remaining).\n"
    assert (project / "bad.py").read_text() == GOOD
    assert run("--fix", "bad.py").output == "All checks passed!\n"  # idempotent


def test_diff_shows_the_fix_without_writing(project):
    result = run("--diff", "bad.py")
    assert result.exit_code == 1
    assert result.stdout == (
        "--- bad.py\n+++ bad.py\n@@ -6,7 +6,7 @@\n"
        " for step in range(10):\n"
        "     x = torch.randn(8, 4)\n"
        "     optimizer.zero_grad()\n"
        "-    nn.utils.clip_grad_norm_(model.parameters(), 1.0)\n"
        "     loss = model(x).pow(2).mean()\n"
        "     loss.backward()\n"
        "+    nn.utils.clip_grad_norm_(model.parameters(), 1.0)\n"
        "     optimizer.step()\n"
    )
    assert (project / "bad.py").read_text() == BAD


def test_fix_leaves_noqa_lines_alone(project):
    noqa = BAD.replace("1.0)\n", "1.0)  # noqa: LC101\n", 1)
    (project / "bad.py").write_text(noqa)
    result = run("--fix", "bad.py")
    assert result.exit_code == 0
    assert result.output == "All checks passed!\n"
    assert (project / "bad.py").read_text() == noqa


def test_unsafe_fixes_need_the_flag(project):
    source = (Path(__file__).resolve().parent.parent / "fixtures" / "LC301_bad.py").read_text()
    (project / "train.py").write_text(source)
    result = run("--fix", "train.py")
    assert result.exit_code == 1
    assert result.output.splitlines()[-1] == (
        "1 unsafe fix available with `--fix --unsafe-fixes`."
    )
    assert (project / "train.py").read_text() == source
    result = run("--fix", "--unsafe-fixes", "train.py")
    assert result.exit_code == 0
    assert result.output == "Found 1 error (1 fixed, 0 remaining).\n"
    assert "model.train()" in (project / "train.py").read_text().split("for epoch", 1)[1]


def test_fix_from_stdin_writes_the_fixed_program_to_stdout(project):
    result = CliRunner().invoke(main, ["--preview", "--fix", "-", "--stdin-filename", "train.py"], input=BAD)
    assert result.exit_code == 0
    assert result.stdout == GOOD


def test_every_rule_page_says_whether_it_has_an_autofix():
    from loopcheck.fixes import FIXABLE

    root = Path(__file__).resolve().parent.parent / "rules"
    for code in INFOS:
        page = (root / f"{code}.md").read_text()
        section = page.split("## Autofix\n\n", 1)[1].split("\n\n", 1)[0]
        applicability = FIXABLE.get(code)
        assert section.startswith(f"Autofix ({applicability}" if applicability else "No autofix: "), code


def test_version_at_the_root():
    for flag in ("-V", "--version"):
        result = run(flag)
        assert (result.exit_code, result.output) == (0, f"loopcheck {__version__}\n")


def test_help_lists_each_command_with_its_whole_description():
    result = run("--help")
    assert result.exit_code == 0
    text = " ".join(result.output.split())  # the descriptions are wrapped, never cut short
    assert "check Check files, directories or standard input (the default command)." in text
    assert "explain Print a rule's documentation page; RULE is a code (LC101) or a name." in text
    assert "rules List every rule: code, name, severity, fix, preview and summary." in text
    assert "server Run the language server (LSP over stdio) for editors; needs the server extra." in text
    assert "..." not in result.output.split("Commands:")[1]
    check_help = " ".join(run("check", "--help").output.split())
    for option in ("--output-file", "--show-settings", "--show-files", "--add-noqa", "--exit-non-zero-on-fix"):
        assert option in check_help


def test_show_files(project):
    (project / "sub").mkdir()
    (project / "sub" / "nb.ipynb").write_text('{"cells": [], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}')
    (project / "notes.txt").write_text("x")
    result = run("--show-files")
    assert (result.exit_code, result.output.splitlines()) == (
        0, [str(project / "bad.py"), str(project / "good.py"), str(project / "sub" / "nb.ipynb")])
    assert run("--show-files", "--extend-exclude", "sub", ".").output.splitlines() == [
        str(project / "bad.py"), str(project / "good.py")]


def test_show_settings(project):
    (project / "pyproject.toml").write_text(
        '[tool.loopcheck]\nignore = ["LC2"]\nextend-exclude = ["scratch/"]\n'
        '[tool.loopcheck.per-file-ignores]\n"bad.py" = ["LC101"]\n')
    result = run("--show-settings", "bad.py")
    assert result.exit_code == 0
    lines = result.output.splitlines()
    assert lines[0] == f'Resolved settings for: "{project / "bad.py"}"'
    assert lines[1] == f'Settings path: "{project / "pyproject.toml"}"'
    select = [c for c in sorted(INFOS) if not c.startswith("LC2")]  # run() passes --preview
    assert "preview = true" in lines
    assert f"select = {json.dumps(select).replace('[', '[').replace(']', ']')}" in lines
    assert "rules for this file = " + json.dumps([c for c in select if c != "LC101"]) in lines
    assert any(line.startswith("exclude = [") and '"scratch/"' in line for line in lines)
    assert 'per-file-ignores = {"bad.py" = ["LC101"]}' in lines
    assert "respect-gitignore = true" in lines
    # without --preview: the rules out of preview only
    lines = CliRunner().invoke(main, ["--show-settings", "bad.py"]).output.splitlines()
    select = [c for c in sorted(INFOS) if not c.startswith("LC2") and not INFOS[c].preview]
    assert "preview = false" in lines
    assert f"select = {json.dumps(select)}" in lines
    assert "rules for this file = " + json.dumps(select) in lines
    assert run("--show-settings", "--isolated", "bad.py").output.splitlines()[1] == "Settings path: none (defaults)"


def test_exit_non_zero_on_fix(project):
    assert run("--fix", "--exit-non-zero-on-fix", "good.py").exit_code == 0
    result = run("--fix", "--exit-non-zero-on-fix", "bad.py")
    assert (result.exit_code, result.output) == (1, "Found 1 error (1 fixed, 0 remaining).\n")
    assert run("--fix", "bad.py").exit_code == 0  # fixed: nothing remains


def test_the_catalog_and_the_registered_rules_agree():
    """Every catalog entry but LC001/LC002 (reported by the command line itself) is a rule
    class's ``info``; a class whose code is missing from the catalog cannot register."""
    from loopcheck.rules import REGISTRY
    from loopcheck.rules.base import Rule, register

    assert set(INFOS) - set(REGISTRY) == {"LC001", "LC002"}
    assert all(rule.info is INFOS[code] for code, rule in REGISTRY.items())

    class Unlisted(Rule):
        info = INFOS["LC101"].__class__("LC999", "unlisted", "error", "Not in the catalog.")

    with pytest.raises(ValueError, match="LC999"):
        register(Unlisted)
    assert "LC999" not in REGISTRY


def test_a_run_answered_from_the_cache_loads_no_parser(tmp_path):
    """The warm path (discovery, cache, report) imports neither LibCST nor the engine: their
    imports were a third of a warm run's time."""
    import subprocess
    import sys

    (tmp_path / "train.py").write_text((Path(__file__).resolve().parent.parent / "fixtures" / "LC101_bad.py").read_text())
    probe = (
        "import sys\nfrom loopcheck.cli.commands import main\n"
        "try:\n    main(['--cache-dir', sys.argv[1], '--preview', '--output-format', 'json', sys.argv[2]])\n"
        "except SystemExit:\n    pass\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] == 'libcst' or m.startswith('loopcheck.engine'))[:3], file=sys.stderr)\n"
    )
    args = [sys.executable, "-c", probe, str(tmp_path / "cache"), str(tmp_path / "train.py")]
    cold = subprocess.run(args, capture_output=True, text=True, check=False)
    warm = subprocess.run(args, capture_output=True, text=True, check=False)
    assert cold.stderr.strip().startswith("['libcst")
    assert warm.stdout == cold.stdout and '"code": "LC101"' in warm.stdout
    assert warm.stderr.strip() == "[]"


@pytest.mark.parametrize("args", [["rules"], ["--no-cache", "--preview", "fixtures"]])
def test_a_reader_that_stops_early_is_no_internal_error(args):
    """``loopcheck rules | head -1``: the pipe closes while loopcheck writes; it stops quietly
    (it printed "internal error: BrokenPipeError" and exited 2)."""
    import subprocess
    import sys

    root = Path(__file__).resolve().parent.parent
    proc = subprocess.Popen([sys.executable, "-m", "loopcheck", *args], cwd=root,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    proc.stdout.readline()
    proc.stdout.close()  # the reader goes away before the rest is written
    stderr = proc.stderr.read().decode()
    assert proc.wait() in (0, 1)
    assert "BrokenPipeError" not in stderr and "internal error" not in stderr


# ------------------------------------------------------------ fix options as ruff has them


def test_show_fixes_lists_what_was_fixed(project):
    result = run("--fix", "--show-fixes", "bad.py", "good.py")
    assert result.exit_code == 0
    assert result.output == (
        "\nFixed 1 error:\n"
        "- bad.py:\n"
        "    1 × LC101 (clip-before-backward)\n"
        "\n"
        "Found 1 error (1 fixed, 0 remaining).\n"
    )
    assert (project / "bad.py").read_text() == GOOD


def test_fix_only_fixes_and_reports_nothing_else(project):
    (project / "lc301.py").write_text((Path(__file__).resolve().parent.parent / "fixtures" / "LC301_bad.py").read_text())
    result = run("--fix-only", "bad.py", "lc301.py")  # LC301's fix is unsafe: it stays, unreported
    assert (result.exit_code, result.output) == (0, "Fixed 1 error.\n")
    assert (project / "bad.py").read_text() == GOOD
    result = run("--fix-only", "bad.py", "lc301.py")
    assert (result.exit_code, result.output) == (0, "")
    (project / "bad.py").write_text(BAD)
    result = run("--fix-only", "--show-fixes", "--exit-non-zero-on-fix", "bad.py")
    assert (result.exit_code, result.output) == (1, "\nFixed 1 error:\n- bad.py:\n    1 × LC101 (clip-before-backward)\n"
                                                    "\nFixed 1 error.\n")


def test_unfixable_and_fixable_remove_the_fix(project):
    for args in (["--unfixable", "clip-before-backward"], ["--fixable", "LC3"],
                 ["--fixable", "LC3", "--unfixable", "LC2"]):
        result = run("--output-format", "concise", *args, "bad.py")
        assert result.output == f"bad.py:9:5: LC101 {MESSAGE}\nFound 1 error.\n", args
        assert json.loads(run("--output-format", "json", *args, "bad.py").output)[0]["fix"] is None
        result = run("--fix", *args, "bad.py")
        assert result.exit_code == 1 and (project / "bad.py").read_text() == BAD
    result = run("--output-format", "concise", "--fixable", "LC3", "--extend-fixable", "LC101", "bad.py")
    assert result.output.startswith(f"bad.py:9:5: LC101 [*] {MESSAGE}\n")
    result = run("--unfixable", "LC999", "bad.py")
    assert result.exit_code == 2 and "unknown rule code or prefix 'LC999'" in result.output


def test_ignore_noqa_reports_what_noqa_comments_suppress(project):
    suppressed = BAD.replace("1.0)\n", "1.0)  # noqa: LC101\n", 1)
    (project / "bad.py").write_text(suppressed)
    (project / "whole.py").write_text("# loopcheck: noqa\n" + BAD)
    (project / "skipped.py").write_text("# loopcheck: skip-file\n" + BAD)
    assert run("--output-format", "concise", "bad.py", "whole.py", "skipped.py").output == "All checks passed!\n"
    result = run("--output-format", "concise", "--ignore-noqa", "bad.py", "whole.py", "skipped.py")
    assert result.exit_code == 1
    # reported, but --fix still leaves alone what a # noqa covers: no fix is offered there
    assert result.output.splitlines()[:2] == [f"bad.py:9:5: LC101 {MESSAGE}",
                                              f"whole.py:10:5: LC101 {MESSAGE.replace('line 11', 'line 12')}"]
    assert result.output.splitlines()[2] == "Found 2 errors."


def test_rule_names_are_accepted_where_codes_are(project):
    for option in ("--select", "--extend-select", "--fixable"):
        assert run("--output-format", "concise", option, "clip-before-backward", "bad.py").output.startswith(
            f"bad.py:9:5: LC101 [*] {MESSAGE}\n"), option
    assert run("--ignore", "clip_before_backward", "bad.py").exit_code == 0
