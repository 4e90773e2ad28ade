"""The PLENA Target: protocol surface, the default's report, program files and traces."""

from __future__ import annotations

from pathlib import Path

import pytest
from zomboss.targets.plena import TARGET
from zomboss.targets.plena.bounds import lower_bound
from zomboss.targets.plena.counts import dynamic_counts
from zomboss.targets.plena.default import default_kernel
from zomboss.targets.plena.mapping import LinearMapping, RopeMapping, from_json

from zomboss.errors import IllegalProgram, WorkloadError, ZombossError
from zomboss.target import get_target


def test_registered_and_described() -> None:
    assert get_target("plena") is TARGET
    assert TARGET.doc.name == "plena.md" and TARGET.doc.exists()
    assert len(TARGET.suite()) == 36
    d = TARGET.describe()
    assert set(d["ops"]) == {"linear", "rmsnorm", "softmax", "ffn", "attention", "rope"}
    assert d["default_mode"] == "rtl" and set(d["timing_modes"]) == {"rtl", "emu"}
    with pytest.raises(WorkloadError):
        TARGET.workload("mm512")


def test_default_reports_cycles_counts_bytes_and_gates() -> None:
    wl = TARGET.workload("lin_60m_kv")
    r = TARGET.default(wl, {})
    d = r.to_json()
    assert r.verified is True and r.simulations == 2
    assert r.cycles == d["cycles"] == r.default_cycles and r.speedup == 1.0
    assert d["emu_cycles"] > 0 and d["emu_cycles"] != r.cycles
    assert 0 < r.bound_cycles < r.cycles
    assert d["bound"] == lower_bound(wl, TARGET.config({}).params).__dict__
    assert d["counts"] == dict(dynamic_counts(default_kernel(wl).program))
    assert d["class_counts"]["matrix"] == d["counts"]["M_MM"] + d["counts"]["M_MM_WO"]
    assert d["hbm_read_bytes"] >= (64 * 384 + 384 * 128) * 9 // 8
    assert d["hbm_write_bytes"] == 0
    assert [g["seed"] for g in d["gates"]] == [0, 1]
    assert all(g["plena"]["passed"] and g["strict"]["passed"] and g["passed"] for g in d["gates"])
    assert d["mapping"] == {"op": "linear", "knobs": d["mapping"]["knobs"]}
    assert from_json(d["mapping"]) == LinearMapping()


def test_parameters_reach_the_machine() -> None:
    small = TARGET.default(TARGET.workload("rope:rows=4,head_dim=64"), {"hbm_v_prefetch": 2})
    base = TARGET.default(TARGET.workload("rope:rows=4,head_dim=64"), {})
    assert small.verified and small.extra["counts"]["H_PREFETCH_V"] == 2 * base.extra["counts"]["H_PREFETCH_V"]
    with pytest.raises(ZombossError):
        TARGET.default(TARGET.workload("rope_4x64"), {"vlen": 32})


def test_evaluate_a_mapping() -> None:
    wl = TARGET.workload("rope_64x128")
    base = TARGET.default(wl, {})
    r = TARGET.evaluate(wl, RopeMapping(rotate="on_chip"), {}, default_cycles=base.cycles)
    assert r.verified and r.cycles < base.cycles and r.speedup > 1
    t = TARGET.evaluate(wl, RopeMapping(rotate="on_chip"), {}, functional=False)
    assert t.verified is None and t.cycles == r.cycles
    assert [k["name"] for k in TARGET.knobs("rope")] == ["rotate", "unroll"]
    assert TARGET.reference_mappings(wl, {})["library"] == RopeMapping()


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
