"""Which op families a target offers for the kinds of layer a network has, found by the keys
of the families' workload schemas (`Target.describe()["ops"]`), so no target is named here and
a new machine's families are recognised by their shape alone.

A kind is what an ONNX pattern computes (a GEMM, a convolution, an RMSNorm, ...); a family is
the target's op that computes it with its own key names and flags (Gemmini's `matmul` with
`bias` and `relu`, VTA's `dense` with `shift`, `relu` and `clip`, PLENA's `linear`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

# kind -> (the keys a family of that kind requires, the keys it has required or optional)
KINDS: dict[str, tuple[frozenset[str], frozenset[str]]] = {
    "gemm": (frozenset({"M", "N", "K"}), frozenset()),
    "conv": (frozenset({"H", "W", "C", "K", "R", "S"}), frozenset({"N", "stride", "pad"})),
    "rmsnorm": (frozenset({"rows", "hidden"}), frozenset()),
    "softmax": (frozenset({"rows", "cols"}), frozenset()),
    "rope": (frozenset({"rows", "head_dim"}), frozenset()),
    "attention": (frozenset({"sq", "skv"}), frozenset({"d", "causal"})),
    "ffn": (frozenset({"rows", "hidden", "inter"}), frozenset()),
}


@dataclass(frozen=True)
class Family:
    """A target's op family of one kind: its name, its required keys and its optional keys with
    their defaults (the flags a layer may set, such as `bias` or `relu`)."""

    kind: str
    op: str
    required: tuple[str, ...]
    optional: Mapping[str, int]

    def has(self, key: str) -> bool:
        return key in self.required or key in self.optional


def families(ops: Mapping[str, Sequence[str]]) -> dict[str, Family]:
    """kind -> the target's family of that kind, from `describe()["ops"]` (op -> its required
    keys, then its optional ones written `key=default`). A family is of a kind when it requires
    the kind's keys, has its other keys (required or optional) and requires nothing else; the
    first one wins."""
    out: dict[str, Family] = {}
    for op, keys in ops.items():
        required = tuple(k for k in keys if "=" not in k)
        optional = {k: int(v) for k, _, v in (x.partition("=") for x in keys if "=" in x)}
        for kind, (need, also) in KINDS.items():
            if kind not in out and need <= set(required) <= need | also and also <= {*required, *optional}:
                out[kind] = Family(kind, op, required, optional)
    return out
