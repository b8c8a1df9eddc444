"""Checking many files: from the cache, or in a pool of worker processes, results in order.

The command line reads and names the files itself, then hands the texts to :func:`check_all`,
which gives back one :class:`Outcome` per :class:`Job`, in the jobs' order, whatever order
they were computed in, so the report is the same byte for byte with one process or many, with
the cache or without:

1. each job whose cache entry is still valid (:meth:`loopcheck.workspace.cache.Cache.get`) is answered
   from it, without parsing anything;
2. the others are checked (:func:`check_job`) in the order of :func:`schedule` (project by
   project, the largest first; in each, the largest files first): in this process when
   there is one left or ``jobs`` is 1, else in a
   :class:`concurrent.futures.ProcessPoolExecutor` of ``jobs`` workers (forked on Linux, so
   they start with the parent's modules already imported; the command line forks them before
   it reads the files' texts, :func:`start_pool`); each worker writes the cache entries of the
   files it checked. A pool that cannot start, or that breaks (a worker
   killed), leaves the rest to this process, as a serial run would do them.

Each file is checked in a big-stack thread (:func:`loopcheck.parsing.run_deep`), in the
worker as in a serial run. A project's imported modules are read once per process, and let
go when the process moves to another project or its memory grew by :data:`MEMORY_BUDGET`;
a pool hands out a small project's files as one task (:func:`batches`), so that one worker
reads its modules (a large project's files go one by one: a module many of them import is
then parsed once in each worker that needs it).
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from itertools import groupby
from pathlib import Path
from typing import TYPE_CHECKING, Collection, Iterator

from loopcheck.check import settle_gc, tune_gc

if TYPE_CHECKING:
    from loopcheck.check import SourceFile
    from loopcheck.findings import Finding
    from loopcheck.workspace.cache import Cache


@dataclass
class Job:
    """One file to check.

    Attributes:
        filename: the name findings carry (the path as found, or ``--stdin-filename``).
        text: what is checked: the program (line endings made ``\\n``), or a notebook's JSON.
        codes: the rule codes to run for this file (``None``: all).
        src: the project's extra source roots (the ``src`` setting).
        entry: the cache entry's name, or ``None`` when the result is not cached.
        stamp: the file's ``[size, mtime_ns]`` taken before it was read
            (:func:`loopcheck.workspace.cache.source_stamp`), kept with the cache entry; ``None``: none.
        ignore_noqa: report what ``# noqa`` comments would suppress (``--ignore-noqa``).
    """

    filename: str
    text: str
    codes: Collection[str] | None
    src: tuple = ()
    entry: str | None = None
    stamp: list | None = None
    ignore_noqa: bool = False


@dataclass
class Outcome:
    """The result of one :class:`Job`.

    Attributes:
        findings: the findings (empty on error).
        source: the checked file as the reporters need it; ``None`` when ``error`` is set.
        error: what went wrong, for ``loopcheck: ...`` on standard error (the file is then
            not reported and the run fails): ``cannot read X: ...`` for a notebook nbformat
            cannot read, ``internal error while checking X: ...`` for an analyzer bug.
        cached: the result came from the cache.
    """

    findings: list[Finding]
    source: SourceFile | None
    error: str | None = None
    cached: bool = False


def default_jobs() -> int:
    """All the cores this process may run on (its CPU affinity where the OS tells it)."""
    try:
        return max(len(os.sched_getaffinity(0)), 1)
    except (AttributeError, OSError):
        return max(os.cpu_count() or 1, 1)


def workers_for(requested: int, files: int) -> int:
    """How many processes check ``files`` files when ``requested`` were asked for (``-j``):
    no more than the files, nor than the cores (:func:`default_jobs`); at least one. More
    workers than cores only share them, each with its own copy of the projects' modules
    (``-j 32`` on 2 cores started 32 workers)."""
    return max(1, min(requested, files, default_jobs()))


#: A process that checks many files lets go of the projects' modules (their trees) when its
#: memory grew by more than this many bytes since its first check (see :func:`check_job`): a
#: safety net only. Within a project :meth:`Project.trim` already bounds what is kept; the
#: rest of the growth is per-module tables. The memory is measured after :func:`trim_heap`
#: gave the C heap's free memory back: otherwise the budget counts memory glibc keeps for
#: nothing and lets the modules go over and over.
MEMORY_BUDGET = 256 * 1024 * 1024
#: ... and grew again by this much since it last let go (freed memory is reused, not given
#: back to the system: without this, a process over the budget would let go after every file).
MEMORY_REGROWTH = 64 * 1024 * 1024
_first_rss: int | None = None
_after_release = 0


#: :func:`trim_heap` gives memory back once the process grew by this many bytes since it last did.
TRIM_GROWTH = 16 * 1024 * 1024
_trimmed_at = 0
_malloc_trim = None  # glibc's malloc_trim, False where there is none


def trim_heap(force: bool = False) -> int | None:
    """Give the C heap's free memory back to the system (glibc's ``malloc_trim(0)``) when this
    process's resident memory grew by :data:`TRIM_GROWTH` since the last time (or ``force``);
    returns the resident bytes after it (:func:`resident_bytes`).

    Python frees the objects of a check (its syntax trees, IR and tables), but glibc keeps the
    freed blocks larger than 512 bytes (dicts, lists, sets) in its heap: the process's resident
    memory then counted memory nothing used, and :data:`MEMORY_BUDGET` let the projects' modules
    go for it, to read and parse them again. Elsewhere (no glibc) nothing is done."""
    global _trimmed_at, _malloc_trim
    now = resident_bytes()
    if now is None or not (force or now - _trimmed_at > TRIM_GROWTH):
        return now
    if _malloc_trim is None:
        _malloc_trim = False
        if sys.platform.startswith("linux"):
            try:
                import ctypes

                _malloc_trim = ctypes.CDLL("libc.so.6").malloc_trim  # (musl has neither)
            except (OSError, AttributeError):
                pass
    if _malloc_trim:
        _malloc_trim(0)
        now = resident_bytes() or now
    _trimmed_at = now
    return now


def resident_bytes() -> int | None:
    """This process's resident memory now (Linux ``/proc/self/statm``), or ``None``."""
    try:
        with open("/proc/self/statm", "rb") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError, AttributeError):
        return None


def check_job(job: Job, cache: Cache | None = None) -> Outcome:
    """Check one file (:func:`loopcheck.check.lint_text` in a big-stack thread), recording the
    project modules it reads, and store the result in ``cache`` when ``job.entry`` is set.
    Never raises for a problem of the file: that is :attr:`Outcome.error`.

    The modules a check reads stay in memory for the next files of the same project. So that
    a process checking many projects, or one huge project, does not grow without bound, the
    other projects are let go when a file of a new project comes, and every project when the
    process's memory grew by more than :data:`MEMORY_BUDGET` (modules are then read again as
    needed; results do not change)."""
    global _first_rss, _after_release
    from loopcheck.check import describe_error, lint_text
    from loopcheck.engine.project import forget_projects, project_for
    from loopcheck.parsing import run_deep
    from loopcheck.workspace.notebook import NotebookError

    if _first_rss is None:
        tune_gc()
        _first_rss = resident_bytes() or 0

    def lint():
        project = project_for(job.filename, job.src)
        forget_projects(keep=project)
        if project is None:
            return (*lint_text(job.text, job.filename, job.codes, job.src, ignore_noqa=job.ignore_noqa), None)
        with project.recording() as reads:
            found, checked = lint_text(job.text, job.filename, job.codes, job.src, project, ignore_noqa=job.ignore_noqa)
        return found, checked, reads

    try:
        found, checked, reads = run_deep(lint)
    except NotebookError as err:
        return Outcome([], None, f"cannot read {job.filename}: {err}")
    except Exception as err:  # noqa: BLE001 - an analyzer bug must not hide the other files' findings
        return Outcome([], None, f"internal error while checking {job.filename}: {describe_error(err)}")
    finally:
        settle_gc()
        now = trim_heap()
        if now is not None and now - _first_rss > MEMORY_BUDGET and now > _after_release + MEMORY_REGROWTH:
            forget_projects()
            settle_gc(released=True)
            _after_release = trim_heap(force=True) or now
    if cache is not None and job.entry is not None:
        cache.put(job.entry, job.text, found, checked.notebook, reads, job.stamp)
    return Outcome(found, checked)


def check_jobs(jobs: list[Job], cache: Cache | None = None) -> list[Outcome]:
    """:func:`check_job` of each of ``jobs``, in order (one task of a pool)."""
    return [check_job(job, cache) for job in jobs]


def _cached(job: Job, cache: Cache | None) -> Outcome | None:
    if cache is None or job.entry is None:
        return None
    hit = cache.get(job.entry, job.text, job.stamp)
    if hit is None:
        return None
    from loopcheck.check import SourceFile

    findings, notebook = hit
    program = notebook.source if notebook is not None else job.text
    return Outcome(findings, SourceFile(job.filename, program, notebook), cached=True)


def start_pool(workers: int):
    """A pool of ``workers`` processes, forked now (``None`` when a pool cannot start here):
    call it before reading the files' texts, so that the workers do not start with them.
    A forked worker's resident memory counts every page of its parent, the texts read
    included. Give it to :func:`check_all`, which shuts it down."""
    from concurrent.futures import ProcessPoolExecutor
    from concurrent.futures.process import BrokenProcessPool

    executor = None
    try:
        executor = ProcessPoolExecutor(workers, mp_context=_context())
        executor.submit(int)  # a pool forks its workers at its first task
    except (OSError, ValueError, RuntimeError, NotImplementedError, ImportError, BrokenProcessPool):
        if executor is not None:
            executor.shutdown(wait=False, cancel_futures=True)
        return None
    return executor


def check_all(jobs: list[Job], cache: Cache | None = None, workers: int = 1, pool=None) -> Iterator[Outcome]:
    """The outcome of each job, in the order of ``jobs`` (see the module docstring).

    Args:
        jobs: the files to check.
        cache: where results are looked up and stored (``None``: nowhere).
        workers: how many processes may check files at once (1: this one only).
        pool: a pool of ``workers`` processes already started (:func:`start_pool`), used
            when more than one file is left to check, and shut down in any case.
    """
    try:
        outcomes: list[Outcome | None] = [_cached(job, cache) for job in jobs]
        todo = [i for i, o in enumerate(outcomes) if o is None]
        if cache is not None and todo and any(jobs[i].entry is not None for i in todo) and not cache.prepare():
            cache = None  # the directory cannot be written: check without storing
        todo = schedule(jobs, todo)
        workers = workers_for(workers, len(todo))
        if workers > 1:
            yield from _in_pool(jobs, outcomes, todo, cache, workers, pool)
            return
    finally:
        if pool is not None:
            pool.shutdown(wait=True, cancel_futures=True)
    if len(todo) > 1:  # in the schedule's order, then given back in the jobs' order
        for i in todo:
            outcomes[i] = check_job(jobs[i], cache)
    for i, outcome in enumerate(outcomes):
        yield outcome if outcome is not None else check_job(jobs[i], cache)


def schedule(jobs: list[Job], todo: list[int]) -> list[int]:
    """The order to check the jobs ``todo`` (indexes into ``jobs``) in: project by project
    (the files whose imports resolve from the same root, so that a process reads a project's
    modules once and then lets them go), the largest projects first and, in each, the
    largest files first (so that no big file is left for the end while the other processes
    have nothing to do)."""
    if len(todo) < 2:
        return list(todo)
    group, size = _projects(jobs, todo)
    return sorted(todo, key=lambda i: (-size[group[i]], group[i], -_size(jobs[i]), i))


#: A project holding at most this share of the code a pool checks, per worker, is checked
#: by one worker (:func:`batches`).
BATCH_SHARE = 0.25


def batches(jobs: list[Job], order: list[int], workers: int) -> list[list[int]]:
    """The tasks a pool of ``workers`` hands out, from the :func:`schedule` ``order``: the
    files of a project holding at most :data:`BATCH_SHARE` of the code per worker are one
    task, so that one worker reads the modules they import (with a task per file, every
    worker took files of every project and parsed its imported modules again). A larger
    project (huggingface/diffusers checked alone) is cut the same way by directory (the files
    of ``tests/pipelines/flux/`` import the same pipeline), and a directory larger than that
    share goes file by file, so that the workers share it. Projects stay in the order's order
    and a project's tasks go largest first, so that the small tasks left at the end even out
    the workers."""
    group, size = _projects(jobs, order)
    limit = BATCH_SHARE * sum(size.values()) / max(workers, 1)
    out: list[list[int]] = []
    for project, members in groupby(order, key=group.__getitem__):
        members = list(members)
        out.extend([members] if size[project] <= limit else _by_directory(jobs, members, limit))
    return out


def _by_directory(jobs: list[Job], members: list[int], limit: float) -> list[list[int]]:
    """``members`` as tasks: the files of one directory together when they hold at most
    ``limit`` characters, else one by one; the largest tasks first (files keep their order in a
    task)."""
    parts: dict[str, list[int]] = {}
    for i in members:
        parts.setdefault(os.path.dirname(os.path.abspath(jobs[i].filename)), []).append(i)
    tasks: list[list[int]] = []
    for part in parts.values():
        tasks.extend([part] if sum(_size(jobs[i]) for i in part) <= limit else ([i] for i in part))
    return sorted(tasks, key=lambda task: -sum(_size(jobs[i]) for i in task))


def _projects(jobs: list[Job], todo: list[int]) -> tuple[dict[int, tuple], dict[tuple, int]]:
    """``index -> project`` of the jobs ``todo`` (a project: ``(root, src roots)``) and each
    project's size (:func:`_size` of its jobs among ``todo``)."""
    from loopcheck.engine.project import find_root

    roots: dict[str, str] = {}
    group: dict[int, tuple] = {}
    size: dict[tuple, int] = {}
    for i in todo:
        name = jobs[i].filename
        directory = os.path.dirname(os.path.abspath(name))
        if directory not in roots:
            roots[directory] = str(find_root(Path(name).resolve()))
        group[i] = (roots[directory], tuple(str(s) for s in jobs[i].src))
        size[group[i]] = size.get(group[i], 0) + _size(jobs[i])
    return group, size


def _size(job: Job) -> int:
    """How much code a job holds, roughly: its characters (a notebook's JSON, with its
    outputs and markup, counts an eighth)."""
    return len(job.text) // 8 if job.filename.endswith(".ipynb") else len(job.text)


def _context():
    import multiprocessing

    if sys.platform.startswith("linux"):
        return multiprocessing.get_context("fork")
    return multiprocessing.get_context()


def _in_pool(jobs: list[Job], outcomes: list[Outcome | None], todo: list[int], cache: Cache | None,
             workers: int, pool=None) -> Iterator[Outcome]:
    from concurrent.futures import ProcessPoolExecutor
    from concurrent.futures.process import BrokenProcessPool

    futures: dict[int, tuple[object, int]] = {}  # job index -> (its task's future, its place in the task)
    executor = pool
    try:
        if executor is None:
            executor = ProcessPoolExecutor(workers, mp_context=_context())
        for task in batches(jobs, todo, workers):
            future = executor.submit(check_jobs, [jobs[i] for i in task], cache)
            for place, i in enumerate(task):
                futures[i] = (future, place)
    except (OSError, ValueError, RuntimeError, NotImplementedError, ImportError, BrokenProcessPool):
        futures = {}  # no pool on this system (no semaphores, no fork): one process does it all
        if executor is not None:
            executor.shutdown(wait=False, cancel_futures=True)
            executor = None
    broken = False
    try:
        for i, outcome in enumerate(outcomes):
            if outcome is None:
                future, place = futures.get(i, (None, 0))
                if future is not None and not broken:
                    try:
                        outcome = future.result()[place]
                    except BrokenProcessPool:
                        broken = True  # a worker died (killed, out of memory): the rest here
                    except Exception:  # noqa: BLE001 - a result that did not come back: here
                        outcome = None
                if outcome is None:
                    outcome = check_job(jobs[i], cache)
            yield outcome
    finally:
        if executor is not None:
            executor.shutdown(wait=True, cancel_futures=True)
