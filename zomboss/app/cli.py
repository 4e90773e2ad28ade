"""The `zomboss` command line (contract: docs/architecture.md, "The command line").

Every error a user can cause ends as one clear message and a non-zero exit code, never a
traceback (set ZOMBOSS_DEBUG=1 to see one for internal errors).

One module of about 1,000 lines on purpose: one thin handler per command beside the parser that
names them, so a command's flags (each with a help text stating its default) and what it does
with them read together; the work is in the packages the handlers call, the argument types and
the help formatter in `arguments`, the progress lines, tables and file lists in `display`.
Every file a command writes is listed in its text output and in its JSON's `files`.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from zomboss.app.arguments import (
    HelpFormatter,
    VersionAction,
    count,
    fraction,
    ids,
    seconds,
    seed,
    url,
    workers,
)
from zomboss.errors import ZombossError
from zomboss.solvers.guides import GUIDE_NAMES
from zomboss.util import MAX_INSTRUCTIONS, cap_at_cpus, usable_cpus

if TYPE_CHECKING:  # annotations only: the commands import their heavy modules when they run
    from zomboss.results import Store
    from zomboss.solvers.search import SolveResult


def _param_overrides(items: Sequence[str]) -> dict[str, int]:
    from zomboss.workload import shorten

    out: dict[str, int] = {}
    for item in items:
        name, eq, val = item.partition("=")
        if not eq or not name.strip():
            raise ZombossError(f"--param {shorten(item)!r}: expected NAME=VALUE (e.g. --param dim=8)")
        try:
            if len(val.strip()) > 64:  # past the 128-bit limit of a parameter (39 digits), unread
                raise ValueError
            out[name.strip().lower()] = int(val.strip(), 0)
        except ValueError:
            raise ZombossError(
                f"--param {shorten(item)!r}: value must be an integer of at most 64 characters "
                "(parameters are below 2^128, within their domains)"
            ) from None
    return out


def _emit(args: argparse.Namespace, data: Any, text: str) -> None:
    if getattr(args, "json", False):
        print(json.dumps(data, indent=2, default=str))
    else:
        print(text)


# ---- kb -------------------------------------------------------------------------------------


def cmd_kb_build(args: argparse.Namespace) -> int:
    from zomboss.results.report import publish
    from zomboss.target import resolve_kb, target_names

    names = args.targets or list(target_names())
    if args.out and len(names) != 1:
        raise ZombossError("--out writes one KB: name exactly one target or doc")
    from zomboss.app.display import working

    overrides = _param_overrides(args.param)
    report = []
    files = [str(args.out)] if args.out else []
    for name in names:
        t0 = time.perf_counter()
        with working(not args.json, f"kb build {name}"):
            kb = resolve_kb(name, overrides, use_cache=not args.no_cache)
        dt = time.perf_counter() - t0
        report.append(
            {
                "target": kb.target,
                "doc": kb.doc.path,
                **kb.counts,
                "cached": kb.from_cache,
                "seconds": round(dt, 4),
                "files": files,
            }
        )
        if args.out:
            publish(Path(args.out), kb.asp.encode())
    lines = [
        f"{r['target']}: {r['facts']} facts, {r['rules']} ASP rules ({r['doc_rules']} legality rules) from {r['doc']}"
        f" [{'cached' if r['cached'] else 'built'} in {r['seconds']:.3f}s]"
        for r in report
    ]
    if args.out:
        lines.append(f"wrote {args.out}")
    _emit(args, report, "\n".join(lines))
    return 0


def cmd_kb_query(args: argparse.Namespace) -> int:
    from zomboss.knowledge import query
    from zomboss.target import resolve_kb

    kb = resolve_kb(args.target, _param_overrides(args.param))
    atoms = query(kb.asp, args.atom)
    _emit(args, atoms, "\n".join(atoms))
    return 0


def cmd_kb_check(args: argparse.Namespace) -> int:
    from zomboss.app.check import check_file
    from zomboss.app.display import working

    with working(not args.json, f"kb check {args.file}", f" (at most {args.max_instructions:,} instructions)"):
        report = check_file(
            args.target, Path(args.file), _param_overrides(args.param), args.asp_limit, args.max_instructions
        )
    if args.json:
        print(json.dumps(report.to_json(), indent=2))
    else:
        print(report.text())
    return 0 if report.legal else 1


# ---- targets ----------------------------------------------------------------------------------


def cmd_workloads(args: argparse.Namespace) -> int:
    from zomboss.target import get_target, target_names

    names = [args.target] if args.target else list(target_names())
    rows: list[dict[str, Any]] = []
    for name in names:
        t = get_target(name)
        for wl in t.suite():
            rows.append({"target": name, "id": wl.id, "op": wl.op, **{"shape": dict(wl.shape)}})
    if args.json:
        print(json.dumps(rows, indent=2))
        return 0
    from zomboss.app.display import plain_wanted, print_table

    print_table(
        "suite instances",
        ("target", "id", "op", "shape"),
        [(r["target"], r["id"], r["op"], ",".join(f"{k}={v}" for k, v in r["shape"].items())) for r in rows],
        plain=plain_wanted(args.plain),
        ids=("target", "id", "op"),
    )
    return 0


def _result_text(d: dict[str, Any]) -> str:
    keys = [
        "target",
        "workload",
        "verified",
        "cycles",
        "default_cycles",
        "speedup",
        "bound_cycles",
        "simulations",
        "wall_s",
    ]
    lines = [f"{k:>15}: {d[k]}" for k in keys if k in d and d[k] is not None]
    lines.append(f"{'mapping':>15}: {json.dumps(d.get('mapping', {}))}")
    for k, v in d.items():
        if k not in keys and k != "mapping":
            lines.append(f"{k:>15}: {json.dumps(v, default=str) if isinstance(v, dict | list) else v}")
    return "\n".join(lines)


def cmd_default(args: argparse.Namespace) -> int:
    from zomboss.target import get_target
    from zomboss.verify import default_result

    t = get_target(args.target)
    wl = t.workload(args.workload)
    res = default_result(t, wl, _param_overrides(args.param), args.verify, args.samples, args.seed)
    d = res.to_json()
    _emit(args, d, _result_text(d))
    return 1 if res.verified is False else 0  # null: timed only, as the result says


def cmd_space(args: argparse.Namespace) -> int:
    from zomboss.app.display import status_line
    from zomboss.solvers.space import describe_space
    from zomboss.target import get_target

    t = get_target(args.target)
    wl = t.workload(args.workload)
    kb = t.kb(_param_overrides(args.param))
    with status_line(enabled=not args.json, first="space: starting") as update:
        report = describe_space(kb, wl.id, wl.op, wl.shape, count_seconds=args.count_seconds, status=update)
    _emit(args, report.to_json(), report.text())
    return 0


def read_mapping(t: Any, wl: Any, path: Path, params: dict[str, int]) -> Any:
    """A mapping file: the `mapping` object `default --json` prints, or a `kb check` file
    (`{"workload": ..., "mapping": {...}}`)."""
    from zomboss.app.check import read_input
    from zomboss.mapping import space
    from zomboss.util import load_json

    data = load_json(read_input(path), str(path))
    if isinstance(data, dict) and "mapping" in data:
        if "workload" in data and t.workload(str(data["workload"])).shape != wl.shape:
            raise ZombossError(f"{path}: the mapping is for workload {data['workload']!r}, not {wl.id!r}")
        data = data["mapping"]
    sp = space(t.kb(params), wl.op)
    m = sp.from_json(data, wl.shape, str(path))
    sp.check(t.kb(params), m, wl.shape)
    return m


def _db(args: argparse.Namespace) -> Path:
    from zomboss.util import results_dir

    return Path(args.db) if args.db else results_dir() / "zomboss.sqlite"


def store_solve(
    store: Store, target: str, workload: str, kind: str, config: str, res: SolveResult, **extra: object
) -> dict[str, Any]:
    """The record of a `solve` as it is printed and stored: the result, the store's path, and the
    guide that actually proposed the kernels (`llm→cost` after a fallback)."""
    d = res.to_json()
    d["db"] = str(store.path)
    d.update(extra)
    d["guide_ran"] = f"{res.guide}→cost" if res.guide_note.startswith("fell back") else res.guide
    store.put(target, workload, kind, config, bool(res.verified), d)
    return d


def cmd_solve(args: argparse.Namespace) -> int:
    from zomboss.app.display import exhaustive_display, result_value, solve_display
    from zomboss.results import Store
    from zomboss.solvers.search import SolveConfig, solve
    from zomboss.target import config_key, get_target

    t = get_target(args.target)
    wl = t.workload(args.workload)
    params = _param_overrides(args.param)
    store = Store(_db(args))
    config = config_key(t.name, params)
    if args.fresh:  # "kind": only this kind of run's results; "all": every kind's
        store.forget(t.name, wl.id, config, "all" if args.fresh == "all" else fresh_family(args))
    if args.exhaustive:
        from zomboss.solvers.exhaustive import exhaustive

        if args.verify in ("sampled", "none"):
            raise ZombossError(f"--verify {args.verify}: an exhaustive run verifies its winner whole (full or auto)")

        with exhaustive_display(enabled=not args.json) as show:
            res = exhaustive(t, wl, params, store=store, time_limit=args.time_limit, gap=args.gap, progress=show)
        kind = "exhaustive"
    else:
        cfg = SolveConfig(
            guide=args.guide,
            budget=args.budget,
            seed=args.seed,
            guide_options=_llm_options(args),
            verify=args.verify,
            samples=args.samples,
            jobs=solve_jobs(args.jobs),
        )
        with solve_display(enabled=not args.json) as show_solve:
            res = solve(t, wl, params, cfg, store=store, status=show_solve)
        kind = solve_kind(args.guide, args.budget, args.seed, res.verified_by)
    d = store_solve(store, t.name, wl.id, kind, config, res, files=written_by_store(store.path, args))
    store.close()
    if res.guide_note:  # a fallback (or an early stop) is said where a user looks, not only in the JSON
        print(f"zomboss: {res.guide} guide: {res.guide_note}", file=sys.stderr)
    if args.json:
        print(json.dumps(d, indent=2, default=str))
    else:
        keys = [
            "target",
            "workload",
            "guide_ran",
            "guide_note",
            "verified",
            "verified_by",
            "verify_reason",
            "cycles",
            "default_cycles",
            "speedup",
            "candidate",
            "simulations",
            "pruned",
            "bound_cycles",
            "space_bound_cycles",
            "optimum_cycles",
            "lower_bound_cycles",
            "gap",
            "complete",
            "legal_mappings",
            "wall_s",
            "db",
        ]
        lines = [f"{k:>18}: {result_value(k, d)}" for k in keys if d.get(k) not in (None, "")]
        lines.append(f"{'files':>18}: {', '.join(d['files'])}")
        lines.append(f"{'mapping':>18}: {json.dumps(d['mapping'])}")
        lines.append(f"{'breakdown':>18}: default {d['breakdown_default']} -> best {d['breakdown']}")
        if d.get("rejected"):
            lines.append(
                f"{'rejected':>18}: {len(d['rejected'])} illegal proposals (first: {d['rejected'][0]['violations'][0]})"
            )
        print("\n".join(lines))
    if res.guide_note.startswith("fell back") and getattr(args, "strict_llm", False):
        print("zomboss: --strict-llm: the LLM guide fell back to the cost guide (exit 3)", file=sys.stderr)
        return 3
    return 1 if res.verified is False else 0  # null: timed only (--verify none), as the result says


def written_by_store(db: Path, args: argparse.Namespace) -> list[str]:
    """The files a `solve` or `direct` run writes: the results store, and the LLM recording
    when --llm-record asks for one."""
    record = getattr(args, "llm_record", None)
    return [str(db)] + ([str(record)] if record else [])


def fresh_family(args: argparse.Namespace) -> str:
    """The family of stored runs `solve --fresh` forgets (zomboss.results.store.kind_family)."""
    return "exhaustive" if args.exhaustive else "guided"


def solve_kind(guide: str, budget: int, seed: int, verified_by: str) -> str:
    """The results-store kind of a guided search: a winner verified otherwise than whole is kept
    apart (`:sampled`, `:none`), so nothing reads it as a fully verified one."""
    kind = f"solve:{guide}:{budget}:{seed}"
    return kind if verified_by == "full" else f"{kind}:{verified_by}"


def _llm_options(args: argparse.Namespace) -> dict[str, Any]:
    if getattr(args, "guide", None) != "llm":
        return {}
    return {
        k: v
        for k, v in {
            "base_url": args.llm_base_url,
            "model": args.llm_model,
            "timeout": args.llm_timeout,
            "max_rounds": args.llm_max_rounds,
            "record": args.llm_record,
            "replay": args.llm_replay,
        }.items()
        if v is not None
    }


def cmd_direct(args: argparse.Namespace) -> int:
    """The direct-generation baseline (zomboss/solvers/direct.py): an LLM writes the program itself."""
    from zomboss.llm import open_client
    from zomboss.results import Store
    from zomboss.solvers.direct import run_direct, store_direct
    from zomboss.target import config_key, get_target

    t = get_target(args.target)
    wl = t.workload(args.workload)
    params = _param_overrides(args.param)
    client = open_client({**_llm_options(argparse.Namespace(**{**vars(args), "guide": "llm"}))}, args.seed)
    res = run_direct(t, wl, params, client, args.iterations, args.seed)
    d = res.to_json()
    store = Store(_db(args))
    store_direct(store, res, config_key(t.name, params))
    d["db"] = str(store.path)
    d["files"] = written_by_store(store.path, args)
    store.close()
    text = "\n".join(
        f"{k:>14}: {d[k]}"
        for k in (
            "target",
            "workload",
            "verified",
            "reason",
            "cycles",
            "default_cycles",
            "instructions",
            "iterations",
            "budget",
            "tokens",
            "db",
        )
        if d.get(k) is not None
    )
    _emit(args, d, text + f"\n{'usage':>14}: {d['usage']}\n{'files':>14}: {', '.join(d['files'])}")
    return 0 if res.verified else 1


def cmd_simulate(args: argparse.Namespace) -> int:
    from zomboss.target import get_target

    t = get_target(args.target)
    path = Path(args.program)
    if not path.exists():
        raise ZombossError(f"{path}: no such file")
    from zomboss.app.display import working

    with working(not args.json, f"simulate {path}", f" (at most {args.max_instructions:,} instructions)"):
        res = t.simulate_file(path, _param_overrides(args.param), args.max_instructions)
    d = res.to_json()
    _emit(args, d, _result_text(d))
    return 1 if res.verified is False else 0


def cmd_export(args: argparse.Namespace) -> int:
    from zomboss.app.display import files_text
    from zomboss.target import get_target
    from zomboss.util import output_file

    t = get_target(args.target)
    wl = t.workload(args.workload)
    params = _param_overrides(args.param)
    output = output_file(Path(args.output))
    if args.best:
        mapping, winner = best_mapping(t, wl, params, _db(args))
        with written_beside(output) as files:
            out = t.export(wl, output, params, mapping)
        how = "" if winner["verified_by"] == "full" else f", verified on {winner['verified_by']} output blocks only"
        text = f"wrote {out} (the winner of {winner['kind']}: {winner['cycles']:,} cycles, {winner['speedup']}x{how})"
        others = [f for f in files if f != str(out)]
        text += ("\n" + files_text(others)) if others else ""
        _emit(args, {"target": args.target, "workload": wl.id, "path": str(out), "best": winner, "files": files}, text)
        return 0
    mapping = read_mapping(t, wl, Path(args.mapping), params) if args.mapping else None
    with written_beside(output) as files:
        out = t.export(wl, output, params, mapping)
    _emit(args, {"target": args.target, "workload": wl.id, "path": str(out), "files": files}, files_text(files))
    return 0


@contextlib.contextmanager
def written_beside(output: Path) -> Iterator[list[str]]:
    """The files an export writes: `output` and the companions a target writes next to it
    (Gemmini's `k.asm` and `k.asm.json` beside `k.c`, a sidecar, native encodings), found as the
    files of that folder named after `output` that are new or changed once the export is done.
    The list is filled when the block ends, `output` first."""
    folder, stem = output.parent, output.name.split(".")[0]

    def snapshot() -> dict[str, tuple[int, int, int]]:
        if not folder.is_dir():
            return {}
        return {
            p.name: (st.st_mtime_ns, st.st_size, st.st_ino)
            for p in folder.iterdir()
            if p.name.startswith(stem) and p.is_file()
            for st in (p.stat(),)
        }

    before, t0 = snapshot(), time.time_ns()
    files: list[str] = []
    yield files
    after = snapshot()
    changed = sorted(n for n, st in after.items() if n != output.name and (before.get(n) != st or st[0] >= t0))
    files += [str(output)] + [str(folder / n) for n in changed]


def best_mapping(t: Any, wl: Any, params: dict[str, int], db: Path) -> tuple[Any, dict[str, Any]]:
    """`export --best`: the verified winner the results store holds for this instance under the
    current KB and preset (the config key `solve` stores under), or one clear refusal."""
    from zomboss.mapping import space
    from zomboss.results import Store
    from zomboss.target import config_key

    if not db.exists():
        raise ZombossError(f"{db}: no results store; run `zomboss solve {t.name} {wl.id}` first")
    store = Store(db)
    try:
        row = store.winner(t.name, wl.id, config_key(t.name, params))
    finally:
        store.close()
    if row is None:
        raise ZombossError(
            f"no verified winner of {t.name} {wl.id} in {db} for the current KB and preset"
            f"{' and --param overrides' if params else ''}; run `zomboss solve {t.name} {wl.id}` first"
        )
    kb = t.kb(params)
    sp = space(kb, wl.op)
    m = sp.from_json(row.payload["mapping"], wl.shape, f"{db} ({row.kind})")
    sp.check(kb, m, wl.shape)
    winner = {
        "kind": row.kind,
        "cycles": row.payload["cycles"],
        "speedup": row.payload.get("speedup"),
        "verified_by": row.payload.get("verified_by", "full"),
        "db": str(db),
    }
    return m, winner


def cmd_bench(args: argparse.Namespace) -> int:
    from zomboss.app.bench import DIRECT, instance_options, kind_of, run_bench, select, suites_for
    from zomboss.app.display import files_text, plain_wanted, print_table
    from zomboss.results import Store, compare_rows, point_latest, rows_of, run_folder, write_report
    from zomboss.target import config_key, get_target
    from zomboss.util import results_dir

    suites = suites_for(args.suite)
    if args.compare_direct and (args.guide != "llm" or args.exhaustive or args.defaults_only):
        raise ZombossError("--compare-direct compares the LLM guide with direct generation: use it with --guide llm")
    params = _param_overrides(args.param)
    db = _db(args)
    guide = None if args.defaults_only else args.guide
    kind = kind_of(guide, args.budget, args.seed, args.exhaustive)
    pairs = select(suites, args.only or (), args.subset)
    t0 = time.perf_counter()

    def bench(kind: str) -> dict[tuple[str, str], dict[str, Any]]:
        return run_bench(
            pairs,
            db,
            kind=kind,
            guide=args.guide,
            budget=args.budget,
            seed=args.seed,
            time_limit=args.time_limit,
            workers=args.workers,
            ray_address=args.ray,
            params=params,
            guide_options=_llm_options(args),
            fresh=args.fresh,
            progress=not args.json,
        )

    results = bench(kind)
    wall = time.perf_counter() - t0
    ops = {(t, w): get_target(t).workload(w).op for t, w in pairs}
    optima: dict[tuple[str, str], int] = {}
    proven: dict[tuple[str, str], int] = {}  # the optimum, or the lower bound an unfinished run proved
    store = Store(db)
    for t in suites:
        key = config_key(t, params)
        for row in store.rows(t, "exhaustive"):
            if row.config != key or not row.ok:
                continue
            if row.payload.get("optimum_cycles"):
                optima[(t, row.workload)] = int(row.payload["optimum_cycles"])
            if row.payload.get("lower_bound_cycles"):
                proven[(t, row.workload)] = int(row.payload["lower_bound_cycles"])
    store.close()
    rows = rows_of({p: results[p] for p in pairs if p in results}, ops, optima, proven)
    direct_rows: list[dict[str, Any]] | None = None
    if args.compare_direct:
        direct_rows = compare_rows({p: results[p] for p in pairs if p in results}, bench(DIRECT))
        wall = time.perf_counter() - t0
    # a folder of its own per run (and `latest` pointing at it), unless --report names one
    folder = Path(args.report) if args.report else run_folder(results_dir() / "bench", kind, args.suite, args.subset)
    config = {
        "kind": kind,
        "suites": ", ".join(suites),
        "instances": len(pairs),
        "params": params or "doc defaults",
        "workers": args.workers,
        "store": str(db),
        "wall time": f"{wall:.1f} s",
    }
    written = write_report(rows, folder, "Zomboss bench report", config, direct=direct_rows)
    report = written.path
    files = [str(db), *map(str, written.files)]
    if not args.report:
        files.append(str(point_latest(folder)))
    if args.llm_record:  # one recording per instance and run (bench.instance_options)
        runs = ["solve"] + ([DIRECT] if direct_rows is not None else [])
        for t, w in pairs:
            for what in runs:
                rec = Path(instance_options({"record": args.llm_record}, t, w, what)["record"])
                if rec.exists():
                    files.append(str(rec))
    if args.json:
        print(
            json.dumps(
                {
                    "db": str(db),
                    "report": str(report),
                    "wall_s": wall,
                    "workers": args.workers,
                    "results": rows,
                    "direct": direct_rows,
                    "files": files,
                    "plots_note": written.note,
                },
                indent=2,
                default=str,
            )
        )
    else:
        cells = []
        for r in rows:
            cells.append(
                (
                    r["target"],
                    r["workload"],
                    "yes" if r["verified"] else ("ERROR" if r["error"] else "no"),
                    str(r["default"] or "-"),
                    str(r["best"] or "-"),
                    f"{r['speedup']:.3f}" if r["speedup"] else "-",
                    f"{r['pct_bound']:.1%}" if r["pct_bound"] else "-",
                    str(r["simulations"] if r["simulations"] is not None else "-"),
                    f"{r['wall_s'] or 0:.1f}",
                )
            )
        columns = ("target", "workload", "verified", "default", "best", "speedup", "bound/best", "sims", "wall s")
        print_table(
            f"{kind} ({db})",
            columns,
            cells,
            plain=plain_wanted(args.plain),
            ids=("target", "workload"),
            right=columns[2:],
        )
        for r in rows:
            if r["error"]:
                print(f"{r['target']}:{r['workload']}: {r['error']}")
        if direct_rows is not None:
            from zomboss.results import compare_summary

            for line in compare_summary(direct_rows):
                print(line)
        if written.note:
            print(written.note)
        print(f"{sum(r['verified'] for r in rows)}/{len(rows)} verified; report: {report}; bench wall time {wall:.1f}s")
        print(files_text(files))
    return 0 if rows and all(r["verified"] for r in rows) else 1


# ---- compile ------------------------------------------------------------------------------------


def _dims(items: Sequence[str]) -> dict[str, int]:
    """`--dim NAME=VALUE` (repeatable): a value for a dynamic dimension of the model's inputs."""
    out: dict[str, int] = {}
    for item in items:
        name, eq, val = item.partition("=")
        try:
            value = int(val.strip(), 0) if eq and name.strip() else 0
        except ValueError:
            value = 0
        if value < 1:
            raise ZombossError(f"--dim {item!r}: expected NAME=VALUE with an integer VALUE >= 1 (e.g. --dim batch=1)")
        out[name.strip()] = value
    return out


def cmd_compile(args: argparse.Namespace) -> int:
    from zomboss.app.compile import compile_network, export_kernels, list_builtins
    from zomboss.app.display import files_text, plain_wanted, print_table

    if args.list:
        nets = list_builtins()
        if args.json:
            print(json.dumps(nets, indent=2))
            return 0
        names = list(nets[0]["targets"]) if nets else []
        cells = [
            (n["name"], *(f"{f['distinct']} ({f['instances']})" for f in n["targets"].values()), n["about"])
            for n in nets
        ]
        print_table(
            "built-in networks: distinct layers (layer instances) each target maps",
            ("network", *names, "about"),
            cells,
            plain=plain_wanted(args.plain),
            ids=("network",),
        )
        return 0
    if not args.model or not args.target:
        raise ZombossError("compile: give MODEL (an ONNX file or a built-in name) and --target TARGET, or --list")
    if args.time_limit is not None and not args.exhaustive:
        raise ZombossError("--time-limit limits an exhaustive run: use it with --exhaustive")
    params = _param_overrides(args.param)
    db = _db(args)
    compiled = compile_network(
        args.model,
        args.target,
        db,
        dims=_dims(args.dim),
        params=params,
        guide=args.guide,
        budget=args.budget,
        seed=args.seed,
        exhaustive=args.exhaustive,
        time_limit=args.time_limit,
        workers=args.workers,
        ray_address=args.ray,
        guide_options=_llm_options(args),
        progress=not args.json,
    )
    res = compiled.result
    files = [str(db)]
    note = ""
    if args.report:
        from zomboss.networks.answer import write_report

        config = {
            "network": res.network,
            "target": res.target,
            "kind": res.kind,
            "params": params or "doc defaults",
            "workers": args.workers,
            "store": str(db),
            "wall time": f"{res.wall_s:.1f} s",
        }
        written = write_report(res, Path(args.report), config)
        files += [str(f) for f in written.files]
        note = written.note
    if args.export:
        files += [str(f) for f in export_kernels(compiled, Path(args.export), params, db)]
    d = res.to_json() | {"files": files, "plots_note": note or None}
    if args.json:
        print(json.dumps(d, indent=2, default=str))
    else:
        from zomboss.networks.answer import TEXT_COLUMNS

        print_table(
            f"{res.network} on {res.target} ({res.kind}, {db})",
            TEXT_COLUMNS,
            res.text(),
            plain=plain_wanted(args.plain),
            ids=("layer",),
            right=TEXT_COLUMNS[1:],
        )
        for r in res.layers:
            if r.error:
                print(f"{r.layer.workload.id}: {r.error}")
        print("\n".join(res.summary()))
        for u in res.unsupported:  # why, per operator type
            print(f"  {u['op_type']} x{u['count']}: " + "; ".join(f"{r} ({c})" for r, c in u["reasons"].items()))
        for n in res.notes:
            print(f"note: {n}")
        if note:
            print(note)
        print(f"wall time {res.wall_s:.1f}s")
        print(files_text(files))
    if not res.layers:
        print(f"zomboss: no operator of {res.network} maps onto {res.target}", file=sys.stderr)
        return 1
    return 0 if res.complete else 1


# ---- parser -------------------------------------------------------------------------------------


def cmd_info(args: argparse.Namespace) -> int:
    """Where Zomboss keeps things and what it can do here: version, commit, folders, targets,
    optional extras."""
    import platform

    from zomboss.knowledge.cache import cache_dir
    from zomboss.target import target_names
    from zomboss.util import results_dir
    from zomboss.util.version import EXTRAS, commit, extras, version

    have = extras()
    names = list(target_names())
    info: dict[str, Any] = {
        "version": version(),
        "commit": commit(),
        "python": platform.python_version(),
        "kb_cache": str(cache_dir()),
        "results": str(results_dir()),
        "db": str(results_dir() / "zomboss.sqlite"),
        "bench_reports": str(results_dir() / "bench"),
        "targets": names,
        "extras": have,
    }
    extra_text = ", ".join(
        f"{name} ({'+'.join(EXTRAS[name])}): " + ("yes" if ok else f"no, pip install 'zomboss[{name}]'")
        for name, ok in have.items()
    )
    text = "\n".join(
        [
            f"{'version':>13}: {info['version']}",
            f"{'commit':>13}: {info['commit'] or 'unknown (not a git checkout)'}",
            f"{'python':>13}: {info['python']}",
            f"{'KB cache':>13}: {info['kb_cache']}",
            f"{'results':>13}: {info['results']}",
            f"{'results store':>13}: {info['db']}",
            f"{'bench reports':>13}: {info['bench_reports']} (latest: {info['bench_reports']}/latest)",
            f"{'targets':>13}: {', '.join(names)}",
            f"{'extras':>13}: {extra_text}",
        ]
    )
    _emit(args, info, text)
    return 0


# The metavars every command uses for the same kind of value.
TARGET, WORKLOAD = "TARGET", "WORKLOAD"
WORKLOAD_HELP = "a suite id (see `zomboss workloads`) or OP:KEY=VALUE,... (e.g. matmul:M=64,N=64,K=64)"
VERIFY_CHOICES = ("auto", "full", "sampled", "none")


def build_parser() -> argparse.ArgumentParser:
    """The `zomboss` parser: every argument has a help text that states its default."""
    from zomboss.util import results_dir

    common = argparse.ArgumentParser(add_help=False)
    common.add_argument(
        "--param", action="append", default=[], metavar="NAME=VALUE", help="override a doc parameter (repeatable)"
    )
    common.add_argument("--json", action="store_true", help="print JSON")
    common.add_argument(
        "--plain",
        action="store_true",
        help="plain text tables (no borders, colours or folding); automatic when stdout is not a terminal",
    )
    store = argparse.ArgumentParser(add_help=False)
    store.add_argument(
        "--db",
        default=None,
        metavar="FILE",
        help=f"results store (default: {results_dir() / 'zomboss.sqlite'}, from $ZOMBOSS_RESULTS when set)",
    )
    budget = argparse.ArgumentParser(add_help=False)
    budget.add_argument(
        "--max-instructions",
        type=count(1),
        default=MAX_INSTRUCTIONS,
        metavar="N",
        help=f"stop after N executed instructions (default {MAX_INSTRUCTIONS:,}; hardware loops count every iteration)",
    )
    llm = argparse.ArgumentParser(add_help=False)  # the LLM guide's and the direct baseline's endpoint
    llm.add_argument(
        "--llm-base-url",
        type=url,
        default=None,
        metavar="URL",
        help="OpenAI-compatible endpoint (default: $OPENAI_BASE_URL)",
    )
    llm.add_argument("--llm-model", default=None, metavar="NAME", help="model name (default: $ZOMBOSS_LLM_MODEL)")
    llm.add_argument(
        "--llm-timeout", type=seconds, default=None, metavar="S", help="seconds per request (default: the client's)"
    )
    llm.add_argument(
        "--llm-max-rounds",
        type=count(1),
        default=None,
        metavar="N",
        help="guide rounds per search (default: the guide's)",
    )
    llm.add_argument(
        "--llm-record",
        default=None,
        metavar="FILE.jsonl",
        help="record every call (bench: one FILE.<target>.<workload>.<run>.jsonl per instance)",
    )
    llm.add_argument("--llm-replay", default=None, metavar="FILE.jsonl", help="replay the calls --llm-record wrote")

    p = argparse.ArgumentParser(
        prog="zomboss",
        description="Verified kernels for new accelerators from literate ISA docs.",
        formatter_class=HelpFormatter,
    )
    p.add_argument("--version", action=VersionAction)
    sub = p.add_subparsers(dest="cmd", required=True, metavar="COMMAND")

    kb = sub.add_parser("kb", help="the knowledge base: build, query, check", formatter_class=HelpFormatter)
    kbs = kb.add_subparsers(dest="kbcmd", required=True, metavar="KBCOMMAND")
    b = kbs.add_parser(
        "build",
        parents=[common],
        help="parse docs, write the KB artifact, print fact/rule counts",
        formatter_class=HelpFormatter,
    )
    b.add_argument(
        "targets", nargs="*", metavar="TARGET|DOC.md", help="registered targets or doc paths (default: every target)"
    )
    b.add_argument("--out", metavar="FILE.lp", help="write the self-contained ASP program (loads in stock clingo)")
    b.add_argument("--no-cache", action="store_true", help="rebuild even if a cached artifact exists")
    b.set_defaults(fn=cmd_kb_build)
    q = kbs.add_parser(
        "query", parents=[common], help="print the KB atoms matching an ASP atom pattern", formatter_class=HelpFormatter
    )
    q.add_argument("target", metavar="TARGET|DOC.md", help="a registered target or the path of a doc")
    q.add_argument("atom", metavar="ATOM", help="e.g. 'param(dim,V)', 'capacity(M,R)', 'rule(Id)'")
    q.set_defaults(fn=cmd_kb_query)
    c = kbs.add_parser(
        "check",
        parents=[common, budget],
        help="check a mapping (.json) or a program; exit 1 if illegal",
        formatter_class=HelpFormatter,
    )
    c.add_argument("target", metavar="TARGET|DOC.md", help="a registered target or the path of a doc")
    c.add_argument(
        "file",
        metavar="FILE",
        help='a mapping (.json: {"workload": ..., "mapping": ...}, the mapping of `zomboss default '
        "TARGET WORKLOAD --json`) or a program file",
    )
    c.add_argument(
        "--asp-limit",
        type=count(0),
        default=20_000,
        metavar="N",
        help="clingo cross-checks the first N executed instructions (0: all)",
    )
    c.set_defaults(fn=cmd_kb_check)

    w = sub.add_parser("workloads", parents=[common], help="list the suite instances", formatter_class=HelpFormatter)
    w.add_argument("target", nargs="?", metavar=TARGET, help="one target's suite (default: every target's)")
    w.set_defaults(fn=cmd_workloads)

    d = sub.add_parser(
        "default",
        parents=[common],
        help="Candidate-0: the compiler default, simulated and verified",
        formatter_class=HelpFormatter,
    )
    d.add_argument("target", metavar=TARGET, help="a registered target (see `zomboss info`)")
    d.add_argument("workload", metavar=WORKLOAD, help=WORKLOAD_HELP)
    d.add_argument(
        "--verify",
        choices=VERIFY_CHOICES,
        default="auto",
        help="full: functional simulation against NumPy; none: timing only (steady loops extrapolated); "
        "sampled: timing only, and --samples output blocks (the first, the last, random ones) "
        "simulated functionally and compared with NumPy; "
        "auto (default): full unless the operands are too large to allocate or the kernel executes "
        "more than 20M instructions (then timing only, and the result says why)",
    )
    d.add_argument(
        "--samples", type=count(1), default=8, metavar="N", help="output blocks --verify sampled checks (default 8)"
    )
    d.add_argument("--seed", type=seed, default=0, metavar="N", help="the seed of the sampled blocks and their inputs")
    d.set_defaults(fn=cmd_default)

    sp = sub.add_parser(
        "space",
        parents=[common],
        help="the mapping space: knobs, domains, constraints, skeletons",
        formatter_class=HelpFormatter,
    )
    sp.add_argument("target", metavar=TARGET, help="a registered target (see `zomboss info`)")
    sp.add_argument("workload", metavar=WORKLOAD, help=WORKLOAD_HELP)
    sp.add_argument(
        "--count-seconds", type=seconds, default=4.0, metavar="S", help="CP-SAT budget for counting legal mappings"
    )
    sp.set_defaults(fn=cmd_space)

    so = sub.add_parser(
        "solve",
        parents=[common, store, llm],
        help="guided search for a faster verified kernel",
        formatter_class=HelpFormatter,
    )
    so.add_argument(
        "--strict-llm",
        action="store_true",
        help="with --guide llm: exit 3 if the LLM guide fell back to the cost guide (the kernel is still stored)",
    )
    so.add_argument("target", metavar=TARGET, help="a registered target (see `zomboss info`)")
    so.add_argument("workload", metavar=WORKLOAD, help=WORKLOAD_HELP)
    so.add_argument("--guide", default="cost", choices=GUIDE_NAMES, help="what proposes the candidates")
    so.add_argument(
        "--budget", type=count(1), default=32, metavar="N", help="timing-only simulations of searched candidates"
    )
    so.add_argument("--seed", type=seed, default=0, metavar="N", help="the search's seed")
    so.add_argument("--exhaustive", action="store_true", help="simulate or prune (sound bound) every legal mapping")
    so.add_argument(
        "--time-limit",
        type=seconds,
        default=None,
        metavar="S",
        help="stop an exhaustive run after S seconds (default: no limit)",
    )
    so.add_argument(
        "--gap",
        type=fraction,
        default=None,
        metavar="G",
        help="stop an exhaustive run once the incumbent is proven within G (a fraction, 0.02 = 2%%) of the optimum "
        "(default: run to the optimum)",
    )
    so.add_argument(
        "--fresh",
        nargs="?",
        const="kind",
        default=None,
        choices=("kind", "all"),
        help="forget this instance's stored results and simulations first: of this kind of run only "
        "(guided or exhaustive; `--fresh` alone), or of every kind (`--fresh=all`) (default: keep them)",
    )
    so.add_argument(
        "--verify",
        choices=VERIFY_CHOICES,
        default="auto",
        help="how Candidate-0 and the winner are verified (candidates are timed only): full: functional "
        "simulation against NumPy on two input seeds; sampled: --samples output blocks per seed simulated "
        "functionally and compared with NumPy (for kernels too large to verify whole); none: timing only; "
        "auto (default): full unless the operands are too large to allocate, then sampled (the result's "
        "verified_by and verify_reason say which and why)",
    )
    so.add_argument(
        "--samples",
        type=count(1),
        default=8,
        metavar="N",
        help="output blocks --verify sampled checks per seed (default 8)",
    )
    so.add_argument(
        "--jobs",
        type=count(1),
        default=None,
        metavar="N",
        help="simulations run at once in worker processes, ahead of the guided search, which decides as with 1 "
        "(default: the usable CPUs, at most 4; capped at the usable CPUs)",
    )
    so.set_defaults(fn=cmd_solve)

    dr = sub.add_parser(
        "direct",
        parents=[common, store, llm],
        help="direct-generation baseline: an LLM writes the program",
        formatter_class=HelpFormatter,
    )
    dr.add_argument("target", metavar=TARGET, help="a registered target (see `zomboss info`)")
    dr.add_argument("workload", metavar=WORKLOAD, help=WORKLOAD_HELP)
    dr.add_argument(
        "--iterations", type=count(1), default=None, metavar="N", help="model turns (default 15/20/25 by level)"
    )
    dr.add_argument("--seed", type=seed, default=0, metavar="N", help="the client's seed")
    dr.set_defaults(fn=cmd_direct)

    s = sub.add_parser(
        "simulate",
        parents=[common, budget],
        help="run a program file on the simulator and verify it",
        formatter_class=HelpFormatter,
    )
    s.add_argument("target", metavar=TARGET, help="a registered target (see `zomboss info`)")
    s.add_argument(
        "program", metavar="PROGRAM", help="a program file with its sidecar beside it (what `zomboss export` writes)"
    )
    s.set_defaults(fn=cmd_simulate)

    e = sub.add_parser(
        "export",
        parents=[common, store],
        help="write the kernel in the target's native form",
        formatter_class=HelpFormatter,
    )
    e.add_argument("target", metavar=TARGET, help="a registered target (see `zomboss info`)")
    e.add_argument("workload", metavar=WORKLOAD, help=WORKLOAD_HELP)
    e.add_argument(
        "-o",
        "--output",
        required=True,
        metavar="FILE",
        help="the kernel file; a target may write companions next to it (all are listed)",
    )
    which = e.add_mutually_exclusive_group()
    which.add_argument(
        "--mapping",
        metavar="FILE.json",
        help="export this mapping's kernel (default: Candidate-0's)",
    )
    which.add_argument(
        "--best",
        action="store_true",
        help="export the verified winner the results store (--db) holds for this workload under the current KB "
        "and preset (refused when there is none: run `zomboss solve` first)",
    )
    e.set_defaults(fn=cmd_export)
    bn = sub.add_parser(
        "bench",
        parents=[common, store, llm],
        help="search every suite instance: results DB + report",
        formatter_class=HelpFormatter,
    )
    bn.add_argument("--suite", default="all", metavar="TARGET|all", help="a target's suite, or every target's")
    bn.add_argument("--guide", default="cost", choices=GUIDE_NAMES, help="what proposes the candidates")
    bn.add_argument("--budget", type=count(1), default=32, metavar="N", help="timing-only simulations per instance")
    bn.add_argument("--seed", type=seed, default=0, metavar="N", help="the search's seed")
    bn.add_argument("--exhaustive", action="store_true", help="exhaustive branch and bound per instance")
    bn.add_argument(
        "--time-limit",
        type=seconds,
        default=None,
        metavar="S",
        help="per-instance limit for --exhaustive (default: no limit)",
    )
    bn.add_argument("--defaults-only", action="store_true", help="only Candidate-0 of every instance (no search)")
    bn.add_argument(
        "--workers",
        type=workers,
        default=usable_cpus(),
        metavar="N",
        help=f"local process pool size, at least 1, capped at the CPU count ({usable_cpus()} here; the default)",
    )
    bn.add_argument(
        "--ray",
        default=None,
        metavar="ADDRESS",
        help="fan out over a Ray cluster at ADDRESS, or 'local' to start one for this run (zomboss[ray])",
    )
    bn.add_argument(
        "--report",
        default=None,
        metavar="DIR",
        help="write report.md and the plots into DIR (default: a new folder per run under "
        f"{results_dir() / 'bench'}, named after its time, kind and suite, with `latest` pointing at it)",
    )
    bn.add_argument(
        "--fresh",
        nargs="?",
        const="kind",
        default=None,
        choices=("kind", "all"),
        help="forget stored results of these instances first: of this kind of run only (`--fresh` alone), "
        "or of every kind (`--fresh=all`) (default: keep and reuse them)",
    )
    bn.add_argument(
        "--only",
        action="extend",
        type=ids,
        metavar="WORKLOAD[,WORKLOAD...]",
        help="restrict to these suite ids (comma-separated or repeated)",
    )
    bn.add_argument("--subset", action="store_true", help="one representative (smallest) instance per op family")
    bn.add_argument(
        "--compare-direct",
        action="store_true",
        help="with --guide llm: also run the direct-generation baseline on every instance and report tokens and verified kernels of both",
    )
    bn.set_defaults(fn=cmd_bench)

    cp = sub.add_parser(
        "compile",
        parents=[common, store, llm],
        help="a whole network (ONNX or built-in): every distinct layer searched, the network against Candidate-0",
        formatter_class=HelpFormatter,
    )
    cp.add_argument(
        "model",
        nargs="?",
        metavar="MODEL",
        help="an ONNX file (weights not needed) or a built-in network name (see --list)",
    )
    cp.add_argument("--target", metavar=TARGET, default=None, help="a registered target (see `zomboss info`)")
    cp.add_argument("--list", action="store_true", help="list the built-in networks and what each target maps")
    cp.add_argument(
        "--dim",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="the value of a dynamic input dimension of the model (repeatable; required for each one)",
    )
    cp.add_argument("--guide", default="cost", choices=GUIDE_NAMES, help="what proposes the candidates")
    cp.add_argument("--budget", type=count(1), default=32, metavar="N", help="timing-only simulations per layer")
    cp.add_argument("--seed", type=int, default=0, metavar="N", help="the search's seed")
    cp.add_argument("--exhaustive", action="store_true", help="exhaustive branch and bound per layer")
    cp.add_argument(
        "--time-limit",
        type=seconds,
        default=None,
        metavar="S",
        help="per-layer limit for --exhaustive (default: no limit)",
    )
    cp.add_argument(
        "--workers",
        type=workers,
        default=usable_cpus(),
        metavar="N",
        help=f"layers solved at once in a local process pool, capped at the CPU count ({usable_cpus()} here; "
        "the default)",
    )
    cp.add_argument(
        "--ray",
        default=None,
        metavar="ADDRESS",
        help="fan the layers out over a Ray cluster at ADDRESS, or 'local' to start one for this run (zomboss[ray])",
    )
    cp.add_argument(
        "--report",
        default=None,
        metavar="DIR",
        help="write report.md and the plot of where the time goes (time.png, time.svg) into DIR (default: no report)",
    )
    cp.add_argument(
        "--export",
        default=None,
        metavar="DIR",
        help="write every layer's verified kernel in the target's native form and manifest.json (node -> kernel "
        "file) into DIR (default: no export)",
    )
    cp.set_defaults(fn=cmd_compile)

    i = sub.add_parser(
        "info",
        parents=[common],
        help="version, commit, where the KB cache and the results are, targets, optional extras",
        formatter_class=HelpFormatter,
    )
    i.set_defaults(fn=cmd_info)
    return p


def solve_jobs(asked: int | None) -> int:
    """`solve --jobs`: the usable CPUs (at most a batch of proposals) by default, and never
    more than the usable CPUs (said on stderr)."""
    from zomboss.solvers.search import SolveConfig

    return min(usable_cpus(), SolveConfig.batch) if asked is None else cap_at_cpus(asked, "--jobs")


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return int(args.fn(args))
    except ZombossError as e:
        print(f"zomboss: {e}", file=sys.stderr)
        return e.exit_code
    except BrokenPipeError:  # output piped into `head` and closed early
        sys.stderr.close()
        return 0
    except KeyboardInterrupt:
        print("zomboss: interrupted", file=sys.stderr)
        return 130
    except OSError as e:  # a file or folder of the user's that cannot be read or written
        if e.filename is None or os.environ.get("ZOMBOSS_DEBUG"):
            return _internal(e)
        print(f"zomboss: {e.filename}: {e.strerror or e}", file=sys.stderr)
        return 2
    except RecursionError:
        print("zomboss: input nested too deeply to process (see docs/archdoc.md, Limits)", file=sys.stderr)
        return 2
    except MemoryError:
        print(
            "zomboss: out of memory (an input beyond the documented limits? see docs/archdoc.md, Limits)",
            file=sys.stderr,
        )
        return 2
    except Exception as e:  # noqa: BLE001 - internal bugs: one line, traceback on request
        return _internal(e)


def _internal(e: Exception) -> int:
    if os.environ.get("ZOMBOSS_DEBUG"):
        raise e
    print(f"zomboss: internal error: {type(e).__name__}: {e} (set ZOMBOSS_DEBUG=1 for a traceback)", file=sys.stderr)
    return 3


if __name__ == "__main__":
    sys.exit(main())
