"""The bench report: `report.md` and two plots (speedup per instance; cycles against the bound),
each as PNG and SVG, from the results rows of one bench configuration, in a folder of its own
per run (`run_folder`, with a `latest` pointer beside it). matplotlib is optional (the
`zomboss[plot]` extra): without it the report is written without plots and says so.

Speedups are over Candidate-0 and summarised as geometric means per target and per op family,
next to published figures measured against other baselines on other platforms (said so in
the report). Every instance the search wins by more than 10% gets its cycle breakdown, default
against winner, so a reader can see where the cycles went; the optimum (from exhaustive rows
of the same configuration, when there are any) and the tightest sound bound over the legal
space say how much was left.
"""

from __future__ import annotations

import contextlib
import datetime
import io
import math
import os
import stat
import statistics
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from zomboss.results.records import speedup
from zomboss.util import OutputError, atomic_write, check_output
from zomboss.util.files import write_error
from zomboss.util.version import commit, version

PLOTS_SKIPPED = "plots skipped: install zomboss[plot]"  # said on stderr and in the report

# Published geometric-mean speedups (the papers cited in each row), for context only.
PUBLISHED = {
    "gemmini": [
        ("Zomboss paper (arXiv 2608.00894)", "3.34x", "over an ACT-generated backend tuned for instruction count"),
        ("Autocomp (arXiv 2505.18574)", "5.6x GEMM / 2.7x conv", "over the Gemmini library on FireSim"),
    ],
    "plena": [
        ("Zomboss paper (arXiv 2608.00894)", "1.10x", "over the PLENA compiler templates"),
    ],
}

# What a reader of one target's numbers needs to know about its Candidate-0; a report states
# only the remarks of the targets it covers.
REMARKS = {
    "gemmini": [
        "Our Gemmini Candidate-0 is the vendor library (`tiled_matmul_auto` / `tiled_conv_auto` with the",
        "loop_ws / loop_conv_ws FSMs), not an instruction-count-tuned generated backend, and it already runs",
        "close to the roofline in the model: `headroom` (Candidate-0 over the tighter of the target's roofline",
        "and the doc's sound bound minimised over the whole legal space; both hold for every legal mapping) is",
        "the most any legal mapping could gain, and its geometric mean the most any search could reach.",
    ],
}


def geomean(xs: Sequence[float]) -> float | None:
    xs = [x for x in xs if x and x > 0]
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else None


def _row(
    target: str, wid: str, op: str, p: Mapping[str, Any], optimum: int | None, proven: int | None = None
) -> dict[str, Any]:
    ok = bool(p.get("verified")) and "error" not in p
    best, default = p.get("cycles"), p.get("default_cycles") or p.get("cycles")
    bound, space_bound = p.get("bound_cycles"), p.get("space_bound_cycles")
    return {
        "target": target,
        "workload": wid,
        "op": op,
        "verified": ok,
        "default": default,
        "best": best,
        "speedup": speedup(default, best) if ok else None,
        "optimum": optimum,
        "pct_optimum": (optimum / best) if optimum and best else None,
        # the lowest cycles any legal mapping can reach, proven by an exhaustive run of this
        # instance (its optimum when it finished, else the bound of what it left unexplored)
        "proven_bound": proven,
        "bound": bound,
        "pct_bound": (bound / best) if bound and best else None,
        "space_bound": space_bound,
        # the most any legal mapping could gain: Candidate-0 over the tighter of the two sound
        # bounds (the target's roofline, and the doc's bound minimised over the legal space)
        "headroom": (default / max(b for b in (bound, space_bound) if b))
        if default and (bound or space_bound)
        else None,
        "simulations": p.get("simulations"),
        # an exhaustive run's proof state (None for other runs): whether it finished, the
        # lowest bound of what it left unexplored and the incumbent's gap over it
        "complete": p.get("complete"),
        "lower_bound": p.get("lower_bound_cycles"),
        "gap": p.get("gap"),
        "legal_mappings": p.get("legal_mappings"),
        "pruned": p.get("pruned"),
        "time_limit_s": p.get("time_limit_s"),
        "wall_s": p.get("wall_s"),
        "candidate": p.get("candidate", "-"),
        "breakdown_default": p.get("breakdown_default") or p.get("breakdown") or {},
        "breakdown": p.get("breakdown") or {},
        "error": p.get("error"),
        "fell_back": bool(p.get("guide_note")),
        "references": dict(p.get("references") or {}),
    }


def rows_of(
    results: Mapping[tuple[str, str], Mapping[str, Any]],
    ops: Mapping[tuple[str, str], str],
    optima: Mapping[tuple[str, str], int] | None = None,
    proven: Mapping[tuple[str, str], int] | None = None,
) -> list[dict[str, Any]]:
    """Report rows of bench payloads; `optima` and `proven` (lower bounds) come from the
    store's exhaustive runs of the same instances."""
    optima, proven = optima or {}, proven or {}
    return [_row(t, w, ops[(t, w)], p, optima.get((t, w)), proven.get((t, w))) for (t, w), p in results.items()]


def _fmt(v: Any, spec: str = "") -> str:
    if v is None:
        return "-"
    if isinstance(v, float):
        return format(v, spec or ".2f")
    return str(v)


def markdown(rows: Sequence[Mapping[str, Any]], title: str, config: Mapping[str, Any]) -> str:
    out = [f"# {title}", "", f"Generated {time.strftime('%Y-%m-%d %H:%M')} by `zomboss bench`.", ""]
    setting = {"zomboss version": version(), "commit": commit() or "unknown (not a git checkout)", **config}
    out += ["| setting | value |", "|---|---|"] + [f"| {k} | {v} |" for k, v in setting.items()] + [""]
    out += [
        "## Summary",
        "",
        "Speedup is Candidate-0's cycles over the verified winner's, under the same timing model;",
        "geometric means over verified instances.",
        "",
        "| target | instances | verified | geomean speedup | per op family | geomean headroom | median simulations |",
        "|---|---:|---:|---:|---|---:|---:|",
    ]
    for target in dict.fromkeys(r["target"] for r in rows):
        sub = [r for r in rows if r["target"] == target]
        fams = []
        for op in dict.fromkeys(r["op"] for r in sub):
            g = geomean([r["speedup"] for r in sub if r["op"] == op])
            fams.append(f"{op} {_fmt(g)}x")
        g = geomean([r["speedup"] for r in sub])
        h = geomean([r["headroom"] for r in sub])
        sims = [r["simulations"] for r in sub if isinstance(r["simulations"], int)]
        med = f"{statistics.median(sims):g}" if sims else "-"
        out.append(
            f"| {target} | {len(sub)} | {sum(r['verified'] for r in sub)} | {_fmt(g)}x | {', '.join(fams)} "
            f"| {_fmt(h)}x | {med} |"
        )
    targets = list(dict.fromkeys(r["target"] for r in rows))
    published = [(t, *p) for t in targets for p in PUBLISHED.get(t, [])]
    if published:
        out += ["", "Published figures, for context only — measured against other baselines on other platforms:", ""]
        out += [f"- {target}: {who}: {fig} ({against})" for target, who, fig, against in published]
    for target in targets:
        if target in REMARKS:
            out += ["", *REMARKS[target]]
    out += [
        "",
        "## Per instance",
        "",
        "| target | workload | verified | default | best | speedup | optimum | best/optimum | bound | bound/best "
        "| headroom | simulations | wall s | winner |",
        "|---|---|:-:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    for r in rows:
        out.append(
            f"| {r['target']} | {r['workload']} | {'yes' if r['verified'] else 'NO'} | {_fmt(r['default'])} "
            f"| {_fmt(r['best'])} | {_fmt(r['speedup'], '.3f')} | {_fmt(r['optimum'])} | {_fmt(r['pct_optimum'], '.1%')} "
            f"| {_fmt(r['bound'])} | {_fmt(r['pct_bound'], '.1%')} | {_fmt(r['headroom'], '.2f')} "
            f"| {_fmt(r['simulations'])} | {_fmt(r['wall_s'], '.1f')} | {r['candidate']} |"
        )
    out += proofs_markdown(rows)
    wins = [r for r in rows if r["speedup"] and r["speedup"] > 1.10]
    out += ["", "## Where the cycles went (wins above 10%)", ""]
    if not wins:
        out.append("No instance improved by more than 10%.")
    else:
        out += ["| instance | speedup | compute | memory | stall | overhead |", "|---|---:|---|---|---|---|"]
        for r in wins:
            a, b = r["breakdown_default"], r["breakdown"]
            cells = [f"{_fmt(a.get(k))} → {_fmt(b.get(k))}" for k in ("compute", "memory", "stall", "overhead")]
            out.append(f"| {r['target']}:{r['workload']} | {r['speedup']:.2f} | " + " | ".join(cells) + " |")
    out += references_markdown(rows)
    errors = [r for r in rows if r["error"]]
    if errors:
        out += ["", "## Errors", ""] + [f"- {r['target']}:{r['workload']}: {r['error']}" for r in errors]
    return "\n".join(out) + "\n"


def proofs_markdown(rows: Sequence[Mapping[str, Any]]) -> list[str]:
    """An exhaustive run's proof state per instance; for any other run, how far its kernel is
    from what an exhaustive run proved (the optimum, or a lower bound of it)."""
    out: list[str] = []
    proofs = [r for r in rows if r.get("complete") is not None]
    if proofs:
        out += [
            "",
            "## Proofs",
            "",
            "`optimum` only where the run finished (every legal mapping simulated or proven unable to win);",
            "otherwise `lower bound` is the lowest sound bound of what it left unexplored and `gap` the",
            "incumbent's distance above it.",
            "",
            "| target | workload | complete | best | optimum | lower bound | gap | legal mappings | simulated "
            "| pruned | time limit s | wall s |",
            "|---|---|:-:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
        ]
        for r in proofs:
            gap = r["gap"]
            out.append(
                f"| {r['target']} | {r['workload']} | {'yes' if r['complete'] else 'no'} | {_fmt(r['best'])} "
                f"| {_fmt(r['best'] if r['complete'] else None)} | {_fmt(r['lower_bound'])} "
                f"| {_fmt(float(gap) if gap is not None else None, '.2%')} | {_fmt(r['legal_mappings'])} "
                f"| {_fmt(r['simulations'])} | {_fmt(r['pruned'])} | {_fmt(r['time_limit_s'], '.0f')} "
                f"| {_fmt(r['wall_s'], '.1f')} |"
            )
    held = [r for r in rows if r.get("complete") is None and r.get("proven_bound") and r.get("best")]
    if held:
        out += [
            "",
            "## Distance to the proven optimum or bound",
            "",
            "Each kernel's cycles over the lowest cycles an exhaustive run of the instance proved reachable",
            "(its optimum when it finished, else its lower bound: then the distance is at most this).",
            "",
            "| target | workload | best | proven optimum | proven lower bound | distance |",
            "|---|---|---:|---:|---:|---:|",
        ]
        for r in held:
            out.append(
                f"| {r['target']} | {r['workload']} | {_fmt(r['best'])} | {_fmt(r['optimum'])} "
                f"| {_fmt(r['proven_bound'])} | {r['best'] / r['proven_bound'] - 1:.2%} |"
            )
    return out


def read_table(text: str, head: str = "| target | workload |") -> list[dict[str, str]]:
    """The rows of a report's first table whose header line starts with `head`, as column ->
    cell (what `markdown` writes; scripts read the committed reports back with it)."""
    lines = text.splitlines()
    at = next((i for i, line in enumerate(lines) if line.startswith(head)), None)
    if at is None:
        raise ValueError(f"no per-instance table (a line starting {head!r})")
    cols = [c.strip() for c in lines[at].strip("|").split("|")]
    rows = []
    for line in lines[at + 2 :]:
        if not line.startswith("|"):
            break
        rows.append(dict(zip(cols, (c.strip() for c in line.strip("|").split("|")), strict=True)))
    return rows


def read_best(text: str) -> dict[tuple[str, str], int]:
    """The `best` column of a report's per-instance table, by (target, workload): the reference
    a later search is held to."""
    return {(r["target"], r["workload"]): int(r["best"]) for r in read_table(text) if r.get("best", "-") != "-"}


def references_markdown(rows: Sequence[Mapping[str, Any]]) -> list[str]:
    """The winner against each other reference mapping the search simulated (Gemmini's Exo-style
    schedule): a searched kernel slower than a known schedule would be a search bug."""
    names = list(dict.fromkeys(n for r in rows for n in r["references"]))
    if not names:
        return []
    out = ["", "## Against the other reference mappings", ""]
    for name in names:
        sub = [r for r in rows if name in r["references"] and r["verified"] and r["best"]]
        for target, op in dict.fromkeys((r["target"], r["op"]) for r in sub):
            fam = [r for r in sub if (r["target"], r["op"]) == (target, op)]
            ok = sum(r["best"] <= r["references"][name] for r in fam)
            g = geomean([r["references"][name] / r["best"] for r in fam])
            out.append(
                f"- `{name}`, {target} {op}: the winner is at least as fast on {ok}/{len(fam)} instances "
                f"(geomean {_fmt(g)}x faster)"
            )
    out += ["", "| target | workload | " + " | ".join(names) + " | best |", "|---|---|" + "---:|" * (len(names) + 1)]
    for r in rows:
        if r["references"]:
            cells = [_fmt(r["references"].get(n)) for n in names]
            out.append(f"| {r['target']} | {r['workload']} | " + " | ".join(cells) + f" | {_fmt(r['best'])} |")
    return out


def plots(rows: Sequence[Mapping[str, Any]], folder: Path) -> list[Path]:
    """`speedup` and `bound`, each as PNG and SVG, in `folder`: bars per instance with their
    values, the x axis labelled, and the geometric mean drawn as a line. Raises ImportError
    without matplotlib (`write_report` says then to install zomboss[plot])."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    targets = list(dict.fromkeys(r["target"] for r in rows))
    paths: list[Path] = []
    fig, axes = plt.subplots(len(targets), 1, figsize=(12, 3.6 * len(targets)), squeeze=False)
    for ax, target in zip(axes[:, 0], targets, strict=True):
        sub = [r for r in rows if r["target"] == target]
        bars = ax.bar(
            range(len(sub)),
            [r["speedup"] or 0 for r in sub],
            color=["tab:green" if r["verified"] else "tab:red" for r in sub],
        )
        ax.bar_label(bars, labels=[f"{r['speedup']:.2f}" if r["speedup"] else "" for r in sub], fontsize=6)
        ax.axhline(1.0, color="k", lw=0.8)
        ax.set_ylim(0, max([1.0, *(r["speedup"] or 0 for r in sub)]) * 1.15)
        g = geomean([r["speedup"] for r in sub])
        if g is not None:
            ax.axhline(g, color="tab:blue", lw=1.0, ls="--", label=f"geometric mean {g:.2f}x")
            ax.legend(fontsize=7, loc="lower right")
        ax.set_xticks(range(len(sub)), [r["workload"] for r in sub], rotation=60, ha="right", fontsize=7)
        ax.set_xlabel("suite instance")
        ax.set_ylabel("speedup over Candidate-0")
        ax.set_title(f"{target}: verified winner vs Candidate-0 (red: not verified)")
    paths += save_figure(fig, folder, "speedup")
    plt.close(fig)
    fig, axes = plt.subplots(len(targets), 1, figsize=(12, 3.6 * len(targets)), squeeze=False)
    for ax, target in zip(axes[:, 0], targets, strict=True):
        sub = [r for r in rows if r["target"] == target]
        xs = range(len(sub))
        for dx, what, key in ((-0.2, "bound / default", "default"), (0.2, "bound / best", "best")):
            vals = [(r["bound"] or 0) / (r[key] or 1) for r in sub]
            bars = ax.bar([x + dx for x in xs], vals, width=0.4, label=what)
            ax.bar_label(bars, labels=[f"{v:.2f}" if v else "" for v in vals], fontsize=5)
        ax.set_xticks(list(xs), [r["workload"] for r in sub], rotation=60, ha="right", fontsize=7)
        ax.set_ylim(0, 1.12)
        ax.set_xlabel("suite instance")
        ax.set_ylabel("roofline bound / cycles")
        ax.legend(fontsize=7)
        ax.set_title(f"{target}: cycles against the roofline bound (1.0: at the bound)")
    paths += save_figure(fig, folder, "bound")
    plt.close(fig)
    return paths


def save_figure(fig: Any, folder: Path, name: str) -> list[Path]:
    """`name.png` and `name.svg`, each written like report.md (`publish`)."""
    fig.tight_layout()
    out = []
    for fmt in ("png", "svg"):
        buf = io.BytesIO()
        fig.savefig(buf, format=fmt, dpi=110)
        out.append(publish(folder / f"{name}.{fmt}", buf.getvalue()))
    return out


def publish(path: Path, data: bytes) -> Path:
    """Write a report file (`atomic_write`: refused unless a regular file or a new path,
    atomic, with the mode `open` would give under the umask)."""
    return atomic_write(path, data)


# ---- Zomboss (LLM guide) against direct generation (`bench --guide llm --compare-direct`)

# The Zomboss paper's figures (arXiv 2608.00894), for context only.
PUBLISHED_DIRECT = (
    "the Zomboss paper: 56/56 verified against 26/56 for direct generation; -71.2% tokens on Gemmini, -54.2% on PLENA"
)


def compare_rows(
    zomboss: Mapping[tuple[str, str], Mapping[str, Any]], direct: Mapping[tuple[str, str], Mapping[str, Any]]
) -> list[dict[str, Any]]:
    """Per instance: tokens and verified kernel of the LLM-guided search and of direct generation."""
    out = []
    for key in dict.fromkeys([*zomboss, *direct]):
        z, d = zomboss.get(key, {}), direct.get(key, {})
        zt, dt = z.get("tokens"), d.get("tokens")
        out.append(
            {
                "target": key[0],
                "workload": key[1],
                "zomboss_tokens": zt,
                "zomboss_verified": bool(z.get("verified")) and "error" not in z,
                "zomboss_fell_back": bool(z.get("guide_note")),
                "direct_tokens": dt,
                "direct_verified": bool(d.get("verified")) and "error" not in d,
                "direct_reason": d.get("reason") or d.get("error"),
                "reduction": (1 - zt / dt) if isinstance(zt, int) and isinstance(dt, int) and dt > 0 else None,
            }
        )
    return out


def _per_target(rows: Sequence[Mapping[str, Any]]) -> list[tuple[str, int, int, int, int, int, float | None]]:
    """(target, instances, zomboss verified, direct verified, zomboss tokens, direct tokens, reduction)."""
    out = []
    for target in dict.fromkeys(r["target"] for r in rows):
        sub = [r for r in rows if r["target"] == target]
        zt = sum(r["zomboss_tokens"] or 0 for r in sub)
        dt = sum(r["direct_tokens"] or 0 for r in sub)
        out.append(
            (
                target,
                len(sub),
                sum(r["zomboss_verified"] for r in sub),
                sum(r["direct_verified"] for r in sub),
                zt,
                dt,
                (1 - zt / dt) if dt else None,
            )
        )
    return out


def compare_summary(rows: Sequence[Mapping[str, Any]]) -> list[str]:
    return [
        f"{t}: verified kernels zomboss {zv}/{n}, direct {dv}/{n}; tokens zomboss {zt:,}, direct {dt:,}"
        + (f"; reduction {red:.1%}" if red is not None else "")
        for t, n, zv, dv, zt, dt, red in _per_target(rows)
    ]


def compare_markdown(rows: Sequence[Mapping[str, Any]]) -> str:
    out = [
        "## Zomboss (LLM guide) against direct generation",
        "",
        "Tokens are the endpoint's own usage counts (prompt + completion), summed over every call of the run;",
        "a direct-generation kernel counts as verified only after the same checks and NumPy verification as",
        f"Zomboss's, on inputs it never saw. Published, for context: {PUBLISHED_DIRECT}.",
        "",
        "| target | instances | verified (zomboss) | verified (direct) | tokens (zomboss) | tokens (direct) | reduction |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for t, n, zv, dv, zt, dt, red in _per_target(rows):
        out.append(f"| {t} | {n} | {zv} | {dv} | {zt:,} | {dt:,} | {_fmt(red, '.1%')} |")
    out += [
        "",
        "| target | workload | zomboss tokens | verified | guide fell back | direct tokens | verified | direct: reason | reduction |",
        "|---|---|---:|:-:|:-:|---:|:-:|---|---:|",
    ]
    for r in rows:
        out.append(
            f"| {r['target']} | {r['workload']} | {_fmt(r['zomboss_tokens'])} | {'yes' if r['zomboss_verified'] else 'NO'} "
            f"| {'yes' if r['zomboss_fell_back'] else 'no'} | {_fmt(r['direct_tokens'])} "
            f"| {'yes' if r['direct_verified'] else 'no'} | {_fmt(r['direct_reason'])} | {_fmt(r['reduction'], '.1%')} |"
        )
    return "\n".join(out) + "\n"


@dataclass(frozen=True)
class WrittenReport:
    """What `write_report` wrote: report.md, and every file including the plots; `note` says
    why plots are missing (matplotlib not installed), else empty."""

    path: Path
    files: tuple[Path, ...]
    note: str = ""


def write_report(
    rows: Sequence[Mapping[str, Any]],
    folder: Path,
    title: str,
    config: Mapping[str, Any],
    direct: Sequence[Mapping[str, Any]] | None = None,
) -> WrittenReport:
    """report.md and the plots in `folder`; without matplotlib, report.md alone, saying so (in
    the report and on stderr)."""
    if (folder.exists() or folder.is_symlink()) and not folder.is_dir():
        raise OutputError(f"{folder}: not a folder; give the folder to write the report and plots into")
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise write_error(folder, e) from None
    path = folder / "report.md"
    text = markdown(rows, title, config) + ("\n" + compare_markdown(direct) if direct is not None else "")
    try:
        pictures = plots(rows, folder) if rows else []
        note = ""
    except ImportError:
        pictures, note = [], PLOTS_SKIPPED
        print(f"zomboss: {note}", file=sys.stderr)
        text += f"\n{note} (matplotlib is not installed).\n"
    publish(path, text.encode())
    return WrittenReport(path, (path, *pictures), note)


def run_folder(base: Path, kind: str, suite: str, subset: bool, when: datetime.datetime | None = None) -> Path:
    """A new folder under `base` for one bench's report, named after the run: UTC time, kind
    and suite (`20261207T011500Z_solve-cost-32-0_gemmini_subset`), so runs never overwrite
    each other and sort by time. A second run in the same second gets `-2`, `-3`, ..."""
    when = when or datetime.datetime.now(datetime.UTC)
    safe = "".join(c if c.isalnum() or c in "-_." else "-" for c in f"{kind}_{suite}")
    name = f"{when:%Y%m%dT%H%M%SZ}_{safe}" + ("_subset" if subset else "")
    folder, n = base / name, 1
    while True:
        try:
            folder.mkdir(parents=True)
            return folder
        except FileExistsError:
            n += 1
            folder = base / f"{name}-{n}"


def point_latest(folder: Path) -> Path:
    """`latest` beside the run folders, naming the newest: a relative symlink, or, where
    symlinks cannot be made, a text file holding the folder's name. Returns the pointer."""
    latest = folder.parent / "latest"
    with contextlib.suppress(FileNotFoundError):
        if not (stat.S_ISLNK(latest.lstat().st_mode) or stat.S_ISDIR(latest.lstat().st_mode)):
            check_output(latest)  # a regular file is replaced; a device node, FIFO or socket never
    tmp = folder.parent / f".latest.{os.getpid()}"
    try:
        tmp.unlink(missing_ok=True)
        tmp.symlink_to(folder.name, target_is_directory=True)
        if latest.is_dir() and not latest.is_symlink():
            raise OSError(f"{latest} is a folder")
        os.replace(tmp, latest)
    except OSError:
        tmp.unlink(missing_ok=True)
        if latest.is_symlink():
            latest.unlink()
        publish(latest, (folder.name + "\n").encode())
    return latest
