"""Legal mapping skeletons from the KB, and their integer sizing.

clingo enumerates the discrete structure (one value per symbolic knob) under the KB's
mapping constraints that involve only symbolic knobs and workload keys; CP-SAT then sizes the
integer knobs of each skeleton under all constraints, optionally minimising an objective.
Numeric ranges never reach the ASP grounder (grounding tile sizes blows up).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass

import clingo
from ortools.sat.python import cp_model
from zomboss.solvers.cpsat import SizingError, Translator

from zomboss import asp
from zomboss import expr as ex
from zomboss import facts as F
from zomboss.errors import ZombossError
from zomboss.knowledge import KB


@dataclass(frozen=True)
class Skeleton:
    op: str
    choices: tuple[tuple[str, str], ...]  # (knob, value), knob order of the doc

    def as_dict(self) -> dict[str, str]:
        return dict(self.choices)


def skeletons(kb: KB, op: str, shape: Mapping[str, int], limit: int = 0) -> Iterator[Skeleton]:
    """Every assignment of the active symbolic knobs that no constraint rules out, each once
    (inactive knobs carry their canonical value), streamed in clingo's deterministic order."""
    space = kb.mapping_space(op)
    if space is None:
        raise ZombossError(f"{kb.target} has no mapping space for {op!r}")
    order = [k.name for k in space.knobs if k.values]
    keys = next(w.keys for w in kb.doc.workloads if w.op == op)
    facts = F.render([F.MvalFact(F.Text(k), int(v)) for k, v in shape.items() if k in keys])
    ctl = clingo.Control(["--warn=none", f"--models={limit}"])
    ctl.add("base", [], _program(kb, op) + facts + f"\nenumerate({F.term(F.Sym(op))}).\n")
    ctl.ground([("base", [])])
    with ctl.solve(yield_=True) as handle:
        for model in handle:
            chosen = {}
            for a in model.symbols(shown=True):
                chosen[a.arguments[1].string] = str(a.arguments[2])
            yield Skeleton(op, tuple((k, chosen[k]) for k in order if k in chosen))


_PROGRAMS: dict[tuple[str, str], str] = {}


def _program(kb: KB, op: str) -> str:
    key = (kb.digest or str(id(kb)), op)
    if key not in _PROGRAMS:
        ms = kb.mapping_space(op)
        assert ms is not None
        _PROGRAMS[key] = asp.enumeration_program(kb, ms) + ":- mviolation(_).\n#show skeleton/3.\n"
    return _PROGRAMS[key]


@dataclass(frozen=True)
class Sizing:
    values: dict[str, int]
    objective: int | None
    bound: int | None  # CP-SAT's lower bound on the objective for this skeleton
    optimal: bool


def size(
    kb, op: str, shape: Mapping[str, int], skeleton: Skeleton, objective: ex.Expr | None = None, time_limit: float = 5.0
) -> Sizing | None:
    """Integer knob values satisfying every constraint for this skeleton (None if none)."""
    space = kb.mapping_space(op)
    assert space is not None
    model = cp_model.CpModel()
    consts: dict[str, int | str] = {**kb.params, **shape, **skeleton.as_dict()}
    variables, bounds = {}, {}
    for k in space.knobs:
        if k.values:
            continue
        lo, hi = int(ex.evaluate(k.lo, kb.params)), int(ex.evaluate(k.hi, kb.params))  # type: ignore[call-overload]
        variables[k.name] = model.new_int_var(lo, hi, k.name)
        bounds[k.name] = (lo, hi)
    tr = Translator(model, consts, variables, bounds)
    try:
        for c in space.constraints:
            tr.require(c.expr)
        if objective is not None:
            model.minimize(tr.term(objective).expr)
    except SizingError as e:
        raise SizingError(f"{op}: {e}") from None
    solver = cp_model.CpSolver()
    solver.parameters.max_time_in_seconds = time_limit
    solver.parameters.num_workers = 1
    status = solver.solve(model)
    if status not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        return None
    vals = {k: int(solver.value(v)) for k, v in variables.items()}
    if objective is None:
        return Sizing(vals, None, None, status == cp_model.OPTIMAL)
    return Sizing(vals, int(solver.objective_value), int(solver.best_objective_bound), status == cp_model.OPTIMAL)
