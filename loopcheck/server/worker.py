"""One check of an editor's document, as the language server's worker process runs it
(:func:`analyze`); the server (:mod:`loopcheck.server.lsp`) and the document's processes
(:mod:`loopcheck.server.documents`) call it, and publish or send what it returns."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any, Collection

from loopcheck.findings import Finding
from loopcheck.workspace.notebook import Notebook

log = logging.getLogger(__name__)


@dataclass
class Analysis:
    """One check of one version of a document (what :func:`analyze` returns).

    Attributes:
        program: the checked text (a notebook's joined code cells).
        findings: noqa-filtered findings, LC002 included; ``.fix`` set when fixes were asked for.
        notebook: the cell map of a notebook, else ``None``.
        fix_all: the text after every safe fix (``None`` when fixes were not asked for).
        version: the document version it was computed on (set by the server).
        reparsed: the check reused the document's last tree (:mod:`loopcheck.server.reparse`).
    """

    program: str
    findings: list[Finding]
    notebook: Notebook | None = None
    fix_all: str | None = None
    version: Any = None
    reparsed: bool = False


def analyze(kind: str, payload, filename: str, codes: Collection[str] | None, with_fixes: bool,
            src: tuple = (), reparser=None, interrupt=None) -> Analysis:
    """Check a document as the command line checks a file.

    Args:
        kind: ``"python"`` (``payload``: the text) or ``"notebook"`` (``payload``:
            ``[(cell number, source)]`` of its code cells, numbers counting every cell).
        filename: the name findings carry.
        codes: the rule codes to run (``None``: all).
        with_fixes: also compute each finding's fix and the fix-all text (slower).
        src: extra source roots of the project (the ``src`` setting), where imports are read.
        reparser: the document's :class:`~loopcheck.server.reparse.Reparser` (the last tree of its
            text, or of a notebook's program, reused for this version, with the analysis'
            tables of its nodes), or ``None`` to parse the whole text.
        interrupt: called between the steps of the analysis; what it raises ends the check
            (``check_parsed``'s ``interrupt``).
    """
    from loopcheck.analysis import check_parsed
    from loopcheck.check import tune_gc
    from loopcheck.engine.project import project_for
    from loopcheck.workspace.noqa import apply_noqa, is_skipped
    from loopcheck.workspace.notebook import build_notebook, check_notebook

    tune_gc()
    reparsed_before = reparser.reparsed if reparser is not None else 0
    notebook = build_notebook(payload) if kind == "notebook" else None
    program = notebook.source if notebook is not None else payload
    if is_skipped(program):
        return Analysis(program, [], notebook, program if with_fixes else None)
    parse = reparser.parse if reparser is not None else None
    tables = reparser.tables if reparser is not None else None
    if notebook is not None:
        found, module, positions = check_notebook(notebook, filename, codes, project_for(filename, src), parse,
                                                  tables, interrupt)
    else:
        found, module, positions = check_parsed(program, filename, codes, project_for(filename, src), parse=parse,
                                                tables=tables, interrupt=interrupt)
    found = apply_noqa(found, program, filename, codes)
    fix_all = None
    if with_fixes:
        from loopcheck.fixes import apply_fixes, attach_fixes
        from loopcheck.workspace.noqa import remove_unused_noqa

        attach_fixes(program, [f for f in found if f.fix is None], module, positions)
        fix_all = program
        if any(f.fix is not None and f.fix.is_safe for f in found):
            try:
                fix_all, _ = apply_fixes(program, found, unsafe=False, filename=filename, select=codes)
                fix_all, _ = remove_unused_noqa(fix_all, filename, codes)
            except Exception:  # noqa: BLE001 - a fixer bug must not lose the diagnostics
                log.exception("loopcheck fix-all failed on %s", filename)
                fix_all = program
    reused = reparser is not None and reparser.reparsed > reparsed_before
    return Analysis(program, found, notebook, fix_all, reparsed=reused)
