"""Result records shared by every target and solver: what `default`, `solve`, `simulate` and
`direct` report, with one JSON convention (`Record.to_json`) and one `speedup`."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any, ClassVar


def speedup(default_cycles: int | None, cycles: int | None) -> float | None:
    """Candidate-0's cycles over a kernel's: how much faster the kernel is (None when either is
    unknown or zero, so no ratio is made of a missing figure)."""
    if not default_cycles or not cycles:
        return None
    return default_cycles / cycles


class Record:
    """The JSON convention of every result record: `json_fields` gives the record's fields in
    their documented order, the `OPTIONAL` ones are left out while unknown (None or ""), and
    `json_extra` (target-specific reports) is merged last."""

    OPTIONAL: ClassVar[tuple[str, ...]] = ()

    def json_fields(self) -> dict[str, Any]:
        raise NotImplementedError

    def json_extra(self) -> Mapping[str, Any]:
        return {}

    def to_json(self) -> dict[str, Any]:
        out = {k: v for k, v in self.json_fields().items() if k not in self.OPTIONAL or (v is not None and v != "")}
        out.update(self.json_extra())
        return out


@dataclass(frozen=True)
class KernelResult(Record):
    """A simulated, verified (or not) kernel for one workload instance.

    `cycles` is the primary timing model's figure; `extra` carries target-specific
    reports (other timing modes, instruction-class counts, DRAM/HBM bytes, gates).
    """

    OPTIONAL: ClassVar[tuple[str, ...]] = ("optimum_cycles", "tokens")

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
        return speedup(self.default_cycles, self.cycles)

    def json_fields(self) -> dict[str, Any]:
        d = asdict(self)
        d["mapping"] = dict(self.mapping)
        d["speedup"] = self.speedup
        del d["extra"]
        return d

    def json_extra(self) -> Mapping[str, Any]:
        extra: Mapping[str, Any] = asdict(self)["extra"]
        return extra
