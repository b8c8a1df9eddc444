"""9.2 Input size: files over ``max-file-size`` (bytes; ``--max-file-size``) are skipped with a
warning and never read whole; the rest of the run is unchanged."""

from __future__ import annotations

import pytest

from loopcheck.workspace.config import DEFAULT_MAX_FILE_SIZE

from .helpers import BAD, LC101_LINE, cli


@pytest.fixture
def project(tmp_path, monkeypatch):
    (tmp_path / "bad.py").write_text(BAD)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_default_limit_skips_a_larger_file_with_a_warning(project):
    big = BAD + "#" * (DEFAULT_MAX_FILE_SIZE - len(BAD)) + "\n"  # one byte over, and a finding inside
    (project / "big.py").write_text(big)
    result = cli("--output-format", "concise", ".")
    assert result.exit_code == 1  # bad.py's finding; a skipped file is not an error
    assert result.stdout.splitlines()[0].startswith(LC101_LINE)
    assert "big.py" not in result.stdout
    assert result.stderr == (
        f"loopcheck: warning: skipped big.py: {len(big):,} bytes is over the max-file-size of "
        f"{DEFAULT_MAX_FILE_SIZE:,} bytes; raise max-file-size (or --max-file-size) to check it\n"
    )


def test_option_and_configuration_set_the_limit(project):
    (project / "pyproject.toml").write_text("[tool.loopcheck]\nmax-file-size = 100\n")
    result = cli("--output-format", "concise", "bad.py")
    assert result.exit_code == 0
    assert f"skipped bad.py: {len(BAD)} bytes is over the max-file-size of 100 bytes" in result.stderr
    # nothing was checked: said as ruff says it, not "All checks passed!" (issue 36)
    assert result.stderr.endswith("loopcheck: warning: No Python files found under the given path(s)\n")
    assert result.stdout == ""
    result = cli("--output-format", "concise", "--max-file-size", "0", "bad.py")  # 0: no limit
    assert result.exit_code == 1 and result.stderr == ""
    result = cli("--output-format", "concise", "--max-file-size", "400", "bad.py")
    assert result.exit_code == 1


def test_a_bad_limit_is_an_error_naming_it(project):
    (project / "pyproject.toml").write_text('[tool.loopcheck]\nmax-file-size = "1MB"\n')
    result = cli("bad.py")
    assert result.exit_code == 2
    assert "max-file-size: expected a number of bytes (0 for no limit), got a string ('1MB')" in result.output
    assert cli("--max-file-size", "-1", "bad.py").exit_code == 2


def test_standard_input_over_the_limit(project):
    data = BAD.encode()
    result = cli("--max-file-size", "100", "-", "--stdin-filename", "bad.py", input=data)
    assert result.exit_code == 0
    assert f"skipped bad.py: {len(BAD)} bytes is over the max-file-size of 100 bytes" in result.stderr
    # --fix - gives back what it did not check, byte for byte
    result = cli("--fix", "--max-file-size", "100", "-", "--stdin-filename", "bad.py", input=data)
    assert result.stdout_bytes == data
