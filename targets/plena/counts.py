"""Executed-instruction counts of a PLENA program without simulating it.

PLENA has no branches besides hardware loops (C_LOOP_START n … C_LOOP_END), so how often
each instruction runs is the product of the trip counts of the loops around it. Tests pin
the reference's instruction-count formulas against these counts (per mnemonic:
`tests/targets/plena/conftest.dynamic_counts`) in milliseconds.
"""

from __future__ import annotations

from zomboss.errors import ZombossError
from zomboss.program import Program


def executions(program: Program) -> list[int]:
    """How many times each instruction executes (loop bodies weighted by their trip counts)."""
    weight = 1
    stack: list[tuple[int, int]] = []  # (counter register, trip count)
    out: list[int] = []
    for ins in program.instrs:
        if ins.op == "C_LOOP_START":
            out.append(weight)
            reg, n = ins.args[0], ins.args[1]
            stack.append((reg, n))
            weight *= n
        elif ins.op == "C_LOOP_END":
            if not stack or stack[-1][0] != ins.args[0]:
                raise ZombossError(f"C_LOOP_END gp{ins.args[0]} does not close the innermost loop")
            _, n = stack.pop()
            weight //= n
            out.append(weight * n)
        else:
            out.append(weight)
    if stack:
        raise ZombossError(f"unclosed hardware loop on gp{stack[-1][0]}")
    return out
