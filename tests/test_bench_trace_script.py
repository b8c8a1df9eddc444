"""scripts/bench_trace_script.py: runs a program with and without ``loopcheck trace``, stops both
after the same optimizer step, and reads the step times and outputs right."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))

import bench_trace_script as bench


def test_step_times_follow_the_optimizer_that_steps_most():
    # a GAN-like run: optimizer 0 steps 6 times, optimizer 1 three times, interleaved
    stamps = [[0, 1, 10.0, 1.0], [1, 1, 10.5, 1.2], [0, 2, 11.0, 2.0], [0, 3, 13.0, 3.0], [1, 2, 13.5, 3.1],
              [0, 4, 14.0, 4.5], [0, 5, 20.0, 5.0], [1, 3, 20.5, 5.2], [0, 6, 21.0, 7.0]]
    t = bench.step_times(stamps, skip=2, last=5)
    assert t == {"wall": 3.0, "cpu": 1.0, "cpu_step": 1.0, "end": 5}  # steps 2->5: cpu 1.0, 1.5, 0.5
    assert bench.step_times(stamps, skip=2, last=50)["end"] == 6  # fewer steps than asked: up to the last
    assert bench.step_times(stamps, skip=6, last=20) is None
    assert bench.step_times([], skip=1, last=5) is None


def test_plain_and_traced_runs_stop_after_the_same_step(tmp_path):
    pytest.importorskip("torch")
    program = ROOT / "tests" / "data" / "trace" / "argv_and_output.py"
    env = dict(os.environ, PYTHONWARNINGS="ignore")
    proc = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "bench_trace_script.py"), "--rounds", "1", "--steps", "4",
         "--skip", "1", "--compare", r"step (\d+) done", "--log", str(tmp_path), "--", "python", str(program),
         "--steps", "10"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300, check=False)
    assert proc.returncode == 0, proc.stderr
    for tag in ("plain1", "traced1"):
        stamps = json.loads((tmp_path / f"{tag}.stamps.json").read_text())
        assert [n for _, n, _, _ in stamps] == [1, 2, 3, 4]
        assert (tmp_path / f"{tag}.rc").read_text() == "0"
    assert "step 4 done" in (tmp_path / "plain1.stdout").read_text()
    assert "step 5 done" not in (tmp_path / "plain1.stdout").read_text()
    lines = proc.stdout.splitlines()
    assert "same output: yes (4 values compared in each of 2 runs)" in lines
    assert any(line.startswith("overhead cpu mean :") for line in lines)
    assert any(line.startswith(f"  Traced {program}: 4 optimizer steps (stopped by --steps)") for line in lines)
    again = subprocess.run([sys.executable, str(ROOT / "scripts" / "bench_trace_script.py"), "--from-log",
                            str(tmp_path), "--steps", "4", "--skip", "1", "--compare", r"step (\d+) done"],
                           capture_output=True, text=True, timeout=60, check=False)
    assert again.returncode == 0, again.stderr
    assert again.stdout.splitlines()[0].startswith("plain : s/step over steps 1->4: cpu mean ")
    assert "same output: yes (4 values compared in each of 2 runs)" in again.stdout.splitlines()
