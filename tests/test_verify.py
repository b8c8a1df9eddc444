"""``loopcheck verify``: every rule's bug shows at runtime in its bad fixture and not in its good
fixture (CPU), and the command behaves (table, JSON, exit codes, no torch at import)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("torch")
from click.testing import CliRunner  # noqa: E402

from loopcheck.verify import symptoms  # noqa: E402
from loopcheck.verify.cli import verify  # noqa: E402
from loopcheck.verify.report import format_table, verify_rules  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures"
CODES = list(symptoms.SYMPTOMS)


@pytest.fixture(scope="module")
def result():
    """All rules at once: one fork server, fixtures run two at a time."""
    return verify_rules(CODES, fixtures_dir=FIXTURES, jobs=2)


@pytest.fixture(scope="module")
def rows(result):
    return {r["code"]: r for r in result["rules"]}


@pytest.mark.parametrize("code", CODES)
def test_bad_fixture_shows_the_symptom(rows, code):
    row = rows[code]
    assert row["bad"]["shown"] is True, row["bad"]["detail"]


@pytest.mark.parametrize("code", CODES)
def test_good_fixture_does_not(rows, code):
    row = rows[code]
    assert row["good"]["shown"] is False, row["good"]["detail"]
    assert row["good"]["error"] is None, row["good"]["error"]


@pytest.mark.parametrize("code", CODES)
def test_verdict_and_run_info(rows, code):
    row = rows[code]
    assert row["verdict"] == "reproduced"
    assert row["device"] == "cpu" and row["torch"]
    if code.startswith("LC6"):
        assert row["dtype"] == "float16 autocast"


def test_result_is_strict_json(result):
    json.loads(json.dumps(result, allow_nan=False))
    assert result["ok"] is True


def test_canonical_lc501_is_reported(rows):
    # LC501_bad.py converts before the first step under the overwrite setting: new Parameter
    # objects, the optimizer's are orphaned (without the setting it would show nothing).
    canonical = rows["LC501"]["canonical_bad"]
    assert canonical["file"] == "LC501_bad.py" and canonical["shown"] is True
    assert rows["LC501"]["bad"]["file"] == "LC501_bad_runtime.py"


def test_table(result):
    lines = format_table(result, details=True).splitlines()
    assert lines[0].split() == ["rule", "device", "dtype", "torch", "symptom", "bad", "good", "verdict", "unit"]
    row = next(line for line in lines if line.startswith("LC101 "))
    assert row.split()[-5:] == ["reproduced", "fraction", "of", "optimizer", "steps"]
    assert sum(1 for line in lines if line.startswith("LC") and "  reproduced  " in line) == len(CODES)
    assert any(line.startswith("LC501: bad run = LC501_bad_runtime.py") for line in lines)
    assert lines[-1].startswith(f"{len(CODES)}/{len(CODES)} rules reproduced")


def test_cli_json_and_exit_code(tmp_path):
    # LC103 as shipped; LC102 with its "bad" fixture replaced by the good one: not reproduced.
    for name in ("LC103_bad.py", "LC103_good.py", "LC102_good.py"):
        shutil.copy(FIXTURES / name, tmp_path / name)
    shutil.copy(FIXTURES / "LC102_good.py", tmp_path / "LC102_bad.py")
    res = CliRunner().invoke(verify, ["LC103", "lc102", "--fixtures", str(tmp_path), "-j", "2",
                                      "--output-format", "json"])
    assert res.exit_code == 1, res.output
    data = json.loads(res.output)
    lc103, lc102 = data["rules"]
    assert lc103["code"] == "LC103" and lc103["verdict"] == "reproduced"
    assert lc103["bad"]["value"] == 1.0 and lc103["good"]["value"] == 0.0
    assert lc102["code"] == "LC102" and lc102["verdict"] == "not reproduced"
    assert data["ok"] is False


def test_cli_rejects_unknown_code():
    res = CliRunner().invoke(verify, ["LC999"])
    assert res.exit_code == 2 and "unknown rule code" in res.output


def test_cli_without_torch(monkeypatch):
    monkeypatch.setitem(sys.modules, "torch", None)  # makes `import torch` raise ImportError
    res = CliRunner().invoke(verify, ["LC101"])
    assert res.exit_code == 2
    assert "needs PyTorch" in res.output and "loopcheck[verify]" in res.output


def test_importing_loopcheck_does_not_import_torch():
    code = "import sys, loopcheck.verify.cli, loopcheck.verify.report; assert 'torch' not in sys.modules"
    subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT)


def test_probes_keep_inplace_modification_errors():
    """With saved-tensor hooks installed autograd skips its in-place check; the probe repeats it,
    so a script that fails without the probes fails the same way under them."""
    import torch

    from loopcheck.verify.probes import Probe

    def train():
        w = torch.nn.Parameter(torch.randn(3, 3))
        opt = torch.optim.SGD([w], lr=0.1)
        for _ in range(2):
            loss = (torch.randn(2, 3) @ w @ w).sum()
            opt.step()  # modifies w in place between forward and backward
            loss.backward()

    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        train()
    probe = Probe().install()
    try:
        with probe.saved_tensors_hooks(), pytest.raises(RuntimeError, match="modified by an inplace operation"):
            train()
    finally:
        probe.uninstall()
    assert len(probe.steps) == 2  # the probe saw both steps; the second one raised in backward


class _Wrapper:
    """A graph node's Python wrapper as torch 2.11 hands it out: a new object at each access of
    ``next_functions``, freed as soon as nothing refers to it (its id is then reused)."""

    def __init__(self, node):
        self._node = node

    @property
    def next_functions(self):
        return tuple((_Wrapper(n), 0) for n in self._node["next"])

    @property
    def variable(self):
        return self._node.get("variable")


def test_graph_leaves_with_fresh_node_wrappers():
    """Measured on an H200 with torch 2.11: walking by the ids of freed wrappers found 1 of a
    Linear-ReLU-Linear's 4 parameters, and LC503/LC504's symptom read 0 parameters."""
    import torch

    from loopcheck.verify.probes import _graph_leaves

    params = [torch.nn.Parameter(torch.zeros(n)) for n in (12, 4, 8, 2)]
    acc = [{"next": [], "variable": p} for p in params]
    first = {"next": [{"next": [acc[0]]}, acc[1]]}                 # addmm(T(w1), b1)
    relu = {"next": [first]}
    last = {"next": [acc[3], relu, {"next": [acc[2]]}]}            # addmm(b2, relu, T(w2))
    loss = type("Loss", (), {"grad_fn": _Wrapper({"next": [last]})})()
    assert sorted(_graph_leaves(loss).values()) == [2, 4, 8, 12]


@pytest.mark.parametrize("code, error, value", [
    # torch 2.11 on an NVIDIA H200 (the fixtures unedited, scripts/gpu_evidence.sh)
    ("LC504", "Expected all tensors to be on the same device, but got mat1 is on cuda:0, different from "
              "other tensors on cpu (when checking argument in method wrapper_CUDA_addmm)", 1.0),
    ("LC702", "CUDA error: device-side assert triggered", 1.0),
    ("LC702", "all elements of input should be between 0 and 1", 1.0),
    ("LC702", "CUDA out of memory", None),
])
def test_gpu_errors_are_the_symptom(code, error, value):
    record = {"error": {"type": "RuntimeError", "message": error, "line": 30}, "steps": [], "backwards": []}
    m = symptoms.measure(code, record)
    assert m["value"] == value, m
    assert m["shown"] is (None if value is None else True)


def test_measure_scripts_measures_each_variant_with_its_rule():
    """The GPU variants of RESULTS.md: on CPU the resumed model's move is a no-op and it trains."""
    from loopcheck.verify.report import measure_scripts

    rows = measure_scripts([("LC501", FIXTURES / "LC501_bad_move_after_resume.py"),
                            ("LC502", FIXTURES / "no_such_fixture.py")], jobs=1)
    assert [(r["code"], r["file"]) for r in rows] == [("LC501", "LC501_bad_move_after_resume.py"),
                                                      ("LC502", "no_such_fixture.py")]
    moved, missing = rows
    assert (moved["value"], moved["shown"], moved["device"], moved["dtype"]) == (0.0, False, "cpu", "float32")
    assert moved["detail"].startswith("0/4 of the trained model's parameters are not held by the optimizer")
    assert missing["error"] == "fixture missing" and missing["value"] is None
