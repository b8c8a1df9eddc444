"""The value of a literal written in the code, read alike from LibCST and from ``ast``.

A literal is a string, an integer or a float (signed or not: ``-1``, ``+0.5``), ``True``,
``False`` or ``None``. The builder reads the literals of the code it builds (arguments,
defaults, comparands) from LibCST nodes; :mod:`loopcheck.engine.entry_defaults` reads those of
the calls in the project's other files from ``ast`` nodes. Both take the same values, so that a
parameter a call of the project binds is the same constant whether the call is inlined or read
from another file. A leaf module: it imports nothing of the analysis.
"""

from __future__ import annotations

import ast

import libcst as cst

#: What :func:`literal_value` and :func:`ast_literal_value` return for an expression that is
#: not a literal.
NO_VALUE = object()

_NAMED = {"True": True, "False": False, "None": None}


def literal_value(node: cst.CSTNode | None):
    """The value of a LibCST literal (``"train"``, ``3``, ``-0.5``, ``True``, ``None``), else
    :data:`NO_VALUE`."""
    sign = 1
    if type(node) is cst.UnaryOperation and type(node.operator) in (cst.Minus, cst.Plus):
        sign = -1 if type(node.operator) is cst.Minus else 1
        node = node.expression
        if type(node) not in (cst.Integer, cst.Float):
            return NO_VALUE
    if type(node) in (cst.SimpleString, cst.ConcatenatedString):
        try:
            value = node.evaluated_value
        except Exception:  # noqa: BLE001 - an odd string prefix
            return NO_VALUE
        return value if type(value) is str else NO_VALUE
    if type(node) in (cst.Integer, cst.Float):
        return sign * node.evaluated_value if sign == -1 else node.evaluated_value
    if type(node) is cst.Name and node.value in _NAMED:
        return _NAMED[node.value]
    return NO_VALUE


def ast_literal_value(node: ast.expr):
    """The value of an ``ast`` literal, as :func:`literal_value` reads one; else
    :data:`NO_VALUE`."""
    sign = 1
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        sign = -1 if isinstance(node.op, ast.USub) else 1
        node = node.operand
        if not (isinstance(node, ast.Constant) and type(node.value) in (int, float)):
            return NO_VALUE
    if not isinstance(node, ast.Constant) or type(node.value) not in (str, int, float, bool, type(None)):
        return NO_VALUE
    return sign * node.value if sign == -1 else node.value
