"""Checks of an open text document in processes that keep its last parse.

The language server checks each version of a document in a process forked from a warm fork
server, so that a newer version can kill a stale check at no cost. Such a process starts
with nothing of the document, and parsing a 2,000-line script is most of its check. Here a
document's check instead runs in a *chain* of processes:

1. its first check runs in a process forked by the chain's root (:func:`serve_document`,
   started from the fork server), which, once it has sent its result, stays alive holding
   the document's :class:`~loopcheck.server.reparse.Reparser` (the last tree) and waits for
   commands on its connection: it is the document's *template*;
2. a later check whose edit is small (at most :data:`MAX_EDIT_HERE` characters changed: the
   keystrokes of typing) runs in the template itself, which reparses only the statements the
   edit changed, takes the IR of the functions it did not change from its last check
   (:mod:`loopcheck.engine.reuse`), and sends the result on a connection of the check's own
   (a socket the server passes with ``SCM_RIGHTS``). A newer version cancels it: the server
   writes to that connection, and the template stops at the next step of the analysis
   (between two functions or two units: :func:`~loopcheck.analysis.check_parsed`'s
   ``interrupt``), still holding a finished check's tables or this version's parse; one that
   has not stopped within :data:`CANCEL_GRACE_S` is killed, and the next check starts a new
   chain. (Not a fork for each check, as the other checks below: the child's first writes
   to each page it shares with the template copy that page, which slows typing.)
3. any other check (a large edit, a notebook) runs in a ``fork()`` of the template: the child
   inherits the last tree, reparses, sends its result, and then becomes the template in
   turn, the old one exiting; a newer version kills it (``SIGKILL``) at once, and the
   template it was forked from is untouched and forks the next one.

The results are those of a fresh process: each check forgets the projects a template
remembered (imported modules are read again, as before), and the reparsed tree is the tree a
full parse builds (:mod:`loopcheck.server.reparse`). Where a template cannot be used (no ``fork``,
a document over :data:`MAX_TEXT`, a template that died), the check runs as before. A
notebook's chain keeps the tree of its program (its code cells joined). At most
:data:`MAX_TEMPLATES` templates are kept (the least recently used exits).
"""

from __future__ import annotations

import gc
import os
import signal
import threading
from collections import OrderedDict
from dataclasses import dataclass, field
from multiprocessing import reduction
from multiprocessing.connection import Connection
from typing import Any

#: Documents with more code than this (characters) are checked without a template.
MAX_TEXT = 1_000_000
#: Documents whose template process is kept at the same time.
MAX_TEMPLATES = 4
#: An edit that changes at most this many characters is checked in the template itself.
MAX_EDIT_HERE = 20_000
#: Seconds a template has to stop a cancelled check before it is killed (and the document's
#: next check starts a new chain).
CANCEL_GRACE_S = 0.5


class Cancelled(Exception):
    """The check was cancelled (a newer version of the document arrived)."""


# ------------------------------------------------------------------ the processes' side


def serve_document(conn: Connection, args: tuple) -> None:
    """The root of a document's chain (a ``multiprocessing`` target): fork the process that
    checks ``args`` (:func:`loopcheck.server.worker.analyze`'s arguments) and then serves as the
    document's template, and reap every process of the chain until none is left. Never
    returns.

    The chain's processes are orphaned as each template hands over to its child and exits;
    the root is their *subreaper* (Linux ``PR_SET_CHILD_SUBREAPER``), so they are reaped here
    and never pile up as zombies under an init that does not reap (a container's). The root
    holds nothing of the document."""
    os.dup2(2, 1)  # nothing a check prints may reach the LSP stream on stdout
    _become_subreaper()
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # children are reaped as they exit
    if os.fork() == 0:
        _serve(conn, args)
    conn.close()
    while True:
        try:
            os.wait()  # returns when no child is left (ECHILD, children being auto-reaped)
        except ChildProcessError:
            os._exit(0)
        except InterruptedError:
            continue


def _become_subreaper() -> None:
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER
    except (OSError, AttributeError):  # not Linux: orphans go to init, which reaps them
        pass


def _serve(conn: Connection, args: tuple) -> None:
    """Check, serve as the template, and in each forked child check again. Never returns."""
    from loopcheck.server.reparse import Reparser
    from loopcheck.check import tune_gc

    tune_gc()
    reparser = Reparser()
    while True:
        _check(conn, args, reparser)
        conn, args = _template(conn, reparser)


def _check(conn: Connection, args: tuple, reparser) -> None:
    """Run one check and send ``("pid", pid, True)`` (this process becomes the document's
    template, on ``conn``) then ``("ok", Analysis)`` or ``("error", text)``; exit after an
    error (the tree may be half-updated)."""
    from loopcheck.server.worker import analyze

    try:
        conn.send(("pid", os.getpid(), True))
        conn.send(("ok", analyze(*args, reparser=reparser)))
    except BaseException as err:  # noqa: BLE001 - reported to the server
        try:
            conn.send(("error", f"{type(err).__name__}: {err}"))
        finally:
            os._exit(0)


class _Interrupted(BaseException):
    """The server cancelled the check running in the template (a newer version came)."""


def _check_here(job: Connection, args: tuple, reparser) -> None:
    """Run one check in the template itself: send ``("pid", pid, False)`` (this process is
    the template already) then as :func:`_check`, and stop between two steps of the analysis
    when the server writes to (or closes) ``job``: the document's tree, tables and entry
    points stay those of a finished check or of this version's parse, so the template goes on
    serving. Exits after an error."""
    from loopcheck.server.worker import analyze

    def interrupt() -> None:
        if job.poll():
            raise _Interrupted

    try:
        job.send(("pid", os.getpid(), False))
        job.send(("ok", analyze(*args, reparser=reparser, interrupt=interrupt)))
    except (_Interrupted, BrokenPipeError, ConnectionResetError):
        pass  # stopped, or the server let go of the check before its result
    except BaseException as err:  # noqa: BLE001 - reported to the server
        try:
            job.send(("error", f"{type(err).__name__}: {err}"))
        finally:
            os._exit(0)
    finally:
        job.close()


def _here(reparser, args: tuple) -> bool:
    """Whether the template checks ``args`` itself rather than in a fork: a Python text whose
    edit since the last version is small (:data:`MAX_EDIT_HERE`), so that the check's parse is
    short and the rest of it stops at the server's word; anything else runs in a fork that the
    server may kill at once."""
    kind, payload = args[0], args[1]
    if kind != "python":
        return False
    changed = reparser.changed(payload)
    return changed is not None and changed <= MAX_EDIT_HERE


def _settle(reparser) -> None:
    """Between two checks, in the template: forget the projects, prepare the next reparse."""
    from loopcheck.engine.project import forget_projects

    forget_projects()  # each check starts as a fresh process would: imported modules are read again
    reparser.prepare()  # the statement spans the next reparse needs, while idle
    gc.collect()
    gc.freeze()  # no later collection, here or in a fork, walks what the template keeps


def _template(conn: Connection, reparser) -> tuple[Connection, tuple]:
    """Wait for commands as the document's template and run each check, in this process
    (:func:`_here`) or in a forked child; in such a child, return the child's connection and
    the check it is to run (the parent never returns)."""
    _settle(reparser)
    while True:
        try:
            command = conn.recv()
        except (EOFError, OSError):
            os._exit(0)
        if command[0] != "check":
            os._exit(0)
        try:
            fd = reduction.recv_handle(conn)
        except (EOFError, OSError):
            os._exit(0)
        if _here(reparser, command[1]):
            _check_here(Connection(fd), command[1], reparser)
            _settle(reparser)
            continue
        if os.fork() == 0:
            conn.close()
            return Connection(fd), command[1]
        os.close(fd)


# ------------------------------------------------------------------ the server's side


@dataclass
class _Template:
    conn: Connection
    pid: int
    version: Any
    lock: threading.Lock = field(default_factory=threading.Lock)


class Templates:
    """The server's table of document templates (thread-safe: jobs wait in executor
    threads).

    Args:
        ctx: the ``forkserver`` multiprocessing context the first process of a chain is
            started from.
    """

    def __init__(self, ctx) -> None:
        self.ctx = ctx
        self.lock = threading.Lock()
        self.table: OrderedDict[str, _Template] = OrderedDict()

    def start(self, key: str, version: Any, args: tuple) -> DocumentJob:
        """A check of ``key``'s ``version`` (``args``: :func:`~loopcheck.server.worker.analyze`'s)."""
        return DocumentJob(self, key, version, args)

    def connect(self, key: str, args: tuple) -> Connection:
        """A connection to a new process checking ``args``: a fork of ``key``'s template,
        else the first process of a new chain."""
        with self.lock:
            template = self.table.get(key)
        mine, theirs = self.ctx.Pipe(duplex=True)
        try:
            if template is not None:
                try:
                    with template.lock:
                        template.conn.send(("check", args))
                        reduction.send_handle(template.conn, theirs.fileno(), template.pid)
                    return mine
                except (OSError, ValueError):  # the template died: start a new chain
                    self.drop(key, template)
            self.ctx.Process(target=serve_document, args=(theirs, args), daemon=True).start()
            return mine
        finally:
            theirs.close()

    def adopt(self, key: str, version: Any, conn: Connection, pid: int) -> None:
        """The process that checked ``version`` of ``key`` becomes its template, unless the
        template holds a later version (then it is told to exit)."""
        with self.lock:
            old = self.table.get(key)
            if old is not None and _later(old.version, version):
                gone = [_Template(conn, pid, version)]
            else:
                self.table[key] = _Template(conn, pid, version)
                self.table.move_to_end(key)
                gone = [old] if old is not None else []
                while len(self.table) > MAX_TEMPLATES:
                    gone.append(self.table.popitem(last=False)[1])
        for template in gone:
            _close(template)

    def drop(self, key: str, template: _Template | None = None, pid: int | None = None) -> None:
        """Let ``key``'s template exit (only if it is still ``template``, or process ``pid``,
        when given)."""
        with self.lock:
            current = self.table.get(key)
            if current is None or (template is not None and current is not template):
                return
            if pid is not None and current.pid != pid:
                return
            del self.table[key]
        _close(current)


def _later(a: Any, b: Any) -> bool:
    try:
        return a > b
    except TypeError:
        return False


def _close(template: _Template) -> None:
    with template.lock:
        try:
            template.conn.close()  # it reads the end of its connection and exits
        except OSError:
            pass


class DocumentJob:
    """One check of a document version, in a chain process; :meth:`cancel` stops it: a fork is
    killed, a check in the template itself is told to stop (and the template killed if it
    does not within :data:`CANCEL_GRACE_S`)."""

    def __init__(self, templates: Templates, key: str, version: Any, args: tuple) -> None:
        self.templates, self.key, self.version, self.args = templates, key, version, args
        self.lock = threading.Lock()
        self.pid: int | None = None  # the running check's process, while it may be stopped
        self.conn: Connection | None = None
        self.here = False  # it runs in the template itself
        self.cancelled = False

    def wait(self):
        """Start the check and block until its result (in an executor thread).

        Raises:
            Cancelled: stopped by :meth:`cancel` (or the process died).
            RuntimeError: the check failed.
        """
        with self.lock:
            if self.cancelled:
                raise Cancelled
        conn, pid, adopt = self._connect()
        keep = False
        try:
            status, value = conn.recv()
            if status != "ok":
                raise RuntimeError(value)
            keep = adopt
        except (EOFError, OSError):
            raise Cancelled from None
        finally:
            with self.lock:
                self.pid = None  # done (and maybe the template now): a late cancel must not stop it
            if not keep:
                conn.close()
        if adopt:
            self.templates.adopt(self.key, self.version, conn, pid)
        return value

    def _connect(self) -> tuple[Connection, int, bool]:
        """A connection to the process running the check, its pid, and whether that process
        becomes the document's template; a template that died before answering (its
        connection ends at once) is dropped and a new chain started, once."""
        for attempt in range(2):
            conn = self.templates.connect(self.key, self.args)
            try:
                _kind, pid, adopt = conn.recv()
            except (EOFError, OSError):
                conn.close()
                if attempt or self.cancelled:
                    raise Cancelled from None
                self.templates.drop(self.key)
                continue
            with self.lock:
                self.here, self.conn, self.pid = not adopt, conn, pid  # pid last: it marks the job started
                if self.cancelled:
                    self._stop()
                    if not self.here:
                        conn.close()
                        raise Cancelled
            return conn, pid, adopt
        raise Cancelled

    def cancel(self) -> None:
        with self.lock:
            self.cancelled = True
            if self.pid is not None:
                self._stop()

    def _stop(self) -> None:
        """Stop the running check (with :attr:`lock` held)."""
        if not self.here:
            _kill(self.pid)
            return
        try:
            self.conn.send(("cancel",))  # the template stops at its next step and closes it
        except (OSError, ValueError):
            return
        timer = threading.Timer(CANCEL_GRACE_S, self._overdue, (self.pid,))
        timer.daemon = True
        timer.start()

    def _overdue(self, pid: int) -> None:
        """The template has not stopped the cancelled check in time: kill it."""
        with self.lock:
            if self.pid != pid:
                return  # it stopped (or finished)
        _kill(pid)
        self.templates.drop(self.key, pid=pid)


def _kill(pid: int) -> None:
    try:
        os.kill(pid, signal.SIGKILL)
    except OSError:
        pass
