"""A correct loop that keeps an EMA copy of the model (copy.deepcopy) and saves the whole model
object (torch.save(model)): tracing must leave nothing on the model that these would carry."""
import copy
import io

import torch
import torch.nn as nn

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 1))
optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
ema = copy.deepcopy(model).requires_grad_(False)
for step in range(10):
    optimizer.zero_grad()
    loss = nn.functional.mse_loss(model(torch.randn(32, 8)), torch.randn(32, 1))
    loss.backward()
    optimizer.step()
    with torch.no_grad():
        for e, p in zip(ema.parameters(), model.parameters()):
            e.mul_(0.9).add_(p, alpha=0.1)
buffer = io.BytesIO()
torch.save(model, buffer)
copy.deepcopy(model)
assert not model._forward_pre_hooks and not model._forward_hooks
print("saved", buffer.tell(), "bytes")
