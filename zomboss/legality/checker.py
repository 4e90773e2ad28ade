"""Rule checks in Python, compiled from the same doc rules as the ASP KB.

Simulators call `Checker.step` for every instruction they execute (including those a
hardware loop generates) and refuse the program on the first violation; `kb check` runs a
whole program through both this checker and clingo (and the tests insist they agree).
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from zomboss import expr as ex
from zomboss.doc import model as dm
from zomboss.errors import IllegalProgram, ZombossError
from zomboss.expr import vector as vx
from zomboss.knowledge import KB, Violation, scope_names
from zomboss.knowledge.asp import needed
from zomboss.program import Instr

Fn = Callable[[Mapping[str, Any], Mapping[str, Any]], Any]


@dataclass
class _Plan:
    """Everything needed to check one mnemonic, compiled once."""

    ins: dm.Instr
    decoders: list[tuple[int, str, int, int]]  # (operand index, env name, shift, mask)
    regs: list[tuple[int, str]]  # (operand index, env name of its value)
    uses: list[tuple[str, Fn | None, str, list[tuple[str, str]]]]  # (state, index fn, alias, (env name, field))
    lets: list[tuple[str, Fn]]
    rules: list[tuple[dm.Rule, list[str]]]  # rule, names to report when it fails
    failing: Callable[[Mapping[str, Any], Mapping[str, Any]], list[int]]  # indexes of broken rules
    reads: list[tuple[str, Fn, Fn, Fn | None]]  # (memory, lo, hi, when)
    writes: list[tuple[str, Fn, Fn, Fn | None]]
    sets: list[tuple[str, Fn | None, str, Fn]]


def _resolver(kb: KB, own: set[str]) -> Callable[[ex.Ref], str]:
    params = kb.params

    def resolve(r: ex.Ref) -> str:
        n = r.name
        if n in own:
            return f"env[{n!r}]"
        if n.startswith("prev."):
            return f"prev[{n[5:]!r}]"
        if n in params:
            return repr(params[n])
        if len(r.parts) == 1 and n.lower() in kb.symbols:
            return repr(n.lower())
        raise ex.ExprError(f"unknown name {n!r}")

    return resolve


def _compile(kb: KB, e: ex.Expr, own: set[str]) -> Fn:
    src = ex.python_source(e, _resolver(kb, own))
    fn: Fn = eval(compile(f"lambda env, prev: {src}", "<rule>", "eval"), ex.PY_GLOBALS)  # noqa: S307 - our own doc AST
    return fn


def _compile_failing(
    kb: KB, rules: list[dm.Rule], own: set[str]
) -> Callable[[Mapping[str, Any], Mapping[str, Any]], list[int]]:
    """One function evaluating all of a mnemonic's rules (the hot path of every simulator):
    returns the indexes of the rules that do not hold. An undefined expression — a missing
    value (no previous instruction in the unit, an undefined let), a division by zero, a
    shift out of range — counts as not holding (expr.py: one semantics with the ASP side)."""
    resolve = _resolver(kb, own)
    lines = ["def failing(env, prev):", "    out = []"]
    for i, r in enumerate(rules):
        src = ex.python_source(r.expr, resolve)
        lines += [
            "    try:",
            f"        if not ({src}):",
            f"            out.append({i})",
            "    except _Undefined:",
            f"        out.append({i})",
        ]
    lines.append("    return out")
    ns: dict[str, Any] = {**ex.PY_GLOBALS, "_Undefined": ex.EVAL_ERRORS}
    exec(compile("\n".join(lines), "<rules>", "exec"), ns)  # noqa: S102 - generated from our own doc AST
    failing: Callable[[Mapping[str, Any], Mapping[str, Any]], list[int]] = ns["failing"]
    return failing


_BIG = 1 << ex.MAX_BITS  # named values lie strictly between -_BIG and _BIG


def _reason(e: BaseException) -> str:
    if isinstance(e, ZeroDivisionError):
        return "division by zero"
    if isinstance(e, KeyError):
        return f"no value for {e.args[0]!r}" if e.args else "a missing value"
    return str(e) or type(e).__name__


class _Writes:
    """The ranges [lo, hi) written since the last fence, answering "does [a, b) overlap
    one of them" (lo < b and a < hi, exactly as the ASP hazard rule compares) in log time:
    only writes not dominated by another (lower or equal lo and higher or equal hi) are kept,
    sorted by lo, so their hi increase too and the last one with lo < b has the largest hi."""

    def __init__(self) -> None:
        self.los: list[int] = []
        self.his: list[int] = []
        self.lines: list[int] = []
        self._arrays: tuple[np.ndarray, np.ndarray] | None = None

    def add(self, lo: int, hi: int, line: int) -> None:
        i = bisect.bisect_right(self.los, lo)
        if i and self.his[i - 1] >= hi:
            return  # dominated by an earlier-starting, later-ending write
        j = i
        while j < len(self.los) and self.his[j] <= hi:
            j += 1  # writes starting at or after lo that end no later are dominated now
        self.los[i:j], self.his[i:j], self.lines[i:j] = [lo], [hi], [line]
        self._arrays = None

    def arrays(self) -> tuple[np.ndarray, np.ndarray]:
        """los and his as int64 arrays (for `Checker.block`; vx.Unsupported beyond int64)."""
        if self._arrays is None:
            try:
                self._arrays = (np.array(self.los, dtype=np.int64), np.array(self.his, dtype=np.int64))
            except OverflowError:
                raise vx.Unsupported("write ranges beyond int64") from None
        return self._arrays

    def copy(self) -> _Writes:
        out = _Writes()
        out.los, out.his, out.lines = list(self.los), list(self.his), list(self.lines)
        return out

    def overlapping(self, a: int, b: int) -> tuple[int, int, int] | None:
        i = bisect.bisect_left(self.los, b)  # writes with lo < b are self.los[:i]
        if i and self.his[i - 1] > a:
            return self.los[i - 1], self.his[i - 1], self.lines[i - 1]
        return None

    def clear(self) -> None:
        self.los.clear()
        self.his.clear()
        self.lines.clear()
        self._arrays = None


def _compile_plans(kb: KB) -> dict[str, _Plan]:
    """Each mnemonic's checks compiled for `Checker.step`."""
    plans: dict[str, _Plan] = {}
    for ins in kb.instrs.values():
        own = scope_names(kb, ins)
        decoders, regs = [], []
        for i, o in enumerate(ins.operands):
            if o.kind in kb.layouts:
                for f, (hi, lo) in kb.layouts[o.kind].bits.items():
                    decoders.append((i, f"{o.name}.{f}", lo, (1 << (hi - lo + 1)) - 1))
            if o.kind in kb.regfiles:
                regs.append((i, f"{o.name}.val"))
        uses = [
            (
                u.state,
                _compile(kb, u.index, own) if u.index is not None else None,
                u.alias,
                [(f"{u.alias}.{f}", f) for f in kb.states[u.state][1]],
            )
            for u in ins.uses
        ]
        lets = [(n, _compile(kb, e, own)) for n, e in ins.lets]
        rules = []
        for r in kb.rules:
            if ins.name in kb.applies.get(r.id, ()):
                names = list(
                    dict.fromkeys(
                        x.name
                        for x in ex.refs(r.expr)
                        if x.name != "op" and (x.name in own or x.name.startswith("prev.") or x.name in kb.params)
                    )
                )
                rules.append((r, names))

        def access(a: dm.Access, own: set[str] = own) -> tuple[str, Fn, Fn, Fn | None]:
            return (
                a.memory,
                _compile(kb, a.lo, own),
                _compile(kb, a.hi, own),
                _compile(kb, a.when, own) if a.when else None,
            )

        acc = [access(a) for a in ins.reads]
        wacc = [access(a) for a in ins.writes]
        sets = [
            (
                s.state,
                _compile(kb, s.index, own) if s.index is not None else None,
                s.field,
                _compile(kb, s.value, own),
            )
            for s in ins.sets
        ]
        failing = _compile_failing(kb, [r for r, _ in rules], own)
        plans[ins.name] = _Plan(ins, decoders, regs, uses, lets, rules, failing, acc, wacc, sets)
    return plans


@dataclass(frozen=True)
class _Shared:
    """What every checker of one KB shares (a checker per simulation must not recompile):
    the plans of `step`, and `block`'s column plans and memos (valid whatever the checker)."""

    plans: dict[str, _Plan]
    vplans: dict[str, _VecPlan | None] = field(default_factory=dict)  # per mnemonic, made on first use
    memos: _Memos = field(default_factory=lambda: _Memos())


_SHARED: dict[int, tuple[KB, _Shared]] = {}


def _shared(kb: KB) -> _Shared:
    hit = _SHARED.get(id(kb))
    if hit is None or hit[0] is not kb:
        hit = (kb, _Shared(_compile_plans(kb)))
        _SHARED[id(kb)] = hit
        while len(_SHARED) > 16:
            _SHARED.pop(next(iter(_SHARED)))
    return hit[1]


class Checker:
    """Stateful checker of one dynamic instruction stream."""

    def __init__(self, kb: KB, *, record: bool = False) -> None:
        self.kb = kb
        shared = _shared(kb)
        self._plans = shared.plans
        self._hazards_by_reader: dict[str, list[dm.Hazard]] = {}
        self._hazards_by_writer: dict[str, list[dm.Hazard]] = {}
        self._hazards_by_fence: dict[str, list[dm.Hazard]] = {}
        for h in kb.doc.hazards:
            self._hazards_by_reader.setdefault(h.reader, []).append(h)
            self._hazards_by_writer.setdefault(h.writer, []).append(h)
            self._hazards_by_fence.setdefault(h.fence, []).append(h)
        self._fences = {h.fence for h in kb.doc.hazards}
        self.record = record
        self.record_limit: int | None = None  # record at most this many events (None: all)
        self.events: list[tuple[int, str, dict[str, int], int | None, dict[str, int]]] = []
        self._keep: dict[str, frozenset[str]] | None = None  # per mnemonic: values the ASP check reads
        self._vplans = shared.vplans
        self._memos = shared.memos
        self.reset()

    def reset(self) -> None:
        self.state: dict[str, list[dict[str, int]] | dict[str, int]] = {}
        for name, (size, fields) in self.kb.states.items():
            self.state[name] = [dict(fields) for _ in range(size)] if size is not None else dict(fields)
        self._prev: dict[str, dict[str, Any]] = {}
        self._prev_pos: dict[str, int] = {}
        self._written: dict[str, _Writes] = {h.id: _Writes() for h in self.kb.doc.hazards}
        self._epochs = dict.fromkeys(self._fences, 0)
        self.index = 0

    def _state_rec(self, name: str, idx: int | None, op: str) -> dict[str, int]:
        st = self.state[name]
        if isinstance(st, list):
            if idx is None or not 0 <= idx < len(st):
                raise IllegalProgram(
                    [self._v("state.index", f"{op} names {name}[{idx}], which does not exist", op, {})]
                )
            return st[idx]
        return st

    def _v(
        self, rule: str, message: str, op: str, values: Mapping[str, Any], loc: str = "", line: int = 0
    ) -> Violation:
        return Violation(rule, message, loc, self.index, line, op, dict(values))

    def step(self, instr: Instr, regvals: Mapping[int, int] | None = None) -> list[Violation]:
        """Check one executed instruction; returns its violations (empty when legal)."""
        plan = self._plans.get(instr.op)
        if plan is None:
            raise ZombossError(f"line {instr.line}: unknown instruction {instr.op!r} for {self.kb.target}")
        ins = plan.ins
        args = instr.args
        if len(args) != len(ins.operands):
            return self._finish(
                instr,
                [
                    self._v(
                        "isa.arity",
                        f"{ins.name} takes {len(ins.operands)} operands ({', '.join(o.name for o in ins.operands)}), got {len(args)}",
                        ins.name,
                        {},
                        str(ins.loc),
                        instr.line,
                    )
                ],
                None,
                {},
            )
        env: dict[str, Any] = {o.name: a for o, a in zip(ins.operands, args, strict=True)}
        for i, name, shift, mask in plan.decoders:
            env[name] = (args[i] >> shift) & mask
        if regvals is not None:
            for i, name in plan.regs:
                if i in regvals:
                    env[name] = regvals[i]
        env["op"] = ins.name.lower()
        out: list[Violation] = []
        prev = self._prev.get(ins.unit, {})
        try:
            for state, idx_fn, _alias, fields in plan.uses:
                rec = self._state_rec(state, idx_fn(env, prev) if idx_fn else None, ins.name)
                for key, f in fields:
                    env[key] = rec[f]
        except IllegalProgram as e:
            return self._finish(instr, e.violations, None, env)
        except ex.EVAL_ERRORS as e:
            out.append(
                self._v(
                    "isa.eval",
                    f"cannot evaluate which {ins.name} state record to use: {_reason(e)}",
                    ins.name,
                    {},
                    str(ins.loc),
                    instr.line,
                )
            )
            return self._finish(instr, out, None, env)
        for name, fn in plan.lets:
            # an undefined let (or one beyond the integer limit) stays out of env: every rule
            # reading it is then violated, as where the ASP side inlines it
            try:
                v = fn(env, prev)
            except ex.EVAL_ERRORS:
                continue
            if v.__class__ is int and not -_BIG < v < _BIG:
                continue
            env[name] = v
        for idx in plan.failing(env, prev):
            rule, names = plan.rules[idx]
            vals: dict[str, Any] = {}
            for n in names:
                if n in env:
                    vals[n] = env[n]
                elif n.startswith("prev."):
                    vals[n] = prev.get(n[5:], "none" if not prev else "undefined")
                elif n in self.kb.params:
                    vals[n] = self.kb.params[n]
                else:
                    vals[n] = "undefined"
            out.append(self._v(rule.id, rule.message, ins.name, vals, str(rule.loc), instr.line))
        for h in self._hazards_by_reader.get(ins.name, ()):
            for mem, lo, hi, when in plan.reads:
                if mem != h.read_mem:
                    continue
                rng = self._range(plan, "reads", mem, lo, hi, when, env, prev, instr, out)
                if rng is None:
                    continue
                a, b = rng
                hit = self._written[h.id].overlapping(a, b)
                if hit is not None:
                    wlo, whi, wline = hit
                    out.append(
                        self._v(
                            h.id,
                            h.message,
                            ins.name,
                            {"read": f"[{a:#x}, {b:#x})", "written": f"[{wlo:#x}, {whi:#x})", "writer_line": wline},
                            str(h.loc),
                            instr.line,
                        )
                    )
        return self._finish(instr, out, plan, env)

    def _range(
        self,
        plan: _Plan,
        kind: str,
        mem: str,
        lo: Fn,
        hi: Fn,
        when: Fn | None,
        env: Mapping[str, Any],
        prev: Mapping[str, Any],
        instr: Instr,
        out: list[Violation],
    ) -> tuple[int, int] | None:
        """The [lo, hi) an access covers, None when its condition is false; an undefined
        range is reported (isa.eval) and counts as no access, as on the ASP side."""
        try:
            if when is not None and not when(env, prev):
                return None
            return lo(env, prev), hi(env, prev)
        except ex.EVAL_ERRORS as e:
            out.append(
                self._v(
                    "isa.eval",
                    f"cannot evaluate the {mem} range {plan.ins.name} {kind}: {_reason(e)}",
                    plan.ins.name,
                    {},
                    str(plan.ins.loc),
                    instr.line,
                )
            )
            return None

    def _finish(self, instr: Instr, out: list[Violation], plan: _Plan | None, env: dict[str, Any]) -> list[Violation]:
        pos = self.index + 1
        if plan is not None:
            prev = self._prev.get(plan.ins.unit, {})
            for h in self._hazards_by_writer.get(instr.op, ()):
                for mem, lo, hi, when in plan.writes:
                    if mem == h.write_mem:
                        rng = self._range(plan, "writes", mem, lo, hi, when, env, prev, instr, out)
                        if rng is not None:
                            self._written[h.id].add(rng[0], rng[1], instr.line)
            for h in self._hazards_by_fence.get(instr.op, ()):
                self._written[h.id].clear()
            if instr.op in self._epochs:
                self._epochs[instr.op] += 1
            if self.record and (self.record_limit is None or len(self.events) < self.record_limit):
                keep = self._kept().get(instr.op, frozenset())
                vals = {k: int(v) for k, v in env.items() if k in keep and isinstance(v, int)}
                self.events.append((pos, instr.op, vals, self._prev_pos.get(plan.ins.unit), dict(self._epochs)))
            for state, idx_fn, fname, val in plan.sets:
                try:
                    rec = self._state_rec(state, idx_fn(env, prev) if idx_fn else None, instr.op)
                    v = val(env, prev)
                    if v.__class__ is int and not -_BIG < v < _BIG:
                        ex.bounded(v, f"{state}.{fname}")  # raises, naming the field
                    rec[fname] = v
                except IllegalProgram:
                    pass  # the operand range rule already reports a bad index
                except ex.EVAL_ERRORS as e:  # the state keeps its value
                    out.append(
                        self._v(
                            "isa.eval",
                            f"cannot evaluate the value {instr.op} sets {state}.{fname} to: {_reason(e)}",
                            instr.op,
                            {},
                            str(plan.ins.loc),
                            instr.line,
                        )
                    )
            self._prev[plan.ins.unit] = env
            self._prev_pos[plan.ins.unit] = pos
        self.index += 1
        return out

    def _kept(self) -> dict[str, frozenset[str]]:
        if self._keep is None:
            self._keep = {m: frozenset(v) for m, v in needed(self.kb).items()}
        return self._keep

    def check(self, events: Iterable[tuple[Instr, Mapping[int, int] | None]]) -> list[Violation]:
        out: list[Violation] = []
        for instr, regs in events:
            out += self.step(instr, regs)
        return out

    def block(self, blk: Block) -> bool:
        """Check a run of commands at once, NumPy over each mnemonic's rows (the hot path of
        checked simulation: a hardware loop's expansion). True when every command is legal;
        the checker is then exactly as after `step` on each. False, changing nothing, when a
        command may break a rule or this path cannot tell (register operands, fences, values
        beyond int64...): `step` through them then, which finds and reports the violation.
        Commands are checked as `step` checks them without register values."""
        if self.record or blk.n == 0:
            return blk.n == 0
        try:
            return _BlockRun(self, blk).run()
        except vx.Unsupported:
            return False

    def _vplan(self, op: str) -> _VecPlan | None:
        if op not in self._vplans:
            plan = self._plans.get(op)
            try:
                self._vplans[op] = _VecPlan.of(self.kb, plan.ins) if plan is not None else None
            except vx.Unsupported:
                self._vplans[op] = None
        return self._vplans[op]


# ---------------------------------------------------------------------------------------
# Checking a block of commands at once (Checker.block)
# ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Block:
    """Commands checked as one, all from one program line (a hardware loop's expansion): per
    mnemonic, the positions it takes in the run (increasing) and its operands, a row each."""

    n: int
    groups: tuple[tuple[str, np.ndarray, np.ndarray], ...]  # (mnemonic, positions, int64 operands)
    line: int = 0
    template: object | None = None  # blocks of one template (compared by identity) differ only in
    varying: tuple[frozenset[int], ...] = ()  # these operands of each group

    def varying_of(self, group: int) -> frozenset[int]:
        return self.varying[group] if self.varying else frozenset()

    @classmethod
    def of(cls, commands: Sequence[tuple[str, Sequence[int]]], line: int = 0) -> Block:
        """The block of these (mnemonic, operands) commands; vx.Unsupported when some
        mnemonic's operands do not make one int64 matrix."""
        rows: dict[str, tuple[list[int], list[Sequence[int]]]] = {}
        for i, (op, args) in enumerate(commands):
            pos, ops = rows.setdefault(op, ([], []))
            pos.append(i)
            ops.append(args)
        try:
            groups = tuple(
                (op, np.array(pos, dtype=np.int64), np.array(ops, dtype=np.int64).reshape(len(pos), -1))
                for op, (pos, ops) in rows.items()
            )
        except (OverflowError, ValueError, TypeError) as e:
            raise vx.Unsupported(f"operands that are not one int64 matrix per mnemonic: {e}") from None
        return cls(len(commands), groups, line)


VFn = vx.Fn
_VSet = tuple[str, VFn | None, str, VFn]  # state, index, field, value
_VAccess = tuple[str, VFn, VFn, VFn | None]  # memory, lo, hi, when


@dataclass(frozen=True)
class _VecPlan:
    """One mnemonic's rules, lets, state uses and effects compiled to column functions."""

    ins: dm.Instr
    operands: dict[str, int]  # name -> operand index
    decoders: dict[str, tuple[int, int, int]]  # name -> (operand index, shift, mask)
    uses: tuple[tuple[str, VFn | None, str, tuple[str, ...]], ...]  # state, index, alias, fields
    alias: dict[str, tuple[int, str]]  # alias.field -> (use, field)
    lets: dict[str, tuple[int, VFn]]  # name -> (order, value)
    hidden: tuple[frozenset[str], ...]  # per use, then per let: names its expression cannot see yet
    rules: tuple[VFn, ...]
    reads: tuple[_VAccess, ...]
    writes: tuple[_VAccess, ...]
    sets: tuple[_VSet, ...]

    def in_env(self, name: str) -> bool:
        """Whether `step` may hold `name` in this mnemonic's `env` (what a next `prev` sees)."""
        return name in self.operands or name in self.decoders or name == "op" or name in self.alias or name in self.lets

    @classmethod
    def of(cls, kb: KB, ins: dm.Instr) -> _VecPlan:
        own = scope_names(kb, ins)

        def resolve(r: ex.Ref) -> str | vx.Col:
            n = r.name  # the order of `_resolver`: own names, prev, parameters, symbols
            if n in own or n.startswith("prev."):
                return n
            if n in kb.params:
                return vx.const(kb.params[n])
            if len(r.parts) == 1 and n.lower() in kb.symbols:
                return vx.const(n.lower())
            raise ex.ExprError(f"unknown name {n!r}")

        def f(e: ex.Expr) -> VFn:
            return vx.compile_vec(e, resolve)

        def opt(e: ex.Expr | None) -> VFn | None:
            return f(e) if e is not None else None

        operands, decoders = {}, {}
        for i, o in enumerate(ins.operands):
            operands[o.name] = i
            if o.kind in kb.layouts:
                for fld, (hi, lo) in kb.layouts[o.kind].bits.items():
                    if lo > 62:
                        raise vx.Unsupported("a bit field beyond int64")
                    decoders[f"{o.name}.{fld}"] = (i, lo, (1 << (hi - lo + 1)) - 1)
        uses = tuple((u.state, opt(u.index), u.alias, tuple(kb.states[u.state][1])) for u in ins.uses)
        alias = {f"{a}.{fld}": (k, fld) for k, (_, _, a, fields) in enumerate(uses) for fld in fields}
        lets = {n: (i, f(e)) for i, (n, e) in enumerate(ins.lets)}
        let_names = [n for n, _ in ins.lets]
        hidden = tuple(
            frozenset(let_names) | {n for n, (k2, _) in alias.items() if k2 >= k} for k in range(len(uses))
        ) + tuple(frozenset(let_names[i:]) for i in range(len(let_names)))
        rules = tuple(f(r.expr) for r in kb.rules if ins.name in kb.applies.get(r.id, ()))

        def acc(a: dm.Access) -> _VAccess:
            return (a.memory, f(a.lo), f(a.hi), opt(a.when))

        return cls(
            ins,
            operands,
            decoders,
            uses,
            alias,
            lets,
            hidden,
            rules,
            tuple(acc(a) for a in ins.reads),
            tuple(acc(a) for a in ins.writes),
            tuple((s.state, opt(s.index), s.field, f(s.value)) for s in ins.sets),
        )


class _Group:
    """One mnemonic's commands in a block: their columns, computed when first needed."""

    def __init__(self, run: _BlockRun, gid: int, op: str, plan: _VecPlan, pos: np.ndarray, args: np.ndarray) -> None:
        self.run, self.gid, self.op, self.plan, self.pos, self.args = run, gid, op, plan, pos, args
        self.n = len(pos)
        self.cols: dict[str, vx.Col] = {}
        self.nodes: dict[int, vx.Col] = {}  # compound expression nodes that do not vary

    def col(self, name: str) -> vx.Col:
        return self.run.col(self, name)

    def memo(self, node: int, compute: Callable[[], vx.Col]) -> vx.Col:
        c = self.nodes.get(node)
        if c is None:
            frames = self.run.frames
            frames.append(False)
            try:
                c = compute()
            finally:
                varies = frames.pop()
            if varies:
                if frames:
                    frames[-1] = True
            else:
                self.nodes[node] = c
        return c


@dataclass(frozen=True)
class _View:
    """A group's environment as one of its lets (or state indexes) sees it: without the
    values `step` has not put in `env` yet."""

    group: _Group
    hidden: frozenset[str]

    def col(self, name: str) -> vx.Col:
        return self.group.run.missing(self.group) if name in self.hidden else self.group.col(name)

    def memo(self, node: int, compute: Callable[[], vx.Col]) -> vx.Col:
        return self.group.memo(node, compute)  # a node is only ever evaluated in one view


def _rows(c: vx.Col, n: int) -> np.ndarray:
    """A column's values as an array of n rows."""
    v = np.asarray(c.val)
    return v if v.ndim else np.full(n, v, dtype=np.int64 if c.kind != vx.BOOL else bool)


def _bad_rows(c: vx.Col, n: int) -> np.ndarray:
    return np.zeros(n, bool) if c.bad is None else np.broadcast_to(np.asarray(c.bad, dtype=bool), (n,))


def _scalar(c: vx.Col, r: int) -> tuple[bool, Any]:
    """(defined, value) of one row, as `step` would hold it in `env`."""
    bad = c.bad is not None and bool(np.asarray(c.bad)[r] if np.ndim(c.bad) else c.bad)
    v = c.val[r] if np.ndim(c.val) else c.val
    if c.kind == vx.BOOL:
        return not bad, bool(v)
    return not bad, vx.sym_name(int(v)) if c.kind == vx.SYM else int(v)


def _entry_col(values: Sequence[Any]) -> tuple[np.ndarray, str]:
    """State or prev values as a column: integers, or symbols (as codes), not mixed."""
    if all(v.__class__ is int for v in values):
        return np.array(values, dtype=np.int64), vx.INT
    if all(isinstance(v, str) for v in values):
        return np.array([vx.sym_code(v) for v in values], dtype=np.int64), vx.SYM
    raise vx.Unsupported("state values that are neither all integers nor all symbols")


_NO_VALUE = object()  # a prev value that is not there
_Setters = tuple[np.ndarray, np.ndarray | None, np.ndarray, str] | None  # positions, records, values, kind


@dataclass(frozen=True)
class _Memo:
    """What a block of one template computed from its fixed operands and the entry state it
    read (`reads`): a later block of the template that finds the same values reuses it."""

    reads: tuple[tuple[tuple[str, str, str], Any], ...]
    cols: tuple[dict[str, vx.Col], ...]  # per group
    nodes: tuple[dict[int, vx.Col], ...]  # per group
    fixed: frozenset[tuple[int, str]]  # what `cols` holds, as (group, name)
    passed: frozenset[tuple[int, int]]  # (group, rule) that hold on every row
    index: dict[tuple[int, int], Any]
    setters: dict[tuple[str, str], _Setters]
    units: dict[str, tuple[np.ndarray, np.ndarray, np.ndarray]]
    envs: dict[str, tuple[int, dict[str, Any], tuple[str, ...]]]  # unit -> last position, fixed env, varying names

    @property
    def size(self) -> int:
        """Bytes of the arrays it holds (views of a block's operands are the block's)."""
        cols = [c for d in self.cols for c in d.values()] + [c for d in self.nodes for c in d.values()]
        return sum(x.nbytes for c in cols for x in (c.val, c.bad) if isinstance(x, np.ndarray) and x.base is None)


class _Memos:
    """The memos of each template (by identity; the latest few first), within a byte budget:
    the templates least recently added to go first."""

    PER_TEMPLATE = 4

    def __init__(self, budget: int = 64 << 20) -> None:
        self.budget = budget
        self.size = 0
        self._by: dict[int, tuple[object, list[tuple[_Memo, int]]]] = {}

    def of(self, template: object) -> list[_Memo]:
        hit = self._by.get(id(template))
        return [m for m, _ in hit[1]] if hit is not None and hit[0] is template else []

    def add(self, template: object, memo: _Memo) -> None:
        old = self._by.pop(id(template), None)
        entries = old[1] if old is not None and old[0] is template else []
        size = memo.size
        entries.insert(0, (memo, size))
        self.size += size
        while len(entries) > self.PER_TEMPLATE:
            self.size -= entries.pop()[1]
        self._by[id(template)] = (template, entries)  # the most recent last
        while self.size > self.budget and self._by:
            _, dropped = self._by.pop(next(iter(self._by)))
            self.size -= sum(n for _, n in dropped)


class _BlockRun:
    """One `Checker.block` call: evaluates every check over the block's columns and, when all
    pass, gives the checker the state `step` would have left.

    Every column records whether it depends on a block's varying operands (`Block.varying`):
    the others, and the rules computed from them alone, are kept for the next block of the
    same template, which reuses them when the entry state they read is unchanged."""

    def __init__(self, checker: Checker, blk: Block) -> None:
        self.ch, self.blk = checker, blk
        self.groups: list[_Group] = []
        for op, pos, args in blk.groups:
            plan = checker._vplan(op)
            if plan is None or op in checker._fences or args.shape[1] != len(plan.ins.operands):
                raise vx.Unsupported(f"{op} is checked one by one")
            self.groups.append(_Group(self, len(self.groups), op, plan, pos, args))
        self.busy: set[tuple[int, str]] = set()
        self.vary: dict[tuple[int, str], bool] = {}
        self.frames: list[bool] = []  # per computation in progress: does it depend on a varying operand
        self.reads: dict[tuple[str, str, str], Any] = {}
        self._units: dict[str, tuple[np.ndarray, np.ndarray, np.ndarray]] = {}
        self._setters: dict[tuple[str, str], _Setters] = {}
        self._index: dict[tuple[int, int], Any] = {}
        self._accesses: dict[tuple[int, int], tuple[np.ndarray, np.ndarray, np.ndarray]] = {}
        self.passed: set[tuple[int, int]] = set()
        self._fixed: frozenset[tuple[int, str]] = frozenset()  # columns taken from a memo
        self._envs: dict[str, tuple[int, dict[str, Any], tuple[str, ...]]] = {}
        self.memo = self._recall()

    # -- reuse across blocks of one template --------------------------------------------------

    def _read(self, key: tuple[str, str, str]) -> Any:
        """An entry value a computation depends on (recorded: a memo is valid while it holds)."""
        kind, a, b = key
        if kind == "s":
            st = self.ch.state[a]
            v: Any = tuple(r[b] for r in st) if isinstance(st, list) else (st[b],)
        else:
            v = self.ch._prev.get(a, {}).get(b, _NO_VALUE)
        self.reads[key] = v
        return v

    def _recall(self) -> _Memo | None:
        t = self.blk.template
        if t is None:
            return None
        for m in self.ch._memos.of(t):
            if all(self._read(k) == v for k, v in m.reads):
                for g, cols, nodes in zip(self.groups, m.cols, m.nodes, strict=True):
                    g.cols.update(cols)
                    g.nodes = dict(nodes)
                self._fixed = m.fixed
                self.passed |= m.passed
                self._index.update(m.index)
                self._setters.update(m.setters)
                self._units.update(m.units)
                return m
        self.reads.clear()
        return None

    def _remember(self) -> None:
        t = self.blk.template
        if t is None or self.memo is not None:
            return
        fixed = frozenset(k for k, v in self.vary.items() if not v)
        memo = _Memo(
            tuple(self.reads.items()),
            tuple({n: c for n, c in g.cols.items() if (g.gid, n) in fixed} for g in self.groups),
            tuple(g.nodes for g in self.groups),
            frozenset(k for k in fixed if k[0] >= 0 and not k[1].startswith("#")),
            frozenset(self.passed),
            {k: v for k, v in self._index.items() if (k[0], f"#use{k[1]}") in fixed},
            {k: v for k, v in self._setters.items() if (-1, f"{k[0]}.{k[1]}") in fixed},
            dict(self._units),
            dict(self._envs),
        )
        self.ch._memos.add(t, memo)

    def _tracked(self, key: tuple[int, str], make: Callable[[], Any]) -> Any:
        """Compute one value (a column, an index, setters) noting whether it varies."""
        if key in self.busy:
            raise vx.Unsupported(f"{key[1]} depends on itself within the block")
        self.busy.add(key)
        self.frames.append(False)
        try:
            out = make()
        finally:
            self.busy.discard(key)
            varies = self.frames.pop()
        self.vary[key] = varies
        self._depends(key)
        return out

    def _depends(self, key: tuple[int, str]) -> None:
        if self.frames and self.vary.get(key, False) and key not in self._fixed:
            self.frames[-1] = True

    # -- columns ---------------------------------------------------------------------------

    def missing(self, g: _Group) -> vx.Col:
        """A name `env` lacks: undefined on every row (KeyError in `step`)."""
        return vx.Col(0, np.ones(g.n, bool), 0, 0)

    def col(self, g: _Group, name: str) -> vx.Col:
        c = g.cols.get(name)
        if c is None:
            c = self._tracked((g.gid, name), lambda: self._make(g, name))
            g.cols[name] = c
        else:
            self._depends((g.gid, name))
        return c

    def _make(self, g: _Group, name: str) -> vx.Col:
        p = g.plan
        if name in p.operands:
            i = p.operands[name]
            self.frames[-1] |= i in self.blk.varying_of(g.gid)
            return vx.column(g.args[:, i])
        if name in p.decoders:
            i, shift, mask = p.decoders[name]
            self.frames[-1] |= i in self.blk.varying_of(g.gid)
            return vx.Col((g.args[:, i] >> shift) & mask, None, 0, mask)
        if name == "op":
            return vx.const(p.ins.name.lower())
        if name in p.alias:
            return self._state(g, *p.alias[name])
        if name in p.lets:
            i, fn = p.lets[name]
            return fn(_View(g, p.hidden[len(p.uses) + i]))
        if name.startswith("prev."):
            return self._prev(g, name[5:])
        return self.missing(g)  # a register value (never given to a block), or out of scope

    def _use_index(self, g: _Group, k: int) -> Any:
        """The state record each row of `g` uses for `uses` k (None: the only one), checked
        to exist as `_state_rec` does."""
        key = (g.gid, f"#use{k}")
        if (g.gid, k) in self._index:
            self._depends(key)
            return self._index[g.gid, k]
        state, fn, _, _ = g.plan.uses[k]
        idx = self._tracked(key, lambda: self._valid_index(state, fn(_View(g, g.plan.hidden[k])) if fn else None))
        self._index[g.gid, k] = idx
        return idx

    def _valid_index(self, state: str, c: vx.Col | None) -> Any:
        size = self.ch.kb.states[state][0]
        if c is not None and (c.kind != vx.INT or vx.any_bad(c.bad)):
            raise vx.Unsupported("an undefined state index")  # isa.eval in `step`
        if size is None or c is None:
            if size is not None:
                raise vx.Unsupported("an array state without an index")
            return None
        if np.min(c.val) < 0 or np.max(c.val) >= size:
            raise vx.Unsupported("a state index out of range")  # state.index in `step`
        return c.val

    def _state(self, g: _Group, k: int, fld: str) -> vx.Col:
        """The value of a state field each row sees: the last in-block setter's before it,
        else the value at block entry."""
        state = g.plan.uses[k][0]
        idx = self._use_index(g, k)
        entry, kind = _entry_col(self._read(("s", state, fld)))
        setters = self._setter_cols(state, fld)
        if setters is not None and setters[3] != kind:
            raise vx.Unsupported("a state field set to another kind of value")
        if idx is None:
            if setters is None:
                return vx.column(entry[0], kind=kind)
            s_pos, _, s_val, _ = setters
            j = np.searchsorted(s_pos, g.pos, "left") - 1
            return vx.column(np.where(j >= 0, s_val[np.maximum(j, 0)], entry[0]), kind=kind)
        idx_rows = np.broadcast_to(idx, (g.n,))
        vals = entry[idx_rows]
        if setters is not None:
            s_pos, s_idx, s_val, _ = setters
            assert s_idx is not None
            for rec in np.unique(s_idx):
                rows = idx_rows == rec
                if not rows.any():
                    continue
                sel = s_idx == rec
                j = np.searchsorted(s_pos[sel], g.pos[rows], "left") - 1
                vals[rows] = np.where(j >= 0, s_val[sel][np.maximum(j, 0)], entry[rec])
        return vx.column(vals, kind=kind)

    def _setter_cols(self, state: str, fld: str) -> _Setters:
        """Every in-block set of state.fld in execution order (None: none); an undefined or
        out-of-range set is left to `step`."""
        key = (state, fld)
        if key in self._setters:
            self._depends((-1, f"{state}.{fld}"))
            return self._setters[key]
        out: _Setters = self._tracked((-1, f"{state}.{fld}"), lambda: self._collect_sets(state, fld))
        self._setters[key] = out
        return out

    def _collect_sets(self, state: str, fld: str) -> _Setters:
        keys: list[np.ndarray] = []
        idxs: list[np.ndarray] = []
        vals: list[np.ndarray] = []
        kinds: set[str] = set()
        indexed = self.ch.kb.states[state][0] is not None
        for g in self.groups:
            for o, (s, ifn, f, vfn) in enumerate(g.plan.sets):
                if s != state or f != fld:
                    continue
                idx = self._valid_index(state, ifn(g) if ifn else None)
                v = vfn(g)
                if vx.any_bad(v.bad) or v.kind == vx.BOOL or o >= 256:
                    raise vx.Unsupported("a set value to check one by one")
                kinds.add(v.kind)
                keys.append(g.pos * 256 + o)  # execution order: by command, then by set
                if indexed:
                    idxs.append(np.broadcast_to(idx, (g.n,)))
                vals.append(_rows(v, g.n))
        if not keys:
            return None
        if len(kinds) > 1:
            raise vx.Unsupported("a state field set to different kinds of values")
        order = np.argsort(np.concatenate(keys), kind="stable")
        s_idx = np.concatenate(idxs)[order] if indexed else None
        return np.concatenate(keys)[order] // 256, s_idx, np.concatenate(vals)[order], kinds.pop()

    def _unit(self, unit: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The block positions of a unit's commands, in order, with their group and row."""
        if unit not in self._units:
            gs = [g for g in self.groups if g.plan.ins.unit == unit]
            pos = np.concatenate([g.pos for g in gs])
            order = np.argsort(pos, kind="stable")
            gid = np.concatenate([np.full(g.n, g.gid) for g in gs])[order]
            row = np.concatenate([np.arange(g.n) for g in gs])[order]
            self._units[unit] = (pos[order], gid, row)
        return self._units[unit]

    def _prev(self, g: _Group, name: str) -> vx.Col:
        """`prev.name` on every row: the previous command of the unit (in the block, or the
        checker's last one), undefined where it has no such value."""
        unit = g.plan.ins.unit
        pos, gid, row = self._unit(unit)
        j = np.searchsorted(pos, g.pos, "left") - 1
        vals = np.zeros(g.n, np.int64)
        bad = np.zeros(g.n, bool)
        kinds: set[str] = set()
        first = j < 0
        if first.any():
            v = self._read(("p", unit, name))
            if v is _NO_VALUE:
                bad[first] = True
            else:
                col, kind = _entry_col([v])
                vals[first] = col[0]
                kinds.add(kind)
        jc = np.maximum(j, 0)
        for h in self.groups:
            if h.plan.ins.unit != unit:
                continue
            sel = ~first & (gid[jc] == h.gid)
            if not sel.any():
                continue
            c = self.col(h, name) if h.plan.in_env(name) else self.missing(h)  # prev.prev.x: never there
            rows = row[jc[sel]]
            b = _bad_rows(c, h.n)[rows]
            bad[sel] = b
            if not b.all():
                kinds.add(c.kind)
                vals[sel] = _rows(c, h.n)[rows]
        if len(kinds) > 1 or vx.BOOL in kinds:
            raise vx.Unsupported("prev values of mixed kinds")
        return vx.column(vals, bad if bad.any() else None, kinds.pop() if kinds else vx.INT)

    # -- the checks and their effects --------------------------------------------------------

    def run(self) -> bool:
        for g in self.groups:
            for k in range(len(g.plan.uses)):
                self._use_index(g, k)
            for r, fn in enumerate(g.plan.rules):
                if (g.gid, r) in self.passed:
                    continue
                self.frames.append(False)
                try:
                    c = vx.truth(fn(g))
                finally:
                    varies = self.frames.pop()
                if vx.any_bad(c.bad) or not np.all(c.val):
                    return False  # some command breaks this rule: `step` reports it
                if not varies:
                    self.passed.add((g.gid, r))
        written = self._hazards()
        if written is None:
            return False
        sets = {(s, f) for g in self.groups for s, _, f, _ in g.plan.sets}
        finals = {key: self._setter_cols(*key) for key in sorted(sets)}
        envs = {unit: self._last_env(unit) for unit in {g.plan.ins.unit for g in self.groups}}
        self._remember()
        self._commit(finals, envs, written)
        return True

    def _ranges(self, g: _Group, acc: _VAccess) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(positions, lo, hi) of the rows where an access happens; an undefined condition
        or range is left to `step` (isa.eval)."""
        key = (g.gid, id(acc))
        if key not in self._accesses:
            self._accesses[key] = self._access(g, acc)
        return self._accesses[key]

    def _access(self, g: _Group, acc: _VAccess) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        _, lo_fn, hi_fn, when = acc
        act: Any = True
        if when is not None:
            w = vx.truth(when(g))
            if vx.any_bad(w.bad):
                raise vx.Unsupported("an undefined access condition")
            act = w.val
        lo, hi = lo_fn(g), hi_fn(g)
        if vx.any_bad(vx.mask_and(act, vx.mask_or(lo.bad, hi.bad))) or vx.SYM in (lo.kind, hi.kind):
            raise vx.Unsupported("an undefined access range")
        rows = np.broadcast_to(np.asarray(act, dtype=bool), (g.n,))
        return g.pos[rows], _rows(lo, g.n)[rows], _rows(hi, g.n)[rows]

    def _hazards(self) -> dict[str, list[tuple[int, int]]] | None:
        """Per hazard, the ranges the block's writers add (in order), or None when a read
        overlaps a write with no fence between (`_Writes.overlapping`, for many reads)."""
        out: dict[str, list[tuple[int, int]]] = {}
        for h in self.ch.kb.doc.hazards:
            reads = [
                self._ranges(g, a) for g in self.groups if g.op == h.reader for a in g.plan.reads if a[0] == h.read_mem
            ]
            writes = [
                self._ranges(g, a)
                for g in self.groups
                if g.op == h.writer
                for a in g.plan.writes
                if a[0] == h.write_mem
            ]
            if not reads and not writes:
                continue
            old = self.ch._written[h.id]
            first_write = min((int(p[0]) for p, _, _ in writes if len(p)), default=self.blk.n)
            events: list[tuple[int, int, int, int]] = []  # (position, 0 read / 1 write, lo, hi)
            for pos, a, b in reads:
                early = pos <= first_write  # before any write of the block (a command reads, then writes)
                if old.los and early.any():
                    los, his = old.arrays()
                    i = np.searchsorted(los, b[early], "left")
                    if np.any((i > 0) & (his[np.maximum(i - 1, 0)] > a[early])):
                        return None
                late = ~early
                events += ((int(x), 0, int(y), int(z)) for x, y, z in zip(pos[late], a[late], b[late], strict=True))
            late_reads = bool(events)
            for pos, lo, hi in writes:
                events += ((int(x), 1, int(y), int(z)) for x, y, z in zip(pos, lo, hi, strict=True))
            events.sort()
            if late_reads:  # reads after the block's first write: as `step` would, one by one
                sim = old.copy()
                for _, is_write, lo_, hi_ in events:
                    if is_write:
                        sim.add(lo_, hi_, self.blk.line)
                    elif sim.overlapping(lo_, hi_) is not None:
                        return None
            out[h.id] = [(lo_, hi_) for _, is_write, lo_, hi_ in events if is_write]
        return out

    def _last_env(self, unit: str) -> tuple[int, dict[str, Any]]:
        """The block position and `env` of the unit's last command (its `prev` from now on);
        the values that do not vary are kept with the memo."""
        if self.memo is not None and unit in self.memo.envs:
            q, fixed, names = self.memo.envs[unit]
            if not names:
                return q, fixed  # never changed: `env`s are only read
            pos, gid, row = self._unit(unit)
            return q, {**fixed, **self._env_values(self.groups[int(gid[-1])], int(row[-1]), names)}
        pos, gid, row = self._unit(unit)
        g, r = self.groups[int(gid[-1])], int(row[-1])
        p = g.plan
        names = (*p.operands, *p.decoders, "op", *p.alias, *p.lets)
        env = self._env_values(g, r, names)
        var = self.blk.varying_of(g.gid)
        varying = tuple(
            n
            for n in names
            if (p.operands[n] in var if n in p.operands else p.decoders[n][0] in var if n in p.decoders else False)
            or self.vary.get((g.gid, n), False)
        )
        self._envs[unit] = (int(pos[-1]), {k: v for k, v in env.items() if k not in varying}, varying)
        return int(pos[-1]), env

    def _env_values(self, g: _Group, r: int, names: Sequence[str]) -> dict[str, Any]:
        """`env` entries of row r of `g`, as `step` builds them (undefined values left out)."""
        p = g.plan
        env: dict[str, Any] = {}
        for n in names:
            if n in p.operands:
                env[n] = int(g.args[r, p.operands[n]])
            elif n in p.decoders:
                i, shift, mask = p.decoders[n]
                env[n] = (int(g.args[r, i]) >> shift) & mask
            elif n == "op":
                env[n] = p.ins.name.lower()
            else:
                ok, v = _scalar(self.col(g, n), r)
                if ok:
                    env[n] = v
        return env

    def _commit(
        self,
        finals: dict[tuple[str, str], tuple[np.ndarray, np.ndarray | None, np.ndarray, str] | None],
        envs: dict[str, tuple[int, dict[str, Any]]],
        written: dict[str, list[tuple[int, int]]],
    ) -> None:
        ch = self.ch
        for (state, fld), cols in finals.items():
            assert cols is not None
            _, s_idx, s_val, kind = cols
            st = ch.state[state]
            recs = [int(x) for x in np.unique(s_idx)] if s_idx is not None else [None]
            for rec in recs:
                last = -1 if s_idx is None else int(np.flatnonzero(s_idx == rec)[-1])
                v = int(s_val[last])
                target: dict[str, Any] = st[rec] if isinstance(st, list) and rec is not None else st  # type: ignore[assignment]
                target[fld] = vx.sym_name(v) if kind == vx.SYM else v
        for unit, (q, env) in envs.items():
            ch._prev[unit] = env
            ch._prev_pos[unit] = ch.index + q + 1
        for hid, ranges in written.items():
            w = ch._written[hid]
            for lo, hi in ranges:
                w.add(lo, hi, self.blk.line)
        ch.index += self.blk.n
