"""Run training scripts under the probes, each in its own subprocess.

Child:  ``python -m loopcheck.verify.runner SCRIPT OUT.json`` runs ``SCRIPT`` with
``runpy.run_path(SCRIPT, run_name="__main__")`` (the script is not edited or imported as a
module) inside a :class:`~loopcheck.verify.probes.Probe`, and writes the probe record, the
exception the script raised (if any), the warnings it emitted, the device, the torch version
and the wall time to ``OUT.json``.

Parent: :func:`run_scripts` starts one child per script, ``jobs`` at a time, and returns the
records.  The parent does not import torch.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
import traceback
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

#: Each child runs single-threaded: fixtures are tiny, and several children share the cores.
CHILD_ENV = {"OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "PYTHONWARNINGS": "ignore"}


def _script_frame(tb, script: str):
    """Line of the script where an exception surfaced (innermost frame in the script)."""
    line = None
    for frame in traceback.extract_tb(tb):
        if os.path.abspath(frame.filename) == os.path.abspath(script):
            line = frame.lineno
    return line


def run_child(script: str, out_path: str) -> int:
    """Child-process entry: run ``script`` under the probes and dump the JSON record."""
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
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("default")
        try:
            with probe.saved_tensors_hooks(), redirect_stdout(stdout):
                runpy.run_path(script, run_name="__main__")
        except SystemExit as exc:
            if exc.code not in (None, 0):
                error = {"type": "SystemExit", "message": str(exc.code), "line": None}
        except BaseException as exc:  # noqa: BLE001 - the exception is part of the evidence
            error = {"type": type(exc).__name__, "message": str(exc).strip().splitlines()[0][:300]
                     if str(exc).strip() else "", "line": _script_frame(exc.__traceback__, script)}
        wall = time.perf_counter() - t0
        probe.uninstall()
        probe.take_census()
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


def run_script(script: str | os.PathLike, timeout: float = 300.0) -> dict:
    """Run one script under the probes in a fresh subprocess and return its record."""
    script = str(Path(script).resolve())
    repo_root = str(Path(__file__).resolve().parents[2])
    env = dict(os.environ, **CHILD_ENV)
    env["PYTHONPATH"] = repo_root + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    fd, out_path = tempfile.mkstemp(prefix="loopcheck-verify-", suffix=".json")
    os.close(fd)
    try:
        proc = subprocess.run(
            [sys.executable, "-m", "loopcheck.verify.runner", script, out_path],
            cwd=str(Path(script).parent), env=env, capture_output=True, text=True, timeout=timeout,
        )
        try:
            with open(out_path, encoding="utf-8") as fh:
                record = json.load(fh)
        except (OSError, ValueError):
            tail = (proc.stderr or proc.stdout or "").strip().splitlines()[-3:]
            record = {"script": script, "error": {"type": "RunnerError", "line": None,
                                                  "message": f"exit {proc.returncode}: " + " | ".join(tail)}}
    except subprocess.TimeoutExpired:
        record = {"script": script, "error": {"type": "Timeout", "line": None,
                                              "message": f"no result after {timeout:.0f} s"}}
    finally:
        try:
            os.unlink(out_path)
        except OSError:
            pass
    return record


def run_scripts(scripts, jobs: int | None = None, timeout: float = 300.0) -> dict[str, dict]:
    """Run many scripts, ``jobs`` subprocesses at a time; returns ``{script: record}``."""
    scripts = [str(s) for s in scripts]
    jobs = max(1, jobs or os.cpu_count() or 1)
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        records = list(pool.map(lambda s: run_script(s, timeout), scripts))
    return dict(zip(scripts, records))


if __name__ == "__main__":
    if len(sys.argv) != 3:
        print("usage: python -m loopcheck.verify.runner SCRIPT OUT.json", file=sys.stderr)
        raise SystemExit(2)
    raise SystemExit(run_child(sys.argv[1], sys.argv[2]))
