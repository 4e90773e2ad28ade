"""Loop-nest effects and effects with data reads, compiled (`zomboss.machine.nests`), against the
interpreter (`effects.apply`) effect by effect: every effect of the Gemmini, PLENA and VTA docs
on random memories and operands, and hand-made edge cases, with the same memories, loop points
and errors (type, message, values)."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from zomboss import expr as ex
from zomboss.doc import model as dm
from zomboss.doc import parse_doc
from zomboss.knowledge import KB, compile_doc
from zomboss.machine import compiled as C
from zomboss.machine import effects as fx
from zomboss.machine import nests as N

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


def _memories(kb: KB, rng: np.random.Generator) -> fx.Memories:
    mem = fx.Memories(kb, {m.name: EXTERNAL for m in kb.memories.values() if m.external})
    for a in mem.arrays.values():
        if a.dtype.kind == "f":
            a[...] = rng.normal(0, 4, a.shape).astype(a.dtype)
        elif a.dtype.itemsize == 1 or rng.random() < 0.5:
            a[...] = rng.integers(0, 256, a.shape).astype(a.dtype)
        else:
            a[...] = rng.integers(0, 24, a.shape).astype(a.dtype)  # small: indices that land inside
    return mem


def _outcome(fn: Callable[[fx.Memories, dict[str, Any]], int], mem: fx.Memories, env: dict[str, Any]) -> Any:
    try:
        with np.errstate(all="ignore"):
            got: Any = fn(mem, dict(env))
    except fx.EffectError as e:
        got = ("EffectError", str(e), e.loc, repr(e.values))
    except (ex.ExprError, ValueError, OverflowError, TypeError, KeyError, IndexError) as e:
        got = (type(e).__name__, str(e))
    return got, tuple((k, a.tobytes()) for k, a in sorted(mem.arrays.items()))


def _agree(kb: KB, eff: dm.Effect, env: dict[str, Any], seed: int, mutate: Callable[[fx.Memories], None] | None = None) -> Any:
    """The compiled effect and the interpreter leave the same outcome (returned for checks)."""
    fast = C.compile_effect(fx.views(kb), eff)
    assert fast is not None
    got = []
    for fn in (fast, lambda m, e: fx.apply(m, eff, e)):
        mem = _memories(kb, np.random.default_rng(seed))
        if mutate is not None:
            mutate(mem)
        got.append(_outcome(fn, mem, env))
    assert got[0] == got[1]
    return got[0]


_SMALL = st.sampled_from([0, 1, 2, 3, 4, 5, 7, 8, 16, 17, 31, 64]) | st.integers(0, 40)
_ODD = st.sampled_from([4294967295, -1, 1 << 31, (1 << 31) | (1 << 30) | 5, 1 << 30, 65535, 100000])


@pytest.mark.parametrize(
    ("doc", "instr", "k"), [(d, n, k) for d in ("gemmini", "plena", "vta") for n, k in _effects(d)]
)
@settings(max_examples=12, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
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
    _agree(kb, eff, env, data.draw(st.integers(0, 1 << 30), label="seed"))
