"""Computing fixes for findings and applying them to a fixpoint."""

from __future__ import annotations

import difflib
import threading
from collections import OrderedDict
from dataclasses import replace
from typing import Collection, Iterable

import libcst as cst

from loopcheck.findings import Finding
from loopcheck.fixes.context import FixContext
from loopcheck.fixes.fixers import FIXERS
from loopcheck.fixes.model import UNSAFE, Fix, LineIndex, apply_edits, touched_rows
from loopcheck.fixes.noqa import NoqaMap, suppressed
from loopcheck.workspace.noqa import is_skipped
from loopcheck.fixes.noqa import noqa_codes_by_row as read_noqa

MAX_FIXES_PER_FINDING = 4  # attempts budget: len(findings) * this + a few


def compute_fix(module: cst.Module | None, source: str, finding: Finding,
                context: FixContext | None = None) -> Fix | None:
    """The fix for one finding of ``source`` (``module``: its parsed tree, or ``None`` to parse
    it), or ``None`` when its rule has no fixer or no local fix exists here. Never raises on a
    finding it does not understand."""
    fixer = FIXERS.get(finding.code)
    if fixer is None or any(r.filename for r in finding.related):
        return None  # a fix edits one file; this finding's evidence lies in others too
    try:
        ctx = context or FixContext(source, module)
        return fixer(ctx, finding)
    except (cst.ParserSyntaxError, RecursionError):
        return None
    except Exception:  # noqa: BLE001 - a fixer bug must never break checking
        return None


def attach_fixes(source: str, findings: Iterable[Finding], module: cst.Module | None = None,
                 positions=None, *, verify: bool = True, select: Collection[str] | None = None) -> list[Finding]:
    """Set ``finding.fix`` on each finding of ``source`` and return them. ``module`` and
    ``positions`` from the check (:func:`loopcheck.analysis.check_parsed`) are reused;
    otherwise ``source`` is parsed once for all findings.

    With ``verify`` (the default) a fix is attached only to the findings ``--fix`` removes,
    so that what is advertised (the JSON ``fix``, ``[*] N fixable``, the editor's quick
    fixes) is what ``--fix`` does: :func:`apply_fixes` is run on the text (its checks are
    cached, so a later ``--fix`` does not repeat them), with the safe fixes and then, when
    a finding with a fix remains, with the unsafe ones too; the findings that remain then keep
    no fix. A safe fix that ``--fix`` applies only with ``--unsafe-fixes`` (it brings a
    finding whose fix is unsafe) is attached as unsafe. ``select``: the rule codes ``--fix``
    fixes (default: the codes of ``findings``). Each run checks the whole file again, so the
    second run is left out where the first fixed everything."""
    findings = list(findings)
    if not any(f.code in FIXERS for f in findings):
        return findings
    try:
        ctx = FixContext(source, module, positions)
    except cst.ParserSyntaxError:
        return findings
    for f in findings:
        f.fix = compute_fix(ctx.module, source, f, ctx)
    if verify and any(f.fix is not None for f in findings):
        safe = _fixed_by(source, findings, False, select) if any(f.fix and f.fix.is_safe for f in findings) else set()
        rest = [i for i, f in enumerate(findings) if f.fix is not None and i not in safe]
        # (the run with the unsafe fixes only decides the findings the safe run left)
        every = _fixed_by(source, findings, True, select) if rest else set()
        for i in rest:
            f = findings[i]
            if i in every:
                if f.fix.is_safe:
                    f.fix = replace(f.fix, applicability=UNSAFE)
            else:
                f.fix = None
    return findings


def _fixed_by(source: str, findings: list[Finding], unsafe: bool, select: Collection[str] | None) -> set[int]:
    """The indexes of ``findings`` that :func:`apply_fixes` removes from ``source``: those not
    matched, by code and flagged text, by a finding of the fixed text."""
    if not findings:
        return set()
    copies = [replace(f) for f in findings]
    try:
        new_text, done = apply_fixes(source, copies, unsafe, filename=findings[0].filename, select=select)
    except Exception:  # noqa: BLE001 - a fix that cannot be applied or checked is not offered
        return set()
    if not done:
        return set()
    remaining: dict[tuple[str, str], int] = {}
    for g in _unsuppressed(_check(new_text, findings[0].filename), new_text):
        key = (g.code, _flagged_text(new_text, g))
        remaining[key] = remaining.get(key, 0) + 1
    fixed = set()
    for i, f in enumerate(findings):
        key = (f.code, _flagged_text(source, f))
        if remaining.get(key, 0) > 0:
            remaining[key] -= 1
        else:
            fixed.add(i)
    return fixed


def _flagged_text(text: str, f: Finding) -> str:
    """The flagged span of ``f`` in ``text``, blanks collapsed (it survives a move)."""
    index = LineIndex(text)
    return " ".join(text[index.offset(f.row, f.column):index.offset(f.end_row, f.end_column)].split())


_CHECKS: OrderedDict[tuple[str, str], list[Finding]] = OrderedDict()
_CHECKS_SIZE = 64
_CHECKS_LOCK = threading.Lock()


def _check(text: str, filename: str) -> list[Finding]:
    """``check_source(text, filename)`` with every rule, remembered for the last few texts
    (verifying a fix and then applying it check the same text); copies are returned."""
    from loopcheck.analysis import check_source  # a module-level import would be circular

    key = (filename, text)
    with _CHECKS_LOCK:
        found = _CHECKS.get(key)
        if found is not None:
            _CHECKS.move_to_end(key)
    if found is None:
        found = check_source(text, filename)
        with _CHECKS_LOCK:
            _CHECKS[key] = found
            while len(_CHECKS) > _CHECKS_SIZE:
                _CHECKS.popitem(last=False)
    return [replace(f, fix=None) for f in found]


def _allowed(fix: Fix | None, f: Finding, unsafe: bool, noqa: NoqaMap) -> bool:
    if fix is None or not fix.edits or (not unsafe and not fix.is_safe):
        return False
    if suppressed(noqa, f.noqa_row, f.code) or suppressed(noqa, f.row, f.code):
        return False
    return not any(suppressed(noqa, row, f.code) for e in fix.edits for row in touched_rows(e))


def _merge_noqa(a: NoqaMap | None, b: NoqaMap) -> dict:
    out = dict(b)
    for row, codes in (a or {}).items():
        if row in out and out[row] is not None and codes:
            out[row] = frozenset(out[row]) | frozenset(codes)
        else:
            out[row] = None if not codes else frozenset(codes)
    return out


def _unsuppressed(findings: list[Finding], text: str) -> list[Finding]:
    noqa = read_noqa(text)
    return [f for f in findings if not suppressed(noqa, f.noqa_row, f.code)]


def _counts(findings: Iterable[Finding]) -> dict[str, int]:
    out: dict[str, int] = {}
    for f in findings:
        out[f.code] = out.get(f.code, 0) + 1
    return out


def apply_fixes(
    source: str,
    findings: Iterable[Finding],
    unsafe: bool = False,
    noqa_codes_by_row: NoqaMap | None = None,
    *,
    filename: str | None = None,
    select: Collection[str] | None = None,
) -> tuple[str, list[Finding]]:
    """Apply the fixes of ``findings`` (findings of ``source``) and return ``(new_source, fixed)``.

    Fixes are applied in rounds, each re-checked once: a round takes the allowed fix of every
    candidate finding whose edits touch rows no other fix of the round touches, applies them
    together, and checks the file again with every rule. The round is kept if each code it
    fixes has at least as many findings fewer as the round has fixes of that code, and any new
    finding of another code has an allowed fix of its own, which a later round applies (moving
    a clip before ``scaler.step()`` needs ``scaler.unscale_()`` before it; a fix that would
    trade one bug for another is dropped). When a round is not kept, its first half is tried
    (bisection): a single fix that is still not kept is rejected, and the next round takes
    the others again, computed on the text as it is then. So a file with many independent
    findings is checked again a few times, not once per finding. The next round's fixes are
    taken from the new findings of the ``select`` codes (default: the codes of ``findings``),
    so fixes compose, until no allowed fix is left. If a finding a fix brought is still there
    at the end (its own fix failed after all), the text goes back to the last one with no more
    findings of any code than ``source``: a fix never leaves a new bug behind.

    Args:
        source: the file's text.
        findings: its findings (as ``check_source`` returns them).
        unsafe: also apply fixes whose applicability is ``"unsafe"``.
        noqa_codes_by_row: ``{row: codes}`` of ``# noqa`` comments in ``source``; ``None`` or
            an empty collection means a bare ``# noqa``. The file's own ``# noqa`` comments
            are always read too (``loopcheck.fixes.noqa_codes_by_row``). No fix is applied for
            a finding suppressed on its row, nor one whose edits change a line whose ``# noqa``
            covers the finding's code.
        filename: passed to ``check_source`` (default: the first finding's).
        select: the rule codes to fix (default: the codes of ``findings``).

    Returns:
        The fixed text (``source`` itself when nothing was fixed) and the findings fixed, each
        with ``.fix`` set; findings found after a first fix have rows of the text they were
        found in.
    """
    findings = list(findings)
    if not findings:
        return source, []
    filename = filename or findings[0].filename
    codes = set(select) if select is not None else {f.code for f in findings}
    caller_noqa = noqa_codes_by_row
    fixed: list[Finding] = []
    rejected: set[tuple] = set()
    budget = MAX_FIXES_PER_FINDING * len(findings) + 8  # checks of a fixed text, at most
    text = source
    if not any(f.code in codes and f.code in FIXERS for f in findings) or is_skipped(source):
        return source, []
    # every rule, not only the selected ones: a fix must not bring a bug it cannot fix
    every = _unsuppressed(_check(source, filename), source)
    baseline = _counts(every)
    # The last text with no more findings of any code than the source had: if a fix brought
    # a finding whose own fix then fails, the run ends there rather than with the new bug.
    checkpoint = (source, 0)
    previous: list[Fix | None] = []  # the .fix of each fixed finding before it was fixed
    while budget > 0:
        if text is source:
            candidates = [f for f in findings if f.code in codes]
        else:  # the selected codes, and the codes earlier fixes brought in (their follow-ups)
            counts = _counts(every)
            candidates = [g for g in every if g.code in codes or counts[g.code] > baseline.get(g.code, 0)]
        candidates = [f for f in candidates if f.code in FIXERS]
        if not candidates:
            break
        try:
            ctx = FixContext(text)
        except cst.ParserSyntaxError:
            break
        noqa = _merge_noqa(caller_noqa if text is source else None, read_noqa(text))
        batch: list[tuple[Finding, Fix, tuple]] = []
        spans: list[tuple[int, int]] = []
        for f in sorted(candidates, key=lambda f: (f.row, f.column, f.code)):
            key = (text, f.code, f.row, f.column)
            if key in rejected:
                continue
            fix = compute_fix(ctx.module, text, f, ctx)
            if not _allowed(fix, f, unsafe, noqa):
                continue
            span = _row_span(fix)
            if any(span[0] <= b and a <= span[1] for a, b in spans):
                continue  # it touches the rows of a fix taken before: the next round
            batch.append((f, fix, key))
            spans.append(span)
        if not batch:
            break
        while batch and budget > 0:  # the batch, else its first half, ... down to one fix
            budget -= 1
            try:
                new_text = apply_edits(text, [e for _, fix, _ in batch for e in fix.edits])
                after = _check(new_text, filename)
                kept = _accept(batch, every, after, new_text, unsafe)
            except Exception:  # noqa: BLE001 - never leave a half-applied file behind
                kept = False
            if kept:
                for f, fix, _key in batch:
                    previous.append(f.fix)
                    f.fix = fix
                    fixed.append(f)
                text, every = new_text, _unsuppressed(after, new_text)
                counts = _counts(every)
                if all(n <= baseline.get(code, 0) for code, n in counts.items()):
                    checkpoint = (text, len(fixed))
                break
            if len(batch) == 1:
                rejected.add(batch[0][2])
                break
            batch = batch[: len(batch) // 2]
    if text is not checkpoint[0]:
        for f, fix in zip(fixed[checkpoint[1]:], previous[checkpoint[1]:]):
            f.fix = fix  # not fixed after all: as it was
        text, fixed = checkpoint[0], fixed[:checkpoint[1]]
    return text, fixed


def _row_span(fix: Fix) -> tuple[int, int]:
    """The first and last rows a fix's edits touch (an insertion: its row): two fixes of one
    round must not share a row, so that their edits apply together and each reads the code
    it was computed on."""
    return min(e.row for e in fix.edits), max(e.end_row for e in fix.edits)


def _accept(batch: list[tuple[Finding, Fix, tuple]], before: list[Finding], after: list[Finding], new_text: str,
            unsafe: bool) -> bool:
    """Keep a round of fixes (``(finding, fix, key)``) if each code it fixes has at least as
    many findings fewer as the round has fixes of that code, and every finding it brings (of
    another code, not silenced by ``# noqa``) has an allowed fix of its own."""
    if any(a.code == "LC001" for a in after):
        return False
    noqa = read_noqa(new_text)
    after = [a for a in after if not suppressed(noqa, a.noqa_row, a.code)]
    b, a = _counts(before), _counts(after)
    wanted = _counts(f for f, _fix, _key in batch)
    if any(a.get(code, 0) > b.get(code, 0) - n for code, n in wanted.items()):
        return False
    grown = [code for code in a if code not in wanted and a[code] > b.get(code, 0)]
    if not grown:
        return True
    try:
        ctx = FixContext(new_text)
    except cst.ParserSyntaxError:
        return False
    for g in after:
        if g.code in grown and not _allowed(compute_fix(ctx.module, new_text, g, ctx), g, unsafe, noqa):
            return False
    return True


def diff(old: str, new: str, filename: str) -> str:
    """A unified diff of a fix (``--diff``), ``""`` when nothing changed."""
    if old == new:
        return ""
    a = old.splitlines(keepends=True)
    b = new.splitlines(keepends=True)
    for lines in (a, b):
        if lines and not lines[-1].endswith(("\n", "\r")):
            lines[-1] += "\n\\ No newline at end of file\n"
    return "".join(difflib.unified_diff(a, b, fromfile=filename, tofile=filename))
