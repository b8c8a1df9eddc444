"""The parsed file a fixer works on: nodes found by position, statements, blocks, names.

Everything here is read off the LibCST tree with ``PositionProvider`` and
a parent map; nothing depends on the analysis engine.
"""

from __future__ import annotations

import re
from typing import Iterable, Iterator, Sequence

import libcst as cst
from libcst.helpers import get_full_name_for_node

from loopcheck.engine.positions import compute_positions
from loopcheck.engine.walk import parent_table
from loopcheck.fixes.model import Edit, Fix, edits_between
from loopcheck.parsing import parse_module

Block = cst.Module | cst.IndentedBlock
Statement = cst.BaseStatement  # SimpleStatementLine or a compound statement
LOOPS = (cst.For, cst.While)
SCOPES = (cst.FunctionDef, cst.ClassDef, cst.Lambda)

OPTIMIZER_CTOR = re.compile(
    r"(^|\.)(optim\.|Adam|AdamW|SGD|RMSprop|Adagrad|Adadelta|Adamax|NAdam|RAdam|LBFGS|Lion|Adafactor|Muon|\w*Optimizer)",
)


class Bindings:
    """The bindings of a file's names, in the order of the tree (:attr:`FixContext.parents`).

    Attributes:
        values: name -> the values assigned to it (``x = v``, ``x: T = v``, ``(x := v)``).
        unknown: names also bound another way, whose value is then not known: a ``for`` or
            comprehension target, ``as`` name, parameter, ``global``/``nonlocal``, an element
            of a tuple or list target.
        augmented: name -> its augmented assignments (``x += v``).
    """

    def __init__(self, ctx: "FixContext") -> None:
        self.values: dict[str, list[cst.CSTNode]] = {}
        self.unknown: set[str] = set()
        self.augmented: dict[str, list[cst.AugAssign]] = {}
        code = ctx.expr_code
        for node in ctx.parents:
            t = type(node)
            if t is cst.Assign:
                for target in node.targets:
                    self.values.setdefault(code(target.target), []).append(node.value)
                    self._elements(ctx, target.target)
            elif t is cst.AnnAssign:
                if node.value is not None:
                    self.values.setdefault(code(node.target), []).append(node.value)
            elif t is cst.For or t is cst.CompFor:
                self._elements(ctx, node.target)
                self.unknown.add(code(node.target))
            elif t is cst.AsName:
                self.unknown.add(code(node.name))
            elif t is cst.NamedExpr:
                self.values.setdefault(code(node.target), []).append(node.value)
            elif t is cst.Param:
                self.unknown.add(node.name.value)
            elif t is cst.Global or t is cst.Nonlocal:
                self.unknown.update(n.name.value for n in node.names)
            elif t is cst.AugAssign:
                self.augmented.setdefault(code(node.target), []).append(node)

    def _elements(self, ctx: "FixContext", target: cst.CSTNode) -> None:
        """The names an unpacking target binds (``a, (b, *c)``) are not known by value."""
        if isinstance(target, (cst.Tuple, cst.List)):
            for el in target.elements:
                self.unknown.add(ctx.expr_code(el.value))
                self._elements(ctx, el.value)
        elif isinstance(target, cst.StarredElement):
            self.unknown.add(ctx.expr_code(target.value))
            self._elements(ctx, target.value)

    def of(self, name: str) -> list[cst.CSTNode] | None:
        """The values assigned to ``name``, or ``None`` when it is also bound another way."""
        if name in self.unknown:
            return None
        return list(self.values.get(name, ()))


class FixContext:
    """One parsed source with the lookups fixers need. Build it once per text."""

    def __init__(self, source: str, module: cst.Module | None = None, positions=None) -> None:
        """``module`` and ``positions`` (its ``PositionProvider`` map), when the caller already
        has them, spare a second parse."""
        self.source = source
        self.module = module if module is not None else parse_module(source)
        if positions is None or module is None:
            positions = compute_positions(self.module)  # PositionProvider's ranges, without its visit
        self.positions = positions
        self.parents = parent_table(self.module)  # ParentNodeProvider is several times slower
        self._roles: dict[str, set[str]] = {}
        self._by_start: dict[tuple[int, int], list[cst.CSTNode]] | None = None
        self._calls: list[cst.Call] | None = None
        self._rendered: str | None = None  # self.module.code, once asked for
        self._bindings: Bindings | None = None

    # ------------------------------------------------------------------ positions

    def _index(self) -> None:
        by_start: dict[tuple[int, int], list[cst.CSTNode]] = {}
        calls = []
        for node, rng in self.positions.items():
            by_start.setdefault((rng.start.line, rng.start.column + 1), []).append(node)
            if isinstance(node, cst.Call):
                calls.append(node)
        calls.sort(key=lambda c: (self.positions[c].start.line, self.positions[c].start.column))
        self._by_start, self._calls = by_start, calls

    def start(self, node: cst.CSTNode) -> tuple[int, int]:
        """1-based ``(row, column)`` where ``node`` starts."""
        p = self.positions[node].start
        return p.line, p.column + 1

    def node_at(self, row: int, column: int, end_row: int, end_column: int, types=(cst.CSTNode,)):
        """The node (of one of ``types``) spanning exactly this 1-based, end-exclusive range;
        the outermost one when several do."""
        if self._by_start is None:
            self._index()
        found = None
        for node in self._by_start.get((row, column), []):
            end = self.positions[node].end
            if (end.line, end.column + 1) == (end_row, end_column) and isinstance(node, types):
                if found is None or self.contains(node, found):
                    found = node
        return found

    def nodes_starting_at(self, row: int, column: int) -> list[cst.CSTNode]:
        """The nodes that start at this 1-based position (outermost first)."""
        if self._by_start is None:
            self._index()
        nodes = self._by_start.get((row, column), [])
        return sorted(nodes, key=lambda n: sum(1 for _ in self.ancestors(n)))

    def calls(self) -> list[cst.Call]:
        """Every call of the file, in source order."""
        if self._calls is None:
            self._index()
        return self._calls

    # ------------------------------------------------------------------ tree

    def parent(self, node: cst.CSTNode) -> cst.CSTNode | None:
        return self.parents.get(node)

    def ancestors(self, node: cst.CSTNode) -> Iterator[cst.CSTNode]:
        cur = self.parents.get(node)
        while cur is not None:
            yield cur
            cur = self.parents.get(cur)

    def contains(self, outer: cst.CSTNode, inner: cst.CSTNode) -> bool:
        return inner is outer or any(a is outer for a in self.ancestors(inner))

    def statement_of(self, node: cst.CSTNode) -> Statement | None:
        """The statement that directly holds ``node`` in a block (its line, or the compound
        statement whose header holds it)."""
        cur = node
        while cur is not None:
            parent = self.parents.get(cur)
            if isinstance(cur, (cst.SimpleStatementLine, cst.BaseCompoundStatement)) and isinstance(
                parent, (cst.Module, cst.IndentedBlock)
            ):
                return cur
            cur = parent
        return None

    def block_of(self, stmt: Statement) -> tuple[Block, int] | None:
        """The block holding ``stmt`` and its index in the block's body."""
        parent = self.parents.get(stmt)
        if not isinstance(parent, (cst.Module, cst.IndentedBlock)):
            return None
        for i, s in enumerate(parent.body):
            if s is stmt:
                return parent, i
        return None

    def owner_of_block(self, block: Block) -> cst.CSTNode | None:
        """The compound statement (or ``else``/``finally`` clause) an indented block belongs to."""
        return None if isinstance(block, cst.Module) else self.parents.get(block)

    def scope_of(self, node: cst.CSTNode) -> cst.CSTNode:
        """The innermost function (or the module) ``node`` runs in."""
        for a in self.ancestors(node):
            if isinstance(a, (cst.FunctionDef, cst.Lambda)):
                return a
        return self.module

    def loops_around(self, node: cst.CSTNode) -> list[cst.CSTNode]:
        """``for``/``while`` statements around ``node`` inside its scope, outermost first."""
        out = []
        for a in self.ancestors(node):
            if isinstance(a, SCOPES):
                break
            if isinstance(a, LOOPS) and not self.contains(a.iter if isinstance(a, cst.For) else a.test, node):
                out.append(a)
        return out[::-1]

    def body_block(self, compound: cst.BaseCompoundStatement) -> cst.IndentedBlock | None:
        body = getattr(compound, "body", None)
        return body if isinstance(body, cst.IndentedBlock) else None

    # ------------------------------------------------------------------ code

    def code(self, node: cst.CSTNode) -> str:
        return self.module.code_for_node(node)

    def expr_code(self, node: cst.CSTNode) -> str:
        """The source of an expression on one line, without surrounding whitespace."""
        return " ".join(self.code(node).split())

    def bindings(self) -> "Bindings":
        """How each name (an expression's one-line source: ``loss``, ``self.criterion``) is
        bound anywhere in the file (:class:`Bindings`), read in one pass over the tree and
        kept: fixers ask about many names, each of which would be a pass of its own."""
        if self._bindings is None:
            self._bindings = Bindings(self)
        return self._bindings

    def calls_in(self, node: cst.CSTNode) -> Iterator[cst.Call]:
        for call in self.calls():
            if self.contains(node, call):
                yield call

    def method_calls(self, node: cst.CSTNode, method: str) -> Iterator[tuple[cst.Call, str]]:
        """``(call, receiver source)`` of each ``receiver.method(...)`` call inside ``node``."""
        for call in self.calls_in(node):
            if isinstance(call.func, cst.Attribute) and call.func.attr.value == method:
                yield call, self.expr_code(call.func.value)

    def call_statement(self, call: cst.Call) -> cst.SimpleStatementLine | None:
        """The statement line if ``call`` is the whole of a one-statement line (``x.f()``), or its
        value (``y = x.f()``)."""
        stmt = self.statement_of(call)
        if not isinstance(stmt, cst.SimpleStatementLine) or len(stmt.body) != 1:
            return None
        small = stmt.body[0]
        if isinstance(small, cst.Expr) and small.value is call:
            return stmt
        if isinstance(small, (cst.Assign, cst.AnnAssign)) and small.value is call:
            return stmt
        return None

    def expr_call(self, stmt: cst.CSTNode) -> cst.Call | None:
        """The call of a ``x.f(...)`` expression statement line."""
        if isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1:
            small = stmt.body[0]
            if isinstance(small, cst.Expr) and isinstance(small.value, cst.Call):
                return small.value
        return None

    def is_method_stmt(self, stmt: cst.CSTNode, method: str, receiver: str | None = None) -> bool:
        call = self.expr_call(stmt)
        return (
            call is not None and isinstance(call.func, cst.Attribute) and call.func.attr.value == method
            and (receiver is None or self.expr_code(call.func.value) == receiver)
        )

    # ------------------------------------------------------------------ names

    @staticmethod
    def names_read(node: cst.CSTNode) -> set[str]:
        """Every plain name mentioned in ``node`` (reads and writes: conservative)."""
        out: set[str] = set()

        class V(cst.CSTVisitor):
            def visit_Name(self, n: cst.Name) -> None:
                out.add(n.value)

            def visit_Attribute(self, n: cst.Attribute) -> bool:
                # ``a.b``: ``b`` is not a name of its own
                n.value.visit(self)
                return False

        node.visit(V())
        return out

    @staticmethod
    def names_written(node: cst.CSTNode) -> set[str]:
        """Names a statement binds (assignment, augmented assignment, loop and with targets,
        walrus, imports, definitions)."""
        out: set[str] = set()

        def targets(t: cst.CSTNode) -> None:
            if isinstance(t, cst.Name):
                out.add(t.value)
            elif isinstance(t, (cst.Tuple, cst.List)):
                for el in t.elements:
                    targets(el.value)
            elif isinstance(t, cst.StarredElement):
                targets(t.value)
            elif isinstance(t, (cst.Attribute, cst.Subscript)):
                base = t.value
                while isinstance(base, (cst.Attribute, cst.Subscript)):
                    base = base.value
                if isinstance(base, cst.Name):
                    out.add(base.value)  # mutating ``a.x`` / ``a[i]`` changes what ``a`` reads as

        class V(cst.CSTVisitor):
            def visit_AssignTarget(self, n: cst.AssignTarget) -> None:
                targets(n.target)

            def visit_AugAssign(self, n: cst.AugAssign) -> None:
                targets(n.target)

            def visit_AnnAssign(self, n: cst.AnnAssign) -> None:
                targets(n.target)

            def visit_For(self, n: cst.For) -> None:
                targets(n.target)

            def visit_CompFor(self, n: cst.CompFor) -> None:
                pass  # comprehension variables do not leak

            def visit_AsName(self, n: cst.AsName) -> None:
                targets(n.name)

            def visit_NamedExpr(self, n: cst.NamedExpr) -> None:
                targets(n.target)

            def visit_FunctionDef(self, n: cst.FunctionDef) -> bool:
                out.add(n.name.value)
                return False

            def visit_ClassDef(self, n: cst.ClassDef) -> bool:
                out.add(n.name.value)
                return False

            def visit_Import(self, n: cst.Import) -> None:
                for alias in n.names:
                    out.add(alias.evaluated_alias or alias.evaluated_name.split(".")[0])

            def visit_ImportFrom(self, n: cst.ImportFrom) -> None:
                if not isinstance(n.names, cst.ImportStar):
                    for alias in n.names:
                        out.add(alias.evaluated_alias or alias.evaluated_name)

        node.visit(V())
        return out

    def independent(self, moved: cst.CSTNode, others: Sequence[cst.CSTNode]) -> bool:
        """Whether ``moved`` can swap places with ``others``: it reads nothing they bind and
        binds nothing they mention."""
        reads, writes = self.names_read(moved), self.names_written(moved)
        for o in others:
            o_writes = self.names_written(o)
            if reads & o_writes or writes & (self.names_read(o) | o_writes):
                return False
        return True

    def bound_in_scope(self, name: str, scope: cst.CSTNode) -> bool:
        """Whether ``name`` is a parameter of function ``scope`` or bound anywhere in it (or, for
        the module, at its top level)."""
        if isinstance(scope, cst.FunctionDef):
            params = scope.params
            all_params = [*params.posonly_params, *params.params, *params.kwonly_params]
            if params.star_arg and isinstance(params.star_arg, cst.Param):
                all_params.append(params.star_arg)
            if params.star_kwarg:
                all_params.append(params.star_kwarg)
            if any(p.name.value == name for p in all_params):
                return True
            return name in self.names_written(scope.body)
        if isinstance(scope, cst.Module):
            for stmt in scope.body:
                if isinstance(stmt, (cst.FunctionDef, cst.ClassDef)):
                    if stmt.name.value == name:
                        return True
                    continue
                if name in self.names_written(stmt):
                    return True
        return False

    def valid_at(self, expr: str, node: cst.CSTNode) -> bool:
        """Whether expression ``expr`` (``model``, ``self.model``) can be evaluated where ``node``
        runs: its root name is bound in that function, or at module level."""
        root = re.match(r"[A-Za-z_]\w*", expr)
        if not root:
            return False
        name = root.group(0)
        scope = self.scope_of(node)
        if name == "self":
            return isinstance(scope, cst.FunctionDef) and self.bound_in_scope("self", scope)
        if isinstance(scope, cst.FunctionDef) and self.bound_in_scope(name, scope):
            return True
        return self.bound_in_scope(name, self.module)

    def torch_attr(self, attr: str) -> str | None:
        """How this file spells ``torch.<attr>``: ``torch.no_grad`` after ``import torch``,
        ``T.no_grad`` after ``import torch as T``, ``no_grad`` after ``from torch import no_grad``."""
        for stmt in self.module.body:
            if not isinstance(stmt, cst.SimpleStatementLine):
                continue
            for small in stmt.body:
                if isinstance(small, cst.Import):
                    for alias in small.names:
                        if alias.evaluated_name == "torch":
                            return f"{alias.evaluated_alias or 'torch'}.{attr}"
                        if alias.evaluated_name.startswith("torch.") and not alias.evaluated_alias:
                            return f"torch.{attr}"  # ``import torch.nn`` binds ``torch``
                elif isinstance(small, cst.ImportFrom) and not isinstance(small.names, cst.ImportStar):
                    mod = get_full_name_for_node(small.module) if small.module else ""
                    if mod == "torch" and not small.relative:
                        for alias in small.names:
                            if alias.evaluated_name == attr:
                                return alias.evaluated_alias or attr
        return None

    # ------------------------------------------------------------------ roles, by syntax

    def optimizer_names(self) -> set[str]:
        """Expressions that hold an optimizer: assigned from a ``torch.optim`` constructor,
        stepped by a GradScaler, or cleared with ``zero_grad()`` and stepped."""
        if "optimizers" not in self._roles:
            self._roles["optimizers"] = self._optimizer_names()
        return self._roles["optimizers"]

    def _optimizer_names(self) -> set[str]:
        out: set[str] = set()
        for call in self.calls():
            parent = self.parents.get(call)
            if isinstance(parent, cst.Assign) and parent.value is call and len(parent.targets) == 1:
                callee = self.expr_code(call.func)
                if OPTIMIZER_CTOR.search(callee) and "lr_scheduler" not in callee and "Scheduler" not in callee:
                    out.add(self.expr_code(parent.targets[0].target))
        scalers = self.scaler_names()
        stepped = set()
        zeroed = set()
        for call in self.calls():
            if not isinstance(call.func, cst.Attribute):
                continue
            recv = self.expr_code(call.func.value)
            if call.func.attr.value == "step":
                if recv in scalers and call.args:
                    out.add(self.expr_code(call.args[0].value))
                else:
                    stepped.add(recv)
            elif call.func.attr.value == "zero_grad":
                zeroed.add(recv)
        out |= stepped & zeroed
        return out

    def scaler_names(self) -> set[str]:
        """Expressions that hold a GradScaler: assigned from ``...GradScaler(...)``, or the
        receiver of ``x.scale(loss).backward()``."""
        if "scalers" not in self._roles:
            self._roles["scalers"] = self._scaler_names()
        return self._roles["scalers"]

    def _scaler_names(self) -> set[str]:
        out: set[str] = set()
        for call in self.calls():
            parent = self.parents.get(call)
            if isinstance(parent, cst.Assign) and parent.value is call and len(parent.targets) == 1:
                if self.expr_code(call.func).endswith("GradScaler"):
                    out.add(self.expr_code(parent.targets[0].target))
            if (
                isinstance(call.func, cst.Attribute) and call.func.attr.value == "backward"
                and isinstance(call.func.value, cst.Call)
                and isinstance(call.func.value.func, cst.Attribute)
                and call.func.value.func.attr.value == "scale"
            ):
                out.add(self.expr_code(call.func.value.func.value))
        return out

    def is_optimizer_step(self, stmt: cst.CSTNode) -> bool:
        """``optimizer.step()`` or ``scaler.step(optimizer)`` as a statement line."""
        call = self.expr_call(stmt)
        if call is None or not isinstance(call.func, cst.Attribute) or call.func.attr.value != "step":
            return False
        recv = self.expr_code(call.func.value)
        if recv in self.scaler_names():
            return bool(call.args)
        return recv in self.optimizer_names()

    # ------------------------------------------------------------------ making fixes

    def parse_statement(self, code: str) -> cst.BaseStatement:
        return cst.parse_statement(code + self.module.default_newline, config=self.module.config_for_parsing)

    def fix(self, applicability: str, message: str, new_module: cst.Module,
            moved: cst.CSTNode | None = None) -> Fix | None:
        """A :class:`Fix` whose edits turn this source into ``new_module``'s code; ``moved``:
        the statement the fix moves, whose lines the edits delete and insert (not those of
        the statements it moves across: :func:`~loopcheck.fixes.model.edits_between`).

        The edits are the difference between the unchanged tree's code and the new tree's,
        placed on the source: LibCST does not give back every byte it parsed (a form feed
        that starts a line before a statement is dropped), and such bytes must not be
        "fixed" away. ``None`` when nothing changes, or when an edit falls where the two
        differ in a way that cannot be mapped."""
        new = new_module.code
        rendered = self.module.code if self._rendered is None else self._rendered
        self._rendered = rendered
        if new == rendered:
            return None
        lines = self.module.code_for_node(moved).splitlines(keepends=True) if moved is not None else ()
        edits = edits_between(rendered, new, lines)
        if rendered != self.source:
            edits = _onto_source(edits, rendered, self.source)
            if edits is None:
                return None
        return Fix(applicability, message, edits)


def _onto_source(edits: tuple[Edit, ...], rendered: str, source: str) -> tuple[Edit, ...] | None:
    """Move edits computed on LibCST's rendering of ``source`` onto ``source`` itself, where
    the two have the same lines except for characters the rendering dropped at line starts
    (form feeds). ``None`` if they differ otherwise."""
    a, b = rendered.split("\n"), source.split("\n")
    if len(a) != len(b):
        return None
    shift: dict[int, int] = {}

    def column(row: int, col: int) -> int | None:
        if row > len(a) or a[row - 1] == b[row - 1]:
            return col
        if row not in shift:
            dropped = len(b[row - 1]) - len(a[row - 1])
            ok = dropped > 0 and b[row - 1].endswith(a[row - 1]) and not b[row - 1][:dropped].strip(" \t\f")
            shift[row] = dropped if ok else -1
        if shift[row] < 0:
            return None
        return col if col == 1 else col + shift[row]

    out = []
    for e in edits:
        start, end = column(e.row, e.column), column(e.end_row, e.end_column)
        if start is None or end is None:
            return None
        out.append(Edit(e.content, e.row, start, e.end_row, end))
    return tuple(out)


class Rewrite(cst.CSTTransformer):
    """Structural edits by node identity: remove statements, insert statements before/after
    statements, replace nodes. Inserted statements may be nodes of the same tree (a move)."""

    def __init__(self) -> None:
        super().__init__()
        self.remove: set[int] = set()
        self.before: dict[int, list[cst.CSTNode]] = {}
        self.after: dict[int, list[cst.CSTNode]] = {}
        self.replace: dict[int, cst.CSTNode] = {}

    def insert_before(self, anchor: cst.CSTNode, *stmts: cst.CSTNode) -> "Rewrite":
        self.before.setdefault(id(anchor), []).extend(stmts)
        return self

    def insert_after(self, anchor: cst.CSTNode, *stmts: cst.CSTNode) -> "Rewrite":
        self.after.setdefault(id(anchor), []).extend(stmts)
        return self

    def delete(self, stmt: cst.CSTNode) -> "Rewrite":
        self.remove.add(id(stmt))
        return self

    def substitute(self, old: cst.CSTNode, new: cst.CSTNode) -> "Rewrite":
        self.replace[id(old)] = new
        return self

    _wanted: set[int] | None = None  # ids of the nodes on the way to an edit (see run)

    def on_visit(self, node) -> bool:
        return self._wanted is None or id(node) in self._wanted

    def on_leave(self, original, updated):
        key = id(original)
        if key in self.replace:
            updated = self.replace[key]
        before, after = self.before.get(key, []), self.after.get(key, [])
        if key in self.remove:
            if before or after:
                return cst.FlattenSentinel([*before, *after])
            return cst.RemoveFromParent()
        if before or after:
            return cst.FlattenSentinel([*before, updated, *after])
        return updated

    def run(self, module: cst.Module, parents: dict | None = None) -> cst.Module:
        """The module with the edits made. Only the nodes on the way from the module to an
        edited node are visited (a visit rebuilds each node it enters, which is slow on a whole
        tree); the others are kept as they are.
        ``parents``: the module's node -> parent table, when the caller has it
        (:attr:`FixContext.parents`)."""
        keys = set(self.remove) | set(self.before) | set(self.after) | set(self.replace)
        if parents is None:
            parents = parent_table(module)
        nodes = {id(n): n for n in parents}
        wanted: set[int] = {id(module)} if keys else set()
        for key in keys:
            node = nodes.get(key)
            while node is not None and id(node) not in wanted:
                wanted.add(id(node))
                node = parents.get(node)
        self._wanted = wanted
        try:
            return module.visit(self)
        finally:
            self._wanted = None


def first(items: Iterable):
    return next(iter(items), None)
