"""PLENA's doc keeps `bf16` (float32-held) memories; switched to `bf16_packed` (2-byte BF16)
it computes the same kernels bit for bit. That is the check that the two element types differ
in storage only: VRAM, MRAM, FP SRAM and the f registers end with the same BF16 values, HBM,
INT SRAM and the other registers with the same bytes, on a kernel of every family and on one
that stores MXFP8 to HBM."""

from __future__ import annotations

import functools

import numpy as np
import pytest
from zomboss.targets.plena import TARGET
from zomboss.targets.plena.config import DOC
from zomboss.targets.plena.simulator import simulate

from zomboss.doc import parse_doc
from zomboss.knowledge import KB, compile_doc
from zomboss.machine import GenericSim, Memories, bf16_bits, bf16_from_bits, fp16_then_bf16

BF16 = ("mram", "vram", "fpsram", "f")  # the doc's bf16 memories and register file


@functools.lru_cache(maxsize=4)
def _packed_kb(params: tuple[tuple[str, int], ...]) -> KB:
    """PLENA's KB with every bf16 memory and register file declared bf16_packed."""
    text = DOC.read_text()
    assert text.count("type: bf16 }") == len(BF16)
    return compile_doc(parse_doc(text.replace("type: bf16 }", "type: bf16_packed }"), str(DOC)), "plena", dict(params))


@pytest.mark.parametrize(
    ("spec", "params"),
    [
        ("rms_4x384", {}),
        ("sm_16x64", {}),
        ("ffn_64x64x128", {}),
        ("attn_64", {}),
        ("rope_4x64", {}),
        ("linear:M=192,K=128,N=128", {"vram_rows": 512}),  # chunked: H_STORE_V writes MXFP8 to HBM
    ],
)
def test_plena_on_bf16_packed_memories_computes_what_it_does_on_bf16(spec: str, params: dict[str, int]) -> None:
    inst = TARGET.instance(TARGET.workload(spec), params)
    k = TARGET.kernel(inst, None)
    hbm0, fp = inst.staged(k.layout)
    img = hbm0.array()
    want = simulate(k.program, inst.cfg, hbm0, fpsram_init=fp, modes=(), check=True)
    packed_kb = _packed_kb(tuple(sorted(params.items())))
    runs = []
    for kb, packed in ((inst.cfg.kb, False), (packed_kb, True)):
        mem = Memories(kb, {"hbm": max(img.size, want.hbm.size)})
        mem.arrays["hbm"][: img.size] = img
        mem.arrays["fpsram"][: fp.size, 0] = bf16_bits(fp16_then_bf16(fp)) if packed else fp16_then_bf16(fp)
        GenericSim(kb).run(k.program.instrs, mem, check=True, timing=False)
        runs.append(mem.arrays)
    plain, packed_arrays = runs
    for name in plain:
        got = packed_arrays[name]
        if name in BF16:
            assert got.dtype == np.uint16 and got.nbytes * 2 == plain[name].nbytes, name
            got = bf16_from_bits(got)
        assert got.tobytes() == plain[name].tobytes(), name
    assert plain["vram"].tobytes() == want.vram.tobytes()  # and both are the hand-written result
