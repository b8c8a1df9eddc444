"""The PyTorch versions a project's dependency files allow.

Some rules depend on a behaviour that began with a PyTorch version (``[since]`` in
``knowledge/torch.toml``: ``scheduler.step()`` belongs after ``optimizer.step()`` from 1.1). A
project that pins an older PyTorch was written for the old behaviour, as ruff reads the Python
version a project supports from its ``requires-python``. :func:`torch_versions` reads the pins
in the dependency files at the project root (:data:`PIN_FILES`: ``requirements.txt``,
conda's ``environment.yml``, ``Dockerfile``, ``setup.py``, ``setup.cfg``, ``pyproject.toml``,
and the README, where a project states the environment it was written for:
``python==3.6 pytorch==0.4.0``),
through the project, which records them for the cache as it does imported modules; a pin is
``torch==X``, ``torch<=X``, ``torch<X`` or conda's ``pytorch=X`` (a lower bound alone,
``torch>=1.0``, allows every later version and says nothing).
"""

from __future__ import annotations

import re

#: The dependency files read, at the project root.
PIN_FILES = ("requirements.txt", "environment.yml", "environment.yaml", "Dockerfile", "setup.py", "setup.cfg",
             "pyproject.toml", "README.md", "README.rst", "README.txt", "README")
#: ``torch==0.4.1``, ``pytorch=0.4.1``, ``torch<1.0``: the package (not ``torchvision`` nor another
#: ``torch-*`` package), an operator that bounds the version from above, the version.
_PIN = re.compile(r"(?<![\w.-])(?:py)?torch(?![\w-])\s*(==|<=|<|=(?!=))\s*v?(\d+(?:\.\d+)*)", re.I)


_ANY = 1 << 30  # a version component a pin leaves out


def torch_versions(project) -> list[tuple[str, tuple[int, ...]]]:
    """``(operator, version)`` for each pin of PyTorch in the dependency files at the root of
    ``project`` (a :class:`~loopcheck.engine.project.Project`), in :data:`PIN_FILES` order; a
    file that is missing, too large or cannot be read pins nothing."""
    out = []
    root = project.root.resolve()
    for name in PIN_FILES:
        _stamp, text = project.source_of(root / name)
        if text is None:
            continue
        for m in _PIN.finditer(text):
            out.append((m.group(1), tuple(int(p) for p in m.group(2).split("."))))
    return out


def pinned_before(project, since: tuple[int, ...]) -> bool:
    """Whether ``project`` (``None``: a text checked alone) pins PyTorch, and every pin allows
    only versions older than ``since`` (``torch==0.4.1`` for 1.1; ``torch<1.1`` too;
    ``torch<1.2`` does not). ``False`` without a project or a pin."""
    if project is None:
        return False
    pins = torch_versions(project)
    return bool(pins) and all(_older(op, version, since) for op, version in pins)


def _older(op: str, version: tuple[int, ...], since: tuple[int, ...]) -> bool:
    """Whether every version ``op version`` allows is older than ``since``. A pin names a
    prefix of the versions it allows (conda's ``pytorch=1`` is ``1.*``, and pip's ``torch==1.*``
    reads as ``1``): the components it leaves out may be anything, taken as their largest."""
    width = max(len(version), len(since))
    s = since + (0,) * (width - len(since))
    if op == "<":
        return version + (0,) * (width - len(version)) <= s
    return version + (_ANY,) * (width - len(version)) < s
