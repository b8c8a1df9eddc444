"""Which names of an imported module cannot reach its training code, read from its text alone.

The pre-filter (:func:`loopcheck.analysis.signs_of`) builds a file that shows no training of
its own where it calls into a project module that does: ``main.py`` calling
``engine.train_one_epoch``. A module that shows training somewhere is often imported for
something else: yolov5's ``utils/torch_utils.py`` builds an optimizer in ``smart_optimizer``,
and many of yolov5's files import ``select_device`` or ``time_sync`` from it. Building the
functions of such files that mention those names is costly and gives no finding. So a name
imported with ``from module import name`` counts only when ``name`` may reach the module's
training code; the names that cannot are *quiet*.

A top-level function or class of the module is quiet unless, in its text (decorators
included, nested functions and methods included):

- it shows the training signs (``backward(``, ``.train(``, and here any ``.step(``: the
  optimizer it steps may be named in another part of the module), or
- it mentions a word that names a top-level function or class that is not quiet, or
- it mentions a name the module imports from a project module that shows training, or the
  name of a package of the project (``import pkg.engine`` binds ``pkg``), or
- it mentions a module-level name (a global) while the module's own top-level code, its
  import statements left out, shows training or mentions one of those names
  (``trainer = Trainer(cfg)`` then ``trainer.fit()``).

A name the module imports (and binds nowhere else) is quiet when it comes from a library or
from a project module that shows no training (``Events``, re-exported by a package's
``__init__.py`` from its ``events.py``). Words are read from the text with a regular
expression: strings and comments count, which can only make a name less quiet. Everything else
a module binds (a global, a name imported from a training module or naming a package) is
never quiet, nor is any name of a module that star-imports a training module or that CPython
cannot parse.

What it gives up: a finding in a file that shows no training of its own, whose events lie in
the file and in quiet functions only, while code the analysis does not see trains (an
optimizer built by a quiet factory, the model moved, then handed to a library's trainer).
"""

from __future__ import annotations

import re
from collections.abc import Callable

from loopcheck.engine.outline import WORD, module_code_text, outline, span_text
from loopcheck.parsing import line_starts

#: The head of an import statement in a text: ``from <module> import`` (group 1, the module as
#: written, dots included) or ``import <module>`` (group 2).
IMPORT = re.compile(r"^\s*(?:from\s+(\.*[\w.]*)\s+import|import\s+([\w.]+))", re.MULTILINE)
# what follows an import's head: a parenthesized list, or the rest of the line (continued with
# backslashes)
_REST = re.compile(r"[ \t]*(?:\(([^)]*)\)|((?:[^\n\r#;\\]|\\\r?\n)*))")


def imported_names(source: str, end: int) -> list[str] | None:
    """The names a ``from x import ...`` statement imports (``["b", "d"]`` for ``from a
    import (b, d as e)``), read from the text after its ``import`` (``end``: where an
    :data:`IMPORT` match ends); ``None`` when they cannot be read for sure (a comment inside
    parentheses, anything but names)."""
    m = _REST.match(source, end)
    text = m.group(1) if m.group(1) is not None else m.group(2)
    if not text or "#" in text:
        return None
    names = []
    for piece in text.replace("\\", " ").split(","):
        words = piece.split()
        if not words:
            continue
        alone = len(words) == 1 and (words[0] == "*" or words[0].isidentifier())
        renamed = len(words) == 3 and words[1] == "as" and words[0].isidentifier() and words[2].isidentifier()
        if not (alone or renamed):
            return None
        names.append(words[0])
    return names or None


def _without_imports(text: str) -> str:
    """``text`` without its import statements (the names they bind are not a use of them)."""
    parts, at = [], 0
    for m in IMPORT.finditer(text):
        if m.start() < at:
            continue  # (inside the statement before)
        parts.append(text[at:m.start()])
        at = _REST.match(text, m.end()).end()
    parts.append(text[at:])
    return "".join(parts)


def quiet_members(
    source: str, package: str | None, trains: Callable[[str], bool], trained: Callable[[str], bool],
) -> frozenset[str]:
    """The top-level functions and classes of a module that cannot reach its training code.

    Args:
        source: the module's text.
        package: its package's dotted name (``"pkg"`` for ``pkg/engine.py``), to make its
            relative imports absolute.
        trains: whether a part of the module's text shows training
            (:func:`loopcheck.analysis._may_train`).
        trained: whether a qualified name the module imports (``"pkg.engine.fit"``) lies in
            a project module that shows training.

    Returns:
        The quiet names (functions, classes, imported names); empty when the text cannot be
        parsed or star-imports a training module (every name may then reach it).
    """
    out = outline(source, package)
    if out is None or any(trained(star) for star in out.imports.stars):
        return frozenset()
    starts = line_starts(source)
    words: dict[str, set[str]] = {}
    loud: set[str] = set()
    for (_kind, name), (first, last) in out.spans.items():
        text = span_text(source, starts, (first, last))
        if trains(text):
            loud.add(name)
        else:
            words.setdefault(name, set()).update(WORD.findall(text))
    names = {n for _kind, n in out.spans}
    of_training = {alias: trained(target) for alias, target in out.imports.aliases.items()}
    imported = {alias for alias, yes in of_training.items() if yes}
    # names it only re-exports from libraries or from project modules that show no training
    passed_on = {
        alias for alias, yes in of_training.items() if not yes and alias not in names and alias not in out.globals
    }
    plain_globals = out.globals - names - set(out.imports.aliases)
    top = _without_imports(module_code_text(source, starts, out.spans.values()))
    top_words, top_trains = set(WORD.findall(top)), trains(top)
    while True:  # the names not quiet only grow, so this ends
        reach = loud | imported
        if top_trains or not top_words.isdisjoint(reach):
            reach = reach | plain_globals
        more = {n for n, seen in words.items() if n not in loud and not seen.isdisjoint(reach)}
        if not more:
            break
        loud |= more
    return frozenset((names - loud) | passed_on)
