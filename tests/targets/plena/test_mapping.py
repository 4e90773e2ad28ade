"""PLENA mappings through the core interface: plena.md §8 is the only declaration of the knobs;
round trips doc -> Mapping -> JSON -> Mapping and clingo skeleton (+ CP-SAT sizing) -> Mapping
-> lowering -> simulator; the skeleton counts `zomboss space` reports; conditional knobs."""

from __future__ import annotations

import json

import pytest
from zomboss.targets.plena import TARGET
from zomboss.targets.plena.mapping import library_default
from zomboss.targets.plena.suite import OPS, SUITE

from zomboss.mapping import IllegalMapping, MappingError, space
from zomboss.solvers.space import SizingModel, skeletons
from zomboss.target import Mode

KB = TARGET.kb({})


def sp(op: str):
    return space(KB, op)


def test_every_op_family_has_a_documented_space() -> None:
    for op in OPS:
        s = sp(op)
        assert s.knobs and all(k.doc for k in s.knobs)
        assert s.loc.file.endswith("plena.md")


@pytest.mark.parametrize("wl", SUITE, ids=lambda w: w.id)
def test_library_default_is_legal_canonical_and_round_trips(wl) -> None:
    s = sp(wl.op)
    m = library_default(KB, wl)
    assert m.op == wl.op and s.violations(KB, m, wl.shape) == []
    assert m == s.mapping({k.name: k.default for k in s.knobs}, wl.shape)  # every knob at the doc's `= V`
    assert s.from_json(m.to_json(), wl.shape) == m
    assert s.from_json(json.loads(json.dumps(m.to_json())), wl.shape) == m
    assert TARGET.reference_mappings(wl, {}) == {"library": m}


def test_library_default_is_the_compilers_choice() -> None:
    lin = library_default(KB, TARGET.workload("lin_60m_q")).to_json()
    assert lin == {
        "op": "linear",
        "knobs": {"k_chunk": 4, "n_block": 1, "m_block": 1, "order": "kchunk_outer", "add_rows": "mlen",
                  "unroll": "false", "tile_order": "oc_r_k", "hoist_csr": "false"},
    }  # fmt: skip
    ffn = library_default(KB, TARGET.workload("ffn_64x64x128"))
    assert (ffn.flag("unroll_outer"), ffn.flag("unroll_act"), ffn.flag("fused_up_gate")) == (True, True, False)
    att = library_default(KB, TARGET.workload("attn_128c"))
    assert (att.sym("algorithm"), att.sym("loop_order"), att.sym("mask")) == ("flash", "q_outer", "elementwise")
    assert library_default(KB, TARGET.workload("rms_4x384")).flag("unroll_scale")


def test_the_compilers_k_chunk_is_capped_by_the_machine() -> None:
    small = TARGET.kb({"mram_tiles": 2})
    wl = TARGET.workload("lin_60m_q")
    assert library_default(small, wl).int("k_chunk") == 2
    assert space(small, "linear").violations(small, library_default(small, wl), wl.shape) == []


@pytest.mark.parametrize(
    "knobs, named",
    [
        ({"k_chonk": 4}, "k_chonk"),
        ({"k_chunk": "4"}, "k_chunk"),
        ({"k_chunk": 65}, "outside 1..64"),
        ({"order": "row_outer"}, "order"),
        ({"unroll": 1}, "unroll"),
    ],
)
def test_from_json_names_the_bad_field(knobs, named: str) -> None:
    wl = TARGET.workload("lin_60m_q")
    data = library_default(KB, wl).to_json()
    data["knobs"].update(knobs)
    with pytest.raises(MappingError, match=named):
        sp("linear").from_json(data, wl.shape)
    with pytest.raises(MappingError, match="op"):
        sp("linear").from_json({"op": "rope", "knobs": {}}, wl.shape)


def _with(spec: str, **knobs):
    wl = TARGET.workload(spec)
    return wl, sp(wl.op).mapping({**library_default(KB, wl).as_dict(), **knobs}, wl.shape)


@pytest.mark.parametrize(
    "spec, knobs, rule",
    [
        ("lin_60m_q", {"n_block": 7}, "lin.n_block"),
        ("linear:M=128,K=64,N=64", {"m_block": 3}, "lin.m_block"),
        ("lin_8b_k", {"k_chunk": 64, "n_block": 2}, "lin.mram_fit"),
        ("rope_64x64", {"rotate": "on_chip"}, "rope.on_chip"),
        ("attn_1kc", {"loop_order": "kv_outer"}, "att.kv_outer_state"),
        ("rmsnorm:rows=1024,hidden=64", {"row_mode": "parallel"}, "rms.fpsram_fit"),
        ("ffn:rows=4,hidden=2880,inter=64", {"fused_up_gate": "true"}, "ffn.fused_fit"),
    ],
)
def test_the_lowering_refuses_what_the_doc_forbids(spec: str, knobs, rule: str) -> None:
    wl, m = _with(spec, **knobs)
    assert [v.rule for v in sp(wl.op).violations(KB, m, wl.shape)] == [rule]
    with pytest.raises(IllegalMapping, match=rule.replace(".", r"\.")) as e:
        TARGET.lower(TARGET.instance(wl, {}), m)
    assert "plena.md" in str(e.value)


def test_legality_depends_on_the_machine() -> None:
    wl, one_pass = _with("attn_dec", algorithm="one_pass")  # 32 V tiles
    assert sp("attention").violations(KB, one_pass, wl.shape) == []
    small = TARGET.kb({"mram_tiles": 16})
    assert [v.rule for v in space(small, "attention").violations(small, one_pass, wl.shape)] == ["att.one_pass_fit"]


def test_inactive_knobs_take_their_canonical_value() -> None:
    _, m = _with("attn_64", algorithm="one_pass", loop_order="kv_outer", mask="sliding_window")
    assert (m.sym("loop_order"), m.sym("mask")) == ("q_outer", "elementwise")  # flash-only; causal-only
    _, lin = _with("linear:M=64,K=64,N=64", k_chunk=9, order="col_outer", hoist_csr="true")
    assert (lin.int("k_chunk"), lin.sym("order"), lin.flag("hoist_csr")) == (4, "kchunk_outer", False)


# ---- the mapping space `zomboss space` describes ----------------------------------------------

# Distinct skeletons (active symbolic knobs, constraints applied), per family:
SKELETONS = {
    "lin_60m_q": 16,  # order 2 x unroll 2 x tile_order 2 x hoist 2 (64 rows: add_rows does not matter)
    "lin_8b_k": 24,  # K split over a partial row block: order 2 x add_rows 2 x (2 + 1: M=4 has one row group) x 2
    "rms_4x384": 6,  # serial (reduce 2 x unroll_scale 2) + parallel (reduce 2)
    "sm_64x64": 4,  # in_place 2 x row_loop 2 (a full row tile of one chunk)
    "sm_16x64": 6,  # (in_place=false: valid_rows_only 2, true: 1) x row_loop 2
    "ffn_64x64x128": 16,  # four free booleans
    "ffn_4x2880x2880": 8,  # fusion needs 2 x 45 resident W tiles > 64
    "attn_64": 6,  # flash (loop_order 2 x hoist 2) + one_pass (hoist 2); no mask knob without causality
    "attn_128c": 12,  # the same x mask 2
    "attn_1kc": 8,  # K/V-outer flash needs 2*1024 rows of state in FP SRAM: q_outer only
    "rope_64x64": 2,  # on-chip rotation needs head_dim % 128 == 0
    "rope_64x128": 4,
}


@pytest.mark.parametrize("wid, n", sorted(SKELETONS.items()))
def test_skeleton_counts(wid: str, n: int) -> None:
    wl = TARGET.workload(wid)
    assert len(list(skeletons(KB, wl.op, wl.shape))) == n


SMALL = [
    "linear:M=8,K=320,N=128",  # a K split (5 tiles > the compiler's 4) over a partial row block
    "rmsnorm:rows=8,hidden=128",
    "softmax:rows=68,cols=128",
    "ffn:rows=4,hidden=64,inter=64",
    "attention:sq=128,skv=128,causal=1",
    "rope:rows=4,head_dim=128",
]


@pytest.mark.parametrize("spec", SMALL)
def test_every_skeleton_is_a_different_program(spec: str) -> None:
    """Conditional knobs leave no two skeletons with the same kernel (integer knobs at the
    compiler's values)."""
    wl = TARGET.workload(spec)
    s, inst = sp(wl.op), TARGET.instance(wl, {})
    sizes = {k.name: k.default for k in s.integer}
    programs = {
        TARGET.lower(inst, s.from_skeleton(sk.as_dict(), sizes, wl.shape)).digest()
        for sk in skeletons(KB, wl.op, wl.shape)
    }
    assert len(programs) == len(list(skeletons(KB, wl.op, wl.shape))) > 1


@pytest.mark.parametrize("spec", ["linear:M=8,K=192,N=64", "attention:sq=8,skv=128", "rope:rows=4,head_dim=128"])
def test_clingo_and_cpsat_mappings_lower_and_run(spec: str) -> None:
    """skeleton (clingo) + sizing (CP-SAT) -> Mapping -> JSON -> Mapping -> lowering -> checked run."""
    wl = TARGET.workload(spec)
    s, inst = sp(wl.op), TARGET.instance(wl, {})
    for sk in skeletons(KB, wl.op, wl.shape):
        sizing = SizingModel(s, wl.shape, sk.as_dict()).solve()
        assert sizing is not None
        m = s.from_skeleton(sk.as_dict(), sizing.values, wl.shape)
        assert s.from_json(json.loads(json.dumps(m.to_json())), wl.shape) == m
        assert s.skeleton(m) == tuple((k.name, sk.as_dict()[k.name]) for k in s.symbolic)
        ev = TARGET.evaluate(inst, m, Mode.CHECKED)
        assert ev.cycles > 0 and ev.mapping == m
