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
"""

from __future__ import annotations

from collections.abc import Collection

import libcst as cst

from loopcheck.engine.walk import names_in


def reaching(index, targets: Collection[str]) -> set[cst.FunctionDef]:
    """The functions and methods of a module that mention one of ``targets`` or,
    transitively, the name of a function or method of the same module that does.

    Args:
        index: the module's :class:`~loopcheck.engine.builder.ModuleIndex`, parsed (its
            top-level functions and its classes' methods are read; nested functions count as
            part of the function that holds them).
        targets: the names sought (``{"eval"}``, the names bound to imported modules).

    Returns:
        The ``FunctionDef`` nodes that reach a target; a class's ``__init__`` is also known
        under the class's name (``Evaluator()`` runs it).
    """
    targets = set(targets)
    known: dict[cst.FunctionDef, list[str]] = {}
    inherits: set[cst.FunctionDef] = set()
    for name, func in index.functions.items():
        known.setdefault(func, []).append(name)
    for cls_name, info in index.classes.items():
        based = any(names_in(base.value) & targets for base in info.node.bases)
        for name, method in info.methods.items():
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
