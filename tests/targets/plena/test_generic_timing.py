"""PLENA's timing written in the generic vocabulary (plena.md §7.1: `fetch { blocking: 1 }` and
four `stall`s) against the hand-written `rtl` model (targets/plena/timing.py): the Appendix B
hazard programs, a mixed kernel, suite defaults and random legal mappings of every family give
the same cycles; and every one of the doc's timing declarations is needed for that."""

from __future__ import annotations

import re
from functools import cache
from typing import Any

import numpy as np
import pytest
from zomboss.targets.plena import TARGET
from zomboss.targets.plena import hbm as H
from zomboss.targets.plena.asm import parse_program
from zomboss.targets.plena.config import DOC, PlenaConfig
from zomboss.targets.plena.simulator import simulate
from zomboss.targets.plena.suite import SUITE

from tests.random_mappings import random_mapping
from zomboss.doc import parse_doc
from zomboss.knowledge import compile_doc
from zomboss.machine import GenericSim
from zomboss.mapping import KnobMapping
from zomboss.program import Program
from zomboss.solvers.space import skeletons

from .test_timing import DATA

CFG = PlenaConfig.from_params()
STALLS = ("hbmv_vector", "red_sfp", "sfu_bcast", "vram_write")


@cache
def _sim(without: str = "") -> GenericSim:
    """The generic simulator of plena.md, or of plena.md without one of its timing declarations
    (`fetch` or a stall's name)."""
    text = DOC.read_text()
    if without == "fetch":
        text = text.replace("fetch { blocking: 1 }", "")
    elif without:
        text, n = re.subn(rf"stall {without} \{{[^}}]*\}}", "", text)
        assert n == 1, without
    return GenericSim(compile_doc(parse_doc(text, str(DOC)), "plena", {}) if without else CFG.kb)


def _generic(program: Program, without: str = "") -> int:
    return _sim(without).run(program.instrs, None).cycles


SETUP_V = "S_ADDI_INT gp1, gp0, 256\nC_SET_SCALE_REG gp1\nS_ADDI_INT gp2, gp0, 64\nH_PREFETCH_V gp2, gp0, a0, 0, 0\n"

# (program, its rtl cycles, the stall it exercises) — test_timing.py's Appendix B hazard rows
HAZARDS = [
    (SETUP_V + "V_ADD_VV gp0, gp2, gp0, 0", 3 + 26 + 12 + 4, "hbmv_vector"),
    (SETUP_V + "V_RED_SUM f1, gp2", 3 + 26 + 54 + 4, "hbmv_vector"),  # a reduction is a vector reader too
    (SETUP_V + "V_ADD_VV gp0, gp0, gp0, 0", 3 + 26 + 12, ""),  # a row the prefetch did not write
    (SETUP_V + "S_ADDI_INT gp3, gp0, 1\nV_ADD_VV gp0, gp2, gp0, 0", 3 + 26 + 1 + 12, ""),  # not adjacent
    ("V_RED_SUM f1, gp0\nS_ADD_FP f2, f1, f1", 54 + 10 + 6, "red_sfp"),
    ("V_RED_SUM f1, gp0\nS_ADD_FP f2, f3, f3", 54 + 10, ""),
    ("V_RED_MAX f1, gp0, 0\nS_ST_FP f1, gp0, 0", 19 + 1 + 6, "red_sfp"),
    ("V_RED_SUM f1, gp0\nS_LD_FP f1, gp0, 0", 54 + 1, ""),  # a load writes the register, reads nothing
    ("S_RECI_FP f1, f2\nV_MUL_VF gp0, gp0, f1, 0", 10 + 11 + 5, "sfu_bcast"),
    ("S_RECI_FP f1, f2\nV_MUL_VF gp0, gp0, f2, 0", 10 + 11, ""),
    ("S_MUL_FP f1, f2, f2\nV_MUL_VF gp0, gp0, f1, 0", 8 + 11, ""),  # the multiplier is not the SFU
    ("S_EXP_FP f1, f2\nV_RED_SUM f1, gp0", 20 + 54, ""),  # a reduction's accumulator is no broadcast
    ("V_MUL_VF gp0, gp0, f1, 0\nV_MUL_VF gp0, gp0, f1, 0", 11 + 11 + 3, "vram_write"),
    ("S_ADDI_INT gp2, gp0, 64\nV_MUL_VF gp0, gp0, f1, 0\nV_EXP_V gp2, gp0, 0", 1 + 11 + 21, ""),  # other row
    ("V_RED_SUM f1, gp0\nS_ADDI_INT gp3, gp0, 1\nS_ADD_FP f2, f1, f1", 54 + 1 + 10, ""),  # not adjacent
]


@pytest.mark.parametrize(("text", "cycles", "stall"), HAZARDS)
def test_appendix_b_hazards_from_the_doc(text: str, cycles: int, stall: str) -> None:
    prog = parse_program(CFG.kb, text, "t.asm")
    assert simulate(prog, CFG, modes=("rtl",)).cycles["rtl"] == cycles  # the hand-written model
    assert _generic(prog) == cycles
    if stall:  # the stall that made the difference
        assert _generic(prog, stall) < cycles


def test_a_kernel_with_every_hazard_matches_the_hand_written_clock() -> None:
    prog = TARGET.read_program(DATA / "timing_mix.asm", {})
    h = H.Hbm()
    rng = np.random.default_rng(5)
    H.place_mx_tensor(h, 0, rng.standard_normal((64, 64)))
    H.place_mx_tensor(h, 8192, rng.standard_normal((4, 64)))
    want = simulate(prog, CFG, h, fpsram_init=np.linspace(-1, 1, 64), modes=("rtl",))
    assert want.rtl_breakdown["hazards"] == 4 + 6 + 5 + 3 + 6
    assert _generic(prog) == want.cycles["rtl"]
    for without in ("fetch", *STALLS):
        assert _generic(prog, without) < want.cycles["rtl"], without


def _rtl(wl: Any, mapping: KnobMapping | None) -> tuple[Program, int]:
    inst: Any = TARGET.instance(wl, {})
    k = TARGET.kernel(inst, mapping)
    hbm0, fp = inst.staged(k.layout)
    run = simulate(k.program, inst.cfg, hbm0, fpsram_init=fp, modes=("rtl",), check=False, functional=False)
    return k.program, run.cycles["rtl"]


# about a second each in the generic simulator (timing only); the rest of the suite takes up to
# a few minutes each (`make test-slow`, or scripts/timing_validation.py)
FAST = ("rms_4x384", "sm_16x64", "sm_64x64", "ffn_16x128x256", "attn_64", "rope_4x64", "rope_64x64")


@pytest.mark.parametrize("wid", [pytest.param(w.id, marks=() if w.id in FAST else pytest.mark.slow) for w in SUITE])
def test_suite_default_cycles_equal_the_rtl_model(wid: str) -> None:
    prog, cycles = _rtl(next(w for w in SUITE if w.id == wid), None)
    assert _generic(prog) == cycles


def test_the_suite_defaults_exercise_the_stalls_and_the_blocking_fetch() -> None:
    """Softmax pays three of the four hazards, rope the VRAM write conflict: without the stall
    (or with overlapping units) the doc's clock runs short."""
    for wid, needed in (("sm_16x64", ("fetch", "red_sfp", "sfu_bcast", "vram_write")), ("rope_4x64", ("vram_write",))):
        prog, cycles = _rtl(next(w for w in SUITE if w.id == wid), None)
        for without in needed:
            assert _generic(prog, without) < cycles, (wid, without)


def _spec(op: str, a: int, b: int) -> str:
    """A small legal shape of each family (rows in BLEN groups, other dimensions in MLEN tiles)."""
    return {
        "linear": f"linear:M={4 * a},K={64 * b},N=128",
        "ffn": f"ffn:rows={4 * a},hidden={64 * b},inter=128",
        "attention": f"attention:sq={4 * a},skv={64 * b}",
        "rmsnorm": f"rmsnorm:rows={4 * a},hidden={64 * b}",
        "softmax": f"softmax:rows={4 * a},cols={64 * b}",
        "rope": f"rope:rows={4 * a},head_dim={64 * b}",
    }[op]


@pytest.mark.parametrize("seed", range(2))
@pytest.mark.parametrize("op", ["linear", "rmsnorm", "softmax", "ffn", "attention", "rope"])
def test_random_legal_mappings_equal_the_rtl_model(op: str, seed: int) -> None:
    rng = np.random.default_rng([seed, len(op)])
    wl = TARGET.workload(_spec(op, int(rng.integers(1, 5)), int(rng.integers(1, 4))))
    n = len(list(skeletons(TARGET.kb({}), wl.op, wl.shape)))
    for _ in range(6):  # a few draws are infeasible sizings or absurd corners
        m = random_mapping(TARGET, wl, int(rng.integers(n)), [int(w) for w in rng.integers(-3, 4, 12)], within=8.0)
        if m is not None:
            break
    assert m is not None, "no legal mapping drawn"
    prog, cycles = _rtl(wl, m)
    assert _generic(prog) == cycles
