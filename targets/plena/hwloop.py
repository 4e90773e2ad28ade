"""PLENA's hardware loops as the simulator runs them: straight-line blocks executed as a
whole (`Block`), the C_LOOP_START … C_LOOP_END loops whose iterations are alike and may be
extrapolated (`hw_loop`), and the least number of instructions a program executes
(`min_executed`: its loops multiplied out), which the instruction budget refuses by.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from zomboss.targets.plena import sem_scalar
from zomboss.targets.plena.decode import (
    Decoded,
)

from zomboss.knowledge import KB
from zomboss.machine import steady as steady
from zomboss.program import Instr, Program


class Block:
    """A straight-line run of the program, ending after its first loop-state change (a loop
    jumps back to the instruction after its C_LOOP_START), executed as a whole by the fast
    loop: `steps` are the instructions with something to run or a hazard probe, with their
    position in the block and whether the instruction right before them has a probe; `rtl`
    is the block's static rtl cost (the extrapolating run's clock adds it per execution)."""

    __slots__ = ("start", "end", "code", "src", "steps", "executions", "rtl")

    def __init__(self, start: int, code: list[Decoded], probing: bool, src: Sequence[Instr]) -> None:
        self.start, self.end, self.code, self.src = start, start + len(code), code, src  # src[start:end] runs
        steps = []
        prev_probed = False
        rtl = 0
        for i, d in enumerate(code):
            probe = d.probe if probing else None
            if probe is not None or d.run is not None:
                steps.append((probe, d.run, prev_probed, i))
            prev_probed = probe is not None
            if d.cost is not None:
                rtl += d.cost.rtl
        self.steps = tuple(steps)
        self.executions = 0
        self.rtl = rtl


@dataclass(frozen=True)
class HwLoop:
    """A hardware loop the extrapolating run may treat as `count` alike iterations: opened at
    `start` and closed at `end` by the same counter register, whose body (nested loops
    included) neither breaks out, writes the counter, nor touches the INT SRAM (a value
    stored there could steer a later address: state the linear registers do not carry)."""

    start: int
    end: int
    counter: int
    count: int
    work: int  # instructions one iteration executes (nested loops multiplied out)


_NO_STEADY = frozenset({"C_BREAK", "S_ST_INT", "S_LD_INT"})
# A loop executing fewer instructions than this is simulated: watching it for a steady state
# (a few marks and period tests, ~0.1 ms) would cost more than running it (256: measured best).
MIN_STEADY_WORK = 256


def hw_loop(instrs: Sequence[Instr], start: int) -> HwLoop | None:
    """The loop opened by the C_LOOP_START at `start`, if its iterations are alike (`HwLoop`)."""
    rd, count = instrs[start].args
    if rd == 0 or count < 1:
        return None
    open_regs: list[tuple[int, int]] = []  # nested loops: (counter, count)
    weight = work = 1
    for pc in range(start + 1, len(instrs)):
        ins = instrs[pc]
        op = ins.op
        work += weight
        if op in _NO_STEADY:
            return None
        if op == "C_LOOP_START":
            if ins.args[0] == rd:
                return None
            open_regs.append((ins.args[0], max(ins.args[1], 1)))
            weight *= open_regs[-1][1]
        elif op == "C_LOOP_END":
            if open_regs and open_regs[-1][0] == ins.args[0]:
                weight //= open_regs.pop()[1]
            elif not open_regs and ins.args[0] == rd:
                return HwLoop(start, pc, rd, count, work - 1)
            else:
                return None
        elif op in sem_scalar.GP_WRITERS and ins.args[0] == rd:
            return None
    return None


def min_executed(program: Program, kb: KB) -> int:
    """A lower bound of the instructions `program` executes when it runs to its end: its
    hardware loops multiplied out. A loop counts once when its body contains C_BREAK or names
    its counter register (which could end it early), or when the register that opened it
    does not close it. What the instruction budget refuses before a run starts."""
    gp_operands = {
        name: tuple(i for i, o in enumerate(sig.operands) if o.kind == "gp") for name, sig in kb.instrs.items()
    }
    stack: list[list[int]] = [[1, 0, -1, 0]]  # per open loop: count, instructions, counter register, counts once
    for ins in program.instrs:
        op, args = ins.op, ins.args
        regs = {args[i] for i in gp_operands.get(op, ()) if i < len(args)}
        for frame in stack[1:]:
            if op == "C_BREAK" or (frame[2] in regs and op not in ("C_LOOP_END", "C_LOOP_START")):
                frame[3] = 1
            if op == "C_LOOP_START" and regs & {frame[2]}:
                frame[3] = 1
        if op == "C_LOOP_START" and len(args) == 2:
            stack[-1][1] += 1
            stack.append([max(int(args[1]), 1), 0, int(args[0]), 0])
        elif op == "C_LOOP_END" and len(stack) > 1 and args[:1] == (stack[-1][2],):
            count, body, _, once = stack.pop()
            stack[-1][1] += body + 1 if once else count * (body + 1)
        else:
            if op == "C_LOOP_END":  # closes an outer loop early, or none
                for frame in stack[1:]:
                    frame[3] = 1
            stack[-1][1] += 1
    while len(stack) > 1:  # loops never closed: once
        stack[-2][1] += stack.pop()[1]
    return stack[0][1]
