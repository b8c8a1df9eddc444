"""transformers Trainer: built-in clipping turned off (max_grad_norm=0) because compute_loss
"clips the gradients itself" -- but compute_loss runs before the Trainer's backward, so the
clip sees no gradient and every step is unclipped."""
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
        self.body = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 2))

    def forward(self, x, labels=None):
        logits = self.body(x)
        loss = nn.functional.cross_entropy(logits, labels) if labels is not None else None
        return {"loss": loss, "logits": logits}


class ClippingTrainer(Trainer):
    def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
        outputs = model(**inputs)
        torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=0.5)  # trace: LC101
        return (outputs["loss"], outputs) if return_outputs else outputs["loss"]


args = TrainingArguments(output_dir=tempfile.mkdtemp(), max_steps=12, per_device_train_batch_size=16,
                         learning_rate=0.1, max_grad_norm=0.0, report_to=[], save_strategy="no",
                         logging_strategy="no", use_cpu=True, disable_tqdm=True, dataloader_num_workers=0)
ClippingTrainer(model=Net(), args=args, train_dataset=Pairs()).train()
