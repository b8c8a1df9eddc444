"""Imported by the language server's fork server (``set_forkserver_preload``): it runs one
check, with fixes, of a small training loop, so that every check forked from it finds the
library knowledge read, the rule tables built and the regular expressions compiled, and
pays only for its own document."""

from __future__ import annotations

_LOOP = '''\
import torch
import torch.nn as nn

model = nn.Sequential(nn.Linear(4, 8), nn.Dropout(0.1), nn.Linear(8, 2))
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
scheduler = torch.optim.lr_scheduler.StepLR(optimizer, 1)
scaler = torch.amp.GradScaler()
criterion = nn.CrossEntropyLoss()
losses = []
for epoch in range(2):
    model.train()
    for x, y in [(torch.randn(2, 4), torch.tensor([0, 1]))]:
        nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        with torch.autocast("cpu"):
            loss = criterion(model(x), y)
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()
        optimizer.zero_grad()
        scheduler.step()
        losses.append(loss)
    model.eval()
    with torch.no_grad():
        model(torch.randn(2, 4))
'''


def warm() -> None:
    """Run the check once (its result is dropped; a failure here only costs the warm-up)."""
    from loopcheck.server.worker import analyze

    try:
        analyze("python", _LOOP, "<warm-up>", None, True)
    except Exception:  # noqa: BLE001 - a warm-up must never stop the fork server
        pass


warm()
