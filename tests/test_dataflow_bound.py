""":func:`loopcheck.engine.dataflow._bound`: the remembered conditions are forgotten only while
they multiply the states past ``MAX_STATES``, or past twice the machine's own states when those
alone are more."""

from loopcheck.engine.dataflow import MAX_STATES, _bound


def test_conditions_within_twice_many_machine_states_are_kept():
    # 64 machine states, each known under test 0 true (bit 0) or false (bit 1), 8 under both: 72 states
    states = {(ms, 1 << (ms % 2)) for ms in range(2 * MAX_STATES)} | {(ms, 1) for ms in range(8)}
    assert len({ms for ms, _ in states}) > MAX_STATES
    kept, forgotten = _bound(states)
    assert kept == states and forgotten == 0


def test_conditions_past_twice_the_machine_states_are_forgotten():
    # 40 machine states, each under 3 outcomes of two tests: 120 states > 2 * 40
    ms_count = MAX_STATES + 8
    states = {(ms, c) for ms in range(ms_count) for c in (0b0001, 0b0101, 0b1010)}
    kept, forgotten = _bound(states)
    assert len(kept) <= 2 * ms_count and forgotten != 0


def test_few_machine_states_keep_the_old_limit():
    states = {(ms, c) for ms in range(4) for c in range(1, 1 << 4)}  # 60 states over 4 machine states
    kept, forgotten = _bound(states)
    assert len(kept) <= MAX_STATES and forgotten != 0
