"""The loop of tinypkg: gradients are never cleared."""
import torch


def train(model, optimizer, batches):
    for xb, yb in batches:
        loss = torch.nn.functional.mse_loss(model(xb), yb)
        loss.backward()
        optimizer.step()  # trace: LC105
