"""9.1 Deep nesting: nothing LibCST's native parser or a recursive walk would die on takes
the run down; what is too deep is one LC001 finding, the other files are still checked."""

from __future__ import annotations

import sys
import threading

import libcst as cst
import pytest

from loopcheck.analysis import check_source
from loopcheck.engine.walk import calls_in_order
from loopcheck.parsing import (
    MAX_BRACKET_DEPTH, MAX_EXPRESSION_DEPTH, TooDeeplyNested, check_nesting, nesting, parse_module, run_deep,
)

from .helpers import BAD, LC101_LINE, cli_process

LOOP = """\
import torch
from torch import nn

model = nn.Linear(4, 2)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(10):
    x = torch.randn(8, 4)
    optimizer.zero_grad()
    nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    loss = model(x).pow(2).mean()
    v = {expr}
    loss.backward()
    optimizer.step()
"""


def loop_with(expr: str) -> str:
    return LOOP.replace("{expr}", expr)


# -------------------------------------------------------------------- the run survives


def test_files_that_crash_libcst_are_one_finding_each_and_the_run_goes_on(tmp_path):
    """1,300 nested brackets and a 9,000-term chain segfault LibCST on a main thread
    (exit -11 before); now: one LC001 each, at the line, the other file's finding kept
    (PyTorch code: LibCST reads it)."""
    (tmp_path / "bad.py").write_text(BAD)
    (tmp_path / "brackets.py").write_text("import torch\nloss.backward()\nx = " + "(" * 1300 + "1" + ")" * 1300 + "\n")
    (tmp_path / "chain.py").write_text("import torch\nloss.backward()\nx = " + "+".join(["a"] * 9000) + "\n")
    (tmp_path / "calls.py").write_text("import torch\nloss.backward()\nx = " + "f(" * 1300 + "1" + ")" * 1300 + "\n")
    done = cli_process("--output-format", "concise", ".", cwd=tmp_path)
    out = done.stdout.decode()
    assert done.returncode == 1, done.stderr
    lines = out.splitlines()
    assert lines[0].startswith(LC101_LINE)
    # at the 201st bracket, in CPython's words
    assert lines[1] == "brackets.py:3:205: LC001 SyntaxError: too many nested parentheses"
    assert lines[2] == "calls.py:3:406: LC001 SyntaxError: too many nested parentheses"
    # valid Python (CPython parses it): not a syntax error, a file loopcheck cannot analyze
    assert lines[3] == ("chain.py:3:2006: LC001 nested too deeply to analyze (more than 1000 levels of expressions "
                        "or elif branches), so the file was not checked")
    assert lines[4] == "Found 4 errors."
    assert done.stderr == b""


@pytest.mark.parametrize("expr", [
    "+".join(["x"] * 985),                          # CPython's pydoc_data/topics.py has a 985-piece chain
    "f(" * 199 + "x" + ")" * 199,                   # as deep as CPython accepts
    "x" + ".f()" * 400,
    "x" + "[0]" * 400,
    "not " * 900 + "x",
    "lambda: " * 900 + "x",
    "x if x else " * 450 + "x",
    "(" + " ".join(["'a'"] * 2000) + ")",
])
def test_deep_but_valid_code_is_analyzed(expr):
    """Past the depths that raised RecursionError (~490 levels) and below the limits: the
    file is checked in a big-stack worker, with its findings and their fixes."""
    src = loop_with(expr)
    found = run_deep(check_source, src, "deep.py")
    assert [f.code for f in found] == ["LC101"]


@pytest.mark.xfail(strict=True, reason="engine/project.py parses imported modules with cst.parse_module, "
                   "not loopcheck.parsing.parse_module: a deep imported module segfaults the run")
def test_a_deep_module_the_checked_file_imports_does_not_crash_the_run(tmp_path):
    (tmp_path / "helpers.py").write_text("def step(opt):\n    opt.step()\nx = " + "(" * 300_000 + ")" * 300_000 + "\n")
    (tmp_path / "train.py").write_text(
        # (imported in a function: a top-level import of a module CPython cannot compile fails
        # for certain, and the file is then not analysed at all, engine/import_failure.py)
        "import torch\n\ndef main(loader, loss, opt):\n    from helpers import step\n"
        "    for b in loader:\n        loss.backward()\n        step(opt)\n\nmain(None, None, None)\n"
    )
    done = cli_process("--output-format", "concise", "train.py", cwd=tmp_path, timeout=120)
    assert done.returncode in (0, 1), done.returncode


def test_deep_elif_chain_is_analyzed_and_a_longer_one_is_one_finding():
    branches = "".join(f"    elif x == {i}:\n        pass\n" for i in range(1, 400))
    src = loop_with("0\n    if x == 0:\n        pass\n" + branches)
    assert [f.code for f in run_deep(check_source, src, "elif.py")] == ["LC101"]
    branches = "".join(f"    elif x == {i}:\n        pass\n" for i in range(1, MAX_EXPRESSION_DEPTH + 5))
    src = loop_with("0\n    if x == 0:\n        pass\n" + branches)
    [finding] = check_source(src, "elif.py")
    assert finding.code == "LC001" and "nested too deeply" in finding.message


def test_the_walks_need_no_deep_stack():
    """calls_in_order is iterative: a 3,000-call chain walks at the default recursion limit."""
    expr = cst.Name("f")
    for _ in range(3000):  # f(x)(x)...(x), built without parsing
        expr = cst.Call(func=expr, args=[cst.Arg(cst.Name("x"))])
    assert sys.getrecursionlimit() < 3000
    calls = calls_in_order(expr)
    assert len(calls) == 3000 and calls[-1] is expr  # the outermost call comes last


def test_calls_in_order_keeps_evaluation_order():
    expr = cst.parse_expression("f(g(a), h(k(b)), lambda: m(c))")
    names = [cst.Module([]).code_for_node(c.func) for c in calls_in_order(expr)]
    assert names == ["g", "k", "h", "f"]  # arguments before the call, lambdas not entered
    assert calls_in_order(cst.parse_expression("lambda: f()")) == []


# -------------------------------------------------------------------- the pre-check


def test_brackets_in_strings_and_comments_do_not_count():
    src = "x = '((((((((((' # ((((((((((((\ny = \"\"\"\n" + "(" * 500 + "\n\"\"\"\n"
    assert nesting(src).brackets == 0
    check_nesting(src)


def test_f_string_brackets_count():
    assert nesting('x = f"{(((a)))}"\n').brackets == 4


def test_limits_and_positions():
    ok = "x = " + "(" * MAX_BRACKET_DEPTH + "1" + ")" * MAX_BRACKET_DEPTH + "\n"
    check_nesting(ok)  # CPython accepts 200
    deep = "\n\nx = " + "[" * (MAX_BRACKET_DEPTH + 1) + "]" * (MAX_BRACKET_DEPTH + 1) + "\n"
    with pytest.raises(TooDeeplyNested) as err:
        parse_module(deep)
    assert isinstance(err.value, cst.ParserSyntaxError)
    assert (err.value.raw_line, err.value.raw_column) == (3, 4 + MAX_BRACKET_DEPTH)
    chain = "x = " + " + ".join(["a"] * (MAX_EXPRESSION_DEPTH + 2)) + "\n"
    assert nesting(chain).depth == MAX_EXPRESSION_DEPTH + 1
    assert nesting(chain, (MAX_BRACKET_DEPTH, MAX_EXPRESSION_DEPTH)).depth_at == (1, 4 + 4 * MAX_EXPRESSION_DEPTH + 2)  # the 1,001st "+"
    with pytest.raises(TooDeeplyNested):
        check_nesting(chain)


def test_real_code_stays_far_below_the_limit():
    import loopcheck.cli.commands
    import loopcheck.engine.builder

    for module in (loopcheck.cli.commands, loopcheck.engine.builder):
        with open(module.__file__, encoding="utf-8") as f:
            found = nesting(f.read())
        assert found.brackets < 20 and found.depth < 100


# -------------------------------------------------------------------- the worker


def test_run_deep_returns_raises_and_restores_the_recursion_limit():
    limit = sys.getrecursionlimit()

    def deep(n: int) -> int:
        return 0 if n == 0 else 1 + deep(n - 1)

    assert run_deep(deep, 20_000) == 20_000
    assert sys.getrecursionlimit() == limit
    with pytest.raises(ZeroDivisionError):
        run_deep(lambda: 1 / 0)
    seen = []
    run_deep(lambda: seen.append((threading.current_thread().name, run_deep(lambda: threading.current_thread().name))))
    assert seen == [("loopcheck-deep", "loopcheck-deep")]  # nested calls run in the same worker
    assert sys.getrecursionlimit() == limit
