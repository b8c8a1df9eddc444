"""The command line: ``loopcheck [PATH ...]``, ``loopcheck rules``, ``loopcheck explain CODE``.

Exit codes follow ruff and flake8: 0 nothing found, 1 findings, 2 usage or internal error.
"""

from __future__ import annotations

import json
import sys
from importlib import resources
from pathlib import Path

import click

from loopcheck import __version__
from loopcheck.analysis import check_source
from loopcheck.discovery import iter_python_files
from loopcheck.reporters import WRITERS
from loopcheck.rules import INFOS


def parse_codes(values: tuple[str, ...]) -> list[str]:
    """Split ``--select LC1,LC301`` style values into code prefixes."""
    return [c.strip().upper() for v in values for c in v.split(",") if c.strip()]


def resolve_selection(select: list[str], ignore: list[str]) -> set[str]:
    """The rule codes enabled by ``select`` and ``ignore`` prefixes (``ALL`` selects all).

    Raises:
        click.BadParameter: a prefix matches no rule.
    """
    codes = set(INFOS)

    def match(prefix: str, option: str) -> set[str]:
        if prefix == "ALL":
            return set(codes)
        found = {c for c in codes if c.startswith(prefix)}
        if not found:
            raise click.BadParameter(f"unknown rule code or prefix {prefix!r}", param_hint=option)
        return found

    chosen = set().union(*(match(p, "--select") for p in select)) if select else set(codes)
    for p in ignore:
        chosen -= match(p, "--ignore")
    return chosen


class DefaultCheckGroup(click.Group):
    """A group whose first argument, when it is not a subcommand, is a path to check."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if not args or args[0] not in self.commands and args[0] not in ("--help", "-h", "--version"):
            args = ["check", *args]
        return super().parse_args(ctx, args)


@click.group(cls=DefaultCheckGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="loopcheck")
def main() -> None:
    """Find misplaced lines in PyTorch training loops.

    \b
    loopcheck train.py            check files or directories (default: .)
    loopcheck rules               list the rules
    loopcheck explain LC101       show a rule's documentation
    """


@main.command()
@click.argument("paths", nargs=-1, type=click.Path())
@click.option("--select", multiple=True, help="Rule codes or prefixes to enable (comma-separated).")
@click.option("--ignore", multiple=True, help="Rule codes or prefixes to disable (comma-separated).")
@click.option("--output-format", type=click.Choice(sorted(WRITERS)), default="text", show_default=True)
@click.option("--no-respect-gitignore", is_flag=True, help="Also check files that .gitignore excludes.")
def check(paths, select, ignore, output_format, no_respect_gitignore) -> None:
    """Check PATHS (files or directories; default: the current directory)."""
    codes = resolve_selection(parse_codes(select), parse_codes(ignore))
    try:
        files = list(iter_python_files(list(paths) or ["."], not no_respect_gitignore))
    except FileNotFoundError as err:
        raise click.BadParameter(f"no such file or directory: {err.args[0]}", param_hint="PATHS")
    findings = []
    failed = False
    for path in files:
        try:
            source = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as err:
            click.echo(f"loopcheck: cannot read {path}: {err}", err=True)
            failed = True
            continue
        try:
            findings.extend(check_source(source, str(path), codes))
        except Exception as err:  # an analyzer bug must not hide the other files' findings
            click.echo(f"loopcheck: internal error while checking {path}: {type(err).__name__}: {err}", err=True)
            failed = True
    findings.sort(key=lambda f: f.sort_key)
    WRITERS[output_format](findings, sys.stdout)
    if failed:
        sys.exit(2)
    sys.exit(1 if findings else 0)


@main.command("rules")
@click.option("--output-format", type=click.Choice(["text", "json"]), default="text", show_default=True)
def list_rules(output_format: str) -> None:
    """List every rule: code, name, severity and summary."""
    infos = [INFOS[c] for c in sorted(INFOS)]
    if output_format == "json":
        data = [
            {"code": i.code, "name": i.name, "severity": i.severity, "summary": i.summary, "url": i.url}
            for i in infos
        ]
        click.echo(json.dumps(data, indent=2))
        return
    width = max(len(i.name) for i in infos)
    for i in infos:
        click.echo(f"{i.code}  {i.name:<{width}}  {i.severity:<7}  {i.summary}")


def rule_page(code: str) -> str | None:
    """The text of ``rules/CODE.md``: from the installed package data, else the source tree."""
    try:
        page = resources.files("loopcheck").joinpath("pages", f"{code}.md")
        if page.is_file():
            return page.read_text(encoding="utf-8")
    except (FileNotFoundError, ModuleNotFoundError):
        pass
    src = Path(__file__).resolve().parent.parent / "rules" / f"{code}.md"
    return src.read_text(encoding="utf-8") if src.is_file() else None


@main.command()
@click.argument("code")
def explain(code: str) -> None:
    """Print the documentation page of rule CODE."""
    code = code.upper()
    info = INFOS.get(code)
    if info is None:
        raise click.BadParameter(f"unknown rule code {code!r}", param_hint="CODE")
    page = rule_page(code)
    if page is None:
        page = f"# {info.code} {info.name}\n\n{info.summary}\n"
    click.echo(page.rstrip("\n"))


def _register_verify() -> None:
    try:
        from loopcheck.verify.cli import verify
    except ImportError:
        return
    main.add_command(verify)


_register_verify()
