"""Sampled verification (`--verify sampled`, targets/gemmini/sampled.py): the slice of a kernel
that computes some output blocks is the kernel's own loops, it verifies where the kernel is
right, and a wrong slice or a missing first load of a pinned operand is caught."""

from __future__ import annotations

import json

import pytest
from zomboss.targets.gemmini import TARGET
from zomboss.targets.gemmini import sampled as sampled_mod
from zomboss.targets.gemmini.lowering import lower, output_blocks
from zomboss.targets.gemmini.mapping import view
from zomboss.targets.gemmini.presets import DEFAULT_PRESET, get_preset
from zomboss.targets.gemmini.sampled import sample_blocks, verify_sampled

from zomboss.app import main
from zomboss.mapping import space
from zomboss.target import Mode

CURRENT = "firesim-f1-llc-current"
SPAD_IDS = dict(get_preset(CURRENT).rtl.kb_params)  # the current RTL: its loop FSMs pin halves (ucb-bar/gemmini)


def _default(spec: str, params: dict[str, int] | None = None):  # noqa: ANN202
    wl = TARGET.workload(spec)
    inst = TARGET.instance(wl, params or {}, seed=3)
    return inst, TARGET.reference_mappings(wl, params or {})["library"]


@pytest.mark.parametrize(
    "spec",
    ["mm256", "odd_pad", "conv_s2", "matmul:M=70,N=50,K=90,bias=1,relu=1", "conv:N=2,H=9,W=7,C=20,K=36,R=3,S=3,pad=1"],
)
def test_sampled_blocks_of_defaults_verify(spec: str) -> None:
    inst, m = _default(spec)
    check = verify_sampled(inst, m, DEFAULT_PRESET, samples=3, seed=5)
    grid = tuple(n for n, _ in output_blocks(view(m), inst.workload, inst.cfg))
    assert check.verified and not check.wrong
    assert check.blocks[0] == (0,) * len(grid) and check.blocks[-1] == tuple(n - 1 for n in grid)  # the edges
    assert len(check.blocks) == min(3, check.of)


@pytest.mark.parametrize("spec", ["mm512", "conv_s2", "conv:N=2,H=9,W=7,C=20,K=36,R=3,S=3,pad=1"])
def test_a_slice_of_every_block_is_the_kernel(spec: str) -> None:
    """Slicing keeps the kernel's own loops in its order: all blocks give the whole program."""
    inst, m = _default(spec)
    grid = tuple(n for n, _ in output_blocks(view(m), inst.workload, inst.cfg))
    every = frozenset(sample_blocks(grid, 10**9, 0))
    whole = TARGET.lower(inst, m)
    assert lower(m, inst.workload, inst.buffers, inst.cfg, every).instrs == tuple(whole.instrs)


def test_sample_blocks_are_distinct_and_seeded() -> None:
    a, b = sample_blocks((7, 9), 6, 1), sample_blocks((7, 9), 6, 2)
    assert len(set(a)) == 6 and a[0] == (0, 0) and a[-1] == (6, 8) and a != b
    assert sample_blocks((7, 9), 6, 1) == a
    assert sample_blocks((1, 1), 8, 0) == ((0, 0),)


def test_a_slice_that_drops_a_loop_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    inst, m = _default("mm512")
    real = sampled_mod.lower

    def without_last_loop(*args, **kwargs):  # noqa: ANN002, ANN003, ANN202
        p = real(*args, **kwargs)
        instrs = list(p.instrs)
        last = max(i for i, ins in enumerate(instrs) if ins.op == "loop_ws")
        del instrs[last - 5 : last + 1]  # its five configuration instructions and the loop
        return type(p)(p.target, tuple(instrs), p.meta)

    monkeypatch.setattr(sampled_mod, "lower", without_last_loop)
    check = verify_sampled(inst, m, DEFAULT_PRESET, samples=4, seed=0)
    assert not check.verified and check.blocks[-1] in check.wrong


@pytest.mark.parametrize(
    ("spec", "knobs"),
    [
        ("matmul:M=96,N=80,K=64,bias=1", {"tile_i": 3, "tile_j": 3, "tile_k": 4, "reuse_a": True, "reuse_b": True}),
        ("conv:N=2,H=8,W=8,C=16,K=32,R=3,S=3,pad=1", {"tile_b": 1, "tile_och": 16, "reuse_a": True, "reuse_b": True}),
    ],
)
def test_pinned_operands_are_loaded_by_their_first_use(
    spec: str, knobs: dict[str, object], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A loop that reuses a pinned block skips its load; the slice includes the loop that loads
    it (`slice_closure`), and without it the sampled blocks come out wrong."""
    wl = TARGET.workload(spec)
    inst = TARGET.instance(wl, SPAD_IDS, seed=1)
    kb = TARGET.kb(SPAD_IDS)
    base = TARGET.reference_mappings(wl, SPAD_IDS)["library"].to_json()["knobs"]
    m = space(kb, wl.op).mapping({**base, **knobs, "loop": "hw"}, wl.shape)
    grid = tuple(n for n, _ in output_blocks(view(m), wl, inst.cfg))
    assert min(grid[:2] if wl.op == "matmul" else (grid[0], grid[3])) > 1  # some loop reuses a pinned block
    assert verify_sampled(inst, m, CURRENT, samples=2, seed=0).verified
    monkeypatch.setattr("zomboss.targets.gemmini.lowering.slice_closure", lambda _m, blocks: blocks)
    assert not verify_sampled(inst, m, CURRENT, samples=2, seed=0).verified


def test_cli_verify_sampled_reports_what_it_checked(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["default", "gemmini", "conv_s2", "--verify", "sampled", "--samples", "3", "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["verify"] == "sampled" and d["verified"] is True
    assert d["sampled"]["blocks"] == 3 and d["sampled"]["of"] > 3 and d["sampled"]["wrong"] == []
    assert d["cycles"] == TARGET.evaluate(*_default("conv_s2"), Mode.TIMING).cycles  # the whole kernel's timing


def test_a_target_without_sampling_says_so(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["default", "vta", "r18_c4", "--verify", "sampled"]) == 2
    assert "verifies whole kernels only" in capsys.readouterr().err
    assert main(["default", "plena", "rms_4x384", "--verify", "sampled"]) == 2  # PLENA slices linears only
    assert "linear kernels only" in capsys.readouterr().err
