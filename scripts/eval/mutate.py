"""Mutation recall: inject one textbook bug at a time into real training files, run loopcheck.

Usage: python scripts/eval/mutate.py --split dev|heldout|all [--max-per-rule N] [--seed S]
           [--rule LC101 ...] [--repo NAME ...] [--loopcheck CMD] [--json OUT] [--list]

Every operator below is a LibCST rewrite of one statement (moved, deleted or edited in its
block). It applies to the ``.py`` files under the manifest subpaths of the split (test modules
excepted); each
application is one mutant, tagged with the rule code it must produce and the line(s) where
loopcheck must report it (marked in the rewritten tree, then read back with positions).
Sites are drawn per rule with ``random.Random(seed)``: at most ``--max-per-rule`` per rule
and ``--max-per-repo`` per rule and repository (diffusers alone has a third of the sites).

Each mutant is written into a temporary copy of its repository (hard links, the mutated
file replaced) so that imports resolve, and ``loopcheck check FILE`` runs from that root.
Findings the unmutated file already had (same code, same line text) are subtracted. A
mutant is *found* when a new finding of the expected code is at an expected line, *found
elsewhere* when a new one of that code is elsewhere in the file, *other code* when the only new
findings have other codes (LC104 mutants are often reported as LC103), else *missed*.
``--list`` prints the mutants without running loopcheck (``--diff``: with their diffs).

Operators (all statements are in one block unless said; "in a loop" = inside a for/while):
LC101 move a clip (or an ``if`` holding only a clip) that follows backward() to just before it;
LC102 move a clip that precedes the optimizer step to just after it; LC103 move zero_grad()
to just after backward() when step() follows; LC104 move step() to just before backward();
LC105 delete zero_grad() (the file's only one), expected at the step; LC201 move the step of a
scheduler built as StepLR/MultiStepLR/ExponentialLR/CosineAnnealingLR from the epoch loop to
the end of the batch loop (a ``for`` in the same body with backward(), or of the function the
body calls when the scheduler is a module global or ``self.<name>``); LC202 move a scheduler
step that follows the optimizer step to just before it; LC203 drop the argument of a
ReduceLROnPlateau's step(); LC301 delete ``X.train()`` when it is the file's only one and
``X.eval()`` exists, expected at the eval() calls; LC302 replace a ``with torch.no_grad()`` /
``inference_mode()`` holding or inside a loop by its body, in a file calling eval();
LC401 ``loss.item()`` -> ``loss`` in an augmented assignment or an append/extend/update/add
call inside a loop that calls backward(); LC502 (LC501 for a dtype) move ``model.to(...)``/
``.cuda()`` to just after a later ``opt = <optim class>(... model ...)`` (model not re-bound in
between);
LC601 delete ``scaler.unscale_()`` in a block that clips; LC602 ``scaler.step(opt)`` ->
``opt.step()`` where no unscale_() precedes in the block; LC603 ``scaler.scale(loss).backward()``
-> ``loss.backward()`` in a file with scaler.step(); LC604 delete the file's only
``scaler.update()``, expected at scaler.step(); LC605 move unscale_() to just after
scaler.step().
"""


from __future__ import annotations

import argparse
import difflib
import json
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import libcst as cst
from libcst.metadata import MetadataWrapper, PositionProvider

from common import Repo, load_manifest, loopcheck_command, run_loopcheck

MARK = "# @MUTANT@"
EPOCH_SCHEDULERS = {"StepLR", "MultiStepLR", "ExponentialLR", "CosineAnnealingLR"}
TRIGGERS = re.compile(r"backward|zero_grad|no_grad|inference_mode|\.train\(\)|\.item\(\)|optim")
OPTIMIZERS = {"SGD", "Adam", "AdamW", "RMSprop", "Adagrad", "Adadelta", "Adamax", "NAdam", "RAdam", "LBFGS"}


# ---------------------------------------------------------------- reading statements

def dotted(node: cst.BaseExpression) -> str:
    """``a.b.c`` for names and attributes; a call in the chain reads ``f()`` (``scaler.scale().backward``)."""
    if isinstance(node, cst.Name):
        return node.value
    if isinstance(node, cst.Attribute):
        return f"{dotted(node.value)}.{node.attr.value}"
    if isinstance(node, cst.Call):
        return f"{dotted(node.func)}()"
    return "?"


def stmt_call(stmt: cst.CSTNode) -> cst.Call | None:
    """The call a one-statement line makes: ``f(...)``, ``x = f(...)``, ``x: T = f(...)``."""
    if not isinstance(stmt, cst.SimpleStatementLine) or len(stmt.body) != 1:
        return None
    small = stmt.body[0]
    value = small.value if isinstance(small, (cst.Expr, cst.Assign, cst.AnnAssign)) else None
    return value if isinstance(value, cst.Call) else None


def method(call: cst.Call | None) -> tuple[str, str]:
    """``(receiver, method name)`` of ``receiver.method(...)``, or ``("", "")``."""
    if call is None or not isinstance(call.func, cst.Attribute):
        return "", ""
    return dotted(call.func.value), call.func.attr.value


def last(name: str) -> str:
    return name.rsplit(".", 1)[-1].lower()


def is_backward(c): return method(c)[1] == "backward"
def is_zero_grad(c): return method(c)[1] == "zero_grad"
def is_clip(c): return c is not None and re.search(r"clip_grad_(norm|value)_?$", dotted(c.func)) is not None
def is_sched_step(c, built: dict | None = None) -> bool:
    """``X.step(...)`` where X's last name has "sched", or X is built (``built``: see Blocks) by a
    class or factory of a learning-rate schedule (``*LR``, ``*Scheduler``, ``ReduceLROnPlateau``,
    ``get_*schedule*``)."""
    recv, name = method(c)
    if name != "step":
        return False
    maker = (built or {}).get(last(recv), "")
    return "sched" in last(recv) or bool(re.search(r"LR$|Scheduler$|ReduceLROnPlateau|^get_\w*schedule", maker))
def is_scaler(c, name): return method(c)[1] == name and "scaler" in last(method(c)[0])


def is_opt_step(c) -> bool:
    """``optimizer.step()`` (a receiver whose last name has "opt") or ``scaler.step(optimizer)``."""
    recv, name = method(c)
    return name == "step" and ("opt" in last(recv) or "scaler" in last(recv)) and "sched" not in last(recv)


def calls_in(node: cst.CSTNode) -> list[cst.Call]:
    """Every call in a subtree, in source order."""
    found: list[cst.Call] = []

    class V(cst.CSTVisitor):
        def visit_Call(self, n: cst.Call) -> None:
            found.append(n)

    node.visit(V())
    return found


def contains(node: cst.CSTNode, pred: Callable) -> bool:
    return any(pred(c) for c in calls_in(node))


# ---------------------------------------------------------------- mutants

@dataclass
class Mutant:
    """One injected bug: rule ``code`` expected at ``lines`` (1-based, in ``source``) of
    ``path`` (relative to the repository root); ``site`` is the original line it started from."""

    repo: str
    split: str
    path: str
    code: str
    op: str
    site: int
    source: str = ""
    lines: list[int] = field(default_factory=list)


class Marker(cst.CSTTransformer):
    """Put MARK as the trailing comment of every simple statement line in a subtree
    (or only of those whose call satisfies ``pred``)."""

    def __init__(self, pred: Callable | None = None):
        self.pred = pred

    def leave_SimpleStatementLine(self, orig, new):
        if self.pred is None or any(self.pred(c) for c in calls_in(orig)):
            return new.with_changes(trailing_whitespace=cst.TrailingWhitespace(
                whitespace=cst.SimpleWhitespace("  "), comment=cst.Comment(MARK)))
        return new


def mark(stmt, pred=None):
    return stmt.visit(Marker(pred))


class BlockEdit(cst.CSTTransformer):
    """Apply ``edits[id(original block)](body list) -> new body list`` to module and indented
    blocks; an emptied block gets ``pass``."""

    def __init__(self, edits: dict[int, Callable[[list], list]]):
        self.edits = edits

    def _apply(self, orig, new):
        fn = self.edits.get(id(orig))
        if fn is None:
            return new
        body = fn(list(new.body))
        if not body and isinstance(new, cst.IndentedBlock):
            body = [cst.SimpleStatementLine([cst.Pass()])]
        return new.with_changes(body=body)

    def leave_IndentedBlock(self, orig, new):
        return self._apply(orig, new)

    def leave_Module(self, orig, new):
        return self._apply(orig, new)


class Blocks(cst.CSTVisitor):
    """One walk over a module: every statement block (module body, indented blocks) with its
    loop depth and the statement that owns it (``For``, ``With``, ``FunctionDef``...), every
    call in source order, the functions and methods by name, the module's global names, and what each assigned name is built by (``built``: the last name
    of the target -> the last name of the called class or function, so
    ``self.scheduler = lr_scheduler.StepLR(...)`` gives ``scheduler -> StepLR``)."""

    def __init__(self):
        self.blocks: list[tuple[object, int, cst.CSTNode | None, cst.CSTNode | None]] = []
        self.owner: list[cst.CSTNode] = []
        self.loops: list[cst.CSTNode] = []
        self.depth = 0
        self.calls: list[cst.Call] = []
        self.built: dict[str, str] = {}
        self.functions: dict[str, cst.FunctionDef] = {}
        self.globals: set[str] = set()

    def visit_FunctionDef(self, n: cst.FunctionDef) -> None:
        self.functions.setdefault(n.name.value, n)

    def visit_Call(self, n: cst.Call) -> None:
        self.calls.append(n)

    def visit_Assign(self, n: cst.Assign) -> None:
        if not any(isinstance(o, (cst.FunctionDef, cst.ClassDef)) for o in self.owner):
            self.globals |= {t.target.value for t in n.targets if isinstance(t.target, cst.Name)}
        if isinstance(n.value, cst.Call):
            for t in n.targets:
                self.built[last(dotted(t.target))] = dotted(n.value.func).rsplit(".", 1)[-1]

    def visit_Module(self, n):
        self.blocks.append((n, 0, None, None))

    def visit_IndentedBlock(self, n):
        self.blocks.append((n, self.depth, self.owner[-1] if self.owner else None,
                            self.loops[-1] if self.loops else None))

    def on_visit(self, node):
        if isinstance(node, (cst.For, cst.While)):
            self.depth += 1
            self.loops.append(node)
        if isinstance(node, cst.BaseCompoundStatement):
            self.owner.append(node)
        return super().on_visit(node)

    def on_leave(self, node):
        if isinstance(node, (cst.For, cst.While)):
            self.depth -= 1
            self.loops.pop()
        if isinstance(node, cst.BaseCompoundStatement):
            self.owner.pop()
        super().on_leave(node)


def first(body, pred, start=0, stop=None) -> int | None:
    """Index of the first statement of ``body[start:stop]`` whose own call satisfies ``pred``,
    or that is an ``if`` whose body is only such statements (``if args.clip: clip(...)``)."""
    for i in range(start, len(body) if stop is None else stop):
        s = body[i]
        if pred(stmt_call(s)):
            return i
        if isinstance(s, cst.If) and s.orelse is None and isinstance(s.body, cst.IndentedBlock) \
                and s.body.body and all(pred(stmt_call(x)) for x in s.body.body):
            return i
    return None


#: The statement under which a conversion of the model builds new ``Parameter`` objects.
OVERWRITE_SETTING = "torch.__future__.set_overwrite_module_params_on_conversion(True)\n"


def moved(body, i, j, pred, before: str | None = None):
    """Move ``body[i]`` (marked where ``pred`` holds) to stand before the statement now at ``j``,
    with the statement ``before`` (source text) just before it when given."""
    stmt = mark(body[i], pred)
    rest = body[:i] + body[i + 1:]
    j = j - 1 if j > i else j
    extra = [cst.parse_statement(before)] if before else []
    return rest[:j] + extra + [stmt] + rest[j:]


def operators(module: cst.Module) -> list[tuple[str, str, cst.CSTNode, dict]]:
    """Every applicable ``(code, operator name, key statement, edits)`` of a parsed module.

    ``edits`` maps ``id(block)`` to a function ``body list -> new body list`` (see BlockEdit);
    the optional key ``"mark"`` holds a call predicate whose statements, anywhere in the
    module, are the expected lines as well (LC301: the ``eval()`` calls left unbalanced).
    """
    found = []
    v = Blocks()
    module.visit(v)
    all_calls, built = v.calls, v.built

    def sched_step(c) -> bool:
        return is_sched_step(c, built)
    n_zero = sum(map(is_zero_grad, all_calls))
    evals = {method(c)[0] for c in all_calls if method(c)[1] == "eval" and not c.args}
    trains = Counter(method(c)[0] for c in all_calls if method(c)[1] == "train" and not c.args)
    has_scaler_step = any(is_scaler(c, "step") for c in all_calls)
    n_update = sum(is_scaler(c, "update") for c in all_calls)
    for block, depth, owner, loop in v.blocks:
        body = list(block.body)
        key = id(block)

        def add(code, op, stmt, fn):
            found.append((code, op, stmt, {key: fn}))

        calls = [stmt_call(s) for s in body]
        bw = first(body, is_backward)
        st = first(body, is_opt_step)
        if depth and bw is not None:
            clip = first(body, is_clip, bw + 1)
            if clip is not None and (st is None or clip < st):
                add("LC101", "clip before backward", body[clip], lambda b, c=clip, t=bw: moved(b, c, t, is_clip))
            if clip is not None and st is not None and clip < st:
                add("LC102", "clip after step", body[clip], lambda b, c=clip, s=st: moved(b, c, s + 1, is_clip))
            if st is not None and bw < st:
                z = first(body, is_zero_grad)
                if z is not None and not bw < z < st:
                    add("LC103", "zero_grad between backward and step", body[z],
                        lambda b, z=z, t=bw: moved(b, z, t + 1, is_zero_grad))
                add("LC104", "step before backward", body[st], lambda b, s=st, t=bw: moved(b, s, t, is_opt_step))
                if z is not None and n_zero == 1:
                    add("LC105", "delete zero_grad", body[z],
                        lambda b, z=z: [mark(x, is_opt_step) for x in b[:z] + b[z + 1:]])
        if depth and st is not None:
            ts = first(body, sched_step, st + 1)
            if ts is not None:
                add("LC202", "scheduler step before optimizer step", body[ts],
                    lambda b, t=ts, s=st: moved(b, t, s, sched_step))
        for i, c in enumerate(calls):
            recv, name = method(c)
            if sched_step(c) and c.args and built.get(last(recv)) == "ReduceLROnPlateau":
                add("LC203", "drop ReduceLROnPlateau metric", body[i],
                    lambda b, i=i, s=body[i], c=c: b[:i] + [mark(s.deep_replace(c, c.with_changes(args=[])))]
                    + b[i + 1:])
            if name == "train" and not c.args and recv in evals and trains[recv] == 1:
                found.append(("LC301", "delete model.train()", body[i], {
                    key: lambda b, i=i: b[:i] + b[i + 1:],
                    "mark": lambda x, r=recv: method(x) == (r, "eval")}))
            if is_scaler(c, "unscale_") and contains(block, is_clip):
                add("LC601", "delete scaler.unscale_", body[i],
                    lambda b, i=i: [mark(x, is_clip) for x in b[:i] + b[i + 1:]])
                sstep = first(body, lambda x: is_scaler(x, "step"), i + 1)
                if sstep is not None:
                    add("LC605", "unscale_ after scaler.step", body[i],
                        lambda b, i=i, s=sstep: moved(b, i, s + 1, lambda x: is_scaler(x, "unscale_")))
            if is_scaler(c, "step") and c.args and not any(is_scaler(x, "unscale_") for x in calls_in(block)):
                new = cst.Call(cst.Attribute(c.args[0].value, cst.Name("step")))
                add("LC602", "scaler.step(opt) -> opt.step()", body[i],
                    lambda b, i=i, s=body[i], c=c, new=new: b[:i] + [mark(s.deep_replace(c, new))] + b[i + 1:])
            if is_scaler(c, "update") and n_update == 1:
                add("LC604", "delete scaler.update()", body[i],
                    lambda b, i=i: [mark(x, lambda y: is_scaler(y, "step")) for x in b[:i] + b[i + 1:]])
            if is_backward(c) and isinstance(c.func.value, cst.Call) and is_scaler(c.func.value, "scale") \
                    and c.func.value.args and has_scaler_step:
                new = c.with_changes(func=c.func.with_changes(value=c.func.value.args[0].value))
                add("LC603", "scaler.scale(loss).backward() -> loss.backward()", body[i],
                    lambda b, i=i, s=body[i], c=c, new=new: b[:i] + [mark(s.deep_replace(c, new))] + b[i + 1:])
            if name in ("to", "cuda") and isinstance(c.func.value, cst.Name):
                model = c.func.value.value
                opt = next((j for j in range(i + 1, len(body)) if optimizer_built_from(body[j], model)), None)
                if opt is not None and not any(rebinds(x, model) for x in body[i + 1:opt]):
                    code = "LC501" if is_dtype_conversion(c) else "LC502"
                    # before the optimizer has state, the move orphans the optimizer's parameters
                    # only when conversions build new Parameter objects: the mutant turns that on
                    add(code, f"model.{name}() after the optimizer", body[i],
                        lambda b, i=i, o=opt: moved(b, i, o + 1, lambda x: method(x)[1] in ("to", "cuda"),
                                                    before=OVERWRITE_SETTING))
        for i, s in enumerate(body):
            sched = first([s], sched_step)
            recv = method(stmt_call(s) or stmt_call(s.body.body[0]))[0] if sched is not None else ""
            if depth and recv and built.get(last(recv)) in EPOCH_SCHEDULERS:
                inner = batch_loop(body, recv, v)
                if inner is not None:
                    edits = {key: lambda b, i=i: b[:i] + b[i + 1:],
                             id(inner.body): lambda b, s=s: b + [mark(s)]}
                    found.append(("LC201", "epoch scheduler step into the batch loop", s, edits))
            if loop is not None and contains(loop, is_backward):  # a training loop, not evaluation
                loss_item = loss_item_site(s)
                if loss_item is not None:
                    add("LC401", "loss.item() -> loss", s,
                        lambda b, i=i, s=s, li=loss_item: b[:i] + [mark(s.deep_replace(li, li.func.value))] + b[i + 1:])
            if isinstance(s, cst.With) and no_grad_with(s) and evals and (depth or contains_loop(s)) \
                    and isinstance(s.body, cst.IndentedBlock):
                add("LC302", "remove with torch.no_grad()", s,
                    lambda b, i=i: b[:i] + [mark(x) for x in b[i].body.body] + b[i + 1:])
    return found


def batch_loop(body: list, recv: str, v: "Blocks") -> cst.For | None:
    """The batch loop a scheduler stepped in this epoch-loop body could be moved into: a
    ``for`` of the body whose block calls backward(), or the first such loop of a function
    the body calls (``train_one_epoch(...)`` when the scheduler is a module global,
    ``self._train_epoch(...)`` when it is ``self.scheduler``)."""
    def loop_of(node):
        return next((x for x in walk(node, (cst.For,)) if isinstance(x.body, cst.IndentedBlock)
                     and any(is_backward(stmt_call(y)) for y in x.body.body)), None)

    for stmt in body:
        if isinstance(stmt, cst.For) and loop_of(stmt) is not None:
            return loop_of(stmt)
    for c in calls_in(cst.IndentedBlock(body)):
        name = dotted(c.func)
        if recv.startswith("self.") and name.startswith("self.") and name[5:] in v.functions:
            target = v.functions[name[5:]]
        elif "." not in recv and recv in v.globals and name in v.functions:
            target = v.functions[name]
        else:
            continue
        loop = loop_of(target)
        if loop is not None:
            return loop
    return None


def walk(node, kinds) -> list:
    """Every node of the given types in a subtree, in source order."""
    out = []

    class V(cst.CSTVisitor):
        def on_visit(self, n):
            if isinstance(n, kinds):
                out.append(n)
            return True

    node.visit(V())
    return out


def is_dtype_conversion(c: cst.Call) -> bool:
    """``.to(torch.float16)``, ``.to(dtype=...)``, ``.to(device, torch.bfloat16)``: a dtype change (LC501),
    as opposed to a device move (``.to(device)``, ``.cuda()``: LC502)."""
    return any(a.keyword is not None and a.keyword.value == "dtype" or
               re.search(r"(^|\.)(half|float|double|bfloat16|float(16|32|64))$", dotted(a.value))
               for a in c.args)


def rebinds(stmt, name: str) -> bool:
    """Whether a statement assigns ``name`` (``model = DDP(model)``)."""
    return any(isinstance(t.target, cst.Name) and t.target.value == name
               for a in walk(stmt, (cst.Assign,)) for t in a.targets)


def optimizer_built_from(stmt, model: str) -> bool:
    """``opt = torch.optim.Adam(model.parameters(), ...)`` (any optimizer class) naming ``model``."""
    c = stmt_call(stmt)
    if c is None or not isinstance(stmt.body[0], cst.Assign):
        return False
    fname = dotted(c.func)
    if ".optim." not in f".{fname}" and fname.rsplit(".", 1)[-1] not in OPTIMIZERS:
        return False
    return any(isinstance(n, cst.Name) and n.value == model for n in names_in(c))


def names_in(node) -> list[cst.Name]:
    out: list[cst.Name] = []

    class V(cst.CSTVisitor):
        def visit_Name(self, n):
            out.append(n)

    node.visit(V())
    return out


def loss_item_site(stmt) -> cst.Call | None:
    """The ``loss.item()`` call (receiver name containing "loss") kept by an augmented
    assignment or passed to append/extend/update/add in this statement line."""
    if not isinstance(stmt, cst.SimpleStatementLine) or len(stmt.body) != 1:
        return None
    small = stmt.body[0]
    if isinstance(small, cst.AugAssign):
        scope = small.value
    elif isinstance(small, cst.Expr) and isinstance(small.value, cst.Call) \
            and method(small.value)[1] in ("append", "extend", "update", "add"):
        scope = small.value
    else:
        return None
    for c in calls_in(scope):
        recv, name = method(c)
        if name == "item" and not c.args and isinstance(c.func.value, cst.Name) and "loss" in recv.lower():
            return c
    return None


def no_grad_with(w: cst.With) -> bool:
    return any(isinstance(it.item, cst.Call) and re.search(r"(no_grad|inference_mode)$", dotted(it.item.func))
               for it in w.items)


def contains_loop(node) -> bool:
    found = []

    class V(cst.CSTVisitor):
        def visit_For(self, n):
            found.append(n)

        def visit_While(self, n):
            found.append(n)

    node.visit(V())
    return bool(found)


def render(module: cst.Module, edits: dict) -> tuple[str, list[int]]:
    """Apply the edits; return the source without markers and the lines that carried one
    (the first line of each marked statement)."""
    edits = dict(edits)
    pred = edits.pop("mark", None)
    new = module.visit(BlockEdit(edits))
    if pred is not None:
        new = new.visit(Marker(pred))
    wrapper = MetadataWrapper(cst.parse_module(new.code))
    pos = wrapper.resolve(PositionProvider)
    lines = sorted({pos[n].start.line for n in pos if isinstance(n, cst.SimpleStatementLine)
                    and n.trailing_whitespace.comment and n.trailing_whitespace.comment.value == MARK})
    return re.sub(r"  " + re.escape(MARK) + r"$", "", new.code, flags=re.M), lines


_positions: dict[int, dict] = {}


def site_line(module: cst.Module, stmt) -> int:
    """The first line of ``stmt`` in ``module`` (positions computed once per module)."""
    if id(module) not in _positions:
        _positions[id(module)] = MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)
    return _positions[id(module)][stmt].start.line


def is_test(path: Path) -> bool:
    """Test modules (``test_*.py``, ``*_test.py``, under ``tests/``) are not training scripts."""
    return path.name.startswith("test_") or path.name.endswith("_test.py") or "tests" in path.parts


def collect(repos: list[Repo], rules: set[str] | None) -> list[tuple[Repo, str, str, str, cst.Module, object, dict]]:
    """Every applicable site of the repositories' ``.py`` files under their subpaths."""
    sites = []
    for repo in repos:
        files = set()
        for sub in repo.subpaths:
            top = repo.root / sub
            files |= {top} if top.is_file() else set(top.rglob("*.py"))
        for path in sorted(p for p in files if p.suffix == ".py" and p.is_file() and not is_test(p)):
            try:
                text = path.read_text(encoding="utf-8")
                if not TRIGGERS.search(text):
                    continue
                module = cst.parse_module(text)
            except (cst.ParserSyntaxError, UnicodeDecodeError, RecursionError):
                continue
            for code, op, stmt, edits in operators(module):
                if rules is None or code in rules:
                    sites.append((repo, str(path.relative_to(repo.root)), code, op, module, stmt, edits))
    return sites


def run(mutants: list[Mutant], roots: dict[str, Path], cmd: list[str]) -> list[dict]:
    """Run loopcheck on each mutant in a hard-linked copy of its repository; classify."""
    results = []
    by_repo = defaultdict(list)
    for m in mutants:
        by_repo[m.repo].append(m)
    for repo, ms in by_repo.items():
        with tempfile.TemporaryDirectory(prefix="mutate-") as tmp:
            copy = Path(tmp) / "repo"
            subprocess.run(["cp", "-al", str(roots[repo]), str(copy)], check=True)
            baselines: dict[str, Counter] = {}
            for m in ms:
                target = copy / m.path
                if m.path not in baselines:
                    base = [f for f in run_loopcheck(cmd, [m.path], copy) if f["filename"] == m.path]
                    baselines[m.path] = Counter((f["code"], line_of(target, f)) for f in base)
                original = target.read_bytes()
                target.unlink()  # break the hard link before writing
                target.write_text(m.source, encoding="utf-8")
                try:  # findings placed in other files (cross-module evidence) are not this mutant's
                    got = [f for f in run_loopcheck(cmd, [m.path], copy) if f["filename"] == m.path]
                finally:
                    target.unlink()
                    target.write_bytes(original)
                seen = Counter(baselines[m.path])
                new = []
                lines = m.source.splitlines()
                for f in got:
                    k = (f["code"], lines[f["location"]["row"] - 1].strip())
                    if seen[k]:
                        seen[k] -= 1
                    else:
                        new.append(f)
                hits = [f for f in new if f["code"] == m.code]
                if any(f["location"]["row"] in m.lines for f in hits):
                    outcome = "found"
                elif hits:
                    outcome = "elsewhere"
                elif new:
                    outcome = "other code"
                else:
                    outcome = "missed"
                results.append({"repo": m.repo, "split": m.split, "path": m.path, "code": m.code, "op": m.op,
                                "site": m.site, "expected": m.lines, "outcome": outcome,
                                "new": [(f["code"], f["location"]["row"]) for f in new]})
    return results


def line_of(path: Path, f: dict) -> str:
    lines = path.read_text(encoding="utf-8").splitlines()
    row = f["location"]["row"]
    return lines[row - 1].strip() if 0 < row <= len(lines) else ""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--split", choices=["dev", "heldout", "all"], required=True)
    parser.add_argument("--max-per-rule", type=int, default=10)
    parser.add_argument("--max-per-repo", type=int, default=3, help="per rule and repository")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--rule", action="append", help="only this rule code (repeatable)")
    parser.add_argument("--repo", action="append", help="only this repository (repeatable)")
    parser.add_argument("--loopcheck", help="loopcheck command (default: loopcheck on PATH)")
    parser.add_argument("--json", type=Path, help="write every mutant's result here")
    parser.add_argument("--list", action="store_true", help="list the mutants, run nothing")
    parser.add_argument("--diff", action="store_true", help="with --list: print each mutant's diff")
    args = parser.parse_args()

    _, repos = load_manifest()
    repos = [r for r in repos if args.split in ("all", r.split) and (not args.repo or r.name in args.repo)
             and r.root.is_dir()]
    sites = collect(repos, set(args.rule) if args.rule else None)
    rng = random.Random(args.seed)
    chosen = []
    for code in sorted({s[2] for s in sites}):
        pool = [s for s in sites if s[2] == code]
        rng.shuffle(pool)
        per_repo: Counter = Counter()
        for site in pool:
            if len([c for c in chosen if c[2] == code]) < args.max_per_rule \
                    and per_repo[site[0].name] < args.max_per_repo:
                per_repo[site[0].name] += 1
                chosen.append(site)
    mutants = []
    for repo, path, code, op, module, stmt, edits in chosen:
        try:
            source, lines = render(module, edits)
        except (cst.ParserSyntaxError, ValueError) as e:
            print(f"skip {repo.name} {path} {code}: {e}", file=sys.stderr)
            continue
        mutants.append(Mutant(repo.name, repo.split, path, code, op, site_line(module, stmt), source, lines))
    print(f"{len(sites)} applicable sites, {len(mutants)} mutants drawn (seed {args.seed}, "
          f"at most {args.max_per_rule} per rule)")
    roots = {r.name: r.root for r in repos}
    if args.list:
        for m in mutants:
            print(f"{m.split:8} {m.code} {m.repo}/{m.path}:{m.site} {m.op} -> expect line(s) {m.lines}")
            if args.diff:
                old = (roots[m.repo] / m.path).read_text(encoding="utf-8").splitlines(keepends=True)
                sys.stdout.writelines(difflib.unified_diff(old, m.source.splitlines(keepends=True), m.path,
                                                           m.path + " (mutant)", n=2))
        return 0
    results = run(mutants, roots, loopcheck_command(args.loopcheck))
    for split in ("dev", "heldout"):
        rs = [r for r in results if r["split"] == split]
        if not rs:
            continue
        print(f"\n== {split}: {len(rs)} mutants")
        for code in sorted({r["code"] for r in rs}):
            c = Counter(r["outcome"] for r in rs if r["code"] == code)
            n = sum(c.values())
            print(f"  {code}: found {c['found']}/{n} ({c['found'] / n:.0%}), elsewhere {c['elsewhere']}, "
                  f"other code {c['other code']}, missed {c['missed']}")
        c = Counter(r["outcome"] for r in rs)
        print(f"  overall: found {c['found']}/{len(rs)} ({c['found'] / len(rs):.0%}), elsewhere "
              f"{c['elsewhere']}, other code {c['other code']}, missed {c['missed']}")
        for r in rs:
            if r["outcome"] != "found":
                print(f"  {r['outcome']:9} {r['code']} {r['repo']}/{r['path']}:{r['site']} ({r['op']}; "
                      f"expected {r['expected']}, new findings {r['new']})")
    if args.json:
        args.json.write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
