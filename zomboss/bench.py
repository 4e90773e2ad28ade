"""`zomboss bench`: every suite instance's verified default, into the results store, resumable,
fanned out over a process pool, then reported as a table and a plot."""

from __future__ import annotations

import time
import traceback
from collections.abc import Mapping, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from pathlib import Path
from typing import Any

from zomboss.candidate import default_result
from zomboss.errors import ZombossError
from zomboss.store import Store
from zomboss.target import config_key, get_target, target_names


def _run_default(target: str, workload: str, overrides: dict[str, int]) -> tuple[bool, dict[str, Any]]:
    t0 = time.perf_counter()
    try:
        t = get_target(target)
        res = default_result(t, t.workload(workload), overrides)
        d = res.to_json()
        return bool(res.verified), d
    except ZombossError as e:
        return False, {"target": target, "workload": workload, "error": str(e), "wall_s": time.perf_counter() - t0}
    except Exception as e:  # noqa: BLE001 - a crash in one instance must not lose the others
        return False, {
            "target": target,
            "workload": workload,
            "error": f"{type(e).__name__}: {e}",
            "traceback": traceback.format_exc(limit=6),
            "wall_s": time.perf_counter() - t0,
        }


def run_bench(
    suites: Sequence[str],
    db: Path,
    workers: int,
    overrides: Mapping[str, int],
    only: Sequence[str] = (),
    progress: bool = True,
) -> Store:
    store = Store(db)
    jobs: list[tuple[str, str, str]] = []
    for target in suites:
        key = config_key(target, overrides)
        for wl in get_target(target).suite():
            if only and wl.id not in only:
                continue
            if not store.has(target, wl.id, "default", key):
                jobs.append((target, wl.id, key))
    if not jobs:
        return store
    from rich.progress import Progress

    with Progress(disable=not progress, transient=False) as bar:
        task = bar.add_task("defaults", total=len(jobs))
        if workers <= 1:
            for target, wid, key in jobs:
                bar.update(task, description=f"{target}:{wid}")
                ok, payload = _run_default(target, wid, dict(overrides))
                store.put(target, wid, "default", key, ok, payload)
                bar.advance(task)
        else:
            with ProcessPoolExecutor(max_workers=workers) as pool:
                pending: dict[Future[tuple[bool, dict[str, Any]]], tuple[str, str, str]] = {
                    pool.submit(_run_default, t, w, dict(overrides)): (t, w, k) for t, w, k in jobs
                }
                while pending:
                    done, _ = wait(pending, return_when=FIRST_COMPLETED)
                    for fut in done:
                        target, wid, key = pending.pop(fut)
                        ok, payload = fut.result()
                        store.put(target, wid, "default", key, ok, payload)
                        bar.update(task, description=f"{target}:{wid}")
                        bar.advance(task)
    return store


def report(
    store: Store, suites: Sequence[str], overrides: Mapping[str, int], plot: Path | None
) -> list[dict[str, Any]]:
    """Rows of the current configuration, in suite order (table printed by the CLI)."""
    rows: list[dict[str, Any]] = []
    for target in suites:
        key = config_key(target, overrides)
        latest = {r.workload: r for r in store.rows(target, "default") if r.config == key}
        for wl in get_target(target).suite():
            r = latest.get(wl.id)
            if r is None:
                continue
            p = r.payload
            bound = p.get("bound_cycles")
            rows.append(
                {
                    "target": target,
                    "workload": wl.id,
                    "verified": p.get("verified", False) if "error" not in p else False,
                    "cycles": r.cycles,
                    "bound_cycles": bound,
                    "efficiency": (bound / r.cycles) if bound and r.cycles else None,
                    "wall_s": r.wall_s,
                    "error": p.get("error"),
                }
            )
    if plot is not None and rows:
        _plot(rows, plot)
    return rows


def _plot(rows: list[dict[str, Any]], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    targets = sorted({r["target"] for r in rows})
    fig, axes = plt.subplots(len(targets), 1, figsize=(12, 3.2 * len(targets)), squeeze=False)
    for ax, target in zip(axes[:, 0], targets, strict=True):
        sub = [r for r in rows if r["target"] == target]
        eff = [r["efficiency"] or 0.0 for r in sub]
        colors = ["tab:green" if r["verified"] else "tab:red" for r in sub]
        ax.bar(range(len(sub)), eff, color=colors)
        ax.set_xticks(range(len(sub)), [r["workload"] for r in sub], rotation=60, ha="right", fontsize=7)
        ax.set_ylabel("bound / cycles")
        ax.set_ylim(0, 1.05)
        ax.set_title(f"{target}: compiler default vs roofline bound (green = verified)")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)


def suites_for(name: str) -> list[str]:
    if name == "all":
        return list(target_names())
    if name not in target_names():
        raise ZombossError(f"--suite {name!r}: expected one of {', '.join(target_names())}, all")
    return [name]
