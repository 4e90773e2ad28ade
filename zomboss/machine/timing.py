"""The generic timing model: in-order units with doc latencies, command queues, token FIFOs.

The doc declares the machine's units (`engine U { queue: D }`: an in-order unit fed by a
D-deep command queue) and its dependency-token FIFOs (`queue Q { from: U, to: U, depth: D }`);
each instruction names its unit, its latency expression and the tokens it pops (before it
starts) and pushes (after it completes). A fetch stage dispatches one instruction per cycle
in program order and stalls while the target unit's command queue is full.

Every pop must find its token among those pushed by instructions earlier in program order
(the docs' rules say so; a program that breaks this is refused here as a deadlock), so one
pass in program order computes every start and end time exactly.

The breakdown attributes the cycles: `compute` = time some compute-class instruction (one
whose effects touch no external memory) runs, `memory` = time only memory-class ones run,
`stall` = the rest (waiting on tokens, dispatch and idle units); `overhead` is 0 here.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from zomboss import expr as ex
from zomboss.errors import IllegalProgram
from zomboss.knowledge import KB, Violation


@dataclass(frozen=True, slots=True)
class Op:
    """One executed instruction as the timing model sees it."""

    unit: str
    latency: int
    pops: tuple[str, ...]
    pushes: tuple[str, ...]
    memory: bool
    line: int = 0


@dataclass(frozen=True)
class Schedule:
    cycles: int
    breakdown: dict[str, int]
    busy: dict[str, int]  # unit -> cycles executing
    start: np.ndarray = field(repr=False)
    end: np.ndarray = field(repr=False)


def _decl_int(kb: KB, e: ex.Expr | None, default: int) -> int:
    if e is None:
        return default
    v = ex.evaluate(e, kb.params)
    return int(v) if isinstance(v, int) else default


def schedule(kb: KB, ops: Sequence[Op]) -> Schedule:
    engines = {d.name: _decl_int(kb, d.fields.get("queue"), 1 << 30) for d in kb.doc.decls if d.kind == "engine"}
    queues = {d.name for d in kb.doc.decls if d.kind == "queue"}
    n = len(ops)
    start = np.zeros(n, dtype=np.int64)
    end = np.zeros(n, dtype=np.int64)
    free: dict[str, int] = {}
    order: dict[str, list[int]] = {}
    tokens: dict[str, deque[int]] = {q: deque() for q in queues}
    dispatch = 0
    busy: dict[str, int] = {}
    for i, op in enumerate(ops):
        seen = order.setdefault(op.unit, [])
        depth = engines.get(op.unit, 1 << 30)
        d = dispatch + 1
        if len(seen) >= depth:
            d = max(d, int(start[seen[-depth]]))  # its queue is full until that one starts
        dispatch = d
        t = max(d, free.get(op.unit, 0))
        for q in op.pops:
            fifo = tokens.setdefault(q, deque())
            if not fifo:
                raise IllegalProgram(
                    [
                        Violation(
                            "queue.deadlock",
                            f"{op.unit} pops {q} but no earlier instruction pushed a token on it",
                            "",
                            i,
                            op.line,
                            op.unit,
                        )
                    ]
                )
            t = max(t, fifo.popleft())
        start[i] = t
        end[i] = t + op.latency
        free[op.unit] = int(end[i])
        busy[op.unit] = busy.get(op.unit, 0) + op.latency
        for q in op.pushes:
            tokens.setdefault(q, deque()).append(int(end[i]))
        seen.append(i)
    cycles = int(end.max()) if n else 0
    mem = np.array([o.memory for o in ops], dtype=bool)
    comp_t = _union(start[~mem], end[~mem])
    all_t = _union(start, end)
    breakdown = {"compute": comp_t, "memory": all_t - comp_t, "stall": cycles - all_t, "overhead": 0}
    return Schedule(cycles, breakdown, busy, start, end)


def _union(lo: np.ndarray, hi: np.ndarray) -> int:
    """The measure of a union of intervals [lo, hi)."""
    keep = hi > lo
    lo, hi = lo[keep], hi[keep]
    if not len(lo):
        return 0
    o = np.argsort(lo, kind="stable")
    lo, hi = lo[o], np.maximum.accumulate(hi[o])
    gaps = np.maximum(lo[1:] - hi[:-1], 0)
    return int(hi[-1] - lo[0] - gaps.sum())
