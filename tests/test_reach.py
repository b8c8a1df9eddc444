"""A file that shows no training of its own is built only where it can reach what it shows:
``eval()`` in a test or an evaluation script, the imported training module in a ``main.py``
(:mod:`loopcheck.engine.reach`, :meth:`loopcheck.analysis.Signs.entry_names`)."""

from __future__ import annotations

import textwrap
from pathlib import Path

import libcst as cst
import pytest

from loopcheck.analysis import Signs, check_source, signs_of
from loopcheck.engine.builder import UnitBuilder, index_module
from loopcheck.engine.names import ImportMap
from loopcheck.engine.reach import reaching

EVALUATION = textwrap.dedent(
    """\
    import torch


    def load(path):
        model = torch.load(path)
        model.eval()
        return model


    def evaluate(path, loader):
        model = load(path)
        for x in loader:
            print(model(x))


    def unrelated(test_loader):
        model = torch.nn.Linear(4, 2)
        for x in test_loader:
            print(model(x))


    class Tester:
        def __init__(self, model):
            self.model = model.eval()

        def helper(self):
            return 1


    def make(model):
        return Tester(model)


    def test_helper():
        assert Tester(None).helper() == 1
    """
)


def _names(funcs) -> set[str]:
    return {f.name.value for f in funcs}


def test_the_functions_that_mention_eval_or_one_that_does_reach_it():
    """``load`` calls ``eval()``; ``evaluate`` calls ``load``; ``make`` and ``test_helper``
    build a ``Tester``, whose ``__init__`` does; ``unrelated`` and ``Tester.helper`` do not.
    What is sought is a name: ``print`` is reached by the two functions that call it."""
    index = index_module(cst.parse_module(EVALUATION))
    assert _names(reaching(index, {"eval"})) == {"load", "evaluate", "__init__", "make", "test_helper"}
    assert _names(reaching(index, {"print"})) == {"evaluate", "unrelated"}


def test_the_methods_of_a_class_whose_base_is_sought_reach_it():
    source = "from engine import BaseTrainer\n\nclass T(BaseTrainer):\n    def hook(self):\n        pass\n\ndef other():\n    pass\n"
    index = index_module(cst.parse_module(source))
    assert _names(reaching(index, {"BaseTrainer"})) == {"hook"}


def test_an_evaluation_script_reports_its_forward_in_eval_mode_and_skips_what_reaches_no_eval():
    """The forward of ``evaluate`` runs in eval mode without ``torch.no_grad()`` (LC302);
    ``unrelated``'s loop of forwards over test data (also LC302, not in eval mode) is not read,
    since it reaches no ``eval()``: once the file trains, it is."""
    found = check_source(EVALUATION, "evaluate.py")
    assert [(f.code, f.row) for f in found] == [("LC302", 13)]
    trains = EVALUATION + "\n\ndef fit(loss):\n    loss.backward()\n"
    assert [(f.code, f.row) for f in check_source(trains, "evaluate.py")] == [("LC302", 13), ("LC302", 19)]


@pytest.fixture
def built(monkeypatch) -> list[str]:
    """The names of the functions built as entry points, in order."""
    names: list[str] = []
    real = UnitBuilder.function_unit

    def counting(self, func, *args, **kwargs):
        names.append(func.name.value)
        return real(self, func, *args, **kwargs)

    monkeypatch.setattr(UnitBuilder, "function_unit", counting)
    return names


def test_a_test_file_builds_only_its_tests_that_reach_eval(built):
    """Ten tests that never call ``eval()`` cost nothing; the one that does is built."""
    tests = "".join(f"def test_{i}():\n    net = Net()\n    assert net(torch.zeros(2)).shape\n\n\n" for i in range(10))
    source = (
        "import torch\n\n\nclass Net(torch.nn.Module):\n    def forward(self, x):\n        return x\n\n\n"
        + tests
        + "def test_eval_mode():\n    net = Net().eval()\n    assert not net.training\n"
    )
    assert check_source(source, "test_net.py") == []
    assert built == ["test_eval_mode"]


def _imports(source: str) -> ImportMap:
    return index_module(cst.parse_module(source)).imports


@pytest.mark.parametrize(
    ("source", "names"),
    [
        ("from engine import train_one_epoch, evaluate as ev\nimport numpy as np\n", {"train_one_epoch", "ev"}),
        ("import engine\nimport utils\n", {"engine"}),
        ("import engine as eng\n", {"eng"}),
        ("from engine import *\n", None),
        ("from utils import *\nfrom engine import fit\n", {"fit"}),
    ],
)
def test_the_names_sought_are_those_bound_to_the_training_modules(source, names):
    signs = Signs(False, False, frozenset({"engine"}))
    assert signs.entry_names(_imports(source)) == (None if names is None else frozenset(names))


def test_the_names_sought_add_eval_and_none_are_sought_in_a_file_that_trains():
    imports = _imports("import pkg.engine\nfrom pkg.data import loader\n")
    assert Signs(False, True, frozenset({"pkg.engine"})).entry_names(imports) == {"pkg", "eval"}
    assert Signs(True).entry_names(imports) is None


def test_signs_name_the_imported_training_modules_as_written_and_absolute(tmp_path: Path):
    """``from .engine import fit`` in ``pkg/main.py`` names ``engine.fit`` and
    ``pkg.engine.fit``; ``import pkg.engine`` names the module; a module whose only sign is
    ``eval()`` is not among them; a file without signs has none."""
    from loopcheck.engine.project import project_for

    (tmp_path / "pyproject.toml").write_text("")
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "engine.py").write_text("def fit(model):\n    model.train()\n")
    (pkg / "loader.py").write_text("def load(model):\n    return model.eval()\n")
    main_py = pkg / "main.py"
    source = "from .engine import fit\nfrom .loader import load\n"
    main_py.write_text(source)
    project = project_for(str(main_py), ())
    assert signs_of(source, str(main_py), project) == Signs(False, False, frozenset({"engine.fit", "pkg.engine.fit"}))
    assert signs_of("import pkg.engine\n", str(main_py), project) == Signs(False, False, frozenset({"pkg.engine"}))
    assert signs_of("from .loader import load\n", str(main_py), project) is None
    assert signs_of("model.eval()\n", str(main_py), project) == Signs(False, True)
    assert signs_of("loss.backward()\n", str(main_py), project) == Signs(True)


def test_a_main_that_drives_an_imported_engine_is_built_where_it_calls_it(tmp_path: Path, built):
    """``main()`` calls the engine's ``train_one_epoch`` and is built (its scheduler stepped
    per batch in the engine is reported at the call); ``plot()`` is not."""
    (tmp_path / "pyproject.toml").write_text("")
    (tmp_path / "engine.py").write_text(textwrap.dedent(
        """\
        def train_one_epoch(model, loader, optimizer, scheduler):
            model.train()
            for x in loader:
                optimizer.zero_grad()
                model(x).sum().backward()
                optimizer.step()
                scheduler.step()
        """
    ))
    source = textwrap.dedent(
        """\
        import torch
        from engine import train_one_epoch


        def plot(values):
            print(values)


        def main(model, loader):
            optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
            scheduler = torch.optim.lr_scheduler.StepLR(optimizer, 30)
            for epoch in range(90):
                train_one_epoch(model, loader, optimizer, scheduler)
        """
    )
    (tmp_path / "main.py").write_text(source)
    found = check_source(source, str(tmp_path / "main.py"))
    # (twice: read statement by statement, then, as it has a finding, parsed whole)
    assert built == ["main", "main"]
    assert [(f.code, f.row) for f in found] == [("LC201", 13)]


def test_a_relative_import_is_made_absolute_as_the_import_map_does(tmp_path: Path):
    from loopcheck.engine.project import absolute_module as _absolute

    sub = tmp_path / "pkg" / "sub"
    sub.mkdir(parents=True)
    for d in (tmp_path / "pkg", sub):
        (d / "__init__.py").write_text("")
    assert _absolute(".engine", sub / "main.py") == "pkg.sub.engine"
    assert _absolute("..data", sub / "main.py") == "pkg.data"
    assert _absolute(".", sub / "main.py") == "pkg.sub"
    assert _absolute(".engine", sub / "__init__.py") == "pkg.sub.engine"
    assert _absolute(".engine", tmp_path / "main.py") == "engine"
