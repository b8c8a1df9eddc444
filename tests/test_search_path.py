"""An absolute import of the project's own module that the script's search path cannot reach
raises ImportError: the file's code after it never runs (loopcheck/engine/search_path.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from loopcheck.engine.import_failure import failing_import
from loopcheck.engine.project import Project
from loopcheck.engine.search_path import folders_before

HEAD = "import os\nimport sys\n\nROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))\n"
UTIL = {"model/model_util.py": "NUM_BINS = 12\n"}


def write(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def reason(tmp_path: Path, files: dict[str, str], script: str = "train/evaluate.py") -> str | None:
    write(tmp_path, files)
    path = tmp_path / script
    found = failing_import(Project(tmp_path), path.read_text(), str(path))
    return found.reason if found else None


def script(*lines: str, head: str = HEAD) -> str:
    return head + "\n".join(lines) + "\nfrom model_util import NUM_BINS\n"


def test_the_module_in_a_folder_the_script_never_puts_on_its_path(tmp_path: Path):
    found = reason(tmp_path, {**UTIL, "train/evaluate.py": script(
        "sys.path.append(os.path.join(ROOT, 'models'))")})
    assert found == ("no module 'model_util' on the script's search path (train, models); "
                     "the project's is model/model_util.py")


def test_no_path_change_at_all(tmp_path: Path):
    found = reason(tmp_path, {**UTIL, "train/evaluate.py": "import torch\nfrom model_util import NUM_BINS\n"})
    assert found is not None and "model/model_util.py" in found


@pytest.mark.parametrize("change", [
    "sys.path.append(os.path.join(ROOT, 'model'))",
    "sys.path.insert(0, ROOT + '/model')",
    "sys.path.extend([os.path.join(ROOT, 'model')])",
    "from pathlib import Path\nsys.path.append(str(Path(__file__).resolve().parents[1] / 'model'))",
    "from os.path import join, dirname\nsys.path.append(join(dirname(dirname(__file__)), 'model'))",
])
def test_the_right_folder_appended(tmp_path: Path, change: str):
    assert reason(tmp_path, {**UTIL, "train/evaluate.py": script(change)}) is None


@pytest.mark.parametrize("change", [
    "sys.path.append('../models')",  # relative: the current directory decides
    "sys.path.append(os.getcwd())",
    "sys.path.append(os.environ['MODEL_DIR'])",
    "sys.path = [os.path.join(ROOT, 'models')] + sys.path",
    "if os.name == 'nt':\n    ROOT = 'C:/work'\nsys.path.append(os.path.join(ROOT, 'models'))",
    "import site\nsite.addsitedir(os.path.join(ROOT, 'models'))",
    "def add(d):\n    sys.path.append(d)\nadd(os.path.join(ROOT, 'models'))",
])
def test_a_search_path_not_read_to_its_folders(tmp_path: Path, change: str):
    assert reason(tmp_path, {**UTIL, "train/evaluate.py": script(change)}) is None


def test_a_membership_test_reads_the_path(tmp_path: Path):
    found = reason(tmp_path, {**UTIL, "train/evaluate.py": script(
        "MODELS = os.path.join(ROOT, 'models')\nif MODELS not in sys.path:\n    sys.path.append(MODELS)")})
    assert found is not None


def test_sys_under_another_name(tmp_path: Path):
    found = reason(tmp_path, {**UTIL, "train/evaluate.py": script(
        "import sys as _sys\n_sys.path.append(os.path.join(ROOT, 'model'))")})
    assert found is None


def test_an_import_inside_try_is_caught(tmp_path: Path):
    body = HEAD + "try:\n    from model_util import NUM_BINS\nexcept ImportError:\n    NUM_BINS = 12\n"
    assert reason(tmp_path, {**UTIL, "train/evaluate.py": body}) is None


def test_a_name_the_project_does_not_hold(tmp_path: Path):
    text = HEAD + "from easydict import EasyDict\n"
    assert reason(tmp_path, {**UTIL, "train/evaluate.py": text}) is None


def test_a_standard_library_or_known_library_name(tmp_path: Path):
    files = {"tools/json.py": "X = 1\n", "tools/numpy.py": "X = 1\n",
             "train/evaluate.py": "import json\nimport numpy\n"}
    assert reason(tmp_path, files) is None


def test_a_name_the_requirements_list(tmp_path: Path):
    files = {**UTIL, "requirements.txt": "torch>=1.8\nmodel-util==0.1\n", "train/evaluate.py": script()}
    assert reason(tmp_path, files) is None


@pytest.mark.parametrize("name, text", [
    ("scripts/eval.sh", "PYTHONPATH=model python train/evaluate.py\n"),
    (".env", "PYTHONPATH=./model\n"),
    (".vscode/launch.json", '{"configurations": [{"env": {"PYTHONPATH": "${workspaceFolder}/model"}}]}\n'),
    ("pyproject.toml", "[tool.pytest.ini_options]\npythonpath = ['model']\n"),
    (".idea/repo.iml", '<content url="file://$MODULE_DIR$"><sourceFolder url="file://$MODULE_DIR$/model" /></content>\n'),
    ("README.md", "Run `export PYTHONPATH=$PWD/model` first.\n"),
])
def test_a_repository_that_sets_pythonpath(tmp_path: Path, name: str, text: str):
    assert reason(tmp_path, {**UTIL, name: text, "train/evaluate.py": script()}) is None


@pytest.mark.parametrize("name, text", [
    ("model/setup.py", "from setuptools import setup\nsetup(name='m', py_modules=['model_util'])\n"),
    ("setup.py", "from setuptools import setup\nsetup(name='m', package_dir={'': 'model'}, py_modules=['model_util'])\n"),
])
def test_a_module_packaging_installs(tmp_path: Path, name: str, text: str):
    assert reason(tmp_path, {**UTIL, name: text, "train/evaluate.py": script()}) is None


def test_packaging_that_names_another_folder(tmp_path: Path):
    files = {**UTIL, "setup.py": "from setuptools import setup, find_packages\nsetup(name='x', packages=find_packages('lib'))\n",
             "train/evaluate.py": script()}
    assert reason(tmp_path, files) is not None


def test_a_module_at_a_folder_the_engine_looks_in(tmp_path: Path):
    """A module at the root (``python -m train.evaluate`` from there finds it; so does an
    editor's run that puts the root on the path) is not decided."""
    files = {"model_util.py": "NUM_BINS = 12\n", "train/__init__.py": "", "train/evaluate.py": script()}
    assert reason(tmp_path, files) is None


def test_a_script_of_a_package_with_the_module_elsewhere(tmp_path: Path):
    """Run as ``python -m train.evaluate``, the root is on the path, and it holds no
    ``model_util`` either."""
    files = {**UTIL, "train/__init__.py": "", "train/evaluate.py": script()}
    assert reason(tmp_path, files) is not None


def test_a_project_module_loaded_before_moves_the_path(tmp_path: Path):
    files = {**UTIL, "train/paths.py": "import os, sys\nsys.path.append(os.path.join(os.path.dirname(__file__), '..', 'model'))\n",
             "train/evaluate.py": "import paths\nfrom model_util import NUM_BINS\n"}
    assert reason(tmp_path, files) is None


def test_a_module_the_gitignore_keeps_out_of_the_scripts_folder(tmp_path: Path):
    files = {**UTIL, ".gitignore": "train/model_util.py\n", "train/evaluate.py": script()}
    assert reason(tmp_path, files) is None


def test_a_notebook_is_not_decided(tmp_path: Path):
    write(tmp_path, UTIL)
    path = tmp_path / "train" / "evaluate.ipynb"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("{}")
    assert failing_import(Project(tmp_path), script(), str(path)) is None


def test_folders_before_each_statement(tmp_path: Path):
    entry = tmp_path / "train" / "evaluate.py"
    text = HEAD + "sys.path.append(os.path.join(ROOT, 'models'))\nimport a\nsys.path.append('rel')\nimport b\n"
    folders = folders_before(text, entry)
    assert folders[5] == (entry.parent,)
    assert folders[6] == (entry.parent, tmp_path / "models")
    assert folders[8] is None


def test_a_sibling_of_a_package_module_python_2_finds(tmp_path: Path):
    """In Python 2, ``from squad_eval import f1`` in ``helpers/generic.py`` (loaded as
    ``helpers.generic``) is an implicit relative import of ``helpers.squad_eval``."""
    files = {"helpers/__init__.py": "", "helpers/squad_eval.py": "def f1():\n    pass\n",
             "helpers/generic.py": "from squad_eval import f1\n", "train.py": "from helpers.generic import f1\n"}
    assert reason(tmp_path, files, "train.py") is None


def test_a_package_module_that_imports_a_module_off_the_path(tmp_path: Path):
    files = {**UTIL, "helpers/__init__.py": "", "helpers/generic.py": "from model_util import NUM_BINS\n",
             "train.py": "from helpers.generic import NUM_BINS\n"}
    assert reason(tmp_path, files, "train.py") == (
        "no module 'model_util' on the script's search path (., helpers); the project's is model/model_util.py")
