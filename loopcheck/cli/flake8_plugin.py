"""loopcheck as a flake8 plugin: ``flake8 --select LC`` reports loopcheck's rules.

Registered under the ``flake8.extension`` entry point group with the code prefix ``LC``
(``pyproject.toml``), so installing loopcheck next to flake8 is enough. flake8 decides what
runs and what is shown: its ``--select``/``--extend-select``/``--ignore``, ``per-file-ignores``
and ``# noqa`` comments apply to the ``LC`` codes as to any other; loopcheck's own
configuration (``[tool.loopcheck]``) is not read here. A ``# loopcheck: skip-file`` comment
still skips the file. flake8 does not check notebooks; ``loopcheck`` itself does.

Rules in preview (:attr:`loopcheck.catalog.RuleInfo.preview`) run, as with ``loopcheck``,
only with ``--loopcheck-preview`` (``loopcheck-preview = true`` in flake8's configuration) or
when flake8's ``--select``/``--extend-select`` name them by their exact code (``LC401``); the
``LC`` prefix and flake8's default selection do not run them.
"""

from __future__ import annotations

from typing import Iterator

from loopcheck import __version__


class Plugin:
    """A flake8 checker over the lines flake8 read (``flake8.extension``, code prefix ``LC``).

    flake8 passes ``lines`` (the file's physical lines, as read with its encoding handling)
    and ``filename``; :meth:`run` yields ``(row, column, "LCxxx message", type)`` with a 1-based
    row and a 0-based column, as flake8 expects.
    """

    name = "loopcheck"
    version = __version__
    #: The rule codes to run (``None``: every rule, as before flake8 parsed its options).
    select: frozenset[str] | None = None

    def __init__(self, tree, lines: list[str], filename: str) -> None:  # noqa: ARG002 - flake8 API
        self.lines = lines
        self.filename = filename

    @classmethod
    def add_options(cls, parser) -> None:
        """Register ``--loopcheck-preview`` on flake8's option manager."""
        parser.add_option(
            "--loopcheck-preview", default=False, action="store_true", parse_from_config=True,
            help="also run loopcheck's rules in preview (a preview rule selected by its exact code runs either way)",
        )

    @classmethod
    def parse_options(cls, options) -> None:
        """Decide which rules run from flake8's options: those out of preview, and the rules in
        preview with ``--loopcheck-preview`` or named by exact code in ``--select`` or
        ``--extend-select``."""
        from loopcheck.catalog import INFOS, PREVIEW

        if getattr(options, "loopcheck_preview", False):
            cls.select = frozenset(INFOS)
            return
        named = {c.strip().upper() for key in ("select", "extend_select") for c in getattr(options, key, None) or ()}
        cls.select = frozenset(INFOS) - (PREVIEW - named)

    def run(self) -> Iterator[tuple[int, int, str, type]]:
        from loopcheck.analysis import check_source
        from loopcheck.workspace.noqa import is_skipped

        source = "".join(self.lines)
        if is_skipped(source):
            return
        for f in check_source(source, self.filename, self.select):
            yield f.row, f.column - 1, f"{f.code} {f.message}", type(self)
