"""Cancellation points inside the walks of a whole module that one check makes.

The language server stops a stale check of a document at the next step of the analysis
(:func:`~loopcheck.analysis.check_parsed`'s ``interrupt``, called between two functions and
between two units). A few steps are walks of the whole module that take a large share of a
check on a large file (which imports fail, the folders of ``sys.path``, the names nothing
binds, the order of the module's nodes for the roles); between two such points they would run
whole. Each of them calls :func:`checkpoint` as it goes (per top-level statement, or every
:data:`NODES` nodes), which calls the check's ``interrupt`` where the caller made the step
:func:`interruptible`, and does nothing elsewhere: the same walk run in the middle of building
a function (whose half-built state must not be left behind) is never stopped.

A walk stopped there leaves nothing half-made: each one stores its answer only once it is
complete, and the step that calls it is one after which the check may end (as at
``interrupt``'s own calls).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar

#: Seconds between two calls of the check's ``interrupt`` from :func:`checkpoint` (it polls a
#: connection: a system call, too dear for every statement of a 15,000-line file).
INTERVAL_S = 0.005
#: Nodes a walk over every node of a tree visits between two calls of :func:`checkpoint`.
NODES = 1024


class _Point:
    """The ``interrupt`` of the step under way and when it is next called."""

    __slots__ = ("interrupt", "due")

    def __init__(self, interrupt: Callable[[], None]) -> None:
        self.interrupt = interrupt
        self.due = 0.0


_current: ContextVar[_Point | None] = ContextVar("loopcheck_interrupt", default=None)


def checkpoint() -> None:
    """Call the ``interrupt`` of the step under way (:func:`interruptible`), at most every
    :data:`INTERVAL_S`; what it raises ends the check. Nothing outside such a step."""
    point = _current.get()
    if point is None:
        return
    now = time.monotonic()
    if now >= point.due:
        point.due = now + INTERVAL_S
        point.interrupt()


@contextmanager
def interruptible(interrupt: Callable[[], None] | None) -> Iterator[None]:
    """Within the block, :func:`checkpoint` calls ``interrupt`` (``None``: nothing): the
    block is a step of the check after which the check may end."""
    if interrupt is None:
        yield
        return
    token = _current.set(_Point(interrupt))
    try:
        yield
    finally:
        _current.reset(token)
