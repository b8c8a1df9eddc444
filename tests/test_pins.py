"""engine/pins.py: a README's pins read from its commands only, and a project dated by its code."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from loopcheck.engine.pins import code_versions, dates_before, pinned_before, readme_pin_lines, scan_text, text_versions
from loopcheck.engine.project import Project


@pytest.mark.parametrize(("text", "kept"), [
    # prose pins nothing: a range a sentence gives, a changelog's mention
    ("Tested with torch<=1.4 and newer releases.\n", ""),
    ("- 2020: ported from pytorch==0.4.1 to 1.6\n", ""),
    # the lines that install, in prose or not
    ("Run pip install torch==0.4.1 first.\n", "Run pip install torch==0.4.1 first."),
    ("conda create -n x python=3.6 pytorch=0.4.1\n", "conda create -n x python=3.6 pytorch=0.4.1"),
    # a fenced and an indented code block
    ("Setup:\n```\ntorch==0.4.1\n```\nthen torch<2\n", "torch==0.4.1"),
    ("Setup:\n\n    torch==0.4.1\n", "    torch==0.4.1"),
    ("a paragraph\n    torch==0.4.1 continues it\n", ""),  # an indented line inside a paragraph
    # a line of requirement specifiers alone (lsvrd's `python==3.6 pytorch==0.4.0`)
    ("## Environment\n\npython==3.6 pytorch==0.4.0\nanaconda recommended\n", "python==3.6 pytorch==0.4.0"),
    ("* `torch==0.4.1`\n* __Pytorch 0.3.0__\n", "* `torch==0.4.1`"),
])
def test_readme_pins_come_from_commands_and_requirements(text: str, kept: str):
    assert readme_pin_lines(text) == kept


@pytest.mark.parametrize(("text", "scan"), [
    ("from torch.autograd import Variable\nx = Variable(t, volatile=True)\n", ((0, 4), None)),
    ("import torch.autograd as ag\nx = ag.Variable(t, False, True)\n", ((0, 4), None)),
    ("from torch.autograd import Variable\nx = Variable(t, volatile=False)\n", (None, None)),
    ("from torch.autograd import Variable\nx = Variable(t, volatile=flag)\n", ((0, 4), None)),
    ("def volatile(x):\n    return x\n", (None, None)),  # not the library's Variable
    ("import torch\nwith torch.no_grad():\n    y = f(x)\n", (None, (0, 4))),
    ("from torch import no_grad\n@no_grad()\ndef f(x):\n    return x\n", (None, (0, 4))),
    ("loss = f(x)\nprint(loss.item())\n", (None, (0, 4))),
    ("import torch\nwith torch.inference_mode():\n    y = f(x)\n", (None, (1, 9))),
    ("import numpy as np\ndevice = np.zeros(3)\n", (None, None)),  # a word, not torch.device
])
def test_scan_dates_a_module(text: str, scan):
    assert scan_text(text) == scan


def test_a_text_checked_alone_is_dated_by_itself():
    old = "from torch.autograd import Variable\nx = Variable(t, volatile=True)\n"
    assert text_versions(old) == ((0, 4), None)
    assert pinned_before(None, (0, 4), old) is True
    assert pinned_before(None, (0, 3), old) is False
    mixed = old + "print(x.sum().item())\n"
    assert text_versions(mixed) == ((0, 4), (0, 4))
    assert pinned_before(None, (1, 1), old) is True
    # .item() (0.4): the code runs on 0.4 and every later PyTorch, and is not dated for any
    assert pinned_before(None, (0, 4), mixed) is False
    assert pinned_before(None, (1, 1), mixed) is False
    assert pinned_before(None, (2, 0), mixed) is False
    newer = old + "import torch\nwith torch.inference_mode():\n    pass\n"
    assert pinned_before(None, (1, 1), newer) is False  # an API of 1.9
    assert pinned_before(None, (1, 1)) is False  # no text, no project


def test_a_project_is_dated_by_all_its_files(tmp_path: Path):
    (tmp_path / "setup.cfg").write_text("[metadata]\nname = x\n")
    (tmp_path / "data.py").write_text("from torch.autograd import Variable\n"
                                      "def batch(t, ev):\n    return Variable(t, volatile=ev)\n")
    (tmp_path / "train.py").write_text("import torch\nmodel = torch.nn.Linear(2, 2)\n")
    project = Project(tmp_path)
    assert code_versions(project) == ((0, 4), None)
    assert pinned_before(project, (0, 4)) is True
    assert pinned_before(project, (1, 1)) is True
    (tmp_path / "predict.py").write_text("import torch\n@torch.no_grad()\ndef predict(m, x):\n    return m(x)\n")
    assert code_versions(project) == ((0, 4), (0, 4))
    assert pinned_before(project, (0, 4)) is False
    assert pinned_before(project, (1, 1)) is False  # runs on 0.4 and later: not dated at all
    (tmp_path / "predict.py").unlink()
    checked = "loss = f(x)\nprint(loss.item())\n"  # the checked module, part of the program, uses .item()
    assert pinned_before(project, (1, 1), checked) is False
    assert pinned_before(project, (1, 1), scan=scan_text(checked)) is False
    (tmp_path / "predict.py").write_text("import torch\n@torch.no_grad()\ndef predict(m, x):\n    return m(x)\n")
    (tmp_path / "predict.py").write_text("import torch\n@torch.inference_mode()\ndef predict(m, x):\n    return m(x)\n")
    assert pinned_before(project, (1, 1)) is False  # an API of 1.9
    (tmp_path / "predict.py").unlink()
    (tmp_path / "requirements.txt").write_text("torch==1.0.0\n")  # a pin that allows 1.0: not before 0.4
    assert pinned_before(project, (0, 4)) is False
    assert pinned_before(project, (1, 1)) is True


def test_a_file_made_in_the_project_is_read_at_the_next_question(tmp_path: Path):
    """The listing of the project's files is kept while no directory of it changes."""
    (tmp_path / "setup.cfg").write_text("[metadata]\nname = x\n")
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "data.py").write_text("from torch.autograd import Variable\nv = Variable(t, volatile=True)\n")
    past = time.time_ns() - 60 * 10**9  # (a directory's time is coarse: the listing must be older)
    for d in (tmp_path, tmp_path / "pkg"):
        os.utime(d, ns=(past, past))
    project = Project(tmp_path)
    assert code_versions(project) == ((0, 4), None)
    (tmp_path / "pkg" / "predict.py").write_text("import torch\ndevice = torch.device('cpu')\n")
    assert code_versions(project) == ((0, 4), (0, 4))
    (tmp_path / "pkg" / "predict.py").unlink()
    assert code_versions(project) == ((0, 4), None)


@pytest.mark.parametrize(("dated", "newest", "since", "before"), [
    ((0, 4), None, (0, 4), True),
    ((0, 4), None, (1, 1), True),  # pure volatile code: dated for every version from 0.4 on
    ((0, 4), None, (2, 0), True),
    ((0, 4), (0, 4), (0, 4), False),  # .item() beside volatile=True: not dated, for any version
    ((0, 4), (0, 4), (1, 1), False),
    ((0, 4), (0, 4), (2, 0), False),
    ((0, 4), (0, 4, 0), (1, 1), False),
    ((0, 4), (1, 9), (1, 1), False),
    ((0, 4), (0, 3), (1, 1), True),  # an API older than the dating cancels nothing
    ((0, 4), None, (0, 3), False),  # before 0.4 is not before 0.3
    ((0, 4), None, (0, 4, 0), True),  # (versions compare padded with zeros)
    (None, None, (1, 1), False),
])
def test_a_dating_holds_unless_an_api_as_new_as_it_is_used(dated, newest, since, before):
    assert dates_before(dated, newest, since) is before


def test_a_lower_bound_cancels_the_code_dating_from_its_version(tmp_path: Path):
    """``torch>=1.4`` or ``torch>=0.4`` states the code runs on that version and later, as an
    API of it does: a file left with ``volatile=True`` does not date the project, for any
    version; a lower bound older than the dating cancels nothing, and an upper pin decides
    alone."""
    (tmp_path / "setup.cfg").write_text("[metadata]\nname = x\n")
    (tmp_path / "legacy.py").write_text("from torch.autograd import Variable\n"
                                        "def to_var(x):\n    return Variable(x, volatile=True)\n")
    (tmp_path / "requirements.txt").write_text("torch>=1.4\n")
    project = Project(tmp_path)
    assert pinned_before(project, (0, 4)) is False
    assert pinned_before(project, (1, 1)) is False
    (tmp_path / "requirements.txt").write_text("torch>=0.4\n")
    assert pinned_before(project, (0, 4)) is False
    assert pinned_before(project, (1, 1)) is False
    assert pinned_before(project, (2, 0)) is False
    (tmp_path / "requirements.txt").write_text("torch>=0.3\n")  # older than the dating
    assert pinned_before(project, (0, 4)) is True
    assert pinned_before(project, (1, 1)) is True
    (tmp_path / "requirements.txt").write_text("torch>=0.4\ntorch==1.4\n")
    assert pinned_before(project, (1, 1)) is False
    (tmp_path / "requirements.txt").write_text("torch>=0.4\ntorch==0.4.1\n")  # a version pinned
    assert pinned_before(project, (0, 4)) is False
    assert pinned_before(project, (1, 1)) is True
    (tmp_path / "requirements.txt").write_text("torch==0.4.1\n")
    assert pinned_before(project, (1, 1)) is True
