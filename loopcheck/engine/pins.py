"""The PyTorch versions a project allows: its dependency files' pins, and the era of its code.

Some rules depend on a behaviour that began with a PyTorch version (``[since]`` in
``knowledge/torch.toml``: ``scheduler.step()`` belongs after ``optimizer.step()`` from 1.1,
``torch.no_grad()`` exists from 0.4). A project that pins an older PyTorch was written for the
old behaviour, as ruff reads the Python version a project supports from its ``requires-python``.

:func:`torch_versions` reads the pins in the dependency files at the project root
(:data:`PIN_FILES`: ``requirements.txt``, conda's ``environment.yml``, ``Dockerfile``,
``setup.py``, ``setup.cfg``, ``pyproject.toml``, and the README, where a project states the
environment it was written for), through the project, which records them for the cache as it
does imported modules; a pin is ``torch==X``, ``torch<=X``, ``torch<X`` or conda's
``pytorch=X``. A lower bound, ``torch>=1.4``, allows every later version and bounds nothing
from above; it states that the code runs on that version and every later one, as an API of
that version does (below). A README is read only where it gives commands or requirements, not where it talks
(:func:`readme_pin_lines`): the lines of a fenced or indented code block, the lines that
install (``pip install``, ``conda install``, ``conda create``), and the lines made of
requirement specifiers alone (``python==3.6 pytorch==0.4.0``, a bulleted ``- torch==0.4.1``).
Prose (``tested with torch<=1.4 and newer``, a changelog's ``fixed for torch<1.0``) pins
nothing.

:func:`code_versions` dates a project by its code: a call whose knowledge entry says it only
means something before a version (``only_before``: ``Variable(x, volatile=True)``, before 0.4)
dates the code before that version, unless the code also uses an API that began with that
version or a later one (``[[api_since]]``: ``torch.no_grad``, ``torch.device``, ``.item()``,
from 0.4) or the project pins a lower bound of that version or later (``torch>=0.4``,
``torch>=1.4``). An API shows that the code runs on its version and on every later one, and
such code is run today on a current PyTorch, where every later behaviour applies (1.1's
scheduler order, 2.0's ``zero_grad(set_to_none=True)``): mixed code (``.item()`` beside a
leftover ``volatile=True``) is not dated at all, for no version. Only code that cannot run on
the newer PyTorch is written for the old one (:func:`dates_before`); such a project reads as
a pin ``torch<V`` does, for each version ``V`` from its dating on (:func:`pinned_before`). The
project's code is its
``.py`` files under the root (:func:`loopcheck.engine.callers.project_files`), each read
through the project (recorded for the cache) and scanned once per version of the file; a text
checked alone (no project) is dated from itself (:func:`text_versions`).
"""

from __future__ import annotations

import ast
import os
import re
from pathlib import Path

from loopcheck.engine.callers import SKIP_DIRS, project_files
from loopcheck.engine.knowledge import knowledge
from loopcheck.engine.names import ImportMap
from loopcheck.engine.outline import _add_import, ast_dotted_name
from loopcheck.engine.project import settled

#: The dependency files read, at the project root.
PIN_FILES = ("requirements.txt", "environment.yml", "environment.yaml", "Dockerfile", "setup.py", "setup.cfg",
             "pyproject.toml", "README.md", "README.rst", "README.txt", "README")
#: Those of :data:`PIN_FILES` that are prose around commands: read by :func:`readme_pin_lines`.
README_FILES = frozenset({"README.md", "README.rst", "README.txt", "README"})
#: ``torch==0.4.1``, ``pytorch=0.4.1``, ``torch<1.0``, ``torch>=1.4``: the package (not
#: ``torchvision`` nor another ``torch-*`` package), an operator that bounds the version (from
#: above, or from below: :data:`LOWER`), the version.
_PIN = re.compile(r"(?<![\w.-])(?:py)?torch(?![\w-])\s*(==|<=|<|>=|>|=(?!=))\s*v?(\d+(?:\.\d+)*)", re.I)
#: The operators of :data:`_PIN` that bound the version from below only.
LOWER = frozenset({">=", ">"})
#: A line that installs packages.
_INSTALL = re.compile(r"\b(?:pip3?\s+install|conda\s+(?:install|create))\b", re.I)
#: A requirement specifier (``pytorch==0.4.0``, ``python>=3.6``, ``torch=0.4.1``), alone as a word.
_SPECIFIER = re.compile(r"[A-Za-z][\w.\-]*(?:\[[\w,.\-]*\])?\s*(?:==|<=|>=|~=|!=|<|>|=)\s*v?\d[\w.*+\-]*,?")
#: A fence of a Markdown code block.
_FENCE = re.compile(r"\s*(```|~~~)")
#: A list bullet or quote before a line's content.
_BULLET = re.compile(r"\s*(?:[-*+>]|\d+[.)])\s+")

_ANY = 1 << 30  # a version component a pin leaves out


def readme_pin_lines(text: str) -> str:
    """The lines of a README's ``text`` that may pin (joined with newlines): the lines inside a
    fenced code block (```` ``` ```` or ``~~~``), the lines of an indented code block (four
    spaces or a tab, after a blank line or another such line), the lines that install
    (``pip install``, ``conda install``, ``conda create``), and the lines that hold nothing but
    requirement specifiers (``python==3.6 pytorch==0.4.0``; after a list bullet, ``- torch==0.4.1``,
    and with Markdown's emphasis or code marks around them). Other lines are prose."""
    out: list[str] = []
    fence: str | None = None
    indented_ok = True  # an indented line here starts or continues a code block
    for line in text.splitlines():
        m = _FENCE.match(line)
        if fence is not None:
            if m is not None and m.group(1) == fence:
                fence = None
            else:
                out.append(line)
            indented_ok = False
            continue
        if m is not None:
            fence = m.group(1)
            indented_ok = False
            continue
        blank = not line.strip()
        code = not blank and indented_ok and (line.startswith("    ") or line.startswith("\t"))
        if code or _INSTALL.search(line) or _specifiers_only(line):
            out.append(line)
        indented_ok = blank or code
    return "\n".join(out)


def _specifiers_only(line: str) -> bool:
    """Whether ``line``, less a list bullet and Markdown marks, is requirement specifiers alone."""
    body = _BULLET.sub("", line, count=1).strip().strip("`*_")
    if not body:
        return False
    return all(_SPECIFIER.fullmatch(word.strip("`*_")) for word in re.split(r"\s*,\s*|\s+", body) if word.strip("`*_"))


def torch_versions(project) -> list[tuple[str, tuple[int, ...]]]:
    """``(operator, version)`` for each pin of PyTorch in the dependency files at the root of
    ``project`` (a :class:`~loopcheck.engine.project.Project`), in :data:`PIN_FILES` order (a
    README's only in the lines :func:`readme_pin_lines` keeps), lower bounds (an operator of
    :data:`LOWER`, ``torch>=1.4``) included; a file that is missing, too large or cannot be read
    pins nothing."""
    out = []
    root = project.root.resolve()
    for name in PIN_FILES:
        _stamp, text = project.source_of(root / name)
        if text is None:
            continue
        if name in README_FILES:
            text = readme_pin_lines(text)
        for m in _PIN.finditer(text):
            out.append((m.group(1), tuple(int(p) for p in m.group(2).split("."))))
    return out


def scan_text(text: str) -> tuple[tuple[int, ...] | None, tuple[int, ...] | None]:
    """``(dated, newest)`` for one module's ``text``: ``dated``, the oldest version that a call
    of it only means something before (a knowledge entry's ``only_before``, its argument given
    and not ``False``/``None``/``0``: ``Variable(x, volatile=True)`` gives ``(0, 4)``);
    ``newest``, the newest version that began an API it uses (``[[api_since]]``). Names are
    qualified through the module's imports (anywhere in it). ``(None, None)`` for a text that
    does not parse or has neither."""
    k = knowledge()
    if not any(word in text for word in _dating_words(k)) and not any(_mentions(text, e) for e in k.api_since):
        return None, None  # most texts stop here, unparsed
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None, None
    imports = ImportMap(None)
    for node in ast.walk(tree):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            _add_import(imports, node)
    dated = newest = None
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            func = node.func
            if isinstance(func, ast.Attribute):
                for e in k.api_since:
                    if func.attr in e.methods and (newest is None or e.version > newest):
                        newest = e.version
            summary = k.function(imports.qualify(ast_dotted_name(func)) or "")
            if summary is not None and summary.only_before is not None:
                before, ref = summary.only_before
                if (ref is None or _given(node, ref)) and (dated is None or before < dated):
                    dated = before
        elif isinstance(node, (ast.Name, ast.Attribute)):
            qualified = imports.qualify(ast_dotted_name(node))
            if qualified is not None:
                for e in k.api_since:
                    if qualified in e.names and (newest is None or e.version > newest):
                        newest = e.version
    return dated, newest


_WORDS: dict[int, frozenset[str]] = {}


def _dating_words(k) -> frozenset[str]:
    """The last parts of the names of the knowledge's functions that date code
    (``only_before``: ``Variable``), for the knowledge ``k``."""
    words = _WORDS.get(id(k))
    if words is None:
        words = _WORDS[id(k)] = frozenset(
            name.rpartition(".")[2] for name, summary in k.functions.items() if summary.only_before is not None)
    return words


def _datings(k) -> list[tuple[int, ...]]:
    """The versions a call of the knowledge ``k`` can date code before (``only_before``: 0.4
    for ``Variable(volatile=)``)."""
    return [summary.only_before[0] for summary in k.functions.values() if summary.only_before is not None]


def _newest(*versions: tuple[int, ...] | None) -> tuple[int, ...] | None:
    """The newest of ``versions`` (``None``: no version), compared padded with zeros."""
    out = None
    for version in versions:
        if version is not None and (out is None or not at_least(out, version)):
            out = version
    return out


def _padded(a: tuple[int, ...], b: tuple[int, ...]) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """``a`` and ``b`` padded with zeros to one length (``1`` is ``1.0``)."""
    width = max(len(a), len(b))
    return a + (0,) * (width - len(a)), b + (0,) * (width - len(b))


def at_least(version: tuple[int, ...] | None, since: tuple[int, ...]) -> bool:
    """Whether ``version`` (``None``: no version) is ``since`` or later."""
    if version is None:
        return False
    v, s = _padded(version, since)
    return v >= s


def dates_before(dated: tuple[int, ...] | None, newest: tuple[int, ...] | None, since: tuple[int, ...]) -> bool:
    """Whether code dated before ``dated`` (a call that only means something before it:
    ``Variable(x, volatile=True)``, 0.4) that uses APIs no newer than ``newest``
    (``[[api_since]]``, or a lower bound the project pins; ``None``: none) is written for a
    PyTorch older than ``since``: the dating is ``since`` or older, and no API as new as the
    dating itself is used. An API shows that the code runs on its version and every later one,
    so it is run today on a current PyTorch: ``.item()`` (0.4) beside a ``volatile=True`` is
    not dated for any version (LC202's scheduler order of 1.1 applies to it), and only code
    that cannot run on the newer PyTorch is dated."""
    if dated is None:
        return False
    d, s = _padded(dated, since)
    return d <= s and not at_least(newest, dated)


def _mentions(text: str, entry) -> bool:
    """Whether ``text`` holds the last part of a name or a method of ``entry`` at all."""
    return any(n.rpartition(".")[2] in text for n in entry.names) or any(f".{m}(" in text for m in entry.methods)


def _given(call: ast.Call, ref) -> bool:
    """Whether ``call`` gives the argument ``ref`` (a knowledge argument reference: ``2``,
    ``"volatile"``, ``(2, "volatile")``) a value that is not ``False``/``None``/``0``."""
    index, keyword = ref if isinstance(ref, tuple) else (ref, None) if isinstance(ref, int) else (None, ref)
    value = None
    for kw in call.keywords:
        if keyword is not None and kw.arg == keyword:
            value = kw.value
    positional = call.args
    if value is None and index is not None and index < len(positional) and not any(
            isinstance(a, ast.Starred) for a in positional[:index + 1]):
        value = positional[index]
    if value is None:
        return False
    return not (isinstance(value, ast.Constant) and value.value in (None, False, 0))


def _combine(scans) -> tuple[tuple[int, ...] | None, tuple[int, ...] | None]:
    """``(dated, newest)`` of code made of modules scanned as ``scans`` (:func:`scan_text`'s
    pairs): the oldest dating, the newest API."""
    return (min((d for d, _ in scans if d is not None), default=None),
            max((n for _, n in scans if n is not None), default=None))


#: :func:`scan_text` of each file by ``(path, stamp)`` (the project's
#: :func:`~loopcheck.engine.project.file_stamp`), shared by the projects of one process (a file
#: as it was is scanned once), for a file :func:`~loopcheck.engine.project.settled` only; at most
#: :data:`_SCANS_MAX` entries, the oldest dropped.
_SCANS: dict[tuple, tuple] = {}
_SCANS_MAX = 20_000


def code_versions(project) -> tuple[tuple[int, ...] | None, tuple[int, ...] | None]:
    """``(dated, newest)`` for the code of ``project``: ``dated``, the oldest version that a
    call of one of its files only means something before (see the module docstring; ``None``
    when no call dates it), ``newest`` the newest version that began an API one of its files
    uses (``None``: none); :func:`dates_before` says what they make of the code for a version.
    Each file is read through the project (recorded for the cache) and scanned once per
    version of it; a project of more files than :data:`~loopcheck.engine.callers.MAX_FILES` is
    not dated."""
    files = _files(project)
    if files is None:
        return None, None
    scans = []
    for file in files:
        stamp, text = project.source_of(file)
        if text is None:
            continue
        key = (file, stamp)
        scan = _SCANS.get(key)
        if scan is None:
            scan = scan_text(text)
            if settled(stamp):
                if len(_SCANS) >= _SCANS_MAX:
                    del _SCANS[next(iter(_SCANS))]
                _SCANS[key] = scan
        scans.append(scan)
    return _combine(scans)


def _files(project) -> list[Path] | None:
    """:func:`~loopcheck.engine.callers.project_files` of ``project``'s root, listed again only
    when a directory listed has changed (its modification time: a file made, removed or
    renamed in it) or is gone: each check of a file of the project asks, and listing a tree
    resolves every path in it."""
    memo = project.memo.get("pins.files")
    if memo is not None:
        files, stamps = memo
        try:
            if all(os.stat(d).st_mtime_ns == t for d, t in stamps):
                return files
        except OSError:
            pass
    root = Path(project.root)
    files = project_files(root)
    stamps = []
    for directory, dirs, _names in os.walk(root):
        dirs[:] = [d for d in dirs if d not in SKIP_DIRS and not os.path.isfile(os.path.join(directory, d, "pyvenv.cfg"))]
        try:
            stamps.append((directory, os.stat(directory).st_mtime_ns))
        except OSError:
            continue
    project.memo["pins.files"] = (files, tuple(stamps))
    return files


def text_versions(text: str) -> tuple[tuple[int, ...] | None, tuple[int, ...] | None]:
    """:func:`code_versions` for one module's ``text`` checked alone (its :func:`scan_text`)."""
    return scan_text(text)


def pinned_before(project, since: tuple[int, ...], text: str | None = None, *,
                  scan: tuple[tuple[int, ...] | None, tuple[int, ...] | None] | None = None) -> bool:
    """Whether ``project`` (``None``: a text checked alone, ``text``, dated from itself; else
    ``text`` is the checked module's, which need not be given; ``scan``, its
    :func:`scan_text` when the caller holds it) allows only versions of PyTorch older than
    ``since``. Where the project pins an upper bound or a version (``torch==0.4.1``,
    ``torch<1.1``), every such pin allows only older versions (``torch==0.4.1`` for 1.1;
    ``torch<1.1`` too; ``torch<1.2`` does not). Without one, its code is dated before a version
    no newer than ``since`` (:func:`code_versions` and :func:`dates_before`:
    ``Variable(x, volatile=True)``, 0.4, and no API of 0.4 or later in any file, the checked
    text included; a lower bound, ``torch>=0.4``, counts as an API of its version). ``False``
    otherwise."""
    if scan is None and text is not None:
        scan = scan_text(text)
    own_dated, own_newest = scan if scan is not None else (None, None)
    if project is None:
        return dates_before(own_dated, own_newest, since)
    pins = torch_versions(project)
    upper = [(op, version) for op, version in pins if op not in LOWER]
    if upper:
        return all(_older(op, version, since) for op, version in upper)
    # The checked module (part of the program) and a lower bound (the project states its code
    # runs on that version and later) are APIs of the project's code. When they reach the
    # newest version a call can date code before, or no call can date code before ``since``,
    # nothing is dated and the project's files need not be read.
    newest = _newest(own_newest, *(version for op, version in pins if op in LOWER))
    datings = _datings(knowledge())
    if not datings or at_least(newest, _newest(*datings)):
        return False
    if not any(dates_before(dated, None, since) for dated in datings):
        return False
    dated, files_newest = code_versions(project)
    return dates_before(dated, _newest(newest, files_newest), since)


def _older(op: str, version: tuple[int, ...], since: tuple[int, ...]) -> bool:
    """Whether every version ``op version`` allows is older than ``since``. A pin names a
    prefix of the versions it allows (conda's ``pytorch=1`` is ``1.*``, and pip's ``torch==1.*``
    reads as ``1``): the components it leaves out may be anything, taken as their largest."""
    width = max(len(version), len(since))
    s = since + (0,) * (width - len(since))
    if op == "<":
        return version + (0,) * (width - len(version)) <= s
    return version + (_ANY,) * (width - len(version)) < s
