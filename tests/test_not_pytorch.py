"""Only PyTorch code is checked for training rules: a file that imports no package built on
PyTorch, directly or through the project's modules, gives no LC1xx-LC9xx finding."""

from __future__ import annotations

import json

import pytest

from loopcheck.analysis import check_source, uses_torch
from loopcheck.engine.knowledge import Knowledge, KnowledgeError, knowledge
from loopcheck.engine.project import Project
from loopcheck.workspace.notebook import check_notebook, read_notebook

EVAL_LOOP = """
def inference(model, images):
    model.eval()
    outputs = []
    for img in images:
        outputs.append(model(img))
    return outputs
"""


@pytest.mark.parametrize("head, checked", [
    ("import torch\n", True),
    ("import os, torch.nn as nn\n", True),
    ("from torch import nn\n", True),
    ("import lightning as L\n", True),
    ("from transformers import AutoModel\n", True),
    ("import timm\n", True),
    ("def f():\n    import torch\n", True),
    ("import megengine as mge\n", False),
    ("import jax.numpy as jnp\n", False),
    ("import tensorflow as tf\n", False),
    ("import torchy\n", False),
    ("", False),
])
def test_direct_imports(head, checked):
    assert uses_torch(head + EVAL_LOOP) is checked
    codes = {f.code for f in check_source(head + EVAL_LOOP, "snippet.py")}
    assert codes == ({"LC302"} if checked else set())


def test_through_project_modules(tmp_path):
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "nets.py").write_text("import torch.nn as nn\n")
    (tmp_path / "pkg" / "build.py").write_text("from .nets import nn\n")
    (tmp_path / "pkg" / "infer.py").write_text("from . import build\n" + EVAL_LOOP)
    (tmp_path / "jaxnets.py").write_text("import jax\n")
    (tmp_path / "cycle_a.py").write_text("import cycle_b\n")
    (tmp_path / "cycle_b.py").write_text("import cycle_a\n")
    project = Project(tmp_path)
    infer = tmp_path / "pkg" / "infer.py"
    assert uses_torch(infer.read_text(), str(infer), project)
    assert [f.code for f in check_source(infer.read_text(), str(infer), project=project)] == ["LC302"]
    for head in ("import jaxnets\n", "import cycle_a\n"):
        script = tmp_path / "script.py"
        script.write_text(head + EVAL_LOOP)
        assert not uses_torch(script.read_text(), str(script), project)
        assert check_source(script.read_text(), str(script), project=project) == []


def test_another_framework_imported_itself(tmp_path):
    """A file that imports another framework itself (``[packages] other``) and PyTorch only
    through a project module is that framework's code; one that imports torch itself too is
    still PyTorch code."""
    (tmp_path / "tools.py").write_text("import torch.distributed as dist\n")
    project = Project(tmp_path)
    script = tmp_path / "demo.py"
    for head, checked in (("import megengine as mge\nimport tools\n", False),
                          ("import jax\nimport tools\n", False),
                          ("import tools\n", True),
                          ("import megengine as mge\nimport torch\nimport tools\n", True)):
        script.write_text(head + EVAL_LOOP)
        assert uses_torch(script.read_text(), str(script), project) is checked


def test_syntax_errors_are_still_reported():
    found = check_source("import jax\nmodel.eval(\n", "broken.py")
    assert [f.code for f in found] == ["LC001"]


def _notebook(first_cell: str):
    cells = [first_cell, "model.eval()\nouts = []\nfor img in images:\n    outs.append(model(img))\n"]
    return read_notebook(json.dumps({"cells": [
        {"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": None, "source": c} for c in cells
    ], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}))


def test_notebooks_read_the_imports_of_every_cell():
    torch_nb = _notebook("import torch\nmodel = torch.nn.Linear(2, 2)\nimages = [torch.randn(2)]\n")
    assert [f.code for f in check_notebook(torch_nb, "nb.ipynb")[0]] == ["LC302"]
    other = _notebook("import megengine as mge\nmodel = mge.module.Linear(2, 2)\nimages = []\n")
    assert check_notebook(other, "nb.ipynb")[0] == []


def test_packages_are_knowledge():
    assert {"torch", "torchvision", "lightning", "transformers", "timm", "accelerate", "deepspeed"} <= knowledge().torch_packages
    with pytest.raises(KnowledgeError, match="packages"):
        Knowledge().load('[packages]\njax = ["jax"]\n', "test.toml")
