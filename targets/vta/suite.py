"""VTA workloads: ResNet-18 C2-C11 at batch 1 (the reference's TopHub log, §5.7) and a few
dense layers, their inputs and the NumPy reference (int8 x int8 -> int32, TVM's
requantisation, then the store's truncation to int8, §3.7)."""

from __future__ import annotations

import numpy as np

from zomboss.errors import WorkloadError
from zomboss.knowledge import KB
from zomboss.target import DocInstance, pack_image
from zomboss.util import check_workload_bytes
from zomboss.workload import FLAG, OpSchema, Workload

EPILOGUE = {"shift": 8, "relu": 1, "clip": 1}
# the requantisation shifts an int32 right (0..31 bits); relu and clip are switches
EPILOGUE_LIMITS = {"shift": (0, 31), "relu": FLAG, "clip": FLAG}
SCHEMAS = {
    "conv2d": OpSchema(
        "conv2d",
        ("H", "W", "C", "K", "R", "S"),
        {"N": 1, "stride": 1, "pad": 0, **EPILOGUE},
        positive=("stride",),
        limits=EPILOGUE_LIMITS,
    ),
    "dense": OpSchema("dense", ("M", "N", "K"), dict(EPILOGUE), limits=EPILOGUE_LIMITS),
}
# (id, H, W, C, K, k, pad, stride) of test_benchmark_topi_conv2d.py (§7.2)
_RESNET = (
    ("C2", 56, 56, 64, 64, 3, 1, 1), ("C3", 56, 56, 64, 128, 3, 1, 2), ("C4", 56, 56, 64, 128, 1, 0, 2),
    ("C5", 28, 28, 128, 128, 3, 1, 1), ("C6", 28, 28, 128, 256, 3, 1, 2), ("C7", 28, 28, 128, 256, 1, 0, 2),
    ("C8", 14, 14, 256, 256, 3, 1, 1), ("C9", 14, 14, 256, 512, 3, 1, 2), ("C10", 14, 14, 256, 512, 1, 0, 2),
    ("C11", 7, 7, 512, 512, 3, 1, 1),
)  # fmt: skip
# TopHub (vta_v0.06.log, pynq_1x16_i8w8a32_15_15_18_17): inner factors h, w, ci, co; oc/h threads; ms
TOPHUB = {
    "C2": (8, 56, 1, 2, 2, 1, 5.699), "C3": (7, 28, 1, 4, 2, 1, 2.966), "C4": (7, 28, 1, 4, 1, 2, 1.349),
    "C5": (14, 28, 1, 2, 1, 2, 5.183), "C6": (14, 14, 1, 4, 2, 1, 2.669), "C7": (7, 14, 1, 8, 2, 1, 1.029),
    "C8": (14, 14, 1, 4, 2, 1, 4.934), "C9": (7, 7, 1, 16, 2, 1, 3.994), "C10": (7, 7, 1, 16, 2, 1, 1.081),
    "C11": (7, 7, 1, 16, 2, 1, 7.348),
}  # fmt: skip
SUITE = tuple(
    Workload(f"r18_{n.lower()}", "conv2d", {"N": 1, "H": h, "W": w, "C": c, "K": k, "R": r, "S": r,
                                            "stride": s, "pad": p, **EPILOGUE})
    for n, h, w, c, k, r, p, s in _RESNET
) + (
    Workload("dense_128", "dense", {"M": 128, "N": 128, "K": 128, **EPILOGUE}),
    Workload("dense_64x1024x512", "dense", {"M": 64, "N": 1024, "K": 512, **EPILOGUE}),
    Workload("dense_48x256x256_wrap", "dense", {"M": 48, "N": 256, "K": 256, "shift": 2, "relu": 0, "clip": 0}),
)  # fmt: skip
TOPHUB_ID = {f"r18_{n.lower()}": n for n, *_ in _RESNET}


def conv_shape(wl: Workload) -> dict[str, int]:
    """Every op as a conv: a dense layer is a 1 x M image with R = S = 1."""
    s = dict(wl.shape)
    if wl.op == "dense":
        s = {"N": 1, "H": 1, "W": s["M"], "C": s["K"], "K": s["N"], "R": 1, "S": 1, "stride": 1, "pad": 0,
             **{k: s[k] for k in EPILOGUE}}  # fmt: skip
    s["ho"] = (s["H"] + 2 * s["pad"] - s["R"]) // s["stride"] + 1
    s["wo"] = (s["W"] + 2 * s["pad"] - s["S"]) // s["stride"] + 1
    if s["ho"] < 1 or s["wo"] < 1 or s["C"] % 16 or s["K"] % 16:
        raise WorkloadError(f"{wl.id}: channels must be multiples of 16 and the kernel must fit the padded image")
    return s


def reference(x: np.ndarray, w: np.ndarray, s: dict[str, int]) -> np.ndarray:
    """NCHW int8 input, KCRS int8 weights -> NKHW int8 output, exactly as VTA computes it."""
    n, c, h, wd = x.shape
    p, st, r, sk = s["pad"], s["stride"], s["R"], s["S"]
    xp = np.pad(x.astype(np.int64), ((0, 0), (0, 0), (p, p), (p, p)))
    win = np.lib.stride_tricks.sliding_window_view(xp, (r, sk), axis=(2, 3))[:, :, ::st, ::st][
        :, :, : s["ho"], : s["wo"]
    ]
    # BLAS in float64, exact: a sum of C*R*S int8 products stays far below 2^53; then int32 wrap-around
    acc64 = np.tensordot(win.astype(np.float64), w.astype(np.float64), axes=([1, 4, 5], [1, 2, 3]))
    acc = acc64.transpose(0, 3, 1, 2).astype(np.int64).astype(np.int32)
    y = acc.astype(np.int64) >> s["shift"]
    if s["clip"]:
        y = np.clip(y, 0 if s["relu"] else -128, 127)
    return y.astype(np.int8)  # the store's truncation to the low 8 bits


def make_instance(kb: KB, wl: Workload, params: dict, seed: int) -> DocInstance:
    s = conv_shape(wl)
    n, c, h, wd, k = s["N"], s["C"], s["H"], s["W"], s["K"]
    check_workload_bytes(wl.id, n * c * h * wd + k * c * s["R"] * s["S"] + n * k * s["ho"] * s["wo"])
    rng = np.random.default_rng(seed)
    x = rng.integers(-128, 128, (n, c, h, wd), dtype=np.int8)
    w = rng.integers(-128, 128, (k, c, s["R"], s["S"]), dtype=np.int8)
    out = reference(x, w, s)
    xp = x.reshape(n, c // 16, 16, h, wd).transpose(0, 1, 3, 4, 2)
    wp = w.reshape(k // 16, 16, c // 16, 16, s["R"], s["S"]).transpose(0, 2, 4, 5, 1, 3)
    op = out.reshape(n, k // 16, 16, s["ho"], s["wo"]).transpose(0, 1, 3, 4, 2)
    img, lay = pack_image({"uop": kb.params["uop_depth"] * 4, "inp": xp, "wgt": wp, "out": op.size}, align=256)
    ref = np.ascontiguousarray(op).view(np.uint8).ravel()
    return DocInstance(wl, params, seed, img, lay["out"], ref, lay)
