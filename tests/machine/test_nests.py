"""Loop-nest effects and effects with data reads, compiled (`zomboss.machine.nests`), against the
interpreter (`effects.apply`) effect by effect: every effect of the Gemmini, PLENA and VTA docs
on random memories and operands, and hand-made edge cases, with the same memories, loop points
and errors (type, message, values)."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any
from unittest import mock

import numpy as np
import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from zomboss import expr as ex
from zomboss.doc import model as dm
from zomboss.doc import parse_doc
from zomboss.knowledge import KB, compile_doc
from zomboss.machine import compiled as C
from zomboss.machine import effects as fx
from zomboss.machine import memories
from zomboss.machine import nests as N
from zomboss.machine.memories import EffectError, Memories

EXTERNAL = 1 << 12  # bytes of each external memory


@functools.cache
def _kb(doc: str) -> KB:
    if doc == "gemmini":
        from zomboss.targets.gemmini.config import GemminiConfig

        return GemminiConfig.default().kb()
    if doc == "plena":
        from zomboss.targets.plena.config import PlenaConfig

        return PlenaConfig.from_params().kb
    from zomboss.target import get_target

    return get_target("vta").kb({})  # type: ignore[attr-defined,no-any-return]


def _effects(doc: str) -> list[tuple[str, int]]:
    kb = _kb(doc)
    return [(n, k) for n, i in kb.instrs.items() for k, e in enumerate(i.effects) if e.loops or e.reads]


def _names(eff: dm.Effect) -> list[str]:
    """The names an effect takes from its instruction (not bound by its loops, reads or lets)."""
    exprs: list[ex.Expr] = []
    for lp in eff.loops:
        exprs += [e for e in (lp.count, lp.lo, lp.hi) if e is not None]
    exprs += [e for _, _, e in eff.reads] + [e for _, e in eff.lets]
    for a in eff.assigns:
        exprs += [a.index, *(x.expr for x in a.args)] + ([a.when] if a.when is not None else [])
    bound = {lp.var for lp in eff.loops} | {n for n, _, _ in eff.reads} | {n for n, _ in eff.lets}
    prefixes = tuple(lp.var + "." for lp in eff.loops)
    free = {r.name for e in exprs for r in ex.refs(e)}
    return sorted(n for n in free if n not in bound and not n.startswith(prefixes))


def _memories(kb: KB, rng: np.random.Generator) -> Memories:
    mem = Memories(kb, {m.name: EXTERNAL for m in kb.memories.values() if m.external})
    for a in mem.arrays.values():
        if a.dtype.kind == "f":
            a[...] = rng.normal(0, 4, a.shape).astype(a.dtype)
        elif a.dtype.itemsize == 1 or rng.random() < 0.5:
            a[...] = rng.integers(0, 256, a.shape).astype(a.dtype)
        else:
            a[...] = rng.integers(0, 24, a.shape).astype(a.dtype)  # small: indices that land inside
    return mem


def _outcome(fn: Callable[[Memories, dict[str, Any]], int], mem: Memories, env: dict[str, Any]) -> Any:
    try:
        with np.errstate(all="ignore"):
            got: Any = fn(mem, dict(env))
    except EffectError as e:
        got = ("EffectError", str(e), e.loc, repr(e.values))
    except (ex.ExprError, ValueError, OverflowError, TypeError, KeyError, IndexError) as e:
        got = (type(e).__name__, str(e))
    return got, tuple((k, a.tobytes()) for k, a in sorted(mem.arrays.items()))


def _agree(
    kb: KB, eff: dm.Effect, env: dict[str, Any], seed: int, mutate: Callable[[Memories], None] | None = None
) -> Any:
    """The compiled effect and the interpreter leave the same outcome (returned for checks)."""
    fast = C.compile_effect(memories.views(kb), eff)
    assert fast is not None
    got = []
    for fn in (fast, lambda m, e: fx.apply(m, eff, e)):
        mem = _memories(kb, np.random.default_rng(seed))
        if mutate is not None:
            mutate(mem)
        got.append(_outcome(fn, mem, env))
    assert got[0] == got[1]
    return got[0]


NEST_POINTS = 1 << 16  # the point limit of the random nests (the machine's is fx.MAX_POINTS)
_SMALL = st.sampled_from([0, 1, 2, 3, 4, 5, 7, 8, 16, 17, 31, 64]) | st.integers(0, 40)
_ODD = st.sampled_from([4294967295, -1, 1 << 31, (1 << 31) | (1 << 30) | 5, 1 << 30, 65535, 100000])


@pytest.mark.parametrize(
    ("doc", "instr", "k"), [(d, n, k) for d in ("gemmini", "plena", "vta") for n, k in _effects(d)]
)
@settings(
    max_examples=12,
    deadline=None,
    derandomize=True,
    phases=[Phase.explicit, Phase.generate],  # a failure reported as found (shrinking nests takes minutes)
    suppress_health_check=[HealthCheck.too_slow],
)
@given(data=st.data())
def test_every_nest_effect_agrees_with_the_interpreter(doc: str, instr: str, k: int, data: st.DataObject) -> None:
    """Random operands (small, or in wild examples some garbage addresses, flags and huge values)
    and memories."""
    kb = _kb(doc)
    eff = kb.instrs[instr].effects[k]
    env: dict[str, Any] = dict(kb.params)
    values = _SMALL | _ODD if data.draw(st.booleans(), label="wild") else _SMALL
    for n in _names(eff):
        if n not in kb.params:
            env[n] = data.draw(values, label=n)
    seed = data.draw(st.integers(0, 1 << 30), label="seed")
    # a nest of five loops drawn up to 64 each has millions of points: both paths refuse beyond this
    # many alike (the limit is read when the effect runs), so each example stays quick
    with mock.patch.object(fx, "MAX_POINTS", NEST_POINTS):
        _agree(kb, eff, env, seed)


# ---- hand-made edge cases -------------------------------------------------------------------------

EDGE = """
```isa
param n = 16
memory a { rows: n, width: 4, type: int32 }
memory b { rows: n, width: 4, type: int8 }
memory f { rows: n, width: 4, type: bf16 }
memory ext { external, type: int8 }
view a_e { of: a, rows: 1, cols: 1 }
view a2 { of: a, rows: 1, cols: 2 }
view x32 { of: ext, rows: 1, cols: 1, type: int32, step: 1 }
tensor t { rows: 1, cols: 4, type: int64 }
tensor u { rows: 1, cols: 3, type: int8 }
view t_e { of: t, rows: 1, cols: 1 }
layout w { width: 32, lo: 7..0, hi: 15..8 }
memory idx { rows: n, width: 1, type: u32 }
instr odd(d: int 0..99, s: int 0..99, c: int 0..99)
  unit u
  effect over i < c { a[d + i] = copy(b[s + i]) when i % 2 == 1 }
instr sum(d: int 0..99, s: int 0..99, c: int 0..99)
  unit u
  effect over i < c { a[d] = add(a[d], a[s + i]) }
instr halves(d: int 0..99, c: int 0..99)
  unit u
  effect over i < c { a[d + i / 2] = copy(b[i]) }
instr chain(d: int 0..99, c: int 0..99)
  unit u
  effect over i < c { a[d + i + 1] = add(a[d + i], 1) }
instr wide(d: int 0..99, c: int 0..99)
  unit u
  effect over i < c { a2[d + i] = copy(a2[d + 2 * i + 1]) }
instr grid(d: int 0..99, r: int 0..99, c: int 0..99, g: int 0..1)
  unit u
  effect over i < r, j < c {
    let base = t_e[0]
    let on = g == 1 and i < base
    let k = base + i * c + j
    a_e[d + k] = fill(k * 3 - 1) when on
    a_e[d + k] = zero() when not on
    f[j] = add(f[j], a[i]) when j == 0
  }
instr word(d: int 0..99, c: int 0..99, v: int -99..99)
  unit u
  effect over i < c { x32[d + 3 * i] = fill(v + i) }
instr latch(p: int 0..99, q: int 0..99, r: int 0..99)
  unit u
  effect { u[0] = pack(p, q, r) }
instr rows(c: int 0..99)
  unit u
  effect over i < c, r in idx[0 : 2] as w { a_e[r.lo + i] = add(a_e[r.lo + i], b[r.hi]) }
```
"""


@functools.cache
def _edge() -> KB:
    return compile_doc(parse_doc(EDGE, "edge.md"), "edge", {})


@pytest.mark.parametrize(
    ("instr", "env"),
    [
        ("odd", {"d": 1, "s": 2, "c": 7}),  # a guard true at some points only
        ("odd", {"d": 1, "s": 2, "c": 1}),  # ... at none
        ("odd", {"d": 1, "s": 2, "c": 0}),  # no point at all
        ("odd", {"d": 12, "s": 2, "c": 7}),  # a write outside a at the last point
        ("odd", {"d": 1, "s": 14, "c": 7}),  # a read outside b
        ("sum", {"d": 3, "s": 0, "c": 8}),  # one target, read by every point
        ("sum", {"d": 3, "s": 8, "c": 8}),
        ("halves", {"d": 2, "c": 9}),  # repeated targets: the later point's write stays
        ("chain", {"d": 0, "c": 12}),  # every point reads what the one before wrote
        ("wide", {"d": 0, "c": 5}),  # a view of half rows reading ahead of its writes
        ("grid", {"d": 0, "r": 3, "c": 4, "g": 1}),
        ("grid", {"d": 0, "r": 3, "c": 4, "g": 0}),
        ("grid", {"d": 50, "r": 3, "c": 4, "g": 1}),
        ("grid", {"d": 0, "r": 1 << 13, "c": 1 << 12, "g": 1}),  # more points than MAX_POINTS
        ("word", {"d": 0, "c": 5, "v": -7}),  # overlapping int32 words of an external memory
        ("word", {"d": 4090, "c": 5, "v": 1}),
        ("rows", {"c": 3}),  # a loop over a memory's rows, decoded
        ("latch", {"p": 5, "q": 300, "r": -7}),  # a pack of ints, wrapped to int8 (compiled.py)
        ("latch", {"p": 5, "q": 1 << 70, "r": -7}),  # ... one beyond int64
    ],
)
def test_edge_cases_agree_with_the_interpreter(instr: str, env: dict[str, int]) -> None:
    kb = _edge()
    eff = kb.instrs[instr].effects[0]
    for seed in range(3):

        def init(mem: Memories, seed: int = seed) -> None:
            mem.arrays["t"][0, 0] = 2 + seed
            mem.arrays["idx"][:2, 0] = [3 | (9 << 8), 5 | (1 << 8)]
            mem.arrays["f"][...] = np.linspace(-3, 3, mem.arrays["f"].size).reshape(mem.arrays["f"].shape)

        for _ in range(2):  # the second time from the columns the first one kept
            _agree(kb, eff, {**kb.params, **env}, seed, init)


def _effect(*assigns: dm.Assign, reads: tuple[tuple[str, str, ex.Expr], ...] = ()) -> dm.Effect:
    loc = dm.Loc("e.md", 1)
    loops = (dm.EffLoop("i", ex.Ref(("c",))),)
    return dm.Effect(loops, (("k", ex.Bin("+", ex.Ref(("i",)), ex.Ref(("d",)))),), assigns, loc, reads)


def _set(target: str, op: str, *args: dm.TArg, when: ex.Expr | None = None) -> dm.Assign:
    return dm.Assign(target, ex.Ref(("k",)), op, args, when, dm.Loc("e.md", 2))


@pytest.mark.parametrize(
    "eff",
    [
        _effect(_set("a_e", "fill", dm.TArg("val", "", ex.Ref(("nowhere",))))),  # an unknown name
        _effect(_set("a_e", "fill", dm.TArg("val", "", ex.Int(1))), reads=(("z", "nothing", ex.Int(0)),)),
        _effect(_set("a_e", "frob", dm.TArg("val", "", ex.Int(1)))),  # an unknown operation
        _effect(_set("nothing", "zero")),  # an unknown target
        _effect(_set("a_e", "copy", dm.TArg("ref", "nothing", ex.Int(0)))),
        _effect(_set("a_e", "cast", dm.TArg("ref", "b", ex.Int(0)), dm.TArg("opt", "frob", ex.Int(1)))),
        _effect(_set("a_e", "zero", when=ex.Bin("/", ex.Ref(("i",)), ex.Int(0)))),  # division by zero
    ],
)
def test_errors_agree_with_the_interpreter(eff: dm.Effect) -> None:
    kb = _edge()
    assert _agree(kb, eff, {**kb.params, "c": 3, "d": 1}, 0)[0] != 3


def test_a_wrong_nest_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    """The comparisons can fail: a copy that drops its last point differs from the interpreter."""
    kb = _edge()
    eff = kb.instrs["odd"].effects[0]
    lean = N._lean

    def short(mem: Memories, p: Any, tidx: Any, ridx: Any, *rest: Any) -> bool:
        return (
            lean(mem, p, tidx[:-1], [r[:-1] for r in ridx], *rest) if len(tidx) > 1 else lean(mem, p, tidx, ridx, *rest)
        )

    _agree(kb, eff, {**kb.params, "d": 0, "s": 0, "c": 9}, 0)
    monkeypatch.setattr(N, "_lean", short)
    with pytest.raises(AssertionError):
        _agree(kb, eff, {**kb.params, "d": 0, "s": 0, "c": 9}, 0)


@pytest.mark.parametrize("doc", ["gemmini", "plena", "vta"])
def test_every_effect_compiles(doc: str) -> None:
    """No effect of the three docs is left to the interpreter as a whole (what the closures cannot
    shortcut, they hand to its pieces)."""
    kb = _kb(doc)
    views = memories.views(kb)
    assert all(C.compile_effect(views, e) is not None for i in kb.instrs.values() for e in i.effects)
