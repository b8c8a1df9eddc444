"""The rule catalog. One module per family; each rule is a class registered in ``REGISTRY``.

| family | module          | codes          |
|--------|-----------------|----------------|
| 1xx    | gradients.py    | LC101–LC105    |
| 1xx    | accumulation.py | LC106–LC107    |
| 2xx    | schedulers.py   | LC201–LC203    |
| 3xx    | modes.py        | LC301–LC302    |
| 3xx    | evaluation.py   | LC303          |
| 4xx    | memory.py       | LC401          |
| 5xx    | setup.py        | LC501–LC502    |
| 5xx    | modules.py      | LC503–LC505    |
| 6xx    | amp.py          | LC601–LC605    |
| 7xx    | losses.py       | LC701–LC702    |
| 8xx    | checkpoints.py  | LC801–LC802    |
| 9xx    | data.py         | LC901          |

To add a rule: give it an entry (code, name, severity, summary) in ``loopcheck/catalog.py``,
write a ``Rule`` subclass with ``info = INFOS["LCxxx"]`` in its family's module, decorate it
with ``@register``, add ``fixtures/LCxxx_bad.py``/``_good.py`` and a page ``rules/LCxxx.md``.
"""

from loopcheck.rules import amp, gradients, memory, modes, schedulers, setup  # noqa: F401
from loopcheck.rules import accumulation, checkpoints, data, evaluation, losses, modules  # noqa: F401
from loopcheck.rules.base import INFOS, REGISTRY, SYNTAX_ERROR, Rule, RuleInfo

__all__ = ["INFOS", "REGISTRY", "SYNTAX_ERROR", "Rule", "RuleInfo"]
