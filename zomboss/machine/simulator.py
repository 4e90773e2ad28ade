"""A machine simulator generated from its ISA doc: the doc's rules, effects and timing.

`GenericSim(kb).run(instrs, ...)` executes a program instruction by instruction:
* the rules: `legality.Checker` (the same compiled rules the KB's ASP program holds) on
  every executed instruction, refusing the program on the first violation (CHECKED and
  VERIFIED modes);
* the data: each instruction's `effect` clauses interpreted on NumPy arrays
  (`zomboss.effects`, VERIFIED mode);
* the time: `timing.schedule` over the instructions' units, doc latencies, issue intervals and
  dependency tokens (`pops`/`pushes`), always.

A doc instruction declared `macro "end_of_stream"` is appended after the last instruction
(it is not encoded; rules on it see the machine at the end of the stream, e.g. "the stream
ends with FINISH", "every token pushed was popped").

Registers: every `regfile` is a memory of `count` one-value rows that effects read and write
(`gp[rd] = add(gp[rs1], imm) when rd != 0`); a register operand `x` has `x.val`, its content
before the instruction (a float format's bit pattern, `width` bits), in every expression and
rule. Register effects (all their targets and operands registers) run in every mode: they are
control state that addresses and loop counts depend on.

Counted hardware loops are built-in macros: `macro "loop_start"` opens a loop counted by the
instruction's first register operand (whose value its effects set), the body starting at the
next instruction; `macro "loop_end"` (after its effects ran) jumps back to the body of the
innermost loop counted by its first register operand while that register is non-zero, else
closes it; `macro "loop_break"` closes the innermost loop and zeroes its counter.

A timing-only run (no memories, no `check`) takes `fastrun.run_timing`: the same loop with each
instruction's timing-only body generated as one Python function from the doc (`fastpath.py`)
and its rows scheduled by `timing.schedule_rows`; results and refusals are those of the body of
`run` here, which stays the reference (`GenericSim.fast_timing = False`,
`tests/machine/test_fastpath.py`).

Any other `macro "NAME"` is the escape hatch for instructions that expand into a stream
(Gemmini's hardware loops): the target passes a hook factory per name (`macros`), one hook
per run. After the instruction itself ran (checked, its effects and `sets` applied), the hook
gets it with the machine's scalar state and returns the instructions it expands into, which
run like any other (checked, applied, timed, counted against the budget).
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from zomboss import expr as ex
from zomboss.doc import model as dm
from zomboss.errors import IllegalProgram, ZombossError
from zomboss.expr.ast import children
from zomboss.knowledge import KB, Violation, scope_names
from zomboss.legality import Checker
from zomboss.machine import effects as fx
from zomboss.machine import fastpath, fastrun, memories
from zomboss.machine.compiled import Applied, compile_effect
from zomboss.machine.memories import EffectError, Memories, View
from zomboss.machine.replay import replay_for
from zomboss.machine.timing import Op, Schedule, Span, channels, interlocked, queue_arrays, schedule, stalls
from zomboss.program import Instr
from zomboss.util import MAX_INSTRUCTIONS, LimitError

END_OF_STREAM = "end_of_stream"
LOOP_START, LOOP_END, LOOP_BREAK = "loop_start", "loop_end", "loop_break"
BUILTIN = frozenset({END_OF_STREAM, LOOP_START, LOOP_END, LOOP_BREAK})
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
    issue: Fn | None
    pops: list[tuple[str, Fn | None, Fn | None, int]]  # (queue, when, index, array size; 0: no array)
    pushes: list[tuple[str, Fn | None, Fn | None, int]]
    memory: bool  # its effects touch an external memory (the breakdown's "memory" class)
    regs: list[tuple[int, str, str]]  # (operand index, regfile, env name of its value)
    reg_effects: list[dm.Effect]  # effects on registers alone: run in every mode
    counter: int  # loop macros: the operand index of the counter register (-1: none)
    # footprints on interlocked memories and external memories with a channel, (memory, lo, hi,
    # when, writes), and interlocked register operands, (operand index, regfile, reads, writes):
    # the timing model's scoreboard and memory channels
    footprints: list[tuple[str, Fn, Fn, Fn | None, bool]] = field(default_factory=list)
    registers: list[tuple[int, str, bool, bool]] = field(default_factory=list)
    # the effects with how to apply each (a compiled closure, or the interpreter): every effect,
    # and the register effects alone (timing-only runs)
    applied: list[tuple[dm.Effect, Applied]] = field(default_factory=list)
    reg_applied: list[tuple[dm.Effect, Applied]] = field(default_factory=list)
    # what a fast simulator puts in the environment (None: everything, the interpreter's way), in a
    # functional run and in a timing-only one
    full: _Scope | None = None
    timed: _Scope | None = None


@dataclass(frozen=True)
class _Scope:
    """The part of an instruction's environment some run needs: the parameters, operand bit
    fields and state fields (env name, field; per `uses`) its expressions name, and its lets."""

    params: dict[str, Any]
    decoders: list[tuple[int, str, int, int]]
    fields: list[tuple[tuple[str, str], ...]]
    lets: list[tuple[str, Fn]]


def _scope(kb: KB, p: _Plan, named: set[str], lets: list[tuple[str, Fn]]) -> _Scope:
    return _Scope(
        {k: v for k, v in kb.params.items() if k in named},
        [d for d in p.decoders if d[1] in named],
        [tuple((f"{alias}.{f}", f) for f in kb.states[st][1] if f"{alias}.{f}" in named) for st, _, alias in p.uses],
        lets,
    )


def _timed_names(p: _Plan) -> tuple[set[str], list[tuple[str, Fn]]]:
    """What a timing-only run evaluates of an instruction: the names its latency, issue, tokens,
    accesses, setters, state indices and register effects mention, and the lets they need or
    that may raise (a division, a shift, a call: skipping one could hide its error)."""
    ins = p.ins
    exprs: list[object] = [ins.latency, ins.issue, ins.pops, ins.pushes, ins.reads, ins.writes, ins.sets, ins.uses]
    need = _named_in([*exprs, p.reg_effects])
    keep: list[tuple[str, Fn]] = []
    for (name, e), let in zip(reversed(ins.lets), reversed(p.lets), strict=True):
        if name in need or _may_raise(e):
            keep.append(let)
            need |= {r.name for r in ex.refs(e)}
    return need, keep[::-1]


def _may_raise(e: ex.Expr) -> bool:
    stack: list[ex.Expr] = [e]
    while stack:
        x = stack.pop()
        if isinstance(x, ex.Call) or (isinstance(x, ex.Bin) and x.op in ("/", "%", "<<", ">>")):
            return True
        stack.extend(children(x))
    return False


_EXPRS = (ex.Int, ex.Ref, ex.Sym, ex.Bin, ex.Un, ex.Call, ex.Cond, ex.InSet)


def _named_in(roots: list[object]) -> set[str]:
    """Every name any expression in `roots` (doc records, however deep) mentions."""
    out: set[str] = set()
    stack: list[object] = list(roots)
    while stack:
        x = stack.pop()
        if isinstance(x, _EXPRS):
            out |= {r.name for r in ex.refs(x)}
        elif isinstance(x, (tuple, list)):
            stack.extend(x)
        elif dataclasses.is_dataclass(x) and not isinstance(x, type):
            stack.extend(getattr(x, f.name) for f in dataclasses.fields(x))
    return out


def _register_use(ins: dm.Instr, name: str, rf: str) -> tuple[bool, bool]:
    """Whether an instruction reads and writes its register operand `name` of file `rf`: written
    when an effect assigns `rf[name]`; read when an effect reads `rf[name]`, an expression reads
    `name.val`, or it is not written (an operand nothing writes is there to be read)."""

    def at(view: str, e: ex.Expr) -> bool:
        return view == rf and isinstance(e, ex.Ref) and e.name == name

    assigns = [a for e in ins.effects for a in e.assigns]
    writes = any(at(a.target, a.index) for a in assigns)
    reads = any(at(x.name, x.expr) for a in assigns for x in a.args if x.kind == "ref")
    reads |= any(at(view, e) for eff in ins.effects for _, view, e in eff.reads)
    exprs = [e for _, e in ins.lets] + [e for e in (ins.latency, ins.issue) if e is not None]
    exprs += [e for eff in ins.effects for _, e in eff.lets] + [x.expr for a in assigns for x in a.args]
    reads |= any(r.name == f"{name}.val" for e in exprs for r in ex.refs(e))
    return reads or not writes, writes


def _plans(kb: KB, views: Mapping[str, View]) -> dict[str, _Plan]:
    # what the timing model needs footprints of
    tracked = interlocked(kb) | set(channels(kb)) | {s.on for s in stalls(kb)}
    arrays = queue_arrays(kb)
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
        regs = [(i, o.kind, f"{o.name}.val") for i, o in enumerate(ins.operands) if o.kind in kb.regfiles]

        def on_regs(e: dm.Effect) -> bool:
            names = {a.target for a in e.assigns} | {x.name for a in e.assigns for x in a.args if x.kind == "ref"}
            return all(n in kb.regfiles for n in names | {v for _, v, _ in e.reads}) and not any(
                lp.count is None for lp in e.loops
            )

        out[ins.name] = _Plan(
            ins,
            dec,
            [(u.state, comp(u.index), u.alias) for u in ins.uses],
            [(n, comp(e)) for n, e in ins.lets],
            [(s.state, comp(s.index), s.field, comp(s.value)) for s in ins.sets],
            comp(ins.latency),
            comp(ins.issue),
            [(t.queue, comp(t.when), comp(t.index), arrays.get(t.queue, 0)) for t in ins.pops],
            [(t.queue, comp(t.when), comp(t.index), arrays.get(t.queue, 0)) for t in ins.pushes],
            memory,
            regs,
            [e for e in ins.effects if on_regs(e)],
            regs[0][0] if regs and ins.macro in (LOOP_START, LOOP_END) else -1,
            [
                (a.memory, comp(a.lo), comp(a.hi), comp(a.when), w)
                for w, accesses in ((False, ins.reads), (True, ins.writes))
                for a in accesses
                if a.memory in tracked
            ],
            [(i, rf, *_register_use(ins, o.name, rf)) for i, rf, _ in regs if rf in tracked for o in [ins.operands[i]]],
        )
    return out


@dataclass
class Run:
    """What one simulation found: the schedule (cycles, breakdown), executed instructions,
    effect points applied, and the memories (None unless functional)."""

    schedule: Schedule
    instructions: int
    points: int
    memories: Memories | None
    wall_s: float
    counts: dict[str, int] = field(default_factory=dict)
    extrapolation: dict[str, int] | None = None  # what an extrapolating run replayed (replay.Replay.report)
    registers: Memories | None = field(default=None, repr=False)  # the registers at the end (every run)

    @property
    def cycles(self) -> int:
        return self.schedule.cycles


def _interpreted(eff: dm.Effect) -> Applied:
    return lambda mem, env: fx.apply(mem, eff, env)


class GenericSim:
    """The simulator of one KB (plans compiled once; `run` is reentrant). `fast=False` interprets
    every effect (`effects.apply`) instead of running the closures compiled per doc effect
    (`zomboss.machine.compiled`): the reference the compiled path is tested against. Timing-only
    runs take `fastrun.run_timing` unless `fast_timing` is set False (the reference it is
    tested against)."""

    def __init__(self, kb: KB, macros: Mapping[str, Callable[[], Hook]] | None = None, *, fast: bool = True) -> None:
        self.kb = kb
        self.fast = fast
        views = memories.views(kb)
        self.plans = _plans(kb, views)
        for p in self.plans.values():
            done = {id(e): (e, (compile_effect(views, e) if fast else None) or _interpreted(e)) for e in p.ins.effects}
            p.applied = [done[id(e)] for e in p.ins.effects]
            p.reg_applied = [done[id(e)] for e in p.reg_effects]
            if fast:
                p.full = _scope(kb, p, _named_in([p.ins]), p.lets)
                p.timed = _scope(kb, p, *_timed_names(p))
        self.end = [n for n, i in kb.instrs.items() if i.macro == END_OF_STREAM]
        self.views = views
        self.macros = dict(macros or {})
        missing = {i.macro for i in kb.instrs.values() if i.macro and i.macro not in BUILTIN} - set(self.macros)
        if missing:
            raise ZombossError(f"{kb.target}: no Python hook for macro(s) {', '.join(sorted(missing))}")
        for p in self.plans.values():
            if p.ins.macro in (LOOP_START, LOOP_END) and p.counter < 0:
                raise ZombossError(
                    f"{p.ins.loc}: {p.ins.name} ({p.ins.macro}) needs a register operand to count the loop"
                )
        # timing-only runs take the generated steps of `fastpath.py` (made at the first one);
        # False: the reference way (the body of `run`), what they are tested against
        self.fast_timing = fast
        self._kinds: dict[str, fastpath.Kind] | None = None

    @property
    def kinds(self) -> dict[str, fastpath.Kind]:
        """The generated timing-only step of each instruction the generator makes exact."""
        if self._kinds is None:
            self._kinds = fastpath.generate(self)
        return self._kinds

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
        memories: Memories | None = None,
        *,
        check: bool = False,
        max_instructions: int = MAX_INSTRUCTIONS,
        timing: bool = True,
        extrapolate: bool = False,
    ) -> Run:
        """Execute `instrs` (effects only with `memories`, rules only with `check`, the
        schedule only with `timing`; without it the run's schedule is empty). `extrapolate`:
        a timing-only run replays the steady iterations of hardware loops (`replay.py`) when
        the machine has no macro hooks; the run's `extrapolation` says what it replayed."""
        if memories is None and not check and timing and self.fast and self.fast_timing:
            return fastrun.run_timing(self, instrs, max_instructions, extrapolate)
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
        regmem = memories if memories is not None else Memories(kb, only=set(kb.regfiles))
        program = list(self.stream(instrs))
        loops: list[tuple[int, str, int]] = []  # open hardware loops: (body pc, regfile, register)
        pending: list[Iterator[Instr]] = []  # macro expansions under way
        rep = None
        if extrapolate and memories is None and checker is None and timing and not hooks:
            rep = replay_for(regmem, tuple(kb.regfiles))
        pc, n = 0, -1
        while pending or pc < len(program):
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
            plan = self.plans.get(instr.op)
            ok = plan is not None and len(instr.args) == len(plan.ins.operands)
            regvals = self._regvals(plan, instr, regmem) if ok else {}  # type: ignore[arg-type]
            if checker is not None:
                bad = checker.step(instr, regvals)
                if bad:
                    raise IllegalProgram(bad)
            if not ok:
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
            assert plan is not None
            env = self._env(plan, instr, state, regvals, plan.full if memories is not None else plan.timed)
            for eff, applied in plan.applied if memories is not None else plan.reg_applied:
                try:
                    points += applied(regmem, env)
                except EffectError as e:
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
                pops = self._tokens(plan.pops, env, n, instr) if plan.pops else ()
                pushes = self._tokens(plan.pushes, env, n, instr) if plan.pushes else ()
                issue = max(int(plan.issue(env)), 0) if plan.issue is not None else None
                reads, writes = self._footprints(plan, instr, env) if plan.footprints or plan.registers else ((), ())
                unit, line = plan.ins.unit, instr.line
                ops.append(Op(unit, max(lat, 0), pops, pushes, plan.memory, line, issue, reads, writes, instr.op))
            counts[instr.op] = counts.get(instr.op, 0) + 1
            for st, idx, fld, val in plan.sets:
                rec = state[st][idx(env)] if idx is not None else state[st]
                rec[fld] = val(env)
            macro = plan.ins.macro
            if macro in (LOOP_START, LOOP_END, LOOP_BREAK):
                if at < 0:
                    raise ZombossError(f"line {instr.line}: {instr.op} (a hardware loop) inside a macro's expansion")
                jump, depth = self._loop(macro, plan, instr, loops, at, regmem, n)
                if jump is not None:
                    pc = jump
                if rep is not None:
                    n, points = rep.at_loop(
                        regmem, loops, depth, jump is not None, ops, n, points, counts, state, max_instructions
                    )
                continue
            hook = hooks.get(macro)
            if hook is not None:
                if pending:
                    raise ZombossError(f"line {instr.line}: {instr.op} is a macro inside a macro's expansion")
                pending.append(iter(hook(instr, state)))
        sched = schedule(kb, ops)
        ext = rep.report() if rep is not None else None
        return Run(sched, n + 1, points, memories, time.perf_counter() - t0, counts, ext, regmem)

    @staticmethod
    def _loop(
        macro: str, plan: _Plan, instr: Instr, loops: list[tuple[int, str, int]], at: int, regs: Memories, n: int
    ) -> tuple[int | None, int]:
        """A built-in hardware-loop macro (after its effects ran): the next pc (None: the next
        instruction) and the depth of the loop it opened, closed or jumped back to."""
        if macro == LOOP_START:
            loops.append((at + 1, plan.ins.operands[plan.counter].kind, instr.args[plan.counter]))
            return None, len(loops) - 1
        if macro == LOOP_BREAK:
            if not loops:
                raise IllegalProgram([Violation("loop.open", f"{instr.op}: no open loop", "", n, instr.line, instr.op)])
            _, rf, r = loops.pop()
            regs.arrays[rf][r] = 0
            return None, len(loops)
        rf, r = plan.ins.operands[plan.counter].kind, instr.args[plan.counter]
        for k in range(len(loops) - 1, -1, -1):
            if loops[k][1:] == (rf, r):
                break
        else:
            raise IllegalProgram(
                [Violation("loop.open", f"{instr.op}: no open loop is counted by {rf}{r}", "", n, instr.line, instr.op)]
            )
        if regs.arrays[rf][r, 0]:
            return loops[k][0], k
        del loops[k]
        return None, k

    @staticmethod
    def _tokens(
        toks: list[tuple[str, Fn | None, Fn | None, int]], env: Mapping[str, Any], n: int, instr: Instr
    ) -> tuple[str, ...]:
        """The FIFOs an instruction pops or pushes (`Q[i]` for a queue array)."""
        out = []
        for q, when, index, size in toks:
            if when is not None and not when(env):
                continue
            if index is None:
                out.append(q)
                continue
            i = int(index(env))
            if not 0 <= i < size:
                msg = f"{instr.op}: token queue {q}[{i}] is outside {q}[0..{size - 1}]"
                raise IllegalProgram([Violation("queue.index", msg, "", n, instr.line, instr.op)])
            out.append(f"{q}[{i}]")
        return tuple(out)

    @staticmethod
    def _footprints(plan: _Plan, instr: Instr, env: Mapping[str, Any]) -> tuple[tuple[Span, ...], tuple[Span, ...]]:
        """What the instruction reads and writes of interlocked memories and registers, and of
        external memories with a channel."""
        reads: list[Span] = []
        writes: list[Span] = []
        for mem, lo, hi, when, w in plan.footprints:
            if when is None or when(env):
                (writes if w else reads).append((mem, int(lo(env)), int(hi(env))))
        for i, rf, r, w in plan.registers:
            at = int(instr.args[i])
            if r:
                reads.append((rf, at, at + 1))
            if w:
                writes.append((rf, at, at + 1))
        return tuple(reads), tuple(writes)

    def _regvals(self, plan: _Plan, instr: Instr, regs: Memories) -> dict[int, int]:
        """The register operands' contents before the instruction (a float format's bit
        pattern, as wide as the register file)."""
        out = {}
        for i, rf, _ in plan.regs:
            a = instr.args[i]
            arr = regs.arrays[rf]
            if not 0 <= a < len(arr):
                continue  # the range rule reports it
            v = arr[a, 0]
            if arr.dtype.kind == "f":
                width = self.kb.regfiles[rf].width
                out[i] = int(np.asarray(v, dtype=np.float32).view(np.uint32)) >> (32 - width)
            else:
                out[i] = int(v)
        return out

    def _env(
        self, plan: _Plan, instr: Instr, state: Mapping[str, Any], regvals: Mapping[int, int], scope: _Scope | None
    ) -> dict[str, Any]:
        """The names an instruction's expressions see (`scope`: only those a run needs)."""
        env: dict[str, Any] = dict(self.kb.params if scope is None else scope.params)
        args = instr.args
        for o, a in zip(plan.ins.operands, args, strict=True):
            env[o.name] = a
        for i, _, name in plan.regs:
            if i in regvals:
                env[name] = regvals[i]
        for i, name, shift, mask in plan.decoders if scope is None else scope.decoders:
            env[name] = (args[i] >> shift) & mask
        env["op"] = instr.op.lower()
        if scope is None:
            for st, idx, alias in plan.uses:
                rec = state[st][idx(env)] if idx is not None else state[st]
                for f, v in rec.items():
                    env[f"{alias}.{f}"] = v
        else:
            for (st, idx, _), fields in zip(plan.uses, scope.fields, strict=True):
                rec = state[st][idx(env)] if idx is not None else state[st]
                for name, f in fields:
                    if f in rec:
                        env[name] = rec[f]
        for name, fn in plan.lets if scope is None else scope.lets:
            env[name] = fn(env)
        return env
