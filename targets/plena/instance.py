"""A PLENA workload made concrete for one seed: its inputs (drawn and MXFP8-quantized as the
golden reference expects, `golden.py`), the reference, and the HBM image and FP SRAM preload
a kernel's memory map stages them into."""

from __future__ import annotations

from collections.abc import Mapping
from functools import cached_property
from typing import Any

import numpy as np

from zomboss.util import check_workload_bytes
from zomboss.workload import Workload

from . import hbm as H
from .config import PlenaConfig
from .golden import make_inputs, quantize_inputs, reference
from .layout import KernelLayout
from .suite import data_bytes


def stage(layout: KernelLayout, inputs: Mapping[str, np.ndarray]) -> tuple[H.Hbm, np.ndarray]:
    """The initial HBM image (every declared input, MXFP8) and the FP SRAM preload values."""
    hbm = H.Hbm()
    for t in layout.inputs:
        if t.name not in inputs:
            raise KeyError(f"layout declares HBM input {t.name!r} but the workload has {sorted(inputs)}")
        x = inputs[t.name]
        if x.shape != (t.rows, t.cols):
            raise ValueError(f"input {t.name} is {x.shape}, the layout places {t.rows}x{t.cols}")
        H.place_mx_tensor(hbm, t.base, x)
    fp = np.zeros(max(layout.fp_sram, default=-1) + 1, dtype=np.float32)
    for slot, value in layout.fp_sram.items():
        fp[slot] = value
    return hbm, fp


class PlenaInstance:
    """A workload made concrete for one seed (`zomboss.target.Instance`): its raw inputs, the
    golden reference computed from their MXFP8-quantized form, and the HBM image and FP SRAM
    preload of every layout it has been staged for. Built once per (workload, parameters,
    seed) by the target and reused by every evaluation; the data is made on first use, so a
    timing-only evaluation never pays for it."""

    def __init__(self, workload: Workload, params: Mapping[str, int], seed: int, cfg: PlenaConfig) -> None:
        self.workload, self.params, self.seed, self.cfg = workload, dict(params), seed, cfg
        self._staged: dict[tuple[Any, ...], tuple[H.Hbm, np.ndarray]] = {}

    @cached_property
    def inputs(self) -> dict[str, np.ndarray]:
        check_workload_bytes(self.workload.id or self.workload.op, data_bytes(self.workload))  # before allocating
        return make_inputs(self.workload, self.seed)

    @cached_property
    def reference(self) -> np.ndarray:
        return reference(self.workload, quantize_inputs(self.inputs))

    def staged(self, layout: KernelLayout) -> tuple[H.Hbm, np.ndarray]:
        """(HBM image, FP SRAM preload) for a kernel with this memory map (simulations copy them)."""
        key = (layout.inputs, tuple(sorted(layout.fp_sram.items())))
        if key not in self._staged:
            self._staged[key] = stage(layout, self.inputs)
        return self._staged[key]
