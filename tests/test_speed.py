"""The per-file speed work keeps the results: positions computed on demand, the pre-filter, the
indexes of a unit, and the analysis of shapes that used to take super-linear time (counted in
operations, not timed)."""

from __future__ import annotations

import random
import textwrap
from pathlib import Path

import libcst as cst
from click.testing import CliRunner
from libcst.metadata import MetadataWrapper, PositionProvider

import loopcheck.engine
from loopcheck.analysis import check_source
from loopcheck.cli.commands import main
from loopcheck.engine.positions import Positions, compute_positions
from loopcheck.engine.walk import walk

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures"


def _modules(n: int = 25):
    """The first ``n`` fixtures LibCST parses (an LC001 fixture may be one it refuses)."""
    given = 0
    for path in sorted(FIXTURES.glob("*.py")):
        if given == n:
            return
        try:
            module = cst.parse_module(path.read_text(encoding="utf-8"))
        except cst.ParserSyntaxError:
            continue
        given += 1
        yield path, module


def test_positions_are_libcsts_for_every_node():
    for path, module in _modules():
        expected = dict(MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider))
        assert compute_positions(module) == expected, path


def test_positions_of_some_nodes_stop_early_and_agree():
    rng = random.Random(7)
    for path, module in _modules():
        expected = MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)
        nodes = list(walk(module))
        first = rng.sample(nodes, 3)
        part = compute_positions(module, first)
        assert {n: part[n] for n in first} == {n: expected[n] for n in first}, path
        assert len(part) < len(expected)  # the generation stopped before the end of the module
        lazy = Positions(module, first)
        other = rng.choice(nodes)
        assert lazy[other] == expected[other]  # any other node: the whole module, once
        assert dict(lazy.items()) == dict(expected)


def test_positions_of_no_node_generate_nothing():
    module = cst.parse_module("x = 1\n")
    assert compute_positions(module, []) == {}


BAD_EVAL = (FIXTURES / "LC301_bad.py").read_text(encoding="utf-8")


def test_standard_input_without_a_name_names_no_other_module():
    result = CliRunner().invoke(main, ["--preview", "--output-format", "concise", "--isolated", "-"],
                                input=BAD_EVAL)  # LC301 is in preview
    assert result.exit_code == 1
    assert "-:51:5: LC301 model.eval() is still in effect when optimizer.step() at line 48 trains the model" in result.output
    assert " of None" not in result.output


def test_a_project_keeps_the_recently_used_modules_up_to_a_size(tmp_path: Path):
    from loopcheck.engine.project import Project

    for name in ("a", "b", "c"):
        (tmp_path / f"{name}.py").write_text(f"def {name}():\n    return {'1' * 100}\n")
    project = Project(tmp_path)
    a, b = project.load(tmp_path / "a.py"), project.load(tmp_path / "b.py")
    assert project.load(tmp_path / "a.py") is a  # kept: read once
    c = project.load(tmp_path / "c.py")  # order of use: b, a, c
    project.trim(max_bytes=2 * len(a.source))  # only outlined: each counts for 1/16 of its text
    assert project.load(tmp_path / "b.py") is b and project.load(tmp_path / "a.py") is a
    for name, info in (("b", b), ("a", a), ("c", c)):
        assert info.index.parsed_chars == 0
        info.index.functions[name]  # LibCST parses it (the whole text): now it counts in full
        assert info.index.parsed_chars == len(info.source)
    project.trim(max_bytes=2 * len(a.source))  # order of use: c, b, a
    assert project.load(tmp_path / "a.py") is a and project.load(tmp_path / "b.py") is b
    assert project.load(tmp_path / "c.py") is not c  # the least recently used was forgotten, read again
    checked = project.add(tmp_path / "c.py", "x = 1\n", keep=False)
    assert checked.index is not None and project.load(tmp_path / "c.py").source.startswith("def c")


def test_the_pre_filter_passes_training_loops_and_skips_a_diffusion_pipeline():
    """A ``.step(`` counts only with a sign of an optimizer: a pipeline stepping its noise
    scheduler is not analyzed (diffusers has hundreds); the optimizer names the roles take are."""
    from loopcheck.analysis import might_have_loop

    pipeline = "latents = self.scheduler.step(noise_pred, t, latents).prev_sample\n"
    assert not might_have_loop(pipeline)
    assert might_have_loop("loss.backward()\n")
    assert might_have_loop("model.eval()\n")
    for stepped in ("optimizer.step()", "opt_g.step()", "self.optim.step()", "d_optim.step()",
                    "optG.step()", "torch.optim.SGD(p).step()", "o.zero_grad(); o.step()"):
        assert might_have_loop(stepped + "\n"), stepped
    assert not might_have_loop("env.step(action)\n")


def test_the_optimizer_sign_finds_every_name_it_lists_behind_its_first_character_test():
    """The sign's search first tests the character a match can start with (4x faster on long
    texts without one): every alternative, the optimizer names of the knowledge included, still
    matches where it did."""
    import re

    from loopcheck.analysis import optimizer_sign

    sign = optimizer_sign()
    plain = re.compile(sign.pattern.split("])(?:", 1)[1][:-1])  # the alternatives, untested first
    names = plain.pattern.rpartition(r"|\b(?:")[2][: -len(r")\b")].split("|")
    assert "AdamW" in names and "Lion" in names
    texts = [f"x = {n}(params)\n" for n in names] + [
        "self.OPTIMIZER.step()", "Optimiser", "zero_grad", "opt.step()", "optim_g", "d_opt", "optG",
        "adopt(x)", "Optional[int]", "options.step()", "_optimal", "score_optim2", "no sign here",
    ]
    for text in texts:
        found, expected = sign.search(text), plain.search(text)
        assert (found and found.group()) == (expected and expected.group()), text
    assert sum(bool(sign.search(t)) for t in texts) == len(names) + 7


def test_a_file_without_loop_signs_is_analyzed_when_an_imported_module_shows_training(tmp_path: Path):
    """A module that trains (train(), backward(), an optimizer step) counts; one whose only
    sign is eval() (a loader handing back a model in eval mode) does not."""
    (tmp_path / "pyproject.toml").write_text("")
    (tmp_path / "main.py").write_text("from engine import fit\n")
    from loopcheck.analysis import might_have_loop
    from loopcheck.engine.project import project_for

    main_py = tmp_path / "main.py"
    project = project_for(str(main_py), ())
    for body, passes in [("model.train()", True), ("loss.backward()", True), ("optimizer.step()", True),
                         ("model.eval()", False), ("scheduler.step(noise, t, x)", False), ("pass", False)]:
        (tmp_path / "engine.py").write_text(f"def fit(model, loader):\n    {body}\n")
        project.trim()  # between checks: the texts read for the pre-filter are read again
        assert might_have_loop(main_py.read_text(), str(main_py), project) is passes, body


def _script_calling_train(sites: int) -> str:
    calls = "".join(f"    train(make_model(), loader)  # site {i}\n" for i in range(sites))
    return (
        "import torch\nimport torch.nn as nn\n\n\n"
        "def make_model():\n    return nn.Linear(4, 2)\n\n\n"
        "def train(model, loader):\n"
        "    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)\n"
        "    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, 10)\n"
        "    for epoch in range(3):\n"
        "        model.train()\n"
        "        for x, y in loader:\n"
        "            optimizer.zero_grad()\n"
        "            loss = nn.functional.cross_entropy(model(x), y)\n"
        "            loss.backward()\n"
        "            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)\n"
        "            optimizer.step()\n"
        "        scheduler.step()\n\n\n"
        "def main(loader):\n" + calls
    )


def _interpretations(monkeypatch, source: str) -> int:
    """How many compound IR nodes the dataflow interprets (memo misses) to check ``source``,
    which must have no finding."""
    import loopcheck.engine.dataflow as dataflow

    count = 0
    real = dataflow._Interpreter._exec

    def counting(self, node, states):
        nonlocal count
        count += 1
        return real(self, node, states)

    monkeypatch.setattr(dataflow._Interpreter, "_exec", counting)
    assert check_source(source, "train.py") == []
    monkeypatch.setattr(dataflow._Interpreter, "_exec", real)
    return count


def test_a_training_function_inlined_at_many_sites_costs_linear_work(monkeypatch):
    """yolov5's train.py calls train() from several places: every site's optimizer had its
    machines run over every other site's copy too (quadratic; 13 s for that file). Code outside
    a site's call cannot name that call's locals, so it is passed over (findings unchanged over
    the fixtures and the development corpus)."""
    two, eight, many = (_interpretations(monkeypatch, _script_calling_train(n)) for n in (2, 8, 32))
    assert eight <= 4.4 * two and many <= 4.4 * eight  # 4x the sites, 4x the work (170, 2360, 36320 before)


def _script_with_logging_flags(flags: int) -> str:
    logs = "".join(f"            if args.log_{i}:\n                logged = logged + 1\n" for i in range(flags)) * 2
    return (
        "import torch\nimport torch.nn as nn\n\n\n"
        "def train(model, loader, args, phase):\n"
        "    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)\n"
        "    logged = 0\n"
        "    for epoch in range(3):\n"
        "        if phase == 'train':\n"
        "            model.train()\n"
        "        else:\n"
        "            model.eval()\n"
        "        for x, y in loader:\n"
        "            optimizer.zero_grad()\n"
        "            nn.functional.cross_entropy(model(x), y).backward()\n"
        + logs
        + "            if logged > 100:\n                logged = 0\n" * 2
        + "            if phase == 'train':\n"
        "                optimizer.step()\n"
    )


def test_repeated_tests_whose_arms_hold_no_event_of_a_machine_cost_it_nothing(monkeypatch):
    """Each ``args.log_i`` test occurs twice, so the dataflow remembered it, and the flags
    multiplied every machine's states (2, 4, 8, 16 flags: 142, 243, 579, 909 interpretations)
    up to the bound where all conditions are forgotten, the ``phase`` test's too (a false
    LC301 from 4 flags on). Their arms hold no event of any machine: they are not remembered."""
    counts = [_interpretations(monkeypatch, _script_with_logging_flags(n)) for n in (2, 4, 8, 16)]
    assert counts == [counts[0]] * 4


def test_only_tests_that_may_repeat_are_turned_back_into_text(monkeypatch):
    """``repeated_tests`` compared every ``if`` test by its generated code (~1 % of a check of
    the corpus); a test whose kind and names no other test has cannot repeat, and is not
    generated. A test read twice (its function inlined at two sites) is generated once."""
    from loopcheck.analysis import build_units
    from loopcheck.engine import dataflow
    from loopcheck.parsing import parse_tree

    source = (
        "def step(model, opt, args):\n"
        "    if args.a:\n        model.train()\n"
        "    if x_sum(model) > 0:\n        opt.zero_grad()\n\n\n"
        "def train(model, loader, opt, args):\n"
        "    for x in loader:\n"
        "        step(model, opt, args)\n"
        "        if args.b:\n            opt.step()\n"
        "        step(model, opt, args)\n"
        "        if model.b:\n            model.eval()\n"
    )
    generated = []
    real = cst.Module.code_for_node
    monkeypatch.setattr(cst.Module, "code_for_node", lambda self, node: generated.append(real(self, node)) or generated[-1])
    (unit,) = [u for u in build_units(parse_tree(source)) if u.ir.items]
    found = dataflow.repeated_tests(unit.ir)
    assert sorted(found.values()) == sorted([(dataflow.test_text("args.a"), frozenset({"args", "a"}))] * 2 + [
        (dataflow.test_text("x_sum(model) > 0"), frozenset({"x_sum", "model"}))] * 2)
    assert sorted(generated) == ["args.a", "x_sum(model) > 0"]  # not args.b, not model.b


def test_a_walk_visits_syntax_nodes_without_punctuation():
    """Parentheses, brackets, commas, dots, colons, a keyword's ``=`` and a line's trailing
    whitespace are not visited (a quarter of the nodes of a training script); operators are."""
    module = cst.parse_module("x = f(a, b=1)[0:2].y + (c)\n")
    assert [type(n).__name__ for n in walk(module)] == [
        "Module", "SimpleStatementLine", "Assign", "AssignTarget", "Name", "BinaryOperation", "Attribute",
        "Subscript", "Call", "Name", "Arg", "Name", "Arg", "Integer", "Name", "SubscriptElement", "Slice",
        "Integer", "Integer", "Name", "Add", "Name"]


def _script_with_clipped_helpers(helpers: int) -> str:
    defs = "".join(
        f"def update_{i}(model, optimizer, x, y):\n"
        f"    nn.functional.mse_loss(model(x), y).backward()\n"
        f"    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)\n"
        f"    optimizer.step()\n"
        f"    optimizer.zero_grad()\n\n\n"
        for i in range(helpers)
    )
    calls = "".join(f"        update_{i}(model, optimizer, x, y)\n" for i in range(helpers))
    return (
        "import torch\nimport torch.nn as nn\n\n\n" + defs
        + "def train(model, loader):\n"
        "    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)\n"
        "    for x, y in loader:\n" + calls
    )


def test_clips_look_up_the_events_of_their_own_loop_once(monkeypatch):
    """LC106 looked at every step and every backward of the unit, and their loops, for each
    clip (a 20,000-line script of helper chains: 906 clips x 1,812 steps, 1.6 million looks);
    the events are grouped by innermost loop once per unit. Counted: the events whose context
    the rules read, for 8 and 32 helpers that each clip and step inside one loop."""
    from loopcheck.engine.events import Event

    reads = 0
    real = Event.ctx

    def counting(self):
        nonlocal reads
        reads += 1
        return real.fget(self)

    def count(helpers: int) -> int:
        nonlocal reads
        reads = 0
        monkeypatch.setattr(Event, "ctx", property(counting))
        assert check_source(_script_with_clipped_helpers(helpers), "train.py") == []
        monkeypatch.setattr(Event, "ctx", real)
        return reads

    eight, many = count(8), count(32)
    assert many <= 5 * eight  # 4x the helpers: 4x the reads (128 and 512; 240 and 2,496 before)


def test_events_in_a_loop_or_of_a_subject_are_those_of_kind_in_program_order():
    from loopcheck.analysis import build_units

    source = (FIXTURES / "LC106_bad.py").read_text(encoding="utf-8") + _script_with_clipped_helpers(3)
    checked = 0
    for unit in build_units(cst.parse_module(source)):
        for kinds in (("step",), ("backward",), ("clip", "step")):
            for ev in unit.of_kind(*kinds):
                if ev.ctx.loops:
                    loop = ev.ctx.loops[-1]
                    expected = [e for e in unit.of_kind(*kinds) if e.ctx.loops and e.ctx.loops[-1] is loop]
                    assert unit.in_loop(loop, *kinds) == expected
                    checked += 1
                if ev.subject is not None:  # (events without a subject are in no group)
                    mine = [e for e in unit.of_kind(*kinds) if e.subject == ev.subject]
                    assert unit.of_subject(ev.subject, *kinds) == mine
    assert checked > 10


def _algorithms(classes: int) -> str:
    """DomainBed's shape: many classes, each building its optimizer and stepping it in a method."""
    return "import torch\nimport torch.nn as nn\n\n\n" + "".join(
        f"class Algorithm{i}(nn.Module):\n"
        f"    def __init__(self):\n"
        f"        super().__init__()\n"
        f"        self.net = nn.Linear(4, 2)\n"
        f"        self.optimizer = torch.optim.Adam(self.net.parameters(), lr=1e-3)\n\n"
        f"    def update(self, x, y):\n"
        f"        loss = nn.functional.cross_entropy(self.net(x), y)\n"
        f"        self.optimizer.zero_grad()\n"
        f"        loss.backward()\n"
        f"        self.optimizer.step()\n"
        f"        return loss.item()\n\n\n"
        for i in range(classes)
    )


def test_the_setup_rules_run_a_machine_only_for_the_optimizers_that_step_in_the_unit(monkeypatch):
    """The roles are the file's, so LC501/LC502 (and LC503) ran a machine for every optimizer of
    the file in every unit: DomainBed's algorithms.py, 3,066 of the file's 3,183 machine runs
    (31 now) and two thirds of its time. Only a step reports, so an optimizer that does not
    step in the unit is passed over: the runs grow with the classes, not with their square."""
    import loopcheck.rules.setup as setup

    runs = 0
    real = setup.OptimizerModelMachine.__init__

    def counting(self, *args, **kwargs):
        nonlocal runs
        runs += 1
        real(self, *args, **kwargs)

    monkeypatch.setattr(setup.OptimizerModelMachine, "__init__", counting)
    counts = []
    for classes in (4, 16):
        runs = 0
        assert check_source(_algorithms(classes), "algorithms.py") == []
        counts.append(runs)
    assert counts == [4, 16]  # (32 and 512 before: two units per class)


def test_children_read_only_the_fields_that_can_hold_nodes_and_find_the_same_nodes():
    """``children`` skips the fields whose annotation is whitespace, a string or a sentinel
    (272 of the 624 fields of LibCST's node classes); every syntax node of the fixtures has
    the children a read of all its fields finds, in the same order."""
    from loopcheck.engine import walk as w

    def every_field(node):
        out = []
        for name in w._fields(type(node)):
            value = getattr(node, name)
            for v in value if type(value) in (tuple, list) else (value,):
                if w._kind(type(v)) == "node":
                    out.append(v)
        return out

    nodes = 0
    for path, module in _modules(60):
        stack = [module]
        while stack:
            node = stack.pop()
            expected = every_field(node)
            assert [id(c) for c in w.children(node)] == [id(c) for c in expected], (path, type(node).__name__)
            stack.extend(expected)
            nodes += 1
    assert nodes > 10_000
    assert "whitespace_after_func" not in w._node_fields(cst.Call) and "func" in w._node_fields(cst.Call)


def test_the_libcst_classes_the_engine_tests_by_type_have_no_subclasses():
    """The builder and ``dotted_name`` test ``type(node) is cst.X`` (``isinstance`` is slow on
    LibCST's classes): right only while no LibCST class derives from those."""
    import re

    used = set()
    for name in ("builder.py", "names.py"):
        text = (Path(loopcheck.engine.__file__).parent / name).read_text(encoding="utf-8")  # the installed one
        used |= set(re.findall(r"type\([^)]*\) is (?:not )?cst\.([A-Z]\w+)", text))
    assert {"Name", "Attribute", "Call", "FunctionDef"} <= used
    assert {n for n in used if getattr(cst, n).__subclasses__()} == set()


def test_the_parent_table_is_the_one_a_libcst_visitor_sees():
    import libcst as cst

    from loopcheck.engine.walk import parent_table

    class Parents(cst.CSTVisitor):
        def __init__(self) -> None:
            super().__init__()
            self.table, self.stack = {}, []

        def on_visit(self, node) -> bool:
            if self.stack:
                self.table[node] = self.stack[-1]
            self.stack.append(node)
            return True

        def on_leave(self, original_node) -> None:
            self.stack.pop()

    for path in sorted((ROOT / "fixtures").glob("LC*_bad*.py"))[::5]:
        try:
            module = cst.parse_module(path.read_text(encoding="utf-8"))
        except cst.ParserSyntaxError:
            continue  # an LC001 fixture LibCST refuses
        seen = Parents()
        module.visit(seen)
        table = parent_table(module)
        assert set(map(id, table)) == set(map(id, seen.table)), path.name
        assert all(table[node] is parent for node, parent in seen.table.items()), path.name


def test_a_frame_resolves_each_name_once_and_as_without_the_memo(monkeypatch):
    """``UnitBuilder.resolve`` keeps its answers in the frame (a frame's names, parents and
    module never change once made): the findings over every fixture are those of a builder
    that resolves every name again, for fewer resolutions."""
    from loopcheck.engine.builder import UnitBuilder

    fixtures = sorted((ROOT / "fixtures").rglob("*.py"))
    counted = {"asked": 0, "resolved": 0}
    real_resolve, real_inner = UnitBuilder.resolve, UnitBuilder._resolve

    def asked(self, frame, dotted):
        counted["asked"] += 1
        return real_resolve(self, frame, dotted)

    def resolved(self, frame, dotted):
        counted["resolved"] += 1
        return real_inner(self, frame, dotted)

    monkeypatch.setattr(UnitBuilder, "resolve", asked)
    monkeypatch.setattr(UnitBuilder, "_resolve", resolved)
    memo = [check_source(p.read_text(encoding="utf-8"), str(p)) for p in fixtures]
    assert counted["resolved"] < counted["asked"] / 2
    monkeypatch.setattr(UnitBuilder, "resolve", lambda self, frame, dotted: (
        (None, False) if dotted is None else real_inner(self, frame, dotted)))
    assert [check_source(p.read_text(encoding="utf-8"), str(p)) for p in fixtures] == memo


_MODEL_ZOO = """\
import torch
import torch.nn as nn


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.block = Block()
        self.head = nn.Linear(4, 2)


class Trainer:
    def __init__(self):
        self.model = Net()
        self.optimizer = torch.optim.SGD(self.model.parameters(), lr=0.1)


trainer = Trainer()
for step in range(3):
    trainer.optimizer.zero_grad()
    trainer.model.head(torch.zeros(4)).sum().backward()
    trainer.optimizer.step()
"""


def test_a_submodule_built_in_a_models_constructor_is_not_inlined_and_the_model_is():
    """A module built inside another module's ``__init__`` (``self.block = Block()``) stays a
    call; the outermost model (``Net()`` in the trainer) and the trainer are inlined."""
    from loopcheck.engine.builder import UnitBuilder, index_module

    index = index_module(cst.parse_module(_MODEL_ZOO))
    builder = UnitBuilder(index)
    builder.begin(0)
    builder.module_unit()
    builder.end()
    inlined = {index.method_class[f] for f in builder.called}
    assert inlined == {"Trainer", "Net"}


def test_a_submodules_constructor_is_its_own_entry_point_and_its_findings_are_kept():
    """Not inlined into its model, a submodule's ``__init__`` is checked on its own: a
    discarded ``tensor.to()`` in it is reported once, at its line."""
    source = _MODEL_ZOO.replace(
        "        self.fc = nn.Linear(4, 4)\n",
        "        self.fc = nn.Linear(4, 4)\n        w = torch.zeros(4)\n        w.to('cuda')\n"
        "        self.register_buffer('w', w)\n",
    )
    found = check_source(source, "zoo.py")
    assert [(f.code, f.row) for f in found] == [("LC505", 10)]


def test_a_check_that_finds_nothing_leaves_no_cycle_holding_the_tree(tmp_path: Path):
    """The syntax tree of a check that reports nothing is freed by reference counting as soon
    as the check returns: no reference cycle (a raw event and its typed events, a call's
    sources, a nested function that calls itself) holds a node of it for the garbage
    collector to walk later (:func:`loopcheck.engine.ir.release`)."""
    import gc

    from loopcheck.analysis import check_parsed

    # LC401 follows a stored loss back to outputs made under no_grad (rules.memory._graphless)
    stored_without_graph = textwrap.dedent("""\
        import torch

        def train(model, loader, eval_loader, optimizer):
            for epoch in range(2):
                model.train()
                for batch in loader:
                    loss = model(**batch).loss
                    loss.backward()
                    optimizer.step()
                    optimizer.zero_grad()
                model.eval()
                losses = []
                for batch in eval_loader:
                    with torch.no_grad():
                        outputs = model(**batch)
                    loss = outputs.loss
                    losses.append(loss)
        """)
    # a project: a training file, and an evaluation script read statement by statement
    (tmp_path / "pyproject.toml").write_text("")
    (tmp_path / "train.py").write_text(stored_without_graph, encoding="utf-8")
    (tmp_path / "evaluate.py").write_text(textwrap.dedent("""\
        import torch

        def evaluate(model, loader):
            model.eval()
            with torch.no_grad():
                return [model(x) for x in loader]
        """), encoding="utf-8")
    goods = sorted(FIXTURES.glob("LC*_good*.py"))
    assert len(goods) >= 29
    checks = [*((p, "-") for p in goods), *((tmp_path / name, str(tmp_path / name)) for name in ("train.py", "evaluate.py"))]
    for path, filename in checks:
        text = path.read_text(encoding="utf-8")
        gc.collect()
        gc.disable()
        try:
            found, module, _positions = check_parsed(text, filename)
            assert (found, module) == ([], None), path
            gc.set_debug(gc.DEBUG_SAVEALL)
            gc.collect()
            held = [type(o).__name__ for o in gc.garbage if isinstance(o, cst.CSTNode)]
        finally:
            gc.set_debug(0)
            gc.garbage.clear()
            gc.enable()
        assert held == [], path


def test_a_check_with_findings_keeps_nothing_of_its_tree_once_its_results_are_dropped():
    """Nothing process-wide (a memo keyed by events or nodes) keeps the syntax tree of a check
    alive after its findings and module are let go: a language server checks on every edit,
    and a tree kept per check would grow without bound. The fixture's LC301 is reported at
    the call whose literal chose eval (:func:`loopcheck.engine.events.mode_call`)."""
    import gc

    from loopcheck.analysis import check_parsed

    def nodes() -> int:
        gc.collect()
        return sum(isinstance(o, cst.CSTNode) for o in gc.get_objects())

    path = FIXTURES / "LC301_bad_mode_passed_to_helper.py"
    before = nodes()
    for _ in range(3):
        found, module, _positions = check_parsed(path.read_text(encoding="utf-8"), "-")
        codes = [f.code for f in found]
        del found, module, _positions
        assert codes == ["LC301", "LC301"]
    assert nodes() == before


def test_a_project_let_go_for_another_is_freed_without_a_collection(tmp_path: Path):
    """When a process turns to another project (:func:`loopcheck.cli.runner.check_job`), the
    project it lets go, with the modules it read, is freed by reference counting: the
    collections between checks no longer walk the whole process to find it
    (:meth:`loopcheck.engine.project.Project.close`)."""
    import gc
    import weakref

    from loopcheck.analysis import check_parsed
    from loopcheck.engine.project import forget_projects, project_for

    first, second = tmp_path / "first", tmp_path / "second"
    for root in (first, second):
        root.mkdir()
        (root / "pyproject.toml").write_text("")
    (first / "engine.py").write_text(textwrap.dedent("""\
        def train_one_epoch(model, loader, optimizer):
            model.train()
            for x, y in loader:
                loss = model(x, y)
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
        """), encoding="utf-8")
    train = textwrap.dedent("""\
        import torch
        from engine import train_one_epoch

        def main(model, loader):
            optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
            for epoch in range(3):
                train_one_epoch(model, loader, optimizer)
        """)
    (first / "train.py").write_text(train, encoding="utf-8")
    forget_projects()
    project = project_for(first / "train.py")
    assert check_parsed(train, str(first / "train.py"), project=project)[0] == []
    engine = project.module_of(first / "engine.py")
    assert engine is not None and engine.index is not None  # the check read the imported module
    gone = [weakref.ref(project), weakref.ref(engine), weakref.ref(engine.index)]
    del project, engine
    gc.collect()
    gc.disable()
    try:
        forget_projects(keep=project_for(second / "train.py"))
        assert [ref() is None for ref in gone] == [True, True, True]
    finally:
        gc.enable()
        forget_projects()
