"""The PLENA machine a simulation runs against: the doc's parameters, evaluated by the KB
(with any `--param` overrides and everything derived from them)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from zomboss.knowledge import KB, load_kb

DOC = Path(__file__).with_name("plena.md")


@dataclass(frozen=True)
class PlenaConfig:
    """The machine the simulator models: the doc's parameters, evaluated by the KB."""

    kb: KB = field(repr=False, compare=False)
    mlen: int
    vlen: int
    blen: int
    hlen: int
    broadcast: int
    pf_m: int
    pf_v: int
    wb_v: int
    mram_tiles: int
    vram_rows: int
    fpsram_size: int
    intsram_size: int
    max_loop_instructions: int
    bmm_scale: float
    mx_block: int
    mx_ratio: int
    hbm_block: int

    @property
    def params(self) -> Mapping[str, int]:
        return self.kb.params

    @classmethod
    def from_params(cls, params: Mapping[str, int] | None = None, *, doc: Path = DOC) -> PlenaConfig:
        """From parameter overrides (`{"mlen": 16}`) or a full parameter mapping such as
        `KB.params`; only values that differ from the doc's defaults become overrides."""
        base = load_kb(doc)
        over = {k.lower(): int(v) for k, v in (params or {}).items()}
        over = {k: v for k, v in over.items() if base.params.get(k) != v}
        return cls.from_kb(load_kb(doc, over) if over else base)

    @classmethod
    def from_kb(cls, kb: KB) -> PlenaConfig:
        p = kb.params
        return cls(
            kb=kb,
            mlen=p["mlen"],
            vlen=p["vlen"],
            blen=p["blen"],
            hlen=p["hlen"],
            broadcast=p["broadcast"],
            pf_m=p["hbm_m_prefetch"],
            pf_v=p["hbm_v_prefetch"],
            wb_v=p["hbm_v_writeback"],
            mram_tiles=p["mram_tiles"],
            vram_rows=p["vram_rows"],
            fpsram_size=p["fpsram_size"],
            intsram_size=p["intsram_size"],
            max_loop_instructions=p["max_loop_instructions"],
            bmm_scale=p["bmm_scale_num"] / p["bmm_scale_den"],
            mx_block=p["mx_block"],
            mx_ratio=p["mx_ratio"],
            hbm_block=p["hbm_block"],
        )
