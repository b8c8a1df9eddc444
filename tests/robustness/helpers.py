"""Shared inputs and runners for the robustness tests."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

from click.testing import CliRunner

from loopcheck.cli.commands import main

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "fixtures"

# A training loop with one LC101 (the clip before backward) whose safe fix moves line 9 after
# line 11.
BAD = textwrap.dedent(
    """\
    import torch
    from torch import nn

    model = nn.Linear(4, 2)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for step in range(10):
        x = torch.randn(8, 4)
        optimizer.zero_grad()
        nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        loss = model(x).pow(2).mean()
        loss.backward()
        optimizer.step()
    """
)
CLIP = "    nn.utils.clip_grad_norm_(model.parameters(), 1.0)\n"
BACKWARD = "    loss.backward()\n"
# BAD after its fix
FIXED = BAD.replace(CLIP, "").replace(BACKWARD, BACKWARD + CLIP)
LC101_LINE = "bad.py:9:5: LC101 "


def cli(*args: str, input: bytes | str | None = None):
    """Run the check in-process (click's runner), with ``--preview`` (LC101, the rule these
    inputs break, is in preview; tests/test_preview.py tests the default selection):
    ``result.exit_code``, ``.stdout``, ``.stderr``, ``.output`` (both)."""
    return CliRunner().invoke(main, ["--preview", *args], input=input)


def cli_process(*args: str, cwd: Path, env: dict | None = None, timeout: float = 60,
                input: bytes | None = None) -> subprocess.CompletedProcess:
    """Run the check as ``python -m loopcheck --preview`` in a child process (a crash shows as
    a negative return code: a segfault is -11)."""
    full_env = {**os.environ, **(env or {})}
    return subprocess.run(
        [sys.executable, "-m", "loopcheck", "--preview", *args], cwd=cwd, env=full_env, capture_output=True,
        timeout=timeout, input=input,
    )


def write_bytes(path: Path, data: bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return path


def reported_files(output: str) -> list[str]:
    """The files of the ``path:row:col: CODE`` lines of concise output."""
    return sorted({line.split(":")[0] for line in output.splitlines() if ": LC" in line})
