"""LC501: what converting a model AFTER building its optimizer really does (measured, not assumed).

For each optimizer (SGD with momentum and Adam build their state lazily at the first ``step()``;
Adagrad builds it in its constructor), each conversion (``half()``, ``to(float16)``,
``to(float64)``, ``to("cpu")``, ``to("meta")``, ``cuda()``), before and after the first
``step()``, and each of PyTorch's conversion modes (default; ``torch.__future__.
set_overwrite_module_params_on_conversion(True)``; ``set_swap_module_params_on_conversion(True)``)
it records:

* ``same``: are the optimizer's parameters still the model's ``Parameter`` objects?
* ``outcome``: ``trains`` (the next step updates the model), ``orphaned`` (the step updates
  parameters the model no longer uses: the model does not learn), or the exception raised by the
  forward/backward/step after the conversion.

``python -m reference_loop --conversion`` prints the matrix as a Markdown table.
"""

from __future__ import annotations

import contextlib

import torch
from torch import nn

from .model import MLP

OPTIMIZERS = {
    "SGD(momentum)": lambda ps: torch.optim.SGD(ps, lr=0.1, momentum=0.9),
    "Adam": lambda ps: torch.optim.Adam(ps, lr=1e-3),
    "Adagrad": lambda ps: torch.optim.Adagrad(ps, lr=1e-2),
}

CONVERSIONS = {
    "half()": lambda m: m.half(),
    "to(torch.float16)": lambda m: m.to(torch.float16),
    "to(torch.float64)": lambda m: m.to(torch.float64),
    'to("cpu")': lambda m: m.to("cpu"),
    'to("meta")': lambda m: m.to("meta"),
    "cuda()": lambda m: m.cuda(),
}

MODES = ("default", "overwrite", "swap")


@contextlib.contextmanager
def conversion_mode(mode: str):
    """Temporarily set torch.__future__'s module-conversion flags."""
    fut = torch.__future__
    old = (fut.get_overwrite_module_params_on_conversion(), fut.get_swap_module_params_on_conversion())
    try:
        fut.set_overwrite_module_params_on_conversion(mode == "overwrite")
        fut.set_swap_module_params_on_conversion(mode == "swap")
        yield
    finally:
        fut.set_overwrite_module_params_on_conversion(old[0])
        fut.set_swap_module_params_on_conversion(old[1])


def _train_step(model, opt, dtype, device):
    x = torch.randn(32, 2).to(device=device, dtype=dtype)
    y = torch.randint(0, 3, (32,)).to(device)
    opt.zero_grad()
    loss = nn.functional.cross_entropy(model(x).float(), y)
    loss.backward()
    opt.step()


def _short(exc: BaseException) -> str:
    msg = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    return f"{type(exc).__name__}: {msg[:110]}"


def run_case(opt_name: str, conv_name: str, after_step: bool, mode: str) -> dict:
    """Build model + optimizer, optionally take one step, convert, then take one more step."""
    torch.manual_seed(0)
    row = {"optimizer": opt_name, "conversion": conv_name,
           "when": "after 1st step" if after_step else "before 1st step", "mode": mode}
    if conv_name == "cuda()" and not torch.cuda.is_available():
        row.update(same=None, outcome="not run: no CUDA device")
        return row
    model = MLP()
    opt = OPTIMIZERS[opt_name](model.parameters())
    if after_step:
        _train_step(model, opt, torch.float32, "cpu")
    with conversion_mode(mode):
        try:
            CONVERSIONS[conv_name](model)
        except Exception as exc:  # noqa: BLE001 - the exception is the measurement
            row.update(same=None, outcome="conversion raises " + _short(exc))
            return row
    model_params = list(model.parameters())
    opt_params = [p for g in opt.param_groups for p in g["params"]]
    row["same"] = len(model_params) == len(opt_params) and all(
        a is b for a, b in zip(model_params, opt_params))
    p0 = model_params[0]
    row["param"] = f"{p0.dtype}".replace("torch.", "") + f"/{p0.device.type}"
    before = [p.detach().clone() for p in model_params]
    before_opt = [p.detach().clone() for p in opt_params]
    try:
        _train_step(model, opt, p0.dtype, p0.device)
    except Exception as exc:  # noqa: BLE001
        row["outcome"] = "step raises " + _short(exc)
        return row
    opt_moved = any(not torch.equal(a, b.detach()) for a, b in zip(before_opt, opt_params)
                    if a.device.type != "meta")
    if not row["same"]:
        row["outcome"] = ("orphaned: step() updates the optimizer's old tensors "
                          f"({'moved' if opt_moved else 'not moved'}); the model's new parameters get no update")
        return row
    if p0.device.type == "meta":
        row["outcome"] = "steps without error (meta tensors hold no values)"
        return row
    moved = any(not torch.equal(a, b.detach()) for a, b in zip(before, model_params))
    row["outcome"] = "trains" if moved else "step() does not change the model"
    return row


def matrix() -> list[dict]:
    return [run_case(o, c, s, m) for o in OPTIMIZERS for c in CONVERSIONS
            for s in (False, True) for m in MODES]


def _short_outcome(row) -> str:
    out = row["outcome"]
    if out.startswith("trains"):
        return "trains"
    if out.startswith("orphaned"):
        return "**orphaned**"
    if out.startswith("step raises"):
        return "**raises** (" + ("dtype" if "dtype" in out else "device" if "device" in out else "error") + ")"
    if out.startswith("not run"):
        return "n/a"
    if out.startswith("steps without error"):
        return "runs (meta)"
    return out


def markdown(rows: list[dict]) -> str:
    """Compact matrix: one row per (conversion, when), one column per (optimizer, mode)."""
    cols = [(o, m) for o in OPTIMIZERS for m in MODES]
    head = "| conversion | when | " + " | ".join(f"{o} {m}" for o, m in cols) + " |"
    lines = [head, "|" + "---|" * (len(cols) + 2)]
    index = {(r["conversion"], r["when"], r["optimizer"], r["mode"]): r for r in rows}
    for c in CONVERSIONS:
        for when in ("before 1st step", "after 1st step"):
            cells = [_short_outcome(index[(c, when, o, m)]) if (c, when, o, m) in index else "-"
                     for o, m in cols]
            lines.append(f"| `{c}` | {when} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def errors(rows: list[dict]) -> list[str]:
    """The distinct exception messages behind the **raises** cells."""
    return sorted({r["outcome"] for r in rows if r["outcome"].startswith("step raises")})


def main() -> int:
    import warnings
    warnings.simplefilter("ignore")
    print(f"torch {torch.__version__}, CUDA available: {torch.cuda.is_available()}\n")
    rows = matrix()
    print(markdown(rows))
    print()
    for e in errors(rows):
        print("-", e)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
