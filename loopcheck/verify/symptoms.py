"""One small measurement per rule code, computed from a fixture's probe record.

A :class:`Symptom` turns the record of one script run (see :mod:`loopcheck.verify.probes`) into
a number and a sentence of detail, and says whether that number shows the bug.  A rule is
*reproduced* when the bad fixture shows the symptom and the good fixture does not.

Pure Python on JSON data: no torch needed here.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass
from typing import Callable, Optional

Measure = Callable[[dict], "tuple[Optional[float], str]"]


@dataclass(frozen=True)
class Symptom:
    code: str
    name: str                              # short column label, e.g. "unclipped steps"
    unit: str                              # how to read the number
    measure: Measure                       # record -> (value or None, detail)
    present: Callable[[float], bool]       # value -> does it show the bug?
    fmt: str = "{:.3g}"
    errors_are_evidence: bool = False      # an exception raised by the script is the symptom

    def format(self, value) -> str:
        if value is None:
            return "-"
        return self.fmt.format(value)


# ------------------------------------------------------------------------------------ helpers


def _steps(r):
    return r.get("steps") or []


def _median(xs, default=None):
    xs = [x for x in xs if x is not None and not (isinstance(x, float) and math.isnan(x))]
    return statistics.median(xs) if xs else default


def _g(x):
    return "-" if x is None else f"{x:.3g}"


def _error_text(r) -> str:
    e = r.get("error")
    if not e:
        return ""
    where = f" (line {e['line']})" if e.get("line") else ""
    return f"{e['type']}: {e['message']}{where}"


def train_epochs(r):
    """(training epochs, batches per epoch) from the DataLoader passes, or (None, None)."""
    total = len(_steps(r))
    by_loader = {}
    for it in r.get("loader_iters") or []:
        by_loader.setdefault(it["loader"], []).append(it)
    best = None
    for its in by_loader.values():
        n = its[0].get("len")
        if not n:
            continue
        err = abs(n * len(its) - total)
        if err <= n and (best is None or err < best[0]):
            best = (err, len(its), n)
    return (best[1], best[2]) if best else (None, None)


# ------------------------------------------------------------------------------------ measures


def _unclipped(r):
    steps = _steps(r)
    if not steps:
        return None, "no optimizer step ran"
    bad = 0
    for s in steps:
        c = s.get("clip")
        if c is None or not s["grad_norm"] or abs(c["post"] / s["grad_norm"] - 1.0) > 1e-3:
            bad += 1
    limits = [c["limit"] for c in r.get("clips") or [] if c.get("limit")]
    limit = limits[-1] if limits else None
    worst = max(s["grad_norm"] for s in steps)
    empty = sum(1 for c in r.get("clips") or [] if c["n_grad"] == 0)
    ratio = f" = {worst / limit:.3g} x max_norm ({limit:g})" if limit else ""
    return bad / len(steps), (
        f"{bad}/{len(steps)} steps applied a gradient that was not the clipped one; largest "
        f"gradient norm applied {worst:.3g}{ratio}; {empty}/{len(r.get('clips') or [])} clip calls "
        f"found no gradient")


def _empty_steps(r):
    steps = _steps(r)
    if not steps:
        return None, "no optimizer step ran"
    empty = sum(1 for s in steps if s["n_nonzero_grad"] == 0)
    moved = sum(s["update_norm"] or 0.0 for s in steps)
    return empty / len(steps), (
        f"{empty}/{len(steps)} optimizer steps found no gradient; total parameter movement "
        f"(sum of update norms) {moved:.3g}")


def _stale_steps(r):
    steps = _steps(r)
    if not steps:
        return None, "no optimizer step ran"
    stale = sum(1 for s in steps if s["stale"])
    empty = sum(1 for s in steps if s["n_nonzero_grad"] == 0)
    return stale / len(steps), (
        f"{stale}/{len(steps)} steps ran after a training forward but before its backward (they "
        f"apply the previous batch's gradient); {empty} of them found no gradient at all")


def _accumulated(r):
    steps = _steps(r)
    if not steps:
        return None, "no optimizer step ran"
    accs = [s["accum"] for s in steps]
    return float(accs[-1]), (
        f"backward passes summed into the applied gradient: first step {accs[0]}, last step "
        f"{accs[-1]} (of {len(r.get('backwards') or [])} backward passes, {r.get('zero_grads', 0)} "
        f"zero_grad calls)")


def _sched_per_step(r):
    steps = _steps(r)
    if not steps:
        return None, "no optimizer step ran"
    sched = [s for s in r.get("sched_steps") or [] if not s.get("error")]
    epochs, per_epoch = train_epochs(r)
    value = len(sched) / len(steps)
    detail = f"{len(sched)} scheduler.step() for {len(steps)} optimizer.step()"
    if epochs:
        starts = [steps[k * per_epoch]["lr"] for k in range(epochs) if k * per_epoch < len(steps)]
        detail += (f" = {len(sched) / epochs:g} per epoch ({epochs} epochs x {per_epoch} batches); "
                   f"LR at the start of each epoch: {', '.join(_g(x) for x in starts)}")
    lrs = [s["lr"] for s in steps if s["lr"] is not None]
    if lrs:
        changes = sum(1 for a, b in zip(lrs, lrs[1:]) if a != b)
        detail += f"; LR changed {changes} times, range {_g(min(lrs))}..{_g(max(lrs))}"
    return value, detail


def _sched_first(r):
    steps = _steps(r)
    if not steps:
        return None, "no optimizer step ran"
    before = sum(1 for s in r.get("sched_steps") or [] if s["after_step"] == 0)
    first = steps[0]
    warned = any("lr_scheduler.step()" in w and "optimizer.step()" in w for w in r.get("warnings") or [])
    detail = (f"{before} scheduler.step() before the first optimizer.step(); the first step used "
              f"lr {_g(first['lr'])} (initial lr {_g(first['initial_lr'])})")
    if warned:
        detail += "; PyTorch warned: Detected call of `lr_scheduler.step()` before `optimizer.step()`"
    return float(before), detail


def _plateau_no_metric(r):
    calls = [s for s in r.get("sched_steps") or [] if s["scheduler"] == "ReduceLROnPlateau"]
    failed = [s for s in calls if s["n_args"] == 0 or s.get("error")]
    lrs = [s["lr"] for s in calls if s.get("lr") is not None]
    if failed:
        return float(len(failed)), (f"{len(failed)} ReduceLROnPlateau.step() calls without a metric; "
                                    f"the script stopped: {_error_text(r) or failed[0].get('error')}")
    return 0.0, (f"{len(calls)} ReduceLROnPlateau.step(metric) calls; LR after them: "
                 f"{', '.join(_g(x) for x in lrs) or '-'}")


def _eval_mode_training(r):
    bwd = [b for b in r.get("backwards") or [] if b["forward_training"] is not None]
    if not bwd:
        return None, "no backward pass observed"
    ev = sum(1 for b in bwd if b["forward_training"] is False)
    return ev / len(bwd), (f"{ev}/{len(bwd)} backward passes back-propagated a forward run with "
                           f"module.training == False (Dropout off, BatchNorm on running stats)")


def _validation_graph(r):
    val = [f for f in r.get("forwards") or [] if not f["backward"] and not f["training"]]
    if not val:
        return None, "no evaluation-mode forward observed"
    saved = [f["saved_bytes"] for f in val]
    with_fn = sum(1 for f in val if f["out_grad_fn"])
    live = [f["live_saved_at_start"] for f in val]
    return statistics.mean(saved) / 1024.0, (
        f"{with_fn}/{len(val)} eval-mode forwards returned outputs with a grad_fn; activations saved "
        f"for backward: {statistics.mean(saved) / 1024:.3g} KiB per validation forward; live saved "
        f"memory when a validation batch starts: {min(live) / 1024:.3g}..{max(live) / 1024:.3g} KiB "
        f"(peak over the run {r.get('peak_saved_bytes', 0) / 1024:.3g} KiB)")


def _kept_graphs(r):
    """Growth of live graph nodes per step: from the first census (after step 4) to the later
    census that shows the most growth (in training, or right after the script returned)."""
    census = r.get("census") or []
    if not census:
        return None, "no census taken"
    a = census[0]
    later = [c for c in census[1:] if c["after_steps"] > a["after_steps"]]
    if not later:
        return None, "too few optimizer steps to measure growth"
    b = max(later, key=lambda c: (c["graph_nodes"] - a["graph_nodes"]) / (c["after_steps"] - a["after_steps"]))
    slope = (b["graph_nodes"] - a["graph_nodes"]) / (b["after_steps"] - a["after_steps"])
    when = "when the script ended" if b.get("final") else f"after step {b['after_steps']}"
    return slope, (
        f"live autograd graph nodes {a['graph_nodes']} after step {a['after_steps']} -> "
        f"{b['graph_nodes']} {when} ({b['after_steps']} steps); live tensors with grad_fn "
        f"{a['tensors_with_grad_fn']} -> {b['tensors_with_grad_fn']}; live saved activations "
        f"{a['live_saved_bytes']} -> {b['live_saved_bytes']} bytes (backward already freed them)")


def _orphaned(r):
    steps = _steps(r)
    err = r.get("error")
    if err and any(w in err["message"] for w in ("dtype", "device")):
        return 1.0, f"the optimizer step failed: {_error_text(r)}"
    if not steps:
        return None, "no optimizer step ran"
    last = steps[-1]
    frac = last["orphans"] / last["model_params"] if last["model_params"] else 0.0
    fwd = [f for f in r.get("forwards") or [] if f["backward"]]
    dtype = fwd[-1]["param_dtype"] if fwd else "?"
    moved = sum(1 for s in steps if (s["update_norm"] or 0) > 0)
    return frac, (f"{last['orphans']}/{last['model_params']} of the trained model's parameters are not "
                  f"held by the optimizer; {moved}/{len(steps)} steps moved the optimizer's parameters; "
                  f"model parameters are {dtype}")


def _clip_scale(r):
    clips = [c for c in r.get("clips") or [] if c["factor"] is not None]
    if not clips:
        return None, "no clip call found gradients"
    f = _median(c["factor"] for c in clips)
    applied = _median(s["grad_norm"] for s in _steps(r))
    limit = clips[-1]["limit"]
    eff = f" -> effective max_norm = max_norm / {f:.3g} = {limit / f:.3g}" if f and limit else ""
    return f, (f"clip_grad_norm_ saw gradients {f:.3g}x the true ones (median of {len(clips)} calls){eff}; "
               f"median gradient norm that step() applied {_g(applied)} (max_norm {_g(limit)})")


def _applied_scale(r, skip_first=0):
    steps = _steps(r)[skip_first:]
    if not steps:
        return None, "no optimizer step ran"
    f = _median(s["factor"] for s in steps)
    nonfinite = sum(1 for s in steps if not s["finite"])
    ev = r.get("scaler") or []
    n_scale = sum(1 for e in ev if e["event"] == "scale")
    n_sstep = sum(1 for e in ev if e["event"] == "step")
    n_skip = sum(1 for e in ev if e["event"] == "step" and e.get("skipped"))
    norm = _median(s["grad_norm"] for s in steps)
    upd = _median(s["update_norm"] for s in steps)
    return f, (f"step() applied gradients {_g(f)}x the true gradient (median over {len(steps)} steps); "
               f"first step's gradient norm {_g(steps[0]['grad_norm'])}; median applied gradient norm "
               f"{_g(norm)}, median update norm {_g(upd)}; {nonfinite} steps applied inf/nan gradients; "
               f"scaler.scale() {n_scale}x, scaler.step() {n_sstep}x ({n_skip} skipped for inf/nan)")


def _no_update(r):
    ev = r.get("scaler") or []
    steps_ = [e for e in ev if e["event"] == "step"]
    updates = [e for e in ev if e["event"] == "update"]
    if not steps_:
        return None, "scaler.step() never ran"
    errs = [e["error"] for e in steps_ if e.get("error")]
    scales = sorted({e["scale"] for e in steps_ if e.get("scale") is not None})
    detail = (f"{len(updates)} scaler.update() for {len(steps_)} scaler.step(); scale values seen "
              f"at scaler.step(): {', '.join(_g(s) for s in scales[:6])}")
    if errs:
        detail += f"; scaler.step() #{len(steps_)} raised {errs[0]}"
    return len(updates) / len(steps_), detail


def _unscale_misplaced(r):
    err = r.get("error")
    if err and "unscale_()" in err["message"]:
        return math.inf, f"the script stopped: {_error_text(r)}"
    return _applied_scale(r)


# -- the rules of issue 11 ----------------------------------------------------------------------


def _micro_clip(r):
    steps = [s for s in _steps(r) if s.get("accum_deviation") is not None]
    if not steps:
        return None, "no step whose micro-batch gradients were measured"
    dev = _median(s["accum_deviation"] for s in steps)
    clips = len(r.get("clips") or [])
    accum = _median(s["accum"] for s in steps)
    return dev, (f"{clips} clip calls for {len(_steps(r))} optimizer steps ({accum:g} backward passes per step); the "
                 f"applied gradient differs from the clipped sum of its micro-batches' gradients by {dev:.3g} of that "
                 f"gradient's norm (median over steps, largest {max(s['accum_deviation'] for s in steps):.3g})")


def _steps_per_batch(r):
    steps = _steps(r)
    if not steps:
        return None, "no optimizer step ran"
    by_loader = {}
    for it in r.get("loader_iters") or []:
        by_loader[it["loader"]] = by_loader.get(it["loader"], 0) + (it.get("len") or 0)
    batches = max(by_loader.values()) if by_loader else 0
    if not batches:
        return None, "no DataLoader pass observed"
    per_step = _median(s["accum"] for s in steps)
    return len(steps) / batches, (f"{len(steps)} optimizer steps for {batches} loader batches; each step applied "
                                  f"{per_step:g} backward pass(es) (median)")


def _train_mode_validation(r):
    val = [f for f in r.get("forwards") or [] if not f["grad"]]
    if not val:
        return None, "no forward under no_grad observed"
    train = sum(1 for f in val if f["training"])
    changed = sum(1 for f in val if f.get("buffers_changed"))
    return train / len(val), (f"{train}/{len(val)} validation forwards (under no_grad) ran with module.training == "
                              f"True; {changed} of them changed the model's buffers (BatchNorm running statistics)")


def _untrained_params(r):
    steps = [s for s in _steps(r) if s.get("leaf_numel")]
    err = r.get("error")
    if not steps:
        return None, f"no step after a backward was observed{'; ' + _error_text(r) if err else ''}"
    last = steps[-1]
    moved = sum(1 for s in _steps(r) if (s["update_norm"] or 0) > 0)
    frac = last["unheld_leaf_numel"] / last["leaf_numel"]
    return frac, (f"{last['unheld_leaf_numel']}/{last['leaf_numel']} of the parameter elements the loss's graph reaches "
                  f"are not held by the optimizer that steps; {moved}/{len(_steps(r))} steps moved its parameters")


def _unregistered_params(r):
    """LC504: parameters the optimizer does not hold; on a GPU the unregistered layers are not
    moved by ``model.to(device)`` either, and the first forward raises a device mismatch."""
    err = r.get("error")
    if err and "device" in err["message"]:
        return 1.0, f"the script stopped: {_error_text(r)} (model.to() did not move the layers it does not register)"
    return _untrained_params(r)


def _input_mismatch(r):
    fwd = [f for f in r.get("forwards") or [] if f.get("input_dtype")]
    err = r.get("error")
    bad = [f for f in fwd if f["input_dtype"] != f["param_dtype"] or f["input_device"] != f["device"]]
    detail = (f"{len(bad)}/{len(fwd)} forwards got an input whose dtype or device differs from the model's "
              f"parameters" + (f" ({bad[0]['input_dtype']} on {bad[0]['input_device']} into {bad[0]['param_dtype']} "
                               f"on {bad[0]['device']})" if bad else ""))
    if err and any(w in err["message"] for w in ("dtype", "device", "same type")):
        return 1.0, f"{detail}; the script stopped: {_error_text(r)}"
    if not fwd:
        return None, "no forward observed"
    return len(bad) / len(fwd), detail


def _loss_floor(r):
    losses = [b["loss"] for b in r.get("backwards") or [] if b.get("loss") is not None]
    if not losses:
        return None, "no loss observed"
    tail = losses[-8:]
    value = statistics.mean(tail)
    return value, (f"training loss: first {losses[0]:.3g}, lowest {min(losses):.3g}, mean of the last "
                   f"{len(tail)} batches {value:.3g} (CrossEntropyLoss on 2-class softmax outputs cannot go below "
                   f"log(1 + 1/e) = 0.313)")


def _probability_range(r):
    err = r.get("error")
    losses = [b["loss"] for b in r.get("backwards") or [] if b.get("loss") is not None]
    if err and "between 0 and 1" in err["message"]:
        return 1.0, f"the script stopped after {len(losses)} backward passes: {_error_text(r)}"
    if err and "device-side assert" in err["message"]:  # CUDA's binary_cross_entropy kernel asserts
        return 1.0, (f"the script stopped after {len(losses)} backward passes: {_error_text(r)} (the CUDA "
                     f"context is unusable afterwards: every later CUDA call in the process fails)")
    if not losses:
        return None, "no loss observed"
    return 0.0, f"{len(losses)} backward passes; loss first {losses[0]:.3g}, last {losses[-1]:.3g}"


def _aliased_loads(r):
    loads = [x for x in r.get("loads") or [] if x["tensors"]]
    if not loads:
        return None, "no load_state_dict() observed"
    shared = sum(x["shared"] for x in loads)
    total = sum(x["tensors"] for x in loads)
    return shared / total, (f"{shared}/{total} tensors given to load_state_dict() were the module's own live tensors; "
                            f"largest change the load made to a weight: {max(x['max_change'] for x in loads):.3g}")


def _cold_resume(r):
    steps = _steps(r)
    if len(steps) < 2:
        return None, "fewer than two optimizer steps"
    restarts = [i for i in range(1, len(steps))
                if (steps[i].get("opt_state_step") or 0) < (steps[i - 1].get("opt_state_step") or 0)
                or (steps[i].get("opt_state_step") is None and steps[i - 1].get("opt_state_step") is not None)]
    detail = f"{len(steps)} steps; the optimizer's state restarted at step(s) {restarts or 'none'}"
    for i in restarts[:1]:
        detail += (f": its step count went {_g(steps[i - 1].get('opt_state_step'))} -> "
                   f"{_g(steps[i].get('opt_state_step'))} (none: no state), LR {_g(steps[i - 1]['lr'])} -> "
                   f"{_g(steps[i]['lr'])}, update norm {_g(steps[i - 1]['update_norm'])} -> {_g(steps[i]['update_norm'])}")
    return float(len(restarts)), detail


def _same_order(r):
    orders = r.get("sampler_orders") or []
    if len(orders) < 2:
        return None, "fewer than two DistributedSampler passes"
    same = sum(1 for o in orders[1:] if o == orders[0])
    return same / (len(orders) - 1), (f"{len(orders)} epochs of DistributedSampler; {same}/{len(orders) - 1} later "
                                      f"epochs visited the samples in the first epoch's order (first indices "
                                      f"{orders[0][:6]}, then {orders[1][:6]})")


SYMPTOMS: dict[str, Symptom] = {s.code: s for s in [
    Symptom("LC101", "unclipped steps", "fraction of optimizer steps", _unclipped, lambda v: v >= 0.5),
    Symptom("LC102", "unclipped steps", "fraction of optimizer steps", _unclipped, lambda v: v >= 0.5),
    Symptom("LC103", "steps without gradient", "fraction of optimizer steps", _empty_steps,
            lambda v: v >= 0.5),
    Symptom("LC104", "stale-gradient steps", "fraction of optimizer steps", _stale_steps,
            lambda v: v >= 0.5),
    Symptom("LC105", "backwards per update", "backward passes in the last step's gradient",
            _accumulated, lambda v: v > 2, fmt="{:g}"),
    Symptom("LC201", "sched steps / opt step", "scheduler.step() per optimizer.step()",
            _sched_per_step, lambda v: v >= 0.5),
    Symptom("LC202", "sched steps before 1st opt step", "count", _sched_first,
            lambda v: v >= 1, fmt="{:g}"),
    Symptom("LC203", "plateau steps w/o metric", "count", _plateau_no_metric, lambda v: v >= 1,
            fmt="{:g}", errors_are_evidence=True),
    Symptom("LC301", "eval-mode training", "fraction of backward passes", _eval_mode_training,
            lambda v: v > 0),
    Symptom("LC302", "KiB saved / val batch", "KiB of activations saved for backward per validation forward",
            _validation_graph, lambda v: v > 0),
    Symptom("LC401", "graph nodes kept / step", "growth of live autograd graph nodes per optimizer step",
            _kept_graphs, lambda v: v >= 1),
    Symptom("LC501", "params not updated",
            "fraction of the model's parameters step() does not update (1: step() raised)",
            _orphaned, lambda v: v > 0, errors_are_evidence=True),
    Symptom("LC502", "params not updated",
            "fraction of the model's parameters step() does not update (1: step() raised)",
            _orphaned, lambda v: v > 0, errors_are_evidence=True),
    Symptom("LC601", "grad scale at clip", "gradients seen by clip_grad_norm_ / true gradients",
            _clip_scale, lambda v: v > 1.5),
    Symptom("LC602", "applied grad scale", "gradients applied by step() / true gradients",
            _applied_scale, lambda v: v > 1.5),
    Symptom("LC603", "applied grad scale", "gradients applied by step() / true gradients",
            _applied_scale, lambda v: v < 1 / 1.5),
    Symptom("LC604", "updates / scaler step", "scaler.update() calls per scaler.step()",
            _no_update, lambda v: v < 1, errors_are_evidence=True),
    Symptom("LC605", "applied grad scale", "gradients applied by step() / true gradients",
            _unscale_misplaced, lambda v: v > 1.5, errors_are_evidence=True),
    Symptom("LC106", "step grad vs clipped sum", "distance of the applied gradient from the clipped sum of its "
            "micro-batches' gradients, relative to that gradient's norm", _micro_clip, lambda v: v > 0.05),
    Symptom("LC107", "steps per batch", "optimizer steps per loader batch", _steps_per_batch, lambda v: v > 1.5,
            fmt="{:g}"),
    Symptom("LC303", "train-mode val forwards", "fraction of validation forwards run in train mode",
            _train_mode_validation, lambda v: v > 0),
    Symptom("LC503", "params not in optimizer", "fraction of the trained graph's parameter elements the optimizer "
            "does not hold", _untrained_params, lambda v: v > 0),
    Symptom("LC504", "params not in optimizer", "fraction of the trained graph's parameter elements the optimizer "
            "does not hold (1: the forward raised: on a GPU model.to() leaves those layers on the CPU)",
            _unregistered_params, lambda v: v > 0, errors_are_evidence=True),
    Symptom("LC505", "input/model mismatch", "fraction of forwards whose input dtype or device is not the model's "
            "(1: the forward raised)", _input_mismatch, lambda v: v > 0, errors_are_evidence=True),
    Symptom("LC701", "final train loss", "mean training loss over the last 8 batches", _loss_floor,
            lambda v: v > 0.3),
    Symptom("LC702", "BCELoss range error", "1 when BCELoss raised on inputs outside [0, 1] (on a GPU: a device-side "
            "assert)", _probability_range,
            lambda v: v > 0, fmt="{:g}", errors_are_evidence=True),
    Symptom("LC801", "best = live tensors", "fraction of the tensors given to load_state_dict() that are the "
            "module's own", _aliased_loads, lambda v: v > 0.5),
    Symptom("LC802", "optimizer restarts", "times the optimizer's state started over during the run",
            _cold_resume, lambda v: v >= 1, fmt="{:g}"),
    Symptom("LC901", "epochs in same order", "fraction of later epochs with the first epoch's sample order",
            _same_order, lambda v: v > 0.5),
]}
SYMPTOMS = dict(sorted(SYMPTOMS.items()))


def measure(code: str, record: dict) -> dict:
    """Measure ``code``'s symptom in one run's record: ``{value, shown, detail, error}``."""
    sym = SYMPTOMS[code]
    error = _error_text(record)
    if record.get("error") and record["error"]["type"] in ("RunnerError", "Timeout"):
        return {"value": None, "shown": None, "detail": error, "error": error}
    value, detail = sym.measure(record)
    if error and not sym.errors_are_evidence:
        return {"value": value, "shown": None, "detail": f"script failed: {error}; {detail}", "error": error}
    shown = None if value is None else bool(sym.present(value))
    if value is not None and not math.isfinite(value):
        value = None  # keep the JSON strict; the detail says what happened
    return {"value": value, "shown": shown, "detail": detail, "error": error or None}


def verdict(bad: dict, good: dict) -> str:
    """``reproduced`` when the bad run shows the symptom and the good run does not."""
    if bad["shown"] and good["shown"] is False:
        return "reproduced"
    return "not reproduced"


def run_info(record: dict) -> dict:
    """Device and dtype the script trained with (from its training forwards)."""
    fwd = [f for f in record.get("forwards") or [] if f.get("backward")] or record.get("forwards") or []
    if not fwd:
        return {"device": "cuda" if record.get("cuda") else "cpu", "dtype": "-"}
    f = fwd[-1]
    dtype = f"{f['autocast']} autocast" if f.get("autocast") else f["param_dtype"]
    return {"device": f["device"], "dtype": dtype}
