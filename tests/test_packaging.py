"""The package as a user installs it: a wheel and an sdist built with ``python -m build``,
the wheel installed into a fresh virtualenv, ``loopcheck explain`` and ``loopcheck verify`` run
there from a directory full of hostile files.

The fresh virtualenv gets the wheel and its dependencies from the package index (what
``pip install loopcheck`` does); torch, which ``verify`` needs, is not downloaded again: a
``.pth`` file added after the install appends this environment's site-packages to its path.
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
import sysconfig
import tarfile
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("build") is None or importlib.util.find_spec("torch") is None,
    reason="needs the build package and torch (the test extra)",
)

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


def sh(*args, **kw) -> subprocess.CompletedProcess:
    kw.setdefault("capture_output", True)
    kw.setdefault("text", True)
    kw.setdefault("timeout", 300)
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
    assert "[flake8.extension]\nLC = loopcheck.flake8_plugin:Plugin" in entry_points
    assert "[console_scripts]\nloopcheck = loopcheck.cli:main" in entry_points


def test_sdist_carries_what_its_tests_need(dist):
    sdist = tarfile.open(next(dist.glob("loopcheck-*.tar.gz")))
    names = {n.split("/", 1)[1] for n in sdist.getnames() if "/" in n}
    for name in ("LICENSE", "CHANGELOG.md", "README.md", ".pre-commit-hooks.yaml", "tests/data/sarif-schema-2.1.0.json",
                 "tests/test_fixtures.py", "fixtures/LC101_bad.py", "fixtures/seeds/annotated_full.py",
                 "rules/LC101.md", "reference_loop/loop.py"):
        assert name in names, name


def test_sdist_tests_run_from_the_unpacked_sdist(dist, venv, tmp_path):
    with tarfile.open(next(dist.glob("loopcheck-*.tar.gz"))) as sdist:
        sdist.extractall(tmp_path, filter="data")
    src = next(tmp_path.glob("loopcheck-*"))
    proc = sh(venv / "bin" / "python", "-m", "pytest", "-q", "-p", "no:cacheprovider",
              "tests/test_fixtures.py", "tests/test_formats.py", cwd=src)
    assert proc.returncode == 0, proc.stdout[-3000:]
    assert " passed" in proc.stdout and "skipped" not in proc.stdout


def test_explain_from_the_wheel(venv, tmp_path):
    markers = tmp_path / "markers"
    plant_hostile_files(tmp_path, markers)
    proc = sh(venv / "bin" / "loopcheck", "explain", "LC202", cwd=tmp_path)  # out of preview: the page as it is
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == (ROOT / "rules" / "LC202.md").read_text().rstrip("\n") + "\n"
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
