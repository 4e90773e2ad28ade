"""PLENA mappings: plena.md §8 declares every knob, its domain, its condition and its
canonical value; this module adds only what the compiler chose and the legality check the
lowering runs first. Mappings are core `zomboss.mapping.KnobMapping`s (JSON
`{"op": ..., "knobs": {...}}`), read through `zomboss.mapping.space`.
"""

from __future__ import annotations

from zomboss.knowledge import KB
from zomboss.mapping import KnobMapping, space
from zomboss.workload import Workload


def library_default(kb: KB, wl: Workload) -> KnobMapping:
    """The PLENA compiler's choices for `wl`: every knob at its canonical value, which
    plena.md §8 gives as the compiler's own (`= V`), so this is Candidate-0's mapping."""
    sp = space(kb, wl.op)
    return sp.mapping({k.name: k.default for k in sp.knobs}, wl.shape, "library default")


def check(kb: KB, m: KnobMapping, wl: Workload) -> None:
    """Raise IllegalMapping naming every constraint of plena.md §8 that `m` breaks on `wl`."""
    space(kb, wl.op).check(kb, m, wl.shape)
