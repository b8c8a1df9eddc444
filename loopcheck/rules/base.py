"""The rule registry: each rule is a small class with its catalog entry and a ``check``."""

from __future__ import annotations

from typing import Iterable

from loopcheck.catalog import INFOS, SYNTAX_ERROR, UNUSED_NOQA, RuleInfo  # noqa: F401 - re-exported
from loopcheck.engine.unit import Unit
from loopcheck.findings import Report


class Rule:
    """Base class: subclasses set ``info`` and implement :meth:`check`."""

    info: RuleInfo

    def check(self, unit: Unit) -> Iterable[Report]:
        raise NotImplementedError


REGISTRY: dict[str, Rule] = {}


def register(cls: type[Rule]) -> type[Rule]:
    """Class decorator that adds a rule to the registry; its ``info`` is its catalog entry
    (:data:`loopcheck.catalog.INFOS`).

    Raises:
        ValueError: the rule's code is not in the catalog, or is registered twice.
    """
    code = cls.info.code
    if INFOS.get(code) is not cls.info or code in REGISTRY:
        raise ValueError(f"{cls.__name__}: {code} is not in loopcheck/catalog.py or is registered twice")
    REGISTRY[code] = cls()
    return cls
