"""Gemmini simulated from its doc (`targets/gemmini/generic.py`): the generic simulator's DRAM
equals the hand-written functional simulator's bit for bit — on the suite defaults, random
legal mappings, random instruction streams and the functional tests' own programs — and a
wrong effect in the doc is caught. The doc's effects leave its KB's ASP unchanged."""

from __future__ import annotations

import functools

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from zomboss.targets.gemmini import TARGET
from zomboss.targets.gemmini import generic as G
from zomboss.targets.gemmini.asm import acc_addr
from zomboss.targets.gemmini.config import DOC, GemminiConfig
from zomboss.targets.gemmini.dram import Dram
from zomboss.targets.gemmini.numerics import f32_bits
from zomboss.targets.gemmini.presets import DEFAULT_PRESET, get_preset
from zomboss.targets.gemmini.simulator import simulate
from zomboss.targets.gemmini.suite import SUITE

from tests.doc_effects import without_effects
from tests.random_mappings import random_mapping
from zomboss.doc import parse_doc
from zomboss.errors import IllegalProgram
from zomboss.knowledge import compile_doc
from zomboss.machine import GenericSim
from zomboss.program import Program
from zomboss.solvers.space import skeletons

from . import test_simulator as TS
from .conftest import CURRENT, GARB, ONE, RTL_FEATURES, prog, put, rand_i8

FAST_DEFAULTS = ("mm256", "odd_pad")  # the rest take 10 s to 3 min each in the generic simulator


@functools.cache
def _sim() -> GenericSim:
    return G.generic_sim(GemminiConfig.default(), CURRENT)


def both(program: Program, cfg: GemminiConfig, dram: Dram, check: bool = False) -> tuple[Dram, Dram]:
    """The DRAM after the hand-written simulator, and after the generic one (from the same image),
    both on the current RTL, which builds every feature the programs here use."""
    hand, doc = dram.copy(), dram.copy()
    simulate(program, cfg, hand, timing=False, check=check, preset=CURRENT)
    G.run(program, cfg, doc, check=check, sim=_sim())
    return hand, doc


def _default(wid: str) -> tuple:
    wl = TARGET.workload(wid)
    inst = TARGET.instance(wl, {})
    return inst, TARGET.lower(inst, TARGET.reference_mappings(wl, {})["library"])


@pytest.mark.parametrize(
    "wid", [pytest.param(w.id, marks=() if w.id in FAST_DEFAULTS else pytest.mark.slow) for w in SUITE]
)
def test_suite_default_matches_the_hand_written_simulator(wid):
    inst, program = _default(wid)
    hand, doc = both(program, inst.cfg, inst.dram(), check=wid in FAST_DEFAULTS)
    assert inst.verify(hand)  # the oracle computes the workload
    assert np.array_equal(hand.mem, doc.mem), f"{wid}: {np.count_nonzero(hand.mem != doc.mem)} bytes differ"


# ---- random legal mappings of small odd workloads (padding, bias, ReLU, both dataflows) ----------

MAPPED: list[bool] = []


# derandomized: `test_zz_random_mappings_were_mostly_simulated` counts this test's draws, and
# about one in three draws is an absurd corner the sizer refuses, so 20 fresh draws per run left
# it failing now and then (8 of 20) on nothing but luck
@settings(
    max_examples=20,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
@given(
    op=st.sampled_from(["matmul", "conv"]),
    dims=st.lists(st.integers(1, 5), min_size=4, max_size=4),
    flags=st.tuples(st.integers(0, 1), st.integers(0, 1)),
    hw=st.booleans(),
    pick=st.integers(0, 10_000),
    weights=st.lists(st.integers(-3, 3), min_size=16, max_size=16),
)
def test_random_legal_mappings_match(op, dims, flags, hw, pick, weights):
    """Half the draws use the hardware loops (a handful among a thousand skeletons, which a
    uniform pick would almost never reach)."""
    bias, relu = flags
    a, b, c, d = dims
    if op == "matmul":
        spec = f"matmul:M={7 * a + 3},N={9 * b + 1},K={11 * c + 2},bias={bias},relu={relu}"
    elif d == 5:  # 1x1, stride 2, unpadded, even: the downsampling loop
        spec = (
            f"conv:N=2,H={2 + 2 * a},W={2 + 2 * a},C={5 * b},K={7 * c},R=1,S=1,stride=2,pad=0,bias={bias},relu={relu}"
        )
    else:  # few channels: first-layer pixel packing
        spec = f"conv:N=1,H={3 + 2 * a},W={3 + 2 * a},C={5 * b},K={7 * c},R=3,S=3,stride={1 + d % 2},pad=1"
        spec += f",bias={bias},relu={relu}"
    wl = TARGET.workload(spec)
    sks = [sk.as_dict() for sk in skeletons(TARGET.kb(RTL_FEATURES), wl.op, wl.shape)]
    fit = [i for i, sk in enumerate(sks) if (sk.get("loop") == "hw") == hw]
    m = random_mapping(TARGET, wl, fit[pick % len(fit)], weights, within=8.0, params=RTL_FEATURES) if fit else None
    MAPPED.append(m is not None)
    if m is None:
        return  # an infeasible skeleton for this workload, or an absurd corner
    inst = TARGET.instance(wl, RTL_FEATURES)
    hand, doc = both(TARGET.lower(inst, m), inst.cfg, inst.dram(), check=True)
    assert inst.verify(hand)
    assert np.array_equal(hand.mem, doc.mem), m.key()


# ---- random instruction streams: every operand field the effects read ----------------------------


@st.composite
def streams(draw: st.DrawFn) -> tuple[list[tuple], Dram]:
    """A data-heavy program without loops: random configs, mvins (scaled, shrunk, accumulated,
    broadcast, pixel-repeated, from address 0), preload/compute pairs (WS and OS, transposes,
    strides, GARBAGE, partial tiles, outputs to either memory) and mvouts (raw, scaled, ReLU'd)."""
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    dram = Dram()
    src8 = put(dram, rand_i8(rng, 64, 64))
    src32 = put(dram, rng.integers(-(2**31), 2**31, size=(16, 16), dtype=np.int32))
    dst = dram.alloc(16 * 64 * 4)
    scale = draw(st.sampled_from([ONE, f32_bits(0.5), f32_bits(0.37), f32_bits(3.0), f32_bits(2.0**-9)]))
    lines: list[tuple] = []
    for _ in range(draw(st.integers(1, 4))):  # fill some scratchpad and accumulator rows
        rows, cols = draw(st.integers(1, 16)), draw(st.integers(1, 64))
        reps = draw(st.sampled_from([1, 1, 2, 3])) if cols * 3 <= 16 else 1
        lines.append(("config_ld", 0, draw(st.sampled_from([0, 64, 65])), 0, 16, reps, scale))
        lines.append(("mvin", draw(st.sampled_from([src8, src8 + 3, 0])), draw(st.integers(4, 200)), cols, rows))
    for _ in range(draw(st.integers(0, 2))):
        shrunk = draw(st.integers(0, 1))
        rows, cols = draw(st.integers(1, 16)), draw(st.integers(1, 16))
        lines.append(("config_ld", 2, 64 if shrunk else draw(st.sampled_from([0, 64])), shrunk, 16, 1, scale))
        src = draw(st.sampled_from([src8, 0])) if shrunk else draw(st.sampled_from([src32, src32 + 2, 0]))
        lines.append(("mvin3", src, acc_addr(draw(st.integers(0, 40)), draw(st.booleans())), cols, rows))
    for _ in range(draw(st.integers(1, 3))):
        ws, a_t, b_t = draw(st.integers(0, 1)), draw(st.integers(0, 1)), draw(st.integers(0, 1))
        act, a_stride, c_stride, shift = (draw(st.integers(0, 1)), draw(st.integers(1, 3)), draw(st.integers(0, 2)),
                                          draw(st.integers(0, 12)))  # fmt: skip
        lines.append(("config_ex", ws, act, a_t, b_t, a_stride, c_stride, shift, ONE, 0))
        size = [draw(st.integers(1, 16)) for _ in range(8)]
        bd = draw(st.sampled_from([GARB, 0, 100]))
        to_acc = draw(st.booleans())
        c = acc_addr(draw(st.integers(0, 60)), draw(st.booleans())) if to_acc else draw(st.integers(300, 400))
        c = draw(st.sampled_from([c, c, GARB]))
        lines.append(("preload", bd, c, size[0], size[1], size[2], size[3]))
        lines.append(("compute_preloaded", draw(st.integers(0, 150)), draw(st.sampled_from([GARB, 50])), *size[4:]))
        if draw(st.booleans()):
            lines.append(("preload", GARB, c, size[0], size[1], size[2], size[3]))
            lines.append(
                ("compute_accumulated", draw(st.integers(0, 150)), draw(st.sampled_from([GARB, 60])), *size[4:])
            )
    for _ in range(draw(st.integers(1, 3))):
        full = draw(st.booleans())
        cols = draw(st.integers(1, 16 if full else 64))
        lines.append(
            ("config_st", draw(st.sampled_from([0, 256])), draw(st.integers(0, 1)), scale, 0, 0, 0, 0, 0, 0, 0, 0, 0)
        )
        local = draw(st.sampled_from([acc_addr(draw(st.integers(0, 16)), read_full=full), draw(st.integers(0, 300))]))
        lines.append(("mvout", dst + draw(st.integers(0, 64)), local, cols, draw(st.integers(1, 16))))
    return lines, dram


LEGAL: list[bool] = []


# derandomized: `test_zz_random_streams_were_mostly_legal` counts this test's draws, and fresh
# draws made it fail on luck (14 of 60 legal in one `make test` run)
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow], derandomize=True)
@given(case=streams())
def test_random_instruction_streams_match(case):
    """Checked: a program the doc's rules refuse is refused by both (the same checker);
    every other one leaves both DRAMs equal."""
    lines, dram = case
    try:
        hand, doc = both(prog(*lines), GemminiConfig.default(), dram, check=True)
    except IllegalProgram as e:
        with pytest.raises(IllegalProgram) as g:
            G.run(prog(*lines), GemminiConfig.default(), dram.copy(), check=True, sim=_sim())
        assert g.value.violations[0].rule == e.violations[0].rule
        LEGAL.append(False)
        return
    LEGAL.append(True)
    assert np.array_equal(hand.mem, doc.mem)


# ---- the functional tests' programs (pooling, pixel repeats, OS, transposes, loops) --------------

CASES = [
    ("test_block_mvin_and_block_mvout_round_trip", {}),
    ("test_block_stride_places_blocks_apart", {}),
    ("test_mvin_scale_rounds_and_saturates", {}),
    ("test_stride_zero_broadcasts_one_row_into_the_accumulator", {}),
    ("test_shrunk_int8_into_the_accumulator_is_scaled_and_accumulates", {}),
    ("test_mvin_from_address_zero_writes_zeros", {}),
    ("test_mvout_from_the_accumulator_scales_saturates_and_relus", {}),
    ("test_pooled_mvout_takes_window_maxima", {}),
    ("test_pixel_repeats_build_the_first_layer_im2col", {}),
    *[
        ("test_ws_preload_compute_with_transposes_and_partial_tiles", {"a_t": a, "b_t": b})
        for a, b in ((0, 0), (1, 0), (0, 1))
    ],
    ("test_ws_accumulated_reuses_weights_and_accumulates_with_strides", {}),
    ("test_c_stride_zero_accumulates_every_row_into_one", {}),
    ("test_ws_output_to_the_scratchpad_saturates_and_relus", {}),
    ("test_os_accumulates_in_the_pes_and_shifts_into_the_scratchpad", {}),
    ("test_loop_ws_matches_numpy", {"m": 40, "n": 50, "k": 70, "bias": True, "full_c": 0, "low_d": 0, "act": 1}),
    ("test_loop_ws_matches_numpy", {"m": 17, "n": 96, "k": 48, "bias": True, "full_c": 1, "low_d": 0, "act": 0}),
    ("test_loop_ws_matches_numpy", {"m": 48, "n": 64, "k": 16, "bias": True, "full_c": 0, "low_d": 1, "act": 1}),
    ("test_loop_ws_k_split_accumulates_across_calls", {}),
    ("test_loop_ws_resadd_adds_scaled_inputs", {}),
]


@pytest.mark.parametrize(("name", "kwargs"), CASES, ids=[f"{n}-{i}" for i, (n, _) in enumerate(CASES)])
def test_functional_programs_match(name, kwargs, monkeypatch, cfg):
    ran = []

    def run(p, cfg, dram, **kw):
        _, doc = both(p, cfg, dram, check=kw.get("check", False))
        kw.setdefault("preset", CURRENT)
        out = simulate(p, cfg, dram, timing=kw.pop("timing", False), **kw)  # the test's assertions check this one
        assert np.array_equal(dram.mem, doc.mem)
        ran.append(p)
        return out

    monkeypatch.setattr(TS, "run", run)
    getattr(TS, name)(cfg, **kwargs)
    assert ran


# ---- a wrong effect is caught --------------------------------------------------------------------

MUTATIONS = {
    # mvout's read-out truncates (rounds toward -inf) instead of rounding half to even
    "floor_readout": (
        "round = 1, sat = 1, relu = cfg.act) when cfg.pool_stride == 0",
        "round = 0, sat = 1, relu = cfg.act) when cfg.pool_stride == 0",
    ),
    # the accumulate bit of a compute's output is ignored
    "no_accumulate": ("acc_e[at] = add(acc_e[at], tc_e[i * dim + j])", "acc_e[at] = copy(tc_e[i * dim + j])"),
}


@pytest.mark.parametrize("mutation", sorted(MUTATIONS))
def test_a_wrong_effect_is_caught(mutation):
    old, new = MUTATIONS[mutation]
    text = DOC.read_text()
    assert old in text
    kb = compile_doc(parse_doc(text.replace(old, new), str(DOC)), "gemmini", {})
    cfg = GemminiConfig.default()
    rtl = get_preset(DEFAULT_PRESET).rtl
    wrong = GenericSim(kb, {G.MACRO: lambda: G.LoopHook(cfg, rtl)})
    inst, program = _default("odd_pad")
    hand, doc = inst.dram(), inst.dram()
    simulate(program, inst.cfg, hand, timing=False, check=False)
    G.run(program, inst.cfg, doc, check=False, sim=wrong)
    assert not np.array_equal(hand.mem, doc.mem)
    assert not inst.verify(doc)


# ---- effects never reach ASP ----------------------------------------------------------------------


def test_effects_leave_the_asp_unchanged():
    text = DOC.read_text()
    bare = without_effects(text)
    assert bare != text and "effect" not in bare.replace("effective", "").split("```isa", 1)[1].split("```")[0]
    full = compile_doc(parse_doc(text, str(DOC)), "gemmini", {})
    stripped = compile_doc(parse_doc(bare, str(DOC)), "gemmini", {})
    assert not any(i.effects or i.macro for i in stripped.instrs.values())
    data = {
        "config_st",
        "config_ex",
        "mvin",
        "mvin2",
        "mvin3",
        "mvout",
        "preload",
        "compute_preloaded",
        "compute_accumulated",
    }
    assert {n for n, i in full.instrs.items() if i.effects} == data
    assert sum(i.macro == G.MACRO for i in full.instrs.values()) == 13  # loop_ws, loop_conv_ws and their configs
    assert full.asp == stripped.asp


def test_zz_random_streams_were_mostly_legal():
    """The stream test checks data only on legal programs: most of them must be (run after it)."""
    if len(LEGAL) < 20:
        pytest.skip("the stream test did not run in this process")
    assert sum(LEGAL) >= len(LEGAL) // 3, f"{sum(LEGAL)} of {len(LEGAL)} random streams legal"


def test_zz_random_mappings_were_mostly_simulated():
    """The mapping test compares DRAMs only where a mapping was drawn: most draws must give one."""
    if len(MAPPED) < 8:
        pytest.skip("the mapping test did not run in this process")
    assert sum(MAPPED) >= len(MAPPED) // 2, f"{sum(MAPPED)} of {len(MAPPED)} draws gave a mapping"
