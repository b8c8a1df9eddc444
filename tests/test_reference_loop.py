"""The reference loop trains to > 90 % validation accuracy in seconds on CPU, in every precision
mode that runs on CPU, and the LC501 conversion matrix says what the rule page says."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from reference_loop.conversion import run_case  # noqa: E402
from reference_loop.data import make_spiral  # noqa: E402
from reference_loop.loop import train  # noqa: E402


@pytest.fixture(autouse=True, scope="module")
def one_thread():
    """Tiny models: intra-op threads only add contention when tests share the cores."""
    old = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(old)


def test_spiral_data_shape():
    X, y = make_spiral()
    assert X.shape == (2000, 2) and X.dtype == torch.float32
    assert y.shape == (2000,) and set(y.tolist()) == {0, 1, 2}


@pytest.mark.parametrize("precision", ["fp32", "bf16", "fp16"])
def test_reference_loop_reaches_90_percent(precision):
    r = train(precision=precision, device="cpu", epochs=8)
    assert r["val_acc"] > 0.90, r["history"][-1]
    assert r["seconds"] < 60
    lrs = [h["lr"] for h in r["history"]]
    assert lrs == sorted(lrs, reverse=True) and lrs[0] > lrs[-1]  # cosine, stepped per epoch
    if precision == "fp16":
        assert r["scale"] is not None  # the GradScaler path ran


@pytest.mark.parametrize(
    "optimizer, conversion, after_step, mode, expected",
    [
        ("Adam", "half()", False, "default", "trains"),          # same Parameter objects
        ("Adam", "half()", True, "default", "step raises"),      # float32 state vs half params
        ("Adam", "to(torch.float64)", True, "default", "step raises"),
        ("SGD(momentum)", "half()", True, "default", "trains"),
        ("Adagrad", "half()", False, "default", "trains"),        # state built in the constructor
        ("Adam", "half()", False, "overwrite", "orphaned"),      # new Parameter objects
        ("Adam", 'to("cpu")', False, "overwrite", "orphaned"),
        ("Adam", 'to("meta")', False, "default", "orphaned"),    # cpu -> meta replaces parameters
        ("Adam", "half()", False, "swap", "trains"),
    ],
)
def test_conversion_matrix(optimizer, conversion, after_step, mode, expected):
    row = run_case(optimizer, conversion, after_step, mode)
    assert row["outcome"].startswith(expected), row


def test_memory_table_has_a_cuda_column_only_when_a_case_ran_on_cuda():
    from reference_loop.memory import markdown

    cpu = {"keep": "tensor", "batch": 64, "steps": 2000, "device": "cpu", "rss_per_step": 16333.2,
           "heap_per_step": 8458.6, "cuda_per_step": None}
    gpu = dict(cpu, keep="item", device="cuda", heap_per_step=15.0, rss_per_step=1264.0, cuda_per_step=0.0)
    assert markdown([cpu]).splitlines() == [
        "| kept per step | device | batch | steps | C heap in use, per step | RSS, per step |",
        "|---|---|---|---|---|---|",
        "| `loss` (tensor) | cpu | 64 | 2000 | 8,459 B | 16,333 B |",
    ]
    assert markdown([cpu, gpu]).splitlines() == [
        "| kept per step | device | batch | steps | C heap in use, per step | RSS, per step | CUDA memory allocated, per step |",
        "|---|---|---|---|---|---|---|",
        "| `loss` (tensor) | cpu | 64 | 2000 | 8,459 B | 16,333 B | - |",
        "| `loss.item()` | cuda | 64 | 2000 | 15 B | 1,264 B | 0 B |",
    ]
