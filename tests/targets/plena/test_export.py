"""Export: text PLENA's own assembler accepts, read back unchanged, and a sidecar that verifies it."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import pytest
from zomboss.targets.plena import TARGET
from zomboss.targets.plena.asm import parse_program
from zomboss.targets.plena.export import program_text, read_sidecar
from zomboss.targets.plena.suite import SUITE, workload

from zomboss.errors import ZombossError
from zomboss.mapping import space
from zomboss.program import Instr, Program
from zomboss.target import sidecar_path
from zomboss.verify import default_result

REG = re.compile(r"^(gp(1[0-5]|[0-9])|f[0-7]|a[0-7])$")
DEC = re.compile(r"^(0|[1-9][0-9]*)$")
# Immediate limits of PLENA's encoder (assembly_to_binary.py): imm18 fields, the legacy
# 17-bit M_MM_WO offset, imm22 for S_LUI_INT / C_LOOP_START.
IMM_LIMIT = {"S_ADDI_INT": 1 << 18, "S_LD_FP": 1 << 18, "S_ST_FP": 1 << 18, "S_MAP_V_FP": 1 << 18,
             "M_MM_WO": 1 << 17, "S_LUI_INT": 1 << 22, "C_LOOP_START": 1 << 22}  # fmt: skip
# A fourth operand of a matrix op or M_MM_WO is read as a matrix-view slot by PLENA's assembler.
EXACT_OPERANDS = {"M_MM": 3, "M_TMM": 3, "M_MM_WO": 3, "H_PREFETCH_M": 5, "H_PREFETCH_V": 5, "V_SUB_VF": 5}


def plena_assembler_accepts(text: str) -> list[str]:
    """Problems PLENA's parser/encoder would have with `text` (empty when none)."""
    problems = []
    for n, raw in enumerate(text.splitlines(), 1):
        line = raw.split("//")[0].split(";")[0].strip()
        if not line:
            continue
        if "#" in line:
            problems.append(f"{n}: '#' is not a comment for PLENA")
        op, _, rest = line.partition(" ")
        ops = [t.strip() for t in rest.split(",")] if rest.strip() else []
        if not ops:
            problems.append(f"{n}: an instruction without operands is skipped by PLENA's parser")
        for t in ops:
            if not (REG.match(t) or DEC.match(t)):
                problems.append(f"{n}: operand {t!r} is neither a register nor a decimal integer")
        if op in EXACT_OPERANDS and len(ops) != EXACT_OPERANDS[op]:
            problems.append(f"{n}: {op} with {len(ops)} operands")
        if op in IMM_LIMIT and DEC.match(ops[-1]) and int(ops[-1]) >= IMM_LIMIT[op]:
            problems.append(f"{n}: {op} immediate {ops[-1]} overflows its field")
    return problems


# The three largest FFNs repeat ffn_4x2880x2880's template (which has the largest addresses) at
# 100-300k lines each; leaving them out saves most of this file's time.
TEXT_CASES = [w for w in SUITE if w.id not in {"ffn_64x384x1408", "ffn_32x576x1536", "ffn_128x576x1536"}]


@pytest.mark.parametrize("wl", TEXT_CASES, ids=lambda w: w.id)
def test_exported_text_suits_plena_and_reads_back(cfg, wl) -> None:
    k = TARGET.kernel(TARGET.instance(wl, {}))
    text = program_text(cfg.kb, k.program, f"{wl.id}\nsecond header line")
    assert plena_assembler_accepts(text) == []
    back = parse_program(cfg.kb, text, "x.asm")
    assert [(i.op, i.args) for i in back.instrs] == [(i.op, i.args) for i in k.program.instrs]


def test_register_operands_get_their_prefixes(cfg) -> None:
    prog = Program(
        "plena", (Instr("H_PREFETCH_M", (1, 2, 3, 1, 0)), Instr("V_RED_SUM", (2, 5)), Instr("M_MM", (0, 4, 5)))
    )
    assert program_text(cfg.kb, prog).splitlines() == [
        "H_PREFETCH_M gp1, gp2, a3, 1, 0",
        "V_RED_SUM f2, gp5",
        "M_MM 0, gp4, gp5",
    ]


def test_export_refuses_what_plena_cannot_assemble(cfg) -> None:
    with pytest.raises(ZombossError, match="without operands"):
        program_text(cfg.kb, Program("plena", (Instr("C_BREAK", ()),)))
    with pytest.raises(ZombossError, match="unknown"):
        program_text(cfg.kb, Program("plena", (Instr("M_FOO", (1,)),)))


def test_sidecar_describes_the_layout(tmp_path: Path) -> None:
    wl = workload("attn_128c")
    out = TARGET.export(wl, tmp_path / "k.asm", {})
    side = sidecar_path(out)
    assert side.name == "k.asm.json"
    data = json.loads(side.read_text())
    assert data["workload"] == {"id": "attn_128c", "op": "attention", "shape": dict(wl.shape)}
    assert data["layout"]["fp_sram"] == {"0": 0.0, "1": 0.125, "2": "-inf"}
    assert [t["name"] for t in data["layout"]["hbm"]["inputs"]] == ["Q", "K", "V"]
    assert data["mapping"]["op"] == "attention" and data["params"]["mlen"] == 64
    wl2, layout, _ = read_sidecar(side)
    assert wl2 == wl and layout == TARGET.kernel(TARGET.instance(wl, {})).layout
    assert math.isinf(layout.fp_sram[2])


def test_simulate_file_verifies_with_the_sidecar_and_times_without(tmp_path: Path) -> None:
    wl = workload("sm_16x64")
    out = TARGET.export(wl, tmp_path / "sm.asm", {})
    r = TARGET.simulate_file(out, {})
    d = default_result(TARGET, wl, {})
    assert r.verified is True and r.cycles == d.cycles and r.workload == "sm_16x64"
    assert [g["seed"] for g in r.extra["gates"]] == [0, 1] and r.mapping == d.mapping
    side = sidecar_path(out)
    data = json.loads(side.read_text())
    data["layout"]["vram"]["output"]["base"] += 64  # point at the wrong rows
    side.write_text(json.dumps(data))
    assert TARGET.simulate_file(out, {}).verified is False
    side.unlink()
    bare = TARGET.simulate_file(out, {})
    assert bare.verified is None and bare.cycles == d.cycles and "no sidecar" in bare.extra["verify_reason"]


def test_simulate_file_honours_the_sidecar_seed_and_reports_the_diff(tmp_path: Path) -> None:
    wl = workload("sm_16x64")
    out = TARGET.export(wl, tmp_path / "sm.asm", {})
    side = sidecar_path(out)
    data = json.loads(side.read_text())
    data["seed"] = 5  # as the direct-generation baseline writes it
    side.write_text(json.dumps(data))
    r = TARGET.simulate_file(out, {})
    assert r.verified is True and [g["seed"] for g in r.extra["gates"]] == [5, 6] and r.extra["seed"] == 5
    assert r.extra["match_fraction"] == 1.0 and r.extra["diff"] == [] and r.extra["mismatching_rows"] == 0
    data["layout"]["vram"]["output"]["base"] += 64  # point at the wrong rows
    side.write_text(json.dumps(data))
    bad = TARGET.simulate_file(out, {})
    assert bad.verified is False and bad.extra["match_fraction"] < 1.0 and bad.extra["diff"]
    row = bad.extra["diff"][0]
    assert set(row) == {"row", "max_abs_err", "mismatching"} and row["mismatching"] >= 1
    assert len(bad.extra["diff"]) <= 16 and bad.extra["mismatching_rows"] >= len(bad.extra["diff"])


def test_export_of_a_mapping_writes_its_lowering(tmp_path: Path) -> None:
    wl = workload("rope_64x128")
    lib = TARGET.reference_mappings(wl, {})["library"]
    on_chip = space(TARGET.kb({}), "rope").mapping({**lib.as_dict(), "rotate": "on_chip"}, wl.shape)
    out = TARGET.export(wl, tmp_path / "r.asm", {}, mapping=on_chip)
    data = json.loads(sidecar_path(out).read_text())
    assert data["mapping"]["knobs"]["rotate"] == "on_chip"
    assert [t["name"] for t in data["layout"]["hbm"]["inputs"]] == ["X", "COS", "SIN"]
    assert TARGET.simulate_file(out, {}).verified is True


def test_bad_sidecar_is_a_clear_error(tmp_path: Path) -> None:
    out = TARGET.export(workload("rope_4x64"), tmp_path / "r.asm", {})
    sidecar_path(out).write_text("{broken")
    with pytest.raises(ZombossError, match=r"r\.asm\.json:1:2: invalid JSON"):
        TARGET.simulate_file(out, {})


def test_simulate_file_says_when_the_program_was_written_for_another_machine(tmp_path: Path) -> None:
    out = TARGET.export(workload("rope_4x64"), tmp_path / "r.asm", {"hbm_v_prefetch": 2})
    assert TARGET.simulate_file(out, {"hbm_v_prefetch": 2}).extra.get("written_for_other_params") is None
    assert TARGET.simulate_file(out, {}).extra["written_for_other_params"] == {"hbm_v_prefetch": 2}


# ---- issue #29, item 16: a sidecar layout that does not match the workload is named ---------------


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda L: L["hbm"]["inputs"][0].update(rows=8), "HBM input X is 8x384, but in rms_4x384 it is 4x384"),
        (lambda L: L["vram"]["output"].update(cols=64), "VRAM output is 4x64, but the result of rms_4x384 is 4x384"),
        (lambda L: L["vram"]["output"].update(phys_rows=0), "VRAM output of 4x384 in 0 physical rows"),
        (lambda L: L["hbm"]["inputs"][0].update(base=10**15), "HBM input X at HBM byte 1000000000000000 (1,728"),
        (lambda L: L["hbm"]["inputs"][0].update(base=-64), "HBM input X at HBM byte -64 (1,728 bytes) lies outside"),
        (lambda L: L["hbm"]["inputs"][0].update(name="Y"), "HBM inputs ['Y'] are not distinct inputs of rms_4x384"),
        (lambda L: L["vram"]["output"].update(vlen=0), "VRAM output rows of 0 elements, but VLEN is 64"),
    ],
)
def test_a_sidecar_layout_that_does_not_fit_the_workload_is_named(tmp_path, edit, message):
    import json

    from zomboss.target import get_target
    from zomboss.target.base import SidecarError

    t = get_target("plena")
    out = t.export(t.workload("rms_4x384"), tmp_path / "k.asm", {})
    side = tmp_path / "k.asm.json"
    data = json.loads(side.read_text())
    edit(data["layout"])
    side.write_text(json.dumps(data))
    with pytest.raises(SidecarError) as e:
        t.simulate_file(out, {})
    assert str(e.value) == f"{side}: layout: {message}" or str(e.value).startswith(f"{side}: layout: {message}")


@pytest.mark.parametrize("wid", ["lin_60m_q", "attn_64", "attn_128c", "rope_4x64", "sm_16x64", "ffn_64x64x128"])
def test_the_lowerings_own_layouts_pass_the_sidecar_check(wid):
    from zomboss.targets.plena.export import check_layout

    from zomboss.target import get_target

    t = get_target("plena")
    wl = t.workload(wid)
    inst = t.instance(wl, {}, 0)
    kernel = t.make_lowering(inst, t.reference_mappings(wl, {})["library"])
    shapes = {n: tuple(x.shape) for n, x in inst.inputs.items()}
    check_layout(Path("k.asm.json"), kernel.layout, wl, shapes, tuple(inst.reference.shape), t.config({}).vlen)
