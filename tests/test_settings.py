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
    ("from config import Config", "config = Config()", "config.accum"),
    ("import config as cfg", "config = cfg.Config()", "config.accum"),
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
    ("from config import Config", "config = Config()\nconfig.accum = 4", "config.accum"),
    ("from config import Config", "config = Config()\nfor config in [Config()]:\n    pass", "config.accum"),
    ("from config import Config", "config, other = Config(), None", "config.accum"),
    ("from config import set_args", "args = set_args()\nconf = {'accum': args.accum}\nconf['accum'] = 4", "conf['accum']"),
    ("from config import set_args", "args = set_args()\nconf = {'accum': args.accum}\nconf.update(accum=4)", "conf['accum']"),
    ("import json", "conf = json.load(open('train.json'))", "conf['accum']"),
])
def test_a_setting_the_program_may_change_is_not_known(tmp_path: Path, imports, setup, count):
    assert _findings(tmp_path, 1, imports, setup, count) == [("LC106", "clip")]


ARMS = """\
import torch
from torch import nn

ACCUM = {COUNT}
model = nn.Sequential(nn.Linear(16, 2))
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for step, (x, y) in enumerate([(torch.randn(8, 16), torch.randint(0, 2, (8,)))] * 8):
    nn.functional.cross_entropy(model(x), y).backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    if {TEST}:
        {BODY}
    else:
        {ORELSE}
"""


def _arm_findings(count: int, test: str, step_in_body: bool) -> list[int]:
    step, other = "optimizer.step()", "print(step)"
    source = ARMS.replace("{COUNT}", str(count)).replace("{TEST}", test.replace("k", "ACCUM")) \
        .replace("{BODY}", step if step_in_body else other).replace("{ORELSE}", other if step_in_body else step)
    return [f.row for f in check_source(source, "train.py") if f.code == "LC106"]


@pytest.mark.parametrize("test, step_in_body", [
    ("(step + 1) % k == 0", True),
    ("0 == (step + 1) % k", True),
    ("not (step + 1) % k", True),
    ("(step + 1) % k != 0", False),
    ("(step + 1) % k", False),
    ("not ((step + 1) % k == 0)", False),
    ("not (step + 1) % k != 0", True),
])
def test_the_arm_the_step_is_in_runs_on_every_micro_step(test, step_in_body):
    """``ACCUM``, a global bound once to the count, in each form of the accumulation test, with
    the step in the arm that runs when ``step + 1`` is a multiple of the count: with 1 that arm
    runs on every micro-step (silent), with 4 on one in four (the clip, line 9, is reported)."""
    assert _arm_findings(1, test, step_in_body) == []
    assert _arm_findings(4, test, step_in_body) == [9]
