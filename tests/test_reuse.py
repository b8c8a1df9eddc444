"""The IR of unchanged functions is taken from the last check of the same document
(:mod:`loopcheck.engine.reuse`), and the findings stay those of a fresh check."""

from __future__ import annotations

from pathlib import Path

from loopcheck.server.reparse import Reparser
from loopcheck.server.worker import analyze

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"

FILLER = "\n\ndef filler_{n}(values):\n    return [v * 2 for v in values]\n"

SCRIPT = (
    "import torch\nimport torch.nn as nn\n\n\n"
    "def train_step(model, optimizer, x, y):\n"
    "    loss = nn.functional.cross_entropy(model(x), y)\n"
    "    loss.backward()\n"
    "    optimizer.step()\n"
    "    optimizer.zero_grad()\n"
    "    return loss.item()\n"
    + "".join(FILLER.format(n=n) for n in range(4))
    + "\n\ndef train(model, loader):\n"
    "    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)\n"
    "    for epoch in range(3):\n"
    "        model.train()\n"
    "        for x, y in loader:\n"
    "            train_step(model, optimizer, x, y)\n"
    + "".join(FILLER.format(n=n) for n in range(4, 8))
)


def _check(reparser: Reparser | None, text: str, name: str = "edited.py"):
    return analyze("python", text, str(FIXTURES / name), None, False, (), reparser)


def _codes(analysis) -> list[tuple[str, int]]:
    return [(f.code, f.row) for f in analysis.findings]


def test_an_edit_builds_only_the_entry_points_it_touched():
    reparser = Reparser()
    _check(reparser, SCRIPT)
    memo = reparser.tables["units"]
    # entry points built: train_step, the 8 fillers, train (which inlines train_step)
    assert (memo.taken, memo.built) == (0, 10)
    typed = SCRIPT.replace("def filler_6(values):\n", "def filler_6(values):  # typed\n", 1)
    assert _check(reparser, typed).reparsed
    # the splice replaced filler_5, filler_6 and filler_7 (one statement on each side)
    assert (memo.taken, memo.built) == (7, 3)


def test_a_caller_whose_callee_changed_is_built_again():
    """``train`` keeps its node when only ``train_step`` is edited, but its IR inlines the
    old ``train_step``: it must be built again, or the new bug would be missed."""
    bug = SCRIPT.replace(
        "    loss.backward()\n    optimizer.step()\n    optimizer.zero_grad()\n",
        "    loss.backward()\n    optimizer.zero_grad()\n    optimizer.step()\n", 1)
    reparser = Reparser()
    versions = [SCRIPT, bug, SCRIPT, bug]
    got = [_check(reparser, v) for v in versions]
    assert [a.reparsed for a in got] == [False, True, True, True]
    assert [_codes(a) for a in got] == [[], [("LC103", 8)], [], [("LC103", 8)]]
    assert [a.findings for a in got] == [_check(None, v).findings for v in versions]
    memo = reparser.tables["units"]
    # train_step, filler_0 (the splice's neighbour) and train (its callee changed); not the other 7
    assert (memo.taken, memo.built) == (7, 3)


def test_a_new_global_name_builds_every_entry_point_again():
    """A name a function reads may now be the module's global: the shape of the module
    changed, so nothing is taken."""
    reparser = Reparser()
    _check(reparser, SCRIPT)
    more = SCRIPT + "\n\nvalues = [1, 2]\n"
    assert _check(reparser, more).reparsed
    memo = reparser.tables["units"]
    assert (memo.taken, memo.built) == (0, 10)


def test_a_function_that_calls_into_another_module_is_built_again(tmp_path):
    """Its IR holds the other module's code, which may have changed on disk since."""
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'p'\n", encoding="utf-8")
    evaluate = (
        "import torch\n\n\ndef evaluate(model, loader):\n    model.eval()\n    with torch.no_grad():\n"
        "        for x, y in loader:\n            model(x)\n    model.train()\n"
    )
    (tmp_path / "engine.py").write_text(evaluate, encoding="utf-8")
    main = (
        SCRIPT.replace("import torch.nn as nn\n", "import torch.nn as nn\nimport engine\n", 1)
        .replace("    for epoch in range(3):\n        model.train()\n", "    model.train()\n    for epoch in range(3):\n", 1)
        .replace("            train_step(model, optimizer, x, y)\n",
                 "            train_step(model, optimizer, x, y)\n        engine.evaluate(model, loader)\n", 1)
    )
    path = tmp_path / "train.py"
    path.write_text(main, encoding="utf-8")
    reparser = Reparser()

    def check(text):
        return analyze("python", text, str(path), None, False, (), reparser)

    assert _codes(check(main)) == []
    (tmp_path / "engine.py").write_text(evaluate.replace("    model.train()\n", ""), encoding="utf-8")
    typed = main.replace("def filler_6(values):\n", "def filler_6(values):  # typed\n", 1)
    got = check(typed)
    assert got.reparsed and [f.code for f in got.findings] == ["LC301"]
    assert got.findings == analyze("python", typed, str(path), None, False, ()).findings


def test_entry_points_built_again_leave_no_cycle_for_a_frozen_heap():
    """The language server's template freezes what each check leaves alive (``gc.freeze``);
    the IR of an entry point built again must then be freed by reference counting, not wait
    for a collection that never comes: its raw events' cycles are broken when it is dropped."""
    import gc

    from loopcheck.engine.events import Event
    from loopcheck.engine.ir import Assign, Call
    from loopcheck.server.documents import _settle

    edits = [SCRIPT.replace("return [v * 2 for v in values]", f"return [v * {n} for v in values]") for n in range(3, 9)]
    try:
        gc.unfreeze()  # what earlier checks in this process froze (the projects they kept)
        gc.collect()
        reparser = Reparser()
        _check(reparser, SCRIPT)
        _settle(reparser)
        for text in edits:  # each rebuilds every filler: the last version's records are dropped
            _check(reparser, text)
            _settle(reparser)
        gc.unfreeze()
        gc.set_debug(gc.DEBUG_SAVEALL)  # what a collection finds unreachable goes to gc.garbage
        gc.collect()
        leaked = [o for o in gc.garbage if type(o) in (Call, Assign, Event)]
    finally:
        gc.set_debug(0)
        gc.garbage.clear()
        gc.unfreeze()
    assert leaked == []


def test_a_changed_run_constant_builds_the_loop_again():
    """``num_epochs = 1`` → ``2`` changes no function, but the epoch loop in ``main()`` gets a
    back edge: the module's shape holds its run constants, so ``main()`` is built again."""
    once = (FIXTURES / "valid" / "single_epoch_constant.py").read_text()
    main = once.replace("model.train()\nfor epoch in range(num_epochs):", "def main():\n    model.train()\n"
                        "    for epoch in range(num_epochs):").replace("\n    train()\n    print(epoch, evaluate())",
                                                                      "\n        train()\n        print(epoch, evaluate())")
    # (main() is called from nowhere in the file: an entry point of its own)
    twice = main.replace("num_epochs = 1\n", "num_epochs = 2\n", 1)
    reparser = Reparser()
    versions = [main, twice, main]
    got = [_check(reparser, v) for v in versions]
    assert [a.reparsed for a in got] == [False, True, True]
    assert [_codes(a) for a in got] == [[], [("LC301", 27)], []]
    assert [a.findings for a in got] == [_check(None, v).findings for v in versions]
