"""The pre-commit hook, run for real: ``pre-commit try-repo`` on a copy of this project.

pre-commit installs the hook from a git repository, so the project (as it is in the working
tree, committed or not) is copied into a temporary repository and committed there. The two
runs (a bad file fails, a good one passes) go in parallel: each builds the hook's virtualenv.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from test_cli import BAD, GOOD, MESSAGE

ROOT = Path(__file__).resolve().parent.parent
# What `pip install .` of the project needs, and the hook definition.
PROJECT_FILES = ["pyproject.toml", "README.md", ".pre-commit-hooks.yaml", "loopcheck", "rules"]

GIT = shutil.which("git")
if importlib.util.find_spec("pre_commit") is not None:
    PRE_COMMIT = [sys.executable, "-m", "pre_commit"]
elif shutil.which("pre-commit"):
    PRE_COMMIT = [shutil.which("pre-commit")]
else:
    PRE_COMMIT = None

pytestmark = pytest.mark.skipif(GIT is None or PRE_COMMIT is None, reason="needs git and pre-commit")


def git(*args: str, cwd: Path) -> None:
    subprocess.run(
        [GIT, "-c", "user.name=loopcheck", "-c", "user.email=loopcheck@example.invalid",
         "-c", "commit.gpgsign=false", "-c", "init.defaultBranch=main", *args],
        cwd=cwd, check=True, capture_output=True,
    )


def test_hook_definition():
    text = (ROOT / ".pre-commit-hooks.yaml").read_text()
    assert text.startswith(textwrap.dedent(
        """\
        - id: loopcheck
          name: loopcheck
        """
    ))
    for line in ("  entry: loopcheck\n", "  language: python\n", "  types_or: [python, jupyter]\n"):
        assert line in text


def test_pre_commit_try_repo_fails_on_a_bad_file_and_passes_on_a_good_one(tmp_path: Path):
    repo = tmp_path / "loopcheck-repo"
    repo.mkdir()
    for name in PROJECT_FILES:
        src = ROOT / name
        if src.is_dir():
            shutil.copytree(src, repo / name, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        else:
            shutil.copy2(src, repo / name)
    git("init", "-q", ".", cwd=repo)
    git("add", "-A", cwd=repo)
    git("commit", "-q", "-m", "loopcheck", cwd=repo)

    work = tmp_path / "work"
    work.mkdir()
    git("init", "-q", ".", cwd=work)
    (work / "bad.py").write_text(BAD)
    (work / "good.py").write_text(GOOD)

    procs = {}
    for name in ("bad.py", "good.py"):
        env = {**os.environ, "PRE_COMMIT_HOME": str(tmp_path / f"home-{name}"),
               "PIP_DISABLE_PIP_VERSION_CHECK": "1", "NO_COLOR": "1"}
        procs[name] = subprocess.Popen(
            [*PRE_COMMIT, "try-repo", str(repo), "loopcheck", "--files", name, "--color", "never"],
            cwd=work, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        )
    out = {name: p.communicate(timeout=600)[0] for name, p in procs.items()}

    assert procs["bad.py"].returncode == 1, out["bad.py"]
    assert "loopcheck" in out["bad.py"] and "Failed" in out["bad.py"]
    assert "- exit code: 1" in out["bad.py"]
    assert f"bad.py:9:5: LC101 [*] {MESSAGE}\nFound 1 error." in out["bad.py"]

    assert procs["good.py"].returncode == 0, out["good.py"]
    assert "Passed" in out["good.py"]
