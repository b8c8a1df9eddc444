"""LC504 on modules kept out of the model's registration on purpose: built on their device,
with no layer that changes with the mode, and trained by an optimizer of their own. Only the
model's ``state_dict()`` misses them: the rule is silent when the project saves or loads no
model's state, and names the checkpoint when it does."""

from __future__ import annotations

import textwrap
from pathlib import Path

from loopcheck.analysis import check_source

HEAD = '''
import torch
from torch import nn
device = "cuda"
class Critic(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(8, 32), nn.LeakyReLU(0.2), nn.Linear(32, 2){extra})
    def forward(self, z):
        return self.body(z)
class AE(nn.Module):
    def __init__(self):
        super().__init__()
        self.enc = nn.Linear(16, 8)
        self.critics = {critics}
        self.critic_opt = torch.optim.Adam({params}, lr=1e-4)
    def forward(self, x):
        z = self.enc(x)
        d = sum(c(z.detach()).mean() for c in self.critics)
        self.critic_opt.zero_grad()
        d.backward()
        self.critic_opt.step()
        return z.pow(2).mean()
model = AE().to(device)
opt = torch.optim.Adam(model.parameters())
for _ in range(3):
    loss = model(torch.randn(4, 16))
    opt.zero_grad()
    loss.backward()
    opt.step()
'''


def lc504(tmp_path: Path, critics: str, params: str, extra: str = "", tail: str = "", other: str = "") -> list[str]:
    """The LC504 messages of a one-file project (with a marker, so no other file is its
    project's), ``other``: the text of a second file of the project."""
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "p"\nversion = "0"\n')
    if other:
        (tmp_path / "save.py").write_text(other)
    src = textwrap.dedent(HEAD).format(critics=critics, params=params, extra=extra) + tail
    path = tmp_path / "train.py"
    path.write_text(src)
    return [f.message for f in check_source(src, str(path)) if f.code == "LC504"]


def test_critic_on_device_trained_apart_unsaved_is_silent(tmp_path):
    assert lc504(tmp_path, "[Critic().cuda()]", "self.critics[0].parameters()") == []


def test_every_critic_through_a_comprehension_is_silent(tmp_path):
    got = lc504(tmp_path, "[Critic().to(device), Critic().to(device)]",
                "[p for c in self.critics for p in c.parameters()]")
    assert got == []


def test_state_dict_saved_in_another_file_names_the_checkpoint(tmp_path):
    got = lc504(tmp_path, "[Critic().cuda()]", "self.critics[0].parameters()",
                other="import torch\ndef save(m):\n    torch.save(m.state_dict(), 'm.pt')\n")
    assert got == ["self.critics holds modules in a plain list: not registered, so model.state_dict() does not save them"]


def test_one_critic_left_out_of_the_optimizer_is_reported(tmp_path):
    got = lc504(tmp_path, "[Critic().cuda(), Critic().cuda()]", "self.critics[0].parameters()")
    assert got == ["self.critics holds modules in a plain list: not registered, so model.parameters() misses them"]


def test_critic_left_on_the_cpu_is_reported(tmp_path):
    got = lc504(tmp_path, "[Critic()]", "self.critics[0].parameters()")
    assert got == ["self.critics holds modules in a plain list: not registered, so model.parameters() misses them"]


def test_critic_with_dropout_is_reported(tmp_path):
    got = lc504(tmp_path, "[Critic().cuda()]", "self.critics[0].parameters()", extra=", nn.Dropout(0.5)")
    assert got == ["self.critics holds modules in a plain list: not registered, so model.parameters() misses them"]
