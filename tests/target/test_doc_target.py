"""`zomboss.target.doc_target.DocTarget`: the target protocol written once for machines whose
simulator comes from their doc, exercised through VTA (a suite, a lowering template and
Candidate-0 on top of it): workloads, the three evaluation modes, bounds, export and the
sidecar `simulate_file` verifies against."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np
import pytest

from zomboss.errors import WorkloadError
from zomboss.mapping import IllegalMapping, KnobMapping
from zomboss.target import DocInstance, DocTarget, Mode, get_target
from zomboss.target.base import SidecarError

SPEC = "dense:M=16,N=16,K=16"


@pytest.fixture(scope="module")
def vta() -> DocTarget:
    t = get_target("vta")
    assert isinstance(t, DocTarget)
    return t


def test_workloads_are_suite_ids_or_specs(vta: DocTarget) -> None:
    assert vta.workload("dense_128").shape["M"] == 128
    assert vta.workload(SPEC).shape == {"M": 16, "N": 16, "K": 16, "shift": 8, "relu": 1, "clip": 1}
    with pytest.raises(WorkloadError, match="not a vta suite id"):
        vta.workload("no_such_kernel")


def test_the_modes_agree_on_cycles_and_verified_compares_the_reference(vta: DocTarget) -> None:
    wl = vta.workload(SPEC)
    inst = vta.instance(wl, {})
    m = vta.reference_mappings(wl, {})["library"]
    runs = {mode: vta.evaluate(inst, m, mode) for mode in Mode}
    assert len({e.cycles for e in runs.values()}) == 1 and runs[Mode.TIMING].cycles > 0
    assert runs[Mode.TIMING].verified is None and runs[Mode.VERIFIED].verified is True
    wrong: DocInstance = dataclasses.replace(inst, reference=inst.reference ^ 1)
    assert vta.evaluate(wrong, m, Mode.VERIFIED).verified is False
    assert vta.bound(wl, {}) <= vta.bound(wl, {}, m) <= runs[Mode.TIMING].cycles


def test_an_illegal_mapping_is_refused_before_lowering(vta: DocTarget) -> None:
    wl = vta.workload(SPEC)
    m = vta.reference_mappings(wl, {})["library"]
    bad = KnobMapping(m.op, tuple((k, 10**6 if k == "tile_b" else v) for k, v in m.values))
    with pytest.raises(IllegalMapping):
        vta.make_lowering(vta.instance(wl, {}), bad)


def test_export_writes_a_sidecar_that_simulate_file_verifies(vta: DocTarget, tmp_path: Path) -> None:
    wl = vta.workload(SPEC)
    out = vta.export(wl, tmp_path / "k.asm", {})
    side = json.loads(out.with_name("k.asm.json").read_text())
    assert side["target"] == "vta" and side["workload"] == wl.id
    r = vta.simulate_file(out, {})
    assert r.verified is True
    assert r.cycles == vta.evaluate(vta.instance(wl, {}), vta.reference_mappings(wl, {})["library"], Mode.TIMING).cycles
    out.with_name("k.asm.json").write_text(json.dumps({**side, "workload": 7}))
    with pytest.raises(SidecarError, match="a sidecar is a JSON object"):
        vta.simulate_file(out, {})


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        ({"seed": "x"}, "'seed' must be an integer in 0..2^63-1, not 'x'"),
        ({"seed": -1}, "'seed' must be an integer in 0..2^63-1, not -1"),
        ({"seed": None}, "'seed' must be an integer in 0..2^63-1, not None"),
        ({"dram": 5}, "'dram' must be a list of [offset, hex bytes] pairs, not int"),
        ({"dram": [[0]]}, "'dram' entry 0 must be a pair [offset, hex bytes]"),
        ({"dram": [[0, "zz"]]}, "'dram' entry 0: not hex bytes"),
        ({"dram": [["0", "00"]]}, "'dram' entry 0: the offset must be an integer, not str"),
        ({"dram": [[-5, "0000"]]}, "'dram' entry 0: 2 bytes at offset -5 lie outside the workload's"),
        ({"dram": [[0, "00" * 200_000]]}, "'dram' entry 0: 200,000 bytes at offset 0 lie outside the workload's"),
        ({"dram": [[2**70, "00"]]}, "'dram' entry 0: 1 bytes at offset 1180591620717411303424 lie outside"),
        ({"workload": "dense:M=16,N=16,K=16,stride=0"}, "'workload': 'dense:M=16,N=16,K=16,stride=0': unknown key"),
    ],
)
def test_a_hostile_sidecar_is_named(vta: DocTarget, tmp_path: Path, edit: dict[str, object], message: str) -> None:
    """Issue #29, item 15: a negative DRAM offset or bytes past the image's end were NumPy
    broadcasting errors; each is now a message naming the sidecar and the entry."""
    out = vta.export(vta.workload(SPEC), tmp_path / "k.asm", {})
    side = out.with_name("k.asm.json")
    side.write_text(json.dumps({**json.loads(side.read_text()), **edit}))
    with pytest.raises(SidecarError) as e:
        vta.simulate_file(out, {})
    assert str(e.value).startswith(f"{side}: {message}")


TWO_MEMORIES = """
```isa
memory dram { external, type: int8 }
memory host { external, type: int8 }
view dram_b { of: dram, rows: 1, cols: 1, type: int8 }
view host_b { of: host, rows: 1, cols: 1, type: int8 }
instr PULL(n: int 0..64)
  unit dma
  reads host[0 : n]
  writes dram[0 : n]
  latency n
  effect over i < n { dram_b[i] = copy(host_b[i]) }
```
"""


def test_every_external_memory_is_sized_by_the_instance(tmp_path: Path) -> None:
    """A doc with a second external memory: the instance gives its size (a public field, no
    override of the target's internals), the run starts with it zeroed, and its effects see it."""
    from zomboss.doc import parse_doc
    from zomboss.knowledge import compile_doc
    from zomboss.program import Instr, Program
    from zomboss.workload import Workload

    kb = compile_doc(parse_doc(TWO_MEMORIES, "two.md"), "two", {})
    t = DocTarget()
    wl = Workload("pull", "pull", {"n": 8})
    inst = DocInstance(wl, {}, 0, np.full(16, 7, np.uint8), 0, np.zeros(8, np.uint8), memories={"host": 32})
    program = Program("two", [Instr("PULL", (8,))], {})
    mem = t.memories(kb, inst, program)
    assert len(mem.arrays["host"]) == 32 and len(mem.arrays["dram"]) == 16
    mem.arrays["host"][:8] = np.arange(1, 9, dtype=np.uint8)
    t.sim(kb).run(program.instrs, mem)
    assert mem.arrays["dram"][:10].tolist() == [1, 2, 3, 4, 5, 6, 7, 8, 7, 7]
    for bad in ({"nowhere": 4}, {"dram": 4}):
        with pytest.raises(WorkloadError, match="not an external memory of the doc other than 'dram'"):
            t.memories(kb, dataclasses.replace(inst, memories=bad), program)


def test_pack_image_lays_regions_out_in_order_at_the_alignment() -> None:
    """An instance's image in one call: arrays as their bytes (C order, even from a transposed
    view), sizes as zeroed room, each region at the next multiple of the alignment."""
    from zomboss.target import pack_image

    a = np.arange(6, dtype=np.int16).reshape(2, 3).T  # a non-contiguous view
    img, lay = pack_image({"head": 3, "a": a, "b": np.array([-1], np.int8), "out": 5}, align=8)
    assert lay == {"head": 0, "a": 8, "b": 24, "out": 32} and len(img) == 37 and img.dtype == np.uint8
    assert img[8:20].view(np.int16).tolist() == [0, 3, 1, 4, 2, 5] and img[24] == 0xFF
    assert not img[:8].any() and not img[20:24].any() and not img[25:].any()
    assert pack_image({"x": np.ones(3, np.uint8), "y": 2})[1] == {"x": 0, "y": 3}
