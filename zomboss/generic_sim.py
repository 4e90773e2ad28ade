"""A machine simulator generated from its ISA doc: the doc's rules, effects and timing.

`GenericSim(kb).run(instrs, ...)` executes a program instruction by instruction:
* the rules: `legality.Checker` (the same compiled rules the KB's ASP program holds) on
  every executed instruction, refusing the program on the first violation (CHECKED and
  VERIFIED modes);
* the data: each instruction's `effect` clauses interpreted on NumPy arrays
  (`zomboss.effects`, VERIFIED mode);
* the time: `generic_timing.schedule` over the instructions' units, doc latencies and
  dependency tokens (`pops`/`pushes`), always.

A doc instruction declared `macro "end_of_stream"` is appended after the last instruction
(it is not encoded; rules on it see the machine at the end of the stream, e.g. "the stream
ends with FINISH", "every token pushed was popped").

Any other `macro "NAME"` is the escape hatch for instructions that expand into a stream
(Gemmini's hardware loops): the target passes a hook factory per name (`macros`), one hook
per run. After the instruction itself ran (checked, its effects and `sets` applied), the hook
gets it with the machine's scalar state and returns the instructions it expands into, which
run like any other (checked, applied, timed, counted against the budget).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from zomboss import docmodel as dm
from zomboss import effects as fx
from zomboss import expr as ex
from zomboss.errors import IllegalProgram, ZombossError
from zomboss.generic_timing import Op, Schedule, schedule
from zomboss.inputs import MAX_INSTRUCTIONS, LimitError
from zomboss.knowledge import KB, scope_names
from zomboss.legality import Checker, Violation
from zomboss.program import Instr

END_OF_STREAM = "end_of_stream"
Fn = Any
Hook = Callable[[Instr, Mapping[str, Any]], Iterable[Instr]]  # (instruction, state) -> expansion


@dataclass
class _Plan:
    ins: dm.Instr
    decoders: list[tuple[int, str, int, int]]
    uses: list[tuple[str, Fn | None, str]]
    lets: list[tuple[str, Fn]]
    sets: list[tuple[str, Fn | None, str, Fn]]
    latency: Fn | None
    pops: list[tuple[str, Fn | None]]
    pushes: list[tuple[str, Fn | None]]
    memory: bool  # its effects touch an external memory (the breakdown's "memory" class)


def _plans(kb: KB) -> dict[str, _Plan]:
    views = fx.views(kb)
    out = {}
    for ins in kb.instrs.values():
        names = scope_names(kb, ins) | set(kb.params)
        for u in ins.uses:
            names |= {f"{u.alias}.{f}" for f in kb.states[u.state][1]}

        def comp(e: ex.Expr | None, names: set[str] = names) -> Fn | None:
            if e is None:
                return None
            return ex.compile_python(e, lambda nm: nm in names, lambda nm: nm.lower() in kb.symbols)

        dec = [
            (i, f"{o.name}.{f}", lo, (1 << (hi - lo + 1)) - 1)
            for i, o in enumerate(ins.operands)
            if o.kind in kb.layouts
            for f, (hi, lo) in kb.layouts[o.kind].bits.items()
        ]
        touched = {a.target for e in ins.effects for a in e.assigns} | {
            x.name for e in ins.effects for a in e.assigns for x in a.args if x.kind == "ref"
        }
        memory = any(views[v].external for v in touched if v in views)
        out[ins.name] = _Plan(
            ins,
            dec,
            [(u.state, comp(u.index), u.alias) for u in ins.uses],
            [(n, comp(e)) for n, e in ins.lets],
            [(s.state, comp(s.index), s.field, comp(s.value)) for s in ins.sets],
            comp(ins.latency),
            [(t.queue, comp(t.when)) for t in ins.pops],
            [(t.queue, comp(t.when)) for t in ins.pushes],
            memory,
        )
    return out


@dataclass
class Run:
    """What one simulation found: the schedule (cycles, breakdown), executed instructions,
    effect points applied, and the memories (None unless functional)."""

    schedule: Schedule
    instructions: int
    points: int
    memories: fx.Memories | None
    wall_s: float
    counts: dict[str, int] = field(default_factory=dict)

    @property
    def cycles(self) -> int:
        return self.schedule.cycles


class GenericSim:
    """The simulator of one KB (plans compiled once; `run` is reentrant)."""

    def __init__(self, kb: KB, macros: Mapping[str, Callable[[], Hook]] | None = None) -> None:
        self.kb = kb
        self.plans = _plans(kb)
        self.end = [n for n, i in kb.instrs.items() if i.macro == END_OF_STREAM]
        self.views = fx.views(kb)
        self.macros = dict(macros or {})
        missing = {i.macro for i in kb.instrs.values() if i.macro and i.macro != END_OF_STREAM} - set(self.macros)
        if missing:
            raise ZombossError(f"{kb.target}: no Python hook for macro(s) {', '.join(sorted(missing))}")

    def stream(self, instrs: Iterable[Instr]) -> Iterator[Instr]:
        """The executed stream: the program, then the end-of-stream marker(s) the doc declares."""
        yield from instrs
        for n in self.end:
            yield Instr(n, ())

    def trace(self, instrs: Iterable[Instr]) -> Iterator[tuple[Instr, Mapping[int, int]]]:
        """What `kb check` checks (no registers: every operand is an immediate)."""
        for i in self.stream(instrs):
            yield i, {}

    def run(
        self,
        instrs: Iterable[Instr],
        memories: fx.Memories | None = None,
        *,
        check: bool = False,
        max_instructions: int = MAX_INSTRUCTIONS,
        timing: bool = True,
    ) -> Run:
        """Execute `instrs` (effects only with `memories`, rules only with `check`, the
        schedule only with `timing`; without it the run's schedule is empty)."""
        t0 = time.perf_counter()
        kb = self.kb
        checker = Checker(kb) if check else None
        state: dict[str, Any] = {
            n: ([dict(f) for _ in range(size)] if size is not None else dict(f)) for n, (size, f) in kb.states.items()
        }
        ops: list[Op] = []
        counts: dict[str, int] = {}
        points = 0
        hooks = {name: make() for name, make in self.macros.items()}
        pending: list[Iterator[Instr]] = [iter(self.stream(instrs))]
        n = -1
        while pending:
            instr = next(pending[-1], None)
            if instr is None:
                pending.pop()
                continue
            n += 1
            if n >= max_instructions:
                raise LimitError(f"the program executes more than {max_instructions:,} instructions")
            plan = self.plans.get(instr.op)
            if checker is not None:
                bad = checker.step(instr)
                if bad:
                    raise IllegalProgram(bad)
            if plan is None or len(instr.args) != len(plan.ins.operands):
                raise IllegalProgram(
                    [
                        Violation(
                            "isa.arity",
                            f"{instr.op}: unknown instruction or wrong operand count",
                            "",
                            n,
                            instr.line,
                            instr.op,
                        )
                    ]
                )
            env = self._env(plan, instr, state)
            if memories is not None:
                for eff in plan.ins.effects:
                    try:
                        points += fx.apply(memories, eff, env)
                    except fx.EffectError as e:
                        raise IllegalProgram(
                            [Violation("effect.bounds", str(e), str(e.loc), n, instr.line, instr.op, e.values)]
                        ) from None
                    except (ex.ExprError, ex.Undefined, ZeroDivisionError) as e:
                        raise IllegalProgram(
                            [
                                Violation(
                                    "effect.eval",
                                    f"cannot apply the effect: {e}",
                                    str(eff.loc),
                                    n,
                                    instr.line,
                                    instr.op,
                                )
                            ]
                        ) from None
            if timing:
                lat = int(plan.latency(env)) if plan.latency is not None else 1
                pops = tuple(q for q, w in plan.pops if w is None or w(env))
                pushes = tuple(q for q, w in plan.pushes if w is None or w(env))
                ops.append(Op(plan.ins.unit, max(lat, 0), pops, pushes, plan.memory, instr.line))
            counts[instr.op] = counts.get(instr.op, 0) + 1
            for st, idx, fld, val in plan.sets:
                rec = state[st][idx(env)] if idx is not None else state[st]
                rec[fld] = val(env)
            hook = hooks.get(plan.ins.macro)
            if hook is not None:
                if len(pending) > 1:
                    raise ZombossError(f"line {instr.line}: {instr.op} is a macro inside a macro's expansion")
                pending.append(iter(hook(instr, state)))
        sched = schedule(kb, ops)
        return Run(sched, n + 1, points, memories, time.perf_counter() - t0, counts)

    def _env(self, plan: _Plan, instr: Instr, state: Mapping[str, Any]) -> dict[str, Any]:
        env: dict[str, Any] = dict(self.kb.params)
        args = instr.args
        for o, a in zip(plan.ins.operands, args, strict=True):
            env[o.name] = a
        for i, name, shift, mask in plan.decoders:
            env[name] = (args[i] >> shift) & mask
        env["op"] = instr.op.lower()
        for st, idx, alias in plan.uses:
            rec = state[st][idx(env)] if idx is not None else state[st]
            for f, v in rec.items():
                env[f"{alias}.{f}"] = v
        for name, fn in plan.lets:
            env[name] = fn(env)
        return env
