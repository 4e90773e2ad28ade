"""The driver of timing-only runs (`GenericSim.run` without memories and rules): it executes
the program with the steps `fastpath.py` generates, one per instruction, and schedules the rows
they append with `timing.schedule_rows`.

It is `GenericSim.run`'s loop with the reference's per-instruction body replaced: the same
order of instructions (macro expansions, hardware loops, the end-of-stream marker), the same
budget, the same refusals (an unknown instruction or a wrong operand count, a loop macro without
its loop, one inside a macro's expansion) and the same replay of steady loop iterations
(`replay.py`). An instruction without a generated step, or whose step declines it (returns None
before changing anything), runs the reference's way (`_reference_step`).
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

from zomboss import expr as ex
from zomboss.errors import IllegalProgram, ZombossError
from zomboss.knowledge import KB, Violation
from zomboss.machine.fastpath import LOOP_BREAK, LOOP_START, OpRow, Step, _bounds, _evalerr, _mv
from zomboss.machine.memories import EffectError, Memories
from zomboss.machine.replay import SHORT, replay_for
from zomboss.machine.timing import schedule_rows
from zomboss.program import Instr
from zomboss.util import LimitError

if TYPE_CHECKING:
    from zomboss.machine.simulator import GenericSim, Run, _Plan


def _register_views(kb: KB, regmem: Memories) -> dict[str, memoryview]:
    """The run's registers as flat memoryviews (floats: their bit patterns, as uint32)."""
    out = {}
    for rf in kb.regfiles:
        arr = regmem.arrays[rf]
        if arr.ndim != 2 or arr.shape[1] != 1 or not arr.flags.c_contiguous:
            continue
        out[rf] = _mv(arr, np.uint32 if arr.dtype == np.float32 else arr.dtype)
        if arr.dtype == np.float32:
            out[f"{rf}:f"] = _mv(arr, np.float32)  # its values, as Python floats
    return out


def _reference_step(
    sim: GenericSim, plan: _Plan, instr: Instr, state: Mapping[str, Any], regmem: Memories, n: int
) -> tuple[OpRow, int]:
    """One instruction the reference way (`GenericSim.run`'s timing-only body)."""
    regvals = sim._regvals(plan, instr, regmem)
    env = sim._env(plan, instr, state, regvals, plan.timed)
    points = 0
    for eff, applied in plan.reg_applied:
        try:
            points += applied(regmem, env)
        except EffectError as e:
            raise _bounds(e, n, instr) from None
        except (ex.ExprError, ex.Undefined, ZeroDivisionError) as e:
            raise _evalerr(e, eff, n, instr) from None
    lat = int(plan.latency(env)) if plan.latency is not None else 1
    pops = sim._tokens(plan.pops, env, n, instr) if plan.pops else ()
    pushes = sim._tokens(plan.pushes, env, n, instr) if plan.pushes else ()
    issue = max(int(plan.issue(env)), 0) if plan.issue is not None else None
    reads, writes = sim._footprints(plan, instr, env) if plan.footprints or plan.registers else ((), ())
    row = (plan.ins.unit, max(lat, 0), pops, pushes, plan.memory, instr.line, issue, reads, writes, instr.op)
    for st, idx, fld, val in plan.sets:
        rec = state[st][idx(env)] if idx is not None else state[st]
        rec[fld] = val(env)
    return row, points


def _loop(
    macro: str, rf: str, r: int, mv: memoryview | None, loops: list[tuple[int, str, int]], at: int, regs: Memories
) -> tuple[int | None, int]:
    """`GenericSim._loop` (after the macro's effects ran) with its counter register `rf`[`r`]
    (`mv`: its file's memoryview, None for a float file): the next pc (None: the next
    instruction) and the depth of the loop it opened, closed or jumped back to; None, -1: no
    open loop to close (the caller refuses the program)."""
    if macro == LOOP_START:
        loops.append((at + 1, rf, r))
        return None, len(loops) - 1
    if macro == LOOP_BREAK:
        if not loops:
            return None, -1
        _, brf, br = loops.pop()
        regs.arrays[brf][br] = 0
        return None, len(loops)
    k = len(loops) - 1
    while k >= 0:
        _, lrf, lr = loops[k]
        if lr == r and lrf == rf:
            break
        k -= 1
    else:
        return None, -1
    if mv[r] if mv is not None and 0 <= r < len(mv) else regs.arrays[rf][r, 0]:
        return loops[k][0], k
    del loops[k]
    return None, k


def run_timing(sim: GenericSim, instrs: Any, max_instructions: int, extrapolate: bool) -> Run:
    """`GenericSim.run(instrs)` timing-only (no memories, no rules), the same result."""
    from zomboss.machine.simulator import Run

    t0 = time.perf_counter()
    kb = sim.kb
    state: dict[str, Any] = {
        n: ([dict(f) for _ in range(size)] if size is not None else dict(f)) for n, (size, f) in kb.states.items()
    }
    ops: list[OpRow] = []
    append = ops.append
    counts: dict[str, int] = {}
    points = 0
    hooks = {name: make() for name, make in sim.macros.items()}
    regmem = Memories(kb, only=set(kb.regfiles))
    regviews = _register_views(kb, regmem)
    kinds = sim.kinds
    plans = sim.plans
    # per mnemonic: (operands, its bound step or None, its macro, its loop counter's register file)
    info: dict[str, tuple[int, Step | None, str | None, str]] = {}
    for name, p in plans.items():
        step: Step | None = None
        if name in kinds:
            try:
                step = kinds[name].make(regviews, state, regmem, append)
            except KeyError:
                step = None  # a register file without a flat view: the reference's way
        rf = p.ins.operands[p.counter].kind if p.counter >= 0 else ""
        info[name] = (len(p.ins.operands), step, p.ins.macro or None, rf)
    ints = {rf: regviews[rf] for rf in kb.regfiles if rf in regviews and regmem.arrays[rf].dtype.kind != "f"}
    program = list(sim.stream(instrs))
    size = len(program)
    loops: list[tuple[int, str, int]] = []
    pending: list[Iterator[Instr]] = []
    rep = None
    if extrapolate and not hooks:
        rep = replay_for(regmem, tuple(kb.regfiles))
    pc, n = 0, -1
    while pending or pc < size:
        if pending:
            got = next(pending[-1], None)
            if got is None:
                pending.pop()
                continue
            instr, at = got, -1
        else:
            instr, at = program[pc], pc
            pc += 1
        n += 1
        if n >= max_instructions:
            raise LimitError(f"the program executes more than {max_instructions:,} instructions")
        op = instr.op
        args = instr.args
        entry = info.get(op)
        if entry is None or entry[0] != len(args):
            raise IllegalProgram(
                [Violation("isa.arity", f"{op}: unknown instruction or wrong operand count", "", n, instr.line, op)]
            )
        _, step, macro, crf = entry
        pts = step(args, instr, n) if step is not None else None
        if pts is None:
            row, pts = _reference_step(sim, plans[op], instr, state, regmem, n)
            append(row)
        points += pts
        counts[op] = counts.get(op, 0) + 1
        if macro is None:
            continue
        if crf or macro == LOOP_BREAK:
            if at < 0:
                raise ZombossError(f"line {instr.line}: {op} (a hardware loop) inside a macro's expansion")
            r = args[plans[op].counter] if crf else 0
            mv = ints.get(crf)
            jump, depth = _loop(macro, crf, r, mv, loops, at, regmem)
            if depth < 0:
                msg = f"{op}: no open loop" if macro == LOOP_BREAK else f"{op}: no open loop is counted by {crf}{r}"
                raise IllegalProgram([Violation("loop.open", msg, "", n, instr.line, op)])
            if jump is not None:
                pc = jump
            # without a watcher, the replay has nothing to do but at a jump back to a loop with
            # SHORT iterations or more left (what `Replay.wants` asks first)
            if rep is not None and (rep.open or (jump is not None and (mv is None or mv[r] >= SHORT))):
                n, points = rep.at_loop(
                    regmem, loops, depth, jump is not None, ops, n, points, counts, state, max_instructions
                )
            continue
        hook = hooks.get(macro)
        if hook is not None:
            if pending:
                raise ZombossError(f"line {instr.line}: {op} is a macro inside a macro's expansion")
            pending.append(iter(hook(instr, state)))
    sched = schedule_rows(kb, ops, rep.segments if rep is not None else ())
    ext = rep.report() if rep is not None else None
    return Run(sched, n + 1, points, None, time.perf_counter() - t0, counts, ext, regmem)
