"""A module whose top-level import the project's files prove to fail never runs its training
loop: no finding there (loopcheck/engine/import_failure.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from loopcheck.analysis import check_source
from loopcheck.engine.import_failure import ImportFailure, failing_import
from loopcheck.engine.project import Project

# A training loop with a real bug (LC101: clipping before backward) after the imports.
LOOP = """
import torch

model = torch.nn.Linear(4, 2)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for x, y in [(torch.randn(8, 4), torch.randint(0, 2, (8,)))] * 3:
    optimizer.zero_grad()
    loss = torch.nn.functional.cross_entropy(model(x), y)
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    loss.backward()
    optimizer.step()
"""


def write(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def failure(tmp_path: Path, files: dict[str, str], script: str = "train.py") -> ImportFailure | None:
    write(tmp_path, files)
    path = tmp_path / script
    return failing_import(Project(tmp_path), path.read_text(), str(path))


def test_a_name_the_project_module_does_not_define(tmp_path: Path):
    found = failure(tmp_path, {
        "pkg/__init__.py": "",
        "pkg/common.py": "def verification_test():\n    pass\n",
        "train.py": "import os\nfrom pkg.common import verification_test, create_optimizer\n",
    })
    assert found == ImportFailure(2, "pkg/common.py defines no name 'create_optimizer'")


def test_a_syntax_error_two_imports_deep(tmp_path: Path):
    found = failure(tmp_path, {
        "models/__init__.py": "import models.losses as losses\n",
        "models/losses.py": "from evaluation.metrics import eer\n",
        "evaluation/__init__.py": "",
        "evaluation/metrics.py": "<<<<<<< HEAD\ndef eer():\n    pass\n=======\n>>>>>>> branch\n",
        "train.py": "from models.resnet import ResNet\n",
        "models/resnet.py": "class ResNet:\n    pass\n",
    })
    assert found == ImportFailure(1, "evaluation/metrics.py does not compile (SyntaxError)")


def test_a_submodule_the_package_does_not_hold(tmp_path: Path):
    found = failure(tmp_path, {
        "pkg/__init__.py": "",
        "pkg/utils/__init__.py": "",
        "pkg/utils/io.py": "",
        "train.py": "import pkg.utils.logs\n",
    })
    assert found == ImportFailure(1, "no module 'pkg.utils.logs': pkg/utils holds no logs.py")



@pytest.mark.parametrize("init", [
    "from .layers import *\n",  # a star import binds names, never a submodule
    "def __getattr__(name):\n    return 0\n",  # nor does a module __getattr__
    "def count(model):\n    return len(list(model.modules()))\n",  # a call .modules() is no sys.modules
    "import sys as _sys\nsetattr(_sys.modules[__name__], 'x', 1)\n",  # reads sys.modules
    "import sys\nHAS_APEX = 'apex' in sys.modules or sys.modules.get('amp') is not None\n",
    "class Config:\n    def update(self, **kw):\n        self.__dict__.update(kw)\n        vars(self)\n",
    # registers another name than pkg.data
    "import sys\nfrom . import layers\nsys.modules['pkg.Layers'] = layers\n",
])
def test_a_submodule_missing_from_a_package_that_binds_names_unseen(tmp_path: Path, init: str):
    found = failure(tmp_path, {
        "pkg/__init__.py": init,
        "pkg/layers.py": "class Head:\n    pass\n",
        "train.py": "from pkg.data import Loader\n",
    })
    assert found == ImportFailure(1, "no module 'pkg.data': pkg holds no data.py")


@pytest.mark.parametrize("files", [
    {"pkg/__init__.py": "import sys\nsys.modules[__name__ + '.data'] = sys.modules[__name__]\n"},
    {"pkg/__init__.py": "import sys\nfrom .finder import Finder\nsys.meta_path.append(Finder())\n"},
    {"pkg/__init__.py": "from sys import modules\n"},
    {"pkg/__init__.py": "import sys\nfrom . import layers\nsys.modules['pkg.data'] = layers\n"},
    {"pkg/__init__.py": "import sys as _s\n_s.modules.setdefault('pkg.data', _s.modules[__name__])\n"},
    {"pkg/__init__.py": "exec(open('plugins.py').read())\n"},
    # a module the package imports (star-imported or not) registers it
    {"pkg/__init__.py": "from .layers import *\n",
     "pkg/layers.py": "import sys, types\nsys.modules['pkg.data'] = types.ModuleType('pkg.data')\n"},
    # the script itself registers it before the import
    {"train.py": "import sys, types\nsys.modules['pkg.data'] = types.ModuleType('pkg.data')\n"
                 "from pkg.data import Loader\n"},
])
def test_a_submodule_that_code_run_before_may_register_is_not_decided(tmp_path: Path, files: dict):
    assert failure(tmp_path, {
        "pkg/__init__.py": "",
        "pkg/finder.py": "class Finder:\n    pass\n",
        "pkg/layers.py": "class Head:\n    pass\n",
        "train.py": "from pkg.data import Loader\n",
        **files,
    }) is None

def test_a_relative_import_of_a_module_the_package_does_not_hold(tmp_path: Path):
    found = failure(tmp_path, {
        "asr/__init__.py": "",
        "asr/utils/__init__.py": "",
        "asr/models/__init__.py": "",
        "asr/models/ce/__init__.py": "",
        "asr/models/ce/train.py": "from ..utils.dataset import AudioDataset\n",
    }, "asr/models/ce/train.py")
    assert found == ImportFailure(1, "no module 'asr.models.utils': asr/models holds no utils.py")


@pytest.mark.parametrize("init", [
    "",  # core/ a namespace package: ``from core import models`` imports core.models
    "x = 1\n",  # core/__init__.py binds no name ``models``: the same
])
def test_a_submodule_imported_by_from_whose_package_imports_a_missing_module(tmp_path: Path, init: str):
    files = {
        "core/models/__init__.py": "from .gan import *\nfrom .content import *\n",
        "core/models/gan.py": "class Generator:\n    pass\n",
        "train.py": "import os\nfrom core import models\n",
    }
    if init:
        files["core/__init__.py"] = init
    found = failure(tmp_path, files)
    assert found == ImportFailure(2, "no module 'core.models.content': core/models holds no content.py")


def test_a_script_importing_a_package_whose_import_fails_fails_too(tmp_path: Path):
    # followed through each package's __init__, with relative names taken from where it is loaded
    found = failure(tmp_path, {
        "core/__init__.py": "",
        "core/models/__init__.py": "from .gan import Generator\n",
        "core/models/gan.py": "from ..layers import norm\nclass Generator:\n    pass\n",
        "core/utils/__init__.py": "from ..models import Generator\n",
        "train.py": "from core.utils import Generator\n",
    })
    assert found == ImportFailure(1, "no module 'core.layers': core holds no layers.py")


@pytest.mark.parametrize("files", [
    # the missing module's import is under try/except ImportError, or in a function
    {"core/models/__init__.py": "from .gan import *\ntry:\n    from .content import *\nexcept ImportError:\n    pass\n"},
    {"core/models/__init__.py": "from .gan import *\ndef load():\n    from .content import Net\n"},
    # an absolute name that is no project module: a library's, which may be installed
    {"core/models/__init__.py": "from .gan import *\nfrom content import *\n"},
    # the package binds the name: ``from core import models`` takes it, importing no submodule
    {"core/__init__.py": "models = None\n", "core/models/__init__.py": "from .content import *\n"},
    # a star import binds it
    {"core/__init__.py": "from .base import *\n", "core/base.py": "models = None\n",
     "core/models/__init__.py": "from .content import *\n"},
    # a name no directory of the namespace package holds: another portion of it may
    {"train.py": "from core import content\n"},
])
def test_a_submodule_imported_by_from_not_proven_to_fail(tmp_path: Path, files: dict):
    assert failure(tmp_path, {
        "core/models/__init__.py": "from .gan import *\n",
        "core/models/gan.py": "class Generator:\n    pass\n",
        "train.py": "from core import models\n",
        **files,
    }) is None


def test_relative_names_within_the_package_a_module_is_loaded_into():
    from loopcheck.engine.import_failure import _within

    assert _within(".content", "core.models") == "core.models.content"
    assert _within("..layers", "core.models") == "core.layers"
    assert _within(".", "core.models") == "core.models"
    assert _within("..", "core") == ""  # above the top package
    assert _within(".x", "") == ""  # a top-level module has no package


@pytest.mark.parametrize("module", [
    "from numpy import *\n",  # a star import of a library's module may bind it
    "from .helpers import *\nfrom numpy import *\n",
    "from .helpers import *\n",  # a star import of a project module that may bind names unseen
    "def __getattr__(name):\n    return 0\n",  # a module __getattr__
    "globals()['create_optimizer'] = object\n",
    "import sys\nsetattr(sys.modules[__name__], 'create_optimizer', 1)\n",
    "def setup():\n    global create_optimizer\n    create_optimizer = 1\n",
    "try:\n    from fast import create_optimizer\nexcept ImportError:\n    create_optimizer = None\n",
    "if True:\n    def create_optimizer():\n        pass\n",
])
def test_a_name_that_may_be_bound_is_not_decided(tmp_path: Path, module: str):
    assert failure(tmp_path, {
        "pkg/__init__.py": "",
        "pkg/helpers.py": "import sys\nsetattr(sys.modules[__name__], 'x', 1)\n",
        "pkg/common.py": module,
        "train.py": "from pkg.common import create_optimizer\n",
    }) is None


@pytest.mark.parametrize("helpers, decided", [
    ("def create_optimizer():\n    pass\n", False),  # the star import binds it
    ("__all__ = ['_create_optimizer']\n_create_optimizer = None\n", False),  # ... through __all__
    ("from pkg.more import *\n", False),  # ... through a chain of star imports
    ("def _create_optimizer():\n    pass\n", True),  # a private name: no star import binds it
    ("__all__ = ['make']\ndef create_optimizer():\n    pass\ndef make():\n    pass\n", True),
    ("", True),
])
def test_a_name_star_imports_of_project_modules_do_not_bind(tmp_path: Path, helpers: str, decided: bool):
    found = failure(tmp_path, {
        "pkg/__init__.py": "",
        "pkg/helpers.py": helpers,
        "pkg/more.py": "create_optimizer = _create_optimizer = None\n",
        "pkg/common.py": "from .helpers import *\n",
        "train.py": "from pkg.common import _create_optimizer\n" if "_create" in helpers
        else "from pkg.common import create_optimizer\n",
    })
    assert (found is not None) == decided
    if decided:
        assert found.reason.startswith("pkg/common.py defines no name")


def test_a_star_import_of_a_package_may_bind_its_submodules(tmp_path: Path):
    # ``from pkg import *`` (no ``__all__``) binds the public submodules loaded so far
    assert failure(tmp_path, {
        "pkg/__init__.py": "",
        "pkg/tools.py": "",
        "other.py": "from pkg import *\n",
        "train.py": "import pkg.tools\nfrom other import tools\n",
    }) is None


@pytest.mark.parametrize("script", [
    "try:\n    from pkg.common import missing\nexcept ImportError:\n    missing = None\n",
    "if False:\n    from pkg.common import missing\n",
    "def main():\n    from pkg.common import missing\n",
    "from torch.optim import NotAnOptimizer\n",  # a library's module: not the project's to decide
    "from torch import nn\n",  # a file named like a library (torch.py beside it) is not decided
    "from pkg import common, helpers\n",  # submodules of the package
    "from pkg.a import f\n",  # an import cycle that works
    "from ns.inner.mod import g\n",  # through a namespace package
    "from .common import missing\n",  # a relative import in a file of no package
])
def test_imports_not_proven_to_fail(tmp_path: Path, script: str):
    assert failure(tmp_path, {
        "pkg/__init__.py": "",
        "pkg/helpers.py": "",
        "pkg/common.py": "x = 1\n",
        "pkg/a.py": "from pkg.b import g\ndef f():\n    pass\n",
        "pkg/b.py": "from pkg.a import f\ndef g():\n    pass\n",
        "ns/inner/mod.py": "def g():\n    pass\n",
        "torch.py": "x = 1\n",
        "train.py": script,
    }) is None


def test_a_loop_whose_import_fails_is_silent_and_reported_once_fixed(tmp_path: Path):
    write(tmp_path, {
        "pkg/__init__.py": "",
        "pkg/optim.py": "def create_scheduler(optimizer):\n    return None\n",
    })
    train = tmp_path / "train.py"
    broken = "from pkg.optim import create_optimizer\n" + LOOP
    assert check_source(broken, str(train)) == []
    fixed = "from pkg.optim import create_scheduler\n" + LOOP
    assert [(f.code, f.row) for f in check_source(fixed, str(train))] == [("LC101", 10)]


def test_a_syntax_error_of_the_file_itself_is_still_lc001(tmp_path: Path):
    write(tmp_path, {"pkg/__init__.py": "", "pkg/optim.py": ""})
    text = "from pkg.optim import create_optimizer\n" + LOOP + "def f(:\n    pass\n"
    assert [f.code for f in check_source(text, str(tmp_path / "train.py"))] == ["LC001"]


def test_what_the_running_script_would_not_take_for_the_project_is_not_decided(tmp_path: Path):
    # a package module named like the standard library does not shadow it for the others
    # (Python looks absolute names up from the script's sys.path): pkg/typing.py lacks Any
    assert failure(tmp_path, {
        "pkg/__init__.py": "from pkg.frame import Frame\n",
        "pkg/typing.py": "Metric = str\n",
        "pkg/frame.py": "from typing import Any\nclass Frame:\n    pass\n",
        "train.py": "from pkg import Frame\n",
    }) is None


def test_a_module_for_a_newer_python_is_not_decided(tmp_path: Path):
    assert failure(tmp_path, {
        "loader.py": "import ctypes\ntype Ptr = ctypes.c_void_p\n",
        "train.py": "from loader import Ptr\n",
    }) is None


def test_a_submodule_the_build_makes_is_not_decided(tmp_path: Path):
    files = {
        "pkg/__init__.py": "",
        "pkg/layers.py": "from pkg import _C\n",
        "train.py": "from pkg.layers import *\nimport pkg._C\n",
    }
    assert failure(tmp_path, files) == ImportFailure(1, "pkg/__init__.py defines no name '_C'")
    (tmp_path / "setup.py").write_text("from setuptools import setup\nsetup(ext_modules=[])\n")
    assert failure(tmp_path, files) is None


@pytest.mark.parametrize("before", [
    "for epoch in range(2):\n    pass\n",  # a loop at the top level runs before the import
    "def main():\n    pass\nmain()\n",  # a call of a function the file defines
    "class Trainer:\n    def fit(self):\n        pass\nTrainer().fit()\n",
    "if __name__ == '__main__':\n    for step in range(3):\n        pass\n",
    "import sys\nsys.path.insert(0, 'lib')\n",  # the name may be found in lib/
    "from sys import path\npath.append('lib')\n",
    "import init_paths\n",  # a module loaded before moves sys.path
])
def test_an_import_after_what_may_run_a_loop_or_move_sys_path_is_not_decided(tmp_path: Path, before: str):
    files = {
        "pkg/__init__.py": "",
        "pkg/common.py": "x = 1\n",
        "init_paths.py": "import sys\nsys.path.insert(0, 'lib')\n",
        "train.py": "import os\n" + before + "from pkg.common import create_optimizer\n",
    }
    assert failure(tmp_path, files) is None


@pytest.mark.parametrize("before", [
    "import sys\n",  # imports, definitions and calls of libraries run no loop of the file
    "def main():\n    for epoch in range(2):\n        pass\n",
    "import argparse\nparser = argparse.ArgumentParser()\nargs = parser.parse_args()\n",
    "class Trainer:\n    def fit(self):\n        for step in range(3):\n            pass\n",
])
def test_an_import_after_definitions_and_library_calls_is_decided(tmp_path: Path, before: str):
    files = {
        "pkg/__init__.py": "",
        "pkg/common.py": "x = 1\n",
        "train.py": before + "from pkg.common import create_optimizer\n",
    }
    line = len(before.splitlines()) + 1
    assert failure(tmp_path, files) == ImportFailure(line, "pkg/common.py defines no name 'create_optimizer'")


def test_a_loop_before_the_failing_import_is_reported(tmp_path: Path):
    write(tmp_path, {"pkg/__init__.py": "", "pkg/optim.py": ""})
    text = LOOP + "from pkg.optim import create_optimizer\n"
    assert [(f.code, f.row) for f in check_source(text, str(tmp_path / "train.py"))] == [("LC101", 9)]


@pytest.mark.parametrize("files", [
    # the package at the root and a module of the same name beside the script: which one
    # Python takes depends on how the script is run
    {"pkg/__init__.py": "", "pkg/common.py": "x = 1\n", "scripts/pkg.py": "x = 1\n"},
    # a module and a package of one name in one directory (Python takes the package)
    {"pkg/__init__.py": "", "pkg/common.py": "x = 1\n", "pkg/common/__init__.py": "x = 1\n"},
])
def test_a_name_several_files_may_be_is_not_decided(tmp_path: Path, files: dict):
    files = {**files, "setup.py": "", "scripts/train.py": "from pkg.common import create_optimizer\n"}
    assert failure(tmp_path, files, "scripts/train.py") is None


def test_the_same_package_under_one_root_is_decided(tmp_path: Path):
    files = {"pkg/__init__.py": "", "pkg/common.py": "x = 1\n", "setup.py": "",
             "scripts/train.py": "from pkg.common import create_optimizer\n"}
    assert failure(tmp_path, files, "scripts/train.py") == ImportFailure(
        1, "pkg/common.py defines no name 'create_optimizer'")


@pytest.mark.parametrize("module", [
    "try:\n    pass\nexcept OSError as create_optimizer:\n    pass\n",
    "match 1:\n    case create_optimizer:\n        pass\n",
    "match {}:\n    case {**create_optimizer}:\n        pass\n",
    "match []:\n    case [*create_optimizer]:\n        pass\n",
])
def test_names_bound_by_except_and_match_are_bound(tmp_path: Path, module: str):
    assert failure(tmp_path, {
        "pkg/__init__.py": "",
        "pkg/common.py": module,
        "train.py": "from pkg.common import create_optimizer\n",
    }) is None


@pytest.mark.parametrize("module", [
    "def log(x):\n    print \"step\", x\n",  # a print statement
    "try:\n    import cPickle\nexcept ImportError, err:\n    pass\n",
    "MODE = 0755\n",
])
def test_a_module_of_python_2_is_not_decided(tmp_path: Path, module: str):
    # the project may run on Python 2, where the module compiles (LC001 still reports it)
    assert failure(tmp_path, {"helpers.py": module, "train.py": "from helpers import log\n"}) is None


def test_a_merge_conflict_is_decided(tmp_path: Path):
    module = "<<<<<<< HEAD\ndef log(x):\n    pass\n=======\n>>>>>>> branch\n"
    assert failure(tmp_path, {"helpers.py": module, "train.py": "from helpers import log\n"}) == ImportFailure(
        1, "helpers.py does not compile (SyntaxError)")


@pytest.mark.parametrize("script, decided", [
    # an appended directory comes after the script's own: a package beside the script still wins
    ("import sys\nsys.path.append('lib')\nfrom pkg.common import create_optimizer\n", True),
    ("import site\nsite.addsitedir('lib')\nfrom pkg.common import create_optimizer\n", True),
    ("import appends\nfrom pkg.common import create_optimizer\n", True),
    # but one found only at the project root (from PYTHONPATH) may be found in lib/ instead
    ("import sys\nsys.path.append('lib')\nfrom top.common import create_optimizer\n", False),
    ("import appends\nfrom top.common import create_optimizer\n", False),
])
def test_an_appended_directory_does_not_hide_the_scripts_own(tmp_path: Path, script: str, decided: bool):
    files = {
        "setup.py": "",
        "top/__init__.py": "",
        "top/common.py": "x = 1\n",
        "scripts/pkg/__init__.py": "",
        "scripts/pkg/common.py": "x = 1\n",
        "scripts/appends.py": "import sys\nsys.path.extend(['lib'])\n",
        "scripts/train.py": script,
    }
    found = failure(tmp_path, files, "scripts/train.py")
    assert (found is not None) == decided


@pytest.mark.parametrize("ignore, script, decided", [
    ("*.pyc\nglobal_config.py\n", "from pkg.global_config import ROOT\n", False),  # made from a sample
    ("/pkg/global_config.py\n", "from pkg.global_config import ROOT\n", False),
    ("# built\n_ext\n", "import pkg._ext\n", False),  # built in place
    ("global_config.py\n", "from pkg import global_config\n", False),
    ("*.pyc\nbuild/\n", "from pkg.global_config import ROOT\n", True),
    ("!global_config.py\n", "from pkg.global_config import ROOT\n", True),
    ("", "import pkg._ext\n", True),
])
def test_a_module_the_repository_ignores_is_not_decided(tmp_path: Path, ignore: str, script: str, decided: bool):
    files = {
        ".gitignore": ignore,
        "pkg/__init__.py": "",
        "pkg/global_config_sample.py": "ROOT = '/data'\n",
        "train.py": script,
    }
    found = failure(tmp_path, files)
    assert (found is not None) == decided


@pytest.mark.parametrize("script, expected", [
    # the script registers another name before the import: pkg.data stays missing
    ("import sys, types\nsys.modules['pkg.Layers'] = types.ModuleType('pkg.Layers')\nfrom pkg.data import Loader\n",
     ImportFailure(3, "no module 'pkg.data': pkg holds no data.py")),
    # it registers pkg.data after the import, which fails first
    ("import sys, types\nfrom pkg.data import Loader\nsys.modules['pkg.data'] = types.ModuleType('pkg.data')\n",
     ImportFailure(2, "no module 'pkg.data': pkg holds no data.py")),
    # it registers pkg.data before: the import gets that module (also through an alias of sys)
    ("import sys as _s, types\n_s.modules['pkg.data'] = types.ModuleType('pkg.data')\nfrom pkg.data import Loader\n",
     None),
    ("import sys as _s\nimport types\n_s.modules.setdefault('pkg.data', types)\nfrom pkg.data import Loader\n", None),
    ("import sys, types\nsys.modules['pkg.data'] = types.ModuleType('pkg.data')\nfrom pkg.data import Loader\n",
     None),
    # a name the project's file holds: the registered module, not pkg/layers.py, is imported
    ("import sys, types\nsys.modules['pkg.layers'] = types.ModuleType('pkg.layers')\nfrom pkg.layers import Loader\n",
     None),
    # ... and a module under it
    ("import sys, types\nsys.modules['pkg'] = types.ModuleType('pkg')\nfrom pkg.data import Loader\n", None),
])
def test_the_checked_file_registers_only_the_name_it_writes(tmp_path: Path, script: str, expected):
    assert failure(tmp_path, {
        "pkg/__init__.py": "",
        "pkg/layers.py": "class Head:\n    pass\n",
        "train.py": script,
    }) == expected


def test_a_loaded_module_registering_a_name_the_project_holds_is_not_decided(tmp_path: Path):
    assert failure(tmp_path, {
        "pkg/__init__.py": "import sys, types\nsys.modules['pkg.layers'] = types.ModuleType('pkg.layers')\n",
        "pkg/layers.py": "class Head:\n    pass\n",
        "train.py": "from pkg.layers import Loader\n",
    }) is None
