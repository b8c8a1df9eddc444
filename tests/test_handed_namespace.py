"""The options of an ``argparse`` namespace handed to a function's parameter at every call the
project makes of it (:func:`loopcheck.engine.values.handed_defaults`), the calls read from the
project's files (:func:`loopcheck.engine.callers.call_sites`), and the tests such values
decide (:func:`loopcheck.engine.settings.setting_truth`, :func:`~loopcheck.engine.settings.ruled_out`)."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from loopcheck.analysis import check_source
from loopcheck.engine.callers import CallSite, call_sites
from loopcheck.engine.project import Project
from loopcheck.engine.unreferenced import calling_files
from loopcheck.engine.values import handed_defaults

TRAIN = """\
import argparse


def train(args, model=None):
    model.train()
    return args.accum, args.rank, args.lr, args.out


def options(rank=-1):
    parser = argparse.ArgumentParser()
    parser.add_argument("--accum", type=int, default=1)
    parser.add_argument("--rank", type=int, default=rank)
    parser.add_argument("--lr", type=float, default=0.1)
    parser.add_argument("--out", type=str)
    return parser
"""

MAIN = """\


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--accum", type=int, default=1)
    parser.add_argument("--rank", type=int, default=-1)
    parser.add_argument("--lr", type=float, default=0.1)
    parser.add_argument("--out", type=str)
    args = parser.parse_args()
    args.lr = 0.5
{BODY}


if __name__ == "__main__":
    main()
"""


def _index(tmp_path: Path, body: str, after: str = "", others: dict | None = None, script: bool = True):
    (tmp_path / "pyproject.toml").write_text("")
    source = TRAIN + MAIN.replace("{BODY}", textwrap.indent(textwrap.dedent(body), "    ")) + after
    if not script:
        source = source.replace('if __name__ == "__main__":\n    main()\n', "")
    path = tmp_path / "run.py"
    path.write_text(source)
    for name, text in (others or {}).items():
        (tmp_path / name).write_text(textwrap.dedent(text))
    project = Project(tmp_path)
    return project, project.load(path).index, path


def _handed(tmp_path: Path, body: str, after: str = "", others: dict | None = None, script: bool = True) -> dict:
    _project, index, _path = _index(tmp_path, body, after, others, script)
    return handed_defaults(index, index.functions["train"])


#: What ``main``'s namespace fixes: ``--lr`` is set by ``main``, ``--out`` has no default.
KNOWN = {"args.accum": 1, "args.rank": -1}


@pytest.mark.parametrize("body, after, expected", [
    ("train(args, 1)", "", KNOWN),
    ("train(model=1, args=args)", "", KNOWN),
    ("train(args)\ntrain(args, 2)", "", KNOWN),
    # a namespace set up by a function of the project it is handed to
    ("setup(args)\ntrain(args)", "\n\ndef setup(ns):\n    ns.accum = 4\n", {"args.rank": -1}),
    ("setup(args)\ntrain(args)", "\n\ndef setup(ns):\n    setattr(ns, 'accum', 4)\n", {}),
    ("setup(args)\ntrain(args)", "\n\ndef setup(ns):\n    return ns.accum\n", KNOWN),
    # handed down through another function of the project
    ("run(args)", "\n\ndef run(opts):\n    train(opts)\n", KNOWN),
    # another caller whose namespace gives ``--rank`` another default
    ("train(args)", "\n\ndef launch():\n    train(options(0).parse_args())\n", {}),
    ("train(args)", "\n\ndef launch():\n    ns = options(0).parse_args()\n    train(ns)\n", {}),
    ("train(args)",
     "\n\ndef launch():\n    parser = argparse.ArgumentParser()\n    parser.add_argument('--accum', default=1)\n"
     "    parser.add_argument('--rank', default=0)\n    ns = parser.parse_args()\n    train(ns)\n",
     {"args.accum": 1}),
    # the function as a value, or called with unpacked arguments: what it is given is not known
    ("train(args)\nhooks = [train]", "", {}),
    ("train(*[args])", "", {}),
    ("train(**{'args': args})", "", {}),
    ("train()", "", {}),
    ("train(get())", "", {}),
    ("train(args.sub)", "", {}),
])
def test_handed_defaults(tmp_path: Path, body: str, after: str, expected: dict):
    assert _handed(tmp_path, body, after) == expected


def test_a_function_that_binds_or_writes_its_namespace(tmp_path: Path):
    """``train`` writing ``args.accum`` keeps the other options; binding ``args`` again, none."""
    project, index, _path = _index(tmp_path, "train(args)")
    source = (tmp_path / "run.py").read_text()
    (tmp_path / "run.py").write_text(source.replace("    model.train()\n", "    args.accum = 2\n"))
    project = Project(tmp_path)
    index = project.load(tmp_path / "run.py").index
    assert handed_defaults(index, index.functions["train"]) == {"args.rank": -1}
    (tmp_path / "run.py").write_text(source.replace("    model.train()\n", "    args = copy(args)\n"))
    project = Project(tmp_path)
    index = project.load(tmp_path / "run.py").index
    assert handed_defaults(index, index.functions["train"]) == {}


def test_only_a_function_the_project_alone_can_call(tmp_path: Path):
    """A module without a ``__main__`` block: its public ``train`` may be called by code
    outside the project; a document naming it through its module may run it."""
    assert _handed(tmp_path, "train(args)", script=False) == {}
    assert _handed(tmp_path, "train(args)", others={"README.md": "python -c 'from run import train'\n"}) == {}


def test_calls_from_another_file(tmp_path: Path):
    """A file that imports the script and calls its ``train`` with a namespace of its own."""
    other = """\
    import argparse
    import run

    parser = argparse.ArgumentParser()
    parser.add_argument("--accum", type=int, default={ACCUM})
    parser.add_argument("--rank", type=int, default=-1)
    args = parser.parse_args()
    run.train(args)
    """
    same = _handed(tmp_path, "train(args)", others={"other.py": other.replace("{ACCUM}", "1")})
    assert same == KNOWN
    differs = _handed(tmp_path, "train(args)", others={"other.py": other.replace("{ACCUM}", "4")})
    assert differs == {"args.rank": -1}


def test_call_sites(tmp_path: Path):
    """Each call of ``train`` with the names it passes; ``model.train()`` is a method of an
    object; a mention that is not a call leaves the calls unknown."""
    project, index, path = _index(tmp_path, "train(args, m)\ntrain(*xs, model=m)")
    files = calling_files(project, index, index.functions["train"])
    assert files == [path.resolve()]
    assert call_sites(project, files, path, "train") == [
        CallSite(path.resolve(), ("function", "main"), ("args", "m"), ()),
        CallSite(path.resolve(), ("function", "main"), ("*",), (("model", "m"),)),
    ]
    project, index, path = _index(tmp_path, "train(args)", after="\n\nclass A:\n    def go(self):\n        train(1)\n")
    assert call_sites(project, [path.resolve()], path, "train") is None


LOOP = """\
import argparse

import torch
from torch import nn
from torch.utils.data import DataLoader, RandomSampler, TensorDataset
from torch.utils.data.distributed import DistributedSampler


def train(args, dataset, model):
    {SAMPLER}
    loader = DataLoader(dataset, sampler=sampler, batch_size=8)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for epoch in range(2):
        for x, y in loader:
            optimizer.zero_grad()
            nn.functional.cross_entropy(model(x), y).backward()
            optimizer.step()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--local_rank", type=int, default={RANK})
    parser.add_argument("--world", type=int, default=1)
    args = parser.parse_args()
    train(args, TensorDataset(torch.randn(16, 4), torch.randint(0, 2, (16,))), nn.Linear(4, 2))


if __name__ == "__main__":
    main()
"""


@pytest.mark.parametrize("sampler, rank, reported", [
    ("sampler = RandomSampler(dataset) if args.local_rank == -1 else DistributedSampler(dataset)", -1, False),
    ("sampler = RandomSampler(dataset) if args.local_rank == -1 else DistributedSampler(dataset)", 0, True),
    ("sampler = DistributedSampler(dataset) if args.local_rank != -1 else RandomSampler(dataset)", -1, False),
    ("sampler = DistributedSampler(dataset) if args.local_rank in [0, 1] else RandomSampler(dataset)", -1, False),
    ("sampler = DistributedSampler(dataset) if args.local_rank in [-1, 0] else RandomSampler(dataset)", -1, True),
    ("sampler = DistributedSampler(dataset) if args.local_rank > -1 and args.world > 1 else None", -1, False),
    ("sampler = DistributedSampler(dataset) if args.local_rank > -1 or args.world > 1 else None", -1, False),
    ("sampler = DistributedSampler(dataset) if args.local_rank > -1 or args.world else None", -1, True),
    ("sampler = DistributedSampler(dataset) if args.local_rank > -1 or args.other else None", -1, True),
    ("sampler = None\n    if args.local_rank != -1:\n        sampler = DistributedSampler(dataset)", -1, False),
    ("sampler = None\n    if args.local_rank == -1:\n        pass\n    else:\n        sampler = DistributedSampler(dataset)",
     -1, False),
    ("sampler = None\n    if args.local_rank == -1:\n        pass\n    elif args.world:\n"
     "        sampler = DistributedSampler(dataset)", -1, False),
    ("sampler = None\n    if args.local_rank == -1:\n        sampler = DistributedSampler(dataset)", -1, True),
])
def test_a_sampler_built_in_an_arm_the_defaults_never_take(tmp_path: Path, sampler: str, rank: int, reported: bool):
    """LC901 through :func:`~loopcheck.engine.settings.ruled_out`: the options ``main`` parses
    decide the test that chooses the sampler in ``train``."""
    (tmp_path / "pyproject.toml").write_text("")
    source = LOOP.replace("{SAMPLER}", sampler).replace("{RANK}", str(rank))
    path = tmp_path / "run.py"
    path.write_text(source)
    codes = [f.code for f in check_source(source, str(path)) if f.code == "LC901"]
    assert codes == (["LC901"] if reported else [])
