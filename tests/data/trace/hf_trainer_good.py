"""transformers Trainer, used as documented: built-in clipping, a linear warmup schedule stepped
per optimizer step, evaluation under the Trainer's own no_grad."""
import tempfile

import torch
import torch.nn as nn
from torch.utils.data import Dataset
from transformers import Trainer, TrainingArguments

torch.manual_seed(0)


class Pairs(Dataset):
    def __init__(self, n=256):
        self.x = torch.randn(n, 16)
        self.y = (self.x[:, :4].sum(dim=1) > 0).long()

    def __len__(self):
        return len(self.x)

    def __getitem__(self, i):
        return {"x": self.x[i], "labels": self.y[i]}


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Dropout(0.1), nn.Linear(32, 2))

    def forward(self, x, labels=None):
        logits = self.body(x)
        loss = nn.functional.cross_entropy(logits, labels) if labels is not None else None
        return {"loss": loss, "logits": logits}


args = TrainingArguments(output_dir=tempfile.mkdtemp(), max_steps=12, per_device_train_batch_size=16,
                         learning_rate=0.1, warmup_steps=3, lr_scheduler_type="linear", eval_strategy="steps",
                         eval_steps=6, report_to=[], save_strategy="no", logging_strategy="no", use_cpu=True,
                         disable_tqdm=True, dataloader_num_workers=0)
Trainer(model=Net(), args=args, train_dataset=Pairs(), eval_dataset=Pairs(64)).train()
