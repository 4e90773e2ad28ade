"""Rule checks in Python, compiled from the same doc rules as the ASP KB.

Simulators call `Checker.step` for every instruction they execute (including those a
hardware loop generates) and refuse the program on the first violation; `kb check` runs a
whole program through both this checker and clingo (and the tests insist they agree). The
block checker (`zomboss.legality.block`) checks a hardware loop's expansion at once and
reads and advances a `Checker` only through `state`, `fences`, `prev_env`, `writes` and
`advance`.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
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


class Writes:
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
        """los and his as int64 arrays (for the block checker; vx.Unsupported beyond int64)."""
        if self._arrays is None:
            try:
                self._arrays = (np.array(self.los, dtype=np.int64), np.array(self.his, dtype=np.int64))
            except OverflowError:
                raise vx.Unsupported("write ranges beyond int64") from None
        return self._arrays

    def copy(self) -> Writes:
        out = Writes()
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


_SHARED: dict[int, tuple[KB, dict[str, _Plan]]] = {}  # a checker per simulation must not recompile


def _plans_of(kb: KB) -> dict[str, _Plan]:
    hit = _SHARED.get(id(kb))
    if hit is None or hit[0] is not kb:
        hit = (kb, _compile_plans(kb))
        _SHARED[id(kb)] = hit
        while len(_SHARED) > 16:
            _SHARED.pop(next(iter(_SHARED)))
    return hit[1]


class Checker:
    """Stateful checker of one dynamic instruction stream."""

    def __init__(self, kb: KB, *, record: bool = False) -> None:
        self.kb = kb
        self._plans = _plans_of(kb)
        self._hazards_by_reader: dict[str, list[dm.Hazard]] = {}
        self._hazards_by_writer: dict[str, list[dm.Hazard]] = {}
        self._hazards_by_fence: dict[str, list[dm.Hazard]] = {}
        for h in kb.doc.hazards:
            self._hazards_by_reader.setdefault(h.reader, []).append(h)
            self._hazards_by_writer.setdefault(h.writer, []).append(h)
            self._hazards_by_fence.setdefault(h.fence, []).append(h)
        self.fences = frozenset(h.fence for h in kb.doc.hazards)  # mnemonics that clear hazards
        self.record = record
        self.record_limit: int | None = None  # record at most this many events (None: all)
        self.events: list[tuple[int, str, dict[str, int], int | None, dict[str, int]]] = []
        self._keep: dict[str, frozenset[str]] | None = None  # per mnemonic: values the ASP check reads
        self.reset()

    def reset(self) -> None:
        self.state: dict[str, list[dict[str, int]] | dict[str, int]] = {}
        for name, (size, fields) in self.kb.states.items():
            self.state[name] = [dict(fields) for _ in range(size)] if size is not None else dict(fields)
        self._prev: dict[str, dict[str, Any]] = {}
        self._prev_pos: dict[str, int] = {}
        self._written: dict[str, Writes] = {h.id: Writes() for h in self.kb.doc.hazards}
        self._epochs = dict.fromkeys(self.fences, 0)
        self.index = 0

    def _state_rec(self, name: str, idx: int | None, ins: dm.Instr, line: int) -> dict[str, int]:
        st = self.state[name]
        if isinstance(st, list):
            if idx is None or not 0 <= idx < len(st):
                raise IllegalProgram(
                    [
                        self._v(
                            "isa.state_index",
                            f"{ins.name} names {name}[{idx}], which does not exist ({name} has {len(st)} "
                            f"records, 0..{len(st) - 1})",
                            ins.name,
                            {},
                            str(ins.loc),
                            line,
                        )
                    ]
                )
            return st[idx]
        return st

    def _operand_rules(self, plan: _Plan, env: Mapping[str, Any], instr: Instr) -> list[Violation]:
        """The violated rules of an instruction that read nothing but its operands and the
        parameters (its field ranges, register indexes): what can be judged without state."""
        known = set(env) | set(self.kb.params)
        out = []
        for idx in plan.failing(env, {}):
            rule, names = plan.rules[idx]
            if names and all(n in known for n in names):
                vals = {n: env[n] if n in env else self.kb.params[n] for n in names}
                out.append(self._v(rule.id, rule.message, plan.ins.name, vals, str(rule.loc), instr.line))
        return out

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
                rec = self._state_rec(state, idx_fn(env, prev) if idx_fn else None, ins, instr.line)
                for key, f in fields:
                    env[key] = rec[f]
        except IllegalProgram as e:
            # an operand that indexes a state record out of range (PLENA's gp32 names loop[32])
            # usually breaks the operand's own rule first: report those rules, with their doc
            # lines, before the missing record (isa.*: the Python checker's own, not cross-checked)
            return self._finish(instr, [*self._operand_rules(plan, env, instr), *e.violations], None, env)
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
                    rec = self._state_rec(state, idx_fn(env, prev) if idx_fn else None, plan.ins, instr.line)
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

    # -- the interface of the block checker (`zomboss.legality.block`) -------------------------

    def prev_env(self, unit: str) -> Mapping[str, Any]:
        """The `env` of the unit's last checked command (what its next command's `prev` reads)."""
        return self._prev.get(unit, {})

    def writes(self, hazard: str) -> Writes:
        """The ranges written for a hazard since its last fence (read only: `advance` adds)."""
        return self._written[hazard]

    def advance(
        self,
        n: int,
        line: int,
        fields: Iterable[tuple[str, int | None, str, Any]],
        prevs: Mapping[str, tuple[int, dict[str, Any]]],
        written: Mapping[str, Sequence[tuple[int, int]]],
    ) -> None:
        """Leave the checker as `step` on n legal commands of one line would: the state
        fields they set (state, record, field, value) in order, each unit's last command
        (position in the n, `env`), and the ranges each hazard's writers added, in order."""
        for state, rec, fld, v in fields:
            st = self.state[state]
            target = st[rec] if isinstance(st, list) and rec is not None else st
            assert isinstance(target, dict)
            target[fld] = v
        for unit, (q, env) in prevs.items():
            self._prev[unit] = env
            self._prev_pos[unit] = self.index + q + 1
        for hid, ranges in written.items():
            w = self._written[hid]
            for lo, hi in ranges:
                w.add(lo, hi, line)
        self.index += n
