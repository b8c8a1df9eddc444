"""LC401 probe: a forward-only loop that sums loss tensors keeps every batch's activations.

Run: ``python reference_loop/probe_forward_only_total.py``; prints the growth of the
process's resident memory over 100 batches with ``loss.item()`` and with the tensor kept.
"""
import torch, torch.nn as nn, sys
torch.manual_seed(0)
def rss():
    return int(open('/proc/self/statm').read().split()[1]) * 4096 / 2**20
model = nn.Sequential(nn.Linear(256, 2048), nn.ReLU(), nn.Linear(2048, 2))
crit = nn.CrossEntropyLoss()
xs = [(torch.randn(256, 256), torch.randint(0, 2, (256,))) for _ in range(100)]
def run(keep):
    total = 0.0
    base = rss()
    for i, (x, y) in enumerate(xs):
        loss = crit(model(x), y)
        total = total + (loss if keep else loss.item())
    return rss() - base
print(f"torch {torch.__version__}, CPU; 100 batches of 256x256 through Linear(256,2048)-ReLU-Linear")
print(f"item(): RSS +{run(False):.1f} MiB; tensor kept: RSS +{run(True):.1f} MiB")
