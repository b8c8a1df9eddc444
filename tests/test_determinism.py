"""The report does not depend on the process: the same files give the same findings and the
same messages under any string-hash seed (which reorders every set and dict of names, and with
them the machines' state sets that some rules take the first state of)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def report(seed: int, *paths: str) -> str:
    env = dict(os.environ, PYTHONHASHSEED=str(seed))
    return subprocess.run(
        [sys.executable, "-m", "loopcheck", "--no-cache", "--preview", "--output-format", "json", *paths],
        cwd=ROOT, env=env, capture_output=True, text=True, check=False,
    ).stdout


def test_a_change_met_with_and_without_optimizer_state_is_reported_as_the_worse_one():
    """LC501_bad_runtime.py converts the model inside the epoch loop: the first epoch meets it
    before any step, the later ones after. The message was one or the other by hash seed
    (seeds 2-6 and 8 said 'was built from its parameters'); it is the failing case on every run."""
    outputs = {report(seed, "fixtures/LC501_bad_runtime.py") for seed in range(1, 9)}
    assert len(outputs) == 1
    assert "has state: the next step() fails" in outputs.pop()


def test_every_fixture_reports_the_same_under_three_hash_seeds():
    first = report(1, "fixtures")
    assert '"code": "LC501"' in first
    assert report(2, "fixtures") == first
    assert report(7, "fixtures") == first
