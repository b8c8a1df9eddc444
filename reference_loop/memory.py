"""LC401: how much memory does keeping the loss tensor (instead of ``loss.item()``) really cost?

Each case trains the fixtures' MLP for ``steps`` steps, appending either ``loss`` (the tensor,
with its autograd graph) or ``loss.item()`` to a list, and reports per step:

* ``heap``: growth of the C heap in use (glibc ``mallinfo2``: live allocations, independent of
  fragmentation) - what the kept graphs themselves occupy;
* ``rss``: growth of the resident set size (``/proc/self/statm``) - what the process costs the
  machine, fragmentation included.

Run ``python -m reference_loop.memory``; each case runs in a fresh interpreter (Linux only).
"""

from __future__ import annotations

import ctypes
import json
import subprocess
import sys


class _MallInfo2(ctypes.Structure):
    _fields_ = [(n, ctypes.c_size_t) for n in
                "arena ordblks smblks hblks hblkhd usmblks fsmblks uordblks fordblks keepcost".split()]


def _heap_in_use():
    try:
        libc = ctypes.CDLL("libc.so.6")
        libc.mallinfo2.restype = _MallInfo2
    except (OSError, AttributeError):
        return None
    mi = libc.mallinfo2()
    return mi.uordblks + mi.hblkhd


def _rss():
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[1]) * 4096


def measure(keep: str, steps: int = 3000, batch: int = 64) -> dict:
    """Run in this process: bytes per step retained when keeping ``keep`` ("tensor" or "item")."""
    import gc

    import torch
    from torch import nn

    torch.set_num_threads(1)
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(20, 64), nn.BatchNorm1d(64), nn.ReLU(), nn.Dropout(0.2), nn.Linear(64, 2))
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    crit = nn.CrossEntropyLoss()
    history = []

    def step(store):
        x = torch.randn(batch, 20)
        y = (x[:, :5].sum(1) > 0).long()
        opt.zero_grad()
        loss = crit(model(x), y)
        loss.backward()
        opt.step()
        if store:
            history.append(loss if keep == "tensor" else loss.item())

    for _ in range(100):
        step(False)
    gc.collect()
    r0, h0 = _rss(), _heap_in_use()
    for _ in range(steps):
        step(True)
    gc.collect()
    r1, h1 = _rss(), _heap_in_use()
    return {"keep": keep, "batch": batch, "steps": steps, "rss_per_step": (r1 - r0) / steps,
            "heap_per_step": None if h0 is None else (h1 - h0) / steps, "torch": torch.__version__}


def run_cases(cases=(("tensor", 64), ("item", 64), ("tensor", 1024), ("item", 1024)), steps=3000) -> list[dict]:
    """Each case in a fresh interpreter, so that one case's heap does not leak into the next."""
    rows = []
    for keep, batch in cases:
        code = (f"import json, reference_loop.memory as m; "
                f"print(json.dumps(m.measure({keep!r}, {steps}, {batch})))")
        out = subprocess.run([sys.executable, "-W", "ignore", "-c", code], capture_output=True, text=True,
                             check=True, env=_env())
        rows.append(json.loads(out.stdout.strip().splitlines()[-1]))
    return rows


def _env():
    import os
    from pathlib import Path
    env = dict(os.environ, OMP_NUM_THREADS="1")
    root = str(Path(__file__).resolve().parents[1])
    env["PYTHONPATH"] = root + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    return env


def markdown(rows: list[dict]) -> str:
    lines = ["| kept per step | batch | steps | C heap in use, per step | RSS, per step |", "|---|---|---|---|---|"]
    for r in rows:
        kept = "`loss` (tensor)" if r["keep"] == "tensor" else "`loss.item()`"
        heap = "-" if r["heap_per_step"] is None else f"{r['heap_per_step']:,.0f} B"
        lines.append(f"| {kept} | {r['batch']} | {r['steps']} | {heap} | {r['rss_per_step']:,.0f} B |")
    return "\n".join(lines)


if __name__ == "__main__":
    print(markdown(run_cases()))
