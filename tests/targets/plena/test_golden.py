"""Golden references (PLENA's precision path), input data, and the verification gates."""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pytest
from zomboss.targets.plena import TARGET
from zomboss.targets.plena.golden import golden, make_inputs, quantize_inputs, reference, rope_tables, rotate_half
from zomboss.targets.plena.layout import Kernel
from zomboss.targets.plena.numerics import bf16_round, mx_fake_quant
from zomboss.targets.plena.suite import workload
from zomboss.targets.plena.verify import plena_gate, strict_gate, verify

from zomboss.program import Instr, Program


def test_rotate_half_and_rope_tables() -> None:
    x = np.arange(8, dtype=np.float32)[None, :]
    assert rotate_half(x).tolist() == [[-4, -5, -6, -7, 0, 1, 2, 3]]
    cos, sin = rope_tables(5, 64)
    assert cos.shape == sin.shape == (5, 64)
    assert np.all(cos[0] == 1) and np.all(sin[0] == 0)
    np.testing.assert_allclose(cos**2 + sin**2, 1, atol=1e-6)
    np.testing.assert_allclose(cos[:, :32], cos[:, 32:])  # concatenated halves
    assert sin[1, 0] == pytest.approx(math.sin(1.0)) and sin[1, 31] == pytest.approx(math.sin(10000 ** (-62 / 64)))


def test_inputs_are_seeded_and_scaled() -> None:
    wl = workload("ffn:rows=64,hidden=256,inter=512")
    a, b, a2 = make_inputs(wl, 0), make_inputs(wl, 1), make_inputs(wl, 0)
    assert all(np.array_equal(a[k], a2[k]) for k in a)
    assert not np.array_equal(a["X"], b["X"])
    assert a["W_up"].shape == (256, 512) and a["W_down"].shape == (512, 256)
    assert np.std(a["W_up"]) == pytest.approx(1 / 16, rel=0.05)
    assert np.std(a["W_down"]) == pytest.approx(1 / math.sqrt(512), rel=0.05)
    q = make_inputs(workload("attention:sq=64,skv=128"), 3)
    assert np.std(q["K"]) == pytest.approx(0.5, rel=0.05)
    r = make_inputs(workload("rope:rows=8,head_dim=128"), 0)
    assert np.array_equal(r["X_rot"], rotate_half(r["X"]))


def test_quantization_is_the_hbm_round_trip() -> None:
    wl = workload("linear:M=4,K=64,N=64")
    inputs = make_inputs(wl, 0)
    q = quantize_inputs(inputs)
    assert np.array_equal(q["X"], mx_fake_quant(inputs["X"]))
    assert np.array_equal(mx_fake_quant(q["X"]), q["X"])  # idempotent
    assert np.array_equal(bf16_round(q["X"]), q["X"])  # MXFP8 values are BF16-exact
    assert not np.array_equal(q["X"], inputs["X"])


def test_linear_golden_is_one_bf16_rounding_of_an_fp32_product() -> None:
    wl = workload("linear:M=8,K=128,N=64")
    _, out = golden(wl, 0)
    q = quantize_inputs(make_inputs(wl, 0))
    exact = q["X"].astype(np.float64) @ q["W"].astype(np.float64)
    assert np.array_equal(bf16_round(out), out)
    np.testing.assert_allclose(out, exact, rtol=2**-8, atol=1e-6)


def test_rmsnorm_softmax_ffn_goldens_match_float64_formulas() -> None:
    wl = workload("rmsnorm:rows=8,hidden=256")
    q = quantize_inputs(make_inputs(wl, 0))
    x = q["X"].astype(np.float64)
    np.testing.assert_allclose(reference(wl, q), x / np.sqrt(np.mean(x * x, axis=1, keepdims=True) + 1e-6), rtol=1e-2)

    wl = workload("softmax:rows=8,cols=192")
    q = quantize_inputs(make_inputs(wl, 0))
    s = q["X"].astype(np.float64) / math.sqrt(192)
    p = np.exp(s - s.max(axis=1, keepdims=True))
    np.testing.assert_allclose(reference(wl, q), p / p.sum(axis=1, keepdims=True), rtol=2e-2, atol=1e-4)

    wl = workload("ffn:rows=4,hidden=64,inter=128")
    q = {k: v.astype(np.float64) for k, v in quantize_inputs(make_inputs(wl, 0)).items()}
    up, gate = q["X"] @ q["W_up"], q["X"] @ q["W_gate"]
    want = (up / (1 + np.exp(-up)) * gate) @ q["W_down"]
    np.testing.assert_allclose(reference(wl, quantize_inputs(make_inputs(wl, 0))), want, rtol=5e-2, atol=2e-2)


def test_causal_attention_first_row_is_the_first_value_row() -> None:
    wl = workload("attention:sq=64,skv=64,causal=1")
    q = quantize_inputs(make_inputs(wl, 0))
    out = reference(wl, q)
    assert np.array_equal(out[0], q["V"][0])  # softmax over one key is exactly 1
    full = reference(workload("attention:sq=64,skv=64"), q)
    assert not np.array_equal(out[1:], full[1:])


def test_rope_golden_rounds_both_products() -> None:
    wl = workload("rope:rows=4,head_dim=64")
    q = quantize_inputs(make_inputs(wl, 0))
    want = bf16_round(bf16_round(q["X"] * q["COS"]) + bf16_round(rotate_half(q["X"]) * q["SIN"]))
    assert np.array_equal(reference(wl, q), want)


# ---- gates ------------------------------------------------------------------------------------


def test_plena_gate_needs_90_percent_within_atol_rtol() -> None:
    ref = np.ones(100, dtype=np.float32)
    out = ref.copy()
    out[:10] += 0.5  # 10 % beyond 0.2 + 0.2·1
    assert plena_gate(out, ref).passed and plena_gate(out, ref).match_rate == pytest.approx(0.9)
    out[10] += 0.5
    assert not plena_gate(out, ref).passed


def test_strict_gate_needs_every_element() -> None:
    rng = np.random.default_rng(0)
    ref = rng.standard_normal(1000).astype(np.float32)
    tol = 0.05 * np.std(ref) + 0.05 * np.abs(ref)
    out = ref + 0.9 * tol
    assert strict_gate(out, ref).passed
    out[17] = ref[17] + 1.1 * tol[17]
    g = strict_gate(out, ref)
    assert not g.passed and g.match_rate == pytest.approx(0.999)


def seeds(wl, n: int = 1):
    return [TARGET.instance(wl, {}, seed) for seed in range(n)]


def test_a_wrong_kernel_fails_verification() -> None:
    """The softmax default with the wrong pre-scale in FP SRAM slot 1 must not pass."""
    wl = workload("sm_16x64")
    k = TARGET.kernel(TARGET.instance(wl, {}))
    wrong = Kernel(k.program, replace(k.layout, fp_sram={**k.layout.fp_sram, 1: 1.0}))
    ver = verify(wrong, seeds(wl, 2))
    assert not ver.verified and not ver.checks[0].strict.passed
    assert "strict gate" in ver.reason


def test_writes_outside_the_declared_regions_fail_verification() -> None:
    wl = workload("rope_4x64")
    k = TARGET.kernel(TARGET.instance(wl, {}))
    stray = (Instr("S_LUI_INT", (1, 100)), Instr("V_ADD_VV", (1, 0, 0, 0)))  # VRAM row 0 holds x
    prog = Program("plena", k.program.instrs + stray, k.program.meta)
    ver = verify(Kernel(prog, k.layout), seeds(wl))
    c = ver.checks[0]
    assert c.plena.passed and c.strict.passed and not c.untouched
    assert "VRAM outside the declared regions" in ver.reason


def test_nan_outputs_fail_verification() -> None:
    """RMSNorm with eps = 0 over an all-zero row gives 0·inf = NaN."""
    wl = workload("rms_4x384")
    k = TARGET.kernel(TARGET.instance(wl, {}))
    zero_first_row = (
        Instr("S_ADDI_INT", (1, 0, 0)),
        Instr("C_LOOP_START", (4, 6)),
        Instr("V_MUL_VF", (1, 1, 0, 0)),
        Instr("S_ADDI_INT", (1, 1, 256)),
        Instr("C_LOOP_END", (4,)),
    )
    at = next(i for i, ins in enumerate(k.program.instrs) if ins.op == "V_MUL_VV")  # after load_batch
    at = max(i for i in range(at) if k.program.instrs[i].op == "C_LOOP_END") + 1
    instrs = k.program.instrs[:at] + zero_first_row + k.program.instrs[at:]
    bad = Kernel(Program("plena", instrs, k.program.meta), replace(k.layout, fp_sram={**k.layout.fp_sram, 1: 0.0}))
    c = verify(bad, seeds(wl)).checks[0]
    assert not c.finite and not c.passed
