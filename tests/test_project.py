"""A project is not one file: imports are followed, findings stay in the files that were asked for."""

from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from loopcheck.analysis import check_source
from loopcheck.cli.commands import main
from loopcheck.engine.project import Project, find_root, module_name
from test_fixtures import expected

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures"
PROJECTS = sorted(p for p in FIXTURES.iterdir() if p.is_dir() and p.name.startswith("project_"))


def run_json(*args: str) -> list[dict]:
    """The command line's findings, rules in preview included (the fixtures mark every rule's)."""
    result = CliRunner().invoke(main, ["--output-format", "json", "--preview", *args])
    assert result.exit_code in (0, 1), result.output
    return json.loads(result.stdout)


def test_there_are_multi_file_fixtures():
    assert len(PROJECTS) >= 12


@pytest.mark.parametrize("folder", PROJECTS, ids=lambda p: p.name)
def test_a_folder_is_checked_as_one_project(folder: Path):
    """Every file's `# expect:` lines, and nothing else, when the whole folder is checked."""
    want = set()
    for path in folder.rglob("*.py"):
        want |= {(str(path.resolve()), code, row) for code, row in expected(path.read_text(encoding="utf-8"))}
    got = {(str(Path(f["filename"]).resolve()), f["code"], f["location"]["row"]) for f in run_json(str(folder))}
    assert got == want


def test_one_file_of_a_project_reports_its_own_findings_only():
    main_py = FIXTURES / "project_engine_main" / "main.py"
    found = run_json(str(main_py))
    assert {Path(f["filename"]).name for f in found} == {"main.py"}
    assert sorted(f["code"] for f in found) == ["LC201", "LC301", "LC302", "LC401"]


def test_a_finding_names_the_lines_of_the_other_module():
    train = FIXTURES / "project_eval_module" / "train.py"
    [f] = run_json(str(train))
    assert (f["code"], f["location"]["row"]) == ("LC301", 18)
    assert f["message"] == "via evaluate(): net.eval() is still in effect when optimizer.step() at line 17 trains the model"
    other = [r for r in f["related"] if r["filename"] != f["filename"]]  # each entry names its file
    assert [(Path(r["filename"]).name, r["row"]) for r in other] == [("evaluation.py", 6)]
    assert Path(other[0]["filename"]).resolve() == (train.parent / "evaluation.py").resolve()
    assert f["fix"] is None  # a fix edits one file; this one's evidence is in two


def test_a_project_decorator_and_helper_keep_it_silent():
    for folder in ("project_inference_decorator", "project_zero_grad_helper"):
        assert run_json(str(FIXTURES / folder)) == []


def test_without_the_other_module_the_call_is_unknown(tmp_path: Path):
    """The same train.py alone (its evaluation module missing): the call is opaque, no finding."""
    (tmp_path / "train.py").write_text((FIXTURES / "project_eval_module" / "train.py").read_text())
    assert run_json(str(tmp_path / "train.py")) == []


def test_module_names_and_roots(tmp_path: Path):
    pkg = tmp_path / "repo" / "src" / "pkg" / "sub"
    pkg.mkdir(parents=True)
    for d in (pkg, pkg.parent):
        (d / "__init__.py").write_text("")
    (tmp_path / "repo" / "pyproject.toml").write_text("[project]\nname = 'pkg'\n")
    mod = pkg / "train.py"
    mod.write_text("")
    assert module_name(mod) == ("pkg.sub.train", tmp_path / "repo" / "src")
    assert find_root(mod) == tmp_path / "repo"
    script = tmp_path / "scripts" / "run.py"
    script.parent.mkdir()
    script.write_text("")
    assert module_name(script) == ("run", script.parent)
    # a directory without `__init__.py` directly inside a package is its namespace subpackage
    tool = tmp_path / "repo" / "src" / "pkg" / "tools" / "export.py"
    tool.parent.mkdir()
    tool.write_text("")
    assert module_name(tool) == ("pkg.tools.export", tmp_path / "repo" / "src")
    deeper = tool.parent / "more" / "run.py"  # its package would start nowhere known
    deeper.parent.mkdir()
    deeper.write_text("")
    assert module_name(deeper) == ("run", deeper.parent)


def test_lookup_follows_reexports_relative_imports_and_cycles(tmp_path: Path):
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("from .engine import train_one_epoch\nfrom .a import *\n")
    (pkg / "engine.py").write_text("def train_one_epoch(model):\n    model.train()\n")
    (pkg / "a.py").write_text("from .b import helper\n")
    (pkg / "b.py").write_text("from .a import helper\n")  # a cycle: neither defines helper
    (pkg / "broken.py").write_text("def f(:\n")
    project = Project(tmp_path)
    near = tmp_path / "main.py"
    member = project.lookup("pkg.train_one_epoch", near)
    assert member is not None and member.function.name.value == "train_one_epoch"
    assert member.info.path == (pkg / "engine.py").resolve()
    assert project.lookup("pkg.helper", near) is None
    assert project.lookup("pkg.broken.f", near) is None
    assert project.lookup("torch.optim.Adam", near) is None


def test_a_name_is_looked_up_once_per_check_and_again_in_the_next(tmp_path: Path, monkeypatch):
    """The builder asks for the same imported names at every call site; a check looks each one
    up once (diffusers' pipeline tests made 11,505 lookups in one file), and the next check
    (after ``trim``) looks again, so a module changed in between is seen."""
    (tmp_path / "pyproject.toml").write_text("")
    (tmp_path / "engine.py").write_text("def train_one_epoch(model):\n    model.train()\n")
    project = Project(tmp_path)
    near = tmp_path / "main.py"
    calls = []
    real = Project._lookup

    def counting(self, qualname, near, depth):
        calls.append((qualname, depth))
        return real(self, qualname, near, depth)

    monkeypatch.setattr(Project, "_lookup", counting)
    found = [project.lookup("engine.train_one_epoch", near) for _ in range(10)]
    assert found[0] is not None and all(m is found[0] for m in found)
    assert project.lookup("engine.evaluate", near) is None
    assert calls == [("engine.train_one_epoch", 0), ("engine.evaluate", 0)]
    (tmp_path / "engine.py").write_text("def train_one_epoch(model):\n    model.train()\n\n\ndef evaluate(m):\n    pass\n")
    assert project.lookup("engine.evaluate", near) is None  # the same check: the same answer
    project.trim()
    assert project.lookup("engine.evaluate", near).function.name.value == "evaluate"


def test_imports_from_many_directories_probe_each_candidate_file_once(tmp_path: Path, monkeypatch):
    """A directory's search roots are worked out once, and each candidate file is looked at
    once per process: ``import engine`` from three directories probes the project root's
    ``engine.py`` once (diffusers: 137k ``stat`` calls for 22,541 imports before)."""
    (tmp_path / "pyproject.toml").write_text("")
    (tmp_path / "engine.py").write_text("def fit(model):\n    model.train()\n")
    for d in ("a", "b", "c"):
        (tmp_path / d).mkdir()
    project = Project(tmp_path)
    probed = []
    real = Path.is_file
    monkeypatch.setattr(Path, "is_file", lambda self: probed.append(self) or real(self))
    for d in ("a", "b", "c"):
        for name in ("main.py", "other.py"):
            assert project.find_module("engine", tmp_path / d / name) == (tmp_path / "engine.py").resolve()
    assert sorted(p for p in probed if p.name == "engine.py") == [
        tmp_path / d / "engine.py" for d in ("a", "b", "c")] + [tmp_path / "engine.py"]
    assert len(probed) == len(set(probed))
    with project.recording() as reads:  # each check still records what the import depends on
        project.find_module("engine", tmp_path / "b" / "main.py")
    assert reads.probes[tmp_path / "engine.py"] is True and reads.probes[tmp_path / "b" / "engine.py"] is False


def test_the_checked_text_wins_over_the_file_on_disk(tmp_path: Path):
    """An editor buffer: the text given is checked, the imported modules come from disk."""
    (tmp_path / "evaluation.py").write_text((FIXTURES / "project_eval_module" / "evaluation.py").read_text())
    text = (FIXTURES / "project_eval_module" / "train.py").read_text()
    (tmp_path / "train.py").write_text("")
    found = check_source(text, str(tmp_path / "train.py"))
    assert [(f.code, f.row) for f in found] == [("LC301", 18)]
    fixed = text.replace("        acc = evaluate(net, val_loader)", "        acc = evaluate(net, val_loader)\n        net.train()")
    assert check_source(fixed, str(tmp_path / "train.py")) == []


def test_a_changed_module_is_read_again(tmp_path: Path):
    os.makedirs(tmp_path, exist_ok=True)
    (tmp_path / "evaluation.py").write_text("def evaluate(net, loader):\n    return 0\n")
    train = tmp_path / "train.py"
    train.write_text((FIXTURES / "project_eval_module" / "train.py").read_text())
    assert check_source(train.read_text(), str(train)) == []
    (tmp_path / "evaluation.py").write_text((FIXTURES / "project_eval_module" / "evaluation.py").read_text() + "\n")
    assert [f.code for f in check_source(train.read_text(), str(train))] == ["LC301"]


def test_the_src_setting_names_a_source_root_loopcheck_cannot_guess(tmp_path: Path):
    """train.py imports `evaluation`, which lives in lib/: found only once `src = ["lib"]` says so."""
    (tmp_path / "lib").mkdir()
    (tmp_path / "lib" / "evaluation.py").write_text((FIXTURES / "project_eval_module" / "evaluation.py").read_text())
    (tmp_path / "scripts").mkdir()
    train = tmp_path / "scripts" / "train.py"
    train.write_text((FIXTURES / "project_eval_module" / "train.py").read_text())
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'x'\n")
    assert run_json("--isolated", str(train)) == []
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'x'\n\n[tool.loopcheck]\nsrc = [\"lib\"]\n")
    assert [(f["code"], f["location"]["row"]) for f in run_json(str(train))] == [("LC301", 18)]


def _star_aliases(tmp_path: Path, files: dict[str, str], star: str) -> dict[str, str]:
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    return Project(tmp_path).star_aliases(star, tmp_path / "train.py")


def test_a_star_import_binds_what_the_module_imported(tmp_path: Path):
    """`from utils import *` binds utils' public imports, through a chain of star imports."""
    files = {
        "utils.py": "import os as _os\nimport torch\nimport torch.nn as nn\nfrom torch import optim\n",
        "layers.py": "from utils import *\nimport numpy as np\nnn = None\n",
    }
    assert _star_aliases(tmp_path, files, "utils") == {"torch": "torch", "nn": "torch.nn", "optim": "torch.optim"}
    # layers re-binds `nn` itself: not an import's any more; `np` is its own import
    assert _star_aliases(tmp_path, files, "layers") == {"torch": "torch", "optim": "torch.optim", "np": "numpy"}


def test_a_star_import_follows_all(tmp_path: Path):
    """With `__all__`, only its names are bound; an `__all__` not read as literals binds nothing."""
    files = {
        "listed.py": "import torch\nimport torch.nn as nn\n__all__ = ['nn']\n__all__ += ['helper']\n",
        "computed.py": "import torch\n__all__ = [n for n in dir() if n != 'x']\n",
    }
    assert _star_aliases(tmp_path, files, "listed") == {"nn": "torch.nn"}
    assert _star_aliases(tmp_path, files, "computed") == {}


def test_a_star_import_cycle_or_unknown_module_binds_nothing_more(tmp_path: Path):
    files = {"a.py": "from b import *\nimport torch\n", "b.py": "from a import *\nimport numpy as np\n"}
    assert _star_aliases(tmp_path, files, "a") == {"np": "numpy", "torch": "torch"}
    assert _star_aliases(tmp_path, files, "b") == {"np": "numpy", "torch": "torch"}
    assert _star_aliases(tmp_path, files, "not_in_the_project") == {}


def test_torch_bound_by_a_star_import_is_torch(tmp_path: Path):
    """eval.py has no import of torch of its own: `with torch.no_grad():` still disables grad.
    Without the star import's `torch` (an `__all__` that leaves it out) nothing binds `torch`
    that the engine knows: the grad mode in the block is unknown, and LC302 is silent (as for a
    star import of a library the engine does not read, `from torch_snippets import *`)."""
    (tmp_path / "utils.py").write_text("import torch\n")
    evaluation = tmp_path / "eval.py"
    evaluation.write_text("from utils import *\n\nmodel = torch.nn.Linear(4, 2)\nmodel.eval()\n"
                          "with torch.no_grad():\n    for x in [torch.randn(3, 4)]:\n        print(model(x))\n")
    assert check_source(evaluation.read_text(), str(evaluation)) == []
    (tmp_path / "utils.py").write_text("import torch\n__all__ = []\n")
    assert check_source(evaluation.read_text(), str(evaluation)) == []
    evaluation.write_text(evaluation.read_text().replace("with torch.no_grad():", "if True:"))
    assert [(f.code, f.row) for f in check_source(evaluation.read_text(), str(evaluation))] == [("LC302", 7)]


def test_a_star_import_by_package_path_from_a_namespace_subpackage(tmp_path: Path):
    """`from pkg.sub.utils import *` in `pkg/sub/evaluate.py`, `pkg/sub` holding no
    `__init__.py` and no project marker above: the command line checking that one file finds
    `pkg.sub.utils` (from the directory `pkg` is in) and takes its `torch` (issue 32)."""
    folder = FIXTURES / "project_star_import_package_path"
    shutil.copytree(folder, tmp_path / "proj")
    sub = tmp_path / "proj" / "pkg" / "sub"
    assert not (sub / "__init__.py").exists()
    for name in ("evaluate.py", "evaluate_grad.py"):
        path = sub / name
        want = {(code, row) for code, row in expected(path.read_text(encoding="utf-8"))}
        got = {(f["code"], f["location"]["row"]) for f in run_json("--isolated", "--no-cache", str(path))}
        assert got == want, name
        assert {(f.code, f.row) for f in check_source(path.read_text(), str(path))} == want, name
    assert not run_json("--isolated", "--no-cache", str(sub / "evaluate.py"))


def test_a_module_is_read_again_when_its_star_module_changes(tmp_path: Path):
    (tmp_path / "utils.py").write_text("import torch\n")
    (tmp_path / "helpers.py").write_text("from utils import *\n")
    project = Project(tmp_path)
    assert project.load(tmp_path / "helpers.py").index.imports.aliases == {"torch": "torch"}
    project.trim()
    (tmp_path / "utils.py").write_text("import numpy as torch\n")
    assert project.load(tmp_path / "helpers.py").index.imports.aliases == {"torch": "numpy"}


@pytest.mark.parametrize(("name", "text", "silent"), [
    ("pyproject.toml", '[project]\nname = "x"\ndependencies = ["torch==0.4.1"]\n', True),
    ("requirements.txt", "torch<1.1\nnumpy\n", True),
    ("environment.yml", "dependencies:\n  - pytorch=0.4.1\n  - torchvision\n", True),
    ("Dockerfile", "RUN conda install -y pytorch=0.4.1 torchvision cuda91 -c pytorch\n", True),
    ("requirements.txt", "torch==1.1.0\n", False),  # 1.1 began the order LC202 expects
    ("requirements.txt", "torch>=0.4\n", False),  # a lower bound allows every later version
    ("requirements.txt", "torchvision==0.2.1\npytorch-lightning==0.5\n", False),  # other packages
    ("requirements.txt", "torch==0.4.1\n", True),
    ("environment.yml", "dependencies:\n  - pytorch=1\n", False),  # conda: 1.*, which allows 1.13
    ("requirements.txt", "torch==1.*\n", False),
    ("requirements.txt", "torch==1.0.*\n", True),
    # a README states the environment the code was written for
    ("README.md", "# Relations\n## Requirements\npython==3.6 pytorch==0.4.0\n", True),
    ("README.md", "Tested with pytorch==0.4.1 and torch==2.1.0\n", False),  # one pin allows 2.1
    ("README.md", "pip install torch>=0.4\n", False),
    # a README pins from its commands and requirement lines only, not from its prose
    ("README.md", "Tested with torch<=1.0 at first; newer releases work too.\n", False),
    ("README.md", "## Changelog\n- the scheduler moved (was written for pytorch==0.4.1)\n", False),
    ("README.md", "## Install\n```\npip install torch==0.4.1\n```\n", True),
    ("README.md", "Install it with conda install pytorch=0.4.1 -c pytorch\n", True),
])
def test_a_pinned_older_pytorch_decides_lc202(tmp_path: Path, name: str, text: str, silent: bool):
    """The scheduler stepped first is LC202 unless the project pins a PyTorch before 1.1."""
    shutil.copy(FIXTURES / "project_pinned_torch_0_4" / "train.py", tmp_path / "train.py")
    (tmp_path / "setup.cfg").write_text("[metadata]\nname = x\n", encoding="utf-8")  # the project root
    (tmp_path / name).write_text(text, encoding="utf-8")
    codes = [f["code"] for f in run_json(str(tmp_path / "train.py"))]
    assert codes == ([] if silent else ["LC202"])


def test_without_markers_the_current_directory_is_the_root(tmp_path: Path, monkeypatch):
    """As ruff with no configuration: ``loopcheck .`` in a tree of scripts and packages without
    a pyproject.toml, setup.py, setup.cfg or .git imports the packages from where it runs."""
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "scripts").mkdir()
    script = tmp_path / "scripts" / "train.py"
    script.write_text("")
    monkeypatch.chdir(tmp_path)
    assert find_root(script) == tmp_path.resolve()
    monkeypatch.chdir(tmp_path / "pkg")  # a directory that does not hold the file: its own directory
    assert find_root(script) == script.parent
    (tmp_path / "scripts" / "setup.cfg").write_text("")  # a marker wins
    monkeypatch.chdir(tmp_path)
    assert find_root(script) == script.parent


def test_a_class_bound_by_a_star_import_is_the_project_class(tmp_path: Path):
    """``from averaging import *`` then ``WeightAverage(...)``: the construction is of the
    project's class (:func:`loopcheck.engine.builder._star_class`), so its instance takes the
    class's role: none for a class of no library base (its ``step()`` is its own, read where it
    is called), an optimizer for a subclass of ``torch.optim.SGD``, whatever the variable is
    called. A name the module binds itself is not the star import's."""
    from loopcheck.analysis import build_units

    (tmp_path / "averaging.py").write_text(
        "import torch\n\n\nclass WeightAverage:\n    def __init__(self, params):\n        self.params = list(params)\n\n"
        "    def step(self):\n        pass\n\n    def zero_grad(self):\n        pass\n\n\n"
        "class TeacherSGD(torch.optim.SGD):\n    pass\n"
    )
    train = tmp_path / "train.py"
    train.write_text(
        "import torch\nfrom averaging import *\n\n\ndef main(model):\n"
        "    optimizer2 = WeightAverage(model.parameters())\n    updater = TeacherSGD(model.parameters(), lr=0.1)\n"
        "    optimizer2.zero_grad()\n    optimizer2.step()\n    updater.step()\n"
    )
    index = Project(tmp_path).load(train).index
    unit = build_units(index.tree, index)[0]
    names = {sym.rpartition(":")[2] for sym in unit.roles.optimizers}
    assert names == {"updater"}
    shadowed = train.read_text().replace("def main", "WeightAverage = object\n\n\ndef main")
    train.write_text(shadowed)
    index = Project(tmp_path).load(train).index
    unit = build_units(index.tree, index)[0]
    assert {sym.rpartition(":")[2] for sym in unit.roles.optimizers} == {"optimizer2", "updater"}


def test_a_rewrite_that_keeps_the_modification_time_and_size_is_read_again(tmp_path: Path, monkeypatch):
    """The texts :meth:`Project.source_of` shares between the projects of a process are keyed
    by the file's whole stamp (times, size, inode): a same-size rewrite whose modification time
    is set back (``cp -p``, an archive unpacked) is read again, not served the old text."""
    from loopcheck.engine import project as project_module

    monkeypatch.setattr(project_module, "RACY_NS", 0, raising=False)  # (every file settled: the stamp alone decides)
    path = tmp_path / "a.py"
    path.write_text("x = 1\n")
    past = time.time_ns() - 60 * 10**9
    os.utime(path, ns=(past, past))
    assert Project(tmp_path).source_of(path.resolve())[1] == "x = 1\n"
    time.sleep(0.05)  # (the change time ticks at the kernel's clock)
    path.write_text("x = 2\n")
    os.utime(path, ns=(past, past))
    assert Project(tmp_path).source_of(path.resolve())[1] == "x = 2\n"


def test_a_failed_or_recent_read_is_not_shared(tmp_path: Path, monkeypatch):
    """A file changed within :data:`RACY_NS` is not shared (a change in the same tick of the
    clock would keep its stamp); nor is a failed read (a ``chmod`` changes no modification
    time, and the next project must try again)."""
    from loopcheck.engine import project as project_module

    path = tmp_path / "b.py"
    path.write_text("y = 1\n")
    stamp, text = Project(tmp_path).source_of(path.resolve())
    assert text == "y = 1\n"
    assert not project_module.settled(stamp)
    assert (path.resolve(), stamp) not in project_module._SHARED_TEXTS
    monkeypatch.setattr(project_module, "RACY_NS", 0)
    path.write_bytes(b"y = '\xff'\n")  # not UTF-8: cannot be decoded
    stamp, text = Project(tmp_path).source_of(path.resolve())
    assert text is None and project_module.settled(stamp)
    assert (path.resolve(), stamp) not in project_module._SHARED_TEXTS


def test_a_star_import_binds_the_names_of_the_module_level_only(tmp_path: Path):
    """`from utils import *` binds the names utils binds at its level: not a function's
    parameters or locals, a class body's names, a comprehension's targets, nor what its main
    guard binds (an imported module does not run as `__main__`); a `global` declaration and
    what the module's blocks (`if`, `for`, `try`) bind count."""
    (tmp_path / "utils.py").write_text(
        "import torch\n"
        "def crop(x, device=None):\n    global cache\n    scale = 2\n    return x\n"
        "class Box:\n    size = 3\n"
        "squares = [k * k for k in range(3)]\n"
        "for step in range(2):\n    pass\n"
        "if __name__ == '__main__':\n    device = torch.device('cpu')\nelse:\n    mode = 'lib'\n"
    )
    (tmp_path / "train.py").write_text("from utils import *\n")
    names = Project(tmp_path).star_names("utils", tmp_path / "train.py")
    assert names == {"torch", "crop", "cache", "Box", "squares", "step", "mode"}
