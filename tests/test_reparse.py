"""The language server's reparse of an edited document (:mod:`loopcheck.server.reparse`): the spliced
tree is the tree a full parse builds, the unchanged statements keep their nodes, and where
splicing is not certain the whole text is parsed."""

from __future__ import annotations

import random
from pathlib import Path

import libcst as cst
import pytest

from loopcheck.parsing import parse_module
from loopcheck.server.reparse import Reparser, spans_of

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
LOOP = (FIXTURES / "LC401_bad.py").read_text(encoding="utf-8")


def full(text: str) -> cst.Module | None:
    try:
        return parse_module(text)
    except cst.ParserSyntaxError:
        return None


def reparse(reparser: Reparser, text: str) -> cst.Module | None:
    try:
        return reparser.parse(text)
    except cst.ParserSyntaxError:
        return None


def assert_same(reparser: Reparser, text: str) -> cst.Module:
    """``reparser.parse(text)`` is a full parse's tree and its statement spans are right."""
    expected, got = full(text), reparse(reparser, text)
    assert expected is not None and got is not None
    assert got.deep_equals(expected) and got.code == expected.code
    reparser.prepare()
    spans, real = reparser._spans, spans_of(expected, text)
    if real is None:  # LibCST's code is not the text: never spliced into
        assert spans is None
    else:
        assert (spans.starts, spans.body_end, spans.first_block) == (real.starts, real.body_end, real.first_block)
    return got


def line_of(text: str, needle: str) -> int:
    """The offset of the end of the first line holding ``needle``."""
    return text.index("\n", text.index(needle))


def test_typing_into_the_loop_reparses_and_keeps_the_other_statements():
    reparser = Reparser()
    first = reparser.parse(LOOP)
    at = line_of(LOOP, "loss.backward()")
    text = LOOP
    for typed in "  # x":
        text = text[:at] + typed + text[at:]
        at += 1
        assert_same(reparser, text)
    assert reparser.reparsed == 5
    second = reparser.module
    kept = sum(a is b for a, b in zip(first.body, second.body))
    assert len(second.body) == len(first.body) and kept == len(first.body) - 3  # the loop and its neighbours


@pytest.mark.parametrize("edit", [
    pytest.param(lambda t: "# a new first comment\n\n" + t, id="header"),
    pytest.param(lambda t: t + "\n# trailing comment\n\n", id="footer"),
    pytest.param(lambda t: t + "print(len(loss_history))\n", id="append-statement"),
    pytest.param(lambda t: t.replace("model.eval()\n", "model.eval()\n    # an indented comment\n", 1), id="block-comment"),
    pytest.param(lambda t: t.replace("num_epochs = 4\n", "", 1), id="delete-statement"),
    pytest.param(lambda t: t.replace("num_epochs = 4\n", "num_epochs = 4\nif num_epochs:\n    pass\nelse:\n    num_epochs = 1\n", 1),
                 id="insert-block"),
])
def test_edits_at_the_edges_give_a_full_parses_tree(edit):
    reparser = Reparser()
    reparser.parse(LOOP)
    assert_same(reparser, edit(LOOP))
    assert reparser.reparsed == 1


@pytest.mark.parametrize("edit", [
    pytest.param(lambda t: t.replace("\n", "\r\n"), id="crlf"),
    pytest.param(lambda t: t.rstrip("\n"), id="no-final-newline"),
    pytest.param(lambda t: t.replace("    def __init__", "\tdef __init__", 1).replace("        super()", "\t\tsuper()", 1)
                 .replace("        self.net", "\t\tself.net", 1), id="first-indentation-changed"),
])
def test_what_a_splice_cannot_be_sure_of_is_parsed_whole(edit):
    reparser = Reparser()
    reparser.parse(LOOP)
    text = edit(LOOP)
    expected = full(text)
    got = reparse(reparser, text)
    assert reparser.reparsed == 0
    assert (got is None and expected is None) or got.deep_equals(expected)


def test_an_edit_that_runs_into_the_next_statement_is_parsed_whole():
    reparser = Reparser()
    reparser.parse(LOOP)
    at = LOOP.index("num_epochs = 4")
    broken = LOOP[:at] + "num_epochs = (4\n" + LOOP[at + len("num_epochs = 4\n"):]
    with pytest.raises(cst.ParserSyntaxError):
        reparser.parse(broken)
    assert reparser.reparsed == 0 and reparser.text == LOOP  # the last good tree is kept
    assert_same(reparser, LOOP.replace("num_epochs = 4", "num_epochs = 5"))
    assert reparser.reparsed == 1


def test_text_libcst_does_not_reproduce_is_parsed_whole():
    """LibCST drops a stray backslash line (``code`` is not the text): its spans would be
    wrong, so such a text is never spliced into, nor spliced from."""
    at = LOOP.index("    train_loss = 0.0")
    odd = LOOP[:at] + "   \\\n" + LOOP[at:]
    assert parse_module(odd).code != odd
    reparser = Reparser()
    reparser.parse(odd)
    edited = odd.replace("num_epochs = 4", "num_epochs = 5")
    assert reparser.parse(edited).deep_equals(parse_module(edited)) and reparser.reparsed == 0
    assert reparser.fallback == "LibCST's code for the last tree is not its text"
    reparser = Reparser()
    reparser.parse(LOOP)
    assert reparser.parse(odd).deep_equals(parse_module(odd)) and reparser.reparsed == 0
    assert reparser.fallback == "LibCST's code for the region is not its text"


SNIPPETS = ["x", "(", ")", "\n", "    ", "# c\n", "\n\n", "pass\n", "    # ind\n", ":", '"""', "\\\n",
            "if a:\n    b = 1\n", "else:\n    pass\n", "@dec\n", "def g():\n    return 1\n", "\t", "  y = 2\n"]


def random_edit(text: str, rng: random.Random) -> str:
    pos = rng.randrange(len(text) + 1)
    kind = rng.random()
    if kind < 0.35:
        if rng.random() < 0.5:
            pos = text.rfind("\n", 0, pos) + 1
        return text[:pos] + rng.choice(SNIPPETS) + text[pos:]
    if kind < 0.6:
        return text[:pos] + text[pos + rng.randrange(1, 40):]
    start, end = text.rfind("\n", 0, pos) + 1, text.find("\n", pos)
    if end < 0:
        return text
    if kind < 0.8:  # delete a line
        return text[:start] + text[end + 1:]
    return text[:end + 1] + text[start:end + 1] + text[end + 1:]  # duplicate a line


@pytest.mark.parametrize("name", ["LC401_bad.py", "LC105_bad.py", "LC203_bad.py", "LC301_bad.py"])
def test_random_edits_give_a_full_parses_tree(name):
    """Random edits, each applied to the last version (or the last one that parsed): every
    version parses exactly as a full parse does, or fails as it does."""
    base = (FIXTURES / name).read_text(encoding="utf-8")
    rng = random.Random(name)
    reparser, text, good, parsed = Reparser(), base, base, 0
    reparser.parse(base)
    for _ in range(150):
        text = random_edit(text if rng.random() < 0.7 else good, rng)
        if full(text) is None:
            assert reparse(reparser, text) is None
            continue
        assert_same(reparser, text)
        good, parsed = text, parsed + 1
    assert parsed >= 20 and reparser.reparsed >= parsed * 0.6


# ------------------------------------------------------------------ the analysis' node tables


def _check(reparser: Reparser | None, text: str):
    from loopcheck.server.worker import analyze

    return analyze("python", text, str(FIXTURES / "edited.py"), None, False, (), reparser)


def _nodes(module: cst.Module) -> set[int]:
    from loopcheck.engine.walk import children

    out, stack = set(), [module]
    while stack:
        node = stack.pop()
        out.add(id(node))
        stack.extend(children(node))
    return out


def test_the_analysis_tables_are_carried_across_a_splice_and_emptied_by_a_full_parse():
    text = (FIXTURES / "LC301_bad_evaluate_helper.py").read_text(encoding="utf-8")
    reparser = Reparser()
    _check(reparser, text)
    tables = reparser.tables
    calls = tables["calls"]
    helper = reparser.module.body[next(i for i, s in enumerate(reparser.module.body)
                                       if isinstance(s, cst.FunctionDef) and s.name.value == "evaluate")]
    kept = {node: entry for node, entry in calls.items() if id(node) in _nodes(helper)}
    assert kept  # the helper's calls, in evaluation order

    # typing into the loop: the helper keeps its nodes, and its entries are used again
    typed = text.replace("optimizer.step()\n", "optimizer.step()  # typed\n", 1)
    assert _check(reparser, typed).reparsed and reparser.tables is tables
    assert all(calls[node] is entry for node, entry in kept.items())
    assert len(calls) > len(kept) + 10  # the loop's calls, computed for its new nodes

    # a full parse (here: CRLF line endings) leaves no node of the last tree: only new entries
    crlf = typed.replace("\n", "\r\n")
    assert not _check(reparser, crlf).reparsed and reparser.tables is tables
    live = _nodes(reparser.module)
    assert tables["calls"] and all(id(node) in live for node in tables["calls"])


def test_the_tables_are_emptied_when_replaced_nodes_outgrow_the_rest():
    text = (FIXTURES / "LC401_bad.py").read_text(encoding="utf-8")
    reparser = Reparser()
    reparser.parse(text)
    reparser.tables["calls"] = {object(): None for _ in range(100)}  # what a check put in
    at = line_of(text, "loss.backward()")
    text = text[:at] + " #" + text[at:]
    reparser.parse(text)  # the first splice measures them: 100 entries
    assert len(reparser.tables["calls"]) == 100
    reparser.tables["calls"].update({object(): None for _ in range(1101)})  # 1,201 > 2 x 100 + 1,000
    text = text[:at] + " #" + text[at:]
    reparser.parse(text)
    assert reparser.reparsed == 2 and reparser.tables == {}


def test_an_edited_helper_is_read_again_with_the_tables_carried():
    """The finding lives in a helper the loop inlines: editing the helper changes it, although
    the loop's statements (and their tables) are unchanged."""
    text = (FIXTURES / "LC301_bad_evaluate_helper.py").read_text(encoding="utf-8")
    fixed = text.replace("    return total / len(loader)", "    model.train()\n    return total / len(loader)", 1)
    reparser = Reparser()
    versions = [text, fixed, text, fixed]
    got = [_check(reparser, v) for v in versions]
    assert [a.reparsed for a in got] == [False, True, True, True]
    assert [[f.code for f in a.findings] for a in got] == [["LC301"], [], ["LC301"], []]
    assert [a.findings for a in got] == [_check(None, v).findings for v in versions]


@pytest.mark.parametrize("name", ["LC301_bad_evaluate_helper.py", "LC401_bad_loss_from_helper.py"])
def test_random_edits_find_what_a_fresh_check_finds(name):
    """Each version that parses, checked with the last version's tree and tables, gives the
    findings of a check from scratch."""
    base = (FIXTURES / name).read_text(encoding="utf-8")
    rng = random.Random(f"tables {name}")
    reparser, text, good, checked = Reparser(), base, base, 0
    _check(reparser, base)
    for _ in range(60):
        text = random_edit(text if rng.random() < 0.7 else good, rng)
        if full(text) is None:
            continue
        assert _check(reparser, text).findings == _check(None, text).findings
        good, checked = text, checked + 1
    assert checked >= 10 and reparser.reparsed >= checked * 0.6
