"""Export: PLENA assembly text its own assembler accepts, plus a JSON sidecar.

Syntax facts of PLENA_Compiler's assembler (`assembler/parser.py`, `assembly_to_binary.py`)
that shape the text: comments are `;` or `//` (a `#` would be read as an operand); operands
are comma-separated; registers are `gpN`, `fN`, `aN`; immediates are decimal (it parses
them with `int()`, so no hex); matrix ops take exactly three operands (a fourth is read as
a matrix-view slot) and M_MM_WO exactly three; an instruction needs at least one operand
(a line with a bare mnemonic is skipped). The sidecar records what the program expects
around it: the workload, the machine parameters, the HBM placement of the MXFP8 inputs,
the VRAM layout of the output and work regions, and the FP SRAM preload.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from zomboss.errors import ZombossError
from zomboss.knowledge import KB
from zomboss.program import Program
from zomboss.target import sidecar_path, sidecar_seed
from zomboss.target.base import SidecarError
from zomboss.util import atomic_write, read_json
from zomboss.util.inputs import MAX_WORKLOAD_BYTES
from zomboss.workload import Workload

from .asm import register_positions
from .layout import Geometry, Kernel, KernelLayout

SIDECAR_FORMAT = "zomboss-plena-kernel/1"
_PREFIX = {"gp": "gp", "f": "f", "a": "a"}


def program_text(kb: KB, program: Program, header: str = "") -> str:
    """The program as PLENA assembly, one instruction per line."""
    lines = [f"; {h}" if h else ";" for h in header.splitlines()] if header else []
    cache: dict[str, dict[int, str]] = {}
    for ins in program.instrs:
        if ins.op not in kb.instrs:
            raise ZombossError(f"cannot export unknown PLENA instruction {ins.op!r}")
        if not ins.args:
            raise ZombossError(f"{ins.op}: PLENA's assembler skips instructions written without operands")
        pre = cache.get(ins.op)
        if pre is None:
            pre = {pos: _PREFIX[kind] for pos, kind in register_positions(kb, ins.op)}
            cache[ins.op] = pre
        lines.append(ins.text(pre))
    return "\n".join(lines) + "\n"


def sidecar(
    wl: Workload, layout: KernelLayout, geo: Geometry, extra: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    return {
        "format": SIDECAR_FORMAT,
        "target": "plena",
        "workload": {"id": wl.id, "op": wl.op, "shape": dict(wl.shape)},
        "params": {
            "mlen": geo.mlen,
            "vlen": geo.vlen,
            "blen": geo.blen,
            "hlen": geo.hlen,
            "hbm_m_prefetch": geo.pf_m,
            "hbm_v_prefetch": geo.pf_v,
            "hbm_v_writeback": geo.wb_v,
            "mram_tiles": geo.mram_tiles,
            "fpsram_size": geo.fpsram,
        },
        "layout": layout.to_json(),
        **(dict(extra) if extra else {}),
    }


def write(
    kb: KB, wl: Workload, kernel: Kernel, geo: Geometry, out: Path, extra: Mapping[str, Any] | None = None
) -> Path:
    """Write `out` (assembly) and its sidecar; returns `out`."""
    o, h = kernel.layout.output, kernel.layout.hbm_output
    header = "\n".join(
        [
            f"zomboss PLENA kernel for {wl.id} ({wl.spec})",
            f"source: {kernel.program.meta.get('source', '')}; {len(kernel.program)} instructions",
            "inputs (HBM, MXFP8 row-major then E8M0 scales): "
            + ", ".join(f"{t.name}[{t.rows}x{t.cols}]@{t.base}" for t in kernel.layout.inputs),
            f"output (VRAM, column-block-major BF16): {o.name}[{o.rows}x{o.cols}]@{o.base} ({o.phys_rows} physical rows)"
            if h is None
            else f"output (HBM, MXFP8 row-major then E8M0 scales, stored by H_STORE_V): {h.name}[{h.rows}x{h.cols}]@{h.base}"
            f"; VRAM row-chunk buffer {o.name}@{o.base}",
            "FP SRAM preload: " + ", ".join(f"[{k}]={v}" for k, v in sorted(kernel.layout.fp_sram.items())),
            f"layout sidecar: {sidecar_path(out).name}",
        ]
    )
    atomic_write(out, program_text(kb, kernel.program, header))
    atomic_write(sidecar_path(out), json.dumps(sidecar(wl, kernel.layout, geo, extra), indent=2) + "\n")
    return out


def read_sidecar(path: Path) -> tuple[Workload, KernelLayout, dict[str, Any]]:
    """(workload, layout, whole sidecar) of an exported kernel's sidecar file."""
    data = read_json(path, "a JSON sidecar")
    if not isinstance(data, dict) or data.get("format") != SIDECAR_FORMAT:
        raise ZombossError(f"{path}: not a {SIDECAR_FORMAT} sidecar")
    try:
        w = data["workload"]
        wl = Workload(id=str(w["id"]), op=str(w["op"]), shape={k: int(v) for k, v in w["shape"].items()})
    except (KeyError, TypeError, ValueError, AttributeError) as e:
        raise ZombossError(f"{path}: malformed workload entry ({type(e).__name__}: {e})") from None
    sidecar_seed(path, data)
    try:
        layout = KernelLayout.from_json(data.get("layout", {}))
    except (KeyError, TypeError, ValueError, AttributeError) as e:
        raise ZombossError(f"{path}: malformed layout entry ({type(e).__name__}: {e})") from None
    return wl, layout, data


def check_layout(
    path: Path,
    layout: KernelLayout,
    wl: Workload,
    inputs: Mapping[str, tuple[int, ...]],
    out: tuple[int, ...],
    vlen: int,
) -> None:
    """A sidecar's memory map must place the workload's own tensors: inputs of the workload,
    each once and in its shape (a kernel may compute an input rather than load it: RoPE's X_rot), each inside the HBM a verified workload may span (MAX_WORKLOAD_BYTES: a base of
    10^15 would be an allocation, not an address), the result in the reference's shape (in
    VRAM rows of VLEN with its padding rows, or in HBM). Each failure is one SidecarError
    naming the sidecar and the entry, instead of an error deep in the simulation."""
    where = f"{path}: layout"
    names = [t.name for t in layout.inputs]
    if not set(names) <= set(inputs) or len(set(names)) != len(names):
        raise SidecarError(f"{where}: HBM inputs {names} are not distinct inputs of {wl.id}, {sorted(inputs)}")
    tensors = [(f"HBM input {t.name}", t, inputs[t.name]) for t in layout.inputs]
    if layout.hbm_output is not None:
        tensors.append((f"HBM output {layout.hbm_output.name}", layout.hbm_output, out))
    for what, t, shape in tensors:
        if (t.rows, t.cols) != tuple(shape):
            raise SidecarError(f"{where}: {what} is {t.rows}x{t.cols}, but in {wl.id} it is {_dims(shape)}")
        if not 0 <= t.base <= MAX_WORKLOAD_BYTES - t.nbytes:
            raise SidecarError(
                f"{where}: {what} at HBM byte {t.base} ({t.nbytes:,} bytes) lies outside the "
                f"{MAX_WORKLOAD_BYTES >> 20} MiB an HBM image may span (docs/archdoc.md, Limits)"
            )
    o = layout.output
    if o.vlen != vlen:
        raise SidecarError(f"{where}: VRAM output rows of {o.vlen} elements, but VLEN is {vlen}")
    if not 1 <= o.rows <= o.phys_rows or o.cols < 1:
        raise SidecarError(
            f"{where}: VRAM output of {o.rows}x{o.cols} in {o.phys_rows} physical rows "
            "(expected 1 <= rows <= phys_rows and cols >= 1)"
        )
    if layout.hbm_output is None and (o.rows, o.cols) != tuple(out):
        raise SidecarError(f"{where}: VRAM output is {o.rows}x{o.cols}, but the result of {wl.id} is {_dims(out)}")


def _dims(shape: tuple[int, ...]) -> str:
    return "x".join(map(str, shape))
