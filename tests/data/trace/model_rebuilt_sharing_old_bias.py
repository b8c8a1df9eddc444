"""A model rebuilt after its optimizer, keeping the old model's bias (tied by assignment): the
optimizer holds the old parameters, so the shared bias still trains and the new weight never
does. The replaced parameters are the model's own (no submodule holds them): the runtime
message names them, `weight`."""
import torch
import torch.nn as nn

torch.manual_seed(0)
old = nn.Linear(4, 2)
optimizer = torch.optim.SGD(old.parameters(), lr=0.1)
model = nn.Linear(4, 2)
model.bias = old.bias
x, y = torch.randn(16, 4), torch.randn(16, 2)
for i in range(0, 16, 4):
    optimizer.zero_grad()
    nn.functional.mse_loss(model(x[i:i + 4]), y[i:i + 4]).backward()
    optimizer.step()
