"""Configuration files: discovery (closest wins), keys, errors, and command-line overrides."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from loopcheck.cli.commands import main
from loopcheck.workspace.config import FILE_KEYS, KEYS, Options, select_codes
from test_cli import BAD, MESSAGE

REPORT = f"bad.py:9:5: LC101 [*] {MESSAGE}\nFound 1 error.\n[*] 1 fixable with `--fix`.\n"
KNOWN = ", ".join([*KEYS, *FILE_KEYS])


def run(*args: str):
    """Run the check with ``--preview``: LC101, the rule BAD breaks, is in preview (the
    configuration's ``preview`` and the default selection are tested in tests/test_preview.py)."""
    return CliRunner().invoke(main, ["--preview", *args])


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def files_reported(result) -> list[str]:
    return sorted({line.split(":")[0] for line in result.output.splitlines() if ": LC" in line})


@pytest.fixture
def project(tmp_path: Path, monkeypatch) -> Path:
    write(tmp_path / "bad.py", BAD)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_pyproject_table(project):
    write(project / "pyproject.toml", '[project]\nname = "x"\n\n[tool.loopcheck]\nignore = ["LC101"]\n')
    assert (run("bad.py").exit_code, run("bad.py").output) == (0, "All checks passed!\n")
    assert run("--isolated", "bad.py").output == REPORT


def test_pyproject_without_the_table_is_passed_over(project):
    write(project / "sub" / "pyproject.toml", '[project]\nname = "x"\n')
    write(project / "pyproject.toml", '[tool.loopcheck]\nselect = ["LC3"]\n')
    write(project / "sub" / "bad.py", BAD)
    assert run("sub/bad.py").exit_code == 0  # sub's pyproject has no table: the parent's applies


def test_loopcheck_toml_has_top_level_keys_and_wins_over_pyproject(project):
    write(project / "pyproject.toml", '[tool.loopcheck]\nselect = ["LC1"]\n')
    write(project / "loopcheck.toml", 'select = ["LC3"]\n')
    assert run("bad.py").exit_code == 0
    (project / "loopcheck.toml").unlink()
    assert run("bad.py").output == REPORT


def test_closest_configuration_wins(project):
    write(project / "loopcheck.toml", 'ignore = ["LC101"]\n')
    write(project / "sub" / "loopcheck.toml", 'select = ["ALL"]\n')
    write(project / "sub" / "bad.py", BAD)
    write(project / "sub" / "deeper" / "bad.py", BAD)
    assert files_reported(run(".")) == ["sub/bad.py", "sub/deeper/bad.py"]
    assert files_reported(run("bad.py", "sub/deeper/bad.py")) == ["sub/deeper/bad.py"]


def test_configuration_is_found_from_the_checked_path_not_the_current_directory(project, monkeypatch):
    write(project / "proj" / "loopcheck.toml", 'ignore = ["LC1"]\n')
    write(project / "proj" / "bad.py", BAD)
    write(project / "here" / "loopcheck.toml", 'select = ["ALL"]\n')
    monkeypatch.chdir(project / "here")
    assert run("../proj/bad.py").exit_code == 0


def test_extend_select(project):
    write(project / "loopcheck.toml", 'select = ["LC3"]\nextend-select = ["LC101"]\n')
    assert run("bad.py").output == REPORT


def test_per_file_ignores(project):
    write(project / "loopcheck.toml", '[per-file-ignores]\n"tests/**" = ["LC1"]\n"scratch_*.py" = ["LC101"]\n')
    for name in ("tests/bad.py", "tests/unit/bad.py", "scratch_1.py", "lib/scratch_2.py", "lib/bad.py"):
        write(project / name, BAD)
    assert files_reported(run(".")) == ["bad.py", "lib/bad.py"]


def test_per_file_ignores_negated(project):
    write(project / "loopcheck.toml", '[per-file-ignores]\n"!train_*.py" = ["LC101"]\n')
    write(project / "train_a.py", BAD)
    assert files_reported(run(".")) == ["train_a.py"]


def test_extend_exclude_and_exclude(project):
    write(project / "generated" / "bad.py", BAD)
    write(project / "build" / "bad.py", BAD)
    write(project / "pkg" / "gen_model.py", BAD)
    assert files_reported(run(".")) == ["bad.py", "generated/bad.py", "pkg/gen_model.py"]
    write(project / "loopcheck.toml", 'extend-exclude = ["generated", "gen_*.py"]\n')
    assert files_reported(run(".")) == ["bad.py"]
    write(project / "loopcheck.toml", "exclude = []\n")  # replaces the default list: build/ is walked
    assert files_reported(run(".")) == ["bad.py", "build/bad.py", "generated/bad.py", "pkg/gen_model.py"]
    # Paths named on the command line are checked unless --force-exclude.
    write(project / "loopcheck.toml", 'extend-exclude = ["generated"]\n')
    assert files_reported(run("generated/bad.py")) == ["generated/bad.py"]
    assert files_reported(run("generated", "build")) == ["build/bad.py", "generated/bad.py"]
    # nothing left to check: said as ruff says it (issue 36), not "All checks passed!"
    assert run("--force-exclude", "generated/bad.py").output == (
        "loopcheck: warning: No Python files found under the given path(s)\n")


def test_exclude_from_the_command_line(project):
    write(project / "generated" / "bad.py", BAD)
    assert files_reported(run("--extend-exclude", "generated", ".")) == ["bad.py"]
    assert files_reported(run("--exclude", "/bad.py", ".")) == ["generated/bad.py"]  # anchored
    assert files_reported(run("--exclude", "bad.py", ".")) == []  # a name at any depth


def test_respect_gitignore(project):
    write(project / ".gitignore", "ignored.py\n")
    write(project / "ignored.py", BAD)
    assert files_reported(run(".")) == ["bad.py"]
    write(project / "loopcheck.toml", "respect-gitignore = false\n")
    assert files_reported(run(".")) == ["bad.py", "ignored.py"]
    assert files_reported(run("--respect-gitignore", ".")) == ["bad.py"]


def test_config_option_uses_one_file(project):
    write(project / "loopcheck.toml", 'ignore = ["LC101"]\n')
    write(project / "conf" / "strict.toml", 'select = ["ALL"]\n[per-file-ignores]\n"sub/*.py" = ["LC101"]\n')
    write(project / "sub" / "bad.py", BAD)
    result = run("--config", "conf/strict.toml", ".")
    assert files_reported(result) == ["bad.py"]  # its patterns are relative to the current directory


def test_config_and_isolated_are_exclusive(project):
    write(project / "loopcheck.toml", "")
    result = run("--config", "loopcheck.toml", "--isolated", "bad.py")
    assert result.exit_code == 2
    assert "--config and --isolated cannot be used together" in result.output


def test_command_line_overrides_the_file(project):
    write(project / "loopcheck.toml", 'select = ["LC3"]\nignore = ["LC101"]\n')
    assert run("bad.py").exit_code == 0
    assert run("--select", "LC101", "bad.py").output == REPORT  # --select replaces select and ignore
    assert run("--extend-select", "LC101", "bad.py").output == REPORT  # a later layer re-enables it
    assert run("--extend-select", "LC2", "bad.py").exit_code == 0  # and keeps the file's ignore
    write(project / "loopcheck.toml", 'select = ["LC1"]\n')
    assert run("--ignore", "LC101", "bad.py").exit_code == 0


def test_more_specific_codes_win():
    # with preview on, as the LC1 rules are in preview: a prefix then enables them
    assert select_codes([Options(select=("LC101",), ignore=("LC1",))], preview=True) == {"LC101"}
    assert "LC101" not in select_codes([Options(select=("LC1",), ignore=("LC101",))], preview=True)
    assert select_codes([Options(select=("LC1",)), Options(ignore=("LC102",))], preview=True) == {
        "LC101", "LC103", "LC104", "LC105", "LC106", "LC107"}
    assert select_codes([Options(ignore=("LC101",)), Options(select=("LC101",))], preview=True) == {"LC101"}


@pytest.mark.parametrize(
    ("toml", "message"),
    [
        ('selec = ["LC1"]\n', f"unknown key 'selec' (did you mean 'select'?); known keys: {KNOWN}"),
        ('select = "LC1"\n', "select: expected a list of strings, got a string ('LC1')"),
        ('ignore = ["XYZ"]\n', "ignore: unknown rule code or prefix 'XYZ'"),
        ("respect-gitignore = 1\n", "respect-gitignore: expected true or false, got an integer (1)"),
        ('per-file-ignores = ["a"]\n', "per-file-ignores: expected a table of glob = [codes], got a list"),
        ('[per-file-ignores]\n"a.py" = ["LC99"]\n', "per-file-ignores.'a.py': unknown rule code or prefix 'LC99'"),
        ("exclude = [1]\n", "exclude: expected a list of strings, got a list"),
    ],
)
def test_bad_loopcheck_toml(project, toml, message):
    path = write(project / "loopcheck.toml", toml)
    result = run("bad.py")
    assert result.exit_code == 2
    assert result.output == f"Error: {path}: {message}\n"


def test_bad_pyproject_names_the_table(project):
    path = write(project / "pyproject.toml", "[tool.loopcheck]\nextend_select = []\n")
    result = run("bad.py")
    assert result.exit_code == 2
    assert result.output == (
        f"Error: {path}: [tool.loopcheck] unknown key 'extend_select' (did you mean 'extend-select'?); "
        f"known keys: {KNOWN}\n"
    )


def test_invalid_toml(project):
    path = write(project / "loopcheck.toml", "select = [\n")
    result = run("bad.py")
    assert result.exit_code == 2
    assert result.output.startswith(f"Error: {path}: invalid TOML: ")


def test_a_bad_file_met_while_walking_is_an_error_too(project):
    path = write(project / "sub" / "loopcheck.toml", "colour = true\n")
    write(project / "sub" / "bad.py", BAD)
    result = run(".")
    assert result.exit_code == 2
    assert result.output.startswith(f"Error: {path}: unknown key 'colour'")


def test_isolated_ignores_a_bad_file(project):
    write(project / "loopcheck.toml", "colour = true\n")
    assert run("--isolated", "bad.py").output == REPORT


def test_the_readme_example_is_valid(project):
    readme = (Path(__file__).resolve().parent.parent / "README.md").read_text()
    example = readme.split("```toml\n", 1)[1].split("```", 1)[0]
    assert example.startswith("[tool.loopcheck]\n")
    write(project / "pyproject.toml", example)
    write(project / "tests" / "bad.py", BAD)
    write(project / "scratch" / "bad.py", BAD)
    assert files_reported(run(".")) == ["bad.py", "tests/bad.py"]


def test_an_entry_is_judged_by_its_directory_prefix_as_by_its_whole_path(tmp_path):
    from loopcheck.workspace.config import Resolver

    write(tmp_path / "loopcheck.toml", 'extend-exclude = ["gen_*.py", "/pkg/skip", "data/"]\n')
    settings = Resolver(Options(), cwd=tmp_path).for_directory(tmp_path)
    for directory in (tmp_path, tmp_path / "pkg", tmp_path / "pkg" / "deep", tmp_path.parent):
        prefix = settings.entry_prefix(directory)
        for name, is_dir in (("gen_x.py", False), ("skip", True), ("data", True), ("train.py", False)):
            whole = settings.is_excluded(directory / name, is_dir)
            assert settings.exclude.match_file(prefix + name + ("/" if is_dir else "")) == whole, (directory, name)
    assert settings.entry_prefix(tmp_path) == ""
    assert settings.entry_prefix(tmp_path / "pkg" / "deep") == "pkg/deep/"


# ------------------------------------------------------------ extend, --config KEY=VALUE, fixable


LC301_BAD = (Path(__file__).resolve().parent.parent / "fixtures" / "LC301_bad.py").read_text()


def test_extend_inherits_another_file_and_its_own_keys_win(project):
    (project / "proj" / "sub").mkdir(parents=True)
    write(project / "shared.toml",
          'ignore = ["LC301"]\nunfixable = ["LC101"]\nextend-exclude = ["proj/skipped/*.py"]\n')
    write(project / "proj" / "pyproject.toml",
          '[tool.loopcheck]\nextend = "../shared.toml"\nextend-per-file-ignores = { "sub/*.py" = ["LC302"] }\n')
    (project / "proj" / "skipped").mkdir()
    for name in ("a.py", "sub/a.py", "skipped/a.py"):
        (project / "proj" / name).write_text(BAD)
    (project / "proj" / "lc301.py").write_text(LC301_BAD)
    result = run("--output-format", "concise", "proj")
    assert result.exit_code == 1
    # LC301 ignored and LC101 unfixable (inherited), proj/skipped/ excluded (rebased to proj/)
    assert result.output == (f"proj/a.py:9:5: LC101 {MESSAGE}\nproj/sub/a.py:9:5: LC101 {MESSAGE}\n"
                             "Found 2 errors.\n")
    # the extending file's own keys win
    write(project / "proj" / "pyproject.toml", '[tool.loopcheck]\nextend = "../shared.toml"\nselect = ["LC301"]\n'
                                               'fixable = ["ALL"]\n')
    result = run("--output-format", "concise", "proj")
    assert result.output.startswith("proj/lc301.py:") and "LC101" not in result.output


def test_extend_errors_name_the_file(project):
    path = write(project / "loopcheck.toml", 'extend = "nowhere.toml"\n')
    assert run("bad.py").output == f"Error: {path}: extend: no such file 'nowhere.toml'\n"
    write(project / "other.toml", 'extend = "loopcheck.toml"\n')
    write(project / "loopcheck.toml", 'extend = "other.toml"\n')
    result = run("bad.py")
    assert result.exit_code == 2
    assert result.output == f"Error: {project / 'other.toml'}: extend: 'loopcheck.toml' extends this file again (a cycle)\n"


def test_config_key_value_overrides_every_file(project):
    write(project / "loopcheck.toml", 'ignore = ["LC302"]\n')
    assert run("--config", "ignore = ['LC101']", "bad.py").output == "All checks passed!\n"
    assert run("--config", "select = ['clip-before-backward']", "--ignore", "LC101", "bad.py").exit_code == 0
    result = run("--output-format", "concise", "--config", "unfixable = ['LC1']", "bad.py")
    assert result.output == f"bad.py:9:5: LC101 {MESSAGE}\nFound 1 error.\n"
    result = run("--config", "ignore = 3", "bad.py")
    assert result.exit_code == 2
    assert "Invalid value for --config 'ignore = 3': ignore: expected a list of strings, got an integer (3)" in result.output
    result = run("--config", "nowhere.toml", "bad.py")
    assert result.exit_code == 2
    assert "no such configuration file 'nowhere.toml' (an override is a TOML 'key = value')" in result.output


def test_extend_per_file_ignores_on_the_command_line(project):
    (project / "tests").mkdir()
    (project / "tests" / "bad.py").write_text(BAD)
    result = run("--output-format", "concise", "--extend-per-file-ignores", "tests/*.py:LC101,LC302", ".")
    assert result.output == f"bad.py:9:5: LC101 [*] {MESSAGE}\nFound 1 error.\n[*] 1 fixable with `--fix`.\n"
    result = run("--extend-per-file-ignores", "LC101", ".")
    assert result.exit_code == 2 and "expected PATTERN:CODES, got 'LC101'" in result.output


def test_fixable_in_configuration(project):
    write(project / "loopcheck.toml", 'unfixable = ["clip-before-backward"]\n')
    assert json.loads(run("--output-format", "json", "bad.py").output)[0]["fix"] is None
    write(project / "loopcheck.toml", 'fixable = ["LC3"]\nextend-fixable = ["LC101"]\n')
    assert json.loads(run("--output-format", "json", "bad.py").output)[0]["fix"] is not None


def test_rebase_pattern():
    from loopcheck.workspace.config import rebase_pattern

    root = Path("/r")
    assert rebase_pattern("*.py", root, root / "a") == "*.py"  # any depth: unchanged
    assert rebase_pattern("**/gen/*.py", root, root / "a") == "**/gen/*.py"
    assert rebase_pattern("a/gen/*.py", root, root / "a") == "/gen/*.py"  # the extending file is below
    assert rebase_pattern("!a/gen/", root, root / "a") == "!/gen/"
    assert rebase_pattern("b/gen/*.py", root, root / "a") is None  # matches nothing below /r/a
    assert rebase_pattern("/gen/*.py", root / "a", root) == "/a/gen/*.py"  # the extended file is below
