"""A file that shows no training of its own is read statement by statement, as imported
modules are: its own code and the functions that reach what it shows are parsed with LibCST,
the rest is not; a file with a finding is then parsed whole and checked again
(:func:`loopcheck.analysis._silent_in_parts`, :meth:`LazyModuleIndex.module_code
<loopcheck.engine.outline.LazyModuleIndex.module_code>`, :func:`loopcheck.engine.reach.candidates`)."""

from __future__ import annotations

import textwrap
from pathlib import Path

import libcst as cst
import pytest

import loopcheck.analysis as analysis
import loopcheck.engine.outline as outline_module
from loopcheck.analysis import check_source
from loopcheck.engine.builder import index_module
from loopcheck.engine.outline import LazyModuleIndex, outline
from loopcheck.engine.reach import candidates, reaching

EVALUATION = textwrap.dedent(
    """\
    import torch

    THRESHOLD = 0.5


    def load(path):
        model = torch.load(path)
        model.eval()
        return model


    @torch.no_grad()
    def evaluate(path, loader):
        model = load(path)
        for x in loader:
            print(model(x) > THRESHOLD)


    def unrelated(values):
        # not an eval: a word in a comment makes a candidate, not a reach
        return sorted(values)


    def plot(values):
        print(values)


    class Scorer:
        \"\"\"Scores a network's outputs.\"\"\"

        limit = 3

        def __init__(self, net, limit=None):
            self.net = net.eval()
            self.limit = limit or Scorer.limit

        def describe(self):
            return f"scores below {self.limit}"


    def make(net):
        return Scorer(net, limit=2)


    if __name__ == "__main__":
        evaluate("model.pt", [])
    """
)


def _lazy(source: str) -> LazyModuleIndex:
    return LazyModuleIndex(source, outline(source, ""), "evaluation", None, None)


@pytest.fixture
def parsed(monkeypatch) -> list[str]:
    """The texts LibCST parses, whole files and statements alike."""
    texts: list[str] = []
    real = outline_module.parse_tree

    def recording(text: str):
        texts.append(text)
        return real(text)

    monkeypatch.setattr(outline_module, "parse_tree", recording)
    real_module = analysis.parse_module

    def whole(text: str):
        texts.append(text)
        return real_module(text)

    monkeypatch.setattr(analysis, "parse_module", whole)
    return texts


def _names(funcs) -> set[str]:
    return {f.name.value for f in funcs}


@pytest.mark.parametrize("targets", [{"eval"}, {"print"}, {"sorted"}, {"Scorer"}, {"nothing"}])
def test_a_lazy_index_reaches_what_the_parsed_one_does(targets):
    parsed_index = index_module(cst.parse_module(EVALUATION))
    assert _names(reaching(_lazy(EVALUATION), targets)) == _names(reaching(parsed_index, targets))


def test_reaching_on_a_lazy_index_parses_only_the_candidates(parsed):
    lazy = _lazy(EVALUATION)
    assert _names(reaching(lazy, {"eval"})) == {"load", "evaluate", "__init__", "make"}
    assert set(candidates(lazy, {"eval"})) == {
        (None, "load"), (None, "evaluate"), (None, "unrelated"), ("Scorer", "__init__"), (None, "make"),
    }
    assert not [text for text in parsed if "def plot" in text or "def describe" in text]
    assert [text for text in parsed if "def unrelated" in text]  # (its comment says eval)


def test_a_class_whose_header_names_the_target_makes_its_methods_candidates():
    source = "from engine import Base\n\nclass T(Base):\n    def hook(self):\n        pass\n\ndef other():\n    pass\n"
    lazy = _lazy(source)
    assert candidates(lazy, {"Base"}) == {("T", "hook"): "based"}
    assert _names(reaching(lazy, {"Base"})) == {"hook"}
    docstring = "class T:\n    '''Not a Base.'''\n\n    def hook(self):\n        pass\n"
    assert candidates(_lazy(docstring), {"Base"}) == {("T", "hook"): "based"}
    assert reaching(_lazy(docstring), {"Base"}) == set()


@pytest.mark.parametrize("newline", ["\n", "\r\n"])
def test_the_module_code_read_alone_is_the_module_code_on_the_file_lines(newline: str):
    source = EVALUATION.replace("\n", newline)
    lazy = _lazy(source)
    full = index_module(cst.parse_module(source))
    code = lazy.module_code()
    assert [cst.Module([s]).code.strip() for s in code] == [cst.Module([s]).code.strip() for s in full.module_code()]
    assert len(code) == 3  # the import, THRESHOLD and the ``if __name__`` block
    tree, offset = lazy.fragments[0]
    assert offset == 0
    lines = cst.metadata.MetadataWrapper(tree, unsafe_skip_copy=True).resolve(cst.metadata.PositionProvider)
    assert [lines[s].start.line for s in tree.body] == [1, 3, 45]


def test_an_evaluation_file_without_findings_parses_only_what_it_needs(parsed):
    assert check_source(EVALUATION, "evaluate.py") == []
    assert parsed  # (read in parts)
    assert not [text for text in parsed if "def plot" in text or "def describe" in text]
    assert EVALUATION not in parsed  # (never whole)


def test_an_evaluation_file_with_a_finding_is_parsed_whole_and_checked_again(parsed):
    source = EVALUATION.replace("@torch.no_grad()\n", "")
    found = check_source(source, "evaluate.py")
    assert [(f.code, f.row, f.column) for f in found] == [("LC302", 15, 15)]  # (the line of the decorator is gone)
    assert source in parsed  # the whole file, for the finding's position and fixes


def test_a_part_it_needs_that_libcst_cannot_parse_is_reported_as_the_whole_file_is():
    needed = EVALUATION.replace("    model.eval()\n", "    (model): object = None\n    model.eval()\n")
    assert [(f.code, f.row) for f in check_source(needed, "evaluate.py")] == [("LC001", 8)]
    unneeded = EVALUATION.replace("    print(values)\n", "    (values): object = None\n")
    assert check_source(unneeded, "evaluate.py") == []  # (what it gives up: plot() is not read)


def test_a_file_cpython_cannot_parse_is_reported_as_before(tmp_path: Path):
    source = "import torch\nmodel.eval()\ndef f(:\n"
    found = check_source(source, str(tmp_path / "evaluate.py"))
    assert [(f.code, f.row) for f in found] == [("LC001", 3)]


def test_the_text_of_a_lazy_index_is_its_source_without_a_parse(parsed):
    """The code dating of the checked module (:func:`loopcheck.engine.values.written_for_before`)
    reads its text from the index's source: asking a lazy index for its tree would parse the
    whole module with LibCST."""
    from loopcheck.engine.values import _module_text

    lazy = _lazy(EVALUATION)
    assert _module_text(lazy) == EVALUATION
    assert parsed == [] and lazy.parsed_chars == 0
    assert _module_text(index_module(cst.parse_module(EVALUATION))) == EVALUATION  # (a parsed index: its tree's code)
