"""Lightning: training_step clips the gradients before returning the loss.

Lightning calls backward() after training_step returns, so the clip sees the gradients
zero_grad() left (none) and every step applies an unclipped gradient. The backward and the
step happen inside Trainer.fit(): the static check reads them from Lightning's driver knowledge."""
import lightning.pytorch as pl
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(0)
X = torch.randn(256, 16)
y = (X[:, :4].sum(dim=1) > 0).long()


class Classifier(pl.LightningModule):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 2))

    def training_step(self, batch, batch_idx):
        xb, yb = batch
        loss = F.cross_entropy(self.net(xb), yb)
        torch.nn.utils.clip_grad_norm_(self.parameters(), max_norm=0.5)  # trace: LC101
        return loss

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.5)


trainer = pl.Trainer(max_epochs=2, accelerator="cpu", logger=False, enable_checkpointing=False,
                     enable_progress_bar=False, enable_model_summary=False)
trainer.fit(Classifier(), DataLoader(TensorDataset(X, y), batch_size=32, shuffle=True))
