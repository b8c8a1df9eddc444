"""``loopcheck verify``: re-run the runtime evidence behind each rule.

The lead registers it with ``main.add_command(verify)``.  Importing this module does not import
torch; the command checks for torch when it runs (it is the ``verify`` extra).
"""

from __future__ import annotations

import json

import click


TORCH_MISSING = (
    "loopcheck verify needs PyTorch, which is not installed in this environment.\n"
    "Install it with: pip install 'loopcheck[verify]'"
)


def torch_available() -> bool:
    """Whether torch can be imported here, found without importing it (only the isolated
    children import torch: importing it here would also print its NumPy warning)."""
    import sys
    from importlib.util import find_spec

    if "torch" in sys.modules:
        return sys.modules["torch"] is not None
    return find_spec("torch") is not None


@click.command("verify", short_help="Re-run the runtime evidence: each rule's bad and good fixture under probes (needs torch).")
@click.argument("codes", nargs=-1, metavar="[CODE]...")
@click.option("--output-format", type=click.Choice(["text", "json"]), default="text", show_default=True,
              help="Table for people, JSON for tools.")
@click.option("--fixtures", "fixtures_dir", type=click.Path(file_okay=False, exists=True), default=None,
              help="Run the LCxxx_bad.py / LCxxx_good.py scripts of this directory instead of the ones "
                   "shipped with loopcheck (they are executed: use only a directory you trust).")
@click.option("-j", "--jobs", type=click.IntRange(min=1), default=None,
              help="Fixtures run at the same time, one subprocess each (default: CPU count).")
@click.option("--details", is_flag=True, help="Print what was measured in every run under the table.")
def verify(codes, output_format, fixtures_dir, jobs, details):
    """Run each rule's bad and good fixture under runtime probes and measure the bug's symptom.

    Prints, per rule: device, dtype, torch version, the symptom's number in the bad and in the
    good run, and whether the bug was reproduced (shown by the bad run, not by the good one).
    Where a rule has LCxxx_bad_runtime.py (its canonical bad fixture cannot show the bug at
    runtime in this PyTorch), that is the bad run; the canonical one is measured too.
    The scripts are those shipped inside the installed package (never ./fixtures of the
    current directory), each run in an isolated child process (python -I, an empty working
    directory).

    Exit code 0 if every selected rule reproduced, 1 otherwise, 2 on usage errors or when
    PyTorch is missing.
    """
    if not torch_available():
        click.echo(TORCH_MISSING, err=True)
        raise SystemExit(2)
    from .symptoms import SYMPTOMS  # here, not at import: `loopcheck --version` need not load it

    selected = [c.upper() for c in codes] or list(SYMPTOMS)
    unknown = [c for c in selected if c not in SYMPTOMS]
    if unknown:
        raise click.UsageError(f"unknown rule code(s): {', '.join(unknown)}; known: {', '.join(SYMPTOMS)}")

    from .report import FixturesMissing, format_table, verify_rules

    try:
        result = verify_rules(selected, fixtures_dir=fixtures_dir, jobs=jobs)
    except FixturesMissing as err:
        click.echo(f"loopcheck verify: {err}", err=True)
        raise SystemExit(2) from None
    if output_format == "json":
        click.echo(json.dumps(result, indent=2))
    else:
        click.echo(format_table(result, details=details))
    raise SystemExit(0 if result["ok"] else 1)
