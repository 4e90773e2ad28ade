"""The HBM image, the emulator's MX transfer addressing, and the Appendix A cost model."""

from __future__ import annotations

import numpy as np
import pytest
from zomboss.targets.plena import hbm as H
from zomboss.targets.plena.numerics import mx_fake_quant, mx_quantize

from zomboss import expr as ex


def test_image_reads_zeros_past_the_end_and_grows_on_write() -> None:
    h = H.Hbm(b"\x01\x02\x03")
    assert h.read(1, 4).tolist() == [2, 3, 0, 0]
    h.write(10, np.array([7, 8], dtype=np.uint8))
    assert h.size == 12 and h.read(8, 4).tolist() == [0, 0, 7, 8]
    assert h.gather(np.array([0, 11]), 2).tolist() == [[1, 2], [8, 0]]
    with pytest.raises(H.HbmError):
        H.Hbm(np.zeros((2, 2), dtype=np.uint8))


def test_tensor_image_is_elements_then_scales() -> None:
    x = np.arange(2 * 16, dtype=np.float32).reshape(2, 16) - 8
    img = H.mx_tensor_bytes(x)
    codes, scales = mx_quantize(x)
    assert img.size == 32 + 4
    assert img[:32].tolist() == codes.reshape(-1).tolist() and img[32:].tolist() == scales.reshape(-1).tolist()
    h = H.Hbm()
    end = H.place_mx_tensor(h, 128, x)
    assert end == 128 + 36
    np.testing.assert_array_equal(H.read_mx_tensor(h, 128, 2, 16), mx_fake_quant(x))
    with pytest.raises(H.HbmError, match="whole blocks"):
        H.mx_tensor_bytes(np.zeros((2, 12)))


def test_plan_follows_the_emulator_addressing() -> None:
    # a [64, 384] tensor at 4096: rows 384 bytes apart, scales from 4096 + 64*384
    t = H.plan(4096, 128, 64 * 384, 384, 4, 64)
    assert t.elem_addrs.tolist() == [4096 + 128 + i * 384 for i in range(4)]
    assert t.scale_addrs.tolist() == [4096 + 64 * 384 + 16 + i * 48 for i in range(4)]
    assert t.n_blk == 4 * (1 + 1)
    unaligned = H.plan(0, 32, 64, 64, 2, 64)  # each row straddles two 64-byte blocks
    assert unaligned.n_blk == 2 * (2 + 1)


def test_load_and_store_rows_round_trip_through_mx() -> None:
    rng = np.random.default_rng(1)
    x = rng.standard_normal((8, 128)).astype(np.float32)
    h = H.Hbm()
    H.place_mx_tensor(h, 0, x)
    t = H.plan(0, 64, 8 * 128, 128, 4, 64)  # rows 0..3, second 64-column block
    np.testing.assert_array_equal(H.load_rows(h, t), mx_fake_quant(x)[:4, 64:])
    out = H.Hbm()
    H.store_rows(out, t, mx_fake_quant(x)[:4, 64:])
    np.testing.assert_array_equal(H.load_rows(out, t), mx_fake_quant(x)[:4, 64:])


def test_scale_read_stops_at_its_64_byte_block() -> None:
    h = H.Hbm()
    h.write(0, np.full(8, 0x38, dtype=np.uint8))  # eight 1.0 elements
    h.write(32, np.full(8, 0x38, dtype=np.uint8))
    h.write(124, np.full(8, 127, dtype=np.uint8))  # scale bytes 124..131 straddle the block boundary at 128
    t = H.plan(0, 0, 124, 64, 1, 64)  # one row of 64 elements; only 4 of its 8 scale bytes are read
    vals = H.load_rows(h, t)[0]
    assert vals[:8].tolist() == [1.0] * 8 and not vals[32:].any()


@pytest.mark.parametrize(
    ("rows", "rowlen", "pitch", "cycles"),
    [
        (64, 64, 384, 110),  # Appendix A fit: MLEN=64 tile at pitch 384 (Ramulator2 124)
        (64, 64, 4096, 212),  # (208)
        (256, 256, 256, 801),  # MLEN=256 (774)
        (256, 256, 4096, 1210),  # (1184)
        (16, 16, 384, 42),  # MLEN=16 (52)
        (32, 32, 768, 65),  # MLEN=32 (80)
        (128, 128, 3072, 474),  # MLEN=128 (403)
        (4, 64, 64, 26),  # four activation rows (22-35)
        (4, 64, 4096, 32),
        (1, 16, 16, 22),  # the floor
    ],
)
def test_prefetch_cost_matches_appendix_a(rows: int, rowlen: int, pitch: int, cycles: int) -> None:
    t = H.plan(0, 0, rows * rowlen, pitch, rows, rowlen)
    assert H.HbmCost().prefetch(t) == cycles


def test_store_cost_is_sequential_rmw() -> None:
    assert H.HbmCost().store(H.plan(0, 0, 256, 64, 4, 64)) == 16 * 8  # 4 rows x (element + scale block)
    assert H.HbmCost().store(H.plan(0, 0, 1024, 256, 4, 256)) == 16 * 4 * 5  # MLEN=256 rows: 324 measured


@pytest.mark.parametrize("mnemonic", ["H_PREFETCH_M", "H_PREFETCH_V", "H_STORE_V"])
@pytest.mark.parametrize(
    ("base", "offset", "pitch_reg", "rstride"), [(0, 0, 1, 0), (4096, 64, 384, 1), (0, 128, 4096, 1), (64, 0, 1536, 1)]
)
def test_doc_latency_equals_the_cost_model(
    cfg, mnemonic: str, base: int, offset: int, pitch_reg: int, rstride: int
) -> None:
    """The DMA `latency` clauses of plena.md and HbmCost agree on aligned transfers."""
    kb = cfg.kb
    sig = kb.instrs[mnemonic]
    env: dict[str, int] = dict(kb.params)
    env.update({"rd": 1, "rs1": 2, "rs2": 0, "rstride": rstride, "prec": 0})
    env.update(
        {
            "rd.val": 0,
            "rs1.val": offset,
            "rs2.val": base,
            "cfg.stride": pitch_reg,
            "cfg.scale": 1 << 20,
            "cfg.v_mask": 0,
        }
    )
    for name, e in sig.lets:
        env[name] = ex.evaluate(e, env)
    doc = ex.evaluate(sig.latency, env)
    rowlen = cfg.mlen if mnemonic == "H_PREFETCH_M" else cfg.vlen
    rows = {"H_PREFETCH_M": cfg.pf_m, "H_PREFETCH_V": cfg.pf_v, "H_STORE_V": cfg.wb_v}[mnemonic]
    t = H.plan(base, offset, 1 << 20, pitch_reg if rstride else rowlen, rows, rowlen)
    cost = H.HbmCost.from_params(kb.params)
    assert doc == (cost.store(t) if mnemonic == "H_STORE_V" else cost.prefetch(t))


def test_an_hbm_image_is_bounded():
    """Issue #29, item 16: a store to HBM address 10^15 ran out of memory; it is refused,
    naming the address and the limit."""
    from zomboss.targets.plena.hbm import MAX_HBM_BYTES, Hbm, HbmError

    h = Hbm()
    with pytest.raises(HbmError, match=r"HBM address 1,000,000,000,000,000 is past the 256 MiB an HBM image may span"):
        h.write(10**15, np.zeros(1, dtype=np.uint8))
    h.write(MAX_HBM_BYTES - 1, np.ones(1, dtype=np.uint8))  # the last byte is still an address
    assert h.read(MAX_HBM_BYTES - 1, 1)[0] == 1
