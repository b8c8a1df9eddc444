"""What a loss is computed from is found in work that grows with the names it reaches, not
with the paths between them (counted in calls of ``provenance``, not timed)."""

from __future__ import annotations

from pathlib import Path

import pytest

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


_LOOP_HEAD = """
    import sys
    import torch
    import torch.nn as nn

    model = nn.Linear(10, 2)
    criterion = nn.CrossEntropyLoss()
    loader = [(torch.randn(4, 10), torch.randint(0, 2, (4,))) for _ in range(3)]
    warmup = len(sys.argv) > 1
    for x, y in loader:
"""


@pytest.mark.parametrize("arms", [
    # the body re-binds, the read is in the else: the forward reaches it
    """
        h = model(x)
        if warmup:
            h = torch.zeros(4, 2)
        else:
            loss = criterion(h, y)
            loss.backward()
    """,
    # an elif chain: the re-binding is in the first arm, the read in the elif
    """
        h = model(x)
        if warmup:
            h = torch.zeros(4, 2)
        elif len(sys.argv) > 2:
            loss = criterion(h, y)
            loss.backward()
    """,
    # the re-binding in an elif, the read in the else
    """
        h = model(x)
        if warmup:
            pass
        elif len(sys.argv) > 2:
            h = torch.zeros(4, 2)
        else:
            loss = criterion(h, y)
            loss.backward()
    """,
])
def test_a_definition_in_one_arm_does_not_hide_the_earlier_ones_from_another(arms):
    """A definition in one arm of an ``if`` does not run on the way to a read in another arm:
    what the name held before the ``if`` (the forward) reaches the read."""
    assert _backward_models(_LOOP_HEAD + arms) == {"loss": frozenset({"model"})}


def test_a_definition_in_the_same_arm_still_dominates():
    """In the same arm, a re-binding before the read hides what the name held (a new tensor)."""
    found = _backward_models(_LOOP_HEAD + """
        h = model(x)
        if warmup:
            h = torch.zeros(4, 2, requires_grad=True)
            loss = criterion(h, y)
            loss.backward()
    """)
    assert found == {"loss": frozenset()}


@pytest.mark.parametrize("rebinding", [
    "for h in [model(x)]:\n            pass",
    "print((h := model(x)))",
    "with torch.no_grad() if False else open(__file__) as h:\n            h = model(x)",
])
def test_a_re_binding_of_any_form_after_the_dominating_definition_counts(rebinding):
    """A ``for`` target, a walrus or ``with ... as`` re-binding the name after the definition
    that dominates the read is no definition the provenance has: the read does not lose the
    forward it may hold (the models are the forward's or unknown, never none)."""
    found = _backward_models(_LOOP_HEAD + f"""
        h = y.float().unsqueeze(1).repeat(1, 2)
        {rebinding}
        loss = criterion(h, y)
        loss.backward()
    """)
    assert found["loss"] != frozenset()


@pytest.mark.parametrize("value, models", [
    ("outputs[0]", frozenset({"model"})),  # an element of a tuple made outside no_grad
    ("(outputs[0], None)[0]", frozenset({"model"})),  # a display of such values
    ("model(x)", frozenset()),  # a forward under no_grad: no graph
    ("model(x) * 2 + 1", frozenset()),  # arithmetic on it
])
def test_only_a_new_tensor_made_under_no_grad_is_graph_free(value, models):
    """Under ``no_grad``, indexing a tuple of graph-carrying tensors returns those tensors with
    their graph; only a call that makes a new tensor there (a forward, a torch op) makes one
    without a graph."""
    found = _backward_models(_LOOP_HEAD + f"""
        outputs = (model(x), None)
        with torch.no_grad():
            logits = {value}
        loss = criterion(logits, y)
        loss.backward()
    """)
    assert found == {"loss": models}


_COPIES_HEAD = """
    import copy
    import torch
    import torch.nn as nn


    class Critic(nn.Module):
        def __init__(self):
            super().__init__()
            self.q1 = nn.Linear(8, 1)

        def forward(self, s, a):
            return self.q1(torch.cat([s, a], 1))

        def Q1(self, s, a):
            return self.q1(torch.cat([s, a], 1))


    actor, critic = nn.Linear(6, 2), Critic()
    actor_copy = copy.deepcopy(actor)
    critic_copy = copy.deepcopy(critic)
    actor_opt = torch.optim.Adam(actor_copy.parameters())
    critic_opt = torch.optim.Adam(critic_copy.parameters())
    anchors = [p.clone() for p in actor_copy.parameters()]
    for it in range(10):
        state = torch.randn(64, 6)
"""


def test_a_method_of_a_model_other_than_forward_is_computed_through_that_model():
    """``critic_copy.Q1(s, a)``: a method the class defines beside ``forward``, on a model whose
    class the engine does not follow (a ``copy.deepcopy``). Like a forward it computes through
    the model's parameters and its arguments: the loss reaches the copies, not the models they
    were copied from (a copy has parameters of its own)."""
    found = _backward_models(_COPIES_HEAD + """
        actor_loss = -critic_copy.Q1(state, actor_copy(state)).mean()
        actor_loss.backward()
    """)
    assert found == {"actor_loss": frozenset({"critic_copy", "actor_copy"})}


def test_a_clone_of_parameters_keeps_what_it_is_computed_from():
    """``p.clone()`` is a tensor method the knowledge describes (a copy autograd records): a
    penalty on the drift from cloned parameters reaches the model whose parameters it reads."""
    found = _backward_models(_COPIES_HEAD + """
        drift = sum(((p - a.detach()) ** 2).sum() for p, a in zip(actor_copy.parameters(), anchors))
        drift.backward()
    """)
    assert found == {"drift": frozenset({"actor_copy"})}


def test_a_del_of_the_name_binds_no_value():
    """``del h`` after the backward leaves the name unbound: it adds no value the provenance
    cannot follow (the definitions in the arms of the ``if`` are what the read may hold)."""
    found = _backward_models(_LOOP_HEAD + """
        if warmup:
            h = model(x)
        else:
            h = model(x) + 1
        loss = criterion(h, y)
        loss.backward()
        del h
    """)
    assert found == {"loss": frozenset({"model"})}


def test_a_backward_of_a_member_called_on_its_object_has_unknown_models():
    """``self.criterion(out, y).backward()``: the loss is the member's result, not the object
    it is called on; what it was computed through is not read there (unknown, never none)."""
    import textwrap

    import libcst as cst

    from loopcheck.analysis import build_units

    source = textwrap.dedent("""
        import torch
        import torch.nn as nn

        class Runner:
            def __init__(self):
                self.net = nn.Linear(4, 2)
                self.criterion = nn.CrossEntropyLoss()

            def fit(self, x, y):
                self.criterion(self.net(x), y).backward()

        Runner().fit(torch.randn(3, 4), torch.zeros(3).long())
    """)
    found = [ev.extra.get("models") for unit in build_units(cst.parse_module(source))
             for ev in unit.events if ev.kind == "backward"]
    assert found and set(found) == {None}
