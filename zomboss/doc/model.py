"""The parsed form of a literate ISA doc: typed, located records (what lark's tree means)."""

from __future__ import annotations

from dataclasses import dataclass, field

from zomboss.expr import Bin, Expr, Ref, substitute

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
    """`param NAME in LO..HI = EXPR "doc"`: LO..HI (expressions over earlier parameters) is the
    parameter's domain, checked for its value whether the doc's or a `--param` override."""

    name: str
    expr: Expr
    doc: str
    loc: Loc
    lo: Expr | None = None
    hi: Expr | None = None


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
class TokenOp:
    """`pops Q when C` / `pushes Q when C`: a dependency token taken before the instruction
    starts, or posted after it completes (the generic timing model's synchronisation)."""

    queue: str
    when: Expr | None
    index: Expr | None = None  # which FIFO of a queue array (`pops done[k]`)


@dataclass(frozen=True)
class EffLoop:
    """One loop of an effect: `v < count` (0..count-1) or `v in MEM[lo : hi] as LAYOUT`
    (the rows lo..hi-1 of MEM, each decoded by LAYOUT: `v.field` in index expressions)."""

    var: str
    count: Expr | None
    memory: str = ""
    lo: Expr | None = None
    hi: Expr | None = None
    layout: str = ""


@dataclass(frozen=True)
class TArg:
    """An argument of a tensor operation: a row of a memory or view (`ref`), a scalar
    expression broadcast over the row (`val`), or a named option (`opt`, e.g. round=...)."""

    kind: str  # "ref" | "val" | "opt"
    name: str  # memory/view for refs, option name for opts, "" for vals
    expr: Expr


@dataclass(frozen=True)
class Assign:
    """`VIEW[index] = OP(args) when C`: one tensor operation applied at every point of its
    effect's loop nest, in loop order (later points see earlier points' writes)."""

    target: str
    index: Expr
    op: str
    args: tuple[TArg, ...]
    when: Expr | None
    loc: Loc


@dataclass(frozen=True)
class Effect:
    """What an instruction does to the machine's data: a loop nest, index lets, and its
    assignments applied in order (each over the whole nest). Never translated to ASP."""

    loops: tuple[EffLoop, ...]
    lets: tuple[tuple[str, Expr], ...]
    assigns: tuple[Assign, ...]
    loc: Loc
    # `let NAME = VIEW[INDEX]`: scalar reads of data (the first value of that element), taken
    # before the lets (state an earlier instruction left in a tensor, e.g. a latched operand)
    reads: tuple[tuple[str, str, Expr], ...] = ()


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
    pops: tuple[TokenOp, ...] = ()
    pushes: tuple[TokenOp, ...] = ()
    effects: tuple[Effect, ...] = ()
    macro: str = ""  # a macro instruction expanded in Python (named hook); its effects are the expansion's
    family: str = ""  # the family template it was written as (`mvin{k}`), "" for a plain instruction
    issue: Expr | None = None  # cycles before its unit takes the next instruction (None: its latency)


# an external memory's channel, which the timing model honours when the doc declares it: bytes
# per cycle, cycles from a request to its data, requests in flight
CHANNEL_FIELDS = ("bandwidth", "latency", "outstanding")
UNIT_CLASSES = ("compute", "memory", "control")  # an engine's `class`: where the breakdown counts its time
ENGINE_FIELDS = ("queue", "inflight", "class")
FETCH_FIELDS = ("blocking",)  # `fetch { blocking: 1 }`: the next instruction waits for this one to complete
# `stall S { after: P, before: C, on: M, dep: raw, cycles: N }`: an adjacent-pair pipeline hazard
STALL_FIELDS = ("after", "before", "on", "dep", "cycles")
STALL_DEPS = ("raw", "waw", "war")


def name_list(e: Expr) -> tuple[str, ...] | None:
    """The names of `A | B | C` (a stall's `after`/`before`), or None if it is anything else."""
    if isinstance(e, Ref) and len(e.parts) == 1:
        return (e.parts[0],)
    if isinstance(e, Bin) and e.op == "|":
        a, b = name_list(e.left), name_list(e.right)
        return None if a is None or b is None else a + b
    return None


@dataclass(frozen=True)
class Decl:
    """`view`, `tensor`, `queue` and `engine` declarations: a name and expression fields.

    view V { of: MEM, rows: R, cols: C, type: T }   a row of MEM (or, for an external memory,
                                                    an element of R*C values of T) seen as R x C
    tensor S { rows: R, cols: C, type: T }          tensor-typed machine state (one R x C value)
    queue Q { from: U, to: U, depth: D }            a dependency-token FIFO between two units
    queue Q[N] { ... }                              N such FIFOs (field `count`), Q[0] .. Q[N-1]
    engine U { queue: D, inflight: N, class: C }    an in-order unit with a D-deep command queue, at
                                                    most N instructions in flight (pipelined by
                                                    `issue`), of class compute, memory or control
    interlock M, R                                  a memory or register file whose accesses the
                                                    hardware orders (one Decl per name, no fields)
    fetch { blocking: 1 }                           the fetch stage hands out an instruction only once
                                                    the one before it has completed (name "fetch")
    stall S { after: P, before: C, on: M,           C starts N cycles after the instruction right before
              dep: raw, cycles: N }                 it completes when that one is a P whose writes of M
                                                    C reads (raw) / writes (waw), or whose reads C
                                                    writes (war); P, C: instructions or units, `|`-joined
    """

    kind: str
    name: str
    fields: dict[str, Expr]
    loc: Loc


@dataclass(frozen=True)
class Rule:
    id: str
    patterns: tuple[str, ...]  # empty: a parameter-level invariant
    message: str
    expr: Expr
    loc: Loc
    # made from an operand's declaration (`<instr>.<operand>.range`, `<instr>.<operand>.reg`), not
    # written in the doc: it has no example programs of its own
    generated: bool = False


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
    decls: list[Decl] = field(default_factory=list)  # views, tensors, queues, engines
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
    TokenOp,
    EffLoop,
    TArg,
    Assign,
    Effect,
    Instr,
    Decl,
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
