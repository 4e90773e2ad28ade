"""Lowering: legal mappings lower to legal programs that compute what NumPy computes, and the
library mapping lowers to exactly what gemmini.h's tiled_*_auto issue.

The differential tests draw small matmuls and convs and random legal mappings of the doc's
space (both loop modes, both dataflows, every residency/buffering/init/order knob), lower them
onto the instance's placement, run the simulator with the doc's rule checker on, and compare
the output bit for bit with the NumPy reference.
"""

from __future__ import annotations

import random
from collections import Counter

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from zomboss.targets.gemmini import TARGET, platform
from zomboss.targets.gemmini.instance import ConvBuffers, MatmulBuffers
from zomboss.targets.gemmini.mapping import exo_style, library_default
from zomboss.targets.gemmini.presets import CURRENT_LIBRARY, CURRENT_RTL
from zomboss.targets.gemmini.simulator import simulate
from zomboss.targets.gemmini.verify import run as run_on

from zomboss.expr import cdiv
from zomboss.mapping import IllegalMapping, KnobMapping, space
from zomboss.program import Instr
from zomboss.target import Mode
from zomboss.workload import Workload

from .library_oracle import ConvCall, MatmulCall, tiled_conv_auto, tiled_matmul_auto

# The differential tests cover the whole mapping space, pinned A/B halves under hardware loops,
# first-layer pixels and the OS dataflow included, which need an RTL with those features: the
# KB of the current RTL (`Rtl.kb_params`, gemmini.md §4 and §9) and its preset (the default
# preset's gemmini-dosa RTL refuses them, `platform.check_loop` / `check_command`).
PARAMS = CURRENT_RTL.kb_params
CURRENT = "firesim-f1-llc-current"
CFG = TARGET.config(PARAMS)
D = CFG.dim
KB = CFG.kb()
ORDERS = space(KB, "matmul").knob("order").values


def run(wl: Workload, m: KnobMapping) -> bool:
    """Lower, simulate functionally with every doc rule checked (no timing: only the data
    matters here), compare with NumPy."""
    inst = TARGET.instance(wl, PARAMS, seed=7)
    sim = simulate(
        TARGET.lower(inst, m),
        inst.cfg,
        inst.dram(),
        functional=True,
        timing=False,
        check=True,
        preset=CURRENT,
    )
    assert sim.dram is not None
    return inst.verify(sim.dram)


def mapping(wl: Workload, **values: object) -> KnobMapping:
    return space(KB, wl.op).mapping(values, wl.shape)


def legal(wl: Workload, m: KnobMapping) -> bool:
    return not space(KB, wl.op).violations(KB, m, wl.shape)


@st.composite
def stream_knobs(
    draw: st.DrawFn, ti: int, tj: int, tk_blocks: int, k_split: bool, bias: bool, *, os_ok: bool
) -> dict[str, object]:
    """Stream knobs within the doc's bounds for a block of ti x tj output tiles whose A rows
    span `tk_blocks` DIM blocks (acc_i/acc_j/mvout_blocks are 1 or the sub-tile's under a split
    reduction, block mvins at most as wide as the block)."""
    inner = draw(st.sampled_from(ORDERS))
    ws = not os_ok or draw(st.booleans())
    acc_i, acc_j = (1, 1) if k_split else (draw(st.integers(1, ti)), draw(st.integers(1, tj)))
    mbl = CFG.max_block_len
    return dict(
        order=draw(st.sampled_from(ORDERS)),
        reuse_a=draw(st.booleans()),
        reuse_b=draw(st.booleans()),
        buffers_a=draw(st.integers(1, 2)),
        buffers_b=draw(st.integers(1, 2)),
        acc_i=acc_i,
        acc_j=acc_j,
        acc_buffers=draw(st.integers(1, 4)),
        inner_order=inner,
        weight_reuse=ws and inner[-1] == "i" and draw(st.booleans()),
        mvin_blocks_a=draw(st.integers(1, min(mbl, tk_blocks))),
        mvin_blocks_b=draw(st.integers(1, min(mbl, tj))),
        mvout_blocks=draw(st.integers(1, min(mbl, tj if k_split else acc_j))),
        acc_init="bias" if bias else draw(st.sampled_from(("overwrite", "zero"))),
        hoist_config=draw(st.booleans()),
        prefetch=draw(st.booleans()),
        ld_states=draw(st.sampled_from((1, 3))),
        **({"dataflow": "ws" if ws else "os"} if os_ok else {}),
    )


@st.composite
def matmul_cases(draw: st.DrawFn) -> tuple[Workload, KnobMapping]:
    M, N, K = draw(st.integers(1, 70)), draw(st.integers(1, 70)), draw(st.integers(1, 90))  # noqa: N806
    bias, relu = draw(st.booleans()), draw(st.booleans())
    wl = TARGET.workload(f"matmul:M={M},N={N},K={K},bias={int(bias)},relu={int(relu)}")
    ip, jp, kp = cdiv(M, D), cdiv(N, D), cdiv(K, D)
    ti, tj, tk = draw(st.integers(1, ip)), draw(st.integers(1, jp)), draw(st.integers(1, kp))
    i0, j0, k0 = cdiv(ip, ti), cdiv(jp, tj), cdiv(kp, tk)
    if draw(st.booleans()):
        m = mapping(
            wl, loop="hw", tile_i=ti, tile_j=tj, tile_k=tk, order=draw(st.sampled_from(("ijk", "jik"))),
            reuse_a=i0 * k0 <= 2 and draw(st.booleans()), reuse_b=j0 * k0 <= 2 and draw(st.booleans()),
            acc_init="bias" if bias else "overwrite",
        )  # fmt: skip
    else:
        knobs = draw(stream_knobs(ti, tj, tk, k0 > 1, bias, os_ok=True))
        ragged = knobs["weight_reuse"] and M % D != 0 and draw(st.booleans())
        m = mapping(wl, loop="sw", tile_i=ti, tile_j=tj, tile_k=tk, ragged_first=ragged, **knobs)
    assume(legal(wl, m))
    return wl, m


@st.composite
def conv_cases(draw: st.DrawFn) -> tuple[Workload, KnobMapping]:
    r = draw(st.integers(1, 4))
    pad = draw(st.integers(0, r - 1))
    stride = draw(st.integers(1, 2))
    h, w = draw(st.integers(max(1, r - 2 * pad), 9)), draw(st.integers(max(1, r - 2 * pad), 9))
    n, c, k = draw(st.integers(1, 2)), draw(st.integers(1, 36)), draw(st.integers(1, 34))
    bias, relu = draw(st.booleans()), draw(st.booleans())
    wl = TARGET.workload(f"conv:N={n},H={h},W={w},C={c},K={k},R={r},S={r},stride={stride},pad={pad},"
                         f"bias={int(bias)},relu={int(relu)}")  # fmt: skip
    oh, ow = (h + 2 * pad - r) // stride + 1, (w + 2 * pad - r) // stride + 1
    tb, tr, tc = draw(st.integers(1, n)), draw(st.integers(1, oh)), draw(st.integers(1, ow))
    if draw(st.booleans()):
        m = mapping(
            wl, loop="hw", tile_b=tb, tile_orows=tr, tile_ocols=tc, tile_och=draw(st.integers(1, k)),
            tile_ich=draw(st.integers(1, c)), tile_krows=draw(st.integers(1, r)), tile_kcols=draw(st.integers(1, r)),
            reuse_a=False, reuse_b=False, acc_init="bias" if bias else "zero",
            downsample=draw(st.booleans()), first_layer=draw(st.booleans()),
        )  # fmt: skip
    else:
        och = draw(st.sampled_from(sorted({k, *range(D, k, D)})))
        ich = draw(st.sampled_from(sorted({c, *range(D, c, D)})))
        knobs = draw(stream_knobs(tb * tr * cdiv(tc, D), cdiv(och, D), cdiv(ich, D), ich < c, bias, os_ok=False))
        m = mapping(
            wl, loop="sw", tile_b=tb, tile_orows=tr, tile_ocols=tc, tile_och=och, tile_ich=ich, tile_krows=r,
            tile_kcols=r, **knobs,
        )  # fmt: skip
    assume(legal(wl, m))
    return wl, m


@settings(max_examples=70, deadline=None, suppress_health_check=[HealthCheck.filter_too_much, HealthCheck.too_slow])
@given(matmul_cases())
def test_random_matmul_mappings_match_numpy(case: tuple[Workload, KnobMapping]) -> None:
    wl, m = case
    assert run(wl, m), (wl.spec, m.to_json())


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.filter_too_much, HealthCheck.too_slow])
@given(conv_cases())
def test_random_conv_mappings_match_numpy(case: tuple[Workload, KnobMapping]) -> None:
    wl, m = case
    assert run(wl, m), (wl.spec, m.to_json())


@pytest.mark.slow  # the same draws, more of them (about a second each): `make test-slow`
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.filter_too_much, HealthCheck.too_slow])
@given(conv_cases())
def test_many_random_conv_mappings_match_numpy(case: tuple[Workload, KnobMapping]) -> None:
    wl, m = case
    assert run(wl, m), (wl.spec, m.to_json())


def test_a_kernel_tile_inside_the_padding_is_all_padding() -> None:
    """A 1x1 kernel tile of a 3x3 kernel whose window lies wholly in a padding of 2: the loop's
    pads are clamped to the window (CI found the mvin overrunning its block)."""
    wl = TARGET.workload("conv:N=1,H=1,W=1,C=17,K=1,R=3,S=3,stride=1,pad=2,bias=0,relu=0")
    m = mapping(
        wl, loop="hw", tile_b=1, tile_orows=1, tile_ocols=1, tile_och=1, tile_ich=17, tile_krows=1,
        tile_kcols=1, reuse_a=False, reuse_b=False, acc_init="zero",
    )  # fmt: skip
    assert legal(wl, m) and run(wl, m)


# ---------------------------------------------------------------------------- the library oracle


def _oracle(wl: Workload, lib=None) -> list[Instr]:
    """gemmini.h's tiled_matmul_auto / tiled_conv_auto, ported straight, on the instance's placement:
    the dev revision (`library_oracle`), or with `lib=platform` the dosa revision the default
    preset's platform ran (`platform.py`)."""
    inst = TARGET.instance(wl, PARAMS)
    bufs = inst.buffers
    relu, scale = wl["relu"], inst.scale
    mm_call, conv_call, mm, conv = (
        (MatmulCall, ConvCall, tiled_matmul_auto, tiled_conv_auto)
        if lib is None
        else (lib.MatmulCall, lib.ConvCall, lib.tiled_matmul_auto, lib.tiled_conv_auto)
    )
    if isinstance(bufs, MatmulBuffers):
        M, N, K = wl["M"], wl["N"], wl["K"]  # noqa: N806
        call = mm_call(M, N, K, bufs.a, bufs.b, bufs.bias, bufs.c, K, N, N, N, act=relu, scale=scale,
                       repeating_bias=True)  # fmt: skip
        return mm(call, CFG)
    assert isinstance(bufs, ConvBuffers)
    cc = conv_call(wl["N"], wl["H"], wl["W"], wl["C"], wl["K"], wl["R"], wl["stride"], wl["pad"], bufs.input,
                   bufs.weights, bufs.bias, bufs.output, act=relu, scale=scale)  # fmt: skip
    return conv(cc, CFG)


def _random_specs(n: int) -> list[str]:
    rng = random.Random(11)
    out = []
    for _ in range(n):
        flags = f"bias={rng.randint(0, 1)},relu={rng.randint(0, 1)}"
        if rng.random() < 0.5:
            out.append(f"matmul:M={rng.randint(1, 900)},N={rng.randint(1, 900)},K={rng.randint(1, 1500)},{flags}")
        else:
            r = rng.choice((1, 3, 5, 7))
            pad, stride = rng.randint(0, r - 1), rng.randint(1, 2)
            hw = rng.randint(max(r, 4), 40)
            c, k = rng.randint(1, 300), rng.randint(1, 300)
            out.append(
                f"conv:N={rng.randint(1, 3)},H={hw},W={hw},C={c},K={k},R={r},S={r},stride={stride},pad={pad},{flags}"
            )
    return out


ORACLE_CASES = [w.id for w in TARGET.suite()] + ["conv:N=2,H=14,W=14,C=64,K=128,R=1,S=1,stride=2,pad=0"]


@pytest.mark.parametrize("spec", ORACLE_CASES + _random_specs(16))
def test_library_mapping_lowers_to_the_library_program(spec: str) -> None:
    """lower(library_default) of the dev library revision: instruction for instruction what the
    straight port of gemmini.h (dev) issues, on every suite instance, a downsampling conv and
    random shapes (pinned halves, first-layer pixels and downsampling included)."""
    wl = TARGET.workload(spec)
    program = TARGET.lower(TARGET.instance(wl, PARAMS), library_default(wl, CFG, CURRENT_LIBRARY))
    assert list(program.instrs) == _oracle(wl)


@pytest.mark.parametrize("spec", ORACLE_CASES + _random_specs(16))
def test_candidate0_lowers_to_the_dosa_library_program(spec: str) -> None:
    """Candidate-0 (the default preset's library, gemmini-rocc-tests `dosa`) is instruction for
    instruction the dosa port of `platform.py`: no pinned halves, no first-layer pixels, no
    downsampling, on the same cases."""
    wl = TARGET.workload(spec)
    program = TARGET.lower(TARGET.instance(wl, {}), TARGET.reference_mappings(wl, {})["library"])
    assert list(program.instrs) == _oracle(wl, platform)


# ---------------------------------------------------------------------------- refusals and stream shapes


def test_illegal_mapping_is_refused_with_the_rule() -> None:
    wl = TARGET.workload("mm512")
    good = exo_style(wl, CFG)
    m = mapping(wl, **{**good.as_dict(), "buffers_a": 2})  # the resident tiles fill the scratchpad once
    with pytest.raises(IllegalMapping) as e:
        TARGET.lower(TARGET.instance(wl, {}), m)
    assert [v.rule for v in e.value.violations] == ["map.spad_fit"]
    assert "gemmini.md:" in str(e.value) and "buffers_a=2" in str(e.value)


def test_exo_stream_shape_mm512() -> None:
    """Reference §8.1: configs once, three mvin states, 64-column mvins, zero-mvin init,
    one mvout per 16x16 tile, no hardware loops, A moved in once and B twice."""
    wl = TARGET.workload("mm512")
    prog = TARGET.lower(TARGET.instance(wl, {}), exo_style(wl, CFG))
    ops = Counter(i.op for i in prog.instrs)
    assert ops["config_ex"] == 1 and ops["config_st"] == 1 and ops["config_ld"] == 3
    assert not any(op.startswith("loop") for op in ops)
    assert ops["mvout"] == (512 // D) ** 2 and all(i.args[2] == D for i in prog.instrs if i.op == "mvout")
    assert ops["mvin"] == (512 // D) ** 2 and all(i.args[0] == 0 for i in prog.instrs if i.op == "mvin")
    assert all(i.args[2] == 4 * D for i in prog.instrs if i.op in ("mvin2", "mvin3"))
    assert ops["mvin2"] * 4 * D * D == 512 * 512  # every A element once
    assert ops["mvin3"] * 4 * D * D == 2 * 512 * 512  # every B element twice
    assert ops["compute_preloaded"] == (512 // D) ** 3 and ops["compute_accumulated"] == 0


def test_stream_knobs_change_the_stream() -> None:
    wl = TARGET.workload("matmul:M=64,N=48,K=64")  # A and B rows have different strides
    inst = TARGET.instance(wl, {})
    base = dict(loop="sw", tile_i=2, tile_j=2, tile_k=4, acc_i=2, acc_j=2, inner_order="kji", acc_init="zero",
                dataflow="ws", order="ijk", reuse_a="true", reuse_b="true", buffers_a=2, buffers_b=2,
                acc_buffers=2, weight_reuse="false", mvin_blocks_a=4, mvin_blocks_b=2, mvout_blocks=1,
                hoist_config="true", ld_states=3, prefetch="false")  # fmt: skip

    def ops(**kw: object) -> Counter:
        return Counter(i.op for i in TARGET.lower(inst, mapping(wl, **{**base, **kw})).instrs)

    assert ops(hoist_config="false")["config_ex"] == 4  # one per block
    one_state = ops(ld_states=1)
    assert one_state["mvin2"] == one_state["mvin3"] == 0 and one_state["config_ld"] > 3
    reuse = ops(weight_reuse="true")
    assert reuse["compute_accumulated"] == reuse["compute_preloaded"] > 0  # 2 i tiles share each weight tile
    assert ops(mvin_blocks_a=1)["mvin2"] == 4 * ops()["mvin2"]
    assert ops(prefetch="true") == ops()  # the same instructions, loads issued earlier


def test_prefetch_hoists_loads_and_hides_their_latency() -> None:
    """Prefetched mvins move up to 4 x rs_ex instructions ahead of their first use, never above
    a config or an earlier load, and never above a compute that reads the buffer they refill;
    the kernel still equals NumPy and the exposed load time shrinks."""
    wl = TARGET.workload("odd_pad")
    inst = TARGET.instance(wl, PARAMS)  # (OS: the current RTL's mapping space and preset)
    knobs = dict(loop="sw", tile_i=5, tile_j=13, tile_k=19, dataflow="os", order="kij", reuse_a="true",
                 reuse_b="true", buffers_a=1, buffers_b=1, acc_i=4, acc_j=12, acc_buffers=1, inner_order="kji",
                 weight_reuse="false", mvin_blocks_a=2, mvin_blocks_b=3, mvout_blocks=4, acc_init="overwrite",
                 hoist_config="true", ld_states=3)  # fmt: skip
    jit, pre = (mapping(wl, **knobs, prefetch=p) for p in ("false", "true"))
    a, b = TARGET.lower(inst, jit).instrs, TARGET.lower(inst, pre).instrs
    assert sorted(map(repr, a)) == sorted(map(repr, b)) and list(a) != list(b)
    loads = [n for n, i in enumerate(b) if i.op.startswith("mvin")]
    assert [b[n] for n in loads] == [i for i in a if i.op.startswith("mvin")]  # loads keep their order
    moved = [n for n, i in enumerate(a) if i.op.startswith("mvin")]
    assert max(x - y for x, y in zip(moved, loads, strict=True)) <= 4 * inst.cfg.rs_ex
    e_jit, e_pre = (run_on(inst, m, Mode.VERIFIED, preset=CURRENT) for m in (jit, pre))
    assert e_jit.verified and e_pre.verified
    assert e_pre.sim.cycles < 0.8 * e_jit.sim.cycles
    assert e_pre.sim.breakdown["memory"] < 0.5 * e_jit.sim.breakdown["memory"]


def test_ragged_first_feeds_the_short_row_tile_beside_garbage_preloads() -> None:
    """odd_pad's last row tile has 4 of 16 rows. Fed last in a weight run, its compute shares
    the array with the next run's weight preload and holds it DIM cycles; fed first, it shares
    it with a GARBAGE preload and takes max(4, 4) cycles (ExecuteController.scala `total_rows`:
    maxOf(rows_a, rows_b, 4) when the concurrent preload's D is garbage). As many instructions
    of each kind, the same values; 12 array cycles fewer per (column, reduction) tile pair."""
    wl = TARGET.workload("odd_pad")
    inst = TARGET.instance(wl, {})
    knobs = dict(loop="sw", tile_i=7, tile_j=13, tile_k=19, dataflow="ws", order="ijk", reuse_a="true",
                 reuse_b="true", buffers_a=2, buffers_b=2, acc_i=7, acc_j=4, acc_buffers=2, inner_order="kji",
                 weight_reuse="true", mvin_blocks_a=4, mvin_blocks_b=4, mvout_blocks=1, acc_init="overwrite",
                 hoist_config="true", ld_states=3, prefetch="true")  # fmt: skip
    last, first = (mapping(wl, **knobs, ragged_first=r) for r in ("false", "true"))
    a, b = TARGET.lower(inst, last).instrs, TARGET.lower(inst, first).instrs
    assert Counter(i.op for i in a) == Counter(i.op for i in b) and list(a) != list(b)
    e_last, e_first = (TARGET.evaluate(inst, m, Mode.VERIFIED) for m in (last, first))
    assert e_last.verified and e_first.verified
    pairs = 13 * 19  # (j, k) tile pairs, one weight run of all 7 row tiles each
    assert e_last.breakdown["compute"] - e_first.breakdown["compute"] >= (D - 4) * pairs * 0.9
    # the doc only offers the knob where a ragged row tile exists
    assert mapping(TARGET.workload("mm256"), **knobs, ragged_first="true") == mapping(
        TARGET.workload("mm256"), **knobs, ragged_first="false"
    )


@pytest.fixture(scope="module")
def mm512() -> tuple:
    wl = TARGET.workload("mm512")
    return TARGET.instance(wl, {}), TARGET.reference_mappings(wl, {})


def test_exo_style_mm512_is_verified(mm512: tuple) -> None:
    inst, refs = mm512
    assert TARGET.evaluate(inst, refs["exo"], Mode.VERIFIED).verified is True


@pytest.mark.xfail(
    strict=True,
    reason="firesim-f1-llc (59-cycle reads, 7.8 B/cycle): the library runs mm512 in 536k cycles, 98 % of the "
    "array bound, and the Exo schedule in 589k. The array runs at full rate; in the first pass over each "
    "(A, B) block the Exo stream issues each 1 KB block mvin just before the four pairs (64 array cycles) "
    "that use it, and the 16-entry ex queue lets the CPU run only ~8 pairs ahead, so that pass waits on the "
    "8 B/cycle memory (~16k cycles per B block, 4 blocks), while loop_ws prefetches a whole loop ahead. "
    "Remove this mark when the model or the lowering changes.",
)
def test_exo_style_mm512_beats_the_library_in_the_cycle_model(mm512: tuple) -> None:
    """Reference §8.2: expert (Exo) code runs ~4x faster than the library on the GEMM set."""
    inst, refs = mm512
    lib, exo = (TARGET.evaluate(inst, refs[k], Mode.TIMING) for k in ("library", "exo"))
    assert exo.cycles < lib.cycles, (exo.cycles, lib.cycles)


@pytest.mark.parametrize(
    "spec",
    [
        "conv:N=1,H=20,W=19,C=3,K=20,R=7,S=7,stride=2,pad=3,relu=1",  # conv1-like, first layer
        "conv:N=2,H=11,W=13,C=24,K=18,R=5,S=5,stride=1,pad=2",
        "conv:N=1,H=12,W=12,C=40,K=36,R=1,S=1,stride=2,pad=0,bias=0",  # 1x1 downsample
    ],
)
def test_conv_kernel_sizes(spec: str) -> None:
    wl = TARGET.workload(spec)
    for m in TARGET.reference_mappings(wl, {}).values():
        assert run(wl, m)


def test_a_stream_too_large_to_hold_is_refused_before_it_is_lowered():
    """An unrolled stream of the Llama-3-70B FFN issues 512 * 1,792 * 512 computes: lowering it
    would take hours, so it is refused at once; its hardware-loop kernel still lowers."""
    import time

    from zomboss.targets.gemmini.lowering import MAX_STREAM_COMMANDS, stream_computes

    from zomboss.util import LimitError

    wl = TARGET.workload("matmul:M=8192,N=28672,K=8192")
    cfg = TARGET.config({})
    assert stream_computes(wl, cfg) == 512 * 1792 * 512 > MAX_STREAM_COMMANDS
    exo = TARGET.reference_mappings(wl, {})["exo"]
    assert exo["loop"] == "sw"
    t0 = time.perf_counter()
    with pytest.raises(LimitError, match="only hardware loops"):
        TARGET.lower(TARGET.instance(wl, {}), exo)
    assert time.perf_counter() - t0 < 5
    small = TARGET.workload("mm512")
    assert stream_computes(small, cfg) == 32**3  # the suite's streams are far below the limit
