"""KB facts as typed records (clorm-style): the one place that renders ASP text, and the one
place that decodes clingo's answers (`Fact.from_symbol`, `decode`).

Mnemonics, memories, parameters and knob values become lower-case ASP constants; rule ids,
operand names and messages become strings. Nothing else in the code base writes ASP by hand
or reads the arguments of a clingo symbol.
"""

from __future__ import annotations

import typing
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, fields
from typing import ClassVar, Self

import clingo

from zomboss.errors import ZombossError
from zomboss.expr import ASP_KEYWORDS, ASP_MAX, ASP_MIN, is_constant


class Sym(str):
    """An ASP constant (rendered lower-case)."""


class Text(str):
    """An ASP string."""


class Term(str):
    """An ASP term of any shape, kept as clingo prints it (the answers of `kb query`)."""


class AspRangeError(ZombossError):
    """An integer that clingo's 32-bit integers cannot hold was about to be rendered."""


__all__ = ["ASP_KEYWORDS", "is_constant"]


def fits(v: int) -> bool:
    return ASP_MIN <= v <= ASP_MAX


def term(v: object, wide: bool = False) -> str:
    """ASP text of a value. Integers beyond 32 bits raise AspRangeError, or with `wide`
    become the string of their digits (KB facts: `param(max_bytes,"4294967297")`); a Sym
    that is no clingo constant becomes a string, so rendering never yields text clingo
    cannot parse."""
    if isinstance(v, bool):
        return "1" if v else "0"
    if isinstance(v, int):
        if ASP_MIN <= v <= ASP_MAX:
            return str(v)
        if wide:
            return str(clingo.String(str(v)))
        raise AspRangeError(f"the value {v} does not fit clingo's 32-bit integers")
    if isinstance(v, Term):
        return str(v)
    if isinstance(v, Sym):
        s = v.lower()
        return s if is_constant(s) else str(clingo.String(s))
    if isinstance(v, Text | str):
        return str(clingo.String(str(v)))
    raise TypeError(f"cannot render {v!r} as an ASP term")


class _Mismatch(Exception):
    """An argument of another type than its field's."""


def _decode_int(s: clingo.Symbol) -> int:
    if s.type != clingo.SymbolType.Number:
        raise _Mismatch
    return s.number


def _decode_text(s: clingo.Symbol) -> Text:
    if s.type != clingo.SymbolType.String:
        raise _Mismatch
    return Text(s.string)


def _decode_sym(s: clingo.Symbol) -> Sym:
    """A constant, or the string `term` renders a Sym that is no constant as."""
    if s.type == clingo.SymbolType.String:
        return Sym(s.string)
    if s.type != clingo.SymbolType.Function or s.arguments or s.negative or not s.name:
        raise _Mismatch
    return Sym(s.name)


def _decode_term(s: clingo.Symbol) -> Term:
    return Term(str(s))


_DECODERS: dict[object, Callable[[clingo.Symbol], object]] = {
    int: _decode_int,
    Text: _decode_text,
    Sym: _decode_sym,
    Term: _decode_term,
}


@dataclass(frozen=True)
class Fact:
    pred: ClassVar[str]

    @classmethod
    def from_symbol(cls, s: clingo.Symbol) -> Self | None:
        """The fact a clingo atom states, or None if the atom is of another predicate, arity
        or argument types (the unifier of this fact type, as in clorm)."""
        decoders = _field_decoders(cls)
        if s.type != clingo.SymbolType.Function or s.name != cls.pred or len(s.arguments) != len(decoders):
            return None
        try:
            return cls(*(d(a) for d, a in zip(decoders, s.arguments, strict=True)))
        except _Mismatch:
            return None

    def asp(self, wide: bool = False) -> str:
        return f"{self.pred}({','.join(term(getattr(self, f.name), wide) for f in fields(self))})."

    def is_wide(self) -> bool:
        """Whether some integer argument is beyond clingo's integers (rendered as a string)."""
        return any(
            isinstance(x, int) and not isinstance(x, bool) and not fits(x)
            for x in (getattr(self, f.name) for f in fields(self))
        )


@dataclass(frozen=True)
class TargetFact(Fact):
    pred: ClassVar[str] = "target"
    name: Sym


@dataclass(frozen=True)
class ParamFact(Fact):
    pred: ClassVar[str] = "param"
    name: Sym
    value: int


@dataclass(frozen=True)
class MemoryFact(Fact):
    pred: ClassVar[str] = "memory"
    name: Sym


@dataclass(frozen=True)
class CapacityFact(Fact):
    pred: ClassVar[str] = "capacity"
    memory: Sym
    rows: int


@dataclass(frozen=True)
class RowWidthFact(Fact):
    pred: ClassVar[str] = "row_width"
    memory: Sym
    elems: int


@dataclass(frozen=True)
class ElemTypeFact(Fact):
    pred: ClassVar[str] = "elem_type"
    memory: Sym
    type: Sym


@dataclass(frozen=True)
class BanksFact(Fact):
    pred: ClassVar[str] = "banks"
    memory: Sym
    banks: int


@dataclass(frozen=True)
class PortsFact(Fact):
    pred: ClassVar[str] = "ports"
    memory: Sym
    ports: int


@dataclass(frozen=True)
class ExternalFact(Fact):
    pred: ClassVar[str] = "external"
    memory: Sym


@dataclass(frozen=True)
class RegFileFact(Fact):
    pred: ClassVar[str] = "regfile"
    name: Sym
    count: int
    width: int


@dataclass(frozen=True)
class LayoutFieldFact(Fact):
    pred: ClassVar[str] = "layout_field"
    layout: Sym
    field: Text
    hi: int
    lo: int


@dataclass(frozen=True)
class StateFieldFact(Fact):
    pred: ClassVar[str] = "state_field"
    state: Sym
    field: Text
    reset: int


@dataclass(frozen=True)
class InstructionFact(Fact):
    pred: ClassVar[str] = "instruction"
    mnemonic: Sym


@dataclass(frozen=True)
class OperandFact(Fact):
    pred: ClassVar[str] = "operand"
    mnemonic: Sym
    pos: int
    name: Text
    kind: Sym


@dataclass(frozen=True)
class OperandRangeFact(Fact):
    pred: ClassVar[str] = "operand_range"
    mnemonic: Sym
    name: Text
    lo: int
    hi: int


@dataclass(frozen=True)
class UnitFact(Fact):
    pred: ClassVar[str] = "unit"
    mnemonic: Sym
    unit: Sym


@dataclass(frozen=True)
class ReadsFact(Fact):
    pred: ClassVar[str] = "reads"
    mnemonic: Sym
    memory: Sym


@dataclass(frozen=True)
class WritesFact(Fact):
    pred: ClassVar[str] = "writes"
    mnemonic: Sym
    memory: Sym


@dataclass(frozen=True)
class SetsFact(Fact):
    pred: ClassVar[str] = "sets"
    mnemonic: Sym
    state: Sym
    field: Text


@dataclass(frozen=True)
class UsesFact(Fact):
    pred: ClassVar[str] = "uses"
    mnemonic: Sym
    state: Sym


@dataclass(frozen=True)
class RuleFact(Fact):
    pred: ClassVar[str] = "rule"
    id: Text


@dataclass(frozen=True)
class RuleAppliesFact(Fact):
    pred: ClassVar[str] = "rule_applies"
    id: Text
    mnemonic: Sym


@dataclass(frozen=True)
class RuleMessageFact(Fact):
    pred: ClassVar[str] = "rule_message"
    id: Text
    message: Text


@dataclass(frozen=True)
class RuleSourceFact(Fact):
    pred: ClassVar[str] = "rule_source"
    id: Text
    file: Text
    line: int


@dataclass(frozen=True)
class RuleTextFact(Fact):
    pred: ClassVar[str] = "rule_text"
    id: Text
    text: Text


@dataclass(frozen=True)
class HazardFact(Fact):
    pred: ClassVar[str] = "hazard"
    id: Text
    reader: Sym
    memory: Sym
    writer: Sym
    fence: Sym


@dataclass(frozen=True)
class WorkloadKeyFact(Fact):
    pred: ClassVar[str] = "workload_key"
    op: Sym
    key: Text


@dataclass(frozen=True)
class KnobFact(Fact):
    pred: ClassVar[str] = "knob"
    op: Sym
    name: Text


@dataclass(frozen=True)
class KnobRangeFact(Fact):
    pred: ClassVar[str] = "knob_range"
    op: Sym
    name: Text
    lo: int
    hi: int


@dataclass(frozen=True)
class KnobValueFact(Fact):
    pred: ClassVar[str] = "knob_value"
    op: Sym
    name: Text
    value: Sym


@dataclass(frozen=True)
class KnobDefaultFact(Fact):
    """The canonical value of a symbolic knob: what it takes wherever its condition is false."""

    pred: ClassVar[str] = "knob_default"
    op: Sym
    name: Text
    value: Sym


@dataclass(frozen=True)
class KnobConditionalFact(Fact):
    pred: ClassVar[str] = "knob_conditional"
    op: Sym
    name: Text


@dataclass(frozen=True)
class ConstraintFact(Fact):
    pred: ClassVar[str] = "constraint"
    op: Sym
    id: Text


# -- facts of one program or mapping under check ---------------------------------------


@dataclass(frozen=True)
class InstrFact(Fact):
    pred: ClassVar[str] = "instr"
    pos: int
    mnemonic: Sym


@dataclass(frozen=True)
class ValFact(Fact):
    pred: ClassVar[str] = "val"
    pos: int
    name: Text
    value: int


@dataclass(frozen=True)
class PrevFact(Fact):
    pred: ClassVar[str] = "prev"
    pos: int
    before: int


@dataclass(frozen=True)
class EpochFact(Fact):
    pred: ClassVar[str] = "epoch"
    pos: int
    fence: Sym
    count: int


@dataclass(frozen=True)
class MappingOpFact(Fact):
    pred: ClassVar[str] = "mapping_op"
    op: Sym


@dataclass(frozen=True)
class MvalFact(Fact):
    pred: ClassVar[str] = "mval"
    name: Text
    value: int


@dataclass(frozen=True)
class MsymFact(Fact):
    pred: ClassVar[str] = "msym"
    name: Text
    value: Sym


# -- facts clingo answers with -----------------------------------------------------------


@dataclass(frozen=True)
class ViolationFact(Fact):
    """A rule broken at a position of the program under check (0: a parameter invariant)."""

    pred: ClassVar[str] = "violation"
    rule: Text
    pos: int


@dataclass(frozen=True)
class MviolationFact(Fact):
    """A mapping constraint broken by the mapping under check."""

    pred: ClassVar[str] = "mviolation"
    constraint: Text


@dataclass(frozen=True)
class SkeletonFact(Fact):
    """A symbolic knob's value in an enumerated mapping skeleton (lp/mapping.lp)."""

    pred: ClassVar[str] = "skeleton"
    op: Sym
    knob: Text
    value: Sym


@dataclass(frozen=True)
class QueryAnswerFact(Fact):
    """An atom matching a `kb query` pattern (the query wraps it: `zomboss_query(Atom)`)."""

    pred: ClassVar[str] = "zomboss_query"
    atom: Term


_FIELD_DECODERS: dict[type[Fact], tuple[Callable[[clingo.Symbol], object], ...]] = {}


def _field_decoders(cls: type[Fact]) -> tuple[Callable[[clingo.Symbol], object], ...]:
    """Per field of a fact type, the decoder of its declared type (built once per type)."""
    out = _FIELD_DECODERS.get(cls)
    if out is None:
        hints = typing.get_type_hints(cls)
        out = _FIELD_DECODERS[cls] = tuple(_DECODERS[hints[f.name]] for f in fields(cls))
    return out


FactT = typing.TypeVar("FactT", bound=Fact)


def decode(cls: type[FactT], atoms: Iterable[clingo.Symbol]) -> list[FactT]:
    """The facts of type `cls` among a model's atoms (which are all functions), in model order."""
    pred, out = cls.pred, []
    for a in atoms:
        if a.name == pred:
            f = cls.from_symbol(a)
            if f is not None:
                out.append(f)
    return out


def render(facts: Sequence[Fact], wide: bool = False) -> str:
    return "\n".join(f.asp(wide) for f in facts)
