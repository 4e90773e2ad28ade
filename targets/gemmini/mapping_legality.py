"""Geometry the lowering shares with the doc's mapping constraints.

Mapping legality itself is written once, as the `mapping` constraints of gemmini.md §11, and
checked through the core (`zomboss.mapping.Space.check`); what remains here are the few
quantities the lowering computes the same way the constraints do.
"""

from __future__ import annotations


def live_acc_tiles(
    order: str, sub_i: int, sub_j: int, block_i: int, block_j: int, all_i: int, all_j: int, k_blocks: int
) -> int:
    """Accumulator tiles that must hold partial sums at once (the doc's `live_acc` let).

    With one reduction block, outputs complete inside a block, so only the sub-tile is live.
    Otherwise every output block whose loop runs inside the reduction loop stays live."""
    if k_blocks == 1:
        return min(sub_i, block_i) * min(sub_j, block_j)
    kpos = order.index("k")
    li = all_i if order.index("i") > kpos else block_i
    lj = all_j if order.index("j") > kpos else block_j
    return li * lj
