"""The MLP of the reference loop: Linear -> BatchNorm -> ReLU -> Dropout, twice, then a head."""

from __future__ import annotations

from torch import nn


class MLP(nn.Module):
    """A small classifier whose behaviour depends on ``train()``/``eval()`` (BatchNorm, Dropout)."""

    def __init__(self, in_features: int = 2, hidden: int = 128, out_features: int = 3, p: float = 0.1):
        super().__init__()
        self.net = nn.Sequential(
            nn.Linear(in_features, hidden),
            nn.BatchNorm1d(hidden),
            nn.ReLU(),
            nn.Dropout(p),
            nn.Linear(hidden, hidden),
            nn.BatchNorm1d(hidden),
            nn.ReLU(),
            nn.Dropout(p),
            nn.Linear(hidden, out_features),
        )

    def forward(self, x):
        return self.net(x)
