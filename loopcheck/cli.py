"""The command line: ``loopcheck [PATH ...]``, ``loopcheck rules``, ``loopcheck explain CODE``.

Exit codes follow ruff and flake8: 0 nothing found, 1 findings, 2 usage, configuration or
internal error.
"""

from __future__ import annotations

import json
import os
import sys
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Collection

import click

from loopcheck import __version__
from loopcheck.analysis import check_parsed
from loopcheck.engine.project import project_for
from loopcheck.config import ConfigError, Options, Resolver, match_codes, select_codes
from loopcheck.discovery import is_force_excluded, iter_source_files
from loopcheck.findings import Finding
from loopcheck.noqa import filter_findings, is_skipped
from loopcheck.fixes import apply_fixes, attach_fixes, diff
from loopcheck.notebook import NotebookError, read_notebook, write_program
from loopcheck.reporters import WRITERS, Context, SourceFile, write_statistics
from loopcheck.rules import INFOS

OUTPUT_FORMATS = ["full", "concise", "text", "json", "json-lines", "sarif", "github"]


class ConfigurationError(click.ClickException):
    """A configuration problem: printed as ``Error: ...``, exit status 2."""

    exit_code = 2


def parse_codes(values: tuple[str, ...]) -> list[str]:
    """Split ``--select LC1,LC301`` style values into code prefixes."""
    return [c.strip().upper() for v in values for c in v.split(",") if c.strip()]


def parse_list(values: tuple[str, ...]) -> list[str]:
    """Split comma-separated option values (``--exclude a,b --exclude c``)."""
    return [c.strip() for v in values for c in v.split(",") if c.strip()]


def _check_codes(prefixes: list[str], option: str) -> tuple[str, ...]:
    for p in prefixes:
        try:
            match_codes(p)
        except ValueError as err:
            raise click.BadParameter(str(err), param_hint=option) from None
    return tuple(prefixes)


def resolve_selection(select: list[str], ignore: list[str]) -> set[str]:
    """The rule codes enabled by ``select`` and ``ignore`` prefixes (``ALL`` selects all).

    Raises:
        click.BadParameter: a prefix matches no rule.
    """
    layer = Options(
        select=_check_codes(select, "--select") if select else None, ignore=_check_codes(ignore, "--ignore")
    )
    return select_codes([layer])


def lint_text(
    text: str, filename: str, codes: Collection[str] | None = None, src: tuple = (),
) -> tuple[list[Finding], SourceFile]:
    """Check the text of one file as the command line does.

    A name ending in ``.ipynb`` is read as a notebook (its code cells joined); a file with
    ``# loopcheck: skip-file`` gives nothing; ``# noqa`` comments suppress findings; each
    finding gets its fix (``finding.fix``) where one exists.

    Args:
        text: the file's text (a notebook's JSON).
        filename: the name findings carry.
        codes: the rule codes to run (``None``: all).
        src: extra source roots of the project (the ``src`` setting).

    Returns:
        The findings (rows of the checked program; notebooks' rows are mapped to cells when
        reported) and the :class:`SourceFile` the reporters need.

    Raises:
        NotebookError: a ``.ipynb`` file that is not a notebook.
    """
    notebook = read_notebook(text) if filename.endswith(".ipynb") else None
    program = notebook.source if notebook is not None else text
    source = SourceFile(filename, program, notebook)
    if is_skipped(program):
        return [], source
    found, module, positions = check_parsed(program, filename, codes, project_for(filename, src))
    found = filter_findings(found, program)
    if found:
        attach_fixes(program, found, module, positions)
    return found, source


@dataclass
class Run:
    """What a check produced: findings, the checked files, and whether anything failed."""

    findings: list[Finding]
    sources: dict[str, SourceFile]
    failed: bool = False
    texts: dict[str, str] = field(default_factory=dict)  # file text as read (a notebook's JSON)
    codes: dict[str, Collection[str] | None] = field(default_factory=dict)  # rules run per file


def _lint_one(run: Run, text: str, filename: str, codes, src: tuple = ()) -> None:
    try:
        found, source = lint_text(text, filename, codes, src)
    except NotebookError as err:
        click.echo(f"loopcheck: cannot read {filename}: {err}", err=True)
        run.failed = True
        return
    except Exception as err:  # an analyzer bug must not hide the other files' findings
        click.echo(f"loopcheck: internal error while checking {filename}: {type(err).__name__}: {err}", err=True)
        run.failed = True
        return
    run.sources[filename] = source
    run.texts[filename] = text
    run.codes[filename] = codes
    run.findings.extend(found)


def lint_paths(paths: list[str], resolver: Resolver, force_exclude: bool = False) -> Run:
    """Check the files under ``paths``, each with the settings of its directory.

    Raises:
        FileNotFoundError: a path does not exist.
        ConfigError: a configuration file on the way is invalid.
    """
    run = Run([], {})
    for path in iter_source_files(paths, resolver.for_directory, force_exclude):
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as err:
            click.echo(f"loopcheck: cannot read {path}: {err}", err=True)
            run.failed = True
            continue
        settings = resolver.for_file(path)
        _lint_one(run, text, str(path), settings.codes_for(path), settings.src)
    return run


def lint_stdin(stdin_filename: str | None, resolver: Resolver, force_exclude: bool = False) -> Run:
    """Check standard input, named ``stdin_filename`` (``-`` if none)."""
    run = Run([], {})
    name = stdin_filename or "-"
    stream = getattr(sys.stdin, "buffer", None)
    try:
        text = stream.read().decode("utf-8") if stream is not None else sys.stdin.read()
    except UnicodeDecodeError as err:
        click.echo(f"loopcheck: cannot read {name}: {err}", err=True)
        run.failed = True
        return run
    path = Path(stdin_filename) if stdin_filename else Path("-")
    if stdin_filename and force_exclude and is_force_excluded(path, resolver.for_directory):
        return run
    settings = resolver.for_file(path)
    _lint_one(run, text, name, settings.codes_for(path), settings.src if stdin_filename else ())
    return run


def fix_files(run: Run, unsafe: bool, write: bool, stdin: bool = False) -> dict[str, tuple[str, str, int]]:
    """Apply the fixes to every checked file with a fixable finding.

    Each file is fixed to a fixpoint (:func:`loopcheck.fixes.apply_fixes`, which honours
    ``# noqa``), then checked again: ``run.findings`` becomes what remains. With ``write``
    the files are rewritten (notebooks through nbformat; standard input goes to standard
    output).

    Returns:
        ``{filename: (old text, new text, findings fixed)}`` for the files that change.
    """
    changes: dict[str, tuple[str, str, int]] = {}
    remaining: list[Finding] = []
    for filename, source in run.sources.items():
        mine = [f for f in run.findings if f.filename == filename]
        fixable = [f for f in mine if f.fix is not None and (unsafe or f.fix.applicability == "safe")]
        if not fixable:
            remaining.extend(mine)
            if stdin and write:
                sys.stdout.write(run.texts[filename])
            continue
        codes = run.codes.get(filename)
        new_program, done = apply_fixes(source.text, mine, unsafe, filename=filename, select=codes)
        old_text = run.texts[filename]
        new_text = new_program if source.notebook is None else write_program(old_text, source.notebook, new_program)
        if new_text != old_text:
            changes[filename] = (old_text, new_text, len(done))
        if write:
            if stdin:
                sys.stdout.write(new_text)
            elif new_text != old_text:
                Path(filename).write_text(new_text, encoding="utf-8")
        after, src = lint_text(new_text, filename, codes)
        run.sources[filename] = src
        remaining.extend(after)
    run.findings = remaining
    return changes


def use_color(no_color: bool) -> bool:
    """Colour on a terminal only, unless ``--no-color`` or ``NO_COLOR`` is set."""
    return not no_color and not os.environ.get("NO_COLOR") and sys.stdout.isatty()


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
@click.option("--select", multiple=True, help="Rule codes or prefixes to enable, replacing the configured ones (comma-separated).")
@click.option("--extend-select", multiple=True, help="Rule codes or prefixes to enable in addition (comma-separated).")
@click.option("--ignore", multiple=True, help="Rule codes or prefixes to disable (comma-separated).")
@click.option("--exclude", multiple=True, help="Patterns to skip, replacing the configured and default ones (comma-separated).")
@click.option("--extend-exclude", multiple=True, help="Patterns to skip in addition (comma-separated).")
@click.option("--respect-gitignore/--no-respect-gitignore", default=None,
              help="Skip (or also check) what .gitignore excludes [default: respect].")
@click.option("--force-exclude", is_flag=True, help="Apply the exclusions to paths named on the command line too.")
@click.option("--config", "config_path", type=click.Path(exists=True, dir_okay=False, path_type=Path),
              help="Use this configuration file for every file, instead of finding the closest one.")
@click.option("--isolated", is_flag=True, help="Ignore every configuration file.")
@click.option("--output-format", type=click.Choice(OUTPUT_FORMATS), default=None,
              help="How to print findings [default: full on a terminal, else concise].")
@click.option("--no-color", is_flag=True, help="Do not colour the output (colour is used on terminals only).")
@click.option("--statistics", is_flag=True, help="Print the number of findings per rule instead of the findings.")
@click.option("--exit-zero", is_flag=True, help="Exit with status 0 even when there are findings.")
@click.option("-q", "--quiet", is_flag=True, help="Print the findings only, without the summary line.")
@click.option("--stdin-filename", help="The name of the file read from standard input (PATH '-').")
@click.option("--fix", is_flag=True, help="Apply the safe fixes and report what remains.")
@click.option("--unsafe-fixes", is_flag=True, help="Also apply (with --fix) or show the fixes marked unsafe.")
@click.option("--diff", "show_diff", is_flag=True, help="Print the fixes as a diff instead of applying them.")
def check(paths, select, extend_select, ignore, exclude, extend_exclude, respect_gitignore, force_exclude,
          config_path, isolated, output_format, no_color, statistics, exit_zero, quiet, stdin_filename,
          fix, unsafe_fixes, show_diff) -> None:
    """Check PATHS (files or directories; default: the current directory; '-': standard input)."""
    if config_path is not None and isolated:
        raise click.UsageError("--config and --isolated cannot be used together")
    cli = Options(
        select=_check_codes(parse_codes(select), "--select") if select else None,
        extend_select=_check_codes(parse_codes(extend_select), "--extend-select"),
        ignore=_check_codes(parse_codes(ignore), "--ignore"),
        exclude=tuple(parse_list(exclude)) if exclude else None,
        extend_exclude=tuple(parse_list(extend_exclude)),
        respect_gitignore=respect_gitignore,
    )
    read_stdin = paths == ("-",) or (not paths and stdin_filename is not None)
    if "-" in paths and not read_stdin:
        raise click.BadParameter("'-' (standard input) cannot be mixed with other paths", param_hint="PATHS")
    try:
        resolver = Resolver(cli, config_path, isolated)
        if read_stdin:
            run = lint_stdin(stdin_filename, resolver, force_exclude)
        else:
            run = lint_paths(list(paths) or ["."], resolver, force_exclude)
    except ConfigError as err:
        raise ConfigurationError(str(err)) from None
    except FileNotFoundError as err:
        raise click.BadParameter(f"no such file or directory: {err.args[0]}", param_hint="PATHS")
    fixed = 0
    if show_diff:
        changes = fix_files(run, unsafe_fixes, write=False, stdin=read_stdin)
        for filename, (old, new, _n) in changes.items():
            sys.stdout.write(diff(old, new, filename))
        n = sum(n for _, _, n in changes.values())
        if n:
            click.echo(f"Would fix {n} error{'s' if n != 1 else ''}.", err=True)
        sys.exit(2 if run.failed else (1 if n and not exit_zero else 0))
    if fix:
        changes = fix_files(run, unsafe_fixes, write=True, stdin=read_stdin)
        fixed = sum(n for _, _, n in changes.values())
    findings = sorted(run.findings, key=lambda f: f.sort_key)
    fmt = output_format or ("full" if sys.stdout.isatty() else "concise")
    ctx = Context(run.sources, color=use_color(no_color) and fmt in ("full", "concise", "text"), quiet=quiet,
                  fixed=fixed, unsafe_fixes=unsafe_fixes)
    if fix and read_stdin:  # the fixed program went to standard output, as ruff does
        out = sys.stderr
    else:
        out = sys.stdout
    if statistics:
        write_statistics(findings, out, ctx, as_json=fmt in ("json", "json-lines"))
    else:
        WRITERS[fmt](findings, out, ctx)
    if run.failed:
        sys.exit(2)
    sys.exit(1 if findings and not exit_zero else 0)


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


@main.command()
def server() -> None:
    """Run the language server (LSP over stdio) for editors; needs the server extra."""
    try:
        from loopcheck.server import serve
    except ImportError as err:
        raise ConfigurationError(
            f"the language server needs pygls: pip install 'loopcheck[server]' ({err})"
        ) from None
    serve()


def _register_verify() -> None:
    try:
        from loopcheck.verify.cli import verify
    except ImportError:
        return
    main.add_command(verify)


_register_verify()
