"""README's pre-commit and GitHub Actions instructions, run as written for someone who has
only this repository.

pre-commit installs hooks from a git repository, so the project (as it is in the working
tree, committed or not) is copied into a temporary repository and committed there. Three runs
go in parallel (each builds an environment):

* README's ``repo: local`` hook, the YAML block copied from README.md with the clone's path
  filled in, run by the real ``pre-commit run --all-files`` on a bad and a good file;
* ``pre-commit try-repo`` on the copy, tagged with README's ``rev:``: the repository's own
  ``.pre-commit-hooks.yaml`` at that tag;
* README's GitHub Actions ``run:`` steps, in order, in a fresh virtualenv, with the git URL
  pointed at the copy and ``COMMIT`` at its commit.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from test_cli import BAD, GOOD, MESSAGE

yaml = pytest.importorskip("yaml")

ROOT = Path(__file__).resolve().parent.parent
# What `pip install .` of the project needs, and the hook definition.
PROJECT_FILES = ["pyproject.toml", "README.md", "LICENSE", "CHANGELOG.md", "MANIFEST.in", ".pre-commit-hooks.yaml",
                 "loopcheck", "rules", "fixtures"]

# The projects checked turn preview on in their configuration: BAD's rule, LC101, is in preview.
PREVIEW_ON = {"loopcheck.toml": "preview = true\n"}

GIT = shutil.which("git")
if importlib.util.find_spec("pre_commit") is not None:
    PRE_COMMIT = [sys.executable, "-m", "pre_commit"]
elif shutil.which("pre-commit"):
    PRE_COMMIT = [shutil.which("pre-commit")]
else:
    PRE_COMMIT = None

pytestmark = [
    pytest.mark.skipif(GIT is None or PRE_COMMIT is None, reason="needs git and pre-commit"),
    pytest.mark.skipif(not (ROOT / "loopcheck").is_dir(), reason="installs the project from its source tree"),
]


def git(*args: str, cwd: Path) -> str:
    return subprocess.run(
        [GIT, "-c", "user.name=loopcheck", "-c", "user.email=loopcheck@example.invalid",
         "-c", "commit.gpgsign=false", "-c", "init.defaultBranch=main", *args],
        cwd=cwd, check=True, capture_output=True, text=True,
    ).stdout


def readme_block(heading: str, must_contain: str) -> str:
    """The first fenced ``yaml`` block under README's ``### heading`` that contains ``must_contain``."""
    readme = (ROOT / "README.md").read_text()
    section = readme.split(f"### {heading}\n", 1)[1].split("\n## ", 1)[0].split("\n### ", 1)[0]
    blocks = re.findall(r"```yaml\n(.*?)```", section, re.S)
    return next(b for b in blocks if must_contain in b)


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
    # one loopcheck process for all the files: it starts its own workers (-j) and reads each
    # project module once; pre-commit would otherwise start one process per core, each with a pool
    assert "  require_serial: true\n" in text


def test_readme_snippets_are_valid_yaml_and_pin_no_missing_tag():
    local = yaml.safe_load(readme_block("pre-commit", "repo: local"))
    (hook,) = local["repos"][0]["hooks"]
    assert hook["language"] == "python" and hook["entry"] == "loopcheck"
    assert hook["additional_dependencies"] == ["/path/to/loopcheck"]
    hooks_yaml = yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text())[0]
    for key in ("id", "entry", "args", "language", "types_or", "require_serial"):
        assert hook[key] == hooks_yaml[key], key
    workflow = yaml.safe_load(readme_block("GitHub Actions", "jobs:"))
    runs = [s["run"] for s in workflow["jobs"]["loopcheck"]["steps"] if "run" in s]
    assert runs[0] == 'pip install "loopcheck @ git+https://github.com/OWNER/loopcheck@COMMIT"'
    remote = yaml.safe_load(readme_block("pre-commit", "rev:"))["repos"][0]
    assert remote["hooks"][0]["id"] == hooks_yaml["id"]
    assert re.fullmatch(r"v\d+\.\d+\.\d+", remote["rev"])  # a release tag (tests/test_release.py: the version's)


def _copy_project(repo: Path) -> str:
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
    return git("rev-parse", "HEAD", cwd=repo).strip()


def _work_repo(path: Path, files: dict[str, str]) -> Path:
    path.mkdir()
    git("init", "-q", ".", cwd=path)
    for name, text in files.items():
        (path / name).write_text(text)
    git("add", "-A", cwd=path)
    return path


def test_readme_pre_commit_and_actions_snippets_work_as_written(tmp_path: Path):
    repo = tmp_path / "loopcheck-clone"
    sha = _copy_project(repo)
    env = {**os.environ, "PIP_DISABLE_PIP_VERSION_CHECK": "1", "NO_COLOR": "1"}
    procs: dict[str, subprocess.Popen] = {}

    # 1. README's local hook, its path filled in, on a bad and a good file
    local = _work_repo(tmp_path / "local", {"bad.py": BAD, "good.py": GOOD, **PREVIEW_ON})
    config = readme_block("pre-commit", "repo: local").replace("/path/to/loopcheck", str(repo))
    (local / ".pre-commit-config.yaml").write_text(config)
    procs["local"] = subprocess.Popen(
        [*PRE_COMMIT, "run", "--all-files", "--color", "never"], cwd=local,
        env={**env, "PRE_COMMIT_HOME": str(tmp_path / "home-local")},
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )

    # 2. the repository's hook definition at README's `rev:`, a tag of the clone (try-repo), on a good file
    rev = yaml.safe_load(readme_block("pre-commit", "rev:"))["repos"][0]["rev"]
    git("tag", "-a", rev, "-m", f"loopcheck {rev}", cwd=repo)
    remote = _work_repo(tmp_path / "remote", {"good.py": GOOD})
    procs["try-repo"] = subprocess.Popen(
        [*PRE_COMMIT, "try-repo", str(repo), "loopcheck", "--ref", rev, "--files", "good.py", "--color", "never"],
        cwd=remote, env={**env, "PRE_COMMIT_HOME": str(tmp_path / "home-remote")},
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )

    # 3. README's GitHub Actions steps, in a fresh virtualenv, from a checkout with a bad file
    workflow = yaml.safe_load(readme_block("GitHub Actions", "jobs:"))
    runs = [s["run"] for s in workflow["jobs"]["loopcheck"]["steps"] if "run" in s]
    runs[0] = runs[0].replace("https://github.com/OWNER/loopcheck", f"file://localhost{repo}").replace("COMMIT", sha)
    checkout = _work_repo(tmp_path / "checkout", {"bad.py": BAD, "good.py": GOOD, **PREVIEW_ON})
    venv = tmp_path / "actions-venv"
    script = "set -u\n" + f"{sys.executable} -m venv {venv} && . {venv}/bin/activate || exit 99\n" + "".join(
        f"{cmd}\necho \"step exit $?\"\n" for cmd in runs)
    path = os.pathsep.join(p for p in os.environ.get("PATH", "").split(os.pathsep) if not p.startswith(sys.prefix))
    procs["actions"] = subprocess.Popen(["bash", "-c", script], cwd=checkout, env={**env, "PATH": path},
                                        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)

    out = {name: p.communicate(timeout=900)[0] for name, p in procs.items()}

    assert procs["local"].returncode == 1, out["local"]
    assert "loopcheck" in out["local"] and "Failed" in out["local"] and "- exit code: 1" in out["local"]
    assert f"bad.py:9:5: LC101 [*] {MESSAGE}\nFound 1 error." in out["local"]
    assert "good.py" not in out["local"].replace("bad.py", "")

    assert procs["try-repo"].returncode == 0, out["try-repo"]
    assert "Passed" in out["try-repo"] and f"rev: {rev}" in out["try-repo"]

    assert procs["actions"].returncode == 0, out["actions"]
    exits = re.findall(r"step exit (\d+)", out["actions"])
    assert exits == ["0", "1", "0"], out["actions"]  # install, annotations (a finding: the job fails), SARIF
    # file= is absolute, as ruff writes it: right also from a step with working-directory:
    assert re.search(r"::error title=loopcheck \(LC101\),file=/\S+/bad.py,line=9,col=5,endLine=9,endColumn=54::",
                     out["actions"])
    log = json.loads((checkout / "loopcheck.sarif").read_text())
    assert [r["ruleId"] for r in log["runs"][0]["results"]] == ["LC101"]
