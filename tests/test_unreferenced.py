"""Functions nothing in the project refers to never run (engine/unreferenced.py): no finding is
made in them; what keeps them reported."""
from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from loopcheck.analysis import check_source
from loopcheck.engine.project import Project

EVALUATE = """\
import torch
from torch import nn

model = nn.Sequential(nn.Linear(8, 8), nn.Dropout(0.5), nn.Linear(8, 2))


def evaluate(loader):
    model.eval()
    for x in loader:
        print(model(x))
"""


def _check(tmp_path: Path, files: dict[str, str], checked: str) -> list[tuple[str, int]]:
    for name, text in files.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
    path = tmp_path / checked
    source = path.read_text()
    return [(f.code, f.row) for f in check_source(source, str(path), project=Project(tmp_path))]


@pytest.mark.parametrize("main, found", [
    ("if __name__ == '__main__':\n    # evaluate([torch.randn(2, 8)])\n    print('done')\n", []),
    ("if __name__ == '__main__':\n    evaluate([torch.randn(2, 8)])\n", [("LC302", 10)]),
    ("if __name__ == '__main__':\n    hooks = {'eval': evaluate}\n", [("LC302", 10)]),  # a reference
    ("if __name__ == '__main__':\n    run = getattr(sys.modules[__name__], 'evaluate')\n", [("LC302", 10)]),
    ("if __name__ == '__main__':\n    globals()[sys.argv[1]]([])\n", [("LC302", 10)]),
])
def test_a_script_function_nothing_calls(tmp_path, main, found):
    assert _check(tmp_path, {"train.py": EVALUATE + "\n\n" + main}, "train.py") == found


def test_a_helper_module_imported_by_a_script(tmp_path):
    files = {"utils.py": EVALUATE, "train.py": "import utils\n\nprint(utils.model)\n"}
    assert _check(tmp_path, files, "utils.py") == []  # nobody calls utils.evaluate
    files["train.py"] = "import utils\n\nutils.evaluate([])\n"
    assert _check(tmp_path, files, "utils.py") == [("LC302", 10)]


def test_a_package_others_install_keeps_its_public_functions(tmp_path):
    files = {"utils.py": EVALUATE, "train.py": "import utils\n\nprint(utils.model)\n", "pyproject.toml": "[project]\nname = 'x'\n"}
    assert _check(tmp_path, files, "utils.py") == [("LC302", 10)]


def test_a_module_nobody_imports_keeps_its_functions(tmp_path):
    assert _check(tmp_path, {"utils.py": EVALUATE}, "utils.py") == [("LC302", 10)]  # a snippet, a library


TRAINER = """\
import torch
from torch import nn


class Trainer{BASES}:
    def __init__(self):
        self.model = nn.Sequential(nn.Linear(8, 8), nn.Dropout(0.5), nn.Linear(8, 2))

    {DECORATOR}def _evaluate_model(self, loader):
        self.model.eval()
        for x in loader:
            print(self.model(x))

    def fit(self):
        {CALL}


if __name__ == "__main__":
    Trainer().fit()
"""


@pytest.mark.parametrize("bases, decorator, call, found", [
    ("", "", "pass  # self._evaluate_model([])", []),
    ("", "", "self._evaluate_model([])", [("LC302", 12)]),
    ("", "", "getattr(self, '_' + 'evaluate_model')([])", [("LC302", 12)]),
    ("(Base)", "", "pass", [("LC302", 12)]),  # a library base may call it
    ("", "@staticmethod\n    ", "pass", [("LC302", 13)]),
])
def test_a_private_method_nothing_calls(tmp_path, bases, decorator, call, found):
    source = TRAINER.replace("{BASES}", bases).replace("{DECORATOR}", decorator).replace("{CALL}", call)
    if bases:
        source = "from lib import Base\n" + source
        found = [(code, row + 1) for code, row in found]
    assert _check(tmp_path, {"trainer.py": source}, "trainer.py") == found


def test_a_notebook_that_names_it(tmp_path):
    files = {"train.py": EVALUATE + "\n\nif __name__ == '__main__':\n    pass\n",
             "demo.ipynb": '{"cells": [{"source": ["from train import evaluate"]}]}'}
    assert _check(tmp_path, files, "train.py") == [("LC302", 10)]


def test_a_library_base_two_classes_up(tmp_path):
    """``class ModelTester(TestCase)`` with the project's ``TestCase(unittest.TestCase)``:
    unittest calls its ``test_*`` methods by name."""
    base = "import unittest\n\n\nclass TestCase(unittest.TestCase):\n    pass\n"
    source = TRAINER.replace("{BASES}", "(TestCase)").replace("{DECORATOR}", "").replace("{CALL}", "pass")
    files = {"common.py": base, "trainer.py": "from common import TestCase\n" + source}
    assert _check(tmp_path, files, "trainer.py") == [("LC302", 13)]
    files["common.py"] = "class TestCase:\n    pass\n"  # a base of the project alone: decided
    assert _check(tmp_path, files, "trainer.py") == []


def test_an_override_the_base_class_calls_through_self(tmp_path):
    """A private method overriding one that a base class of another module calls through
    ``self`` (``self._evaluate_model(...)`` in the base's ``fit()``) runs: the base's module
    names it, although it does not import the subclass's module."""
    base = ("class BaseTrainer:\n    def _evaluate_model(self, loader):\n        pass\n\n"
            "    def fit(self):\n        self._evaluate_model([])\n")
    source = TRAINER.replace("{BASES}", "(BaseTrainer)").replace("{DECORATOR}", "").replace("{CALL}", "pass")
    files = {"base.py": base, "trainer.py": "from base import BaseTrainer\n" + source}
    assert _check(tmp_path, files, "trainer.py") == [("LC302", 13)]
    files["base.py"] = "class BaseTrainer:\n    def fit(self):\n        pass\n"  # nothing calls it
    assert _check(tmp_path, files, "trainer.py") == []


def test_a_method_a_subclass_two_modules_down_calls(tmp_path):
    """A method of a helper module's class, called through ``self`` by a subclass defined in a
    module that imports the module only through another one (``from mid import *``), runs."""
    base = TRAINER.replace("{BASES}", "").replace("{DECORATOR}", "").replace("{CALL}", "pass")
    base = base.replace("_evaluate_model", "evaluate_model").split('if __name__')[0]
    files = {"base.py": base, "mid.py": "from base import Trainer\n\n\nclass Mid(Trainer):\n    pass\n",
             "train.py": "from mid import *\n\n\nclass Run(Mid):\n    def go(self):\n        self.evaluate_model([])\n\n\n"
                         "if __name__ == '__main__':\n    Run().go()\n"}
    assert _check(tmp_path, files, "base.py") == [("LC302", 12)]
    files["train.py"] = files["train.py"].replace("self.evaluate_model([])", "pass")  # nobody calls it
    assert _check(tmp_path, files, "base.py") == []


def test_a_symbolic_link_loop_in_the_project(tmp_path):
    """A project with a symbolic link loop (``loop.py -> loop.py``) is read without an error."""
    (tmp_path / "loop.py").symlink_to(tmp_path / "loop.py")
    source = EVALUATE + "\n\nif __name__ == '__main__':\n    # evaluate([torch.randn(2, 8)])\n    print('done')\n"
    assert _check(tmp_path, {"train.py": source}, "train.py") == []


SCRIPT = EVALUATE + "\n\nif __name__ == '__main__':\n    pass\n"


@pytest.mark.parametrize("name, text, found", [
    ("conf/eval.yaml", "_target_: train.evaluate\n", [("LC302", 10)]),  # Hydra instantiates it
    ("run.sh", 'python -c "from train import evaluate; evaluate([])"\n', [("LC302", 10)]),
    ("scripts/cli.sh", "python -m fire train evaluate\n", [("LC302", 10)]),
    ("README.md", "```python\nfrom train import evaluate\n```\n", [("LC302", 10)]),
    ("conf/eval.yaml", "model: {_target_: pkg.train.evaluate}\n", [("LC302", 10)]),
    ("README.md", "Run `evaluate()` after training.\n", []),  # not through its module
    ("run.sh", "python train.py --mode evaluate\n", []),
    ("conf/eval.yaml", "evaluation: {every: 2}\n", []),  # another word
    ("data/vocab.txt", "train.evaluate\n" * (1 << 17), []),  # over MAX_TEXT_BYTES: data, not read
])
def test_a_text_file_that_names_it(tmp_path, name, text, found):
    """A line of a shell script, a configuration or a document of the project that names the
    function through its module may run it (or show a user how to); a file too large to be
    one is not read."""
    assert _check(tmp_path, {"train.py": SCRIPT, name: text}, "train.py") == found


def test_locals_looks_names_up(tmp_path):
    main = "if __name__ == '__main__':\n    locals()[sys.argv[1]]([])\n"
    assert _check(tmp_path, {"train.py": EVALUATE + "\n\n" + main}, "train.py") == [("LC302", 10)]


@pytest.mark.parametrize("text, found", [
    ("python -c 'import train; train.train([])'\n", [("LC302", 10)]),
    ("python train.py --data data/train.txt\ntrain\n", []),  # the script run, a word
])
def test_a_function_named_as_its_module(tmp_path, text, found):
    """``train()`` of ``train.py``: a line names it through its module only as ``train.train``,
    an import of ``train`` before ``train``, or ``fire``."""
    script = SCRIPT.replace("def evaluate(", "def train(")
    assert _check(tmp_path, {"train.py": script, "run.sh": text}, "train.py") == found


def test_a_method_named_through_its_class(tmp_path):
    source = TRAINER.replace("{BASES}", "").replace("{DECORATOR}", "").replace("{CALL}", "pass")
    files = {"trainer.py": source, "run.sh": "python -m fire trainer Trainer _evaluate_model\n"}
    assert _check(tmp_path, files, "trainer.py") == [("LC302", 12)]
    files["run.sh"] = "python trainer.py  # then _evaluate_model by hand\n"
    assert _check(tmp_path, files, "trainer.py") == []


SCORER = """\
import torch
from torch import nn
{IMPORTS}

{DECORATOR}class Scorer{BASES}:
    def __init__(self):
        self.model = nn.Sequential(nn.Linear(8, 8), nn.Dropout(0.5), nn.Linear(8, 2))
{BODY}
    def score(self, loader):
        self.model.eval()
        for x in loader:
            print(self.model(x))


def show(scorer, loader):  # names ``score``: the method alone cannot be decided
    scorer.score(loader)


if __name__ == "__main__":
    {MAIN}
"""


def _scorer(bases="", decorator="", main="pass", imports="", body=""):
    return (SCORER.replace("{BASES}", bases).replace("{DECORATOR}", decorator).replace("{MAIN}", main)
            .replace("{IMPORTS}", imports).replace("{BODY}", body))


@pytest.mark.parametrize("bases, decorator, main, imports, body, found", [
    ("", "", "pass  # Scorer().score([])", "", "", []),  # no instance ever exists
    ("(nn.Module)", "", "pass", "", "", []),  # a library base known not to find its subclasses
    ("(object)", "", "Scorer().score([])", "", "", [("LC302", 12)]),
    ("", "", "for make in [Scorer]:\n        make().score([])", "", "", [("LC302", 12)]),  # the class is held
    ("", "", "pass", "", "    run = staticmethod(print)\n    hooks = [score]\n", [("LC302", 14)]),  # its body hands one out
    ("", "@register\n", "pass", "from registry import register", "", [("LC302", 13)]),
    ("(unittest.TestCase)", "", "unittest.main()", "import unittest", "", [("LC302", 12)]),  # a test loader finds it
    ("(metaclass=Registry)", "", "pass", "from registry import Registry", "", [("LC302", 12)]),
    ("", "", "globals()['Sco' + 'rer']().score([])", "", "", [("LC302", 12)]),
    # a method named ``eval`` is no call of the builtin: nothing looks the class up
    ("", "", "pass", "", "    def eval(self):\n        return self\n", []),
    ("", "", "eval('Sco' + 'rer')().score([])", "", "    def eval(self):\n        return self\n", [("LC302", 14)]),
])
def test_a_class_nothing_instantiates(tmp_path, bases, decorator, main, imports, body, found):
    """No method of a script's class runs when nothing in the project names the class, outside
    its own body (``super(Scorer, self)``)."""
    source = _scorer(bases, decorator, main, imports, body)
    assert _check(tmp_path, {"scorer.py": source}, "scorer.py") == found


@pytest.mark.parametrize("train, found", [
    ("import scorer\n\nprint(scorer.__name__)\n", []),
    ("import scorer as sc\n\nsc.Scorer().score([])\n", [("LC302", 12)]),
    ("from scorer import *\n\n\nclass Mine(Scorer):\n    pass\n\n\nMine().score([])\n", [("LC302", 12)]),  # a subclass
    ("import scorer\nfrom torch import nn\n\nmodel = nn.Module()\nprint(scorer.__name__, model.Scorer)\n", []),  # another object's attribute
])
def test_a_helper_module_class_its_importers_name(tmp_path, train, found):
    helper = _scorer().split("if __name__")[0]
    files = {"scorer.py": helper, "train.py": train}
    assert _check(tmp_path, files, "scorer.py") == found


def test_a_class_named_through_a_module_that_imports_it(tmp_path):
    """``mid.Scorer()`` after ``mid`` imports the class: the name before the dot is a module
    that holds it."""
    helper = _scorer().split("if __name__")[0]
    files = {"scorer.py": helper, "mid.py": "from scorer import Scorer\n", "train.py": "import mid\n\nmid.Scorer().score([])\n"}
    assert _check(tmp_path, files, "scorer.py") == [("LC302", 12)]


@pytest.mark.parametrize("caller, found", [
    ("import trainer\n\ndef broken(:\n    pass\n\ntrainer.evaluate([])\n", []),  # does not compile: runs nothing
    ("import trainer\n\ntrainer.evaluate([])\n", [("LC302", 10)]),
    ("import trainer\n\nprint 'evaluating'\ntrainer.evaluate([])\n", [("LC302", 10)]),  # Python 2: it may run there
])
def test_a_caller_that_does_not_compile(tmp_path, caller, found):
    files = {"trainer.py": EVALUATE, "run.py": caller}
    assert _check(tmp_path, files, "trainer.py") == found


def test_a_method_called_only_from_a_file_that_does_not_compile_and_its_importers(tmp_path):
    """``report.py`` names ``Network.evaluate`` but does not compile; ``test.py`` imports from
    it (``from report import main``): importing it fails, so no subclass lies behind it."""
    network = ("from torch import nn\n\n\nclass Network:\n    def __init__(self):\n"
               "        self.model = nn.Sequential(nn.Linear(8, 8), nn.Dropout(0.5))\n\n"
               "    def evaluate(self, loader):\n        self.model.eval()\n        for x in loader:\n"
               "            print(self.model(x))\n")
    files = {"network.py": network, "train.py": "from network import Network\n\nNetwork()\n",
             "report.py": "from network import Network\n\ndef main(:\n    Network().evaluate([])\n",
             "test.py": "from report import main\n\nclass T:\n    def evaluate(self):\n        pass\n"}
    assert _check(tmp_path, files, "network.py") == []
    files["report.py"] = "from network import Network\n\ndef main():\n    Network().evaluate([])\n"
    assert _check(tmp_path, files, "network.py") == [("LC302", 11)]


@pytest.mark.parametrize("name, found", [
    ("train.py", []),  # a script's function nothing calls
    ("test_train.py", [("LC302", 10)]),  # pytest collects it and calls its functions by name
    ("train_test.py", [("LC302", 10)]),
    ("conftest.py", [("LC302", 10)]),
])
def test_a_module_pytest_collects_is_not_decided(tmp_path, name, found):
    main = "if __name__ == '__main__':\n    print('done')\n"
    assert _check(tmp_path, {name: EVALUATE + "\n\n" + main}, name) == found


@pytest.mark.parametrize("body, found", [
    # ``train`` indented into ``__init__``: a local nothing calls, and ``evaluate`` with it
    ("        def train(self):\n            evaluate([])\n", []),
    ("        def train(self):\n            evaluate([])\n        train(self)\n", [("LC302", 10)]),
    ("        def train(self):\n            evaluate([])\n        self.train = train\n", [("LC302", 10)]),
    ("        def train(self):\n            evaluate([])\n        print(locals())\n", [("LC302", 10)]),
    ("        @register\n        def train(self):\n            evaluate([])\n", [("LC302", 10)]),
    # a dead function inside a dead one: its call is not subtracted twice from a live one's
    ("        def train(self):\n            def inner():\n                evaluate([])\n", [("LC302", 10)]),
])
def test_a_function_called_only_from_a_nested_function_nothing_calls(tmp_path, body, found):
    trainer = "\n\nclass Trainer:\n    def __init__(self):\n        self.model = model\n\n" + body
    main = "\n\nif __name__ == '__main__':\n    Trainer()\n"
    if "inner" in body:
        main += "    evaluate([])\n"
    assert _check(tmp_path, {"train.py": EVALUATE + trainer + main}, "train.py") == found


@pytest.mark.parametrize("config, name, found", [
    ({}, "check_train.py", []),  # pytest's default does not collect it: a script's function
    ({"pytest.ini": "[pytest]\npython_files = check_*.py\n"}, "check_train.py", [("LC302", 10)]),
    ({"pytest.ini": "[pytest]\npython_files = check_*.py\n"}, "test_train.py", []),  # not collected there
    ({"pytest.ini": "# empty: pytest's default\n"}, "test_train.py", [("LC302", 10)]),
    ({"tox.ini": "[pytest]\npython_files = *_check.py\n"}, "train_check.py", [("LC302", 10)]),
    ({"tox.ini": "[tox]\nenvlist = py310\n"}, "train_check.py", []),  # no pytest section
    ({"setup.cfg": "[tool:pytest]\npython_files = check_*.py test_*.py\n"}, "check_train.py", [("LC302", 10)]),
    ({"pyproject.toml": "[tool.pytest.ini_options]\npython_files = ['check_*.py']\n"}, "check_train.py", [("LC302", 10)]),
    ({"pyproject.toml": "[tool.pytest.ini_options]\npython_files = 'check_*.py'\n"}, "check_train.py", [("LC302", 10)]),
    ({"pyproject.toml": "[tool.pytest.ini_options]\npython_files = ['check_*.py']\n"}, "test_train.py", []),
    ({"pyproject.toml": "[tool.ruff]\nline-length = 99\n"}, "test_train.py", [("LC302", 10)]),
    ({"pytest.ini": "[pytest]\npython_files = check_*.py\n"}, "conftest.py", [("LC302", 10)]),  # always
])
def test_a_module_the_projects_pytest_configuration_collects(tmp_path, config, name, found):
    """The modules pytest collects are those its configuration's ``python_files`` patterns
    match (pytest's default ``test_*.py *_test.py`` when it sets none): pytest calls their
    functions by name, so they are not decided."""
    main = "if __name__ == '__main__':\n    print('done')\n"
    assert _check(tmp_path, {name: EVALUATE + "\n\n" + main, **config}, name) == found


#: A project of scripts: ``main.py`` is run, and imports ``models.py``.
PROGRAM = {
    "main.py": "from models import Net\n\nif __name__ == '__main__':\n    print(Net())\n",
    "models.py": "from torch import nn\n\n\nclass Net(nn.Linear):\n    pass\n",
}
#: A trainer module, without a main block.
TRAINER_MODULE = """\
import torch
from torch import nn


class Trainer:
    def __init__(self):
        self.model = nn.Sequential(nn.Linear(8, 8), nn.Dropout(0.5), nn.Linear(8, 2))

    def evaluate(self, loader):
        self.model.eval()
        for x in loader:
            print(self.model(x))
"""


@pytest.mark.parametrize("extra, found", [
    ({}, []),  # nothing in the project imports, runs or names old/trainer.py
    ({"main.py": "from old.trainer import Trainer\n\nif __name__ == '__main__':\n    Trainer().evaluate([])\n"}, [("LC302", 12)]),
    ({"run.py": "from old import trainer\n\nif __name__ == '__main__':\n    trainer.Trainer().evaluate([])\n"}, [("LC302", 12)]),
    ({"old/__init__.py": "from .trainer import *\n", "run.py": "from old import *\n\nTrainer().evaluate([])\n"}, [("LC302", 12)]),
    ({"old/__init__.py": "__all__ = ['trainer']\n"}, [("LC302", 12)]),  # a star import of the package imports it
    ({"old/main.py": "from trainer import Trainer\n\nif __name__ == '__main__':\n    Trainer().evaluate([])\n"}, [("LC302", 12)]),
    # another folder's own trainer.py, which its script imports: not this module
    ({"new/trainer.py": "class Trainer:\n    pass\n", "new/main.py": "from trainer import Trainer\n\nif __name__ == '__main__':\n    Trainer()\n"}, []),
    # ... unless a file moves sys.path, or the import resolves nowhere in the project
    ({"new/trainer.py": "class Trainer:\n    pass\n", "new/main.py": "import sys\nsys.path.insert(0, 'old')\nfrom trainer import Trainer\n"}, [("LC302", 12)]),
    ({"new/main.py": "from trainer import Trainer\n\nif __name__ == '__main__':\n    Trainer()\n"}, [("LC302", 12)]),
    ({"new/trainer.py": "class Trainer:\n    pass\n", "new/main.py": "from trainer import Trainer\n\nif __name__ == '__main__':\n    Trainer()\n",
      "run.sh": "PYTHONPATH=old python new/main.py\n"}, [("LC302", 12)]),
    ({"select.py": "import importlib\n\nmod = importlib.import_module(input())\n"}, [("LC302", 12)]),  # a computed import above it
    ({"old/run.py": "import runpy\n\nrunpy.run_path('trainer.py')\n"}, [("LC302", 12)]),
    # a computed import from a sibling folder whose name begins with the module's package
    ({"tools/run.py": "import importlib\n\nmod = importlib.import_module('old.' + input())\n"}, [("LC302", 12)]),
    ({"tools/run.py": "from importlib import import_module\n\nmod = import_module(f'old.{input()}')\n"}, [("LC302", 12)]),
    ({"tools/run.py": "import importlib\n\nmod = importlib.import_module(input())\n"}, [("LC302", 12)]),
    ({"tools/run.py": "import importlib\n\nmod = importlib.import_module('new.' + input())\n"}, []),  # another package
    ({"tools/run.py": "import importlib\n\nmod = importlib.import_module('old.evaluate')\n"}, []),  # another module
    # an importer in a folder the checked files leave out, which is no virtualenv
    ({"env/runner.py": "from old.trainer import Trainer\n\nTrainer().evaluate([])\n"}, [("LC302", 12)]),
    ({"build/lib/run.py": "from old.trainer import Trainer\n\nTrainer().evaluate([])\n"}, [("LC302", 12)]),
    ({"env/pyvenv.cfg": "home = /usr/bin\n", "env/lib/run.py": "from old.trainer import Trainer\n\nTrainer().evaluate([])\n"}, []),
    ({"README.md": "python -m old.trainer\n"}, [("LC302", 12)]),
    ({"README.md": "Run `python old/trainer.py` first.\n"}, [("LC302", 12)]),
    ({"README.md": "Run `python new/trainer.py` first.\n"}, []),  # another folder's file
    ({"conf/train.yaml": "trainer: {_target_: old.trainer.Trainer}\n"}, [("LC302", 12)]),
    ({"demo.ipynb": '{"cells": [{"source": ["%run old/trainer.py"]}]}'}, [("LC302", 12)]),
    ({"pyproject.toml": "[project]\nname = 'x'\n"}, [("LC302", 12)]),  # installed: others import it
    ({"main.py": "print('no main block')\n"}, [("LC302", 12)]),  # no script: a library, run from outside
])
def test_a_module_nothing_runs(tmp_path, extra, found):
    """A module of a project of scripts that no file of the project imports, runs or names,
    and that has no main block, runs only if something outside the project imports it: read
    as never run."""
    files = {**PROGRAM, "old/trainer.py": TRAINER_MODULE, **extra}
    assert _check(tmp_path, files, "old/trainer.py") == found


def test_a_module_nothing_runs_but_its_own_top_level(tmp_path):
    """Its own top level may call it: that runs when anything imports or runs the module."""
    files = {**PROGRAM, "old/trainer.py": TRAINER_MODULE + "\n\nTrainer().evaluate([])\n"}
    assert _check(tmp_path, files, "old/trainer.py") == [("LC302", 12)]
    files["old/trainer.py"] = TRAINER_MODULE + "\n\nif __name__ == '__main__':\n    Trainer().evaluate([])\n"
    assert _check(tmp_path, files, "old/trainer.py") == [("LC302", 12)]
    files["old/trainer.py"] = TRAINER_MODULE + "\n\nif __name__ == '__main__':\n    print(Trainer)\n"
    assert _check(tmp_path, files, "old/trainer.py") == []  # a script's method nothing calls


@pytest.mark.parametrize("main, found", [
    ("print(Base())", []),  # builds another class: Model, imported as B, is the base's name
    ("Model().fit()", [("LC302", 12)]),
    ("from base import Model\n    Model().fit()", [("LC302", 12)]),  # rebinds it: a naming still
])
def test_a_from_import_of_another_module_does_not_name_the_class(tmp_path, main, found):
    """``from base import Model as B`` in ``variant.py`` reads ``base.Model``: it does not name
    the ``Model`` that ``variant.py`` defines."""
    variant = ("from torch import nn\nfrom base import Model as B\n\n\nclass Model(B):\n"
               "    def __init__(self):\n        self.model = nn.Sequential(nn.Linear(8, 8), nn.Dropout(0.5))\n\n"
               "    def evaluate(self, loader):\n        self.model.eval()\n        for x in loader:\n"
               "            print(self.model(x))\n\n"
               "    def fit(self):\n        self.evaluate([])\n\n"
               "    def eval(self):  # a method named eval: no call of the builtin eval\n        self.model.eval()\n\n\n"
               f"if __name__ == '__main__':\n    {main}\n")
    files = {"base.py": "class Model:\n    pass\n\n\nclass Base(Model):\n    pass\n", "variant.py": variant}
    assert _check(tmp_path, files, "variant.py") == found


# ------------------------------------------------------------------ notebooks: never imported

NOTEBOOK_SETUP = "import torch\nfrom torch import nn\n\nnet = nn.Sequential(nn.Linear(8, 8), nn.Dropout(0.5))"
NOTEBOOK_HELPER = "def embed_all(net, batches):\n    net.eval()\n    return [net(x) for x in batches]"


def _notebook(*cells: str, as_lists: bool = True) -> str:
    import json

    def source(text):
        return text.splitlines(keepends=True) if as_lists else text

    return json.dumps({"cells": [{"cell_type": "code", "metadata": {}, "execution_count": None, "outputs": [],
                                  "source": source(c)} for c in cells],
                       "metadata": {}, "nbformat": 4, "nbformat_minor": 5})


def _check_notebook(tmp_path: Path, files: dict[str, str], checked: str) -> list[tuple[str, int]]:
    from loopcheck.check import lint_text

    for name, text in files.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    path = tmp_path / checked
    found, _source = lint_text(path.read_text(), str(path), project=Project(tmp_path))
    return [(f.code, f.row) for f in found]


@pytest.mark.parametrize("cells, others, found", [
    ((), {}, []),  # no cell calls it: it never runs
    (("out = embed_all(net, [torch.randn(2, 8)])",), {}, [("LC302", 7)]),
    (("%time out = embed_all(net, [torch.randn(2, 8)])",), {}, [("LC302", 7)]),  # a magic runs it
    (("hooks = {'embed': embed_all}",), {}, [("LC302", 7)]),  # handed out
    (("fn = globals()['embed_' + 'all']",), {}, [("LC302", 7)]),  # looked up by a computed name
    # another notebook runs this one in its namespace, then calls it
    ((), {"driver.ipynb": _notebook("%run demo.ipynb", "embed_all(net, [])")}, [("LC302", 7)]),
    ((), {"run_all.py": "import runpy\nns = runpy.run_path(path)\nns['embed_all'](net, [])\n"}, [("LC302", 7)]),
    # a file that defines a function of the same name and runs no notebook: another function
    ((), {"embed.py": NOTEBOOK_HELPER + "\n", "other.ipynb": _notebook(NOTEBOOK_HELPER)}, []),
    ((), {"README.md": "In demo.ipynb, call `embed_all(net, batches)`.\n"}, [("LC302", 7)]),
])
def test_a_notebook_function_no_cell_calls(tmp_path, cells, others, found):
    files = {"demo.ipynb": _notebook(NOTEBOOK_SETUP, NOTEBOOK_HELPER, *cells), **others}
    assert _check_notebook(tmp_path, files, "demo.ipynb") == found


def test_a_notebook_call_in_a_cell_written_as_one_string(tmp_path):
    # the JSON escapes the line break before the call (``"x = 1\\nembed_all(...)"``): still a call
    files = {"demo.ipynb": _notebook(NOTEBOOK_SETUP, NOTEBOOK_HELPER, "x = 1\nembed_all(net, [])", as_lists=False)}
    assert _check_notebook(tmp_path, files, "demo.ipynb") == [("LC302", 7)]


def test_a_decorated_notebook_function_is_not_decided(tmp_path):
    helper = "import functools\n\n@functools.lru_cache()\n" + NOTEBOOK_HELPER
    files = {"demo.ipynb": _notebook(NOTEBOOK_SETUP, helper)}
    assert _check_notebook(tmp_path, files, "demo.ipynb") == [("LC302", 10)]


@pytest.mark.parametrize("text, loads", [
    ("import importlib\n\nm = importlib.import_module('engines.' + cfg['engine'])\n", ["engines."]),
    ("from importlib import import_module\nm = import_module(f'models.{name}')\n", ["models."]),
    ("m = __import__('models.%s' % name)\n", ["models."]),
    ("m = importlib.import_module('models.{}'.format(name))\n", ["models."]),
    ("m = importlib.import_module('models.net')\n", ["models.net\0"]),  # a whole name
    ("m = importlib.import_module(name)\n", [None]),
    ("m = importlib.import_module('.' + name, __package__)\n", [None]),  # relative: from the caller's package
    # the import line, ``importlib.util`` and ``spec_from_file_location``: each may load any module
    ("import importlib.util\nspec = importlib.util.spec_from_file_location('m', path)\n", [None, None, None]),
    ("import runpy\nrunpy.run_path('train.py')\n", [None, None]),
    ("exec(open('train.py').read())\n", [None]),
    ("def exec(self):\n    pass\n", []),
])
def test_computed_loads(text, loads):
    """What a file may load by computed names: the literal each name begins with, or None."""
    from loopcheck.engine.unreferenced import _computed_loads

    assert _computed_loads(text) == loads


@pytest.mark.parametrize("prefix, module, could", [
    ("engines.", "engines/sgd_trainer.py", True),
    ("engines.", "src/engines/sub/sgd_trainer.py", True),  # the search path may start at src/
    ("engines.", "tools/train.py", False),
    ("engines.", "engines/__init__.py", False),  # the package itself is not what is named
    ("engines.sgd_", "engines/sgd_trainer.py", True),
    ("engines.sgd_", "engines/adam_trainer.py", False),
    ("engines.sgd_trainer\0", "engines/sgd_trainer.py", True),
    ("engines.sgd\0", "engines/sgd_trainer.py", False),
    ("sgd_", "engines/sgd_trainer.py", True),
    (None, "tools/train.py", True),
])
def test_could_load(prefix, module, could):
    from loopcheck.engine.unreferenced import _could_load

    assert _could_load(prefix, Path("/r") / module, Path("/r")) is could


#: A script whose ``Trainer`` has a ``valid`` method that its main block never calls.
SCRIPT_TRAINER = """\
import torch
from torch import nn
{IMPORTS}

class Trainer:
    def __init__(self):
        self.model = nn.Sequential(nn.Linear(8, 8), nn.Dropout(0.5), nn.Linear(8, 2))

    def train(self, loader):
        self.model.train()

    def valid(self, loader):
        self.model.eval()
        for x in loader:
            print(self.model(x))


def main():
    trainer = Trainer()
    trainer.train([])
    {MAIN}


if __name__ == "__main__":
    main()
"""
#: Another script of the project with a class of its own whose ``valid`` its main block calls.
OTHER_SCRIPT = ("class Valider:\n    def valid(self):\n        pass\n\n\n"
                "if __name__ == '__main__':\n    Valider().valid()\n")


@pytest.mark.parametrize("imports, main, extra, found", [
    # another script calls its own class's ``valid``: nothing train.py runs names it
    ("", "", {}, []),
    ("", "trainer.valid([])", {}, [("LC302", 15)]),
    ("", "getattr(trainer, 'valid')([])", {}, [("LC302", 15)]),
    ("import sys", "getattr(trainer, sys.argv[1])([])", {}, [("LC302", 15)]),  # a computed name
    ("import operator", "operator.methodcaller(sys.argv[1], [])(trainer)", {}, [("LC302", 15)]),
    ("", "eval('trainer.' + input())", {}, [("LC302", 15)]),
    # the object goes where it is passed: a module the script imports may call it
    ("from loops import run", "run(trainer)", {"loops.py": "def run(t):\n    t.valid([])\n"}, [("LC302", 15)]),
    ("from loops import run", "run(trainer)", {"loops.py": "def run(t):\n    t.train([])\n"}, []),
    ("from loops import run", "run(trainer)", {"loops.py": "def run(t, mode):\n    getattr(t, mode)([])\n"}, [("LC302", 15)]),
    # ... or a module it loads by a computed name that may reach it
    ("import importlib", "importlib.import_module('hooks.' + input()).run(trainer)",
     {"hooks/__init__.py": "", "hooks/val.py": "def run(t):\n    t.valid([])\n"}, [("LC302", 15)]),
    ("import importlib", "importlib.import_module('models.' + input())",
     {"hooks/__init__.py": "", "hooks/val.py": "def run(t):\n    t.valid([])\n"}, []),
    ("import importlib", "importlib.import_module(input())", {}, [("LC302", 15)]),  # may load valid.py
    # a computed getattr on a library's object holds no instance of the class
    ("from loops import run", "run(trainer)",
     {"loops.py": "import numpy as np\n\ndef run(t):\n    t.train([])\n    return getattr(np, input())\n"}, []),
    ("from loops import run", "run(trainer)",
     {"loops.py": "def run(t):\n    t.train([])\n    np = t\n    return getattr(np, input())\n"}, [("LC302", 15)]),
    # a script run by a shell or a README runs in a process of its own; an import of it does not
    ("", "", {"run.sh": "python train.py\n", "README.md": "python -m train\n"}, []),
    ("", "", {"README.md": "```\nfrom train import Trainer\nt = Trainer()\nt.valid(data)\n```\n"}, [("LC302", 15)]),
    ("", "", {"demo.ipynb": '{"cells": [{"source": ["%run train.py\\n", "trainer.valid([])"]}]}'}, [("LC302", 15)]),
    # imported: an instance may then reach any file, and valid.py names ``valid``
    ("", "", {"report.py": "from train import Trainer\n\nprint(Trainer)\n", }, [("LC302", 15)]),
    ("", "", {"report.py": "from train import Trainer\n\nTrainer().valid([])\n", }, [("LC302", 15)]),
])
def test_a_script_method_nothing_it_runs_calls(tmp_path, imports, main, extra, found):
    """A method of a script's class runs only if code that runs in the script's process, or
    that may hold an instance, names it (or looks a method up by a computed name): another
    script's call of its own class's ``valid`` does not call it."""
    files = {"train.py": SCRIPT_TRAINER.format(IMPORTS=imports, MAIN=main), "valid.py": OTHER_SCRIPT, **extra}
    assert _check(tmp_path, files, "train.py") == found


def test_a_method_of_an_imported_module_any_file_may_call(tmp_path):
    """When the class's module is imported, an instance may reach any file of the project: one
    that does not import the module still names the method."""
    files = {"trainer.py": TRAINER_MODULE, "main.py": "from trainer import Trainer\nfrom loops import run\n\n"
             "if __name__ == '__main__':\n    run(Trainer())\n", "loops.py": "def run(t):\n    print(t)\n"}
    assert _check(tmp_path, files, "trainer.py") == []
    files["loops.py"] = "def run(t):\n    t.evaluate([])\n"
    assert _check(tmp_path, files, "trainer.py") == [("LC302", 12)]
    files["loops.py"] = "class Other:\n    def evaluate(self):\n        pass\n"  # a def calls nothing
    assert _check(tmp_path, files, "trainer.py") == []


@pytest.mark.parametrize("text, library, dynamic", [
    ("from ._ext import lib as _lib\n\ngetattr(_lib, name)\n", True, False),
    ("from ._ext import lib as _lib\n\ngetattr(_lib, name)\n", False, True),  # a project module's
    ("from ._ext import lib as _lib\n_lib = obj\ngetattr(_lib, name)\n", True, True),  # bound again
    ("def f(_lib):\n    getattr(_lib, name)\n", True, True),
    ("getattr(obj, 'name')\n", True, False),
    ("x = '%(a)s' % record.__dict__\n", True, False),
    ("type(obj).__dict__[name](obj)\n", True, True),
    ("inspect.getmembers(obj)\n", True, True),
    ("globals()[name]()\n", True, False),  # a module's namespace holds no method
    ("import importlib\nimportlib.import_module(name)\n", True, False),  # counted where it loads
    ("fire.Fire(Trainer)\n", True, True),
])
def test_dynamic_for_a_method(text, library, dynamic):
    """How a method may be looked up by a computed name (:func:`_dynamic` with ``method``)."""
    from loopcheck.engine.unreferenced import _dynamic

    assert _dynamic(text, True, lambda dots, dotted: library) is dynamic


# ------------------------------------------------------------------ review r6 of stop 52

#: A module with a training loop that nothing imports: a script loads it by its file's path.
LOADED_BY_PATH = """\
import torch
from torch import nn


def train(epochs):
    model = nn.Linear(4, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for _ in range(epochs):
        loss = model(torch.randn(8, 4)).sum()
        loss.backward()
        optimizer.step()
"""


@pytest.mark.parametrize("runner, found", [
    ("import sys\n\n\nif __name__ == '__main__':\n    print(sys.argv)\n", []),  # nothing loads it
    ("import sys\nfrom importlib.util import module_from_spec, spec_from_file_location\n\n\n"
     "if __name__ == '__main__':\n    spec = spec_from_file_location('exp', sys.argv[1])\n"
     "    mod = module_from_spec(spec)\n    spec.loader.exec_module(mod)\n    mod.train(3)\n", [("LC105", 11)]),
    ("import sys\nimport importlib.util\n\n\nif __name__ == '__main__':\n"
     "    spec = importlib.util.spec_from_file_location('exp', sys.argv[1])\n", [("LC105", 11)]),
    ("import sys\nfrom importlib.machinery import SourceFileLoader\n\n\n"
     "if __name__ == '__main__':\n    SourceFileLoader('exp', sys.argv[1]).load_module().train(3)\n", [("LC105", 11)]),
    ("import sys\nfrom imp import load_source\n\n\nif __name__ == '__main__':\n"
     "    load_source('exp', sys.argv[1]).train(3)\n", [("LC105", 11)]),
    ("import sys\nimport imp\n\n\nif __name__ == '__main__':\n    imp.load_source('exp', sys.argv[1]).train(3)\n",
     [("LC105", 11)]),
    ("import sys\nfrom importlib import import_module as load\n\n\nif __name__ == '__main__':\n"
     "    load(sys.argv[1]).train(3)\n", [("LC105", 11)]),  # renamed: its calls are not read
    # an import_module whose name begins with another package's literal cannot reach it
    ("import sys\nfrom importlib import import_module\n\n\nif __name__ == '__main__':\n"
     "    import_module('engines.' + sys.argv[1]).train(3)\n", []),
])
def test_a_module_loaded_by_its_file_path(tmp_path, runner, found):
    """A module that a script loads by its file's path (``importlib.util``,
    ``importlib.machinery``, :mod:`imp`) may be any module: it is not one nothing runs."""
    files = {"run.py": runner, "configs/exp1.py": LOADED_BY_PATH}
    assert _check(tmp_path, files, "configs/exp1.py") == found


@pytest.mark.parametrize("text, loads", [
    ("from importlib.util import module_from_spec, spec_from_file_location\n", [None]),
    ("from importlib.machinery import SourceFileLoader\n", [None]),
    ("from importlib import util\n", [None]),
    ("from importlib import import_module as im\nim('engines.' + x)\n", [None]),
    ("import importlib.util\n", [None]),
    ("import importlib  # loads plugins\n", []),
    ("from importlib import (import_module)\nimport_module('engines.' + x)\n", ["engines."]),
    ("spec.loader.exec_module(mod)\n", [None]),
])
def test_computed_loads_by_file(text, loads):
    """Any use of :mod:`importlib` but ``import_module`` may load any module."""
    from loopcheck.engine.unreferenced import _computed_loads

    assert _computed_loads(text) == loads


@pytest.mark.parametrize("cells, others, found", [
    (("%run -i experiment.py",), {"experiment.py": "embed_all(net, [])\n"}, [("LC302", 7)]),
    (("%load experiment.py",), {"experiment.py": "embed_all(net, [])\n"}, [("LC302", 7)]),
    (("get_ipython().run_line_magic('run', '-i experiment.py')",), {"experiment.py": "embed_all(net, [])\n"},
     [("LC302", 7)]),
    ((), {"experiment.py": "embed_all(net, [])\n"}, []),  # the notebook runs no file: no call of its function
])
def test_a_notebook_function_a_file_it_runs_calls(tmp_path, cells, others, found):
    """A file the notebook runs in its own namespace (``%run -i``, ``%load``) may call its
    functions."""
    files = {"demo.ipynb": _notebook(NOTEBOOK_SETUP, NOTEBOOK_HELPER, *cells), **others}
    assert _check_notebook(tmp_path, files, "demo.ipynb") == found


#: A Hydra script whose ``Trainer.evaluate`` a callback that its configuration names calls.
HYDRA_TRAINER = """\
import torch
from torch import nn
{IMPORTS}

class Trainer:
    def __init__(self):
        self.model = nn.Sequential(nn.Linear(8, 8), nn.Dropout(0.5), nn.Linear(8, 2))

    def evaluate(self):
        self.model.eval()
        return [self.model(torch.randn(2, 8)) for _ in range(4)]

    def fit(self, callbacks):
        self.model.train()
        for cb in callbacks:
            cb.on_epoch_end(self)


def main(cfg):
    Trainer().fit([{BUILD}(c) for c in cfg])


if __name__ == "__main__":
    main([])
"""


@pytest.mark.parametrize("imports, build, found", [
    ("", "dict", []),  # nothing the script runs calls ``evaluate``
    ("from hydra.utils import instantiate", "instantiate", [("LC302", 11)]),
    ("import hydra", "hydra.utils.instantiate", [("LC302", 11)]),
    ("from pydoc import locate", "locate", [("LC302", 11)]),
    ("from importlib.metadata import entry_points", "entry_points", [("LC302", 11)]),
    ("import pkg_resources", "pkg_resources.load_entry_point", [("LC302", 11)]),
])
def test_a_script_that_imports_modules_its_configuration_names(tmp_path, imports, build, found):
    """A script's process may import modules that configuration names (Hydra's ``_target_``,
    ``pydoc.locate``, entry points): any file of the project may then call a method."""
    files = {"train.py": HYDRA_TRAINER.format(IMPORTS=imports, BUILD=build),
             "callbacks.py": "class EvalCallback:\n    def on_epoch_end(self, trainer):\n        print(trainer.evaluate())\n",
             "conf/config.yaml": "callbacks:\n  - _target_: callbacks.EvalCallback\n"}
    assert _check(tmp_path, files, "train.py") == found


@pytest.mark.parametrize("environment, found", [
    ({}, [("LC302", 15)]),  # the project's own env/ code, which imports the script and calls it
    ({"env/conda-meta/history": ""}, []),  # a conda environment: a Python's files, not the project's
    ({"env/bin/python3": ""}, []),  # an installed prefix: bin/python* with lib/python3*
    ({"env/bin/tool": ""}, [("LC302", 15)]),  # no Python there
])
def test_a_conda_environment_in_the_project(tmp_path, environment, found):
    """An ``env/`` folder that holds a conda environment or an installed Python is skipped as a
    virtualenv is: its files are not code of the project that may import a script and call
    its methods."""
    runner = "from train import Trainer\n\nTrainer().valid([])\n"
    files = {"train.py": SCRIPT_TRAINER.format(IMPORTS="", MAIN=""), "valid.py": OTHER_SCRIPT,
             "env/lib/python3.11/runner.py": runner, **environment}
    assert _check(tmp_path, files, "train.py") == found


def test_notebook_text_kept_for_one_settled_version(tmp_path):
    """A notebook's text is kept by its file stamp, one version per path, once it has
    settled; a file just written is read again."""
    import time
    from unittest import mock

    from loopcheck.engine import unreferenced

    path = tmp_path / "demo.ipynb"
    path.write_text(_notebook("a = 1"))
    project = Project(tmp_path)
    assert unreferenced._notebook_text(project, path).endswith("\na = 1")
    assert path not in project.memo["unreferenced.notebook_text"]  # just written: not kept
    # once settled (read later), kept under the path alone, and replaced by a new version
    with mock.patch("loopcheck.engine.project.time.time_ns", return_value=time.time_ns() + 10 * 10**9):
        assert unreferenced._notebook_text(project, path).endswith("\na = 1")
        assert list(project.memo["unreferenced.notebook_text"]) == [path]
        path.write_text(_notebook("b = 22"))
        assert unreferenced._notebook_text(project, path).endswith("\nb = 22")
        assert list(project.memo["unreferenced.notebook_text"]) == [path]


def test_text_facts_read_once_per_version(tmp_path):
    """A text file's answers are kept by its version: asked again, the file is not read."""
    import time
    from unittest import mock

    from loopcheck.engine import unreferenced

    path = tmp_path / "run.sh"
    path.write_text("PYTHONPATH=src python train.py\n")
    project = Project(tmp_path)
    calls = []

    def ask(text):
        calls.append(text)
        return "PYTHONPATH" in text

    with mock.patch("loopcheck.engine.project.time.time_ns", return_value=time.time_ns() + 10 * 10**9):
        assert unreferenced._text_fact(project, path, "q", ask) is True
        assert unreferenced._text_fact(project, path, "q", ask) is True
        assert len(calls) == 1
        path.write_text("python train.py\n")  # a new version: asked again
        assert unreferenced._text_fact(project, path, "q", ask) is False
        assert len(calls) == 2
    assert unreferenced._text_fact(project, tmp_path / "missing.sh", "q", ask) is None


HELPERS = """\
import torch
from torch import nn


def separation(model, x):
    model.eval()
    for _ in range(2):
        print(model(x))


def reorder(model, batches):
    return [separation(model, x) for x in batches]


def decrease(model, batches):
    return reorder(model, batches[::-1])
"""


@pytest.mark.parametrize("extra, main, found", [
    # ``separation`` is named only inside ``reorder``, named only inside ``decrease``, which
    # nothing calls: none of them runs (a star import that calls none of them)
    ("", "from helpers import *\n\nprint(torch)\n", []),
    ("", "from helpers import *\n\ndecrease(None, [])\n", [("LC302", 8)]),
    ("", "from helpers import *\n\nreorder(None, [])\n", [("LC302", 8)]),
    ("", "import helpers\n\nhooks = [helpers.decrease]\n", [("LC302", 8)]),  # handed on as a value
    # a pair that only call each other, one of them calling ``decrease``
    ("\n\ndef again(model, batches):\n    return decrease(model, batches) + other(model, batches)\n"
     "\n\ndef other(model, batches):\n    return again(model, batches)\n",
     "from helpers import *\n\nprint(torch)\n", []),
    ("\n\ndef again(model, batches):\n    return decrease(model, batches)\n\n\nagain(None, [])\n",
     "from helpers import *\n\nprint(torch)\n", [("LC302", 8)]),  # the module's top level calls it
    ("\n\n__all__ = ['decrease']\n", "from helpers import *\n\nprint(torch)\n", [("LC302", 8)]),
    # an f-string's names in a dead caller do not make up for a live naming (one token before 3.12)
    ("\n\ndef again(model, batches):\n    print(f'{decrease}')\n    return decrease(model, batches)\n\n\n"
     "decrease(None, [])\n", "from helpers import *\n\nprint(torch)\n", [("LC302", 8)]),
    ("\n\ndef later(cb=decrease(None, [])):\n    return cb\n", "from helpers import *\n\nprint(torch)\n",
     [("LC302", 8)]),  # a default value runs with the ``def``
    ("\n\n@register\ndef hook(model):\n    return decrease(model, [])\n", "from helpers import *\n\nprint(torch)\n",
     [("LC302", 8)]),  # a decorator may register the caller
    ("\n\nclass Ranker:\n    def rank(self, model):\n        return decrease(model, [])\n",
     "from helpers import *\n\nprint(torch)\n", [("LC302", 8)]),  # a method: not weighed
    ("\n\nrun = getattr(sys.modules[__name__], name)\n", "from helpers import *\n\nprint(torch)\n", [("LC302", 8)]),
])
def test_a_function_called_only_from_functions_nothing_calls(tmp_path, extra, main, found):
    files = {"helpers.py": HELPERS + extra, "main.py": main + "\nif __name__ == '__main__':\n    print('done')\n"}
    assert _check(tmp_path, files, "helpers.py") == found


def test_a_function_called_only_from_functions_of_a_module_nothing_imports(tmp_path):
    files = {"helpers.py": HELPERS, "helpers2.py": HELPERS,
             "main.py": "from helpers import *\n\nif __name__ == '__main__':\n    decrease(None, [])\n"}
    assert _check(tmp_path, files, "helpers.py") == [("LC302", 8)]
    assert _check(tmp_path, files, "helpers2.py") == []  # nothing runs helpers2 but its own top level


def test_a_dead_caller_in_another_module_still_counts(tmp_path):
    # left: a naming in another module's function that nothing calls keeps the function live
    files = {"helpers.py": HELPERS,
             "main.py": "from helpers import *\n\n\ndef unused():\n    decrease(None, [])\n\n\n"
                        "if __name__ == '__main__':\n    print('done')\n"}
    assert _check(tmp_path, files, "helpers.py") == [("LC302", 8)]


def test_dead_module_functions_is_the_greatest_fixed_point(tmp_path):
    """The set itself: the functions named only inside functions of the set (a chain, a pair
    that only call each other); a function named at the top level, and each one it names, is
    not in it."""
    import libcst as cst

    from loopcheck.engine.unreferenced import _dead_module_functions
    from loopcheck.engine.values import parents

    text = HELPERS + (
        "\n\ndef again(model, batches):\n    return decrease(model, batches) + other(model, batches)\n"
        "\n\ndef other(model, batches):\n    return again(model, batches)\n"
        "\n\ndef live(model):\n    return separation(model, None)\n\n\nlive(None)\n")
    (tmp_path / "helpers.py").write_text(text)
    (tmp_path / "main.py").write_text("from helpers import *\n\nif __name__ == '__main__':\n    print('done')\n")
    project = Project(tmp_path)
    module = cst.parse_module(text)
    index = project.add(tmp_path / "helpers.py", text, module=module, keep=False).index
    table = parents(index)
    defs = {s.name.value: s for s in module.body if type(s) is cst.FunctionDef}
    dead = _dead_module_functions(project, index, defs["decrease"], table)
    assert sorted(f.name.value for f in dead) == ["again", "decrease", "other"]
    # ``live`` runs (the top level calls it): ``separation`` runs, its other callers do not
    assert sorted(f.name.value for f in _dead_module_functions(project, index, defs["separation"], table)) == \
        ["again", "decrease", "other", "reorder"]
    assert sorted(f.name.value for f in _dead_module_functions(project, index, defs["reorder"], table)) == \
        ["again", "decrease", "other", "reorder"]


# ------------------------------------------- a module that notebooks star-import, never installed

NOTEBOOK_HELPERS = """\
import torch
from torch import nn


class Tiles:
    def __init__(self, split='train'):
        self.n = 64 if split == 'train' else 16


def train(model, loader):
    model.eval()
    for x in loader:
        print(model(x))
"""


@pytest.mark.parametrize("extra, found", [
    # the notebook star-imports the module and uses another name: a star import calls nothing
    ({}, []),
    ({"nb/demo.ipynb": _notebook("from helpers import *", "print(Tiles('train').n)", "train(model, [])")},
     [("LC302", 13)]),
    ({"nb/demo.ipynb": _notebook("import helpers", "helpers.train(model, [])")}, [("LC302", 13)]),
    # a notebook that reaches the module through another one that star-imports it
    ({"nb/utils.py": "from helpers import *\n", "nb/demo.ipynb": _notebook("from utils import *", "train(m, [])")},
     [("LC302", 13)]),
    # another notebook's own ``train``, which imports nothing that reaches the module
    ({"other/run.ipynb": _notebook("def train(m):\n    return m", "train(1)")}, []),
    ({"other/run.ipynb": _notebook("%run ../nb/helpers.py", "train(m, [])")}, [("LC302", 13)]),
    # a string is a name only where the code looks names up by one
    ({"nb/demo.ipynb": _notebook("from helpers import *", "fn = getattr(helpers_mod, 'train')")}, [("LC302", 13)]),
    ({"nb/demo.ipynb": _notebook("from helpers import *", "print(Tiles('train').n)"),
      "setup.py": "setup(packages=['pkg'], package_dir={'': '.'})\n"}, [("LC302", 13)]),  # may install it
    ({"pyproject.toml": "[project]\nname = 'x'\n"}, [("LC302", 13)]),  # automatic discovery may install it
    ({"nb/__init__.py": ""}, [("LC302", 13)]),  # a package: installed by find_packages()
])
def test_a_module_notebooks_star_import(tmp_path, extra, found):
    """``nb/helpers.py`` (no package) that a notebook imports, in a project whose ``setup.py``
    installs another package: its functions run only where the project's code names them."""
    files = {"setup.py": "from setuptools import setup\n\nsetup(name='x', packages=['pkg'])\n",
             "pkg/__init__.py": "", "nb/helpers.py": NOTEBOOK_HELPERS,
             "nb/demo.ipynb": _notebook("from helpers import *", "print(Tiles('train').n)"), **extra}
    assert _check(tmp_path, files, "nb/helpers.py") == found


#: Each form of reference to ``evaluate`` in a script's main part; ``{f}`` is the function as
#: the code names it (``evaluate`` in its own module, ``utils.evaluate`` in an importer). Each
#: one runs it, or hands it to code that may: its LC302 stays.
REFERENCE_FORMS = {
    "f-string": "print(f'{{{f}([torch.randn(2, 8)])}}')",
    "f-string format spec": "print(f'acc {{{f}([]):.3f}}')",
    "nested format spec": "print(f'{{3.14:{{{f}([])}}}}')",
    "f-string inside an f-string": "print(f\"{{f'{{{f}([])}}'}}\")",
    "lambda body": "run = lambda: {f}([])\n    run()",
    "decorator argument": "@register({f})\n    def hook():\n        pass",
    "decorator": "@{f}\n    def hook():\n        pass",
    "default value": "def hook(fn={f}):\n        fn([])\n    hook()",
    "class attribute": "class Runner:\n        handler = {f}\n    Runner.handler([])",
    "dict of callables": "hooks = {{'val': {f}}}\n    hooks['val']([])",
    "list of callables": "for fn in [{f}]:\n        fn([])",
    "functools.partial": "functools.partial({f}, [])()",
    "map": "list(map({f}, [[]]))",
    "thread target": "threading.Thread(target={f}, args=([],)).start()",
    "main block call": "{f}([])",
    "TYPE_CHECKING block": "if TYPE_CHECKING:\n        {f}([])",
}
HEADER = ("import functools\nimport threading\nfrom typing import TYPE_CHECKING\n\n"
          "from registry import register\n")


@pytest.mark.parametrize("form", list(REFERENCE_FORMS))
def test_each_form_of_reference_keeps_the_function(tmp_path, form):
    """A function whose one reference is in an f-string's replacement field (a nested format
    spec, an f-string in a field), a lambda, a decorator or its argument, a default value, a
    class attribute, a container, ``partial``, ``map``, a thread's target, the main block or a
    ``TYPE_CHECKING`` block is referenced: the finding in its body stays, in its own script and
    in a helper module the script imports."""
    code = REFERENCE_FORMS[form]
    main = "if __name__ == '__main__':\n    " + code.format(f="evaluate") + "\n"
    single = tmp_path / "single"
    assert _check(single, {"train.py": HEADER + EVALUATE + "\n\n" + main}, "train.py") == [("LC302", 15)]
    # the same reference in a module-level function that the main block calls
    caller = "def main():\n    " + code.format(f="evaluate") + "\n\n\nif __name__ == '__main__':\n    main()\n"
    assert _check(tmp_path / "called", {"train.py": HEADER + EVALUATE + "\n\n" + caller}, "train.py") == [("LC302", 15)]
    helper = tmp_path / "helper"
    importer = HEADER + "import utils\n\n" + "if __name__ == '__main__':\n    " + code.format(f="utils.evaluate") + "\n"
    assert _check(helper, {"utils.py": EVALUATE, "train.py": importer}, "utils.py") == [("LC302", 10)]


@pytest.mark.parametrize("main, found", [
    # a string annotation names a type for a checker: nothing calls or looks up ``evaluate``
    ("def main(x: 'evaluate'):\n    pass\n\n\nif __name__ == '__main__':\n    main(1)\n", []),
    # ``globals()`` looks names up at run time: not decided
    ("if __name__ == '__main__':\n    globals()['evaluate']([])\n", [("LC302", 10)]),
    # an f-string's text is no field: ``evaluate`` here is a word of the message
    ("if __name__ == '__main__':\n    print(f'evaluate {1}')\n", []),
    # a call in an f-string of a function nothing calls runs no more than any other call there
    ("def report():\n    print(f'{evaluate([])}')\n\n\nif __name__ == '__main__':\n    pass\n", []),
    ("def report():\n    print(f'{evaluate([])}')\n\n\nif __name__ == '__main__':\n    report()\n", [("LC302", 10)]),
    # an f-string call in a nested function that never runs is not subtracted from a live call
    ("def setup():\n    def unused():\n        print(f'{evaluate([])}')\n    return 1\n\n\n"
     "if __name__ == '__main__':\n    setup()\n    evaluate([])\n", [("LC302", 10)]),
    ("def setup():\n    def unused():\n        print(f'{evaluate([])}')\n    return 1\n\n\n"
     "if __name__ == '__main__':\n    setup()\n", []),
])
def test_what_is_no_reference_and_what_is_decided(tmp_path, main, found):
    assert _check(tmp_path, {"train.py": EVALUATE + "\n\n" + main}, "train.py") == found


def test_a_method_and_a_class_named_in_an_f_string(tmp_path):
    """A method called, and a class instantiated, only inside an f-string's field run."""
    method = TRAINER.replace("{BASES}", "").replace("{DECORATOR}", "").replace(
        "{CALL}", "print(f'{self._evaluate_model([])}')")
    assert _check(tmp_path / "m", {"trainer.py": method}, "trainer.py") == [("LC302", 12)]
    cls = _scorer(main="print(f'{Scorer().score([])}')")
    assert _check(tmp_path / "c", {"scorer.py": cls}, "scorer.py") == [("LC302", 12)]


@pytest.mark.parametrize("literal, fields", [
    ("'plain {x}'", []),
    ("b'{x}'", []),
    ("f'{evaluate(model)}'", ["evaluate(model)"]),
    ("rf'acc {validate(loader):.3f}'", ["validate(loader)"]),
    ("f'{x:{width}.{digits}}'", ["x", "width", "digits"]),
    ("F'{x!r} {y=}'", ["x", "y"]),
    ("f\"{f'{inner()}'}\"", ["f'{inner()}'"]),  # read in its turn when the field is
    ('f"""{a}\n{b}"""', ["a", "b"]),
])
def test_fstring_fields(literal, fields):
    from loopcheck.engine.unreferenced import _fstring_fields

    assert _fstring_fields(literal) == fields


@pytest.mark.parametrize("text, count", [
    ("print(f'{evaluate(m)}')\n", 1),
    ("print(f'{x:{evaluate(m)}}')\n", 1),
    ("print(f\"{f'{evaluate(m)}'}\")\n", 1),
    ("print(f'{self.evaluate(m)}')\n", 0),  # another object's attribute (``bare``)
    ("print(f'{utils.evaluate(m)}')\n", 1),  # through a module the caller imports
    ("print(f'evaluate {m}')\n", 0),
    # a field Python 3.11 cannot parse (a backslash in it): cut by its braces
    ("print(f\"{'\\\\n'.join(evaluate(x))}\")\n", 1),
    ("print(f\"evaluate {'\\\\n'.join(rows)}\")\n", 0),
])
def test_named_reads_f_string_fields(text, count):
    from loopcheck.engine.unreferenced import _named

    assert _named(text, "evaluate", bare=True, through={"utils"}) == count


@pytest.mark.parametrize("quoted, fields", [
    ('"{\'\\\\n\'.join(rows)} and {{braces}}"', ["'\\\\n'.join(rows)"]),
    ('"a {f(x):{w}} {\'}\'.join(g(y))}"', ["f(x):{w}", "'}'.join(g(y))"]),
    ("'''{a['\\\\n']}'''", ["a['\\\\n']"]),
    ('"{unbalanced"', ["{unbalanced"]),  # the text whole: its names taken to be named
])
def test_scanned_fields(quoted, fields):
    from loopcheck.engine.unreferenced import _scanned_fields

    assert _scanned_fields(quoted) == fields


@pytest.mark.parametrize("text, looks_up", [
    ("m = getattr(helpers, name)\n", True),
    ("mod = sys.modules[__name__]\n", True),
    ("g = globals()[name]\n", True),
    ("net = torch.hub.load('owner/repo', 'resnet_small')\n", True),  # runs hubconf's function
    ("if split == 'train':\n    pass\n", False),
    ("path = os.path.join(root, 'train')\n", False),
    ("x = self.modules()\n", False),  # (a method called, no namespace read)
])
def test_looks_up_names_reads_the_knowledge(text, looks_up):
    from loopcheck.engine.unreferenced import _looks_up_names

    assert _looks_up_names(text) is looks_up


def test_a_name_lookup_entry_needs_a_source_and_identifiers():
    from loopcheck.engine.knowledge import Knowledge, KnowledgeError

    for bad in ('[[name_lookup]]\nwords = ["getattr"]\n', '[[name_lookup]]\nwords = ["a b"]\nsource = "x"\n',
                '[[name_lookup]]\nspellings = ["a"]\nsource = "x"\n'):
        with pytest.raises(KnowledgeError):
            Knowledge().load(bad, "test")


FIT = """\
import torch
from torch import nn


def fit(model, batches, optimizer, scheduler):
    for x, y in batches:
        model.zero_grad()
        nn.functional.cross_entropy(model(x), y).backward()
        optimizer.step()
    scheduler.step(0.0)


class _Old:
    def run(self, model, batches):
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        plateau = torch.optim.lr_scheduler.ReduceLROnPlateau(opt)
        fit(model, batches, plateau, opt)
"""


RUNNER = """\


class Runner:
    def run(self, model, batches):
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        plateau = torch.optim.lr_scheduler.ReduceLROnPlateau(opt)
        fit(model, batches, plateau, opt)
"""


@pytest.mark.parametrize("extra, script, found", [
    # nothing builds _Old: the scheduler it hands fit() as the optimizer never reaches it
    ("", "from fitting import fit\n\nprint(fit)\n", []),
    ("", "from fitting import _Old\n\n_Old().run(None, [])\n", [("LC203", 9)]),
    # a method that runs, read after _Old's, hands fit() the same mistake: the report stays
    (RUNNER, "from fitting import Runner\n\nRunner().run(None, [])\n", [("LC203", 9)]),
])
def test_a_report_made_only_through_a_caller_that_never_runs(tmp_path, extra, script, found):
    files = {"fitting.py": FIT + extra, "train.py": script + "\nif __name__ == '__main__':\n    pass\n"}
    assert _check(tmp_path, files, "fitting.py") == found


HELPER = EVALUATE.replace("def evaluate(", "def testing(")  # a helper module, no main block
OWN_TESTING = "def testing(flag, size):\n    print(flag, size)\n\n\n"


@pytest.mark.parametrize("importer, found", [
    # its own top-level ``testing`` is what the bare name reads: the helper's is not named
    ("import helper\n\n\n" + OWN_TESTING + "if __name__ == '__main__':\n    helper.model.eval()\n"
     "    testing(True, 64)\n", []),
    # the same, the call inside a function: it reads the module's global, the file's own
    ("import helper\n\n\n" + OWN_TESTING + "def main():\n    testing(True, 64)\n\n\n"
     "if __name__ == '__main__':\n    main()\n", []),
    # named through the module: an attribute still counts
    ("import helper\n\n\n" + OWN_TESTING + "if __name__ == '__main__':\n    helper.testing([])\n",
     [("LC302", 10)]),
    # a star import binds the helper's ``testing``, and the file binds none of its own
    ("from helper import *\n\n\nif __name__ == '__main__':\n    testing([])\n", [("LC302", 10)]),
    # its own ``testing``, then ``from helper import testing`` rebinds it: not decided
    ("import helper\n\n\n" + OWN_TESTING + "from helper import testing\n\n"
     "if __name__ == '__main__':\n    testing([])\n", [("LC302", 10)]),
    # an import inside a function binds the helper's there
    ("import helper\n\n\n" + OWN_TESTING + "def main():\n    from helper import testing\n    testing([])\n\n\n"
     "if __name__ == '__main__':\n    main()\n", [("LC302", 10)]),
    # its own ``testing`` and a star import of the helper (before or after it): not decided
    ("from helper import *\n\n\n" + OWN_TESTING + "if __name__ == '__main__':\n    testing(True, 64)\n",
     [("LC302", 10)]),
    # a star import whose names are not all known (a library's) may bind it too
    ("import helper\nfrom numpy import *\n\n\n" + OWN_TESTING + "if __name__ == '__main__':\n    testing(True, 64)\n",
     [("LC302", 10)]),
    # no binding of its own: the bare name is no binding of the file (not decided)
    ("import helper\n\n\nif __name__ == '__main__':\n    testing([])\n", [("LC302", 10)]),
])
def test_a_bare_name_the_importer_binds_itself(tmp_path, importer, found):
    """A file that imports the helper module and calls ``testing(...)`` by a bare name calls
    the helper's ``testing`` only when the name may be bound to it there: by an import from
    the helper or a star import; a ``def testing`` of its own top level, and no such import,
    is what the name reads (Python's scoping), and the helper's ``testing`` is then unnamed."""
    files = {"helper.py": HELPER, "run.py": importer}
    assert _check(tmp_path, files, "helper.py") == found


@pytest.mark.parametrize("binding", [
    "testing = print\n",
    "class testing:\n    pass\n",
    "for testing in range(2):\n    pass\n",
    "try:\n    from unittest import main as testing\nexcept ImportError:\n    testing = None\n",
    "if True:\n    with open('x') as testing:\n        pass\n",
])
def test_other_top_level_bindings_of_the_name(tmp_path, binding):
    """An assignment, a class, a loop's or ``with``'s target, an import from a library's
    module: each binds the importer's own ``testing``."""
    importer = "import helper\n\n" + binding + "\n\nif __name__ == '__main__':\n    print(helper.model)\n    testing\n"
    assert _check(tmp_path, {"helper.py": HELPER, "run.py": importer}, "helper.py") == []


def test_an_import_of_the_name_from_another_project_module(tmp_path):
    """``from other import testing`` of a module of the project may be a re-export of the
    helper's function: not decided."""
    files = {"helper.py": HELPER, "other.py": "def testing(x):\n    pass\n",
             "run.py": "import helper\nfrom other import testing\n\n\nif __name__ == '__main__':\n    testing([])\n"}
    assert _check(tmp_path, files, "helper.py") == [("LC302", 10)]
