"""``# noqa`` comments as fixes see them: which rows protect which codes.

The comments are read by :mod:`loopcheck.workspace.noqa` (the same rules as the check: flake8/ruff
syntax, exact codes, comments found with ``tokenize``); this module only turns them into a
``{row: codes}`` map and answers "does row R protect code C".
"""

from __future__ import annotations

from typing import Collection, Mapping, Optional

from loopcheck.workspace.noqa import scan

NoqaMap = Mapping[int, Optional[Collection[str]]]


def noqa_codes_by_row(source: str) -> dict[int, frozenset[str] | None]:
    """``{row: codes}`` for each row with a ``# noqa`` comment; ``None`` means a bare ``# noqa``
    (every code)."""
    return dict(scan(source).noqa)


def suppressed(noqa: NoqaMap, row: int | None, code: str) -> bool:
    """Whether a ``# noqa`` on ``row`` covers ``code`` (a bare one, or one naming the code)."""
    if row is None or row not in noqa:
        return False
    codes = noqa[row]
    if not codes:  # None or empty: a bare ``# noqa``
        return True
    return code.upper() in {c.upper() for c in codes}
