"""The file listing kept in the cache (loopcheck/workspace/listing.py): used while nothing on the way
changed, searched again when a directory, a .gitignore or a configuration file did."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

import pytest

import loopcheck.workspace.discovery
import loopcheck.workspace.listing
from loopcheck.workspace.cache import Cache
from loopcheck.workspace.config import Options, Resolver
from loopcheck.workspace.listing import source_files


@pytest.fixture
def tree(tmp_path, monkeypatch) -> Path:
    """A project outside any git work tree, its times a minute in the past (so none is racy)."""
    root = tmp_path / "proj"
    for rel, text in {
        "pyproject.toml": "[project]\nname = 'p'\n",
        ".gitignore": "out/\n*_tmp.py\n",
        "train.py": "", "pkg/__init__.py": "", "pkg/model.py": "", "pkg/x_tmp.py": "",
        "out/gen.py": "", "empty/README": "",
    }.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    past = time.time_ns() - 60 * 10**9
    for path in [*root.rglob("*"), root]:
        os.utime(path, ns=(past, past))
    monkeypatch.chdir(root)
    monkeypatch.setattr(loopcheck.workspace.listing, "RACY_SECONDS", 0.0)  # tmp_path itself is new
    return root


def search(cache: Cache, paths=(".",)) -> list[str]:
    return [str(p) for p in source_files(list(paths), Resolver(Options()), cache=cache)]


class Walks:
    """Counts the directory searches (a listing taken from the cache makes none)."""

    def __init__(self, monkeypatch) -> None:
        self.count = 0
        real = loopcheck.workspace.discovery.iter_source_files

        def counting(*args, **kwargs):
            self.count += 1
            return real(*args, **kwargs)

        monkeypatch.setattr(loopcheck.workspace.discovery, "iter_source_files", counting)

    def take(self) -> int:
        count, self.count = self.count, 0
        return count


EXPECTED = ["pkg/__init__.py", "pkg/model.py", "train.py"]


def test_an_unchanged_tree_is_not_searched_again(tree, tmp_path, monkeypatch):
    walks, cache = Walks(monkeypatch), Cache(tmp_path / "cache")
    assert search(cache) == EXPECTED
    assert walks.take() == 1
    assert search(cache) == EXPECTED
    assert walks.take() == 0
    assert len(list(cache.listings.iterdir())) == 1


@pytest.mark.parametrize("change, expected", [
    (lambda t: (t / "empty" / "new.py").write_text(""), ["empty/new.py", *EXPECTED]),
    (lambda t: (t / "pkg" / "model.py").rename(t / "pkg" / "net.py"), ["pkg/__init__.py", "pkg/net.py", "train.py"]),
    (lambda t: (t / ".gitignore").write_text("*_tmp.py\n"), ["out/gen.py", *EXPECTED]),
    (lambda t: (t / "pkg" / ".gitignore").write_text("model.py\n"), ["pkg/__init__.py", "train.py"]),
    (lambda t: (t / "pyproject.toml").write_text("[tool.loopcheck]\nextend-exclude = ['pkg']\n"), ["train.py"]),
    (lambda t: (t / "pkg" / "pyvenv.cfg").write_text(""), ["train.py"]),
    (lambda t: (t / "out" / "pyvenv.cfg").write_text("") or (t / ".gitignore").write_text(""),
     [*EXPECTED[:2], "pkg/x_tmp.py", "train.py"]),
])
def test_a_change_on_the_way_is_searched_again(tree, tmp_path, monkeypatch, change, expected):
    walks, cache = Walks(monkeypatch), Cache(tmp_path / "cache")
    assert search(cache) == EXPECTED
    change(tree)
    assert search(cache) == expected
    assert walks.take() == 2
    assert search(cache) == expected  # and stored again
    assert walks.take() == 0


def test_a_gitignore_above_the_path_given_counts(tree, tmp_path, monkeypatch):
    cache = Cache(tmp_path / "cache")
    assert search(cache, ["pkg"]) == ["pkg/__init__.py", "pkg/model.py"]
    (tree / ".gitignore").write_text("model.py\n*_tmp.py\n")
    assert search(cache, ["pkg"]) == ["pkg/__init__.py"]


def test_nothing_is_stored_when_a_time_is_too_recent(tree, tmp_path, monkeypatch):
    monkeypatch.setattr(loopcheck.workspace.listing, "RACY_SECONDS", 2.0)
    (tree / "pkg" / "fresh.py").write_text("")  # pkg/ changed just now
    cache = Cache(tmp_path / "cache")
    assert search(cache) == ["pkg/__init__.py", "pkg/fresh.py", "pkg/model.py", "train.py"]
    assert not cache.listings.exists()


def test_nothing_is_stored_for_a_symbolic_link_or_a_problem(tree, tmp_path):
    cache = Cache(tmp_path / "cache")
    (tree / "link.py").symlink_to(tree / "train.py")
    assert search(cache) == ["link.py", *EXPECTED]
    (tree / "link.py").unlink()
    (tree / "broken.py").symlink_to(tree / "nowhere.py")
    problems = []
    source_files(["."], Resolver(Options()), on_problem=lambda *a: problems.append(a), cache=cache)
    assert len(problems) == 1
    assert not cache.listings.exists()


def test_git_lists_the_files_of_a_work_tree(tree, tmp_path):
    subprocess.run(["git", "init", "-q", str(tree)], check=True)
    cache = Cache(tmp_path / "cache")
    assert search(cache) == ["pkg/__init__.py", "pkg/model.py", "train.py"]
    assert not cache.listings.exists()


def test_a_damaged_listing_is_searched_again(tree, tmp_path, monkeypatch):
    walks, cache = Walks(monkeypatch), Cache(tmp_path / "cache")
    search(cache)
    for damage in (b"", b"[]", b'{"dirs": 1}', b'{"dirs": [], "files": [], "found": [1]}'):
        for entry in cache.listings.iterdir():
            entry.write_bytes(damage)
        assert search(cache) == EXPECTED
    assert walks.take() == 5


def test_the_command_line_reports_the_same_from_a_stored_listing(tree, tmp_path, monkeypatch):
    from click.testing import CliRunner

    from loopcheck.cli.commands import main

    (tree / "pkg" / "model.py").write_text((Path(__file__).parent.parent / "fixtures" / "LC101_bad.py").read_text())
    past = time.time_ns() - 60 * 10**9
    os.utime(tree / "pkg" / "model.py", ns=(past, past))
    walks = Walks(monkeypatch)
    args = ["-j1", "--preview", "--cache-dir", str(tmp_path / "cache"), "--output-format", "concise", "."]  # LC101
    cold = CliRunner().invoke(main, args)
    warm = CliRunner().invoke(main, args)
    assert walks.take() == 1
    assert (warm.exit_code, warm.output) == (cold.exit_code, cold.output) == (1, cold.output)
    assert "pkg/model.py:" in cold.output and "LC101" in cold.output
