"""Checking a block of commands at once: the hot path of checked simulation (a hardware loop's
expansion), NumPy over each mnemonic's rows instead of `Checker.step` per command.

`check_block` either proves every command of a block legal and leaves the checker exactly as
`step` on each would, or changes nothing (then the caller steps through the commands, which
finds and reports the violation). It reads and advances the checker only through its public
interface (`state`, `prev_env`, `writes`, `fences`, `advance`).

Over ~700 lines as one module because its parts are one algorithm: the column plans, the
lazily computed columns of a run, and the memos that let a later block of the same template
reuse what does not vary all share the run's dependency tracking (`_BlockRun`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from zomboss import expr as ex
from zomboss.doc import model as dm
from zomboss.expr import vector as vx
from zomboss.knowledge import KB, scope_names
from zomboss.legality.checker import Checker


def check_block(checker: Checker, blk: Block) -> bool:
    """Check a run of commands at once. True when every command is legal; the checker is then
    exactly as after `step` on each. False, changing nothing, when a command may break a rule
    or this path cannot tell (register operands, fences, values beyond int64, a recording
    checker...): `step` through them then, which finds and reports the violation. Commands are
    checked as `step` checks them without register values."""
    if checker.record or blk.n == 0:
        return blk.n == 0
    try:
        return _BlockRun(checker, blk).run()
    except vx.Unsupported:
        return False


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


class Memos:
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
    """One `check_block` call: evaluates every check over the block's columns and, when all
    pass, gives the checker the state `step` would have left.

    Every column records whether it depends on a block's varying operands (`Block.varying`):
    the others, and the rules computed from them alone, are kept for the next block of the
    same template, which reuses them when the entry state they read is unchanged."""

    def __init__(self, checker: Checker, blk: Block) -> None:
        self.ch, self.blk = checker, blk
        self.shared = _shared(checker.kb)
        self.groups: list[_Group] = []
        for op, pos, args in blk.groups:
            plan = self.shared.vplan(checker.kb, op)
            if plan is None or op in checker.fences or args.shape[1] != len(plan.ins.operands):
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
            v = self.ch.prev_env(a).get(b, _NO_VALUE)
        self.reads[key] = v
        return v

    def _recall(self) -> _Memo | None:
        t = self.blk.template
        if t is None:
            return None
        for m in self.shared.memos.of(t):
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
        self.shared.memos.add(t, memo)

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
            raise vx.Unsupported("a state index out of range")  # isa.state_index in `step`
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
        overlaps a write with no fence between (`Writes.overlapping`, for many reads)."""
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
            old = self.ch.writes(h.id)
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
        fields: list[tuple[str, int | None, str, Any]] = []
        for (state, fld), cols in finals.items():
            assert cols is not None
            _, s_idx, s_val, kind = cols
            recs = [int(x) for x in np.unique(s_idx)] if s_idx is not None else [None]
            for rec in recs:
                last = -1 if s_idx is None else int(np.flatnonzero(s_idx == rec)[-1])
                v = int(s_val[last])
                fields.append((state, rec, fld, vx.sym_name(v) if kind == vx.SYM else v))
        self.ch.advance(self.blk.n, self.blk.line, fields, envs, written)


@dataclass(frozen=True)
class _Shared:
    """What every block check of one KB shares: the column plans (per mnemonic, made on first
    use; None when a mnemonic is checked one by one) and the memos (valid whatever the checker)."""

    vplans: dict[str, _VecPlan | None] = field(default_factory=dict)
    memos: Memos = field(default_factory=lambda: Memos())

    def vplan(self, kb: KB, op: str) -> _VecPlan | None:
        if op not in self.vplans:
            ins = kb.instrs.get(op)
            try:
                self.vplans[op] = _VecPlan.of(kb, ins) if ins is not None else None
            except vx.Unsupported:
                self.vplans[op] = None
        return self.vplans[op]


_SHARED: dict[int, tuple[KB, _Shared]] = {}


def _shared(kb: KB) -> _Shared:
    hit = _SHARED.get(id(kb))
    if hit is None or hit[0] is not kb:
        hit = (kb, _Shared())
        _SHARED[id(kb)] = hit
        while len(_SHARED) > 16:
            _SHARED.pop(next(iter(_SHARED)))
    return hit[1]


def memos(kb: KB) -> Memos:
    """The memos the block checks of this KB share (what `Block.template` buys)."""
    return _shared(kb).memos
