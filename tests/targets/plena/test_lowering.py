"""Lowering: the library default reproduces Candidate-0 exactly, every legal mapping lowers to a
program the simulator accepts and that verifies (randomised differential test), and each
knob changes the program the way it says."""

from __future__ import annotations

from dataclasses import fields

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from zomboss.targets.plena.counts import dynamic_counts
from zomboss.targets.plena.default import default_kernel
from zomboss.targets.plena.lowering import lower
from zomboss.targets.plena.mapping import (
    MAPPINGS,
    AttentionMapping,
    FfnMapping,
    LinearMapping,
    MappingError,
    RmsnormMapping,
    RopeMapping,
    SoftmaxMapping,
    library_default,
    validate,
)
from zomboss.targets.plena.suite import SUITE, workload
from zomboss.targets.plena.verify import verify


@pytest.mark.parametrize("wl", SUITE, ids=lambda w: w.id)
def test_library_default_lowers_to_candidate_0(wl) -> None:
    a, b = default_kernel(wl), lower(library_default(wl), wl)
    assert a.program.instrs == b.program.instrs
    assert a.layout == b.layout


def test_illegal_mappings_are_refused_before_lowering() -> None:
    with pytest.raises(MappingError, match="k_chunk=99"):
        lower(LinearMapping(k_chunk=99), workload("lin_60m_q"))


# ---- randomised differential test -----------------------------------------------------------------


def _mapping(op: str, draw) -> object:
    kw = {}
    for f in fields(MAPPINGS[op]):
        if "choices" in f.metadata:
            kw[f.name] = draw(st.sampled_from(f.metadata["choices"]))
        elif isinstance(f.default, bool):
            kw[f.name] = draw(st.booleans())
        else:
            kw[f.name] = draw(st.integers(1, 6))
    return MAPPINGS[op](**kw)


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
def test_random_legal_mappings_verify(cfg, op: str, data) -> None:
    wl = workload(data.draw(SHAPES[op], label="workload"))
    m = _mapping(op, data.draw)
    assume(validate(m, wl) == [])
    ver = verify(lower(m, wl), wl, cfg)  # raises IllegalProgram if the lowering broke a doc rule
    assert ver.verified, f"{m}: {ver.reason}"


# ---- each knob does what it says ---------------------------------------------------------------------


def _counts(m, spec: str):
    return dynamic_counts(lower(m, workload(spec)).program)


def test_deep_k_chunks_remove_the_bf16_partial_sums() -> None:
    base, deep = _counts(LinearMapping(), "lin_8b_k"), _counts(LinearMapping(k_chunk=64), "lin_8b_k")
    assert base["V_ADD_VV"] == 15360 and deep["V_ADD_VV"] == 0
    assert base["M_MM"] == deep["M_MM"] and deep["M_MM_WO"] == base["M_MM_WO"] // 16


def test_weight_residency_and_csr_hoisting() -> None:
    spec = "linear:M=192,K=128,N=128"
    reload, resident = _counts(LinearMapping(), spec), _counts(LinearMapping(m_block=3), spec)
    assert reload["H_PREFETCH_M"] == 3 * resident["H_PREFETCH_M"]
    assert _counts(LinearMapping(m_block=2), spec)["H_PREFETCH_M"] == 2 * resident["H_PREFETCH_M"]
    hoisted = _counts(LinearMapping(hoist_csr=True), spec)
    assert hoisted["C_SET_SCALE_REG"] == 2 and reload["C_SET_SCALE_REG"] == 1 + 6


def test_unrolled_projection_has_no_loops_left_in_the_tile() -> None:
    c = _counts(LinearMapping(unroll=True), "linear:M=8,K=128,N=64")
    assert c["C_LOOP_START"] == 1 + 128 // 64  # only load_batch's (column-block loop, row-group loop per block)
    assert c["M_MM"] == _counts(LinearMapping(), "linear:M=8,K=128,N=64")["M_MM"]


def test_ffn_fusion_and_rolled_loops() -> None:
    spec = "ffn:rows=8,hidden=128,inter=256"
    base, fused = _counts(FfnMapping(), spec), _counts(FfnMapping(fused_up_gate=True, hoist_csr=True), spec)
    assert base["M_MM"] == fused["M_MM"] and base["H_PREFETCH_M"] == fused["H_PREFETCH_M"]
    assert fused["C_SET_SCALE_REG"] < base["C_SET_SCALE_REG"]
    rolled = lower(FfnMapping(unroll_outer=False, unroll_act=False), workload(spec)).program
    assert len(rolled) < len(default_kernel(workload(spec)).program) / 5


def test_rmsnorm_vector_first_reduces_once_per_row() -> None:
    c = _counts(RmsnormMapping(reduce="vector_first"), "rms_16x2048")
    assert c["V_RED_SUM"] == 16 and c["V_ADD_VV"] == 16 * 31
    p = _counts(RmsnormMapping(row_mode="parallel"), "rms_16x2048")
    assert p["V_MUL_VF"] == 16 * 32 and p["S_ST_FP"] == 16


def test_softmax_valid_rows_only_and_in_place() -> None:
    base = _counts(SoftmaxMapping(), "sm_16x64")
    lean = _counts(SoftmaxMapping(valid_rows_only=True, in_place=True), "sm_16x64")
    assert base["V_EXP_V"] == 64 and lean["V_EXP_V"] == 16 and lean["V_ADD_VV"] == 0


def test_attention_mask_and_algorithm_choices() -> None:
    base = _counts(AttentionMapping(), "attn_128c")
    window = _counts(AttentionMapping(mask="sliding_window"), "attn_128c")
    assert base["S_ST_FP"] - window["S_ST_FP"] == 64 * 64 - 128
    one = _counts(AttentionMapping(algorithm="one_pass"), "attn_dec")
    assert one["S_EXP_FP"] == 0 and one["M_MM_WO"] < _counts(AttentionMapping(), "attn_dec")["M_MM_WO"]
    kv = _counts(AttentionMapping(loop_order="kv_outer"), "attn_256")
    assert kv["H_PREFETCH_M"] == 2 * 4 and _counts(AttentionMapping(), "attn_256")["H_PREFETCH_M"] == 2 * 16


def test_rope_on_chip_rotation_drops_an_input() -> None:
    wl = workload("rope_64x128")
    k = lower(RopeMapping(rotate="on_chip"), wl)
    assert [t.name for t in k.layout.inputs] == ["X", "COS", "SIN"]
    c = dynamic_counts(k.program)
    assert c["H_PREFETCH_V"] == 3 * 2 * 16 and c["V_MUL_VV"] == 2 * 64 * 2
