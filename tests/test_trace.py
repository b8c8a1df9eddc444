"""``loopcheck trace``: every bad fixture with a runtime symptom on CPU is reported at its line with
its code, every good and valid fixture is silent, framework loops (Lightning, transformers,
accelerate) are traced, static findings are marked, and the command behaves (formats, exit
codes, --steps, -m, sys.argv, the program's output, noqa)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("torch")

from click.testing import CliRunner  # noqa: E402

from loopcheck.cli.commands import main  # noqa: E402
from loopcheck.trace import codesearch  # noqa: E402
from loopcheck.trace.sites import Site, UserCode, package_of  # noqa: E402
from loopcheck.trace.state import IdMap, call_text  # noqa: E402
from loopcheck.trace.target import Target, TargetError, parse_command  # noqa: E402
from loopcheck.trace import WATCHED_CODES  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures"
DATA = ROOT / "tests" / "data" / "trace"
EXPECT = re.compile(r"#\s*expect:\s*([A-Z0-9, ]+)")
TRACE = re.compile(r"#\s*trace:\s*([A-Z0-9, ]+)")

BAD = sorted(FIXTURES.glob("LC*_bad*.py"))
GOOD = sorted(FIXTURES.glob("LC*_good.py")) + sorted((FIXTURES / "valid").glob("*.py")) + sorted(
    DATA.glob("good_*.py"))
FRAMEWORK = sorted(DATA.glob("lightning_*.py")) + sorted(DATA.glob("hf_trainer_*.py")) + sorted(
    DATA.glob("accelerate_*.py"))

#: Bad fixtures whose bug cannot show when they run on a CPU, or that the tracer does not watch
#: (their static finding is then marked "not observed"), and why.
NO_RUNTIME_SYMPTOM = {
    "LC103_bad_lightning_on_after_backward_clears_on_a_counter.py": "the clear runs every 50 batches; the traced "
        "run makes 8 steps (2 epochs of 4 batches), so it never runs",
    "LC301_bad_input_image_and_network_in_eval.py": "the tracer reports nothing here: the module the loop calls "
        "(distance) is in train mode, and its submodule net, whose parameters the step trains, is the one in eval "
        "mode (not investigated further)",
    **{name: "the tracer does not confirm this per-batch StepLR (its LC201 watch is not met by this "
             "loop; not investigated): the fixture pins the static reading (provenance of the loss)"
       for name in ("LC201_bad_forward_bound_by_a_for_target.py", "LC201_bad_forward_bound_by_a_walrus.py",
                    "LC201_bad_forward_indexed_under_no_grad.py", "LC201_bad_forward_kept_in_the_other_arm.py",
                    "LC201_bad_gradients_set_by_setattr.py", "LC201_bad_gradients_set_over_param_groups.py")},
    **{name: "not runnable as written: p.grad is None after zero_grad(), so the in-place write raises "
             "AttributeError; the fixture pins the static reading of a gradient write"
       for name in ("LC201_bad_gradients_copied_in_place.py", "LC201_bad_gradients_written_through_data.py")},
    "LC301_bad_deepcopy_of_dropout_mlp.py": "the model trained in eval mode is a copy.deepcopy of the one eval() "
                                            "was called on; the tracer does not observe it (not investigated)",
    "LC501_bad_half_after_first_epoch_under_option.py": "the conversion runs only under --half, which the trace "
                                                        "does not pass",
    "LC501_bad_half_option_tested_in_save_helper.py": "the conversion runs only under --half, which the trace "
                                                       "does not pass",
    "LC501_bad_half_option_refused_on_other_namespace.py": "the conversion runs only under --half, which the "
                                                            "trace does not pass (and the script then refuses it)",
    "LC501_bad_optimizer_state_moved_then_loaded.py": "without CUDA every device is the CPU: the moves change nothing",
    "LC501_bad_resumed_optimizer_state_moved_before_model_elsewhere.py": "without CUDA every device is the CPU: the "
                                                                         "moves change nothing",
    "LC501_bad_checkpoint_inline_back_to_other_device.py": "without CUDA every device is the CPU: the moves "
                                                           "change nothing",
    "LC501_bad_trainer_save_back_to_other_device.py": "without CUDA every device is the CPU: the moves change nothing",
    "LC501_bad_trainer_save_device_bound_again.py": "without CUDA every device is the CPU: the moves change nothing",
    "LC501_bad_cpu_model_moved_to_gpu_after_steps.py": "without CUDA the CUDA phases do not run and `device` is the "
                                                        "CPU: model.to(device) changes nothing",
    "LC501_bad_train_function_moves_cpu_model_to_config_device.py": "without CUDA config.device is the CPU: "
                                                                    "model.to(config.device) changes nothing",
    "LC501_bad_train_function_moves_to_other_device.py": "without CUDA every device is the CPU: the moves change "
                                                          "nothing",
    "LC501_bad_trainer_save_leaves_model_on_cpu.py": "without CUDA the model was never moved off the CPU: "
                                                     "model.to('cpu') changes nothing",
    "LC501_bad_trainer_save_reads_device_after_cpu.py": "without CUDA the model was never moved off the CPU: "
                                                        "model.to('cpu') changes nothing",
    "LC302_bad_class_instantiated_in_main.py": "the tracer watches the models an optimizer trains; the scorer's "
                                               "network is never trained, so its graph-recording eval forward "
                                               "is not watched",
    "LC401_bad_forward_fills_steps_kept_on_module.py": "the tracer marks the graph node of the loss backward() "
                                                       "runs on, which dies; the tensor the module keeps holds "
                                                       "the forward's step outputs (upstream nodes, about 90 more "
                                                       "per step), which no backward() reaches",
    "LC105_bad_shadow_params_grad_added.py": "the shadow tensors' gradients pile up through `copy.grad += "
                                             "param.grad`, a write by hand: the tracer follows the gradients "
                                             "backward() fills, and no backward reaches the shadow tensors",
    "LC401_bad_accumulate_total_reset_off_sync.py": "accelerator.backward(loss) runs backward() on its own "
                                                    "`loss / steps`, the node the tracer marks, which nothing "
                                                    "keeps; the kept total holds the loss upstream of it",
    "LC401_bad_entry_into_held_records.py": "the tracer marks the graph node of the loss backward() runs on; "
                                            "the kept dicts hold the pose looked up before it (an upstream "
                                            "node), not the loss's node, which dies",
    "LC401_bad_entry_into_record_zipped_with_loader.py": "the tracer marks the graph node of the loss backward() "
                                                         "runs on; the kept notes hold the pose looked up before "
                                                         "it (an upstream node), not the loss's node, which dies",
    "LC401_bad_total_in_helper_given_two_batches.py": "the total keeps the first batch's graph past the call's "
                                                      "second step only: the tracer lets a loss live up to the "
                                                      "step after its own, and by the next call's first step the "
                                                      "helper has returned and its total is gone",
    "LC401_bad_hidden_state_carried_across_batches.py": "the second backward() raises (the step updated in "
                                                         "place the weights the first step's graph saved), so "
                                                         "the run stops before the chain of graphs can grow",
    "LC501_bad_checkpoint_leaves_model_on_cpu.py": "the model goes to the GPU only where CUDA is available: on "
                                                   "this machine it never leaves the CPU, and model.cpu() moves "
                                                   "nothing",
    "LC103_bad_zero_grad_in_except_after_a_later_raise.py": "the check raises only on a non-finite loss: the "
                                                             "fixture's losses are finite, so the handler never runs",
    "LC605_bad_unscale_under_a_step_under_a_and_c.py": "the unscale_ runs only with --fp16, which the traced run "
                                                       "does not pass",
    "LC401_bad_del_slice_of_other_list.py": "the tracer watches the tensors backward() runs on, not the "
                                            "critic's values the history list keeps (their graphs are kept "
                                            "all the same)",
    "LC401_bad_outputs_kept_for_epoch.py": "the tracer watches the tensors backward() runs on, not the "
                                           "model outputs a list keeps (their graphs are kept all the same)",
    "LC401_bad_first_pass_outputs_kept_each_epoch.py": "the tracer watches the tensors backward() runs on, not "
                                                        "the model outputs a list keeps (their graphs are kept "
                                                        "all the same)",
    "LC401_bad_outputs_kept_every_fifth_step.py": "the tracer watches the tensors backward() runs on, not the "
                                                  "model outputs a list keeps (their graphs are kept all the same)",
    "LC105_bad_optimizer_parameter.py": "it only defines train_one_epoch(); nothing calls it",
    "LC401_bad_comprehension_of_outputs_kept.py": "the tracer watches the tensors backward() runs on, not the "
                                                  "model outputs a list keeps (their graphs are kept all the same)",
    "LC104_bad_step_first_after_the_forward.py": "its first step updates the weights the forward saved, and "
                                                 "backward() raises RuntimeError (modified by an inplace "
                                                 "operation) before the tracer sees the backward after it",
    "LC501_bad_cuda.py": "the conversion runs only when CUDA is available",
    "LC501_bad_half.py": "the conversion runs only when CUDA is available",
    "LC501_bad_adagrad_then_data_parallel_of_cuda_model.py": "the move runs only when CUDA is available",
    "LC501_bad_to_device.py": "model.to('cpu') on a CPU model changes nothing",
    "LC501_bad_move_after_resume.py": "model.to('cpu') on a CPU model changes nothing",
    "LC502_bad_project_loss_with_parameters.py": "the move runs only when CUDA is available",
    "LC501_bad_trained_part_moved_after_steps.py": "model.encoder.to(device) on a CPU model changes nothing",
    "LC501_bad_adam_beside_adafactor_moved_after_resume.py": "head.to(device) on a CPU model changes nothing",
    "LC501_bad_checkpoint_helper_leaves_model_on_cpu.py": "without CUDA the model was never moved off the CPU: "
                                                          "net.cpu() changes nothing",
    "LC501_bad_cpu_after_steps_model_built_on_device.py": "on a CPU the model is built on the CPU: net.cpu() "
                                                          "changes nothing",
    "LC501_bad_cpu_after_steps_default_device_set.py": "on a CPU the default device is the CPU: model.cpu() "
                                                       "changes nothing",
    "LC501_bad_cpu_after_steps_built_under_device_context.py": "on a CPU the model is built on the CPU: "
                                                               "model.cpu() changes nothing",
    "LC501_bad_eval_helper_moves_model_to_other_device.py": "on a CPU the training device is the CPU: "
                                                            "net.to(device) changes nothing",
    "LC501_bad_train_helper_given_other_device.py": "on a CPU the training device is the CPU: net.to('cpu') "
                                                    "changes nothing",
    "LC501_bad_adagrad_arm_then_model_moved.py": "on a CPU the training device is the CPU: model.to(device) "
                                                 "changes nothing",
    "LC501_bad_resumed_optimizer_state_moved_elsewhere.py": "on a CPU the training device is the CPU: "
                                                            "model.to(device) changes nothing",
    "LC501_bad_other_optimizer_state_moved.py": "on a CPU the training device is the CPU: generator.to(device) "
                                                "changes nothing",
    "LC501_bad_sampled_weight_not_given_to_optimizer.py": "the replaced part is a bare nn.Parameter, not a module: the tracer finds the trained model by its forward() and dates the modules built after the optimizer, and the classifier's forward() never runs",
    "LC501_bad_sampled_weight_given_to_other_optimizer.py": "the replaced part is a bare nn.Parameter, not a module: the tracer finds the trained model by its forward() and dates the modules built after the optimizer, and the classifier's forward() never runs",
    "LC201_bad_index_batches_in_runs.py": "batches taken by index: the tracer measures an epoch scheduler's steps "
                                          "against a pass over a DataLoader",
    "LC201_bad_step_over_optimizers.py": "batches taken by index: the tracer measures an epoch scheduler's steps "
                                         "against a pass over a DataLoader",
    "LC201_bad_rebuilt_per_task_index_batches.py": "batches taken by index: the tracer measures an epoch "
                                                   "scheduler's steps against a pass over a DataLoader",
    "LC301_bad_argparse_default_dropout.py": "the dropout is functional (F.dropout with training=self.training): "
                                             "the tracer counts Dropout and BatchNorm modules only",
    "LC301_bad_shallow_copy_eval_in_helper.py": "the tracer follows the model object, not a shallow copy that "
                                                "shares its submodules",
    "LC401_bad_parameterless_module_on_output.py": "the tracer watches the tensors backward() runs on, not the "
                                                   "outputs a list keeps",
    "LC401_bad_samples_of_generator.py": "the tracer watches the tensors backward() runs on, not the samples a "
                                         "list keeps; its LC302 forward runs once per epoch outside a watched loop",
    "LC401_bad_rollout_buffer_never_reset.py": "the tracer watches the tensors backward() runs on, not the "
                                               "critic's values a rollout list on self keeps (their graphs are "
                                               "kept all the same)",
    "LC401_bad_dict_filled_under_no_grad.py": "the tracer watches the loss backward() runs on (the mean), not "
                                              "the per-sample tensor the dict keeps",
    "LC201_bad_lightning_step_interval_two_lists.py": "Lightning steps the scheduler inside Trainer.fit(): the tracer "
                                                      "does not measure its steps against the framework's batches yet",
    "LC401_bad_lightning_losses_kept_on_self.py": "Lightning runs backward() inside Trainer.fit(): the tracer does "
                                                  "not follow the loss it returns into the list kept on self yet",
    "LC302_bad_ema_output_name_reused.py": "the tracer watches the forwards of the models an optimizer trains; the "
                                           "EMA copy is not one",
    "LC302_bad_detector_predicts_under_no_grad.py": "the tracer reads the graph of a forward's outputs; this forward "
                                                    "returns what it computes under no_grad, and the graph its "
                                                    "backbone records is freed when it returns",
}
#: Framework scripts whose loop the static pass builds from the framework's driver knowledge
#: (``[[driver]]``), so that the runtime finding confirms a static one.
STATIC_FRAMEWORK = {"lightning_clip_in_training_step.py"}

#: Bad fixtures whose bug the tracer observes at another line than the static finding, and why:
#: name -> (the runtime's (code, line) pairs, why).
RUNTIME_ELSEWHERE = {
    "LC302_bad_monitoring_forwards_between_backward_and_step.py": ({("LC302", 21), ("LC302", 22)}, "the tracer "
        "reports each eval-mode forward outside no_grad (lines 21 and 22); the static pass reports the first one "
        "after each eval()"),
    "LC301_bad_eval_generator_detached_then_trained_through.py": ({("LC301", 28), ("LC302", 35)}, "the tracer also "
        "reads the eval-mode generator's forward whose output is detached into the critic's loss (line 35) as an "
        "evaluation outside no_grad; it is the critic's training step, which LC302 leaves alone"),
    "LC301_bad_parity_counter_moved_between_tests.py": ({("LC103", 24), ("LC301", 36), ("LC302", 33)}, "the "
        "tracer reports the forward that runs in eval mode before the step (line 36), not the train(False) the "
        "finding names, and reads the loop's other alternations as LC103 (line 24) and LC302 (line 33)"),
    "LC103_bad_zero_grad_under_a_test_that_reads_no_gradient.py": ({("LC103", 28), ("LC103", 39)}, "the probe's "
        "gradients stay finite on these data, so the clear under `if diverged:` (line 54) never runs; the static "
        "finding is about the test it stands under, which reads no gradient of the optimizer's parameters"),
    "LC202_bad_loop_reads_bound_names.py": ({("LC202", 23), ("LC302", 25), ("LC302", 32)}, "the tracer also "
                                            "reports the forward over the unlabeled loader (line 25), whose "
                                            "graph is freed without a backward(): true of the graph, but no "
                                            "evaluation for static LC302"),
    "LC202_bad_name_bound_by_global.py": ({("LC202", 30), ("LC302", 32), ("LC302", 39)}, "as "
                                          "LC202_bad_loop_reads_bound_names.py: the unlabeled forward (line 32)"),
    "LC604_bad_raise_between_step_and_update_skips_batch.py": ({("LC103", 25)}, "the tracer reads the "
                                                               "handler's zero_grad() after the raised batch as "
                                                               "LC103; it does not pair scaler.step() with "
                                                               "scaler.update() across the handler"),
    "LC301_bad_mode_passed_to_helper.py": ({("LC301", 20), ("LC301", 30)}, "the tracer reports the forward that "
                                          "runs in eval mode; the finding names the call whose literal chose eval"),
    "LC103_bad_forward_zero_grad_between_backward_and_step.py": ({("LC103", 17)}, "the tracer sees the "
                                                                 "zero_grad() inside forward, not the forward "
                                                                 "call that runs it"),
    "LC105_bad_forward_without_zero_grad.py": ({("LC105", 29), ("LC105", 30)}, "the tracer reports each "
                                               "optimizer's step; the finding names the loop's first"),
    "LC105_bad_forward_calls_own_zero_grad.py": ({("LC105", 36), ("LC105", 37)}, "the tracer reports each "
                                                 "optimizer's step; the finding names the loop's first"),
    "LC301_bad_own_train_method_absent.py": ({("LC301", 26)}, "the tracer sees train(False) as a mode change "
                                             "it cannot name and reports the eval-mode forward"),
    "LC301_bad_own_train_method_calls_super.py": ({("LC301", 35)}, "the tracer sees train(False) as a mode "
                                                  "change it cannot name and reports the eval-mode forward"),
    "LC401_bad_history_dict.py": ({("LC302", 30)}, "the tracer watches the tensors backward() runs on, not the "
                                  "held-out loss the dict keeps; it sees that loss's forward pass run with grad "
                                  "enabled and never backpropagated"),
    "LC401_bad_entry_not_backpropagated.py": ({("LC401", 30)}, "the tracer watches the tensors backward() runs "
                                              "on: it sees the running total, not the auxiliary loss (line 25) "
                                              "that is never backpropagated"),
    "LC301_bad_train_mode_false_keyword.py": ({("LC301", 16)}, "the tracer sees train(mode=False) as a mode "
                                              "change it cannot name and reports the eval-mode forward"),
    "LC301_bad_phase_loop_many_flags_val_only.py": ({("LC301", 39)}, "the tracer sees train(False) as a mode "
                                                    "change it cannot name and reports the eval-mode forward"),
    "LC302_bad_volatile_false_in_caller.py": ({("LC302", 21), ("LC302", 22)}, "model.forward(x) bypasses "
                                              "Module.__call__: the tracer sees the forwards of the layers the "
                                              "method runs"),
    "LC302_bad_volatile_only_after_forward.py": ({("LC302", 20)}, "net.forward(inputs) bypasses Module.__call__: "
                                                 "the tracer sees the forwards of the layers the method runs"),
    "LC401_bad_eval_forward_returns_features.py": ({("LC302", 37)}, "the tracer watches the tensors backward() runs "
                                                   "on, not the outputs a list keeps; it sees their eval-mode "
                                                   "forwards run with grad enabled"),
    "LC401_bad_eval_predict_returns_its_input.py": ({("LC302", 37)}, "the tracer watches the tensors backward() "
                                                    "runs on, not the outputs a list keeps; it sees their eval-mode "
                                                    "forwards run with grad enabled"),
    "LC401_bad_val_outputs_kept_into_next_epoch.py": ({("LC302", 23)}, "the tracer watches the tensors backward() "
                                                      "runs on, not the predictions a list keeps; it sees their "
                                                      "forward passes run with grad enabled and never "
                                                      "backpropagated"),
    "LC401_bad_attr_flag_set_false.py": ({("LC302", 23)}, "the tracer watches the tensors backward() runs on, "
                                         "not the critic's values a list on self keeps; it sees the evaluation "
                                         "loop's forward passes run with grad enabled and never backpropagated"),
    "LC401_bad_train_mode_forward_kept.py": ({("LC302", 35)}, "the tracer watches the tensors backward() runs on, "
                                             "not the losses a list keeps; it sees their forward passes run with "
                                             "grad enabled and never backpropagated"),
    "LC501_bad_channels_last_under_overwrite_setting.py": ({("LC502", 14)}, "the tracer sees the conversion "
                                                           "make new Parameter objects and reports it as LC502 (a "
                                                           "conversion after the optimizer); the static pass "
                                                           "reports the same line as LC501"),
    "LC501_bad_head_built_in_method_after_optimizer.py": ({("LC501", 33)}, "the tracer places an orphaned "
                                                          "layer at the store of the attribute that owns its "
                                                          "parameters: after deepen() they belong to a layer "
                                                          "nested in the new Bottleneck (encode.net.0), which "
                                                          "no store names, so only widen()'s line is placed"),
    "LC202_bad_own_step_calls_super.py": ({("LC202", 21)}, "the tracer wraps torch's LRScheduler.step() and "
                                          "reports where it is called from: the super().step() inside the "
                                          "project's own step(), not the scheduler.step() of the loop"),
}

#: Errors that mean a fixture is a static snippet, not a program (names it never defines,
#: modules that only exist in its story).
SNIPPET_ERRORS = ("NameError", "ModuleNotFoundError",
                  # or files and devices that exist only in its story (this machine has no GPU)
                  "FileNotFoundError", "AssertionError: Torch not compiled with CUDA enabled",
                  # or pretrained files of a hub this machine cannot reach
                  "OSError: We couldn't connect")

#: Good programs whose library is not installed are skipped (the test extra installs them).
NEEDS = {"accelerate_": "accelerate", "transformers_": "transformers", "lightning_": "lightning",
         "hf_trainer_": "transformers"}

#: Seconds one program may take in a worker: the slowest here, torch.compile's first
#: compilation (fixtures/valid/torch_compile.py), took 20-30 s. Past it, the worker prints every
#: thread's stack and exits, and the programs after it go on in a new worker.
PROGRAM_TIMEOUT = 240

#: Traces the programs named after the results file, one after another; each program's result
#: is one line of JSON, written as soon as it is known (a worker that hangs keeps what it did).
WORKER = r"""
import faulthandler, json, os, sys
import torch
from loopcheck.workspace.config import Options, Resolver
from loopcheck.trace.report import build_report
from loopcheck.trace.run import run_target
from loopcheck.trace.target import Target
import loopcheck.analysis, loopcheck.cli.commands  # the static check's imports, before any program's time counts
results = open(sys.argv[1], "a", encoding="utf-8")
limit = float(os.environ["LOOPCHECK_TEST_PROGRAM_TIMEOUT"])
for path in sys.argv[2:]:
    print(f"tracing {path}", file=sys.stderr, flush=True)
    faulthandler.dump_traceback_later(limit, exit=True)
    # programs share this process: undo the global settings a previous one may have changed
    torch.__future__.set_overwrite_module_params_on_conversion(False)
    torch.__future__.set_swap_module_params_on_conversion(False)
    torch.set_default_dtype(torch.float32)
    torch.set_grad_enabled(True)
    result = run_target(Target("path", path, []))
    report = build_report(result, resolver=Resolver(Options(preview=True)))  # the fixtures mark every rule
    faulthandler.cancel_dump_traceback_later()
    results.write(json.dumps({"path": path,
        "runtime": sorted([o.code, os.path.abspath(o.site.filename), o.site.line] for o in result.observations),
        "report": [[f.code, f.filename, f.row, report.status(f)] for f in report.findings],
        "error": result.error and f"{result.error['type']}: {result.error['message']}",
        "steps": result.steps, "notes": result.notes,
    }) + "\n")
    results.flush()
"""


def expected(path: Path, pattern=EXPECT) -> set[tuple[str, int]]:
    out = set()
    for lineno, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        m = pattern.search(line)
        if m:
            out |= {(code.strip(), lineno) for code in m.group(1).split(",") if code.strip()}
    return out


def _env() -> dict:
    return dict(os.environ, OMP_NUM_THREADS="1", MKL_NUM_THREADS="1", PYTHONWARNINGS="ignore",
                TOKENIZERS_PARALLELISM="false", HF_HUB_OFFLINE="1", TRANSFORMERS_VERBOSITY="error")


def _missing_library(path: Path) -> str | None:
    import importlib.util

    for prefix, lib in NEEDS.items():
        if path.name.startswith(prefix) and importlib.util.find_spec(lib) is None:
            return lib
    return None


def _trace_in_workers(paths: list[str], folder: Path, limit: float = PROGRAM_TIMEOUT) -> dict[str, dict]:
    """Each program's result (the worker's JSON line), programs traced one after another in
    worker processes (stdout and stderr to files in ``folder``, not pipes: a process a program
    leaves behind cannot hold the test up). A program that does not finish in ``limit`` s, or
    whose worker dies, is run once more after the others, in a new worker; if it fails again its
    result is ``{"hung": <the end of its worker's stderr, with every thread's stack>}``."""
    import signal
    import time

    out: dict[str, dict] = {}
    todo = list(paths)
    retried: set[str] = set()
    # the programs run in ``folder``: the checkpoints some of them write land there, not in the
    # repository (the paths are absolute; PYTHONPATH keeps this checkout's loopcheck first)
    env = dict(_env(), LOOPCHECK_TEST_PROGRAM_TIMEOUT=str(limit),
               PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))
    for n in range(2 * len(paths)):  # each round finishes or gives up on at least one program
        if not todo:
            break
        results, log = folder / f"results{n}.jsonl", folder / f"stderr{n}.txt"
        with open(log, "w", encoding="utf-8") as err:
            proc = subprocess.Popen([sys.executable, "-c", WORKER, str(results), *todo], cwd=folder, env=env,
                                    stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=err,
                                    start_new_session=True)
        last, progress = 0, time.monotonic()
        while proc.poll() is None:
            time.sleep(0.2)
            done = results.read_text(encoding="utf-8").count("\n") if results.exists() else 0
            if done == len(todo):
                break  # every result is written: whatever the worker does at exit does not matter
            if done != last:
                last, progress = done, time.monotonic()
            elif time.monotonic() - progress > limit + 60:
                break  # stuck where faulthandler cannot end it
        try:
            os.killpg(proc.pid, signal.SIGKILL)  # the worker and whatever its programs started
        except ProcessLookupError:
            pass
        proc.wait()
        lines = results.read_text(encoding="utf-8").split("\n")[:-1] if results.exists() else []
        finished = [json.loads(line) for line in lines]  # whole lines only
        for r in finished:
            out[r.pop("path")] = r
        todo = [p for p in todo if p not in out]
        if todo:  # the first one left hung or killed its worker
            stuck = todo.pop(0)
            if stuck in retried:
                out[stuck] = {"hung": log.read_text(encoding="utf-8", errors="replace")[-6000:]}
            else:
                retried.add(stuck)
                todo.append(stuck)
    return out


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """Every program traced once, in two lines of worker processes (each imports torch once)."""
    from concurrent.futures import ThreadPoolExecutor

    paths = [str(p) for p in BAD + GOOD + FRAMEWORK if _missing_library(p) is None]
    halves = [paths[0::2], paths[1::2]]
    out = {}
    # the folders are made here, not in the threads: the factory's first call makes its base
    # folder, which two threads racing would both try to create
    folders = [tmp_path_factory.mktemp(f"trace{i}") for i in range(len(halves))]
    with ThreadPoolExecutor(2) as threads:
        for part in threads.map(lambda h: _trace_in_workers(h[1], folders[h[0]]), enumerate(halves)):
            out.update(part)
    return out


def _run(runs, path: Path) -> dict:
    lib = _missing_library(path)
    if lib:
        pytest.skip(f"{lib} is not installed")
    r = runs[str(path)]
    if "hung" in r:
        pytest.fail(f"tracing {path.name} ran past {PROGRAM_TIMEOUT} s or ended its worker, twice; the "
                    f"worker's stderr:\n{r['hung']}")
    return r


def _skip_snippet(r: dict) -> None:
    """Static-only fixtures (functions nothing calls, names they never define) train nothing."""
    if r["steps"] == 0 and not r["runtime"] and (r["error"] is None or r["error"].startswith(SNIPPET_ERRORS)):
        assert all(s == "not-observed" for *_, s in r["report"])
        pytest.skip(f"not a runnable training program (no optimizer step; {r['error'] or 'nothing runs'})")


@pytest.mark.parametrize("path", BAD, ids=lambda p: p.name)
def test_bad_fixture_is_reported_at_its_line(runs, path):
    r = _run(runs, path)
    _skip_snippet(r)
    want = expected(path)
    got = {(code, line) for code, filename, line in r["runtime"] if filename == str(path)}
    if not {code for code, _ in want} & WATCHED_CODES:
        # A rule trace does not watch: the static finding is reported, marked not observed.
        assert got == set()
        assert {(c, row, s) for c, _f, row, s in r["report"]} == {(c, row, "not-observed") for c, row in want}
        return
    if path.name in RUNTIME_ELSEWHERE:
        runtime, why = RUNTIME_ELSEWHERE[path.name]
        assert got == runtime, why
        return
    if path.name in NO_RUNTIME_SYMPTOM:
        assert got == set(), NO_RUNTIME_SYMPTOM[path.name]
        assert {(c, row, s) for c, _f, row, s in r["report"]} == {(c, row, "not-observed") for c, row in want}
        return
    assert got == want, r
    assert {(c, row, s) for c, _f, row, s in r["report"]} == {(c, row, "confirmed") for c, row in want}


#: Good fixtures written for an older PyTorch, where the static pass is silent because the code
#: is right on the version it targets, but the tracer, on today's PyTorch, sees what that version
#: did not do: name -> (the codes the tracer reports, why).
VOLATILE = ("Variable(x, volatile=True) turns the graph off on PyTorch <= 0.3, which the script is written for; "
            "0.4+ ignores it (and warns)")
SCHEDULER_FIRST = ("scheduler.step() at the top of the epoch was the documented order before PyTorch 1.1, which "
                   "the script (volatile inputs: <= 0.3) is written for; from 1.1 it skips the first LR")
OLD_PYTORCH = {
    "volatile_validation_pytorch03.py": ({"LC302"}, VOLATILE),
    "volatile_in_caller_model_method_pytorch03.py": ({"LC302"}, VOLATILE),
    "volatile_in_caller_helper_pytorch03.py": ({"LC302"}, VOLATILE),
    "scheduler_step_first_pytorch03.py": ({"LC202", "LC302"}, f"{SCHEDULER_FIRST}; {VOLATILE}"),
    "scheduler_step_first_volatile_helper_pytorch03.py": ({"LC202"}, SCHEDULER_FIRST),
}


#: Good fixtures the tracer misreads: name -> (the codes it reports, why). The static pass is
#: silent on them.
TRACER_MISREADS = {
    "eval_generator_detached_into_critic_loss.py": ({"LC302"}, "the critic's step runs the eval-mode generator "
                                                    "outside no_grad and detaches its output into the critic's "
                                                    "loss; the tracer reads that forward as an evaluation"),
    "alternating_parity_tests_one_counter.py": ({"LC302"}, "the alternating GAN runs each network's forward in "
                                                "eval mode while the other one trains (the generator's output is "
                                                "detached, the frozen critic's forward feeds the generator's loss); "
                                                "the tracer reads an eval-mode forward outside no_grad as an "
                                                "evaluation"),
    "amp_oom_handler_skips_batch_around_step_and_update.py": ({"LC103"}, "the fixture raises its out-of-memory "
                                                              "error inside the step on one batch; the handler's "
                                                              "zero_grad() clears that failed batch's gradients, "
                                                              "which the tracer reads as LC103: the handler's "
                                                              "purpose, on a path through a call that raised"),
    "scheduler_first_previewed_without_backward.py": ({"LC202"}, "the tracer sees scheduler.step() before the "
                                                      "first optimizer.step(); no backward runs, so no step "
                                                      "applies a gradient and the skipped LR changes nothing"),
    "zero_dim_loss_index_after_first_step.py": ({"LC202"}, "the tracer sees scheduler.step() before the first "
                                                "optimizer.step(); the program then raises IndexError at "
                                                "loss.data[0] on its first batch, so no schedule is followed"),
    "apply_enables_dropout_after_eval.py": ({"LC301"}, "the tracer sees model.eval() before the steps; "
                                            "model.apply(fn) then puts the Dropout modules back in train mode, "
                                            "which it does not follow"),
    "optimizer_class_clips_in_its_step.py": ({"LC102"}, "the tracer counts a step from the call of step(); this "
                                             "optimizer clips inside it, before its own update"),
    "scheduler_clamped_first_position.py": ({"LC202"}, "the tracer sees scheduler.step() before "
                                            "optimizer.step(); this schedule reads its position as "
                                            "max(last_epoch, 1), so positions 0 and 1 give the same LR "
                                            "and no value is skipped"),
    "rollout_buffer_reset_after_update.py": ({"LC302"}, "the tracer reports the critic's forward in the rollout, "
                                             "whose graph is freed without a backward() when the buffer is "
                                             "emptied (the update reads the values detached): true of the graph, "
                                             "but static LC302 is about evaluation without no_grad, and the "
                                             "fixture shows that this bounded buffer is no LC401"),
    "rollout_buffer_cleared_after_update.py": ({"LC302"}, "as rollout_buffer_reset_after_update.py: the critic's "
                                               "forward in the rollout has its graph freed without a backward() "
                                               "when the buffer is cleared"),
    "attr_flag_set_before_guarded_store.py": ({"LC302"}, "as rollout_buffer_reset_after_update.py: the "
                                              "critic's forward in the training rollout has its graph freed "
                                              "without a backward() when the buffer is emptied"),
    "eval_forward_unrolls_gradient_steps.py": ({"LC302"}, "the tracer watches the graph of a forward's output "
                                               "for a backward; these forwards run torch.autograd.grad or "
                                               "backward() inside themselves, through the graph they record, "
                                               "which under torch.no_grad() would not exist: the forward needs "
                                               "grad, though nothing backpropagates its output afterwards"),
    "eval_forward_under_enable_grad.py": ({"LC302"}, "the tracer reports the conditioning projection's forward in "
                                          "validation, whose graph is freed without a backward(): true of the "
                                          "graph, but the code turns gradients on for it with torch.enable_grad() "
                                          "inside the caller's no_grad, so it asks for that graph, and the "
                                          "torch.no_grad() LC302 advises would not stop it"),
    "amp_clip_threshold_in_scaled_units.py": ({"LC601"}, "the tracer sees the clip act on gradients still "
                                              "scaled; it does not compare the threshold, which the code "
                                              "multiplies by the same scale, so it clips at max_norm in true "
                                              "units"),
    "amp_clip_threshold_times_loss_scale.py": ({"LC601"}, "as amp_clip_threshold_in_scaled_units.py: the "
                                               "threshold is max_norm times scaler.get_scale(), in the "
                                               "gradients' scaled units"),
    "LC103_zero_grad_keeping_zeros_then_gradient_copied_in.py": ({"LC103"}, "the tracer reads the zero_grad() "
                                                                 "between backward() and step() as wiping the "
                                                                 "gradients; it does not watch the combined "
                                                                 "gradient the program then copies into each "
                                                                 ".grad before the step"),
    "sam_wrapped_base_optimizer.py": ({"LC103"}, "SAM's first_step moves the parameters itself (p.add_) and then "
                                      "zero_grad()s: the tracer counts only optimizer steps, and reads the "
                                      "gradients as wiped before any step applied them"),
}


#: Good fixtures that need a GPU past their first steps (a call that only runs with CUDA), and why.
GPU_ONLY = {
    "checkpoint_back_to_same_cuda_index.py": "the checkpoint moves the model back with model.cuda(GPU_ID), which "
                                             "raises where CUDA is not available, after the first epoch's steps",
}


#: Good fixtures that stop on purpose before the bug they hold could run (the static pass is
#: silent because the path ends there), and the error they stop with.
STOPS_BY_DESIGN = {
    "eval_forward_call_misses_a_forward_argument.py": "TypeError: Policy.forward() missing 1 required positional",
    "loss_given_model_tuple_output.py": "TypeError: cross_entropy_loss(): argument 'input'",
    "train_after_call_missing_argument.py": "TypeError: build() missing 1 required positional argument",
    "unpack_model_dict_output_into_other_count.py": "ValueError: not enough values to unpack",
    "zero_dim_loss_index_before_optimizer_step.py": "IndexError: invalid index of a 0-dim tensor",
    "zero_dim_loss_index_before_validation.py": "IndexError: invalid index of a 0-dim tensor",
}


@pytest.mark.parametrize("path", GOOD, ids=lambda p: p.name)
def test_good_fixture_is_silent(runs, path):
    r = _run(runs, path)
    _skip_snippet(r)
    if path.name in STOPS_BY_DESIGN:
        assert r["runtime"] == [] and r["report"] == []
        assert (r["error"] or "").startswith(STOPS_BY_DESIGN[path.name]), r["error"]
        return
    if path.name in GPU_ONLY and r["error"] is not None and not r["runtime"]:
        pytest.skip(f"{GPU_ONLY[path.name]} ({r['error']})")
    if path.name in OLD_PYTORCH or path.name in TRACER_MISREADS:
        codes, why = OLD_PYTORCH.get(path.name) or TRACER_MISREADS[path.name]
        assert {c for c, _f, _line in r["runtime"]} == codes, why
        assert all(s == "runtime" for _c, _f, _row, s in r["report"]), why  # not found statically
        return
    assert r["runtime"] == [] and r["report"] == []
    assert r["error"] is None
    assert r["steps"] > 0


@pytest.mark.parametrize("path", FRAMEWORK, ids=lambda p: p.name)
def test_framework_loop(runs, path):
    """The bug sits in a hook the framework calls: found at runtime, at the hook's line; the
    static pass sees it too where it reads the loop (accelerate's, whose loop is the user's own,
    and the Lightning loops :data:`STATIC_FRAMEWORK` lists)."""
    r = _run(runs, path)
    want = expected(path, TRACE)
    assert {(c, line) for c, _f, line in r["runtime"]} == want
    status = "confirmed" if path.name.startswith("accelerate_") or path.name in STATIC_FRAMEWORK else "runtime"
    assert {(c, row, s) for c, _f, row, s in r["report"]} == {(c, row, status) for c, row in want}
    assert r["error"] is None and r["steps"] >= 12


def test_framework_messages_name_the_framework(runs):
    path = DATA / "lightning_eval_left_on.py"
    _run(runs, path)
    code, out, _ = trace("--output-format", "concise", "--", "python", str(path))
    assert code == 1
    line = out.splitlines()[0]
    assert line.startswith(f"{os.path.relpath(path, ROOT)}:27:9: LC301 [runtime, step ")
    assert line.endswith("self.eval() is still in effect when optimizer.step() inside lightning (line 38) trains "
                         "the model")


def test_a_program_that_hangs_is_told_and_the_others_still_run(tmp_path):
    hangs = tmp_path / "hangs.py"
    hangs.write_text("import time\ntime.sleep(600)\n", encoding="utf-8")
    good = str(FIXTURES / "LC106_good.py")
    out = _trace_in_workers([str(hangs), good], tmp_path, limit=5)  # the good one: 0.2-0.5 s
    assert set(out) == {str(hangs), good}
    assert f'File "{hangs}", line 2 in <module>' in out[str(hangs)]["hung"]  # where it hung, from faulthandler
    assert out[good]["error"] is None and out[good]["runtime"] == [] and out[good]["steps"] > 0


# ------------------------------------------------------------------------------ the command


def trace(*args, cwd=None):
    """Run ``python -m loopcheck trace --preview ARGS`` in a fresh interpreter (the rules the
    programs here break are in preview): (exit code, stdout, stderr)."""
    proc = subprocess.run([sys.executable, "-m", "loopcheck", "trace", "--preview", *args], cwd=cwd or ROOT, env=_env(),
                          capture_output=True, text=True, timeout=300)
    return proc.returncode, proc.stdout, proc.stderr


def invoke(*args, preview: bool = True):
    """``loopcheck trace ARGS`` in this process (faster: torch is imported already), with
    ``--preview`` unless ``preview`` is false (the rules the programs here break are in preview)."""
    res = CliRunner().invoke(main, ["trace", *(["--preview"] if preview else []), *args])
    return res.exit_code, res.stdout, res.stderr


@pytest.fixture
def in_root(monkeypatch):
    monkeypatch.chdir(ROOT)


def test_concise_output_steps_and_exit_code(in_root):
    code, out, err = invoke("--steps", "5", "--output-format", "concise", "--", "python", "fixtures/LC101_bad.py")
    assert code == 1
    lines = out.splitlines()
    assert lines[0] == ("fixtures/LC101_bad.py:46:9: LC101 [*] [confirmed at step 1] torch.nn.utils.clip_grad_norm_() "
                        "runs before loss.backward() (line 47), on empty gradients")
    assert re.fullmatch(r"Traced fixtures/LC101_bad\.py: 5 optimizer steps \(stopped by --steps\) in [\d.]+ s\.",
                        lines[1])
    assert lines[2:] == ["Found 1 runtime finding (1 confirms a static finding)."]
    assert "epoch 0" not in out + err  # it stopped inside its first epoch


def test_steps_stop_exactly_after_n_steps():
    code, out, err = invoke("--steps", "4", "--", "python", str(DATA / "argv_and_output.py"), "--steps", "10")
    assert code == 0, err
    assert "step 4 done" in err and "step 5 done" not in err  # the program's output goes to stderr
    assert "4 optimizer steps (stopped by --steps)" in out


def test_program_arguments_output_and_exit_status():
    """End to end in a fresh interpreter: file descriptor 1 of the program goes to stderr too."""
    code, out, err = trace("--", "python", str(DATA / "argv_and_output.py"), "--steps", "2", "--exit", "3")
    assert "argv: --steps 2 --exit 3 | name: __main__ | file: True" in err
    assert "argv:" not in out
    assert out.splitlines()[-2:] == ["No runtime findings.", "The program exited with status 3."]
    assert code == 2
    code, out, err = invoke("--", "python", str(DATA / "argv_and_output.py"), "--steps", "2", "--fail")
    assert code == 2
    assert re.search(r"The program raised ValueError at .*argv_and_output\.py:26: the program failed on purpose",
                     out)
    assert "Traceback (most recent call last)" in err


def test_module_target_and_a_finding_in_another_file(monkeypatch):
    monkeypatch.chdir(DATA)
    code, out, err = invoke("--output-format", "json", "--", "python", "-m", "tinypkg")
    assert code == 1, err
    (f,) = json.loads(out)
    assert (f["code"], f["filename"], f["location"]["row"]) == ("LC105", str(DATA / "tinypkg" / "engine.py"), 9)
    assert f["trace"] == {"status": "confirmed", "step": 3, "value": 10.0, "count": 8}  # 10 backward passes summed
    assert "Traced -m tinypkg: 10 optimizer steps" in err  # JSON on stdout, the summary on stderr


def test_not_observed_json_sarif_github_and_full(in_root):
    import jsonschema

    code, out, _ = invoke("--output-format", "json", "--steps", "8", "--", "python", "fixtures/LC301_bad.py")
    assert code == 0  # eval() first runs after step 8 (the first epoch): stopped before it trains again
    (f,) = json.loads(out)
    assert f["code"] == "LC301" and f["location"] == {"row": 51, "column": 5}
    assert f["message"].startswith("[not observed in this run] model.eval() is still in effect")
    assert f["trace"] == {"status": "not-observed", "step": None, "value": None, "count": 0}
    assert f["note"].startswith("Not observed at runtime: no training step ran on a forward pass in eval mode")

    code, out, _ = invoke("--output-format", "json", "--", "python", "fixtures/LC301_bad.py")
    (f,) = json.loads(out)
    assert code == 1 and f["trace"]["status"] == "confirmed" and f["trace"]["step"] == 9
    assert f["note"].startswith("Runtime: step 9 trained on a forward pass of MLP in eval mode (BatchNorm1d x1, "
                                "Dropout x1 inactive: Dropout off, BatchNorm on its running statistics). Call "
                                "model.train() before the next training step.\n")

    code, out, _ = invoke("--output-format", "sarif", "--", "python", "fixtures/LC602_bad.py")
    log = json.loads(out)
    schema = json.loads((ROOT / "tests" / "data" / "sarif-schema-2.1.0.json").read_text())
    jsonschema.validate(log, schema)
    (result,) = log["runs"][0]["results"]
    assert result["ruleId"] == "LC602" and result["properties"]["trace"]["status"] == "confirmed"
    assert result["properties"]["trace"]["value"] == 65536.0

    code, out, _ = invoke("--output-format", "github", "--", "python", "fixtures/LC401_bad.py", preview=False)
    assert "LC401" not in out  # a rule in preview: only with --preview
    code, out, _ = invoke("--output-format", "github", "--", "python", "fixtures/LC401_bad.py")
    assert out.startswith(f"::warning title=loopcheck (LC401),file={ROOT}/fixtures/LC401_bad.py,line=51,col=9,")
    assert "LC401 [confirmed at step 3] loss_history.append(loss) keeps a tensor and its autograd graph past optimizer.step() at line 50" in out

    code, out, _ = invoke("--output-format", "full", "--no-static", "--", "python", "fixtures/LC104_bad.py")
    assert out.splitlines()[:10] == [
        "LC104 [runtime, step 1] optimizer.step() runs before loss.backward() (line 49): it applies no gradient of "
        "this batch",
        "  --> fixtures/LC104_bad.py:48:9",
        "   |",
        "47 |         loss = criterion(model(x), y)",
        "   |                          ------------ the forward pass of this batch",
        "48 |         optimizer.step()  # expect: LC104",
        "   |         ^^^^^^^^^^^^^^^^",
        "49 |         loss.backward()",
        "   |         --------------- its backward() runs after the step",
        "   |",
    ]


def test_eval_mode_note_names_only_the_layers_the_model_has():
    """Found on pytorch/examples mnist (Dropout, no BatchNorm): the note said BatchNorm too."""
    code, out, _ = invoke("--output-format", "json", "--no-static", "--", "python",
                          str(DATA / "eval_left_on_dropout_only.py"))
    assert code == 1
    (f,) = json.loads(out)
    assert (f["code"], f["location"]["row"], f["trace"]["step"]) == ("LC301", 15, 5)
    assert f["note"] == ("Runtime: step 5 trained on a forward pass of Sequential in eval mode (Dropout x1 inactive: "
                         "Dropout off). Call model.train() before the next training step.")


def test_notes_for_what_no_rule_covers():
    code, out, _ = invoke("--", "python", str(DATA / "sampler_without_set_epoch.py"))
    assert code == 0
    assert "note: DistributedSampler (iterated at sampler_without_set_epoch.py:15) was iterated 3 times without " \
           "set_epoch() between passes: every epoch uses the same shuffled order" in out.splitlines()


def test_noqa_suppresses_runtime_findings():
    code, out, _ = invoke("--output-format", "json", "--", "python", str(DATA / "noqa_runtime.py"))
    assert code == 0 and json.loads(out) == []


def test_usage_errors():
    runner = CliRunner()
    res = runner.invoke(main, ["trace"])
    assert res.exit_code == 2 and "nothing to run" in res.output
    res = runner.invoke(main, ["trace", "--", "python", "-c", "print(1)"])
    assert res.exit_code == 2 and "unsupported interpreter option '-c'" in res.output
    res = runner.invoke(main, ["trace", "--", "python", "no_such_script.py"])
    assert res.exit_code == 2 and "no_such_script.py: no such file" in res.output
    res = runner.invoke(main, ["trace", "--", "python", "-m", "no_such_module_anywhere"])
    assert res.exit_code == 2 and "no module named 'no_such_module_anywhere'" in res.output


def test_help_says_it_runs_code_and_static_commands_do_not():
    res = CliRunner().invoke(main, ["trace", "--help"])
    assert "trace RUNS the program, in this Python process" in " ".join(res.output.split())
    res = CliRunner().invoke(main, ["--help"])
    assert "trace RUN a training program (your code, in this process) and report the loop bugs seen at runtime " \
           "(needs torch)." in " ".join(res.output.split())


def test_cli_without_torch(monkeypatch):
    monkeypatch.setitem(sys.modules, "torch", None)
    res = CliRunner().invoke(main, ["trace", "--", "python", "fixtures/LC101_bad.py"])
    assert res.exit_code == 2 and "needs PyTorch" in res.output


def test_importing_the_command_does_not_import_torch():
    code = "import sys, loopcheck.cli.commands, loopcheck.trace.cli; assert 'torch' not in sys.modules"
    subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT)


def test_probes_are_restored_after_a_run():
    import torch

    def patched():
        return (torch.autograd.backward, torch.nn.utils.clip_grad_norm_, torch.optim.Optimizer.zero_grad,
                torch.nn.Module.eval, torch.nn.Module.__init__, torch.nn.Module.__call__,
                torch.nn.Linear.__dict__.get("__call__"))

    before = patched()
    from loopcheck.trace.run import run_target

    result = run_target(Target("path", str(DATA / "argv_and_output.py"), []), steps=2)
    assert result.stopped and result.steps == 2
    assert patched() == before and before[-1] is None  # the model class got its own __call__ back


def test_a_failure_inside_the_watcher_never_reaches_the_program(monkeypatch):
    from loopcheck.trace.gradients import GradientChecks
    from loopcheck.trace.run import run_target

    def broken(self, *args):
        raise KeyError("boom")

    monkeypatch.setattr(GradientChecks, "_gradients_at_step", broken)
    result = run_target(Target("path", str(DATA / "argv_and_output.py"), ["--steps", "3"]))
    assert result.error is None and result.steps == 3
    assert result.notes == ["loopcheck trace: internal error in _on_step: KeyError: 'boom' (the run went on; "
                            "findings may be incomplete)"]


# ------------------------------------------------------------------------------ units


def test_parse_command():
    assert parse_command(["python", "train.py", "--lr", "1"]) == Target("path", "train.py", ["--lr", "1"])
    assert parse_command(["python3.11", "-u", "-m", "pkg.train", "x"]) == Target("module", "pkg.train", ["x"])
    assert parse_command(["/usr/bin/python3", "-mpkg"]) == Target("module", "pkg", [])
    assert parse_command(["train.py"]) == Target("path", "train.py", [])
    for bad in ([], ["python"], ["python", "-m"], ["python", "-O", "train.py"]):
        with pytest.raises(TargetError):
            parse_command(bad)


def test_user_code_decides_by_the_longest_root(tmp_path):
    import torch

    user = UserCode([str(tmp_path)])
    script = tmp_path / "train.py"
    script.write_text("x = 1\n")
    assert user.is_user(str(script))
    assert not user.is_user(torch.__file__)
    assert not user.is_user(json.__file__)
    assert not user.is_user("<frozen runpy>")
    assert not user.is_user(str(ROOT / "loopcheck" / "cli" / "commands.py"))
    assert package_of("/v/lib/python3.11/site-packages/lightning/pytorch/loops/fit_loop.py") == "lightning"
    assert package_of("/v/lib/python3.11/site-packages/six.py") == "six"
    assert package_of(str(script)) is None


def test_call_text_and_columns(tmp_path):
    src = tmp_path / "t.py"
    src.write_text("x = 1\nClippingTrainer(model=Net(), args=a).train()\n    é = opt.step()\n")
    assert call_text(Site(str(src), 2, 2, 0, 44), "?") == "ClippingTrainer(...).train()"
    assert call_text(Site(str(src), 3, 3, 9, 19), "?") == "opt.step()"  # byte offsets (é is 2 bytes)
    assert Site(str(src), 3, 3, 9, 19).columns(src.read_text().splitlines()) == (9, 3, 19)
    assert Site(str(src), 2, 2, None, None).columns(src.read_text().splitlines()) == (1, 2, 45)


def test_codesearch_finds_the_storing_line():
    code = compile("history = []\nfor i in range(3):\n    loss = f(i)\n    print(history, loss)\n"
                   "    history.append(loss)\nmodel = build()\nopt = make(model)\nmodel = build()\n"
                   "model.fc = Linear()\n", "m.py", "exec")
    assert codesearch.find_keeping(code, ["history"], {"loss"}).line == 5
    assert codesearch.find_store(code, name="model", after=7).line == 8
    assert codesearch.find_store(code, attr="fc").line == 9


def test_idmap_forgets_collected_objects_and_never_hashes():
    class Unhashable:
        __hash__ = None

        def __eq__(self, other):
            raise AssertionError("compared")

    m = IdMap()
    a = Unhashable()
    m[a] = 1
    assert m.get(a) == 1 and m.items() == [(a, 1)]
    del a
    assert m.items() == []


def test_idmap_holds_an_object_not_its_id():
    """An object that reuses the id of a collected one is not in the map (the tracer's record of
    parameters already reported: a later model's parameter often gets a dead one's address)."""
    class Param:
        pass

    m = IdMap()
    a = Param()
    m[a] = True
    assert a in m and Param() not in m
    dead = id(a)
    del a
    later = [Param() for _ in range(1000)]  # CPython hands a freed address out again, typically at once
    assert all(p not in m for p in later) and m.items() == []
    if dead not in {id(p) for p in later}:
        pytest.skip("no address was handed out again: the check above did not meet a reused id")


def test_own_parameters_replaced_after_the_optimizer_are_named():
    """A model built after the optimizer that shares the old model's bias: its weight, a parameter
    of the model itself (no submodule), is named in the message."""
    code, out, _ = invoke("--output-format", "json", "--no-static", "--", "python",
                          str(DATA / "model_rebuilt_sharing_old_bias.py"))
    assert code == 1
    (f,) = json.loads(out)
    assert (f["code"], f["location"]["row"], f["trace"]["step"]) == ("LC501", 11, 1)
    assert f["message"] == ("[runtime, step 1] weight of the model is replaced after the optimizer (line 10) was "
                            "built: it never trains")


def test_runtime_findings_at_a_confirmed_line_add_no_finding():
    """Two runtime findings of LC501 at the line of the static LC501 (two columns of the
    statement): one finding, confirmed, whose count is both runtime findings'."""
    from types import SimpleNamespace

    from loopcheck.trace.report import build_report
    from loopcheck.trace.state import Observation
    from loopcheck.workspace.config import Options, Resolver

    path = str(FIXTURES / "LC501_bad_trainer_built_once_model_per_fold.py")
    observations = [Observation("LC501", Site(path, 47, 47, 4, 27), "the model trained here was built after the "
                                "optimizer (line 22), which holds none of it", "Runtime: at step 1.", step=1, count=2),
                    Observation("LC501", Site(path, 47, 47, 12, 27), "weight of the model is replaced after the "
                                "optimizer (line 22) was built: it never trains", "Runtime: at step 41.", step=41)]
    result = SimpleNamespace(observations=observations, script=path)
    report = build_report(result, resolver=Resolver(Options(preview=True)))
    (f,) = report.findings
    assert (f.code, f.row, report.status(f)) == ("LC501", 47, "confirmed")
    assert report.trace[id(f)] == {"status": "confirmed", "step": 1, "value": None, "count": 3}
    assert f.message.startswith("[confirmed at step 1] nn.Linear(8, 3) binds the model name to a new model")
