"""LC401: how much memory does keeping the loss tensor (instead of ``loss.item()``) really cost?

Each case trains the fixtures' MLP for ``steps`` steps, appending either ``loss`` (the tensor,
with its autograd graph) or ``loss.item()`` to a list, and reports per step:

* ``heap``: growth of the C heap in use (glibc ``mallinfo2``: live allocations, independent of
  fragmentation) - what the kept graphs themselves occupy;
* ``rss``: growth of the resident set size (``/proc/self/statm``) - what the process costs the
  machine, fragmentation included;
* ``cuda``: on a CUDA device, growth of ``torch.cuda.memory_allocated()`` (the caching
  allocator's live blocks, at least 512 bytes each) - what the kept losses hold on the GPU.

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


def measure(keep: str, steps: int = 3000, batch: int = 64, device: str = "cpu") -> dict:
    """Run in this process: bytes per step retained when keeping ``keep`` ("tensor" or "item").

    ``device`` is ``"cpu"`` or ``"cuda"`` (model and batches live there); ``cuda_per_step`` is
    ``None`` on the CPU.
    """
    import gc

    import torch
    from torch import nn

    torch.set_num_threads(1)
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(20, 64), nn.BatchNorm1d(64), nn.ReLU(), nn.Dropout(0.2),
                          nn.Linear(64, 2)).to(device)
    on_cuda = device == "cuda"
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    crit = nn.CrossEntropyLoss()
    history = []

    def step(store):
        x = torch.randn(batch, 20, device=device)
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
    if on_cuda:
        torch.cuda.synchronize()
    r0, h0 = _rss(), _heap_in_use()
    c0 = torch.cuda.memory_allocated() if on_cuda else None
    for _ in range(steps):
        step(True)
    gc.collect()
    if on_cuda:
        torch.cuda.synchronize()
    r1, h1 = _rss(), _heap_in_use()
    c1 = torch.cuda.memory_allocated() if on_cuda else None
    return {"keep": keep, "batch": batch, "steps": steps, "device": device,
            "rss_per_step": (r1 - r0) / steps,
            "heap_per_step": None if h0 is None else (h1 - h0) / steps,
            "cuda_per_step": None if c0 is None else (c1 - c0) / steps, "torch": torch.__version__}


def run_cases(cases=(("tensor", 64), ("item", 64), ("tensor", 1024), ("item", 1024)), steps=3000,
              device: str = "cpu") -> list[dict]:
    """Each case in a fresh interpreter, so that one case's heap does not leak into the next."""
    rows = []
    for keep, batch in cases:
        code = (f"import json, reference_loop.memory as m; "
                f"print(json.dumps(m.measure({keep!r}, {steps}, {batch}, {device!r})))")
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
    """One row per case; the GPU-memory column only where a case ran on a CUDA device."""
    gpu = any(r.get("cuda_per_step") is not None for r in rows)
    head = "| kept per step | device | batch | steps | C heap in use, per step | RSS, per step |"
    lines = [head + (" CUDA memory allocated, per step |" if gpu else ""),
             "|---|---|---|---|---|---|" + ("---|" if gpu else "")]
    for r in rows:
        kept = "`loss` (tensor)" if r["keep"] == "tensor" else "`loss.item()`"
        heap = "-" if r["heap_per_step"] is None else f"{r['heap_per_step']:,.0f} B"
        line = f"| {kept} | {r.get('device', 'cpu')} | {r['batch']} | {r['steps']} | {heap} | {r['rss_per_step']:,.0f} B |"
        if gpu:
            line += " - |" if r.get("cuda_per_step") is None else f" {r['cuda_per_step']:,.0f} B |"
        lines.append(line)
    return "\n".join(lines)


if __name__ == "__main__":
    # python -m reference_loop.memory [cpu|cuda]
    print(markdown(run_cases(device=sys.argv[1] if len(sys.argv) > 1 else "cpu")))
