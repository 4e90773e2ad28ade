"""Timing-only runs of the generic simulator, one generated Python function per instruction.

A timing-only run (`GenericSim.run` without memories and without `check`) needs of each executed
instruction only its timing operation (unit, latency, issue, tokens, footprints), its register
effects (addresses and loop counts depend on them) and its state `sets`. The reference path
builds an environment dict per instruction and calls a closure per expression; here each
instruction of the doc becomes one straight-line Python function, generated from the doc's own
AST (`zomboss.expr.python.python_source`) when the simulator is built: operand bit fields,
register values, state fields and lets are locals, and the register effects on integer
registers are Python int arithmetic with the register's wraparound.

Exactness: everything is evaluated in the reference's order with the reference's semantics, so
values and errors (their type, message and the violation they become) are the same:
* expressions the reference compiles with `compile_python` are compiled by the same
  `python_source`, names resolved to locals instead of env lookups;
* a register effect runs inline only when it is one assignment of `copy`/`fill`/`zero`/`add`/
  `sub`/`mul`/`min`/`max` on plain integer registers (no options, no lets, no loops) whose
  expressions use nodes whose values the closure `compiled.scompile` makes computes with the
  very Python operators used here (`+ - * & | < <= > >=`), or, at the top of an index or value
  (where the closure's result is only converted by `int`), a condition, `/`, `%`, `<<`, `>>`,
  and comparisons, `and`, `or`, `not` where only their truth is used. Where the closure's own
  int path would leave Python ints (a value beyond int64, a shift out of range, a non-int
  operand), the generated code raises `_Slow` before writing anything and the effect's compiled
  closure runs it as the reference does. Any other register effect calls its closure with the
  names it mentions;
* a guard the generated code cannot follow (a register operand out of its file: the reference's
  environment then lacks `x.val`; a state field missing) returns None before anything changed,
  and the instruction runs the reference way (`_reference_step`).
An instruction whose expressions name something the generator does not bind is not generated:
it always runs the reference way.

Registers are read and written through `memoryview`s of the run's register arrays, so the
registers stay in `Run.registers` as the reference leaves them, and the hardware-loop macros and
the replay (`replay.py`) see them as they do on the reference path.
"""

from __future__ import annotations

import re
import struct
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from zomboss import expr as ex
from zomboss.doc import model as dm
from zomboss.errors import IllegalProgram
from zomboss.expr.python import PY_GLOBALS, fold, python_source
from zomboss.knowledge import Violation, scope_names
from zomboss.machine import effects as fx
from zomboss.machine.compiled import compile_effect
from zomboss.machine.memories import EffectError, Memories, View
from zomboss.program import Instr

if TYPE_CHECKING:
    from zomboss.machine.simulator import GenericSim, _Plan

LOOP_START, LOOP_END, LOOP_BREAK = "loop_start", "loop_end", "loop_break"  # `simulator`'s built-in macros
OpRow = tuple[Any, ...]  # an Op's fields in order: what `timing.Op(*row)` is
Step = Callable[[tuple[int, ...], Instr, int], "int | None"]  # appends the row; returns the points
I64 = 1 << 63


class _NoGen(Exception):
    """The generator cannot make this instruction exact: it runs the reference way."""


class _Slow(Exception):
    """At run time, an inline integer register effect leaves the closure's int path: the closure
    runs it (nothing of the effect was written yet)."""


# ---- helpers the generated code calls (rare paths: errors and fallbacks) ------------------------


def _oob(mem: Memories, v: View, k: int, a: dm.Assign, what: str) -> None:
    """A register index out of its file: the closure's bounds check (`compiled._at`) raises."""
    mem._check(v, np.array([k], dtype=np.int64), a, what)
    raise _Slow  # not reached: the index is out of bounds


def _bounds(e: EffectError, n: int, ins: Instr) -> IllegalProgram:
    return IllegalProgram([Violation("effect.bounds", str(e), str(e.loc), n, ins.line, ins.op, e.values)])


def _evalerr(e: Exception, eff: dm.Effect, n: int, ins: Instr) -> IllegalProgram:
    msg = f"cannot apply the effect: {e}"
    return IllegalProgram([Violation("effect.eval", msg, str(eff.loc), n, ins.line, ins.op)])


def _qbad(q: str, i: int, size: int, n: int, ins: Instr) -> IllegalProgram:
    msg = f"{ins.op}: token queue {q}[{i}] is outside {q}[0..{size - 1}]"
    return IllegalProgram([Violation("queue.index", msg, "", n, ins.line, ins.op)])


def _div(a: Any, b: Any, show: str) -> int:
    """`compiled._int_binop`'s `/` on Python ints (anything else: the closure)."""
    if type(a) is not int or type(b) is not int:
        raise _Slow
    if b == 0:
        raise ex.Undefined(f"division by zero in {show}")
    return a // b


def _mod(a: Any, b: Any, show: str) -> int:
    if type(a) is not int or type(b) is not int:
        raise _Slow
    if b == 0:
        raise ex.Undefined(f"division by zero in {show}")
    return a % b


def _shift(a: Any, b: Any, left: bool) -> int:
    """`compiled._int_binop`'s shifts where it stays on Python ints (else: the closure)."""
    if type(a) is not int or type(b) is not int or not (0 <= b < 63 and -I64 <= a < I64):
        raise _Slow
    y = a << b if left else a >> b
    if not -I64 <= y < I64:
        raise _Slow
    return y


def _cond(c: Any, t: Any, o: Any) -> Any:
    """`np.where(c, t, o)` of two scalars, as `int` will read it (values within int64)."""
    if not (-I64 <= t < I64 and -I64 <= o < I64):
        raise _Slow
    return t if c else o


_HELPERS: dict[str, Any] = {
    **PY_GLOBALS,
    "_oob": _oob,
    "_bounds": _bounds,
    "_evalerr": _evalerr,
    "_qbad": _qbad,
    "_div": _div,
    "_mod": _mod,
    "_shift": _shift,
    "_cond": _cond,
    "_Slow": _Slow,
    "_EffectError": EffectError,
    "_EVAL_ERRORS": (ex.ExprError, ex.Undefined, ZeroDivisionError),
}

# the closure's int operations on plain integer registers (`compiled._INT_OPS`): (arity, source)
_INT_OPS: dict[str, tuple[int, str]] = {
    "copy": (1, "{0}"),
    "fill": (1, "{0}"),
    "zero": (0, "0"),
    "add": (2, "({0} + {1})"),
    "sub": (2, "({0} - {1})"),
    "mul": (2, "({0} * {1})"),
    "min": (2, "min({0}, {1})"),
    "max": (2, "max({0}, {1})"),
}
# the closure's float operations on BF16 registers: (arity, `effects.OPS` entry, source on the
# operands' values as Python floats: the same double arithmetic or the same scalar function)
_FLOAT_OPS: dict[str, tuple[int, Any, str]] = {
    "add": (2, np.add, "({0} + {1})"),
    "sub": (2, np.subtract, "({0} - {1})"),
    "mul": (2, np.multiply, "({0} * {1})"),
    "fmax": (2, fx.nf.fmax, "_fmax({0}, {1})"),
    "reci": (1, fx.nf.FUNCS["reci"], "_reci({0})"),
    "sqrt": (1, fx.nf.FUNCS["sqrt"], "_sqrt({0})"),
    "exp": (1, fx.nf.FUNCS["exp"], "_exp({0})"),
}
_PACK_F32 = struct.Struct("<f").pack
_UNPACK_U32 = struct.Struct("<I").unpack


def _bf16(y: float) -> int:
    """`bf16_round` of a double, as the bit pattern of its float32 (NaN, overflow: the closure)."""
    if y != y:
        raise _Slow
    try:
        u = _UNPACK_U32(_PACK_F32(y))[0]
    except OverflowError:
        raise _Slow from None  # past float32: NumPy's conversion gives an infinity
    return (u + 0x7FFF + ((u >> 16) & 1)) & 0xFFFF0000


def _fmax(a: float, b: float) -> float:
    """`numformats.fmax` of two scalars."""
    return b if a != a else (b if b > a else a)


_HELPERS.update(
    {"_bf16": _bf16, "_fmax": _fmax, "_reci": fx.nf.reci_scalar, "_sqrt": fx.nf.sqrt_scalar, "_exp": fx.nf.exp_scalar}
)


_PLAIN = {"+", "-", "*", "&", "|"}  # `effects._FAST`'s arithmetic: Python's operators on ints
_ORDER = {"<", "<=", ">", ">="}  # `_FAST` comparisons: Python bools


def _mv(arr: np.ndarray, dtype: Any) -> memoryview:
    """A flat memoryview of a C-contiguous array's elements as `dtype` (Python ints)."""
    return memoryview(arr.view(dtype).reshape(-1))


@dataclass(frozen=True)
class Kind:
    """One instruction's generated step: `make(registers, state, memories, append)` binds it to a
    run (`append` takes its timing operation's row)."""

    make: Callable[[Mapping[str, memoryview], Mapping[str, Any], Memories, Callable[[OpRow], None]], Step]
    source: str  # the generated code (for debugging and tests)


class _Gen:
    """The code of one instruction's step."""

    def __init__(self, sim: GenericSim, plan: _Plan) -> None:
        self.sim, self.kb, self.plan, self.ins = sim, sim.kb, plan, plan.ins
        self.lines: list[str] = []
        self.glob: dict[str, Any] = dict(_HELPERS)
        self.local: dict[str, str] = {}  # env name -> the local holding it
        self.count = 0
        ins = plan.ins
        self.known = scope_names(self.kb, ins) | set(self.kb.params)
        for u in ins.uses:
            self.known |= {f"{u.alias}.{f}" for f in self.kb.states[u.state][1]}
        self.regs: dict[str, str] = {}  # register file -> the closure variable of its memoryview
        self.states: dict[str, str] = {}
        self.pure: list[tuple[int, str]] = []  # (line, local) of bindings without effects or errors
        self.bounded: set[str] = set()  # locals that hold an int within int64 (a register's value)
        self.guarded: dict[str, tuple[str, int]] = {}  # register operand -> (its file, its count)
        self.consts: dict[str, int] = {}  # the parameters expressions fold

    def emit(self, line: str, depth: int = 1) -> None:
        self.lines.append("    " * depth + line)

    def fresh(self, stem: str = "t") -> str:
        self.count += 1
        return f"_{stem}{self.count}"

    def const(self, v: Any) -> str:
        if type(v) is int or type(v) is bool or type(v) is str or v is None:
            return f"({v!r})"
        name = self.fresh("k")
        self.glob[name] = v
        return name

    def bind(self, name: str, src: str, depth: int = 1, pure: bool = False) -> str:
        """env[name] = src (a later binding of the same name replaces it, as in the env dict);
        `pure`: it cannot fail, and goes if nothing reads it."""
        loc = self.fresh("v")
        if pure:
            self.pure.append((len(self.lines), loc))
        self.emit(f"{loc} = {src}", depth)
        self.local[name] = loc
        return loc

    def py(self, e: ex.Expr) -> str:
        """`compile_python`'s semantics with names resolved to locals (parameters folded in, which
        `fold` does exactly)."""
        e = fold(e, self.consts)

        def resolve(r: ex.Ref) -> str:
            if r.name in self.known:
                if r.name not in self.local:
                    raise _NoGen(r.name)
                return self.local[r.name]
            if len(r.parts) == 1 and r.name.lower() in self.kb.symbols:
                return repr(r.name.lower())
            raise _NoGen(r.name)

        return python_source(e, resolve)

    def reg(self, rf: str) -> str:
        if rf not in self.regs:
            self.regs[rf] = f"_R_{len(self.regs)}"
        return self.regs[rf]

    def state(self, st: str) -> str:
        if st not in self.states:
            self.states[st] = f"_S_{len(self.states)}"
        return self.states[st]

    # ---- the step ----------------------------------------------------------------------------

    def build(self) -> Kind:
        kb, plan, ins = self.kb, self.plan, self.ins
        scope = plan.timed
        if scope is None:
            raise _NoGen("no timed scope")
        args = [f"a{i}" for i in range(len(ins.operands))]
        if args:
            self.emit(f"{', '.join(args)}{',' if len(args) == 1 else ''} = a")
        for name, v in scope.params.items():
            self.local[name] = self.const(v)
        shadowed = self.known - set(kb.params)
        self.consts = {k: v for k, v in scope.params.items() if type(v) is int and k not in shadowed}
        for o, a in zip(ins.operands, args, strict=True):
            self.local[o.name] = a
        # register values: a register operand out of its file leaves `x.val` out of the
        # reference's env: the reference runs such an instruction
        guards = []
        for i, rf, _ in plan.regs:
            guards.append(f"0 <= a{i} < {kb.regfiles[rf].count}")
            if self.guarded.get(f"a{i}", (rf,))[0] == rf:
                self.guarded[f"a{i}"] = (rf, kb.regfiles[rf].count)
            else:
                self.guarded.pop(f"a{i}")  # an operand of two files (not in a doc)
        if guards:
            self.emit(f"if not ({' and '.join(guards)}):")
            self.emit("return None", 2)
        for i, rf, name in plan.regs:
            arr_kind, width, bits = self._regfile(rf)
            src = f"{self.reg(rf)}[a{i}]"
            if arr_kind == "f":
                src = f"({src} >> {32 - width})"
            loc = self.bind(name, src, pure=True)
            if bits <= 63 or arr_kind == "i":
                self.bounded.add(loc)
        for i, name, shift, mask in scope.decoders:
            self.bind(name, f"((a{i} >> {shift}) & {mask})", pure=True)
        self.local["op"] = "_op"
        fielded = any(fields for fields in scope.fields)
        if fielded:
            self.emit("try:")
        for (st, _, _), u, fields in zip(plan.uses, ins.uses, scope.fields, strict=True):
            rec = self.state(st)
            if u.index is not None:
                r = self.fresh("r")
                self.emit(f"{r} = {rec}[{self.py(u.index)}]", 2 if fielded else 1)
                rec = r
            for name, f in fields:
                self.bind(name, f"{rec}[{f!r}]", 2)
        if fielded:
            self.emit("except KeyError:")
            self.emit("return None", 2)  # a field missing from its record: the reference's way
        keep = {id(fn) for _, fn in scope.lets}
        for (name, e), (_, fn) in zip(ins.lets, plan.lets, strict=True):
            if id(fn) in keep:
                self.bind(name, self.py(e))
        self.emit("pts = 0")
        for k, (eff, applied) in enumerate(plan.reg_applied):
            self._effect(k, eff, applied)
        # the timing operation, in the reference's order
        lat = self._at_least_0(ins.latency, "lat", "1")
        pops = self._tokens(plan.pops, ins.pops, "pops")
        pushes = self._tokens(plan.pushes, ins.pushes, "pushes")
        issue = self._at_least_0(ins.issue, "iss", "None")
        reads, writes = self._footprints()
        for s in ins.sets:
            rec = self.state(s.state)
            if s.index is not None:
                r = self.fresh("r")
                self.emit(f"{r} = {rec}[{self.py(s.index)}]")
                rec = r
            self.emit(f"{rec}[{s.field!r}] = {self.py(s.value)}")
        unit, name = self.const(ins.unit), self.const(ins.name)
        self.emit(
            f"_APPEND(({unit}, {lat}, {pops}, {pushes}, {plan.memory!r}, ins.line, {issue}, {reads}, {writes}, {name}))"
        )
        self.emit("return pts")
        head = ["def _make(_REGS, _STATE, _MEM, _APPEND):"]
        for rf, var in self.regs.items():
            head.append(f"    {var} = _REGS[{rf!r}]")
        for st, var in self.states.items():
            head.append(f"    {var} = _STATE[{st!r}]")
        head.append(f"    _op = {ins.name.lower()!r}")
        head.append("    def step(a, ins, n):")
        used = "\n".join(self.lines)
        drop = {at for at, loc in self.pure if len(re.findall(rf"\b{loc}\b", used)) == 1}
        body = ["    " + line for at, line in enumerate(self.lines) if at not in drop]
        src = "\n".join([*head, *body, "    return step", ""])
        glob = self.glob
        exec(compile(src, f"<step {ins.name}>", "exec"), glob)  # noqa: S102 - generated from our own doc AST
        return Kind(glob["_make"], src)

    def _regfile(self, rf: str) -> tuple[str, int, int]:
        """How a register file is read: its dtype's kind, its width and its storage's bits
        (floats: bit patterns of float32 storage alone)."""
        v = self.sim.views.get(rf)
        width = self.kb.regfiles[rf].width
        if v is None or v.name != v.memory or v.rows * v.cols != 1:
            raise _NoGen(f"register file {rf}")
        dt = np.dtype(v.dtype)
        if dt.kind == "f" and dt != np.float32:
            raise _NoGen(f"register file {rf} of {dt}")
        if dt.kind not in "iuf":
            raise _NoGen(f"register file {rf} of {dt}")
        return dt.kind, width, 8 * dt.itemsize

    def _at_least_0(self, e: ex.Expr | None, var: str, absent: str) -> str:
        """The Python of `max(int(e), 0)`: a literal where `e` folds to one, else `var`, computed
        by emitted lines; `absent` without an `e`."""
        if e is None:
            return absent
        folded = fold(e, self.consts)
        if isinstance(folded, ex.Int):
            return repr(max(folded.value, 0))
        self.emit(f"{var} = int({self.py(e)})")
        self.emit(f"{var} = {var} if {var} >= 0 else 0")
        return var

    def _tokens(self, toks: list[tuple[str, Any, Any, int]], decl: tuple[dm.TokenOp, ...], what: str) -> str:
        if not toks:
            return "()"
        if all(t.when is None and t.index is None for t in decl):
            return self.const(tuple(q for q, _, _, _ in toks))
        self.emit(f"{what} = []")
        for (q, _, _, size), t in zip(toks, decl, strict=True):
            depth = 1
            if t.when is not None:
                self.emit(f"if {self.py(t.when)}:")
                depth = 2
            if t.index is None:
                self.emit(f"{what}.append({q!r})", depth)
                continue
            names = self.const(tuple(f"{q}[{i}]" for i in range(size)))
            self.emit(f"i = int({self.py(t.index)})", depth)
            self.emit(f"if not 0 <= i < {size}:", depth)
            self.emit(f"raise _qbad({q!r}, i, {size}, n, ins)", depth + 1)
            self.emit(f"{what}.append({names}[i])", depth)
        return f"tuple({what})"

    def _footprints(self) -> tuple[str, str]:
        plan, ins = self.plan, self.ins
        if not plan.footprints and not plan.registers:
            return "()", "()"
        fps = [a for w, accesses in ((False, ins.reads), (True, ins.writes)) for a in accesses]
        tracked = [a for a in fps if any(a.memory == f[0] for f in plan.footprints)]
        if len(tracked) != len(plan.footprints):
            raise _NoGen("footprints")
        if all(a.when is None for a in tracked):  # tuples at once, evaluated in the same order
            spans: dict[bool, list[str]] = {False: [], True: []}
            for (mem, _, _, _, w), a in zip(plan.footprints, tracked, strict=True):
                spans[w].append(f"({mem!r}, int({self.py(a.lo)}), int({self.py(a.hi)}))")
            for i, rf, r, w in plan.registers:
                for flag, on in ((False, r), (True, w)):
                    if on:
                        spans[flag].append(f"({rf!r}, int(a{i}), int(a{i}) + 1)")
            out = []
            for flag in (False, True):
                loc = self.fresh("fp")
                self.emit(f"{loc} = ({''.join(x + ', ' for x in spans[flag])})")
                out.append(loc)
            return out[0], out[1]
        self.emit("rd_ = []")
        self.emit("wr_ = []")
        for (mem, _, _, _, w), a in zip(plan.footprints, tracked, strict=True):
            depth = 1
            if a.when is not None:
                self.emit(f"if {self.py(a.when)}:")
                depth = 2
            lst = "wr_" if w else "rd_"
            self.emit(f"{lst}.append(({mem!r}, int({self.py(a.lo)}), int({self.py(a.hi)})))", depth)
        for i, rf, r, w in plan.registers:
            if r:
                self.emit(f"rd_.append(({rf!r}, int(a{i}), int(a{i}) + 1))")
            if w:
                self.emit(f"wr_.append(({rf!r}, int(a{i}), int(a{i}) + 1))")
        return "tuple(rd_)", "tuple(wr_)"

    # ---- register effects --------------------------------------------------------------------

    def _effect(self, k: int, eff: dm.Effect, applied: Any) -> None:
        e_name, f_name = self.fresh("E"), self.fresh("F")
        self.glob[e_name] = eff
        self.glob[f_name] = applied
        env = self._env_of(eff)
        inline = self._inline(eff)
        self.emit("try:")
        if inline is None:
            self.emit(f"pts += {f_name}(_MEM, {env})", 2)
        else:
            self.emit("try:", 2)
            for line in inline:
                self.emit(line, 3)
            self.emit("except _Slow:", 2)
            self.emit(f"pts += {f_name}(_MEM, {env})", 3)
            self.emit("else:", 2)
            self.emit("pts += 1", 3)
        self.emit("except _EffectError as e:")
        self.emit("raise _bounds(e, n, ins) from None", 2)
        self.emit("except _EVAL_ERRORS as e:")
        self.emit(f"raise _evalerr(e, {e_name}, n, ins) from None", 2)

    def _env_of(self, eff: dm.Effect) -> str:
        """The env a closure gets: the names it mentions the reference's env holds."""
        from zomboss.machine.simulator import _named_in

        names = sorted(n for n in _named_in([eff]) if n in self.local)
        return "{" + ", ".join(f"{n!r}: {self.local[n]}" for n in names) + "}"

    def _inline(self, eff: dm.Effect) -> list[str] | None:
        """The inline code of an integer register effect, or None (its closure runs it)."""
        views = self.sim.views
        if eff.loops or eff.reads or eff.lets or len(eff.assigns) != 1:
            return None
        if compile_effect(views, eff) is None:
            return None
        a = eff.assigns[0]
        tv = views.get(a.target)
        if tv is not None and np.dtype(tv.dtype).kind == "f":
            return self._floats(a) if a.op in _FLOAT_OPS and a.target in self.kb.regfiles else None
        if a.op not in _INT_OPS or a.target not in self.kb.regfiles:
            return None
        arity, op_src = _INT_OPS[a.op]
        if arity != len(a.args) or any(x.kind == "opt" for x in a.args):
            return None
        refs = [x for x in a.args if x.kind == "ref"]
        if any(x.name not in self.kb.regfiles for x in refs):
            return None
        for rf in [a.target, *(x.name for x in refs)]:
            v = views.get(rf)
            if v is None or not _plain_int(v):
                return None
            try:
                if self._regfile(rf)[0] == "f":
                    return None
            except _NoGen:
                return None
        try:
            return self._assign(a, refs)
        except _NoGen:
            return None

    def _floats(self, a: dm.Assign) -> list[str] | None:
        """A BF16 register operation on BF16 registers alone (PLENA's scalar FP unit): the
        closure computes it in double on the registers' float32 values and narrows the result
        with `bf16_round` (double to float32, then to BF16, ties to even): so does this code, but
        for a NaN or a result past float32 (the closure's)."""
        views = self.sim.views
        arity, fn, _ = _FLOAT_OPS[a.op]
        if len(a.args) != arity or any(x.kind != "ref" for x in a.args) or fx.OPS.get(a.op) is not fn:
            return None
        for rf in [a.target, *(x.name for x in a.args)]:
            v = views.get(rf)
            f = fx.nf.FORMATS.get(v.fmt) if v is not None else None
            if v is None or rf not in self.kb.regfiles or v.rows * v.cols != 1 or np.dtype(v.dtype) != np.float32:
                return None
            if f is None or f.narrow is not fx.nf.bf16_round or f.widen is not None:
                return None
        try:
            return self._assign(a, list(a.args), floats=True)
        except _NoGen:
            return None

    def _assign(self, a: dm.Assign, refs: list[dm.TArg], floats: bool = False) -> list[str]:
        views = self.sim.views
        out: list[str] = []
        depth = 0
        if a.when is not None:
            out.append(f"if {self.truth(a.when)}:")
            depth = 1
        pad = "    " * depth
        a_name = self.fresh("A")
        self.glob[a_name] = a

        def value(e: ex.Expr) -> str:
            """A local or literal holding e's value (evaluated here, in the closure's order)."""
            src = self.top(e)
            if src.isidentifier() or isinstance(e, ex.Int):
                return src
            loc = self.fresh()
            out.append(f"{pad}{loc} = {src}")
            return loc

        t = value(a.index)
        ridx = [value(x.expr) for x in refs]
        vals = [(x.expr, value(x.expr)) for x in a.args if x.kind == "val"]
        for e, v in vals:
            if not (v in self.bounded or (isinstance(e, ex.Int) and -I64 <= e.value < I64)):
                out.append(f"{pad}if not -{I64} <= {v} < {I64}:")
                out.append(f"{pad}    raise _Slow")
        operands = []
        ri, vi = 0, 0
        for x in a.args:
            if x.kind == "ref":
                view = views[x.name]
                r = ridx[ri]
                ri += 1
                if self.guarded.get(r) != (x.name, view.count):
                    vn = self.fresh("V")
                    self.glob[vn] = view
                    out.append(f"{pad}if not 0 <= {r} < {view.count}:")
                    out.append(f"{pad}    _oob(_MEM, {vn}, {r}, {a_name}, 'reads')")
                g = self.fresh()
                out.append(f"{pad}{g} = {self.reg(x.name + ':f' if floats else x.name)}[{r}]")
                operands.append(g)
            else:
                e, v = vals[vi]
                operands.append(v if v in self.bounded or isinstance(e, ex.Int) else f"int({v})")
                vi += 1
        tv = views[a.target]
        dt = np.dtype(tv.dtype)
        bits = 8 * dt.itemsize
        y = self.fresh()
        if floats:
            out.append(f"{pad}{y} = _bf16({_FLOAT_OPS[a.op][2].format(*operands)})")
        else:
            out.append(f"{pad}{y} = {_INT_OPS[a.op][1].format(*operands)} & {(1 << bits) - 1}")
        if dt.kind == "i":
            out.append(f"{pad}if {y} >> {bits - 1}:")
            out.append(f"{pad}    {y} -= {1 << bits}")
        if self.guarded.get(t) != (a.target, tv.count):
            vn = self.fresh("V")
            self.glob[vn] = tv
            out.append(f"{pad}if not 0 <= {t} < {tv.count}:")
            out.append(f"{pad}    _oob(_MEM, {vn}, {t}, {a_name}, 'writes')")
        out.append(f"{pad}{self.reg(a.target)}[{t}] = {y}")
        return out

    # expressions as `compiled.scompile` evaluates them, where the values agree (module docstring)

    def plain(self, e: ex.Expr) -> str:
        """A node the closure evaluates with Python's own operators on the same values."""
        if isinstance(e, ex.Int):
            return repr(e.value) if e.value >= 0 else f"({e.value})"
        if isinstance(e, ex.Ref):
            if e.name not in self.local:
                raise _NoGen(e.name)
            return self.local[e.name]
        if isinstance(e, ex.Bin) and e.op in _PLAIN:
            return f"({self.plain(e.left)} {e.op} {self.plain(e.right)})"
        raise _NoGen(ex.show(e))

    def top(self, e: ex.Expr) -> str:
        """An index or value: read by `int` (and bounds or range checked) alone."""
        if isinstance(e, ex.Cond):
            return f"_cond({self.truth(e.cond)}, {self.plain(e.then)}, {self.plain(e.other)})"
        if isinstance(e, ex.Bin) and e.op in ("/", "%"):
            fn = "_div" if e.op == "/" else "_mod"
            return f"{fn}({self.plain(e.left)}, {self.plain(e.right)}, {ex.show(e)!r})"
        if isinstance(e, ex.Bin) and e.op in ("<<", ">>"):
            return f"_shift({self.plain(e.left)}, {self.plain(e.right)}, {e.op == '<<'})"
        return self.plain(e)

    def truth(self, e: ex.Expr) -> str:
        """A condition: only its truth is used (no operand of it can raise)."""
        if isinstance(e, ex.Bin) and e.op in _ORDER:
            return f"({self.plain(e.left)} {e.op} {self.plain(e.right)})"
        if isinstance(e, ex.Bin) and e.op in ("==", "!="):
            # numpy's comparison of Python ints: Python's within int64 (`_eq`); a name compared
            # with a small literal is checked inline
            left, right = self.plain(e.left), self.plain(e.right)
            if isinstance(e.right, ex.Int) and -I64 <= e.right.value < I64 and left.isidentifier():
                if left in self.bounded or left in self.guarded:
                    return f"({left} {e.op} {right})"  # an int within int64
                return f"({left} {e.op} {right} if type({left}) is int and -{I64} <= {left} < {I64} else _eq({left}, {right}, {e.op == '=='}))"
            return f"_eq({left}, {right}, {e.op == '=='})"
        if isinstance(e, ex.Bin) and e.op in ("and", "or"):
            # numpy's logical operators evaluate both sides: so does `&` / `|` of two bools
            return f"({self.truth(e.left)} {'&' if e.op == 'and' else '|'} {self.truth(e.right)})"
        if isinstance(e, ex.Un) and e.op == "not":
            return f"(not {self.truth(e.arg)})"
        raise _NoGen(ex.show(e))


def _eq(a: Any, b: Any, eq: bool) -> bool:
    """`compiled._int_binop`'s `==` / `!=`, as truth: Python's on a string and on two ints within
    int64, where NumPy's agrees (else: the closure)."""
    if isinstance(a, str) or isinstance(b, str):
        return (a == b) if eq else (a != b)
    if type(a) not in (int, bool) or type(b) not in (int, bool) or not (-I64 <= a < I64 and -I64 <= b < I64):
        raise _Slow
    return bool(a == b) if eq else bool(a != b)


_HELPERS["_eq"] = _eq


def _plain_int(v: View) -> bool:
    """One integer per element, stored and read as is (no number-format hook)."""
    f = fx.nf.FORMATS.get(v.fmt)
    hooked = f is not None and (f.widen is not None or f.narrow is not None)
    return v.rows * v.cols == 1 and bool(np.issubdtype(v.dtype, np.integer)) and not hooked


def generate(sim: GenericSim) -> dict[str, Kind]:
    """The generated step of every instruction the generator can make exact."""
    out = {}
    for name, plan in sim.plans.items():
        try:
            out[name] = _Gen(sim, plan).build()
        except _NoGen:
            continue
    return out
