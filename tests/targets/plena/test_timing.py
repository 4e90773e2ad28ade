"""Timing models: a hand-written kernel against independently tabulated costs, every row of
reference Appendix B (RTL-measured timing) and of the emulator's latency table pinned, the
hazard penalties, and the overlap mode's scheduling."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from zomboss.targets.plena import TARGET
from zomboss.targets.plena import hbm as H
from zomboss.targets.plena.simulator import simulate
from zomboss.targets.plena.timing import TimingError

DATA = Path(__file__).parent / "data"

# Appendix B at MLEN = VLEN = 64, BLEN = 4 (measured rows), with plena.md §7.1's documented
# extrapolations for the rest, written out here independently of the doc's parameters.
RTL = {
    "M_MM": 8, "M_TMM": 8, "M_MM_WO": 21,
    "M_MV": 4 + 1, "M_MV_WO": 13 + 2 * 1, "M_BTMM": 4 + 64 * 64 * 64 // 256, "M_BMM_WO": 13 + 2 * 256,
    "V_ADD_VV": 12, "V_SUB_VV": 12, "V_ADD_VF": 13, "V_SUB_VF": 13, "V_MUL_VV": 10, "V_MUL_VF": 11,
    "V_EXP_V": 21, "V_RECI_V": 11, "V_RED_SUM": 5 + 7 * 7, "V_RED_MAX": 5 + 2 * 7,
    "V_MAX_VF": 13, "V_MIN_VF": 13, "V_SHFT_V": 12,
    "S_ADD_FP": 10, "S_SUB_FP": 10, "S_MAX_FP": 10, "S_MUL_FP": 8, "S_EXP_FP": 20, "S_RECI_FP": 10, "S_SQRT_FP": 6,
    "S_LD_FP": 1, "S_ST_FP": 1, "S_MAP_V_FP": 64 + 4,
    "S_ADD_INT": 1, "S_SUB_INT": 1, "S_MUL_INT": 1, "S_ADDI_INT": 1, "S_LUI_INT": 1, "S_LD_INT": 1, "S_ST_INT": 1,
    "C_SET_ADDR_REG": 1, "C_SET_SCALE_REG": 1, "C_SET_STRIDE_REG": 1, "C_SET_V_MASK_REG": 1,
    "C_LOOP_START": 1, "C_LOOP_END": 1, "C_BREAK": 1,
}  # fmt: skip
# The transactional emulator, DC_EN = 1 (reference §3.1).
EMU = {
    "M_MM": 64, "M_TMM": 64, "M_MM_WO": 1, "M_MV": 64, "M_MV_WO": 1, "M_BTMM": 64, "M_BMM_WO": 1,
    "V_ADD_VV": 1, "V_SUB_VV": 1, "V_ADD_VF": 1, "V_SUB_VF": 1, "V_MUL_VV": 1, "V_MUL_VF": 1,
    "V_EXP_V": 1, "V_RECI_V": 2, "V_RED_SUM": 8, "V_RED_MAX": 4, "V_MAX_VF": 4, "V_MIN_VF": 4, "V_SHFT_V": 1,
    "S_ADD_FP": 1, "S_SUB_FP": 1, "S_MAX_FP": 1, "S_MUL_FP": 1, "S_EXP_FP": 1, "S_RECI_FP": 1, "S_SQRT_FP": 1,
    "S_LD_FP": 1, "S_ST_FP": 1, "S_MAP_V_FP": 2 * 64,
    "S_ADD_INT": 1, "S_SUB_INT": 1, "S_MUL_INT": 1, "S_ADDI_INT": 1, "S_LUI_INT": 1, "S_LD_INT": 1, "S_ST_INT": 1,
    "C_SET_ADDR_REG": 1, "C_SET_SCALE_REG": 1, "C_SET_STRIDE_REG": 1, "C_SET_V_MASK_REG": 1,
    "C_LOOP_START": 1, "C_LOOP_END": 1, "C_BREAK": 1,
}  # fmt: skip
DMA_OPS = ("H_PREFETCH_M", "H_PREFETCH_V", "H_STORE_V")


def test_hand_written_kernel_matches_table_sums(cfg) -> None:
    prog = TARGET.read_program(DATA / "timing_mix.asm", {})
    h = H.Hbm()
    rng = np.random.default_rng(5)
    H.place_mx_tensor(h, 0, rng.standard_normal((64, 64)))
    H.place_mx_tensor(h, 8192, rng.standard_normal((4, 64)))
    r = simulate(prog, cfg, h, fpsram_init=np.linspace(-1, 1, 64), modes=("rtl", "emu"))
    assert r.counts["M_MM"] == 16 and r.counts["C_LOOP_END"] == 16 and r.counts["S_ADDI_INT"] == 2 * 16 + 9
    assert r.instructions == len(prog) + 15 * 5
    # DMA: prefetch of 64 rows x 2 blocks, 4 rows x 2 blocks (Appendix A fit), store of 4 x 2 RMW blocks
    dma = round(20 + 0.55 * 128 + 0.3 * 64) + round(20 + 0.55 * 8 + 0.3 * 4) + 16 * 8
    assert dma == 110 + 26 + 128
    hazards = 4 + 6 + 5 + 3 + 6  # HBM_V->vector, red->FP, SFU->broadcast, VRAM write, red->FP
    compute = {op: n for op, n in r.counts.items() if op not in DMA_OPS}
    assert r.cycles["rtl"] == sum(RTL[op] * n for op, n in compute.items()) + dma + hazards
    assert r.cycles["emu"] == sum(EMU[op] * n for op, n in compute.items()) + dma
    assert r.rtl_breakdown["hazards"] == hazards and r.rtl_breakdown["dma"] == dma
    assert r.hbm_read_bytes == 64 * (128 + 8 + 8) and r.hbm_write_bytes == 64 * 8


def one(run, config, text: str, **kw) -> dict[str, int]:
    return dict(run(text, config=config, **kw).cycles)


def geometry(config_for, mlen: int, blen: int):
    return config_for({"mlen": mlen, "vlen": mlen, "blen": blen, "hlen": mlen // 4, "hbm_m_prefetch": mlen})


@pytest.mark.parametrize(
    ("mlen", "blen", "mm", "wo"),
    [(16, 4, 8, 21), (32, 4, 8, 21), (64, 4, 8, 21), (32, 8, 12, 29), (64, 8, 12, 29), (64, 16, 20, 45)],
)
def test_appendix_b_matrix_rows(run, config_for, mlen: int, blen: int, mm: int, wo: int) -> None:
    c = geometry(config_for, mlen, blen)
    assert one(run, c, "M_MM 0, gp0, gp0")["rtl"] == mm
    assert one(run, c, "M_TMM 0, gp0, gp0")["rtl"] == mm
    assert one(run, c, "M_MM_WO gp0, gp0, 0")["rtl"] == wo
    assert one(run, c, "M_MM 0, gp0, gp0")["emu"] == mlen  # the emulator: MLEN cycles per M_MM


@pytest.mark.parametrize(
    ("line", "cycles"),
    [
        ("V_ADD_VV gp0, gp0, gp0, 0", 12),
        ("V_SUB_VV gp0, gp0, gp0, 0", 12),
        ("V_ADD_VF gp0, gp0, f1, 0", 13),
        ("V_SUB_VF gp0, gp0, f1, 0, 0", 13),
        ("V_MUL_VV gp0, gp0, gp0, 0", 10),
        ("V_MUL_VF gp0, gp0, f1, 0", 11),
        ("V_EXP_V gp0, gp0, 0", 21),
        ("V_RECI_V gp0, gp0, 0", 11),
    ],
)
@pytest.mark.parametrize("vlen", [16, 64])
def test_appendix_b_vector_rows(run, config_for, line: str, cycles: int, vlen: int) -> None:
    assert one(run, geometry(config_for, vlen, 4), line)["rtl"] == cycles


@pytest.mark.parametrize(("vlen", "red_sum", "red_max"), [(8, 33, 13), (16, 40, 15), (32, 47, 17), (64, 54, 19)])
def test_appendix_b_reduction_rows(run, config_for, vlen: int, red_sum: int, red_max: int) -> None:
    c = geometry(config_for, vlen, 4)
    assert one(run, c, "V_RED_SUM f1, gp0")["rtl"] == red_sum  # 5 + 7 ceil(log2(VLEN + 1))
    assert one(run, c, "V_RED_MAX f1, gp0, 0")["rtl"] == red_max  # 5 + 2 ceil(log2(VLEN + 1))


@pytest.mark.parametrize(
    ("line", "cycles"),
    [
        ("S_ADD_FP f1, f2, f3", 10),
        ("S_SUB_FP f1, f2, f3", 10),
        ("S_MUL_FP f1, f2, f3", 8),
        ("S_EXP_FP f1, f2", 20),
        ("S_RECI_FP f1, f2", 10),
        ("S_SQRT_FP f1, f2", 6),
        ("S_MAP_V_FP gp0, gp0, 0", 64 + 4),
        ("S_ADDI_INT gp1, gp0, 1", 1),
        ("S_ADD_INT gp1, gp2, gp3", 1),
        ("S_LUI_INT gp1, 2", 1),
        ("S_LD_FP f1, gp0, 0", 1),
        ("S_ST_FP f1, gp0, 0", 1),
        ("S_LD_INT gp1, gp0, 0", 1),
        ("S_ST_INT gp1, gp0, 0", 1),
    ],
)
def test_appendix_b_scalar_rows(run, cfg, line: str, cycles: int) -> None:
    assert one(run, cfg, line)["rtl"] == cycles


def test_appendix_b_map_v_scales_with_vlen(run, config_for) -> None:
    assert one(run, geometry(config_for, 16, 4), "S_MAP_V_FP gp0, gp0, 0")["rtl"] == 16 + 4


SETUP_V = "S_ADDI_INT gp1, gp0, 256\nC_SET_SCALE_REG gp1\nS_ADDI_INT gp2, gp0, 64\nH_PREFETCH_V gp2, gp0, a0, 0, 0\n"


@pytest.mark.parametrize(
    ("text", "base", "penalty"),
    [
        (SETUP_V + "V_ADD_VV gp0, gp2, gp0, 0", 3 + 26 + 12, 3 + 1),  # HBM_V -> vector: 3 stall + 1
        (SETUP_V + "V_ADD_VV gp0, gp0, gp0, 0", 3 + 26 + 12, 0),  # reads a row the prefetch did not write
        ("V_RED_SUM f1, gp0\nS_ADD_FP f2, f1, f1", 54 + 10, 5 + 1),  # reduction -> scalar FP
        ("V_RED_SUM f1, gp0\nS_ADD_FP f2, f3, f3", 54 + 10, 0),
        ("V_RED_MAX f1, gp0, 0\nS_ST_FP f1, gp0, 0", 19 + 1, 5 + 1),
        ("S_RECI_FP f1, f2\nV_MUL_VF gp0, gp0, f1, 0", 10 + 11, 4 + 1),  # SFU -> scalar broadcast
        ("S_RECI_FP f1, f2\nV_MUL_VF gp0, gp0, f2, 0", 10 + 11, 0),
        ("S_MUL_FP f1, f2, f2\nV_MUL_VF gp0, gp0, f1, 0", 8 + 11, 0),  # the multiplier is not the SFU
        ("V_MUL_VF gp0, gp0, f1, 0\nV_MUL_VF gp0, gp0, f1, 0", 11 + 11, 2 + 1),  # VRAM write conflict
        ("S_ADDI_INT gp2, gp0, 64\nV_MUL_VF gp0, gp0, f1, 0\nV_EXP_V gp2, gp0, 0", 1 + 11 + 21, 0),  # other row
        ("V_RED_SUM f1, gp0\nS_ADDI_INT gp3, gp0, 1\nS_ADD_FP f2, f1, f1", 54 + 1 + 10, 0),  # not adjacent
    ],
)
def test_appendix_b_hazards(run, cfg, text: str, base: int, penalty: int) -> None:
    c = one(run, cfg, text)
    assert c["rtl"] == base + penalty
    assert run(text).rtl_breakdown["hazards"] == penalty


@pytest.mark.parametrize(
    ("line", "dc_en", "cycles"),
    [
        ("V_ADD_VV gp0, gp0, gp0, 0", 1, 1), ("V_ADD_VV gp0, gp0, gp0, 0", 0, 2),
        ("V_MUL_VF gp0, gp0, f1, 0", 1, 1), ("V_MUL_VF gp0, gp0, f1, 0", 0, 5),
        ("V_SHFT_V gp0, gp0, gp0", 0, 5),
        ("V_EXP_V gp0, gp0, 0", 1, 1), ("V_EXP_V gp0, gp0, 0", 0, 6),
        ("V_RECI_V gp0, gp0, 0", 1, 2), ("V_RECI_V gp0, gp0, 0", 0, 7),
        ("V_RED_MAX f1, gp0, 0", 0, 4), ("V_MAX_VF gp0, gp0, f1, 0", 1, 4),
        ("V_RED_SUM f1, gp0", 1, 8), ("V_RED_SUM f1, gp0", 0, 20), ("V_RED_SUM f0, gp0", 1, 0),
        ("V_TOPK gp0, gp0, gp0, 0", 1, 4 * 32), ("V_TOPK gp0, gp0, gp0, 1", 1, 4 * 128),
        ("S_EXP_FP f1, f2", 1, 1), ("S_EXP_FP f1, f2", 0, 2), ("S_SQRT_FP f1, f2", 0, 2), ("S_RECI_FP f1, f2", 0, 2),
        ("S_MUL_FP f0, f1, f2", 1, 0),
        ("M_BMV gp0, gp0, gp0", 1, 1), ("M_BMV_WO gp0, 0", 1, 1), ("M_TMV 0, gp0, gp0", 1, 64),
        ("S_MAP_V_FP gp0, gp0, 0", 1, 128), ("C_SET_SCALE_REG gp0", 1, 1),
    ],
)  # fmt: skip
def test_emulator_latency_table(run, config_for, line: str, dc_en: int, cycles: int) -> None:
    assert one(run, config_for({"dc_en": dc_en}), line)["emu"] == cycles


def test_overlap_hides_an_independent_prefetch(run, cfg) -> None:
    setup = (
        "S_ADDI_INT gp1, gp0, 4096\nC_SET_SCALE_REG gp1\nS_ADDI_INT gp2, gp0, 4096\nH_PREFETCH_M gp2, gp0, a0, 0, 0\n"
    )
    independent = setup + "M_MM 0, gp0, gp0\n" * 10  # tile 0 while tile 1 loads
    dependent = setup + "M_MM 0, gp2, gp0\n" * 10  # needs the tile being loaded
    ind = run(independent, modes=("rtl", "overlap")).cycles
    dep = run(dependent, modes=("rtl", "overlap")).cycles
    assert ind["rtl"] == dep["rtl"] == 3 + 110 + 80
    assert ind["overlap"] == 3 + 110 and dep["overlap"] == 3 + 110 + 80


def test_overlap_respects_register_and_vram_dependencies(run) -> None:
    text = "S_ADDI_INT gp1, gp0, 64\nV_EXP_V gp1, gp0, 0\nV_RECI_V gp2, gp1, 0\nS_ADDI_INT gp3, gp0, 1\n"
    c = run(text, modes=("rtl", "overlap")).cycles
    assert c["overlap"] == 1 + 21 + 11  # the scalar add runs beside the vector unit
    assert c["rtl"] == 1 + 21 + 11 + 1


def test_modes_are_validated(run) -> None:
    with pytest.raises(TimingError, match="unknown timing mode 'fast'"):
        run("", modes=("fast",))
    assert set(run("").cycles) == {"rtl", "emu"}
