"""The loopcheck language server (LSP over stdio): ``loopcheck server`` or
``python -m loopcheck.server``. Needs the ``server`` extra (pygls, lsprotocol).

* Diagnostics are published on ``didOpen``, ``didChange`` and ``didSave`` and cleared on
  ``didClose``: one per finding, severity from the rule (error → Error, warning → Warning),
  ``code`` and ``codeDescription.href`` (the rule's page), ``source: "loopcheck"``, and the
  finding's related lines as ``relatedInformation``. Findings suppressed by ``# noqa`` (or
  ``# loopcheck: skip-file``) are not shown, and the rules are those the file's configuration
  enables (``select``/``ignore``/``per-file-ignores``), as on the command line.
* Code actions: each finding's fix as a ``quickfix`` (title ``loopcheck (LC401): Use
  `loss.item()```, unsafe fixes end in ``(unsafe)``), and ``Fix all safe loopcheck issues``
  of kind ``source.fixAll.loopcheck`` (what ``loopcheck --fix`` would do to the buffer).

API: :func:`create_server` builds the server (handlers registered); :func:`serve` runs it
on stdin/stdout.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Sequence

from lsprotocol import types

try:  # pygls >= 2
    from pygls.lsp.server import LanguageServer
except ImportError:  # pygls 1.x
    from pygls.server import LanguageServer

from loopcheck import __version__
from loopcheck.analysis import check_source
from loopcheck.config import ConfigError, Options, Resolver
from loopcheck.findings import Finding
from loopcheck.fixes import apply_fixes, attach_fixes
from loopcheck.fixes.model import Edit, edits_between
from loopcheck.noqa import filter_findings, is_skipped
from loopcheck.rules import INFOS

log = logging.getLogger(__name__)

SOURCE = "loopcheck"
FIX_ALL_KIND = "source.fixAll.loopcheck"
FIX_ALL_TITLE = "Fix all safe loopcheck issues"
SEVERITY = {"error": types.DiagnosticSeverity.Error, "warning": types.DiagnosticSeverity.Warning}


class LoopcheckServer(LanguageServer):
    """A pygls server that keeps the last findings of each open document."""

    def __init__(self) -> None:
        super().__init__("loopcheck", __version__)
        # uri -> (source, findings with .fix set); the fix-all text per uri, computed on demand
        self.results: dict[str, tuple[str, list[Finding]]] = {}
        self.fix_all: dict[str, tuple[str, str]] = {}

    # ------------------------------------------------------------------ analysis

    def findings(self, uri: str) -> tuple[object, list[Finding]]:
        """The document and its findings (noqa-suppressed ones dropped, fixes attached)."""
        doc = self.workspace.get_text_document(uri)
        source = doc.source
        cached = self.results.get(uri)
        if cached is not None and cached[0] == source:
            return doc, cached[1]
        try:
            if uri.endswith(".ipynb") or is_skipped(source):
                found = []  # notebooks arrive as cells (notebook sync), not as the .ipynb JSON
            else:
                found = check_source(source, doc.path or uri, codes_for(doc.path))
                found = filter_findings(found, source)
                attach_fixes(source, found)
        except Exception:  # noqa: BLE001 - an analyzer bug must not kill the editor session
            log.exception("loopcheck failed on %s", uri)
            found = []
        self.results[uri] = (source, found)
        return doc, found

    def publish(self, uri: str, diagnostics: list[types.Diagnostic], version: int | None = None) -> None:
        if hasattr(self, "text_document_publish_diagnostics"):  # pygls >= 2
            self.text_document_publish_diagnostics(
                types.PublishDiagnosticsParams(uri=uri, diagnostics=diagnostics, version=version)
            )
        else:  # pygls 1.x
            self.publish_diagnostics(uri, diagnostics, version)

    def lint(self, uri: str) -> None:
        doc, found = self.findings(uri)
        self.publish(uri, [diagnostic(doc, uri, f) for f in found], getattr(doc, "version", None))


def codes_for(path: str | None) -> frozenset[str] | None:
    """The rule codes the configuration (``[tool.loopcheck]``, ``.loopcheck.toml``) enables
    for ``path``; ``None`` (all rules) for an unsaved buffer or an invalid configuration."""
    if not path:
        return None
    try:
        file = Path(path)
        return Resolver(Options()).for_file(file).codes_for(file)
    except (ConfigError, OSError, ValueError):
        log.warning("loopcheck: configuration for %s ignored", path, exc_info=True)
        return None


# ------------------------------------------------------------------ positions


def _position(doc, row: int, column: int) -> types.Position:
    """1-based row/column (code points) → the client's 0-based position."""
    pos = types.Position(line=row - 1, character=column - 1)
    lines = doc.lines
    codec = getattr(doc, "position_codec", None)
    if codec is not None:
        return codec.position_to_client_units(lines, pos)
    if pos.line >= len(lines):
        return types.Position(line=len(lines), character=0)
    prefix = lines[pos.line][: pos.character]
    return types.Position(line=pos.line, character=len(prefix.encode("utf-16-le")) // 2)


def _range(doc, row: int, column: int, end_row: int, end_column: int) -> types.Range:
    return types.Range(start=_position(doc, row, column), end=_position(doc, end_row, end_column))


def _line_end(doc, row: int) -> int:
    """1-based column just after the last non-blank character of ``row``."""
    lines = doc.lines
    if row - 1 >= len(lines):
        return 1
    return len(lines[row - 1].rstrip()) + 1


def diagnostic(doc, uri: str, f: Finding) -> types.Diagnostic:
    info = INFOS.get(f.code)
    return types.Diagnostic(
        range=_range(doc, f.row, f.column, f.end_row, f.end_column),
        message=f.message,
        severity=SEVERITY.get(info.severity if info else "error", types.DiagnosticSeverity.Error),
        code=f.code,
        code_description=types.CodeDescription(href=info.url) if info else None,
        source=SOURCE,
        related_information=[
            types.DiagnosticRelatedInformation(
                location=types.Location(
                    uri=uri, range=_range(doc, r.row, r.column, r.row, max(_line_end(doc, r.row), r.column))
                ),
                message=r.message,
            )
            for r in f.related
        ] or None,
        data={"fix": f.fix.applicability} if f.fix is not None else None,
    )


def text_edits(doc, edits: Sequence[Edit]) -> list[types.TextEdit]:
    return [
        types.TextEdit(range=_range(doc, e.row, e.column, e.end_row, e.end_column), new_text=e.content)
        for e in edits
    ]


def _overlaps(a: types.Range, b: types.Range) -> bool:
    def key(p: types.Position):
        return (p.line, p.character)

    return key(a.start) <= key(b.end) and key(b.start) <= key(a.end)


def _wanted(kind: str, only: Sequence[str] | None) -> bool:
    return not only or any(kind == k or kind.startswith(k + ".") for k in only)


# ------------------------------------------------------------------ server


def create_server() -> LoopcheckServer:
    """A loopcheck language server with its handlers registered (not started)."""
    server = LoopcheckServer()

    @server.feature(types.TEXT_DOCUMENT_DID_OPEN)
    def did_open(ls: LoopcheckServer, params: types.DidOpenTextDocumentParams) -> None:
        ls.lint(params.text_document.uri)

    @server.feature(types.TEXT_DOCUMENT_DID_CHANGE)
    def did_change(ls: LoopcheckServer, params: types.DidChangeTextDocumentParams) -> None:
        ls.lint(params.text_document.uri)

    @server.feature(types.TEXT_DOCUMENT_DID_SAVE)
    def did_save(ls: LoopcheckServer, params: types.DidSaveTextDocumentParams) -> None:
        ls.lint(params.text_document.uri)

    @server.feature(types.TEXT_DOCUMENT_DID_CLOSE)
    def did_close(ls: LoopcheckServer, params: types.DidCloseTextDocumentParams) -> None:
        uri = params.text_document.uri
        ls.results.pop(uri, None)
        ls.fix_all.pop(uri, None)
        ls.publish(uri, [])

    @server.feature(
        types.TEXT_DOCUMENT_CODE_ACTION,
        types.CodeActionOptions(
            code_action_kinds=[types.CodeActionKind.QuickFix, FIX_ALL_KIND], resolve_provider=False
        ),
    )
    def code_action(ls: LoopcheckServer, params: types.CodeActionParams) -> list[types.CodeAction] | None:
        uri = params.text_document.uri
        doc, found = ls.findings(uri)
        only = params.context.only
        actions: list[types.CodeAction] = []
        if _wanted(types.CodeActionKind.QuickFix, only):
            for f in found:
                if f.fix is None:
                    continue
                diag = diagnostic(doc, uri, f)
                if not _overlaps(diag.range, params.range):
                    continue
                title = f"loopcheck ({f.code}): {f.fix.message}" + ("" if f.fix.is_safe else " (unsafe)")
                actions.append(
                    types.CodeAction(
                        title=title,
                        kind=types.CodeActionKind.QuickFix,
                        diagnostics=[diag],
                        edit=types.WorkspaceEdit(changes={uri: text_edits(doc, f.fix.edits)}),
                        is_preferred=f.fix.is_safe,
                    )
                )
        if _wanted(FIX_ALL_KIND, only) and any(f.fix is not None and f.fix.is_safe for f in found):
            source = doc.source
            cached = ls.fix_all.get(uri)
            if cached is None or cached[0] != source:
                try:
                    new, _ = apply_fixes(source, found, unsafe=False, filename=doc.path or uri)
                except Exception:  # noqa: BLE001
                    log.exception("loopcheck fix-all failed on %s", uri)
                    new = source
                ls.fix_all[uri] = cached = (source, new)
            if cached[1] != source:
                actions.append(
                    types.CodeAction(
                        title=FIX_ALL_TITLE,
                        kind=FIX_ALL_KIND,
                        edit=types.WorkspaceEdit(changes={uri: text_edits(doc, edits_between(source, cached[1]))}),
                    )
                )
        return actions or None

    return server


def serve() -> None:
    """Run the language server on stdin/stdout until the client says exit."""
    create_server().start_io()


if __name__ == "__main__":
    serve()
