"""LBFGS calls its closure several times per step; each call clears the gradients and runs a
backward of its own. That is correct, not gradients wiped between accumulated backward passes."""
import torch
import torch.nn as nn

torch.manual_seed(0)
x = torch.randn(64, 3)
y = x @ torch.tensor([[1.0], [-2.0], [0.5]])
model = nn.Linear(3, 1)
optimizer = torch.optim.LBFGS(model.parameters(), lr=0.5, max_iter=5)
for step in range(4):
    def closure():
        optimizer.zero_grad()
        loss = nn.functional.mse_loss(model(x), y)
        loss.backward()
        return loss
    optimizer.step(closure)
    with torch.no_grad():
        print(f"step {step}: loss {nn.functional.mse_loss(model(x), y).item():.5f}")
