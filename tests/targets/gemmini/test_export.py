"""C export: golden text for a small matmul and conv, and a C compiler's syntax check.

The golden files pin the generated C byte for byte (regenerate them deliberately with
`ZOMBOSS_REGEN_GOLDEN=1`). The syntax check compiles each test with the host C compiler
against a stand-in header that declares every gemmini.h macro the exporter uses with the
arity gemmini.h gives it (ucb-bar/gemmini-rocc-tests include/gemmini.h), so a wrong
argument count or malformed C fails here, not on FireSim.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
from zomboss.targets.gemmini import TARGET
from zomboss.targets.gemmini.export import c_source, program_text

from zomboss.mapping import space
from zomboss.program import Program
from zomboss.target import sidecar_path

from .conftest import library_program

GOLDEN = Path(__file__).with_name("golden")

CASES = {
    "matmul_exo": ("matmul:M=20,N=24,K=40,bias=1,relu=1", "exo"),
    "matmul_hw": ("matmul:M=20,N=24,K=40,bias=1,relu=1", "library"),
    "conv_hw": ("conv:N=1,H=6,W=6,C=5,K=7,R=3,S=3,stride=2,pad=1", "library"),
    "conv_exo": ("conv:N=1,H=6,W=6,C=5,K=7,R=3,S=3,stride=2,pad=1", "exo"),
}


def source(case: str, straight_limit: int = 20000) -> str:
    spec, which = CASES[case]
    wl = TARGET.workload(spec)
    inst = TARGET.instance(wl, {})
    program = TARGET.lower(inst, TARGET.reference_mappings(wl, {})[which])
    bufs = inst.buffers
    addrs = {k: v for k, v in bufs.__dict__.items() if k != "scale_bits"}
    return c_source(wl, program, addrs, bufs.scale_bits, straight_limit=straight_limit)


@pytest.mark.parametrize("case", sorted(CASES))
def test_golden_c(case: str) -> None:
    text = source(case)
    path = GOLDEN / f"{case}.c"
    if os.environ.get("ZOMBOSS_REGEN_GOLDEN"):
        path.write_text(text)
    assert text == path.read_text()


def test_c_uses_the_gemmini_macros() -> None:
    mm, cv = source("matmul_exo"), source("conv_hw")
    for macro in ("gemmini_extended3_config_ex(", "gemmini_extended2_config_st(", "gemmini_extended5_config_ld(",
                  "gemmini_extended_mvin(", "gemmini_extended_mvin2(", "gemmini_extended_mvin3(",
                  "gemmini_extended_preload(", "gemmini_extended_compute_preloaded(", "gemmini_extended_mvout(",
                  "gemmini_fence();", "read_cycles()", "Correct result", "Wrong result",
                  '#include "include/gemmini_testutils.h"'):  # fmt: skip
        assert macro in mm
    assert "gemmini_loop_conv_ws(" in cv and source("matmul_hw").count("gemmini_loop_ws(") == 1


def test_long_streams_become_a_replayed_table() -> None:
    text = source("matmul_exo", straight_limit=10)
    assert "static const uint32_t prog[" in text and "switch (*p++)" in text
    assert "gemmini_extended_preload(" in text  # the switch still issues the macros


# every macro the exporter may emit, with its gemmini.h arity
_ARITY = {
    "gemmini_extended3_config_ex": 9, "gemmini_extended5_config_ld": 6, "gemmini_extended2_config_st": 12,
    "gemmini_extended_mvin": 4, "gemmini_extended_mvin2": 4, "gemmini_extended_mvin3": 4,
    "gemmini_extended_mvout": 4, "gemmini_extended_preload": 6, "gemmini_extended_compute_preloaded": 6,
    "gemmini_extended_compute_accumulated": 6, "gemmini_flush": 1, "gemmini_loop_ws": 23,
    "gemmini_loop_conv_ws": 54, "ROCC_INSTRUCTION_RS1_RS2": 4, "ACC_SCALE": 2,
}  # fmt: skip


def _stub_header() -> str:
    lines = [
        "#include <stdint.h>",
        "typedef int8_t elem_t;",
        "typedef int32_t acc_t;",
        "static void zb_use(int n, ...) { (void)n; }",
        "static uint64_t read_cycles(void) { return 0; }",
        "#define gemmini_fence() zb_use(0)",
        "#define XCUSTOM_ACC 3",
    ]
    for i, name in enumerate(
        [
            "k_LOOP_WS",
            "k_LOOP_WS_CONFIG_BOUNDS",
            "k_LOOP_WS_CONFIG_ADDRS_AB",
            "k_LOOP_WS_CONFIG_ADDRS_DC",
            "k_LOOP_WS_CONFIG_STRIDES_AB",
            "k_LOOP_WS_CONFIG_STRIDES_DC",
            "k_LOOP_CONV_WS",
            *(f"k_LOOP_CONV_WS_CONFIG_{j}" for j in range(1, 7)),
        ]  # fmt: skip
    ):
        lines.append(f"#define {name} {i + 8}")
    for name, n in _ARITY.items():
        params = ", ".join(f"a{i}" for i in range(n))
        body = (
            "(acc_t)((a0) * (a1))"
            if name == "ACC_SCALE"
            else f"zb_use({n}, {', '.join(f'(uint64_t)(a{i})' for i in range(n))})"
        )
        lines.append(f"#define {name}({params}) {body}")
    return "\n".join(lines) + "\n"


@pytest.mark.skipif(shutil.which("gcc") is None, reason="no host C compiler")
@pytest.mark.parametrize(("case", "limit"), [(c, 20000) for c in sorted(CASES)] + [("conv_exo", 10)])
def test_c_compiles(case: str, limit: int, tmp_path: Path) -> None:
    (tmp_path / "include").mkdir()
    (tmp_path / "include" / "gemmini_testutils.h").write_text(_stub_header())
    src = tmp_path / "test.c"
    src.write_text(source(case, straight_limit=limit))
    r = subprocess.run(["gcc", "-std=gnu11", "-fsyntax-only", "-Wall", "-Werror", "-I", str(tmp_path), str(src)],
                       capture_output=True, text=True, check=False)  # fmt: skip
    assert r.returncode == 0, r.stderr


def test_target_export_writes_c_program_and_sidecar(tmp_path: Path) -> None:
    wl = TARGET.workload("matmul:M=40,N=33,K=20")
    s = space(TARGET.kb({}), "matmul")
    values = {k.name: k.default for k in s.knobs}
    values.update(loop="sw", tile_i=3, tile_j=3, tile_k=2, acc_j=3, mvin_blocks_a=2, mvin_blocks_b=3, acc_init="zero",
                  order="ijk", reuse_a="true", reuse_b="true")  # fmt: skip
    m = s.mapping(values, wl.shape)
    out = TARGET.export(wl, tmp_path / "k.c", {}, mapping=m)
    asm = out.with_suffix(".asm")
    assert out.read_text().startswith("// matmul:") and asm.exists() and sidecar_path(asm).exists()
    back, want = TARGET.read_program(asm, {}), TARGET.lower(TARGET.instance(wl, {}), m)
    assert [(i.op, i.args) for i in back.instrs] == [(i.op, i.args) for i in want.instrs]  # the mapping's kernel
    res = TARGET.simulate_file(asm, {})
    assert res.verified is True and res.cycles > 0
    assert s.from_json(res.mapping, wl.shape) == m


def test_program_text_round_trips(tmp_path: Path) -> None:
    prog = library_program("conv:N=1,H=6,W=6,C=5,K=7,R=3,S=3,stride=2,pad=1")
    path = tmp_path / "p.asm"
    path.write_text(program_text(prog, "title"))
    back = TARGET.read_program(path, {})
    assert isinstance(back, Program) and [(i.op, i.args) for i in back.instrs] == [(i.op, i.args) for i in prog.instrs]
