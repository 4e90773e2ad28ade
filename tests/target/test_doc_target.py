"""`zomboss.target.doc_target.DocTarget`: the target protocol written once for machines whose
simulator comes from their doc, exercised through VTA (a suite, a lowering template and
Candidate-0 on top of it): workloads, the three evaluation modes, bounds, export and the
sidecar `simulate_file` verifies against."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

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
