"""The complete, correct training loop of the crib sheet, with fp32 / bf16 / fp16 (AMP) modes.

Every line sits where the crib sheet says it belongs::

    model.to(device) -> optimizer -> scheduler
    for epoch:
        model.train()
        for batch:
            optimizer.zero_grad(set_to_none=True)
            with autocast: logits = model(x); loss = criterion(logits, y)
            backward (scaler.scale(loss).backward() under fp16)
            [scaler.unscale_(optimizer)] clip_grad_norm_(...)
            optimizer.step() / scaler.step(optimizer); scaler.update()
            running_loss += loss.item()
        scheduler.step()                      # once per epoch
        model.eval(); with torch.no_grad(): validation

Run it: ``python -m reference_loop [--precision fp32|bf16|fp16] [--epochs N] [--device cpu|cuda]``.
"""

from __future__ import annotations

import contextlib
import time

import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

from .data import train_val
from .model import MLP

PRECISIONS = ("fp32", "bf16", "fp16")


def default_device() -> str:
    return "cuda" if torch.cuda.is_available() else "cpu"


def _autocast(device: str, precision: str):
    if precision == "fp32":
        return contextlib.nullcontext()
    dtype = torch.bfloat16 if precision == "bf16" else torch.float16
    return torch.autocast(device_type=device, dtype=dtype)


def train(
    precision: str = "fp32",
    device: str | None = None,
    epochs: int = 20,
    lr: float = 1e-2,
    batch_size: int = 64,
    max_norm: float = 1.0,
    seed: int = 0,
    verbose: bool = False,
) -> dict:
    """Train the reference MLP on the spiral data and return a summary dict.

    ``precision``: ``fp32``; ``bf16`` (autocast, no GradScaler: bfloat16 has float32's exponent
    range); ``fp16`` (autocast + ``torch.amp.GradScaler``, the AMP recipe for CUDA).
    Returns ``val_acc``, ``val_loss``, per-epoch ``history`` (train loss, val loss, val acc, lr),
    ``device``, ``precision``, ``torch`` version and wall-clock ``seconds``.
    """
    if precision not in PRECISIONS:
        raise ValueError(f"precision must be one of {PRECISIONS}")
    device = device or default_device()
    torch.manual_seed(seed)
    t0 = time.perf_counter()

    # --- data ---
    X_train, y_train, X_val, y_val = train_val(seed=seed)
    X_val, y_val = X_val.to(device), y_val.to(device)
    loader = DataLoader(TensorDataset(X_train, y_train), batch_size=batch_size, shuffle=True,
                        drop_last=True, generator=torch.Generator().manual_seed(seed))

    # --- model, loss, optimizer, scheduler (model moved BEFORE the optimizer is built) ---
    model = MLP(in_features=2, hidden=128, out_features=3).to(device)
    criterion = nn.CrossEntropyLoss()
    optimizer = torch.optim.Adam(model.parameters(), lr=lr)
    scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=epochs)
    scaler = torch.amp.GradScaler(device, enabled=(precision == "fp16"))

    history = []
    for epoch in range(epochs):
        model.train()
        running_loss = 0.0
        for X_batch, y_batch in loader:
            X_batch, y_batch = X_batch.to(device), y_batch.to(device)
            optimizer.zero_grad(set_to_none=True)
            with _autocast(device, precision):
                logits = model(X_batch)
                loss = criterion(logits, y_batch)
            scaler.scale(loss).backward()        # a no-op scale when the scaler is disabled
            scaler.unscale_(optimizer)           # clip true gradients, not scaled ones
            torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=max_norm)
            scaler.step(optimizer)               # = optimizer.step() when disabled
            scaler.update()
            running_loss += loss.item()          # a float, not the tensor
        lr_now = optimizer.param_groups[0]["lr"]
        scheduler.step()                         # once per epoch, after the optimizer steps

        model.eval()
        with torch.no_grad(), _autocast(device, precision):
            val_logits = model(X_val)
            val_loss = criterion(val_logits.float(), y_val).item()
            val_acc = (val_logits.argmax(1) == y_val).float().mean().item()
        history.append({"epoch": epoch, "train_loss": running_loss / len(loader),
                        "val_loss": val_loss, "val_acc": val_acc, "lr": lr_now})
        if verbose:
            print(f"epoch {epoch:3d}  train {running_loss / len(loader):.4f}  "
                  f"val {val_loss:.4f}  acc {val_acc:.3f}  lr {lr_now:.2e}")

    return {
        "precision": precision,
        "device": device,
        "torch": torch.__version__,
        "epochs": epochs,
        "val_acc": history[-1]["val_acc"],
        "val_loss": history[-1]["val_loss"],
        "scale": scaler.get_scale() if scaler.is_enabled() else None,
        "history": history,
        "seconds": time.perf_counter() - t0,
    }
