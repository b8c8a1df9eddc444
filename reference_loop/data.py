"""Synthetic 3-class spiral data (2 features), generated with torch only."""

from __future__ import annotations

import math

import torch


def make_spiral(n: int = 2000, classes: int = 3, noise: float = 0.2, seed: int = 0):
    """Return ``(X, y)``: ``n`` points of ``classes`` interleaved spiral arms.

    ``X`` has shape ``(n, 2)`` (float32) and ``y`` shape ``(n,)`` (int64 class indices, not
    one-hot: ``CrossEntropyLoss`` takes indices).  Each arm makes about two thirds of a turn.
    """
    g = torch.Generator().manual_seed(seed)
    y = torch.arange(n) % classes
    r = torch.rand(n, generator=g)  # radius in [0, 1)
    turn = 2.0 * math.pi / classes
    theta = y * turn + r * 4.0 + noise * torch.randn(n, generator=g)
    X = torch.stack([r * torch.sin(theta), r * torch.cos(theta)], dim=1)
    perm = torch.randperm(n, generator=g)
    return X[perm].float(), y[perm].long()


def train_val(n_train: int = 2000, n_val: int = 600, seed: int = 0):
    """Independent training and validation draws from the same spiral distribution."""
    X_train, y_train = make_spiral(n_train, seed=seed)
    X_val, y_val = make_spiral(n_val, seed=seed + 1)
    return X_train, y_train, X_val, y_val
