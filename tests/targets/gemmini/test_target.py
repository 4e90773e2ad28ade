"""The Gemmini Target: suite, Candidate-0, program files and their sidecars, describe."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from zomboss.targets.gemmini import TARGET, SidecarError
from zomboss.targets.gemmini.export import program_text, sidecar_path
from zomboss.targets.gemmini.mapping import MatmulMapping

from zomboss.errors import ZombossError
from zomboss.program import ProgramSyntaxError
from zomboss.target import get_target


def test_registered() -> None:
    assert get_target("gemmini") is TARGET
    assert len(TARGET.suite()) == 20 and TARGET.workload("mm512").id == "mm512"


def test_default_is_verified_with_a_tiled_mapping() -> None:
    res = TARGET.default(TARGET.workload("mm256"), {})
    d = res.to_json()
    assert d["verified"] is True and d["cycles"] == d["default_cycles"] > 0 and d["speedup"] == 1.0
    assert (d["mapping"]["tile_i"], d["mapping"]["tile_j"], d["mapping"]["tile_k"]) == (5, 6, 16)  # reference §6.1
    assert d["bound_cycles"] >= 256**3 // 256 and d["cycles"] >= d["bound_cycles"]
    assert d["counts"]["loop_ws"] == 12 and d["dram_read_bytes"] > 0 and d["preset"] == "firesim-f1-llc"


def test_default_conv_with_padding_and_stride() -> None:
    res = TARGET.default(TARGET.workload("conv:N=1,H=9,W=9,C=20,K=24,R=3,S=3,stride=2,pad=1,relu=1"), {})
    assert res.verified is True and res.mapping["op"] == "conv" and res.mapping["loop"] == "hw"


def test_evaluate_a_searched_mapping() -> None:
    wl = TARGET.workload("matmul:M=48,N=40,K=72,bias=1")
    m = MatmulMapping(tile_i=2, tile_j=3, tile_k=2, acc_init="bias", order="jik", weight_reuse=True, inner_order="kji")
    full = TARGET.evaluate(wl, m, {}, default_cycles=1000)
    fast = TARGET.evaluate(wl, m, {}, functional=False)
    assert full.verified is True and fast.verified is None and full.cycles == fast.cycles
    assert full.to_json()["speedup"] == 1000 / full.cycles


def test_reference_mappings() -> None:
    refs = TARGET.reference_mappings(TARGET.workload("mm512"), {})
    assert refs["library"].loop == "hw" and refs["exo"].loop == "sw"
    assert TARGET.mapping_from_json(refs["exo"].to_json()) == refs["exo"]


def test_read_program_errors_name_file_and_line(tmp_path: Path) -> None:
    p = tmp_path / "bad.asm"
    p.write_text("fence\nmvin 4096, 0, 16\n")
    with pytest.raises(ProgramSyntaxError, match=r"bad.asm:2: mvin takes 4 operand\(s\)"):
        TARGET.read_program(p, {})
    p.write_text("# comment\nmvinn 1, 2, 3, 4\n")
    with pytest.raises(ProgramSyntaxError, match=r"bad.asm:2: unknown Gemmini instruction 'mvinn'"):
        TARGET.read_program(p, {})
    with pytest.raises(ZombossError, match="missing.asm"):
        TARGET.read_program(tmp_path / "missing.asm", {})


def test_trace_expands_hardware_loops(tmp_path: Path) -> None:
    wl = TARGET.workload("matmul:M=32,N=32,K=32")
    prog = TARGET.reference_mappings(wl, {})["library"]
    p = tmp_path / "k.c"
    TARGET.export(wl, p, {})
    program = TARGET.read_program(p.with_suffix(".asm"), {})
    ops = [i.op for i, regs in TARGET.trace(program, {}) if regs == {}]
    assert prog.loop == "hw" and "loop_ws" in ops and "compute_preloaded" in ops and "mvin" in ops


def test_simulate_file_without_sidecar_times_only(tmp_path: Path) -> None:
    wl = TARGET.workload("matmul:M=32,N=32,K=32")
    TARGET.export(wl, tmp_path / "k.c", {})
    asm = tmp_path / "k.asm"
    sidecar_path(asm).unlink()
    res = TARGET.simulate_file(asm, {})
    d = res.to_json()
    assert d["verified"] is None and d["cycles"] > 0 and "no sidecar" in d["verify_reason"]


def test_simulate_file_detects_a_wrong_program(tmp_path: Path) -> None:
    wl = TARGET.workload("matmul:M=32,N=32,K=32")
    TARGET.export(wl, tmp_path / "k.c", {})
    asm = tmp_path / "k.asm"
    lines = asm.read_text().splitlines()
    i = next(n for n, line in enumerate(lines) if line.startswith("config_st "))
    ops = lines[i].split(", ")
    ops[2] = str(0x3F800000)  # output scale 1.0 instead of the workload's: saturated, wrong outputs
    lines[i] = ", ".join(ops)
    asm.write_text("\n".join(lines) + "\n")
    assert TARGET.simulate_file(asm, {}).verified is False


def test_sidecar_must_match_the_placement(tmp_path: Path) -> None:
    wl = TARGET.workload("matmul:M=32,N=32,K=32")
    TARGET.export(wl, tmp_path / "k.c", {})
    side = sidecar_path(tmp_path / "k.asm")
    meta = json.loads(side.read_text())
    meta["buffers"]["a"] += 64
    side.write_text(json.dumps(meta))
    with pytest.raises(SidecarError, match="differ from the placement"):
        TARGET.simulate_file(tmp_path / "k.asm", {})


def test_describe() -> None:
    d = TARGET.describe()
    assert d["default_preset"] in d["timing_presets"] and "matmul" in d["ops"]


def test_program_text_is_the_contract_form() -> None:
    from zomboss.program import Instr, Program

    text = program_text(Program("gemmini", (Instr("mvin", (4096, 0x80000000, 16, 16)), Instr("fence", ()))), "t")
    assert text == "# t\nmvin 4096, 2147483648, 16, 16\nfence\n"
