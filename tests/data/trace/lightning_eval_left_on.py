"""Lightning: a hook runs a quick evaluation at the end of every training epoch and leaves the
module in eval mode. Lightning sets train mode only when fit() starts, so from the second epoch
on the model trains with Dropout off and BatchNorm frozen."""
import lightning.pytorch as pl
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(0)
X = torch.randn(256, 16)
y = (X[:, :4].sum(dim=1) > 0).long()
X_probe = torch.randn(64, 16)


class Classifier(pl.LightningModule):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(16, 32), nn.BatchNorm1d(32), nn.ReLU(), nn.Dropout(0.3),
                                 nn.Linear(32, 2))

    def training_step(self, batch, batch_idx):
        xb, yb = batch
        return F.cross_entropy(self.net(xb), yb)

    def on_train_epoch_end(self):
        self.eval()  # trace: LC301
        with torch.no_grad():
            share = self.net(X_probe).argmax(dim=1).float().mean()
        print(f"epoch {self.current_epoch}: {share:.2f} of the probe batch predicted as class 1")

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.1)


trainer = pl.Trainer(max_epochs=3, accelerator="cpu", logger=False, enable_checkpointing=False,
                     enable_progress_bar=False, enable_model_summary=False)
trainer.fit(Classifier(), DataLoader(TensorDataset(X, y), batch_size=32, shuffle=True))
