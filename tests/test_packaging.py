"""The package as a user installs it: a wheel and an sdist built with ``python -m build``,
the wheel installed into a fresh virtualenv, ``loopcheck explain`` and ``loopcheck verify`` run
there from a directory full of hostile files.

The fresh virtualenv gets the wheel and its dependencies from the package index (what
``pip install loopcheck`` does); torch, which ``verify`` needs, is not downloaded again: a
``.pth`` file added after the install appends this environment's site-packages to its path.
"""

from __future__ import annotations

import importlib.util
import json
import re
import os
import shutil
import subprocess
import sys
import sysconfig
import tarfile
import zipfile
from pathlib import Path

if sys.version_info >= (3, 11):
    import tomllib
else:
    import tomli as tomllib

import pytest

ROOT = Path(__file__).resolve().parent.parent

pytestmark = [
    pytest.mark.skipif(
        importlib.util.find_spec("build") is None or importlib.util.find_spec("torch") is None,
        reason="needs the build package and torch (the test extra)",
    ),
    pytest.mark.skipif(not (ROOT / "loopcheck").is_dir(), reason="builds the project from its source tree"),
]

# Files that announce being imported or executed by creating a marker file.
HOSTILE = {
    "torch.py": "shadowing torch",
    "numpy.py": "shadowing numpy",
    "sitecustomize.py": "sitecustomize",
    "usercustomize.py": "usercustomize",
    "conftest.py": "conftest",
    "loopcheck/__init__.py": "a loopcheck package in the working directory",
    "loopcheck/verify/__init__.py": "a loopcheck.verify package in the working directory",
    "fixtures/LC101_bad.py": "the working directory's fixtures/LC101_bad.py",
    "fixtures/LC101_good.py": "the working directory's fixtures/LC101_good.py",
}


def plant_hostile_files(directory: Path, markers: Path) -> None:
    """Write :data:`HOSTILE` under ``directory``: each, when run, creates a file in ``markers``."""
    markers.mkdir(exist_ok=True)
    for n, (name, what) in enumerate(sorted(HOSTILE.items())):
        path = directory / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(
            f"open({str(markers / str(n))!r}, 'w').write({what!r})\n"
            "raise SystemExit('hostile file executed')\n"
        )


CLEAN_ENV = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}


def sh(*args, **kw) -> subprocess.CompletedProcess:
    kw.setdefault("capture_output", True)
    kw.setdefault("text", True)
    kw.setdefault("timeout", 300)
    # the fresh virtualenv sees only what is installed in it (a PYTHONPATH would bring a source tree)
    kw.setdefault("env", CLEAN_ENV)
    return subprocess.run([str(a) for a in args], **kw)


@pytest.fixture(scope="module")
def dist(tmp_path_factory) -> Path:
    """``python -m build``: the sdist, and the wheel built from that sdist."""
    out = tmp_path_factory.mktemp("dist")
    proc = sh(sys.executable, "-m", "build", "--outdir", out, ROOT)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return out


@pytest.fixture(scope="module")
def venv(dist, tmp_path_factory) -> Path:
    """A fresh virtualenv with the wheel (and its dependencies from the index) installed."""
    env = tmp_path_factory.mktemp("venv") / "env"
    proc = sh(sys.executable, "-m", "venv", env)
    assert proc.returncode == 0, proc.stderr
    wheel = next(dist.glob("loopcheck-*.whl"))
    proc = sh(env / "bin" / "python", "-m", "pip", "install", "-q", "--disable-pip-version-check", wheel)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    # torch (for verify) from this environment, appended after the fresh site-packages
    fresh = sh(env / "bin" / "python", "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])")
    Path(fresh.stdout.strip(), "outer-torch.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    return env


def test_wheel_ships_the_pages_the_fixtures_and_the_metadata(dist):
    wheel = zipfile.ZipFile(next(dist.glob("loopcheck-*.whl")))
    names = set(wheel.namelist())
    for code in ("LC001", "LC101", "LC605"):
        assert f"loopcheck/pages/{code}.md" in names
    for fixture in ("LC101_bad.py", "LC101_good.py", "LC501_bad_runtime.py"):
        assert f"loopcheck/fixtures/{fixture}" in names
    assert "loopcheck/py.typed" in names
    assert "loopcheck/_version.py" in names
    assert "loopcheck/knowledge/torch.toml" in names  # the library knowledge the engine reads
    assert not any(n.startswith(("loopcheck/fixtures/seeds/", "loopcheck/fixtures/valid/")) for n in names)
    meta = next(n for n in names if n.endswith(".dist-info/METADATA"))
    metadata = wheel.read(meta).decode()
    assert "License-Expression: MIT" in metadata
    assert "License-File: LICENSE" in metadata
    assert any(n.endswith(".dist-info/licenses/LICENSE") for n in names)
    for field in ("Project-URL: Repository, ", "Project-URL: Changelog, ", "Keywords: pytorch,",
                  "Classifier: Framework :: Flake8", "Classifier: Typing :: Typed", "Author: "):
        assert field in metadata, field
    entry_points = wheel.read(meta.replace("METADATA", "entry_points.txt")).decode()
    assert "[flake8.extension]\nLC = loopcheck.cli.flake8_plugin:Plugin" in entry_points
    assert "[console_scripts]\nloopcheck = loopcheck.cli.commands:main" in entry_points


def test_sdist_carries_what_its_tests_need(dist):
    sdist = tarfile.open(next(dist.glob("loopcheck-*.tar.gz")))
    names = {n.split("/", 1)[1] for n in sdist.getnames() if "/" in n}
    for name in ("LICENSE", "CHANGELOG.md", "README.md", ".pre-commit-hooks.yaml", "tests/data/sarif-schema-2.1.0.json",
                 "tests/test_fixtures.py", "fixtures/LC101_bad.py", "fixtures/seeds/annotated_full.py",
                 "rules/LC101.md", "reference_loop/loop.py"):
        assert name in names, name


def test_the_tests_run_against_the_installed_wheel(dist, venv):
    """scripts/test_wheel.sh (what CI runs): the sdist's tests, its package deleted, against the wheel."""
    proc = sh("bash", ROOT / "scripts" / "test_wheel.sh", venv / "bin" / "python", dist, "-q",
              "tests/test_fixtures.py", "tests/test_formats.py", env={**CLEAN_ENV, "EXTRAS": ""})
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    version = next(dist.glob("loopcheck-*.whl")).name.split("-")[1]
    installed = sh(venv / "bin" / "python", "-c", "import loopcheck; print(loopcheck.__file__)", cwd=dist).stdout.strip()
    assert f"testing loopcheck {version} installed at {Path(installed).parent}\n" in proc.stdout
    assert " passed" in proc.stdout and "skipped" not in proc.stdout
    assert not re.search(r"\b\d+ failed", proc.stdout)  # (a strict known miss shows as "1 xfailed")


def test_the_wheel_ships_every_knowledge_file_and_rule_page(dist):
    names = set(zipfile.ZipFile(next(dist.glob("loopcheck-*.whl"))).namelist())
    knowledge = sorted(p.name for p in (ROOT / "loopcheck" / "knowledge").glob("*.toml"))
    assert knowledge and [n for n in knowledge if f"loopcheck/knowledge/{n}" not in names] == []
    pages = sorted(p.name for p in (ROOT / "rules").glob("LC*.md"))
    assert [n for n in pages if f"loopcheck/pages/{n}" not in names] == []
    from loopcheck.catalog import INFOS

    assert [c for c in INFOS if f"loopcheck/pages/{c}.md" not in names] == []  # every rule's page
    assert "loopcheck/_version.py" in names  # the version setuptools-scm derived


def test_version_and_rule_urls_from_the_wheel(dist, venv, tmp_path):
    version = next(dist.glob("loopcheck-*.whl")).name.split("-")[1]
    proc = sh(venv / "bin" / "loopcheck", "--version", cwd=tmp_path)
    assert (proc.returncode, proc.stdout) == (0, f"loopcheck {version}\n")
    (tmp_path / "train.py").write_text((ROOT / "fixtures" / "LC101_bad.py").read_text())
    proc = sh(venv / "bin" / "loopcheck", "--preview", "--output-format", "json", "train.py", cwd=tmp_path)
    from loopcheck.catalog import rule_url

    assert json.loads(proc.stdout)[0]["url"] == rule_url("LC101", version)


def _scm_copy(repo: Path, git: bool) -> Path:
    """The files the build needs, copied to ``repo``; committed in a new git repository if ``git``."""
    repo.mkdir()
    for name in ("pyproject.toml", "README.md", "LICENSE", "MANIFEST.in", "loopcheck", "rules", "fixtures"):
        src = ROOT / name
        if src.is_dir():
            shutil.copytree(src, repo / name, ignore=shutil.ignore_patterns("__pycache__", "*.pyc", "_version.py"))
        else:
            shutil.copy2(src, repo / name)
    if git:
        for args in (("init", "-q", "."), ("add", "-A"), ("commit", "-q", "-m", "release")):
            sh("git", "-c", "user.name=t", "-c", "user.email=t@example.invalid", "-c", "commit.gpgsign=false",
               *args, cwd=repo, check=True)
    return repo


def _built_version(src: Path, out: Path, *what: str) -> str:
    proc = sh(sys.executable, "-m", "build", *what, "--outdir", out, src)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    (built,) = out.iterdir()
    return built.name.split("-")[1].removesuffix(".tar.gz")


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_the_version_is_the_git_tag_and_a_tree_without_git_still_builds(tmp_path):
    fallback = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools_scm"]["fallback_version"]
    assert _built_version(_scm_copy(tmp_path / "plain", git=False), tmp_path / "d1", "--sdist") == fallback

    repo = _scm_copy(tmp_path / "repo", git=True)
    assert _built_version(repo, tmp_path / "d2", "--sdist").startswith(fallback.removesuffix("0"))  # X.Y.Z.devN
    sh("git", "tag", "v9.8.7", cwd=repo, check=True)
    assert _built_version(repo, tmp_path / "d3", "--wheel") == "9.8.7"
    wheel = zipfile.ZipFile(next((tmp_path / "d3").iterdir()))
    assert "version = '9.8.7'" in wheel.read("loopcheck/_version.py").decode()
    # that wheel's version and rule URLs, as the tagged release prints them
    target = tmp_path / "site"
    sh(sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target", target, wheel.filename, check=True)
    (tmp_path / "train.py").write_text((ROOT / "fixtures" / "LC101_bad.py").read_text())
    env = {**os.environ, "PYTHONPATH": str(target)}  # that wheel's loopcheck first
    proc = sh(sys.executable, "-m", "loopcheck", "--version", env=env, cwd=tmp_path)
    assert proc.stdout == "loopcheck 9.8.7\n"
    proc = sh(sys.executable, "-m", "loopcheck", "--output-format", "sarif", "train.py", env=env, cwd=tmp_path)
    (rule,) = [r for r in json.loads(proc.stdout)["runs"][0]["tool"]["driver"]["rules"] if r["id"] == "LC101"]
    assert rule["helpUri"] == "https://github.com/loopcheck/loopcheck/blob/v9.8.7/rules/LC101.md"


def test_explain_from_the_wheel(venv, tmp_path):
    markers = tmp_path / "markers"
    plant_hostile_files(tmp_path, markers)
    proc = sh(venv / "bin" / "loopcheck", "explain", "LC001", cwd=tmp_path)  # out of preview: the page as it is
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == (ROOT / "rules" / "LC001.md").read_text().rstrip("\n") + "\n"
    assert list(markers.iterdir()) == []


def test_verify_from_the_wheel_runs_the_shipped_fixtures_isolated(venv, tmp_path):
    markers = tmp_path / "markers"
    plant_hostile_files(tmp_path, markers)
    proc = sh(venv / "bin" / "loopcheck", "verify", "LC101", cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0].split() == ["rule", "device", "dtype", "torch", "symptom", "bad", "good", "verdict", "unit"]
    assert lines[2].split()[:8] == ["LC101", "cpu", "float32", lines[2].split()[3], "unclipped", "steps", "1", "0"]
    assert lines[-1].startswith("1/1 rules reproduced (torch 2.")
    assert "NumPy" not in proc.stderr and proc.stderr == ""
    assert sorted(p.read_text() for p in markers.iterdir()) == []


def test_check_from_the_wheel(venv, tmp_path):
    """The engine works from the installed wheel (its library knowledge is package data)."""
    (tmp_path / "train.py").write_text((ROOT / "fixtures" / "LC101_bad.py").read_text())
    proc = sh(venv / "bin" / "loopcheck", "--preview", "--output-format", "concise", "train.py", cwd=tmp_path)
    assert proc.returncode == 1, proc.stderr
    assert proc.stdout.startswith("train.py:46:9: LC101 [*] ")
