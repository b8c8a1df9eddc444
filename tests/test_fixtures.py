"""Every fixture is reported exactly at its ``# expect: CODE`` lines, and nowhere else."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from loopcheck.analysis import check_source

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = sorted((ROOT / "fixtures").rglob("*.py"))
#: Fixtures whose expectation loopcheck does not meet yet, and the open issue that covers them
#: (strict: the test fails once they pass, so the entry is removed with the fix).
KNOWN_MISSES: dict[str, str] = {}
EXPECT = re.compile(r"#\s*expect:\s*([A-Z0-9, ]+)")


def expected(source: str) -> set[tuple[str, int]]:
    """The (code, line) pairs a fixture declares with trailing ``# expect:`` comments."""
    out = set()
    for lineno, line in enumerate(source.splitlines(), start=1):
        m = EXPECT.search(line)
        if m:
            out |= {(code.strip(), lineno) for code in m.group(1).split(",") if code.strip()}
    return out


def test_fixtures_exist():
    assert len(FIXTURES) >= 40


def _cases():
    for path in FIXTURES:
        name = path.relative_to(ROOT / "fixtures").as_posix()
        marks = [pytest.mark.xfail(reason=KNOWN_MISSES[name], strict=True)] if name in KNOWN_MISSES else []
        yield pytest.param(path, marks=marks, id=name)


@pytest.mark.parametrize("path", list(_cases()))
def test_fixture(path: Path):
    source = path.read_text(encoding="utf-8")
    found = {(f.code, f.row) for f in check_source(source, str(path))}
    assert found == expected(source)


NOTEBOOKS = sorted((ROOT / "fixtures").rglob("*.ipynb"))


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.relative_to(ROOT / "fixtures").as_posix() for p in NOTEBOOKS])
def test_notebook_fixture(path: Path):
    """A notebook fixture is checked as the command line checks it (its code cells joined into
    one program), and reported exactly at the program's ``# expect: CODE`` lines."""
    from loopcheck.check import lint_text

    found, source = lint_text(path.read_text(encoding="utf-8"), str(path))
    assert {(f.code, f.row) for f in found} == expected(source.text)


def test_messages_say_what_is_wrong_in_one_short_sentence():
    """Every finding of every fixture: one sentence under 120 characters; the explanation and
    the measured numbers are in the note (for the rules with runtime evidence)."""
    long, without_note = [], []
    for path in FIXTURES:
        for f in check_source(path.read_text(encoding="utf-8"), str(path)):
            if len(f.message) >= 120 or ". " in f.message:
                long.append((path.name, f.code, f.message))
            if f.code != "LC001" and not f.note:
                without_note.append((path.name, f.code))
    assert long == []
    assert without_note == []
