"""`zomboss bench`: the search on every suite instance, into the results store, resumable,
fanned out over a local process pool (`--workers`) or a Ray cluster (`--ray`), then reported
(`report.md` and plots, zomboss.report).

Each instance is one unit of work: claimed in the store (so a second bench process on the same
store takes other instances), solved (every simulation committed as it ends, so a killed bench
resumes where it stopped), and summarised in one results row.
"""

from __future__ import annotations

import os
import time
import traceback
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from zomboss.errors import ZombossError
from zomboss.results import Store
from zomboss.results.store import Row, kind_family
from zomboss.target import config_key, get_target, target_names
from zomboss.util import die_with_parent


@dataclass(frozen=True)
class BenchJob:
    target: str
    workload: str
    kind: str  # "default" | "solve:<guide>:<budget>:<seed>" | "exhaustive"
    guide: str = "cost"
    budget: int = 32
    seed: int = 0
    time_limit: float | None = None
    params: Mapping[str, int] = field(default_factory=dict)
    guide_options: Mapping[str, Any] = field(default_factory=dict)


DIRECT = "direct"  # the direct-generation baseline (zomboss.direct), for --compare-direct


def instance_options(options: Mapping[str, Any], target: str, workload: str, what: str) -> dict[str, Any]:
    """LLM options for one instance of a bench: a recording (`--llm-record` / `--llm-replay`
    FILE.jsonl) is one file per instance and run, FILE.<target>.<workload>.<what>.jsonl, since
    instances run in parallel and every client starts its own recording."""
    out = dict(options)
    for k in ("record", "replay"):
        if out.get(k):
            path = Path(str(out[k]))
            safe = "".join(c if c.isalnum() or c in "-_=" else "_" for c in workload)
            out[k] = str(path.with_name(f"{path.stem}.{target}.{safe}.{what}{path.suffix or '.jsonl'}"))
    return out


def kind_of(guide: str | None, budget: int, seed: int, exhaustive: bool) -> str:
    if exhaustive:
        return "exhaustive"
    if guide is None:
        return "default"
    return f"solve:{guide}:{budget}:{seed}"


def reusable(payload: Mapping[str, Any], time_limit: float | None) -> bool:
    """Whether a stored result answers a run with `time_limit`: any guided or default one; an
    exhaustive one when it is complete (a proof holds under any limit), or when its own limit
    was at least this one (an unlimited run takes only a complete result). An incomplete
    result is run again, resuming from its stored simulations."""
    if "complete" not in payload or payload["complete"]:
        return True
    stored = payload.get("time_limit_s")
    return time_limit is not None and stored is not None and float(stored) >= time_limit


def run_job(job: BenchJob, db: Path) -> tuple[bool, dict[str, Any]]:
    """One instance, in whatever process runs it (pool worker, Ray task or the caller)."""
    t0 = time.perf_counter()
    try:
        t = get_target(job.target)
        wl = t.workload(job.workload)
        store = Store(db)
        try:
            if job.kind == "default":
                from zomboss.verify import default_result

                res = default_result(t, wl, job.params)
                d = res.to_json()
                return bool(res.verified), d
            if job.kind == DIRECT:
                from zomboss.llm import open_client
                from zomboss.solvers.direct import run_direct, store_direct_calls

                opts = instance_options(job.guide_options, job.target, job.workload, DIRECT)
                opts.pop("max_rounds", None)  # a guide option; direct runs have iteration budgets
                client = open_client(opts, job.seed)
                direct = run_direct(t, wl, job.params, client, None, job.seed)
                store_direct_calls(store, direct, config_key(job.target, job.params))
                return bool(direct.verified), direct.to_json()
            if job.kind == "exhaustive":
                from zomboss.solvers.exhaustive import exhaustive

                ex = exhaustive(t, wl, job.params, store=store, time_limit=job.time_limit)
                return bool(ex.verified), {**ex.to_json(), "time_limit_s": job.time_limit}
            else:
                from zomboss.solvers.search import SolveConfig, solve

                opts = instance_options(job.guide_options, job.target, job.workload, "solve")
                cfg = SolveConfig(guide=job.guide, budget=job.budget, seed=job.seed, guide_options=opts)
                out = solve(t, wl, job.params, cfg, store=store)
            return bool(out.verified), out.to_json()
        finally:
            store.close()
    except ZombossError as e:
        return False, {
            "target": job.target,
            "workload": job.workload,
            "error": str(e),
            "wall_s": time.perf_counter() - t0,
        }
    except Exception as e:  # noqa: BLE001 - a crash in one instance must not lose the others
        return False, {
            "target": job.target,
            "workload": job.workload,
            "error": f"{type(e).__name__}: {e}",
            "traceback": traceback.format_exc(limit=8),
            "wall_s": time.perf_counter() - t0,
        }


def select(suites: Sequence[str], only: Sequence[str], subset: bool) -> list[tuple[str, str]]:
    """(target, workload id) pairs: the suites, restricted to `only` ids (unknown ids are an
    error), or with `subset` one representative per op family (its smallest instance)."""
    pairs: list[tuple[str, str]] = []
    known: set[str] = set()
    for target in suites:
        t = get_target(target)
        wls = list(t.suite())
        known |= {w.id for w in wls}
        if subset:
            by_op: dict[str, Any] = {}
            for w in wls:
                cur = by_op.get(w.op)
                if cur is None or (t.bound(w, {}), w.id) < (t.bound(cur, {}), cur.id):
                    by_op[w.op] = w
            wls = [w for w in wls if by_op.get(w.op) is w]
        pairs += [(target, w.id) for w in wls if not only or w.id in only]
    unknown = sorted(set(only) - known)
    if unknown:
        raise ZombossError(f"--only {unknown[0]!r}: not an instance of the {', '.join(suites)} suite(s)")
    return pairs


def run_bench(
    pairs: Sequence[tuple[str, str]],
    db: Path,
    *,
    kind: str,
    guide: str = "cost",
    budget: int = 32,
    seed: int = 0,
    time_limit: float | None = None,
    workers: int = 1,
    ray_address: str | None = None,
    params: Mapping[str, int] | None = None,
    guide_options: Mapping[str, Any] | None = None,
    fresh: str | None = None,
    progress: bool = True,
    label: str = "bench",
) -> dict[tuple[str, str], dict[str, Any]]:
    """Run every pair not already in the store under this config; returns the payload per pair.
    `fresh` forgets stored runs first: "kind" those of this kind's family, "all" every kind's.
    `label` names the run on the progress bar (`bench`, `compile NETWORK`)."""
    params = dict(params or {})
    store = Store(db)
    keys = {t: config_key(t, params) for t in {p[0] for p in pairs}}
    if fresh:
        family = "all" if fresh == "all" else kind_family(kind)
        for t, w in pairs:
            store.forget(t, w, keys[t], family)
    results: dict[tuple[str, str], dict[str, Any]] = {}
    todo: list[BenchJob] = []

    def stored(t: str, w: str) -> Row | None:
        """The stored result of this run of (t, w) that answers it, if any (ok or not)."""
        rows = (r for r in store.rows(t, kind) if r.workload == w and r.config == keys[t])
        return next((r for r in rows if reusable(r.payload, time_limit)), None)

    for t, w in pairs:
        row = stored(t, w)
        if row is not None and row.ok:
            results[(t, w)] = row.payload
        else:
            todo.append(BenchJob(t, w, kind, guide, budget, seed, time_limit, params, dict(guide_options or {})))

    def finish(job: BenchJob, ok: bool, payload: dict[str, Any]) -> None:
        store.put(job.target, job.workload, kind, keys[job.target], ok, payload)
        store.release(job.target, job.workload, kind, keys[job.target])
        results[(job.target, job.workload)] = payload

    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    with Progress(  # on stderr: stdout carries the results alone
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=Console(stderr=True),
        disable=not progress,
    ) as bar:
        task = bar.add_task(f"{label} {kind}", total=len(todo))
        mine = [j for j in todo if store.claim(j.target, j.workload, kind, keys[j.target])]
        others = [j for j in todo if j not in mine]
        _execute(
            mine,
            db,
            workers,
            ray_address,
            finish,
            lambda j: bar.update(task, advance=1, description=f"{j.target}:{j.workload}"),
        )
        # instances another bench process claimed: wait for its rows (or take over when its
        # lease runs out), saying so once per instance
        for j in others:
            held = store.claimant(j.target, j.workload, kind, keys[j.target])
            if held is not None:
                bar.console.print(
                    f"zomboss: {j.target}:{j.workload}: waiting for {held[0]}, which claimed it "
                    f"(heartbeat {held[1]:,.0f} s ago; taken over after {store.lease:,.0f} s without one)",
                    markup=False,
                    highlight=False,
                )
        while others:
            time.sleep(1.0)
            still = []
            for j in others:
                row = stored(j.target, j.workload)
                if row is not None:
                    results[(j.target, j.workload)] = row.payload
                    bar.update(task, advance=1)
                elif store.claim(j.target, j.workload, kind, keys[j.target]):
                    ok, payload = run_job(j, db)
                    finish(j, ok, payload)
                    bar.update(task, advance=1)
                else:
                    still.append(j)
            others = still
    store.close()
    return results


def _execute(
    jobs: Sequence[BenchJob],
    db: Path,
    workers: int,
    ray_address: str | None,
    finish: Callable[[BenchJob, bool, dict[str, Any]], None],
    tick: Callable[[BenchJob], None],
) -> None:
    if not jobs:
        return
    if ray_address is not None:
        _execute_ray(jobs, db, ray_address, finish, tick)
        return
    if workers <= 1:
        for j in jobs:
            ok, payload = run_job(j, db)
            finish(j, ok, payload)
            tick(j)
        return
    with ProcessPoolExecutor(max_workers=workers, initializer=die_with_parent, initargs=(os.getpid(),)) as pool:
        pending: dict[Future[tuple[bool, dict[str, Any]]], BenchJob] = {pool.submit(run_job, j, db): j for j in jobs}
        while pending:
            done, _ = wait(pending, return_when=FIRST_COMPLETED)
            for fut in done:
                j = pending.pop(fut)
                ok, payload = fut.result()
                finish(j, ok, payload)
                tick(j)


def _execute_ray(
    jobs: Sequence[BenchJob],
    db: Path,
    address: str,
    finish: Callable[[BenchJob, bool, dict[str, Any]], None],
    tick: Callable[[BenchJob], None],
) -> None:
    """Instances as Ray tasks (`pip install 'zomboss[ray]'`); every task writes its trials to
    the shared store, so the store must be on a file system the workers see."""
    try:
        import ray
    except ImportError:
        raise ZombossError("--ray needs Ray: pip install 'zomboss[ray]'") from None
    if not ray.is_initialized():
        if address == "local":  # a Ray instance of our own for this run
            ray.init(include_dashboard=False, log_to_driver=False, ignore_reinit_error=True)
        else:
            ray.init(address=address, log_to_driver=False, ignore_reinit_error=True)
    remote = ray.remote(run_job)
    pending = {remote.remote(j, db): j for j in jobs}
    while pending:
        done, _ = ray.wait(list(pending), num_returns=1)
        for ref in done:
            j = pending.pop(ref)
            ok, payload = ray.get(ref)
            finish(j, ok, payload)
            tick(j)


def suites_for(name: str) -> list[str]:
    names = list(target_names())
    if name == "all":
        return names
    if name not in names:
        raise ZombossError(f"--suite {name!r}: expected one of {', '.join(names)}, all")
    return [name]
