"""PLENA timing models (plena.md §7), all driven by the ISA doc.

* `rtl` (default): each instruction's `latency` clause — Appendix B's RTL-measured costs and
  the documented extrapolations — executed in order and blocking, plus the pipeline-hazard
  penalties of Appendix B between adjacent dependent instructions.
* `emu`: each instruction's `emu_cycles` definition — PLENA's transactional emulator (§3.1).
* `overlap` (beyond the reference, opt-in): the `rtl` costs on four units (DMA, matrix,
  vector, scalar/control) that overlap except where data dependencies forbid it.

Static costs are evaluated once per static instruction; DMA costs depend on register and CSR
contents and come from the HBM cost model (`hbm.HbmCost`), whose closed form is the same as
the DMA instructions' `latency` clauses (a test keeps the two equal).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from zomboss import expr as ex
from zomboss.errors import ZombossError
from zomboss.program import Instr

MODES = ("rtl", "emu", "overlap")
DEFAULT_MODES = ("rtl", "emu")


class TimingError(ZombossError):
    """A timing request the model cannot answer (unknown mode, a cost the doc leaves dynamic)."""


def check_modes(modes: Sequence[str]) -> tuple[str, ...]:
    bad = [m for m in modes if m not in MODES]
    if bad:
        raise TimingError(f"unknown timing mode {bad[0]!r} (modes: {', '.join(MODES)})")
    return tuple(dict.fromkeys(modes))


def _inline_lets(sig, e: ex.Expr) -> ex.Expr:
    env: dict[str, ex.Expr] = {}
    for name, val in sig.lets:
        env[name] = ex.substitute(val, env)
    return ex.substitute(e, env)


@dataclass(frozen=True)
class StaticCost:
    rtl: int
    emu: int


class CostTable:
    """Per-instruction `latency` (rtl) and `emu_cycles` (emu) costs from the doc.

    A cost is static when its expression, with the instruction's `let`s inlined, mentions only
    parameters and operand values (register *indices* included). DMA costs are dynamic and
    left to the HBM model; any other dynamic cost is a doc error reported here."""

    def __init__(self, kb) -> None:
        self.kb = kb
        self._fns: dict[str, tuple[Callable, Callable] | None] = {}
        self._cache: dict[tuple[str, tuple[int, ...]], StaticCost | None] = {}
        for name, sig in kb.instrs.items():
            lat = sig.latency
            emu = dict(sig.lets).get("emu_cycles")
            if lat is None or emu is None:
                raise TimingError(f"{sig.loc}: {name} needs both a latency clause and an emu_cycles definition")
            lat_e, emu_e = _inline_lets(sig, lat), _inline_lets(sig, emu)
            operands = {o.name for o in sig.operands}
            known = set(kb.params) | operands
            dynamic = any(
                r.name not in known and r.name.lower() not in kb.symbols for e in (lat_e, emu_e) for r in ex.refs(e)
            )
            if dynamic:
                if sig.unit != "dma":
                    raise TimingError(f"{sig.loc}: the cost of {name} depends on run-time values; only DMA costs may")
                self._fns[name] = None
                continue

            def known_name(n: str, operands: set[str] = operands) -> bool:
                return n in kb.params or n in operands

            def symbol(n: str) -> bool:
                return n.lower() in kb.symbols

            self._fns[name] = (
                ex.compile_python(lat_e, known_name, symbol),
                ex.compile_python(emu_e, known_name, symbol),
            )

    def static(self, ins: Instr) -> StaticCost | None:
        """Both costs of a static instruction, or None when they are decided at run time."""
        key = (ins.op, ins.args)
        if key in self._cache:
            return self._cache[key]
        fns = self._fns[ins.op]
        out = None
        if fns is not None:
            sig = self.kb.instrs[ins.op]
            env = dict(self.kb.params)
            env.update({o.name: a for o, a in zip(sig.operands, ins.args, strict=True)})
            out = StaticCost(int(fns[0](env)), int(fns[1](env)))
        self._cache[key] = out
        return out


# ---------------------------------------------------------------------------------------
# RTL pipeline hazards (Appendix B; plena.md §7.1)
# ---------------------------------------------------------------------------------------

VF_OPS = frozenset({"V_ADD_VF", "V_SUB_VF", "V_MUL_VF", "V_MAX_VF", "V_MIN_VF"})
VV_OPS = frozenset({"V_ADD_VV", "V_SUB_VV", "V_MUL_VV"})
V_UNARY_OPS = frozenset({"V_EXP_V", "V_RECI_V", "V_SHFT_V"})
RED_OPS = frozenset({"V_RED_SUM", "V_RED_MAX"})
SFU_OPS = frozenset({"S_EXP_FP", "S_RECI_FP", "S_SQRT_FP"})
SFP_BINARY = frozenset({"S_ADD_FP", "S_SUB_FP", "S_MAX_FP", "S_MUL_FP"})


@dataclass(frozen=True, slots=True)
class Probe:
    """What one executed instruction produces and consumes, for adjacent-pair hazards."""

    vector: bool = False  # runs on the vector unit
    vreads: tuple[int, ...] = ()  # VRAM rows read by a vector instruction
    vwrite: int = -1  # VRAM row written by a vector instruction
    hbmv: tuple[int, int] = (0, 0)  # VRAM rows [lo, hi) written by H_PREFETCH_V
    fred: int = -1  # FP register written by a reduction
    fsfu: int = -1  # FP register written by the special-function unit
    fscalar: tuple[int, ...] = ()  # FP registers read by a scalar FP instruction
    fbcast: int = -1  # FP register broadcast by a V_*_VF instruction


@dataclass(frozen=True)
class HazardPenalties:
    hbmv_vector: int
    red_sfp: int
    sfu_bcast: int
    vram_write: int

    @classmethod
    def from_params(cls, p: Mapping[str, int]) -> HazardPenalties:
        return cls(p["rtl_hz_hbmv_vector"], p["rtl_hz_red_sfp"], p["rtl_hz_sfu_bcast"], p["rtl_hz_vram_write"])

    def between(self, prev: Probe | None, cur: Probe) -> int:
        """Stall + recovery cycles `cur` pays because of the instruction right before it."""
        if prev is None:
            return 0
        n = 0
        if prev.hbmv[1] > prev.hbmv[0] and cur.vector and any(prev.hbmv[0] <= r < prev.hbmv[1] for r in cur.vreads):
            n += self.hbmv_vector
        if prev.fred >= 0 and prev.fred in cur.fscalar:
            n += self.red_sfp
        if prev.fsfu >= 0 and cur.fbcast == prev.fsfu:
            n += self.sfu_bcast
        if prev.vwrite >= 0 and cur.vwrite == prev.vwrite:
            n += self.vram_write
        return n


def hazard_probe(ins: Instr, vlen: int, vrows_prefetch: int) -> Callable[[list[int]], Probe] | None:
    """A function of the GP registers giving the instruction's Probe (None: plays no part)."""
    op, a = ins.op, ins.args
    if op in VV_OPS:
        rd, r1, r2 = a[0], a[1], a[2]
        return lambda gp: Probe(True, (gp[r1] // vlen, gp[r2] // vlen), gp[rd] // vlen)
    if op in VF_OPS:
        rd, r1, fs = a[0], a[1], a[2]
        return lambda gp: Probe(True, (gp[r1] // vlen,), gp[rd] // vlen, fbcast=fs)
    if op in V_UNARY_OPS:
        rd, r1 = a[0], a[1]
        return lambda gp: Probe(True, (gp[r1] // vlen,), gp[rd] // vlen)
    if op in RED_OPS:
        fd, r1 = a[0], a[1]
        return lambda gp: Probe(True, (gp[r1] // vlen,), fred=fd)
    if op == "V_TOPK":
        r1, rows = a[1], -(-(32 if a[3] == 0 else 128) // vlen)
        return lambda gp: Probe(True, tuple(range(gp[r1] // vlen, gp[r1] // vlen + rows)))
    if op == "H_PREFETCH_V":
        rd = a[0]
        return lambda gp: Probe(hbmv=(gp[rd] // vlen, gp[rd] // vlen + vrows_prefetch))
    if op in SFU_OPS:
        p = Probe(fsfu=a[0], fscalar=(a[1],))
        return lambda gp: p
    if op in SFP_BINARY:
        p = Probe(fscalar=(a[1], a[2]))
        return lambda gp: p
    if op == "S_ST_FP":
        p = Probe(fscalar=(a[0],))
        return lambda gp: p
    return None


# ---------------------------------------------------------------------------------------
# Overlap: a scoreboard of four units with data dependencies (beyond the reference)
# ---------------------------------------------------------------------------------------

UNIT_OF = {"matrix": "matrix", "vector": "vector", "scalar": "scalar", "control": "scalar", "dma": "dma"}

# Register operands an instruction writes (all other register operands are read).
_REG_WRITES: dict[str, tuple[int, ...]] = {
    **{m: (0,) for m in ("S_ADD_INT", "S_SUB_INT", "S_MUL_INT", "S_ADDI_INT", "S_LUI_INT", "S_LD_INT")},
    **{
        m: (0,)
        for m in ("S_ADD_FP", "S_SUB_FP", "S_MAX_FP", "S_MUL_FP", "S_EXP_FP", "S_RECI_FP", "S_SQRT_FP", "S_LD_FP")
    },
    **{m: (0,) for m in ("V_RED_SUM", "V_RED_MAX", "C_SET_ADDR_REG", "C_LOOP_START", "C_LOOP_END")},
}
_READS_OWN_DEST = frozenset({"V_RED_SUM", "V_RED_MAX", "C_LOOP_END"})  # accumulate / decrement


class Overlap:
    """In-order issue; an instruction starts when its unit is free, the data it reads has
    been written, and earlier readers of what it overwrites have finished."""

    def __init__(self, kb) -> None:
        self.kb = kb
        self._ready: dict[tuple, int] = {}
        self._last_read: dict[tuple, int] = {}
        self._unit_free: dict[str, int] = {}
        self._issue = 0
        self.makespan = 0
        self._access: dict[str, list[tuple[str, bool, Callable, Callable]]] = {}
        params = kb.params
        for name, sig in kb.instrs.items():
            names = {o.name for o in sig.operands} | {f"{o.name}.val" for o in sig.operands if o.kind in kb.regfiles}
            names |= {f"{u.alias}.{f}" for u in sig.uses for f in kb.states[u.state][1]}
            acc = []
            for is_write, lst in ((False, sig.reads), (True, sig.writes)):
                for a in lst:
                    if a.memory == "hbm":
                        continue  # one DMA unit: HBM accesses are already serialized

                    def comp(e: ex.Expr, sig=sig, names=names) -> Callable:
                        return ex.compile_python(
                            _inline_lets(sig, e), lambda n: n in names or n in params, lambda n: n.lower() in kb.symbols
                        )

                    acc.append((a.memory, is_write, comp(a.lo), comp(a.hi)))
            self._access[name] = acc

    def step(self, ins: Instr, unit: str, cost: int, env: Mapping[str, int]) -> None:
        """Schedule one executed instruction; `env` holds operands, `x.val` and `cfg.*` values."""
        sig = self.kb.instrs[ins.op]
        reads: list[tuple] = []
        writes: list[tuple] = []
        wpos = _REG_WRITES.get(ins.op, ())
        for i, o in enumerate(sig.operands):
            if o.kind in self.kb.regfiles:
                key = (o.kind, ins.args[i])
                if i in wpos:
                    writes.append(key)
                    if ins.op in _READS_OWN_DEST:
                        reads.append(key)
                else:
                    reads.append(key)
        if ins.op.startswith("C_SET_") and ins.op != "C_SET_ADDR_REG":
            writes.append(("csr",))
        elif ins.op.startswith("H_") or (
            len(ins.args) >= 4 and ins.op.startswith("V_") and "rmask" in env and env["rmask"]
        ):
            reads.append(("csr",))
        full = dict(self.kb.params)
        full.update(env)
        for mem, is_write, lo, hi in self._access[ins.op]:
            keys = [(mem, r) for r in range(int(lo(full)), int(hi(full)))]
            (writes if is_write else reads).extend(keys)
        u = UNIT_OF.get(sig.unit, "scalar")
        start = max(self._issue, self._unit_free.get(u, 0))
        for k in reads:
            start = max(start, self._ready.get(k, 0))
        for k in writes:
            start = max(start, self._ready.get(k, 0), self._last_read.get(k, 0))
        end = start + cost
        self._issue = start
        self._unit_free[u] = end
        for k in reads:
            if self._last_read.get(k, 0) < end:
                self._last_read[k] = end
        for k in writes:
            self._ready[k] = end
        if end > self.makespan:
            self.makespan = end
