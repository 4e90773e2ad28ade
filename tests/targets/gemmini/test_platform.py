"""Platform presets name the library and RTL they model; Candidate-0 and the fit simulate what the
platform ran (`presets.Library`, `presets.Rtl`, `platform.py`, gemmini.md `loop_spad_ids`,
`first_layer_opts`, `os_dataflow`). Every RTL feature is gated: the KB of the preset's RTL
refuses a mapping using one it lacks, the simulator refuses such a program on that preset, and
the current RTL's preset runs it.

Sources: ucb-bar/gemmini-rocc-tests `dosa` 959b23f7 include/gemmini.h (gemmini_loop_ws without
spad ids; tiled_matmul_outer / tiled_conv with a loop permutation) and charleshong3/gemmini-dosa
67ca2f9e src/main/scala/gemmini/LoopMatmul.scala (LdA line 89, LdB line 197: loads issued
unconditionally), against ucb-bar/gemmini 8c3f9923 LoopMatmul.scala lines 93 and 208
(`&& req.dram_addr =/= 0.U`). Feature flags: gemmini-dosa GemminiConfigs.scala line 90
(`has_first_layer_optimizations: Boolean = false`) and Configs.scala line 174 (dummyConfig
`dataflow = Dataflow.WS`), against ucb-bar/gemmini GemminiConfigs.scala line 93 (`= true`) and
Configs.scala line 38 (defaultConfig `dataflow = Dataflow.BOTH`).
"""

from __future__ import annotations

import pytest
from zomboss.targets.gemmini import TARGET, platform
from zomboss.targets.gemmini.config import GemminiConfig, machine_kb
from zomboss.targets.gemmini.instance import ConvBuffers, MatmulBuffers
from zomboss.targets.gemmini.lowering import lower
from zomboss.targets.gemmini.mapping import library_default
from zomboss.targets.gemmini.presets import (
    CURRENT_LIBRARY,
    DEFAULT_PRESET,
    DOSA_LIBRARY,
    DOSA_RTL,
    PRESETS,
    UnknownPreset,
    get_preset,
    preset_for,
)
from zomboss.targets.gemmini.simulator import simulate
from zomboss.targets.gemmini.verify import run

from zomboss.mapping import IllegalMapping, space
from zomboss.program import Instr, Program
from zomboss.target import Mode
from zomboss.workload import Workload

from . import library_oracle as dev
from .conftest import CURRENT, RTL_FEATURES, prog


@pytest.fixture
def cur_cfg() -> GemminiConfig:
    return TARGET.config(RTL_FEATURES)


def _dosa_matmul(m: int, n: int, k: int, cfg: GemminiConfig) -> list[Instr]:
    call = platform.MatmulCall(m, n, k, 0x1000, 0x400000, 0, 0x900000, k, n, n, n, repeating_bias=True)
    return platform.tiled_matmul_auto(call, cfg)


def test_presets_name_their_library_and_rtl():
    p = get_preset(DEFAULT_PRESET)
    assert p.library == DOSA_LIBRARY and p.rtl == DOSA_RTL
    assert not p.library.spad_reuse and not p.rtl.skip_zero_loads and not p.rtl.loop_spad_ids
    assert not p.rtl.first_layer_opts and not p.rtl.os_dataflow  # dummy16Config: nofirstlayer, WS only
    cur = get_preset(CURRENT)
    assert cur.library == CURRENT_LIBRARY and cur.rtl.loop_spad_ids and cur.rtl.skip_zero_loads
    assert cur.rtl.first_layer_opts and cur.rtl.os_dataflow  # named explicitly: defaultConfig has both
    assert cur.rtl.kb_params == {"loop_spad_ids": 1, "first_layer_opts": 1, "os_dataflow": 1}
    assert "EXTRAPOLATED" in cur.doc
    for name in ("rd_latency", "rd_bytes_per_cycle", "wr_latency", "kernel_overhead", "cpu_cpi", "dram_row_miss"):
        assert getattr(cur, name) == getattr(p, name)  # same memory constants
    assert all(q.library.name and q.rtl.name for q in PRESETS.values())


def test_the_doc_default_is_the_default_presets_rtl(cfg):
    """gemmini.md's feature flags (`loop_spad_ids`, `first_layer_opts`, `os_dataflow`: all 0)
    describe the RTL the default preset models, and every preset's library uses only features
    its RTL has."""
    rtl = get_preset(DEFAULT_PRESET).rtl
    assert {k: cfg.kb().params[k] for k in rtl.kb_params} == rtl.kb_params
    for p in PRESETS.values():
        assert p.library.first_layer <= p.rtl.first_layer_opts and p.library.spad_reuse <= p.rtl.loop_spad_ids


def _loops(instrs):
    return [i.args for i in instrs if i.op == "loop_ws"], [i.args for i in instrs if i.op == "loop_ws_addrs_ab"]


def test_the_dosa_library_passes_a_and_b_to_every_loop_ws(cfg):
    """gemmini.h (dosa): `gemmini_loop_ws(I, J, K, pad_I, pad_J, pad_K, A, B, D, C, ...)` has no spad
    ids and tiled_matmul_outer never passes A = NULL; dev's tiled_matmul_auto pins A here."""
    runs, addrs = _loops(_dosa_matmul(128, 768, 768, cfg))
    assert len(runs) == 2 * 10 and all(r[4] == r[5] == 0 for r in runs)
    assert all(a != 0 and b != 0 for a, b in addrs)
    call = dev.MatmulCall(128, 768, 768, 0x1000, 0x400000, 0, 0x900000, 768, 768, 768, 768, repeating_bias=True)
    dev_runs, dev_addrs = _loops(dev.tiled_matmul_auto(call, cfg))
    assert {r[4] for r in dev_runs} == {1, 2} and sum(a == 0 for a, _ in dev_addrs) == 18


def test_the_dosa_platform_reads_a_again_for_every_loop(cfg, cur_cfg):
    """128 x 768 -> 768 (reference A.1): the dosa library on the gemmini-dosa RTL reads A for all
    20 loop_ws (2.16 MB); the dev library pins it and reads 1.28 MB."""
    wl = TARGET.workload("matmul:M=128,N=768,K=768")
    dosa = run(TARGET.instance(wl, {}), TARGET.reference_mappings(wl, {})["library"], Mode.TIMING)
    cur_m = library_default(wl, cur_cfg, CURRENT_LIBRARY)
    cur = run(TARGET.instance(wl, RTL_FEATURES), cur_m, Mode.TIMING, preset=CURRENT)
    a, b = 128 * 768, 768 * 768
    assert dosa.sim.dram_read_bytes == 10 * a + 2 * b
    assert cur.sim.dram_read_bytes == a + 2 * b


def test_pinned_halves_are_refused_on_an_rtl_without_spad_ids(cur_cfg):
    """charleshong3/gemmini-dosa LoopMatmul.scala decodes no spad ids and loads A unconditionally
    (line 89): a program relying on either would run differently, so the simulator refuses it."""
    wl = TARGET.workload("matmul:M=64,N=1024,K=1024")  # tiled_matmul_auto pins A (a_reuse) in the dev library
    inst = TARGET.instance(wl, RTL_FEATURES)
    prog = lower(library_default(wl, cur_cfg, CURRENT_LIBRARY), wl, inst.buffers, cur_cfg)
    assert any(i.op == "loop_ws" and i.args[4] for i in prog.instrs)
    with pytest.raises(platform.UnsupportedOnRtl, match="spad ids"):
        simulate(prog, cur_cfg, None, functional=False, check=False, preset=DEFAULT_PRESET)
    assert simulate(prog, cur_cfg, None, functional=False, check=False, preset=CURRENT).cycles > 0
    unpinned = Program(
        "gemmini",
        tuple(i if i.op != "loop_ws" else Instr(i.op, (*i.args[:4], 0, 0, *i.args[6:])) for i in prog.instrs),
    )
    with pytest.raises(platform.UnsupportedOnRtl, match="unconditionally"):
        simulate(unpinned, cur_cfg, None, functional=False, check=False, preset=DEFAULT_PRESET)


def test_the_kb_refuses_pinned_hw_halves_without_spad_ids(cfg, cur_cfg):
    """gemmini.md §11 `map.hw_spad_ids`: with `loop_spad_ids = 0` (the default preset's RTL) the KB
    itself refuses a pinned half under hardware loops, naming the rule and its doc line; with 1
    it is legal, and the simulator still refuses it on a preset whose RTL has no spad ids."""
    wl = TARGET.workload("matmul:M=64,N=1024,K=1024")
    pinned = library_default(wl, cur_cfg, CURRENT_LIBRARY)
    assert pinned.flag("reuse_a")
    with pytest.raises(IllegalMapping, match=r"map\.hw_spad_ids.*gemmini\.md:\d+"):
        space(cfg.kb(), "matmul").check(cfg.kb(), pinned, wl.shape)
    space(cur_cfg.kb(), "matmul").check(cur_cfg.kb(), pinned, wl.shape)
    with pytest.raises(platform.UnsupportedOnRtl, match="spad ids"):
        run(TARGET.instance(wl, RTL_FEATURES), pinned, Mode.TIMING, DEFAULT_PRESET)
    assert run(TARGET.instance(wl, RTL_FEATURES), pinned, Mode.TIMING).sim.stats["preset"] == CURRENT  # its own
    conv = TARGET.workload("conv:N=1,H=8,W=8,C=16,K=16,R=3,S=3,stride=1,pad=1,bias=0")
    m = library_default(conv, cur_cfg, CURRENT_LIBRARY)
    assert m.flag("reuse_a") or m.flag("reuse_b")
    with pytest.raises(IllegalMapping, match=r"map\.hw_spad_ids"):
        space(cfg.kb(), "conv").check(cfg.kb(), m, conv.shape)


def test_candidate0_is_the_library_of_the_default_preset(cfg, cur_cfg):
    wl = TARGET.workload("matmul:M=64,N=1024,K=1024")
    dosa = TARGET.lower(TARGET.instance(wl, {}), TARGET.reference_mappings(wl, {})["library"])
    assert not any(i.op == "loop_ws" and (i.args[4] or i.args[5]) for i in dosa.instrs)
    platform.check_mapping(library_default(wl, cfg), DOSA_RTL)
    with pytest.raises(platform.UnsupportedOnRtl):
        platform.check_mapping(library_default(wl, cur_cfg, CURRENT_LIBRARY), DOSA_RTL)


# ---------------------------------------------------------------------------- feature gates

FIRST_LAYER = "conv1_r50"  # C = 3, 7x7: the dev library packs 5 kernel columns per row


def test_the_kb_refuses_first_layer_packing_without_pixel_repeats(cfg):
    """gemmini.md §11 `map.first_layer_rtl`: with `first_layer_opts = 0` (gemmini-dosa
    dummy16Config: GemminiConfigs.scala line 90, has_first_layer_optimizations = false) the KB
    refuses a conv mapping with first_layer = true, naming the rule and its doc line; the KB of
    the current RTL (GemminiConfigs.scala line 93: true) accepts it."""
    wl = TARGET.workload(FIRST_LAYER)
    packed = library_default(wl, TARGET.config(RTL_FEATURES), CURRENT_LIBRARY)
    assert packed.flag("first_layer")
    with pytest.raises(IllegalMapping, match=r"map\.first_layer_rtl \(\S*gemmini\.md:\d+\).*first_layer_opts=0"):
        space(cfg.kb(), "conv").check(cfg.kb(), packed, wl.shape)
    kb = TARGET.kb(RTL_FEATURES)
    space(kb, "conv").check(kb, packed, wl.shape)
    with pytest.raises(platform.UnsupportedOnRtl, match=r"first_layer_opts = 0, gemmini\.md:\d+"):
        platform.check_mapping(packed, DOSA_RTL)
    platform.check_mapping(packed, get_preset(CURRENT).rtl)


def test_the_simulator_refuses_pixel_repeats_on_an_rtl_without_them():
    """gemmini-dosa LoadController.scala lines 175-176 force every state's pixel repeats to 1 and
    line 190 asserts none is configured; its LoopConv.scala line 1334 forces max_pixels_per_row
    to 1. The simulator refuses both on the default preset, naming the doc parameter and line;
    the current RTL's preset runs them."""
    wl = TARGET.workload(FIRST_LAYER)
    inst = TARGET.instance(wl, RTL_FEATURES)
    packed = lower(library_default(wl, inst.cfg, CURRENT_LIBRARY), wl, inst.buffers, inst.cfg)
    assert any(i.op == "loop_conv_ws" and i.args[7] > 1 for i in packed.instrs)
    with pytest.raises(platform.UnsupportedOnRtl, match=r"max_pixels_per_row.*first_layer_opts = 0, gemmini\.md:\d+"):
        simulate(packed, inst.cfg, None, functional=False, check=False, preset=DEFAULT_PRESET)
    assert simulate(packed, inst.cfg, None, functional=False, check=False, preset=CURRENT).cycles > 0
    cpu = prog(("config_ld", 0, 3, 0, 16, 5, 0x3F800000), ("mvin", 0x1000, 64, 3, 16), ("fence",))
    with pytest.raises(
        platform.UnsupportedOnRtl, match=r"line 1: config_ld asks for 5 pixel repeats.*first_layer_opts"
    ):
        simulate(cpu, inst.cfg, None, preset=DEFAULT_PRESET)
    assert simulate(cpu, inst.cfg, None, preset=CURRENT).cycles > 0


def _os_mapping(kb):  # noqa: ANN001, ANN202
    """A small matmul as an output-stationary unrolled stream (the doc's canonical values otherwise)."""
    wl = TARGET.workload("matmul:M=32,N=64,K=64")
    sp = space(kb, "matmul")
    values = {k.name: k.default for k in sp.knobs}
    values |= {"loop": "sw", "tile_i": 2, "tile_j": 4, "tile_k": 4, "dataflow": "os", "order": "ijk",
               "reuse_a": "true", "reuse_b": "true", "acc_init": "overwrite"}  # fmt: skip
    return wl, sp.mapping(values, wl.shape)


def test_the_kb_refuses_the_os_dataflow_on_a_ws_only_rtl(cfg):
    """gemmini.md §11 `map.os_rtl`: with `os_dataflow = 0` (gemmini-dosa dummy16Config,
    Configs.scala line 174: Dataflow.WS) the KB refuses dataflow = os, naming the rule and its doc
    line; the KB of the current RTL (Configs.scala line 38: Dataflow.BOTH) accepts it."""
    kb = TARGET.kb(RTL_FEATURES)
    wl, m = _os_mapping(kb)
    space(kb, "matmul").check(kb, m, wl.shape)
    with pytest.raises(IllegalMapping, match=r"map\.os_rtl \(\S*gemmini\.md:\d+\).*os_dataflow=0"):
        space(cfg.kb(), "matmul").check(cfg.kb(), m, wl.shape)
    with pytest.raises(platform.UnsupportedOnRtl, match=r"os_dataflow = 0, gemmini\.md:\d+"):
        platform.check_mapping(m, DOSA_RTL)
    platform.check_mapping(m, get_preset(CURRENT).rtl)


def test_the_simulator_refuses_an_os_program_on_a_ws_only_rtl():
    """ExecuteController.scala line 77 (both revisions): `current_dataflow` is a register only for
    Dataflow.BOTH, else the configured dataflow hard-wired, so on gemmini-dosa's WS-only
    dummy16Config an OS program runs as WS. The simulator refuses its config_ex there, naming
    the doc parameter and line; a config_ex that only sets strides passes; the current RTL's
    preset runs the program."""
    kb = TARGET.kb(RTL_FEATURES)
    wl, m = _os_mapping(kb)
    inst = TARGET.instance(wl, RTL_FEATURES)
    program = lower(m, wl, inst.buffers, inst.cfg)
    with pytest.raises(platform.UnsupportedOnRtl, match=r"config_ex selects the OS dataflow.*os_dataflow = 0"):
        simulate(program, inst.cfg, None, functional=False, check=False, preset=DEFAULT_PRESET)
    assert run(inst, m, Mode.VERIFIED, preset=CURRENT).verified
    strides = prog(("config_ex", 0, 0, 0, 0, 2, 1, 0, 0x3F800000, 1), ("fence",))
    assert simulate(strides, inst.cfg, None, preset=DEFAULT_PRESET).cycles > 0


def test_candidate0_is_legal_on_every_preset():
    """The default mapping (Candidate-0, the dosa library's) and the exo-style reference use no
    gated feature: every preset's KB accepts them and every preset's RTL runs them; each
    preset's own library mapping is legal on its own RTL."""
    for p in PRESETS.values():
        kb, cfg = TARGET.kb(p.rtl.kb_params), TARGET.config(p.rtl.kb_params)
        for wl in TARGET.suite():
            for m in TARGET.reference_mappings(wl, {}).values():
                space(kb, wl.op).check(kb, m, wl.shape)
                platform.check_mapping(m, p.rtl)
            own = library_default(wl, cfg, p.library)
            space(kb, wl.op).check(kb, own, wl.shape)
            platform.check_mapping(own, p.rtl)


def _conv_call(wl: Workload, bufs: ConvBuffers, scale: float, cls=platform.ConvCall):
    return cls(1, wl["H"], wl["W"], wl["C"], wl["K"], wl["R"], wl["stride"], wl["pad"],
               bufs.input, bufs.weights, 0, bufs.output, scale=scale)  # fmt: skip


@pytest.mark.parametrize(
    "spec",
    [
        "conv:N=1,H=56,W=56,C=64,K=64,R=3,S=3,stride=1,pad=1,bias=0",
        "conv:N=1,H=224,W=224,C=3,K=64,R=7,S=7,stride=2,pad=3,bias=0",  # no first-layer pixels
        "conv:N=1,H=56,W=56,C=256,K=512,R=1,S=1,stride=2,pad=0,bias=0",  # no downsampling
    ],
)
def test_the_default_conv_is_the_dosa_tiled_conv_auto(cfg, cur_cfg, spec):
    """`zomboss default gemmini conv:...,bias=0` on the default preset simulates the dosa library's
    tiled_conv_auto (what scripts/validate_dosa_tilings.py compares with FireSim); the dev
    library's mapping (first-layer pixels, downsampling) lowers to dev's tiled_conv_auto."""
    wl = TARGET.workload(spec)
    inst = TARGET.instance(wl, {})
    assert isinstance(inst.buffers, ConvBuffers)
    got = TARGET.lower(inst, TARGET.reference_mappings(wl, {})["library"])
    assert list(got.instrs) == platform.tiled_conv_auto(_conv_call(wl, inst.buffers, inst.scale), cfg)
    if wl["C"] == 3 or wl["stride"] == 2:  # the dev library packs pixels or downsamples here
        dev_m = library_default(wl, cur_cfg, CURRENT_LIBRARY)
        assert dev_m.flag("first_layer") or dev_m.flag("downsample")
        dev_prog = lower(dev_m, wl, inst.buffers, cur_cfg)
        assert list(dev_prog.instrs) == dev.tiled_conv_auto(_conv_call(wl, inst.buffers, inst.scale, dev.ConvCall), cfg)
        assert list(got.instrs) != list(dev_prog.instrs)


def test_the_platform_memories_barely_change_the_library_default(cfg):
    """The FireSim image has 4 MiB scratchpad and accumulator (dummy16Config); the library tiles for
    the default sizes (gemmini_params.h) and the loop FSMs place A and B in the halves of the RTL's
    scratchpad, so Candidate-0 on the doc's 256 KiB configuration (what `zomboss default`
    simulates) differs only where a tile's A and B share a 4096-row bank there but not on the
    platform (65536-row banks): equal for this matmul, within 1 % for this conv."""
    big = GemminiConfig.from_kb(
        machine_kb((("acc_capacity_kib", DOSA_RTL.acc_capacity_kib), ("sp_capacity_kib", DOSA_RTL.sp_capacity_kib)))
    )
    mm = Program("gemmini", tuple(_dosa_matmul(128, 768, 768, cfg)))
    assert (
        simulate(mm, big, None, functional=False, check=False).cycles
        == simulate(mm, cfg, None, functional=False, check=False).cycles
    )
    wl = TARGET.workload("conv:N=1,H=28,W=28,C=128,K=128,R=3,S=3,stride=1,pad=1,bias=0")
    conv = TARGET.lower(TARGET.instance(wl, {}), TARGET.reference_mappings(wl, {})["library"])
    small = simulate(conv, cfg, None, functional=False, check=False).cycles
    assert abs(simulate(conv, big, None, functional=False, check=False).cycles - small) < 0.01 * small


@pytest.mark.parametrize("perm", ["CKPQRSN", "KCRSPQN", "NCRSKPQ", "PKCRSQN"])
def test_a_dosa_matmul_tiling_is_a_hw_loop_mapping(cfg, perm):
    """A DOSA matmul tiling (tiles + loop permutation) with k innermost is the Gemmini mapping
    loop = hw with the permutation's block order and no pinning: lowering it gives the dosa
    library's program (one k block here, so every order is legal)."""
    m, n, k = 128, 768, 512
    a, b, c = 0x1000, 0x200000, 0x900000
    call = platform.MatmulCall(m, n, k, a, b, 0, c, k, n, n, n, repeating_bias=True)
    want = platform.tiled_matmul(call, cfg, 2, 3, 32, perm)
    wl = Workload("t", "matmul", {"M": m, "N": n, "K": k, "bias": 0, "relu": 0})
    order = platform.matmul_order(perm)
    if order not in ("ijk", "jik"):  # map.hw_order: with one k block every order issues ijk's or jik's blocks
        order = "ijk" if order.index("i") < order.index("j") else "jik"
    values = {"loop": "hw", "tile_i": 2, "tile_j": 3, "tile_k": 32, "order": order, "reuse_a": False,
              "reuse_b": False, "acc_init": "overwrite"}  # fmt: skip
    mapping = space(cfg.kb(), "matmul").mapping(values, wl.shape)
    got = lower(mapping, wl, MatmulBuffers(a, b, c), cfg)
    assert list(got.instrs) == want


CURRENT_FLAGS = dict(RTL_FEATURES)


def test_the_docs_feature_parameters_choose_the_preset_that_models_their_rtl():
    assert preset_for({}).name == DEFAULT_PRESET
    assert preset_for(CURRENT_FLAGS).name == CURRENT
    assert GemminiConfig.default().preset == DEFAULT_PRESET
    assert TARGET.config(CURRENT_FLAGS).preset == CURRENT
    with pytest.raises(UnknownPreset, match="os_dataflow=1 .*presets: firesim-f1-llc: loop_spad_ids=0"):
        preset_for({"os_dataflow": 1})


def test_a_current_rtl_kb_runs_on_the_current_preset_with_its_library_and_features():
    """With the current RTL's parameters, Candidate-0 is the current library's (first-layer
    packing for a 3-channel conv) and runs on `firesim-f1-llc-current`; an OS-dataflow mapping
    the default platform refuses runs there."""
    wl = TARGET.workload("conv:N=1,H=16,W=16,C=3,K=16,R=3,S=3,stride=1,pad=1")
    c0 = TARGET.reference_mappings(wl, CURRENT_FLAGS)["library"]
    assert c0["first_layer"] == "true"
    res = TARGET.evaluate(TARGET.instance(wl, CURRENT_FLAGS), c0, Mode.VERIFIED)
    assert res.verified and res.report["preset"] == CURRENT
    mm = TARGET.workload("matmul:M=64,N=32,K=48")
    os_knobs = {**TARGET.reference_mappings(mm, {})["exo"].to_json()["knobs"], "dataflow": "os"}
    cur = space(TARGET.kb(CURRENT_FLAGS), "matmul").mapping(os_knobs, mm.shape)
    assert TARGET.evaluate(TARGET.instance(mm, CURRENT_FLAGS), cur, Mode.VERIFIED).verified
    with pytest.raises(platform.UnsupportedOnRtl):
        TARGET.evaluate(TARGET.instance(mm, {}), cur, Mode.VERIFIED)
