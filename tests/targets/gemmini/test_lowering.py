"""Lowering: legal mappings lower to legal programs that compute what NumPy computes.

The differential tests draw small matmuls and convs and random legal mappings (both loop
modes, both dataflows, every residency/buffering/init/order knob), lower them onto
`default.build_default`'s data, run the simulator with the doc's rule checker on, and
compare the output bit for bit with the NumPy reference.
"""

from __future__ import annotations

import dataclasses
from collections import Counter

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from zomboss.targets.gemmini.config import GemminiConfig
from zomboss.targets.gemmini.default import ConvCall, MatmulCall, build_default, tiled_conv_auto, tiled_matmul_auto
from zomboss.targets.gemmini.kernels import buffers, evaluate, program_for
from zomboss.targets.gemmini.lowering import ConvBuffers, MatmulBuffers, lower
from zomboss.targets.gemmini.mapping import ORDERS, ConvMapping, MatmulMapping, exo_style, library_default
from zomboss.targets.gemmini.mapping_legality import IllegalMapping, mapping_violations
from zomboss.targets.gemmini.numerics import f32_bits
from zomboss.targets.gemmini.simulator import simulate
from zomboss.targets.gemmini.suite import SUITE, conv_out_dims, workload

from zomboss.workload import Workload

CFG = GemminiConfig()
D = CFG.dim


def cdiv(a: int, b: int) -> int:
    return -(-a // b)


def run(wl: Workload, m: MatmulMapping | ConvMapping) -> bool:
    """Lower, simulate functionally with every doc rule checked, compare with NumPy."""
    kernel = build_default(wl, CFG, seed=7)
    program = program_for(wl, m, CFG, kernel)
    sim = simulate(program, CFG, kernel.dram, functional=True, timing=False, check=True)
    assert sim.dram is not None
    return kernel.verify(sim.dram)


@st.composite
def stream_knobs(draw: st.DrawFn, ti: int, tj: int, bias: bool, *, os_ok: bool) -> dict:
    inner = draw(st.sampled_from(ORDERS))
    ws = not os_ok or draw(st.booleans())
    return dict(
        order=draw(st.sampled_from(ORDERS)),
        reuse_a=draw(st.booleans()),
        reuse_b=draw(st.booleans()),
        buffers_a=draw(st.integers(1, 2)),
        buffers_b=draw(st.integers(1, 2)),
        acc_i=draw(st.integers(1, ti)),
        acc_j=draw(st.integers(1, tj)),
        acc_buffers=draw(st.integers(1, 4)),
        inner_order=inner,
        weight_reuse=ws and inner[-1] == "i" and draw(st.booleans()),
        mvin_blocks_a=draw(st.integers(1, 4)),
        mvin_blocks_b=draw(st.integers(1, 4)),
        mvout_blocks=draw(st.integers(1, 4)),
        acc_init="bias" if bias else draw(st.sampled_from(("overwrite", "zero"))),
        hoist_config=draw(st.booleans()),
        ld_states=draw(st.sampled_from((1, 3))),
        **({"dataflow": "ws" if ws else "os"} if os_ok else {}),
    )


@st.composite
def matmul_cases(draw: st.DrawFn) -> tuple[Workload, MatmulMapping]:
    M, N, K = draw(st.integers(1, 70)), draw(st.integers(1, 70)), draw(st.integers(1, 90))  # noqa: N806
    bias, relu = draw(st.booleans()), draw(st.booleans())
    wl = workload(f"matmul:M={M},N={N},K={K},bias={int(bias)},relu={int(relu)}")
    ip, jp, kp = cdiv(M, D), cdiv(N, D), cdiv(K, D)
    ti, tj, tk = draw(st.integers(1, ip)), draw(st.integers(1, jp)), draw(st.integers(1, kp))
    if draw(st.booleans()):
        order = draw(st.sampled_from(("ijk", "jik") if cdiv(kp, tk) > 1 else ORDERS))
        i0, j0, k0 = cdiv(ip, ti), cdiv(jp, tj), cdiv(kp, tk)
        m = MatmulMapping(
            loop="hw", tile_i=ti, tile_j=tj, tile_k=tk, order=order,
            reuse_a=i0 * k0 <= 2 and draw(st.booleans()), reuse_b=j0 * k0 <= 2 and draw(st.booleans()),
            acc_init="bias" if bias else "overwrite",
        )  # fmt: skip
    else:
        m = MatmulMapping(loop="sw", tile_i=ti, tile_j=tj, tile_k=tk, **draw(stream_knobs(ti, tj, bias, os_ok=True)))
    assume(not mapping_violations(m, wl, CFG))
    return wl, m


@st.composite
def conv_cases(draw: st.DrawFn) -> tuple[Workload, ConvMapping]:
    r = draw(st.integers(1, 4))
    pad = draw(st.integers(0, r - 1))
    stride = draw(st.integers(1, 2))
    h, w = draw(st.integers(max(1, r - 2 * pad), 9)), draw(st.integers(max(1, r - 2 * pad), 9))
    n, c, k = draw(st.integers(1, 2)), draw(st.integers(1, 36)), draw(st.integers(1, 34))
    bias, relu = draw(st.booleans()), draw(st.booleans())
    wl = workload(f"conv:N={n},H={h},W={w},C={c},K={k},R={r},S={r},stride={stride},pad={pad},"
                  f"bias={int(bias)},relu={int(relu)}")  # fmt: skip
    oh, ow = conv_out_dims(wl)
    tb, tr, tc = draw(st.integers(1, n)), draw(st.integers(1, oh)), draw(st.integers(1, ow))
    if draw(st.booleans()):
        m = ConvMapping(
            loop="hw", tile_b=tb, tile_orows=tr, tile_ocols=tc, tile_och=draw(st.integers(1, k)),
            tile_ich=draw(st.integers(1, c)), tile_krows=draw(st.integers(1, r)), tile_kcols=draw(st.integers(1, r)),
            reuse_a=False, reuse_b=False, acc_init="bias" if bias else "zero",
        )  # fmt: skip
    else:
        och = draw(st.sampled_from(sorted({k, *range(D, k, D)})))
        ich = draw(st.sampled_from(sorted({c, *range(D, c, D)})))
        n_i = tb * tr * cdiv(tc, D)
        m = ConvMapping(
            loop="sw", tile_b=tb, tile_orows=tr, tile_ocols=tc, tile_och=och, tile_ich=ich, tile_krows=r, tile_kcols=r,
            **draw(stream_knobs(n_i, cdiv(och, D), bias, os_ok=False)),
        )  # fmt: skip
    assume(not mapping_violations(m, wl, CFG))
    return wl, m


@settings(max_examples=70, deadline=None, suppress_health_check=[HealthCheck.filter_too_much, HealthCheck.too_slow])
@given(matmul_cases())
def test_random_matmul_mappings_match_numpy(case: tuple[Workload, MatmulMapping]) -> None:
    wl, m = case
    assert run(wl, m), (wl.spec, m.to_json())


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.filter_too_much, HealthCheck.too_slow])
@given(conv_cases())
def test_random_conv_mappings_match_numpy(case: tuple[Workload, ConvMapping]) -> None:
    wl, m = case
    assert run(wl, m), (wl.spec, m.to_json())


def test_library_default_lowers_to_the_library_program() -> None:
    """Two implementations of tiled_*_auto agree: default.py's and the hw lowering of the
    library mapping, instruction for instruction, on every suite instance."""
    a, b, c, d, scale = 0x1000, 0x200000, 0x900000, 0x880000, 2.0**-9
    downsample = workload("conv:N=2,H=14,W=14,C=64,K=128,R=1,S=1,stride=2,pad=0")
    for wl in (*SUITE, downsample):
        if wl.op == "matmul":
            M, N, K = wl["M"], wl["N"], wl["K"]  # noqa: N806
            bias = d if wl["bias"] else 0
            call = MatmulCall(M, N, K, a, b, bias, c, K, N, N, N, act=wl["relu"], scale=scale, repeating_bias=True)
            want = tiled_matmul_auto(call, CFG)
            bufs: MatmulBuffers | ConvBuffers = MatmulBuffers(a, b, c, bias, f32_bits(scale))
        else:
            bias = d if wl["bias"] else 0
            conv = ConvCall(wl["N"], wl["H"], wl["W"], wl["C"], wl["K"], wl["R"], wl["stride"], wl["pad"], a, b, bias,
                            c, act=wl["relu"], scale=scale)  # fmt: skip
            want = tiled_conv_auto(conv, CFG)
            bufs = ConvBuffers(a, b, c, bias, f32_bits(scale))
        assert list(lower(library_default(wl, CFG), wl, bufs, CFG).instrs) == want, wl.id


def test_illegal_mapping_is_refused_with_the_rule() -> None:
    wl = workload("mm512")
    kernel = build_default(wl, CFG)
    m = MatmulMapping(tile_i=16, tile_j=16, tile_k=32, buffers_a=2, buffers_b=1)
    try:
        lower(m, wl, buffers(wl, kernel), CFG)
    except IllegalMapping as e:
        assert [v.rule for v in e.violations] == ["map.spad_fit"]
    else:
        raise AssertionError("an oversized mapping was lowered")


def test_exo_stream_shape_mm512() -> None:
    """Reference §8.1: configs once, three mvin states, 64-column mvins, zero-mvin init,
    one mvout per 16x16 tile, no hardware loops, A moved in once and B twice."""
    wl = workload("mm512")
    kernel = build_default(wl, CFG)
    prog = program_for(wl, exo_style(wl, CFG), CFG, kernel)
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
    wl = workload("matmul:M=64,N=48,K=64")  # A and B rows have different strides
    kernel = build_default(wl, CFG)
    base = MatmulMapping(tile_i=2, tile_j=2, tile_k=4, acc_i=2, acc_j=2, inner_order="kji", acc_init="zero")

    def ops(**kw: object) -> Counter:
        return Counter(i.op for i in program_for(wl, dataclasses.replace(base, **kw), CFG, kernel).instrs)

    assert ops(hoist_config=False)["config_ex"] == 4  # one per block
    one_state = ops(ld_states=1)
    assert one_state["mvin2"] == one_state["mvin3"] == 0 and one_state["config_ld"] > 3
    reuse = ops(weight_reuse=True)
    assert reuse["compute_accumulated"] == reuse["compute_preloaded"] > 0  # 2 i tiles share each weight tile
    assert ops(mvin_blocks_a=1)["mvin2"] == 4 * ops()["mvin2"]


@pytest.fixture(scope="module")
def mm512_runs() -> tuple:
    wl = workload("mm512")
    return evaluate(wl, None, CFG), evaluate(wl, exo_style(wl, CFG), CFG)


def test_exo_style_mm512_is_verified(mm512_runs: tuple) -> None:
    lib, exo = mm512_runs
    assert lib.verified is True and exo.verified is True


@pytest.mark.xfail(
    strict=True,
    reason="firesim-f1-llc (70-cycle reads, 8 B/cycle): the library runs mm512 in 541k cycles, 97 % of the "
    "array bound, and the Exo schedule in 589k. The array runs at full rate; in the first pass over each "
    "(A, B) block the Exo stream issues each 1 KB block mvin just before the four pairs (64 array cycles) "
    "that use it, and the 16-entry ex queue lets the CPU run only ~8 pairs ahead, so that pass waits on the "
    "8 B/cycle memory (~16k cycles per B block, 4 blocks), while loop_ws prefetches a whole loop ahead. "
    "Remove this mark when the model or the lowering changes.",
)
def test_exo_style_mm512_beats_the_library_in_the_cycle_model(mm512_runs: tuple) -> None:
    """Reference §8.2: expert (Exo) code runs ~4x faster than the library on the GEMM set."""
    lib, exo = mm512_runs
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
    wl = workload(spec)
    assert run(wl, exo_style(wl, CFG))
    assert run(wl, library_default(wl, CFG))
