#!/usr/bin/env python3
"""Derive the DOSA FireSim rows the Gemmini timing model is fitted to and validated on.

Reads a local copy of `ucb-bar/dosa:data/firesim_test_data/dataset.csv` (fetch it yourself; this
script downloads nothing) and writes `scripts/data/dosa_firesim_f1.csv`: per dataset row only the
numbers the model needs, i.e. the layer, the tiling the FireSim binary ran and the two measured
cycle counts. Nothing else of the dataset is copied.

Decoding follows how the artifact turned a row into a test (`ucb-bar/gemmini-rocc-tests` branch
`dosa` 959b23f7, `gemmini-data-collection/layers/extract_data_csv.py` and
`templates/{matmul,conv}_tilings.c`):

* a row with Q = R = S = 1 is a matmul I x K -> J with I = P, K = C, J = K (BERT, the FC layer);
  every other row is a conv with stride `prob.Wstride`, padding R // 2 and input side P * stride;
* the tile (in elements) is the product of the factors at the accumulator level `L1[O]` (N, P,
  Q, K, R, S, C, with C multiplied by its spatial `CX` factor), the spatial K of `L2[WI]` and
  the P and Q factors of `L0[W]`;
* the loop permutation is the first letters of the DRAM level `L3[WIO]`, reversed, followed by
  the missing letters of "CRSKPQN" in that order (the first letter is the innermost loop);
* `target.gemmini_auto_cycle` is the library's tiled_*_auto, `target.gemmini_cycle` the
  explicit tiling (the matmul template turns element tiles into DIM tiles: x < 16 ? 1 : x >> 4).

The dataset holds the DOSA runs of three latency predictors (analytical, both, dnn) on four
networks, 74 rows each, in the order bert (5 matmuls), resnet50 (24), retinanet (22), unet (23);
the script labels rows by that position and checks the labels against the layer shapes.

    .venv/bin/python scripts/extract_dosa_rows.py PATH/TO/dataset.csv [--out scripts/data/dosa_firesim_f1.csv]
"""

from __future__ import annotations

import argparse
import csv
import hashlib
import sys
from pathlib import Path

SOURCE = "ucb-bar/dosa a7a3239382e14e825f6fe3bc5523c6070abf426c data/firesim_test_data/dataset.csv"
OUT = Path(__file__).with_name("data") / "dosa_firesim_f1.csv"
PREDICTORS = ("analytical", "both", "dnn")
NETWORKS = (("bert", 5), ("resnet50", 24), ("retinanet", 22), ("unet", 23))
FIELDS = [
    "row",
    "predictor",
    "network",
    "op",
    "C",
    "K",
    "P",
    "Q",
    "R",
    "S",
    "stride",
    "tile_N",
    "tile_P",
    "tile_Q",
    "tile_K",
    "tile_R",
    "tile_S",
    "tile_C",
    "perm",
    "auto_cycles",
    "tiled_cycles",
]


def _level(mapping: str, tag: str) -> list[str]:
    return mapping.split(tag + " ")[1].split(" - ")[0].split(" ")


def decode(mapping: str) -> tuple[dict[str, int], str]:
    """(tile in elements per dim N P Q K R S C, loop permutation) of a `mapping.mapping` string."""
    f: dict[str, int] = {}
    for w in _level(mapping, "L1[O]"):
        if w.endswith("X") or w.endswith("Y"):
            f[w[0] + "X"] = int(w[1:-1])
        else:
            f[w[0]] = int(w[1:])
    tile = {d: f.get(d, 1) for d in "NPQKRSC"}
    tile["C"] *= f.get("CX", 1)
    for w in _level(mapping, "L2[WI]"):
        if "K" in w and "X" in w:
            tile["K"] *= int(w[1:-1])
    for w in _level(mapping, "L0[W]"):
        if w[0] in "PQ":
            tile[w[0]] *= int(w[1:])
    perm = "".join(reversed([w[0] for w in _level(mapping, "L3[WIO]")]))
    perm += "".join(d for d in "CRSKPQN" if d not in perm)
    return tile, perm


def label(i: int) -> tuple[str, str]:
    block, off = divmod(i, sum(n for _, n in NETWORKS))
    for name, n in NETWORKS:
        if off < n:
            return PREDICTORS[block], name
        off -= n
    raise AssertionError(i)


def rows(path: Path) -> list[dict[str, object]]:
    data = list(csv.DictReader(path.open()))
    if len(data) != 3 * sum(n for _, n in NETWORKS):
        raise SystemExit(f"{path}: expected {3 * 74} rows, found {len(data)} (not the dataset this script reads)")
    out = []
    for i, r in enumerate(data):
        pred, net = label(i)
        dims = {d: int(r[f"prob.{d}"]) for d in "CKPQRS"}
        stride = int(r["prob.Wstride"])
        if int(r["prob.N"]) != 1 or stride != int(r["prob.Hstride"]) or r["prob.Wdilation"] != "1":
            raise SystemExit(f"row {i}: batch, stride or dilation outside what the templates run")
        op = "matmul" if dims["Q"] == dims["R"] == dims["S"] == 1 else "conv"
        if (op == "matmul") != (net == "bert" or dims["P"] == 1):
            raise SystemExit(f"row {i}: a {op} labelled {net} (the dataset's row order changed?)")
        tile, perm = decode(r["mapping.mapping"])
        out.append(
            {
                "row": i,
                "predictor": pred,
                "network": net,
                "op": op,
                **dims,
                "stride": stride,
                **{f"tile_{d}": tile[d] for d in "NPQKRSC"},
                "perm": perm,
                "auto_cycles": round(float(r["target.gemmini_auto_cycle"])),
                "tiled_cycles": round(float(r["target.gemmini_cycle"])),
            }
        )
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("dataset", type=Path, help="a local copy of data/firesim_test_data/dataset.csv")
    ap.add_argument("--out", type=Path, default=OUT)
    args = ap.parse_args(argv)
    digest = hashlib.sha256(args.dataset.read_bytes()).hexdigest()
    table = rows(args.dataset)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    with args.out.open("w", newline="") as f:
        f.write(f"# Derived by scripts/extract_dosa_rows.py from {SOURCE} (sha256 {digest}).\n")
        f.write("# Per row: the layer, the decoded tiling (elements) and loop permutation, FireSim cycles of\n")
        f.write("# the library default (auto_cycles) and of the explicit tiling (tiled_cycles).\n")
        w = csv.DictWriter(f, fieldnames=FIELDS, lineterminator="\n")
        w.writeheader()
        w.writerows(table)
    print(f"{len(table)} rows -> {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
