"""accelerate: the model, optimizer, loader and an epoch scheduler go through
accelerator.prepare(); the scheduler is then stepped once per batch."""
import torch
import torch.nn as nn
from accelerate import Accelerator
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(0)
X = torch.randn(256, 16)
y = (X[:, :4].sum(dim=1) > 0).long()

accelerator = Accelerator(cpu=True)
model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 2))
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=2, gamma=0.5)
loader = DataLoader(TensorDataset(X, y), batch_size=32, shuffle=True)
model, optimizer, loader, scheduler = accelerator.prepare(model, optimizer, loader, scheduler)

for epoch in range(2):
    model.train()
    for xb, yb in loader:
        optimizer.zero_grad()
        loss = nn.functional.cross_entropy(model(xb), yb)
        accelerator.backward(loss)
        optimizer.step()
        scheduler.step()  # trace: LC201
    accelerator.print(f"epoch {epoch}: loss {loss.item():.4f}")
