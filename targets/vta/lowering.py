"""The VTA lowering template: a mapping -> the instruction stream and its micro-op kernels.

TVM's conv2d_packed schedule (reference §5.3): one accumulator tile per (image, row tile,
channel tile, column tile); the reduction runs over input-channel steps of `tile_ci` blocks,
each one weight load + `tile_ci` padded input loads and one GEMM; then the requantisation
ALU ops and one STORE per output channel block. Virtual threads own disjoint SRAM halves and
their phases interleave, so one thread's loads overlap the other's compute; the dependency
tokens follow TVM's runtime pattern (pops before, pushes after; NOPs drain what is left).
Dense layers run as 1 x M images.
"""

from __future__ import annotations

from zomboss.errors import WorkloadError
from zomboss.knowledge import KB
from zomboss.mapping import KnobMapping, space
from zomboss.program import Instr, Program
from zomboss.target import DocInstance
from zomboss.workload import Workload

from .suite import TOPHUB, TOPHUB_ID, conv_shape

POP_PREV, POP_NEXT, PUSH_PREV, PUSH_NEXT = 1, 2, 4, 8
ALU_MIN, ALU_MAX, ALU_SHR = 0, 1, 3


def tiles(m: KnobMapping, wl: Workload) -> dict[str, int]:
    """The conv2d knobs of any mapping (dense: one row, tile_b pixels, no row threads)."""
    if m.op == "dense":
        return {"h": 1, "w": m.int("tile_b"), "ci": m.int("tile_ci"), "co": m.int("tile_co"),
                "oc_t": m.int("oc_nthread"), "h_t": 1}  # fmt: skip
    return {"h": m.int("tile_h"), "w": m.int("tile_w"), "ci": m.int("tile_ci"), "co": m.int("tile_co"),
            "oc_t": m.int("oc_nthread"), "h_t": m.int("h_nthread")}  # fmt: skip


class _Stream:
    """Instructions plus the tokens each virtual thread owes (its last push not yet popped)."""

    def __init__(self) -> None:
        self.out: list[Instr] = []
        self.owes: dict[tuple[str, int], bool] = {}

    def emit(self, op: str, *args: int) -> None:
        self.out.append(Instr(op, tuple(args)))

    def take(self, queue: str, t: int, flag: int) -> int:
        """`flag` when thread t owes a token on `queue` (and it is now taken), else 0."""
        owed = self.owes.pop((queue, t), False)
        return flag if owed else 0


def lower(kb: KB, inst: DocInstance, m: KnobMapping) -> Program:
    p = kb.params
    s, k = conv_shape(inst.workload), tiles(m, inst.workload)
    acc_bits, src_bits = p["acc_bits"], p["src_bits"]
    kb_, R, S, st = s["K"] // 16, s["R"], s["S"], s["stride"]
    in_h, in_w = (k["h"] - 1) * st + R, (k["w"] - 1) * st + S
    threads = k["oc_t"] * k["h_t"]
    inp_t, wgt_t, acc_t = k["ci"] * in_h * in_w, k["co"] * k["ci"] * R * S, k["co"] * k["h"] * k["w"]
    lay = inst.layout
    uops: list[int] = []

    def kernel(words: list[tuple[int, int, int]]) -> tuple[int, int]:
        bgn = len(uops)
        uops.extend(d | (x << acc_bits) | (w << (acc_bits + src_bits)) for d, x, w in words)
        return bgn, len(uops)

    kern = []
    for t in range(threads):
        ib, wb, ab = t * inp_t, t * wgt_t, t * acc_t
        reset = kernel([(ab + w, 0, 0) for w in range(k["w"])])
        gemm = kernel([(ab + w, ib + ci * in_h * in_w + r * in_w + c + w * st, wb + ci * R * S + r * S + c)
                       for ci in range(k["ci"]) for r in range(R) for c in range(S) for w in range(k["w"])])  # fmt: skip
        alu = kernel([(ab + w, ab + w, 0) for w in range(k["w"])])
        kern.append((ib, wb, ab, reset, gemm, alu))
    dfo = k["h"] * k["w"] if k["co"] > 1 else 0
    dfi = k["w"] if k["h"] > 1 else 0
    sfi = st * in_w if k["h"] > 1 else 0
    wfo = k["ci"] * R * S if k["co"] > 1 else 0
    out = _Stream()
    out.emit("LOAD_UOP", 0, 0, lay["uop"] // 4, 1, len(uops), len(uops), 0, 0, 0, 0)
    epilogue = [(ALU_SHR, s["shift"])]
    if s["clip"]:
        epilogue += [(ALU_MAX, 0 if s["relu"] else -128), (ALU_MIN, 127)]
    hb, wb_n, cob = s["ho"] // k["h"], s["wo"] // k["w"], kb_ // k["co"]
    for n in range(s["N"]):
        for h1 in range(hb // k["h_t"]):
            for c1 in range(cob // k["oc_t"]):
                for w0 in range(wb_n):
                    group = [(tc * k["h_t"] + th, h1 * k["h_t"] + th, c1 * k["oc_t"] + tc)
                             for tc in range(k["oc_t"]) for th in range(k["h_t"])]  # fmt: skip
                    _tile_group(out, p, s, k, lay, kern, group, n, w0, in_h, in_w, (dfo, dfi, sfi, wfo), epilogue)
    for t in range(threads):  # drain: a load NOP takes each thread's last g2l, a compute NOP its last s2g
        if out.take("g2l", t, POP_NEXT):
            out.emit("LOAD_INP", POP_NEXT, 0, 0, 0, 0, 0, 0, 0, 0, 0)
        if out.take("s2g", t, POP_NEXT):
            out.emit("LOAD_UOP", POP_NEXT, 0, 0, 0, 0, 0, 0, 0, 0, 0)
    out.emit("FINISH", 0)
    data = b"".join(u.to_bytes(4, "little") for u in uops)
    return Program("vta", tuple(out.out), {"dram": [(lay["uop"], data)], "uops": len(uops)})


def _tile_group(out, p, s, k, lay, kern, group, n, w0, in_h, in_w, factors, epilogue) -> None:
    """One accumulator tile per member thread, their phases interleaved."""
    dfo, dfi, sfi, wfo = factors
    cb, R, S, st = s["C"] // 16, s["R"], s["S"], s["stride"]
    for t, _h0, _c0 in group:
        ib, wb, ab, reset, gemm, alu = kern[t]
        out.emit("GEMM", out.take("s2g", t, POP_NEXT), 1, *reset, k["co"], k["h"], dfo, dfi, 0, 0, 0, 0)
    for step in range(cb // k["ci"]):
        for t, h0, c0 in group:
            ib, wb, ab, reset, gemm, alu = kern[t]
            kw = k["ci"] * R * S
            wdram = lay["wgt"] // 256 + ((c0 * k["co"] * cb + step * k["ci"]) * R) * S
            out.emit("LOAD_WGT", out.take("g2l", t, POP_NEXT), wb, wdram, k["co"], kw, cb * R * S, 0, 0, 0, 0)
            ih, iw = h0 * k["h"] * st - s["pad"], w0 * k["w"] * st - s["pad"]
            yp0, xp0 = max(0, -ih), max(0, -iw)
            yp1, xp1 = max(0, ih + in_h - s["H"]), max(0, iw + in_w - s["W"])
            for ci in range(k["ci"]):
                cblk = step * k["ci"] + ci
                d = lay["inp"] // 16 + ((n * cb + cblk) * s["H"] + ih + yp0) * s["W"] + iw + xp0
                flag = PUSH_NEXT if ci == k["ci"] - 1 else 0
                out.emit("LOAD_INP", flag, ib + ci * in_h * in_w, d, in_h - yp0 - yp1, in_w - xp0 - xp1, s["W"],
                         yp0, yp1, xp0, xp1)  # fmt: skip
        for t, _h0, _c0 in group:
            ib, wb, ab, reset, gemm, alu = kern[t]
            out.emit("GEMM", POP_PREV | PUSH_PREV, 0, *gemm, k["co"], k["h"], dfo, dfi, 0, sfi, wfo, 0)
            out.owes[("g2l", t)] = True
    for t, _h0, _c0 in group:
        ib, wb, ab, reset, gemm, alu = kern[t]
        for i, (opc, imm) in enumerate(epilogue):
            flag = PUSH_NEXT if i == len(epilogue) - 1 else 0
            out.emit("ALU", flag, 0, *alu, k["co"], k["h"], dfo, dfi, 0, 0, opc, 1, imm)
    for t, h0, c0 in group:
        ib, wb, ab, reset, gemm, alu = kern[t]
        for co in range(k["co"]):
            ko = c0 * k["co"] + co
            d = lay["out"] // 16 + ((n * s["K"] // 16 + ko) * s["ho"] + h0 * k["h"]) * s["wo"] + w0 * k["w"]
            flag = (POP_PREV if co == 0 else 0) | (PUSH_PREV if co == k["co"] - 1 else 0)
            out.emit("STORE", flag, ab + co * k["h"] * k["w"], d, k["h"], k["w"], s["wo"], 0, 0, 0, 0)
        out.owes[("s2g", t)] = True


def library(kb: KB, wl: Workload) -> KnobMapping:
    """Candidate-0: the schedule TVM compiles the layer with — its TopHub entry (ResNet-18
    C2-C11), else the largest legal single-thread tile (AutoTVM's fallback, whose inner
    factors of 1 break the micro-op hazard rule, is not usable as is)."""
    sp = space(kb, wl.op)
    s = conv_shape(wl)

    def mapping(source: str, h: int, w: int, ci: int, co: int, oc_t: int = 1, h_t: int = 1) -> KnobMapping:
        """The op's knobs from conv2d tile factors (the inverse of `tiles`; dense: tile_b = w)."""
        vals = {"tile_b": w if wl.op == "dense" else 1, "tile_h": h, "tile_w": w, "tile_ci": ci, "tile_co": co,
                "oc_nthread": oc_t, "h_nthread": h_t}  # fmt: skip
        return sp.mapping({x.name: vals[x.name] for x in sp.knobs}, wl.shape, source)

    if wl.id in TOPHUB_ID:
        return mapping("tophub", *TOPHUB[TOPHUB_ID[wl.id]][:6])
    best = None
    divs = lambda n: [d for d in range(1, n + 1) if n % d == 0]  # noqa: E731
    for h in divs(s["ho"]) if wl.op == "conv2d" else [1]:
        for w in divs(s["wo"]):
            for co in divs(s["K"] // 16):
                m = mapping("fallback", h, w, 1, co)
                if not sp.violations(kb, m, wl.shape) and (best is None or h * w * co > best[0]):
                    best = (h * w * co, m)
    if best is None:
        raise WorkloadError(f"{wl.id}: no legal VTA tiling (see `zomboss space vta {wl.id}`)")
    return best[1]
