"""The command line: ``loopcheck [PATH ...]``, ``loopcheck rules``, ``loopcheck explain CODE``.

Exit codes follow ruff and flake8: 0 nothing found, 1 findings, 2 usage, configuration or
internal error.

Start-up: this module imports only click at load time; the analysis (LibCST), the
configuration and the reporters are imported by the commands that use them, so
``loopcheck --version`` and ``--help`` do not pay for them.
"""

from __future__ import annotations

import os
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Collection, TextIO

import click

from loopcheck import __version__
from loopcheck.check import describe_error

if TYPE_CHECKING:
    from loopcheck.check import SourceFile
    from loopcheck.findings import Finding
    from loopcheck.workspace.cache import Cache
    from loopcheck.workspace.config import Resolver
    from loopcheck.workspace.files import SourceText

OUTPUT_FORMATS = ["full", "concise", "text", "grouped", "json", "json-lines", "sarif", "github", "gitlab", "junit",
                  "pylint", "azure", "rdjson"]
#: The formats that end with the summary line (and ``--show-fixes``'s list).
TEXT_FORMATS = ("full", "concise", "text", "grouped")


class ConfigurationError(click.ClickException):
    """A configuration problem: printed as ``Error: ...``, exit status 2."""

    exit_code = 2


def parse_codes(values: tuple[str, ...]) -> list[str]:
    """Split ``--select LC1,LC301,loss-tensor-kept`` style values into code prefixes (a rule's
    name becomes its code)."""
    from loopcheck.workspace.config import canonical_selector

    return [canonical_selector(c) for v in values for c in v.split(",") if c.strip()]


def parse_list(values: tuple[str, ...]) -> list[str]:
    """Split comma-separated option values (``--exclude a,b --exclude c``)."""
    return [c.strip() for v in values for c in v.split(",") if c.strip()]


def _check_codes(prefixes: list[str], option: str) -> tuple[str, ...]:
    from loopcheck.workspace.config import match_codes

    for p in prefixes:
        try:
            match_codes(p)
        except ValueError as err:
            raise click.BadParameter(str(err), param_hint=option) from None
    return tuple(prefixes)


def _check_patterns(values: tuple[str, ...], option: str) -> None:
    from loopcheck.workspace.config import pattern_error

    for pattern in parse_list(values):
        why = pattern_error(pattern)
        if why is not None:
            raise click.BadParameter(f"invalid pattern {pattern!r} ({why})", param_hint=option)


def resolve_selection(select: list[str], ignore: list[str], preview: bool = False) -> set[str]:
    """The rule codes enabled by ``select`` and ``ignore`` prefixes (``ALL`` selects all; a
    rule in preview only with ``preview`` or by its exact code or name).

    Raises:
        click.BadParameter: a prefix matches no rule.
    """
    from loopcheck.workspace.config import Options, select_codes

    layer = Options(
        select=_check_codes(select, "--select") if select else None, ignore=_check_codes(ignore, "--ignore")
    )
    return select_codes([layer], preview=preview)


@dataclass
class Run:
    """What a check produced: findings, the checked files, and whether anything failed.

    ``failed`` is set by every file that could not be read, checked or fixed (each reported
    on standard error as it happens): the exit status is then 2.
    """

    findings: list[Finding]
    sources: dict[str, SourceFile]  # the files read (one the cache knows unchanged, with no findings, is not)
    failed: bool = False
    texts: dict[str, str] = field(default_factory=dict)  # the text checked (a notebook's JSON)
    codes: dict[str, Collection[str] | None] = field(default_factory=dict)  # rules run per file
    originals: dict[str, SourceText] = field(default_factory=dict)  # as read: codec, BOM, bytes
    src: dict[str, tuple] = field(default_factory=dict)  # the project's source roots per file
    fixable: dict[str, frozenset[str]] = field(default_factory=dict)  # codes whose fixes apply, per file
    ignore_noqa: bool = False  # --ignore-noqa
    nothing_checked: bool = False  # no file was found, or every one found was skipped


def report_problem(run: Run | None, message: str, is_error: bool = True) -> None:
    """Print ``loopcheck: message`` on standard error (``loopcheck: warning: message`` when it
    is not an error); an error makes the run fail (exit status 2)."""
    click.echo(f"loopcheck: {'' if is_error else 'warning: '}{message}", err=True)
    if is_error and run is not None:
        run.failed = True


def _lint_one(run: Run, source: SourceText | str, filename: str, codes, src: tuple = ()) -> None:
    """Check one file's text in a big-stack worker (:func:`loopcheck.parsing.run_deep`);
    a failure is reported and fails the run, the other files are still checked."""
    from loopcheck.cli.runner import check_job

    job = _job(source, filename, codes, src, ignore_noqa=run.ignore_noqa)
    _record(run, job, source, check_job(job))


def _job(source: SourceText | str, filename: str, codes, src: tuple = (), cache: Cache | None = None,
         entry: str | None = None, stamp: list | None = None, ignore_noqa: bool = False):
    """The :class:`loopcheck.cli.runner.Job` of one file read as ``source``; ``entry``: its cache
    entry's name when already known; ``stamp``: the file's size and time before it was read
    (:func:`loopcheck.workspace.cache.source_stamp`), dropped when the bytes read have another size."""
    from loopcheck.workspace.files import SourceText
    from loopcheck.cli.runner import Job

    if isinstance(source, str):
        source = SourceText(source)
    text = source.text if filename.endswith(".ipynb") else source.program
    if cache is not None and entry is None:
        entry = cache.entry_name(filename, codes, src)
    if stamp is not None and (source.data is None or len(source.data) != stamp[0]):
        stamp = None  # changed while it was read
    return Job(filename, text, codes, src, entry, stamp, ignore_noqa)


def _record(run: Run, job, source: SourceText | str, outcome) -> None:
    """Add a file's :class:`loopcheck.cli.runner.Outcome` to ``run``: its findings, or its
    error on standard error; a notebook's warnings on standard error."""
    from loopcheck.workspace.files import SourceText

    if outcome.error is not None:
        report_problem(run, outcome.error)
        return
    checked = outcome.source
    if checked.notebook is not None:
        for warning in checked.notebook.warnings:
            click.echo(f"warning: {job.filename}: {warning}", err=True)
    run.sources[job.filename] = checked
    run.texts[job.filename] = job.text
    run.codes[job.filename] = job.codes
    run.src[job.filename] = job.src
    run.originals[job.filename] = source if isinstance(source, SourceText) else SourceText(source)
    run.findings.extend(outcome.findings)


def read_file(run: Run | None, path: Path, max_size: int, report=None) -> SourceText | None:
    """Read one file (:func:`loopcheck.workspace.files.read_source`), or report why not: unreadable,
    undecodable or not a regular file fails the run; larger than ``max_size`` is a warning.
    ``report(message, is_error)`` replaces :func:`report_problem` when given."""
    from loopcheck.workspace.files import SourceError, Skipped, read_source

    def problem(message: str, is_error: bool = True) -> None:
        if report is not None:
            report(message, is_error)
        else:
            report_problem(run, message, is_error)

    try:
        return read_source(path, max_size)
    except Skipped as err:  # too large, or a line too long to parse: a warning
        problem(f"skipped {path}: {err}", is_error=False)
    except SourceError as err:
        problem(f"cannot read {path}: {err}")
    except OSError as err:
        problem(f"cannot read {path}: {err.strerror or describe_error(err)}")
    return None


def lint_paths(paths: list[str], resolver: Resolver, force_exclude: bool = False, jobs: int = 1,
               cache: Cache | None = None, ignore_noqa: bool = False) -> Run:
    """Check the files under ``paths``, each with the settings of its directory.

    The files are found and read first; then each is answered from ``cache`` when its entry
    holds, and the others are checked in ``jobs`` processes (:func:`loopcheck.cli.runner.check_all`).
    A file whose entry holds no findings and whose size and time did not change since it was
    stored is not even read (:meth:`loopcheck.workspace.cache.Cache.unchanged`), nor put in
    ``run.sources``: nothing is reported or fixed in it.
    What goes to standard error (files that cannot be read, internal errors, notebook
    warnings) comes in the order of the files, and the result is the same whatever ``jobs``
    and whatever the cache holds.

    Raises:
        FileNotFoundError: a path does not exist.
        ConfigError: a configuration file on the way is invalid.
    """
    from loopcheck.workspace.listing import source_files
    from loopcheck.cli.runner import check_all, start_pool, workers_for

    run = Run([], {}, ignore_noqa=ignore_noqa)
    # in the order a serial run meets them: ("problem", message, is_error), ("path", path,
    # settings, codes, entry, stamp, freshness) for a file to read, then ("file", job, source)
    # once read
    found: list[tuple] = []

    def on_problem(path: Path, message: str, is_error: bool) -> None:
        found.append(("problem", message, is_error))

    unchanged = 0
    try:
        for path in source_files(paths, resolver, force_exclude, on_problem, cache):
            settings = resolver.for_file(path)
            codes = settings.codes_for(path)
            entry = stamp = fresh = None
            if cache is not None:
                from loopcheck.workspace.cache import source_stamp

                entry, stamp = cache.entry_name(str(path), codes, settings.src), source_stamp(path)
                too_large = stamp is not None and 0 < settings.max_file_size < stamp[0]
                fresh = None if too_large else cache.freshness(entry, stamp)
                if fresh == "unchanged":
                    unchanged += 1
                    continue  # no findings, and nothing it depends on changed: not even read
            found.append(("path", path, settings, codes, entry, stamp, fresh))
    except BaseException:  # an invalid configuration on the way: what was found before is still told
        for step in found:
            if step[0] == "problem":
                report_problem(run, step[1], step[2])
        raise
    # the workers are forked before the texts are read (runner.start_pool), when more than one
    # file is to be checked: not for files whose entries hold their findings (a warm run
    # would fork a pool it does not use); a miss among those is checked in a pool check_all
    # starts
    # at most one worker per file to check and per core (-j 32 on 2 cores)
    jobs = workers_for(jobs, sum(step[0] == "path" for step in found))
    pool = start_pool(jobs) if jobs > 1 and sum(step[0] == "path" and step[6] is None for step in found) > 1 else None
    steps: list[tuple] = []

    def on_read_problem(message: str, is_error: bool) -> None:
        steps.append(("problem", message, is_error))

    try:
        for step in found:
            if step[0] == "path":
                _, path, settings, codes, entry, stamp, _fresh = step
                source = read_file(run, path, settings.max_file_size, on_read_problem)
                if source is not None:
                    steps.append(("file", _job(source, str(path), codes, settings.src, cache, entry, stamp,
                                               ignore_noqa), source))
            else:
                steps.append(step)
    except BaseException:
        if pool is not None:
            pool.shutdown(wait=False, cancel_futures=True)
        raise
    outcomes = check_all([step[1] for step in steps if step[0] == "file"], cache, jobs, pool)
    for step in steps:
        if step[0] == "problem":
            report_problem(run, step[1], step[2])
        else:
            _record(run, step[1], step[2], next(outcomes))
    if not unchanged and not any(step[0] == "file" for step in steps) and not run.failed:
        # as ruff says it, rather than "All checks passed!" over nothing
        run.nothing_checked = True
        report_problem(run, "No Python files found under the given path(s)", is_error=False)
    return run


def lint_stdin(stdin_filename: str | None, resolver: Resolver, force_exclude: bool = False,
               echo: bool = False, ignore_noqa: bool = False) -> Run:
    """Check standard input, named ``stdin_filename`` (``-`` if none). With ``echo`` (``--fix
    -``), input that is not checked (excluded, too large, undecodable) is written back to
    standard output unchanged."""
    from loopcheck.workspace.discovery import is_force_excluded
    from loopcheck.workspace.files import FileTooLarge, Skipped, SourceError, check_line_lengths, decode_source

    run = Run([], {}, ignore_noqa=ignore_noqa)
    name = stdin_filename or "-"
    path = Path(stdin_filename) if stdin_filename else Path("-")
    settings = resolver.for_file(path)
    stream = getattr(sys.stdin, "buffer", None)
    data = stream.read() if stream is not None else sys.stdin.read().encode("utf-8", "surrogateescape")

    def passthrough() -> Run:
        if echo:
            _write_stdout_bytes(data)
        return run

    if stdin_filename and force_exclude and is_force_excluded(path, resolver.for_directory):
        return passthrough()
    limit = settings.max_file_size
    if limit and len(data) > limit:
        report_problem(run, f"skipped {name}: {FileTooLarge(len(data), limit)}", is_error=False)
        return passthrough()
    try:
        source = decode_source(data, notebook=name.endswith(".ipynb"))
        if limit and not name.endswith(".ipynb"):
            check_line_lengths(source.program)
    except Skipped as err:
        report_problem(run, f"skipped {name}: {err}", is_error=False)
        return passthrough()
    except SourceError as err:
        report_problem(run, f"cannot read {name}: {err}")
        return passthrough()
    _lint_one(run, source, name, settings.codes_for(path), settings.src if stdin_filename else ())
    if echo and name not in run.sources:
        _write_stdout_bytes(data)
    return run


def _write_stdout_bytes(data: bytes) -> None:
    sys.stdout.flush()
    buffer = getattr(sys.stdout, "buffer", None)
    if buffer is not None:
        buffer.write(data)
        buffer.flush()
    else:
        sys.stdout.write(data.decode("utf-8", "replace"))


def _fix_one(run: Run, filename: str, unsafe: bool) -> tuple[str, str, list[Finding]]:
    """Fix one checked file to a fixpoint, then remove its unused ``# noqa`` codes (LC002):
    ``(text checked, fixed text, fixed findings)``."""
    from loopcheck.fixes import apply_fixes
    from loopcheck.workspace.noqa import remove_unused_noqa
    from loopcheck.workspace.notebook import write_program

    source = run.sources[filename]
    mine = [f for f in run.findings if f.filename == filename]
    codes = run.codes.get(filename)
    fixable = run.fixable.get(filename)
    if fixable is not None:  # only the rules whose fixes apply (fixable/unfixable)
        codes = fixable if codes is None else frozenset(codes) & fixable
    new_program, done = apply_fixes(source.text, mine, unsafe, filename=filename, select=codes)
    new_program, _unused = remove_unused_noqa(new_program, filename, codes)
    old_text = run.texts[filename]
    if source.notebook is None:
        return old_text, new_program, done
    return old_text, write_program(old_text, source.notebook, new_program), done


def fix_files(run: Run, unsafe: bool, write: bool, stdin: bool = False) -> dict[str, tuple[str, str, int]]:
    """Apply the fixes to every checked file with a fixable finding.

    Each file is fixed to a fixpoint (:func:`loopcheck.fixes.apply_fixes`, which honours
    ``# noqa``), then its unused ``# noqa`` codes are removed (LC002), then it is checked
    again: ``run.findings`` becomes what remains. With ``write`` the files are rewritten
    (notebooks keep everything but the changed code cells; standard input goes to standard
    output) through :func:`loopcheck.workspace.files.write_atomic`, in their own codec, BOM and line
    endings; a file that cannot be written (read-only, a full disk, changed since it was
    read) is reported, keeps its content and its findings, and fails the run, while the
    other files are still fixed.

    Returns:
        ``{filename: (old text, new text, findings fixed)}`` for the files that change (or
        would change, without ``write``); the count is the number of findings the file had
        before minus the number it has after.
    """
    from loopcheck.check import lint_text
    from loopcheck.parsing import run_deep
    from loopcheck.workspace.files import FileChanged, SourceText, render_fixed, write_atomic

    changes: dict[str, tuple[str, str, int]] = {}
    remaining: list[Finding] = []
    for filename in list(run.sources):
        original = run.originals.get(filename) or SourceText(run.texts[filename])
        mine = [f for f in run.findings if f.filename == filename]
        fixable = [f for f in mine if f.fix is not None and (unsafe or f.fix.applicability == "safe")]
        if not fixable:
            remaining.extend(mine)
            if stdin and write:
                _write_stdout_bytes(original.data if original.data is not None else original.encode(original.text))
            continue
        try:
            old_text, new_text, done = run_deep(_fix_one, run, filename, unsafe)
        except Exception as err:  # noqa: BLE001 - a fixer bug: the file keeps its text and findings
            report_problem(run, f"internal error while fixing {filename}: {describe_error(err)}")
            remaining.extend(mine)
            continue
        if new_text == old_text:
            remaining.extend(mine)
            if stdin and write:
                _write_stdout_bytes(original.data if original.data is not None else original.encode(original.text))
            continue
        file_text = new_text if filename.endswith(".ipynb") else render_fixed(original, old_text, new_text)
        if write:
            try:
                data = original.encode(file_text)
                if stdin:
                    _write_stdout_bytes(data)
                else:
                    write_atomic(Path(filename), data, original.data)
            except UnicodeEncodeError as err:
                report_problem(run, f"cannot fix {filename}: the fixed text cannot be written in {original.encoding} ({err.reason})")
                remaining.extend(mine)
                continue
            except FileChanged:
                report_problem(run, f"cannot fix {filename}: it changed since it was read; it was left as it is")
                remaining.extend(mine)
                continue
            except OSError as err:
                report_problem(run, f"cannot fix {filename}: {err.strerror or describe_error(err)}; it was left as it is")
                remaining.extend(mine)
                continue
        try:
            after, checked = run_deep(lint_text, new_text, filename, run.codes.get(filename), run.src.get(filename, ()),
                                      None, run.ignore_noqa)
            _drop_unfixable(run, after)
        except Exception as err:  # noqa: BLE001
            report_problem(run, f"internal error while checking {filename} after fixing: {describe_error(err)}")
            after, checked = [], run.sources[filename]
        changes[filename] = (old_text, new_text, max(len(mine) - len(after), 0))
        run.sources[filename] = checked
        run.texts[filename] = new_text
        if write:
            run.originals[filename] = SourceText(file_text, original.encoding, original.bom, original.encode(file_text))
        remaining.extend(after)
    run.findings = remaining
    return changes


def _drop_unfixable(run: Run, findings: list[Finding]) -> None:
    """Remove the fixes of findings whose rule is not fixable for their file (``fixable``,
    ``unfixable``), as ruff does: they are neither shown (``[*]``, JSON's ``fix``) nor applied."""
    for f in findings:
        fixable = run.fixable.get(f.filename)
        if f.fix is not None and fixable is not None and f.code not in fixable:
            f.fix = None


def _silence_broken_pipe() -> None:
    """After a closed pipe, point standard output at /dev/null so that the interpreter's final
    flush does not fail again (Python's documented recipe)."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):
        pass


def safe_console() -> None:
    """Let standard output and error write any text: a character the console's encoding
    cannot show (or a file name that is not valid UTF-8) is written as a backslash escape
    instead of failing the run."""
    for stream in (sys.stdout, sys.stderr):
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None:
            try:
                reconfigure(errors="backslashreplace")
            except (ValueError, OSError):
                pass


def use_color(no_color: bool, stream: TextIO | None = None) -> bool:
    """Colour on a terminal only: ``--no-color`` turns it off, a non-empty ``FORCE_COLOR``
    turns it on anywhere (a file, a pipe, CI logs), a non-empty ``NO_COLOR`` off."""
    if no_color:
        return False
    if os.environ.get("FORCE_COLOR"):
        return True
    if os.environ.get("NO_COLOR"):
        return False
    stream = stream if stream is not None else sys.stdout
    return bool(getattr(stream, "isatty", lambda: False)())


# --- options that answer without checking (--show-files, --show-settings) -------------


def list_files(paths: list[str], resolver: Resolver, force_exclude: bool, out: TextIO) -> None:
    """``--show-files``: the files a check would read, absolute and sorted, one per line."""
    from loopcheck.workspace.discovery import iter_source_files

    files = sorted(os.path.abspath(p) for p in iter_source_files(paths, resolver.for_directory, force_exclude))
    for path in files:
        out.write(path + "\n")
    if not files:
        report_problem(None, "No Python files found under the given path(s)", is_error=False)


def _toml_list(values) -> str:
    import json

    return "[" + ", ".join(json.dumps(v) for v in values) + "]"


def print_settings(paths: list[str], resolver: Resolver, force_exclude: bool, out: TextIO) -> None:
    """``--show-settings``: the settings used for the first file a check would read (as ruff
    does): where they come from and each value, TOML-like.

    Raises:
        click.UsageError: the paths hold no file to check.
    """
    from loopcheck.workspace.discovery import iter_source_files

    first = next(iter(iter_source_files(paths, resolver.for_directory, force_exclude)), None)
    if first is None:
        raise click.UsageError("--show-settings: no file to check under the given paths")
    settings = resolver.for_file(first)
    codes = settings.codes_for(first)
    out.write(f'Resolved settings for: "{os.path.abspath(first)}"\n')
    out.write(f'Settings path: "{settings.config_path}"\n' if settings.config_path else "Settings path: none (defaults)\n")
    out.write(f'Patterns are relative to: "{settings.base}"\n\n')
    out.write(f"preview = {'true' if settings.preview else 'false'}\n")
    out.write(f"select = {_toml_list(sorted(settings.codes))}\n")
    out.write(f"rules for this file = {_toml_list(sorted(codes))}\n")
    out.write(f"exclude = {_toml_list(getattr(p, 'pattern', str(p)) for p in settings.exclude.patterns)}\n")
    out.write(f"respect-gitignore = {'true' if settings.respect_gitignore else 'false'}\n")
    out.write(f"max-file-size = {settings.max_file_size}\n")
    out.write("per-file-ignores = {")
    entries = []
    for spec, negated, ignored in settings.per_file_ignores:
        pattern = ("!" if negated else "") + ",".join(getattr(p, "pattern", str(p)) for p in spec.patterns)
        entries.append(f"{_toml_list([pattern])[1:-1]} = {_toml_list(sorted(ignored))}")
    out.write(", ".join(entries) + "}\n")


# --- --add-noqa ------------------------------------------------------------------------


def add_noqa_comments(run: Run) -> int:
    """``--add-noqa``: write ``# noqa: CODE`` on each reported line of the checked files (codes
    added to an existing ``# noqa: ...``), notebooks included, and return how many lines got
    one. A line whose end is inside a string or ends in a backslash is left alone (a comment
    cannot go there); a file whose result would not parse is left unchanged. Files are written
    as ``--fix`` writes them (byte for byte outside the comments, atomically)."""
    import ast
    import warnings

    from loopcheck.workspace.files import FileChanged, SourceText, render_fixed, write_atomic
    from loopcheck.workspace.notebook import write_program

    added = 0
    by_file: dict[str, list[Finding]] = {}
    for f in run.findings:
        if f.code != "LC001":
            by_file.setdefault(f.filename, []).append(f)
    for filename, findings in by_file.items():
        source = run.sources[filename]
        program, count = _with_noqa(source.text, findings)
        if not count:
            continue
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                ast.parse(program)
        except SyntaxError:
            if source.notebook is None:  # a notebook's program may hold blanked magics: trust the per-line test
                click.echo(f"loopcheck: {filename}: # noqa comments not added (the result would not parse)", err=True)
                continue
        old_text = run.texts[filename]
        new_text = program if source.notebook is None else write_program(old_text, source.notebook, program)
        if new_text != old_text:
            original = run.originals.get(filename) or SourceText(old_text)
            file_text = new_text if source.notebook is not None else render_fixed(original, old_text, new_text)
            try:
                write_atomic(Path(filename), original.encode(file_text), original.data)
            except FileChanged:
                report_problem(run, f"cannot add # noqa to {filename}: it changed since it was read; it was left as it is")
                continue
            except (OSError, UnicodeEncodeError) as err:
                report_problem(run, f"cannot add # noqa to {filename}: {getattr(err, 'strerror', None) or describe_error(err)}")
                continue
            added += count
    return added


def _with_noqa(program: str, findings: list[Finding]) -> tuple[str, int]:
    import io
    import re
    import tokenize

    from loopcheck.workspace.noqa import NOQA

    lines = program.splitlines(keepends=True)
    rows: dict[int, set[str]] = {}
    for f in findings:
        rows.setdefault(f.noqa_row or f.row, set()).add(f.code)
    inside_string: set[int] = set()
    comment_at: dict[int, tokenize.TokenInfo] = {}
    try:
        for tok in tokenize.generate_tokens(io.StringIO(program).readline):
            if tok.type == tokenize.STRING and tok.end[0] > tok.start[0]:
                inside_string.update(range(tok.start[0], tok.end[0]))
            elif tok.type == tokenize.COMMENT:
                comment_at[tok.start[0]] = tok
    except (tokenize.TokenError, SyntaxError):
        return program, 0
    count = 0
    for row, codes in sorted(rows.items()):
        if not 1 <= row <= len(lines) or row in inside_string:
            continue
        line = lines[row - 1]
        body = line.rstrip("\r\n")
        ending = line[len(body):]
        if body.rstrip().endswith("\\"):
            continue
        comment = comment_at.get(row)
        if comment is not None:
            m = NOQA.search(comment.string)
            if m and m.group("codes") is None:
                continue  # a bare # noqa already suppresses everything
            if m:
                have = {c.upper() for c in re.split(r"[,\s]+", m.group("codes"))}
                new = sorted(codes - have)
                start = comment.start[1] + m.end()
                body = body[:start] + "".join(f", {c}" for c in new) + body[start:]
            else:
                body = body.rstrip() + f"  # noqa: {', '.join(sorted(codes))}"
        else:
            body = body.rstrip() + f"  # noqa: {', '.join(sorted(codes))}"
        if body + ending != line:
            lines[row - 1] = body + ending
            count += 1
    return "".join(lines), count


# --- exit status and summary counts ------------------------------------------------------


def exit_status(run: Run, findings: list[Finding], *, exit_zero: bool, fixed: int,
                exit_non_zero_on_fix: bool = False) -> int:
    """2 when a file could not be read or checked; else 1 for findings (0 with
    ``--exit-zero``), and 1 when ``--exit-non-zero-on-fix`` and ``--fix`` changed a file."""
    if run.failed:
        return 2
    if exit_non_zero_on_fix and fixed:
        return 1
    return 1 if findings and not exit_zero else 0


def _fixed_warnings(before: list[Finding], after: list[Finding]) -> int:
    """How many findings of warning rules ``--fix`` removed (for the summary's counts)."""
    from collections import Counter

    from loopcheck.cli.reporters import severity_of

    gone = Counter(f.code for f in before) - Counter(f.code for f in after)
    return sum(n for code, n in gone.items() if severity_of(code) == "warning")


# --- the commands ----------------------------------------------------------------------


#: What a subcommand looks like (``rules``, ``show-settings``): a first argument like this that
#: names no file or directory is an unknown command, not a path.
_COMMAND_WORD = re.compile(r"[a-z][a-z0-9]*(?:-[a-z0-9]+)*")


class DefaultCheckGroup(click.Group):
    """A group whose first argument, when it is not a subcommand, is a path to check."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if not args or args[0] not in self.commands and args[0] not in ("--help", "-h", "--version", "-V"):
            if args and _COMMAND_WORD.fullmatch(args[0]) and not os.path.lexists(args[0]):
                # ``loopcheck chek``: a misspelt command, not a path to check
                commands = ", ".join(sorted(self.commands))
                raise click.UsageError(
                    f"unknown command {args[0]!r} (commands: {commands}); to check a path of that name, "
                    f"use `loopcheck check {args[0]}`", ctx)
            args = ["check", *args]
        return super().parse_args(ctx, args)

    def invoke(self, ctx: click.Context):
        """Run the command; an exception nothing else caught is an internal error: one line on
        standard error and exit status 2 (never 1, which means findings), no traceback. A
        closed standard output (the reader of a pipe stopped) ends the command quietly, with
        exit status 1 (Python's recipe)."""
        try:
            return super().invoke(ctx)
        except (click.exceptions.ClickException, click.exceptions.Exit, click.exceptions.Abort):
            raise
        except BrokenPipeError:  # the reader went away (``loopcheck rules | head``): no error
            _silence_broken_pipe()
            ctx.exit(1)
        except Exception as err:  # noqa: BLE001
            click.echo(f"loopcheck: internal error: {describe_error(err)}", err=True)
            ctx.exit(2)


@click.group(cls=DefaultCheckGroup, context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(__version__, "-V", "--version", prog_name="loopcheck", message="%(prog)s %(version)s")
def main() -> None:
    """loopcheck: find misplaced lines in PyTorch training loops (clipping before backward(),
    an epoch scheduler stepped per batch, eval() never undone, GradScaler misuse, ...).

    \b
    loopcheck train.py notebooks/   check files and directories (default: .)
    loopcheck --fix train.py        apply the safe fixes
    loopcheck rules                 list the rules
    loopcheck explain LC101         a rule's documentation (by code or name)
    loopcheck check --help          every option of the check

    Exit status: 0 nothing found, 1 findings, 2 usage, configuration or internal error.
    """


@main.command(short_help="Check files, directories or standard input (the default command).")
@click.argument("paths", nargs=-1, type=click.Path())
@click.option("--select", multiple=True,
              help="Rule codes, names or prefixes to enable, replacing the configured ones (comma-separated).")
@click.option("--extend-select", multiple=True, help="Rule codes, names or prefixes to enable in addition (comma-separated).")
@click.option("--ignore", multiple=True, help="Rule codes, names or prefixes to disable (comma-separated).")
@click.option("--preview/--no-preview", default=None,
              help="Also enable the rules in preview (selected by a prefix or by default) [default: off; "
                   "a preview rule named by its exact code or name is enabled either way].")
@click.option("--exclude", multiple=True, help="Patterns to skip, replacing the configured and default ones (comma-separated).")
@click.option("--extend-exclude", multiple=True, help="Patterns to skip in addition (comma-separated).")
@click.option("--respect-gitignore/--no-respect-gitignore", default=None,
              help="Skip (or also check) what .gitignore excludes [default: respect].")
@click.option("--force-exclude", is_flag=True, help="Apply the exclusions to paths named on the command line too.")
@click.option("--config", "config_args", multiple=True, metavar="FILE|KEY=VALUE",
              help="A configuration file to use for every file, instead of finding the closest one; or a TOML "
                   "'key = value' overriding that key of every configuration file (repeatable).")
@click.option("--extend-per-file-ignores", multiple=True, metavar="PATTERN:CODES",
              help="Rule codes or names to ignore in the files matching PATTERN, in addition to the configured "
                   "per-file-ignores (comma-separated: 'tests/*:LC401,LC302').")
@click.option("--isolated", is_flag=True, help="Ignore every configuration file.")
@click.option("--output-format", type=click.Choice(OUTPUT_FORMATS), default=None, envvar="LOOPCHECK_OUTPUT_FORMAT",
              show_envvar=True, help="How to print findings [default: full on a terminal, else concise].")
@click.option("-o", "--output-file", type=click.Path(dir_okay=False, writable=True, path_type=Path),
              help="Write the report to this file instead of standard output.")
@click.option("--no-color", is_flag=True,
              help="Do not colour the output (colour is used on terminals, or anywhere with FORCE_COLOR set).")
@click.option("--statistics", is_flag=True, help="Print the number of findings per rule instead of the findings.")
@click.option("--exit-zero", is_flag=True, help="Exit with status 0 even when there are findings.")
@click.option("--exit-non-zero-on-fix", is_flag=True,
              help="With --fix: exit with status 1 when a file was fixed, even if nothing remains.")
@click.option("-q", "--quiet", is_flag=True, help="Print the findings only, without the summary line.")
@click.option("--stdin-filename", help="The name of the file read from standard input (PATH '-').")
@click.option("--fix", is_flag=True, help="Apply the safe fixes and report what remains.")
@click.option("--fix-only", is_flag=True,
              help="Apply the safe fixes, but report nothing else: exit 0 unless --exit-non-zero-on-fix.")
@click.option("--show-fixes", is_flag=True, help="List the fixes applied, per file and rule, before the summary.")
@click.option("--fixable", multiple=True, help="Rule codes, names or prefixes whose fixes apply (default: all; comma-separated).")
@click.option("--extend-fixable", multiple=True, help="Rule codes, names or prefixes to make fixable in addition.")
@click.option("--unfixable", multiple=True, help="Rule codes, names or prefixes whose fixes neither show nor apply.")
@click.option("--ignore-noqa", is_flag=True,
              help="Report what '# noqa' comments (line and file-level) suppress; '# loopcheck: skip-file' still "
                   "skips, and --fix still leaves alone what a '# noqa' covers.")
@click.option("--unsafe-fixes", is_flag=True, help="Also apply (with --fix) or show the fixes marked unsafe.")
@click.option("--diff", "show_diff", is_flag=True, help="Print the fixes as a diff instead of applying them.")
@click.option("--add-noqa", is_flag=True, help="Add '# noqa: CODE' comments to every reported line, and exit.")
@click.option("--show-files", is_flag=True, help="List the files that would be checked, and exit.")
@click.option("--show-settings", is_flag=True, help="Show the settings used for the first file that would be checked, and exit.")
@click.option("--max-file-size", type=click.IntRange(min=0, max=2**63 - 1), default=None, metavar="BYTES",
              help="Skip (with a warning) files larger than this many bytes; 0: no limit [default: 1048576].")
@click.option("-j", "--jobs", type=click.IntRange(min=0), default=None, metavar="N",
              help="Check files in N processes at once; 0: one per core [default: one per core].")
@click.option("--no-cache", is_flag=True, help="Neither read nor write the cache of results.")
@click.option("--cache-dir", type=click.Path(file_okay=False, path_type=Path), default=None, metavar="DIR",
              help="The cache directory [default: $LOOPCHECK_CACHE_DIR, else .loopcheck_cache in the project root].")
def check(paths, select, extend_select, ignore, preview, exclude, extend_exclude, respect_gitignore, force_exclude,
          config_args, extend_per_file_ignores, isolated, output_format, output_file, no_color, statistics, exit_zero,
          exit_non_zero_on_fix, quiet, stdin_filename, fix, fix_only, show_fixes, fixable, extend_fixable, unfixable,
          ignore_noqa, unsafe_fixes, show_diff, add_noqa: bool, show_files: bool,
          show_settings: bool, max_file_size: int | None, jobs: int | None, no_cache: bool,
          cache_dir: Path | None) -> None:
    """Check PATHS: files (.py, .ipynb) and directories, walked recursively (default: the
    current directory; '-': standard input). Each file is checked with the configuration
    closest to it ([tool.loopcheck] in pyproject.toml, or loopcheck.toml); the options here
    override it.

    Exit status: 0 nothing found, 1 findings, 2 usage, configuration or internal error.
    """
    from loopcheck.workspace.config import ConfigError, Options, Resolver

    safe_console()
    config_path, overrides = parse_config_args(config_args)
    if config_path is not None and isolated:
        raise click.UsageError("--config and --isolated cannot be used together")
    fix = fix or fix_only
    _check_patterns(exclude, "--exclude")
    _check_patterns(extend_exclude, "--extend-exclude")
    cli = Options(
        select=_check_codes(parse_codes(select), "--select") if select else None,
        extend_select=_check_codes(parse_codes(extend_select), "--extend-select"),
        ignore=_check_codes(parse_codes(ignore), "--ignore"),
        exclude=tuple(parse_list(exclude)) if exclude else None,
        extend_exclude=tuple(parse_list(extend_exclude)),
        respect_gitignore=respect_gitignore,
        max_file_size=max_file_size,
        preview=preview,
        extend_per_file_ignores=parse_per_file_ignores(extend_per_file_ignores),
        fixable=_check_codes(parse_codes(fixable), "--fixable") if fixable else None,
        extend_fixable=_check_codes(parse_codes(extend_fixable), "--extend-fixable"),
        unfixable=_check_codes(parse_codes(unfixable), "--unfixable"),
    )
    read_stdin = paths == ("-",) or (not paths and stdin_filename is not None)
    if "-" in paths and not read_stdin:
        raise click.BadParameter("'-' (standard input) cannot be mixed with other paths", param_hint="PATHS")
    stream = _report_stream(output_file, stderr=fix and read_stdin)
    with stream as out:
        try:
            resolver = Resolver(cli, config_path, isolated, overrides=overrides)
            if (show_files or show_settings) and not read_stdin:
                (print_settings if show_settings else list_files)(list(paths) or ["."], resolver, force_exclude, out)
                return
            from loopcheck.check import tune_gc

            tune_gc()  # the checks, and the fixes checked again in this process
            if read_stdin:
                run = lint_stdin(stdin_filename, resolver, force_exclude, echo=fix and not show_diff and not add_noqa,
                                 ignore_noqa=ignore_noqa)
            else:
                from loopcheck.cli.runner import default_jobs

                cache = None
                if not no_cache and not ignore_noqa:  # the cache holds findings after # noqa
                    from loopcheck.workspace.cache import Cache, cache_directory

                    cache = Cache(cache_directory(cache_dir))
                run = lint_paths(list(paths) or ["."], resolver, force_exclude, jobs=jobs or default_jobs(), cache=cache,
                                 ignore_noqa=ignore_noqa)
            restrict_fixes(run, resolver, stdin_filename if read_stdin else None)
        except ConfigError as err:
            raise ConfigurationError(str(err)) from None
        except FileNotFoundError as err:
            raise click.BadParameter(f"no such file or directory: {err.args[0]}", param_hint="PATHS")
        if add_noqa:
            n = add_noqa_comments(run)
            click.echo(f"Added {n} noqa directive{'s' if n != 1 else ''}.", err=True)
            sys.exit(2 if run.failed else 0)
        fixed = 0
        if show_diff:
            from loopcheck.fixes import diff

            changes = fix_files(run, unsafe_fixes, write=False, stdin=read_stdin)
            for filename, (old, new, _n) in changes.items():
                out.write(diff(old, new, filename))
            n = sum(n for _, _, n in changes.values())
            if n:
                click.echo(f"Would fix {n} error{'s' if n != 1 else ''}.", err=True)
            sys.exit(2 if run.failed else (1 if n and not exit_zero else 0))
        before = list(run.findings)
        if fix:
            changes = fix_files(run, unsafe_fixes, write=True, stdin=read_stdin)
            fixed = sum(n for _, _, n in changes.values())
        findings = sorted(run.findings, key=lambda f: f.sort_key)
        if fix_only:
            try:
                write_fix_only(out, fixed_table(before, findings) if show_fixes else None, fixed, quiet)
                out.flush()
            except BrokenPipeError:
                _silence_broken_pipe()
            sys.exit(2 if run.failed else (1 if fixed and exit_non_zero_on_fix else 0))
        fmt = output_format or ("full" if getattr(out, "isatty", lambda: False)() else "concise")
        try:
            if show_fixes and fixed and fmt in TEXT_FORMATS and not statistics:
                out.write(fixed_list(fixed_table(before, findings)))
            # "All checks passed!" is never printed when a file could not be read, checked or fixed
            write_report(run, findings, out, output_format=fmt, no_color=no_color,
                         quiet=quiet or (run.failed and not findings) or run.nothing_checked, statistics=statistics, fixed=fixed,
                         fixed_warnings=_fixed_warnings(before, findings) if fixed else 0, unsafe_fixes=unsafe_fixes)
            out.flush()
        except BrokenPipeError:  # the reader went away (``| head``): nothing more to say
            _silence_broken_pipe()
        except OSError as err:  # a full disk, a lost device: said once, no partial report left
            stream.fail(run, err)
        except Exception as err:  # noqa: BLE001 - a reporter bug is an internal error, exit 2
            report_problem(run, f"internal error while writing the report: {describe_error(err)}")
    sys.exit(exit_status(run, findings, exit_zero=exit_zero, fixed=fixed, exit_non_zero_on_fix=exit_non_zero_on_fix))


def parse_config_args(values: tuple[str, ...]):
    """``--config`` values: at most one configuration file, and TOML ``key = value`` overrides
    (ruff's two uses of ``--config``): ``(path or None, merged overrides or None)``.

    Raises:
        click.BadParameter: two files, or a value that is neither a file nor a valid override.
    """
    from loopcheck.workspace.config import ConfigError, inherit, parse_override

    path: Path | None = None
    overrides = None
    for value in values:
        if os.path.isfile(value):
            if path is not None:
                raise click.BadParameter("only one configuration file can be given", param_hint="--config")
            path = Path(value)
            continue
        if "=" not in value:
            raise click.BadParameter(f"no such configuration file {value!r} (an override is a TOML "
                                     "'key = value')", param_hint="--config")
        try:
            layer = parse_override(value)
        except ConfigError as err:
            raise click.BadParameter(str(err).removeprefix(f"--config {value!r}: "), param_hint=f"--config {value!r}") from None
        overrides = layer if overrides is None else inherit(overrides, layer)
    return path, overrides


def parse_per_file_ignores(values: tuple[str, ...]) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """``--extend-per-file-ignores 'tests/*:LC401,LC302'`` values as ``(pattern, codes)`` pairs:
    each comma-separated item is ``PATTERN:CODE``, or a further ``CODE`` of the pattern before.

    Raises:
        click.BadParameter: no pattern, an invalid pattern, or a code that names no rule.
    """
    from loopcheck.workspace.config import pattern_error

    pairs: list[tuple[str, list[str]]] = []
    for value in values:
        for item in value.split(","):
            item = item.strip()
            if not item:
                continue
            pattern, sep, code = item.rpartition(":")
            if sep:
                pattern = pattern.strip()
                why = pattern_error(pattern[1:] if pattern.startswith("!") else pattern) if pattern.lstrip("!") else "empty"
                if why is not None:
                    raise click.BadParameter(f"invalid pattern {pattern!r} ({why})", param_hint="--extend-per-file-ignores")
                pairs.append((pattern, []))
            elif not pairs:
                raise click.BadParameter(f"expected PATTERN:CODES, got {item!r}", param_hint="--extend-per-file-ignores")
            pairs[-1][1].append(code)
    return tuple((p, _check_codes(parse_codes(tuple(c)), "--extend-per-file-ignores")) for p, c in pairs)


def restrict_fixes(run: Run, resolver: Resolver, stdin_filename: str | None = None) -> None:
    """Record each checked file's fixable codes (``fixable``/``unfixable``) in ``run`` and
    remove the fixes of the other rules' findings (:func:`_drop_unfixable`)."""
    for filename in run.sources:
        path = Path(stdin_filename) if filename == "-" and stdin_filename else Path(filename)
        fixable = resolver.for_file(path).fixable
        if len(fixable) < len(_all_codes()):
            run.fixable[filename] = fixable
    if run.fixable:
        _drop_unfixable(run, run.findings)


def _all_codes():
    from loopcheck.catalog import INFOS

    return INFOS


def fixed_table(before: list[Finding], after: list[Finding]) -> dict[str, dict[str, int]]:
    """``{file: {code: how many findings --fix removed}}``: the findings before the fixes
    minus those after, per file and code."""
    from collections import Counter

    table: dict[str, dict[str, int]] = {}
    gone = Counter((f.filename, f.code) for f in before) - Counter((f.filename, f.code) for f in after)
    for (filename, code), n in gone.items():
        table.setdefault(filename, {})[code] = n
    return table


def fixed_list(table: dict[str, dict[str, int]]) -> str:
    """``--show-fixes``, as ruff prints it: a blank line, ``Fixed N errors:``, then ``- path:``
    and ``    count × CODE (name)`` per rule (most fixed first), then a blank line; ``""``
    when nothing was fixed."""
    from loopcheck.cli.reporters import relative_name

    infos = _all_codes()
    total = sum(n for codes in table.values() for n in codes.values())
    if not total:
        return ""
    width = len(str(max(n for codes in table.values() for n in codes.values())))
    lines = [f"Fixed {total} error{'s' if total != 1 else ''}:"]
    for filename in sorted(table):
        lines.append(f"- {relative_name(filename)}:")
        for code, n in sorted(table[filename].items(), key=lambda item: (-item[1], item[0])):
            name = infos[code].name if code in infos else code
            lines.append(f"    {n:>{width}} × {code} ({name})")
    return "\n" + "\n".join(lines) + "\n\n"


def write_fix_only(out: TextIO, table: dict[str, dict[str, int]] | None, fixed: int, quiet: bool) -> None:
    """``--fix-only``'s report, as ruff's: ``--show-fixes``'s list when asked for, then
    ``Fixed N errors.`` (nothing when nothing was fixed, or with ``--quiet``)."""
    if quiet:
        return
    if table:
        out.write(fixed_list(table))
    if fixed:
        out.write(f"Fixed {fixed} error{'s' if fixed != 1 else ''}.\n")


class _report_stream:
    """Where the report goes: ``--output-file`` (UTF-8, created or truncated), else standard
    output (standard error when ``--fix -`` writes the fixed program to standard output).

    A report file that cannot be written to the end (a full disk) is reported once, as
    ``cannot write FILE: why``, and removed when it is a regular file: no half-written
    report is left behind."""

    def __init__(self, output_file: Path | None, stderr: bool) -> None:
        self.output_file = output_file
        self.stderr = stderr
        self.file: TextIO | None = None
        self.failed = False

    def __enter__(self) -> TextIO:
        if self.output_file is not None:
            try:
                self.file = open(self.output_file, "w", encoding="utf-8")  # noqa: SIM115 - closed in __exit__
            except OSError as err:
                raise click.BadParameter(f"cannot write {self.output_file}: {err.strerror}", param_hint="--output-file")
            return self.file
        return sys.stderr if self.stderr else sys.stdout

    def fail(self, run: Run | None, err: OSError) -> None:
        """The report could not be written: say so once (the run fails); the file is removed
        when the stream is closed."""
        if not self.failed:
            where = self.output_file if self.output_file is not None else ("standard error" if self.stderr else "standard output")
            report_problem(run, f"cannot write {where}: {err.strerror or describe_error(err)}")
        self.failed = True

    def __exit__(self, *exc) -> None:
        if self.file is None:
            try:
                (sys.stderr if self.stderr else sys.stdout).flush()
            except BrokenPipeError:
                _silence_broken_pipe()
            return
        if exc[0] is not None and issubclass(exc[0], OSError) and not issubclass(exc[0], BrokenPipeError):
            self.fail(None, exc[1])  # a write outside the report's (--diff): said once too
        try:
            self.file.close()
        except OSError as err:  # what was still buffered did not fit
            self.fail(None, err)
            try:
                self.file.close()  # (a second close only releases the descriptor)
            except OSError:
                pass
        if self.failed:
            import stat

            try:
                if stat.S_ISREG(os.stat(self.output_file).st_mode):
                    os.unlink(self.output_file)
            except OSError:
                pass
            if exc[0] is None or issubclass(exc[0], OSError):
                sys.exit(2)


def write_report(run: Run, findings: list[Finding], out: TextIO, *, output_format: str | None, no_color: bool,
                 quiet: bool, statistics: bool, fixed: int, fixed_warnings: int, unsafe_fixes: bool) -> None:
    """Print ``findings`` in the chosen format (default: ``full`` on a terminal, ``concise``
    elsewhere) or their ``--statistics``."""
    from loopcheck.cli.reporters import WRITERS, Context, write_statistics

    fmt = output_format or ("full" if getattr(out, "isatty", lambda: False)() else "concise")
    ctx = Context(run.sources, color=use_color(no_color, out) and fmt in TEXT_FORMATS, quiet=quiet,
                  fixed=fixed, fixed_warnings=fixed_warnings, unsafe_fixes=unsafe_fixes)
    if statistics:
        write_statistics(findings, out, ctx, as_json=fmt in ("json", "json-lines"))
    else:
        WRITERS[fmt](findings, out, ctx)


def _fix_column(code: str) -> str:
    from loopcheck.fixes import FIXABLE

    return FIXABLE.get(code) or ""


@main.command("rules", short_help="List every rule: code, name, severity, fix, preview and summary.")
@click.option("--output-format", type=click.Choice(["text", "json"]), default="text", show_default=True)
def list_rules(output_format: str) -> None:
    """List every rule: code, name, severity, whether it has a fix (safe: applied by --fix;
    unsafe: with --unsafe-fixes), whether it is in preview (off unless --preview or selected
    by its exact code or name) and a one-line summary."""
    import json

    from loopcheck.catalog import INFOS

    infos = [INFOS[c] for c in sorted(INFOS)]
    if output_format == "json":
        data = [
            {"code": i.code, "name": i.name, "severity": i.severity, "fix": _fix_column(i.code) or None,
             "preview": i.preview, "summary": i.summary, "url": i.url}
            for i in infos
        ]
        click.echo(json.dumps(data, indent=2))
        return
    width = max(len(i.name) for i in infos)
    click.echo(f"{'code':<5}  {'name':<{width}}  {'severity':<8}  {'fix':<6}  {'preview':<7}  summary")
    for i in infos:
        click.echo(f"{i.code}  {i.name:<{width}}  {i.severity:<8}  {_fix_column(i.code) or '-':<6}  "
                   f"{'yes' if i.preview else '-':<7}  {i.summary}")


def rule_page(code: str) -> str | None:
    """The text of ``rules/CODE.md``: from the installed package data, else the source tree."""
    from importlib import resources

    try:
        page = resources.files("loopcheck").joinpath("pages", f"{code}.md")
        if page.is_file():
            return page.read_text(encoding="utf-8")
    except (FileNotFoundError, ModuleNotFoundError):
        pass
    src = Path(__file__).resolve().parents[2] / "rules" / f"{code}.md"
    return src.read_text(encoding="utf-8") if src.is_file() else None


@main.command(short_help="Print a rule's documentation page; RULE is a code (LC101) or a name.")
@click.argument("rule", metavar="RULE")
def explain(rule: str) -> None:
    """Print the documentation page of RULE, given by code (LC101) or by name
    (clip-before-backward): what it flags, why it is a bug, what was measured, an example,
    the fix."""
    from loopcheck.catalog import INFOS
    from loopcheck.workspace.config import canonical_selector

    info = INFOS.get(canonical_selector(rule))
    if info is None:
        raise click.BadParameter(f"unknown rule code or name {rule!r} (see `loopcheck rules`)", param_hint="RULE")
    page = rule_page(info.code)
    if page is None:
        page = f"# {info.code} {info.name}\n\n{info.summary}\n"
    if info.preview:
        page = _with_preview_notice(page, info.code, info.name)
    click.echo(page.rstrip("\n"))


def _with_preview_notice(page: str, code: str, name: str) -> str:
    """``page`` with a paragraph saying that the rule is in preview, after its title line."""
    import textwrap

    notice = (f"This rule is in preview: it runs only with --preview (or `preview = true` in the "
              f"configuration), or when selected by its exact code or name (--extend-select {code}, "
              f"--extend-select {name}).")
    notice = "\n".join(textwrap.wrap(notice, width=95, break_on_hyphens=False))
    title, _, rest = page.partition("\n")
    if not title.startswith("#"):
        return f"{notice}\n\n{page}"
    return f"{title}\n\n{notice}\n\n{rest.lstrip()}"


@main.command(short_help="Run the language server (LSP over stdio) for editors; needs the server extra.")
def server() -> None:
    """Run the language server (LSP over stdio) for editors: diagnostics as you type, quick
    fixes, notebooks. Needs the server extra: pip install 'loopcheck[server]'."""
    try:
        from loopcheck.server.lsp import serve
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


def _register_trace() -> None:
    try:
        from loopcheck.trace.cli import trace
    except ImportError:
        return
    main.add_command(trace)


_register_trace()
