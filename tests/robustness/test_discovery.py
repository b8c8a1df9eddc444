"""9.3, 9.4, 10.11 Which files are checked: as git lists them inside a work tree, as pathspec
reads .gitignore outside one (never failing on a line git accepts); bad patterns in the
configuration are errors naming them; symlink loops, FIFOs and unreadable directories are
reported and the search goes on."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from loopcheck.workspace.config import Options, Resolver
from loopcheck.workspace.discovery import gitignore_spec, iter_source_files

from .helpers import BAD, cli, cli_process, reported_files

needs_git = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")


@pytest.fixture
def git_env(tmp_path, monkeypatch):
    """No user or system git configuration; the global one is ours (core.excludesFile)."""
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(home / ".gitconfig"))
    for var in ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE"):
        monkeypatch.delenv(var, raising=False)
    return home


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True).stdout


def tree(root: Path, files: list[str], text: str = BAD) -> None:
    for name in files:
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def listed(root: Path, **kw) -> list[str]:
    """What the search finds under ``root``, with no ``exclude`` patterns (``build`` is one of
    the defaults)."""
    settings_for = Resolver(Options(exclude=()), isolated=True).for_directory
    return sorted(p.relative_to(root).as_posix() for p in iter_source_files([str(root)], settings_for, **kw))


def git_listed(root: Path) -> list[str]:
    out = git(root, "ls-files", "--cached", "--others", "--exclude-standard", "-z")
    return sorted(name for name in out.split("\0") if name.endswith((".py", ".ipynb")))


FILES = ["a.py", "build/x.py", "build\\/y.py", "z/b.py", "zz/c.py", "logs/d.py", "logs/keep/e.py",
         "pkg/sub/f.py", "pkg/sub/g.py", "pkg/h.py", "notes/private.py", "global.py"]
GITIGNORE = "build\\\n!\n[z-a]\nlogs/*\n!logs/keep/\n"  # a trailing backslash, a lone !, a reversed range


@needs_git
def test_gitignore_lines_git_accepts_are_read_as_git_reads_them(tmp_path, git_env):
    """`build\\`, a lone `!`, `[z-a]` (which git's wildmatch makes `[z]`): pathspec raised on
    them with a traceback; the walk outside git now lists what git lists."""
    repo = tmp_path / "repo"
    tree(repo, FILES)
    (repo / ".gitignore").write_text(GITIGNORE)
    git(repo, "init", "-q")
    expected = git_listed(repo)
    assert "z/b.py" not in expected and "zz/c.py" in expected and "logs/keep/e.py" in expected
    assert listed(repo) == expected  # through git
    plain = tmp_path / "plain"  # the same tree outside any repository: pathspec
    shutil.copytree(repo, plain, ignore=shutil.ignore_patterns(".git"))
    assert listed(plain) == expected
    assert listed(repo, use_git=False) == expected


@needs_git
def test_inside_git_the_files_are_those_git_lists(tmp_path, git_env, monkeypatch):
    """Nested .gitignore with a `!` re-include, .git/info/exclude and the global excludes file,
    and a tracked file that a .gitignore matches (git still lists it)."""
    repo = tmp_path / "repo"
    tree(repo, FILES + ["tracked_ignored.py"])
    (repo / "pkg" / ".gitignore").write_text("sub/*.py\n!sub/g.py\n")
    git(repo, "init", "-q")
    (repo / ".git" / "info" / "exclude").write_text("notes/\n")
    (git_env / "global-ignore").write_text("global.py\n")
    (git_env / ".gitconfig").write_text(f"[core]\n\texcludesFile = {git_env / 'global-ignore'}\n")
    git(repo, "add", "tracked_ignored.py")
    (repo / ".gitignore").write_text("tracked_ignored.py\nbuild/\n")
    expected = git_listed(repo)
    assert "pkg/sub/g.py" in expected and "pkg/sub/f.py" not in expected
    assert "notes/private.py" not in expected and "global.py" not in expected
    assert "tracked_ignored.py" in expected
    assert listed(repo) == expected
    monkeypatch.chdir(repo)
    result = cli("--output-format", "concise", "--quiet", ".")
    assert reported_files(result.stdout) == expected
    # exclude still applies on top of git; --no-respect-gitignore walks everything
    result = cli("--output-format", "concise", "--quiet", "--extend-exclude", "pkg", ".")
    assert not any(f.startswith("pkg/") for f in reported_files(result.stdout))
    result = cli("--output-format", "concise", "--quiet", "--no-respect-gitignore", ".")
    assert "pkg/sub/f.py" in reported_files(result.stdout) and "notes/private.py" in reported_files(result.stdout)


@needs_git
def test_git_cannot_be_steered_by_the_environment_or_the_repository(tmp_path, git_env, monkeypatch):
    """GIT_DIR of a hook does not point the listing elsewhere, and a repository's
    core.fsmonitor command is not run."""
    repo = tmp_path / "repo"
    tree(repo, ["a.py"])
    git(repo, "init", "-q")
    git(repo, "add", "a.py")
    marker = tmp_path / "ran"
    git(repo, "config", "core.fsmonitor", f"touch {marker}; false")
    other = tmp_path / "other"
    tree(other, ["elsewhere.py"])
    git(other, "init", "-q")
    monkeypatch.setenv("GIT_DIR", str(other / ".git"))
    assert listed(repo) == ["a.py"]
    assert not marker.exists()


# -------------------------------------------------------------------- bad patterns


@pytest.mark.parametrize("pattern", ["build\\", "!", "[z-a]"])
def test_a_bad_pattern_in_the_configuration_is_an_error_naming_it(tmp_path, monkeypatch, pattern):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "bad.py").write_text(BAD)
    toml = pattern.replace("\\", "\\\\")
    for table in (f'exclude = ["{toml}"]', f'extend-exclude = ["{toml}"]', f'[tool.loopcheck.per-file-ignores]\n"{toml}" = ["LC101"]'):
        (tmp_path / "pyproject.toml").write_text(f"[tool.loopcheck]\n{table}\n")
        result = cli("bad.py")
        assert result.exit_code == 2, table
        assert f"invalid pattern {pattern!r}" in result.output
        assert "Traceback" not in result.output
    (tmp_path / "pyproject.toml").unlink()
    for option in ("--exclude", "--extend-exclude"):
        result = cli(option, pattern, "bad.py")
        assert result.exit_code == 2
        assert "Invalid value for" in result.output and option in result.output
        assert f"invalid pattern {pattern!r}" in result.output


def test_deeply_nested_toml_is_a_clear_error(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "bad.py").write_text(BAD)
    (tmp_path / "pyproject.toml").write_text("[tool.loopcheck]\nx = " + "[" * 5000 + "]" * 5000 + "\n")
    result = cli("bad.py")
    assert result.exit_code == 2
    assert result.output == f"Error: {tmp_path / 'pyproject.toml'}: invalid TOML: arrays or tables nested too deeply\n"


def test_gitignore_spec_reads_reversed_ranges_as_git():
    spec = gitignore_spec(["[z-a]", "build\\", "!", "*.log"])
    assert spec.match_file("z") and not spec.match_file("a") and not spec.match_file("m")
    assert spec.match_file("x.log") and not spec.match_file("build")


# -------------------------------------------------------------------- the file system


@pytest.mark.parametrize("with_git", [True, False])
def test_symlink_loops_and_fifos_are_reported_and_the_search_goes_on(tmp_path, git_env, with_git):
    if with_git and shutil.which("git") is None:
        pytest.skip("git is not installed")
    (tmp_path / "bad.py").write_text(BAD)
    (tmp_path / "loop.py").symlink_to("loop.py")
    (tmp_path / "dangling.py").symlink_to("missing.py")
    os.mkfifo(tmp_path / "pipe.py")  # opening it for reading would block forever
    if with_git:
        git(tmp_path, "init", "-q")
        git(tmp_path, "add", "bad.py", "loop.py", "dangling.py")
    done = cli_process("--output-format", "concise", ".", cwd=tmp_path, timeout=30)
    assert done.returncode == 2
    assert reported_files(done.stdout.decode()) == ["bad.py"]
    errors = set(done.stderr.decode().splitlines())
    assert "loopcheck: cannot read loop.py: Too many levels of symbolic links" in errors
    assert "loopcheck: cannot read dangling.py: No such file or directory" in errors
    if not with_git:  # git does not list FIFOs at all
        assert ("loopcheck: warning: skipped pipe.py: not a regular file (a FIFO, socket or device is never "
                "read)") in errors
    assert "Found 1 error." in done.stdout.decode()


def test_a_fifo_named_on_the_command_line_is_not_read(tmp_path):
    (tmp_path / "bad.py").write_text(BAD)
    os.mkfifo(tmp_path / "pipe.py")
    done = cli_process("--output-format", "concise", "pipe.py", "bad.py", cwd=tmp_path, timeout=30)
    assert done.returncode == 2
    assert done.stderr.decode() == (
        "loopcheck: cannot read pipe.py: not a regular file (a FIFO, socket or device is not read)\n"
    )
    assert reported_files(done.stdout.decode()) == ["bad.py"]


def _unprivileged() -> list[str] | None:
    """A command prefix that runs without the power to read unreadable directories."""
    if os.geteuid() != 0:
        return []
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        return None
    cmd = [setpriv, "--bounding-set=-dac_override,-dac_read_search"]
    if subprocess.run([*cmd, "true"], capture_output=True).returncode != 0:
        return None
    return cmd


@pytest.mark.parametrize("with_git", [True, False])
def test_an_unreadable_directory_is_reported_and_the_search_goes_on(tmp_path, git_env, with_git):
    import sys

    prefix = _unprivileged()
    if prefix is None:
        pytest.skip("cannot drop the power to read unreadable directories here")
    if with_git and shutil.which("git") is None:
        pytest.skip("git is not installed")
    (tmp_path / "bad.py").write_text(BAD)
    locked = tmp_path / "locked"
    locked.mkdir()
    (locked / "hidden.py").write_text(BAD)
    if with_git:
        git(tmp_path, "init", "-q")
    locked.chmod(0)
    try:
        done = subprocess.run(
            [*prefix, sys.executable, "-m", "loopcheck", "--preview", "--output-format", "concise", "."],
            cwd=tmp_path, capture_output=True, timeout=60,
        )
    finally:
        locked.chmod(0o755)
    assert done.returncode == 2, done.stderr
    assert done.stderr.decode() == "loopcheck: cannot read directory locked: Permission denied\n"
    assert reported_files(done.stdout.decode()) == ["bad.py"]


def test_outside_any_work_tree_git_is_not_started(tmp_path, monkeypatch):
    """No ``.git`` in the directory or above it: the listing comes from the walk (and
    .gitignore through pathspec) without starting git, which costs a process per path given."""
    import loopcheck.workspace.discovery

    if any((p / ".git").exists() for p in (tmp_path, *tmp_path.parents)):
        pytest.skip("the temporary directory is inside a git work tree")
    tree(tmp_path, ["a.py", "logs/d.py"])
    (tmp_path / ".gitignore").write_text("logs/\n")

    def no_git(*args, **kwargs):
        raise AssertionError(f"git was started: {args}")

    monkeypatch.setattr(loopcheck.workspace.discovery.subprocess, "run", no_git)
    assert listed(tmp_path) == ["a.py"]
