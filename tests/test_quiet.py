"""A name imported from a module that trains counts only when it may reach the training code
(:mod:`loopcheck.engine.quiet`, :func:`loopcheck.analysis.signs_of`)."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from loopcheck.analysis import Signs, _may_train, signs_of
from loopcheck.engine.project import project_for
from loopcheck.engine.quiet import imported_names, quiet_members

UTILS = textwrap.dedent(
    """\
    import torch
    from engine import fit
    from helpers import log

    trainer = None


    def select_device(name):
        log(name)
        return torch.device(name)


    def smart_optimizer(model):
        return torch.optim.SGD(model.parameters(), lr=0.1)


    def step_all(optimizer):
        optimizer.step()


    def step_plain(o):
        o.step()


    def run(model):
        step_all(make(model))


    def make(model):
        return smart_optimizer(model)


    def go(model):
        fit(model)


    def use_trainer():
        return trainer.epochs


    class Timer:
        def start(self):
            return 0


    class Trainer:
        def fit(self):
            self.loss.backward()
    """
)


def _quiet(source: str, trained=("engine.fit",), top: str = "") -> frozenset[str]:
    return quiet_members(source + top, None, _may_train, lambda target: target in trained)


def test_quiet_names_are_the_functions_and_classes_that_cannot_reach_training():
    """``smart_optimizer`` builds an optimizer but neither steps it nor mentions a name that
    does; ``run`` calls ``step_all``; ``step_plain`` steps an object not named like an
    optimizer (the module names its optimizers elsewhere); ``go`` calls an imported training
    function; ``use_trainer`` reads a global that the module's own code leaves alone."""
    assert _quiet(UTILS) == {"select_device", "smart_optimizer", "make", "Timer", "use_trainer", "torch", "log"}


def test_a_name_passed_on_is_quiet_unless_it_comes_from_a_training_module_or_is_bound_again():
    """``fit`` comes from the training module; ``log`` from a module that does not train and
    ``torch`` from a library are quiet, unless the module binds them again."""
    assert {"fit", "log", "torch"} & _quiet(UTILS) == {"log", "torch"}
    assert "log" not in _quiet(UTILS, top="\nlog = print\n")


def test_a_global_built_by_the_module_code_from_a_training_class_is_not_quiet():
    assert "use_trainer" not in _quiet(UTILS, top="\ntrainer = Trainer()\n")
    assert "use_trainer" not in _quiet(UTILS, top="\ntrainer.model.train()\n")
    assert "use_trainer" in _quiet(UTILS, top="\ntrainer = Timer()\n")


def test_every_name_may_train_in_a_module_that_star_imports_a_training_module_or_does_not_parse():
    assert _quiet("from engine import *\n\ndef f():\n    pass\n", trained=("engine",)) == frozenset()
    assert _quiet("from helpers import *\n\ndef f():\n    pass\n", trained=("engine",)) == {"f"}
    assert _quiet("def f(:\n    pass\n") == frozenset()


@pytest.mark.parametrize(
    "statement, names",
    [
        ("from a import b, c as d\n", ["b", "c"]),
        ("from a import (\n    b,\n    c as d,\n)\n", ["b", "c"]),
        ("from a import b, \\\n    c  # note\n", ["b", "c"]),
        ("from a import *\n", ["*"]),
        ("from a import (b,  # see f(x)\n    c)\n", None),
        ("from a import b.c\n", None),
    ],
)
def test_the_names_a_from_import_brings_are_read_from_its_text(statement, names):
    assert imported_names(statement, statement.index("import") + len("import")) == names


def _project(tmp_path: Path) -> Path:
    (tmp_path / "pyproject.toml").write_text("")
    (tmp_path / "utils.py").write_text(UTILS)
    (tmp_path / "engine.py").write_text("def fit(model):\n    model.train()\n")
    (tmp_path / "helpers.py").write_text("def log(x):\n    print(x)\n")
    return tmp_path / "main.py"


def test_a_file_that_imports_only_quiet_names_of_a_training_module_is_not_analyzed(tmp_path: Path):
    main_py = _project(tmp_path)
    project = project_for(str(main_py), ())
    for source in ("from utils import select_device, Timer\n", "from utils import (\n    select_device as sd,\n)\n"):
        assert signs_of(source, str(main_py), project) is None
    assert signs_of("from utils import select_device, run\n", str(main_py), project) == Signs(
        False, False, frozenset({"utils.run"})
    )
    # a whole-module import, a star import and an unreadable import name the module
    for source in ("import utils\n", "from utils import *\n", "from utils import (a,  # f(x)\n    b)\n"):
        assert signs_of(source, str(main_py), project).modules == {"utils"}


def test_a_quiet_name_becomes_loud_when_the_module_it_calls_starts_training(tmp_path: Path):
    """``select_device`` calls ``helpers.log``; once ``helpers.py`` trains, the name counts
    (the result kept for ``utils.py`` is checked against the modules it read)."""
    main_py = _project(tmp_path)
    project = project_for(str(main_py), ())
    source = "from utils import select_device\n"
    assert signs_of(source, str(main_py), project) is None
    (tmp_path / "helpers.py").write_text("def log(model):\n    model.train()\n")
    assert signs_of(source, str(main_py), project) == Signs(False, False, frozenset({"utils.select_device"}))


def test_a_name_a_training_package_re_exports_from_a_module_that_does_not_train_is_quiet(tmp_path: Path):
    """ignite's examples import ``Events`` with ``create_supervised_trainer`` from
    ``ignite.engine``, whose ``__init__.py`` trains and re-exports ``Events`` from ``events.py``."""
    (tmp_path / "pyproject.toml").write_text("")
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text(
        "from .events import Events\n\n\ndef create_trainer(model):\n    model.loss.backward()\n"
    )
    (pkg / "events.py").write_text("class Events:\n    EPOCH_COMPLETED = 1\n")
    main_py = tmp_path / "main.py"
    project = project_for(str(main_py), ())
    assert signs_of("from pkg import Events\n", str(main_py), project) is None
    assert signs_of("from pkg import create_trainer, Events\n", str(main_py), project) == Signs(
        False, False, frozenset({"pkg.create_trainer"})
    )


def test_a_function_that_reaches_a_training_module_through_a_package_name_is_not_quiet(tmp_path: Path):
    """``import pkg.engine`` binds ``pkg``, whose ``__init__.py`` does not train: ``run`` calls
    ``pkg.engine.fit`` and is not quiet."""
    (tmp_path / "pyproject.toml").write_text("")
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "engine.py").write_text("def fit(model):\n    model.train()\n")
    (tmp_path / "tools.py").write_text(
        "import pkg.engine\n\n\ndef run(model):\n    pkg.engine.fit(model)\n\n\n"
        "def other(model):\n    model.train()\n"
    )
    main_py = tmp_path / "main.py"
    project = project_for(str(main_py), ())
    assert signs_of("from tools import run\n", str(main_py), project) == Signs(False, False, frozenset({"tools.run"}))
