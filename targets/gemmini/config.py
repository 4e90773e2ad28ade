"""The Gemmini configuration a simulation runs against, built from the ISA doc's parameters.

The doc (`gemmini.md`) is the source of these numbers; `GemminiConfig.from_params` reads the
evaluated `param`s (e.g. `KB.params`, possibly with `--param` overrides) so a different
array size or scratchpad is a doc override, not a code change. `DEFAULT_PARAMS` repeats the
doc's defaults so the simulator can run before (or without) the KB; a test keeps the two equal.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from zomboss.errors import ZombossError


class ConfigError(ZombossError):
    """A parameter set that does not describe a buildable Gemmini."""


# Defaults of `ucb-bar/gemmini` GemminiConfigs.defaultConfig (reference §1.1-1.2); the doc's
# `param` block carries the same values (checked by tests/targets/gemmini/test_config.py).
DEFAULT_PARAMS: dict[str, int] = {
    "dim": 16,
    "sp_capacity_kib": 256,
    "sp_banks": 4,
    "acc_capacity_kib": 64,
    "acc_banks": 2,
    "max_bytes": 64,
    "rs_ld": 8,
    "rs_ex": 16,
    "rs_st": 4,
}


@dataclass(frozen=True)
class GemminiConfig:
    """Sizes of one Gemmini instance (rows are DIM elements wide)."""

    dim: int = 16
    sp_rows: int = 16384
    sp_banks: int = 4
    acc_rows: int = 1024
    acc_banks: int = 2
    max_bytes: int = 64
    rs_ld: int = 8
    rs_ex: int = 16
    rs_st: int = 4

    @classmethod
    def from_params(cls, params: Mapping[str, int]) -> GemminiConfig:
        """Build from doc parameters (lower-case names); missing names take the doc defaults."""
        p = {**DEFAULT_PARAMS, **{k.lower(): int(v) for k, v in params.items()}}
        dim = p["dim"]
        if dim < 2 or dim & (dim - 1):
            raise ConfigError(f"dim={dim}: the systolic array edge must be a power of two >= 2")
        sp_rows = p.get("sp_rows", p["sp_capacity_kib"] * 1024 // dim)
        acc_rows = p.get("acc_rows", p["acc_capacity_kib"] * 1024 // (dim * 4))
        cfg = cls(
            dim=dim,
            sp_rows=sp_rows,
            sp_banks=p["sp_banks"],
            acc_rows=acc_rows,
            acc_banks=p["acc_banks"],
            max_bytes=p["max_bytes"],
            rs_ld=p["rs_ld"],
            rs_ex=p["rs_ex"],
            rs_st=p["rs_st"],
        )
        for name in ("sp_rows", "acc_rows", "sp_banks", "acc_banks"):
            if getattr(cfg, name) < 1:
                raise ConfigError(f"{name}={getattr(cfg, name)} must be >= 1")
        if cfg.sp_rows % (2 * cfg.sp_banks) or cfg.acc_rows % (2 * cfg.acc_banks):
            raise ConfigError("scratchpad and accumulator rows must split evenly into banks and halves")
        if cfg.sp_rows > 1 << 14:
            raise ConfigError(f"sp_rows={cfg.sp_rows}: the local address has a 14-bit row field")
        return cfg

    # --- derived quantities (gemmini_params.h names in the comments) --------------------
    @property
    def sp_bank_rows(self) -> int:  # BANK_ROWS
        return self.sp_rows // self.sp_banks

    @property
    def acc_bank_rows(self) -> int:
        return self.acc_rows // self.acc_banks

    @property
    def max_block_len(self) -> int:  # MAX_BLOCK_LEN: DIM-wide int8 blocks per DMA request
        return max(1, self.max_bytes // self.dim)

    @property
    def max_block_len_acc(self) -> int:  # MAX_BLOCK_LEN_ACC: int32 blocks per request
        return max(1, self.max_bytes // (self.dim * 4))

    @property
    def half_sp_rows(self) -> int:
        return self.sp_rows // 2

    @property
    def half_acc_rows(self) -> int:
        return self.acc_rows // 2
