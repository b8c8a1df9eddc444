"""Jupyter notebooks: their code cells read as one program, findings placed back in cells.

A notebook (read with nbformat, any version converted to 4) is checked as the program its
code cells make when run from top to bottom: the cells' lines joined in order. IPython
syntax that is not Python is blanked line for line, so that it neither fails to parse nor
shifts the lines after it:

- line magics and shell escapes (``%matplotlib inline``, ``!pip install x``,
  ``files = !ls``, ``%time f()``) and help queries (``model?``) become empty lines (or
  ``pass`` at their indentation inside a block);
- a cell magic (``%%bash``, ``%%writefile``, ...) blanks its whole cell, except those
  whose body is Python (``%%time``, ``%%timeit``, ``%%capture``, ...), which only lose
  their first line.

Known limit: the test is per line, so a continuation line inside brackets or a multi-line
string that starts with ``%``, ``!`` or ``?`` is blanked too.

Positions are reported as ruff reports them: the cell's number (1-based, counting every
cell of the notebook, as Jupyter shows them) and the row within the cell.
"""

from __future__ import annotations

import re
import warnings
from dataclasses import dataclass

# Cell magics whose body is Python code run as usual.
PYTHON_CELL_MAGICS = {"time", "timeit", "capture", "prun", "debug", "memit", "mprun", "python", "python3"}

_ASSIGNED_MAGIC = re.compile(r"^[\w.\[\], ]+=\s*[%!]")
_LINE_BREAK = re.compile(r"\r\n|\r|\n")
_LINE_REF = re.compile(r"\bline (\d+)\b")


class NotebookError(Exception):
    """The file is not a notebook nbformat can read."""


@dataclass
class Notebook:
    """The program of a notebook's code cells.

    Attributes:
        source: the joined code cells, magics blanked (what is analysed).
        lines: the original text of each row of ``source`` (what is shown).
        cells: for each row of ``source`` (index ``row - 1``), ``(cell, row_in_cell)``.
    """

    source: str
    lines: list[str]
    cells: list[tuple[int, int]]

    def locate(self, row: int) -> tuple[int, int]:
        """``(cell, row_in_cell)`` of a row of :attr:`source` (1-based)."""
        if not self.cells:
            return 1, row
        if 1 <= row <= len(self.cells):
            return self.cells[row - 1]
        cell, last = self.cells[-1]  # the end of the program: past the last cell's rows
        return cell, last + row - len(self.cells)

    def relabel(self, message: str) -> str:
        """``message`` with its ``line N`` references (rows of :attr:`source`) made
        ``line R of cell C``."""

        def sub(m: re.Match) -> str:
            row = int(m.group(1))
            if not 1 <= row <= len(self.cells):
                return m.group(0)
            cell, r = self.cells[row - 1]
            return f"line {r} of cell {cell}"

        return _LINE_REF.sub(sub, message)


def _is_magic(line: str) -> bool:
    s = line.strip()
    if not s or s.startswith("#"):
        return False
    return s[0] in "%!?" or (s.endswith("?") and "#" not in s) or bool(_ASSIGNED_MAGIC.match(s))


def _blank(line: str) -> str:
    indent = line[: len(line) - len(line.lstrip())]
    return f"{indent}pass" if indent else ""


def _split(text: str) -> list[str]:
    lines = _LINE_BREAK.split(text)
    if lines and lines[-1] == "":
        lines.pop()
    return lines


def cell_program(lines: list[str]) -> list[str]:
    """The Python lines of one code cell: IPython magics blanked, as many lines as before."""
    if lines and lines[0].lstrip().startswith("%%"):
        name = lines[0].lstrip()[2:].split(maxsplit=1)
        if not name or name[0] not in PYTHON_CELL_MAGICS:
            return [""] * len(lines)
        lines = ["", *lines[1:]]
    return [_blank(line) if _is_magic(line) else line for line in lines]


def _is_python(nb) -> bool:
    meta = nb.get("metadata", {})
    language = (meta.get("language_info") or {}).get("name") or (meta.get("kernelspec") or {}).get("language")
    return language is None or str(language).lower() == "python"


def read_notebook(text: str) -> Notebook:
    """Read a notebook's JSON text into the program of its code cells.

    A notebook whose kernel is not Python gives an empty program.

    Raises:
        NotebookError: the text is not a notebook.
    """
    import nbformat

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            nb = nbformat.reads(text, as_version=4)
    except Exception as err:  # nbformat raises JSON, validation and version errors alike
        raise NotebookError(f"not a readable notebook: {type(err).__name__}: {err}") from None
    program: list[str] = []
    shown: list[str] = []
    cells: list[tuple[int, int]] = []
    if _is_python(nb):
        for number, cell in enumerate(nb.get("cells", []), 1):
            if cell.get("cell_type") != "code":
                continue
            lines = _split(cell.get("source", ""))
            program.extend(cell_program(lines))
            shown.extend(lines)
            cells.extend((number, row) for row in range(1, len(lines) + 1))
    source = "".join(line + "\n" for line in program)
    return Notebook(source, shown, cells)


def write_program(text: str, notebook: Notebook, program: str) -> str:
    """The notebook JSON ``text`` with its code cells changed to match a fixed ``program``.

    ``program`` is :attr:`Notebook.source` after fixes. Lines are matched with difflib: an
    unchanged line keeps its original text (magics included) and cell; a new or changed
    line goes to the cell of the original line it replaces or is inserted before (the
    last cell at the end). The result is written with nbformat (as version 4).

    Raises:
        NotebookError: ``text`` is not a notebook.
    """
    import difflib

    import nbformat

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            nb = nbformat.reads(text, as_version=4)
    except Exception as err:
        raise NotebookError(f"not a readable notebook: {type(err).__name__}: {err}") from None
    old = _split(notebook.source)
    new = _split(program)
    by_cell: dict[int, list[str]] = {cell: [] for cell, _ in notebook.cells}
    last_cell = notebook.cells[-1][0] if notebook.cells else None
    matcher = difflib.SequenceMatcher(a=old, b=new, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            for k in range(i2 - i1):
                by_cell[notebook.cells[i1 + k][0]].append(notebook.lines[i1 + k])
            continue
        cell = notebook.cells[i1][0] if i1 < len(notebook.cells) else last_cell
        if cell is not None:
            by_cell[cell].extend(new[j1:j2])
    for number, cell in enumerate(nb.cells, 1):
        if number in by_cell and cell.get("cell_type") == "code":
            trailing = "\n" if cell.source.endswith("\n") else ""
            cell.source = "\n".join(by_cell[number]) + trailing
    return nbformat.writes(nb) + "\n"
