"""Run training scripts under the probes, each in its own process.

Every script runs with ``runpy.run_path(script, run_name="__main__")`` (it is not edited, and
not imported as a module) inside a :class:`~loopcheck.verify.probes.Probe`, in a process of its
own, and :func:`run_child` writes a JSON record: the probe record, the exception the script
raised (if any), the warnings it emitted, the torch version and the wall time.

Importing torch and the ``torch._dynamo`` machinery that the first optimizer pulls in costs a
few seconds per process, far more than a fixture's training.  So on Linux the parent starts one
*fork server* (``python -m loopcheck.verify.runner --serve JOBS``) that imports and warms torch
once, without running any kernel or touching CUDA, and forks a fresh child per script, ``JOBS``
at a time.  Elsewhere each script gets its own ``python -m loopcheck.verify.runner
SCRIPT OUT.json`` subprocess.  The parent process never imports torch.

Children start isolated (:func:`child_command`): ``python -I`` (no ``PYTHON*`` variables, no user
site-packages, neither the current directory nor a script directory on ``sys.path``) in a fresh
empty working directory, so a ``torch.py``, ``loopcheck/`` or ``sitecustomize.py`` in the directory
the user runs ``loopcheck verify`` from is never imported.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import traceback
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

#: Children run single-threaded: fixtures are tiny, and several children share the cores.
CHILD_ENV = {"OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}

# Run by ``python -I -c``: make this very package importable (a source checkout is not on the
# isolated path), then hand over to :func:`main`. Nothing is read from the working directory.
_BOOTSTRAP = """\
import sys
from importlib.util import find_spec
from pathlib import Path
root = Path({root!r})
spec = find_spec("loopcheck")
if spec is None or spec.origin is None or Path(spec.origin).resolve().parent != root / "loopcheck":
    sys.path.insert(0, str(root))
from loopcheck.verify.runner import main
raise SystemExit(main(sys.argv[1:]))
"""


def _script_frame(tb, script: str):
    """Line of the script where an exception surfaced (innermost frame in the script)."""
    line = None
    for frame in traceback.extract_tb(tb):
        if os.path.abspath(frame.filename) == os.path.abspath(script):
            line = frame.lineno
    return line


def run_child(script: str, out_path: str) -> int:
    """Run ``script`` under the probes in this process and dump the JSON record to ``out_path``."""
    import io
    import runpy
    import warnings
    from contextlib import redirect_stdout

    import torch

    from .probes import Probe

    torch.set_num_threads(1)
    sys.argv = [script]
    sys.path.insert(0, os.path.dirname(os.path.abspath(script)))
    probe = Probe().install()
    error = None
    t0 = time.perf_counter()
    stdout = io.StringIO()
    script_globals = None  # kept until the final census: what the script still holds at its end
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("default")
        try:
            with probe.saved_tensors_hooks(), redirect_stdout(stdout):
                script_globals = runpy.run_path(script, run_name="__main__")
        except SystemExit as exc:
            if exc.code not in (None, 0):
                error = {"type": "SystemExit", "message": str(exc.code), "line": None}
        except BaseException as exc:  # noqa: BLE001 - the exception is part of the evidence
            text = str(exc).strip()
            error = {"type": type(exc).__name__, "message": text.splitlines()[0][:300] if text else "",
                     "line": _script_frame(exc.__traceback__, script)}
        wall = time.perf_counter() - t0
        probe.uninstall()
        probe.take_census(final=True)
        del script_globals
        warns = []
        for w in caught:
            msg = f"{w.category.__name__}: {str(w.message).strip()}"[:300]
            if msg not in warns:
                warns.append(msg)
    record = probe.record()
    record.update(
        script=script, error=error, warnings=warns[:20], seconds=round(wall, 3),
        torch=torch.__version__, cuda=torch.cuda.is_available(),
        stdout_tail=stdout.getvalue()[-500:],
    )
    with open(out_path, "w", encoding="utf-8") as fh:
        json.dump(record, fh)
    return 0


# ------------------------------------------------------------------------------ fork server


def _warm_up() -> None:
    """Import what every training script needs, without running kernels or touching CUDA."""
    import torch
    import torch.utils.data  # noqa: F401

    torch.set_num_threads(1)
    # Building an optimizer imports torch._dynamo (seconds); do it once here, not per script.
    torch.optim.SGD([torch.nn.Parameter(torch.empty(0))], lr=0.1)
    from . import probes  # noqa: F401


def serve(jobs: int, timeout: float) -> int:
    """Read ``{"script", "out"}`` JSON lines from stdin; fork one child per script, ``jobs`` at a time."""
    import signal

    _warm_up()
    queue = [json.loads(line) for line in sys.stdin if line.strip()]
    running: dict[int, tuple[float, dict]] = {}
    while queue or running:
        while queue and len(running) < jobs:
            req = queue.pop(0)
            pid = os.fork()
            if pid == 0:  # child
                code = 1
                try:
                    code = run_child(req["script"], req["out"])
                finally:
                    os._exit(code)
            running[pid] = (time.monotonic(), req)
        pid, _status = os.waitpid(-1, os.WNOHANG)
        if pid:
            running.pop(pid, None)
            continue
        now = time.monotonic()
        for pid, (start, req) in list(running.items()):
            if now - start > timeout:
                os.kill(pid, signal.SIGKILL)
                with open(req["out"], "w", encoding="utf-8") as fh:
                    json.dump({"script": req["script"], "error": {
                        "type": "Timeout", "line": None, "message": f"no result after {timeout:.0f} s"}}, fh)
        time.sleep(0.01)
    return 0


# ------------------------------------------------------------------------------ parent side


def _env() -> dict:
    return dict(os.environ, **CHILD_ENV)


def child_command(*args: str) -> list[str]:
    """The command line of an isolated child: ``python -I -W ignore -c BOOTSTRAP ARGS...``.

    ``-I`` ignores ``PYTHON*`` environment variables and user site-packages and keeps the
    current and the script's directory off ``sys.path``; the bootstrap puts this package's own
    parent directory on it when the package is not importable otherwise (a source checkout).
    """
    root = str(Path(__file__).resolve().parents[2])
    return [sys.executable, "-I", "-W", "ignore", "-c", _BOOTSTRAP.format(root=root), *args]


def _read(out_path: str, script: str, fallback: str) -> dict:
    try:
        with open(out_path, encoding="utf-8") as fh:
            return json.load(fh)
    except (OSError, ValueError):
        return {"script": script, "error": {"type": "RunnerError", "line": None, "message": fallback}}


def _run_forked(scripts: list[str], jobs: int, timeout: float) -> dict[str, dict]:
    tmp = tempfile.mkdtemp(prefix="loopcheck-verify-")
    outs = {s: os.path.join(tmp, f"{i}.json") for i, s in enumerate(scripts)}
    reqs = "".join(json.dumps({"script": s, "out": outs[s]}) + "\n" for s in scripts)
    work = tempfile.mkdtemp(prefix="loopcheck-verify-cwd-")
    try:
        proc = subprocess.run(
            child_command("--serve", str(jobs), str(timeout)),
            input=reqs, env=_env(), cwd=work, capture_output=True, text=True,
            timeout=timeout * (len(scripts) / jobs + 2) + 60,
        )
        tail = " | ".join((proc.stderr or "").strip().splitlines()[-3:])
        return {s: _read(outs[s], s, f"no record (server exit {proc.returncode}) {tail}") for s in scripts}
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
        shutil.rmtree(work, ignore_errors=True)


def run_script(script: str | os.PathLike, timeout: float = 300.0) -> dict:
    """Run one script under the probes in a fresh ``python`` subprocess and return its record."""
    script = str(Path(script).resolve())
    fd, out_path = tempfile.mkstemp(prefix="loopcheck-verify-", suffix=".json")
    os.close(fd)
    work = tempfile.mkdtemp(prefix="loopcheck-verify-cwd-")
    try:
        proc = subprocess.run(child_command(script, out_path),
                              env=_env(), cwd=work, capture_output=True, text=True, timeout=timeout)
        tail = " | ".join((proc.stderr or proc.stdout or "").strip().splitlines()[-3:])
        return _read(out_path, script, f"exit {proc.returncode}: {tail}")
    except subprocess.TimeoutExpired:
        return {"script": script, "error": {"type": "Timeout", "line": None,
                                            "message": f"no result after {timeout:.0f} s"}}
    finally:
        os.unlink(out_path)
        shutil.rmtree(work, ignore_errors=True)


def run_scripts(scripts, jobs: int | None = None, timeout: float = 300.0,
                fork: bool | None = None) -> dict[str, dict]:
    """Run many scripts, ``jobs`` at a time, one process each; returns ``{script: record}``.

    ``fork`` (default: on Linux) uses the fork server; otherwise one fresh interpreter per
    script.  Keys are the scripts as given.
    """
    scripts = [str(s) for s in scripts]
    if not scripts:
        return {}
    resolved = [str(Path(s).resolve()) for s in scripts]
    jobs = max(1, jobs or os.cpu_count() or 1)
    if fork is None:  # fork after importing torch is safe on Linux; macOS/Windows get fresh interpreters
        fork = hasattr(os, "fork") and sys.platform.startswith("linux")
    if fork:
        by_path = _run_forked(resolved, jobs, timeout)
        records = [by_path[r] for r in resolved]
    else:
        with ThreadPoolExecutor(max_workers=jobs) as pool:
            records = list(pool.map(lambda s: run_script(s, timeout), resolved))
    return dict(zip(scripts, records))


def main(argv: list[str]) -> int:
    if len(argv) == 3 and argv[0] == "--serve":
        return serve(int(argv[1]), float(argv[2]))
    if len(argv) == 2:
        return run_child(argv[0], argv[1])
    print("usage: python -m loopcheck.verify.runner SCRIPT OUT.json | --serve JOBS TIMEOUT",
          file=sys.stderr)
    return 2


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
