"""A network's answer: per distinct layer the search's result and its share of the network's
time, the totals with Candidate-0 kernels and with the searched ones, time at the target's
clock when the target states one, and the operators left unmapped; as JSON, text, and a
`report.md` with a plot of where the network's time goes before and after the search.

Totals count each layer's cycles times its multiplicity; the layers run one after another, and
unmapped operators add nothing (they are listed, not timed). A layer without a verified kernel
is left out of the totals, which then say they are incomplete and name it.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from zomboss.networks.layers import Distinct
from zomboss.results import speedup
from zomboss.results.report import PLOTS_SKIPPED, publish, save_figure


@dataclass(frozen=True)
class LayerResult:
    """One distinct layer's search result (a results-store payload, read once here)."""

    layer: Distinct
    verified: bool
    default_cycles: int | None
    cycles: int | None
    optimum_cycles: int | None = None
    gap: float | None = None
    simulations: int | None = None
    error: str | None = None

    @classmethod
    def of(cls, layer: Distinct, p: Mapping[str, Any], optimum: int | None = None) -> LayerResult:
        ok = bool(p.get("verified")) and "error" not in p
        opt = p.get("optimum_cycles") or optimum
        cycles = p.get("cycles")
        gap = p.get("gap")
        if gap is None and opt and cycles:
            gap = cycles / opt - 1
        return cls(layer, ok, p.get("default_cycles"), cycles, opt, gap, p.get("simulations"), p.get("error"))

    @property
    def speedup(self) -> float | None:
        return speedup(self.default_cycles, self.cycles) if self.verified else None


@dataclass(frozen=True)
class NetworkResult:
    """The answer of `zomboss compile`: what was compiled, how, and the results."""

    network: str
    target: str
    kind: str  # the results-store kind of the searches (e.g. solve:cost:32:0, exhaustive)
    layers: tuple[LayerResult, ...]
    unsupported: tuple[Mapping[str, Any], ...]
    notes: tuple[str, ...] = ()
    clock_hz: float | None = None
    wall_s: float = 0.0
    db: str = ""
    files: tuple[str, ...] = field(default_factory=tuple)

    @property
    def complete(self) -> bool:
        return all(r.verified for r in self.layers)

    @property
    def default_cycles(self) -> int:
        return sum((r.default_cycles or 0) * r.layer.multiplicity for r in self.layers if r.verified)

    @property
    def cycles(self) -> int:
        return sum((r.cycles or 0) * r.layer.multiplicity for r in self.layers if r.verified)

    @property
    def speedup(self) -> float | None:
        return speedup(self.default_cycles, self.cycles) if self.cycles else None

    def seconds(self, cycles: int) -> float | None:
        return cycles / self.clock_hz if self.clock_hz else None

    def layer_rows(self) -> list[dict[str, Any]]:
        total_default, total = self.default_cycles, self.cycles
        rows = []
        for r in self.layers:
            m = r.layer.multiplicity
            rows.append(
                {
                    "workload": r.layer.workload.id,
                    "op": r.layer.workload.op,
                    "kind": r.layer.kind,
                    "shape": dict(r.layer.workload.shape),
                    "multiplicity": m,
                    "nodes": list(r.layer.nodes),
                    "verified": r.verified,
                    "default_cycles": r.default_cycles,
                    "cycles": r.cycles,
                    "speedup": r.speedup,
                    "optimum_cycles": r.optimum_cycles,
                    "gap": r.gap,
                    "simulations": r.simulations,
                    "share_default": (r.default_cycles or 0) * m / total_default
                    if r.verified and total_default
                    else None,
                    "share": (r.cycles or 0) * m / total if r.verified and total else None,
                    "error": r.error,
                }
            )
        return rows

    def to_json(self) -> dict[str, Any]:
        return {
            "network": self.network,
            "target": self.target,
            "kind": self.kind,
            "complete": self.complete,
            "default_cycles": self.default_cycles,
            "cycles": self.cycles,
            "speedup": self.speedup,
            "clock_hz": self.clock_hz,
            "default_seconds": self.seconds(self.default_cycles),
            "seconds": self.seconds(self.cycles),
            "layers": self.layer_rows(),
            "distinct_layers": len(self.layers),
            "layer_instances": sum(r.layer.multiplicity for r in self.layers),
            "unsupported": [dict(u) for u in self.unsupported],
            "notes": list(self.notes),
            "missing": [r.layer.workload.id for r in self.layers if not r.verified],
            "wall_s": self.wall_s,
            "db": self.db,
            "files": list(self.files),
        }

    def summary(self) -> list[str]:
        """The network's totals in a few lines (the text output and the report say them alike)."""
        n = sum(r.layer.multiplicity for r in self.layers)
        lines = [
            f"{self.network} on {self.target} ({self.kind}): {len(self.layers)} distinct layers, {n} layer instances",
            f"Candidate-0 total: {self.default_cycles:,} cycles{self._at(self.default_cycles)}",
            f"searched total:    {self.cycles:,} cycles{self._at(self.cycles)}",
            f"network speedup:   {self.speedup:.3f}x over Candidate-0" if self.speedup else "network speedup:   -",
        ]
        if not self.clock_hz:
            lines.append(f"time: {self.target} states no clock frequency, so only cycles are given")
        if not self.complete:
            missing = [r.layer.workload.id for r in self.layers if not r.verified]
            lines.append(
                f"INCOMPLETE: {len(missing)} layer(s) without a verified kernel, left out of the totals: {', '.join(missing)}"
            )
        ops = sum(int(u["count"]) for u in self.unsupported)
        if ops:
            kinds = ", ".join(f"{u['op_type']} x{u['count']}" for u in self.unsupported)
            lines.append(f"not mapped ({ops} operators, not timed): {kinds}")
        return lines

    def _at(self, cycles: int) -> str:
        s = self.seconds(cycles)
        if s is None or not self.clock_hz:
            return ""
        at = "ms" if s >= 1e-3 else "us"
        return f" = {s * (1e3 if at == 'ms' else 1e6):,.3f} {at} at {self.clock_hz / 1e6:,.0f} MHz"

    def markdown(self, config: Mapping[str, Any], plot: str | None) -> str:
        out = [
            f"# {self.network} on {self.target}",
            "",
            f"Generated {time.strftime('%Y-%m-%d %H:%M')} by `zomboss compile`.",
            "",
        ]
        out += ["| setting | value |", "|---|---|"] + [f"| {k} | {v} |" for k, v in config.items()] + [""]
        out += ["## Network", ""] + [f"- {line}" for line in self.summary()] + [""]
        if plot:
            out += [f"![where the network's time goes]({plot})", ""]
        out += [
            "## Layers",
            "",
            "Cycles are per instance; the shares are of the network's total (cycles x multiplicity).",
            "",
        ]
        out += [
            "| layer | multiplicity | ONNX nodes | verified | Candidate-0 | best | speedup | optimum | gap | share before | share after |",
            "|---|---|---|---|---|---|---|---|---|---|---|",
        ]
        for r in self.layer_rows():
            nodes = ", ".join(r["nodes"][:4]) + (f", ... ({len(r['nodes'])})" if len(r["nodes"]) > 4 else "")
            out.append(
                f"| `{r['workload']}` | {r['multiplicity']} | {nodes} | {'yes' if r['verified'] else 'NO'} "
                f"| {_n(r['default_cycles'])} | {_n(r['cycles'])} | {_f(r['speedup'], '.3f')} | {_n(r['optimum_cycles'])} "
                f"| {_f(r['gap'], '.2%')} | {_f(r['share_default'], '.1%')} | {_f(r['share'], '.1%')} |"
            )
        out += ["", "## Operators not mapped", ""]
        if not self.unsupported:
            out.append("Every operator of the network is mapped.")
        else:
            out += ["| operator | count | why |", "|---|---|---|"]
            for u in self.unsupported:
                why = "; ".join(f"{r} ({c})" for r, c in u["reasons"].items())
                out.append(f"| {u['op_type']} | {u['count']} | {why} |")
        if self.notes:
            out += ["", "## Notes", ""] + [f"- {n}" for n in self.notes]
        errors = [r for r in self.layers if r.error]
        if errors:
            out += ["", "## Errors", ""] + [f"- `{r.layer.workload.id}`: {r.error}" for r in errors]
        return "\n".join(out) + "\n"

    def text(self) -> list[tuple[str, ...]]:
        """The per-layer table's cells for the terminal."""
        cells: list[tuple[str, ...]] = []
        for r in self.layer_rows():
            cells.append(
                (
                    r["workload"],
                    str(r["multiplicity"]),
                    "yes" if r["verified"] else ("ERROR" if r["error"] else "no"),
                    _n(r["default_cycles"]),
                    _n(r["cycles"]),
                    _f(r["speedup"], ".3f"),
                    _f(r["gap"], ".2%"),
                    _f(r["share"], ".1%"),
                )
            )
        return cells


TEXT_COLUMNS = ("layer", "x", "verified", "Candidate-0", "best", "speedup", "gap", "share")


def _label(row: Mapping[str, Any]) -> str:
    """A plot legend's name of a layer: its first ONNX node, its op and its multiplicity."""
    more = f" +{len(row['nodes']) - 1}" if len(row["nodes"]) > 1 else ""
    return f"{row['nodes'][0][:32]}{more}: {row['op']} x{row['multiplicity']}"


def _n(v: int | None) -> str:
    return "-" if v is None else f"{v:,}"


def _f(v: float | None, spec: str) -> str:
    return "-" if v is None else format(v, spec)


@dataclass(frozen=True)
class WrittenNetworkReport:
    """report.md and the plot files written; `note` says why the plot is missing, else empty."""

    files: tuple[Path, ...]
    note: str = ""


def write_report(result: NetworkResult, folder: Path, config: Mapping[str, Any]) -> WrittenNetworkReport:
    """`report.md` and `time.png`/`time.svg` in `folder`; without matplotlib the report alone,
    saying so (in it and on stderr)."""
    folder.mkdir(parents=True, exist_ok=True)
    try:
        pictures = _plot(result, folder) if result.layers and result.cycles else []
        note = ""
    except ImportError:
        pictures, note = [], PLOTS_SKIPPED
        print(f"zomboss: {note}", file=sys.stderr)
    text = result.markdown(config, pictures[0].name if pictures else None)
    if note:
        text += f"\n{note} (matplotlib is not installed).\n"
    path = publish(folder / "report.md", text.encode())
    return WrittenNetworkReport((path, *pictures), note)


def _plot(result: NetworkResult, folder: Path, top: int = 9) -> list[Path]:
    """Two stacked bars, Candidate-0 and searched: each layer's cycles x multiplicity, the
    largest `top` layers by Candidate-0 time named and the rest summed as `other`."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = [r for r in result.layer_rows() if r["verified"]]
    rows.sort(key=lambda r: -(r["default_cycles"] or 0) * r["multiplicity"])
    named, rest = rows[:top], rows[top:]
    parts = [(_label(r), r["default_cycles"] * r["multiplicity"], r["cycles"] * r["multiplicity"]) for r in named]
    if rest:
        parts.append(
            (
                f"other {len(rest)} layers",
                sum(r["default_cycles"] * r["multiplicity"] for r in rest),
                sum(r["cycles"] * r["multiplicity"] for r in rest),
            )
        )
    fig, ax = plt.subplots(figsize=(11, 3.2 + 0.15 * len(parts)))
    left = [0.0, 0.0]
    cmap = plt.get_cmap("tab10")
    for i, (label, before, after) in enumerate(parts):
        ax.barh([1, 0], [before, after], left=left, color=cmap(i % 10), label=label, edgecolor="white")
        left = [left[0] + before, left[1] + after]
    ax.set_yticks([1, 0], [f"Candidate-0\n{result.default_cycles:,}", f"searched\n{result.cycles:,}"])
    ax.set_xlabel("network cycles (layer cycles x multiplicity)")
    sp = f" ({result.speedup:.3f}x)" if result.speedup else ""
    ax.set_title(f"{result.network} on {result.target}: where the time goes{sp}")
    ax.legend(fontsize=7, loc="center left", bbox_to_anchor=(1.01, 0.5), title="layer (first node) x multiplicity")
    out = save_figure(fig, folder, "time")
    plt.close(fig)
    return out
