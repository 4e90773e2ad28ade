"""The PLENA Target protocol: registration, parameters through the KB, instances built once,
the three evaluation modes (timing-only equals the functional run), breakdowns, reports,
bounds, Candidate-0 on two seeds, program files and traces."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from zomboss.targets.plena import TARGET
from zomboss.targets.plena.asm import parse_program
from zomboss.targets.plena.decode import SEMANTICS
from zomboss.targets.plena.simulator import simulate

from tests.targets.plena.conftest import dynamic_counts
from zomboss.errors import IllegalProgram, WorkloadError, ZombossError
from zomboss.mapping import space
from zomboss.target import BREAKDOWN_KEYS, Mode, get_target
from zomboss.verify import default_result
from zomboss.workload import Workload


def test_registered_and_described() -> None:
    assert get_target("plena") is TARGET
    assert TARGET.doc.name == "plena.md" and TARGET.doc.exists()
    assert len(TARGET.suite()) == 36
    d = TARGET.describe()
    assert set(d["ops"]) == {"linear", "rmsnorm", "softmax", "ffn", "attention", "rope"}
    assert d["default_mode"] == "rtl" and set(d["timing_modes"]) == {"rtl", "emu"}
    assert set(d["evaluation_modes"]) == {m.value for m in Mode} and set(d["breakdown"]) == set(BREAKDOWN_KEYS)
    with pytest.raises(WorkloadError):
        TARGET.workload("mm512")


def test_every_doc_instruction_has_semantics() -> None:
    assert set(SEMANTICS) == set(TARGET.kb({}).instrs)


def test_parameters_flow_through_the_kb() -> None:
    kb = TARGET.kb({"hbm_v_prefetch": 2})
    assert kb.params["hbm_v_prefetch"] == 2 and TARGET.kb({}).params["hbm_v_prefetch"] == 4
    wl = TARGET.workload("rope:rows=4,head_dim=64")
    small, base = (TARGET.instance(wl, p) for p in ({"hbm_v_prefetch": 2}, {}))
    lib = TARGET.reference_mappings(wl, {})["library"]
    ev_small, ev_base = TARGET.evaluate(small, lib, Mode.VERIFIED), TARGET.evaluate(base, lib, Mode.TIMING)
    assert ev_small.verified
    assert ev_small.report["counts"]["H_PREFETCH_V"] == 2 * ev_base.report["counts"]["H_PREFETCH_V"]
    with pytest.raises(ZombossError, match="cfg.vlen_is_mlen"):
        TARGET.kb({"vlen": 32})
    with pytest.raises(ZombossError, match="no parameter 'vlenn'"):
        TARGET.kb({"vlenn": 32})


@pytest.mark.parametrize("spec", ["rope_4x64", "sm_16x64", "attention:sq=40,skv=64,causal=0", "lin_60m_kv"])
def test_a_smaller_machine_runs_every_family(spec: str) -> None:
    """MLEN = VLEN = 32 (and what the doc's rules then require of HLEN and the M prefetch)."""
    small = {"mlen": 32, "vlen": 32, "hlen": 8, "hbm_m_prefetch": 32}
    wl = TARGET.workload(spec)
    lib = TARGET.reference_mappings(wl, small)["library"]
    ev = TARGET.evaluate(TARGET.instance(wl, small), lib, Mode.VERIFIED)
    assert ev.verified, ev.report.get("verify_reason")
    assert ev.cycles != TARGET.evaluate(TARGET.instance(wl, {}), lib, Mode.TIMING).cycles


def test_instances_are_built_once_and_lazily() -> None:
    wl = TARGET.workload("sm_16x64")
    inst = TARGET.instance(wl, {}, seed=3)
    assert TARGET.instance(wl, {}, seed=3) is inst and TARGET.instance(wl, {}, seed=4) is not inst
    assert (inst.workload, inst.seed, dict(inst.params)) == (wl, 3, {})
    lib = TARGET.reference_mappings(wl, {})["library"]
    TARGET.evaluate(inst, lib, Mode.TIMING)
    assert "inputs" not in vars(inst)  # a timing-only evaluation needs no data
    TARGET.evaluate(inst, lib, Mode.VERIFIED)
    layout = TARGET.kernel(inst, lib).layout
    assert inst.staged(layout) is inst.staged(layout) and inst.reference is inst.reference
    with pytest.raises(WorkloadError, match="K=100"):
        TARGET.instance(Workload(id="x", op="linear", shape={"M": 64, "K": 100, "N": 64}), {})


def _mapping(spec: str, **knobs):
    wl = TARGET.workload(spec)
    lib = TARGET.reference_mappings(wl, {})["library"]
    return wl, space(TARGET.kb({}), wl.op).mapping({**lib.as_dict(), **knobs}, wl.shape)


MAPPINGS = [
    ("lin_60m_kv", {}),
    ("linear:M=68,K=320,N=128", {"k_chunk": 2, "n_block": 2, "m_block": 2, "hoist_csr": "true", "add_rows": "valid"}),
    ("rms_16x2048", {"row_mode": "parallel", "reduce": "vector_first"}),
    ("sm_32x256", {"in_place": "true", "reduce": "vector_first", "row_loop": "rolled"}),
    ("ffn_16x128x256", {"fused_up_gate": "true", "unroll_outer": "false", "unroll_act": "false"}),
    ("attn_128c", {"mask": "sliding_window", "hoist_csr": "true"}),
    ("attention:sq=128,skv=128", {"loop_order": "kv_outer"}),
    ("attn_dec", {"algorithm": "one_pass"}),
    ("rope_64x128", {"rotate": "on_chip", "unroll": "true"}),
]


@pytest.mark.parametrize("spec, knobs", MAPPINGS, ids=[m[0] for m in MAPPINGS])
def test_timing_only_and_checked_runs_equal_the_verified_run(spec: str, knobs) -> None:
    wl, m = _mapping(spec, **knobs)
    inst = TARGET.instance(wl, {})
    ver = TARGET.evaluate(inst, m, Mode.VERIFIED)
    assert ver.verified, ver.report.get("verify_reason")
    prog = TARGET.lower(inst, m)
    for mode in (Mode.TIMING, Mode.CHECKED):
        ev = TARGET.evaluate(inst, m, mode)
        assert ev.verified is None and ev.mode is mode
        assert (ev.cycles, ev.instructions, dict(ev.breakdown)) == (ver.cycles, ver.instructions, dict(ver.breakdown))
        for key in ("emu_cycles", "rtl_breakdown", "counts", "class_counts", "hbm_read_bytes", "hbm_write_bytes"):
            assert ev.report[key] == ver.report[key], key
    assert ver.report["counts"] == dict(dynamic_counts(prog))
    assert set(ver.breakdown) == set(BREAKDOWN_KEYS) and sum(ver.breakdown.values()) == ver.cycles
    assert TARGET.bound(wl, {}) <= TARGET.bound(wl, {}, m) <= ver.cycles


def test_verified_evaluations_check_two_seeds_and_report_the_gates() -> None:
    wl = TARGET.workload("sm_16x64")
    lib = TARGET.reference_mappings(wl, {})["library"]
    ev = TARGET.evaluate(TARGET.instance(wl, {}, seed=5), lib, Mode.VERIFIED)
    assert ev.verified is True and ev.seed == 5 and ev.report["verified_seeds"] == [5, 6]
    assert [g["seed"] for g in ev.report["gates"]] == [5, 6]
    assert all(g["plena"]["passed"] and g["strict"]["passed"] and g["passed"] for g in ev.report["gates"])


def test_candidate_0_report() -> None:
    wl = TARGET.workload("lin_60m_kv")
    r = default_result(TARGET, wl, {})
    d = r.to_json()
    assert r.verified is True and r.cycles == r.default_cycles and r.speedup == 1.0
    assert [g["seed"] for g in d["gates"]] == [0, 1]  # Candidate-0 is verified on two seeds
    assert d["emu_cycles"] > 0 and d["emu_cycles"] != r.cycles
    assert 0 < r.bound_cycles < r.cycles and d["bound"]["matrix"] == r.bound_cycles
    assert d["class_counts"]["matrix"] == d["counts"]["M_MM"] + d["counts"]["M_MM_WO"]
    assert d["hbm_read_bytes"] >= (64 * 384 + 384 * 128) * 9 // 8 and d["hbm_write_bytes"] == 0
    assert set(d["breakdown"]) == set(BREAKDOWN_KEYS) and sum(d["breakdown"].values()) == r.cycles
    assert (
        d["breakdown"]["memory"] == d["rtl_breakdown"]["dma"]
        and d["breakdown"]["stall"] == d["rtl_breakdown"]["hazards"]
    )
    assert (
        space(TARGET.kb({}), "linear").from_json(d["mapping"], wl.shape) == TARGET.reference_mappings(wl, {})["library"]
    )


def test_timing_only_runs_move_no_data(cfg) -> None:
    wl = TARGET.workload("rope_4x64")
    inst = TARGET.instance(wl, {})
    k = TARGET.kernel(inst)
    hbm, fp = inst.staged(k.layout)
    full = simulate(k.program, cfg, hbm, fpsram_init=fp)
    bare = simulate(k.program, cfg, hbm, fpsram_init=fp, functional=False)
    assert full.functional and not bare.functional
    assert full.vram.any() and not bare.vram.any() and (bare.cycles, bare.counts) == (full.cycles, full.counts)


def test_data_dependent_addresses_run_functionally(cfg) -> None:
    """V_TOPK writes expert indices to INT SRAM; loading one into a register makes an address
    depend on the data, so a timing-only run computes the data after all."""
    asm = """
S_ADDI_INT gp1, gp0, 0
S_ADDI_INT gp2, gp0, 0
S_ADDI_INT gp3, gp0, 16
V_TOPK gp2, gp1, gp3, 0
S_LD_INT gp4, gp3, 0
S_ADDI_INT gp5, gp0, 64
S_MUL_INT gp4, gp4, gp5
V_ADD_VV gp4, gp4, gp4, 0
"""
    prog = parse_program(cfg.kb, asm, "topk.asm")
    logits = np.zeros(64 * 64, dtype=np.float32)
    logits[7] = 5.0  # expert 7 wins: gp4 = 7 * 64, a VRAM row the V_ADD_VV writes
    full = simulate(prog, cfg, vram_init=logits)
    bare = simulate(prog, cfg, vram_init=logits, functional=False)
    assert bare.functional and bare.gp[4] == full.gp[4] == 7 * 64 and bare.cycles == full.cycles


def test_illegal_programs_are_refused_in_every_checked_mode(cfg) -> None:
    prog = parse_program(cfg.kb, "S_ADDI_INT gp1, gp0, 5\nV_ADD_VV gp1, gp1, gp1, 0\n", "ill.asm")
    for functional in (True, False):
        with pytest.raises(IllegalProgram) as e:
            simulate(prog, cfg, functional=functional)
        assert e.value.violations[0].rule == "v.rows3" and e.value.violations[0].line == 2


def test_read_program_and_trace(tmp_path: Path) -> None:
    p = tmp_path / "t.asm"
    p.write_text("; a loop\nS_ADDI_INT gp1, gp0, 64\nC_LOOP_START gp2, 3\nS_ADDI_INT gp1, gp1, 64\nC_LOOP_END gp2\n")
    prog = TARGET.read_program(p, {})
    assert [i.op for i in prog.instrs] == ["S_ADDI_INT", "C_LOOP_START", "S_ADDI_INT", "C_LOOP_END"]
    stream = list(TARGET.trace(prog, {}))
    assert len(stream) == 1 + 1 + 3 * 2
    adds = [regs for ins, regs in stream if ins.op == "S_ADDI_INT"]
    assert [r[1] for r in adds] == [0, 64, 128, 192]  # gp1's content as each add reads it
    (tmp_path / "bad.asm").write_text("M_MM 0, gp1\n")
    with pytest.raises(ZombossError, match="bad.asm:1"):
        TARGET.read_program(tmp_path / "bad.asm", {})
    with pytest.raises(ZombossError, match="cannot read"):
        TARGET.read_program(tmp_path / "missing.asm", {})


def test_simulate_file_refuses_illegal_programs(tmp_path: Path) -> None:
    p = tmp_path / "ill.asm"
    p.write_text("S_ADDI_INT gp1, gp0, 5\nV_ADD_VV gp1, gp1, gp1, 0\n")  # VRAM address not a row
    with pytest.raises(IllegalProgram) as e:
        TARGET.simulate_file(p, {})
    assert e.value.violations[0].rule == "v.rows3"
