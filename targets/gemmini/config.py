"""The Gemmini configuration a simulation runs against, read from the ISA doc's KB.

`gemmini.md` is the only statement of these numbers: `GemminiConfig.from_kb` takes the KB's
evaluated parameters (with any `--param` overrides and everything derived from them) and the
`local_addr` layout, so a different array size or scratchpad is a doc override, not a code
change. Nothing here repeats a doc default, and nothing loads a KB at import time:
`GemminiConfig.default()` builds (or reads from the cache) the doc's KB on first use.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from zomboss.targets.gemmini.presets import DEFAULT_PRESET, preset_for

from zomboss import expr as ex
from zomboss.errors import ZombossError
from zomboss.knowledge import KB, load_kb
from zomboss.target.protocol import ParamsKey, params_key

DOC = Path(__file__).with_name("gemmini.md")


class ConfigError(ZombossError):
    """A KB that does not describe a Gemmini (a parameter or the local-address layout is missing)."""


# the doc parameters a configuration reads (the fields of the same names)
_PARAMS = (
    "dim",
    "sp_rows",
    "sp_banks",
    "sp_bank_rows",
    "acc_rows",
    "acc_banks",
    "acc_bank_rows",
    "max_bytes",
    "max_block_len",
    "max_block_len_acc",
    "half_sp_rows",
    "half_acc_rows",
    "rs_ld",
    "rs_ex",
    "rs_st",
)


@dataclass(frozen=True)
class GemminiConfig:
    """Sizes of one Gemmini instance (rows are DIM elements wide), as the doc derives them."""

    dim: int
    sp_rows: int
    sp_banks: int
    sp_bank_rows: int  # BANK_ROWS
    acc_rows: int
    acc_banks: int
    acc_bank_rows: int
    max_bytes: int
    max_block_len: int  # MAX_BLOCK_LEN: DIM-wide int8 blocks per DMA request
    max_block_len_acc: int  # MAX_BLOCK_LEN_ACC: int32 blocks per request
    half_sp_rows: int
    half_acc_rows: int
    rs_ld: int
    rs_ex: int
    rs_st: int
    row_bits: int  # width of the local address's row field (layout local_addr, `row`)
    garbage_bit: int  # position of its garbage bit
    # the doc parameters this configuration overrides: what rebuilds its KB (`kb()`)
    overrides: tuple[tuple[str, int], ...] = ()
    # the timing preset of the platform the doc's RTL feature parameters describe (`preset_for`)
    preset: str = DEFAULT_PRESET

    @classmethod
    def from_kb(cls, kb: KB) -> GemminiConfig:
        p = kb.params
        names = _PARAMS
        missing = [n for n in names if n not in p]
        if missing:
            raise ConfigError(f"{kb.doc.path}: the doc defines no parameter {missing[0]!r} a Gemmini needs")
        layout = kb.layouts.get("local_addr")
        if layout is None or "row" not in layout.bits or "garbage_bit" not in layout.bits:
            raise ConfigError(f"{kb.doc.path}: the doc needs a `layout local_addr` with `row` and `garbage_bit`")
        row_hi, row_lo = layout.bits["row"]
        if row_lo != 0:
            raise ConfigError(f"{kb.doc.path}: the row field of local_addr must start at bit 0")
        small = [n for n in names if int(p[n]) < 1]
        if small:  # the doc's cfg.* rules should refuse this first; the simulator needs every size >= 1
            raise ConfigError(f"{kb.doc.path}: parameter {small[0]}={p[small[0]]} must be at least 1")
        return cls(
            **{n: int(p[n]) for n in names},
            row_bits=row_hi + 1,
            garbage_bit=layout.bits["garbage_bit"][1],
            overrides=overrides_of(kb),
            preset=preset_for(p).name,
        )

    @classmethod
    def default(cls) -> GemminiConfig:
        """The doc's own configuration (no overrides)."""
        return _default()

    def kb(self) -> KB:
        """The KB this configuration was read from (rebuilt from its overrides, cached)."""
        return machine_kb(self.overrides)

    @property
    def row_mask(self) -> int:
        return (1 << self.row_bits) - 1


def overrides_of(kb: KB) -> tuple[tuple[str, int], ...]:
    """The smallest set of parameter overrides that reproduces `kb.params`: every parameter
    whose value is not what its doc expression gives for the others (a literal default
    changed, or a derived parameter set by hand)."""
    out = []
    for prm in kb.doc.params:
        v = kb.params[prm.name]
        if ex.evaluate(prm.expr, kb.params) != v:
            out.append((prm.name, int(v)))
    return tuple(sorted(out))


@functools.cache
def machine_kb(overrides: ParamsKey = ()) -> KB:
    """The doc's KB for these overrides (unknown or illegal ones refused with the doc's message)."""
    return load_kb(DOC, dict(overrides))


@functools.cache
def _default() -> GemminiConfig:
    return GemminiConfig.from_kb(machine_kb(()))


def config_for(params: Mapping[str, int]) -> GemminiConfig:
    """The configuration of the doc with these `--param` overrides."""
    return GemminiConfig.from_kb(machine_kb(params_key(params)))
