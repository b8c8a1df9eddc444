"""Jupyter notebooks: code cells checked as one program, findings placed in cells."""

from __future__ import annotations

import json
from pathlib import Path

import nbformat
import pytest
from click.testing import CliRunner
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

from loopcheck.cli.commands import main
from loopcheck.workspace import notebook as notebook_module
from loopcheck.workspace.notebook import cell_program, read_notebook
from test_cli import BAD as BAD_PY, NOTE

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
    "nn.utils.clip_grad_norm_() runs before loss.backward() (line 7 of cell 4), on empty gradients"
)


def notebook(*cells, language: str = "python") -> str:
    nb = new_notebook(
        cells=[new_markdown_cell(c[3:]) if c.startswith("md:") else new_code_cell(c) for c in cells],
        metadata={"kernelspec": {"name": "k", "language": language, "display_name": "k"}},
    )
    return nbformat.writes(nb)


def run(*args: str, input: str | None = None):
    """Run the check with ``--preview``: the rules the notebooks here break (LC101, LC501...)
    are in preview (tests/test_preview.py tests the default selection)."""
    return CliRunner().invoke(main, ["--preview", *args], input=input)


@pytest.fixture
def project(tmp_path: Path, monkeypatch) -> Path:
    (tmp_path / "train.ipynb").write_text(notebook("md:# Training", SETUP, "%%bash\necho ( not python", LOOP))
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_concise_places_findings_in_cells(project):
    result = run("train.ipynb")
    assert result.exit_code == 1
    assert result.output == f"train.ipynb:cell 4:4:5: LC101 [*] {CLIP_MESSAGE}\nFound 1 error.\n[*] 1 fixable with `--fix`.\n"


def test_json_has_the_cell_and_rows_in_the_cell(project):
    result = run("--output-format", "json", "train.ipynb")
    (obj,) = json.loads(result.output)
    assert obj["cell"] == 4
    assert {k: obj[k] for k in ("message", "location", "end_location", "noqa_row", "related")} == {
        "message": CLIP_MESSAGE,
        "location": {"row": 4, "column": 5},
        "end_location": {"row": 4, "column": 54},
        "noqa_row": 4,
        "related": [{"cell": 4, "row": 7, "column": 5, "message": "backward() fills .grad only here",
                     "filename": str(project / "train.ipynb")}],
    }
    assert obj["fix"] == {  # the fix's edits in rows of the cell, as ruff gives them
        "applicability": "safe",
        "message": "Move `clip_grad_norm_()` between `loss.backward()` and `optimizer.step()`",
        "edits": [
            {"content": "", "location": {"row": 4, "column": 1}, "end_location": {"row": 5, "column": 1}},
            {"content": "    nn.utils.clip_grad_norm_(model.parameters(), 1.0)\n",
             "location": {"row": 8, "column": 1}, "end_location": {"row": 8, "column": 1}},
        ],
    }


def test_full_shows_the_cell_lines_with_their_magics(project):
    result = run("--output-format", "full", "train.ipynb")
    assert result.output == (
        f"LC101 [*] {CLIP_MESSAGE}\n"
        " --> train.ipynb:cell 4:4:5\n"
        "  |\n"
        "4 |     nn.utils.clip_grad_norm_(model.parameters(), 1.0)\n"
        "  |     ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^\n"
        "5 |     loss = model(x).pow(2).mean()\n"
        "6 |     %time y = 1\n"
        "7 |     loss.backward()\n"
        "  |     --------------- backward() fills .grad only here\n"
        "  |\n"
        "help: Move `clip_grad_norm_()` between `loss.backward()` and `optimizer.step()`\n"
        "  |\n"
        "3 |     optimizer.zero_grad()\n"
        "  -     nn.utils.clip_grad_norm_(model.parameters(), 1.0)\n"
        "4 |     loss = model(x).pow(2).mean()\n"
        "...\n"
        "6 |     loss.backward()\n"
        "7 +     nn.utils.clip_grad_norm_(model.parameters(), 1.0)\n"
        "8 |     optimizer.step()\n"
        "  |\n"
        f"note: {NOTE}\n"
        "\n"
        "Found 1 error.\n"
        "[*] 1 fixable with `--fix`.\n"
    )


def test_related_lines_in_other_cells(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    fixed = LOOP.replace("    nn.utils.clip_grad_norm_(model.parameters(), 1.0)\n", "")
    # an optimizer that keeps per-parameter state (plain SGD keeps none: no dtype to break)
    setup = SETUP.replace("lr=0.1)", "lr=0.1, momentum=0.9)")
    # before the optimizer has state, the conversion breaks it only when it builds new parameters
    setup += "\ntorch.__future__.set_overwrite_module_params_on_conversion(True)"
    Path("nb.ipynb").write_text(notebook(setup, "model.half()", fixed))
    result = run("--output-format", "full", "nb.ipynb")
    lines = result.output.splitlines()
    assert lines[0] == (
        "LC501 model.half() makes new parameters after the optimizer at line 7 of cell 1 was built from the old ones"
    )
    assert lines[1:] == [
        "        --> nb.ipynb:cell 2:1:1",
        "         |",
        "cell 1:7 | optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)",
        "         |             --------------------------------------------------------- the optimizer, built from the old parameters",
        "cell 1:8 | torch.__future__.set_overwrite_module_params_on_conversion(True)",
        "         | ---------------------------------------------------------------- the setting that makes conversions build new parameters",
        "...",
        "       1 | model.half()",
        "         | ^^^^^^^^^^^^",
        "...",
        "cell 3:7 |     optimizer.step()",
        "         |     ---------------- the step that follows",
        "         |",
        "note: set_overwrite_module_params_on_conversion(True) makes the conversion build new Parameter objects, so the "
        "optimizer updates orphaned copies and the model never trains (measured, CPU, torch 2.13: 6/6 parameters "
        "orphaned, 0/32 steps moved the model). Build the optimizer after the model is final.",
        "",
        "Found 1 error.",
    ]
    data = json.loads(run("--output-format", "json", "nb.ipynb").output)
    assert [(r["cell"], r["row"]) for r in data[0]["related"]] == [(1, 7), (3, 7), (1, 8)]


def test_directories_include_notebooks_but_not_checkpoints(project):
    (project / ".ipynb_checkpoints").mkdir()
    (project / ".ipynb_checkpoints" / "train-checkpoint.ipynb").write_text((project / "train.ipynb").read_text())
    (project / "other.ipynb").write_text(notebook(SETUP, LOOP.replace("clip_grad_norm_", "clip_grad_value_")))
    result = run(".")
    assert [line.split(":")[0] for line in result.output.splitlines()] == [
        "other.ipynb", "train.ipynb", "Found 2 errors.", "[*] 2 fixable with `--fix`."
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
    assert result.output == f"nb.ipynb:cell 4:4:5: LC101 [*] {CLIP_MESSAGE}\nFound 1 error.\n[*] 1 fixable with `--fix`.\n"


def test_other_languages_are_not_checked(project):
    (project / "train.ipynb").write_text(notebook(SETUP, LOOP, language="R"))
    assert run("train.ipynb").output == "All checks passed!\n"


def test_a_file_that_is_not_a_notebook_is_an_error(project):
    (project / "broken.ipynb").write_text("{not json")
    result = run("broken.ipynb", "train.ipynb")
    assert result.exit_code == 2
    assert "loopcheck: cannot read broken.ipynb: not a readable notebook" in result.output
    assert f"train.ipynb:cell 4:4:5: LC101 [*] {CLIP_MESSAGE}" in result.output


CELL = ["%matplotlib inline", "import torch", "!ls", "files = !ls", "x?", "for i in r:", "    %time f(i)",
        "y = 1  # why?", "out = !ls \\", "  -la", "z = 2"]


def test_cell_program_blanks_magics_line_for_line_without_ipython(monkeypatch):
    monkeypatch.setattr(notebook_module, "_ipython_token_transformer", lambda: None)
    assert cell_program(CELL) == [
        "", "import torch", "", "", "", "for i in r:", "    pass", "y = 1  # why?", "", "", "z = 2"
    ]
    assert cell_program(["%%bash", "echo (", "ls"]) == ["", "", ""]
    assert cell_program(["%%time", "x = 1", "!ls"]) == ["", "x = 1", ""]


def test_cell_program_uses_ipythons_transformer(monkeypatch):
    pytest.importorskip("IPython")
    notebook_module._ipython_token_transformer.cache_clear()
    assert cell_program(CELL) == [
        "get_ipython().run_line_magic('matplotlib', 'inline')",
        "import torch",
        "get_ipython().system('ls')",
        "files = get_ipython().getoutput('ls')",
        "get_ipython().run_line_magic('pinfo', 'x')",
        "for i in r:",
        "    get_ipython().run_line_magic('time', 'f(i)')",
        "y = 1  # why?",
        "out = get_ipython().getoutput('ls    -la')",
        "",
        "z = 2",
    ]
    assert cell_program(["%%bash", "echo (", "ls"]) == ["", "", ""]
    assert cell_program(["%%time", "x = 1", "!ls"]) == ["", "x = 1", "get_ipython().system('ls')"]


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


# ------------------------------------------------------------------ syntax errors in a cell


def test_a_syntax_error_is_reported_in_its_cell_and_the_other_cells_are_checked(project):
    (project / "train.ipynb").write_text(notebook(SETUP, "def broken(:\n    pass", LOOP, "x = (1,\n"))
    result = run("--output-format", "concise", "train.ipynb")
    assert result.exit_code == 1
    assert result.output.splitlines() == [
        "train.ipynb:cell 2:1:12: LC001 SyntaxError: invalid syntax",
        f"train.ipynb:cell 3:4:5: LC101 [*] {CLIP_MESSAGE.replace('cell 4', 'cell 3')}",
        "train.ipynb:cell 4:1:5: LC001 SyntaxError: '(' was never closed",
        "Found 3 errors.",
        "[*] 1 fixable with `--fix`.",
    ]


def test_a_line_a_cell_syntax_error_names_is_a_line_of_that_cell(project):
    """The cell is parsed alone, so CPython's "on line N" is a row of that cell: it is named
    as that cell's (census 23: "line 18 of cell 4" for a `for` at line 56 of cell 11)."""
    (project / "train.ipynb").write_text(notebook(SETUP, "a = 1\nb = 2\nfor i in range(3):\n\nc = 3\n"))
    result = run("--output-format", "concise", "train.ipynb")
    assert result.output.splitlines()[0] == (
        "train.ipynb:cell 2:5:1: LC001 SyntaxError: expected an indented block after 'for' statement on line 3 of cell 2")


def test_fix_works_beside_a_broken_cell(project):
    (project / "train.ipynb").write_text(notebook(SETUP, "def broken(:\n    pass", LOOP))
    result = run("--fix", "train.ipynb")
    assert result.output == (
        "train.ipynb:cell 2:1:12: LC001 SyntaxError: invalid syntax\nFound 2 errors (1 fixed, 1 remaining).\n")
    cells = nbformat.reads((project / "train.ipynb").read_text(), as_version=4).cells
    assert cells[1].source == "def broken(:\n    pass"
    assert "loss.backward()\n    nn.utils.clip_grad_norm_" in cells[2].source


@pytest.mark.parametrize("ipython", [True, False], ids=["ipython", "blanking"])
def test_continued_shell_lines_are_ipython_not_a_syntax_error(project, monkeypatch, ipython):
    if ipython:
        pytest.importorskip("IPython")
        notebook_module._ipython_token_transformer.cache_clear()
    else:
        monkeypatch.setattr(notebook_module, "_ipython_token_transformer", lambda: None)
    cell = "files = !ls \\\n  -la \\\n  /tmp\nx = !echo (\n" + SETUP
    (project / "train.ipynb").write_text(notebook(cell, LOOP))
    result = run("--output-format", "concise", "train.ipynb")
    assert result.output.splitlines()[0] == f"train.ipynb:cell 2:4:5: LC101 [*] {CLIP_MESSAGE.replace('cell 4', 'cell 2')}"


# ------------------------------------------------------------------ github and sarif


def test_github_and_sarif_do_not_put_cell_rows_on_the_notebook_file(project):
    lines = run("--output-format", "github", "train.ipynb").output.splitlines()
    assert lines == [
        f"::error title=loopcheck (LC101),file={project}/train.ipynb,line=1,col=1,endLine=1,endColumn=1::"
        f"train.ipynb:cell 4:4:5: LC101 {CLIP_MESSAGE}%0A  help: Move `clip_grad_norm_()` between "
        "`loss.backward()` and `optimizer.step()`"
    ]
    log = json.loads(run("--output-format", "sarif", "train.ipynb").output)
    (result,) = log["runs"][0]["results"]
    assert result["message"]["text"] == f"cell 4:4:5: {CLIP_MESSAGE}"
    assert result["locations"] == [{
        "physicalLocation": {"artifactLocation": {"uri": (project / "train.ipynb").as_uri()},
                             "region": {"startLine": 1, "startColumn": 1}},
        "properties": {"cell": 4, "row": 4, "column": 5},
    }]
    assert result["relatedLocations"][0]["properties"] == {"cell": 4, "row": 7, "column": 5}


# ------------------------------------------------------------------ what nbformat accepts


def raw_notebook(cells: list, metadata: dict | None = None, nbformat_minor: int = 5) -> str:
    return json.dumps({"cells": cells, "metadata": metadata or {}, "nbformat": 4, "nbformat_minor": nbformat_minor})


def code(source, **extra) -> dict:
    return {"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [], "source": source, **extra}


@pytest.mark.parametrize("bad", [None, 42], ids=["null", "number"])
def test_a_cell_whose_source_is_not_text_is_skipped_with_a_warning(project, bad):
    (project / "odd.ipynb").write_text(raw_notebook([code(SETUP), code(bad), code(LOOP)]))
    result = run("--output-format", "concise", "odd.ipynb")
    assert result.exit_code == 1
    assert result.stdout.splitlines()[0].startswith("odd.ipynb:cell 3:4:5: LC101 [*] ")
    assert result.stderr == f"warning: odd.ipynb: cell 2 not checked: its source is {json.dumps(bad)}, not text\n"


def test_a_notebook_nbformat_cannot_read_is_an_error_not_a_crash(project):
    (project / "odd.ipynb").write_text(raw_notebook([code(["a", 1])]))
    result = run("odd.ipynb")
    assert result.exit_code == 2
    assert "loopcheck: cannot read odd.ipynb: not a readable notebook: TypeError" in result.stderr


@pytest.mark.parametrize("metadata", [{"kernelspec": "python3"}, {"language_info": ["python"]},
                                      {"kernelspec": None, "language_info": 3}], ids=str)
def test_malformed_language_metadata_is_checked_as_python(project, metadata):
    (project / "odd.ipynb").write_text(raw_notebook([code(SETUP), code(LOOP)], metadata))
    result = run("--output-format", "concise", "odd.ipynb")
    assert (result.exit_code, result.stderr) == (1, "")
    assert result.stdout.splitlines()[0].startswith("odd.ipynb:cell 2:4:5: LC101 [*] ")


# ------------------------------------------------------------------ fixes keep the file's bytes


def test_fix_changes_only_the_fixed_cells_source_bytes(project):
    # nbformat 4.2, no cell ids in one cell, unsorted metadata, 2-space indent, CRLF line
    # endings in the JSON and in one cell, a source given as one string, non-ASCII text
    meta = {"zeta": 1, "kernelspec": {"name": "python3", "language": "python", "display_name": "Py"}, "alpha": "é"}
    cells = [
        {"id": "setup-1", **code(SETUP.splitlines(keepends=True))},
        code("print('naïve')\r\n"),
        {"id": "loop-2", **code(LOOP.replace("\n", "\r\n").splitlines(keepends=True))},
        {"cell_type": "markdown", "metadata": {"z": 1, "a": 2}, "source": "# notes"},
    ]
    text = json.dumps({"metadata": meta, "nbformat": 4, "nbformat_minor": 2, "cells": cells},
                      indent=2, ensure_ascii=False).replace("\n", "\r\n")
    path = project / "bytes.ipynb"
    path.write_bytes(text.encode("utf-8"))
    assert run("--fix", "bytes.ipynb").exit_code == 0
    fixed_loop = LOOP.replace("    nn.utils.clip_grad_norm_(model.parameters(), 1.0)\n", "").replace(
        "    loss.backward()\n", "    loss.backward()\n    nn.utils.clip_grad_norm_(model.parameters(), 1.0)\n")
    cells[2]["source"] = fixed_loop.replace("\n", "\r\n").splitlines(keepends=True)
    expected = json.dumps({"metadata": meta, "nbformat": 4, "nbformat_minor": 2, "cells": cells},
                          indent=2, ensure_ascii=False).replace("\n", "\r\n")
    assert path.read_bytes() == expected.encode("utf-8")


def test_fix_keeps_a_string_source_a_string(project):
    path = project / "string.ipynb"
    path.write_text(raw_notebook([code(SETUP), code(LOOP + "\n")]))
    assert run("--fix", "string.ipynb").exit_code == 0
    cells = json.loads(path.read_text())["cells"]
    assert isinstance(cells[1]["source"], str) and cells[1]["source"].endswith("optimizer.step()\n")
    assert "loss.backward()\n    nn.utils.clip_grad_norm_" in cells[1]["source"]
    assert path.read_text().startswith('{"cells": [{"cell_type": "code", "execution_count": null, ')


def test_fix_in_an_nbformat_3_notebook_keeps_version_3(project):
    v3 = {"metadata": {"name": "old"}, "nbformat": 3, "nbformat_minor": 0, "worksheets": [{"cells": [
        {"cell_type": "code", "collapsed": False, "input": SETUP.splitlines(keepends=True), "language": "python",
         "metadata": {}, "outputs": []},
        {"cell_type": "code", "collapsed": False, "input": LOOP.splitlines(keepends=True), "language": "python",
         "metadata": {}, "outputs": []},
    ], "metadata": {}}]}
    path = project / "v3.ipynb"
    path.write_text(json.dumps(v3, indent=1))
    assert run("--output-format", "concise", "v3.ipynb").output.startswith("v3.ipynb:cell 2:4:5: LC101 [*] ")
    assert run("--fix", "v3.ipynb").exit_code == 0
    after = json.loads(path.read_text())
    assert after["nbformat"] == 3 and "cells" not in after
    assert "loss.backward()\n    nn.utils.clip_grad_norm_" in "".join(after["worksheets"][0]["cells"][1]["input"])
    assert after["worksheets"][0]["cells"][0] == v3["worksheets"][0]["cells"][0]


def test_add_noqa_in_a_notebook_then_it_is_clean(project):
    path = project / "train.ipynb"
    before = json.loads(path.read_text())
    result = run("--add-noqa", "train.ipynb")
    assert (result.exit_code, result.output) == (0, "Added 1 noqa directive.\n")
    after = json.loads(path.read_text())
    assert "".join(after["cells"][3]["source"]).splitlines()[3] == (
        "    nn.utils.clip_grad_norm_(model.parameters(), 1.0)  # noqa: LC101")
    assert [c["source"] for c in after["cells"][:3]] == [c["source"] for c in before["cells"][:3]]
    assert run("train.ipynb").output == "All checks passed!\n"


def test_json_filename_of_standard_input(project):
    text = (project / "train.ipynb").read_text()
    data = json.loads(run("-", "--stdin-filename", "sub/nb.ipynb", "--output-format", "json", input=text).output)
    assert data[0]["filename"] == str(project / "sub" / "nb.ipynb")
    data = json.loads(run("-", "--output-format", "json", input=BAD_PY).output)
    assert data[0]["filename"] == "-" and data[0]["cell"] is None


def test_cells_ipython_runs_are_no_syntax_error():
    """IPython runs a cell of one line that starts with a line magic's name (automagic), and a
    cell whose lines all carry the first line's indentation (its leading_indent cleanup): no
    LC001 for those (census 4: three such findings); a blank left in an exercise still is one,
    and so is a magic name used with an operator that is not Python."""
    from loopcheck.workspace.notebook import build_notebook

    nb = build_notebook([(1, "pip install -r requirements.txt"), (2, " x = 1\n y = x + 1"), (3, "pip = 3"),
                         (4, "model =\n"), (5, "ls -la"), (6, " a = 1\nb = (\n"), (7, "bash ./run.sh"),
                         (8, "uv pip install torch torchvision"), (9, "micromamba install -y numpy")])
    assert nb.syntax_errors == [(4, 1, 8, "invalid syntax"), (6, 1, 1, "unexpected indent"),
                                (7, 1, 7, "invalid syntax")]


# A notebook whose fifth code cell does not parse, after cells whose rows a position taken from
# the whole program would land in: a line magic, a shell escape continued on the next line, a
# cell magic whose body is Python, and markdown cells (cells count them too).
BROKEN_AFTER_MAGICS = [
    "md:# Schedule",
    "%matplotlib inline\nimport math\nimport torch",
    "!pip install tqdm \\\n  einops\nT = 1000",
    "md:## Steps",
    "%%time\n# Note: T is the number of steps\nsteps = list(range(T))",
    "%load_ext autoreload\nalphas = [math.cos(i / T) for i in steps]\nfor i, a in enumeratealphas:\n\n"
    "beta = torch.tensor(alphas)",
    "x = (1,\n     2]",
]


@pytest.mark.parametrize("ipython", [True, False], ids=["ipython", "blanking"])
def test_a_syntax_error_after_magic_cells_names_its_own_cell_and_lines(tmp_path, monkeypatch, ipython):
    """CPython rejects cell 6 at its row 5 (the ``for`` of row 3 has no body) and cell 7 at its
    row 2 (the ``(`` of row 1 is closed by ``]``): the cell, the row and column, and the line
    the message names are the cell's own, whether IPython rewrites the magics or they are
    blanked (census 23: "line 18 of cell 4" for a ``for`` at line 56 of cell 11)."""
    if ipython:
        pytest.importorskip("IPython")
        notebook_module._ipython_token_transformer.cache_clear()
    else:
        monkeypatch.setattr(notebook_module, "_ipython_token_transformer", lambda: None)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "nb.ipynb").write_text(notebook(*BROKEN_AFTER_MAGICS))
    result = run("--output-format", "concise", "nb.ipynb")
    assert result.output.splitlines() == [
        "nb.ipynb:cell 6:5:1: LC001 SyntaxError: expected an indented block after 'for' statement on line 3 of cell 6",
        "nb.ipynb:cell 7:2:7: LC001 SyntaxError: closing parenthesis ']' does not match opening parenthesis '(' "
        "on line 1 of cell 7",
        "Found 2 errors.",
    ]
    found = json.loads(run("--output-format", "json", "nb.ipynb").output)
    assert [(f["code"], f["cell"], f["location"], f["end_location"], f["noqa_row"], f["message"]) for f in found] == [
        ("LC001", 6, {"row": 5, "column": 1}, {"row": 5, "column": 1}, 5,
         "SyntaxError: expected an indented block after 'for' statement on line 3 of cell 6"),
        ("LC001", 7, {"row": 2, "column": 7}, {"row": 2, "column": 7}, 2,
         "SyntaxError: closing parenthesis ']' does not match opening parenthesis '(' on line 1 of cell 7"),
    ]
    full = run("--output-format", "full", "nb.ipynb").output.splitlines()
    assert full[1:5] == [" --> nb.ipynb:cell 6:5:1", "  |", "5 | beta = torch.tensor(alphas)", "  | ^"]


def test_a_null_character_in_a_cell_is_reported_where_it_is():
    """CPython refuses text with a NUL before parsing it, with no position: the cell's LC001 is
    at the NUL, in the words a Python file gets, not at the cell's first row."""
    from loopcheck.workspace.notebook import build_notebook

    nb = build_notebook([(1, "import torch\nx = 1"), (3, "%time a = 1\nb = 'x\\0y'\nc = '\0'")])
    assert nb.syntax_errors == [(3, 3, 6, "source code cannot contain null bytes")]


def test_a_line_a_cell_message_names_past_the_cell_end_stays_in_that_cell():
    """The line a cell's syntax error names is a row of that cell; one past its end (where
    CPython's text ends) is named as its last row, never as a row of the next cell."""
    from loopcheck.workspace.notebook import build_notebook

    nb = build_notebook([(1, "import torch\nx = 1"), (2, "a = 1\nb = 2"), (4, "c = 3")])
    assert nb.relabel(nb.cell_message(2, "on line 2")) == "on line 2 of cell 2"
    assert nb.relabel(nb.cell_message(2, "(detected at line 3)")) == "(detected at line 2 of cell 2)"
