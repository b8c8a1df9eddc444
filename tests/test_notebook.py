"""Jupyter notebooks: code cells checked as one program, findings placed in cells."""

from __future__ import annotations

import json
from pathlib import Path

import nbformat
import pytest
from click.testing import CliRunner
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

from loopcheck.cli import main
from loopcheck.notebook import cell_program, read_notebook

SETUP = """\
%matplotlib inline
import torch
from torch import nn
!pip install tqdm

model = nn.Linear(4, 2)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)"""

LOOP = """\
for step in range(10):
    x = torch.randn(8, 4)
    optimizer.zero_grad()
    nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    loss = model(x).pow(2).mean()
    %time y = 1
    loss.backward()
    optimizer.step()"""

CLIP_MESSAGE = (
    "nn.utils.clip_grad_norm_() runs before loss.backward() at line 7 of cell 4: the gradients it "
    "clips are empty or already applied, so the step is never clipped"
)


def notebook(*cells, language: str = "python") -> str:
    nb = new_notebook(
        cells=[new_markdown_cell(c[3:]) if c.startswith("md:") else new_code_cell(c) for c in cells],
        metadata={"kernelspec": {"name": "k", "language": language, "display_name": "k"}},
    )
    return nbformat.writes(nb)


def run(*args: str, input: str | None = None):
    return CliRunner().invoke(main, list(args), input=input)


@pytest.fixture
def project(tmp_path: Path, monkeypatch) -> Path:
    (tmp_path / "train.ipynb").write_text(notebook("md:# Training", SETUP, "%%bash\necho ( not python", LOOP))
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_concise_places_findings_in_cells(project):
    result = run("train.ipynb")
    assert result.exit_code == 1
    assert result.output == f"train.ipynb:cell 4:4:5: LC101 {CLIP_MESSAGE}\nFound 1 error.\n[*] 1 fixable with the `--fix` option.\n"


def test_json_has_the_cell_and_rows_in_the_cell(project):
    result = run("--output-format", "json", "train.ipynb")
    (obj,) = json.loads(result.output)
    assert obj["cell"] == 4
    assert {k: obj[k] for k in ("message", "location", "end_location", "noqa_row", "related")} == {
        "message": CLIP_MESSAGE,
        "location": {"row": 4, "column": 5},
        "end_location": {"row": 4, "column": 54},
        "noqa_row": 4,
        "related": [{"cell": 4, "row": 7, "column": 5, "message": "backward() fills .grad only here"}],
    }


def test_full_shows_the_cell_lines_with_their_magics(project):
    result = run("--output-format", "full", "train.ipynb")
    assert result.output == (
        f"train.ipynb:cell 4:4:5: LC101 {CLIP_MESSAGE}\n"
        "  |\n"
        "4 |     nn.utils.clip_grad_norm_(model.parameters(), 1.0)\n"
        "  |     ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^ LC101\n"
        "5 |     loss = model(x).pow(2).mean()\n"
        "6 |     %time y = 1\n"
        "7 |     loss.backward()\n"
        "  |     --------------- backward() fills .grad only here\n"
        "  |\n"
        "\n"
        "Found 1 error.\n"
        "[*] 1 fixable with the `--fix` option.\n"
    )


def test_related_lines_in_other_cells(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    fixed = LOOP.replace("    nn.utils.clip_grad_norm_(model.parameters(), 1.0)\n", "")
    Path("nb.ipynb").write_text(notebook(SETUP, "model.half()", fixed))
    result = run("--output-format", "full", "nb.ipynb")
    lines = result.output.splitlines()
    assert lines[0].startswith(
        "nb.ipynb:cell 2:1:1: LC501 model.half() runs after the optimizer at line 7 of cell 1 was built"
    )
    assert lines[1:] == [
        "         |",
        "cell 1:7 | optimizer = torch.optim.SGD(model.parameters(), lr=0.1)",
        "         |             ------------------------------------------- the optimizer, built from the old parameters",
        "...",
        "       1 | model.half()",
        "         | ^^^^^^^^^^^^ LC501",
        "...",
        "cell 3:7 |     optimizer.step()",
        "         |     ---------------- the step that follows",
        "         |",
        "",
        "Found 1 error.",
    ]
    data = json.loads(run("--output-format", "json", "nb.ipynb").output)
    assert [(r["cell"], r["row"]) for r in data[0]["related"]] == [(1, 7), (3, 7)]


def test_directories_include_notebooks_but_not_checkpoints(project):
    (project / ".ipynb_checkpoints").mkdir()
    (project / ".ipynb_checkpoints" / "train-checkpoint.ipynb").write_text((project / "train.ipynb").read_text())
    (project / "other.ipynb").write_text(notebook(SETUP, LOOP.replace("clip_grad_norm_", "clip_grad_value_")))
    result = run(".")
    assert [line.split(":")[0] for line in result.output.splitlines()] == [
        "other.ipynb", "train.ipynb", "Found 2 errors.", "[*] 2 fixable with the `--fix` option."
    ]


def test_noqa_in_a_cell(project):
    nb = notebook(SETUP, LOOP.replace("1.0)\n", "1.0)  # noqa: LC101\n"))
    (project / "train.ipynb").write_text(nb)
    assert run("train.ipynb").exit_code == 0


def test_skip_file_in_a_cell(project):
    (project / "train.ipynb").write_text(notebook("# loopcheck: skip-file", SETUP, LOOP))
    assert run("train.ipynb").exit_code == 0


def test_notebook_from_stdin(project):
    text = (project / "train.ipynb").read_text()
    result = run("-", "--stdin-filename", "nb.ipynb", input=text)
    assert result.output == f"nb.ipynb:cell 4:4:5: LC101 {CLIP_MESSAGE}\nFound 1 error.\n[*] 1 fixable with the `--fix` option.\n"


def test_other_languages_are_not_checked(project):
    (project / "train.ipynb").write_text(notebook(SETUP, LOOP, language="R"))
    assert run("train.ipynb").output == "All checks passed!\n"


def test_a_file_that_is_not_a_notebook_is_an_error(project):
    (project / "broken.ipynb").write_text("{not json")
    result = run("broken.ipynb", "train.ipynb")
    assert result.exit_code == 2
    assert "loopcheck: cannot read broken.ipynb: not a readable notebook" in result.output
    assert f"train.ipynb:cell 4:4:5: LC101 {CLIP_MESSAGE}" in result.output


def test_cell_program_blanks_magics_line_for_line():
    assert cell_program(["%matplotlib inline", "import torch", "!ls", "files = !ls", "x?",
                         "for i in r:", "    %time f(i)", "y = 1  # why?"]) == [
        "", "import torch", "", "", "", "for i in r:", "    pass", "y = 1  # why?"
    ]
    assert cell_program(["%%bash", "echo (", "ls"]) == ["", "", ""]
    assert cell_program(["%%time", "x = 1"]) == ["", "x = 1"]


def test_read_notebook_maps_rows_to_cells():
    nb = read_notebook(notebook("a = 1\nb = 2", "md:text", "", "c = 3\n"))
    assert nb.source == "a = 1\nb = 2\nc = 3\n"
    assert nb.cells == [(1, 1), (1, 2), (4, 1)]
    assert nb.locate(3) == (4, 1)
    assert nb.relabel("see line 3 and line 9") == "see line 1 of cell 4 and line 9"


def test_fix_writes_a_valid_notebook_that_is_then_clean(project):
    path = project / "train.ipynb"
    before = nbformat.reads(path.read_text(), as_version=4)
    result = run("--fix", "train.ipynb")
    assert result.exit_code == 0
    assert result.output == "Found 1 error (1 fixed, 0 remaining).\n"
    after = nbformat.reads(path.read_text(), as_version=4)
    nbformat.validate(after)
    assert [c.cell_type for c in after.cells] == [c.cell_type for c in before.cells]
    assert after.cells[1].source == before.cells[1].source  # magics and shell lines kept
    assert after.cells[3].source == (
        "for step in range(10):\n"
        "    x = torch.randn(8, 4)\n"
        "    optimizer.zero_grad()\n"
        "    loss = model(x).pow(2).mean()\n"
        "    %time y = 1\n"
        "    loss.backward()\n"
        "    nn.utils.clip_grad_norm_(model.parameters(), 1.0)\n"
        "    optimizer.step()"
    )
    assert run("train.ipynb").exit_code == 0
