"""Which output blocks `--verify sampled` checks, and the JSON every target reports them in: one
choice of blocks for every target, so that a seed means the same sample everywhere."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def sample_blocks(shape: tuple[int, ...], n: int, seed: int) -> tuple[tuple[int, ...], ...]:
    """`n` distinct blocks (at least the first and the last; fewer if the grid is smaller) of a
    grid of `shape` blocks, the others drawn from the seed, in grid order."""
    total = int(np.prod(shape))
    want = min(max(n, 2), total)
    picks = {0, total - 1}
    rng = np.random.default_rng((seed, 0x5A3))
    while len(picks) < want:
        picks.add(int(rng.integers(total)))
    return tuple(tuple(int(x) for x in np.unravel_index(p, shape)) for p in sorted(picks))


def sample_json(
    blocks: Sequence[tuple[int, ...]], of: int, instructions: int, wrong: Sequence[tuple[int, ...]]
) -> dict[str, object]:
    """The fields of a `sampled` report every target gives: what was checked, of how many, at
    what cost, and which blocks failed."""
    return {
        "blocks": len(blocks),
        "of": of,
        "instructions": instructions,
        "sampled": [list(b) for b in blocks],
        "wrong": [list(b) for b in wrong],
    }
