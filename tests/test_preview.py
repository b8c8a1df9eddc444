"""Rules in preview (``preview=True`` in the catalog): off by default, on with ``--preview`` or
``preview = true``, or when selected by their exact code or name; a prefix or ``ALL`` alone
does not enable them (as ruff's preview rules). LC401 and LC101 are the rules in preview these
tests use, LC001, LC102 and LC601 the rules out of preview (a file that does not parse; LC102 left
preview after census 16 measured it at 5 of 5, LC601 after census 10 measured it at 5 of 5)."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from loopcheck.analysis import check_source
from loopcheck.catalog import INFOS, PREVIEW
from loopcheck.cli.commands import main
from loopcheck.workspace.config import Options, canonical_selector, default_codes, select_codes

ROOT = Path(__file__).resolve().parent.parent
LOSS_KEPT = (ROOT / "fixtures" / "LC401_bad.py").read_text(encoding="utf-8")
LC401_ROW = 51  # its `# expect: LC401` line
LC101_BAD = (ROOT / "fixtures" / "LC101_bad.py").read_text(encoding="utf-8")
LC102_BAD = (ROOT / "fixtures" / "LC102_bad.py").read_text(encoding="utf-8")
#: The rules the latest census that gave them at least 5 findings measured at 95 % or more
#: (each page's "Precision"), and the two codes the command line itself reports.
OUT_OF_PREVIEW = {"LC001", "LC002", "LC102", "LC601"}


def reported(*args: str) -> list[str]:
    """The codes the command line reports (``--no-cache``, concise) with ``args``."""
    result = CliRunner().invoke(main, ["--no-cache", "--output-format", "concise", *args])
    assert result.exit_code in (0, 1), result.output
    return sorted(line.split(" ")[1] for line in result.stdout.splitlines() if ": LC" in line)


@pytest.fixture
def project(tmp_path: Path, monkeypatch) -> Path:
    (tmp_path / "train.py").write_text(LOSS_KEPT, encoding="utf-8")
    (tmp_path / "clip.py").write_text(LC101_BAD, encoding="utf-8")
    (tmp_path / "accumulate.py").write_text(LC102_BAD, encoding="utf-8")
    (tmp_path / "broken.py").write_text("import torch\nfor x in y:\n    loss.backward(\n", encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_every_rule_not_measured_is_in_preview_and_the_catalog_says_which_rules_are():
    assert INFOS["LC401"].preview and "LC401" in PREVIEW and INFOS["LC101"].preview
    assert INFOS["LC202"].preview and not INFOS["LC102"].preview and not INFOS["LC001"].preview
    assert PREVIEW == {code for code, info in INFOS.items() if info.preview}
    assert set(INFOS) - PREVIEW == OUT_OF_PREVIEW
    assert default_codes() == OUT_OF_PREVIEW and default_codes(preview=True) == set(INFOS)


@pytest.mark.parametrize("code", sorted(PREVIEW))
def test_each_rule_in_preview_is_off_by_default_and_on_with_preview(code):
    """Its bad fixture: no finding of it with the default selection, one with every rule."""
    source = (ROOT / "fixtures" / f"{code}_bad.py").read_text(encoding="utf-8")
    assert code in {f.code for f in check_source(source, f"{code}_bad.py", default_codes(preview=True))}
    assert code not in {f.code for f in check_source(source, f"{code}_bad.py", default_codes())}


def test_the_library_runs_every_rule_unless_told_otherwise():
    assert [(f.code, f.row) for f in check_source(LOSS_KEPT, "train.py")] == [("LC401", LC401_ROW)]
    assert check_source(LOSS_KEPT, "train.py", default_codes()) == []


def test_a_preview_rule_is_not_reported_by_default(project):
    assert reported(".") == ["LC001", "LC102"]
    assert reported("--preview", ".") == ["LC001", "LC101", "LC102", "LC401"]
    result = CliRunner().invoke(main, ["--show-settings", "clip.py"])
    assert f"select = {json.dumps(sorted(OUT_OF_PREVIEW))}" in result.output.splitlines()


@pytest.mark.parametrize("args", [
    ["--preview"],
    ["--select", "LC401,LC101"],
    ["--extend-select", "LC401"],
    ["--extend-select", "loss-tensor-kept"],
    ["--extend-select", "Loss_Tensor_Kept"],
    ["--select", "LC4", "--preview"],
    ["--select", "ALL", "--preview"],
    ["--no-preview", "--extend-select", "LC401"],
])
def test_preview_or_an_exact_code_or_name_enables_it(project, args):
    assert "LC401" in reported(*args, ".")


@pytest.mark.parametrize("args", [
    ["--select", "LC4"],
    ["--select", "LC40"],
    ["--select", "ALL"],
    ["--extend-select", "LC4"],
    ["--preview", "--no-preview"],
    ["--preview", "--ignore", "LC401"],
    ["--preview", "--ignore", "loss-tensor-kept"],
    ["--extend-select", "LC401", "--ignore", "LC401"],
])
def test_a_prefix_alone_does_not_enable_it(project, args):
    assert "LC401" not in reported(*args, ".")


def test_only_an_exact_selection_reports_nothing_else(project):
    assert reported("--select", "loss-tensor-kept", ".") == ["LC401"]
    assert reported("--select", "LC4", ".") == []


@pytest.mark.parametrize("table, codes", [
    ("preview = true\n", ["LC001", "LC101", "LC102", "LC401"]),
    ("preview = false\n", ["LC001", "LC102"]),
    ('extend-select = ["LC401"]\n', ["LC001", "LC102", "LC401"]),
    ('extend-select = ["loss-tensor-kept"]\n', ["LC001", "LC102", "LC401"]),
    ('select = ["LC4", "LC3", "LC0"]\n', ["LC001"]),
    ('select = ["LC4", "LC3", "LC0"]\npreview = true\n', ["LC001", "LC401"]),
    ('select = ["LC4", "LC1", "LC0"]\npreview = true\n', ["LC001", "LC101", "LC102", "LC401"]),
    ('select = ["ALL"]\n', ["LC001", "LC102"]),
])
def test_the_configuration_file(project, table, codes):
    (project / "pyproject.toml").write_text("[tool.loopcheck]\n" + table, encoding="utf-8")
    assert reported(".") == codes


def test_the_command_line_overrides_the_files_preview(project):
    (project / "loopcheck.toml").write_text("preview = true\n", encoding="utf-8")
    assert "LC401" in reported(".")
    assert "LC401" not in reported("--no-preview", ".")
    (project / "loopcheck.toml").write_text("preview = false\n", encoding="utf-8")
    assert "LC401" in reported("--preview", ".")


def test_a_bad_preview_value_is_an_error(project):
    (project / "loopcheck.toml").write_text('preview = "yes"\n', encoding="utf-8")
    result = CliRunner().invoke(main, ["--no-cache", "."])
    assert result.exit_code == 2
    assert "preview: expected true or false, got a string ('yes')" in result.output


def test_show_settings_says_whether_preview_is_on(project):
    result = CliRunner().invoke(main, ["--show-settings", "--preview", "train.py"])
    assert "preview = true" in result.output.splitlines()
    assert '"LC401"' in next(line for line in result.output.splitlines() if line.startswith("select = "))
    result = CliRunner().invoke(main, ["--show-settings", "train.py"])
    assert "preview = false" in result.output.splitlines()


def test_select_codes_names_and_specificity():
    assert canonical_selector(" loss_tensor_kept ") == "LC401" and canonical_selector("lc4") == "LC4"
    assert "LC401" not in select_codes([Options(select=("ALL",))])
    assert "LC401" in select_codes([Options(select=("ALL",))], preview=True)
    assert select_codes([Options(select=("LC401",))]) == {"LC401"}
    # an exact selection is more specific than an ignored prefix, as for any rule
    assert select_codes([Options(select=("LC401",), ignore=("LC4",))]) == {"LC401"}
    # a later layer's prefix neither enables it nor drops the earlier exact selection
    layers = [Options(extend_select=("LC401",)), Options(extend_select=("LC4",))]
    assert "LC401" in select_codes(layers)
    assert "LC401" not in select_codes([Options(select=("LC101",)), Options(extend_select=("LC4",))])


def test_rules_json_and_text_mark_the_rules_in_preview():
    data = json.loads(CliRunner().invoke(main, ["rules", "--output-format", "json"]).output)
    assert {d["code"]: d["preview"] for d in data} == {code: info.preview for code, info in INFOS.items()}
    assert {d["code"]: d["preview"] for d in data}["LC401"] is True
    lines = CliRunner().invoke(main, ["rules"]).output.splitlines()
    assert lines[0].split()[4] == "preview"
    assert {line.split()[0]: line.split()[4] for line in lines[1:]}["LC401"] == "yes"
    assert {line.split()[0]: line.split()[4] for line in lines[1:]}["LC101"] == "yes"
    assert {line.split()[0]: line.split()[4] for line in lines[1:]}["LC001"] == "-"


def test_explain_says_the_rule_is_in_preview():
    page = CliRunner().invoke(main, ["explain", "loss-tensor-kept"]).output
    lines = page.splitlines()
    assert lines[0] == "# LC401 loss-tensor-kept"
    assert lines[2].startswith("This rule is in preview: it runs only with --preview")
    assert "This rule is in preview" not in CliRunner().invoke(main, ["explain", "LC001"]).output


def test_the_cache_keeps_a_run_with_preview_apart(project, monkeypatch, tmp_path_factory):
    monkeypatch.setenv("LOOPCHECK_CACHE_DIR", str(tmp_path_factory.mktemp("cache")))

    def cached(*args: str) -> list[str]:
        result = CliRunner().invoke(main, ["-j1", "--output-format", "concise", *args, "."])
        return sorted(line.split(" ")[1] for line in result.stdout.splitlines() if ": LC" in line)

    assert cached() == ["LC001", "LC102"]
    assert cached("--preview") == ["LC001", "LC101", "LC102", "LC401"]
    assert cached() == ["LC001", "LC102"]
    assert cached("--preview") == ["LC001", "LC101", "LC102", "LC401"]


@pytest.mark.skipif(importlib.util.find_spec("flake8") is None, reason="needs flake8")
@pytest.mark.parametrize("args, enabled", [
    ([], False),
    (["--select", "LC"], False),
    (["--select", "LC4"], False),
    (["--select", "LC401"], True),
    (["--extend-select", "LC401"], True),
    (["--loopcheck-preview"], True),
    (["--select", "LC", "--loopcheck-preview"], True),
])
def test_the_flake8_plugin(tmp_path, args, enabled):
    (tmp_path / "train.py").write_text(LOSS_KEPT, encoding="utf-8")
    proc = subprocess.run([sys.executable, "-m", "flake8", *args, "train.py"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode in (0, 1), proc.stderr
    assert (f"train.py:{LC401_ROW}:" in proc.stdout and " LC401 " in proc.stdout) is enabled


@pytest.mark.skipif(importlib.util.find_spec("flake8") is None, reason="needs flake8")
def test_the_flake8_plugin_reads_loopcheck_preview_from_its_configuration(tmp_path):
    (tmp_path / "train.py").write_text(LOSS_KEPT, encoding="utf-8")
    (tmp_path / ".flake8").write_text("[flake8]\nloopcheck-preview = true\n", encoding="utf-8")
    proc = subprocess.run([sys.executable, "-m", "flake8", "--select", "LC", "train.py"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=120)
    assert " LC401 " in proc.stdout, proc.stderr


@pytest.mark.skipif(importlib.util.find_spec("flake8") is None, reason="needs flake8")
def test_the_flake8_plugin_runs_only_the_rules_out_of_preview_by_default(tmp_path):
    (tmp_path / "clip.py").write_text(LC101_BAD, encoding="utf-8")
    (tmp_path / "accumulate.py").write_text(LC102_BAD, encoding="utf-8")

    def codes(*args: str) -> list[str]:
        proc = subprocess.run([sys.executable, "-m", "flake8", "--select", "LC", *args, "clip.py", "accumulate.py"],
                              cwd=tmp_path, capture_output=True, text=True, timeout=120)
        assert proc.returncode in (0, 1), proc.stderr
        return sorted(line.split()[1] for line in proc.stdout.splitlines())

    assert codes() == ["LC102"]  # LC102 is out of preview, LC101 in it
    assert codes("--loopcheck-preview") == ["LC101", "LC102"]


def test_readme_rules_table_marks_the_rules_in_preview():
    """README's table of rules says "preview" exactly for the catalog's rules in preview (it
    went stale once: LC202 and LC701 after census 17)."""
    rows = [line.split("|") for line in (ROOT / "README.md").read_text(encoding="utf-8").splitlines()
            if line.startswith("| [LC")]
    marked = {cells[1].strip().split("]")[0].lstrip("[") for cells in rows if cells[5].strip() == "preview"}
    assert len(rows) == len(INFOS)
    assert marked == set(PREVIEW)
