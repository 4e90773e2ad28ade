"""The parsed form of a literate ISA doc: typed, located records (what lark's tree means)."""

from __future__ import annotations

from dataclasses import dataclass, field

from zomboss.expr import Expr, substitute

MAX_DOC_BYTES = 8 << 20  # an ISA doc larger than this is refused (the shipped ones are ~100 KB)


@dataclass(frozen=True, slots=True)
class Loc:
    file: str
    line: int
    col: int = 1

    def __str__(self) -> str:
        return f"{self.file}:{self.line}"

    @property
    def pos(self) -> str:
        return f"{self.file}:{self.line}:{self.col}"


@dataclass(frozen=True)
class Param:
    name: str
    expr: Expr
    doc: str
    loc: Loc


@dataclass(frozen=True)
class Memory:
    name: str
    fields: dict[str, Expr]
    external: bool
    loc: Loc


@dataclass(frozen=True)
class RegFile:
    name: str
    fields: dict[str, Expr]
    loc: Loc


@dataclass(frozen=True)
class Layout:
    name: str
    width: Expr
    bits: dict[str, tuple[Expr, Expr]]  # field -> (hi, lo), parameter expressions
    loc: Loc


@dataclass(frozen=True)
class State:
    name: str
    size: Expr | None  # None: a single record, else an array of records
    fields: dict[str, Expr]  # field -> reset value
    loc: Loc


@dataclass(frozen=True)
class Operand:
    name: str
    kind: str  # "int", "addr", a layout name or a regfile name
    lo: Expr | None = None
    hi: Expr | None = None


@dataclass(frozen=True)
class Access:
    memory: str
    lo: Expr
    hi: Expr
    when: Expr | None
    loc: Loc


@dataclass(frozen=True)
class Uses:
    state: str
    index: Expr | None
    alias: str


@dataclass(frozen=True)
class Setter:
    state: str
    index: Expr | None
    field: str
    value: Expr


@dataclass(frozen=True)
class Instr:
    name: str
    operands: tuple[Operand, ...]
    doc: str
    unit: str
    uses: tuple[Uses, ...]
    lets: tuple[tuple[str, Expr], ...]
    reads: tuple[Access, ...]
    writes: tuple[Access, ...]
    sets: tuple[Setter, ...]
    latency: Expr | None
    loc: Loc


@dataclass(frozen=True)
class Rule:
    id: str
    patterns: tuple[str, ...]  # empty: a parameter-level invariant
    message: str
    expr: Expr
    loc: Loc


@dataclass(frozen=True)
class Hazard:
    id: str
    message: str
    reader: str
    read_mem: str
    writer: str
    write_mem: str
    fence: str
    loc: Loc


@dataclass(frozen=True)
class Knob:
    name: str
    lo: Expr | None
    hi: Expr | None
    values: tuple[str, ...]  # non-empty for symbolic knobs
    doc: str
    loc: Loc
    default: Expr | None = None  # canonical value: the value wherever `when` is false
    when: Expr | None = None  # the knob matters only where this holds (None: always)


@dataclass(frozen=True)
class Constraint:
    id: str
    message: str
    expr: Expr
    loc: Loc


@dataclass(frozen=True)
class Cost:
    """A cycle expression of a mapping: `estimate` (what CP-SAT minimises) or `bound` (a lower
    bound on the simulator's cycles for every legal mapping)."""

    name: str
    doc: str
    expr: Expr
    loc: Loc


@dataclass(frozen=True)
class MappingSpace:
    op: str
    knobs: tuple[Knob, ...]
    constraints: tuple[Constraint, ...]
    loc: Loc
    lets: tuple[tuple[str, Expr], ...] = ()  # named sub-expressions, already inlined into the constraints
    costs: tuple[Cost, ...] = ()


@dataclass(frozen=True)
class WorkloadDecl:
    op: str
    keys: tuple[str, ...]
    loc: Loc


@dataclass(frozen=True)
class Example:
    rule: str
    ok: bool
    text: str
    loc: Loc  # line of the opening fence; program line n is at loc.line + n


@dataclass
class Doc:
    """Everything the machine-readable blocks of one doc declare, in doc order."""

    path: str
    params: list[Param] = field(default_factory=list)
    memories: list[Memory] = field(default_factory=list)
    regfiles: list[RegFile] = field(default_factory=list)
    layouts: list[Layout] = field(default_factory=list)
    states: list[State] = field(default_factory=list)
    instrs: list[Instr] = field(default_factory=list)
    rules: list[Rule] = field(default_factory=list)
    hazards: list[Hazard] = field(default_factory=list)
    workloads: list[WorkloadDecl] = field(default_factory=list)
    mappings: list[MappingSpace] = field(default_factory=list)
    examples: list[Example] = field(default_factory=list)
    blocks: int = 0  # ```isa blocks read


RECORDS = (
    Loc,
    Param,
    Memory,
    RegFile,
    Layout,
    State,
    Operand,
    Access,
    Uses,
    Setter,
    Instr,
    Rule,
    Hazard,
    Knob,
    Constraint,
    Cost,
    MappingSpace,
    WorkloadDecl,
    Example,
    Doc,
)  # every record class of a parsed doc (what the KB cache stores)


def inline_lets(ins: Instr, e: Expr) -> Expr:
    """`e` with the instruction's lets substituted (each let may use the earlier ones); the
    result shares the lets' sub-expressions (see `expr.measure` for its size as a tree)."""
    env: dict[str, Expr] = {}
    for name, val in ins.lets:
        env[name] = substitute(val, env)
    return substitute(e, env)
