"""A functional and timed simulation runs as two passes (functional with the rule checker,
then the timing model alone); timing reads no data, so the two-pass run must give exactly the
cycles, breakdown and statistics of the timing model run beside the data movement in one pass.
Candidate-0, legal single-knob edits of it (hardware loops) and random legal mappings (CPU
streams) of both op families, on both presets."""

from __future__ import annotations

import random

import pytest
from zomboss.targets.gemmini.presets import get_preset
from zomboss.targets.gemmini.simulator import _simulate, simulate

from tests.random_mappings import random_mapping
from zomboss.mapping import MappingError, iter_knob_edits, space
from zomboss.target import get_target

WORKLOADS = ("matmul:M=40,N=56,K=72,bias=1,relu=0", "conv:N=1,H=9,W=9,C=24,K=40,R=3,S=3,stride=2,pad=1,bias=1,relu=1")


def mappings(spec: str) -> list:
    t = get_target("gemmini")
    wl = t.workload(spec)
    kb = t.kb({})
    sp = space(kb, wl.op)
    rng = random.Random(spec)
    c0 = t.reference_mappings(wl, {})["library"]
    edits = []
    for name, value in iter_knob_edits(sp, c0, wl.shape):
        try:
            m = sp.mapping({**c0.as_dict(), name: value}, wl.shape)
        except MappingError:
            continue
        if m.as_dict()["loop"] == "hw" and not sp.violations(kb, m, wl.shape):
            edits.append(m)
    out = [c0, *rng.sample(edits, 4)]
    while len(out) < 7:
        m = random_mapping(t, wl, rng.randint(0, 10_000), [rng.randint(-3, 3) for _ in range(16)], within=8.0)
        if m is not None and m.as_dict()["loop"] == "sw":
            out.append(m)
    return out


@pytest.mark.parametrize("spec", WORKLOADS)
@pytest.mark.parametrize("preset", ["firesim-f1-llc", "firesim-f1-llc-current"])
def test_two_passes_time_exactly_as_one(spec, preset):
    t = get_target("gemmini")
    wl = t.workload(spec)
    p = get_preset(preset)
    for m in mappings(spec):
        inst = t.instance(wl, {}, 0)
        program = t.lower(inst, m)
        one = _simulate(program, inst.cfg, inst.dram(), p, functional=True, timing=True, check=True)
        two = simulate(program, inst.cfg, inst.dram(), preset=p)
        assert (two.cycles, two.breakdown, two.counts) == (one.cycles, one.breakdown, one.counts), m.key()
        assert two.stats == one.stats, m.key()
        assert inst.verify(two.dram), m.key()
