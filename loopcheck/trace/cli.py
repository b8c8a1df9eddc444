"""``loopcheck trace``: run a training program under the runtime probes and report what happened.

Importing this module does not import torch; the command imports it when it runs (the
``verify`` extra).
"""

from __future__ import annotations

import os
import sys

import click

FORMATS = ["full", "concise", "text", "grouped", "json", "json-lines", "sarif", "github", "gitlab", "junit",
           "pylint", "azure", "rdjson"]

TORCH_MISSING = (
    "loopcheck trace needs PyTorch, which is not installed in this environment.\n"
    "Install it with: pip install 'loopcheck[verify]'"
)


@click.command("trace", context_settings={"ignore_unknown_options": True, "allow_interspersed_args": False},
               short_help="RUN a training program (your code, in this process) and report the loop bugs seen "
                          "at runtime (needs torch).")
@click.option("--steps", type=click.IntRange(min=1), default=None, metavar="N",
              help="Stop the program once N optimizer steps have run (before any optimizer's step N+1). "
                   "Default: run to the end.")
@click.option("--output-format", type=click.Choice(FORMATS), default=None,
              help="How to print findings [default: full on a terminal, else concise].")
@click.option("--no-static", is_flag=True,
              help="Report runtime findings only; do not check the program's files statically.")
@click.option("--preview/--no-preview", default=None,
              help="Also report the rules in preview (as the check's --preview) [default: the configuration's].")
@click.option("--no-color", is_flag=True, help="Do not colour the output.")
@click.option("--exit-zero", is_flag=True, help="Exit with status 0 even when there are runtime findings.")
@click.option("-q", "--quiet", is_flag=True, help="Print the findings only, without the closing summary.")
@click.argument("command", nargs=-1, type=click.UNPROCESSED, metavar="-- python SCRIPT.py [ARGS]...")
def trace(steps, output_format, no_static, preview, no_color, exit_zero, quiet, command):
    """Run a training program and report the loop bugs that happen while it runs.

    \b
    loopcheck trace -- python train.py --epochs 1
    loopcheck trace --steps 20 -- python -m package.train ARGS

    WARNING: unlike every other loopcheck command, trace RUNS the program, in this Python
    process, with your permissions: only trace code you would run yourself.

    The program runs unchanged (as python would run it: sys.argv as given, __name__ ==
    "__main__") under runtime probes: optimizer steps, zero_grad, backward passes, gradient
    clipping, module train/eval mode and grad mode at each forward, LR scheduler steps,
    GradScaler calls, loss tensors kept alive, parameters outside the optimizer. Each bug seen
    is reported with the rule code of the static check, at the line of your code where it
    happened (inside Lightning, transformers or accelerate loops too). The files the run went
    through are also checked statically: each static finding is marked confirmed (seen at
    runtime) or not observed in this run.

    The program's standard output goes to standard error, so that the report is the only thing
    on standard output. Exit status: 0 no runtime finding; 1 runtime findings; 2 usage errors,
    or the program failed and nothing explains it.
    """
    from .target import TargetError, parse_command

    words = list(command)
    if words and words[0] == "--":
        words = words[1:]
    try:
        target = parse_command(words)
    except TargetError as err:
        raise click.UsageError(str(err)) from None
    try:
        import torch  # noqa: F401 - lazily: the linter itself never needs torch
    except ImportError:
        click.echo(TORCH_MISSING, err=True)
        raise SystemExit(2)
    from .report import build_report, summary, write_report
    from .run import run_target

    try:
        result = run_target(target, steps=steps)
    except TargetError as err:
        raise click.UsageError(str(err)) from None
    from loopcheck.workspace.config import Options, Resolver

    report = build_report(result, static=not no_static, resolver=Resolver(Options(preview=preview)))
    fmt = output_format or ("full" if sys.stdout.isatty() else "concise")
    color = not no_color and not os.environ.get("NO_COLOR") and sys.stdout.isatty() and fmt in ("full", "concise",
                                                                                               "text", "grouped")
    write_report(report, fmt, sys.stdout, color)
    if result.error:
        sys.stderr.write(result.error["traceback"])
    if not quiet:
        text_format = fmt in ("full", "concise", "text", "grouped")
        for line in summary(report, result):
            click.echo(line, err=not text_format)
    failed = result.error is not None or result.exit_code is not None
    if report.runtime:
        raise SystemExit(0 if exit_zero else 1)
    raise SystemExit(2 if failed else 0)
