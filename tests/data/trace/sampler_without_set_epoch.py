"""A DistributedSampler (one replica) shuffles, but set_epoch() is never called: every epoch
sees the same order. No rule code covers it: trace prints a note."""
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler

torch.manual_seed(0)
data = TensorDataset(torch.randn(64, 4), torch.randn(64, 1))
sampler = DistributedSampler(data, num_replicas=1, rank=0, shuffle=True)
loader = DataLoader(data, batch_size=16, sampler=sampler)
model = nn.Linear(4, 1)
optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
for epoch in range(3):
    for xb, yb in loader:
        optimizer.zero_grad()
        nn.functional.mse_loss(model(xb), yb).backward()
        optimizer.step()
