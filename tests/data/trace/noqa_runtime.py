"""A clip before backward whose line carries # noqa: LC101: trace honours it like the static check."""
import torch
import torch.nn as nn

torch.manual_seed(0)
model = nn.Linear(4, 1)
optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
for step in range(5):
    optimizer.zero_grad()
    loss = model(torch.randn(8, 4)).pow(2).mean()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)  # noqa: LC101
    loss.backward()
    optimizer.step()
