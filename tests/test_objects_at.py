"""Where the optimizer a symbol names at an event was created
(:meth:`loopcheck.engine.unit.Unit.objects_at`) and the units of one checked module
(:meth:`loopcheck.engine.unit.Unit.peer_units`), which LC802 reads to tell a resume of a
checkpoint's optimizer from a fresh optimizer of a new stage."""

from __future__ import annotations

import textwrap

import libcst as cst

from loopcheck.analysis import build_units


def _units(source: str):
    return build_units(cst.parse_module(textwrap.dedent(source)))


def _events(unit, kind: str):
    return [ev for ev in unit.events if ev.kind == kind]


def test_rebound_name_is_another_creation_site():
    (unit,) = [u for u in _units("""
        import torch
        opt = torch.optim.Adam(model.parameters())
        opt.step()
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        opt.step()
    """) if u.events]
    builds = _events(unit, "opt_build")
    first, second = _events(unit, "step")
    assert unit.objects_at(first, "opt") == {("built", id(builds[0].node))}
    assert unit.objects_at(second, "opt") == {("built", id(builds[1].node))}


def test_arms_give_both_sites_and_a_parameter_is_given():
    (unit,) = [u for u in _units("""
        import torch
        def train(model, opt, adam):
            if adam:
                opt = torch.optim.Adam(model.parameters())
            opt.step()
    """) if u.events]
    build = _events(unit, "opt_build")[0]
    (step,) = _events(unit, "step")
    assert unit.objects_at(step, step.subject) == {("built", id(build.node)), ("given", id(unit), step.subject)}


def test_one_site_in_two_inlined_calls():
    units = [u for u in _units("""
        import torch
        def run(model):
            opt = torch.optim.Adam(model.parameters())
            opt.step()
        def main(model):
            run(model)
            run(model)
    """) if u.events]
    (unit,) = units
    first, second = _events(unit, "step")
    assert first.subject != second.subject
    assert unit.objects_at(first, first.subject) == unit.objects_at(second, second.subject)


def test_peer_units_are_the_modules_units():
    units = _units("""
        import torch
        def phase_a(model):
            opt = torch.optim.Adam(model.parameters())
            opt.step()
        def phase_b(model):
            opt = torch.optim.SGD(model.parameters(), lr=0.1)
            opt.step()
    """)
    for unit in units:
        assert unit.peer_units() == units
