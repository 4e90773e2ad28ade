"""`zomboss space`: a workload's mapping space as the KB declares it and the solvers see it.

The knobs with their domains under this workload (integer knobs: the extent of legal values
over every skeleton, from CP-SAT), the constraints with their doc lines, the number of
distinct skeletons clingo enumerates, how many of them admit a legal sizing, and the number
of legal mappings (exact when CP-SAT can enumerate them within the limits, else a lower
bound, said so).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from zomboss.knowledge import KB
from zomboss.mapping import space
from zomboss.solvers.space.enumerate import skeletons
from zomboss.solvers.space.sizing import SizingModel, group_skeletons


@dataclass
class SpaceReport:
    target: str
    workload: str
    op: str
    knobs: list[dict[str, Any]]
    constraints: list[dict[str, Any]]
    skeletons: int
    legal_skeletons: int
    sizing_groups: int
    legal_mappings: int
    legal_mappings_exact: bool
    seconds: dict[str, float] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return dict(self.__dict__)

    def text(self) -> str:
        lines = [f"{self.target} {self.workload} ({self.op}): mapping space", "", "knobs:"]
        for k in self.knobs:
            dom = "{" + ", ".join(k["values"]) + "}" if "values" in k else f"{k['range'][0]}..{k['range'][1]}"
            here = k.get("here")
            if here is not None and "values" not in k:
                dom += f" (legal here: {here[0]}..{here[1]})"
            cond = f" when {k['when']} (else {k['canonical']})" if "when" in k else ""
            lines.append(f"  {k['name']:<16} {dom}{cond}  — {k['doc']}")
        lines += ["", "constraints:"]
        for c in self.constraints:
            lines.append(f"  {c['id']:<26} line {c['line']}: {c['message']}")
        exact = "" if self.legal_mappings_exact else " (at least: CP-SAT's enumeration limit was reached)"
        lines += [
            "",
            f"distinct skeletons (clingo): {self.skeletons}",
            f"skeletons with a legal sizing (CP-SAT, {self.sizing_groups} distinct integer problems): "
            f"{self.legal_skeletons}",
            f"legal mappings: {self.legal_mappings}{exact}",
            "time: " + ", ".join(f"{k} {v:.2f}s" for k, v in self.seconds.items()),
        ]
        return "\n".join(lines)


def describe_space(
    kb: KB,
    workload: str,
    op: str,
    shape: Mapping[str, int],
    count_limit: int = 100_000,
    count_seconds: float = 4.0,
    time_limit: float = 2.0,
    status: Callable[[str], None] | None = None,
) -> SpaceReport:
    """`count_seconds` is the wall-time budget for counting legal sizings over all integer
    problems (a count cut short is reported as a lower bound); `status` is told each phase."""
    sp = space(kb, op)
    tell = status or (lambda _: None)
    tell("space: enumerating skeletons")
    t0 = time.perf_counter()
    sks = [s.as_dict() for s in skeletons(kb, op, shape)]
    t1 = time.perf_counter()
    groups = group_skeletons(sp, sks)
    legal_sk, total, exact = 0, 0, True
    extents: dict[str, list[int]] = {}
    feasible: list[tuple[SizingModel, int]] = []
    for i, members in enumerate(groups.values()):
        tell(f"space: sizing integer problem {i + 1}/{len(groups)}")
        model = SizingModel(sp, shape, members[0])
        if model.solve(time_limit=time_limit) is None:
            continue
        legal_sk += len(members)
        feasible.append((model, len(members)))
        for k in sp.integer:  # extents over all skeletons; stop once a knob spans its declared range
            cur = extents.get(k.name)
            if cur is not None and cur == [k.lo, k.hi]:
                continue
            ext = model.extent(k.name, time_limit)
            if ext is not None:
                cur = extents.setdefault(k.name, [ext[0], ext[1]])
                cur[0], cur[1] = min(cur[0], ext[0]), max(cur[1], ext[1])
    t2 = time.perf_counter()
    for i, (model, n_members) in enumerate(feasible):
        tell(f"space: counting legal sizings {i + 1}/{len(feasible)}, {total:,} so far")
        n, complete = model.count(count_limit, max(0.05, count_seconds / max(1, len(feasible))))
        total += n * n_members
        exact &= complete
    t3 = time.perf_counter()
    knobs = []
    for k in sp.knobs:
        row = k.to_json()
        if not k.values and k.name in extents:
            row["here"] = extents[k.name]
        knobs.append(row)
    return SpaceReport(
        kb.target,
        workload,
        op,
        knobs,
        sp.to_json()["constraints"],
        len(sks),
        legal_sk,
        len(groups),
        total,
        exact,
        {"enumerate": t1 - t0, "size": t2 - t1, "count": t3 - t2},
    )
