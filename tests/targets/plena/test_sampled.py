"""`--verify sampled` for PLENA linears (targets/plena/sampled.py): the slice of all blocks is
the kernel itself, a sample checks the blocks it names against NumPy (bit-exact where the
reduction is one K chunk), and a slice missing or misplacing a part fails."""

from __future__ import annotations

import numpy as np
import pytest
from zomboss.targets.plena import TARGET
from zomboss.targets.plena.layout import Kernel
from zomboss.targets.plena.lowering import linear_plan, lower_slice
from zomboss.targets.plena.sampled import check_slice, sample_blocks, verify_sampled

from zomboss.errors import WorkloadError
from zomboss.program import Instr, Program
from zomboss.target import Mode
from zomboss.verify import default_result

CHUNKED = ("linear:M=192,K=512,N=128", {"vram_rows": 1024})  # spans of 64 rows stored to HBM, 2 K chunks
WHOLE = ("linear:M=72,K=128,N=192", {})  # stays in VRAM, a partial row block


def _setup(spec: str, params: dict[str, int]):
    wl = TARGET.workload(spec)
    cfg = TARGET.config(params)
    m = TARGET.reference_mappings(wl, params)["library"]
    plan = linear_plan(m, wl, TARGET.geometry(params))
    return wl, cfg, m, plan


def test_sample_blocks_keep_the_first_and_the_last() -> None:
    b = sample_blocks((64, 128), 8, 3)
    assert len(set(b)) == 8 and b[0] == (0, 0) and b[-1] == (63, 127) and list(b) == sorted(b)
    assert b == sample_blocks((64, 128), 8, 3) and b != sample_blocks((64, 128), 8, 4)
    assert len(sample_blocks((1, 3), 8, 0)) == 3


@pytest.mark.parametrize("case", [CHUNKED, WHOLE], ids=["chunked", "whole"])
def test_the_slice_of_every_block_is_the_kernel(case: tuple[str, dict[str, int]]) -> None:
    spec, params = case
    wl, cfg, m, plan = _setup(spec, params)
    every = frozenset((r, c) for r in range(len(plan.row_blocks)) for c in range(plan.col_blocks))
    full = TARGET.kernel(TARGET.instance(wl, params), m)
    assert lower_slice(cfg.kb, m, wl, every).program.instrs == full.program.instrs
    got = verify_sampled(cfg, m, wl, samples=len(every), seed=1)
    assert got.verified and len(got.blocks) == got.of == len(every) and not got.wrong


def test_a_sample_is_a_smaller_program_and_verifies() -> None:
    spec, params = CHUNKED
    wl, cfg, m, plan = _setup(spec, params)
    got = verify_sampled(cfg, m, wl, samples=2, seed=0)
    assert got.verified and got.blocks == ((0, 0), (2, 1)) and got.of == 6
    assert got.max_abs_err > 0  # two K chunks add BF16 partial sums: close to NumPy, not equal
    whole = TARGET.kernel(TARGET.instance(wl, params), m)
    assert len(lower_slice(cfg.kb, m, wl, frozenset(got.blocks)).program) < len(whole.program)


def test_one_k_chunk_samples_are_bit_exact() -> None:
    spec, params = "linear:M=192,K=128,N=128", {"vram_rows": 512}
    wl, cfg, m, _ = _setup(spec, params)
    got = verify_sampled(cfg, m, wl, samples=3, seed=5)
    assert got.verified and got.exact == 3 and got.exact_elements == 1.0 and got.max_abs_err == 0.0


def _drop(kernel: Kernel, op: str, last: bool = True) -> Kernel:
    instrs = list(kernel.program.instrs)
    hits = [i for i, ins in enumerate(instrs) if ins.op == op]
    i = hits[-1] if last else hits[0]
    return Kernel(Program("plena", tuple(instrs[:i] + instrs[i + 1 :])), kernel.layout)


@pytest.mark.parametrize("case", [CHUNKED, WHOLE], ids=["chunked", "whole"])
@pytest.mark.parametrize("op", ["M_MM_WO", "H_PREFETCH_M", "V_ADD_VV", "H_STORE_V"])
def test_a_broken_slice_is_caught(case: tuple[str, dict[str, int]], op: str) -> None:
    """Drop the slice's last write-out, weight load, partial-sum add or store: a block is wrong."""
    spec, params = case
    wl, cfg, m, plan = _setup(spec, params)
    blocks = sample_blocks((len(plan.row_blocks), plan.col_blocks), 3, 0)
    kernel = lower_slice(cfg.kb, m, wl, frozenset(blocks))
    if not any(i.op == op for i in kernel.program.instrs):
        assert op in ("V_ADD_VV", "H_STORE_V") and spec == WHOLE[0]  # one K chunk, output in VRAM
        return
    assert check_slice(kernel, cfg, wl, plan, blocks, 0).verified
    got = check_slice(_drop(kernel, op), cfg, wl, plan, blocks, 0)
    assert not got.verified and got.wrong


def test_a_slice_reading_the_wrong_weights_is_caught() -> None:
    """Move the slice's first weight-tile offset by one column block: it reads zeros there."""
    spec, params = CHUNKED
    wl, cfg, m, plan = _setup(spec, params)
    blocks = ((0, 0), (2, 1))
    kernel = lower_slice(cfg.kb, m, wl, frozenset(blocks))
    instrs = list(kernel.program.instrs)
    pf = next(i for i, ins in enumerate(instrs) if ins.op == "H_PREFETCH_M")
    li = max(i for i in range(pf) if instrs[i].op == "S_ADDI_INT" and instrs[i].args[0] == 2)  # gp2: the HBM offset
    rd, rs, imm = instrs[li].args
    instrs[li] = Instr("S_ADDI_INT", (rd, rs, imm + 64))
    got = check_slice(Kernel(Program("plena", tuple(instrs)), kernel.layout), cfg, wl, plan, blocks, 0)
    assert not got.verified and (0, 0) in got.wrong


def test_only_linears_are_sampled() -> None:
    wl = TARGET.workload("rms_4x384")
    m = TARGET.reference_mappings(wl, {})["library"]
    with pytest.raises(WorkloadError, match="linear"):
        verify_sampled(TARGET.config({}), m, wl)


def test_default_reports_the_sample() -> None:
    spec, params = CHUNKED
    res = default_result(TARGET, TARGET.workload(spec), params, "sampled", samples=3, seed=2)
    assert res.verified is True and res.extra["verify"] == "sampled"
    s = res.extra["sampled"]
    assert s["blocks"] == 3 and s["of"] == 6 and s["seed"] == 2 and s["wrong"] == []
    wl, _, m, _ = _setup(spec, params)
    assert res.cycles == TARGET.evaluate(TARGET.instance(wl, params), m, Mode.TIMING).cycles  # the whole kernel
    assert np.isfinite(s["max_abs_err"])
