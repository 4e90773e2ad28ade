"""The Gemmini Target: instances, evaluation modes and their reports, the machine from --param
overrides end to end (protocol and command line), program files and their sidecars, describe.

The conformance suite (tests/test_target_conformance.py) checks the protocol on the smallest
suite instance and tests/test_defaults.py every suite default; this file covers what is
Gemmini's own."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from zomboss.targets.gemmini import TARGET
from zomboss.targets.gemmini.export import program_text

from zomboss.app import main
from zomboss.errors import ZombossError
from zomboss.mapping import space
from zomboss.program import Instr, Program, ProgramSyntaxError
from zomboss.target import Mode, SidecarError, get_target, sidecar_path
from zomboss.verify import default_result


def test_registered() -> None:
    assert get_target("gemmini") is TARGET
    assert len(TARGET.suite()) == 20 and TARGET.workload("mm512").id == "mm512"


def test_instances_are_placed_eagerly_and_filled_once() -> None:
    wl = TARGET.workload("matmul:M=48,N=40,K=72,bias=1")
    inst = TARGET.instance(wl, {}, seed=3)
    assert TARGET.instance(wl, {}, seed=3) is inst and TARGET.instance(wl, {}, seed=4) is not inst
    m = TARGET.reference_mappings(wl, {})["exo"]
    TARGET.evaluate(inst, m, Mode.TIMING)
    assert "data" not in vars(inst)  # timing-only runs never build the inputs
    full = TARGET.evaluate(inst, m, Mode.VERIFIED)
    data = vars(inst)["data"]
    assert full.verified is True and TARGET.evaluate(inst, m, Mode.VERIFIED).verified is True
    assert vars(inst)["data"] is data  # built once; each functional run writes into a copy


def test_evaluate_a_searched_mapping_in_every_mode() -> None:
    wl = TARGET.workload("matmul:M=48,N=40,K=72,bias=1")
    s = space(TARGET.kb({}), "matmul")
    values = {k.name: k.default for k in s.knobs}
    values.update(loop="sw", tile_i=2, tile_j=3, tile_k=2, order="jik", reuse_a="true", reuse_b="true",
                  acc_init="bias", weight_reuse="true", inner_order="kji", acc_j=1, mvin_blocks_a=2, mvin_blocks_b=3)  # fmt: skip
    m = s.mapping(values, wl.shape)
    inst = TARGET.instance(wl, {})
    evs = {mode: TARGET.evaluate(inst, m, mode) for mode in Mode}
    assert [e.verified for e in evs.values()] == [None, None, True]
    assert len({e.cycles for e in evs.values()}) == 1
    ev = evs[Mode.VERIFIED]
    assert ev.mapping == m and ev.mode is Mode.VERIFIED and ev.workload == wl.id and ev.instructions > 0
    assert sum(ev.breakdown.values()) == ev.cycles and ev.breakdown["compute"] > 0 and ev.breakdown["memory"] > 0
    r = ev.report
    assert r["kernel"] == "unrolled stream" and r["counts"]["compute_accumulated"] > 0
    assert r["static_instructions"] == ev.instructions  # no hardware loops to expand
    assert r["dram_read_bytes"] > 0 and r["dram_write_bytes"] == 48 * 40 and r["preset"] == "firesim-f1-llc"


def test_candidate_0_reports_the_library_kernel() -> None:
    wl = TARGET.workload("mm256")
    d = default_result(TARGET, wl, {}).to_json()
    assert d["verified"] is True and d["cycles"] == d["default_cycles"] > 0 and d["speedup"] == 1.0
    assert d["mapping"]["knobs"]["loop"] == "hw" and d["kernel"] == "loop_ws"
    assert d["counts"]["loop_ws"] == 12 and d["static_instructions"] == 78 and d["instructions"] > 78
    assert 256**3 // 256 <= d["bound_cycles"] <= d["cycles"]
    assert sum(d["breakdown"].values()) == d["cycles"]


def test_the_bound_is_a_roofline() -> None:
    for spec in ("matmul:M=256,N=256,K=256", "matmul:M=32,N=512,K=512", "conv:N=1,H=16,W=16,C=64,K=64,R=3,S=3,pad=1"):
        wl = TARGET.workload(spec)
        inst = TARGET.instance(wl, {})
        for m in TARGET.reference_mappings(wl, {}).values():
            assert 0 < TARGET.bound(wl, {}, m) <= TARGET.evaluate(inst, m, Mode.TIMING).cycles
    # two row tiles: 16 rows, and 1 row fed in at least 4 cycles (ExecuteController's floor)
    assert TARGET.bound(TARGET.workload("matmul:M=17,N=16,K=16"), {}) >= 16 + 4


def test_the_roofline_holds_for_a_ragged_row_tile_fed_first() -> None:
    """odd_pad (100 rows: six row tiles of 16 and one of 4), weight-stationary, accumulator
    sub-tiles of 4x4, weights kept for every row tile of a run, the 4-row tile fed first:
    28,063 cycles, below the old roofline that padded every row tile to DIM cycles (1,025 of
    overhead + 7 x 13 x 19 x 16 = 28,689). The roofline counts the rows (>= 4 per tile)."""
    wl = TARGET.workload("odd_pad")
    inst = TARGET.instance(wl, {})
    m = space(TARGET.kb({}), "matmul").mapping(
        dict(loop="sw", tile_i=7, tile_j=12, tile_k=19, dataflow="ws", order="kij", reuse_a="true", reuse_b="true",
             buffers_a=2, buffers_b=2, acc_i=4, acc_j=4, acc_buffers=3, inner_order="kji", weight_reuse="true",
             mvin_blocks_a=4, mvin_blocks_b=4, mvout_blocks=4, acc_init="overwrite", hoist_config="true",
             ld_states=3, prefetch="true", ragged_first="true"),
        wl.shape,
    )  # fmt: skip
    cycles = TARGET.evaluate(inst, m, Mode.TIMING).cycles
    assert TARGET.bound(wl, {}) <= cycles < 1025 + 7 * 13 * 19 * 16


# ---------------------------------------------------------------------------- --param overrides


@pytest.mark.parametrize(
    ("params", "spec"),
    [
        ({"dim": 8}, "matmul:M=64,N=64,K=64"),
        ({"sp_capacity_kib": 128}, "matmul:M=128,N=128,K=512"),
        ({"dim": 8}, "conv:N=1,H=14,W=14,C=24,K=40,R=3,S=3,stride=2,pad=1"),
    ],
)
def test_a_different_machine_from_the_doc_is_verified(params: dict[str, int], spec: str) -> None:
    """The configuration, the mapping space and the rules all follow the overrides: with
    DIM 8 the scratchpad has 32768 rows (a 15-bit row field) and block mvins may be 8 wide;
    half the scratchpad gives the library smaller tiles."""
    wl = TARGET.workload(spec)
    cfg = TARGET.config(params)
    assert cfg.kb() is TARGET.kb(params) and cfg.overrides == tuple(params.items())
    refs = TARGET.reference_mappings(wl, params)
    default = default_result(TARGET, wl, params)
    assert default.verified is True, default.extra
    inst = TARGET.instance(wl, params)
    assert inst.cfg is cfg and inst is not TARGET.instance(wl, {})
    assert TARGET.evaluate(inst, refs["exo"], Mode.VERIFIED).verified is True
    if "dim" in params:
        width = {"matmul": 8, "conv": 24 // 8}[wl.op]  # the DMA's 8 blocks, or the 3 channel chunks there are
        assert cfg.row_bits == 15 and refs["exo"].int("mvin_blocks_a") == width
    else:
        lib, base = refs["library"], TARGET.reference_mappings(wl, {})["library"]
        assert lib.int("tile_k") < base.int("tile_k") and cfg.sp_rows == TARGET.config({}).sp_rows // 2


def test_unknown_parameters_are_refused_with_the_docs_message() -> None:
    with pytest.raises(ZombossError, match="no parameter 'nope' in .*gemmini.md"):
        TARGET.instance(TARGET.workload("mm256"), {"nope": 1})
    with pytest.raises(ZombossError, match="cfg.dim"):
        TARGET.kb({"dim": 12})


def test_the_command_line_runs_other_machines(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["default", "gemmini", "matmul:M=64,N=64,K=64", "--param", "dim=8", "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["verified"] is True and d["mapping"]["knobs"]["mvin_blocks_a"] == 8
    assert main(["default", "gemmini", "matmul:M=128,N=128,K=512", "--param", "sp_capacity_kib=128", "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["verified"] is True and d["mapping"]["knobs"]["tile_k"] < 32  # 32 with the whole scratchpad
    assert main(["default", "gemmini", "mm256", "--param", "nope=1"]) != 0
    assert "no parameter 'nope'" in capsys.readouterr().err


def test_an_exported_program_keeps_its_overrides(tmp_path: Path) -> None:
    wl = TARGET.workload("matmul:M=40,N=24,K=32")
    TARGET.export(wl, tmp_path / "k.c", {"dim": 8})
    asm = tmp_path / "k.asm"
    res = TARGET.simulate_file(asm, {"dim": 8})
    assert res.verified is True and res.mapping["knobs"]["mvin_blocks_a"] == 8  # canonical: max_block_len
    with pytest.raises(SidecarError, match="exported for --param overrides dim=8"):
        TARGET.simulate_file(asm, {})


# ---------------------------------------------------------------------------- program files


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
    p = tmp_path / "k.c"
    TARGET.export(wl, p, {})
    program = TARGET.read_program(p.with_suffix(".asm"), {})
    ops = [i.op for i, regs in TARGET.trace(program, {}) if regs == {}]
    assert "loop_ws" in ops and "compute_preloaded" in ops and "mvin" in ops


def test_simulate_file_without_sidecar_times_only(tmp_path: Path) -> None:
    wl = TARGET.workload("matmul:M=32,N=32,K=32")
    TARGET.export(wl, tmp_path / "k.c", {})
    asm = tmp_path / "k.asm"
    sidecar_path(asm).unlink()
    d = TARGET.simulate_file(asm, {}).to_json()
    assert d["verified"] is None and d["cycles"] > 0 and "no sidecar" in d["verify_reason"]
    assert sum(d["breakdown"].values()) == d["cycles"]


def test_simulate_file_detects_a_wrong_program(tmp_path: Path) -> None:
    wl = TARGET.workload("matmul:M=32,N=32,K=32")
    TARGET.export(wl, tmp_path / "k.c", {})
    asm = tmp_path / "k.asm"
    assert TARGET.simulate_file(asm, {}).verified is True
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
    assert d["modes"] == [m.value for m in Mode]


def test_program_text_is_the_contract_form() -> None:
    text = program_text(Program("gemmini", (Instr("mvin", (4096, 0x80000000, 16, 16)), Instr("fence", ()))), "t")
    assert text == "# t\nmvin 4096, 2147483648, 16, 16\nfence\n"
