"""Gemmini run by the generic simulator from its doc (`zomboss.generic_sim`): the doc's
`effect` clauses move the data, and the one escape hatch the doc declares — `macro
"gemmini.loops"` on the loop FSM instructions — expands `loop_ws` / `loop_conv_ws` into the
commands their FSMs issue with the same code the hand-written simulator uses (`loops`).

The hand-written simulator (`simulator.simulate`, `machine.Machine`) stays the oracle and
the fast path; `tests/targets/gemmini/test_generic.py` compares the two bit for bit.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
from zomboss.targets.gemmini.asm import LOOP_CONV_CONFIGS, LOOP_WS_CONFIGS
from zomboss.targets.gemmini.config import GemminiConfig
from zomboss.targets.gemmini.dram import Dram
from zomboss.targets.gemmini.loops import LoopFsm, expand_loop_conv_ws, expand_loop_ws
from zomboss.targets.gemmini.platform import check_loop
from zomboss.targets.gemmini.presets import Rtl, get_preset

from zomboss.machine import GenericSim, Memories, Run
from zomboss.program import Instr, Program
from zomboss.util import MAX_INSTRUCTIONS

MACRO = "gemmini.loops"
SLACK = 4096  # bytes past the last allocated one: an effect reads whole elements (an int32 at any byte)


@dataclass
class LoopHook:
    """The two loop unrollers of one run: configuration instructions fill their registers,
    `loop_ws` / `loop_conv_ws` expand into the FSMs' commands (checked like the hand-written
    simulator does: the RTL must run the loop as the program means it)."""

    cfg: GemminiConfig
    rtl: Rtl

    def __post_init__(self) -> None:
        self.ws, self.conv = LoopFsm(), LoopFsm()

    def __call__(self, ins: Instr, state: Mapping[str, Any]) -> Iterable[Instr]:
        if ins.op in LOOP_WS_CONFIGS:
            self.ws.configure(ins)
        elif ins.op in LOOP_CONV_CONFIGS:
            self.conv.configure(ins)
        elif ins.op == "loop_ws":
            check_loop(self.rtl, ins.op, self.ws.regs, ins.args, ins.line)
            return (i for i, _gen, _gate in expand_loop_ws(self.cfg, self.ws, ins).commands(ins.line))
        elif ins.op == "loop_conv_ws":
            check_loop(self.rtl, ins.op, self.conv.regs, ins.args, ins.line)
            scale = int(state["stc"]["scale_bits"])  # a pooled store re-issues config_st with it
            return (i for i, _gen, _gate in expand_loop_conv_ws(self.cfg, self.conv, ins, scale).commands(ins.line))
        return ()


def generic_sim(cfg: GemminiConfig, preset: str | None = None) -> GenericSim:
    """The doc-driven simulator of this configuration (None: its own preset's RTL), with the loop
    escape hatch."""
    rtl = get_preset(preset if preset is not None else cfg.preset).rtl
    return GenericSim(cfg.kb(), {MACRO: lambda: LoopHook(cfg, rtl)})


def run(
    program: Program,
    cfg: GemminiConfig,
    dram: Dram,
    *,
    check: bool = True,
    sim: GenericSim | None = None,
    max_instructions: int = MAX_INSTRUCTIONS,
) -> Run:
    """Run `program` functionally from the doc on a copy of `dram`'s bytes, which are then
    written back into `dram` (as the hand-written `simulate` modifies its DRAM in place)."""
    sim = sim if sim is not None else generic_sim(cfg)
    mem = Memories(sim.kb, {"dram": len(dram.mem) + SLACK})
    mem.arrays["dram"][: len(dram.mem)] = dram.mem
    out = sim.run(program.instrs, mem, check=check, max_instructions=max_instructions, timing=False)
    dram.mem[:] = mem.arrays["dram"][: len(dram.mem)]
    if np.any(mem.arrays["dram"][len(dram.mem) :]):
        dram.write(len(dram.mem), mem.arrays["dram"][len(dram.mem) :])  # grown like Dram grows
    return out
