"""Measure what ``loopcheck trace`` costs per optimizer step, and check that ``--steps`` stops on time.

Usage: python scripts/bench_trace.py [--pairs N] [--threads T] [--workloads reference,transformer]

Two workloads:

- ``reference``: the repository's reference loop, ``reference_loop.loop.train`` (fp32 on CPU: a
  small MLP with BatchNorm and Dropout, batch 64, ``scaler.scale(loss).backward()``, unscale,
  clip, ``scaler.step``, a cosine scheduler per epoch, validation under no_grad), a run of 4
  epochs (124 optimizer steps, model and optimizer built anew) per block;
- ``transformer``: a larger CPU model, a 4-layer Transformer language model (d_model 256,
  batch 16 x 64 tokens, AdamW, clipping, a per-step warmup schedule, an eval forward under
  no_grad every 10 steps), 5 steps per block.

Overhead, measured in one process: blocks run alternately without and with the watcher that
``loopcheck trace`` installs (plain, traced, traced, plain, ...), ``--pairs`` pairs after a
warm-up, each block timed in CPU time of this process (other load on the machine disturbs it
less than wall time) and in wall time. The overhead is the median of the per-pair ratios
traced/plain - 1 (goal: under 5 %).

``--steps``: the transformer workload runs as a program under ``python -m loopcheck trace
--steps N`` for a few N, and reports how many optimizer steps it completed before trace stopped
it (goal: exactly N, at most one more), and the end-to-end step time of that run.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


# ------------------------------------------------------------------------------ workloads


def reference_block(epochs: int = 4):
    """A run of the reference loop: ``epochs`` epochs of 31 optimizer steps per call."""
    from reference_loop.loop import train

    return lambda: train(precision="fp32", device="cpu", epochs=epochs), epochs * (2000 // 64)


def transformer_block(steps: int = 5):
    """``steps`` iterations of a 4-layer Transformer LM per call."""
    import torch
    from torch import nn

    torch.manual_seed(0)
    vocab, d, seq, batch = 1000, 256, 64, 16

    class LM(nn.Module):
        def __init__(self):
            super().__init__()
            self.emb = nn.Embedding(vocab, d)
            self.pos = nn.Parameter(torch.zeros(seq, d))
            layer = nn.TransformerEncoderLayer(d, 4, 4 * d, dropout=0.1, batch_first=True, norm_first=True)
            self.blocks = nn.TransformerEncoder(layer, 4, enable_nested_tensor=False)
            self.head = nn.Linear(d, vocab)

        def forward(self, idx):
            mask = nn.Transformer.generate_square_subsequent_mask(idx.size(1))
            return self.head(self.blocks(self.emb(idx) + self.pos, mask=mask, is_causal=True))

    model = LM()
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-4, weight_decay=0.1)
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda s: min(1.0, (s + 1) / 10))
    data = torch.randint(0, vocab, (batch * 40, seq + 1))
    state = {"step": 0}

    def block(out=None):
        for _ in range(steps):
            rows = data[torch.randint(0, len(data), (batch,))]
            x, y = rows[:, :-1], rows[:, 1:]
            model.train()
            optimizer.zero_grad(set_to_none=True)
            loss = nn.functional.cross_entropy(model(x).reshape(-1, vocab), y.reshape(-1))
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()
            state["step"] += 1
            if out is not None:
                out["steps"] = state["step"]
            scheduler.step()
            if state["step"] % 10 == 0:
                model.eval()
                with torch.no_grad():
                    model(x)

    return block, steps


WORKLOADS = {"reference": reference_block, "transformer": transformer_block}


# ------------------------------------------------------------------------------ measurements


def paired(workload: str, pairs: int) -> dict:
    """Alternate plain and traced blocks in this process; per-step CPU and wall times."""
    from loopcheck.trace.sites import UserCode
    from loopcheck.trace.watch import Watcher

    block, steps = WORKLOADS[workload]()
    user = UserCode([str(ROOT / "reference_loop"), str(Path(__file__).resolve().parent)])
    for _ in range(2):  # warm-up, both ways
        block()
        w = Watcher(user).install()
        block()
        w.uninstall()
    times = {False: [], True: []}
    for i in range(2 * pairs):
        traced = (i % 4) in (1, 2)  # plain, traced, traced, plain, ...
        w = Watcher(user).install() if traced else None
        c0, t0 = time.process_time(), time.perf_counter()
        block()
        cpu, wall = time.process_time() - c0, time.perf_counter() - t0
        if w is not None:
            w.uninstall()
        times[traced].append((cpu / steps, wall / steps))
    out = {}
    for k, name in ((0, "cpu"), (1, "wall")):
        plain = [t[k] for t in times[False]]
        traced = [t[k] for t in times[True]]
        ratios = [b / a - 1 for a, b in zip(plain, traced)]
        out[name] = {"plain": statistics.median(plain), "traced": statistics.median(traced),
                     "overhead": statistics.median(ratios)}
    return out


def child(out_path: str) -> None:
    """The transformer workload as a program (for --steps): writes how far it got, also when stopped."""
    out = {"steps": 0}
    block, _ = transformer_block(steps=60)
    t0 = time.perf_counter()
    try:
        block(out)
    finally:
        out["seconds"] = time.perf_counter() - t0
        Path(out_path).write_text(json.dumps(out), encoding="utf-8")


def stop_at(n: int, threads: int) -> dict:
    fd, path = tempfile.mkstemp(suffix=".json")
    os.close(fd)
    cmd = [sys.executable, "-m", "loopcheck", "trace", "--no-static", "-q", "--exit-zero", "--steps", str(n), "--",
           "python", __file__, "--child", path]
    env = dict(os.environ, OMP_NUM_THREADS=str(threads), PYTHONWARNINGS="ignore")
    proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True)
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8") or "{}")
    finally:
        os.unlink(path)
    data["returncode"] = proc.returncode
    return data


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--child")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--pairs", type=int, default=20)
    parser.add_argument("--workloads", default="reference,transformer")
    parser.add_argument("--stops", default="1,7,20")
    args = parser.parse_args()
    import torch

    torch.set_num_threads(args.threads)
    if args.child:
        child(args.child)
        return
    print(f"torch {torch.__version__}, {args.threads} thread(s), {args.pairs} pairs of blocks, "
          f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f}")
    for workload in args.workloads.split(","):
        r = paired(workload, args.pairs)
        for name in ("cpu", "wall"):
            m = r[name]
            print(f"{workload:12s} {name:4s} time per step: plain {m['plain'] * 1e3:8.3f} ms  traced "
                  f"{m['traced'] * 1e3:8.3f} ms  overhead {100 * m['overhead']:+5.1f} % (median of pairs)")
    for n in (int(x) for x in args.stops.split(",") if x):
        data = stop_at(n, args.threads)
        print(f"--steps {n:<3d} the program completed {data.get('steps')} optimizer steps "
              f"(trace exit {data['returncode']})")


if __name__ == "__main__":
    main()
