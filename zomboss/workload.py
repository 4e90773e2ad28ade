"""Workloads: an op family plus integer shape keys, named by a suite id or an inline spec."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from zomboss.errors import WorkloadError


@dataclass(frozen=True)
class OpSchema:
    """Keys an op family accepts: required keys and optional keys with defaults."""

    op: str
    required: tuple[str, ...]
    optional: Mapping[str, int] = field(default_factory=dict)
    positive: tuple[str, ...] = ()  # keys that must be >= 1 (others >= 0)

    def build(self, kv: Mapping[str, int], spec: str) -> dict[str, int]:
        unknown = sorted(set(kv) - set(self.required) - set(self.optional))
        if unknown:
            allowed = ", ".join([*self.required, *self.optional])
            raise WorkloadError(f"{spec!r}: unknown key {unknown[0]!r} for {self.op} (allowed: {allowed})")
        missing = [k for k in self.required if k not in kv]
        if missing:
            raise WorkloadError(f"{spec!r}: missing key {missing[0]!r} for {self.op}")
        out = {k: kv[k] for k in self.required} | {k: kv.get(k, d) for k, d in self.optional.items()}
        for k, v in out.items():
            lo = 1 if k in self.positive or k in self.required else 0
            if v < lo:
                raise WorkloadError(f"{spec!r}: {k}={v} must be >= {lo}")
        return out


@dataclass(frozen=True)
class Workload:
    """One kernel instance; `id` is the suite id or the canonical inline spec."""

    id: str
    op: str
    shape: Mapping[str, int]

    def __getitem__(self, key: str) -> int:
        return self.shape[key]

    @property
    def spec(self) -> str:
        return f"{self.op}:" + ",".join(f"{k}={v}" for k, v in self.shape.items())


def parse_spec(spec: str, schemas: Mapping[str, OpSchema]) -> Workload:
    """Parse `OP:KEY=VALUE,...`; a bad spec names the bad key or value."""
    op, sep, body = spec.partition(":")
    op = op.strip()
    if not sep:
        raise WorkloadError(f"{spec!r}: expected a suite id or OP:KEY=VALUE,... (ops: {', '.join(schemas)})")
    if op not in schemas:
        raise WorkloadError(f"{spec!r}: unknown op {op!r} (ops: {', '.join(schemas)})")
    kv: dict[str, int] = {}
    for item in filter(None, (s.strip() for s in body.split(","))):
        key, eq, val = item.partition("=")
        key = key.strip()
        if not eq or not key:
            raise WorkloadError(f"{spec!r}: expected KEY=VALUE, got {item!r}")
        if key in kv:
            raise WorkloadError(f"{spec!r}: key {key!r} given twice")
        try:
            kv[key] = int(val.strip(), 0)
        except ValueError:
            raise WorkloadError(f"{spec!r}: value of {key!r} must be an integer, got {val.strip()!r}") from None
    shape = schemas[op].build(kv, spec)
    w = Workload(id="", op=op, shape=shape)
    return Workload(id=w.spec, op=op, shape=shape)
