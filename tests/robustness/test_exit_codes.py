"""9.7 Exit codes: an internal error or unreadable input is exit 2, never 1 (findings) and never
a traceback; "All checks passed!" is never printed beside exit 2."""

from __future__ import annotations

import pytest

import loopcheck.check
import loopcheck.cli.commands
import loopcheck.cli.reporters
import loopcheck.workspace.discovery
from loopcheck.check import describe_error

from .helpers import BAD, LC101_LINE, cli


@pytest.fixture
def project(tmp_path, monkeypatch):
    (tmp_path / "bad.py").write_text(BAD)
    (tmp_path / "good.py").write_text("import torch\n")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _failing_on(name: str, monkeypatch, error: Exception):
    real = loopcheck.check.lint_text

    def lint_text(text, filename, *args, **kwargs):
        if filename.endswith(name):
            raise error
        return real(text, filename, *args, **kwargs)

    monkeypatch.setattr(loopcheck.check, "lint_text", lint_text)


def test_an_analyzer_bug_is_exit_2_and_the_other_files_are_reported(project, monkeypatch):
    _failing_on("good.py", monkeypatch, RuntimeError("boom"))
    result = cli("--output-format", "concise", "bad.py", "good.py")
    assert result.exit_code == 2
    assert result.stdout.startswith(LC101_LINE)
    assert result.stderr == "loopcheck: internal error while checking good.py: RuntimeError: boom\n"


def test_all_checks_passed_is_never_printed_beside_exit_2(project, monkeypatch):
    _failing_on("good.py", monkeypatch, RecursionError("maximum recursion depth exceeded"))
    result = cli("--output-format", "concise", "good.py")
    assert result.exit_code == 2
    assert result.stdout == ""
    for args in (["--statistics"], ["--fix"], ["--diff"]):
        result = cli("--output-format", "concise", *args, "good.py")
        assert result.exit_code == 2 and "All checks passed!" not in result.output


def test_an_error_whose_message_cannot_be_built_is_still_one_line(project, monkeypatch):
    class Unprintable(Exception):
        def __str__(self):
            raise RecursionError("a repr of a deep syntax tree")

    _failing_on("good.py", monkeypatch, Unprintable())
    result = cli("--output-format", "concise", "good.py")
    assert result.exit_code == 2
    assert result.stderr == "loopcheck: internal error while checking good.py: Unprintable: (no message)\n"
    assert describe_error(ValueError("x" * 1000)).endswith("...") and len(describe_error(ValueError("x" * 1000))) < 320


def test_an_unexpected_error_anywhere_is_exit_2_without_a_traceback(project, monkeypatch):
    def broken(*args, **kwargs):
        raise OSError("the disk went away")

    monkeypatch.setattr(loopcheck.workspace.discovery, "iter_source_files", broken)
    result = cli(".")
    assert result.exit_code == 2
    assert result.output == "loopcheck: internal error: OSError: the disk went away\n"


def test_a_reporter_bug_is_exit_2(project, monkeypatch):
    def broken(findings, out, ctx):
        raise KeyError("sarif")

    monkeypatch.setitem(loopcheck.cli.reporters.WRITERS, "concise", broken)
    result = cli("--output-format", "concise", "bad.py")
    assert result.exit_code == 2
    assert "loopcheck: internal error while writing the report: KeyError: 'sarif'" in result.stderr


def test_unreadable_input_is_exit_2(project):
    (project / "gone.py").symlink_to("missing.py")
    result = cli("--output-format", "concise", "gone.py", "good.py")
    assert result.exit_code == 2
    assert result.stderr == "loopcheck: cannot read gone.py: No such file or directory\n"
    assert result.stdout == ""  # no "All checks passed!"
