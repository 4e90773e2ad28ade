"""The public Python API: what the `zomboss` command line does, as functions that return records.

`import zomboss` loads nothing of this (the package's `__getattr__` imports this module on first
use of a name), so the command line and every subpackage, which import `zomboss.errors` and so run
`zomboss/__init__`, stay cheap and free of import cycles. This module is the top layer: it calls
the same functions the command handlers call (`zomboss.app.cli` for what only the command line
had, such as the results-store kind of a solve), with the same defaults (`verify="auto"`, budget
32, the results store under `$ZOMBOSS_RESULTS`), and adds no logic of its own beyond checking
the numbers the argument parser checks for the command line. Every error a user can cause is a
`ZombossError` (or a subclass) with one clear message, as on the command line.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from zomboss.app.check import check_file
from zomboss.app.cli import best_mapping, read_mapping, solve_jobs, solve_kind, store_solve
from zomboss.errors import ZombossError
from zomboss.knowledge import KB
from zomboss.knowledge import query as _query
from zomboss.legality import ASP_LIMIT, CheckReport, check_mapping_values, mapping_values
from zomboss.mapping import KnobMapping, space
from zomboss.networks.answer import NetworkResult
from zomboss.results import KernelResult, Store
from zomboss.solvers.exhaustive import ExhaustiveProgress
from zomboss.solvers.exhaustive import exhaustive as _exhaustive
from zomboss.solvers.guides import GUIDE_NAMES
from zomboss.solvers.search import SolveConfig, SolveProgress, SolveResult
from zomboss.solvers.search import solve as _solve
from zomboss.target import Target, config_key, resolve_kb, target_names
from zomboss.target import get_target as _get_target
from zomboss.util import MAX_INSTRUCTIONS, cap_at_cpus, output_file, results_dir, usable_cpus
from zomboss.verify import default_result
from zomboss.workload import Workload

__all__ = [
    "KB",
    "CheckReport",
    "KernelResult",
    "KnobMapping",
    "LlmFellBack",
    "NetworkResult",
    "SolveResult",
    "Target",
    "Workload",
    "ZombossError",
    "builtin_networks",
    "check",
    "compile",
    "default",
    "get_target",
    "get_workload",
    "export",
    "load_kb",
    "query",
    "results_db",
    "simulate",
    "solve",
    "targets",
    "workloads",
]

Params = Mapping[str, int]
VERIFY = ("auto", "full", "sampled", "none")


class LlmFellBack(ZombossError):
    """`solve(..., strict_llm=True)`: the LLM guide fell back to the cost guide. The kernel found is
    stored all the same and carried in `result` (the command line's exit 3)."""

    exit_code = 3

    def __init__(self, result: SolveResult) -> None:
        self.result = result
        super().__init__(f"the LLM guide fell back to the cost guide ({result.guide_note})")


# ---- targets, KBs and workloads -----------------------------------------------------------------


def targets() -> tuple[str, ...]:
    """The names of the installed targets (`zomboss.targets` entry points), sorted."""
    return target_names()


def get_target(name: str) -> Target:
    """The installed target `name` (its suite, KB, simulator and export). Raises ZombossError for an unknown name (naming the known ones)."""
    return _get_target(name)


def load_kb(target: str | Path, params: Params | None = None, *, use_cache: bool = True) -> KB:
    """The knowledge base of a registered target or of an ISA doc (`target` a path ending in
    `.md`), with doc parameters overridden by `params` (`zomboss kb build`). Read from the KB cache
    (`$ZOMBOSS_CACHE`) when it holds it, unless `use_cache` is False. Raises ZombossError for an
    unknown target, a missing doc, a doc that does not parse or validate, or a refused override."""
    return resolve_kb(str(target), dict(params or {}), use_cache=use_cache)


def query(kb: KB | str | Path, pattern: str, params: Params | None = None) -> list[str]:
    """The atoms of the KB's model matching an ASP atom pattern with variables, e.g.
    `query("gemmini", "capacity(M,R)")` (`zomboss kb query`). `kb` is a KB or a target name or doc
    path (then loaded with `params`). Raises ZombossError (QueryError) for a pattern that does not
    parse or names a predicate the KB does not have (with close matches)."""
    the_kb = kb if isinstance(kb, KB) else load_kb(kb, params)
    return _query(the_kb.asp, pattern)


def check(
    target: str | Path,
    what: Mapping[str, Any] | str | Path,
    *,
    params: Params | None = None,
    asp_limit: int = ASP_LIMIT,
    max_instructions: int = MAX_INSTRUCTIONS,
) -> CheckReport:
    """Check a mapping or a program against a target's (or a doc's) rules (`zomboss kb check`).

    `what` is a mapping as a dict — `{"workload": ID or SPEC, "mapping": {"op": ..., "knobs":
    {...}}}`, the form `default(...).to_json()` and `zomboss default --json` give — or the path of
    a mapping `.json` file or of a program file. Returns the CheckReport (`.legal`, `.violations`
    with rule ids and doc lines, `.text()`); clingo cross-checks the first `asp_limit` executed
    instructions of a program (0: all). Raises ZombossError for an unreadable file, an ill-formed
    mapping or a program over `max_instructions`; an illegal mapping is a report, not an error."""
    overrides = dict(params or {})
    if isinstance(what, Mapping):
        kb = resolve_kb(str(target), overrides)
        registered = _get_target(str(target)) if str(target) in target_names() else None
        op, values = mapping_values(kb, what, "<mapping>", registered.workload if registered else None)
        return check_mapping_values(kb, op, values, "<mapping>")
    return check_file(str(target), Path(what), overrides, asp_limit, max_instructions, progress=False)


def workloads(target: str) -> list[Workload]:
    """The suite instances of a target, in their stable order (`zomboss workloads TARGET`)."""
    return list(_get_target(target).suite())


def get_workload(target: str, spec: str) -> Workload:
    """A suite id (`mm512`) or an inline spec (`gemm:M=64,N=64,K=64`) of a target as a Workload.
    Raises ZombossError (WorkloadError) naming the bad key or value of a spec it cannot read."""
    return _get_target(target).workload(spec)


def _instance(target: str | Target, wl: Workload | str) -> tuple[Target, Workload]:
    t = _get_target(target) if isinstance(target, str) else target
    return t, (wl if isinstance(wl, Workload) else t.workload(wl))


def results_db(db: str | Path | None = None) -> Path:
    """The results store `solve` and `export(best=True)` use: `db`, else
    `$ZOMBOSS_RESULTS/zomboss.sqlite` (the command line's `--db` default)."""
    return Path(db) if db is not None else results_dir() / "zomboss.sqlite"


# ---- kernels ----------------------------------------------------------------------------------


def default(
    target: str | Target,
    workload: Workload | str,
    *,
    params: Params | None = None,
    verify: str = "auto",
    samples: int = 8,
    seed: int = 0,
) -> KernelResult:
    """Candidate-0, the compiler default kernel of `workload`, simulated and verified (`zomboss
    default`). `verify`: "auto" (full unless the operands are too large to allocate or the kernel
    executes more than 20M instructions: then timed only, and `extra["verify_reason"]` says why),
    "full", "sampled" (`samples` output blocks chosen by `seed`) or "none" (timing only). Returns
    the KernelResult (`cycles`, `verified`, `mapping`, `extra["breakdown"]`, `to_json()`); raises
    ZombossError for a bad workload, option or override."""
    _check_verify(verify)
    _at_least("samples", samples, 1)
    t, wl = _instance(target, workload)
    return default_result(t, wl, dict(params or {}), verify, samples, seed)


def solve(
    target: str | Target,
    workload: Workload | str,
    *,
    params: Params | None = None,
    guide: str = "cost",
    budget: int = 32,
    seed: int = 0,
    exhaustive: bool = False,
    time_limit: float | None = None,
    gap: float | None = None,
    fresh: str | None = None,
    verify: str = "auto",
    samples: int = 8,
    jobs: int | None = None,
    db: str | Path | None = None,
    llm_base_url: str | None = None,
    llm_model: str | None = None,
    llm_timeout: float | None = None,
    llm_max_rounds: int | None = None,
    llm_record: str | Path | None = None,
    llm_replay: str | Path | None = None,
    strict_llm: bool = False,
    status: Callable[[SolveProgress], None] | None = None,
    exhaustive_status: Callable[[ExhaustiveProgress], None] | None = None,
) -> SolveResult:
    """A faster verified kernel for `workload` (`zomboss solve`, every flag a keyword, the same
    defaults): a guided search (`guide` one of GUIDE_NAMES, `budget` timing-only simulations) or,
    with `exhaustive=True`, branch and bound over every legal mapping with a proof (`time_limit`
    seconds, stop at a proven relative `gap`). Candidate-0 and the winner are verified as `verify`
    says (an exhaustive run verifies whole: "auto" or "full"). The result is stored in the results
    store (`db`, default `results_db()`) under the same kind as the command line's, and every
    simulation as it completes, so a rerun repeats nothing unless `fresh` is "kind" (forget this
    kind of run's stored results first: guided or exhaustive) or "all" (every kind's). `jobs`
    simulations run at once in worker processes (None: one per usable CPU, at most 4); the
    result is the same for any number.

    The `llm_*` keywords configure `guide="llm"` (endpoint, model, per-request timeout, rounds,
    record / replay files; `$OPENAI_BASE_URL` and `$ZOMBOSS_LLM_MODEL` otherwise). `status` is
    called with each SolveProgress of a guided search, `exhaustive_status` with each
    ExhaustiveProgress of an exhaustive one (a notebook's progress display).

    Returns the SolveResult (`cycles`, `default_cycles`, `speedup`, `verified`, `verified_by`,
    `mapping`, `simulations`, `optimum_cycles` when proven, `to_json()`). Raises ZombossError for a
    bad target, workload, option or override, LlmFellBack (carrying the stored result) when
    `strict_llm` and the LLM guide fell back to the cost guide, and the LLM errors of an unusable
    endpoint or recording."""
    _check_verify(verify)
    _at_least("samples", samples, 1)
    _at_least("budget", budget, 1)
    if jobs is not None:
        _at_least("jobs", jobs, 1)
    if time_limit is not None and not time_limit > 0:
        raise ZombossError(f"time_limit={time_limit}: expected a number of seconds > 0")
    if gap is not None and not 0 <= gap < 1:
        raise ZombossError(f"gap={gap}: expected a fraction in [0, 1)")
    if fresh not in (None, "kind", "all"):
        raise ZombossError(f"fresh={fresh!r}: expected None, 'kind' or 'all'")
    if guide not in GUIDE_NAMES:
        raise ZombossError(f"guide={guide!r}: expected one of {', '.join(GUIDE_NAMES)}")
    t, wl = _instance(target, workload)
    overrides = dict(params or {})
    store = Store(results_db(db))
    try:
        config = config_key(t.name, overrides)
        if fresh is not None:  # the family `solve --fresh` forgets (zomboss.app.cli.fresh_family)
            store.forget(t.name, wl.id, config, "all" if fresh == "all" else ("exhaustive" if exhaustive else "guided"))
        if exhaustive:
            if verify in ("sampled", "none"):
                raise ZombossError(f"verify={verify!r}: an exhaustive run verifies its winner whole (full or auto)")
            res = _exhaustive(t, wl, overrides, store=store, time_limit=time_limit, gap=gap, progress=exhaustive_status)
            kind = "exhaustive"
        else:
            options = {
                "base_url": llm_base_url,
                "model": llm_model,
                "timeout": llm_timeout,
                "max_rounds": llm_max_rounds,
                "record": None if llm_record is None else str(llm_record),
                "replay": None if llm_replay is None else str(llm_replay),
            }
            cfg = SolveConfig(
                guide=guide,
                budget=budget,
                seed=seed,
                guide_options={k: v for k, v in options.items() if v is not None} if guide == "llm" else {},
                verify=verify,
                samples=samples,
                jobs=solve_jobs(jobs),
            )
            res = _solve(t, wl, overrides, cfg, store=store, status=status)
            kind = solve_kind(guide, budget, seed, res.verified_by)
        store_solve(store, t.name, wl.id, kind, config, res)
    finally:
        store.close()
    if strict_llm and res.guide_note.startswith("fell back"):
        raise LlmFellBack(res)
    return res


def simulate(
    target: str | Target,
    program: str | Path,
    *,
    params: Params | None = None,
    max_instructions: int = MAX_INSTRUCTIONS,
) -> KernelResult:
    """Run a program file (the target's text form, e.g. one `export` wrote) on the simulator with
    every rule checked, and verify it against NumPy when its sidecar names the workload (`zomboss
    simulate`). Raises ZombossError for a missing or ill-formed file, a broken rule
    (IllegalProgram) or more than `max_instructions` executed instructions."""
    t = _get_target(target) if isinstance(target, str) else target
    path = Path(program)
    if not path.exists():
        raise ZombossError(f"{path}: no such file")
    return t.simulate_file(path, dict(params or {}), max_instructions)


def export(
    target: str | Target,
    workload: Workload | str,
    output: str | Path,
    *,
    params: Params | None = None,
    mapping: KnobMapping | Mapping[str, Any] | str | Path | None = None,
    best: bool = False,
    db: str | Path | None = None,
) -> Path:
    """Write a kernel of `workload` in the target's native form to `output` (`zomboss export`):
    Candidate-0 by default, the kernel of `mapping` (a KnobMapping, e.g. `solve(...).mapping`, its
    JSON form, or the path of a JSON file holding it, as `--mapping` takes), or with `best=True` the verified winner the results store (`db`) holds for
    this workload under the current KB and preset. Returns the path written (a target may write
    its assembly beside it). Raises ZombossError for an illegal mapping, or `best` without a
    stored winner."""
    if best and mapping is not None:
        raise ZombossError("export: give mapping or best=True, not both")
    t, wl = _instance(target, workload)
    overrides = dict(params or {})
    out = output_file(Path(output))
    chosen: KnobMapping | None
    if best:
        chosen, _ = best_mapping(t, wl, overrides, results_db(db))
    elif mapping is None or isinstance(mapping, KnobMapping):
        chosen = mapping
    elif isinstance(mapping, str | Path):
        chosen = read_mapping(t, wl, Path(mapping), overrides)
    else:
        kb = t.kb(overrides)
        sp = space(kb, wl.op)
        data = mapping.get("mapping", mapping)
        chosen = sp.from_json(data, wl.shape, "mapping")
        sp.check(kb, chosen, wl.shape)
    return t.export(wl, out, overrides, chosen)


# ---- whole networks ------------------------------------------------------------------------------


def builtin_networks() -> list[dict[str, Any]]:
    """The built-in networks (`zomboss compile --list`): name, description, node count and, per
    installed target, the distinct layers, layer instances and unmapped operators it maps."""
    from zomboss.app.compile import list_builtins

    return list_builtins()


def compile(  # noqa: A001 - `zomboss.compile` is the command's name
    model: Any,
    target: str,
    *,
    dims: Mapping[str, int] | None = None,
    params: Params | None = None,
    guide: str = "cost",
    budget: int = 32,
    seed: int = 0,
    exhaustive: bool = False,
    time_limit: float | None = None,
    workers: int = usable_cpus(),
    ray: str | None = None,
    report: str | Path | None = None,
    export: str | Path | None = None,
    db: str | Path | None = None,
    llm_base_url: str | None = None,
    llm_model: str | None = None,
    llm_timeout: float | None = None,
    llm_max_rounds: int | None = None,
    llm_record: str | Path | None = None,
    llm_replay: str | Path | None = None,
) -> NetworkResult:
    """A whole network on `target` (`zomboss compile`, every flag a keyword, the same defaults).
    `model` is an ONNX file's path, an `onnx.ModelProto` or a built-in name (`builtin_networks()`);
    `dims` gives the dynamic input dimensions. Every distinct layer (same op family and shape) is
    solved once, as `bench` solves an instance (`workers` processes, or a Ray cluster at `ray`),
    through the results store (`db`, default `results_db()`), so a rerun simulates nothing again.
    `report` writes report.md and the time plot into that folder, `export` every layer's
    verified kernel and manifest.json (node -> kernel file); the files written are in the result's
    `files`. Returns the NetworkResult (`layers`, `cycles`, `default_cycles`, `speedup`,
    `unsupported`, `complete`, `to_json()`); raises ZombossError for an unreadable model, a missing
    dimension, or a bad target or option."""
    from dataclasses import replace

    from zomboss.app.compile import compile_network, export_kernels
    from zomboss.networks.answer import write_report

    _at_least("budget", budget, 1)
    _at_least("workers", workers, 1)
    workers = cap_at_cpus(workers, "workers")
    if guide not in GUIDE_NAMES:
        raise ZombossError(f"guide={guide!r}: expected one of {', '.join(GUIDE_NAMES)}")
    if time_limit is not None and not (exhaustive and time_limit > 0):
        raise ZombossError(f"time_limit={time_limit}: a number of seconds > 0, with exhaustive=True")
    options = {
        "base_url": llm_base_url,
        "model": llm_model,
        "timeout": llm_timeout,
        "max_rounds": llm_max_rounds,
        "record": None if llm_record is None else str(llm_record),
        "replay": None if llm_replay is None else str(llm_replay),
    }
    overrides = dict(params or {})
    store = results_db(db)
    compiled = compile_network(
        model,
        target,
        store,
        dims=dims,
        params=overrides,
        guide=guide,
        budget=budget,
        seed=seed,
        exhaustive=exhaustive,
        time_limit=time_limit,
        workers=workers,
        ray_address=ray,
        guide_options={k: v for k, v in options.items() if v is not None} if guide == "llm" else {},
        progress=False,
    )
    res = compiled.result
    files = list(res.files)
    if report is not None:
        written = write_report(res, Path(report), {"network": res.network, "target": res.target, "kind": res.kind})
        files += [str(f) for f in written.files]
    if export is not None:
        files += [str(f) for f in export_kernels(compiled, Path(export), overrides, store)]
    return replace(res, files=tuple(files))


# ---- the checks the command line's argument parser makes ------------------------------------------


def _check_verify(verify: str) -> None:
    if verify not in VERIFY:
        raise ZombossError(f"verify={verify!r}: expected one of {', '.join(VERIFY)}")


def _at_least(name: str, value: int, low: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < low:
        raise ZombossError(f"{name}={value!r}: expected an integer >= {low}")
