"""A model with Dropout and no BatchNorm; train() is called once before the loop, evaluate()
puts it in eval mode and nothing undoes it (pytorch/examples mnist with its model.train()
moved out of train()): the second epoch trains with Dropout off. The runtime note names only
what eval mode changed in this model (no BatchNorm to speak of)."""
import torch
import torch.nn as nn

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(4, 16), nn.ReLU(), nn.Dropout(0.5), nn.Linear(16, 1))
optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
x, y = torch.randn(32, 4), torch.randn(32, 1)


def evaluate():
    model.eval()
    with torch.no_grad():
        return nn.functional.mse_loss(model(x), y).item()


model.train()
for epoch in range(2):
    for i in range(0, 32, 8):
        optimizer.zero_grad()
        nn.functional.mse_loss(model(x[i:i + 8]), y[i:i + 8]).backward()
        optimizer.step()
    evaluate()
