"""The knowledge base as records: a parsed doc with its parameters evaluated (memories,
register files, layouts, states), its rules and the ASP program compiled from them.

The records import nothing of the compilation or of ASP, so every stage below the KB's
consumers (validate, compile, cache, asp, query) can take a typed `KB`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property

from zomboss.doc import model as dm


@dataclass(frozen=True)
class MemoryInfo:
    name: str
    rows: int | None  # None for external memories
    width: int | None
    type: str
    banks: int
    ports: int
    external: bool


@dataclass(frozen=True)
class LayoutInfo:
    """A bit layout with its field positions evaluated for this KB's parameters."""

    name: str
    width: int
    bits: dict[str, tuple[int, int]]  # field -> (hi, lo)


@dataclass(frozen=True)
class RegFileInfo:
    name: str
    count: int
    width: int
    type: str


@dataclass
class KB:
    """A built knowledge base (the cache stores its records as JSON, `cache.kb_to_json`)."""

    target: str
    doc: dm.Doc
    params: dict[str, int]
    memories: dict[str, MemoryInfo]
    regfiles: dict[str, RegFileInfo]
    layouts: dict[str, LayoutInfo]
    states: dict[str, tuple[int | None, dict[str, int]]]
    instrs: dict[str, dm.Instr]
    rules: list[dm.Rule]  # doc rules plus the generated operand-range rules
    applies: dict[str, list[str]]  # rule id -> mnemonics it applies to
    asp: str = ""
    counts: dict[str, int] = field(default_factory=dict)
    digest: str = ""
    from_cache: bool = False

    @property
    def hazards(self) -> list[dm.Hazard]:
        return self.doc.hazards

    @property
    def examples(self) -> list[dm.Example]:
        return self.doc.examples

    @cached_property
    def rule_by_id(self) -> dict[str, dm.Rule]:
        return {r.id: r for r in self.rules}

    @cached_property
    def symbols(self) -> frozenset[str]:
        """Names that stand for themselves in expressions: mnemonics, units, knob values."""
        out = {i.name.lower() for i in self.instrs.values()} | {i.unit.lower() for i in self.instrs.values()}
        for m in self.doc.mappings:
            for k in m.knobs:
                out |= {v.lower() for v in k.values}
        return frozenset(out)

    def mapping_space(self, op: str) -> dm.MappingSpace | None:
        return next((m for m in self.doc.mappings if m.op == op), None)


def scope_names(kb: KB, ins: dm.Instr) -> set[str]:
    """Names a rule on `ins` may use, besides parameters and `prev.*`."""
    names = {"op"}
    for o in ins.operands:
        names.add(o.name)
        if o.kind in kb.layouts:
            names |= {f"{o.name}.{f}" for f in kb.layouts[o.kind].bits}
        if o.kind in kb.regfiles:
            names.add(f"{o.name}.val")
    names |= {n for n, _ in ins.lets}
    for u in ins.uses:
        names |= {f"{u.alias}.{f}" for f in kb.states[u.state][1]}
    return names
