"""One fixer per rule code: ``fixer(ctx, finding) -> Fix | None``.

A fixer finds the flagged node by the finding's exact span and the other lines by the
finding's ``related`` rows, and changes the tree with :class:`~loopcheck.fixes.context.Rewrite`
(statements moved, inserted, replaced); the fix's edits are the text difference. It returns
``None`` when the fix is not local or not certain: the nodes are in different blocks, a moved
statement would cross something that binds or reads its names, a name would not be defined
where it goes, ...
"""

from __future__ import annotations

from typing import Callable

import libcst as cst

from loopcheck.findings import Finding
from loopcheck.fixes.context import LOOPS, FixContext, Rewrite, first
from loopcheck.fixes.model import SAFE, UNSAFE, Fix

Fixer = Callable[[FixContext, Finding], "Fix | None"]
FIXERS: dict[str, Fixer] = {}


def fixer(code: str):
    def register(fn: Fixer) -> Fixer:
        FIXERS[code] = fn
        return fn

    return register


# ------------------------------------------------------------------------------ helpers


def flagged(ctx: FixContext, f: Finding, types=(cst.Call,)):
    return ctx.node_at(f.row, f.column, f.end_row, f.end_column, types)


def related_calls(ctx: FixContext, f: Finding, method: str | None = None) -> list[cst.Call]:
    """Calls that start where the finding's related locations point (``method``: only
    ``x.method(...)`` calls), outermost first."""
    out = []
    for r in f.related:
        for node in ctx.nodes_starting_at(r.row, r.column):
            if isinstance(node, cst.Call) and (
                method is None or isinstance(node.func, cst.Attribute) and node.func.attr.value == method
            ):
                out.append(node)
    return out


def callee(ctx: FixContext, call: cst.Call) -> str:
    """``clip_grad_norm_()`` for ``torch.nn.utils.clip_grad_norm_(...)``."""
    name = call.func.attr.value if isinstance(call.func, cst.Attribute) else ctx.expr_code(call.func)
    return f"{name}()"


def short(ctx: FixContext, call: cst.Call) -> str:
    """``optimizer.step()`` / ``scaler.step(optimizer)``: the call, its arguments elided when long."""
    text = ctx.expr_code(call)
    return text if len(text) <= 40 else ctx.expr_code(call.func) + "(...)"


def stmt_calls(ctx: FixContext, stmts, *methods: str) -> bool:
    """Whether any statement calls ``x.<method>(...)`` for one of ``methods``."""
    return any(True for s in stmts for m in methods for _ in ctx.method_calls(s, m))


def in_block(ctx: FixContext, stmt, block) -> int | None:
    where = ctx.block_of(stmt) if stmt is not None else None
    return where[1] if where and where[0] is block else None


def scaler_of(ctx: FixContext, f: Finding) -> str | None:
    """The GradScaler of the finding: the receiver of ``scaler.scale(...)`` on a related line,
    else the only GradScaler of the file."""
    for call in related_calls(ctx, f, "scale"):
        return ctx.expr_code(call.func.value)
    for call in related_calls(ctx, f, "backward"):
        inner = call.func.value
        if isinstance(inner, cst.Call) and isinstance(inner.func, cst.Attribute) and inner.func.attr.value == "scale":
            return ctx.expr_code(inner.func.value)
    scalers = ctx.scaler_names()
    return next(iter(scalers)) if len(scalers) == 1 else None


def keep_comments(stmt):
    """``stmt`` without the blank lines above it, but with its comment lines (for a move)."""
    return stmt.with_changes(leading_lines=[line for line in stmt.leading_lines if line.comment is not None])


def ensure_update(ctx: FixContext, rw: Rewrite, step_stmt, scaler: str) -> str | None:
    """Make ``scaler.update()`` follow the last ``scaler.step(...)`` of the iteration: the last
    statement of ``step_stmt``'s block, from ``step_stmt`` on, that steps with ``scaler``
    (two optimizers: after the second step; an update between them would unscale the
    second one's gradients with a new scale). Returns the applicability (``None``: nothing
    to do, an update already follows).

    With no other ``scaler.update()`` in the file, one is inserted (safe). A single update that
    sits after the loop around the step (once per epoch) is moved after the step instead (safe:
    left there it would run with no step since the last update and raise). Other updates
    elsewhere: inserted, unsafe.
    """
    block, i = ctx.block_of(step_stmt)
    for k in range(i + 1, len(block.body)):
        if any(recv == scaler for _, recv in ctx.method_calls(block.body[k], "step")):
            i = k
    step_stmt = block.body[i]
    if any(ctx.is_method_stmt(s, "update", scaler) for s in block.body[i + 1:]):
        return None
    updates = [c for c, recv in ctx.method_calls(ctx.module, "update") if recv == scaler and not c.args]
    if not updates:
        rw.insert_after(step_stmt, ctx.parse_statement(f"{scaler}.update()"))
        return SAFE
    if len(updates) == 1:
        u_stmt = ctx.statement_of(updates[0])
        where = ctx.block_of(u_stmt) if u_stmt is not None else None
        if where and ctx.expr_call(u_stmt) is updates[0]:
            for loop in ctx.loops_around(step_stmt):
                at = ctx.block_of(loop)
                if at and at[0] is where[0] and at[1] < where[1]:
                    rw.delete(u_stmt)
                    rw.insert_after(step_stmt, keep_comments(u_stmt))
                    return SAFE
    rw.insert_after(step_stmt, ctx.parse_statement(f"{scaler}.update()"))
    return UNSAFE


# ------------------------------------------------------------------------------ LC1xx


@fixer("LC101")
def clip_before_backward(ctx: FixContext, f: Finding) -> Fix | None:
    """Move the clip to just before the optimizer step that follows the backward."""
    clip = flagged(ctx, f)
    stmt = ctx.call_statement(clip) if clip is not None else None
    where = ctx.block_of(stmt) if stmt is not None else None
    if where is None:
        return None
    block, i = where
    bw = first(related_calls(ctx, f, "backward"))
    j = in_block(ctx, ctx.statement_of(bw), block) if bw is not None else None
    if j is None or j <= i:
        return None
    k = next((k for k in range(j + 1, len(block.body)) if ctx.is_optimizer_step(block.body[k])), None)
    if k is None:
        return None
    between = block.body[i + 1:k]  # may hold scaler.unscale_(): the clip then lands after it
    if stmt_calls(ctx, between, "zero_grad", "step") or not ctx.independent(stmt, between):
        return None
    step = ctx.expr_call(block.body[k])
    new = Rewrite().delete(stmt).insert_before(block.body[k], stmt).run(ctx.module, ctx.parents)
    return ctx.fix(SAFE, f"Move `{callee(ctx, clip)}` between `{short(ctx, bw)}` and `{short(ctx, step)}`", new, stmt)


@fixer("LC102")
def clip_after_step(ctx: FixContext, f: Finding) -> Fix | None:
    """Move the clip to just before the step (after the backward)."""
    clip = flagged(ctx, f)
    stmt = ctx.call_statement(clip) if clip is not None else None
    where = ctx.block_of(stmt) if stmt is not None else None
    if where is None:
        return None
    block, i = where
    step = first(related_calls(ctx, f, "step"))
    k = in_block(ctx, ctx.statement_of(step), block) if step is not None else None
    if k is None or k >= i or not ctx.is_optimizer_step(block.body[k]):
        return None
    between = block.body[k + 1:i]
    if stmt_calls(ctx, between, "backward", "zero_grad", "unscale_") or not ctx.independent(stmt, between):
        return None
    new = Rewrite().delete(stmt).insert_before(block.body[k], stmt).run(ctx.module, ctx.parents)
    return ctx.fix(SAFE, f"Move `{callee(ctx, clip)}` before `{short(ctx, step)}`", new, stmt)


@fixer("LC103")
def zero_grad_between(ctx: FixContext, f: Finding) -> Fix | None:
    """Move ``zero_grad()`` to just after the step it wiped the gradients of (after
    ``scaler.update()`` when one follows the step). A step under a gradient-accumulation ``if``
    of the same block: moved into that ``if``, after the step (unsafe). Only a ``zero_grad()``
    statement is moved: a model's call whose ``forward`` clears the gradients
    (``self.zero_grad()`` in it) computes something too, and where it belongs is the author's
    choice."""
    zg = flagged(ctx, f)
    stmt = ctx.call_statement(zg) if zg is not None else None
    if stmt is None or ctx.expr_call(stmt) is not zg or not ctx.is_method_stmt(stmt, "zero_grad"):
        return None
    where = ctx.block_of(stmt)
    if where is None:
        return None
    block, i = where
    for step in related_calls(ctx, f, "step"):
        s_stmt = ctx.statement_of(step)
        if s_stmt is None or not ctx.is_optimizer_step(s_stmt):
            continue
        s_block, k = ctx.block_of(s_stmt)
        if s_block is block:
            if k <= i:
                continue
            applicability, outer_k = SAFE, k
        else:
            owner = ctx.owner_of_block(s_block)
            if not isinstance(owner, cst.If) or owner.body is not s_block:
                continue
            outer_k = in_block(ctx, owner, block)
            if outer_k is None or outer_k <= i:
                continue
            applicability = UNSAFE
        between = block.body[i + 1:outer_k + 1]
        if _clears_same_grads(ctx, zg, between) or not ctx.independent(stmt, between):
            return None
        anchor = s_block.body[k]
        if k + 1 < len(s_block.body) and ctx.is_method_stmt(s_block.body[k + 1], "update"):
            anchor = s_block.body[k + 1]
        new = Rewrite().delete(stmt).insert_after(anchor, keep_comments(stmt)).run(ctx.module, ctx.parents)
        return ctx.fix(applicability, f"Move `{short(ctx, zg)}` after `{short(ctx, step)}`", new, stmt)
    return None


def _clears_same_grads(ctx: FixContext, zg: cst.Call, stmts) -> bool:
    """Whether a ``zero_grad()`` in ``stmts`` may clear what ``zg`` clears: any but another
    optimizer's (``optimizer2.zero_grad()`` when ``zg`` is ``optimizer.zero_grad()``), which
    the moved call can cross."""
    mine = ctx.expr_code(zg.func.value) if isinstance(zg.func, cst.Attribute) else None
    optimizers = ctx.optimizer_names()
    for _, recv in (c for s in stmts for c in ctx.method_calls(s, "zero_grad")):
        if not (mine in optimizers and recv in optimizers and recv != mine):
            return True
    return False


# ------------------------------------------------------------------------------ LC3xx


@fixer("LC301")
def eval_mode_not_reset(ctx: FixContext, f: Finding) -> Fix | None:
    """Insert ``model.train()`` as the first statement of the training loop (unsafe: where the
    mode should switch back is the author's choice)."""
    ev = flagged(ctx, f)
    if ev is None:
        return None
    # the receiver of model.eval(); for a helper that chose the mode (set_mode(model, False)),
    # the model the step trains
    model = ctx.expr_code(ev.func.value) if isinstance(ev.func, cst.Attribute) else None
    step = first(related_calls(ctx, f, "step"))
    if step is None:
        return None
    loops = ctx.loops_around(step)
    if not loops:
        return None
    same_scope = ctx.scope_of(ev) is ctx.scope_of(step)
    target = next((loop for loop in reversed(loops) if ctx.contains(loop, ev)), None) if same_scope else None
    target = target or loops[0]
    if not same_scope or model is None:
        model = _trained_model(ctx, step) or (model if model and _same_class(ctx, ev, step, model) else None)
    body = ctx.body_block(target)
    if not model or body is None or not body.body or not ctx.valid_at(model, step):
        return None
    new = Rewrite().insert_before(body.body[0], ctx.parse_statement(f"{model}.train()")).run(ctx.module, ctx.parents)
    return ctx.fix(UNSAFE, f"Call `{model}.train()` at the start of each training iteration", new)


def _trained_model(ctx: FixContext, step: cst.Call) -> str | None:
    """``model`` for ``optimizer.step()`` where ``optimizer = X(model.parameters(), ...)``."""
    recv = ctx.expr_code(step.func.value)
    if recv in ctx.scaler_names() and step.args:
        recv = ctx.expr_code(step.args[0].value)
    for call in ctx.calls():
        parent = ctx.parent(call)
        if (
            isinstance(parent, cst.Assign) and parent.value is call and len(parent.targets) == 1
            and ctx.expr_code(parent.targets[0].target) == recv and call.args
        ):
            arg = call.args[0].value
            if isinstance(arg, cst.Call) and isinstance(arg.func, cst.Attribute):
                if arg.func.attr.value == "parameters":
                    return ctx.expr_code(arg.func.value)
    return None


def _same_class(ctx: FixContext, a: cst.CSTNode, b: cst.CSTNode, expr: str) -> bool:
    if not expr.startswith("self."):
        return ctx.valid_at(expr, b)
    ca = next((n for n in ctx.ancestors(a) if isinstance(n, cst.ClassDef)), None)
    cb = next((n for n in ctx.ancestors(b) if isinstance(n, cst.ClassDef)), None)
    return ca is not None and ca is cb


@fixer("LC302")
def validation_without_no_grad(ctx: FixContext, f: Finding) -> Fix | None:
    """Wrap the evaluation after ``model.eval()`` in ``with torch.no_grad():``: the outermost
    loop around the flagged forward (below the ``eval()``'s block) that makes no training call
    (safe), else the statements from the forward to the end of the block or to the next
    training call (unsafe)."""
    fwd = flagged(ctx, f)
    ev = first(related_calls(ctx, f, "eval"))
    no_grad = ctx.torch_attr("no_grad")
    if fwd is None or ev is None or no_grad is None:
        return None
    ev_stmt = ctx.statement_of(ev)
    where = ctx.block_of(ev_stmt) if ev_stmt is not None else None
    if where is None:
        return None
    block, e = where
    path = []  # the statements around the forward, innermost first, up to the eval's block
    cur = ctx.statement_of(fwd)
    while cur is not None:
        path.append(cur)
        at = ctx.block_of(cur)
        if at is None:
            return None
        if at[0] is block:
            break
        owner = ctx.owner_of_block(at[0])
        while owner is not None and not isinstance(owner, (cst.BaseCompoundStatement, cst.Module)):
            owner = ctx.parent(owner)  # else/finally/except clauses
        if owner is None or isinstance(owner, (cst.FunctionDef, cst.ClassDef, cst.Module)):
            return None
        cur = owner
    if cur is None:
        return None
    w = at[1]
    if w <= e:
        return None
    training = ("backward", "step", "zero_grad", "train", "eval")
    loop = next((s for s in reversed(path) if isinstance(s, LOOPS) and not stmt_calls(ctx, [s], *training)), None)
    if loop is not None:
        wrapped, applicability = [loop], SAFE
    else:
        end = w
        while end < len(block.body) and not stmt_calls(ctx, [block.body[end]], *training):
            end += 1
        wrapped, applicability = list(block.body[w:end]), UNSAFE
        if not wrapped:
            return None
    head = wrapped[0]
    with_stmt = cst.With(
        items=[cst.WithItem(item=cst.parse_expression(f"{no_grad}()"))],
        body=cst.IndentedBlock(body=[head.with_changes(leading_lines=()), *wrapped[1:]]),
        leading_lines=head.leading_lines,
    )
    rw = Rewrite().substitute(head, with_stmt)
    for s in wrapped[1:]:
        rw.delete(s)
    what = "loop" if len(wrapped) == 1 and isinstance(head, LOOPS) else "evaluation"
    return ctx.fix(applicability, f"Wrap the {what} in `with {no_grad}():`", rw.run(ctx.module, ctx.parents))


# ------------------------------------------------------------------------------ LC4xx

# Methods of a list, dict or number that work the same on floats as on tensors.
CONTAINER_METHODS = {
    "append", "extend", "insert", "pop", "clear", "copy", "count", "index", "reverse", "sort",
    "remove", "items", "keys", "values", "get", "update", "setdefault", "add", "put", "discard",
}


@fixer("LC401")
def loss_tensor_kept(ctx: FixContext, f: Finding) -> Fix | None:
    """Keep ``loss.item()``: ``xs.append(loss)`` → ``xs.append(loss.item())``, ``total += loss``
    → ``total += loss.item()``, ``d[k] = loss`` → ``d[k] = loss.item()``.

    ``.item()`` raises on a tensor of more than one element, and the receiver then gets a
    float instead of a tensor, so the fix is safe only when both are known from the file:
    the loss is a one-element tensor (:func:`_scalar`: a loss function or criterion reducing
    to a mean or sum, ``.mean()``, ``.sum()``, arithmetic on those and numbers) and the
    receiver holds plain values (:func:`_holds_floats`: a list, set, deque or dict built in
    the file, a running total started from a number) and is never used as a tensor
    (``total.backward()``, ``xs[-1].detach()``, ``torch.stack(xs)``). Otherwise unsafe: an
    ``Averager.add(loss)`` that reads ``loss.data``, or a ``reduction="none"`` loss."""
    node = flagged(ctx, f, (cst.Call, cst.AugAssign, cst.Assign))
    if isinstance(node, cst.Call):
        if not isinstance(node.func, cst.Attribute) or node.func.attr.value not in ("append", "add", "insert", "put"):
            return None
        arg = node.args[-1] if node.args else None
        if arg is None or arg.keyword is not None or arg.star:
            return None
        value, container, kind = arg.value, node.func.value, node.func.attr.value
    elif isinstance(node, cst.AugAssign):
        value, container, kind = node.value, node.target, "+="
    elif isinstance(node, cst.Assign) and len(node.targets) == 1 and isinstance(node.targets[0].target, cst.Subscript):
        value, container, kind = node.value, node.targets[0].target.value, "[]="
    else:
        return None
    if isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute) and value.func.attr.value == "item":
        return None
    if not isinstance(value, (cst.Name, cst.Attribute, cst.Subscript, cst.Call)) and not value.lpar:
        value_p = value.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])
    else:
        value_p = value
    item = cst.Call(func=cst.Attribute(value=value_p, attr=cst.Name("item")))
    receiver = ctx.expr_code(container)
    safe = (
        _scalar(ctx, value, node)
        and _holds_floats(ctx, container, kind, node)
        and not _used_as_tensor(ctx, receiver, node)
    )
    new = Rewrite().substitute(value, item).run(ctx.module, ctx.parents)
    return ctx.fix(SAFE if safe else UNSAFE, f"Use `{ctx.expr_code(value)}.item()`", new)


# Functional losses (torch.nn.functional) that reduce to a mean by default.
FUNCTIONAL_LOSSES = {
    "binary_cross_entropy", "binary_cross_entropy_with_logits", "cosine_embedding_loss", "cross_entropy",
    "ctc_loss", "gaussian_nll_loss", "hinge_embedding_loss", "huber_loss", "kl_div", "l1_loss",
    "margin_ranking_loss", "mse_loss", "multi_margin_loss", "multilabel_margin_loss",
    "multilabel_soft_margin_loss", "nll_loss", "poisson_nll_loss", "smooth_l1_loss", "soft_margin_loss",
    "triplet_margin_loss", "triplet_margin_with_distance_loss",
}
_REDUCING_METHODS = {"mean", "sum", "norm", "max", "min", "prod", "logsumexp", "std", "var"}


def _reduces_to_scalar(call: cst.Call) -> bool:
    """No ``reduction`` other than ``"mean"``/``"sum"``, and no legacy ``reduce``/
    ``size_average`` argument (``reduce=False`` keeps one loss per element)."""
    for arg in call.args:
        name = arg.keyword.value if arg.keyword is not None else None
        if arg.star:
            return False
        if name in ("reduce", "size_average"):
            return False
        if name == "reduction":
            v = arg.value
            if not (isinstance(v, cst.SimpleString) and v.evaluated_value in ("mean", "sum")):
                return False
    return True


def _bindings(ctx: FixContext, expr: str) -> list[cst.CSTNode] | None:
    """The values assigned to ``expr`` (``loss``, ``self.criterion``) anywhere in the file, or
    ``None`` when it is also bound another way (a loop or ``with`` target, a parameter, a
    tuple unpacking, ...): then its value is not known (:class:`~loopcheck.fixes.context.Bindings`)."""
    return ctx.bindings().of(expr)


def _scalar(ctx: FixContext, value: cst.CSTNode, at: cst.CSTNode, depth: int = 0) -> bool:
    """Whether ``value`` is known to be a one-element tensor (or a number)."""
    if depth > 8:
        return False
    if isinstance(value, (cst.Integer, cst.Float)):
        return True
    if isinstance(value, (cst.Name, cst.Attribute)):
        values = _bindings(ctx, ctx.expr_code(value))
        augmented = ctx.bindings().augmented.get(ctx.expr_code(value), [])
        if not values or augmented and not all(_scalar(ctx, n.value, at, depth + 1) for n in augmented):
            return False
        return all(_scalar(ctx, v, at, depth + 1) for v in values)
    if isinstance(value, cst.BinaryOperation):
        if isinstance(value.operator, (cst.MatrixMultiply, cst.BitAnd, cst.BitOr, cst.BitXor, cst.LeftShift,
                                       cst.RightShift)):
            return False
        return _scalar(ctx, value.left, at, depth + 1) and _scalar(ctx, value.right, at, depth + 1)
    if isinstance(value, cst.UnaryOperation):
        return isinstance(value.operator, (cst.Minus, cst.Plus)) and _scalar(ctx, value.expression, at, depth + 1)
    if not isinstance(value, cst.Call):
        return False
    func = value.func
    if isinstance(func, cst.Attribute):
        name = func.attr.value
        callee = ctx.expr_code(func)
        if name in _REDUCING_METHODS and not value.args:  # ``x.mean()``: every element reduced
            return True
        if callee in ("torch.mean", "torch.sum") and len(value.args) == 1 and value.args[0].keyword is None:
            return True
        if name in FUNCTIONAL_LOSSES and callee.split(".")[0] in ("F", "functional", "nn", "torch"):
            return _reduces_to_scalar(value)
        if name in ("float", "double", "half", "to", "cpu", "cuda", "detach", "clone", "squeeze"):
            return name != "squeeze" or not value.args and _scalar(ctx, func.value, at, depth + 1)
    # a criterion: ``criterion = nn.CrossEntropyLoss(...)`` then ``criterion(out, y)``
    if isinstance(func, (cst.Name, cst.Attribute)):
        if isinstance(func, cst.Name) and func.value in FUNCTIONAL_LOSSES and _imported_from_functional(ctx, func.value):
            return _reduces_to_scalar(value)
        ctors = _bindings(ctx, ctx.expr_code(func))
        if ctors and all(
            isinstance(c, cst.Call) and ctx.expr_code(c.func).rsplit(".", 1)[-1].endswith("Loss")
            and _reduces_to_scalar(c)
            for c in ctors
        ):
            return _reduces_to_scalar(value)
    return False


def _root_imported(ctx: FixContext, expr: cst.CSTNode) -> bool:
    """Whether the name a ``Name``/``Attribute`` chain starts from is bound by an import
    (``torch`` in ``torch.autograd``): the chain then names a module, not a tensor."""
    while isinstance(expr, cst.Attribute):
        expr = expr.value
    if not isinstance(expr, cst.Name):
        return False
    for node in ctx.parents:
        if isinstance(node, (cst.Import, cst.ImportFrom)) and not isinstance(node.names, cst.ImportStar):
            for a in node.names:
                bound = a.evaluated_alias or a.evaluated_name.partition(".")[0]
                if bound == expr.value:
                    return True
    return False


def _imported_from_functional(ctx: FixContext, name: str) -> bool:
    for node in ctx.parents:
        if isinstance(node, cst.ImportFrom) and node.module is not None and not isinstance(node.names, cst.ImportStar):
            if ctx.expr_code(node.module) == "torch.nn.functional":
                if any(a.evaluated_alias is None and a.evaluated_name == name for a in node.names):
                    return True
    return False


_PLAIN_CONTAINERS = {
    "append": ("list", "deque", "collections.deque"),
    "insert": ("list",),
    "add": ("set",),
    "[]=": ("dict", "defaultdict", "collections.defaultdict", "OrderedDict", "collections.OrderedDict"),
}


def _holds_floats(ctx: FixContext, container: cst.CSTNode, kind: str, at: cst.CSTNode) -> bool:
    """Whether the receiver of the kept loss is known to take a float as well as a tensor: a
    list/deque (``append``, ``insert``), set (``add``) or dict (``d[k] = ...``) built in the
    file, or a running total (``+=``) every other binding of which is a number."""
    values = _bindings(ctx, ctx.expr_code(container))
    if not values:
        return False
    if kind == "+=":
        return all(isinstance(v, (cst.Integer, cst.Float)) for v in values)
    allowed = _PLAIN_CONTAINERS.get(kind)
    if allowed is None:
        return False
    for v in values:
        if kind in ("append", "insert") and isinstance(v, cst.List):
            continue
        if kind == "add" and isinstance(v, cst.Set):
            continue
        if kind == "[]=" and isinstance(v, cst.Dict):
            continue
        if isinstance(v, cst.Call) and ctx.expr_code(v.func) in allowed:
            continue
        return False
    return True


def _used_as_tensor(ctx: FixContext, container: str, flagged_node: cst.CSTNode) -> bool:
    stmt = ctx.statement_of(flagged_node)
    last = container.rsplit(".", 1)[-1]
    for node in ctx.positions:
        if isinstance(node, cst.Name):
            if node.value != container:
                continue
        elif not isinstance(node, cst.Attribute) or node.attr.value != last or ctx.expr_code(node) != container:
            continue
        if stmt is not None and ctx.contains(stmt, node):
            continue
        parent = ctx.parent(node)
        if isinstance(parent, cst.Attribute) and parent.value is node:
            if parent.attr.value not in CONTAINER_METHODS:
                return True
            continue
        if isinstance(parent, cst.Subscript) and parent.value is node:
            outer = ctx.parent(parent)
            if isinstance(outer, cst.Attribute) and outer.value is parent:
                return True
            continue
        if isinstance(parent, cst.Arg):
            call = ctx.parent(parent)
            if isinstance(call, cst.Call) and ctx.expr_code(call.func).split(".")[0] in ("torch", "th", "F"):
                return True
    return False


# ------------------------------------------------------------------------------ LC6xx


@fixer("LC601")
def clip_without_unscale(ctx: FixContext, f: Finding) -> Fix | None:
    """Insert ``scaler.unscale_(optimizer)`` before the clip (the scaler of the scaled backward,
    the optimizer of the ``scaler.step(...)`` that follows)."""
    clip = flagged(ctx, f)
    stmt = ctx.statement_of(clip) if clip is not None else None
    if not isinstance(stmt, cst.SimpleStatementLine):
        return None
    block, i = ctx.block_of(stmt)
    scaler = scaler_of(ctx, f)
    if scaler is None:
        return None
    opt, step_k = None, None
    for k in range(i + 1, len(block.body)):
        call = ctx.expr_call(block.body[k])
        if ctx.is_method_stmt(block.body[k], "step", scaler) and call.args:
            opt, step_k = ctx.expr_code(call.args[0].value), k
            break
    if opt is None:
        steps = ctx.method_calls(ctx.module, "step")
        opts = {ctx.expr_code(c.args[0].value) for c, recv in steps if recv == scaler and c.args}
        if len(opts) != 1:
            return None
        opt = opts.pop()
    between = block.body[i + 1:step_k] if step_k is not None else block.body[i + 1:]
    if any(recv == scaler for s in between for _, recv in ctx.method_calls(s, "unscale_")):
        return None
    if not ctx.valid_at(scaler, clip) or not ctx.valid_at(opt, clip):
        return None
    unscale = ctx.parse_statement(f"{scaler}.unscale_({opt})")
    new = Rewrite().insert_before(stmt, unscale).run(ctx.module, ctx.parents)
    return ctx.fix(SAFE, f"Call `{scaler}.unscale_({opt})` before `{callee(ctx, clip)}`", new)


@fixer("LC602")
def step_bypasses_scaler(ctx: FixContext, f: Finding) -> Fix | None:
    """``optimizer.step()`` → ``scaler.step(optimizer)``, and ``scaler.update()`` after it
    (see :func:`ensure_update`)."""
    step = flagged(ctx, f)
    stmt = ctx.call_statement(step) if step is not None else None
    if stmt is None or ctx.expr_call(stmt) is not step or step.args or not isinstance(step.func, cst.Attribute):
        return None
    scaler = scaler_of(ctx, f)
    if scaler is None or not ctx.valid_at(scaler, step):
        return None
    opt = ctx.expr_code(step.func.value)
    rw = Rewrite().substitute(step, cst.parse_expression(f"{scaler}.step({opt})"))
    applicability = ensure_update(ctx, rw, stmt, scaler) or SAFE
    return ctx.fix(applicability, f"Use `{scaler}.step({opt})` and `{scaler}.update()`", rw.run(ctx.module, ctx.parents))


@fixer("LC603")
def backward_on_unscaled_loss(ctx: FixContext, f: Finding) -> Fix | None:
    """``loss.backward()`` → ``scaler.scale(loss).backward()`` (the scaler whose ``step()`` is
    related); none for ``torch.autograd.backward(...)``, whose receiver is a module."""
    bw = flagged(ctx, f)
    if bw is None or not isinstance(bw.func, cst.Attribute) or bw.func.attr.value != "backward":
        return None
    if _root_imported(ctx, bw.func.value):
        return None
    sstep = first(related_calls(ctx, f, "step"))
    if sstep is None:
        return None
    scaler = ctx.expr_code(sstep.func.value)
    if not ctx.valid_at(scaler, bw):
        return None
    loss = bw.func.value
    scaled = cst.Call(func=cst.parse_expression(f"{scaler}.scale"), args=[cst.Arg(loss.with_changes(lpar=(), rpar=()))])
    new = Rewrite().substitute(loss, scaled).run(ctx.module, ctx.parents)
    return ctx.fix(SAFE, f"Use `{scaler}.scale({ctx.expr_code(loss)}).backward()`", new)


@fixer("LC604")
def scaler_step_without_update(ctx: FixContext, f: Finding) -> Fix | None:
    """Call ``scaler.update()`` right after ``scaler.step(optimizer)`` (moving a once-per-epoch
    update there; see :func:`ensure_update`)."""
    sstep = flagged(ctx, f)
    stmt = ctx.call_statement(sstep) if sstep is not None else None
    if stmt is None or ctx.expr_call(stmt) is not sstep or not isinstance(sstep.func, cst.Attribute):
        return None
    scaler = ctx.expr_code(sstep.func.value)
    rw = Rewrite()
    applicability = ensure_update(ctx, rw, stmt, scaler)
    if applicability is None:
        return None
    return ctx.fix(applicability, f"Call `{scaler}.update()` after `{short(ctx, sstep)}`", rw.run(ctx.module, ctx.parents))


# ------------------------------------------------------------------------------ LC5xx, LC7xx
# (issue 11: self-contained fixers; each finds its nodes by the finding's span and related rows)


def _dotted(node: cst.CSTNode) -> str | None:
    """``a.b.c`` for a Name/Attribute chain, else ``None``."""
    parts = []
    while isinstance(node, cst.Attribute):
        parts.append(node.attr.value)
        node = node.value
    if not isinstance(node, cst.Name):
        return None
    return ".".join([node.value, *reversed(parts)])


def _callee_name(call: cst.Call) -> str:
    """The last component of a call's callee: ``softmax`` for ``F.softmax(x)``."""
    func = call.func
    return func.attr.value if isinstance(func, cst.Attribute) else func.value if isinstance(func, cst.Name) else ""


def _nn_module(ctx: FixContext) -> str | None:
    """How this file spells ``torch.nn``: ``nn`` after ``import torch.nn as nn`` or ``from torch
    import nn``, ``torch.nn`` after ``import torch``."""
    for stmt in ctx.module.body:
        if not isinstance(stmt, cst.SimpleStatementLine):
            continue
        for small in stmt.body:
            if isinstance(small, cst.Import):
                for alias in small.names:
                    if alias.evaluated_name == "torch.nn" and alias.evaluated_alias:
                        return alias.evaluated_alias
            elif isinstance(small, cst.ImportFrom) and not isinstance(small.names, cst.ImportStar) and not small.relative:
                if _dotted(small.module) == "torch" if small.module else False:
                    for alias in small.names:
                        if alias.evaluated_name == "nn":
                            return alias.evaluated_alias or "nn"
    return ctx.torch_attr("nn")


@fixer("LC505")
def tensor_conversion_discarded(ctx: FixContext, f: Finding) -> Fix | None:
    """``x.to(device)`` → ``x = x.to(device)`` (the receiver must be a name or an attribute)."""
    call = flagged(ctx, f)
    expr = ctx.parent(call) if call is not None else None
    if not isinstance(expr, cst.Expr) or expr.value is not call or not isinstance(call.func, cst.Attribute):
        return None
    target = call.func.value
    if _dotted(target) is None:
        return None
    assign = cst.Assign(targets=[cst.AssignTarget(target=target)], value=call, semicolon=expr.semicolon)
    new = Rewrite().substitute(expr, assign).run(ctx.module, ctx.parents)
    name = ctx.expr_code(target)
    return ctx.fix(SAFE, f"Assign the result: `{name} = {name}.{call.func.attr.value}(...)`", new)


ACTIVATIONS = {"softmax": "log_softmax", "sigmoid": None, "expit": None}


def _activation_input(call: cst.Call) -> cst.BaseExpression | None:
    """``z`` for ``F.softmax(z, dim=1)``, ``torch.sigmoid(z)`` (the first argument, when it is not
    a number) and for ``z.softmax(1)``, ``z.sigmoid()`` (the receiver)."""
    if _callee_name(call) not in ACTIVATIONS:
        return None
    first = call.args[0] if call.args else None
    if first is not None and first.keyword in (None, "input") and not first.star and not isinstance(
        first.value, (cst.Integer, cst.UnaryOperation)
    ):
        return first.value
    if isinstance(call.func, cst.Attribute) and _callee_name(call) in ("softmax", "sigmoid"):
        return call.func.value
    return None


def _expects_log_probabilities(ctx: FixContext, f: Finding, loss: cst.Call) -> bool:
    if "nll" in _callee_name(loss).lower():
        return True
    return any("NLLLoss" in _callee_name(c) for c in related_calls(ctx, f))


@fixer("LC701")
def probabilities_to_logits_loss(ctx: FixContext, f: Finding) -> Fix | None:
    """Give the loss what it expects: drop the softmax/sigmoid in the loss's argument
    (``criterion(F.softmax(z, 1), y)`` → ``criterion(z, y)``), or pass the activation's input
    when the probabilities were made by the statement just before, from a name not re-bound in
    between; for NLLLoss, ``softmax`` → ``log_softmax``. ``None`` when the activation is inside
    the model (the model's ``forward`` must change)."""
    loss = flagged(ctx, f)
    if loss is None or not loss.args:
        return None
    arg = loss.args[0]
    nll = _expects_log_probabilities(ctx, f, loss)
    if isinstance(arg.value, cst.Call) and _activation_input(arg.value) is not None:
        act = arg.value
        if nll:
            if _callee_name(act) != "softmax":
                return None
            new_func = act.func.with_changes(attr=cst.Name("log_softmax")) if isinstance(act.func, cst.Attribute) else cst.Name("log_softmax")
            new = Rewrite().substitute(act.func, new_func).run(ctx.module, ctx.parents)
            return ctx.fix(SAFE, "Use `log_softmax` for NLLLoss", new)
        inner = _activation_input(act)
        new = Rewrite().substitute(act, inner.with_changes(lpar=(), rpar=()) if not isinstance(inner, cst.Name) else inner).run(ctx.module, ctx.parents)
        return ctx.fix(SAFE, f"Remove `{_callee_name(act)}()`: pass `{ctx.expr_code(inner)}`", new)
    if nll or not isinstance(arg.value, cst.Name):
        return None
    act = next((c for c in related_calls(ctx, f) if _activation_input(c) is not None), None)
    if act is None:
        return None
    act_stmt, loss_stmt = ctx.statement_of(act), ctx.statement_of(loss)
    inner = _activation_input(act)
    if act_stmt is None or loss_stmt is None or not isinstance(inner, cst.Name):
        return None
    assign = act_stmt.body[0] if isinstance(act_stmt, cst.SimpleStatementLine) and len(act_stmt.body) == 1 else None
    if not isinstance(assign, cst.Assign) or assign.value is not act or len(assign.targets) != 1 or _dotted(
        assign.targets[0].target) != arg.value.value:
        return None
    where_a, where_l = ctx.block_of(act_stmt), ctx.block_of(loss_stmt)
    if where_a is None or where_l is None or where_a[0] is not where_l[0] or where_a[1] >= where_l[1]:
        return None
    between = where_a[0].body[where_a[1] + 1:where_l[1]]
    if any(inner.value in ctx.names_written(s) for s in between):
        return None
    new = Rewrite().substitute(arg.value, cst.Name(inner.value)).run(ctx.module, ctx.parents)
    return ctx.fix(SAFE, f"Pass `{inner.value}` instead of `{arg.value.value}`", new)


LOGIT_LOSSES = {"BCELoss": "BCEWithLogitsLoss", "NLLLoss": "CrossEntropyLoss",
                "binary_cross_entropy": "binary_cross_entropy_with_logits", "nll_loss": "cross_entropy"}


@fixer("LC702")
def logits_to_probability_loss(ctx: FixContext, f: Finding) -> Fix | None:
    """Use the loss that takes logits: ``F.binary_cross_entropy`` →
    ``F.binary_cross_entropy_with_logits``, ``F.nll_loss`` → ``F.cross_entropy``, and for a
    criterion called only here, ``nn.BCELoss(...)`` → ``nn.BCEWithLogitsLoss(...)``,
    ``nn.NLLLoss(...)`` → ``nn.CrossEntropyLoss(...)`` where it is built (same arguments)."""
    loss = flagged(ctx, f)
    if loss is None:
        return None
    name = _callee_name(loss)
    if name in LOGIT_LOSSES and isinstance(loss.func, (cst.Attribute, cst.Name)):
        new_func = (loss.func.with_changes(attr=cst.Name(LOGIT_LOSSES[name])) if isinstance(loss.func, cst.Attribute)
                    else cst.Name(LOGIT_LOSSES[name]))
        if isinstance(new_func, cst.Name) and not ctx.valid_at(LOGIT_LOSSES[name], loss):
            return None
        new = Rewrite().substitute(loss.func, new_func).run(ctx.module, ctx.parents)
        return ctx.fix(SAFE, f"Use `{LOGIT_LOSSES[name]}`", new)
    criterion = _dotted(loss.func)
    ctor = next((c for c in related_calls(ctx, f) if _callee_name(c) in LOGIT_LOSSES), None)
    if criterion is None or ctor is None or not isinstance(ctor.func, cst.Attribute):
        return None
    parent = ctx.parent(ctor)
    if not isinstance(parent, cst.Assign) or len(parent.targets) != 1 or _dotted(parent.targets[0].target) != criterion:
        return None
    uses = [c for c in ctx.calls() if _dotted(c.func) == criterion]
    if uses != [loss]:
        return None  # called elsewhere too: those calls may pass probabilities
    replacement = LOGIT_LOSSES[_callee_name(ctor)]
    new = Rewrite().substitute(ctor.func, ctor.func.with_changes(attr=cst.Name(replacement))).run(ctx.module, ctx.parents)
    return ctx.fix(SAFE, f"Use `{replacement}` for `{criterion}`", new)


@fixer("LC504")
def submodules_in_plain_container(ctx: FixContext, f: Finding) -> Fix | None:
    """Register the container: ``self.layers = [...]`` → ``self.layers = nn.ModuleList([...])``,
    a dict → ``nn.ModuleDict({...})``, ``nn.Parameter`` elements → ``nn.ParameterList``/
    ``nn.ParameterDict``; ``self.layers = []`` filled by ``append`` → ``nn.ModuleList()``. Unsafe:
    the parameters join ``model.parameters()`` (the optimizer starts training them) and the
    ``state_dict()`` keys change (old checkpoints no longer load strictly)."""
    assign = flagged(ctx, f, (cst.Assign,))
    nn_name = _nn_module(ctx)
    if assign is None or nn_name is None or len(assign.targets) != 1:
        return None
    value = assign.value
    is_dict = isinstance(value, (cst.Dict, cst.DictComp))
    if isinstance(value, cst.Dict) and not all(
        isinstance(e, cst.DictElement) and isinstance(e.key, (cst.SimpleString, cst.ConcatenatedString)) for e in value.elements
    ):
        return None  # ModuleDict keys must be strings
    empty = isinstance(value, (cst.List, cst.Tuple, cst.Set, cst.Dict)) and not value.elements
    if empty:  # filled by self.layers.append(...) on the related lines
        adds = [c for c in related_calls(ctx, f) if _callee_name(c) in ("append", "extend", "insert")]
        built = [n for c in adds for a in c.args[-1:] for n in ctx.calls_in(a.value)]
    else:
        built = list(ctx.calls_in(value))
    classes = [_callee_name(c) for c in built if _callee_name(c)[:1].isupper()]  # constructions
    params = bool(classes) and all(name == "Parameter" for name in classes)
    kind = ("ParameterDict" if is_dict else "ParameterList") if params else ("ModuleDict" if is_dict else "ModuleList")
    if empty:
        if isinstance(value, (cst.Tuple, cst.Set)):
            return None
        wrapped = cst.parse_expression(f"{nn_name}.{kind}()")
    else:
        arg = value.with_changes(lpar=(), rpar=()) if isinstance(value, cst.Tuple) and value.lpar else value
        wrapped = cst.Call(func=cst.parse_expression(f"{nn_name}.{kind}"), args=[cst.Arg(arg)])
    new = Rewrite().substitute(value, wrapped).run(ctx.module, ctx.parents)
    return ctx.fix(UNSAFE, f"Use `{nn_name}.{kind}`", new)
