"""Workloads: an op family plus integer shape keys, named by a suite id or an inline spec."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from zomboss.errors import WorkloadError

# The largest value any workload key may take (docs/archdoc.md, Limits): a shape beyond it is
# far past the operand limits anyway, and a bound here keeps every later formula (sizes,
# messages) on numbers of at most ten digits.
MAX_WORKLOAD_VALUE = 2**31 - 1
FLAG = (0, 1)  # the domain of a 0/1 switch (bias, relu, clip, causal)


def shorten(text: str, limit: int = 80) -> str:
    """A user's text cut to `limit` characters for a message (a spec may be megabytes)."""
    return text if len(text) <= limit else f"{text[: limit - 20]}...({len(text):,} characters)"


def show_int(v: int) -> str:
    """An integer for a message, its digits elided past 20 (a 4,000-digit value stays one line)."""
    s = str(v)
    return s if len(s) <= 20 else f"{s[:8]}...({len(s.lstrip('-')):,} digits)"


@dataclass(frozen=True)
class OpSchema:
    """Keys an op family accepts: required keys and optional keys with defaults, each with its
    domain: `limits` where given, else 1..MAX_WORKLOAD_VALUE for required and `positive` keys
    and 0..MAX_WORKLOAD_VALUE for the others."""

    op: str
    required: tuple[str, ...]
    optional: Mapping[str, int] = field(default_factory=dict)
    positive: tuple[str, ...] = ()  # keys that must be >= 1 (others >= 0)
    limits: Mapping[str, tuple[int, int]] = field(default_factory=dict)  # (lo, hi) of a key

    def domain(self, key: str) -> tuple[int, int]:
        if key in self.limits:
            return self.limits[key]
        return (1 if key in self.positive or key in self.required else 0), MAX_WORKLOAD_VALUE

    def build(self, kv: Mapping[str, int], spec: str) -> dict[str, int]:
        where = repr(shorten(spec))
        unknown = sorted(set(kv) - set(self.required) - set(self.optional))
        if unknown:
            allowed = ", ".join([*self.required, *self.optional])
            raise WorkloadError(f"{where}: unknown key {shorten(unknown[0], 40)!r} for {self.op} (allowed: {allowed})")
        missing = [k for k in self.required if k not in kv]
        if missing:
            raise WorkloadError(f"{where}: missing key {missing[0]!r} for {self.op}")
        out = {k: kv[k] for k in self.required} | {k: kv.get(k, d) for k, d in self.optional.items()}
        for k, v in out.items():
            lo, hi = self.domain(k)
            if not lo <= v <= hi:
                raise WorkloadError(f"{where}: {k}={show_int(v)} is outside {lo}..{hi}, the domain of {self.op}'s {k}")
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
    where = repr(shorten(spec))
    if not sep:
        raise WorkloadError(f"{where}: expected a suite id or OP:KEY=VALUE,... (ops: {', '.join(schemas)})")
    if op not in schemas:
        raise WorkloadError(f"{where}: unknown op {shorten(op, 40)!r} (ops: {', '.join(schemas)})")
    kv: dict[str, int] = {}
    for item in filter(None, (s.strip() for s in body.split(","))):
        key, eq, val = item.partition("=")
        key = key.strip()
        if not eq or not key:
            raise WorkloadError(f"{where}: expected KEY=VALUE, got {shorten(item, 40)!r}")
        if key in kv:
            raise WorkloadError(f"{where}: key {shorten(key, 40)!r} given twice")
        val = val.strip()
        try:
            if len(val) > 64:  # ten digits suffice for MAX_WORKLOAD_VALUE; int() of more is slow
                raise ValueError
            kv[key] = int(val, 0)
        except ValueError:
            raise WorkloadError(
                f"{where}: value of {shorten(key, 40)!r} must be an integer in 0..{MAX_WORKLOAD_VALUE}, "
                f"got {shorten(val, 40)!r}"
            ) from None
    shape = schemas[op].build(kv, spec)
    w = Workload(id="", op=op, shape=shape)
    return Workload(id=w.spec, op=op, shape=shape)
