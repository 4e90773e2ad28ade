"""A linear larger than VRAM (targets/plena/lowering.py `linear_plan`): its rows go in spans
prefetched, computed and stored to HBM. A small VRAM (`vram_rows`) forces the spans on small
shapes, which are verified functionally with every rule checked: bit-exact against NumPy where
the reduction is one K chunk, and bit-identical to the whole-VRAM kernel's output after the
store's MXFP8 quantizer for every mapping tried. The 4096x8192x8192 linear times in well
under a second with the exact instruction counts of its loop nest."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from zomboss.targets.plena import TARGET
from zomboss.targets.plena.layout import Kernel
from zomboss.targets.plena.lowering import linear_plan
from zomboss.targets.plena.numerics import mx_fake_quant
from zomboss.targets.plena.verify import result, verify

from zomboss.errors import WorkloadError
from zomboss.mapping import KnobMapping, space
from zomboss.program import Program
from zomboss.target import Mode


def _mapping(spec: str, params: dict[str, int], **knobs: object) -> KnobMapping:
    wl = TARGET.workload(spec)
    vals = {k: ("true" if v else "false") if isinstance(v, bool) else v for k, v in knobs.items()}
    base = TARGET.reference_mappings(wl, params)["library"].as_dict()
    return space(TARGET.kb(params), wl.op).mapping({**base, **vals}, wl.shape)


def _kernel(spec: str, params: dict[str, int], **knobs: object) -> tuple[Kernel, object]:
    wl = TARGET.workload(spec)
    inst = TARGET.instance(wl, params)
    return TARGET.kernel(inst, _mapping(spec, params, **knobs)), inst


def test_a_fitting_linear_stays_in_vram() -> None:
    wl = TARGET.workload("lin_60m_q")
    m = TARGET.reference_mappings(wl, {})["library"]
    assert linear_plan(m, wl, TARGET.geometry({})).chunk is None
    kernel, _ = _kernel("lin_60m_q", {})
    assert kernel.layout.hbm_output is None
    assert not any(i.op == "H_STORE_V" for i in kernel.program.instrs)


def test_forced_spans_are_bit_exact_against_numpy() -> None:
    """One K chunk: the HBM output is NumPy's bf16(Xq·Wq) after the MXFP8 store, bit for bit."""
    params = {"vram_rows": 512}  # 128 rows of X and Y (K = N = 128) fill VRAM: spans of 128 + 64 rows
    kernel, inst = _kernel("linear:M=192,K=128,N=128", params)
    wl = TARGET.workload("linear:M=192,K=128,N=128")
    plan = linear_plan(_mapping(wl.id, params), wl, TARGET.geometry(params))
    assert plan.chunk == 128 and plan.spans == ((0, 128), (128, 64))
    ver = verify(kernel, [inst])
    assert ver.verified, ver.reason
    assert kernel.layout.hbm_output is not None
    assert np.array_equal(result(ver.run, kernel.layout), mx_fake_quant(inst.reference))
    assert ver.run.counts["H_STORE_V"] == 192 * 128 // (64 * 4)


@pytest.mark.parametrize(
    "knobs",
    [
        {},
        {"order": "col_outer", "m_block": 2, "add_rows": "valid"},
        {"hoist_csr": True, "n_block": 3},
        {"unroll": True, "tile_order": "r_oc_k"},
    ],
    ids=["default", "col_outer_m2_valid", "hoisted", "unrolled"],
)
def test_spans_compute_what_the_whole_vram_kernel_computes(knobs: dict[str, object]) -> None:
    """K split into BF16 partial sums, a partial row block, spans not a multiple of MLEN
    (VRAM for 16 rows): the stored output is the VRAM kernel's output after MXFP8, exactly."""
    spec, small = "linear:M=200,K=512,N=192", {"vram_rows": 400}
    kernel, inst = _kernel(spec, small, **knobs)
    assert kernel.program.meta["chunk_rows"] == 16
    ver = verify(kernel, [inst])
    assert ver.verified, ver.reason
    whole, inst0 = _kernel(spec, {}, **knobs)
    assert whole.layout.hbm_output is None
    want = result(verify(whole, [inst0]).run, whole.layout)
    assert np.array_equal(result(ver.run, kernel.layout), mx_fake_quant(want))


@pytest.mark.parametrize("op", ["H_STORE_V", "H_PREFETCH_V"])
def test_a_dropped_transfer_is_caught(op: str) -> None:
    kernel, inst = _kernel("linear:M=192,K=128,N=128", {"vram_rows": 512})
    instrs = list(kernel.program.instrs)
    last = max(i for i, ins in enumerate(instrs) if ins.op == op)
    broken = Kernel(Program("plena", tuple(instrs[:last] + instrs[last + 1 :])), kernel.layout)
    assert not verify(broken, [inst]).verified


def test_a_store_outside_the_output_is_caught() -> None:
    kernel, inst = _kernel("linear:M=192,K=128,N=128", {"vram_rows": 512})
    h = kernel.layout.hbm_output
    assert h is not None
    moved = dataclasses.replace(h, base=h.base + h.nbytes)  # the program now stores outside the declared output
    ver = verify(Kernel(kernel.program, dataclasses.replace(kernel.layout, hbm_output=moved)), [inst])
    assert not ver.verified and "HBM changed" in ver.reason


def test_no_span_fits_is_refused() -> None:
    with pytest.raises(WorkloadError, match="VRAM"):
        _kernel("linear:M=8,K=128,N=128", {"vram_rows": 64})


def test_the_4096x8192x8192_linear_times_in_seconds() -> None:
    """The issue's shape: every transfer and matrix instruction of the nest is counted."""
    wl = TARGET.workload("linear:M=4096,K=8192,N=8192")
    inst = TARGET.instance(wl, {})
    m = TARGET.reference_mappings(wl, {})["library"]
    ev = TARGET.evaluate(inst, m, Mode.TIMING)
    mm, k, n = 4096, 8192, 8192
    counts = ev.report["counts"]
    assert counts["M_MM"] == (mm // 4) * (k // 64) * (n // 4)
    assert counts["H_PREFETCH_V"] == mm * k // (64 * 4)  # every X row once
    assert counts["H_STORE_V"] == mm * n // (64 * 4)  # every Y row once
    assert counts["H_PREFETCH_M"] == (k // 64) * (n // 64) * (mm // 64)  # W per row block (m_block = 1)
    assert ev.cycles >= TARGET.bound(wl, {}) and ev.verified is None
    assert ev.report["sim_wall_s"] < 30


def test_an_exported_chunked_kernel_verifies_from_its_sidecar(tmp_path) -> None:
    """The sidecar declares the HBM output, so `zomboss simulate` verifies the file."""
    params = {"vram_rows": 512}
    out = TARGET.export(TARGET.workload("linear:M=192,K=128,N=128"), tmp_path / "k.asm", params)
    assert "output (HBM" in out.read_text().splitlines()[3]
    res = TARGET.simulate_file(out, params)
    assert res.verified is True and res.extra["match_fraction"] == 1.0


@settings(max_examples=8, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.filter_too_much])
@given(data=st.data())
def test_random_mappings_in_spans_compute_the_vram_kernel(data: st.DataObject) -> None:
    """Any legal mapping (integer knobs drawn small) in spans of a 256-row VRAM: legal, verified,
    and the VRAM kernel's output after MXFP8."""
    m_, k, n = (
        data.draw(st.sampled_from([68, 132])),
        data.draw(st.sampled_from([128, 320])),
        data.draw(st.sampled_from([64, 128])),
    )
    spec, small = f"linear:M={m_},K={k},N={n}", {"vram_rows": 256}
    wl = TARGET.workload(spec)
    sp = space(TARGET.kb(small), "linear")
    vals = {
        kn.name: data.draw(st.sampled_from(kn.values)) if kn.values else data.draw(st.integers(1, 4)) for kn in sp.knobs
    }
    m = sp.mapping(vals, wl.shape)
    assume(sp.violations(TARGET.kb(small), m, wl.shape) == [])
    inst = TARGET.instance(wl, small)
    kernel = TARGET.kernel(inst, m)
    assert kernel.layout.hbm_output is not None
    ver = verify(kernel, [inst])
    assert ver.verified, f"{m.key()}: {ver.reason}"
    inst0 = TARGET.instance(wl, {})
    whole = TARGET.kernel(inst0, sp.mapping(vals, wl.shape))
    assert np.array_equal(
        result(ver.run, kernel.layout), mx_fake_quant(result(verify(whole, [inst0]).run, whole.layout))
    )
