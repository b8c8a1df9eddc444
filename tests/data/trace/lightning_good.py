"""Lightning, written correctly: a validation loop (Lightning switches eval mode and no_grad on
and off around it), gradient clipping by the Trainer, a per-epoch scheduler."""
import lightning.pytorch as pl
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(0)
X = torch.randn(256, 16)
y = (X[:, :4].sum(dim=1) > 0).long()
X_val = torch.randn(64, 16)
y_val = (X_val[:, :4].sum(dim=1) > 0).long()


class Classifier(pl.LightningModule):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(16, 32), nn.BatchNorm1d(32), nn.ReLU(), nn.Dropout(0.3),
                                 nn.Linear(32, 2))

    def training_step(self, batch, batch_idx):
        xb, yb = batch
        return F.cross_entropy(self.net(xb), yb)

    def validation_step(self, batch, batch_idx):
        xb, yb = batch
        self.log("val_loss", F.cross_entropy(self.net(xb), yb))

    def configure_optimizers(self):
        optimizer = torch.optim.SGD(self.parameters(), lr=0.1)
        return [optimizer], [torch.optim.lr_scheduler.StepLR(optimizer, step_size=1, gamma=0.5)]


trainer = pl.Trainer(max_epochs=3, accelerator="cpu", logger=False, enable_checkpointing=False,
                     enable_progress_bar=False, enable_model_summary=False, gradient_clip_val=1.0)
trainer.fit(Classifier(), DataLoader(TensorDataset(X, y), batch_size=32, shuffle=True),
            DataLoader(TensorDataset(X_val, y_val), batch_size=32))
