"""`lowering.identity` (what `zomboss solve --exhaustive` tells a repeated program by without
lowering it) is sound: over every legal mapping of small linears, mappings with equal
identities lower to the same instructions. Shapes cover one and several K chunks, column
groups and row blocks, a ragged last row block, and row spans (a small VRAM)."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Hashable

import pytest
from zomboss.targets.plena import TARGET

from zomboss.mapping import KnobMapping, space
from zomboss.solvers.space import SizingModel, skeletons


@pytest.mark.parametrize(
    ("spec", "params"),
    [
        ("linear:M=64,K=256,N=192", {}),  # one row block, K chunks and column groups
        # the other two take half a minute together: `make test-slow`
        pytest.param("linear:M=132,K=128,N=128", {}, marks=pytest.mark.slow),  # three row blocks, the last partial
        pytest.param("linear:M=192,K=128,N=128", {"vram_rows": 512}, marks=pytest.mark.slow),  # row spans to HBM
    ],
)
def test_equal_identities_lower_alike(spec: str, params: dict[str, int]) -> None:
    wl = TARGET.workload(spec)
    kb = TARGET.kb(params)
    sp = space(kb, wl.op)
    inst = TARGET.instance(wl, params)
    groups: dict[Hashable, list[KnobMapping]] = defaultdict(list)
    for sk in (s.as_dict() for s in skeletons(kb, wl.op, wl.shape)):
        sizings, finished = SizingModel(sp, wl.shape, sk).every_sizing(60.0)
        assert finished
        for v in sizings:
            m = sp.from_skeleton(sk, v, wl.shape)
            ident = TARGET.program_identity(inst, m)
            assert ident is not None
            groups[ident].append(m)
    mappings = sum(len(ms) for ms in groups.values())
    assert len(groups) < mappings  # the identity does merge mappings
    for ms in groups.values():  # the first member against two others (all of them would take minutes)
        want = TARGET.lower(inst, ms[0]).instrs
        for m in {ms[len(ms) // 2].key(): ms[len(ms) // 2], ms[-1].key(): ms[-1]}.values():
            assert TARGET.lower(inst, m).instrs == want, (ms[0].key(), m.key())


def test_other_families_have_no_identity() -> None:
    wl = TARGET.workload("rms_4x384")
    inst = TARGET.instance(wl, {})
    assert TARGET.program_identity(inst, TARGET.reference_mappings(wl, {})["library"]) is None
