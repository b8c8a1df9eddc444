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


def _backward_models(source: str) -> dict[str, frozenset[str] | None]:
    """The models each ``backward()`` of ``source``'s module code is found to reach, by loss."""
    import textwrap

    import libcst as cst

    from loopcheck.analysis import build_units

    unit = build_units(cst.parse_module(textwrap.dedent(source)))[0]
    return {ev.subject: ev.extra.get("models") for ev in unit.events if ev.kind == "backward"}


_TD3_HEAD = """
    import numpy as np
    import torch
    import torch.nn as nn
    import torch.nn.functional as F

    actor = nn.Linear(6, 2)
    critic = nn.Linear(8, 1)
    rng = np.random.default_rng(0)
    obs = rng.standard_normal((1000, 6), dtype=np.float32)
    rew = rng.standard_normal((1000, 1), dtype=np.float32)
    for it in range(10):
        idx = rng.integers(0, 1000, 64)
        state, reward = obs[idx], rew[idx]
"""


def test_a_loss_reaches_no_model_through_what_no_grad_computed_nor_a_new_tensor_of_a_sample():
    """TD3's critic loss: the target action is computed under ``no_grad`` (no graph links it to
    the actor), and the state and reward, sampled by a call the engine does not know, are
    re-bound to new tensors (``torch.tensor``) before the critic reads them: the loss reaches the
    critic only."""
    found = _backward_models(_TD3_HEAD + """
        state = torch.tensor(state)
        reward = torch.tensor(reward)
        with torch.no_grad():
            target = reward + 0.99 * critic(torch.cat([state, actor(state)], 1))
        critic_loss = F.mse_loss(critic(torch.cat([state, torch.zeros(64, 2)], 1)), target)
        critic_loss.backward()
    """)
    assert found == {"critic_loss": frozenset({"critic"})}


def test_a_sample_re_bound_only_on_some_paths_still_counts():
    """A re-binding under an ``if`` or inside a ``try`` does not run on every path to the read:
    what the name held before (the unknown sample) may reach it, so the models stay unknown."""
    for guard in ("if it > 3:", "try:"):
        tail = "\n        except ValueError:\n            pass" if guard == "try:" else ""
        found = _backward_models(_TD3_HEAD + f"""
        {guard}
            state = torch.tensor(state){tail}
        critic_loss = critic(torch.cat([state, torch.zeros(64, 2)], 1)).mean()
        critic_loss.backward()
    """)
        assert found == {"critic_loss": None}, guard
