"""``--jobs``: the report is the same, byte for byte, from one process, from two, and from a
warm cache: every output format, ``--statistics``, the exit status, standard error, ``--fix``
and ``--diff``; a pool that cannot start or that loses a worker leaves the work to the parent.

The reference is a serial run without cache over every fixture (``fixtures/``, its
``project_*`` folders included); the others must reproduce it exactly.
"""

from __future__ import annotations

import io
import os
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

import loopcheck.check
import loopcheck.cli.runner
from loopcheck.cli.commands import exit_status, lint_paths, main, write_report
from loopcheck.workspace.config import Options, Resolver

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures"
FORMATS = ["concise", "full", "json", "json-lines", "sarif", "github"]
# files with safe and unsafe fixes of several rules, a notebook-free project folder, a clean file
FIX_SET = [
    "LC101_bad.py", "LC102_bad.py", "LC103_bad.py", "LC301_bad.py", "LC302_bad.py", "LC401_bad.py",
    "LC505_bad.py", "LC601_bad.py", "LC604_bad.py", "LC701_bad.py", "LC101_good.py", "project_engine_main",
]


def cli(*args: str):
    """Run the check in this process with ``--preview``: every rule, those in preview included
    (tests/test_preview.py tests the default selection)."""
    result = CliRunner().invoke(main, ["--preview", *args])
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result.exit_code, result.stdout, result.stderr


def differences(got: str, want: str) -> str:
    """The first lines that differ, for an assertion message."""
    import difflib

    return "".join(list(difflib.unified_diff(want.splitlines(True), got.splitlines(True), n=1))[:40])


def rendered(run, fmt: str, statistics: bool = False) -> str:
    """What ``check`` prints for ``run`` (no colour, no fixes applied)."""
    findings = sorted(run.findings, key=lambda f: f.sort_key)
    out = io.StringIO()
    write_report(run, findings, out, output_format=fmt, no_color=True, quiet=run.failed and not findings,
                 statistics=statistics, fixed=0, fixed_warnings=0, unsafe_fixes=False)
    return out.getvalue()


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    """The serial run without cache over all fixtures, every rule (preview on, as :func:`cli`):
    each format's output and the exit status."""
    old = os.getcwd()
    os.chdir(ROOT)
    try:  # rendered here too: the JSON formats print absolute paths, resolved against the cwd
        run = lint_paths(["fixtures"], Resolver(Options(preview=True)), jobs=1, cache=None)
        findings = sorted(run.findings, key=lambda f: f.sort_key)
        outputs = {fmt: rendered(run, fmt) for fmt in FORMATS}
        outputs["statistics"] = rendered(run, "concise", statistics=True)
        outputs["statistics-json"] = rendered(run, "json", statistics=True)
    finally:
        os.chdir(old)
    return outputs, exit_status(run, findings, exit_zero=False, fixed=0), len(run.sources)


def test_the_reference_covers_every_fixture_and_its_projects(reference):
    _outputs, status, checked = reference
    assert status == 1
    files = [p for p in FIXTURES.rglob("*") if p.suffix in (".py", ".ipynb")]
    assert checked == len(files) > 250
    assert any(p.parent.name.startswith("project_") for p in files)


def test_two_processes_then_a_warm_cache_print_the_reference(reference, tmp_path, monkeypatch):
    outputs, status, _checked = reference
    monkeypatch.chdir(ROOT)
    cache = str(tmp_path / "cache")
    cold = cli("-j2", "--cache-dir", cache, "--output-format", "json", "fixtures")
    assert cold == (status, outputs["json"], ""), differences(cold[1] + cold[2], outputs["json"])
    entries = [e for e in (tmp_path / "cache" / loopcheck.__version__).iterdir() if not e.name.startswith(".")]
    assert len(entries) == reference[2]  # one entry per checked file

    calls = []
    real = loopcheck.cli.runner.check_job
    monkeypatch.setattr(loopcheck.cli.runner, "check_job", lambda job, c=None: calls.append(job) or real(job, c))

    for fmt in FORMATS:
        assert cli("--cache-dir", cache, "--output-format", fmt, "--no-color", "fixtures") == (
            status, outputs[fmt], "",
        ), fmt
    assert cli("--cache-dir", cache, "--statistics", "--output-format", "concise", "fixtures") == (
        status, outputs["statistics"], "")
    assert cli("--cache-dir", cache, "--statistics", "--output-format", "json", "fixtures") == (
        status, outputs["statistics-json"], "")
    assert calls == []  # every warm run came from the cache: nothing was checked again


def test_json_from_one_and_two_processes_without_cache_is_the_same(tmp_path, monkeypatch):
    tree = _fix_tree(tmp_path, "tree")
    for name in ["project_base_trainer", "project_import_cycle", "project_src_layout"]:
        shutil.copytree(FIXTURES / name, tree / name)
    monkeypatch.chdir(tree)
    one = cli("-j1", "--no-cache", "--output-format", "json", ".")
    two = cli("-j2", "--no-cache", "--output-format", "json", ".")
    assert one == two
    assert one[0] == 1 and one[1].count('"code"') > 10


def _fix_tree(tmp_path: Path, name: str) -> Path:
    tree = tmp_path / name
    tree.mkdir()
    for item in FIX_SET:
        src = FIXTURES / item
        if src.is_dir():
            shutil.copytree(src, tree / item)
        else:
            shutil.copy(src, tree / item)
    return tree


def _contents(tree: Path) -> dict[str, bytes]:
    return {str(p.relative_to(tree)): p.read_bytes() for p in sorted(tree.rglob("*")) if p.is_file()}


def test_fix_and_diff_are_the_same_serial_parallel_and_from_the_cache(tmp_path, monkeypatch):
    serial, parallel = _fix_tree(tmp_path, "serial"), _fix_tree(tmp_path, "parallel")
    before = _contents(serial)
    cache = str(tmp_path / "cache")

    monkeypatch.chdir(serial)
    diff_serial = cli("-j1", "--no-cache", "--diff", "--unsafe-fixes", ".")
    fix_serial = cli("-j1", "--no-cache", "--fix", "--unsafe-fixes", "--output-format", "concise", ".")

    monkeypatch.chdir(parallel)
    filled = cli("-j2", "--cache-dir", cache, "--output-format", "concise", ".")
    assert filled[0] == 1
    diff_parallel = cli("-j2", "--cache-dir", cache, "--diff", "--unsafe-fixes", ".")  # fixes from the cache
    fix_parallel = cli("-j2", "--cache-dir", cache, "--fix", "--unsafe-fixes", "--output-format", "concise", ".")

    assert diff_serial == diff_parallel
    assert diff_serial[0] == 1 and diff_serial[1].count("+++ ") >= 8
    assert fix_serial == fix_parallel
    assert "fixed" in fix_serial[1]
    assert _contents(serial) == _contents(parallel) != before


def test_a_pool_that_cannot_start_leaves_the_files_to_this_process(tmp_path, monkeypatch):
    tree = _fix_tree(tmp_path, "tree")
    monkeypatch.chdir(tree)
    expected = cli("-j1", "--no-cache", "--output-format", "json", ".")

    def no_pool(*args, **kwargs):
        raise OSError(38, "Function not implemented")  # no semaphores (a sandbox, AWS Lambda)

    monkeypatch.setattr("concurrent.futures.ProcessPoolExecutor", no_pool)
    assert cli("-j2", "--no-cache", "--output-format", "json", ".") == expected


def test_the_workers_are_forked_before_any_text_is_read(tmp_path, monkeypatch):
    """So that they do not start with every file's text in their memory: the pool starts
    once the files to read are known, before the first is read; not for a single file."""
    import loopcheck.cli.commands as cli_module

    tree = _fix_tree(tmp_path, "tree")
    monkeypatch.chdir(tree)
    expected = cli("-j1", "--no-cache", "--output-format", "json", ".")
    read: list[str] = []
    started: list[int] = []
    real_read, real_start = cli_module.read_file, loopcheck.cli.runner.start_pool

    def reading(run, path, *args, **kwargs):
        read.append(str(path))
        return real_read(run, path, *args, **kwargs)

    def starting(workers):
        started.append(len(read))
        return real_start(workers)

    monkeypatch.setattr(cli_module, "read_file", reading)
    monkeypatch.setattr(loopcheck.cli.runner, "start_pool", starting)
    assert cli("-j2", "--no-cache", "--output-format", "json", ".") == expected
    assert started == [0] and len(read) > 1
    read.clear()
    started.clear()
    assert cli("-j2", "--no-cache", "LC301_bad.py")[0] == 1
    assert started == [] and len(read) == 1


def test_a_warm_run_forks_no_pool_for_files_whose_entries_hold_their_findings(tmp_path, monkeypatch):
    """A file with findings is read in a warm run and answered from its entry: no pool is
    forked for it (forking one cost a warm run 0.06-0.2 s); once two files changed, they are
    checked in a pool forked before the texts are read."""
    import time

    tree = _fix_tree(tmp_path, "tree")
    past = time.time() - 60  # (a time too recent gives a file no stamp: it is then always checked)
    for path in tree.rglob("*.py"):
        os.utime(path, (past, past))
    monkeypatch.chdir(tree)
    cache = str(tmp_path / "cache")
    started: list[int] = []
    real_start = loopcheck.cli.runner.start_pool
    monkeypatch.setattr(loopcheck.cli.runner, "start_pool", lambda workers: started.append(workers) or real_start(workers))
    cold = cli("-j2", "--cache-dir", cache, "--output-format", "json", ".")
    assert started == [2] and cold[0] == 1 and cold[1].count('"code"') > 5
    started.clear()
    assert cli("-j2", "--cache-dir", cache, "--output-format", "json", ".") == cold
    assert started == []
    for name in ("LC101_bad.py", "LC102_bad.py"):
        (tree / name).write_text((tree / name).read_text() + "\n# changed\n")
        os.utime(tree / name, (past + 1, past + 1))
    assert cli("-j2", "--cache-dir", cache, "--output-format", "json", ".") == cold
    assert started == [2]


_PARENT = os.getpid()


def _dies_in_a_worker(job, cache=None):
    """Kills the worker process that gets LC301_bad.py (as the OOM killer would)."""
    if os.getpid() != _PARENT and job.filename.endswith("LC301_bad.py"):
        Path("died").write_text(str(os.getpid()))  # in the test's working directory
        os._exit(9)
    return _REAL_CHECK_JOB(job, cache)


_REAL_CHECK_JOB = loopcheck.cli.runner.check_job


@pytest.mark.skipif(not hasattr(os, "fork"), reason="the test's stand-in reaches the workers through fork")
def test_a_worker_that_dies_leaves_the_rest_to_this_process(tmp_path, monkeypatch):
    tree = _fix_tree(tmp_path, "tree")
    monkeypatch.chdir(tree)
    expected = cli("-j1", "--no-cache", "--output-format", "json", ".")
    monkeypatch.setattr(loopcheck.cli.runner, "check_job", _dies_in_a_worker)
    monkeypatch.setattr(loopcheck.cli.runner, "_context", lambda: __import__("multiprocessing").get_context("fork"))
    assert cli("-j2", "--no-cache", "--output-format", "json", ".") == expected
    assert (tree / "died").is_file()  # a worker did die


def test_jobs_option(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "a.py").write_text("x = 1\n")
    assert cli("-j", "0", "a.py")[0] == 0  # 0: one process per core
    code, _out, err = cli("-j", "-1", "a.py")
    assert code == 2 and "-j" in err
    assert loopcheck.cli.runner.default_jobs() >= 1


def test_the_schedule_goes_project_by_project_largest_first(tmp_path):
    from loopcheck.cli.runner import Job, schedule

    small, big = tmp_path / "small", tmp_path / "big"
    for root in (small, big):
        (root / "pkg").mkdir(parents=True)
        (root / "pyproject.toml").write_text("")
    jobs = [
        Job(str(small / "a.py"), "x" * 50, None),
        Job(str(big / "a.py"), "x" * 10, None),
        Job(str(small / "pkg" / "b.py"), "x" * 60, None),
        Job(str(big / "pkg" / "b.py"), "x" * 100, None),
        Job(str(big / "c.py"), "x" * 30, None),
    ]
    # big (140 characters) before small (110); in each, the largest file first
    assert schedule(jobs, [0, 1, 2, 3, 4]) == [3, 4, 1, 2, 0]
    assert schedule(jobs, [2, 0]) == [2, 0]
    assert schedule(jobs, [4]) == [4]


def test_a_pool_hands_out_a_small_projects_files_as_one_task_and_a_large_ones_one_by_one(tmp_path):
    from loopcheck.cli.runner import BATCH_SHARE, Job, batches, schedule

    roots = {}
    for name in ("large", "small", "tiny"):
        roots[name] = tmp_path / name
        roots[name].mkdir()
        (roots[name] / "pyproject.toml").write_text("")
    jobs = [
        Job(str(roots["large"] / "a.py"), "x" * 400, None),
        Job(str(roots["small"] / "a.py"), "x" * 60, None),
        Job(str(roots["large"] / "b.py"), "x" * 300, None),
        Job(str(roots["small"] / "b.py"), "x" * 40, None),
        Job(str(roots["tiny"] / "a.py"), "x" * 20, None),
    ]
    order = schedule(jobs, [0, 1, 2, 3, 4])
    assert order == [0, 2, 1, 3, 4]
    # 820 characters, 2 workers: a project of at most 0.25 * 820 / 2 = 102.5 is one task
    assert BATCH_SHARE == 0.25
    assert batches(jobs, order, 2) == [[0], [2], [1, 3], [4]]
    assert batches(jobs, order, 8) == [[0], [2], [1], [3], [4]]  # 25.6: only tiny is small enough, alone


def test_a_large_projects_small_directories_are_tasks_of_their_own(tmp_path):
    """One project (all the code): each directory holding at most the share is one task, a
    larger one goes file by file; the largest tasks first."""
    from loopcheck.cli.runner import Job, batches, schedule

    (tmp_path / "pyproject.toml").write_text("")
    for d in ("flux", "sdxl", "train"):
        (tmp_path / d).mkdir()
    jobs = [
        Job(str(tmp_path / "flux" / "a.py"), "x" * 30, None),
        Job(str(tmp_path / "train" / "a.py"), "x" * 500, None),
        Job(str(tmp_path / "flux" / "b.py"), "x" * 40, None),
        Job(str(tmp_path / "sdxl" / "a.py"), "x" * 20, None),
        Job(str(tmp_path / "train" / "b.py"), "x" * 200, None),
    ]
    order = schedule(jobs, [0, 1, 2, 3, 4])
    # 790 characters, 2 workers: a directory of at most 98.75 is one task
    assert batches(jobs, order, 2) == [[1], [4], [2, 0], [3]]


def test_the_report_is_the_same_with_tasks_of_several_files(tmp_path, monkeypatch):
    """Two projects, each made one task: the findings of ``-j2`` are those of ``-j1``, file by
    file, in the same order."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(loopcheck.cli.runner, "BATCH_SHARE", 1.0)  # each project is one task
    tasks = []
    real = loopcheck.cli.runner.batches
    monkeypatch.setattr(loopcheck.cli.runner, "batches", lambda *a: tasks.extend(real(*a)) or tasks)
    for name in ("one", "two"):
        root = tmp_path / name
        root.mkdir()
        (root / "pyproject.toml").write_text("")
        for fixture in ("LC101_bad.py", "LC102_bad.py", "LC301_bad.py"):
            (root / fixture).write_text((FIXTURES / fixture).read_text())
    serial = cli("--no-cache", "-j", "1", "one", "two")
    pooled = cli("--no-cache", "-j", "2", "one", "two")
    assert serial[0] == pooled[0] == 1
    assert pooled[1] == serial[1] and serial[1].count("LC1") >= 4
    assert sorted(len(task) for task in tasks) == [3, 3]


def test_a_process_keeps_the_modules_of_one_project_only(tmp_path):
    from loopcheck.engine.project import _PROJECTS, project_for
    from loopcheck.cli.runner import Job, check_job

    roots = []
    for name in ("one", "two"):
        root = tmp_path / name
        root.mkdir()
        (root / "pyproject.toml").write_text("")
        (root / "train.py").write_text((FIXTURES / "LC101_bad.py").read_text())
        roots.append(root)
    _PROJECTS.clear()
    first = check_job(Job(str(roots[0] / "train.py"), (roots[0] / "train.py").read_text(), None))
    assert [p.root for p in _PROJECTS.values()] == [roots[0]]
    second = check_job(Job(str(roots[1] / "train.py"), (roots[1] / "train.py").read_text(), None))
    assert [p.root for p in _PROJECTS.values()] == [roots[1]]
    assert [f.code for f in first.findings] == [f.code for f in second.findings] == ["LC101"]
    assert project_for(roots[1] / "train.py") is next(iter(_PROJECTS.values()))


@pytest.mark.skipif(loopcheck.cli.runner.resident_bytes() is None, reason="no /proc/self/statm")
def test_past_the_memory_budget_every_project_is_let_go(tmp_path, monkeypatch):
    from loopcheck.engine.project import _PROJECTS
    from loopcheck.cli.runner import Job, check_job

    (tmp_path / "pyproject.toml").write_text("")
    (tmp_path / "train.py").write_text((FIXTURES / "LC101_bad.py").read_text())
    job = Job(str(tmp_path / "train.py"), (tmp_path / "train.py").read_text(), None)
    _PROJECTS.clear()
    assert [f.code for f in check_job(job).findings] == ["LC101"]
    assert len(_PROJECTS) == 1
    monkeypatch.setattr(loopcheck.cli.runner, "MEMORY_BUDGET", -1)  # every check is past it
    monkeypatch.setattr(loopcheck.cli.runner, "MEMORY_REGROWTH", -1)
    assert [f.code for f in check_job(job).findings] == ["LC101"]
    assert len(_PROJECTS) == 0


def test_after_letting_go_a_process_waits_for_new_growth(tmp_path, monkeypatch):
    """Freed memory stays with the process: measured against the size at its first check, a
    process once over the budget would let go (and re-read every module) after every file."""
    from loopcheck.engine.project import _PROJECTS
    from loopcheck.cli.runner import Job, check_job

    (tmp_path / "pyproject.toml").write_text("")
    (tmp_path / "train.py").write_text((FIXTURES / "LC101_bad.py").read_text())
    job = Job(str(tmp_path / "train.py"), (tmp_path / "train.py").read_text(), None)
    mb = 1 << 20
    rss = iter([100 * mb, 500 * mb, 400 * mb, 400 * mb, 400 * mb + loopcheck.cli.runner.MEMORY_REGROWTH + 1, 300 * mb])
    monkeypatch.setattr(loopcheck.cli.runner, "resident_bytes", lambda: next(rss))
    monkeypatch.setattr(loopcheck.cli.runner, "_malloc_trim", False)  # (no heap to give back here)
    monkeypatch.setattr(loopcheck.cli.runner, "_first_rss", None)
    monkeypatch.setattr(loopcheck.cli.runner, "_after_release", 0)
    monkeypatch.setattr(loopcheck.cli.runner, "MEMORY_BUDGET", 200 * mb)
    _PROJECTS.clear()
    check_job(job)  # starts at 100, ends at 500: over the budget, let go (400 after)
    assert len(_PROJECTS) == 0
    check_job(job)  # 400: still over the budget, but no new growth since letting go
    assert len(_PROJECTS) == 1
    check_job(job)  # grew past the regrowth margin: let go again
    assert len(_PROJECTS) == 0


def test_the_heap_is_given_back_once_the_process_grew(monkeypatch):
    """``malloc_trim(0)`` runs when the resident memory grew by :data:`TRIM_GROWTH` since the
    last time it ran, and the memory budget is then measured on what remains."""
    mb = 1 << 20
    rss = iter([100 * mb, 60 * mb, 70 * mb, 90 * mb, 80 * mb, 85 * mb, 85 * mb, 84 * mb])
    trims = []
    monkeypatch.setattr(loopcheck.cli.runner, "resident_bytes", lambda: next(rss))
    monkeypatch.setattr(loopcheck.cli.runner, "_malloc_trim", trims.append)
    monkeypatch.setattr(loopcheck.cli.runner, "_trimmed_at", 0)
    assert loopcheck.cli.runner.trim_heap() == 60 * mb  # 100 MB, 60 MB once given back
    assert loopcheck.cli.runner.trim_heap() == 70 * mb  # grew 10 MB: not yet
    assert loopcheck.cli.runner.trim_heap() == 80 * mb  # grew 30 MB since it was 60
    assert loopcheck.cli.runner.trim_heap() == 85 * mb
    assert loopcheck.cli.runner.trim_heap(force=True) == 84 * mb
    assert trims == [0, 0, 0]


@pytest.fixture
def gc_state(monkeypatch):
    """Python's collector thresholds and nothing frozen, restored after the test."""
    import gc

    before = gc.get_threshold()
    gc.unfreeze()
    gc.set_threshold(700, 10, 10)
    monkeypatch.setattr(loopcheck.check, "_gc_tuned", False)
    yield gc
    gc.unfreeze()
    gc.set_threshold(*before)


class _Cyclic:
    def __init__(self) -> None:
        self.me = self


def test_a_checking_process_tunes_the_collector_and_freezes_what_survives_a_check(gc_state, tmp_path, monkeypatch):
    import weakref

    from loopcheck.check import GC_THRESHOLDS
    from loopcheck.cli.runner import Job, check_job

    (tmp_path / "pyproject.toml").write_text("")
    (tmp_path / "train.py").write_text((FIXTURES / "LC101_bad.py").read_text())
    monkeypatch.setattr(loopcheck.cli.runner, "_first_rss", None)
    assert [f.code for f in check_job(Job(str(tmp_path / "train.py"), (tmp_path / "train.py").read_text(), None)).findings] == ["LC101"]
    assert gc_state.get_threshold() == GC_THRESHOLDS
    frozen = gc_state.get_freeze_count()
    assert frozen > 0  # what survived the check is frozen
    garbage = _Cyclic()
    dead = weakref.ref(garbage)
    del garbage
    kept = _Cyclic()
    loopcheck.check.settle_gc(released=False)
    assert dead() is None  # the cycles of a check are collected
    assert gc_state.get_freeze_count() > frozen  # the survivors are frozen
    frozen_cycle = weakref.ref(kept)
    del kept  # frozen: not collected until every project is let go (the memory safety net)
    loopcheck.check.settle_gc(released=False)
    assert frozen_cycle() is not None
    loopcheck.check.settle_gc(released=True)
    assert frozen_cycle() is None


def test_a_program_with_its_own_collector_thresholds_keeps_them(gc_state):
    gc_state.set_threshold(1000, 5, 5)
    loopcheck.check.tune_gc()
    assert gc_state.get_threshold() == (1000, 5, 5)
    loopcheck.check.settle_gc(released=True)
    assert gc_state.get_freeze_count() == 0


def test_jobs_are_capped_at_the_files_and_the_cores(tmp_path, monkeypatch):
    """``-j 32`` starts no more workers than there are files to check, nor than cores (issue
    36, F3: 32 workers on 2 cores)."""
    for i in range(5):
        (tmp_path / f"m{i}.py").write_text("import torch\nmodel.eval()\n")
    monkeypatch.chdir(tmp_path)
    started: list[int] = []
    monkeypatch.setattr(loopcheck.cli.runner, "start_pool", lambda workers: started.append(workers))
    monkeypatch.setattr(loopcheck.cli.runner, "default_jobs", lambda: 3)
    assert cli("-j", "32", "--no-cache", ".")[0] == 0
    assert started == [3]
    started.clear()
    assert cli("-j", "32", "--no-cache", "m0.py", "m1.py")[0] == 0
    assert started == [2]
    assert loopcheck.cli.runner.workers_for(32, 0) == 1
