"""What ``loopcheck trace -- COMMAND`` runs: a script path or a module, and its arguments.

Accepted command lines (what follows ``--``), as ``python`` would take them::

    python train.py --lr 0.1          python3 -m package.module ARGS
    train.py --lr 0.1                 -m package.module ARGS

Only ``-m`` and the harmless ``-u``/``-B`` may come between the interpreter and the script:
options that change how Python itself runs (``-c``, ``-O``, ``-X``, ``-W``, ...) are refused,
since the program runs inside loopcheck's own interpreter.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field

_PYTHON = re.compile(r"^python(\d+(\.\d+)?)?(\.exe)?$")
_HARMLESS = {"-u", "-B"}


class TargetError(ValueError):
    """The command after ``--`` is not a script or ``-m module`` command line."""


@dataclass
class Target:
    """A program to trace.

    Attributes:
        kind: ``"path"`` (a script, a directory or zip with ``__main__.py``) or ``"module"``.
        value: the path as given, or the dotted module name.
        args: the program's own arguments (``sys.argv[1:]``).
    """

    kind: str
    value: str
    args: list[str] = field(default_factory=list)

    @property
    def argv(self) -> list[str]:
        """``sys.argv`` as ``python`` sets it: the path, or the module's file for ``-m``
        (filled in by the runner when the module is found)."""
        return [self.value, *self.args]

    def describe(self) -> str:
        """``train.py`` or ``-m package.module``."""
        return self.value if self.kind == "path" else f"-m {self.value}"


def parse_command(command: list[str] | tuple[str, ...]) -> Target:
    """Read ``python train.py ARGS`` / ``python -m pkg.mod ARGS`` / ``train.py ARGS``.

    Raises:
        TargetError: empty command, an unsupported interpreter option, or no script.
    """
    words = list(command)
    if not words:
        raise TargetError("nothing to run: give the command after '--', e.g. -- python train.py")
    if _PYTHON.match(os.path.basename(words[0])):
        words = words[1:]
    while words and words[0] in _HARMLESS:
        words = words[1:]
    if not words:
        raise TargetError("no script to run after the interpreter")
    first = words[0]
    if first == "-m":
        if len(words) < 2 or not words[1] or words[1].startswith("-"):
            raise TargetError("-m needs a module name")
        return Target("module", words[1], words[2:])
    if first.startswith("-m") and len(first) > 2:
        return Target("module", first[2:], words[1:])
    if first.startswith("-"):
        raise TargetError(
            f"unsupported interpreter option {first!r}: trace runs a script (python train.py ...) or a "
            "module (python -m package.module ...)")
    return Target("path", first, words[1:])
