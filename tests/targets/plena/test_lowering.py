"""Lowering: every legal mapping lowers to a program the simulator accepts and that verifies
(randomised differential test over the doc's knob domains), and each knob changes the program
the way its doc string says. (The library default's programs and cycles are pinned, for every
suite instance, by the golden table of tests/test_defaults.py.)"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from zomboss.targets.plena import TARGET

from tests.targets.plena.conftest import dynamic_counts
from zomboss.mapping import IllegalMapping, KnobMapping, MappingError, space
from zomboss.target import Mode

KB = TARGET.kb({})


def mapping(spec: str, **knobs: object) -> KnobMapping:
    """The library default of `spec` with some knobs changed (booleans as Python bools)."""
    wl = TARGET.workload(spec)
    vals = {k: ("true" if v else "false") if isinstance(v, bool) else v for k, v in knobs.items()}
    return space(KB, wl.op).mapping({**TARGET.reference_mappings(wl, {})["library"].as_dict(), **vals}, wl.shape)


def counts(spec: str, **knobs: object):
    wl = TARGET.workload(spec)
    return dynamic_counts(TARGET.lower(TARGET.instance(wl, {}), mapping(spec, **knobs)))


def test_illegal_mappings_are_refused_before_lowering() -> None:
    wl = TARGET.workload("lin_8b_k")
    with pytest.raises(IllegalMapping, match="lin.mram_fit"):
        TARGET.lower(TARGET.instance(wl, {}), mapping("lin_8b_k", k_chunk=64, n_block=2))
    with pytest.raises(MappingError, match="k_chunk"):
        mapping("lin_8b_k", k_chunk=99)


# ---- randomised differential test -----------------------------------------------------------------

SHAPES = {
    "linear": st.builds(
        lambda m, k, n: f"linear:M={m},K={k},N={n}",
        st.sampled_from([4, 8, 12, 68]),
        st.sampled_from([64, 128, 320]),
        st.sampled_from([64, 128]),
    ),
    "rmsnorm": st.builds(
        lambda r, h: f"rmsnorm:rows={r},hidden={h}", st.sampled_from([4, 8, 12]), st.sampled_from([64, 192])
    ),
    "softmax": st.builds(
        lambda r, c: f"softmax:rows={r},cols={c}", st.sampled_from([4, 8, 64, 68]), st.sampled_from([64, 192])
    ),
    "ffn": st.builds(
        lambda r, h, i: f"ffn:rows={r},hidden={h},inter={i}",
        st.sampled_from([4, 8]),
        st.sampled_from([64, 128]),
        st.sampled_from([64, 128]),
    ),
    "attention": st.sampled_from(
        [
            "attention:sq=64,skv=128",
            "attention:sq=8,skv=128",
            "attention:sq=128,skv=128,causal=1",
            "attention:sq=72,skv=128",
            "attention:sq=8,skv=64,d=128",
        ]
    ),
    "rope": st.builds(
        lambda r, h: f"rope:rows={r},head_dim={h}", st.sampled_from([4, 8]), st.sampled_from([64, 128, 256])
    ),
}


@pytest.mark.parametrize("op", sorted(SHAPES))
@settings(max_examples=10, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.filter_too_much])
@given(data=st.data())
def test_random_legal_mappings_verify(op: str, data) -> None:
    """Any point of the doc's space (integer knobs drawn small) lowers to a legal program that
    verifies; the draw covers every knob, active or not (inactive ones are canonicalised)."""
    wl = TARGET.workload(data.draw(SHAPES[op], label="workload"))
    sp = space(KB, op)
    vals = {
        k.name: data.draw(st.sampled_from(k.values)) if k.values else data.draw(st.integers(1, 6)) for k in sp.knobs
    }
    m = sp.mapping(vals, wl.shape)
    assume(sp.violations(KB, m, wl.shape) == [])
    ev = TARGET.evaluate(TARGET.instance(wl, {}), m, Mode.VERIFIED)  # IllegalProgram if the lowering broke a rule
    assert ev.verified, f"{m.key()}: {ev.report.get('verify_reason')}"


# ---- each knob does what it says ---------------------------------------------------------------------


def test_deep_k_chunks_remove_the_bf16_partial_sums() -> None:
    base, deep = counts("lin_8b_k"), counts("lin_8b_k", k_chunk=64)
    assert base["V_ADD_VV"] == 15360 and deep["V_ADD_VV"] == 0
    assert base["M_MM"] == deep["M_MM"] and deep["M_MM_WO"] == base["M_MM_WO"] // 16


def test_weight_residency_and_csr_hoisting() -> None:
    spec = "linear:M=192,K=128,N=128"
    reload, resident = counts(spec), counts(spec, m_block=3)
    assert reload["H_PREFETCH_M"] == 3 * resident["H_PREFETCH_M"]
    assert counts(spec, m_block=2)["H_PREFETCH_M"] == 2 * resident["H_PREFETCH_M"]
    hoisted = counts(spec, hoist_csr=True)
    assert hoisted["C_SET_SCALE_REG"] == 2 and reload["C_SET_SCALE_REG"] == 1 + 6


def test_unrolled_projection_has_no_loops_left_in_the_tile() -> None:
    c = counts("linear:M=8,K=128,N=64", unroll=True)
    assert c["C_LOOP_START"] == 1 + 128 // 64  # only load_batch's (column-block loop, row-group loop per block)
    assert c["M_MM"] == counts("linear:M=8,K=128,N=64")["M_MM"]


def test_ffn_fusion_and_rolled_loops() -> None:
    spec = "ffn:rows=8,hidden=128,inter=256"
    base, fused = counts(spec), counts(spec, fused_up_gate=True, hoist_csr=True)
    assert base["M_MM"] == fused["M_MM"] and base["H_PREFETCH_M"] == fused["H_PREFETCH_M"]
    assert fused["C_SET_SCALE_REG"] < base["C_SET_SCALE_REG"]
    wl = TARGET.workload(spec)
    inst = TARGET.instance(wl, {})
    rolled = TARGET.lower(inst, mapping(spec, unroll_outer=False, unroll_act=False))
    assert len(rolled) < len(TARGET.lower(inst, mapping(spec))) / 5


def test_rmsnorm_vector_first_reduces_once_per_row() -> None:
    c = counts("rms_16x2048", reduce="vector_first")
    assert c["V_RED_SUM"] == 16 and c["V_ADD_VV"] == 16 * 31
    p = counts("rms_16x2048", row_mode="parallel")
    assert p["V_MUL_VF"] == 16 * 32 and p["S_ST_FP"] == 16


def test_softmax_valid_rows_only_and_in_place() -> None:
    base = counts("sm_16x64")
    lean = counts("sm_16x64", valid_rows_only=True)
    in_place = counts("sm_16x64", in_place=True)
    assert base["V_EXP_V"] == 64 and lean["V_EXP_V"] == 16 and in_place["V_EXP_V"] == 16
    assert in_place["V_ADD_VV"] == 0 and lean["V_ADD_VV"] == base["V_ADD_VV"] == 16


def test_attention_mask_and_algorithm_choices() -> None:
    base = counts("attn_128c")
    window = counts("attn_128c", mask="sliding_window")
    assert base["S_ST_FP"] - window["S_ST_FP"] == 64 * 64 - 128
    one = counts("attn_dec", algorithm="one_pass")
    assert one["S_EXP_FP"] == 0 and one["M_MM_WO"] < counts("attn_dec")["M_MM_WO"]
    kv = counts("attn_256", loop_order="kv_outer")
    assert kv["H_PREFETCH_M"] == 2 * 4 and counts("attn_256")["H_PREFETCH_M"] == 2 * 16


def test_rope_on_chip_rotation_drops_an_input() -> None:
    wl = TARGET.workload("rope_64x128")
    k = TARGET.kernel(TARGET.instance(wl, {}), mapping("rope_64x128", rotate="on_chip"))
    assert [t.name for t in k.layout.inputs] == ["X", "COS", "SIN"]
    c = dynamic_counts(k.program)
    assert c["H_PREFETCH_V"] == 3 * 2 * 16 and c["V_MUL_VV"] == 2 * 64 * 2
