"""Cancellation points inside the walks of a whole module (loopcheck/engine/interrupts.py): a
stale check in the language server's template stops within them, and leaves nothing half-made."""

from __future__ import annotations

import traceback
from pathlib import Path

import libcst as cst
import pytest

from loopcheck.analysis import check_parsed
from loopcheck.engine import interrupts
from loopcheck.engine.import_failure import _read
from loopcheck.engine.interrupts import checkpoint, interruptible
from loopcheck.engine.roles import _nodes_in_try, _Spans
from loopcheck.engine.search_path import folders_before
from loopcheck.engine.undefined import resolve
from loopcheck.server.reparse import Reparser

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
STATEMENTS = 300
SCRIPT = "import sys\nimport torch\n\n" + "".join(
    f"def helper_{n}(values):\n    try:\n        total = sum(values)\n    except TypeError:\n        total = 0\n"
    f"    return total * {n}\n\n" for n in range(STATEMENTS)
) + 'if __name__ == "__main__":\n    helper_1([1, 2])\n'


class Stop(BaseException):
    """What the test's interrupt raises."""


def stop() -> None:
    raise Stop


@pytest.fixture
def every_time(monkeypatch):
    """Each checkpoint calls the interrupt (no interval between two calls)."""
    monkeypatch.setattr(interrupts, "INTERVAL_S", 0.0)


def test_a_checkpoint_outside_an_interruptible_step_does_nothing():
    checkpoint()  # no step under way
    with interruptible(None):
        checkpoint()
    with interruptible(stop):
        with pytest.raises(Stop):
            checkpoint()
    checkpoint()  # the step is over


def test_the_interrupt_is_called_at_most_once_per_interval():
    calls = []
    with interruptible(lambda: calls.append(1)):
        checkpoint()
        checkpoint()  # within INTERVAL_S of the first
    assert calls == [1]


@pytest.mark.parametrize("walk", [
    lambda m: resolve(m),
    lambda m: _Spans(m).span(m),
    lambda m: _nodes_in_try(m),
    lambda m: folders_before(SCRIPT, Path("/project/train.py")),
    lambda m: _read(SCRIPT),
], ids=["undefined names", "roles' node order", "try statements", "search path", "import reading"])
def test_each_whole_module_walk_checks_for_cancellation_as_it_goes(every_time, walk):
    module = cst.parse_module(SCRIPT)
    calls = []
    with interruptible(lambda: calls.append(1)):
        walk(module)
    assert len(calls) >= 10  # per top-level statement, or every NODES nodes
    with interruptible(stop), pytest.raises(Stop):
        walk(module)


def test_a_stopped_node_order_keeps_no_half_made_table(every_time):
    module = cst.parse_module(SCRIPT)
    spans = _Spans(module)
    with interruptible(stop), pytest.raises(Stop):
        spans.span(module)
    whole = _Spans(module)
    assert spans.span(module) == whole.span(module) and spans.sites.keys() == whole.sites.keys()


def test_a_check_stopped_in_the_import_check_leaves_the_reparser_this_versions_tree(tmp_path, every_time):
    path = tmp_path / "train.py"
    script = (FIXTURES / "LC401_bad.py").read_text(encoding="utf-8") + "\n" + SCRIPT  # a training script
    path.write_text(script)
    reparser = Reparser()
    check_parsed(script, str(path), parse=reparser.parse, tables=reparser.tables)
    edited = script.replace("helper_1([1, 2])", "helper_2([1, 2])")
    seen = []

    def stop_in_the_import_check() -> None:
        seen.extend(f.filename for f in traceback.extract_stack())
        raise Stop

    with pytest.raises(Stop):
        check_parsed(edited, str(path), parse=reparser.parse, tables=reparser.tables,
                     interrupt=stop_in_the_import_check)
    assert any(name.endswith("import_failure.py") for name in seen)  # (before the parse, once)
    assert reparser.text == edited and reparser.reparsed == 1
