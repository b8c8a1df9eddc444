"""Jupyter notebooks: their code cells read as one program, findings placed back in cells.

A notebook (read with nbformat: every version it reads, converted to 4) is checked as the
program its code cells make when run from top to bottom: the cells' lines joined in order.
IPython syntax that is not Python keeps its lines, so that it neither fails to parse nor
shifts the lines after it:

- line magics, shell escapes and help queries (``%matplotlib inline``, ``!pip install x``,
  ``files = !ls \\`` with its continuation lines, ``model?``) are rewritten by IPython's own
  transformer (``IPython.core.inputtransformer2``) into the Python IPython runs
  (``files = get_ipython().getoutput('ls -la')``) when IPython is installed, padded with
  empty lines to keep the rows; without IPython they become empty lines (or ``pass`` at
  their indentation inside a block), continuation lines included;
- a cell magic (``%%bash``, ``%%writefile``, ...) blanks its whole cell, except those whose
  body is Python (``%%time``, ``%%timeit``, ``%%capture``, ...), which only lose their first
  line.

A cell that does not parse on its own is reported as LC001 in that cell, at the error (a line
its message names is a line of that cell: :meth:`Notebook.cell_message`), and left out of the
program (its rows kept empty), so the other cells are still checked — as
ruff skips the bad cell. A cell IPython runs after transformations this module does not make
(its leading-indent cleanup, automagic on a one-line cell: :func:`_runs_in_ipython`) is left
out the same way, without LC001. A cell whose ``source`` is not text (``null``, a number), which
nbformat still reads, is left out with a warning (:attr:`Notebook.warnings`); malformed
``kernelspec``/``language_info`` metadata is read as "language unknown" (checked as Python).

Positions are reported as ruff reports them: the cell's number (1-based, counting every
cell of the notebook, as Jupyter shows them) and the row within the cell.

Fixes are written back into the notebook's own JSON text (:func:`write_program`): only the
``source`` values of the changed code cells are replaced, in their own shape (a list of
lines or one string), with their line endings; nbformat version, cell ids, metadata and its
key order, outputs, indentation and everything else stay byte for byte.
"""

from __future__ import annotations

import ast
import json
import re
import warnings
from dataclasses import dataclass, field
from functools import lru_cache
from typing import TYPE_CHECKING, Collection, Iterable, Mapping

if TYPE_CHECKING:
    from loopcheck.findings import Finding
    from loopcheck.fixes.model import Fix

#: IPython's line magics that automagic (on by default) runs without their ``%`` in a cell of
#: one line (``pip install -r requirements.txt``, ``uv pip install torch``: IPython 9 adds ``%uv`` and
#: ``%micromamba`` beside ``%pip``): IPython's prefilter, which it applies to
#: single-line cells only (``InteractiveShell.transform_cell``); the aliases ``ls``, ``mkdir``...
#: (https://ipython.readthedocs.io/en/stable/interactive/magics.html).
AUTOMAGICS = frozenset({
    "pip", "conda", "mamba", "micromamba", "uv", "cd", "pwd", "ls", "mkdir", "rmdir", "mv", "cp", "cat", "rm", "env",
    "load_ext", "reload_ext", "matplotlib", "timeit", "time", "run", "who", "whos", "history", "pylab", "config",
    "autoreload", "set_env", "pinfo", "psearch", "reset", "store", "xmode",
})

# Cell magics whose body is Python code run as usual.
PYTHON_CELL_MAGICS = {"time", "timeit", "capture", "prun", "debug", "memit", "mprun", "python", "python3"}

_ASSIGNED_MAGIC = re.compile(r"^[\w.\[\], ]+=\s*[%!]")
_LINE_BREAK = re.compile(r"\r\n|\r|\n")
_LINE_REF = re.compile(r"\bline (\d+)\b(?! of )")  # "line 21 of engine.py" is another file's


class NotebookError(Exception):
    """The file is not a notebook nbformat can read (or its JSON cannot be rewritten)."""


@dataclass
class CellText:
    """One code cell as written in the notebook.

    Attributes:
        number: the cell's number (1-based, counting every cell).
        lines: its source lines, without line endings.
        newline: the line ending its source uses (``"\\n"`` when it has none).
        trailing_newline: whether its source ends with a line ending.
    """

    number: int
    lines: list[str]
    newline: str = "\n"
    trailing_newline: bool = False

    @classmethod
    def of(cls, number: int, text: str) -> CellText:
        """The cell numbered ``number`` whose source is ``text``."""
        m = _LINE_BREAK.search(text)
        return cls(number, _split(text), m.group(0) if m else "\n", bool(text) and text[-1] in "\r\n")

    def text(self, lines: list[str] | None = None) -> str:
        """The source text of ``lines`` (default: its own) with this cell's line endings."""
        lines = self.lines if lines is None else lines
        return self.newline.join(lines) + (self.newline if self.trailing_newline and lines else "")


@dataclass
class Notebook:
    """The program of a notebook's code cells.

    Attributes:
        source: the joined code cells, IPython syntax rewritten and cells that do not parse
            left empty (what is analysed).
        lines: the original text of each row of ``source`` (what is shown).
        cells: for each row of ``source`` (index ``row - 1``), ``(cell, row_in_cell)``.
        warnings: what was left out and why (cells whose ``source`` is not text).
        syntax_errors: ``(cell, row_in_cell, column, message)`` of each cell that does not parse.
        code_cells: the code cells as written (:class:`CellText`), in order.
    """

    source: str
    lines: list[str]
    cells: list[tuple[int, int]]
    warnings: list[str] = field(default_factory=list)
    syntax_errors: list[tuple[int, int, int, str]] = field(default_factory=list)
    code_cells: list[CellText] = field(default_factory=list)

    def locate(self, row: int) -> tuple[int, int]:
        """``(cell, row_in_cell)`` of a row of :attr:`source` (1-based)."""
        if not self.cells:
            return 1, row
        if 1 <= row <= len(self.cells):
            return self.cells[row - 1]
        cell, last = self.cells[-1]  # the end of the program: past the last cell's rows
        return cell, last + row - len(self.cells)

    def row_of(self, cell: int, row_in_cell: int) -> int:
        """The row of :attr:`source` of a cell's row (1-based; past a cell's end: its last row + n)."""
        first = next((i for i, (c, _) in enumerate(self.cells) if c == cell), None)
        if first is None:
            return 1
        return first + row_in_cell

    def cell_message(self, cell: int, message: str) -> str:
        """The ``message`` of a syntax error of ``cell`` parsed alone, its ``line N``
        references (rows of that cell) made rows of :attr:`source`, which :meth:`relabel`
        names ``line N of cell C``. A row past the cell's end (where CPython's text ends) is
        its last row, never a row of the next cell."""
        size = sum(1 for c, _ in self.cells if c == cell)

        def sub(m: re.Match) -> str:
            return f"line {self.row_of(cell, min(max(int(m.group(1)), 1), max(size, 1)))}"

        return _LINE_REF.sub(sub, message)

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

    def changed_cells(self, program: str) -> dict[int, tuple[list[str], list[str]]] | None:
        """The code cells a changed ``program`` (this :attr:`source` after fixes) changes:
        ``{cell: (old lines, new lines)}`` with the cells' own text for unchanged lines
        (magics included). Lines are matched with difflib: a new or changed line goes to the
        cell of the original line it replaces or is inserted before (the last cell at the
        end). ``None`` when the notebook has no code cell."""
        import difflib

        if not self.cells:
            return None
        old = _split(self.source)
        new = _split(program)
        by_cell: dict[int, list[str]] = {c.number: [] for c in self.code_cells}
        last_cell = self.cells[-1][0]
        matcher = difflib.SequenceMatcher(a=old, b=new, autojunk=False)
        for tag, i1, i2, j1, j2 in matcher.get_opcodes():
            if tag == "equal":
                for k in range(i2 - i1):
                    by_cell[self.cells[i1 + k][0]].append(self.lines[i1 + k])
                continue
            cell = self.cells[i1][0] if i1 < len(self.cells) else last_cell
            by_cell.setdefault(cell, []).extend(new[j1:j2])
        return {c.number: (c.lines, by_cell[c.number]) for c in self.code_cells if by_cell[c.number] != c.lines}

    def fix_to_json(self, fix: Fix, program: str, cell: int) -> dict | None:
        """A fix in ruff's JSON shape with rows of the cells it edits: edits in ``cell`` (the
        finding's) count from its first row, as ruff's do; an edit in another cell also has
        ``"cell": N``. ``None`` when the fix cannot be placed in cells."""
        from loopcheck.fixes.model import edits_between

        try:
            changes = self.changed_cells(fix.apply(program))
        except (ValueError, IndexError):
            return None
        if not changes:
            return None
        by_number = {c.number: c for c in self.code_cells}
        edits = []
        for number, (old, new) in sorted(changes.items()):
            text = by_number[number]
            for e in edits_between(text.text(old), text.text(new)):
                obj = e.to_json()
                if number != cell:
                    obj["cell"] = number
                edits.append(obj)
        return {"applicability": fix.applicability, "edits": edits, "message": fix.message}


# --- IPython syntax ------------------------------------------------------------------


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


def _blank_magics(lines: list[str]) -> list[str]:
    """Blank IPython lines, and the lines a trailing backslash continues them onto."""
    out: list[str] = []
    continued = False
    for line in lines:
        if continued or _is_magic(line):
            out.append("" if continued else _blank(line))
            continued = line.rstrip().endswith("\\")
        else:
            out.append(line)
    return out


@lru_cache(maxsize=1)
def _ipython_token_transformer():
    """IPython's transformer of line magics, shell escapes and help queries, or ``None``.

    Only its token transformers are used: its cleanup (dedent, prompt stripping, leading blank
    lines) would move columns and rows, and cell magics are handled here. Nothing is run."""
    try:
        from IPython.core.inputtransformer2 import TransformerManager
    except Exception:  # noqa: BLE001 - not installed, or broken: blank instead
        return None
    manager = TransformerManager()
    manager.cleanup_transforms = []
    manager.line_transforms = []
    return manager


def _ipython_lines(lines: list[str]) -> list[str] | None:
    """``lines`` rewritten by IPython's transformer, as many rows as before (the rows a
    transformation joins become empty), or ``None`` (no IPython, or no row-preserving result)."""
    import difflib

    manager = _ipython_token_transformer()
    if manager is None:
        return None
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            out = [line.rstrip("\n") for line in manager.do_token_transforms([line + "\n" for line in lines])]
    except Exception:  # noqa: BLE001 - IPython gave up on this cell
        return None
    result: list[str] = []
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(a=lines, b=out, autojunk=False).get_opcodes():
        if tag == "equal":
            result.extend(lines[i1:i2])
        elif j2 - j1 <= i2 - i1:
            result.extend(out[j1:j2])
            result.extend([""] * ((i2 - i1) - (j2 - j1)))
        else:
            return None
    return result if len(result) == len(lines) else None


def cell_program(lines: list[str]) -> list[str]:
    """The Python lines of one code cell: IPython syntax rewritten (IPython's transformer
    when installed) or blanked, as many lines as before."""
    if lines and lines[0].lstrip().startswith("%%"):
        name = lines[0].lstrip()[2:].split(maxsplit=1)
        if not name or name[0] not in PYTHON_CELL_MAGICS:
            return [""] * len(lines)
        return ["", *cell_program(lines[1:])]
    if not any(_is_magic(line) for line in lines):
        return list(lines)
    return _ipython_lines(lines) or _blank_magics(lines)


# --- reading ---------------------------------------------------------------------------


def _language(meta) -> str | None:
    if not isinstance(meta, Mapping):
        return None
    info = meta.get("language_info")
    kernel = meta.get("kernelspec")
    language = (info.get("name") if isinstance(info, Mapping) else None) or (
        kernel.get("language") if isinstance(kernel, Mapping) else None)
    return str(language) if language else None


def _syntax_error(text: str) -> tuple[int, int, str] | None:
    """``(row, column, message)`` of the first syntax error of ``text`` (CPython's parser,
    top-level ``await`` allowed as in IPython), or ``None``.

    A NUL character is reported where it is, in the words a Python file gets
    (:func:`loopcheck.analysis._null_byte`): CPython refuses the text before parsing it, with
    no position (a ``ValueError`` before 3.12)."""
    nul = text.find("\0")
    if nul >= 0:
        line_start = text.rfind("\n", 0, nul) + 1
        return text.count("\n", 0, nul) + 1, nul - line_start + 1, "source code cannot contain null bytes"
    flags = ast.PyCF_ONLY_AST | getattr(ast, "PyCF_ALLOW_TOP_LEVEL_AWAIT", 0)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            compile(text, "<cell>", "exec", flags, dont_inherit=True)
    except SyntaxError as err:
        return err.lineno or 1, err.offset or 1, err.msg
    except (ValueError, RecursionError, MemoryError) as err:  # null bytes, absurd nesting
        return 1, 1, str(err) or type(err).__name__
    return None


def build_notebook(cells: Iterable[tuple[int, str]]) -> Notebook:
    """The program of code cells given as ``(number, source text)``, in order.

    Cells that do not parse on their own are left out of the program (their rows kept empty)
    and listed in :attr:`Notebook.syntax_errors`.
    """
    program: list[str] = []
    shown: list[str] = []
    rows: list[tuple[int, int]] = []
    code_cells: list[CellText] = []
    for number, text in cells:
        cell = CellText.of(number, text)
        code_cells.append(cell)
        program.extend(cell_program(cell.lines))
        shown.extend(cell.lines)
        rows.extend((number, row) for row in range(1, len(cell.lines) + 1))
    nb = Notebook("".join(line + "\n" for line in program), shown, rows, code_cells=code_cells)
    if _syntax_error(nb.source) is None:
        return nb
    start = 0
    for cell in code_cells:
        n = len(cell.lines)
        error = _syntax_error("".join(line + "\n" for line in program[start:start + n]))
        if error is not None and _runs_in_ipython(program[start:start + n]):
            program[start:start + n] = [""] * n  # not Python, but IPython runs it: left out, no LC001
        elif error is not None:
            row, column, message = error
            nb.syntax_errors.append((cell.number, min(max(row, 1), max(n, 1)), column, message))
            program[start:start + n] = [""] * n
        start += n
    nb.source = "".join(line + "\n" for line in program)
    return nb


def _runs_in_ipython(lines: list[str]) -> bool:
    """Whether IPython runs a code cell that is not Python after the transformations this
    module does not apply (they would move columns): its ``leading_indent`` cleanup, which
    removes the first line's indentation from every line (`` x = 1`` runs), and automagic on a
    cell of one line whose first word is a line magic (:data:`AUTOMAGICS`)."""
    words = [line for line in lines if line.strip()]
    if len(words) == 1 and words[0].split()[0] in AUTOMAGICS and len(words[0].split()) > 1 \
            and not re.match(r"\s*\w+\s*[-+*/%&|^<>!=]?=[^=]", words[0]):
        return True
    indent = lines[0][: len(lines[0]) - len(lines[0].lstrip())] if lines and lines[0].strip() else ""
    if not indent:
        return False
    dedented = [line[len(indent):] if line.startswith(indent) else line for line in lines]
    return _syntax_error("".join(line + "\n" for line in dedented)) is None


def _reads(text: str):
    import nbformat

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return nbformat.reads(text, as_version=4)
    except Exception as err:  # nbformat raises JSON, validation and version errors alike
        raise NotebookError(f"not a readable notebook: {type(err).__name__}: {err}") from None


def read_notebook(text: str) -> Notebook:
    """Read a notebook's JSON text into the program of its code cells.

    A notebook whose kernel is not Python gives an empty program; a code cell whose source is
    not text is left out, with a warning.

    Raises:
        NotebookError: the text is not a notebook nbformat reads.
    """
    nb = _reads(text)
    language = _language(nb.get("metadata"))
    if language is not None and language.lower() != "python":
        return Notebook("", [], [])
    cells: list[tuple[int, str]] = []
    skipped: list[str] = []
    raw_cells = nb.get("cells")
    if not isinstance(raw_cells, list):
        raise NotebookError("not a readable notebook: its cells are not a list")
    for number, cell in enumerate(raw_cells, 1):
        if not isinstance(cell, Mapping) or cell.get("cell_type") != "code":
            continue
        source = cell.get("source", "")
        if isinstance(source, list) and all(isinstance(s, str) for s in source):
            source = "".join(source)
        if not isinstance(source, str):
            skipped.append(f"cell {number} not checked: its source is {json.dumps(source)[:40]}, not text")
            continue
        cells.append((number, source))
    notebook = build_notebook(cells)
    notebook.warnings.extend(skipped)
    return notebook


def check_notebook(notebook: Notebook, filename: str, codes: Collection[str] | None = None, project=None,
                   parse=None, tables: dict | None = None, interrupt=None):
    """Check a notebook's program: :func:`loopcheck.analysis.check_parsed` over the cells that
    parse, and an LC001 finding in each cell that does not (when LC001 is selected).

    Args:
        project: the project its imports are read from (default: the file's own).
        parse: what parses the program (``check_parsed``'s ``parse``; default: a full parse).
        tables: per-node tables carried from the last check (``check_parsed``'s ``tables``).
        interrupt: ``check_parsed``'s ``interrupt``.

    Returns:
        ``(findings, module, positions)`` as ``check_parsed`` returns them.
    """
    from loopcheck.analysis import check_parsed
    from loopcheck.findings import Finding

    found, module, positions = check_parsed(notebook.source, filename, codes, project, parse=parse, tables=tables,
                                            interrupt=interrupt)
    if notebook.syntax_errors and (codes is None or "LC001" in codes):
        for cell, row, column, message in notebook.syntax_errors:
            at = notebook.row_of(cell, row)
            # the cell was parsed alone: the ``line N`` its message names is a row of that cell
            message = notebook.cell_message(cell, message)
            found.append(Finding("LC001", f"SyntaxError: {message}", filename, at, column, at, column, [], at))
        found.sort(key=lambda f: f.sort_key)
    return found, module, positions


# --- writing ---------------------------------------------------------------------------


_WS = re.compile(r"[ \t\n\r]*")


class _Json:
    """Where the values of a JSON text lie: just enough of a parser to find the span of each
    cell's source without re-serialising anything else."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.decoder = json.JSONDecoder()

    def ws(self, i: int) -> int:
        return _WS.match(self.text, i).end()

    def skip(self, i: int) -> int:
        """The end of the value starting at ``i``."""
        return self.decoder.raw_decode(self.text, i)[1]

    def members(self, i: int) -> Iterable[tuple[str, int, int]]:
        """``(key, value start, value end)`` of the object starting at ``i``."""
        from json.decoder import scanstring

        if self.text[i] != "{":
            raise ValueError("not an object")
        i = self.ws(i + 1)
        if self.text[i] == "}":
            return
        while True:
            if self.text[i] != '"':
                raise ValueError("bad key")
            key, i = scanstring(self.text, i + 1)
            i = self.ws(i)
            if self.text[i] != ":":
                raise ValueError("no colon")
            start = self.ws(i + 1)
            end = self.skip(start)
            yield key, start, end
            i = self.ws(end)
            if self.text[i] == "}":
                return
            if self.text[i] != ",":
                raise ValueError("no comma")
            i = self.ws(i + 1)

    def items(self, i: int) -> list[tuple[int, int]]:
        """``(start, end)`` of each value of the array starting at ``i``."""
        if self.text[i] != "[":
            raise ValueError("not an array")
        out = []
        i = self.ws(i + 1)
        if self.text[i] == "]":
            return out
        while True:
            end = self.skip(i)
            out.append((i, end))
            i = self.ws(end)
            if self.text[i] == "]":
                return out
            if self.text[i] != ",":
                raise ValueError("no comma")
            i = self.ws(i + 1)

    def cell_sources(self) -> list[tuple[int, int] | None]:
        """For every cell, in order (nbformat 4; 3: the worksheets' cells), the span of its
        source (``source``; ``input`` for nbformat 3 code cells), or ``None``."""
        top = {key: (start, end) for key, start, end in self.members(self.ws(0))}
        if "cells" in top:
            cells = self.items(top["cells"][0])
        elif "worksheets" in top:
            cells = []
            for start, _ in self.items(top["worksheets"][0]):
                sheet = {key: s for key, s, _ in self.members(start)}
                if "cells" in sheet:
                    cells.extend(self.items(sheet["cells"]))
        else:
            raise ValueError("no cells")
        spans: list[tuple[int, int] | None] = []
        for start, _ in cells:
            keys = {key: (s, e) for key, s, e in self.members(start)}
            spans.append(keys.get("source") or keys.get("input"))
        return spans


def _keepends(text: str) -> list[str]:
    """``text``'s lines with their endings (only ``\r\n``, ``\r`` and ``\n`` end a line)."""
    return re.findall(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+$", text)


def _render_source(text: str, start: int, end: int, lines: list[str]) -> str:
    """The JSON of a cell source ``lines`` (with their endings) in the shape of the value at
    ``text[start:end]``: a string, or a list laid out as that list is."""
    ensure_ascii = text.isascii() and "\\u" in text

    def dump(s: str) -> str:
        return json.dumps(s, ensure_ascii=ensure_ascii)

    if text[start] != "[":
        return dump("".join(lines))
    old = text[start:end]
    inner = old[1:-1]
    if inner.strip():
        first = re.match(r"\s*", inner).group(0)
        last = re.search(r"\s*$", inner).group(0)
        between = re.search(r'"\s*,(\s*)"', old)
        sep = between.group(1) if between else first
    else:  # an empty list: indent as the line holding it, one level deeper
        line_start = text.rfind("\n", 0, start) + 1
        indent = re.match(r"[ \t]*", text[line_start:]).group(0)
        newline = "\r\n" if "\r\n" in text else "\n"
        unit = re.search(r"\n([ \t]+)\S", text)
        step = unit.group(1) if unit and len(unit.group(1)) <= 4 else " "
        first, last, sep = newline + indent + step, newline + indent, newline + indent + step
    if not lines:
        return "[]"
    return "[" + first + ("," + sep).join(dump(line) for line in lines) + last + "]"


def write_program(text: str, notebook: Notebook, program: str) -> str:
    """The notebook JSON ``text`` with its code cells changed to match a fixed ``program``.

    ``program`` is :attr:`Notebook.source` after fixes; the cells it changes are found by
    :meth:`Notebook.changed_cells`. Only those cells' ``source`` values are replaced, each
    in its own shape (a list of lines, or one string) and with its own line endings; the
    rest of ``text`` is kept byte for byte.

    Raises:
        NotebookError: ``text`` is not a notebook whose cells can be found.
    """
    changes = notebook.changed_cells(program)
    if not changes:
        return text
    try:
        spans = _Json(text).cell_sources()
    except (ValueError, IndexError) as err:
        raise NotebookError(f"cannot rewrite the notebook's cells: {err}") from None
    by_number = {c.number: c for c in notebook.code_cells}
    out, pos = [], 0
    for number, (_old, new) in sorted(changes.items()):
        span = spans[number - 1] if number - 1 < len(spans) else None
        if span is None:
            raise NotebookError(f"cannot rewrite cell {number}: no source found")
        cell = by_number[number]
        lines = _keepends(cell.text(new))
        out.append(text[pos:span[0]])
        out.append(_render_source(text, span[0], span[1], lines))
        pos = span[1]
    out.append(text[pos:])
    return "".join(out)
