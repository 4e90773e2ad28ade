"""Legal mapping skeletons from the KB.

clingo enumerates the discrete structure (one value per active symbolic knob; inactive ones
carry their canonical value) under the mapping constraints that read only symbolic knobs,
workload keys and parameters, grounding a small program of just those rules
(`asp.enumeration_program`). CP-SAT then sizes the integer knobs of each skeleton
(zomboss/solvers/space/sizing.py); numeric ranges never reach the ASP grounder.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass

import clingo

from zomboss.errors import ZombossError
from zomboss.knowledge import KB
from zomboss.knowledge import facts as F
from zomboss.knowledge.asp import enumeration_program
from zomboss.knowledge.query import NoFunctions


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
    ctl.ground([("base", [])], context=NoFunctions())  # no @f(...) term may call into Python
    # Models repeat the same few (knob, value) atoms: decode each atom once (unpacking a clingo
    # symbol costs several FFI calls, hashing it one), which is most of the enumeration's time.
    decoded: dict[clingo.Symbol, F.SkeletonFact] = {}
    with ctl.solve(yield_=True) as handle:
        for model in handle:
            chosen: dict[str, str] = {}
            for a in model.symbols(shown=True):
                f = decoded.get(a)
                if f is None:
                    new = F.SkeletonFact.from_symbol(a)
                    assert new is not None, f"not a skeleton atom: {a}"  # only skeleton/3 is shown
                    f = decoded[a] = new
                chosen[str(f.knob)] = str(f.value)
            yield Skeleton(op, tuple((k, chosen[k]) for k in order if k in chosen))


_PROGRAMS: dict[tuple[str, str], str] = {}


def _program(kb: KB, op: str) -> str:
    key = (kb.digest or str(id(kb)), op)
    if key not in _PROGRAMS:
        ms = kb.mapping_space(op)
        assert ms is not None
        _PROGRAMS[key] = enumeration_program(kb, ms) + ":- mviolation(_).\n#show skeleton/3.\n"
    return _PROGRAMS[key]
