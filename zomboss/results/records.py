"""Result records shared by every target: what `default`, `solve` and `simulate` report."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any


@dataclass(frozen=True)
class KernelResult:
    """A simulated, verified (or not) kernel for one workload instance.

    `cycles` is the primary timing model's figure; `extra` carries target-specific
    reports (other timing modes, instruction-class counts, DRAM/HBM bytes, gates).
    """

    target: str
    workload: str
    verified: bool | None  # None: nothing to verify against (e.g. a bare program without its sidecar)
    cycles: int
    mapping: Mapping[str, Any]
    simulations: int = 1
    wall_s: float = 0.0
    default_cycles: int | None = None
    bound_cycles: int | None = None
    optimum_cycles: int | None = None
    tokens: int | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)

    @property
    def speedup(self) -> float | None:
        if not self.default_cycles or not self.cycles:
            return None
        return self.default_cycles / self.cycles

    def to_json(self) -> dict[str, Any]:
        d = asdict(self)
        d["mapping"] = dict(self.mapping)
        d["speedup"] = self.speedup
        extra = d.pop("extra")
        for k in ("optimum_cycles", "tokens"):
            if d[k] is None:
                del d[k]
        d.update(extra)
        return d
