"""Parse a file with LibCST in a way that cannot take the process down.

LibCST's native parser recurses once (or several times) per level of nesting: on the
8 MiB stack of a main thread it segfaults from about 1,200 nested brackets or an
8,000-term ``a+a+...`` chain (LibCST #619, #980, #1000), and it takes time that grows
faster than the nesting (a 1,000-deep call nest: 9 s; a 9,000-term chain: 44 s). The tree
it builds is as deep, and LibCST's own visitors and loopcheck's analysis walk it
recursively. So:

1. :func:`check_nesting` is a cheap scan of the text (strings and comments skipped) that
   refuses what no Python accepts and what LibCST cannot parse in reasonable time:

   * more than :data:`MAX_BRACKET_DEPTH` (200) nested brackets: CPython's own limit
     (its tokenizer says ``too many nested parentheses``);
   * code estimated more than :data:`MAX_EXPRESSION_DEPTH` levels deep (see :func:`nesting`:
     chains of binary operators, attribute, call and subscript trailers, ``not``/``lambda``/
     ternary chains, brackets, concatenated strings, ``elif`` branches). That is far beyond
     hand-written code (the deepest in CPython's standard library and in torch is about
     550, a string concatenation in ``pydoc_data/topics.py``; most files stay under 60)
     and keeps LibCST's parse of the deepest expression near a second (a 1,000-term
     ``a+b+...`` chain: 0.3 s; ``a[0][0]...`` with 1,000 subscripts: 2 s).

   Both raise :class:`TooDeeplyNested`, a :class:`libcst.ParserSyntaxError` placed where
   the limit is crossed: the check reports it as ``LC001`` on that line, as a syntax error
   (and as ruff reports what its parser refuses). The file is not analyzed; the others are.

2. :func:`run_deep` runs a function in a worker thread with a large stack
   (:data:`DEEP_STACK_SIZE`) and a raised recursion limit, so what passes the scan is parsed
   and analyzed without overflowing: the command line checks each file this way.

:func:`parse_module` does both for one text.

3. :func:`parse_tree` is ``libcst.parse_module`` without LibCST's validation of each node as
   it is built (``CSTNode.__post_init__`` runs ``_validate()``: whitespace, parentheses and
   operators checked by regular expressions): a tree built by the parser from source text
   is valid by construction, and the checks are a large share of the parse (the trees compare
   equal with ``deep_equals``). Nodes built by
   code (the fixes) are still validated. LibCST's own comment on ``__post_init__`` suggests
   the same ("avoid validating the tree when parsing a file").
"""

from __future__ import annotations

import keyword
import re
import sys
import threading
from dataclasses import dataclass
from typing import Callable, TypeVar

import libcst as cst

#: CPython's limit on nested brackets (``MAXLEVEL`` of its tokenizer): deeper is a syntax error.
MAX_BRACKET_DEPTH = 200
#: The estimated expression depth above which a file is not parsed (see :func:`nesting`).
MAX_EXPRESSION_DEPTH = 1000
#: Stack of the worker threads of :func:`run_deep`, in bytes (virtual memory: pages are
#: committed only when touched).
DEEP_STACK_SIZE = 512 * 1024 * 1024
#: The recursion limit while a :func:`run_deep` worker runs.
DEEP_RECURSION_LIMIT = 100_000

T = TypeVar("T")


class TooDeeplyNested(cst.ParserSyntaxError):
    """The text nests brackets or expressions deeper than loopcheck parses.

    A :class:`libcst.ParserSyntaxError`, so callers that report syntax errors report it the
    same way: ``message`` says which limit, ``raw_line`` (1-based) and ``raw_column``
    (0-based) where it is crossed.
    """


@dataclass(frozen=True)
class Nesting:
    """How deep a text nests (see :func:`nesting`).

    Attributes:
        brackets: the deepest bracket nesting; ``brackets_at``: its ``(line, column)``
            (1-based line, 0-based column) where first reached.
        depth: the deepest estimated expression depth; ``depth_at``: where first reached.
    """

    brackets: int
    brackets_at: tuple[int, int]
    depth: int
    depth_at: tuple[int, int]


# Blanks, then one alternation tried left to right: comments, strings (optional prefix,
# triple quotes first), line continuations, line breaks, words, brackets, multi-character
# operators, then any single character. (The blanks are taken with the token: faster than
# letting the search step over them.)
_TOKEN = re.compile(
    r"""
    [ \t\f]*
    (?:
    (?P<comment>\#[^\r\n]*)
  | (?P<string>(?P<prefix>[rRbBuUfFtT]{0,3})
        (?: '''(?:[^'\\]|\\.|'(?!''))*(?:'''|\Z)
          | \"\"\"(?:[^"\\]|\\.|"(?!""))*(?:\"\"\"|\Z)
          | '(?:[^'\\\r\n]|\\(?:\r\n|.))*(?:'|(?=[\r\n])|\Z)
          | "(?:[^"\\\r\n]|\\(?:\r\n|.))*(?:"|(?=[\r\n])|\Z)
        ))
  | (?P<cont>\\(?:\r\n|\r|\n))
  | (?P<newline>\r\n|\r|\n)
  | (?P<word>[^\W\d]\w*)
  | (?P<number>\d[\w.]*)
  | (?P<open>[(\[{])
  | (?P<close>[)\]}])
  | (?P<reset>->|:=|\*\*=|//=|>>=|<<=|[-+*/%@&|^]=|==|!=|<=|>=|[=,;])
  | (?P<op>\*\*|//|<<|>>|[-+*/%@&|^~.])
  | (?P<other>\S)
    )
    """,
    re.VERBOSE | re.DOTALL,
)
# Keywords that nest the expression they are in (``not not x``, ``a or b or c``, ``lambda:``,
# ``x if c else y``, ``await``): each counts one level, as an operator does.
_NESTING_WORDS = frozenset({"and", "or", "not", "if", "else", "lambda", "await", "yield"})
_KEYWORDS = frozenset(keyword.kwlist)
_FSTRING_BRACKETS = re.compile(r"[(\[{)\]}]")


#: A line's end, for Python's tokenizer as for LibCST's: ``\n``, ``\r\n`` or a lone ``\r``.
LINE_END = re.compile(r"\r\n|\r|\n")


def line_starts(source: str) -> list[int]:
    """Where each line of ``source`` starts (offsets; the first is 0), lines ending as
    :data:`LINE_END` says."""
    return [0] + [m.end() for m in LINE_END.finditer(source)]


def _where(starts: list[int], offset: int) -> tuple[int, int]:
    from bisect import bisect_right

    i = bisect_right(starts, offset) - 1
    return i + 1, offset - starts[i]


def nesting(source: str, stop_above: tuple[int, int] | None = None) -> Nesting:
    """Measure how deep ``source`` nests, without parsing it (strings and comments skipped).

    The expression depth estimates the depth of the tree LibCST builds, weighted by what
    parsing it costs: within each bracket level (and each logical line), every binary
    operator, ``.``, call or subscript trailer and nesting keyword (``and``, ``or``, ``not``,
    ``if``, ``else``, ``lambda``, ``await``, ``yield``) counts 1, an implicitly concatenated
    string 1/4 (LibCST nests ``'a' 'b' 'c'`` too, but parses it cheaply), until a ``,``, ``;``,
    an ``=``-like token or the end of the logical line starts a new expression; each open
    bracket counts 2 on top of the counts of the levels around it. It over-estimates rather
    than misses: a run of operators is one nested chain in the tree (``a+b+c`` is
    ``(a+b)+c``). Brackets inside f-strings count too. Each ``elif`` of an open
    ``if``/``elif`` chain counts 1 as well (LibCST nests each in the one before).

    Args:
        source: the text of a Python file.
        stop_above: ``(brackets, depth)``: stop at the first token where either is exceeded.

    Returns:
        The deepest bracket nesting and (rounded down) expression depth, and where each is
        first reached (with ``stop_above``: up to where the scan stopped).
    """
    # Counts are in quarters: an operator is 4, a concatenated string 1, a bracket 8.
    max_brackets, max_depth = stop_above if stop_above is not None else (-1, -1)
    max_depth = max_depth * 4 + 3 if max_depth >= 0 else -1
    brackets, brackets_off = 0, 0
    depth, depth_off = 0, 0
    stack: list[int] = []  # the chain count of each enclosing bracket level
    chain = 0  # the chain count of the innermost level
    outer = 0  # 8 * len(stack) + sum(stack)
    prev_string = False
    prev_atom = False  # the previous token ends an operand: a bracket after it is a trailer
    elifs: dict[int, int] = {}  # indentation -> the ``elif`` branches of the open chain there
    statements = 0  # 4 * sum(elifs.values())
    line_start = True
    for m in _TOKEN.finditer(source):
        kind = m.lastgroup
        if kind == "comment" or kind == "cont":
            continue
        if kind == "newline":
            if not stack:
                chain = 0
                prev_string = prev_atom = False
                line_start = True
            continue
        if line_start:  # the first token of a logical line: a statement
            line_start = False
            indent = m.start(kind) - m.start()
            word = m.group(kind) if kind == "word" else ""
            if elifs:  # chains end at a statement of their indentation, or one less indented
                for k in [k for k in elifs if k > indent or (k == indent and word not in ("elif", "else"))]:
                    statements -= 4 * elifs.pop(k)
            if word == "elif":  # LibCST nests each elif in the orelse of the one before
                elifs[indent] = elifs.get(indent, 0) + 1
                statements += 4
        if kind == "string":
            if prev_string:
                chain += 1
            prev_string = True
            if m.group("prefix") and m.group("prefix").lower().strip("rbu"):  # f- and t-strings
                inner = level = 0
                for b in _FSTRING_BRACKETS.findall(m.group("string")):
                    level = level + 1 if b in "([{" else max(level - 1, 0)
                    inner = max(inner, level)
                if len(stack) + inner > brackets:
                    brackets, brackets_off = len(stack) + inner, m.start(kind)
                chain += 8 * inner
            prev_atom = True
        else:
            prev_string = False
            if kind == "open":
                if prev_atom:  # a call or subscript trailer: one more level around the operand
                    chain += 4
                stack.append(chain)
                outer += 8 + chain
                chain = 0
                if len(stack) > brackets:
                    brackets, brackets_off = len(stack), m.start(kind)
            elif kind == "close":
                if stack:
                    chain = stack.pop()
                    outer -= 8 + chain
            elif kind == "reset":
                chain = 0
            elif kind == "op" or (kind == "word" and m.group(kind) in _NESTING_WORDS):
                chain += 4
            prev_atom = kind == "close" or kind == "number" or (kind == "word" and m.group(kind) not in _KEYWORDS)
        if statements + outer + chain > depth:
            depth, depth_off = statements + outer + chain, m.start(kind)
            if depth > max_depth >= 0:
                break
        if brackets > max_brackets >= 0:
            break
    starts = line_starts(source)
    return Nesting(brackets, _where(starts, brackets_off), depth // 4, _where(starts, depth_off))


def check_nesting(source: str) -> None:
    """Raise :class:`TooDeeplyNested` if ``source`` nests deeper than loopcheck parses
    (:data:`MAX_BRACKET_DEPTH` brackets, :data:`MAX_EXPRESSION_DEPTH` estimated levels)."""
    found = nesting(source, (MAX_BRACKET_DEPTH, MAX_EXPRESSION_DEPTH))
    lines = source.splitlines(keepends=True)
    if found.brackets > MAX_BRACKET_DEPTH:
        line, column = found.brackets_at
        raise TooDeeplyNested(
            f"too many nested parentheses (more than {MAX_BRACKET_DEPTH})",
            lines=lines, raw_line=line, raw_column=column,
        )
    if found.depth > MAX_EXPRESSION_DEPTH:
        line, column = found.depth_at
        raise TooDeeplyNested(
            f"nested too deeply to analyze (more than {MAX_EXPRESSION_DEPTH} levels of expressions or "
            "elif branches)",
            lines=lines, raw_line=line, raw_column=column,
        )


_local = threading.local()
_lock = threading.Lock()
_running = 0  # run_deep workers alive
_saved_limit = 0  # the recursion limit before the first of them started


def in_deep_worker() -> bool:
    """Whether the current thread is a :func:`run_deep` worker."""
    return getattr(_local, "deep", False)


def run_deep(fn: Callable[..., T], *args, **kwargs) -> T:
    """``fn(*args, **kwargs)`` run in a worker thread with a :data:`DEEP_STACK_SIZE` stack and
    the recursion limit raised to :data:`DEEP_RECURSION_LIMIT` (restored when no worker is
    left), the caller waiting for it. Inside a worker, ``fn`` runs directly.

    Returns:
        What ``fn`` returns.

    Raises:
        Whatever ``fn`` raises (``BaseException`` included: a ``KeyboardInterrupt`` in the
        worker, or pyo3's ``PanicException`` from a native parser), re-raised in the caller.
        When no thread with such a stack can be started (a tight ``ulimit -v``), ``fn`` runs
        in the calling thread, still behind :func:`check_nesting` where it parses.
    """
    global _running, _saved_limit
    if in_deep_worker():
        return fn(*args, **kwargs)
    result: list = []
    error: list[BaseException] = []

    def work() -> None:
        _local.deep = True
        try:
            result.append(fn(*args, **kwargs))
        except BaseException as err:  # noqa: BLE001 - handed to the caller
            error.append(err)

    worker = threading.Thread(target=work, name="loopcheck-deep", daemon=True)
    started = False
    with _lock:
        if _running == 0:
            _saved_limit = sys.getrecursionlimit()
            sys.setrecursionlimit(max(_saved_limit, DEEP_RECURSION_LIMIT))
        _running += 1
        try:
            old_size = threading.stack_size(DEEP_STACK_SIZE)  # for threads started while set
            try:
                worker.start()
                started = True
            finally:
                threading.stack_size(old_size)
        except (ValueError, RuntimeError):  # a refused size, or no memory for such a stack
            pass
        if not started:
            _running -= 1
            if _running == 0:
                sys.setrecursionlimit(_saved_limit)
    if not started:
        return fn(*args, **kwargs)
    try:
        worker.join()
    finally:
        with _lock:
            _running -= 1
            if _running == 0:
                sys.setrecursionlimit(_saved_limit)
    if error:
        raise error[0]
    return result[0]


_VALIDATING = cst.CSTNode.__dict__.get("__post_init__")
#: Whether ``CSTNode.__post_init__`` is LibCST's own (it only validates) and may be skipped.
_CAN_SKIP = (getattr(_VALIDATING, "__qualname__", "") == "CSTNode.__post_init__"
             and getattr(_VALIDATING, "__module__", "").startswith("libcst"))


def _unvalidated(self: cst.CSTNode) -> None:
    pass


def parse_tree(source: str) -> cst.Module:
    """``libcst.parse_module(source)`` without validating each node built (see the module
    docstring); no nesting check, no big stack: :func:`parse_module` adds those. While it
    runs, a node another thread builds is not validated either (loopcheck builds none then:
    checks run one at a time in a process, and fixes after the parse).

    Raises:
        libcst.ParserSyntaxError: the text does not parse.
    """
    if not _CAN_SKIP:
        return cst.parse_module(source)
    cst.CSTNode.__post_init__ = _unvalidated
    try:
        return cst.parse_module(source)
    finally:
        cst.CSTNode.__post_init__ = _VALIDATING


def parse_module(source: str) -> cst.Module:
    """Parse a Python file's text with LibCST, safely.

    The text is first measured (:func:`check_nesting`), then parsed in a :func:`run_deep`
    worker (or directly, when already in one).

    Args:
        source: the file's text.

    Returns:
        The module.

    Raises:
        TooDeeplyNested: deeper than :data:`MAX_BRACKET_DEPTH` brackets or
            :data:`MAX_EXPRESSION_DEPTH` expression levels (a ``ParserSyntaxError``).
        libcst.ParserSyntaxError: the text does not parse.
        RuntimeError: LibCST's native parser panicked (a bug in LibCST, not a syntax error).
    """
    check_nesting(source)
    try:
        return run_deep(parse_tree, source)
    except cst.ParserSyntaxError:
        raise
    except Exception:
        raise
    except BaseException as err:
        if type(err).__name__ == "PanicException":  # pyo3: not an Exception subclass
            raise RuntimeError(f"LibCST's parser failed: {err}") from None
        raise


#: CPython's tokenizer: a tab in a line's indentation advances the column to the next multiple
#: of this (``TABSIZE`` of ``Parser/tokenizer.c``); a form feed sets it back to 0.
TAB_SIZE = 8


def indentation_width(blanks: str) -> int:
    """The column CPython's tokenizer gives a line whose indentation is ``blanks`` (spaces,
    tabs, form feeds): a space counts 1, a tab advances to the next multiple of
    :data:`TAB_SIZE`, a form feed resets the column to 0."""
    column = 0
    for ch in blanks:
        if ch == "\t":
            column = (column // TAB_SIZE + 1) * TAB_SIZE
        elif ch == "\f":
            column = 0
        else:
            column += 1
    return column


@dataclass(frozen=True)
class Reindented:
    """A text whose indentation was written again in spaces (see :func:`reindent`).

    Attributes:
        text: the new text; its rows are the original's, line ends included.
        shifts: 1-based row → ``(original, new)``: the length, in characters, of that row's
            indentation before and after; only the rows that changed.
    """

    text: str
    shifts: dict[int, tuple[int, int]]

    def column(self, row: int, column: int) -> int:
        """The column of the original text at ``(row, column)`` of :attr:`text` (1-based
        both): on a re-indented row, a column after the new indentation moves by the
        difference of the two lengths; one inside it stays where it is when the original
        indentation is that long, else it is the first column after the original indentation
        (a column of the original row, not past its indentation)."""
        shift = self.shifts.get(row)
        if shift is None:
            return column
        old, new = shift
        if column - 1 >= new:
            return column - new + old
        return min(column - 1, old) + 1


_INDENT = re.compile(r"[ \t\f]*")


def reindent(source: str) -> Reindented | None:
    """``source`` with the indentation of each line that has a tab (or a form feed) in it
    written again in spaces, column for column as CPython's tokenizer counts it
    (:func:`indentation_width`); the lines inside a string that spans several lines are left as
    they are (their blanks are the string's characters). ``None`` when no line changes or
    Python's :mod:`tokenize` refuses the text.

    CPython accepts indentation LibCST's tokenizer refuses (a block indented with spaces whose
    next line is a tab then spaces, ``"    with x:\\n\\t    y()"``, which CPython counts as
    column 12); the spaces say the same to both. Rows do not change; columns of the
    re-indented rows do (:meth:`Reindented.column` maps them back).
    """
    import io
    import tokenize

    lines = LINE_END.split(source)
    if not any("\t" in (b := _INDENT.match(line)[0]) or "\f" in b for line in lines):
        return None
    inside: set[int] = set()  # rows that start inside a string
    starts: list[tuple[int, int]] = []  # (row, depth) of each f-string/t-string opened
    try:
        # (universal newlines: tokenize's rows are then :data:`LINE_END`'s, a lone ``\r`` included)
        for tok in tokenize.generate_tokens(io.StringIO(source, newline=None).readline):
            name = tokenize.tok_name.get(tok.type, "")
            if tok.type == tokenize.STRING and tok.end[0] > tok.start[0]:
                inside.update(range(tok.start[0] + 1, tok.end[0] + 1))
            elif name in ("FSTRING_START", "TSTRING_START"):
                starts.append(tok.start)
            elif name in ("FSTRING_END", "TSTRING_END") and starts:
                first = starts.pop()[0]
                inside.update(range(first + 1, tok.end[0] + 1))
    except (tokenize.TokenError, SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    ends = LINE_END.findall(source) + [""]
    shifts: dict[int, tuple[int, int]] = {}
    out = []
    for row, (line, end) in enumerate(zip(lines, ends), start=1):
        blanks = _INDENT.match(line)[0]
        if row not in inside and ("\t" in blanks or "\f" in blanks):
            spaces = " " * indentation_width(blanks)
            shifts[row] = (len(blanks), len(spaces))
            line = spaces + line[len(blanks):]
        out.append(line + end)
    if not shifts:
        return None
    return Reindented("".join(out), shifts)


def parse_reindented(source: str) -> tuple[cst.Module, Reindented] | None:
    """LibCST's tree of a text CPython's parser accepts but LibCST's refuses for its
    indentation: the tree of :func:`reindent`'s text, kept only when CPython reads that text
    as the same program (equal ``ast.dump``, positions left out). Only parses (CPython's
    parser with ``PyCF_ONLY_AST``): nothing of the text runs. ``None`` when CPython refuses
    ``source``, no line has a tab in its indentation, or LibCST refuses the new text too, or
    the program would differ.

    The tree's positions are those of :attr:`Reindented.text`: the same rows, columns mapped
    back by :meth:`Reindented.column`. Its code is not the file's: what edits the file from it
    (fixes) must not use it.
    """
    import ast
    import warnings

    def program(text: str) -> str | None:
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # (invalid escape sequences and the like)
                return ast.dump(compile(text, "<reindented>", "exec", ast.PyCF_ONLY_AST, dont_inherit=True))
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            return None

    original = program(source)
    if original is None:
        return None
    new = reindent(source)
    if new is None:
        return None
    try:
        module = parse_module(new.text)
    except (cst.ParserSyntaxError, RuntimeError, RecursionError, MemoryError):
        return None
    if program(module.code) != original:
        return None
    return module, new
