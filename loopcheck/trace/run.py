"""Run the user's program in this process, under the watcher.

:func:`run_target` does what ``python train.py ARGS`` / ``python -m pkg.mod ARGS`` would do —
``runpy.run_path``/``runpy.run_module`` with ``run_name="__main__"``, ``sys.argv`` set as
given, ``sys.path[0]`` the script's directory (the current directory for ``-m``) — with a
:class:`~loopcheck.trace.watch.Watcher` installed around it. The program's standard output
is sent to standard error while it runs, so that loopcheck's report is the only thing on
standard output. ``sys.argv``, ``sys.path`` and the torch patches are restored afterwards.

Importing this module imports torch.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import runpy
import sys
import time
import traceback
from dataclasses import dataclass, field

from .sites import Site, UserCode
from .target import Target, TargetError
from .watch import Observation, TraceStop, Watcher


@dataclass
class TraceResult:
    """What one traced run produced.

    Attributes:
        target: what ran.
        script: the file that ran as ``__main__`` (absolute path).
        observations: the runtime findings.
        notes: observations that are no rule's finding (``set_epoch`` missing, ...).
        steps: optimizer steps that ran (the most of any one optimizer).
        stopped: the run was stopped by ``--steps``.
        seconds: wall time of the program.
        error: ``{"type", "message", "site", "traceback"}`` when the program raised (not
            counting the ``--steps`` stop), else ``None``.
        exit_code: the program's ``sys.exit`` code when it was not 0/None.
        interrupted: stopped by Ctrl-C.
    """

    target: Target
    script: str
    observations: list[Observation]
    notes: list[str] = field(default_factory=list)
    steps: int = 0
    stopped: bool = False
    seconds: float = 0.0
    error: dict | None = None
    exit_code: int | str | None = None
    interrupted: bool = False


def resolve(target: Target) -> tuple[str, list[str]]:
    """The file that runs as ``__main__`` and the directories that are the user's own code.

    Raises:
        TargetError: the script does not exist, or the module cannot be found.
    """
    if target.kind == "path":
        path = os.path.abspath(target.value)
        if os.path.isdir(path):
            main = os.path.join(path, "__main__.py")
            if not os.path.isfile(main):
                raise TargetError(f"{target.value}: a directory without __main__.py")
            return main, [path]
        if not os.path.isfile(path):
            raise TargetError(f"{target.value}: no such file")
        return path, [os.path.dirname(path)]
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    try:
        spec = importlib.util.find_spec(target.value)
    except (ImportError, ValueError) as err:
        raise TargetError(f"-m {target.value}: {err}") from None
    if spec is None:
        raise TargetError(f"-m {target.value}: no module named {target.value!r}")
    origin = spec.origin
    if spec.submodule_search_locations:  # a package: its __main__
        main_spec = importlib.util.find_spec(target.value + ".__main__")
        if main_spec is None or not main_spec.origin:
            raise TargetError(f"-m {target.value}: a package without __main__")
        origin = main_spec.origin
    if not origin or not os.path.isfile(origin):
        raise TargetError(f"-m {target.value}: not a Python source module")
    top = target.value.split(".")[0]
    top_spec = importlib.util.find_spec(top)
    roots = [os.path.dirname(origin)]
    if top_spec is not None and top_spec.submodule_search_locations:
        roots = list(top_spec.submodule_search_locations)
    return origin, roots


@contextlib.contextmanager
def program_stdout_to_stderr():
    """Send the program's standard output (file descriptor 1 too) to standard error."""
    sys.stdout.flush()
    try:
        fd = sys.stdout.fileno()
        err_fd = sys.stderr.fileno()
    except (AttributeError, OSError, ValueError):
        fd = err_fd = None
    if fd is None or fd != 1:
        with contextlib.redirect_stdout(sys.stderr):
            yield
        return
    saved = os.dup(1)
    try:
        os.dup2(err_fd, 1)
        yield
    finally:
        try:
            sys.stdout.flush()
        except (OSError, ValueError):
            pass
        os.dup2(saved, 1)
        os.close(saved)


def _error(exc: BaseException, user: UserCode) -> dict:
    site = None
    for frame, lineno in traceback.walk_tb(exc.__traceback__):
        if user.is_user(frame.f_code.co_filename):
            site = Site(frame.f_code.co_filename, lineno, lineno, None, None, frame.f_code.co_name)
    text = str(exc).strip()
    return {"type": type(exc).__name__, "message": text.splitlines()[0][:300] if text else "",
            "site": site, "traceback": "".join(traceback.format_exception(exc))}


def run_target(target: Target, steps: int | None = None) -> TraceResult:
    """Run ``target`` to its end (or for ``steps`` optimizer steps) under the watcher.

    Args:
        target: the program.
        steps: stop before any optimizer's step ``steps + 1`` (``None``: run to the end).

    Raises:
        TargetError: the program cannot be found.
    """
    script, roots = resolve(target)
    user = UserCode(roots)
    watcher = Watcher(user, max_steps=steps)
    result = TraceResult(target, script, [])
    saved_argv, saved_path = sys.argv[:], sys.path[:]
    sys.argv = [script if target.kind == "module" else target.value, *target.args]
    sys.path.insert(0, os.path.dirname(script) if target.kind == "path" else os.getcwd())
    t0 = time.perf_counter()
    namespace = None  # the program's globals, kept alive until the end-of-run checks ran
    watcher.install()
    try:
        with program_stdout_to_stderr():
            try:
                if target.kind == "path":  # __file__ absolute, as python >= 3.9 sets it
                    namespace = runpy.run_path(script if not os.path.isdir(target.value) else target.value,
                                               run_name="__main__")
                else:
                    namespace = runpy.run_module(target.value, run_name="__main__", alter_sys=True)
            except TraceStop:
                result.stopped = True
            except SystemExit as exc:
                if exc.code not in (None, 0):
                    result.exit_code = exc.code
            except KeyboardInterrupt:
                result.interrupted = True
            except BaseException as exc:  # noqa: BLE001 - the program's failure is part of the report
                result.error = _error(exc, user)
    finally:
        result.seconds = time.perf_counter() - t0
        watcher.uninstall()
        sys.argv, sys.path[:] = saved_argv, saved_path
    watcher.finish()
    del namespace
    result.stopped = result.stopped or watcher.stopped
    result.observations = watcher.results()
    result.notes = watcher.notes
    result.steps = watcher.most_steps
    return result


__all__ = ["TraceResult", "TargetError", "resolve", "run_target", "program_stdout_to_stderr"]
