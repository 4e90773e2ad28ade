"""Candidate-0 (the lowering of the library default): the reference's instruction-count
formulas, pinned, and a few defaults outside the suite verified (the suite's are verified once,
with their programs and cycles pinned, by the golden table of tests/test_defaults.py).

Counts are executed (dynamic) counts from the loop structure (counts.py, no simulation) and
are cross-checked against the simulator's own counts on a few instances.
"""

from __future__ import annotations

import math

import pytest
from zomboss.targets.plena import TARGET
from zomboss.targets.plena.counts import executions
from zomboss.targets.plena.suite import SUITE, workload

from tests.targets.plena.conftest import dynamic_counts
from zomboss.target import Mode

G = TARGET.geometry({})
MRAM_TILE_CAPACITY = 4  # the ATen compiler's K-split chunk for linear layers (reference §4.3)
ML, BL, PV = G.mlen, G.blen, G.pf_v
BY_OP = {op: [w for w in SUITE if w.op == op] for op in ("linear", "rmsnorm", "softmax", "ffn", "attention", "rope")}


def load_batch_loops(rows: int, cols: int) -> int:
    """Executed C_LOOP_STARTs of load_batch: the column-block loop, and its row-group loop per block."""
    return 1 + (cols // G.vlen if rows > PV else 0)


def kernel(wl):
    """Candidate-0's kernel (the target caches it: the large FFNs take ~1 s to lower)."""
    return TARGET.kernel(TARGET.instance(wl, {}))


def counts(wid: str):
    return dynamic_counts(kernel(workload(wid)).program)


# ---- linear (§4.3) ----------------------------------------------------------------------------


@pytest.mark.parametrize("wl", BY_OP["linear"], ids=lambda w: w.id)
def test_linear_counts_follow_the_reference_formulas(wl) -> None:
    m, k, n = wl["M"], wl["K"], wl["N"]
    kt, nt, rb = k // ML, n // ML, math.ceil(m / ML)
    chunks = math.ceil(kt / MRAM_TILE_CAPACITY)
    c = dynamic_counts(kernel(wl).program)
    assert c["H_PREFETCH_M"] == kt * nt * rb
    assert c["M_MM"] == (n // BL) * math.ceil(m / BL) * kt
    assert c["M_MM_WO"] == (n // BL) * math.ceil(m / BL) * chunks
    assert c["V_ADD_VV"] == (chunks - 1) * nt * rb * ML
    assert c["H_PREFETCH_V"] == kt * math.ceil(m / PV)
    assert c["C_SET_SCALE_REG"] == 1 + chunks * nt * rb  # load_batch + every weight load (no caching)


def test_linear_pins_from_the_suite_table() -> None:
    """§5.2's table: L1 9.2k M_MM / 36 PF_M / 384 V_ADD; L6 16.4k / 1024 / 15.4k."""
    l1, l6 = counts("lin_60m_q"), counts("lin_8b_k")
    assert (l1["M_MM"], l1["H_PREFETCH_M"], l1["V_ADD_VV"]) == (9216, 36, 384)
    assert (l6["M_MM"], l6["H_PREFETCH_M"], l6["V_ADD_VV"]) == (16384, 1024, 15360)
    l5 = counts("lin_1b_q")
    assert (l5["M_MM"], l5["H_PREFETCH_M"], l5["V_ADD_VV"]) == (65536, 1024, 14336)


def test_linear_without_k_split_has_no_partial_sums() -> None:
    c = counts("linear:M=64,K=256,N=128")
    assert c["V_ADD_VV"] == 0 and c["M_MM_WO"] == (128 // BL) * (64 // BL)


# ---- ffn (§4.4) -------------------------------------------------------------------------------


@pytest.mark.parametrize("wl", BY_OP["ffn"], ids=lambda w: w.id)
def test_ffn_counts(wl) -> None:
    m, h, i = wl["rows"], wl["hidden"], wl["inter"]
    c = dynamic_counts(kernel(wl).program)
    assert c["M_MM"] == 2 * (i // BL) * (m // BL) * (h // ML) + (h // BL) * (m // BL) * (i // ML)
    assert c["M_MM_WO"] == 2 * (i // BL) * (m // BL) + (h // BL) * (m // BL)
    assert c["H_PREFETCH_M"] == 3 * (h // ML) * (i // ML)
    chunks = m * i // G.vlen  # SiLU·gate: 6 vector ops per chunk, unrolled
    assert c["V_EXP_V"] == c["V_RECI_V"] == c["V_SUB_VF"] == c["V_ADD_VF"] == chunks
    assert c["V_MUL_VV"] == 2 * chunks
    k_loops = (2 * (i // BL) + h // BL) * (m // BL)  # one rolled K loop per (column slice, row group)
    assert c["C_LOOP_START"] == k_loops + load_batch_loops(m, h)


def test_ffn_pins_from_the_suite_table() -> None:
    """§5.2: F3 101k M_MM and 396 PF_M; F6 97k M_MM and 6k PF_M."""
    f3, f6 = counts("ffn_64x384x1408"), counts("ffn_4x2880x2880")
    assert (f3["M_MM"], f3["H_PREFETCH_M"]) == (101376, 396)
    assert (f6["M_MM"], f6["H_PREFETCH_M"]) == (97200, 6075)


# ---- rmsnorm (§4.5) ---------------------------------------------------------------------------


@pytest.mark.parametrize("wl", BY_OP["rmsnorm"], ids=lambda w: w.id)
def test_rmsnorm_counts(wl) -> None:
    rows, hid = wl["rows"], wl["hidden"]
    n = hid // G.vlen
    c = dynamic_counts(kernel(wl).program)
    assert c["V_MUL_VV"] == c["V_RED_SUM"] == c["V_MUL_VF"] == rows * n
    assert c["S_SQRT_FP"] == c["S_RECI_FP"] == rows
    assert c["C_LOOP_START"] == load_batch_loops(rows, hid) + rows  # then one rolled reduction per row
    nops = sum(1 for ins in kernel(wl).program.instrs if ins.op == "S_ADDI_INT" and ins.args == (0, 0, 0))
    assert nops == rows * (4 + (1 if n > 1 else 0))  # RTL spacers after S_RECI_FP and between the last two V_MUL_VF


# ---- softmax (§4.6 and the §5.2 extension) ----------------------------------------------------


@pytest.mark.parametrize("wl", BY_OP["softmax"], ids=lambda w: w.id)
def test_softmax_processes_every_row_of_each_tile(wl) -> None:
    rows, cols = wl["rows"], wl["cols"]
    phys = math.ceil(rows / ML) * ML
    n = cols // G.vlen
    c = dynamic_counts(kernel(wl).program)
    assert c["V_RED_MAX"] == c["V_EXP_V"] == c["V_RED_SUM"] == c["V_SUB_VF"] == phys * n
    assert c["V_MUL_VF"] == 2 * phys * n  # scale and normalise
    assert c["S_RECI_FP"] == c["S_LD_FP"] == phys
    assert c["V_ADD_VV"] == rows * n  # copying X into S


def test_softmax_single_tile_is_the_native_baseline() -> None:
    c = counts("sm_64x64")
    assert "C_LOOP_START" not in {i.op for i in kernel(workload("sm_64x64")).program.instrs[40:]}
    assert c["V_ADD_VV"] == 64 and c["V_RED_MAX"] == 64


# ---- attention (§4.7) -------------------------------------------------------------------------


@pytest.mark.parametrize("wl", BY_OP["attention"], ids=lambda w: w.id)
def test_attention_counts(wl) -> None:
    sq, skv, d, causal = wl["sq"], wl["skv"], wl["d"], wl["causal"]
    qb, kb = math.ceil(sq / ML), skv // ML
    pairs = qb * (qb + 1) // 2 if causal else qb * kb
    groups = math.ceil(min(sq, ML) / BL)
    c = dynamic_counts(kernel(wl).program)
    assert c["M_TMM"] == pairs * (ML // BL) * groups * (d // ML)
    assert c["M_MM"] == pairs * (d // BL) * groups
    assert c["H_PREFETCH_M"] == 2 * pairs * (d // ML)
    rows = min(sq, ML)
    assert c["V_RED_MAX"] == c["S_EXP_FP"] == c["V_RED_SUM"] == pairs * rows
    assert c["S_ST_FP"] == pairs * rows * 3 + qb * rows * 2 + (ML * ML if causal else 0)
    assert c["S_MAP_V_FP"] == (ML if causal else 0)


def test_attention_pins_from_the_suite_table() -> None:
    """§5.2: A1 256+256 M ops; A5 136 block pairs, 70k M ops; A6 32 pairs."""
    a1, a5, a6 = counts("attn_64"), counts("attn_1kc"), counts("attn_dec")
    assert (a1["M_TMM"], a1["M_MM"]) == (256, 256)
    assert a5["M_TMM"] + a5["M_MM"] == 136 * 512
    assert a6["H_PREFETCH_M"] == 2 * 32


# ---- rope (§4.8) ------------------------------------------------------------------------------


@pytest.mark.parametrize("wl", BY_OP["rope"], ids=lambda w: w.id)
def test_rope_counts(wl) -> None:
    chunks = wl["rows"] * wl["head_dim"] // G.vlen
    c = dynamic_counts(kernel(wl).program)
    assert c["V_MUL_VV"] == 2 * chunks and c["V_ADD_VV"] == chunks
    assert c["S_ADDI_INT"] >= 4 * chunks
    assert c["H_PREFETCH_V"] == 4 * (wl["head_dim"] // G.vlen) * (wl["rows"] // PV)


# ---- the counter agrees with the simulator ------------------------------------------------------


@pytest.mark.parametrize("wid", ["lin_60m_kv", "attn_128c", "sm_32x256", "rms_4x384"])
def test_static_counts_match_the_simulator(wid: str) -> None:
    wl = workload(wid)
    ev = TARGET.evaluate(TARGET.instance(wl, {}), TARGET.reference_mappings(wl, {})["library"], Mode.TIMING)
    k = kernel(wl)
    assert dict(ev.report["counts"]) == dict(dynamic_counts(k.program))
    assert ev.instructions == sum(executions(k.program))


def test_emulator_parity_figure_of_l1() -> None:
    """§3.3b: under the emulator's pricing L1 comes to ≈ 640 k cycles, ~90 % of them M_MM (9 216 × MLEN)."""
    wl = workload("lin_60m_q")
    emu = TARGET.evaluate(TARGET.instance(wl, {}), TARGET.reference_mappings(wl, {})["library"], Mode.TIMING)
    assert 600_000 < emu.report["emu_cycles"] < 700_000
    assert 9216 * ML / emu.report["emu_cycles"] > 0.85


@pytest.mark.parametrize(
    "spec",
    [
        "linear:M=68,K=320,N=128",  # two row blocks, the second partial; a 4+1 K split
        "softmax:rows=68,cols=192",  # two row tiles, three chunks per row
        "attention:sq=72,skv=128,d=128",  # a partial q block, two d column blocks
        "ffn:rows=8,hidden=128,inter=64",
        "rmsnorm:rows=12,hidden=64",
        "rope:rows=12,head_dim=192",
    ],
)
def test_off_suite_defaults_verify(spec: str) -> None:
    wl = workload(spec)
    ev = TARGET.evaluate(TARGET.instance(wl, {}), TARGET.reference_mappings(wl, {})["library"], Mode.VERIFIED)
    assert ev.verified, ev.report.get("verify_reason")
    assert [g["seed"] for g in ev.report["gates"]] == [0, 1]
