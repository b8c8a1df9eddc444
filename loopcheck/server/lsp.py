"""The loopcheck language server (LSP over stdio): ``loopcheck server`` or
``python -m loopcheck.server``. Needs the ``server`` extra (pygls 2, lsprotocol).

* Diagnostics for Python files (``textDocument/*``) and Jupyter notebooks
  (``notebookDocument/*``: the code cells checked as one program, each diagnostic published
  on its cell): one per finding, severity from the rule (error → Error, warning → Warning),
  ``code`` and ``codeDescription.href`` (the rule's page), ``source: "loopcheck"``, and the
  finding's related lines as ``relatedInformation`` (in their own cell or file). Findings
  suppressed by ``# noqa`` (or ``# loopcheck: skip-file``) are not shown; LC002 shows unused
  ``# noqa`` codes; the rules are those the file's configuration enables, as on the command
  line (rules in preview only with ``preview = true`` or selected by exact code or name; an
  unsaved buffer gets the default selection).
* As you type: ``didChange`` is debounced (:data:`DEBOUNCE_S`), and each check runs outside
  the server's event loop, in a process forked from a warm fork server (a thread where
  ``forkserver`` does not exist). A document's later versions are checked in forks of the
  process that checked the one before, which kept its tree: only the statements an edit
  changed are parsed again (:mod:`loopcheck.server.documents`, :mod:`loopcheck.server.reparse`).
  A newer version of a document kills the check of an older one; results are published
  only for the version they were computed on. A huge document therefore never blocks other
  requests, and at most :data:`JOBS` checks run at once.
* Code actions: each finding's fix as a ``quickfix`` (title ``loopcheck (LC401): Use
  `loss.item()```, unsafe fixes end in ``(unsafe)``), and ``Fix all safe loopcheck issues``
  of kind ``source.fixAll.loopcheck`` (what ``loopcheck --fix`` would do to the buffer);
  computed when asked, for the current version. A document the client never opened gets
  ``[]``.
* An invalid configuration file is shown to the user: ``window/showMessage`` (once per
  distinct error) and a diagnostic on the configuration file, cleared when it is fixed; the
  documents are then checked with the default selection (every rule not in preview).
* A request whose params do not match the protocol gets a JSON-RPC ``InvalidParams``
  (-32602) error reply.

API: :func:`create_server` builds the server (handlers registered); :func:`serve` runs it
on stdin/stdout; :func:`loopcheck.server.worker.analyze` is one check, as the worker process
runs it.
"""

from __future__ import annotations

import asyncio
import logging
import multiprocessing
import os
import re
import sys
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

from lsprotocol import types
from pygls import uris
from pygls.exceptions import JsonRpcException, JsonRpcInvalidParams
from pygls.lsp.server import LanguageServer
from pygls.protocol import LanguageServerProtocol

from loopcheck import __version__
from loopcheck.findings import Finding
from loopcheck.fixes.model import edits_between
from loopcheck.server.documents import MAX_TEXT, Cancelled, Templates
from loopcheck.server.worker import Analysis, analyze
from loopcheck.workspace.notebook import Notebook

log = logging.getLogger(__name__)

SOURCE = "loopcheck"
FIX_ALL_KIND = "source.fixAll.loopcheck"
FIX_ALL_TITLE = "Fix all safe loopcheck issues"
SEVERITY = {"error": types.DiagnosticSeverity.Error, "warning": types.DiagnosticSeverity.Warning}
CONFIG_NAMES = {".loopcheck.toml", "loopcheck.toml", "pyproject.toml"}

#: Seconds a document must stay unchanged before it is checked (``didChange`` only).
DEBOUNCE_S = 0.04
#: Checks that run at the same time (one process each).
JOBS = 2


# ------------------------------------------------------------------ running checks


def _child(conn, fn, args) -> None:
    os.dup2(2, 1)  # nothing a check prints may reach the LSP stream on stdout
    try:
        conn.send(("ok", fn(*args)))
    except BaseException as err:  # noqa: BLE001 - reported to the parent
        conn.send(("error", f"{type(err).__name__}: {err}"))
    finally:
        conn.close()


class ProcessJob:
    """A check in a child process forked from the warm fork server; :meth:`cancel` kills it."""

    def __init__(self, ctx, fn, args) -> None:
        self.conn, send = ctx.Pipe(duplex=False)
        self.proc = ctx.Process(target=_child, args=(send, fn, args), daemon=True)
        self.proc.start()
        send.close()

    def wait(self):
        """Block until the result (in an executor thread); raises :class:`Cancelled` when
        killed and ``RuntimeError`` when the check failed."""
        try:
            status, value = self.conn.recv()
        except (EOFError, OSError):
            raise Cancelled from None
        finally:
            self.conn.close()
            self.proc.join()
        if status != "ok":
            raise RuntimeError(value)
        return value

    def cancel(self) -> None:
        if self.proc.is_alive():
            self.proc.kill()


class ThreadJob:
    """A check in an executor thread (where no fork server exists): a cancelled check runs
    to its end, but its result is dropped."""

    def __init__(self, fn, args) -> None:
        self.fn, self.args = fn, args
        self.cancelled = threading.Event()

    def wait(self):
        if self.cancelled.is_set():
            raise Cancelled
        value = self.fn(*self.args)
        if self.cancelled.is_set():
            raise Cancelled
        return value

    def cancel(self) -> None:
        self.cancelled.set()


class Runner:
    """Starts checks: processes forked from a fork server that has loopcheck imported (so a
    kill costs nothing and a new check starts in milliseconds), else threads.

    The fork server is a ``python -c`` child of this process, in its working directory; it is
    started with ``PYTHONSAFEPATH=1`` (Python 3.11+) so that directory is not on its
    ``sys.path`` and a ``multiprocessing.py`` or ``loopcheck/`` there is never imported. On
    Python 3.10, which lacks that switch, and where ``forkserver`` does not exist, checks run
    in threads.
    """

    def __init__(self, processes: bool | None = None) -> None:
        import sys

        if processes is None:
            processes = ("forkserver" in multiprocessing.get_all_start_methods() and sys.version_info >= (3, 11)
                         and not os.environ.get("LOOPCHECK_SERVER_THREADS"))
        self.ctx = None
        if processes:
            os.environ["PYTHONSAFEPATH"] = "1"  # inherited by the fork server only: nothing else is started
            self.ctx = multiprocessing.get_context("forkserver")
            self.ctx.set_forkserver_preload(["loopcheck.server.lsp", "loopcheck.analysis", "loopcheck.fixes.apply",
                                             "loopcheck.fixes.fixers", "loopcheck.workspace.noqa",
                                             "loopcheck.workspace.notebook", "loopcheck.server.reparse",
                                             "loopcheck.server.warm"])
        self.templates = Templates(self.ctx) if self.ctx is not None else None

    def warm_up(self) -> None:
        """Start the fork server now (it imports loopcheck once), not at the first check."""
        if self.ctx is not None:
            from multiprocessing import forkserver

            forkserver.ensure_running()

    def start(self, fn, *args):
        return ProcessJob(self.ctx, fn, args) if self.ctx is not None else ThreadJob(fn, args)

    def check(self, key: str, version, args: tuple):
        """A job running :func:`analyze` with ``args`` for ``version`` of the document
        ``key`` (a text document or a notebook): in a process of the document's chain
        (:mod:`loopcheck.server.documents`) up to :data:`MAX_TEXT` characters of code, else
        as :meth:`start`."""
        kind, payload = args[0], args[1]
        size = len(payload) if kind == "python" else sum(len(source) for _number, source in payload)
        if self.templates is not None and size <= MAX_TEXT:
            return self.templates.start(key, version, args)
        return self.start(analyze, *args)

    def forget(self, key: str) -> None:
        """The document ``key`` was closed: its template process exits."""
        if self.templates is not None:
            self.templates.drop(key)


# ------------------------------------------------------------------ the protocol


_HANDLED = object()


class Protocol(LanguageServerProtocol):
    """pygls' protocol, replying ``InvalidParams`` to a request whose params do not match
    the LSP types (pygls alone reports it with a message and leaves the request unanswered)."""

    def structure_message(self, data):
        try:
            return super().structure_message(data)
        except JsonRpcException as err:
            if isinstance(data, dict) and "id" in data and "method" in data:
                message = f"invalid params for {data['method']}"
                cause = err.__cause__
                if cause is not None:
                    message += f": {' '.join(str(cause).split())[:300]}"
                self._send_response(data["id"], error=JsonRpcInvalidParams(message).to_response_error())
                return _HANDLED
            raise

    def handle_message(self, message):
        if message is _HANDLED:
            return None
        return super().handle_message(message)


# ------------------------------------------------------------------ the server


@dataclass
class Target:
    """What a check is about: a text document, or a notebook and its code cells."""

    key: str  # the document's uri, or the notebook's
    kind: str  # "python" or "notebook"
    version: Any
    payload: Any
    path: str | None
    cells: dict[int, str] = field(default_factory=dict)  # notebook: cell number -> cell uri


class LoopcheckServer(LanguageServer):
    """A pygls server that checks documents in worker processes and keeps the last results."""

    def __init__(self, runner: Runner | None = None) -> None:
        super().__init__("loopcheck", __version__, protocol_cls=Protocol, notebook_document_sync=NOTEBOOK_SYNC)
        self.runner = runner or Runner()
        self.results: dict[str, Analysis] = {}  # key -> the last published check
        self.fixed: dict[str, Analysis] = {}  # key -> the last check with fixes
        self.jobs: dict[str, Any] = {}  # key -> the running diagnostics check
        self.timers: dict[str, asyncio.Task] = {}
        self.published_cells: dict[str, set[str]] = {}  # notebook key -> cell uris with diagnostics
        self.config_errors: dict[str, str] = {}  # config file -> its error (shown once)
        self.executor = ThreadPoolExecutor(max_workers=JOBS + 2, thread_name_prefix="loopcheck-wait")
        self._slots: asyncio.Semaphore | None = None

    @property
    def slots(self) -> asyncio.Semaphore:
        """At most :data:`JOBS` checks at a time (created in the server's event loop)."""
        if self._slots is None:
            self._slots = asyncio.Semaphore(JOBS)
        return self._slots

    # ------------------------------------------------------------------ documents

    def target(self, uri: str) -> Target | None:
        """The check target ``uri`` belongs to (a cell belongs to its notebook), or ``None``
        when the client has not opened it."""
        notebook = self.workspace.get_notebook_document(cell_uri=uri) or self.workspace.get_notebook_document(
            notebook_uri=uri)
        if notebook is not None:
            return self.notebook_target(notebook)
        doc = self.open_document(uri)
        if doc is None:
            return None
        return Target(uri, "python", doc.version, doc.source, doc.path)

    def open_document(self, uri: str):
        """The open text document ``uri``, or ``None`` (never read from disk)."""
        from urllib.parse import unquote

        docs = self.workspace.text_documents
        return docs.get(unquote(uri)) or docs.get(uri)

    def notebook_target(self, notebook: types.NotebookDocument) -> Target:
        """A notebook as a check target: its Python code cells, numbered as Jupyter shows them."""
        cells: list[tuple[int, str]] = []
        uris_by_number: dict[int, str] = {}
        for number, cell in enumerate(notebook.cells, 1):
            if cell.kind != types.NotebookCellKind.Code:
                continue
            doc = self.open_document(cell.document)
            if doc is None or (doc.language_id or "python") != "python":
                continue
            cells.append((number, doc.source))
            uris_by_number[number] = cell.document
        return Target(notebook.uri, "notebook", notebook.version, cells, uris.to_fs_path(notebook.uri),
                      uris_by_number)

    # ------------------------------------------------------------------ configuration

    def settings_for(self, path: str | None) -> tuple[frozenset[str], tuple]:
        """The rule codes the configuration enables for ``path`` and its ``src`` roots (the
        default selection and ``()`` for an unsaved buffer or an invalid configuration, which
        is then shown to the user)."""
        from loopcheck.workspace.config import ConfigError, Options, Resolver, default_codes

        if not path:
            return frozenset(default_codes()), ()

        file = Path(path)
        try:
            settings = Resolver(Options()).for_file(file)
            codes = settings.codes_for(file)
        except (ConfigError, OSError, ValueError) as err:
            self.show_config_error(_config_file_of(str(err)), str(err))
            return frozenset(default_codes()), ()
        config = settings.config_path
        for bad in [k for k in self.config_errors if k and Path(k).parent in (file.parent, *file.parent.parents)]:
            del self.config_errors[bad]  # that file is valid again (or no longer the closest)
            self.publish(Path(bad).as_uri(), [])
        if config is None:
            self.config_errors.pop("", None)
        return codes, tuple(getattr(settings, "src", ()))

    def show_config_error(self, config: Path | None, message: str) -> None:
        """``window/showMessage`` (once per distinct error) and a diagnostic on the file."""
        key = str(config) if config is not None else ""
        if self.config_errors.get(key) == message:
            return  # shown already
        self.config_errors[key] = message
        self.window_show_message(types.ShowMessageParams(
            type=types.MessageType.Error,
            message=f"loopcheck: invalid configuration, the default rules are used until it is fixed: {message}"))
        if config is None:
            return
        line = 0
        try:
            text = Path(config).read_text(encoding="utf-8", errors="replace").splitlines()
            quoted = re.findall(r"'([^']+)'", message)
            for word in quoted or ["tool.loopcheck"]:
                key = re.compile(rf"^\s*[\"']?{re.escape(word)}[\"']?\s*=")
                hit = next((n for n, t in enumerate(text) if key.match(t)), None)
                if hit is None:
                    hit = next((n for n, t in enumerate(text) if word in t), None)
                if hit is not None:
                    line = hit
                    break
            end = len(text[line]) if line < len(text) else 0
        except OSError:
            end = 0
        self.publish(Path(config).as_uri(), [types.Diagnostic(
            range=types.Range(start=types.Position(line=line, character=0), end=types.Position(line=line, character=end)),
            message=message, severity=types.DiagnosticSeverity.Error, source=SOURCE)])

    # ------------------------------------------------------------------ checking

    def schedule(self, uri: str, delay: float = DEBOUNCE_S) -> None:
        """Check ``uri``'s target after ``delay`` seconds without a newer change."""
        target = self.target(uri)
        if target is None:
            return
        timer = self.timers.pop(target.key, None)
        if timer is not None:
            timer.cancel()
        self.timers[target.key] = asyncio.get_running_loop().create_task(self._debounced(target.key, delay))

    async def _debounced(self, key: str, delay: float) -> None:
        if delay:
            await asyncio.sleep(delay)
        self.timers.pop(key, None)
        await self.diagnose(key)

    async def run(self, target: Target, with_fixes: bool, register: bool) -> Analysis:
        """One check of ``target`` in a worker (at most :data:`JOBS` at a time).

        Raises:
            Cancelled: a newer version cancelled it.
        """
        codes, src = self.settings_for(target.path)
        filename = target.path or target.key
        async with self.slots:
            job = self.runner.check(target.key, target.version,
                                    (target.kind, target.payload, filename, codes, with_fixes, src))
            if register:
                self.jobs[target.key] = job
            try:
                result = await asyncio.get_running_loop().run_in_executor(self.executor, job.wait)
            finally:
                if register and self.jobs.get(target.key) is job:
                    del self.jobs[target.key]
        result.version = target.version
        return result

    async def diagnose(self, key: str) -> None:
        """Check the current version of ``key`` and publish, unless a newer version came."""
        stale = self.jobs.pop(key, None)
        if stale is not None:
            stale.cancel()
        target = self.target(key)
        if target is None:
            return
        try:
            result = await self.run(target, with_fixes=False, register=True)
        except Cancelled:
            return
        except Exception:  # noqa: BLE001 - an analyzer bug must not kill the editor session
            log.exception("loopcheck failed on %s", key)
            return
        current = self.target(key)
        if current is None or current.version != target.version:
            return  # a newer version is on its way
        self.results[key] = result
        self.publish_target(current, result)

    async def with_fixes(self, uri: str) -> tuple[Target, Analysis] | None:
        """The current version's check with fixes (computed once per version)."""
        target = self.target(uri)
        if target is None:
            return None
        cached = self.fixed.get(target.key)
        if cached is None or cached.version != target.version:
            try:
                cached = await self.run(target, with_fixes=True, register=False)
            except Exception:  # noqa: BLE001 - Cancelled, or an analyzer bug: no actions
                log.exception("loopcheck fixes failed on %s", uri)
                return None
            current = self.target(uri)
            if current is None or current.version != target.version:
                return None
            self.fixed[target.key] = cached
        return target, cached

    def forget(self, key: str) -> None:
        """Drop what is known about ``key`` (closed): results, its running check, its timer."""
        for table in (self.results, self.fixed):
            table.pop(key, None)
        job = self.jobs.pop(key, None)
        if job is not None:
            job.cancel()
        timer = self.timers.pop(key, None)
        if timer is not None:
            timer.cancel()
        self.runner.forget(key)

    # ------------------------------------------------------------------ publishing

    def publish(self, uri: str, diagnostics: list[types.Diagnostic], version: int | None = None) -> None:
        """``textDocument/publishDiagnostics`` for one document (a file, a cell, a config file)."""
        self.text_document_publish_diagnostics(
            types.PublishDiagnosticsParams(uri=uri, diagnostics=diagnostics, version=version))

    def publish_target(self, target: Target, result: Analysis) -> None:
        """Publish a check's diagnostics: on the document, or on each code cell of a notebook
        (cells that had diagnostics and have none now are cleared)."""
        if target.kind == "python":
            doc = self.open_document(target.key)
            self.publish(target.key, [diagnostic(Place(doc, target.key), f, self.place_of(target, result))
                                      for f in result.findings], target.version)
            return
        by_cell: dict[str, list[types.Diagnostic]] = {uri: [] for uri in target.cells.values()}
        locate = self.place_of(target, result)
        for f in result.findings:
            place = locate(f.row)
            if place is not None:
                by_cell.setdefault(place.uri, []).append(diagnostic(place, f, locate, result.notebook))
        old = self.published_cells.get(target.key, set())
        for uri in old - set(by_cell):
            self.publish(uri, [])
        for uri, diags in by_cell.items():
            self.publish(uri, diags)
        self.published_cells[target.key] = set(by_cell)

    def place_of(self, target: Target, result: Analysis):
        """``row -> Place``: the document and row (within the cell) of a program row."""
        if target.kind == "python":
            doc = self.open_document(target.key)
            return lambda row: Place(doc, target.key, 0)
        nb = result.notebook

        def locate(row: int) -> Place | None:
            cell, r = nb.locate(row)
            uri = target.cells.get(cell)
            doc = self.open_document(uri) if uri else None
            return Place(doc, uri, row - r) if doc is not None else None

        return locate


@dataclass
class Place:
    """A document and how many rows of the program come before its first row."""

    doc: Any
    uri: str
    offset: int = 0


def _config_file_of(message: str) -> Path | None:
    """The configuration file a ``ConfigError`` message starts with (``/repo/pyproject.toml: ...``)."""
    m = re.match(r"(.*?(?:\.loopcheck\.toml|loopcheck\.toml|pyproject\.toml)):", message)
    return Path(m.group(1)) if m and Path(m.group(1)).is_file() else None


# ------------------------------------------------------------------ positions


def _position(doc, row: int, column: int) -> types.Position:
    """1-based row/column (code points) → the client's 0-based position."""
    pos = types.Position(line=row - 1, character=column - 1)
    lines = doc.lines
    codec = getattr(doc, "position_codec", None)
    if pos.line >= len(lines):
        return types.Position(line=len(lines), character=0)
    if codec is not None:
        return codec.position_to_client_units(lines, pos)
    prefix = lines[pos.line][: pos.character]
    return types.Position(line=pos.line, character=len(prefix.encode("utf-16-le")) // 2)


def _range(doc, row: int, column: int, end_row: int, end_column: int) -> types.Range:
    return types.Range(start=_position(doc, row, column), end=_position(doc, end_row, end_column))


def _line_end(doc, row: int) -> int:
    """1-based column just after the last non-blank character of ``row``."""
    lines = doc.lines
    if row - 1 >= len(lines) or row < 1:
        return 1
    return len(lines[row - 1].rstrip()) + 1


def diagnostic(place: Place, f: Finding, locate, notebook: Notebook | None = None) -> types.Diagnostic:
    """The LSP diagnostic of ``f`` in ``place`` (rows shifted by ``place.offset``); related
    lines in their own cell (``locate(row)``) or file; in a ``notebook``, ``line N`` in the
    messages becomes ``line R of cell C``."""
    relabel = notebook.relabel if notebook is not None else (lambda text: text)
    from loopcheck.catalog import INFOS

    info = INFOS.get(f.code)
    doc, off = place.doc, place.offset
    related = []
    for r in f.related:
        if r.filename is not None and r.filename != f.filename:
            try:
                from pygls.workspace import TextDocument

                other_uri = Path(r.filename).resolve().as_uri()
                other = TextDocument(other_uri, Path(r.filename).read_text(encoding="utf-8", errors="replace"))
            except OSError:
                continue
            where = Place(other, other_uri, 0)
        else:
            where = locate(r.row)
            if where is None:
                continue
        row = r.row - where.offset
        related.append(types.DiagnosticRelatedInformation(
            location=types.Location(uri=where.uri, range=_range(where.doc, row, r.column, row,
                                                                max(_line_end(where.doc, row), r.column))),
            message=relabel(r.message)))
    return types.Diagnostic(
        range=_range(doc, f.row - off, f.column, f.end_row - off, f.end_column),
        message=relabel(f.message),
        severity=SEVERITY.get(info.severity if info else "error", types.DiagnosticSeverity.Error),
        code=f.code,
        code_description=types.CodeDescription(href=info.url) if info else None,
        source=SOURCE,
        related_information=related or None,
    )


def text_edits(doc, old: str, new: str) -> list[types.TextEdit]:
    """The TextEdits that turn ``old`` (the text of ``doc``) into ``new``."""
    return [
        types.TextEdit(range=_range(doc, e.row, e.column, e.end_row, e.end_column), new_text=e.content)
        for e in edits_between(old, new)
    ]


def workspace_edit(ls: LoopcheckServer, target: Target, result: Analysis, new_program: str) -> types.WorkspaceEdit | None:
    """The edit that turns the target's text into ``new_program`` (cell by cell in notebooks)."""
    if target.kind == "python":
        doc = ls.open_document(target.key)
        edits = text_edits(doc, result.program, new_program)
        return types.WorkspaceEdit(changes={target.key: edits}) if edits else None
    changes = result.notebook.changed_cells(new_program) or {}
    by_number = {c.number: c for c in result.notebook.code_cells}
    out: dict[str, list[types.TextEdit]] = {}
    for number, (_old, new) in changes.items():
        uri = target.cells.get(number)
        doc = ls.open_document(uri) if uri else None
        if doc is None:
            return None
        edits = text_edits(doc, doc.source, by_number[number].text(new))
        if edits:
            out[uri] = edits
    return types.WorkspaceEdit(changes=out) if out else None


def _overlaps(a: types.Range, b: types.Range) -> bool:
    def key(p: types.Position):
        return (p.line, p.character)

    return key(a.start) <= key(b.end) and key(b.start) <= key(a.end)


def _wanted(kind: str, only: Sequence[str] | None) -> bool:
    return not only or any(kind == k or kind.startswith(k + ".") for k in only)


# ------------------------------------------------------------------ handlers

NOTEBOOK_SYNC = types.NotebookDocumentSyncOptions(
    notebook_selector=[types.NotebookDocumentFilterWithNotebook(
        notebook="jupyter-notebook", cells=[types.NotebookCellLanguage(language="python")])],
    save=True,
)


def create_server(runner: Runner | None = None) -> LoopcheckServer:
    """A loopcheck language server with its handlers registered (not started)."""
    server = LoopcheckServer(runner)

    @server.feature(types.INITIALIZED)
    def initialized(ls: LoopcheckServer, params: types.InitializedParams) -> None:
        threading.Thread(target=ls.runner.warm_up, daemon=True).start()

    @server.feature(types.TEXT_DOCUMENT_DID_OPEN)
    async def did_open(ls: LoopcheckServer, params: types.DidOpenTextDocumentParams) -> None:
        if ls.workspace.get_notebook_document(cell_uri=params.text_document.uri) is None:
            ls.schedule(params.text_document.uri, 0)

    @server.feature(types.TEXT_DOCUMENT_DID_CHANGE)
    async def did_change(ls: LoopcheckServer, params: types.DidChangeTextDocumentParams) -> None:
        ls.schedule(params.text_document.uri)

    @server.feature(types.TEXT_DOCUMENT_DID_SAVE)
    async def did_save(ls: LoopcheckServer, params: types.DidSaveTextDocumentParams) -> None:
        uri = params.text_document.uri
        if Path(uris.to_fs_path(uri) or "").name in CONFIG_NAMES:  # a configuration changed: check everything again
            for key in list(ls.results):
                ls.schedule(key, 0)
        else:
            ls.schedule(uri, 0)

    @server.feature(types.TEXT_DOCUMENT_DID_CLOSE)
    def did_close(ls: LoopcheckServer, params: types.DidCloseTextDocumentParams) -> None:
        uri = params.text_document.uri
        ls.forget(uri)
        ls.publish(uri, [])

    @server.feature(types.NOTEBOOK_DOCUMENT_DID_OPEN)
    async def notebook_open(ls: LoopcheckServer, params: types.DidOpenNotebookDocumentParams) -> None:
        ls.schedule(params.notebook_document.uri, 0)

    @server.feature(types.NOTEBOOK_DOCUMENT_DID_CHANGE)
    async def notebook_change(ls: LoopcheckServer, params: types.DidChangeNotebookDocumentParams) -> None:
        ls.schedule(params.notebook_document.uri)

    @server.feature(types.NOTEBOOK_DOCUMENT_DID_SAVE)
    async def notebook_save(ls: LoopcheckServer, params: types.DidSaveNotebookDocumentParams) -> None:
        ls.schedule(params.notebook_document.uri, 0)

    @server.feature(types.NOTEBOOK_DOCUMENT_DID_CLOSE)
    def notebook_close(ls: LoopcheckServer, params: types.DidCloseNotebookDocumentParams) -> None:
        key = params.notebook_document.uri
        ls.forget(key)
        for uri in ls.published_cells.pop(key, set()) | {c.uri for c in params.cell_text_documents}:
            ls.publish(uri, [])

    @server.feature(
        types.TEXT_DOCUMENT_CODE_ACTION,
        types.CodeActionOptions(
            code_action_kinds=[types.CodeActionKind.QuickFix, FIX_ALL_KIND], resolve_provider=False
        ),
    )
    async def code_action(ls: LoopcheckServer, params: types.CodeActionParams) -> list[types.CodeAction]:
        uri = params.text_document.uri
        found = await ls.with_fixes(uri)
        if found is None:
            return []
        target, result = found
        locate = ls.place_of(target, result)
        only = params.context.only
        actions: list[types.CodeAction] = []
        if _wanted(types.CodeActionKind.QuickFix, only):
            for f in result.findings:
                if f.fix is None:
                    continue
                place = locate(f.row)
                if place is None or place.uri != uri:
                    continue
                diag = diagnostic(place, f, locate, result.notebook)
                if not _overlaps(diag.range, params.range):
                    continue
                try:
                    edit = workspace_edit(ls, target, result, f.fix.apply(result.program))
                except (ValueError, IndexError):
                    edit = None
                if edit is None:
                    continue
                title = f"loopcheck ({f.code}): {f.fix.message}" + ("" if f.fix.is_safe else " (unsafe)")
                actions.append(types.CodeAction(
                    title=title, kind=types.CodeActionKind.QuickFix, diagnostics=[diag], edit=edit,
                    is_preferred=f.fix.is_safe))
        if _wanted(FIX_ALL_KIND, only) and result.fix_all is not None and result.fix_all != result.program:
            edit = workspace_edit(ls, target, result, result.fix_all)
            if edit is not None:
                actions.append(types.CodeAction(title=FIX_ALL_TITLE, kind=FIX_ALL_KIND, edit=edit))
        return actions

    @server.feature(types.SHUTDOWN)
    def shutdown(ls: LoopcheckServer, params: None) -> None:
        for key in list(ls.jobs):
            ls.forget(key)

    return server


class OneLineFormatter(logging.Formatter):
    """A log record as one line: ``loopcheck server: <first line of the message>: <Type>:
    <message>`` of the exception being handled, without its traceback. pygls logs each
    message it cannot read or structure with a whole traceback (a malformed message printed
    twenty lines of it, some inside its own message text)."""

    def format(self, record: logging.LogRecord) -> str:
        from loopcheck.check import describe_error

        text = record.getMessage().split("\n", 1)[0].strip()
        err = record.exc_info[1] if record.exc_info else sys.exc_info()[1]
        if err is not None:
            text = f"{text}: {describe_error(err, limit=200)}"
            inner = err
            while getattr(inner, "exceptions", None):  # an exception group: what went wrong inside
                inner = inner.exceptions[0]
            if inner is not err:
                text = f"{text} ({describe_error(inner, limit=200)})"
        return f"loopcheck server: {text}"


def one_line_logging() -> None:
    """Log pygls's warnings and errors on standard error one line each
    (:class:`OneLineFormatter`), not through Python's last-resort handler."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(OneLineFormatter())
    for name in ("pygls", "loopcheck.server"):  # this module's logger and the worker's
        logger = logging.getLogger(name)
        logger.addHandler(handler)
        logger.propagate = False
        if logger.level == logging.NOTSET:
            logger.setLevel(logging.WARNING)


def serve() -> None:
    """Run the language server on stdin/stdout until the client says exit; a message it
    cannot read is one line on standard error (:func:`one_line_logging`)."""
    one_line_logging()
    create_server().start_io()


if __name__ == "__main__":
    serve()
