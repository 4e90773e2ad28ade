"""`zomboss compile`: a whole network on a target. The model (an ONNX file, a ModelProto or a
built-in name) is read and mapped onto the target's op families (`zomboss.networks`), its
distinct layers are solved exactly as `zomboss bench` solves suite instances (the same worker
pool or Ray cluster, the same results store and kinds), so a rerun, or another network sharing
layers, takes every finished search from the store and simulates nothing again; the answer
is then assembled, and on request written as a report and as every layer's exported kernel
with a manifest from ONNX node to kernel file.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from zomboss.app.bench import kind_of, run_bench
from zomboss.errors import ZombossError
from zomboss.networks.answer import LayerResult, NetworkResult
from zomboss.networks.builtin import BUILTINS
from zomboss.networks.families import families
from zomboss.networks.graph import Graph, NetworkError, load_model, read_graph
from zomboss.networks.layers import Mapped, map_graph
from zomboss.results import Store
from zomboss.results.report import publish
from zomboss.target import Target, config_key, get_target, target_names


@dataclass(frozen=True)
class Compiled:
    """A compile's answer and the mapping it was computed from."""

    result: NetworkResult
    mapped: Mapped


def read_network(model: Any, dims: Mapping[str, int]) -> Graph:
    """The graph of a built-in name, an ONNX file's path or a ModelProto, shapes static."""
    if isinstance(model, str) and model in BUILTINS:
        if dims:
            raise NetworkError(f"--dim: the built-in network {model} has no dynamic dimensions")
        return read_graph(BUILTINS[model].build(), model, {})
    if isinstance(model, str | Path):
        path = Path(model)
        return read_graph(load_model(path), str(path), dims)
    if type(model).__name__ == "ModelProto":
        return read_graph(model, model.graph.name or "model", dims)
    raise NetworkError(f"{model!r}: expected a built-in network name, an ONNX file or a ModelProto")


def map_network(graph: Graph, t: Target) -> Mapped:
    """`graph`'s operators on `t`'s op families, its shapes checked by `t.workload`."""
    return map_graph(graph, families(t.describe().get("ops", {})), t.workload)


def compile_network(
    model: Any,
    target: str,
    db: Path,
    *,
    dims: Mapping[str, int] | None = None,
    params: Mapping[str, int] | None = None,
    guide: str = "cost",
    budget: int = 32,
    seed: int = 0,
    exhaustive: bool = False,
    time_limit: float | None = None,
    workers: int = 1,
    ray_address: str | None = None,
    guide_options: Mapping[str, Any] | None = None,
    progress: bool = True,
) -> Compiled:
    """Map `model` onto `target`, solve every distinct layer through the results store `db`
    (what is stored under the same kind and configuration is reused), and answer."""
    t0 = time.perf_counter()
    t = get_target(target)
    params = dict(params or {})
    graph = read_network(model, dict(dims or {}))
    mapped = map_network(graph, t)
    distinct = mapped.distinct()
    kind = kind_of(guide, budget, seed, exhaustive)
    pairs = [(t.name, d.workload.id) for d in distinct]
    payloads = run_bench(
        pairs,
        db,
        kind=kind,
        guide=guide,
        budget=budget,
        seed=seed,
        time_limit=time_limit,
        workers=workers,
        ray_address=ray_address,
        params=params,
        guide_options=guide_options,
        progress=progress,
        label=f"compile {graph.name}",
    )
    optima = _optima(db, t.name, config_key(t.name, params))
    layers = tuple(
        LayerResult.of(d, payloads.get((t.name, d.workload.id), {"error": "not run"}), optima.get(d.workload.id))
        for d in distinct
    )
    clock = t.describe().get("clock_hz")
    result = NetworkResult(
        graph.name,
        t.name,
        kind,
        layers,
        tuple(mapped.unsupported()),
        mapped.notes,
        float(clock) if clock else None,
        time.perf_counter() - t0,
        str(db),
        (str(db),),
    )
    return Compiled(result, mapped)


def _optima(db: Path, target: str, config: str) -> dict[str, int]:
    """Proven optima of this target's workloads from the store's exhaustive runs (as `bench`)."""
    store = Store(db)
    try:
        return {
            r.workload: int(r.payload["optimum_cycles"])
            for r in store.rows(target, "exhaustive")
            if r.config == config and r.ok and r.payload.get("optimum_cycles")
        }
    finally:
        store.close()


def export_kernels(compiled: Compiled, folder: Path, params: Mapping[str, int], db: Path) -> list[Path]:
    """Every verified layer's searched kernel in the target's native form, named
    `layerNN_<op><suffix>`, and `manifest.json`: per layer its workload, files, nodes and
    cycles, per ONNX node its kernel file, and the unmapped operators (and parts of operators).
    Returns every file written, the manifest last."""
    from zomboss.app.cli import written_beside
    from zomboss.mapping import space

    res = compiled.result
    t = get_target(res.target)
    suffix = str(t.describe().get("kernel_suffix", ".kernel"))
    folder.mkdir(parents=True, exist_ok=True)
    kb = t.kb(dict(params))
    store = Store(db)
    files: list[Path] = []
    entries: list[dict[str, Any]] = []
    node_file: dict[str, str] = {}
    try:
        for i, r in enumerate(res.layers, 1):
            wl = r.layer.workload
            if not r.verified:
                entries.append(
                    {"workload": wl.id, "file": None, "nodes": list(r.layer.nodes), "why": r.error or "not verified"}
                )
                continue
            row = next(
                (
                    x
                    for x in store.rows(t.name, res.kind)
                    if x.workload == wl.id and x.config == config_key(t.name, params)
                ),
                None,
            )
            if row is None or "mapping" not in row.payload:
                raise ZombossError(f"{db}: the stored result of {wl.id} ({res.kind}) has no mapping to export")
            sp = space(kb, wl.op)
            m = sp.from_json(row.payload["mapping"], wl.shape, f"{db} ({res.kind})")
            out = folder / f"layer{i:02d}_{wl.op}{suffix}"
            with written_beside(out) as written:
                t.export(wl, out, dict(params), m)
            files += [Path(f) for f in written]
            entries.append(
                {
                    "workload": wl.id,
                    "file": out.name,
                    "files": [Path(f).name for f in written],
                    "nodes": list(r.layer.nodes),
                    "multiplicity": r.layer.multiplicity,
                    "cycles": r.cycles,
                    "default_cycles": r.default_cycles,
                }
            )
            node_file |= {n: out.name for n in r.layer.nodes}
    finally:
        store.close()
    manifest = {
        "network": res.network,
        "target": res.target,
        "kind": res.kind,
        "layers": entries,
        "nodes": node_file,
        # what no kernel computes: whole operators, and parts of mapped ones (`Conv bias`)
        "unmapped": [{"node": n, "op_type": u["op_type"]} for u in res.unsupported for n in u["nodes"]],
    }
    files.append(publish(folder / "manifest.json", (json.dumps(manifest, indent=2) + "\n").encode()))
    return files


def list_builtins() -> list[dict[str, Any]]:
    """The built-in networks with, per installed target, how many distinct layers and layer
    instances map onto it and how many operators do not."""
    out = []
    for b in BUILTINS.values():
        graph = read_graph(b.build(), b.name, {})
        fits = {}
        for name in target_names():
            mapped = map_network(graph, get_target(name))
            fits[name] = {
                "distinct": len(mapped.distinct()),
                "instances": sum(d.multiplicity for d in mapped.distinct()),
                "unmapped": len(mapped.unmapped),
            }
        out.append({"name": b.name, "about": b.about, "nodes": len(graph.nodes), "targets": fits})
    return out
