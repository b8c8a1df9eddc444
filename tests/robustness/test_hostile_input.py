"""Issue 36's hostile input: what a user's odd file, setting or disk does to a run. Each
failure is one clear line naming the file or the key, exit status 2, nothing half-written;
what is skipped is said; a run over nothing is not "All checks passed!"."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from click.testing import CliRunner

import loopcheck.analysis
import loopcheck.cli.commands
from loopcheck.cli.commands import main
from loopcheck.workspace.files import MAX_LINE_LENGTH

from .helpers import BAD, CLIP, FIXED, LC101_LINE, cli

NO_FILES = "loopcheck: warning: No Python files found under the given path(s)\n"


@pytest.fixture
def project(tmp_path, monkeypatch):
    (tmp_path / "bad.py").write_text(BAD)
    monkeypatch.chdir(tmp_path)
    return tmp_path


# ------------------------------------------------------------------ F2: big files bounded


def test_a_file_that_is_not_pytorch_code_is_never_parsed_by_libcst(project, monkeypatch):
    """A file with the signs of a loop but no PyTorch import: CPython's parser says whether
    it is Python (LC001), LibCST is not run (a one-line 1 MB list cost LibCST 17.8 s)."""
    def no_libcst(*args, **kwargs):
        raise AssertionError("LibCST parse")

    monkeypatch.setattr(loopcheck.analysis, "parse_module", no_libcst)
    (project / "data.py").write_text("X = [" + ", ".join(map(str, range(20000))) + "]\nmodel.train()\n")
    (project / "broken.py").write_text("model.train()\ndef f(:\n")
    result = cli("--output-format", "concise", "data.py", "broken.py")
    assert result.exit_code == 1, result.output
    assert result.stdout.splitlines()[0] == "broken.py:2:7: LC001 SyntaxError: invalid syntax"


def test_a_line_too_long_to_parse_is_skipped_with_a_warning(project):
    line = "X = [" + ", ".join("1" for _ in range(MAX_LINE_LENGTH // 3 + 10)) + "]"
    (project / "data.py").write_text(f"import torch\n{line}\nloss.backward()\n")
    result = cli("--output-format", "concise", "data.py", "bad.py")
    assert result.exit_code == 1
    assert result.stdout.startswith(LC101_LINE)
    assert result.stderr == (
        f"loopcheck: warning: skipped data.py: line 2 is {len(line):,} characters long, over the "
        f"{MAX_LINE_LENGTH:,} a line loopcheck parses (generated data?); set max-file-size = 0 (or "
        "--max-file-size 0) to check it\n"
    )
    # no limit: checked (and standard input is judged the same way)
    assert cli("--max-file-size", "0", "data.py").stderr == ""
    result = cli("-", "--stdin-filename", "data.py", input=(project / "data.py").read_bytes())
    assert "skipped data.py: line 2 is" in result.stderr


# ------------------------------------------------------------------ F4, F5: clear errors


def test_a_max_file_size_too_large_is_an_error_naming_the_key(project):
    (project / "pyproject.toml").write_text("[tool.loopcheck]\nmax-file-size = 99999999999999999999\n")
    result = cli("bad.py")
    assert result.exit_code == 2
    assert "internal error" not in result.output
    assert "pyproject.toml: [tool.loopcheck] max-file-size: 99999999999999999999 is too large" in result.stderr
    result = cli("--isolated", "--max-file-size", "99999999999999999999", "bad.py")
    assert result.exit_code == 2 and "'--max-file-size'" in result.stderr and "internal error" not in result.output


def test_a_max_file_size_far_above_the_file_reads_only_the_file(project):
    """(10**15 used to allocate that much for the read: MemoryError)."""
    result = cli("--isolated", "--output-format", "concise", "--max-file-size", str(10**15), "bad.py")
    assert result.exit_code == 1 and result.stdout.startswith(LC101_LINE)


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
def test_a_report_to_a_full_disk_is_one_error(project):
    result = cli("--output-format", "concise", "-o", "/dev/full", "bad.py")
    assert result.exit_code == 2
    assert result.stderr == "loopcheck: cannot write /dev/full: No space left on device\n"


def test_a_report_that_fails_half_way_is_removed(project, monkeypatch):
    def half(run, findings, out, **kwargs):
        out.write("bad.py:9:5: LC101 ...\n")
        out.flush()
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(loopcheck.cli.commands, "write_report", half)
    result = cli("-o", "report.txt", "bad.py")
    assert result.exit_code == 2
    assert result.stderr == "loopcheck: cannot write report.txt: No space left on device\n"
    assert not (project / "report.txt").exists()


# ------------------------------------------------------------------ F6: hard links


@pytest.mark.skipif(not hasattr(os, "link"), reason="needs hard links")
def test_fix_keeps_a_hard_link(project):
    os.link(project / "bad.py", project / "other.py")
    inode = os.stat(project / "bad.py").st_ino
    result = cli("--fix", "bad.py")
    assert result.exit_code == 0, result.output
    assert (project / "bad.py").read_text() == FIXED
    assert (project / "other.py").read_text() == FIXED  # the other name sees the fix
    assert os.stat(project / "bad.py").st_ino == inode and os.stat(project / "bad.py").st_nlink == 2


def test_a_hard_linked_file_changed_meanwhile_is_left_as_it_is(project):
    from loopcheck.workspace.files import FileChanged, write_atomic

    os.link(project / "bad.py", project / "other.py")
    with pytest.raises(FileChanged):
        write_atomic(project / "bad.py", FIXED.encode(), b"something else")
    assert (project / "other.py").read_text() == BAD


# ------------------------------------------------------------------ NUL bytes


def test_a_nul_byte_is_a_syntax_error(project):
    (project / "nul.py").write_bytes(b"import torch\nx = 'a\x00b'\n")
    result = cli("--output-format", "concise", "nul.py")
    assert result.exit_code == 1
    assert result.stdout.splitlines()[0] == "nul.py:2:7: LC001 SyntaxError: source code cannot contain null bytes"
    # a file with no sign of a training loop too: CPython refuses it whatever it holds
    (project / "plain.py").write_bytes(b"x = 1\x00\n")
    assert "plain.py:1:6: LC001" in cli("--output-format", "concise", "plain.py").stdout


# ------------------------------------------------------------------ silent successes


def test_an_empty_directory_is_no_python_files(project):
    (project / "empty").mkdir()
    result = cli("empty")
    assert (result.exit_code, result.stdout, result.stderr) == (0, "", NO_FILES)


def test_only_a_text_file_is_no_python_files(project):
    (project / "notes.txt").write_text(BAD)
    result = cli("notes.txt")
    assert result.exit_code == 0 and result.stdout == ""
    assert result.stderr == "loopcheck: warning: skipped notes.txt: not a Python file (.py, .pyw, .pyi, .ipynb)\n" + NO_FILES
    assert cli("--show-files", "notes.txt").stderr.endswith(NO_FILES)
    # a script without a suffix is checked, as ruff does
    (project / "train").write_text(BAD)
    assert cli("--output-format", "concise", "train").stdout.startswith("train:9:5: LC101")


def test_only_a_file_skipped_for_its_size_is_no_python_files(project):
    result = cli("--max-file-size", "10", "bad.py")
    assert result.exit_code == 0 and result.stdout == ""
    assert result.stderr.endswith(NO_FILES) and "skipped bad.py" in result.stderr
    assert json.loads(cli("--max-file-size", "10", "--output-format", "json", "bad.py").stdout) == []


def test_a_warm_cache_of_a_clean_file_is_not_no_python_files(project, tmp_path):
    (project / "good.py").write_text(BAD.replace(CLIP, ""))
    cache = str(tmp_path / "cache")
    for _ in range(2):
        result = cli("--cache-dir", cache, "good.py")
        assert (result.exit_code, result.stderr) == (0, "")


def test_an_unknown_command_is_said_to_be_unknown(project):
    def first(*args: str):  # the word first on the command line (cli() puts --preview there)
        return CliRunner().invoke(main, list(args))

    result = first("chek")
    assert result.exit_code == 2
    assert "unknown command 'chek'" in result.stderr and "loopcheck check chek" in result.stderr
    (project / "chek").write_text(BAD)  # a path of that name is checked
    assert first("chek", "--preview").exit_code == 1
    assert first("missing.py").exit_code == 2  # (a missing file stays a missing path)
    assert "no such file" in first("missing.py").stderr


# ------------------------------------------------------------------ fix titles name the edit


def test_the_edits_of_a_move_move_the_statement_the_title_names(project):
    """The fix of a clip just before the backward deletes the clip's line and inserts it after
    the backward (the edit used to move ``loss.backward()`` up instead)."""
    from loopcheck.analysis import check_source
    from loopcheck.fixes import attach_fixes

    src = BAD.replace("    loss = model(x).pow(2).mean()\n", "").replace(
        "    optimizer.zero_grad()\n", "    optimizer.zero_grad()\n    loss = model(x).pow(2).mean()\n")
    [finding] = attach_fixes(src, check_source(src, "bad.py"))
    assert finding.fix.message.startswith("Move `clip_grad_norm_()`")
    assert [e.content for e in finding.fix.edits] == ["", CLIP]
    zero = src.replace("    optimizer.zero_grad()\n", "").replace(
        "    loss.backward()\n", "    loss.backward()\n    optimizer.zero_grad()\n").replace(CLIP, "")
    [finding] = attach_fixes(zero, check_source(zero, "z.py"))
    assert finding.code == "LC103" and finding.fix.message.startswith("Move `optimizer.zero_grad()`")
    assert [e.content for e in finding.fix.edits] == ["", "    optimizer.zero_grad()\n"]


# ------------------------------------------------------------------ the language server


def _message(body: str) -> bytes:
    data = body.encode()
    return b"Content-Length: %d\r\n\r\n" % len(data) + data


def test_the_language_server_says_a_malformed_message_in_one_line(tmp_path):
    pytest.importorskip("pygls")
    data = b"".join(_message(m) for m in (
        '{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"capabilities": {}}}',
        "{not json",
        '{"jsonrpc": "2.0", "id": 2, "method": "textDocument/hover", "params": 5}',
        '{"jsonrpc": "2.0", "id": 3, "method": "shutdown"}',
        '{"jsonrpc": "2.0", "method": "exit"}',
    ))
    done = subprocess.run([sys.executable, "-m", "loopcheck", "server"], cwd=tmp_path, input=data,
                          capture_output=True, timeout=60)
    lines = done.stderr.decode().splitlines()
    assert "Traceback" not in done.stderr.decode()
    assert len(lines) == 2, lines
    assert lines[0].startswith("loopcheck server: Unable to handle message: JSONDecodeError:")
    assert lines[1].startswith("loopcheck server: Unable to deserialize message:")
    assert done.returncode == 0
