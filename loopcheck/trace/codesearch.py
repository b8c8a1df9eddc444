"""Find the line of a user's function that did something the hooks cannot see happen.

Some runtime facts are found after the fact: a loss tensor still alive one step later (who
stored it, and where?), a model replaced after its optimizer was built (which assignment?).
The object that holds the loss, or the name the new model is bound to, is found in the live
user frames (:mod:`loopcheck.trace.holders`); this module then reads the bytecode of those
frames' code (``dis``, with Python 3.11's instruction positions) for the statement that
stores into that name or attribute, or that passes the loss to that holder.
"""

from __future__ import annotations

import dis
import types
from typing import Iterable

from .sites import Site

LOADS = {"LOAD_NAME", "LOAD_FAST", "LOAD_GLOBAL", "LOAD_DEREF", "LOAD_CLOSURE", "LOAD_FAST_CHECK",
         "LOAD_FAST_AND_CLEAR", "LOAD_FAST_LOAD_FAST"}
STORES = {"STORE_NAME", "STORE_FAST", "STORE_GLOBAL", "STORE_DEREF"}
ATTRS = {"LOAD_ATTR", "LOAD_METHOD", "STORE_ATTR"}
MUTATORS = {"append", "extend", "insert", "add", "update", "setdefault", "__setitem__", "appendleft", "put"}


def code_objects(code: types.CodeType) -> Iterable[types.CodeType]:
    """``code`` and every code object nested in it (functions, classes, comprehensions)."""
    stack = [code]
    while stack:
        c = stack.pop()
        yield c
        stack.extend(k for k in c.co_consts if isinstance(k, types.CodeType))


class Line:
    """The instructions of one source line of one code object, as names and spans."""

    def __init__(self, code: types.CodeType, line: int) -> None:
        self.code = code
        self.line = line
        self.loads: set[str] = set()
        self.stores: set[str] = set()
        self.attrs: list[str] = []
        self.store_attrs: set[str] = set()
        self.subscript_store = False
        self.inplace = False
        self.col: int | None = None
        self.end_col: int | None = None

    def add(self, ins: dis.Instruction) -> None:
        name = ins.argval if isinstance(ins.argval, str) else None
        op = ins.opname
        if op in LOADS and name:
            self.loads.add(name)
        elif op in STORES and name:
            self.stores.add(name)
        elif op in ATTRS and name:
            self.attrs.append(name)
            if op == "STORE_ATTR":
                self.store_attrs.add(name)
        elif op == "STORE_SUBSCR":
            self.subscript_store = True
        elif op == "BINARY_OP" and "=" in (ins.argrepr or ""):
            self.inplace = True
        elif op.startswith("INPLACE_"):
            self.inplace = True
        pos = getattr(ins, "positions", None)
        if pos is not None and pos.lineno == self.line and pos.end_lineno == self.line \
                and pos.col_offset is not None and pos.end_col_offset is not None:
            self.col = pos.col_offset if self.col is None else min(self.col, pos.col_offset)
            self.end_col = pos.end_col_offset if self.end_col is None else max(self.end_col, pos.end_col_offset)

    def site(self) -> Site:
        """The statement's span (the instructions of this line)."""
        return Site(self.code.co_filename, self.line, self.line, self.col, self.end_col, self.code.co_name)


def lines_of(code: types.CodeType) -> list[Line]:
    """The :class:`Line` of each source line of ``code`` and the code nested in it, in order."""
    out: dict[tuple[int, int], Line] = {}
    for c in code_objects(code):
        for ins in dis.get_instructions(c):
            pos = getattr(ins, "positions", None)
            line = pos.lineno if pos is not None and pos.lineno else ins.starts_line
            if not line or line is True:
                continue
            key = (id(c), line)
            if key not in out:
                out[key] = Line(c, line)
            out[key].add(ins)
    return sorted(out.values(), key=lambda ln: ln.line)


def find_store(code: types.CodeType, *, name: str | None = None, attr: str | None = None,
               after: int = 0) -> Site | None:
    """The first statement after line ``after`` that binds ``name`` or assigns attribute ``attr``.

    Args:
        code: the code object to search (nested code included).
        name: a variable name (``model``), or ``None``.
        attr: an attribute name (``fc`` in ``model.fc = ...``), or ``None``.
        after: only lines greater than this one count.
    """
    for ln in lines_of(code):
        if ln.line <= after:
            continue
        if (name and name in ln.stores) or (attr and attr in ln.store_attrs):
            return ln.site()
    return None


def find_keeping(code: types.CodeType, path: list[str], value_names: set[str]) -> Site | None:
    """The statement that stores a value (named ``value_names``) into the holder ``path``.

    ``path`` is the holder as the user's code names it: ``["loss_history"]``, ``["self",
    "losses"]``. A line scores for loading the holder's root name, for naming its attributes,
    for loading one of ``value_names``, and for mutating something (an assignment to the
    holder, a subscript store, an in-place operator, ``append``/``update``/...); the best
    line that loads the holder and mutates wins, the earliest among equals.
    """
    if not path:
        return None
    root, attrs = path[0], path[1:]
    best: tuple[int, int] | None = None
    best_line: Line | None = None
    for ln in lines_of(code):
        if root not in ln.loads and root not in ln.stores:
            continue
        mutates = (root in ln.stores or ln.subscript_store or ln.inplace
                   or any(a in MUTATORS for a in ln.attrs) or bool(ln.store_attrs & set(attrs)))
        if not mutates:
            continue
        score = (1 + sum(1 for a in attrs if a in ln.attrs) + (2 if ln.loads & value_names else 0)
                 + (1 if ln.loads - {root} else 0))  # loads something besides the holder: not `total = 0.0`
        key = (score, -ln.line)
        if best is None or key > best:
            best, best_line = key, ln
    return best_line.site() if best_line is not None else None
