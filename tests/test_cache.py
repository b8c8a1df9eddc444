"""The results cache: where it lives, what invalidates an entry, and that a bad entry or a
concurrent run never changes a result.

Whether a file was checked again or answered from the cache is seen by counting the calls of
:func:`loopcheck.cli.runner.check_job` (``-j1``: in this process).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

import loopcheck
import loopcheck.workspace.cache
import loopcheck.cli.commands
import loopcheck.cli.runner
from loopcheck.workspace.cache import Cache, cache_directory, decode, default_directory, encode
from loopcheck.cli.commands import main
from loopcheck.engine.project import _PROJECTS

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures"

ENGINE = textwrap.dedent(
    """\
    import torch


    def train_one_epoch(model, criterion, loader, optimizer, device):
        for x, y in loader:
            optimizer.zero_grad()
            loss = criterion(model(x.to(device)), y.to(device))
            loss.backward()
            optimizer.step()


    def evaluate(model, loader, device):
        model.eval()
        correct = 0
        with torch.no_grad():
            for x, y in loader:
                correct += (model(x.to(device)).argmax(1) == y.to(device)).sum().item()
        return correct
    """
)
MAIN = textwrap.dedent(
    """\
    import torch
    import torch.nn as nn

    from engine import evaluate, train_one_epoch

    model = nn.Sequential(nn.Linear(20, 64), nn.Dropout(0.2), nn.Linear(64, 2))
    criterion = nn.CrossEntropyLoss()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    loader = [(torch.randn(8, 20), torch.randint(0, 2, (8,)))]
    model.train()
    for epoch in range(90):
        train_one_epoch(model, criterion, loader, optimizer, "cpu")
        acc = evaluate(model, loader, "cpu")
    """
)
# evaluate() that puts the model back in train mode: no LC301 in main.py any more
ENGINE_FIXED = ENGINE.replace("    return correct\n", "    model.train()\n    return correct\n")
BAD = (FIXTURES / "LC101_bad.py").read_text()


class Checks:
    """Counts the files checked (not answered from the cache) by the runs of this test."""

    def __init__(self, monkeypatch) -> None:
        self.names: list[str] = []
        real = loopcheck.cli.runner.check_job

        def counting(job, cache=None):
            self.names.append(os.path.basename(job.filename))
            return real(job, cache)

        monkeypatch.setattr(loopcheck.cli.runner, "check_job", counting)

    def take(self) -> list[str]:
        names, self.names = sorted(self.names), []
        return names


def cli(*args: str):
    """A run of the command line in this process, with what a new process would start from
    (the projects' modules and import resolutions are kept per process), with ``--preview``:
    the rules the projects here break are in preview (tests/test_preview.py tests the default
    selection)."""
    _PROJECTS.clear()
    result = CliRunner().invoke(main, ["-j1", "--preview", *args])
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result.exit_code, result.stdout, result.stderr


@pytest.fixture
def project(tmp_path, monkeypatch) -> Path:
    """A project (``pyproject.toml``) whose main.py calls engine.py; the cache in its default place."""
    monkeypatch.delenv("LOOPCHECK_CACHE_DIR", raising=False)
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'p'\n")
    (tmp_path / "engine.py").write_text(ENGINE)
    (tmp_path / "main.py").write_text(MAIN)
    (tmp_path / "bad.py").write_text(BAD)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def codes(output: str) -> list[str]:
    return sorted(f"{line.split(':')[0]}:{line.split(' ')[1]}" for line in output.splitlines() if ": LC" in line)


def entries(directory: Path) -> list[Path]:
    return sorted(p for p in (directory / loopcheck.__version__).iterdir() if not p.name.startswith("."))


def test_the_cache_directory_is_made_as_ruffs(project):
    cold = cli("--output-format", "concise", ".")
    assert codes(cold[1]) == ["bad.py:LC101", "main.py:LC301"]
    cache = project / ".loopcheck_cache"
    assert (cache / ".gitignore").read_text().splitlines()[-1] == "*"
    assert (cache / "CACHEDIR.TAG").read_text().startswith("Signature: 8a477f597d28d172789f06886806bc55")
    assert len(entries(cache)) == 3
    # git ignores it without being told
    subprocess.run(["git", "init", "-q", str(project)], check=True)
    listed = subprocess.run(["git", "-C", str(project), "ls-files", "--others", "--exclude-standard"],
                            capture_output=True, text=True, check=True).stdout.split()
    assert sorted(listed) == ["bad.py", "engine.py", "main.py", "pyproject.toml"]
    # and it is not searched for files to check
    assert cli("--show-files", ".")[1].count("\n") == 3


def test_the_project_root_holds_it_from_a_subdirectory(project, monkeypatch):
    sub = project / "pkg" / "deep"
    sub.mkdir(parents=True)
    (sub / "t.py").write_text(BAD)
    monkeypatch.chdir(sub)
    assert cli("t.py")[0] == 1
    assert default_directory(sub) == project / ".loopcheck_cache"
    assert len(entries(project / ".loopcheck_cache")) == 1
    assert not (sub / ".loopcheck_cache").exists()


def test_cache_dir_option_wins_over_the_environment(project, monkeypatch, tmp_path_factory):
    env_dir = tmp_path_factory.mktemp("env") / "c"
    opt_dir = tmp_path_factory.mktemp("opt") / "c"
    monkeypatch.setenv("LOOPCHECK_CACHE_DIR", str(env_dir))
    assert cache_directory(None) == env_dir
    cli("bad.py")
    assert len(entries(env_dir)) == 1
    cli("--cache-dir", str(opt_dir), "bad.py")
    assert len(entries(opt_dir)) == 1
    assert not (project / ".loopcheck_cache").exists()
    assert cache_directory("rel", cwd=project) == project / "rel"


def test_no_cache_writes_nothing_and_reads_nothing(project, monkeypatch, tmp_path_factory):
    checks = Checks(monkeypatch)
    env_dir = tmp_path_factory.mktemp("env") / "c"
    cli("--no-cache", ".")
    monkeypatch.setenv("LOOPCHECK_CACHE_DIR", str(env_dir))
    cli("--no-cache", ".")
    assert sorted(p.name for p in project.iterdir()) == ["bad.py", "engine.py", "main.py", "pyproject.toml"]
    assert not env_dir.exists()
    assert checks.take() == ["bad.py", "bad.py", "engine.py", "engine.py", "main.py", "main.py"]
    cli(".")  # fills the cache
    checks.take()
    cli("--no-cache", ".")
    assert checks.take() == ["bad.py", "engine.py", "main.py"]  # the entries were not read


def test_nothing_changed_nothing_is_checked(project, monkeypatch):
    checks = Checks(monkeypatch)
    cold = cli("--output-format", "json", ".")
    assert checks.take() == ["bad.py", "engine.py", "main.py"]
    assert cli("--output-format", "json", ".") == cold
    assert checks.take() == []


def test_a_changed_file_is_checked_again(project, monkeypatch):
    checks = Checks(monkeypatch)
    cli(".")
    checks.take()
    (project / "bad.py").write_text((FIXTURES / "LC101_good.py").read_text())
    code, out, _ = cli("--output-format", "concise", ".")
    assert checks.take() == ["bad.py"]
    assert codes(out) == ["main.py:LC301"]
    # the same text again: the entry was rewritten, not added to
    assert len(entries(project / ".loopcheck_cache")) == 3


def age(tree: Path) -> None:
    """Give every file and directory of ``tree`` a time a minute in the past: entries then
    keep the times of the modules and directories they read (none is too recent to tell)."""
    past = time.time_ns() - 60 * 10**9
    for path in [*tree.rglob("*"), tree]:
        os.utime(path, ns=(past, past))


@pytest.mark.parametrize("aged", [False, True])
def test_a_change_of_an_imported_module_invalidates_the_files_that_read_it(project, monkeypatch, aged):
    if aged:
        age(project)
    checks = Checks(monkeypatch)
    assert codes(cli("--output-format", "concise", "main.py")[1]) == ["main.py:LC301"]
    assert checks.take() == ["main.py"]
    (project / "engine.py").write_text(ENGINE_FIXED)
    code, out, _ = cli("--output-format", "concise", "main.py")
    assert checks.take() == ["main.py"]
    assert (code, codes(out)) == (0, [])
    (project / "engine.py").write_text(ENGINE)
    assert codes(cli("--output-format", "concise", "main.py")[1]) == ["main.py:LC301"]
    assert checks.take() == ["main.py"]


def test_a_module_only_the_pre_filter_read_invalidates_when_it_changes(project, monkeypatch):
    """main.py shows no training loop of its own: it is analyzed only when a module it imports
    does (the pre-filter reads that module's text). An engine.py of stubs at first: main.py is
    skipped, with no findings; then the real engine.py: main.py must be checked again."""
    checks = Checks(monkeypatch)
    (project / "main.py").write_text(MAIN.replace("model.train()\n", ""))
    (project / "engine.py").write_text("def train_one_epoch(*args):\n    pass\n\n\ndef evaluate(*args):\n    return 0\n")
    assert codes(cli("--output-format", "concise", "main.py")[1]) == []
    assert checks.take() == ["main.py"]
    (project / "engine.py").write_text(ENGINE)
    assert codes(cli("--output-format", "concise", "main.py")[1]) == ["main.py:LC301"]
    assert checks.take() == ["main.py"]


def test_a_module_the_pre_filter_read_for_an_imported_name_invalidates_when_it_changes(project, monkeypatch):
    """main.py imports ``train_one_epoch`` from engine.py, which shows training in another
    function and calls helpers.py for its batches: a quiet name while helpers.py holds no
    training (main.py is skipped), one that reaches training once it does (main.py is checked
    again, from the cache entry's record of the modules the pre-filter read)."""
    checks = Checks(monkeypatch)
    (project / "main.py").write_text(MAIN.replace("model.train()\n", ""))
    engine = ENGINE.replace("import torch\n", "import torch\nfrom helpers import run_batches\n", 1)
    engine = engine[: engine.index("    for x, y in loader:")] + "    run_batches(model, criterion, loader, optimizer, device)\n"
    engine += ENGINE[ENGINE.index("\n\ndef evaluate"):] + "\n\ndef finetune(model):\n    model.train()\n"
    (project / "engine.py").write_text(engine)
    (project / "helpers.py").write_text("def run_batches(*args):\n    pass\n")
    assert codes(cli("--output-format", "concise", "main.py")[1]) == []
    assert checks.take() == ["main.py"]
    loop = ENGINE[ENGINE.index("    for x, y in loader:"): ENGINE.index("\n\ndef evaluate")]
    (project / "helpers.py").write_text(f"def run_batches(model, criterion, loader, optimizer, device):\n{loop}\n")
    assert codes(cli("--output-format", "concise", "main.py")[1]) == ["main.py:LC301"]
    assert checks.take() == ["main.py"]


@pytest.mark.parametrize("aged", [False, True])
@pytest.mark.parametrize("module", ["helpers", "tools.helpers"])
def test_a_module_created_where_an_import_looked_invalidates(project, monkeypatch, module, aged):
    """``from helpers import evaluate``: no helpers.py at first (a library's, unknown), then one
    that leaves the model in eval mode; ``tools.helpers``: not even a ``tools`` directory."""
    checks = Checks(monkeypatch)
    (project / "main.py").write_text(MAIN.replace("from engine import evaluate, train_one_epoch",
                                                  f"from engine import train_one_epoch\nfrom {module} import evaluate"))
    if aged:
        age(project)
    assert codes(cli("--output-format", "concise", "main.py")[1]) == []
    checks.take()
    path = project / (module.replace(".", "/") + ".py")
    path.parent.mkdir(exist_ok=True)
    path.write_text(ENGINE)
    assert codes(cli("--output-format", "concise", "main.py")[1]) == ["main.py:LC301"]
    assert checks.take() == ["main.py"]
    path.unlink()
    assert codes(cli("--output-format", "concise", "main.py")[1]) == []
    assert checks.take() == ["main.py"]
    assert codes(cli("--output-format", "concise", "main.py")[1]) == []
    assert checks.take() == []


def test_a_warm_run_reads_no_module_and_looks_for_no_import_whose_times_hold(project, monkeypatch):
    """The modules main.py's check read, and the directories its imports were looked for in,
    have the times stored with its entry: nothing of them is read or looked up again."""
    (project / ".loopcheck_cache").mkdir()  # made by the first run, in the directory imports look in
    age(project)
    checks = Checks(monkeypatch)
    cold = cli("--output-format", "json", "main.py")
    assert checks.take() == ["main.py"]
    hashed, looked = [], []
    real_hash, real_state = loopcheck.workspace.cache._file_hash, loopcheck.workspace.cache._state
    monkeypatch.setattr(loopcheck.workspace.cache, "_file_hash", lambda p: hashed.append(p) or real_hash(p))
    monkeypatch.setattr(loopcheck.workspace.cache, "_state", lambda p: looked.append(p) or real_state(p))
    assert cli("--output-format", "json", "main.py") == cold
    assert checks.take() == []
    assert [p for p in hashed if str(project) in str(p)] == [] and looked == []
    entry = json.loads(entries(project / ".loopcheck_cache")[0].read_text())
    assert [os.path.basename(m[0]) for m in entry["modules"] if m[2] is not None] == ["engine.py"]


def test_a_cold_run_looks_at_each_directory_its_imports_probed_once(project, monkeypatch):
    """The entries one run writes share what was learned of the directories their imports
    were looked for in (each file's check probes ``torch``, ``engine``... next to it): each
    directory's time is taken once, not once per entry (:class:`loopcheck.workspace.cache._ProbeMemo`)."""
    age(project)
    timed = []
    real_stat = loopcheck.workspace.cache._stat
    monkeypatch.setattr(loopcheck.workspace.cache, "_stat", lambda p: timed.append(str(p)) or real_stat(p))
    cli("--output-format", "json", ".")
    directories = [p for p in timed if os.path.isdir(p)]
    assert str(project) in directories
    assert sorted(directories) == sorted(set(directories))
    assert len(entries(project / ".loopcheck_cache")) == 3


class Reads:
    """Records the files the command line reads (:func:`loopcheck.cli.commands.read_file`)."""

    def __init__(self, monkeypatch) -> None:
        self.names: list[str] = []
        real = loopcheck.cli.commands.read_file

        def recording(run, path, max_size, report=None):
            self.names.append(path.name)
            return real(run, path, max_size, report)

        monkeypatch.setattr(loopcheck.cli.commands, "read_file", recording)

    def take(self) -> list[str]:
        names, self.names = sorted(self.names), []
        return names


def test_a_warm_run_reads_only_the_files_with_findings(project, monkeypatch):
    """engine.py has no findings and its size and time are those stored: it is not read;
    bad.py and main.py are read again for their findings' source lines."""
    age(project)
    reads, checks = Reads(monkeypatch), Checks(monkeypatch)
    cold = cli("--output-format", "full", ".")
    assert (reads.take(), checks.take()) == (["bad.py", "engine.py", "main.py"], ["bad.py", "engine.py", "main.py"])
    assert cli("--output-format", "full", ".") == cold
    assert (reads.take(), checks.take()) == (["bad.py", "main.py"], [])
    stamps = {json.loads(e.read_text())["source"][0] for e in entries(project / ".loopcheck_cache")}
    assert stamps == {len(ENGINE), len(MAIN), len(BAD)}


def test_a_file_changed_since_its_entry_is_read_and_checked(project, monkeypatch):
    age(project)
    reads, checks = Reads(monkeypatch), Checks(monkeypatch)
    cli(".")
    reads.take(), checks.take()
    (project / "engine.py").write_text(BAD)
    _, out, _ = cli("--output-format", "concise", ".")
    assert (reads.take(), checks.take()) == (["bad.py", "engine.py", "main.py"], ["engine.py", "main.py"])
    assert codes(out) == ["bad.py:LC101", "engine.py:LC101"]


def test_a_touched_file_is_read_once_then_known_by_its_new_time(project, monkeypatch):
    """``git checkout`` gives a file a new time, not new bytes: its entry still holds (the
    text's hash), takes the new time, and the run after does not read the file."""
    age(project)
    reads, checks = Reads(monkeypatch), Checks(monkeypatch)
    cli(".")
    reads.take(), checks.take()
    past = time.time_ns() - 30 * 10**9
    os.utime(project / "engine.py", ns=(past, past))
    cli(".")
    assert (reads.take(), checks.take()) == (["bad.py", "engine.py", "main.py"], [])
    cli(".")
    assert (reads.take(), checks.take()) == (["bad.py", "main.py"], [])


def test_a_file_too_recent_to_tell_is_read_every_time(project, monkeypatch):
    """Written in the last two seconds (:data:`loopcheck.workspace.cache.RACY_NS`): a change in the same
    tick of the clock would keep its time, so no time is stored and the file is read."""
    reads = Reads(monkeypatch)
    cli(".")
    assert [json.loads(e.read_text())["source"] for e in entries(project / ".loopcheck_cache")] == [None] * 3
    reads.take()
    cli(".")
    assert reads.take() == ["bad.py", "engine.py", "main.py"]


def test_a_file_grown_past_max_file_size_is_skipped_with_a_warning_warm_or_cold(project, monkeypatch):
    age(project)
    cli(".")
    code, _, err = cli("--max-file-size", "100", "engine.py")
    assert "skipped engine.py: " in err and code == 0


def test_settings_that_change_results_have_their_own_entries(project, monkeypatch):
    checks = Checks(monkeypatch)
    cli(".")
    checks.take()
    assert codes(cli("--output-format", "concise", "--select", "LC3", ".")[1]) == ["main.py:LC301"]
    assert checks.take() == ["bad.py", "engine.py", "main.py"]
    assert codes(cli("--output-format", "concise", "--ignore", "LC301", ".")[1]) == ["bad.py:LC101"]
    assert checks.take() == ["bad.py", "engine.py", "main.py"]
    (project / "pyproject.toml").write_text(
        "[project]\nname = 'p'\n[tool.loopcheck.per-file-ignores]\n\"bad.py\" = [\"LC101\"]\n")
    assert codes(cli("--output-format", "concise", ".")[1]) == ["main.py:LC301"]
    assert checks.take() == ["bad.py"]  # its codes changed; the other files' did not
    assert codes(cli("--output-format", "concise", "--select", "LC3", ".")[1]) == ["main.py:LC301"]
    assert checks.take() == []  # each selection keeps its entries


def test_the_src_setting_is_part_of_the_key(project, monkeypatch):
    checks = Checks(monkeypatch)
    lib = project / "lib"
    lib.mkdir()
    (project / "engine.py").rename(lib / "engine.py")
    assert codes(cli("--output-format", "concise", "main.py")[1]) == []  # engine is not found
    checks.take()
    (project / "pyproject.toml").write_text("[project]\nname = 'p'\n[tool.loopcheck]\nsrc = [\"lib\"]\n")
    assert codes(cli("--output-format", "concise", "main.py")[1]) == ["main.py:LC301"]
    assert checks.take() == ["main.py"]


def test_another_version_of_loopcheck_does_not_read_the_entries(project, monkeypatch):
    checks = Checks(monkeypatch)
    cli(".")
    checks.take()
    monkeypatch.setattr(loopcheck, "__version__", "99.0")
    cli(".")
    assert checks.take() == ["bad.py", "engine.py", "main.py"]
    assert (project / ".loopcheck_cache" / "99.0").is_dir()


def test_a_change_of_loopcheck_itself_invalidates(project, monkeypatch):
    checks = Checks(monkeypatch)
    cli(".")
    checks.take()
    monkeypatch.setattr(loopcheck.workspace.cache, "engine_fingerprint", lambda: "another engine")
    cli(".")
    assert checks.take() == ["bad.py", "engine.py", "main.py"]
    cli(".")
    assert checks.take() == []


def test_the_fingerprint_follows_loopchecks_files(monkeypatch):
    first = loopcheck.workspace.cache.engine_fingerprint()
    assert loopcheck.workspace.cache.engine_fingerprint() == first
    monkeypatch.setattr(loopcheck, "__version__", "99.0")
    assert loopcheck.workspace.cache.engine_fingerprint() != first


@pytest.mark.parametrize("damage", [
    b"",  # cut to nothing (a crash while writing, without the temporary file)
    b'{"engine": "',  # cut short
    b"\x00\xff garbage",
    b"[]",  # JSON, not an entry
    b'{"engine": 1, "content": 2}',
    "a valid entry with a foreign class",
    "a valid entry with a missing field",
])
def test_a_damaged_entry_is_a_miss_and_is_rewritten(project, monkeypatch, damage):
    checks = Checks(monkeypatch)
    cold = cli("--output-format", "json", ".")
    checks.take()
    for path in entries(project / ".loopcheck_cache"):
        if isinstance(damage, bytes):
            path.write_bytes(damage)
            continue
        entry = json.loads(path.read_text())
        if not entry["findings"]:
            entry["findings"] = [{"@": "Finding"}]
        if damage == "a valid entry with a foreign class":
            entry["findings"][0]["@"] = "Popen"
        else:
            entry["findings"][0].pop("code", None)
        path.write_text(json.dumps(entry))
    assert cli("--output-format", "json", ".") == cold
    assert checks.take() == ["bad.py", "engine.py", "main.py"]
    assert cli("--output-format", "json", ".") == cold
    assert checks.take() == []


def test_a_cache_directory_that_cannot_be_made_is_not_an_error(project):
    # under a regular file: no mkdir can succeed, not even as root
    code, out, err = cli("--cache-dir", str(project / "bad.py" / "cache"), "--output-format", "concise", ".")
    assert (code, err) == (1, "")
    assert codes(out) == ["bad.py:LC101", "main.py:LC301"]
    assert (project / "bad.py").read_text() == BAD


def test_notebooks_come_back_from_the_cache_with_their_cells(project, monkeypatch):
    import nbformat
    from nbformat.v4 import new_code_cell, new_notebook

    cells = ["import torch\nfrom torch import nn\nmodel = nn.Linear(4, 2)\n"
             "optimizer = torch.optim.SGD(model.parameters(), lr=0.1)",
             "%matplotlib inline",
             "for step in range(10):\n    x = torch.randn(8, 4)\n"
             "    optimizer.zero_grad()\n    nn.utils.clip_grad_norm_(model.parameters(), 1.0)\n"
             "    loss = model(x).pow(2).mean()\n    loss.backward()\n    optimizer.step()"]
    nb = new_notebook(cells=[new_code_cell(c) for c in cells],
                      metadata={"kernelspec": {"name": "k", "language": "python", "display_name": "k"}})
    (project / "train.ipynb").write_text(nbformat.writes(nb))
    checks = Checks(monkeypatch)
    for fmt in ("full", "json", "sarif"):
        cold = cli("--no-cache", "--no-color", "--output-format", fmt, "train.ipynb")
        assert "cell" in cold[1]
        cli("--output-format", fmt, "train.ipynb")
        checks.take()
        assert cli("--no-color", "--output-format", fmt, "train.ipynb") == cold
        assert checks.take() == []
    cli("--fix", "train.ipynb")
    fixed = "".join(json.loads((project / "train.ipynb").read_text())["cells"][2]["source"])
    assert fixed.index("loss.backward()") < fixed.index("clip_grad_norm_")
    assert cli("--output-format", "concise", "train.ipynb")[0] == 0


def test_encode_and_decode_findings_with_fixes():
    from loopcheck.findings import Finding, Related
    from loopcheck.fixes.model import Edit, Fix

    f = Finding("LC101", "m", "a.py", 1, 2, 3, 4, [Related(5, 6, "r", "b.py")], 1, "note",
                Fix("safe", "Move it", (Edit("x\n", 1, 1, 2, 1), Edit("", 3, 1, 3, 1))))
    back = decode(json.loads(json.dumps(encode([f]))))
    assert back == [f] and back[0].fix == f.fix
    with pytest.raises(TypeError):
        encode({"a": 1})
    with pytest.raises(KeyError):
        decode({"@": "Popen", "args": ["true"]})


def test_two_concurrent_runs_share_a_cache_without_harm(tmp_path):
    """Two processes check the same files into one empty cache at the same time; both print
    the reference, and so does a third run from what they left."""
    tree = tmp_path / "tree"
    tree.mkdir()
    for p in sorted(FIXTURES.glob("LC[1-4]*.py"))[:40]:
        shutil.copy(p, tree / p.name)
    shutil.copytree(FIXTURES / "project_engine_main", tree / "project_engine_main")
    env = {**os.environ, "PYTHONHASHSEED": "0", "LOOPCHECK_CACHE_DIR": str(tmp_path / "cache")}
    command = [sys.executable, "-m", "loopcheck", "--preview", "--output-format", "json", "-j2", "."]
    reference = subprocess.run([*command, "--no-cache"], cwd=tree, env=env, capture_output=True)
    assert reference.returncode == 1 and reference.stderr == b""
    runs = [subprocess.Popen(command, cwd=tree, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
            for _ in range(2)]
    results = [(*p.communicate(timeout=600),) for p in runs]
    results = [(p.returncode, out, err) for p, (out, err) in zip(runs, results)]
    assert results == [(1, reference.stdout, b"")] * 2
    warm = subprocess.run(command, cwd=tree, env=env, capture_output=True)
    assert (warm.returncode, warm.stdout, warm.stderr) == (1, reference.stdout, b"")
    leftovers = [p.name for p in (tmp_path / "cache").rglob("*.tmp")]
    assert leftovers == []


def test_an_entrys_real_path_is_realpaths(tmp_path, monkeypatch):
    """Entries are keyed by the file's real path, resolved once per directory: the same as
    ``os.path.realpath`` for links to directories and to files, ``..`` after a link, absent files."""
    (tmp_path / "a" / "b").mkdir(parents=True)
    (tmp_path / "a" / "b" / "x.py").write_text("")
    (tmp_path / "lnk").symlink_to(tmp_path / "a" / "b")
    (tmp_path / "a" / "y.py").symlink_to(tmp_path / "a" / "b" / "x.py")
    monkeypatch.chdir(tmp_path)
    cache = Cache(tmp_path / "cache", fingerprint="f")
    for name in ["a/b/x.py", "lnk/x.py", "a/y.py", "lnk/../a/b/x.py", "./a/b/x.py", str(tmp_path / "lnk" / "x.py"),
                 "nope.py", "lnk/nope.py"]:
        assert cache._realpath(name) == os.path.realpath(name), name


@pytest.mark.parametrize("aged", [False, True])
def test_a_pin_of_pytorch_created_or_changed_invalidates_the_files_it_dates(project, monkeypatch, aged):
    """A file whose LC202 depends on the PyTorch version pinned at the root is checked again
    when a dependency file is made there or changes (engine/pins.py reads them through the
    project)."""
    (project / "sched.py").write_text((FIXTURES / "project_pinned_torch_0_4" / "train.py").read_text())
    if aged:
        age(project)
    checks = Checks(monkeypatch)
    assert codes(cli("--output-format", "concise", "sched.py")[1]) == ["sched.py:LC202"]
    assert checks.take() == ["sched.py"]
    (project / "requirements.txt").write_text("torch==0.4.1\n")
    assert codes(cli("--output-format", "concise", "sched.py")[1]) == []
    assert checks.take() == ["sched.py"]
    (project / "requirements.txt").write_text("torch==2.1.0\n")
    assert codes(cli("--output-format", "concise", "sched.py")[1]) == ["sched.py:LC202"]
    assert checks.take() == ["sched.py"]


def test_a_file_of_the_project_that_changes_its_era_invalidates_the_files_it_dates(tmp_path, monkeypatch):
    """LC302 is silent on a project written for PyTorch < 0.4 (engine/pins.py dates it by the
    code of all its files, read through the project): when another file of it starts using
    ``torch.no_grad()``, the file is checked again and reported."""
    monkeypatch.delenv("LOOPCHECK_CACHE_DIR", raising=False)
    (tmp_path / "setup.cfg").write_text("[metadata]\nname = old\n")
    for name in ("batches.py", "train.py"):
        shutil.copy(FIXTURES / "project_pytorch03_volatile_dataset" / name, tmp_path / name)
    (tmp_path / "predict.py").write_text("def predict(model, x):\n    return model(x)\n")
    monkeypatch.chdir(tmp_path)
    checks = Checks(monkeypatch)
    assert codes(cli("--output-format", "concise", "train.py")[1]) == []
    assert checks.take() == ["train.py"]
    assert codes(cli("--output-format", "concise", "train.py")[1]) == []
    assert checks.take() == []
    (tmp_path / "predict.py").write_text("import torch\n\n\ndef predict(model, x):\n"
                                         "    with torch.no_grad():\n        return model(x)\n")
    assert codes(cli("--output-format", "concise", "train.py")[1]) == ["train.py:LC302"]
    assert checks.take() == ["train.py"]
