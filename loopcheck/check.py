"""The check of one file, below every front end: what the command line, its worker processes,
the language server and ``loopcheck trace`` call.

- :func:`lint_text`: a file's text (a notebook's JSON) → its findings, after ``# noqa``, with
  their fixes, and the :class:`SourceFile` the reporters show them from;
- :func:`describe_error`: an exception as the one line ``loopcheck: ...`` prints;
- :func:`tune_gc` and :func:`settle_gc`: the garbage collector of a process that checks files.

The analysis itself (parse, IR, roles, events, rules) is :mod:`loopcheck.analysis`; this module
adds what a file needs around it (notebooks, ``# noqa``, fixes). It imports them when called,
so that a front end's start-up does not pay for LibCST.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Collection

if TYPE_CHECKING:
    from loopcheck.engine.project import Project
    from loopcheck.findings import Finding
    from loopcheck.workspace.notebook import Notebook

_LINE_BREAK = re.compile(r"\r\n|\r|\n")


@dataclass
class SourceFile:
    """A checked file as the reporters need it.

    Attributes:
        filename: the name findings carry.
        text: the checked program (a notebook's joined code cells).
        notebook: the cell map of a notebook, else ``None``.
    """

    filename: str
    text: str = ""
    notebook: Notebook | None = None
    _lines: list[str] | None = field(default=None, repr=False)

    @property
    def lines(self) -> list[str]:
        """The text to show for each row (1-based row → index ``row - 1``)."""
        if self._lines is None:
            if self.notebook is not None:
                self._lines = self.notebook.lines
            else:
                self._lines = _LINE_BREAK.split(self.text)
        return self._lines


def lint_text(
    text: str, filename: str, codes: Collection[str] | None = None, src: tuple = (),
    project: Project | None = None, ignore_noqa: bool = False,
) -> tuple[list[Finding], SourceFile]:
    """Check the text of one file as the command line does.

    A name ending in ``.ipynb`` is read as a notebook (its code cells joined); a file with
    ``# loopcheck: skip-file`` gives nothing; ``# noqa`` comments suppress findings (and the
    ``# noqa: LC...`` codes that suppress nothing are LC002 findings); each finding gets its
    fix (``finding.fix``) where one exists.

    Args:
        text: the file's text (a notebook's JSON).
        filename: the name findings carry.
        codes: the rule codes to run (``None``: all).
        src: extra source roots of the project (the ``src`` setting).
        project: the file's :class:`~loopcheck.engine.project.Project`, when the caller has
            it (default: ``project_for(filename, src)``, which resolves the path and looks for
            the project's root on disk again).
        ignore_noqa: ``--ignore-noqa``: no ``# noqa`` comment (line or file) suppresses
            anything and none is reported unused; ``# loopcheck: skip-file`` still skips.

    Returns:
        The findings (rows of the checked program; notebooks' rows are mapped to cells when
        reported) and the :class:`SourceFile` the reporters need.

    Raises:
        NotebookError: a ``.ipynb`` file that is not a notebook.
    """
    from loopcheck.engine.project import project_for
    from loopcheck.fixes import attach_fixes
    from loopcheck.workspace.noqa import apply_noqa, has_skip_file, is_skipped
    from loopcheck.workspace.notebook import check_notebook, read_notebook

    notebook = read_notebook(text) if filename.endswith(".ipynb") else None
    program = notebook.source if notebook is not None else text
    source = SourceFile(filename, program, notebook)
    if has_skip_file(program) if ignore_noqa else is_skipped(program):
        return [], source
    project = project if project is not None else project_for(filename, src)
    if notebook is not None:
        found, module, positions = check_notebook(notebook, filename, codes, project)
    else:
        from loopcheck.analysis import check_parsed

        found, module, positions = check_parsed(program, filename, codes, project)
    if not ignore_noqa:
        found = apply_noqa(found, program, filename, codes)
    if any(f.fix is None for f in found):
        attach_fixes(program, [f for f in found if f.fix is None], module, positions, select=codes)
    return found, source


def describe_error(err: BaseException, limit: int = 300) -> str:
    """``Type: message`` of an exception, shortened, never raising (a message built from a
    deep syntax tree can itself fail)."""
    try:
        text = str(err)
    except BaseException:  # noqa: BLE001
        text = "(no message)"
    text = " ".join(text.split())
    if len(text) > limit:
        text = text[: limit - 3] + "..."
    return f"{type(err).__name__}: {text}" if text else type(err).__name__


#: The cyclic garbage collector's thresholds in a process that checks files (:func:`tune_gc`).
#: With Python's defaults, ``(700, 10, 10)``, the collector walked every object of the
#: process (a full collection) over and over: the modules a project keeps parsed are millions
#: of objects, and the analysis allocates many small sets and tuples. See :func:`settle_gc`
#: for what is done between checks.
GC_THRESHOLDS = (50_000, 20, 100)
_PYTHON_GC_DEFAULTS = (700, 10, 10)
_gc_tuned = False


def tune_gc() -> None:
    """Set :data:`GC_THRESHOLDS` in this process, unless it changed Python's defaults itself
    (a program that imports loopcheck keeps its own, and :func:`settle_gc` then does nothing).
    Forked workers inherit the setting."""
    import gc

    global _gc_tuned
    if gc.get_threshold() == _PYTHON_GC_DEFAULTS:
        gc.set_threshold(*GC_THRESHOLDS)
    _gc_tuned = gc.get_threshold() == GC_THRESHOLDS


def settle_gc(released: bool = False) -> None:
    """Between two checks (after :func:`tune_gc`): collect the cyclic garbage of the check
    that ended, then freeze what survives (``gc.freeze``: the modules the project keeps, the
    imported code), so that no later collection walks those objects again; ``released``: every
    project was let go (the memory safety net, :data:`loopcheck.cli.runner.MEMORY_BUDGET`), so
    the frozen objects are unfrozen first and the whole process collected (in a process that
    keeps its own thresholds too, which is otherwise left alone).

    Python's defaults made the collector walk the whole process (the projects' parsed modules)
    over and over; higher thresholds without the freeze let a check's cycles, promoted to the
    oldest generation while it ran, wait for a full collection while the process grew.

    A frozen object dropped later is freed by its reference count; only a cycle would wait for
    the safety net. None is known to be left: a check that reports nothing leaves no cycle
    holding its syntax tree (:func:`loopcheck.engine.ir.release`; nested functions that call
    themselves are functions of their modules), a module :meth:`Project.trim` lets go is named
    weakly by what it holds, and a project let go for another is emptied
    (:meth:`Project.close`), so a change of project needs no collection of the whole process."""
    import gc

    if not _gc_tuned:
        if released:
            gc.collect()
        return
    if released:
        gc.unfreeze()
    gc.collect()
    gc.freeze()
