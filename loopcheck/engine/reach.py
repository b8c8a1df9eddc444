"""Which functions of a module can reach a name, read from the text of the module alone.

Used to build less of a file that shows no training of its own
(:meth:`loopcheck.analysis.Signs.entry_names`): a test or an evaluation script whose only sign
is ``.eval(``, a ``main.py`` that calls into an imported ``engine`` module. Of its functions,
only those that mention one of the names sought (``eval``, ``train_one_epoch``), or mention a
function or method of the same module that does, are built as entry points
(:func:`loopcheck.analysis.build_units`); the module's own code always is. The others cannot
put a model in eval mode or run the imported training code, so the rules have nothing to say
about them that they say about code that trains. What it gives up: a finding that needs no
training at all (LC504's plain list of submodules, LC505's discarded ``tensor.to()``) in a
function of such a file that no reaching function calls.

The test reads names, not calls, and over-approximates: a function that mentions the name of
another (``callbacks=[validate]``, ``self.validate()``, ``Evaluator()`` for a class whose
``__init__`` reaches) reaches what that one reaches; a builtin ``eval(...)`` counts as a call
of ``eval()``; every method of a class whose bases mention a name sought reaches (a
``Trainer(BaseTrainer)`` whose base class trains).

Such a file is read statement by statement (:class:`~loopcheck.engine.outline.LazyModuleIndex`,
:func:`loopcheck.analysis._silent_in_parts`): :func:`candidates` first picks, from the words
of each function's lines, the functions that may reach a name sought, and only those are
parsed for :func:`reaching` to decide on.
"""

from __future__ import annotations

from collections.abc import Collection

import libcst as cst

from loopcheck.engine.outline import WORD, LazyModuleIndex
from loopcheck.engine.walk import names_in


def reaching(index, targets: Collection[str]) -> set[cst.FunctionDef]:
    """The functions and methods of a module that mention one of ``targets`` or,
    transitively, the name of a function or method of the same module that does.

    Args:
        index: the module's :class:`~loopcheck.engine.builder.ModuleIndex`, parsed (its
            top-level functions and its classes' methods are read; nested functions count as
            part of the function that holds them), or a
            :class:`~loopcheck.engine.outline.LazyModuleIndex`, of which only the functions
            whose text may reach a target (:func:`candidates`) are parsed.
        targets: the names sought (``{"eval"}``, the names bound to imported modules).

    Returns:
        The ``FunctionDef`` nodes that reach a target; a class's ``__init__`` is also known
        under the class's name (``Evaluator()`` runs it).
    """
    targets = set(targets)
    keep = candidates(index, targets) if isinstance(index, LazyModuleIndex) else None
    known: dict[cst.FunctionDef, list[str]] = {}
    inherits: set[cst.FunctionDef] = set()
    for name in function_names(index.functions):
        func = index.functions.get(name) if keep is None or (None, name) in keep else None
        if func is not None:
            known.setdefault(func, []).append(name)
    for cls_name, info in index.classes.items():
        methods = [m for m in function_names(info.methods) if keep is None or (cls_name, m) in keep]
        if not methods:
            continue
        # (a class whose header has no word sought cannot be based on one: not parsed whole)
        based = (keep is None or keep[cls_name, methods[0]] == "based") and any(
            names_in(base.value) & targets for base in info.node.bases
        )
        for name in methods:
            method = info.methods.get(name)
            if method is None:
                continue
            known.setdefault(method, []).append(name)
            if name == "__init__":
                known[method].append(cls_name)
            if based:
                inherits.add(method)
    defined = {name for names in known.values() for name in names}
    mentioned_by: dict[str, list[cst.FunctionDef]] = {}
    work: list[cst.FunctionDef] = []
    for func in known:
        names = names_in(func.body)
        if func in inherits or names & targets:
            work.append(func)
        for name in names & defined:
            mentioned_by.setdefault(name, []).append(func)
    found = set(work)
    while work:
        func = work.pop()
        for name in known[func]:
            for caller in mentioned_by.get(name, ()):
                if caller not in found:
                    found.add(caller)
                    work.append(caller)
    return found


def candidates(index, targets: set[str]) -> dict[tuple[str | None, str], str]:
    """The functions of a :class:`~loopcheck.engine.outline.LazyModuleIndex` that may reach
    one of ``targets``, read from their text without parsing it: ``(class or None, name) →
    "based"`` for a method of a class whose header (its lines before its first method) has a
    target's word, else ``"words"``. The same fixpoint as :func:`reaching`, over every word of
    each function's lines instead of the names in its body: the words hold those names, so
    every function :func:`reaching` finds is a candidate, and :func:`reaching` then decides
    on the candidates' parsed bodies alone (a caller of a function it finds is a candidate
    too)."""
    words: dict[tuple[str | None, str], set[str]] = {}
    known: dict[tuple[str | None, str], list[str]] = {}
    found: dict[tuple[str | None, str], str] = {}
    for name in index.functions.names():
        key = (None, name)
        words[key] = set(WORD.findall(index.text_of(("def", name))))
        known[key] = [name]
    for cls_name, info in index.classes.items():
        based = bool(set(WORD.findall(index.text_of(("header", cls_name)))) & targets)
        for name in info.methods.names():
            key = (cls_name, name)
            words[key] = set(WORD.findall(index.text_of(("method", cls_name, name))))
            known[key] = [name, cls_name] if name == "__init__" else [name]
            if based:
                found[key] = "based"
    work = list(found)
    for key, seen in words.items():
        if key not in found and seen & targets:
            found[key] = "words"
            work.append(key)
    mentioned_by: dict[str, list[tuple[str | None, str]]] = {}
    defined = {name for names in known.values() for name in names}
    for key, seen in words.items():
        for name in seen & defined:
            mentioned_by.setdefault(name, []).append(key)
    while work:
        key = work.pop()
        for name in known[key]:
            for caller in mentioned_by.get(name, ()):
                if caller not in found:
                    found[caller] = "words"
                    work.append(caller)
    return found


def function_names(table) -> list[str]:
    """The names of a function table (a module's functions, a class's methods): a dict's keys,
    or a lazy table's names, unparsed."""
    names = getattr(table, "names", None)
    return names() if names is not None else list(table)
