"""Functions of a program that nothing in its project refers to: their code never runs.

A finding is a claim about what happens when the code runs. A function is read as an entry
point of its own when no one in its module calls it (:func:`loopcheck.analysis.build_units`),
which is right for a library's public function or a snippet, but a script's helper whose one
call was commented out (``# train()``), or a private method nobody calls, never runs, and
a finding in it names a harm that does not happen. :func:`never_runs` says so for a node of
the checked module, when it lies in such a function (or a method or nested function of one).

A function ``f`` (a module-level function, a nested one, or a method of a class all of whose
bases are classes of the project) is taken to be unreferenced when:

* its module is one whose functions only the project calls: a script (it has an
  ``if __name__ == "__main__":`` block), or ``f``'s name is private (``_f``), or the module is
  imported by another module or a notebook (``from helpers import *``,
  :func:`_notebook_importers`) of the project and no packaging metadata (``setup.py``,
  ``setup.cfg``, ``pyproject.toml``) may install it (:func:`_packaged`: none, or a
  ``setup.py`` whose listed packages leave out its folder, which has no ``__init__.py``), so
  nothing outside the project imports it, or the module is one nothing in the project runs
  (:func:`_nothing_runs`, below);
* ``f`` is not decorated, not a dunder, and its class (for a method) is not decorated;
* no Python file of the project (``.py``, under the project root, as
  :func:`loopcheck.engine.callers.project_files` lists them, and those under ``env/``,
  ``build/``, ``dist/`` folders that are no virtualenv, :data:`CODE_IN_SKIPPED`) that is
  ``f``'s own file, imports its module, or (for a method) holds a class the method's class
  derives from (whose methods call it through ``self``: an override of ``_epoch_test`` that
  the base's ``train()`` runs), or imports, through a chain of modules, one that imports its
  module (where a subclass may call a method through ``self``), or (for a method) may hold an
  instance of its class (:func:`_method_files`: any file, since an object goes wherever it is
  passed; for a script that no module imports, the files its process loads,
  :func:`_process_files`, unless it may load modules its configuration names: Hydra,
  ``pydoc.locate``, entry points) names it, as a name or as a string that is exactly the name
  (``getattr(self, "evaluate")``; for a method, a ``def`` of that name in another file defines
  its own; for a module-level function, a bare name ``f`` in a file that binds ``f`` at its own
  top level, a ``def f`` of its own, and takes ``f`` by no ``from`` import of a project module
  nor by a star import that may bind it, is that file's own ``f`` as Python's scoping reads
  it: only ``mod.f`` or a string names the function there, :func:`_binds_own`), comments
  aside; the packaging files do not name it
  (``console_scripts``); a notebook of the project does not name it (for a module-level
  function: in a code cell of a notebook that may reach its module, :func:`_notebook_reaches`,
  by importing or running it or a module that imports it; a markdown cell's word, or another
  notebook's own ``train``, does not); no line of a shell
  script, configuration or document of the project (:data:`TEXT_SUFFIXES`) names it through
  its module (:func:`_names_through_module`: a Hydra ``_target_: train.f``, ``python -c "from
  train import f; f()"``, ``python -m fire train f``, a README's ``from utils import f``). Such
  a file can run ``f`` only through its module: a line that names ``f`` alone (``--mode
  train``, a vocabulary's ``train``, a sibling folder's ``python train.py``) does not;
* neither ``f``'s module nor a file whose namings count looks names up at run time
  (:func:`_dynamic`: ``eval``, ``exec`` called, not a method defined by that name: ``def
  eval(self):``, ``fire.Fire``; for a function ``globals()``, ``locals()``, ``vars()``,
  ``importlib``, ``__import__`` and ``getattr`` with a computed name on a module; for a
  method, ``getattr`` with a computed name on any object but a library's, a class's namespace
  read by a computed key), and no file in ``f``'s folder or a folder above it that names the
  module imports modules by computed names.

A module nothing in the project runs (:func:`_nothing_runs`) is one of a project of scripts
(another of its Python files has a main block) without packaging metadata, that has no main
block itself, that is not a package's ``__init__.py``, and that no file of the project may
import or run (:func:`_module_named`): no Python file imports it (directly, by a relative
import, ``from pkg import mod``, ``import pkg.mod``, a star import of a package whose
``__init__.py`` names it); none imports a module of its name that the project resolves
nowhere, or resolves elsewhere while a file moves ``sys.path`` or a text sets
``PYTHONPATH`` (a folder added to the search path may hold it: ``from trainer import
Trainer`` in ``gan_a/main.py`` may be ``gan_a/trainer.py``, not ``gan_b/trainer.py``); none
runs modules by computed names or by their files (``importlib``, ``runpy``, ``pkgutil``,
``exec``) in a way that may reach it (:func:`_computed_loads`: a computed name that begins
with ``"engines."`` loads only modules of a package ``engines``); its package's
``__init__.py`` does not name it; no Python file, notebook, shell script, configuration or
document names its file (``python gan_b/trainer.py``, ``%run trainer.py``) or its module
(``python -m gan_b.trainer``, ``from trainer import Trainer``, a Hydra ``_target_``)
(:func:`_names_module`); and its name is not one unittest's discovery collects
(``test*.py``). Its functions and classes then run only when its own top level names them
(counted as for any module) or when something outside the project imports it, which is
given up: a project of scripts runs its modules from its scripts. A project without a script
(a library, a folder of snippets) is run from outside, and its modules nothing imports keep
their findings. Packaging metadata, framework lookups by name (entry points, Hydra's
``_target_``), pytest's modules and decorated code are not decided, as for any module.

A Python file of the project that CPython cannot compile, for a reason that is not an older
or newer Python's syntax (:func:`_compiles`), runs nothing: its namings do not count, and
nothing imports through it (a module that imports it fails at that import).

A string literal whose value is a module-level function's name names it only in code that
may look names up by a string (:func:`_looks_up_names`: ``getattr``, ``__dict__``,
``__all__``, ``globals()``, ``eval``, ``fire``, ...); elsewhere ``split == 'train'`` or
``os.path.join(root, 'train')`` is data. A star import makes the module's names available
and calls none of them: what counts is a naming in the importer's code. A naming counts in
every expression of the code, an f-string's replacement fields and nested format specs
included (``print(f"{evaluate(model)}")``: :func:`_named`, :func:`_fstring_fields`); a
string annotation (``x: "evaluate"``) names a type and calls nothing, and counts only as any
string literal does.

A module-level class ``C`` is taken to be unreferenced, and then none of its methods
(instance, class or static) runs, since no instance of it exists and nothing holds the class,
on the same conditions applied to its name (:func:`_class_unreferenced`): its module is a
script, ``C`` is private, the module is imported in a project without packaging metadata,
or nothing in the project runs it; ``C`` has no decorator, no metaclass, and a body that hands none of its functions out (a
method decorated but by ``staticmethod``, ``classmethod`` or ``property``, a statement that
names one); each base is ``object``, a class of the project (up its chain), or a library
class that loopcheck's knowledge describes (``[[class]]``: ``torch.nn.Module``) and no
``[[driver]]`` runs (an unknown base, ``unittest.TestCase``, may find its subclasses by
itself); its own file names it nowhere outside its own body (``super(C, self)`` runs only once
it exists; a ``from M import C as B`` of another module ``M`` reads ``M.C`` and names no class
of this file, :func:`_named`'s ``own``); no file that imports the module, directly or through a chain of modules (a
subclass, an instance, a re-export), names it, as a name, a string, or an attribute of one
of those modules (``pdf.C``, ``mid.C``; another object's attribute, ``model.fc``, is not the
class), and none looks names up at run time; no packaging file, notebook or text names it as
for a function.

Code that no path reaches names nothing that runs: the statements of a block after one that
ends every path of it (``return``, ``raise``, ``sys.exit()``, a name nothing binds, a call of a
project function whose arguments cannot bind: ``setup(args, log)`` for ``def setup(args, log,
num_classes)`` raises ``TypeError``), in every build of that block
(:meth:`loopcheck.engine.builder.UnitBuilder.unreached_statements`). A ``train(args, model)``
there does not call ``train``: its namings count as those in a nested function that never runs
(:func:`_dead_nested_outermost`).

A function defined in another function's body runs only when that body names it (calls it,
returns it, stores it): one it never names (a ``def train`` indented into ``__init__`` by
mistake) never runs, decided from the checked file alone (:func:`_nested_never_called`), and
the namings inside it do not count for the module's other functions. Nor do the namings
inside the body of a module-level function that never runs itself: a module-level function
its module names only inside such bodies (its own ``def`` and recursive calls included) never
runs, decided as the greatest set of such functions, each meeting the conditions above that
other files decide (:func:`_dead_module_functions`: one called only from a function nothing
calls, a chain of them, two that only call each other). A naming in another module's
function that never runs still counts (not followed). A module pytest collects
(:func:`_pytest_collects`: by the project's pytest configuration, ``python_files``) is not decided: the test runner calls its functions by name.

An entry point of the checked module read from a function that never runs (a method of a
class nothing builds, a private function nothing calls) runs nothing, not even the functions
it calls: :func:`loopcheck.analysis.check_module` asks :func:`never_runs` of each entry
point's function (the first time its unit reports) and drops that unit's reports that name a
line of the entry's own body, those placed in a function that runs too. A function that runs
may be called from a dead one with the values that make a finding (a scheduler built there
and handed in the optimizer's place by a method of a private class nothing instantiates);
those values never reach it. A report whose named lines all lie in the functions the dead
entry calls stays: one of them may run from another module that calls it, while only the dead
entry reads it in its own module. The same report made by another entry point, one that runs,
stays.

A notebook (``.ipynb``) is never imported: a top-level function of it runs only when one of
its cells names it, or when another file runs the notebook in its own namespace (``%run``)
and names it, or when the notebook runs a file in its own namespace (``%run -i``, ``%load``:
not decided) (:func:`_uncalled_in_notebook`); one nothing names that way never runs.

What is given up: a function called only from outside the project (a user's notebook kept
elsewhere) by a script's or a private name. A text file larger than :data:`MAX_TEXT_BYTES`
(a data set's annotations, a vocabulary) is not read; more than
:data:`~loopcheck.engine.callers.MAX_FILES` text files, and nothing is decided.
"""

from __future__ import annotations

import ast
import configparser
import fnmatch
import io
import os
import re
import tokenize
from pathlib import Path

import libcst as cst

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib  # type: ignore[no-redef]

from loopcheck.engine.callers import MAX_FILES, SKIP_DIRS, project_files
from loopcheck.engine.knowledge import knowledge

#: Files whose text may name a function to run (an entry point): any mention counts.
_PACKAGING = ("setup.py", "setup.cfg", "pyproject.toml")
#: Files other than Python whose text may name a function to run: notebooks, shell scripts,
#: configurations (Hydra's ``_target_``, ``tox.ini``-like ``.cfg``), documentation of usage.
TEXT_SUFFIXES = (".sh", ".yaml", ".yml", ".json", ".cfg", ".toml", ".txt", ".md", ".rst")
#: Text files larger than this many bytes are not read (data, not a configuration).
MAX_TEXT_BYTES = 1 << 20
#: Signs that a module looks names up at run time (a call, not a method's definition:
#: ``def eval(self):`` of a model calls no builtin ``eval``).
_DYNAMIC = re.compile(r"(?<![.\w])(?<!def )(?:globals\(\)|locals\(\)|vars\(\)|eval\(|exec\(|__import__\()|\bimportlib\b|\bFire\(")
#: ``getattr(obj, name...``: the object, and whether the name is one string literal
_GETATTR = re.compile(r"""(?<![.\w])getattr\(\s*([^,()]+?)\s*,\s*(?:(['"])\w*\2\s*[,)])?""")
#: Ways to reach a method by a computed name other than ``getattr``: ``operator.attrgetter``,
#: ``methodcaller`` with a name that is not one string literal; a class's or object's
#: namespace read by a computed key (``vars(cls)[name]``, ``type(obj).__dict__[name]``) or
#: walked by ``inspect.getmembers(obj)`` (``"%(msg)s" % record.__dict__`` calls no method).
_NAMESPACE = re.compile(
    r"""(?<![\w])(?:attrgetter|methodcaller)\(\s*(?!(['"])\w*\1\s*[,)])"""
    r"""|(?:(?<![.\w])vars\([^()\n]+\)|\b__dict__)\s*\[\s*(?!['"])"""
    r"|\bgetmembers\(")
#: Signs that a module imports modules by computed names.
_DYNAMIC_IMPORT = re.compile(r"\bimportlib\b|(?<![.\w])__import__\(")
#: Signs that a Python file runs or imports other modules' code by computed names or by
#: their files' paths: computed imports, ``runpy``, ``pkgutil``'s walks, ``exec``/``execfile``
#: (of a file read), :mod:`imp` (``imp.load_source``, ``from imp import load_source``), and
#: the loaders of :mod:`importlib.util` and :mod:`importlib.machinery` by their own names
#: (``spec_from_file_location``, ``module_from_spec``, ``spec.loader.exec_module``,
#: ``SourceFileLoader(...).load_module()``), which a ``from importlib.util import ...`` line
#: lets a file call without the word ``importlib``.
_RUNS_MODULES = re.compile(
    r"\bimportlib\b|(?<![.\w])__import__\(|\brunpy\b|\bpkgutil\b|\bimp\.\w|^[ \t]*(?:import|from)[ \t]+imp\b"
    r"|\b(?:spec_from_file_location|spec_from_loader|module_from_spec|exec_module|load_module"
    r"|load_source|SourceFileLoader|SourcelessFileLoader|ExtensionFileLoader)\b"
    r"|(?<![.\w])(?<!def )exec(?:file)?\(", re.M)
#: The files pytest collects when the project's configuration does not say
#: (``python_files = test_*.py *_test.py``): :func:`_pytest_collects`.
PYTEST_DEFAULT_FILES = ("test_*.py", "*_test.py")
_MAIN = re.compile(r"""^if\s+__name__\s*==\s*['"]__main__['"]\s*:""", re.M)


def never_runs(project, index, node: cst.CSTNode, table: dict) -> bool:
    """Whether ``node`` of the checked module lies in a function that nothing in the project
    refers to (see the module docstring).

    Args:
        project: the :class:`~loopcheck.engine.project.Project` of the checked file (``None``:
            nothing is decided).
        index: the checked module's index (its ``path`` is the file).
        node: a syntax node of the checked module (a finding's).
        table: ``node → parent`` for the checked module
            (:func:`loopcheck.engine.values.parents`).
    """
    dead_memo = index.cache.setdefault("unreferenced_nested", {}) if index is not None else {}
    for func, _cls in _enclosing_functions(node, table):
        key = id(func)
        if key not in dead_memo:
            dead_memo[key] = _nested_never_called(func, table)
        if dead_memo[key]:
            return True
    if project is None or index is None or index.path is None:
        return False
    if str(index.path).endswith(".ipynb"):
        memo = index.cache.setdefault("unreferenced.notebook", {})
        for func, cls in _enclosing_functions(node, table):
            if id(func) not in memo:
                memo[id(func)] = cls is None and _uncalled_in_notebook(project, index, func, table)
            if memo[id(func)]:
                return True
        return False
    # kept with the checked module's index: its functions and this check's reading of the
    # project (another check, after an edit, reads them again)
    memo = index.cache.setdefault("unreferenced", {})
    for func, cls in _enclosing_functions(node, table):
        key = id(func)
        if key not in memo:
            memo[key] = _unreferenced(project, index, func, cls, table)
        if memo[key]:
            return True
        # a method of a module-level class that nothing instantiates nor names: no instance
        # of it exists and nothing holds the class, so none of its methods runs
        if cls is not None and type(table.get(cls)) is cst.Module:
            key = id(cls)
            if key not in memo:
                memo[key] = _class_unreferenced(project, index, cls)
            if memo[key]:
                return True
    return False


#: A notebook's ``%run`` (a line magic, or IPython's rewriting of it): it runs another file in
#: the notebook's namespace, whose functions the notebook may then call.
_RUN_MAGIC = re.compile(r"%run\b|run_line_magic\(\s*['\"]run['\"]")
#: A notebook's ``%run`` (:data:`_RUN_MAGIC`) or ``%load`` of a file: the file's code runs in
#: the notebook's namespace (``%run -i``, or a cell ``%load`` fills), where it may call the
#: notebook's functions.
_RUNS_FILE = re.compile(r"%(?:run|load)\b|run_line_magic\(\s*['\"](?:run|load)['\"]")


def _uncalled_in_notebook(project, index, func: cst.FunctionDef, table: dict) -> bool:
    """Whether the top-level function ``func`` of the checked notebook (``index.path`` ends in
    ``.ipynb``) never runs: a notebook is never imported, so its function runs only when a cell
    of the notebook names it (a call, or a reference handed to something that calls it), or
    when another file runs the notebook in its own namespace and then names it.

    Decided when ``func`` is a module-level ``def`` (not a method, not inside a block), not
    decorated nor a dunder; the notebook's whole text, every cell (magics, shell escapes,
    commented-out lines included), markdown and output (its JSON's strings, decoded:
    :func:`_notebook_text`), names it only once, by its ``def``; the notebook's code looks no
    names up at run time (:func:`_dynamic`); and no other file of the project (a Python file,
    a notebook, a shell script, configuration or document, :func:`_listing`) that names the
    function also names the notebook (``%run sparse_loss.ipynb``, an import of it through a
    notebook importer) or may run files by computed names (:data:`_RUNS_MODULES`, a ``%run``);
    and the notebook itself runs no file in its namespace (:data:`_RUNS_FILE`: ``%run -i
    experiment.py``, ``%load``, whose code may call the function). Anything that cannot be
    listed or read: not decided.

    Args:
        project: the checked notebook's :class:`~loopcheck.engine.project.Project`.
        index: the notebook program's index (its ``path`` is the ``.ipynb`` file).
        func: a function definition of the notebook's program, around a finding.
        table: ``node → parent`` for the notebook's program.
    """
    name = func.name.value
    if type(table.get(func)) is not cst.Module or func.decorators or (
            name.startswith("__") and name.endswith("__")):
        return False
    path = Path(index.path).resolve()
    own = _notebook_text(project, path)
    word = re.compile(rf"\b{re.escape(name)}\b")
    if own is None or len(word.findall(own)) != 1 or _dynamic(own, False) or _RUNS_FILE.search(own):
        return False  # (a file the notebook runs in its namespace may call it: ``%run -i``)
    files, notebooks, texts = _listing(index, Path(project.root))
    if files is None or texts is None:
        return False
    notebook = re.compile(rf"\b{re.escape(path.stem)}\b")

    def runs_it(text: str) -> bool:
        return name in text and word.search(text) is not None and (
            notebook.search(text) is not None or _RUN_MAGIC.search(text) is not None
            or _RUNS_MODULES.search(text) is not None)

    for file in [*files, *notebooks, *texts]:
        if file.resolve() == path:
            continue
        if file.suffix not in (".ipynb", ".py"):
            found = _text_fact(project, file, ("notebook caller", name, path.stem), runs_it)
            if found is None or found:
                return False
            continue
        text = _notebook_text(project, file) if file.suffix == ".ipynb" else _text(project, file)
        if text is None or runs_it(text):
            return False
    return True


def _notebook_text(project, path: Path) -> str | None:
    """Every string of the notebook file ``path``'s JSON (cells' sources, markdown, outputs,
    metadata), decoded and joined by newlines: a name a cell holds is then a word of it,
    whatever escapes the JSON wrote (``"1\\nf(x)"``). The file's text when it is not JSON;
    ``None`` when it cannot be read. Kept in ``project.memo`` for the file's one current
    version (:func:`~loopcheck.engine.project.file_stamp`, replaced when it changes) once it
    has :func:`~loopcheck.engine.project.settled`: a file just written may change again
    without changing its stamp."""
    import json

    from loopcheck.engine.project import file_stamp, settled

    try:
        stamp = file_stamp(path.stat())
    except OSError:
        return None
    memo = project.memo.setdefault("unreferenced.notebook_text", {})
    kept = memo.get(path)
    if kept is not None and kept[0] == stamp:
        return kept[1]
    try:
        raw = path.read_bytes().decode("utf-8", "replace")
    except OSError:
        return None
    try:
        data = json.loads(raw)
    except ValueError:
        text = raw
    else:
        strings: list[str] = []
        stack = [data]
        while stack:
            item = stack.pop()
            if isinstance(item, str):
                strings.append(item)
            elif isinstance(item, dict):
                stack.extend(item.keys())
                stack.extend(item.values())
            elif isinstance(item, list):
                stack.extend(item)
        strings.reverse()
        text = "\n".join(strings)
    if settled(stamp):
        memo[path] = (stamp, text)
    else:
        memo.pop(path, None)
    return text


def _text_fact(project, file: Path, question, answer, limit: bool = True) -> bool | None:
    """``answer(text)`` for the text file ``file`` (a shell script, configuration, document or
    notebook, its bytes decoded with the undecodable ones replaced); ``False`` without reading
    it when ``limit`` and it is larger than :data:`MAX_TEXT_BYTES`; ``None`` when it cannot be
    read. Each answer is kept in ``project.memo`` by ``question`` (a key naming what
    ``answer`` asks) for the file's one current version
    (:func:`~loopcheck.engine.project.file_stamp`, once it has
    :func:`~loopcheck.engine.project.settled`): a check after an edit of a module does not
    read every text file of the project again for each of its functions."""
    from loopcheck.engine.project import file_stamp, settled

    try:
        st = file.stat()
    except OSError:
        return None
    if limit and st.st_size > MAX_TEXT_BYTES:
        return False
    stamp = file_stamp(st)
    memo = project.memo.setdefault("unreferenced.text_facts", {})
    kept = memo.get(file)
    if kept is None or kept[0] != stamp:
        kept = (stamp, {})
        if settled(stamp):
            memo[file] = kept
        else:
            memo.pop(file, None)
    facts = kept[1]
    if question not in facts:
        try:
            text = file.read_bytes().decode("utf-8", "replace")
        except OSError:
            return None
        facts[question] = bool(answer(text))
    return facts[question]


class _NameCount(cst.CSTVisitor):
    """Counts the ``Name`` nodes spelling one name (other than one node left out), and the
    string literals whose value is exactly the name (unless ``strings`` is false); with
    ``bare``, not a name after a ``.`` (as :func:`_named` counts them)."""

    def __init__(self, name: str, skip: cst.Name | None, bare: bool = False, strings: bool = True) -> None:
        self.name, self.skip, self.bare, self.strings, self.count = name, skip, bare, strings, 0

    def visit_Attribute(self, node: cst.Attribute) -> bool:
        if self.bare:
            node.value.visit(self)
            return False  # the member's name is not the bare name
        return True

    def visit_Name(self, node: cst.Name) -> None:
        if node.value == self.name and node is not self.skip:
            self.count += 1

    def visit_SimpleString(self, node: cst.SimpleString) -> None:
        if self.strings and node.value.strip("rRbBuUfF").strip("'\"") == self.name:
            self.count += 1


def _names_in_dead_nested(index, table: dict, name: str, bare: bool, strings: bool = True) -> int:
    """How many times the checked module names ``name`` in code that never runs
    (:func:`_dead_nested_outermost`: functions that :func:`_nested_never_called` finds never
    run, statements no path reaches), counted as :func:`_named` counts, string literals only
    with ``strings``: a call from there does not run."""
    count = 0
    for region in _dead_nested_outermost(index, table):
        counter = _NameCount(name, None, bare, strings)
        region.visit(counter)
        count += counter.count
    return count


def _dead_nested_outermost(index, table: dict) -> list:
    """The code of the checked module that never runs, the outermost pieces only (one inside
    another is visited with it, and its names must not be counted twice); kept for the check
    of the module:

    * the functions that :func:`_nested_never_called` finds never run;
    * the statements of the checked module that no build of the units reached
      (:meth:`~loopcheck.engine.builder.UnitBuilder.unreached_statements`, left in the index's
      cache as ``"unreached"`` by :func:`loopcheck.analysis.build_units`): each follows, in
      its block, a statement that ends every path (``return``, ``raise``, ``sys.exit()``, a
      call of a project function whose arguments cannot bind, a name nothing binds).
    """
    memo = index.cache.setdefault("unreferenced_dead_nested", {})
    dead = memo.get("functions")
    if dead is None:
        found = [n for n in table if type(n) is cst.FunctionDef and _nested_never_called(n, table)]
        found += [n for n in index.cache.get("unreached", ()) if n in table]
        ids = {id(n) for n in found}
        dead = memo["functions"] = [n for n in found if not _inside_any(n, ids, table)]
    return dead


def _inside_any(node, ids: set[int], table: dict) -> bool:
    """Whether a node whose ``id()`` is in ``ids`` encloses ``node`` (``table``: ``node →
    parent``)."""
    parent = table.get(node)
    while parent is not None:
        if id(parent) in ids:
            return True
        parent = table.get(parent)
    return False


def _nested_never_called(func: cst.FunctionDef, table: dict) -> bool:
    """Whether ``func`` is defined in another function's body that never names it: its name is
    a local variable of that function alone, so nothing can call it (a ``def train`` indented
    into ``__init__`` by mistake is not the class's method, and ``obj.train()`` calls something
    else). Decided without the project: not for a decorated ``func`` (a decorator may register
    it), nor when the enclosing function looks names up at run time (``locals()``, ``eval``).

    Args:
        func: a function definition of the checked module.
        table: ``node → parent`` for the checked module.
    """
    block = table.get(func)
    outer = table.get(block)
    if type(outer) is not cst.FunctionDef or func.decorators:
        return False
    # the local is read by its bare name only (``self.model.train()`` is another object's)
    counter = _NameCount(func.name.value, func.name, bare=True)
    outer.body.visit(counter)
    if counter.count:
        return False
    dynamic = _NameCount("", func.name, bare=True)
    for name in ("locals", "vars", "eval", "exec"):
        dynamic.name = name
        outer.body.visit(dynamic)
    return dynamic.count == 0


def _enclosing_functions(node, table: dict):
    """``(function, its class or None)`` for each function around ``node``, innermost first."""
    parent = table.get(node)
    while parent is not None:
        if type(parent) is cst.FunctionDef:
            owner = table.get(table.get(parent))  # FunctionDef -> IndentedBlock -> ClassDef
            yield parent, owner if type(owner) is cst.ClassDef else None
        parent = table.get(parent)


def _unreferenced(project, index, func: cst.FunctionDef, cls: cst.ClassDef | None, table: dict) -> bool:
    """Whether function ``func`` of the checked module (a method when ``cls``, its class, is
    given) is one nothing in the project refers to, on the conditions of the module
    docstring: those nothing in its own module decides (:func:`_unreferenced_elsewhere`),
    and its own module names it only by its ``def``, namings in functions that never run
    aside: nested functions that never run (:func:`_names_in_dead_nested`) and, for a
    module-level function, the module-level functions that never run themselves, to a fixed
    point (:func:`_dead_module_functions`: a function called only from a function nothing
    calls never runs). ``False`` (not decided) when anything cannot be listed or read.

    Args:
        project: the checked module's :class:`~loopcheck.engine.project.Project`.
        index: the checked module's index (its ``path`` is the file).
        func: a function definition of the checked module, around a finding.
        cls: the class ``func`` is a method of, or ``None``.
        table: ``node → parent`` for the checked module.
    """
    name = func.name.value
    if func.decorators or (name.startswith("__") and name.endswith("__")):
        return False
    read = _reading(project, index)
    if read is None:
        return False
    path, _root, _files, _notebooks, own, _texts = read
    # its own definition names it once; namings inside a nested function that never runs do
    # not call it (a module function called only from a ``def`` indented into ``__init__``)
    # a module-level function is named by a string only where the module may look it up by one
    strings = cls is not None or _looks_up_names(own)
    named = _named(own, name, bare=cls is None, own=_stem(path), strings=strings)
    if named > 1 and named - _names_in_dead_nested(index, table, name, cls is None, strings) > 1:
        if cls is not None or type(table.get(func)) is not cst.Module:
            return False
        # named by other module-level functions: dead when each of them is (transitively)
        return func in _dead_module_functions(project, index, func, table)
    return _unreferenced_elsewhere(project, index, func, cls, table)


def _unreferenced_elsewhere(project, index, func: cst.FunctionDef, cls: cst.ClassDef | None, table: dict) -> bool:
    """The conditions of :func:`_unreferenced` that the checked module's own namings of
    ``func`` do not decide: it is neither decorated nor a dunder, nor a method of a
    decorated class, a class with a metaclass or keywords, or one with a base outside the
    project (:func:`_project_bases`); the module and the files whose namings count look no
    names up at run time (:func:`_dynamic_file`); the module is a script, ``func`` is
    private, the module is imported in a project without packaging metadata, or nothing in
    the project runs it (:func:`_nothing_runs`); no file that imports the module (for a
    method, through a chain of modules, :func:`_importers_closure`), that holds a base class,
    or that may hold an instance (:func:`_method_files`) names it (for a module-level function,
    a bare name in a file that binds it itself is the file's own: :func:`_binds_own`); and no
    packaging file,
    notebook or text names it (:func:`_named_outside_code`). ``False`` (not decided) when
    anything cannot be listed or read. Kept per function for the check of the module.

    Args: as :func:`_unreferenced`'s.
    """
    memo = index.cache.setdefault("unreferenced.elsewhere", {})
    key = id(func)
    if key not in memo:
        memo[key] = _unreferenced_elsewhere_now(project, index, func, cls, table)
    return memo[key]


def method_naming_files(project, index, func: cst.FunctionDef, cls: cst.ClassDef,
                        library_bases: bool = False) -> list[Path] | None:
    """The project's Python files whose code may call method ``func`` of module-level class
    ``cls`` of the module ``index``, its own file first, when only the project's code can
    call it: the conditions of :func:`_unreferenced_elsewhere` on the method (no decorator,
    no dunder, bases in the project, no file looking names up at run time, a script's or a
    private name or a module of a project without packaging metadata) and no packaging file,
    notebook or text naming it (:func:`_named_outside_code`). The files Python cannot compile
    run nothing and are left out. ``None`` when any of it is not decided.

    With ``library_bases``, a base may also be a library class the knowledge describes and
    that no framework of it runs (``torch.nn.Module``: :func:`_project_bases` with
    ``known_library``), when the method's name is public and no method of that class's entry
    (through its bases) has it: such a class's code calls by name only its own methods and
    hooks (``forward``, ``extra_repr``, ``_load_from_state_dict``), never a name it does not
    know."""
    name = func.name.value
    if func.decorators or (name.startswith("__") and name.endswith("__")):
        return None
    libraries: list[str] = []
    bases = _project_bases(index, cls, known_library=library_bases, libraries=libraries)
    if cls.decorators or cls.keywords or bases is None:
        return None
    if libraries and (name.startswith("_") or any(knowledge().method(lib, name) is not None for lib in libraries)):
        return None  # a library base may call it (an override of its method or hook)
    found = _method_module_reading(project, index)
    if found is None:
        return None
    read, importers = found
    path, root, files, notebooks, own, texts = read
    if not (_MAIN.search(own) or name.startswith("_")
            or ((importers or _notebook_importers(project, read)) and not _packaged(project, root, path))
            or _nothing_runs(project, index, read, importers)):
        return None
    callers = _method_files(project, index, read, importers)
    if callers is None:
        return None
    out = [path]
    for file in dict.fromkeys([*importers, *bases, *callers]):
        if file == path:
            continue
        text = _text(project, file)
        if text is None or _dynamic_file(project, index, file, text, True):
            return None
        if _compiles(project, file):
            out.append(file)
    if _named_outside_code(root, notebooks, texts, name, (_stem(path), cls.name.value), project):
        return None
    return out


def _method_module_reading(project, index) -> tuple[tuple, list[Path]] | None:
    """``(reading, importers)`` of the module ``index`` for :func:`method_naming_files`: its
    :func:`_reading`, and the files that import it directly or through a chain of modules
    (:func:`_importers_closure`); ``None`` when a reading cannot be had or the module looks
    names up at run time. The same for every method of the module: kept in its cache."""
    memo = index.cache
    if "unreferenced.method_reading" not in memo:
        memo["unreferenced.method_reading"] = _method_module_reading_now(project, index)
    return memo["unreferenced.method_reading"]


def _method_module_reading_now(project, index) -> tuple[tuple, list[Path]] | None:
    """:func:`_method_module_reading`, not kept."""
    read = _reading(project, index)
    if read is None:
        return None
    path, _root, files, _notebooks, own, _texts = read
    if _dynamic_file(project, index, path, own, True):
        return None
    importers = _importers(project, index, files, path)
    if importers is None:
        return None
    importers = _importers_closure(project, index, files, path, importers)
    if importers is None:
        return None
    return read, importers


def _unreferenced_elsewhere_now(project, index, func: cst.FunctionDef, cls: cst.ClassDef | None, table: dict) -> bool:
    """:func:`_unreferenced_elsewhere`, not kept."""
    name = func.name.value
    if func.decorators or (name.startswith("__") and name.endswith("__")):
        return False
    bases: list = []
    if cls is not None:
        bases = _project_bases(index, cls)
        if cls.decorators or cls.keywords or bases is None:
            return False  # a library base may call any of its methods by name
    read = _reading(project, index)
    if read is None:
        return False
    path, root, files, notebooks, own, texts = read
    if _dynamic_file(project, index, path, own, cls is not None):
        return False
    packaged = _packaged(project, root, path)
    importers = _importers(project, index, files, path)
    if importers is None:
        return False
    if cls is not None:
        # a subclass in a module that imports an importer (``from engine.adv_train import *``
        # for a class deriving from one of ``base_trainer.py``) calls it through ``self`` too
        importers = _importers_closure(project, index, files, path, importers)
        if importers is None:
            return False
    if not (_MAIN.search(own) or name.startswith("_")
            or ((importers or _notebook_importers(project, read)) and not packaged)
            or _nothing_runs(project, index, read, importers)):
        return False
    # the files that import the module, and for a method those of the classes it derives
    # from, whose methods call it through ``self`` (a base's ``self._epoch_test(...)`` runs
    # the override), and any code that may hold an instance (an object goes wherever it is
    # passed: ``run(trainer)`` in a module that does not import the class's may call
    # ``trainer.valid()``)
    callers: list[Path] | None = []
    if cls is not None:
        callers = _method_files(project, index, read, importers)
        if callers is None:
            return False
    for file in dict.fromkeys([*importers, *(b for b in bases if b != path), *callers]):
        if file == path:
            continue
        text = _text(project, file)
        if text is None:
            return False
        if not _compiles(project, file):
            continue  # a file Python cannot compile runs nothing
        strings = cls is not None or _looks_up_names(text)
        if _dynamic_file(project, index, file, text, cls is not None):
            return False
        if _named(text, name, defs=cls is None, strings=strings) and (
                cls is not None or not _binds_own(project, file, text, name)
                or _named(text, name, strings=strings, unqualified=False)):
            # (a bare name of a file that binds it itself reads its own: ``mod.f`` counts)
            return False
    owners = (_stem(path),) + ((cls.name.value,) if cls is not None else ())
    reach = None
    if cls is None:
        # the modules through which a notebook may reach a module-level function: its own, and
        # those that import it, directly or through others (``from utils import *`` of a
        # ``utils.py`` that star-imports it)
        reach = _importers_closure(project, index, files, path, importers)
        if reach is None:
            return False
        reach = (path, *reach)
    return not _named_outside_code(root, notebooks, texts, name, owners, project, reach=reach)


def _binds_own(project, file: Path, text: str, name: str) -> bool:
    """Whether every bare name ``name`` that the Python code ``text`` of project file ``file``
    reads is a binding of the file's own, never a module-level function ``name`` of another
    module (Python's scoping: a function that does not bind the name reads the module's
    global): the file binds ``name`` at its top level (a ``def``, a class, an assignment, a
    loop's or ``with``'s target, an ``import ... as name``, a ``from`` import of a library's
    module: :attr:`~loopcheck.engine.outline.StarExports.defined` and ``imports``), no ``from M
    import`` anywhere in it (a function's included) takes ``name`` from, or binds ``name`` by,
    a module ``M`` of the project (or a relative one, or one that cannot be looked up: it may
    be that function, or re-export it), and its star imports do not bind ``name``
    (:meth:`~loopcheck.engine.project.Project.stars_bind`, all their names known). Only an
    attribute (``mod.name``) or a string may name another module's ``name`` there. ``False``
    (not decided) when the text does not parse."""
    exports = project.module_exports(file)
    if exports is None:
        return False
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False
    for node in ast.walk(tree):
        if type(node) is not ast.ImportFrom:
            continue
        if any(a.name == "*" for a in node.names):
            starred = project.stars_bind(file)
            if starred is None or name in starred:
                return False  # a star import that may bind it
        elif any(name in (a.name, a.asname) for a in node.names) and not _library_module(project, file, node):
            return False  # ``from m import f``: maybe the function, or a re-export of it
    return name in exports.defined or name in exports.imports.aliases


def _library_module(project, file: Path, node: ast.ImportFrom) -> bool:
    """Whether ``from M import ...`` of project file ``file`` imports from a module the
    project does not hold (a library's: ``from unittest import main``): an absolute import
    the project resolves nowhere."""
    if node.level or not node.module:
        return False
    try:
        return project.find_module(node.module, file) is None
    except (OSError, ValueError, RecursionError):
        return False


#: The most module-level functions :func:`_dead_module_functions` weighs for one function (the
#: function, the ones that name it, those that name them, ...): past it, nothing is decided.
MAX_DEAD_CALLERS = 64


def _dead_module_functions(project, index, func: cst.FunctionDef, table: dict) -> set:
    """The module-level functions of the checked module, among ``func`` and those that name
    it (transitively: the functions that name those, and so on), that never run: the
    greatest set ``S`` of them such that each one of ``S`` meets the conditions its own module
    does not decide (:func:`_unreferenced_elsewhere`) and is named in its module only inside
    the bodies of functions of ``S`` (its own ``def`` and recursive calls included) or of
    nested functions that never run (:func:`_nested_never_called`). A function called only
    from a function nothing calls never runs, and so does a pair that only call each other.

    A naming counts as :func:`_named` counts it, and one that is not inside the body of a
    function of ``S`` keeps the function live: at the module's top level, in a class body or
    a method (methods are not weighed), in a decorator, a default value or an annotation of
    a ``def`` (run when the ``def`` runs: ``def h(x=f())`` calls ``f``). A naming inside a
    body is counted by its syntax (:func:`_body_names`), which counts no more than
    :func:`_named` does there (``from m import f`` inside a body is not counted: it stays a
    live naming). A module-level name defined by more than one ``def``, or a function past
    :data:`MAX_DEAD_CALLERS` weighed ones, is not decided (its namings cannot be told apart).

    Args:
        project: the checked module's :class:`~loopcheck.engine.project.Project`.
        index: the checked module's index (its ``path`` is the file).
        func: a module-level function definition of the checked module.
        table: ``node → parent`` for the checked module.

    Returns:
        The set of those functions (``cst.FunctionDef`` nodes) that never run; empty when
        nothing is decided.
    """
    module = table.get(func)
    if type(module) is not cst.Module:
        return set()
    read = _reading(project, index)
    if read is None:
        return set()
    path, _root, _files, _notebooks, own, _texts = read
    stem = _stem(path)
    strings = _looks_up_names(own)  # string literals name functions only where looked up
    memo = index.cache.setdefault("unreferenced.module_functions", {})
    if "defs" not in memo:
        defs: dict[str, list[cst.FunctionDef]] = {}
        for stmt in module.body:
            if type(stmt) is cst.FunctionDef:
                defs.setdefault(stmt.name.value, []).append(stmt)
        memo["defs"] = defs
        memo["names"] = {id(f): _body_names(f, strings) for fs in defs.values() for f in fs}
        # the nested functions that never run, with the outermost function around each (a
        # module-level one counts their namings in its body) and what they name
        memo["nested"] = [(n, _outermost_function(n, table), _region_names(n, strings))
                          for n in _dead_nested_outermost(index, table)]
    defs, names, nested_top = memo["defs"], memo["names"], memo["nested"]
    tops = {id(f) for fs in defs.values() for f in fs}
    totals = memo.setdefault("totals", {})

    def total(name: str) -> int:
        if name not in totals:
            totals[name] = _named(own, name, bare=True, own=stem, strings=strings)
        return totals[name]

    def dead_count(name: str, dead: set[int]) -> int:
        count = sum(names[f][name] for f in dead if name in names[f])
        for n, top, counts in nested_top:
            if top is None or id(top) not in dead:
                count += counts[name]
        return count

    # the functions weighed: ``func``, and each module-level function that names one of them
    weighed: dict[int, cst.FunctionDef] = {}
    work = [func]
    while work:
        g = work.pop()
        if id(g) in weighed:
            continue
        name = g.name.value
        if len(defs.get(name, ())) != 1:
            continue  # two ``def``s of one name: their namings cannot be told apart
        # named outside every module-level function (and every dead nested one): it runs
        if total(name) - dead_count(name, tops) > 0:
            continue
        if not _unreferenced_elsewhere(project, index, g, None, table):
            continue
        weighed[id(g)] = g
        if len(weighed) > MAX_DEAD_CALLERS:
            return set()
        work.extend(h for fs in defs.values() for h in fs if id(h) not in weighed and names[id(h)][name])
    # the greatest fixed point: drop each function named outside the ones still held
    dead = set(weighed)
    changed = True
    while changed:
        changed = False
        for key in list(dead):
            if total(weighed[key].name.value) - dead_count(weighed[key].name.value, dead) > 0:
                dead.discard(key)
                changed = True
    return {weighed[key] for key in dead}


def _outermost_function(node, table: dict):
    """The outermost function around ``node`` (``None`` when there is none)."""
    outer = None
    for func, _cls in _enclosing_functions(node, table):
        outer = func
    return outer


def _body_names(func: cst.FunctionDef, strings: bool = True):
    """A :class:`collections.Counter` of the names ``func`` spells in its ``def``'s name and
    its body (not its decorators, parameters' defaults or annotations, which run where the
    ``def`` runs), counted as :func:`_named` counts them with ``bare``: a ``Name`` not after a
    ``.``, and a string literal whose value is exactly the name (with ``strings``), the
    replacement fields of f-strings included (``print(f"{evaluate(model)}")`` calls it, as
    :func:`_named` reads them); the names of a ``from M import ...`` (:func:`_named` counts
    them only when ``M`` is the module itself) are not counted: counting fewer here keeps the
    namings live."""
    counts = _spelled(func.body, strings)
    counts[func.name.value] += 1
    return counts


def _region_names(node: cst.CSTNode, strings: bool = True):
    """The names a piece of code that never runs spells (:func:`_dead_nested_outermost`): a
    function's as :func:`_body_names` counts them, a statement's all of them."""
    if type(node) is cst.FunctionDef:
        return _body_names(node, strings)
    return _spelled(node, strings)


def _spelled(root: cst.CSTNode, strings: bool = True):
    """A :class:`collections.Counter` of the names spelled in ``root``, as :func:`_body_names`
    counts them."""
    from collections import Counter

    counts: Counter = Counter()
    stack: list = [root]
    while stack:
        n = stack.pop()
        t = type(n)
        if t is cst.Name:
            counts[n.value] += 1
        elif t is cst.SimpleString:
            if strings:
                counts[n.value.strip("rRbBuUfF").strip("'\"")] += 1
        elif t is cst.Attribute:
            stack.append(n.value)  # the member's name is not the bare name
            continue
        elif t is cst.ImportFrom:
            continue
        stack.extend(n.children)
    return counts


def _dynamic_file(project, index, file: Path, text: str, method: bool) -> bool:
    """:func:`_dynamic` of project file ``file`` (its ``text``), once per check of a module;
    for a method, a module that an import of ``file`` names is outside the project when it
    resolves to no project file and no project file has the name of one of its parts."""
    memo = index.cache.setdefault("unreferenced.dynamic", {})
    key = (file, method)
    if key not in memo:
        files, _notebooks, _texts = _listing(index, Path(project.root))
        stems = {_stem(f) for f in files or ()}

        def library(dots: int, dotted: str) -> bool:
            if files is None or any(p in stems for p in dotted.split(".") if p):
                return False
            if dots:
                base = file.parent
                for _ in range(dots - 1):
                    base = base.parent
                where = base.joinpath(*dotted.split(".")) if dotted else base
                return not (where.with_suffix(".py").exists() or (where / "__init__.py").exists())
            try:
                return project.find_module(dotted, file) is None
            except (OSError, ValueError, RecursionError):
                return False

        memo[key] = _dynamic(text, method, library if method else None)
    return memo[key]


def _method_files(project, index, read, importers: list[Path]) -> list[Path] | None:
    """The project's Python files whose code may call a method of a class of the module
    ``read`` describes (a tuple of :func:`_reading`) by its name: an instance goes wherever
    it is passed, so any file of the project; but when the module is a script that nothing
    imports (no importer that compiles, and nothing that may import it another way,
    :func:`_module_named` with ``runs`` false: a shell's ``python train.py`` runs it in a
    process of its own), its classes exist only in the process that runs it, where only the
    code it loads runs (:func:`_process_files`)."""
    path, root, files, notebooks, own, texts = read
    # an importer Python cannot compile imports nothing
    if _MAIN.search(own) and not any(_compiles(project, f) for f in importers):
        memo = index.cache.setdefault("unreferenced.imported_elsewhere", {})
        if path not in memo:
            memo[path] = _module_named(project, index, read, runs=False)
        if not memo[path]:
            loaded = _process_files(project, index, read)
            if loaded is not None:
                return loaded
    return files


def _process_files(project, index, read) -> list[Path] | None:
    """The project's Python files that may run in the process of the script ``read[0]`` (a
    tuple of :func:`_reading`): the script, the modules it imports and the packages that hold
    them (their ``__init__.py``; a package's every module when its ``__init__.py`` sets
    ``__all__``, which a star import reads), the modules those import, and so on, and the
    modules a computed import of one of them may load (:func:`_computed_loads`,
    :func:`_could_load`). An import the project does not resolve, or resolves while a file
    moves ``sys.path`` or a text sets ``PYTHONPATH``, may load any project file named as one of
    its parts. ``None`` when a computed load may reach any module (``import_module(name)``,
    ``runpy``), when a file of the process may import modules that configuration or
    installed packages name (:data:`_LOADS_BY_CONFIG`: Hydra's ``instantiate`` of a
    ``_target_``, ``pydoc.locate``, entry points), or a file cannot be read."""
    path, root, files, notebooks, own, texts = read
    memo = index.cache.setdefault("unreferenced.process", {})
    if path in memo:
        return memo[path]
    known = set(files)
    by_stem: dict[str, list[Path]] = {}
    for f in files:
        by_stem.setdefault(_stem(f), []).append(f)
    moved = _path_moved(project, files, texts)
    seen: dict[Path, None] = {}
    frontier: list[Path] = []

    def add(f: Path) -> None:
        # the file, and the ``__init__.py`` of each package above it, which runs first
        for g in (f, *(d / "__init__.py" for d in f.parents if d == root or root in d.parents)):
            if g in known and g not in seen:
                seen[g] = None
                frontier.append(g)

    add(path)
    out: list[Path] | None = None
    while frontier and moved is not None:
        file = frontier.pop()
        text = own if file == path else _text(project, file)
        if text is None:
            break
        if file != path and not _compiles(project, file):
            continue  # importing it fails there: it imports nothing
        if _LOADS_BY_CONFIG.search(text):
            break  # a module a configuration names (``_target_: callbacks.EvalCallback``)
        if _runs_modules(project, file, text):
            loads = _computed_loads(text)
            if None in loads:
                break
            for f in files:
                if any(_could_load(p, f, root) for p in loads):
                    add(f)
        if file.name == "__init__.py" and "__all__" in text:
            for f in files:
                if file.parent in f.parents:
                    add(f)
        for dots, dotted in _imported(text):
            parts = dotted.split(".") if dotted else []
            if dots:
                base = file.parent
                for _ in range(dots - 1):
                    base = base.parent
                for i in range(len(parts) + 1):
                    where = base.joinpath(*parts[:i])
                    add(where / "__init__.py")
                    if i:
                        add(where.with_suffix(".py"))
                continue
            try:
                for i in range(1, len(parts) + 1):
                    found = project.find_module(".".join(parts[:i]), file)
                    if found is not None:
                        add(Path(found).resolve())
                whole = project.find_module(dotted, file)
            except (OSError, ValueError, RecursionError):
                whole = None
            if whole is None or moved:
                for part in parts:
                    for f in by_stem.get(part, ()):
                        add(f)
    else:
        if moved is not None:
            out = list(seen)
    memo[path] = out
    return out


#: Signs that a Python file may import modules that a configuration or an installed package
#: names, which no import line of the project shows: Hydra (``hydra.utils.instantiate``,
#: ``get_class``, ``call`` of a ``_target_``), :mod:`pydoc`'s ``locate``, entry points
#: (``importlib.metadata.entry_points``, ``importlib_metadata``, ``pkg_resources``).
_LOADS_BY_CONFIG = re.compile(r"\b(?:hydra|pydoc|entry_points|iter_entry_points|importlib_metadata|pkg_resources)\b")


def _path_moved(project, files: list[Path], texts: list[Path]) -> bool | None:
    """Whether a Python file of the project changes ``sys.path`` or a text file sets
    ``PYTHONPATH``: an import may then load a module from another folder than the project
    resolves it in; ``None`` when a file cannot be read. A text file's answer is kept for
    its version (:func:`_text_fact`)."""
    for file in files:
        text = _text(project, file)
        if text is None:
            return None
        if "sys.path" in text:
            return True
    for file in texts:
        found = _text_fact(project, file, "PYTHONPATH", lambda text: "PYTHONPATH" in text)
        if found is None:
            return None
        if found:
            return True
    return False


def _nothing_runs(project, index, read, importers: list[Path]) -> bool:
    """Whether nothing in the project runs the module ``read`` describes (a tuple of
    :func:`_reading`) but its own top-level code: no packaging metadata, no other project file
    imports it (``importers``, empty), it has no ``if __name__ == "__main__":`` block, and no
    file of the project may import or run it another way (:func:`_module_named`). Its
    functions and classes then run only when its own top level names them, or when something
    outside the project imports it (given up: read as never run)."""
    path, root, files, notebooks, own, texts = read
    if importers or path.name == "__init__.py" or _MAIN.search(own) or _packaged(project, root, path):
        return False
    memo = index.cache.setdefault("unreferenced.nothing_runs", {})
    if path not in memo:
        memo[path] = _has_script(project, index, files, path) and not _module_named(project, index, read)
    return memo[path]


def _has_script(project, index, files: list[Path], path: Path) -> bool:
    """Whether a project Python file other than ``path`` is a script (an ``if __name__ ==
    "__main__":`` block, whether or not it compiles: it shows how the project is run): the
    project is a program, run from its scripts. A project with
    none (a library, a folder of snippets) is run from outside it: a module nothing in it
    imports may be imported there."""
    memo = index.cache.setdefault("unreferenced.scripts", {})
    key = tuple(files)
    if key not in memo:
        scripts = []
        for file in files:
            text = _text(project, file)
            if text is not None and "__main__" in text and _MAIN.search(text):
                scripts.append(file)
        memo[key] = scripts
    return any(f != path for f in memo[key])


def _module_named(project, index, read, runs: bool = True) -> bool:
    """Whether a file of the project may import or run the module at ``read[0]`` although no
    import of it resolves there (:func:`_importers`), or nothing can be said:

    * a Python file that imports a module of the same name (a dotted name with the module's
      name as one of its parts) which the project does not resolve (a folder added to
      ``sys.path``, ``_init_paths.py``), or resolves elsewhere while some Python file of the
      project changes ``sys.path`` or a text sets ``PYTHONPATH``;
    * a Python file anywhere in the project that runs modules by computed names or by their
      files (:data:`_RUNS_MODULES`: ``importlib``, ``runpy``, ``exec(open(...))``) in a way
      that may reach the module (:func:`_loads_module`: ``import_module("engines." + name)``
      may load ``engines/sgd_trainer.py``, not ``models/net.py``);
    * the package's ``__init__.py`` naming the module (``__all__ = ["trainer"]``: a star
      import of the package imports it);
    * a Python file, notebook, shell script, configuration or document that names the
      module's file (``python gan_b/trainer.py``, ``%run trainer.py``,
      ``subprocess.run(["python", "trainer.py"])``) or the module by its name
      (``python -m gan_b.trainer``, ``from trainer import Trainer``, ``_target_:
      trainer.Trainer``) (:func:`_names_module`);
    * a module whose name unittest's discovery collects (``test*.py``);
    * a file that cannot be read.

    With ``runs`` false, only what may import the module counts: a shell script's, a
    configuration's or a document's ``python gan_b/trainer.py`` or ``python -m gan_b.trainer``
    runs it as a script, in a process of its own (a notebook's ``%run`` still counts: it runs
    it in the notebook's namespace).
    """
    path, root, files, notebooks, own, texts = read
    stem = _stem(path)
    if stem.startswith("test"):
        return True
    word = re.compile(rf"\b{re.escape(stem)}\b")
    init = path.parent / "__init__.py"
    readings: list[tuple[Path, str]] = []
    for file in files:
        if file == path:
            continue
        text = _text(project, file)
        if text is None:
            return True
        readings.append((file, text))
        if _loads_module(project, file, text, path, root):
            return True  # anywhere in the project: ``tools/train.py`` loads ``engines.<name>``
    moved = _path_moved(project, files, texts)
    if moved is None:
        return True
    for file, text in readings:
        if stem not in text or not word.search(text):
            continue
        # a Python file that names the module's file runs it in its own process
        # (``subprocess``), unless it runs it here: ``exec``, ``runpy`` (:func:`_loads_module`),
        # IPython's ``%run``
        if file == init or _names_module(text, path, root, code=True,
                                         runs=runs or _RUN_MAGIC.search(text) is not None):
            return True
        if not _compiles(project, file):
            continue  # a file Python cannot compile imports nothing
        for target in _imported(text):
            parts = target[1].split(".")
            if target[0] or stem not in parts:
                continue  # a relative import finds its module whatever sys.path holds
            # the module of that name the import may load (``trainer`` of ``from trainer
            # import Trainer``, which also gives ``trainer.Trainer``)
            dotted = ".".join(parts[:parts.index(stem) + 1])
            try:
                found = project.find_module(dotted, file)
            except (OSError, ValueError, RecursionError):
                return True
            if found is None or moved:
                return True
    for file in [*notebooks, *texts]:
        try:
            if file.stat().st_size > MAX_TEXT_BYTES and file.suffix != ".ipynb":
                continue
            if _names_module(file.read_bytes().decode("utf-8", "replace"), path, root,
                             runs=runs or file.suffix == ".ipynb"):
                return True
        except OSError:
            return True
    return False


#: Words without which :data:`_RUNS_MODULES` cannot match (a quicker test first).
_RUNS_WORDS = ("importlib", "__import__", "runpy", "pkgutil", "imp.", "import imp", "from imp", "load_source",
               "exec", "spec_from", "module_from_spec", "load_module", "FileLoader")


#: A call that imports a module by a name it computes: ``importlib.import_module(...``,
#: ``import_module(...`` (imported from :mod:`importlib`), ``__import__(...``; group 1 is what
#: follows the parenthesis.
_IMPORT_CALL = re.compile(r"(?<![\w])(?:importlib\s*\.\s*)?(?:import_module|__import__)\s*\(([^\n]*)")
#: A string literal that begins a computed module name (``"engines." + name``,
#: ``f"engines.{name}"``, ``"engines.{}".format(name)``, ``"engines.%s" % name``): its text
#: up to the first ``{`` or ``%`` (group 2).
_NAME_START = re.compile(r"""\s*[rRuU]?([fF]?)(['"])([^'"{%\n]*)""")
#: The lines that import :mod:`importlib`, one of its modules or its functions.
_IMPORTS_IMPORTLIB = re.compile(r"^[ \t]*(?:import[ \t]+importlib\b|from[ \t]+importlib\b)[^\n]*", re.M)
#: Those of :data:`_IMPORTS_IMPORTLIB` that load no module and bind nothing that loads one by a
#: name other than ``import_module``: ``import importlib`` (its uses are read where they
#: are), ``from importlib import import_module`` (not renamed: its calls are read as
#: ``import_module(...)``).
_IMPORTS_IMPORTLIB_ONLY = re.compile(
    r"[ \t]*(?:import[ \t]+importlib(?:[ \t]+as[ \t]+\w+)?"
    r"|from[ \t]+importlib[ \t]+import[ \t]+\(?[ \t]*import_module[ \t]*,?[ \t]*\)?)[ \t]*(?:#[^\n]*)?")


def _computed_loads(text: str) -> list[str | None]:
    """What the code ``text`` may load by computed names or by files (:data:`_RUNS_MODULES`):
    for each ``import_module``/``__import__`` call whose name begins with a string literal
    (``importlib.import_module("engines." + cfg["engine"])``), that literal's text up to
    where the computed part starts (``"engines."``); ``None`` for one whose name does not
    begin with a literal (``import_module(name)``), a relative name (``"." + name``, found
    from the caller's package), and any other way of running modules (``runpy``,
    ``exec(open(...).read())``, ``pkgutil``, ``imp.load_source``, any other use of
    :mod:`importlib`: ``importlib.util.spec_from_file_location``, a ``from importlib.util
    import ...`` or ``from importlib.machinery import ...`` line, ``import importlib.util``, a
    ``from importlib import`` of anything but ``import_module``, or of it renamed): any
    module may be loaded."""
    loads: list[str | None] = []
    covered: set[int] = set()  # where the calls read here, and the importlib imports, start
    for m in _IMPORTS_IMPORTLIB.finditer(text):
        covered.update(range(m.start(), m.end()))
        if not _IMPORTS_IMPORTLIB_ONLY.fullmatch(m.group(0)):
            loads.append(None)  # it binds a loader by file or by name (``exec_module``)
    for m in _IMPORT_CALL.finditer(text):
        covered.update(range(m.start(), m.start(1)))
        lit = _NAME_START.match(m.group(1))
        prefix = lit.group(3) if lit else None
        if prefix is not None and lit.group(1) == "" and re.match(
                rf"{lit.group(2)}\s*[,)]", text[m.start(1) + lit.end():]):
            prefix += "\0"  # a complete literal: the name is not computed, it ends there
        loads.append(None if prefix is None or prefix.startswith(".") else prefix)
    for m in _RUNS_MODULES.finditer(text):
        if m.start() not in covered:
            loads.append(None)
    return loads


def _could_load(prefix: str | None, path: Path, root: Path) -> bool:
    """Whether a computed load that begins with ``prefix`` (:func:`_computed_loads`; ``None``:
    any module) may load the module at ``path``: its dotted parts from the project root
    (``engines.sgd_trainer``), from any folder that may be on the search path, hold the
    prefix's full parts in a row (``engines``) followed by a part that begins with what the
    prefix ends with (``"engines.sgd_"``: ``sgd_trainer``; a prefix that ends the name,
    ``"engines.sgd"`` written whole, the part itself)."""
    if prefix is None:
        return True
    whole = prefix.endswith("\0")
    *full, last = prefix.rstrip("\0").split(".")
    try:
        parts = list(path.relative_to(root).with_suffix("").parts)
    except ValueError:
        parts = list(path.with_suffix("").parts)
    if path.name == "__init__.py":
        parts.pop()
    k = len(full)
    for i in range(len(parts) - k):
        if parts[i:i + k] == full and (parts[i + k] == last if whole else parts[i + k].startswith(last)):
            return True
    return False


def _loads_module(project, file: Path, text: str, path: Path, root: Path) -> bool:
    """Whether Python file ``file`` (its ``text``) may load the module at ``path`` by a
    computed name or by its file (:func:`_computed_loads`, :func:`_could_load`)."""
    return _runs_modules(project, file, text) and any(_could_load(p, path, root) for p in _computed_loads(text))


def _runs_modules(project, file: Path, text: str) -> bool:
    """Whether Python file ``file`` (its ``text``) may run modules by computed names or by their
    files (:data:`_RUNS_MODULES`), once per version of the file (one kept per file, once it
    has :func:`~loopcheck.engine.project.settled`: a new version replaces the answer about
    the old one)."""
    if not any(w in text for w in _RUNS_WORDS):
        return False
    stamp, _text_read = project.source_of(file)
    from loopcheck.engine.project import settled

    if not stamp:
        return _RUNS_MODULES.search(text) is not None
    memo = project.memo.setdefault("unreferenced.runs_modules", {})
    kept = memo.get(file)
    if kept is None or kept[0] != stamp:
        kept = (stamp, _RUNS_MODULES.search(text) is not None)
        if settled(stamp):
            memo[file] = kept
        else:
            memo.pop(file, None)
    return kept[1]


def _names_module(text: str, path: Path, root: Path, code: bool = False, runs: bool = True) -> bool:
    """Whether ``text`` names the module at ``path`` (under project root ``root``): its file
    (``trainer.py``, ``gan_b/trainer.py``, ``../gan_b/trainer.py``: a path whose folders and the
    module's own, from the root, end alike), or its name after ``import``, ``from`` or ``-m``
    (``python -m gan_b.trainer``, ``from trainer import Trainer``; not for Python ``code``,
    whose imports the project resolves), or qualified by its package (``gan_b.trainer``) or on
    a Hydra ``_target_`` line (``_target_: trainer.Trainer``). With ``runs`` false, not its file
    nor after ``-m``, which run it as a script rather than import it."""
    stem = _stem(path)
    if stem not in text:
        return False
    s = re.escape(stem)
    try:
        folders = path.parent.relative_to(root).parts
    except ValueError:
        folders = path.parent.parts
    for m in re.finditer(rf"((?:[\w.-]+[/\\])*){s}\.py\b", text) if runs else ():
        prefix = [p for p in re.split(r"[/\\]", m.group(1)) if p and p not in (".", "..")]
        n = min(len(prefix), len(folders))
        if tuple(prefix[len(prefix) - n:]) == folders[len(folders) - n:]:
            return True
    run_m = r"|(?<!\w)-m" if runs else ""
    if not code and re.search(rf"(?:\bimport|\bfrom{run_m})\s+[\w.]*\b{s}\b", text):
        return True
    if path.parent != root and re.search(rf"\b{re.escape(path.parent.name)}\.{s}\b", text):
        return True
    return bool(re.search(rf"_target_[^\n]*\b{s}\.\w", text))


def _class_unreferenced(project, index, cls: cst.ClassDef) -> bool:
    """Whether module-level class ``cls`` of the checked module is one nothing in the project
    names (see the module docstring): no instance of it exists and nothing holds the class, so
    none of its methods (instance, class or static) runs."""
    name = cls.name.value
    if cls.decorators or cls.keywords or not _quiet_body(cls):
        return False  # a decorator, a metaclass or the body's own code may hand it out
    if _project_bases(index, cls, known_library=True) is None:
        return False  # a library base may find its subclasses without their names
    read = _reading(project, index)
    if read is None:
        return False
    path, root, files, notebooks, own, texts = read
    if _dynamic(own, False):
        return False
    packaged = _packaged(project, root, path)
    importers = _importers(project, index, files, path)
    if importers is None:
        return False
    if not (_MAIN.search(own) or name.startswith("_") or (importers and not packaged)
            or _nothing_runs(project, index, read, importers)):
        return False
    span = _class_span(own, name)
    if span is None or _named(own, name, bare=True, outside=span, own=_stem(path)) > 0:
        return False  # its methods (``super(fc, self)``) name it only once it exists
    # a subclass, an instance or a re-export in a module that imports the module, directly or
    # through another (``from mid import *``): the direct importers first, whose reading is
    # had already and which name most classes used
    if _names_class(project, path, importers, importers, name):
        return False
    closure = _importers_closure(project, index, files, path, importers)
    if closure is None or _names_class(project, path, closure, closure, name):
        return False
    owners = (_stem(path),)
    return not _named_outside_code(root, notebooks, texts, name, owners, project)


def _names_class(project, path: Path, importers: list[Path], files: list[Path], name: str) -> bool:
    """Whether one of ``files`` (some of the modules ``importers`` that import the module at
    ``path``, directly or through another) may name class ``name`` of it, or looks names up at
    run time, or cannot be read; a file Python cannot compile names nothing."""
    # the names a module that may hold the class is known by (``pdf.fc()``, ``mid.fc()``
    # after ``mid`` imports it): another object's attribute (``model.fc``) is not the class
    modules = {f.stem if f.name != "__init__.py" else f.parent.name for f in (path, *importers)}
    for file in files:
        text = _text(project, file)
        if text is None:
            return True
        if not _compiles(project, file):
            continue  # a file Python cannot compile runs nothing
        if _dynamic(text, False) or _named(text, name, bare=True, through=modules | _aliases(text)):
            return True
    return False


#: Decorators of a method that only wrap it, registering it nowhere (Python's builtins).
_WRAPPERS = ("staticmethod", "classmethod", "property")


def _quiet_body(cls: cst.ClassDef) -> bool:
    """Whether the body of class ``cls``, which runs when the class is defined, hands none of
    its functions out: no method is decorated but by a builtin wrapper (``staticmethod``,
    ``classmethod``, ``property`` and its ``.setter``), and no statement other than a ``def``
    names one of the body's functions (``atexit.register(cleanup)``, ``hooks = [train]``)."""
    defs = {s.name.value for s in cls.body.body if type(s) is cst.FunctionDef}
    for stmt in cls.body.body:
        if type(stmt) is cst.FunctionDef:
            for d in stmt.decorators:
                dotted = _dotted(d.decorator)
                if dotted is None or not (dotted in _WRAPPERS or dotted.endswith((".setter", ".getter", ".deleter"))):
                    return False
            continue
        if type(stmt) is cst.ClassDef:
            return False  # a nested class: not followed
        for n in _names_in(stmt):
            if n in defs:
                return False
    return True


def _names_in(node: cst.CSTNode):
    """Every ``Name`` of a syntax tree, by its value."""
    stack = [node]
    while stack:
        n = stack.pop()
        if type(n) is cst.Name:
            yield n.value
        stack.extend(n.children)


def _class_span(text: str, name: str) -> tuple[int, int] | None:
    """The first and last line of the one top-level ``class name`` of code ``text``; ``None``
    when there is not exactly one, or the text does not parse."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    found = [s for s in tree.body if isinstance(s, ast.ClassDef) and s.name == name]
    if len(found) != 1 or any(isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef)) and s.name == name for s in tree.body):
        return None
    return found[0].lineno, found[0].end_lineno


def _compiles(project, file: Path) -> bool:
    """Whether Python may compile the project file ``file``: false only when CPython's parser
    rejects it for a reason that is not an older or newer Python's syntax
    (:mod:`loopcheck.engine.import_failure`); such a file runs nothing, and its namings do not
    count."""
    from loopcheck.engine.import_failure import _module_at

    mod = _module_at(project, file)
    return mod is None or mod.compiles


def _looks_up_names(text: str) -> bool:
    """Whether Python code ``text`` may look a name up by a string: it holds one of the
    spellings of the ``[[name_lookup]]`` entries of the knowledge
    (``loopcheck/knowledge/name_lookups.toml``: ``getattr``, ``__dict__``, ``globals()``,
    ``sys.modules``, ``__all__``, imports by name, ``eval``/``exec``, frameworks that run what a
    string names: ``fire``, Hydra's ``_target_``, ``pydoc.locate``, ``torch.hub.load``). Only
    there may a string literal whose value is a function's name reach the function
    (``getattr(helpers, "train")``, ``__all__ = ["train"]``); elsewhere it is data (``split ==
    'train'``, ``os.path.join(root, 'train')``). A list of spellings, not what the calls resolve
    to."""
    pattern = knowledge().name_lookups
    return pattern is not None and pattern.search(text) is not None


def _notebook_cells(text: str) -> list[str] | None:
    """The sources of the cells of notebook JSON ``text`` that may run: every cell but a
    markdown or raw one (a cell without a type counts); ``None`` when the text is not a
    notebook's JSON, or a cell's source is not text."""
    import json

    try:
        data = json.loads(text)
    except ValueError:
        return None
    cells = data.get("cells") if isinstance(data, dict) else None
    if not isinstance(cells, list):
        return None
    out = []
    for cell in cells:
        if not isinstance(cell, dict):
            return None
        if cell.get("cell_type") in ("markdown", "raw"):
            continue
        source = cell.get("source", "")
        if isinstance(source, list) and all(isinstance(s, str) for s in source):
            source = "".join(source)
        if not isinstance(source, str):
            return None
        out.append(source)
    return out


def _notebook_code_names(text: str, name: str) -> bool:
    """Whether notebook JSON ``text`` may name function ``name`` in its code: a cell names it
    as :func:`_named` counts (a name, not another object's attribute after a ``.``: string
    literals only where the notebook's code may look names up by a string,
    :func:`_looks_up_names`; a magic's or shell line's word counts, ``%time train(m)``). The
    markdown and outputs do not run. When the text is not a notebook's JSON, any word
    ``name`` counts."""
    if name not in text:
        return False
    cells = _notebook_cells(text)
    if cells is None:
        return re.search(rf"\b{re.escape(name)}\b", text) is not None
    strings = _looks_up_names("\n".join(cells))
    return any(name in cell and _named(cell, name, strings=strings) for cell in cells)


def _notebook_reaches(text: str, modules: tuple[Path, ...], root: Path) -> bool:
    """Whether notebook text ``text`` may reach one of ``modules`` (project files under ``root``):
    it imports or runs one of them by its name or its file (:func:`_names_module`: ``from
    helpers import *``, ``%run utils.py``), or runs files or modules in a way not followed
    (:data:`_RUNS_FILE`: ``%run``, ``%load``; :data:`_RUNS_MODULES`: ``importlib``,
    ``exec``)."""
    if _RUNS_FILE.search(text) or _RUN_MAGIC.search(text) or _RUNS_MODULES.search(text):
        return True
    return any(_names_module(text, m, root) for m in modules)


def _notebook_importers(project, read) -> bool:
    """Whether a notebook of the project imports the module ``read`` describes (a tuple of
    :func:`_reading`): ``from helpers import *``, ``import helpers`` (:func:`_names_module`,
    not a ``%run helpers.py``, which runs it as a script): the module is the project's own
    code, as when a Python file imports it. A notebook that cannot be read counts."""
    path, root, _files, notebooks, _own, _texts = read
    stem = _stem(path)
    for nb in notebooks:
        found = _text_fact(project, nb, ("imports module", str(path)),
                           lambda text: stem in text and _names_module(text, path, root, runs=False),
                           limit=False)
        if found is None or found:
            return True
    return False


def _packaged(project, root: Path, path: Path) -> bool:
    """Whether the project's packaging metadata (``setup.py``, ``setup.cfg``,
    ``pyproject.toml``) may install the module at ``path``, so that code outside the project
    may import it. Not when there is none; and not for a module in a folder below the root
    that is no package (no ``__init__.py``) when the metadata is ``setup.py``/``setup.cfg``
    alone, lists its packages (``packages=[...]``, ``find_packages()``, ``packages = find:``:
    folders with an ``__init__.py``, or named) and names neither the folder nor a way to
    install other files (namespace packages, ``package_dir``, ``py_modules``, package data).
    A ``pyproject.toml`` (automatic discovery of namespace packages, other build back ends)
    or a file that cannot be read: may install it. An editable install, whose source folders
    are on the search path, is given up."""
    found = [root / p for p in _PACKAGING if (root / p).exists()]
    if not found:
        return False
    folder = path.parent
    if folder == root or root not in folder.parents or (folder / "__init__.py").exists() \
            or (root / "pyproject.toml").exists():
        return True
    try:
        text = "\n".join(f.read_text(errors="replace") for f in found)
    except OSError:
        return True
    if not re.search(r"\bpackages\b", text):
        return True  # setuptools' automatic discovery finds namespace packages too
    others = r"namespace|package_dir|py_modules|package_data|data_files|include_package_data"
    # an explicit listing of the folder (``packages=["pkg.notebooks"]``) names it
    return re.search(rf"(?:{others})|\b{re.escape(folder.name)}\b", text) is not None


def _named_outside_code(root: Path, notebooks: list[Path], texts: list[Path], name: str, owners: tuple[str, ...],
                        project=None, reach: tuple[Path, ...] | None = None) -> bool:
    """Whether a file of the project other than its Python modules may run function ``name``
    (of the module and class ``owners`` name, :func:`_names_through_module`): a packaging file
    or a notebook names it, or a shell script, configuration or document names it through its
    module; also when one of them cannot be read. With ``project``, the notebooks' and texts'
    answers are kept for their versions (:func:`_text_fact`). With ``reach`` (for a
    module-level function: its module and the project modules that import it, directly or
    through others), a notebook names it only when it may reach one of those modules
    (:func:`_notebook_reaches`: imports or runs one of them, or runs files) and its code cells
    name it (:func:`_notebook_code_names`: a ``'train'`` split in a cell, a markdown cell's
    word, or a notebook's own ``train`` that imports none of them, runs no function ``train``
    of the module)."""
    for p in _PACKAGING:
        f = root / p
        if f.exists() and re.search(rf"\b{re.escape(name)}\b", f.read_text(errors="replace")):
            return True
    word = re.compile(rf"\b{re.escape(name)}\b")
    for nb in notebooks:  # a cell may ``%run`` the script and another call ``f``
        if project is not None and reach is not None:
            found = _text_fact(project, nb, ("code names", name, reach),
                               lambda text: _notebook_code_names(text, name) and _notebook_reaches(text, reach, root),
                               limit=False)
            if found is None or found:
                return True
            continue
        if project is not None:
            found = _text_fact(project, nb, ("word", name), lambda text: word.search(text) is not None, limit=False)
            if found is None or found:
                return True
            continue
        try:
            if word.search(nb.read_text(errors="replace")):
                return True
        except OSError:
            return True
    for file in texts:
        if project is not None:
            found = _text_fact(project, file, ("through", name, owners),
                               lambda text: _names_through_module(text, name, owners))
            if found is None or found:
                return True
            continue
        try:
            if file.stat().st_size > MAX_TEXT_BYTES:
                continue
            if _names_through_module(file.read_bytes().decode("utf-8", "replace"), name, owners):
                return True
        except OSError:
            return True
    return False


def calling_files(project, index, func: cst.FunctionDef) -> list[Path] | None:
    """The Python files of the project that may call module-level function ``func`` of the
    module ``index`` (its own file first, then those that import its module), when no other
    Python code can: the module is a script (an ``if __name__ == "__main__":`` block) or the
    name is private (``_f``); ``func`` is not decorated nor a dunder; neither the module nor an
    importer looks names up at run time (:func:`_dynamic`). ``None`` otherwise (a library's
    public function: its callers are not all in the project). The project's other files, which
    may run it too, are :func:`named_outside_code`'s.

    Args:
        project: the :class:`~loopcheck.engine.project.Project` of the module (``None``:
            nothing is decided).
        index: the module's index (its ``path`` is the file).
        func: a top-level ``def`` of that module.
    """
    name = func.name.value
    if project is None or index is None or index.path is None or str(index.path).endswith(".ipynb") \
            or func.decorators or (name.startswith("__") and name.endswith("__")):
        return None
    read = _reading(project, index)
    if read is None:
        return None
    path, _root, files, _notebooks, own, _texts = read
    if _dynamic(own, False) or not (_MAIN.search(own) or name.startswith("_")):
        return None
    importers = _importers(project, index, files, path)
    if importers is None:
        return None
    for file in importers:
        text = _text(project, file)
        if text is None or _dynamic(text, False):
            return None
    return [path, *importers]


def named_outside_code(project, index, func: cst.FunctionDef) -> bool:
    """Whether a file of the project other than its Python modules may run module-level
    function ``func`` of the module ``index``: a packaging file or a notebook names it, or a
    shell script, configuration or document names it through its module (``python -c "from
    train import f; f()"``, a Hydra ``_target_: train.f``); also when they cannot be listed or
    read, or the module has no file in a project."""
    if project is None or index is None or index.path is None:
        return True
    path = Path(index.path).resolve()
    root = Path(project.root)
    _files, notebooks, texts = _listing(index, root)
    if texts is None:
        return True
    owners = (_stem(path),)
    return _named_outside_code(root, notebooks, texts, func.name.value, owners, project)


def _names_through_module(text: str, name: str, owners: tuple[str, ...]) -> bool:
    """Whether a line of ``text`` (a shell script, a configuration, a document) names function
    ``name`` through one of ``owners`` (its module's name first, then its class's for a method):
    ``owner.name`` or ``owner:name`` (a Hydra ``_target_``, an entry point, ``python -c``),
    ``name`` after an import of the module on the line (``from pkg.train import f``,
    ``import train; train.f()``), or ``owner name`` on a line that runs ``fire``
    (``python -m fire train.py f``)."""
    if name not in text:
        return False
    f = rf"\b{re.escape(name)}\b"
    module = re.escape(owners[0])
    either = "|".join(re.escape(o) for o in owners)
    qualified = re.compile(rf"\b(?:{either})\s*[.:]\s*{f}")
    imported = re.compile(rf"(?:\bfrom\s+[\w.]*\b{module}\s+import\b|\bimport\s+[\w.]*\b{module}\b)[^\n]*?{f}")
    fire = re.compile(rf"\bfire\b[^\n]*\b(?:{module}(?:\.py)?|{either})\s+{f}")
    return any(p.search(text) for p in (qualified, imported, fire))


def _reading(project, index) -> tuple[Path, Path, list[Path], list[Path], str, list[Path]] | None:
    """``(the module's file, the project root, its .py files, its notebooks, the module's text,
    its other text files)`` (:func:`_listing`), or ``None`` when a listing or the module's text
    cannot be had (nothing is decided), nor for a module pytest collects (:func:`_pytest_collects`:
    a test runner calls its ``test_*`` functions and ``Test*`` classes by name)."""
    path = Path(index.path).resolve()
    root = Path(project.root)
    if _pytest_collects(index, path, root):
        return None
    files, notebooks, texts = _listing(index, root)
    if files is None or texts is None:
        return None
    _stamp, own = project.source_of(path)
    if own is None:
        return None
    return path, root, files, notebooks, own, texts


def _pytest_collects(index, path: Path, root: Path) -> bool:
    """Whether pytest, run in the project, collects the module at ``path`` (and then calls
    its ``test_*`` functions, ``Test*`` classes, fixtures and hooks by name): ``conftest.py``,
    or a file whose name matches the ``python_files`` patterns (shell globs, :mod:`fnmatch`)
    of the project's pytest configuration, else pytest's default
    (:data:`PYTEST_DEFAULT_FILES`). The configuration is the first pytest finds, from the
    module's folder up to the project root: ``pytest.ini``, ``pyproject.toml``'s
    ``[tool.pytest.ini_options]``, ``tox.ini``'s ``[pytest]``, ``setup.cfg``'s
    ``[tool:pytest]``."""
    if path.name == "conftest.py":
        return True
    memo = index.cache.setdefault("unreferenced.pytest", {})
    if path.parent not in memo:
        memo[path.parent] = _python_files(path.parent, root)
    return any(fnmatch.fnmatch(path.name, p) for p in memo[path.parent])


def _python_files(folder: Path, root: Path) -> tuple[str, ...]:
    """The ``python_files`` patterns of the pytest configuration that governs ``folder``
    (see :func:`_pytest_collects`): the first configuration file from ``folder`` up to
    ``root`` that holds a pytest section; pytest's default when none does, or it does not
    set them, or it cannot be read."""
    for d in (folder, *folder.parents):
        found = _pytest_section(d)
        if found is not None:
            return found or PYTEST_DEFAULT_FILES
        if d == root or root not in d.parents:
            break
    return PYTEST_DEFAULT_FILES


def _pytest_section(d: Path) -> tuple[str, ...] | None:
    """The ``python_files`` patterns a pytest configuration file of folder ``d`` sets (empty
    when its pytest section sets none), or ``None`` when no file there is pytest's
    configuration (a ``pytest.ini`` always is, the others with their pytest section)."""
    for name, section in (("pytest.ini", "pytest"), ("pyproject.toml", None), ("tox.ini", "pytest"),
                          ("setup.cfg", "tool:pytest")):
        f = d / name
        try:
            if not f.is_file():
                continue
            if section is None:
                with open(f, "rb") as fh:
                    table = tomllib.load(fh).get("tool", {}).get("pytest", {}).get("ini_options")
                if not isinstance(table, dict):
                    continue
                value = table.get("python_files", ())
                return tuple(value.split() if isinstance(value, str) else (str(v) for v in value))
            parser = configparser.ConfigParser(interpolation=None)
            parser.read(f, encoding="utf-8")
            if not parser.has_section(section):
                if name == "pytest.ini":
                    return ()
                continue
            return tuple(parser.get(section, "python_files", fallback="").split())
        except (OSError, ValueError, UnicodeDecodeError, configparser.Error, tomllib.TOMLDecodeError):
            return ()
    return None


#: Folders that :data:`~loopcheck.engine.callers.SKIP_DIRS` leaves out of the files checked
#: but that may hold the project's own code, which may import or call a module's functions:
#: an RL project's ``env/`` package, a ``build/`` or ``dist/`` copy of the sources.
CODE_IN_SKIPPED = frozenset({"env", "build", "dist", "_build"})


def _listing(index, root: Path) -> tuple[list[Path] | None, list[Path], list[Path] | None]:
    """The project's ``.py`` files (:func:`~loopcheck.engine.callers.project_files`, and those
    under :data:`CODE_IN_SKIPPED` folders, which are no Python environment,
    :func:`_environment`: code there may import a module and call its functions), its
    notebooks, and its other text files
    (:data:`TEXT_SUFFIXES`; ``None`` when there are more than
    :data:`~loopcheck.engine.callers.MAX_FILES` of them), listed once per check of a module."""
    memo = index.cache.setdefault("unreferenced.listing", {})
    if root not in memo:
        notebooks: list[Path] = []
        texts: list[Path] | None = []
        skipped: list[Path] = []  # the .py files under CODE_IN_SKIPPED folders
        try:
            for directory, dirs, names in os.walk(root):
                inside = directory != str(root) and any(
                    p in CODE_IN_SKIPPED for p in Path(directory).relative_to(root).parts)
                dirs[:] = [d for d in dirs if (d not in SKIP_DIRS or d in CODE_IN_SKIPPED)
                           and not _environment(os.path.join(directory, d))]
                if inside:
                    skipped += [Path(directory, n).resolve() for n in sorted(names) if n.endswith(".py")]
                    if len(skipped) > MAX_FILES:
                        raise RuntimeError("too many files")
                    continue
                notebooks += [Path(directory, n) for n in names if n.endswith(".ipynb")]
                if texts is not None:
                    texts += [Path(directory, n) for n in names if n.endswith(TEXT_SUFFIXES)]
                    if len(texts) > MAX_FILES:
                        texts = None
            files = project_files(root)
            if files is not None:
                files = sorted({*files, *skipped})
            memo[root] = (files, notebooks, texts)
        except (OSError, RuntimeError, ValueError):  # a symbolic link loop, a folder that cannot be read
            memo[root] = (None, [], None)
    return memo[root]


def _environment(folder: str) -> bool:
    """Whether ``folder`` holds a Python environment rather than the project's code: a
    virtualenv (``pyvenv.cfg``), a conda environment (``conda-meta/``), or an installed prefix
    (``bin/python*`` with ``lib/python3*``), whose files are a Python's and its packages'."""
    if os.path.isfile(os.path.join(folder, "pyvenv.cfg")) or os.path.isdir(os.path.join(folder, "conda-meta")):
        return True
    bin_dir, lib_dir = os.path.join(folder, "bin"), os.path.join(folder, "lib")
    if not (os.path.isdir(bin_dir) and os.path.isdir(lib_dir)):
        return False
    try:
        return any(n.startswith("python") for n in os.listdir(bin_dir)) and any(
            n.startswith("python3") for n in os.listdir(lib_dir))
    except OSError:
        return False


def _dynamic(text: str, method: bool, library=None) -> bool:
    """Whether code ``text`` may look a function or method up by a computed name.

    For a function: ``globals()``, ``locals()``, ``vars()``, ``eval``, ``exec``, ``fire.Fire``,
    computed imports, ``getattr`` with a computed name on a module (an imported name or
    ``sys.modules[...]``). For a method, which is found through its object or class, not
    through a module's namespace: ``eval``, ``exec``, ``fire.Fire`` (which calls a class's
    methods by the names on its command line), a class's or object's namespace
    (``vars(obj)``, ``__dict__``, ``inspect.getmembers``), ``operator.attrgetter`` or
    ``methodcaller`` with a computed name, and ``getattr`` with a computed name on any object
    but a name bound only by imports of modules ``library`` says are outside the project
    (``getattr(_lib, symbol)`` of a compiled extension: no instance of a project class is
    there). A computed import (``importlib``, ``__import__``) is not a lookup of a method:
    what it loads is counted as code that may call it, where the files that may run in a
    script's process are listed (:func:`_process_files`, with :func:`_computed_loads` and
    :func:`_could_load`: a load by a file's path, ``importlib.util``, or a name that begins
    with no literal may load any module, and then any file of the project counts,
    :func:`_method_files`). ``library(dots, dotted)``: whether the module an import names
    (``(dots, dotted)``, as :func:`_imported` gives it) is not one of the project's."""
    if method:
        if any(m.group(0) not in ("importlib", "__import__(", "globals()", "locals()", "vars()")
               for m in _DYNAMIC.finditer(text)) or _NAMESPACE.search(text):
            return True
    elif _DYNAMIC.search(text):
        return True
    for m in _GETATTR.finditer(text):
        obj = m.group(1)
        if m.group(2):
            continue  # ``getattr(obj, "name")``: the name is in the text
        if method and library is not None and _bound_by_library_imports(text, obj, library):
            continue
        if method or obj.startswith("sys.modules") or re.search(
                rf"^[ \t]*(?:import[ \t][^\n]*\b{re.escape(obj)}\b|from[ \t][^\n]*import[^\n]*\b{re.escape(obj)}\b)",
                text, re.M):
            return True
    return False


def _bound_by_library_imports(text: str, name: str, library) -> bool:
    """Whether every binding of ``name`` in code ``text`` (a plain name) is an ``import`` or
    ``from`` statement of a module that ``library(dots, dotted)`` says is not the project's:
    the name then holds a library's module or what it defined (no project object)."""
    import ast as _ast

    if not name.isidentifier():
        return False
    try:
        tree = _ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False
    found = False
    for node in _ast.walk(tree):
        if isinstance(node, (_ast.Import, _ast.ImportFrom)):
            for alias in node.names:
                bound = alias.asname or alias.name.split(".")[0]
                if bound != name:
                    continue
                target = (0, alias.name) if isinstance(node, _ast.Import) else (node.level, node.module or "")
                if not library(*target):
                    return False
                found = True
        elif isinstance(node, _ast.Name) and node.id == name and not isinstance(node.ctx, _ast.Load):
            return False
        elif isinstance(node, _ast.arg) and node.arg == name:
            return False
        elif isinstance(node, (_ast.FunctionDef, _ast.AsyncFunctionDef, _ast.ClassDef)) and node.name == name:
            return False
        elif isinstance(node, (_ast.Global, _ast.Nonlocal)) and name in node.names:
            return False
        elif isinstance(node, _ast.ExceptHandler) and node.name == name:
            return False
        elif isinstance(node, _ast.alias):
            pass
        elif type(node).__name__ in ("MatchAs", "MatchStar") and getattr(node, "name", None) == name:
            return False
    return found


def _project_bases(index, cls: cst.ClassDef, known_library: bool = False,
                   libraries: list | None = None) -> list[Path] | None:
    """The files of the classes ``cls`` derives from, up its whole chain, when every one is
    ``object`` or a class of the project; ``None`` when one is not (a library base,
    ``unittest.TestCase``, ``nn.Module``, may call any method by its name: ``test_*``,
    ``forward``). With ``known_library``, a library class that loopcheck's knowledge describes
    (``[[class]]`` of ``loopcheck/knowledge/*.toml``: ``torch.nn.Module``) and that no framework
    of it runs (``[[driver]]``) is allowed too, as a base that creates no instance by itself (an
    unknown library base, ``unittest.TestCase``, may find its subclasses, as test loaders do);
    the qualified names of those library classes are added to ``libraries`` when given."""
    from loopcheck.engine.knowledge import knowledge

    seen: set = set()
    files: list[Path] = []
    stack = [(index, [_dotted(arg.value) for arg in cls.bases])]
    while stack:
        where, bases = stack.pop()
        for d in bases:
            if d == "object":
                continue
            if d is None:
                return None
            ref = where.class_ref(d) or where.class_ref(where.imports.qualify(d), qualified=True)
            if ref is None and known_library:
                qualified = where.imports.qualify(d)
                kb = knowledge()
                if kb.cls(qualified) is None or kb.driver(qualified) is not None:
                    return None
                if libraries is not None:
                    libraries.append(kb.cls(qualified).name)
                continue
            if ref is None or ref.info is None:
                return None
            if (ref.module, ref.name) in seen:
                continue
            seen.add((ref.module, ref.name))
            if ref.module.path is not None:
                files.append(Path(ref.module.path).resolve())
            stack.append((ref.module, list(ref.info.bases)))
    return files


def _dotted(expr) -> str | None:
    if type(expr) is cst.Name:
        return expr.value
    if type(expr) is cst.Attribute:
        head = _dotted(expr.value)
        return f"{head}.{expr.attr.value}" if head else None
    return None


def _importers(project, index, files: list[Path], path: Path) -> list[Path] | None:
    """The project's ``.py`` files other than ``path`` that import its module (an ``import`` or
    ``from`` line that the project resolves to ``path``,
    :meth:`~loopcheck.engine.project.Project.find_module`; relative imports from the file's
    folder), or ``None`` when one cannot be read, or one in the module's folder or a folder
    above it that names the module's stem imports modules by computed names (``importlib``)."""
    memo = index.cache.setdefault("unreferenced.importers", {})
    if path in memo:
        return memo[path]
    stem = _stem(path)
    word = re.compile(rf"\b{re.escape(stem)}\b")
    # the folders a computed import of the module would run from: its own and those above it
    near = {path.parent, *path.parent.parents}
    out: list[Path] | None = []
    for file in files:
        if file == path:
            continue
        text = _text(project, file)
        if text is None:
            out = None
            break
        if stem not in text or not word.search(text):
            continue
        if file.parent in near and _DYNAMIC_IMPORT.search(text):
            out = None  # it may import the module by a computed name
            break
        if any(_is_module(project, file, target, path) for target in _imported(text)):
            out.append(file)
    memo[path] = out
    return out


#: At most this many modules are followed back through their importers for a method;
#: beyond it nothing is decided.
MAX_IMPORT_CHAIN = 64


def _importers_closure(project, index, files: list[Path], path: Path, first: list[Path]) -> list[Path] | None:
    """The files that import the module at ``path`` (``first``), those that import one of
    them, and so on (where a subclass of a class of ``path`` may be defined), or ``None``
    when one cannot be read or more than :data:`MAX_IMPORT_CHAIN` modules are met."""
    seen = dict.fromkeys(first)
    frontier = list(first)
    while frontier:
        nxt = []
        for module in frontier:
            if module != path and not _compiles(project, module):
                continue  # importing it fails: nothing imports through it
            found = _importers(project, index, files, module)
            if found is None:
                return None
            for f in found:
                if f != path and f not in seen:
                    seen[f] = None
                    nxt.append(f)
        if len(seen) > MAX_IMPORT_CHAIN:
            return None
        frontier = nxt
    return list(seen)


def _stem(path: Path) -> str:
    """The name a module file is imported by, last part: ``train`` for ``pkg/train.py``,
    ``pkg`` for ``pkg/__init__.py``."""
    return path.stem if path.name != "__init__.py" else path.parent.name


def _text(project, file: Path) -> str | None:
    """The text of a project file: as the project reads it, else its bytes decoded with the
    undecodable ones replaced (a file in another encoding still shows what it imports);
    ``None`` when it cannot be read at all."""
    _stamp, text = project.source_of(file)
    if text is not None:
        return text
    try:
        return file.read_bytes().decode("utf-8", "replace")
    except OSError:
        return None


_FROM = re.compile(r"^[ \t]*from[ \t]+(\.*)([\w.]*)[ \t]+import[ \t]+\(?([^\n)]*)", re.M)
_IMPORT = re.compile(r"^[ \t]*import[ \t]+([^\n#]+)", re.M)
#: An ``import``/``from`` line that renames what it imports (``import a.b as m``).
_IMPORT_LINE = re.compile(r"^[ \t]*(?:from|import)[ \t][^\n#]*\bas\b[^\n#]*", re.M)
_AS = re.compile(r"\bas[ \t]+(\w+)")


def _aliases(text: str) -> set[str]:
    """The names the ``import``/``from`` lines of ``text`` bind with ``as``."""
    return {a for line in _IMPORT_LINE.findall(text) for a in _AS.findall(line)}


def _imported(text: str):
    """``(dots, dotted name)`` of each module an ``import``/``from`` line of ``text`` may import:
    ``from a.b import c`` gives ``a.b`` and ``a.b.c`` (``c`` may be a submodule)."""
    for m in _FROM.finditer(text):
        dots, mod, names = len(m.group(1)), m.group(2), m.group(3)
        yield dots, mod
        for n in names.split(","):
            n = n.strip().split(" as ")[0].strip()
            if n and n != "*":
                yield dots, f"{mod}.{n}" if mod else n
    for m in _IMPORT.finditer(text):
        for part in m.group(1).split(","):
            dotted = part.strip().split(" as ")[0].strip()
            if dotted:
                yield 0, dotted


def _is_module(project, file: Path, target: tuple[int, str], path: Path) -> bool:
    """Whether import ``target`` (``(dots, dotted)``) of ``file`` is the module at ``path``."""
    dots, dotted = target
    if dots:
        base = file.parent
        for _ in range(dots - 1):
            base = base.parent
        where = base.joinpath(*dotted.split(".")) if dotted else base
        return where.with_suffix(".py") == path or where / "__init__.py" == path
    try:
        found = project.find_module(dotted, file)
    except (OSError, ValueError, RecursionError):
        return True
    return found is not None and Path(found).resolve() == path


def _named(text: str, name: str, bare: bool = False, outside: tuple[int, int] | None = None,
           through: set[str] | frozenset[str] = frozenset(), own: str | None = None,
           defs: bool = True, strings: bool = True, unqualified: bool = True) -> int:
    """How many times Python code ``text`` names ``name``: as a name (only where no ``.``
    comes before it, when ``bare``: a module-level function of the same file; or, after a
    ``.``, only where the name before it is one of ``through``, or not a plain name: a module's
    attribute, ``pdf.fc``, ``sys.modules[m].fc``), or as a string literal whose value is
    exactly the name, comments aside, on lines outside ``outside`` (``(first, last)``) when
    given; 2 when the text does not tokenize (taken to name it).

    With ``own`` (the name of the module ``text`` is the code of: ``name`` is defined there),
    the names a ``from M import ...`` statement lists are not counted when ``M`` is another
    module (its last part is not ``own``, and it is not ``from . import``): ``from
    models.base import Model as B`` reads ``Model`` of ``models.base`` and binds ``B``, and
    ``from m import f`` binds ``f`` anew; neither names the ``Model`` or ``f`` defined here.

    Without ``defs``, a ``def name`` is not counted: it defines a function of its own (another
    class's method of that name), and calls nothing. Without ``strings``, string literals are
    not counted (the code looks no name up by a string: :func:`_looks_up_names`). Without
    ``unqualified``, a name no ``.`` comes before is not counted, only an attribute
    (``mod.name``) or a string: the file binds the bare name itself (:func:`_binds_own`).

    The replacement fields of an f-string are code, counted as any other (before Python 3.12
    the tokenizer gives an f-string as one token: :func:`_fstring_fields` reads its fields,
    nested format specs included: ``f"{acc:{width}}"``). A string annotation (``x:
    "evaluate"``) is a string literal like another: it names a type for a checker and calls
    nothing, so it counts only with ``strings``."""
    if name not in text:
        return 0
    count = 0
    previous = before = None  # the last two tokens that are not layout or comments
    # where a ``from M import`` statement stands: "module" (reading ``M``), "names" (after
    # ``import``: names of another module, or bound by it), "own" (``M`` may be this module)
    state, module, start = None, [], True  # start: the next token begins a statement
    try:
        for tok in tokenize.generate_tokens(io.StringIO(text).readline):
            if own is not None:
                if tok.type in (tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT, tokenize.ENDMARKER) \
                        or tok.string == ";":
                    state, start = None, True
                    continue
                if tok.type in (tokenize.NL, tokenize.COMMENT):
                    continue
                if start and tok.type == tokenize.NAME and tok.string == "from":
                    state, module = "module", []
                elif state == "module" and tok.string == "import":
                    parts = [p for p in "".join(module).split(".") if p]
                    state = "names" if parts and parts[-1] != own else "own"
                elif state == "module":
                    module.append(tok.string)
                start = False
            if outside is not None and outside[0] <= tok.start[0] <= outside[1]:
                pass
            elif state == "names":
                pass  # another module's names, or names the statement binds
            elif tok.type == tokenize.NAME and tok.string == name:
                if not defs and previous == "def":
                    pass
                elif not unqualified and previous != ".":
                    pass  # the file's own binding of the name
                elif not (bare and previous == "." and not (through and (
                        before in through or not (before or "").isidentifier()))):
                    count += 1
            elif tok.type == tokenize.STRING and (fields := _fstring_fields(tok.string)):
                # an f-string's replacement fields are code: ``f"{evaluate(model)}"`` calls
                count += sum(_named(field, name, bare=bare, through=through, defs=defs, strings=strings,
                                    unqualified=unqualified)
                             for field in fields)
            elif strings and tok.type == tokenize.STRING and tok.string.strip("rRbBuUfF").strip("'\"") == name:
                count += 1
            if tok.type not in (tokenize.NL, tokenize.NEWLINE, tokenize.COMMENT, tokenize.INDENT, tokenize.DEDENT):
                before, previous = previous, tok.string
    except (tokenize.TokenError, SyntaxError, IndentationError):
        return 2
    return count


def _scanned_fields(quoted: str) -> list[str]:
    """The code of the replacement fields of an f-string's quoted text (``"a {f(x):{w}}"``
    gives ``f(x):{w}``: a nested format spec stays in its field, its names read with it), cut
    by the braces outside the fields' own string literals (``{{`` is a brace of the text).
    When the braces do not balance, the text inside the quotes whole: a name that appears in it
    is taken to be named there."""
    q = 3 if quoted[:3] in ('"""', "'''") else 1
    body = quoted[q:len(quoted) - q]
    fields: list[str] = []
    i, n = 0, len(body)
    while i < n:
        c = body[i]
        if c in "{}" and body[i + 1:i + 2] == c:
            i += 2  # an escaped brace of the text
            continue
        if c != "{":
            i += 1
            continue
        depth, quote, j = 1, None, i + 1
        while j < n and depth:
            d = body[j]
            if quote is not None:
                if d == "\\":
                    j += 1
                elif d == quote:
                    quote = None
            elif d in "'\"":
                quote = d
            elif d in "{[(":
                depth += 1
            elif d in "}])":
                depth -= 1
            j += 1
        if depth:
            return [body]
        fields.append(body[i + 1:j - 1])
        i = j
    return fields


def _fstring_fields(literal: str) -> list[str]:
    """The code of each replacement field of the f-string literal ``literal`` (one string
    token, as the tokenizer before Python 3.12 gives it: ``f"acc {validate(loader):.3f}"``
    gives ``validate(loader)``), those of its nested format specs included (``f"{x:{width}}"``
    gives ``x`` and ``width``); a field that holds an f-string is given whole (its own fields
    are read when the field is). Empty for a literal that is no f-string. When the literal
    cannot be read as Python (a newer Python's f-string: ``f"{'\\n'.join(rows)}"`` before 3.12),
    the fields are cut from its text by their braces (:func:`_scanned_fields`)."""
    prefix = literal[:len(literal) - len(literal.lstrip("rRbBuUfF"))]
    if "f" not in prefix.lower():
        return []
    try:
        tree = ast.parse(literal, mode="eval")
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return _scanned_fields(literal[len(prefix):])
    fields: list[str] = []
    stack = [tree.body]
    while stack:
        node = stack.pop()
        if isinstance(node, ast.JoinedStr):
            stack.extend(reversed(node.values))
        elif isinstance(node, ast.FormattedValue):
            fields.append(ast.unparse(node.value))
            if node.format_spec is not None:
                stack.append(node.format_spec)
    return fields
