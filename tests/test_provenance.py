"""What a loss is computed from is found in work that grows with the names it reaches, not
with the paths between them (counted in calls of ``provenance``, not timed)."""

from __future__ import annotations

from pathlib import Path

from loopcheck.check import lint_text
from loopcheck.engine import roles

ROOT = Path(__file__).resolve().parent.parent
FIXTURE = ROOT / "fixtures" / "valid" / "multiscale_losses_from_shared_loop_targets.py"
#: The most ``provenance`` calls checking the fixture may take: it reaches 7 symbols (the loss
#: and the six lists its loops iterate); following every path between them takes 21083.
BOUND = 50


def test_names_that_iterate_one_another_are_followed_once_per_query(monkeypatch):
    """``provenance`` follows a loop target with no assignment of its own into what its loops
    iterate. In the fixture one target ``f`` is reused by five loops and a comprehension over
    lists that are filled from ``f``, so each of those lists leads back to all of them. When
    every recursive call started afresh (only the chain of callers excluded), the calls
    enumerated every path through these lists: 21083 calls for one loss, a number that grows
    factorially with the lists (minutes on a real training script, in an order set by the
    hash seed). Each iterated name is now followed once per query, so the count stays near the
    number of names; the models found (the encoder) stay the same, and the file has no finding."""
    calls = 0
    found: dict[str, frozenset[str] | None] = {}
    real = roles._Inference.provenance

    def counting(self, sym, *args, **kwargs):
        nonlocal calls
        calls += 1
        result = real(self, sym, *args, **kwargs)
        if not args and not kwargs:
            found[sym] = result  # a query (a loss), not a step of one
        return result

    monkeypatch.setattr(roles._Inference, "provenance", counting)
    findings, _ = lint_text(FIXTURE.read_text(encoding="utf-8"), str(FIXTURE))
    assert findings == []
    assert found == {"loss": frozenset({"encoder"})}
    assert calls <= BOUND, f"{calls} calls of provenance (at most {BOUND} expected)"
