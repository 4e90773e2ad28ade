"""The results store: one SQLite file, one row per (target, workload, kind, config key).

Every result is committed in its own transaction as soon as it exists, so a killed run loses
at most the instances in flight and a rerun resumes by skipping rows already present. The
config key hashes the target's KB digest (doc, grammar, rules, parameter overrides), so a
changed doc or override never reuses stale rows.
"""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

SCHEMA = """
CREATE TABLE IF NOT EXISTS results (
    target     TEXT NOT NULL,
    workload   TEXT NOT NULL,
    kind       TEXT NOT NULL,          -- 'default' | 'solve'
    config     TEXT NOT NULL,          -- KB digest + overrides
    ok         INTEGER NOT NULL,       -- 1: ran and verified, 0: failed or not verified
    cycles     INTEGER,
    wall_s     REAL,
    payload    TEXT NOT NULL,          -- the result JSON (or the error)
    created    REAL NOT NULL,
    PRIMARY KEY (target, workload, kind, config)
);
"""


@dataclass(frozen=True)
class Row:
    target: str
    workload: str
    kind: str
    config: str
    ok: bool
    cycles: int | None
    wall_s: float | None
    payload: dict[str, Any]


class Store:
    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self.db = sqlite3.connect(str(path), timeout=30)
        self.db.execute("PRAGMA journal_mode=WAL")
        self.db.executescript(SCHEMA)

    def close(self) -> None:
        self.db.close()

    def has(self, target: str, workload: str, kind: str, config: str) -> bool:
        cur = self.db.execute(
            "SELECT 1 FROM results WHERE target=? AND workload=? AND kind=? AND config=? AND ok=1",
            (target, workload, kind, config),
        )
        return cur.fetchone() is not None

    def put(self, target: str, workload: str, kind: str, config: str, ok: bool, payload: dict[str, Any]) -> None:
        with self.db:  # one transaction per result
            self.db.execute(
                "INSERT OR REPLACE INTO results VALUES (?,?,?,?,?,?,?,?,?)",
                (
                    target,
                    workload,
                    kind,
                    config,
                    int(ok),
                    payload.get("cycles"),
                    payload.get("wall_s"),
                    json.dumps(payload, default=str),
                    time.time(),
                ),
            )

    def rows(self, target: str | None = None, kind: str | None = None) -> Iterator[Row]:
        q = "SELECT target, workload, kind, config, ok, cycles, wall_s, payload FROM results"
        cond, args = [], []
        if target:
            cond.append("target=?")
            args.append(target)
        if kind:
            cond.append("kind=?")
            args.append(kind)
        if cond:
            q += " WHERE " + " AND ".join(cond)
        for t, w, k, c, ok, cyc, wall, payload in self.db.execute(q + " ORDER BY target, created", args):
            yield Row(t, w, k, c, bool(ok), cyc, wall, json.loads(payload))
