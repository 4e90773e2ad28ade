"""Every registered target satisfies the search-facing protocol of zomboss.target, checked on
its smallest suite instance: instances are reused, the three modes agree on cycles, the
breakdown adds up, the bound holds, and the KB and the lowering agree on legality."""

from __future__ import annotations

import json

import pytest

from zomboss.errors import ZombossError
from zomboss.mapping import IllegalMapping, iter_knob_edits, space
from zomboss.target import BREAKDOWN_KEYS, Mode, doc_path, get_target, sidecar_path, target_names
from zomboss.verify import default_result

TARGETS = target_names()


def _smallest(t):
    return min(t.suite(), key=lambda w: (t.bound(w, {}), w.id))


@pytest.fixture(scope="module", params=TARGETS)
def case(request):
    t = get_target(request.param)
    wl = _smallest(t)
    return t, wl, t.instance(wl, {}, 0)


def test_registered_with_its_doc(case):
    t, _, _ = case
    assert t.name in TARGETS and t.doc == doc_path(t.name) and t.doc.exists()
    assert t.kb({}).target == t.name


def test_suite_ids_and_specs_round_trip(case):
    t, _, _ = case
    ids = [w.id for w in t.suite()]
    assert len(ids) == len(set(ids))
    for w in t.suite():
        assert t.workload(w.id) == w
        assert t.workload(w.spec).shape == w.shape


def test_instances_are_built_once_and_reused(case):
    t, wl, inst = case
    assert t.instance(wl, {}, 0) is inst
    assert inst.workload == wl and inst.seed == 0
    assert t.instance(wl, {}, 1) is not inst


def test_reference_mappings_are_legal_and_round_trip(case):
    t, wl, _ = case
    refs = t.reference_mappings(wl, {})
    assert next(iter(refs)) == "library"
    kb = t.kb({})
    sp = space(kb, wl.op)
    for m in refs.values():
        assert sp.violations(kb, m, wl.shape) == []
        assert sp.from_json(json.loads(json.dumps(m.to_json())), wl.shape) == m


def test_modes_agree_and_breakdown_adds_up(case):
    t, wl, inst = case
    m = t.reference_mappings(wl, {})["library"]
    evs = {mode: t.evaluate(inst, m, mode) for mode in Mode}
    cycles = {e.cycles for e in evs.values()}
    assert len(cycles) == 1, f"modes disagree on cycles: {cycles}"
    assert evs[Mode.TIMING].verified is None and evs[Mode.CHECKED].verified is None
    assert evs[Mode.VERIFIED].verified is True
    for e in evs.values():
        assert set(e.breakdown) == set(BREAKDOWN_KEYS)
        assert all(v >= 0 for v in e.breakdown.values())
        assert sum(e.breakdown.values()) == e.cycles
        assert e.instructions > 0 and e.mapping == m and e.target == t.name
    assert t.bound(wl, {}) <= evs[Mode.TIMING].cycles
    assert t.bound(wl, {}, m) <= evs[Mode.TIMING].cycles


def test_kb_and_lowering_agree_on_single_knob_edits(case):
    """A mapping the KB rejects never lowers; one it accepts lowers and simulates."""
    t, wl, inst = case
    kb = t.kb({})
    sp = space(kb, wl.op)
    base = t.reference_mappings(wl, {})["library"]
    tried = rejected = 0
    for name, value in list(iter_knob_edits(sp, base, wl.shape))[:40]:
        m = sp.mapping({**base.as_dict(), name: value}, wl.shape)
        bad = {v.rule for v in sp.violations(kb, m, wl.shape)}
        tried += 1
        if bad:
            rejected += 1
            with pytest.raises(IllegalMapping) as err:
                t.lower(inst, m)
            assert {v.rule for v in err.value.violations} == bad
        else:
            ev = t.evaluate(inst, m, Mode.CHECKED)
            assert ev.cycles > 0
    assert tried > 0


def test_unknown_parameter_is_refused(case):
    t, _, _ = case
    with pytest.raises(ZombossError, match="no_such_param"):
        t.kb({"no_such_param": 1})


def test_export_of_a_reference_mapping(case, tmp_path):
    t, wl, _ = case
    m = list(t.reference_mappings(wl, {}).values())[-1]
    out = t.export(wl, tmp_path / "kernel.c", {}, m)
    assert out.exists() and out.stat().st_size > 0


def test_an_exported_kernel_reads_back_as_its_program_and_verifies(case, tmp_path):
    """`export` then `read_program` gives the lowered program, and `simulate` on the exported
    file verifies it with the cycles the search measured (a file a target writes, its own reader
    must take)."""
    t, wl, inst = case
    m = list(t.reference_mappings(wl, {}).values())[-1]
    out = t.export(wl, tmp_path / "kernel.c", {}, m)
    program = next(p for p in sorted(tmp_path.iterdir()) if sidecar_path(p).exists())
    assert program.parent == out.parent
    back, want = t.read_program(program, {}), t.lower(inst, m)
    assert [(i.op, tuple(i.args)) for i in back.instrs] == [(i.op, tuple(i.args)) for i in want.instrs]
    res = t.simulate_file(program, {})
    assert res.verified is True
    assert res.cycles == t.evaluate(inst, m, Mode.VERIFIED).cycles


def test_default_result_has_the_design_fields(case):
    t, wl, _ = case
    d = default_result(t, wl, {}).to_json()
    for key in (
        "target",
        "workload",
        "verified",
        "cycles",
        "default_cycles",
        "speedup",
        "mapping",
        "simulations",
        "wall_s",
    ):
        assert key in d
    assert d["verified"] is True and d["speedup"] == 1.0 and d["bound_cycles"] <= d["cycles"]
    assert set(d["breakdown"]) == set(BREAKDOWN_KEYS)
