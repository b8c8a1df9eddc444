"""The rule registry: each rule is a small class with its metadata and a ``check``."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable

from loopcheck.engine.unit import Unit
from loopcheck.findings import Report

DOCS_URL = "https://github.com/loopcheck/loopcheck/blob/main/rules/{code}.md"


@dataclass(frozen=True)
class RuleInfo:
    """Metadata of a rule.

    Attributes:
        code: stable code, ``LC`` + family digit + number (``LC101``).
        name: short kebab-case name (``clip-before-backward``).
        severity: ``"error"`` (training is wrong) or ``"warning"`` (memory or speed).
        summary: one line for ``loopcheck rules``.
    """

    code: str
    name: str
    severity: str
    summary: str

    @property
    def url(self) -> str:
        return DOCS_URL.format(code=self.code)


class Rule:
    """Base class: subclasses set ``info`` and implement :meth:`check`."""

    info: RuleInfo

    def check(self, unit: Unit) -> Iterable[Report]:
        raise NotImplementedError


REGISTRY: dict[str, Rule] = {}
INFOS: dict[str, RuleInfo] = {}


def register(cls: type[Rule]) -> type[Rule]:
    """Class decorator that adds a rule to the registry."""
    REGISTRY[cls.info.code] = cls()
    INFOS[cls.info.code] = cls.info
    return cls


SYNTAX_ERROR = RuleInfo(
    "LC001", "syntax-error", "error", "The file does not parse, so it was not checked."
)
INFOS[SYNTAX_ERROR.code] = SYNTAX_ERROR

UNUSED_NOQA = RuleInfo(
    "LC002", "unused-noqa", "warning", "A `# noqa` comment names a loopcheck code that suppresses nothing on its line."
)
INFOS[UNUSED_NOQA.code] = UNUSED_NOQA
