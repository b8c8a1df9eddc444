"""A file CPython compiles but LibCST refuses for the tabs of its indentation is checked on its
indentation written in spaces (``parsing.reindent``, ``parsing.parse_reindented``): its findings
are placed in the file's own columns, and no fix is computed from the re-indented text."""

from __future__ import annotations

import json
from pathlib import Path

import libcst as cst
import pytest
from click.testing import CliRunner

from loopcheck.analysis import check_source
from loopcheck.check import lint_text
from loopcheck.cli.commands import main
from loopcheck.parsing import Reindented, indentation_width, parse_reindented, reindent

ROOT = Path(__file__).resolve().parent.parent
BAD = ROOT / "fixtures" / "LC302_bad_tab_after_spaces_indentation.py"
VALID = ROOT / "fixtures" / "valid" / "tab_after_spaces_indentation.py"

# a block indented with spaces whose body starts with a tab then spaces: CPython's column 12
TAB_THEN_SPACES = "if x:\n    with z:\n\t    b = 2\n"


def test_indentation_width_counts_as_cpythons_tokenizer():
    assert indentation_width("") == 0
    assert indentation_width("    ") == 4
    assert indentation_width("\t") == 8
    assert indentation_width("\t    ") == 12
    assert indentation_width("    \t") == 8
    assert indentation_width("       \t") == 8
    assert indentation_width("        \t") == 16
    assert indentation_width("            \t    ") == 20
    assert indentation_width("    \f  ") == 2


def test_libcst_refuses_what_cpython_accepts():
    compile(TAB_THEN_SPACES, "<test>", "exec")
    with pytest.raises(cst.ParserSyntaxError):
        cst.parse_module(TAB_THEN_SPACES)


def test_reindent_writes_the_tabbed_indentation_in_spaces_and_keeps_rows_and_line_ends():
    new = reindent("if x:\r\n    with z:\r\n\t    b = 2  # c\t\r\n    c = 3\r\n")
    assert new == Reindented("if x:\r\n    with z:\r\n            b = 2  # c\t\r\n    c = 3\r\n", {3: (5, 12)})


def test_reindent_leaves_lines_inside_strings_alone():
    text = "if x:\n    s = '''a\n\tb'''\n    t = f'''{x}\n\tc'''\n\t    \n"
    new = reindent(text)
    assert new is not None
    assert new.text == "if x:\n    s = '''a\n\tb'''\n    t = f'''{x}\n\tc'''\n            \n"
    assert new.shifts == {6: (5, 12)}
    # rows end as CPython's tokenizer ends them: a lone carriage return too
    new = reindent("if x:\r    s = '''a\r\tb'''\r    with z:\r\t    b = 2\r")
    assert new == Reindented("if x:\r    s = '''a\r\tb'''\r    with z:\r            b = 2\r", {5: (5, 12)})


def test_reindent_returns_none_without_a_tab_in_any_indentation_or_for_a_text_tokenize_refuses():
    assert reindent("if x:\n    y = '\t'\n") is None
    assert reindent("x = '''\n\ta\n") is None  # an unterminated string


def test_columns_map_back_to_the_files_own():
    new = reindent(TAB_THEN_SPACES)
    assert new.shifts == {3: (5, 12)}
    assert new.column(3, 13) == 6  # ``b``: index 12 of the new row, 5 of the file's
    assert new.column(3, 15) == 8
    assert new.column(3, 1) == 1  # inside the indentation: at most its end
    assert new.column(3, 12) == 6
    assert new.column(3, 5) == 5  # inside both indentations: where it is
    assert new.column(2, 5) == 5  # a row left as it was


def test_parse_reindented_keeps_the_same_program_only():
    module, new = parse_reindented(TAB_THEN_SPACES)
    assert module.code == new.text == "if x:\n    with z:\n            b = 2\n"
    # CPython refuses it too (a tab is 8 columns, deeper than 4 spaces, and 1 when tabs count 1)
    assert parse_reindented("if x:\n    with z:\n\tb = 2\n") is None
    assert parse_reindented("if x:\n    y = 1\n") is None  # nothing to re-indent
    assert parse_reindented("if x:\n    y = (\n") is None  # not Python


def test_a_file_libcst_refuses_for_its_tabs_is_checked_and_placed_in_its_own_columns():
    text = BAD.read_text(encoding="utf-8")
    [finding] = check_source(text, str(BAD))
    row = text.splitlines()[finding.row - 1]
    assert row.startswith("\t    val_loss += criterion(model(inputs), targets).item()")
    assert (finding.code, finding.column, finding.end_column) == ("LC302", row.index("model(") + 1, row.index(", targets") + 1)
    assert [(r.row, r.column) for r in finding.related] == [(25, 5)]
    assert check_source(VALID.read_text(encoding="utf-8"), str(VALID)) == []


def test_no_fix_is_computed_from_the_reindented_text(tmp_path: Path, monkeypatch):
    text = BAD.read_text(encoding="utf-8")
    found, _ = lint_text(text, str(BAD))
    assert [(f.code, f.fix) for f in found] == [("LC302", None)]
    target = tmp_path / "train.py"
    target.write_bytes(BAD.read_bytes())
    monkeypatch.chdir(tmp_path)
    runner = CliRunner()
    result = runner.invoke(main, ["check", "--isolated", "--preview", "--no-cache", "--fix", "train.py"])
    assert target.read_bytes() == BAD.read_bytes()
    assert result.exit_code == 1
    result = runner.invoke(main, ["check", "--isolated", "--preview", "--no-cache", "--output-format", "json", "train.py"])
    [finding] = json.loads(result.output)
    assert (finding["code"], finding["fix"], finding["location"]) == ("LC302", None, {"row": 29, "column": 28})
