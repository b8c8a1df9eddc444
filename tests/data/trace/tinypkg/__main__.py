import torch
import torch.nn as nn

from tinypkg.engine import train

torch.manual_seed(0)
model = nn.Linear(4, 1)
optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
train(model, optimizer, [(torch.randn(8, 4), torch.randn(8, 1)) for _ in range(10)])
