"""Check one file: parse, build units, infer roles, type events, run rules, place findings.

The file is checked as part of its project (:mod:`loopcheck.engine.project`): calls into the
other modules it imports are followed, but findings are reported only in the checked file. A
finding whose lines lie in several modules is placed in the frame that holds all of them: for
``evaluate()`` in ``eval.py`` that leaves the model in eval mode while ``train.py``'s epoch loop
steps, the finding is on the ``evaluate(...)`` call in ``train.py``, with the ``eval()`` line of
``eval.py`` among its related lines.
"""

from __future__ import annotations

import os
import re
import weakref
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Collection, Mapping

import libcst as cst

from loopcheck.engine.accumulation import lower_accumulate_blocks
from loopcheck.engine.builder import NODE_TABLES, ModuleIndex, UnitBuilder, UnitRecord, index_module, undefined_reads
from loopcheck.engine.dataflow import forget
from loopcheck.engine.drivers import driver_unit
from loopcheck.engine.entry_defaults import params_bound_to_constant
from loopcheck.engine.events import classify, retype_graph_events
from loopcheck.engine.import_failure import failing_import
from loopcheck.engine.import_raises import never_reached, raising_statement
from loopcheck.engine.interrupts import interruptible
from loopcheck.engine.ir import outside_values, release, walk_events
from loopcheck.engine.positions import Positions
from loopcheck.engine.project import Project, absolute_module, project_for
from loopcheck.engine.quiet import IMPORT, imported_names, quiet_members
from loopcheck.engine.reach import function_names, reaching
from loopcheck.engine.reuse import UnitMemo
from loopcheck.engine.roles import infer_roles, know_models_without_parameters
from loopcheck.engine.unit import Unit
from loopcheck.engine.unreferenced import never_runs
from loopcheck.engine.values import models_without_own_parameters, models_without_parameters, parents
from loopcheck.engine.walk import parent_table
from loopcheck.findings import Describe, Finding, Related, Report
from loopcheck.parsing import Reindented, TooDeeplyNested, check_nesting, parse_module, parse_reindented
from loopcheck.rules import REGISTRY, SYNTAX_ERROR

# A file holds a training loop a rule can speak about only if it calls backward(), changes a
# model's mode, or steps an optimizer; otherwise it may still drive one that another module of
# the project holds (main.py calling engine.train_one_epoch).
TRAINING_SIGNS = ("backward(", ".train(")
STEP = ".step("
_OPTIMIZER_SIGN: re.Pattern | None = None


def optimizer_sign() -> re.Pattern:
    """What shows that a ``.step(`` may be an optimizer's: the names
    :mod:`loopcheck.engine.roles` takes for optimizers (``optimizer``, ``opt_g``, ``d_optim``),
    ``torch.optim``, ``zero_grad``, and the names of the optimizer classes and factories the
    library knowledge lists by exact name (``AdamW`` from transformers, ``Lion``). A diffusion
    pipeline stepping its noise scheduler (``self.scheduler.step(noise_pred, t, latents)``) shows
    none of them."""
    global _OPTIMIZER_SIGN
    if _OPTIMIZER_SIGN is None:
        from loopcheck.engine.knowledge import knowledge

        kb = knowledge()
        names = set()
        for qualname in (*kb.functions, *kb.classes):
            summary = kb.callable(qualname)
            if summary is not None and summary.returns is not None and summary.returns.role == "optimizer":
                names.add(qualname.rpartition(".")[2])
        words = "|".join(sorted(map(re.escape, names)))
        # every alternative starts with one of these characters: testing it first makes the
        # search fast on the long texts that show no sign
        first = "".join(sorted({"o", "O", "z", "_", *(name[0] for name in names)}))
        _OPTIMIZER_SIGN = re.compile(
            f"(?=[{re.escape(first)}])(?:"
            r"(?i:optimi[sz]er)|zero_grad|\b(?:optim|opt)(?:_\w+)?\b|_(?:optim|opt)\b|\bopt[A-Z0-9]\w*"
            + (rf"|\b(?:{words})\b" if words else "")
            + ")"
        )
    return _OPTIMIZER_SIGN


_DRIVER_SIGN: re.Pattern | None = None


def driver_sign() -> re.Pattern:
    """The last components of the library classes a driver runs subclasses of
    (``[[driver]]`` ``bases`` in the knowledge): a file that names one may hold a loop that
    the framework runs, with no training call written in it."""
    global _DRIVER_SIGN
    if _DRIVER_SIGN is None:
        from loopcheck.engine.knowledge import knowledge

        names = {base.rpartition(".")[2] for driver in knowledge().drivers for base in driver.bases}
        words = "|".join(sorted(map(re.escape, names))) or r"(?!)"
        _DRIVER_SIGN = re.compile(rf"\b(?:{words})\b")
    return _DRIVER_SIGN


def training_signs(source: str) -> bool:
    """Whether a text shows training: ``backward(``, ``.train(``, ``.step(`` with a sign of
    an optimizer (:func:`optimizer_sign`), or the name of a class whose subclasses a framework
    trains (:func:`driver_sign`). Substring tests first; the regular expressions run only on
    texts that show none of them."""
    if any(t in source for t in TRAINING_SIGNS):
        return True
    if STEP in source and optimizer_sign().search(source) is not None:
        return True
    return driver_sign().search(source) is not None


def loop_signs(source: str) -> bool:
    """Whether a text shows a training loop: :func:`training_signs`, or ``.eval(`` (a
    validation pass)."""
    return ".eval(" in source or training_signs(source)


def might_have_loop(source: str, filename: str | None = None, project: Project | None = None) -> bool:
    """Cheap text test run before parsing, to pick the files worth analyzing: most files of a
    repository hold no training loop. A file passes when it shows :func:`loop_signs`, or when
    it imports a module of the project that shows :func:`training_signs` (see
    :func:`signs_of`)."""
    return signs_of(source, filename, project) is not None


@dataclass(frozen=True)
class Signs:
    """What the text of a file and of the project modules it imports show (:func:`signs_of`).

    Attributes:
        training: the file's own text shows :func:`training_signs`.
        evaluation: it shows ``.eval(``.
        modules: when ``training`` is false, what it imports from the project modules whose
            text shows :func:`training_signs`, by dotted name, as written and made absolute: a
            module imported whole (``"pkg.engine"`` for ``import pkg.engine``, or for a
            star import), or each name imported from it that may reach its training code
            (``("engine.fit", "pkg.engine.fit")`` for ``from .engine import fit, log`` in
            ``pkg/main.py`` when ``log`` is quiet: :mod:`loopcheck.engine.quiet`).
    """

    training: bool
    evaluation: bool = False
    modules: frozenset[str] = frozenset()

    def entry_names(self, imports) -> frozenset[str] | None:
        """The names one of a file's functions must reach (:mod:`loopcheck.engine.reach`) to
        be built as an entry point, ``None`` for every function: a file that shows training
        of its own is read whole. Otherwise ``eval`` when it calls ``.eval(``, and the names its
        imports (an :class:`~loopcheck.engine.names.ImportMap`) bind to what :attr:`modules`
        names (``train_one_epoch`` for ``from engine import train_one_epoch``, ``engine``
        for ``import engine``); every function when it star-imports one of them."""
        if self.training:
            return None

        def training(target: str) -> bool:
            return any(target == m or target.startswith(m + ".") or m.startswith(target + ".") for m in self.modules)

        if any(training(star) for star in imports.stars):
            return None
        names = {alias for alias, target in imports.aliases.items() if training(target)}
        if self.evaluation:
            names.add("eval")
        return frozenset(names)


def signs_of(source: str, filename: str | None = None, project: Project | None = None) -> Signs | None:
    """What the text of a file and of the project modules it imports show, read before
    parsing; ``None`` when it shows neither :func:`loop_signs` nor an import of what may reach
    an imported module's :func:`training_signs` (nothing to analyze). An imported module's text
    is read, not parsed with LibCST; the modules a checked file calls into are still read in
    full when it is analyzed.

    A name imported with ``from module import name`` counts only when it may reach the
    module's training code (:mod:`loopcheck.engine.quiet`): yolov5's files import
    ``select_device`` from ``utils/torch_utils.py``, whose ``smart_optimizer`` shows an
    optimizer, and such files passed for the imported module alone gave no finding.

    An imported module whose only sign is ``.eval(`` does not count: that is a loader that
    hands back a model in eval mode (diffusers' ``from_pretrained``, a hub's ``load_model``),
    and a file that shows nothing of its own and calls it is an inference script or a test
    (such files gave no finding). What it gives up: an LC302 whose ``eval()`` lies in the imported module
    and whose loop of forwards without ``torch.no_grad()`` lies in the file."""
    if training_signs(source):
        return Signs(True)
    evaluates = ".eval(" in source
    modules: set[str] = set()
    if project is not None and filename:
        near = Path(filename).resolve()
        package = None
        for m in IMPORT.finditer(source):
            written = m.group(1) or m.group(2) or ""
            dotted = written.lstrip(".")
            path = project.find_module(dotted, near) if dotted else None
            if path is None and written.startswith("."):  # looked up in the file's own package
                package = _package_of(near) if package is None else package
                path = project.find_module(".".join(filter(None, [package, dotted])), near)
            if path is not None and path != near and _trains(project, path):
                bases = list(filter(None, (dotted, absolute_module(written, near) if written.startswith(".") else "")))
                names = imported_names(source, m.end()) if m.group(1) is not None else None
                if names is None or "*" in names:
                    modules.update(bases)
                else:  # only the names that may reach its training code
                    quiet = _quiet(project, path)
                    modules.update(f"{base}.{name}" for base in bases for name in names if name not in quiet)
    if not (evaluates or modules):
        return None
    return Signs(False, evaluates, frozenset(modules))


#: An import statement's head in a text: ``import a.b, c as d`` (group 1: what follows
#: ``import``, to the end of the line) or ``from a.b import x, y`` (group 2: the module as
#: written, dots included; group 3: what follows ``import``).
_IMPORTS = re.compile(r"^[ \t]*(?:import[ \t]+([^\n#;]+)|from[ \t]+(\.*[\w.]*)[ \t]+import\b([^\n#;]*))", re.MULTILINE)
#: How many project modules deep an import is followed to find PyTorch (:func:`uses_torch`).
MAX_IMPORT_DEPTH = 8


def _imports_of(source: str) -> tuple[set[str], list[tuple[str, tuple[str, ...]]]]:
    """``(top-level packages imported absolutely, [(module as written, names imported from
    it)])`` from a text's import statements (``import a.b, c``: ``a``, ``c``; ``from .x import
    y``: ``(".x", ("y",))``). Read with a regular expression: an import in a string counts."""
    tops: set[str] = set()
    froms: list[tuple[str, tuple[str, ...]]] = []
    for m in _IMPORTS.finditer(source):
        if m.group(1) is not None:
            for piece in m.group(1).replace("\\", " ").split(","):
                words = piece.split()
                if words:
                    tops.add(words[0].split(".")[0])
                    froms.append((words[0], ()))
        else:
            written = m.group(2)
            if not written.startswith("."):
                tops.add(written.split(".")[0])
            names = tuple(w.split()[0] for w in m.group(3).strip(" \t()\\").split(",") if w.split())
            froms.append((written, names))
    return tops, froms


def uses_torch(source: str, filename: str | None = None, project: Project | None = None) -> bool:
    """Whether a text is PyTorch code: it imports a package the library knowledge lists as
    PyTorch or built on it (``[packages] torch``: ``torch``, ``torchvision``, ``lightning``,
    ``transformers``, ...), or a module of the project that does, followed through the
    project's imports (:data:`MAX_IMPORT_DEPTH` modules deep) unless the text itself imports
    another deep-learning framework (``[packages] other``: MegEngine, JAX, TensorFlow, ...).
    Only PyTorch code is checked for training rules (:func:`check_parsed`): the same method
    names (``model.eval()``, ``optimizer.step()``) mean other things in MegEngine, JAX or
    TensorFlow code. Imports are read from the text (an import inside a function counts); a project module's imports are
    read once per version of its file."""
    from loopcheck.engine.knowledge import knowledge

    kb = knowledge()
    packages = kb.torch_packages
    tops, froms = _imports_of(source)
    if not tops.isdisjoint(packages):
        return True
    if project is None or not filename or not tops.isdisjoint(kb.other_frameworks):
        # a file that imports another framework itself (``[packages] other``) is written
        # against it: PyTorch reached only through the project's modules does not make its
        # ``model.eval()`` PyTorch's
        return False
    near = Path(filename).resolve()
    seen = {near}
    todo = [(path, 1) for path in _project_imports(project, froms, near)]
    while todo:
        path, depth = todo.pop()
        if path in seen or depth > MAX_IMPORT_DEPTH:
            continue
        seen.add(path)
        direct, imported = _torch_imports(project, path, packages)
        if direct:
            return True
        todo.extend((p, depth + 1) for p in imported)
    return False


def _project_imports(project: Project, froms, near: Path) -> list[Path]:
    """The files of the project modules a text imports (``from pkg import mod`` also tries the
    module ``pkg.mod``); relative imports are looked up in the package of ``near``."""
    out = []
    for written, names in froms:
        dotted = written.lstrip(".")
        base = absolute_module(written, near) if written.startswith(".") else dotted
        for name in (base, *(f"{base}.{n}" if base else n for n in names if n != "*")):
            path = project.find_module(name, near) if name else None
            if path is not None and path != near:
                out.append(path)
    return out


def _torch_imports(project: Project, path: Path, packages) -> tuple[bool, tuple[Path, ...]]:
    """``(whether project module path imports PyTorch itself, the project modules it
    imports)``; its imports are read once per version of the file."""
    stamp, text = project.source_of(path)
    memo = project.memo.setdefault("torch_imports", {})
    key = (path, stamp)
    if key not in memo:
        tops, froms = _imports_of(text) if text is not None else (set(), [])
        direct = not tops.isdisjoint(packages)
        memo[key] = (direct, () if direct else tuple(froms))
    direct, froms = memo[key]
    # resolved on each call: a module created since may change where an import leads (and
    # the cache of :mod:`loopcheck.workspace.cache` records the files probed)
    return direct, tuple(_project_imports(project, froms, path))


def _trains(project: Project, path: Path) -> bool:
    """Whether the project module ``path``'s text shows :func:`training_signs` (once per
    version of the file)."""
    stamp, text = project.source_of(path)
    memo = project.memo.setdefault("loop_signs", {})
    key = (path, stamp)
    if key not in memo:
        memo[key] = text is not None and training_signs(text)
    return memo[key]


def _may_train(text: str) -> bool:
    """:func:`training_signs` of a part of a module whose whole text shows them, with any
    ``.step(`` counted (the optimizer it steps may be named in another part)."""
    return STEP in text or any(t in text for t in TRAINING_SIGNS)


def _quiet(project: Project, path: Path) -> frozenset[str]:
    """:func:`~loopcheck.engine.quiet.quiet_members` of the project module ``path``; a name it
    imports counts as trained when it lies in a project module that shows
    :func:`training_signs` (``pkg.engine.fit``: ``pkg/engine.py``, ``pkg/engine/__init__.py``,
    or the module ``pkg`` for a name it re-exports), or names a package of the project (any
    of whose modules it may reach: ``import pkg.engine`` binds ``pkg``).

    Computed once per version of the file, and taken again while the modules it imports train
    as they did; taking it again reads those modules as computing it did, so that a cached
    result that depends on them (:mod:`loopcheck.workspace.cache`) is invalidated when they change."""
    def trained(target: str) -> bool:
        for dotted in (target, target.rpartition(".")[0]):
            found = project.find_module(dotted, path) if dotted else None
            if found is not None:
                if dotted == target and found.name == "__init__.py":
                    return True  # a package: ``import pkg.engine`` binds ``pkg``
                return found != path and _trains(project, found)
        return False

    stamp, text = project.source_of(path)
    memo = project.memo.setdefault("quiet", {})
    key = (path, stamp)
    hit = memo.get(key)
    if hit is not None and all(trained(target) == was for target, was in hit[1].items()):
        return hit[0]
    asked: dict[str, bool] = {}

    def recorded(target: str) -> bool:
        asked[target] = trained(target)
        return asked[target]

    quiet = quiet_members(text, _package_of(path), _may_train, recorded) if text is not None else frozenset()
    memo[key] = (quiet, asked)
    return quiet


def _package_of(path: Path) -> str:
    from loopcheck.engine.project import module_name

    name, _ = module_name(path)
    return name.rpartition(".")[0]


def _syntax_error(source: str, err: cst.ParserSyntaxError) -> tuple[str, tuple[int, int], bool]:
    """``(message, (row, column), valid)`` of a syntax error as Python reports it (``expected
    ':'`` on the line of the ``def``); where Python accepts the code (``valid``) and only LibCST
    cannot read it, the nesting pre-check's words or an empty message, at the place LibCST's
    message names."""
    import ast

    try:
        ast.parse(source)
    except SyntaxError as py:
        if py.lineno:
            return py.msg, (py.lineno, max(py.offset or 1, 1)), False
    except (ValueError, RecursionError, MemoryError):
        pass
    else:  # valid Python LibCST cannot read (``(pars): bool = True``): say so, not "SyntaxError"
        text = str(err.message)
        at = re.search(r"error at (\d+):(\d+)", text)  # its own position is a line late there
        why = "" if text.startswith("parser error") else text  # the nesting pre-check's own words
        return why, (int(at[1]), int(at[2]) + 1) if at else (err.raw_line, err.raw_column + 1), True
    return str(err.message).replace("\n", " "), (err.raw_line, err.raw_column + 1), False


def _null_byte(source: str, at: int, filename: str, select: Collection[str] | None) -> list[Finding]:
    """``LC001`` at the first NUL character of ``source`` (offset ``at``), as CPython refuses
    such a file: ``SyntaxError: source code cannot contain null bytes``."""
    if not _selected(SYNTAX_ERROR.code, select):
        return []
    row = source.count("\n", 0, at) + 1
    column = at - (source.rfind("\n", 0, at) + 1) + 1
    text = "SyntaxError: source code cannot contain null bytes"
    return [Finding(SYNTAX_ERROR.code, text, filename, row, column, row, column, [], row)]


def _python_syntax_error(source: str, filename: str, select: Collection[str] | None) -> list[Finding]:
    """``LC001`` where CPython's parser rejects ``source`` (``[]`` when it accepts it, or
    when the text nests too deeply for it to say)."""
    import ast
    import warnings

    if not _selected(SYNTAX_ERROR.code, select):
        return []
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # (invalid escape sequences and the like)
            compile(source, filename, "exec", ast.PyCF_ONLY_AST, dont_inherit=True)
    except SyntaxError as err:
        row, column = err.lineno or 1, max(err.offset or 1, 1)
        text = f"SyntaxError: {' '.join(str(err.msg).split())}"
        return [Finding(SYNTAX_ERROR.code, text, filename, row, column, row, column, [], row)]
    except (ValueError, RecursionError, MemoryError):
        pass
    return []


def _selected(code: str, select: Collection[str] | None) -> bool:
    return select is None or code in select


def build_units(
    module: cst.Module, index: ModuleIndex | None = None, memo: UnitMemo | None = None,
    interrupt: Callable[[], None] | None = None, reach: Collection[str] | None = None,
) -> list[Unit]:
    """The analysis units of a parsed module (module code + functions no one here calls).

    Args:
        module: the parsed module.
        index: its index, when it is part of a project (imports are then followed).
        memo: the entry points of the last check of the same document, whose unchanged
            functions are taken again instead of being built (:mod:`loopcheck.engine.reuse`);
            this check's are stored in it.
        interrupt: called before each function is built; what it raises ends the check (the
            language server's cancellation of a stale check; the memo stays usable). The
            walks of the whole module before the builds (the names nothing binds) and after
            them (the roles' order of the nodes) call it as they go
            (:func:`~loopcheck.engine.interrupts.interruptible`).
        reach: when given (:meth:`Signs.entry_names`: the file shows no training of its own),
            of its functions only those that reach one of these names
            (:func:`~loopcheck.engine.reach.reaching`) are built: ``eval`` for a test or an
            evaluation script, the names bound to the imported training modules for a
            ``main.py`` that calls ``engine.train_one_epoch`` (files whose only sign is
            ``.eval(``, tests, gave no finding built whole and cost much of a run).
    """
    index = index or index_module(module)
    with interruptible(interrupt):
        undefined_reads(index)  # (once per index: here, where a walk may stop, not in a build)
    builder = UnitBuilder(index)
    builder.begin(0)
    candidates = [(None, 0, builder.module_unit())]
    builder.end()
    reachable = reaching(index, reach) if reach is not None else None
    # the loops frameworks run for the module's classes (their methods are then read there,
    # not as entry points of their own)
    driven = []
    for i, cls in enumerate(_driven_classes(index, reachable)):
        builder.begin(f"d{i}")
        try:
            driven.append(driver_unit(builder, *cls))
        finally:
            builder.end()
    funcs = _functions(index, reachable)
    if memo is not None:
        memo.start(index)

    def build(position: int, func: cst.FunctionDef, grad: str = "enabled"):
        # entry point tags: 0 the module code, 2k+1 function k, 2k+2 its override read under no_grad
        key = (func, grad, 2 * position + (1 if grad == "enabled" else 2))
        ir = memo.take(builder, key) if memo is not None else None
        if ir is None:
            record = UnitRecord() if memo is not None else None
            builder.begin(key[2], record)
            try:
                ir = builder.function_unit(func, grad=grad, bound_to_constant=params_bound_to_constant)
            finally:
                builder.end()
            if record is not None:
                record.ir = ir
                memo.keep(key, record)
        return ir

    for position, func in enumerate(funcs):
        if interrupt is not None:
            interrupt()
        if func is None or reachable is not None and func not in reachable:
            continue  # (None: not reachable, or a statement LibCST cannot parse)
        if func not in builder.called:  # already read inside a caller
            candidates.append((func, position, build(position, func)))
    for i, (func, position, _ir) in enumerate(candidates):
        # an override only the base class calls (self._valid_epoch() under no_grad)
        if func is not None and func not in builder.called and builder.self_calls.get(func.name.value) == {"disabled"}:
            if memo is None:
                release(walk_events(candidates[i][2]))
            candidates[i] = (func, position, build(position, func, grad="disabled"))
    if memo is not None:
        memo.finish()
    # the statements no build reached (after a path's end): what they name is never called
    # from there (:mod:`loopcheck.engine.unreferenced`)
    index.cache["unreached"] = builder.unreached_statements()
    kept = [(func, ir) for func, _, ir in candidates if func is None or func not in builder.called]
    irs = [ir for _, ir in kept] + driven
    entries = [func for func, _ in kept] + [None] * len(driven)
    if memo is None:  # (a memo keeps them for the next check, and releases them itself)
        release(raw for func, _, ir in candidates if func is not None and func in builder.called for raw in walk_events(ir))
    per_unit = [list(walk_events(ir)) for ir in irs]
    raws = [raw for unit_raws in per_unit for raw in unit_raws]
    with interruptible(interrupt):
        roles = infer_roles(index, raws, frozenset().union(*(outside_values(ir) for ir in irs)))
    for raw in raws:
        raw.typed = classify(raw, roles)

    def make_units() -> list[Unit]:
        return [
            Unit(ir, roles, [ev for raw in unit_raws for ev in raw.typed], module=index, node_module=builder.node_module,
                 entry=entry)
            for ir, unit_raws, entry in zip(irs, per_unit, entries)
        ]

    units = make_units()
    if roles.graph_stores:
        # which models hold no parameters, or are not established to hold any, is read from the
        # typed units; their forwards make no graph of their own, so the graph fact (and the
        # stores it found) is derived again
        free = models_without_parameters(units) | models_without_own_parameters(units)
        if free:
            know_models_without_parameters(roles, raws, free)
            for raw in raws:
                retype_graph_events(raw, roles)
            units = make_units()
    peers = tuple(weakref.ref(unit) for unit in units)
    for unit in units:
        unit.peers = peers
    for unit in units:
        # the steps of an ``accelerator.accumulate()`` block run when its flag says the
        # micro-step syncs: lowered under ``if accelerator.sync_gradients:``
        if lower_accumulate_blocks(unit):
            forget(unit.ir)
    return units


def _driven_classes(index, reachable: set | None) -> list:
    """``(class, driver)`` for each class of the module a framework runs
    (:func:`~loopcheck.engine.drivers.driver_of`); none when only the functions in
    ``reachable`` are read (a file that shows no training of its own)."""
    from loopcheck.engine.builder import ClassRef
    from loopcheck.engine.drivers import driver_of

    if reachable is not None:
        return []  # the file names no driver's base (:func:`training_signs`)
    out = []
    for name in index.classes:
        cls = ClassRef(index, name)
        driver = driver_of(cls)
        if driver is not None:
            out.append((cls, driver))
    return out


def _functions(index, reachable: set | None) -> list:
    """The module's functions, then each class's methods, in order (a function's place in
    the list tags its entry point); with ``reachable``, ``None`` in the place of a function
    not in it, which a :class:`~loopcheck.engine.outline.LazyModuleIndex` then does not parse."""
    keys = None if reachable is None else {(index.method_class.get(f), f.name.value) for f in reachable}
    tables = [(None, index.functions), *((cls, info.methods) for cls, info in index.classes.items())]
    return [
        table.get(name) if keys is None or (cls, name) in keys else None
        for cls, table in tables for name in function_names(table)
    ]


def place(unit: Unit, rep: Report) -> Report:
    """Where a finding belongs: in the frame that holds its event and the events of its
    related lines, at the deepest line of that frame's module on the way to its event. A
    report moved from another module names the original line among its related ones."""
    calls = rep.at.ctx.calls if rep.at is not None else unit.calls_to(rep.node)
    if calls is None:
        return rep
    prefix = len(calls)
    events = list(rep.related_at) + [None] * (len(rep.related) - len(rep.related_at))
    for (node, _note), ev in zip(rep.related, events):
        other = ev.ctx.calls if ev is not None else unit.calls_to(node)
        if other is None:
            continue
        n = 0
        while n < min(prefix, len(other)) and calls[n] is other[n]:
            n += 1
        prefix = n
    chain = [*calls[prefix:], rep.node]
    target = unit.module_of(chain[0])
    pick = chain[0]
    for node in chain[1:]:
        if unit.module_of(node) is not target:
            break
        pick = node
    if pick is rep.node:
        return rep
    original, message = rep.node, rep.message
    return Report(
        rep.code, pick, lambda d: f"via {d.call(pick)}: {message(d)}",
        [(original, "where it happens"), *rep.related], rep.note, rep.at, (rep.at, *events),
    )


def check_module(
    module: cst.Module, select: Collection[str] | None = None, index: ModuleIndex | None = None,
    memo: UnitMemo | None = None, interrupt: Callable[[], None] | None = None, reach: Collection[str] | None = None,
    dead_entry: Callable[[cst.FunctionDef], bool] | None = None,
) -> tuple[list[Report], dict]:
    """Run the selected rules (codes; ``None`` = all) over a parsed module: the reports placed
    in this module, and ``id(node) → module index`` for the nodes they name (``memo``,
    ``interrupt`` and ``reach``: as :func:`build_units`; ``interrupt`` is called
    before each unit's rules too).

    ``dead_entry``: whether an entry point's function never runs
    (:func:`~loopcheck.engine.unreferenced.never_runs`). A report of a unit read from such a
    function is dropped, wherever it lies, when one of the lines it names lies in that
    function (:func:`_cites_entry`): a function that runs may be called from the dead one with
    the values that make the finding (a scheduler built there and handed in the optimizer's
    place by a method of a class nothing instantiates), and those never reach it. A report
    whose lines all lie in the functions it calls stays: one of them may run from elsewhere
    (another module calls it) while only the dead function reads it here. The same report
    from another unit, whose entry runs, stays. Asked only of units that report."""
    reports: list[Report] = []
    where: dict = {}
    seen: set[tuple[str, int]] = set()
    rules = [r for code, r in REGISTRY.items() if _selected(code, select)]
    units = build_units(module, index, memo, interrupt, reach)
    for unit in units:
        if not unit.events:
            continue
        if interrupt is not None:
            interrupt()
        dead = None  # whether the unit's entry never runs, asked at its first report
        for rule in rules:
            for rep in rule.check(unit):
                rep = place(unit, rep)
                if unit.module_of(rep.node) is not unit.module:
                    continue  # it belongs to another module: reported when that one is checked
                if dead is None:
                    dead = unit.entry is not None and dead_entry is not None and dead_entry(unit.entry)
                if dead and _cites_entry(unit, rep):
                    continue  # what it names is done by code that never runs
                key = (rep.code, id(rep.node))
                if key not in seen:
                    seen.add(key)
                    reports.append(rep)
                    for node, _ in rep.related:
                        where[id(node)] = unit.module_of(node)
    if memo is None and not reports:  # nothing reads the units again (a report's events do)
        release(raw for unit in units for raw in walk_events(unit.ir))
    return reports, where


def _cites_entry(unit: Unit, rep: Report) -> bool:
    """Whether one of the lines ``rep`` names (its related nodes) lies in the function
    ``unit`` reads as its entry point (in its body, not in a function it calls)."""
    table = parents(unit.module)
    for node, _note in rep.related:
        if unit.module_of(node) is not unit.module:
            continue
        parent = table.get(node)
        while parent is not None and parent is not unit.entry:
            parent = table.get(parent)
        if parent is unit.entry:
            return True
    return False


class _Places(Describe):
    """Lines and source text of nodes in the checked module and in the other modules a
    finding's related lines lie in (``"12 of engine.py"``)."""

    def __init__(self, module: cst.Module, positions, where: dict, index: ModuleIndex | None, filename: str,
                 reported: list | None = None) -> None:
        super().__init__(module, positions)
        self.reported = reported or []  # the nodes the findings name (their positions come first)
        self.where = where
        self.index = index
        self.filename = filename
        self._others: dict[int, tuple] = {}

    def other(self, node) -> tuple | None:
        """``(index, module, line offset, positions)`` for a node of another module, else
        ``None``: the module is the other module's tree or, for one read statement by
        statement, the fragment that holds the node, whose lines come ``offset`` lines into
        the file (:class:`~loopcheck.engine.outline.LazyModuleIndex`)."""
        idx = self.where.get(id(node))
        if idx is None or idx is self.index:
            return None
        found = _tree_of(idx, node)
        if found is None or found[0] is self.module:
            return None  # (a text checked without a project is indexed apart: still this module)
        module, offset = found
        if id(module) not in self._others:
            first = [n for n in self.reported if self.where.get(id(n)) is idx and (_tree_of(idx, n) or (None,))[0] is module]
            self._others[id(module)] = (idx, module, offset, Positions(module, first))
        return self._others[id(module)]

    def relpath(self, idx) -> str:
        """The other module's file, as a path like the checked file's name."""
        base = os.path.dirname(self.filename)
        mine = Path(self.index.path).parent if self.index is not None and self.index.path else Path(base or ".").resolve()
        return os.path.normpath(os.path.join(base, os.path.relpath(str(idx.path), str(mine))))

    def line(self, node):
        other = self.other(node)
        if other is None:
            return super().line(node)
        return f"{other[3][node].start.line + other[2]} of {os.path.basename(str(other[0].path))}"

    def code(self, node, limit: int = 60) -> str:
        other = self.other(node)
        if other is None:
            return super().code(node, limit)
        text = " ".join(other[1].code_for_node(node).split())
        return text if len(text) <= limit else text[: limit - 3] + "..."

    def related(self, node, note: str) -> Related:
        other = self.other(node)
        if other is None:
            pos = self.positions[node]
            return Related(pos.start.line, pos.start.column + 1, note)
        pos = other[3][node]
        return Related(pos.start.line + other[2], pos.start.column + 1, note, self.relpath(other[0]))


def _tree_of(index, node) -> tuple[cst.Module, int] | None:
    """``(module, line offset)``: the tree of the module ``index`` that holds ``node`` and how
    many lines of the file come before it (0 but for a statement of an imported module parsed
    alone); ``None`` when there is none."""
    fragments = getattr(index, "fragments", None)
    if fragments is None:
        tree = getattr(index, "tree", None)
        return (tree, 0) if tree is not None else None
    table = parents(index)
    while node in table:
        node = table[node]
    return next(((module, offset) for module, offset in fragments if module is node), None)


def check_parsed(
    source: str, filename: str, select: Collection[str] | None = None, project: Project | None = None,
    parse: Callable[[str], cst.Module] | None = None, tables: dict | None = None,
    interrupt: Callable[[], None] | None = None,
) -> tuple[list[Finding], cst.Module | None, Mapping | None]:
    """:func:`check_source`, also returning the parsed module and its positions (both
    ``None`` when nothing was parsed or nothing found), so that fixes reuse them. A text that
    is not PyTorch code (:func:`uses_torch`) is parsed for ``LC001`` only, by CPython's parser
    (about ten times faster than LibCST's, in a fraction of its memory); a text one of whose
    top-level imports the project's files prove to fail
    (:func:`~loopcheck.engine.import_failure.failing_import`) gives no finding; nor does code
    that a top-level statement raising ``NameError`` keeps from running
    (:func:`~loopcheck.engine.import_raises.raising_statement`), code in a function nothing
    in the project refers to, and code reached only from such a function
    (:func:`~loopcheck.engine.unreferenced.never_runs`, asked of each report's node and of
    its unit's entry point: :func:`check_module`); a text with a
    NUL byte is ``LC001`` (CPython refuses it) without being parsed. ``parse``
    replaces :func:`~loopcheck.parsing.parse_module` (the language server's
    :meth:`Reparser.parse <loopcheck.server.reparse.Reparser.parse>`, which raises as it does;
    called before the import check, so that a check stopped there leaves the reparser this
    version's tree).

    ``tables`` (the language server's :attr:`Reparser.tables <loopcheck.server.reparse.Reparser.tables>`)
    holds the module index's per-node tables (:data:`~loopcheck.engine.builder.NODE_TABLES`)
    from the last check of the same document: its entries for the nodes the parse kept are
    used, and this check's entries are added to it; and, under ``"units"``, the entry points
    it built (a :class:`~loopcheck.engine.reuse.UnitMemo`), whose unchanged functions are
    taken again. ``interrupt``: as :func:`build_units` (also called once the text is parsed,
    and as the walks of the whole text before the parse, which imports fail, and after the
    checks, which statement raises, go: :func:`~loopcheck.engine.interrupts.interruptible`)."""
    nul = source.find("\0")
    if nul >= 0:  # CPython refuses the whole file, whatever it holds
        return _null_byte(source, nul, filename, select), None, None
    project = project or project_for(filename)
    signs = signs_of(source, filename, project)
    if signs is None:
        return [], None, None
    torch = uses_torch(source, filename, project)
    if not torch:  # not PyTorch code: CPython's parser says whether it is Python (LC001)
        return _python_syntax_error(source, filename, select), None, None
    if parse is not None:
        # the document's last tree spliced (cheap), before the walks of the whole text below:
        # a check stopped in them leaves this version's tree, and the next edit counts from it
        parse = _parsed_once(parse, source)
    with interruptible(interrupt):
        fails = failing_import(project, source, filename)
    if fails is not None:
        return [], None, None  # its import fails: none of its code runs (and it compiles)
    if torch and not signs.training and parse is None and tables is None and project is not None:
        if _silent_in_parts(source, filename, select, project, signs, interrupt):
            return [], None, None
    reindented = None  # the text's indentation as CPython counts it, when LibCST refused the text's own
    try:
        module = (parse or parse_module)(source)
    except cst.ParserSyntaxError as err:
        msg, (row, col), valid = _syntax_error(source, err)
        again = parse_reindented(source) if valid and not isinstance(err, TooDeeplyNested) else None
        if again is not None:
            module, reindented = again
            tables = None  # (a new tree: the last check's tables name none of its nodes)
        elif not _selected(SYNTAX_ERROR.code, select):
            return [], None, None
        elif valid:
            text = f"{msg or 'LibCST cannot parse this line of valid Python'}, so the file was not checked"
        else:
            text = f"SyntaxError: {msg}"
        if reindented is None:
            return [Finding(SYNTAX_ERROR.code, text, filename, row, col, row, col, [], row)], None, None
    if interrupt is not None:
        interrupt()
    index = None
    if project is not None:
        project.trim()  # between checks: the modules of the last ones stay, up to a size
        index = project.add(Path(filename), reindented.text if reindented else source, module=module, keep=False).index
    memo = None
    if tables is not None:
        index = index or index_module(module)
        for name in NODE_TABLES:
            index.cache[name] = tables.setdefault(name, {})
        memo = tables.get("units")
        if memo is None:
            memo = tables["units"] = UnitMemo()
    reach = None
    if not signs.training:
        index = index or index_module(module)
        reach = signs.entry_names(index.imports)
    if filename.endswith(".ipynb"):
        index = index or index_module(module)
        index.notebook = True  # (its cells bind names in any order: none is taken as unbound)
    dead_entry = None
    if project is not None and index is not None:
        def dead_entry(func: cst.FunctionDef) -> bool:
            return never_runs(project, index, func.body, parents(index))
    reports, where = check_module(module, select, index, memo, interrupt, reach, dead_entry)
    if reports and project is not None and index is not None:
        table = parents(index)
        reports = [rep for rep in reports if not never_runs(project, index, rep.node, table)]
    if reports and not filename.endswith(".ipynb"):
        # a top-level statement that raises NameError: the code after it, and the functions
        # nothing before it names, never run
        with interruptible(interrupt):
            raised = raising_statement(module)
        if raised is not None:
            table = parents(index) if index is not None else parent_table(module)
            reports = [rep for rep in reports if not never_reached(raised, module, rep.node, table)]
    if not reports:
        return [], None, None
    reported = [n for rep in reports for n in (rep.node, *(r for r, _ in rep.related))]
    mine = [n for n in reported if where.get(id(n)) in (None, index) or (_tree_of(where[id(n)], n) or (None,))[0] is module]
    positions = Positions(module, mine)
    d = _Places(module, positions, where, index, filename, reported)
    findings = []
    for rep in reports:
        rng = positions[rep.node]
        related = [d.related(n, note) for n, note in rep.related]
        findings.append(
            Finding(
                rep.code, rep.message(d), filename, rng.start.line, rng.start.column + 1,
                rng.end.line, rng.end.column + 1, related, rng.start.line,
                rep.note(d) if rep.note is not None else None,
            )
        )
    if reindented is not None:
        # the tree is of the re-indented text: columns go back to the file's, and no fix is
        # computed from it (``None``: a fix parses the file's own text, which LibCST refuses)
        findings = [_columns_back(f, reindented) for f in findings]
        findings.sort(key=lambda f: f.sort_key)
        return findings, None, None
    findings.sort(key=lambda f: f.sort_key)
    return findings, module, positions


def _parsed_once(parse: Callable[[str], cst.Module], source: str) -> Callable[[str], cst.Module]:
    """Parse ``source`` with ``parse`` now; the answer: a ``parse`` that gives that module, or
    raises what parsing it raised (a text being typed often does not parse: not twice)."""
    try:
        module = parse(source)
    except Exception as err:  # noqa: BLE001 - raised again where the text is parsed

        def again(_text: str) -> cst.Module:
            raise err

        return again
    return lambda _text: module


def _columns_back(finding: Finding, reindented: Reindented) -> Finding:
    """``finding``, placed in :attr:`Reindented.text`, with its columns (and those of its
    related lines in the same file) in the file's own text (:meth:`Reindented.column`)."""
    from dataclasses import replace

    related = [r if r.filename else replace(r, column=reindented.column(r.row, r.column)) for r in finding.related]
    return replace(
        finding, column=reindented.column(finding.row, finding.column),
        end_column=reindented.column(finding.end_row, finding.end_column), related=related,
    )


def _silent_in_parts(
    source: str, filename: str, select: Collection[str] | None, project: Project, signs: Signs,
    interrupt: Callable[[], None] | None,
) -> bool:
    """Whether a file that shows no training of its own gives no report when it is read
    statement by statement, as imported modules are
    (:class:`~loopcheck.engine.outline.LazyModuleIndex`): its own code and the functions that
    reach :meth:`Signs.entry_names` (all that :func:`build_units` builds of such a file), and
    what they call, are parsed with LibCST; the rest is not. ``False`` when it gives a report,
    or when a part it needs does not parse: then the caller parses the whole file and checks
    it again, for the findings' positions and fixes (and ``LC001``), with the same result.

    A text that is not valid Python, or nests too deeply, is left to the caller too. What it
    gives up: ``LC001`` for valid Python that LibCST cannot parse (``(pars): bool = True``)
    in a function the check does not need. Files with no training of their own are many, give
    no finding, and often need only part of their text parsed (a script whose ``main()`` calls
    everything still needs all of it)."""
    try:
        check_nesting(source)
    except cst.ParserSyntaxError:
        return False
    project.trim()
    index = project.add(Path(filename), source, keep=False, lazy=True, parse=False).index
    reach = signs.entry_names(index.imports) if index is not None else None
    if reach is None:
        return False
    reports, _where = check_module(None, select, index, None, interrupt, reach)
    return not reports and not index.unparsed


def check_source(
    source: str, filename: str, select: Collection[str] | None = None, project: Project | None = None,
) -> list[Finding]:
    """Check the text of one Python file, as part of its project.

    Args:
        source: the file's text.
        filename: the name to put in findings; when it names a file on disk, the modules of
            its project that it imports are read from disk too.
        select: rule codes to run (``None``: all).
        project: the project to read imported modules from (default: the file's own,
            shared by every check of this process).

    Returns:
        Findings sorted by position. A file that does not parse gives one ``LC001``
        finding at the error; this function does not raise on bad input. A file that is not
        PyTorch code (:func:`uses_torch`: it imports no package built on PyTorch, directly or
        through the project's modules) gives no other finding; nor does a file whose import
        provably fails (:func:`~loopcheck.engine.import_failure.failing_import`: its code never
        runs).
    """
    return check_parsed(source, filename, select, project)[0]
