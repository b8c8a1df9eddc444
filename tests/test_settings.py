"""The value a setting read in a loop has on every run (engine/settings.py), across the
modules of a project: argparse defaults returned by a function of another module, class
attributes of a configuration class, entries of a dict built from them; what is left unknown."""
from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from loopcheck.analysis import check_source

LOOP = """\
import torch
from torch import nn
{IMPORT}

{SETUP}
model = nn.Sequential(nn.Linear(16, 2))
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for step, (x, y) in enumerate([(torch.randn(8, 16), torch.randint(0, 2, (8,)))] * 8):
    nn.functional.cross_entropy(model(x), y).backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    if (step + 1) % {COUNT} == 0:
        optimizer.step()
        optimizer.zero_grad()
"""

CONFIG = """\
import argparse


def set_args():
    parser = argparse.ArgumentParser()
    parser.add_argument("--accum", type=int, default={DEFAULT})
    return parser.parse_args()


class Config:
    accum = {DEFAULT}
"""


def _findings(tmp_path: Path, default: int, imports: str, setup: str, count: str) -> list[tuple[str, object]]:
    (tmp_path / "config.py").write_text(CONFIG.replace("{DEFAULT}", str(default)))
    source = LOOP.replace("{IMPORT}", imports).replace("{SETUP}", textwrap.dedent(setup)).replace("{COUNT}", count)
    script = tmp_path / "train.py"
    script.write_text(source)
    clip = source.splitlines().index("    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)") + 1
    return sorted({(f.code, "clip" if f.row == clip else f.row) for f in check_source(source, str(script)) if f.code == "LC106"})


@pytest.mark.parametrize("imports, setup, count", [
    ("from config import set_args", "args = set_args()", "args.accum"),
    ("import config", "args = config.set_args()", "args.accum"),
    ("from config import Config", "", "Config.accum"),
    ("from config import set_args", "args = set_args()\nconf = {'accum': args.accum, 'fp16': False}", "conf['accum']"),
])
def test_a_count_of_one_on_every_run_is_no_accumulation(tmp_path: Path, imports, setup, count):
    assert _findings(tmp_path, 1, imports, setup, count) == []
    assert _findings(tmp_path, 4, imports, setup, count) == [("LC106", "clip")]


@pytest.mark.parametrize("imports, setup, count", [
    # the program changes the setting, or may: not known
    ("from config import set_args", "args = set_args()\nargs.accum = 4", "args.accum"),
    ("from config import set_args", "args = set_args()\nsetattr(args, 'accum', 4)", "args.accum"),
    ("from config import Config", "Config.accum = 4", "Config.accum"),
    ("from config import set_args", "args = set_args()\nconf = {'accum': args.accum}\nconf['accum'] = 4", "conf['accum']"),
    ("from config import set_args", "args = set_args()\nconf = {'accum': args.accum}\nconf.update(accum=4)", "conf['accum']"),
    ("import json", "conf = json.load(open('train.json'))", "conf['accum']"),
])
def test_a_setting_the_program_may_change_is_not_known(tmp_path: Path, imports, setup, count):
    assert _findings(tmp_path, 1, imports, setup, count) == [("LC106", "clip")]
