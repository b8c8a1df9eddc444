"""The rules of issue 11 (LC106 LC107 LC303 LC503 LC504 LC505 LC701 LC702 LC801 LC802 LC901): their
library knowledge, the value analysis they share, their messages and notes, and their fixes on
fixtures with several findings."""

from __future__ import annotations

import textwrap
from pathlib import Path

import libcst as cst
import pytest

from loopcheck.analysis import build_units, check_source
from loopcheck.engine.knowledge import knowledge
from loopcheck.engine.values import batch_tensor_items, is_tensor, mode_dependent, output_kind, wrapped_module
from loopcheck.fixes import FIXABLE, apply_fixes, attach_fixes
from loopcheck.rules import INFOS

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures"
NEW = ("LC106", "LC107", "LC303", "LC503", "LC504", "LC505", "LC701", "LC702", "LC801", "LC802", "LC901")


def findings_of(code: str) -> list:
    out = []
    for path in sorted(FIXTURES.rglob(f"{code}_bad*.py")):
        out += [f for f in check_source(path.read_text(encoding="utf-8"), str(path)) if f.code == code]
    return out


@pytest.mark.parametrize("code", NEW)
def test_each_rule_has_three_bad_spellings_and_a_page(code):
    assert code in INFOS and (ROOT / "rules" / f"{code}.md").is_file()
    found = findings_of(code)
    assert len(found) >= 3, [f.filename for f in found]
    assert len({f.filename for f in found}) >= 2


@pytest.mark.parametrize("code", NEW)
def test_message_is_one_short_sentence_and_the_note_explains(code):
    for f in findings_of(code):
        assert len(f.message) < 120, f.message
        assert f.note and len(f.note) > 150 and "measured" in f.note, f.note


def units(source: str):
    return build_units(cst.parse_module(textwrap.dedent(source)))


def test_knowledge_of_losses_activations_and_checkpoints():
    kb = knowledge()
    [effect] = kb.method("torch.nn.CrossEntropyLoss", "__call__").effects
    assert (effect.event, effect.get("expects"), effect.get("input")) == ("loss_input", "logits", (0, "input"))
    assert kb.method("torch.nn.BCELoss", "__call__").effects[0].get("expects") == "probabilities"
    assert kb.callable("torch.nn.functional.nll_loss").effects[0].get("expects") == "log_probabilities"
    assert kb.callable("torch.nn.functional.softmax").returns.value == "probabilities"
    assert kb.method("torch.Tensor", "log_softmax").returns.value == "log_probabilities"
    assert kb.method("torch.nn.Linear", "__call__").returns.value == "logits"
    assert kb.cls("torch.nn.Softmax").modes == "none" and kb.cls("torch.nn.Linear").modes == "none"
    assert kb.cls("torch.nn.Conv2d").modes == "none" and kb.method("torch.nn.Conv2d", "__call__").returns.value == "logits"
    assert kb.cls("torch.nn.PixelShuffle").modes == "none" and kb.cls("torch.nn.BatchNorm2d").modes is None
    assert "self" in kb.method("torch.Tensor", "to").returns.same
    assert kb.callable("torch.randn").returns.value == "tensor"
    assert [e.event for e in kb.callable("torch.save").effects] == ["save"]
    assert [e.event for e in kb.method("torch.nn.Module", "state_dict").effects] == ["state_ref"]
    assert [e.event for e in kb.method("torch.optim.lr_scheduler.StepLR", "load_state_dict").effects] == ["load_state"]
    assert [e.event for e in kb.method("torch.utils.data.DistributedSampler", "set_epoch").effects] == ["set_epoch"]
    fsdp = kb.callable("torch.distributed.fsdp.FullyShardedDataParallel")
    assert [e.event for e in fsdp.effects] == ["params_replaced"] and fsdp.returns.same == ((0, "module"),)
    assert kb.callable("torch.nn.parallel.DistributedDataParallel").effects == ()


def test_output_kind_follows_sequential_forward_and_layers():
    [unit, *_] = units("""
        import torch
        import torch.nn as nn
        import torch.nn.functional as F

        class Soft(nn.Module):
            def __init__(self):
                super().__init__()
                self.fc = nn.Linear(4, 3)
            def forward(self, x):
                x = self.fc(x)
                return F.softmax(x, dim=1)

        class Two(nn.Module):
            def __init__(self):
                super().__init__()
                self.fc = nn.Linear(4, 3)
            def forward(self, x):
                if self.training:
                    return self.fc(x)
                return self.fc(x).softmax(1)

        seq = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 1)).to("cpu")
        probs = nn.Sequential(nn.Linear(4, 8), nn.Sigmoid())
        soft = Soft()
        two = Two()
        opt = torch.optim.SGD(list(seq.parameters()) + list(probs.parameters()) + list(soft.parameters())
                              + list(two.parameters()), lr=0.1)
        for x in loader:
            opt.zero_grad(); (seq(x) + probs(x) + soft(x) + two(x)).sum().backward(); opt.step()
    """)
    assert output_kind(unit, "seq") == "logits"
    assert output_kind(unit, "probs") == "probabilities"
    assert output_kind(unit, "soft") == "probabilities"
    assert output_kind(unit, "two") is None  # two returns: unknown


def test_mode_dependence_of_layers():
    [unit, *_] = units("""
        import timm
        import torch
        import torch.nn as nn

        class Plain(nn.Module):
            def __init__(self):
                super().__init__()
                self.net = nn.Sequential(nn.Linear(4, 8), nn.LayerNorm(8), nn.GELU(), nn.Linear(8, 2))
            def forward(self, x):
                return self.net(x)

        class Drop(nn.Module):
            def __init__(self):
                super().__init__()
                self.fc = nn.Linear(4, 2)
            def forward(self, x):
                return nn.functional.dropout(self.fc(x), 0.5, self.training)

        plain = Plain()
        drop = Drop()
        bn = nn.Sequential(nn.Linear(4, 8), nn.BatchNorm1d(8))
        lib = timm.create_model("resnet18")
        for m in (plain, drop, bn, lib):
            m.train()
    """)
    assert mode_dependent(unit, "plain") is False
    assert mode_dependent(unit, "drop") is True
    assert mode_dependent(unit, "bn") is True
    assert mode_dependent(unit, "lib") is True


def test_mode_dependence_of_a_copy_and_of_a_listed_container():
    # copy.deepcopy (the knowledge's returns.copy_of) holds the layers of the model it copies; a
    # container given a list its code builds by a display and appends holds the layers added;
    # a list handed to another call, or a parameter, may hold anything
    [unit, *_] = units("""
        import copy
        import torch
        import torch.nn as nn

        def grow(xs):
            xs.append(nn.Dropout())

        base = nn.Sequential(nn.Linear(4, 4), nn.ReLU())
        noisy = nn.Sequential(nn.Linear(4, 4), nn.Dropout(0.1))
        twin = copy.deepcopy(base).to("cpu")
        noisy_twin = copy.deepcopy(noisy)
        layers = []
        for i in range(3):
            layers.append(nn.Linear(4, 4))
            layers += [nn.ReLU()]
        listed = nn.Sequential(*layers)
        held = nn.ModuleList(layers)
        grown = [nn.Linear(4, 4)]
        grow(grown)
        handed = nn.Sequential(*grown)
        dropping = [nn.Linear(4, 4)]
        dropping.insert(0, nn.Dropout())
        inserted = nn.Sequential(*dropping)
        opt = torch.optim.SGD(list(twin.parameters()) + list(noisy_twin.parameters()) + list(listed.parameters())
                              + list(held.parameters()) + list(handed.parameters()) + list(inserted.parameters()),
                              lr=0.1)
        for m in (twin, noisy_twin, listed, held, handed, inserted):
            m.train()
    """)
    assert mode_dependent(unit, "twin") is False
    assert mode_dependent(unit, "noisy_twin") is True
    assert mode_dependent(unit, "listed") is False
    assert mode_dependent(unit, "held") is False
    assert mode_dependent(unit, "handed") is True
    assert mode_dependent(unit, "inserted") is True


def test_mode_dependence_of_a_model_a_helper_returns():
    # a function of the project that returns the variable it bound to a construction returns
    # that model, also through .to(device) (a call of it bound directly makes the variable an
    # alias of the returned one); one that returns another expression, or a variable holding
    # no construction, may return a model of any layers
    [unit, *_] = units("""
        import torch
        import torch.nn as nn
        from dgl.nn import GraphConv, HeteroEmbedding

        class Wrapper(nn.Module):
            def __init__(self, inner):
                super().__init__()
                self.inner = inner
                self.drop = nn.Dropout(0.5)

        def embeddings(sizes, dim):
            table = HeteroEmbedding(sizes, dim)
            return table

        def noisy(n):
            table = nn.Sequential(nn.Embedding(n, 4), nn.Dropout(0.2))
            return table

        def wrapped(n):
            table = nn.Embedding(n, 4)
            return Wrapper(table)

        def conv(n):
            layer = GraphConv(n, n)
            return layer

        def found(pool, n):
            layer = pool[n]
            return layer

        plain = embeddings({"a": 3}, 4).to("cpu")
        drop = noisy(3).to("cpu")
        wrap = wrapped(3).to("cpu")
        graph = conv(4).cuda()
        looked_up = found([nn.Dropout()], 0).to("cpu")
        opt = torch.optim.SGD([*plain.parameters(), *drop.parameters(), *wrap.parameters(),
                               *graph.parameters(), *looked_up.parameters()], lr=0.1)
        for m in (plain, drop, wrap, graph, looked_up):
            m.train()
    """)
    assert mode_dependent(unit, "plain") is False
    assert mode_dependent(unit, "drop") is True
    assert mode_dependent(unit, "wrap") is True
    assert mode_dependent(unit, "graph") is False
    assert mode_dependent(unit, "looked_up") is True


def test_mode_dependence_of_a_layer_class_held_as_a_value():
    # a parameter holding a layer class (its default, or the class or functools.partial the
    # construction gives) builds that class where it is called, with the partial's keywords;
    # a factory method is read with the values its call gives (use_dropout=False: no Dropout);
    # a parameter whose value is not known builds a layer the engine cannot see
    [unit, *_] = units("""
        import functools
        import torch
        import torch.nn as nn

        class Block(nn.Module):
            def __init__(self, dim, norm_layer, use_dropout):
                super().__init__()
                self.body = self.build(dim, norm_layer, use_dropout)
            def build(self, dim, norm_layer, use_dropout):
                layers = [nn.Conv2d(dim, dim, 3, padding=1), norm_layer(dim)]
                if use_dropout:
                    layers += [nn.Dropout(0.5)]
                return nn.Sequential(*layers)
            def forward(self, x):
                return x + self.body(x)

        class Net(nn.Module):
            def __init__(self, norm_layer=nn.InstanceNorm2d, use_dropout=False):
                super().__init__()
                self.stem = nn.Sequential(nn.ReflectionPad2d(1), nn.Conv2d(3, 4, 3), norm_layer(4), nn.Tanh())
                self.block = Block(4, norm_layer=norm_layer, use_dropout=use_dropout)
            def forward(self, x):
                return self.block(self.stem(x))

        def pick(kind):
            return nn.BatchNorm2d if kind == "batch" else nn.InstanceNorm2d

        default = Net()
        partial = Net(norm_layer=functools.partial(nn.InstanceNorm2d, affine=True))
        stats = Net(norm_layer=functools.partial(nn.InstanceNorm2d, affine=True, track_running_stats=True))
        batch = Net(nn.BatchNorm2d)
        group = Net(norm_layer=functools.partial(nn.GroupNorm, 2))
        dropping = Net(use_dropout=True)
        picked = Net(norm_layer=pick("batch"))
        models = (default, partial, stats, batch, group, dropping, picked)
        opt = torch.optim.SGD([p for m in models for p in m.parameters()], lr=0.1)
        for m in models:
            m.train()
    """)
    assert mode_dependent(unit, "default") is False
    assert mode_dependent(unit, "partial") is False
    assert mode_dependent(unit, "group") is False
    assert mode_dependent(unit, "stats") is True
    assert mode_dependent(unit, "batch") is True
    assert mode_dependent(unit, "dropping") is True
    assert mode_dependent(unit, "picked") is True  # a call returning a class: not read


def test_mode_dependence_of_a_construction_converted_in_init():
    # ``self.g = Gen().type(dtype)`` in __init__: Module.type/cuda/to return the module itself
    # (the knowledge's returns.same = "self"), so the model is Gen() with its own arguments; a
    # model whose construction the engine does not read (a factory of no known module) may depend
    # on the mode
    [unit] = [u for u in units("""
        import torch.nn as nn

        class Gen(nn.Module):
            def __init__(self, drop=0.0):
                super().__init__()
                layers = [nn.Conv2d(3, 8, 3), nn.InstanceNorm2d(8, affine=True)]
                if drop > 0:
                    layers += [nn.Dropout(drop)]
                self.body = nn.Sequential(*layers)
            def forward(self, x):
                return self.body(x)

        class Trainer:
            def __init__(self, dtype, device):
                self.typed = Gen().type(dtype)
                self.moved = Gen().cuda().to(device)
                self.dropping = Gen(drop=0.5).to(device)
                self.stats = nn.InstanceNorm2d(8, track_running_stats=True).type(dtype)
                self.computed = make_gen().to(device)
            def fit(self):
                self.typed.train(); self.moved.train(); self.dropping.train(); self.stats.train()
                self.computed.train()
    """) if u.entry is not None and u.entry.name.value == "fit"]
    assert mode_dependent(unit, "self@Trainer.typed") is False
    assert mode_dependent(unit, "self@Trainer.moved") is False
    assert mode_dependent(unit, "self@Trainer.dropping") is True
    assert mode_dependent(unit, "self@Trainer.stats") is True
    assert mode_dependent(unit, "self@Trainer.computed") is True


def test_mode_dependence_of_a_wrapper_is_that_of_the_module_it_wraps():
    # nn.DataParallel(m) runs m's forward (the knowledge's returns.same): m's layers decide; a
    # module built elsewhere, or passed through *args, is not read and may depend on the mode
    [unit] = [u for u in units("""
        import torch.nn as nn

        class Head(nn.Module):
            def __init__(self, dim=4):
                super().__init__()
                self.fc = nn.Linear(dim, 2)
            def forward(self, x):
                return self.fc(x)

        class Pair(nn.Module):
            def __init__(self):
                super().__init__()
                self.a = nn.DataParallel(Head())
                self.b = nn.DataParallel(nn.Sequential(nn.Linear(4, 4), nn.Dropout(0.1)))
            def forward(self, x):
                return self.a(x) + self.b(x)

        class One(nn.Module):
            def __init__(self):
                super().__init__()
                self.a = nn.DataParallel(Head())
            def forward(self, x):
                return self.a(x)

        class Given(nn.Module):
            def __init__(self, module):
                super().__init__()
                self.a = nn.DataParallel(module)
            def forward(self, x):
                return self.a(x)

        def main(given_module, modules):
            plain = nn.DataParallel(Head(dim=4)).to("cpu")
            seq = nn.DataParallel(nn.Sequential(nn.Linear(4, 4), nn.ReLU()), device_ids=[0]).to("cpu")
            drop = nn.DataParallel(nn.Sequential(nn.Linear(4, 4), nn.Dropout(0.1))).to("cpu")
            held = nn.DataParallel(given_module).to("cpu")
            starred = nn.DataParallel(*modules).to("cpu")
            pair = Pair()
            one = One()
            given = Given(given_module)
            plain.train(); seq.train(); drop.train(); held.train(); starred.train()
            pair.train(); one.train(); given.train()
    """) if u.entry is not None and u.entry.name.value == "main"]
    sym = {ev.subject.rpartition(":")[2]: ev.subject for ev in unit.of_kind("model_build")}
    assert mode_dependent(unit, sym["plain"]) is False
    assert mode_dependent(unit, sym["seq"]) is False
    assert mode_dependent(unit, sym["drop"]) is True
    assert mode_dependent(unit, sym["held"]) is True
    assert mode_dependent(unit, sym["starred"]) is True
    assert mode_dependent(unit, sym["pair"]) is True
    assert mode_dependent(unit, sym["one"]) is False
    assert mode_dependent(unit, sym["given"]) is True


def test_mode_dependence_of_an_attribute_built_in_init_reads_every_assignment():
    # an entry method (validate) does not build self.head: each class __init__ may assign it
    # is read, so an `if` choosing a head with Dropout makes it depend on the mode
    [unit] = [u for u in units("""
        import torch.nn as nn

        class Plain(nn.Module):
            def __init__(self):
                super().__init__()
                self.fc = nn.Linear(4, 2)

        class Drop(nn.Module):
            def __init__(self):
                super().__init__()
                self.fc = nn.Sequential(nn.Linear(4, 2), nn.Dropout(0.1))

        class Trainer:
            def __init__(self, kind):
                if kind == "drop":
                    self.head = nn.DataParallel(Drop())
                else:
                    self.head = nn.DataParallel(Plain())
                self.body = nn.DataParallel(Plain())

            def validate(self, x):
                self.head.train()
                self.body.train()
                return self.body(self.head(x))
    """) if u.entry is not None and u.entry.name.value == "validate"]
    assert mode_dependent(unit, "self@Trainer.head") is True
    assert mode_dependent(unit, "self@Trainer.body") is False


def test_wrapped_module_is_the_argument_the_knowledge_names():
    call = cst.parse_expression("nn.DataParallel(net, device_ids=[0])")
    assert wrapped_module("torch.nn.DataParallel", call) is call.args[0].value
    call = cst.parse_expression("DDP(module=net)")
    assert wrapped_module("torch.nn.parallel.DistributedDataParallel", call) is call.args[0].value
    assert wrapped_module("torch.nn.DataParallel", cst.parse_expression("nn.DataParallel(*mods)")) is True
    assert wrapped_module("torch.nn.Linear", cst.parse_expression("nn.Linear(4, 2)")) is None


def test_tensors_are_factories_conversions_and_batch_elements():
    # the batch of a DataLoader built with the default collate function holds tensors; one
    # given its own collate_fn, or a loader the code does not build, may yield anything
    [unit, *_] = units("""
        import torch
        from torch.utils.data import DataLoader
        train_loader = DataLoader(dataset, batch_size=8)
        other_loader = DataLoader(dataset, batch_size=8, collate_fn=collate_graphs)
        for g, t in other_loader:
            pass
        for a, b in given_loader:
            pass
        w = torch.randn(3)
        w = w.to("cuda")
        model = torch.nn.Linear(3, 1)
        model.train()
        for x, y in train_loader:
            x = x.float()
        for batch in train_loader:
            pass
        def f(p):
            return p
    """)
    assert is_tensor(unit, "w") and is_tensor(unit, "x") and is_tensor(unit, "y")
    assert not is_tensor(unit, "batch") and not is_tensor(unit, "model") and not is_tensor(unit, "p")
    assert not is_tensor(unit, "g") and not is_tensor(unit, "t") and not is_tensor(unit, "a")


def test_batch_items_a_collate_function_returns_tensors_at():
    # the positions of the batch tuple at which every construction's collate function returns
    # a tensor: None for torch's default collate (left out, None, or default_collate by name);
    # for a function of the module, those where each of its returns gives a tensor
    found = units("""
        import dgl
        import torch
        from torch.utils.data import DataLoader, default_collate

        def stack_pairs(samples):
            images = torch.stack([s[0] for s in samples])
            labels = torch.tensor([s[1] for s in samples])
            if len(samples) == 1:
                return images.float(), labels, [s[2] for s in samples]
            return images, labels, torch.tensor([s[2] for s in samples])

        def graphs(samples):
            return dgl.batch([s[0] for s in samples]), torch.tensor([s[1] for s in samples])

        def rebound(samples):
            x = torch.stack(samples)
            x += 1
            return x, torch.stack(samples)

        def generated(samples):
            yield torch.stack(samples), torch.stack(samples)

        def train(dataset, flag, make):
            a = DataLoader(dataset, batch_size=8)
            b = DataLoader(dataset, batch_size=8, collate_fn=None)
            c = DataLoader(dataset, batch_size=8, collate_fn=default_collate)
            d = DataLoader(dataset, batch_size=8, collate_fn=stack_pairs)
            e = DataLoader(dataset, batch_size=8, collate_fn=graphs)
            f = DataLoader(dataset, batch_size=8, collate_fn=rebound)
            g = DataLoader(dataset, batch_size=8, collate_fn=generated)
            h = DataLoader(dataset, batch_size=8, collate_fn=lambda s: default_collate(s))
            i = DataLoader(dataset, batch_size=8, **flag)
            if flag:
                j = DataLoader(dataset, batch_size=8)
            else:
                j = DataLoader(dataset, batch_size=8, collate_fn=graphs)
            for x, y in a:
                pass

        def evaluate(dataset, make):
            stack_pairs = make()  # (a local name: not the module's function)
            k = DataLoader(dataset, batch_size=8, collate_fn=stack_pairs)
    """)
    items = {sym.partition(":")[2]: batch_tensor_items(u, sym) for u in found for sym in u.roles.loader_builds}
    assert items == {
        "a": None, "b": None, "c": None, "d": frozenset({0, 1}), "e": frozenset({1}), "f": frozenset({1}),
        "g": frozenset(), "h": frozenset(), "i": frozenset(), "j": frozenset({1}), "k": frozenset(),
    }
    assert batch_tensor_items(found[0], "dataset") == frozenset()  # not a loader built here


def test_clip_and_unscale_per_micro_step_is_lc605_and_lc106():
    path = FIXTURES / "LC106_bad_unscale_and_clip.py"
    found = check_source(path.read_text(encoding="utf-8"), str(path))
    assert [(f.code, f.row) for f in found] == [("LC605", 16), ("LC106", 17)]
    lc106 = found[1]
    assert lc106.message == ("clip_grad_norm_() runs on every micro-step but scaler.step() at line 19 does not: "
                             "it clips partial sums")
    assert [(r.row, r.message) for r in lc106.related] == [
        (19, "the step, once per accumulation cycle"), (15, "backward() on every micro-step")]


def test_findings_spanning_modules_are_placed_in_the_checked_file():
    path = FIXTURES / "project_resume_helpers" / "train.py"
    [f] = check_source(path.read_text(encoding="utf-8"), str(path))
    assert f.code == "LC802" and f.row == 13
    assert f.message == ("via load_weights(): model is resumed without the optimizer/scheduler state saved at line 5 "
                         "of checkpointing.py")
    assert {(r.filename or "").rpartition("/")[2] for r in f.related} == {"checkpointing.py"}
    path = FIXTURES / "project_model_module" / "train.py"
    found = check_source(path.read_text(encoding="utf-8"), str(path))
    assert [(f.code, f.row) for f in found] == [("LC504", 6), ("LC701", 13)]
    assert found[0].message.startswith("via Net(): self.blocks holds modules in a plain list")


def fix(name: str, unsafe: bool = True):
    text = (FIXTURES / name).read_text(encoding="utf-8")
    return text, *apply_fixes(text, check_source(text, name), unsafe=unsafe)


def test_fixes_of_fixtures_with_several_findings():
    text, new, fixed = fix("LC505_bad_cuda.py")
    assert [f.code for f in fixed] == ["LC505", "LC505"]
    assert "inputs = inputs.cuda()  # expect: LC505" in new and "labels = labels.cuda()  # expect: LC505" in new
    text, new, fixed = fix("LC504_bad_append.py")
    assert "self.layers = nn.ModuleList()  # expect: LC504" in new
    assert "self.gains = nn.ParameterList([nn.Parameter(torch.ones(d)) for d in dims[1:]])" in new
    assert check_source(new, "LC504_bad_append.py") == []
    text, new, fixed = fix("LC504_bad_append.py", unsafe=False)
    assert (new, fixed) == (text, [])  # LC504's fix is unsafe
    text, new, fixed = fix("LC701_bad_inline.py")
    assert [f.fix.message for f in fixed] == ["Remove `softmax()`: pass `model(x)`"]
    assert "loss = F.cross_entropy(model(x), y)" in new  # the sigmoid of a call is left: no name to pass
    text, new, fixed = fix("LC702_bad_functional.py")
    assert "F.binary_cross_entropy_with_logits(D(real)" in new and "nll = nn.CrossEntropyLoss()" in new


def test_declined_fixes():
    for name in ("LC701_bad_softmax_layer.py", "LC702_bad.py"):
        text = (FIXTURES / name).read_text(encoding="utf-8")
        findings = attach_fixes(text, check_source(text, name))
        if name.startswith("LC701"):
            assert [f.fix for f in findings] == [None, None]  # the softmax is in the models
    src = textwrap.dedent("""
        import torch.nn as nn
        import torch
        model = nn.Sequential(nn.Linear(4, 8), nn.Linear(8, 1))
        criterion = nn.BCELoss()
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for x, y in loader:
            opt.zero_grad(); criterion(model(x), y).backward(); opt.step()
        print(criterion(torch.sigmoid(model(x)), y))
    """)
    [f] = attach_fixes(src, check_source(src, "t.py"))
    assert f.code == "LC702" and f.fix is None  # the criterion is called elsewhere with probabilities
    assert FIXABLE["LC504"] == "unsafe" and FIXABLE["LC505"] == FIXABLE["LC701"] == FIXABLE["LC702"] == "safe"


def test_lc504_note_names_the_container_to_use():
    """The note ends with the registering container for what the plain one holds."""
    root = Path(__file__).resolve().parent.parent / "fixtures"
    notes = {}
    for name in ("LC504_bad.py", "LC504_bad_dict_heads.py"):
        path = root / name
        found = [f for f in check_source(path.read_text(encoding="utf-8"), str(path)) if f.code == "LC504"]
        notes[name] = found[0].note.rsplit(". ", 1)[-1]
    assert notes == {"LC504_bad.py": "Use nn.ModuleList(...).", "LC504_bad_dict_heads.py": "Use nn.ModuleDict(...)."}


def test_lc702_nll_note_follows_whether_the_loss_can_train():
    """NLLLoss on raw logits: a loss computed with grad disabled or turned at once into a number
    is a reported value (-logit[target], not a negative log-likelihood); one that may be
    backpropagated keeps the training note."""
    head = """
        import torch
        import torch.nn as nn
        import torch.nn.functional as F
        model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 3))
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for x, y in loader:
            opt.zero_grad(); F.cross_entropy(model(x), y).backward(); opt.step()
    """
    cases = {
        "with torch.no_grad():\n    v = F.nll_loss(model(x), y)": True,
        "v = F.nll_loss(model(x), y).item()": True,
        "v = float(F.nll_loss(model(x), y))": True,
        "v = F.nll_loss(model(x), y).detach()": True,
        "loss = F.nll_loss(model(x), y)\nloss.backward(); opt.step()": False,
    }
    for body, metric in cases.items():
        src = textwrap.dedent(head) + textwrap.indent(body, "    ") + "\n"
        [f] = [f for f in check_source(src, "t.py", select=["LC702"]) if f.code == "LC702"]
        assert ("reports -logit[target]" in f.message) is metric, (body, f.message)
        assert ("never backpropagated" in f.note) is metric and ("without bound" in f.note) is not metric, f.note
