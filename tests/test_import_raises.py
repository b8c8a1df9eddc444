"""``engine.import_raises``: the top-level statement that raises ``NameError`` every time a
program runs, and the code it keeps from running."""

from __future__ import annotations

import textwrap

import libcst as cst
import pytest

from loopcheck.engine.import_raises import never_reached, raising_statement
from loopcheck.engine.walk import parent_table, walk

MAIN = '\nif __name__ == "__main__":\n    main()\n'


def _raise(text: str):
    """``(position, name, sorted may_run)`` of the raising statement, or ``None``."""
    found = raising_statement(cst.parse_module(text))
    return None if found is None else (found.position, found.name, sorted(found.may_run))


def test_sys_path_append_without_import_sys():
    text = "import os\nimport torch\n\nsys.path.append(os.getcwd())\n\ndef main():\n    pass\n" + MAIN
    module = cst.parse_module(text)
    found = raising_statement(module)
    assert (found.position, found.name, found.may_run) == (2, "sys", frozenset())
    assert found.statement is module.body[2]


@pytest.mark.parametrize("text", [
    # sys is imported, anywhere in the module's scope: in an ``if`` arm, under try/except, later
    "import os\nimport sys\nsys.path.append(os.getcwd())\n",
    "import os\nif os.name == 'nt':\n    import sys\nsys.path.append(os.getcwd())\n",
    "import os\ntry:\n    import sys\nexcept ImportError:\n    pass\nsys.path.append(os.getcwd())\n",
    "import os\nsys.path.append(os.getcwd())\nimport sys\n",
    "import os.path as osp\nimport sys\nsys.path.append(osp.dirname(__file__))\n",
    # bound by each kind of binding
    "import os\nfor step in range(3):\n    pass\nprint(step)\n",
    "import os\nwith open(__file__) as handle:\n    pass\nprint(handle)\n",
    "import os\ntry:\n    pass\nexcept Exception as error:\n    pass\nprint(error)\n",
    "import os\nprint(Net)\nclass Net:\n    pass\n",
    "import os\nprint(train)\ndef train():\n    pass\n",
    "import os\nprint(total)\ntotal: int = 0\n",
    "import os\nprint(a, b, c)\na, (b, *c) = 1, (2, 3)\n",
    "import os\nprint(last)\nitems = [last := i for i in range(3)]\n",
    "import os\nprint(model)\ndef build():\n    global model\n    model = 1\n",
    "import os\nmatch os.name:\n    case 'nt' as kind:\n        pass\nprint(kind)\n",
    "from os import path\nprint(path)\n",
    "from os import path as p\nprint(p)\n",
    # builtins, a module's own attributes, Python 2's, names tools install
    "import os\nprint(__file__, __name__, len, xrange, _, profile)\n",
    # read only on some runs: the right of ``or``, an arm of ``if else``, a later link of a
    # chained comparison, a lambda's body, a comprehension's element, an assert, an annotation
    "import os\nvalue = os.name or fallback\n",
    "import os\nvalue = other if os.name else None\n",
    "import os\nvalue = 0 < 1 < limit\n",
    "import os\nget = lambda: missing\n",
    "import os\nsquares = [missing for i in range(3)]\n",
    "import os\nassert missing\n",
    "import os\ncount: Missing = 0\n",
    # read only when a function runs
    "import os\ndef add_path():\n    sys.path.append(os.getcwd())\n",
    # only under a compound statement
    "import os\nif os.name == 'nt':\n    sys.path.append(os.getcwd())\n",
    "import os\nfor i in range(3):\n    sys.path.append(os.getcwd())\n",
])
def test_no_raise(text):
    assert _raise(text + MAIN) is None


@pytest.mark.parametrize("text", [
    # a snippet: no import in its own scope (one in a function does not count), or no main block
    "sys.path.append(os.getcwd())\n" + MAIN,
    "def main():\n    import torch\nsys.path.append(os.getcwd())\n" + MAIN,
    "import os\nsys.path.append(os.getcwd())\n",
    # what may bind names unseen
    "import os\nfrom utils import *\nsys.path.append(os.getcwd())\n" + MAIN,
    "import os\nglobals()['sys'] = os\nsys.path.append(os.getcwd())\n" + MAIN,
    "import os\nexec('import sys')\nsys.path.append(os.getcwd())\n" + MAIN,
    "import os, builtins\nbuiltins.sys = os\nsys.path.append(os.getcwd())\n" + MAIN,
    "import os\nos.modules = 1\nsys.path.append(os.getcwd())\n" + MAIN,
])
def test_not_decided(text):
    assert _raise(text) is None


@pytest.mark.parametrize("text, position, name", [
    ("import os\nsys.path.append(os.getcwd())\n", 1, "sys"),
    ("import os\nx = 1\ny = os.name and missing\nz = first or 2\n", 3, "first"),
    ("import os\ncounter += 1\n", 1, "counter"),
    ("import os\nconfig.lr = 0.1\n", 1, "config"),
    ("import os\ntable[key] = 1\n", 1, "table"),
    ("import os\nrows = [r for r in records]\n", 1, "records"),
    ("import os\nvalue = other if missing else None\n", 1, "missing"),
    ("import os\nx = 1; print(f'{missing}')\n", 1, "missing"),
    ("import os\nnet = Net(pretrained=True)\n", 1, "Net"),
])
def test_raise(text, position, name):
    assert _raise(text + MAIN) == (position, name, [])


def test_functions_named_before_the_raise_may_run():
    text = """\
        import os

        def helper():
            pass

        def train():
            helper()

        def unused():
            pass

        class Logger:
            def log(self):
                pass

        train()
        sys.path.append(os.getcwd(), Logger)
        """
    assert _raise(textwrap.dedent(text) + MAIN) == (6, "sys", ["Logger", "helper", "train"])


def test_never_reached():
    text = """\
        import os

        def train():
            return 1

        def unused():
            return 2

        class Trainer:
            def fit(self):
                return 3

        train()
        sys.path.append(os.getcwd())
        print(4)

        def main():
            return 5
        """
    module = cst.parse_module(textwrap.dedent(text) + MAIN)
    raised = raising_statement(module)
    table = parent_table(module)
    ints = {int(n.value): n for n in walk(module) if type(n) is cst.Integer}
    reached = {value: never_reached(raised, module, node, table) for value, node in ints.items()}
    # train() is called before the raise; unused() and Trainer are named by nothing that runs;
    # print(4) and main() come after it
    assert reached == {1: False, 2: True, 3: True, 4: True, 5: True}
    call = next(n for n in walk(module.body[5]) if type(n) is cst.Call)  # the raising statement
    assert never_reached(raised, module, call, table) is False
    assert never_reached(raised, module, cst.Name("elsewhere"), table) is False


def test_code_run_as_defined_before_the_raise_is_reached():
    text = """\
        import os

        def register(fn):
            return fn

        class Config:
            lr = 1
            def fit(self):
                return 2

        @register(3)
        def train(epochs=4):
            return 5

        class Runner:
            def fit():
                return 6
            history = fit()

        def unused(epochs=7):
            return 8

        sys.path.append(os.getcwd())

        @register(9)
        def late():
            return 10
        """
    module = cst.parse_module(textwrap.dedent(text) + MAIN)
    raised = raising_statement(module)
    assert sorted(raised.may_run) == ["Runner", "register", "train"]
    table = parent_table(module)
    ints = {int(n.value): n for n in walk(module) if type(n) is cst.Integer}
    reached = {value: never_reached(raised, module, node, table) for value, node in ints.items()}
    # the class body (1) runs as Config is defined, its method (2) only if called: nothing
    # names Config; a decorator (3) and a default (4, 7) run as the def runs, and train (5),
    # handed to its decorator, may run; Runner's body calls fit (6); unused's body (8) never
    # runs; after the raise nothing runs (9, 10)
    assert reached == {1: False, 2: True, 3: False, 4: False, 5: False, 6: False, 7: False, 8: True,
                       9: True, 10: True}


@pytest.mark.parametrize("text, may_run", [
    ("@atexit.register\ndef report():\n    pass\n", ["report"]),
    ("class Model:\n    @property\n    def size(self):\n        pass\n", ["Model"]),
    ("class Model:\n    def size(self):\n        pass\n", []),
    ("def outer():\n    @wrap\n    def inner():\n        pass\n", []),
])
def test_handed_to_code_before_the_raise(text, may_run):
    assert _raise("import atexit\n" + text + "sys.path.append(1)\n" + MAIN)[2] == may_run


def test_names_tools_install_come_from_the_knowledge():
    from loopcheck.engine.import_raises import PYTHON_NAMES, known_names
    from loopcheck.engine.knowledge import knowledge

    assert "spark" not in PYTHON_NAMES and "len" in PYTHON_NAMES and "__file__" in PYTHON_NAMES
    assert known_names() == PYTHON_NAMES | knowledge().installed_builtins
    assert _raise("import os\ndisplay(spark.table('t'), dbutils)\n" + MAIN) is None
