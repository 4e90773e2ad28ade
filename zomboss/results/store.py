"""The results store: one SQLite file shared by `solve` and `bench`.

* `trials`: one row per simulated candidate (target, workload, config key, mapping, mode,
  seed, cycles, verified, breakdown, guide, wall time, tokens), committed as each simulation
  completes, so a killed run loses at most the simulation in flight and a rerun finds every
  finished one (`trial`) instead of simulating it again.
* `results`: one summary row per (target, workload, kind, config): a default or a solve.
* `claims`: which process is working on which instance, so two `bench` processes on one store
  share the work instead of both doing all of it; a claim whose owner died is taken over.

The config key hashes the KB digest (doc, grammar, rules, parameter overrides) and the
target's code, so rows computed under another doc, override or simulator are never reused.
SQLite in WAL mode with a busy timeout serialises concurrent writers without losing rows.
A row that cannot be decoded (a foreign or damaged store) is skipped with a warning.
"""

from __future__ import annotations

import json
import os
import socket
import sqlite3
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from zomboss.errors import ZombossError

SCHEMA = """
CREATE TABLE IF NOT EXISTS results (
    target     TEXT NOT NULL,
    workload   TEXT NOT NULL,
    kind       TEXT NOT NULL,          -- 'default' | 'solve:<guide>:<budget>' | 'exhaustive'
    config     TEXT NOT NULL,          -- KB digest + overrides + target code
    ok         INTEGER NOT NULL,       -- 1: ran and verified, 0: failed or not verified
    cycles     INTEGER,
    wall_s     REAL,
    payload    TEXT NOT NULL,          -- the result JSON (or the error)
    created    REAL NOT NULL,
    PRIMARY KEY (target, workload, kind, config)
);
CREATE TABLE IF NOT EXISTS trials (
    target     TEXT NOT NULL,
    workload   TEXT NOT NULL,
    config     TEXT NOT NULL,
    mapping    TEXT NOT NULL,          -- Mapping.key(): the canonical mapping
    mode       TEXT NOT NULL,          -- timing | checked | verified
    seed       INTEGER NOT NULL,
    cycles     INTEGER,
    verified   INTEGER,                -- NULL: not verified (timing-only / checked)
    guide      TEXT NOT NULL,
    wall_s     REAL,
    tokens     INTEGER,
    payload    TEXT NOT NULL,          -- mapping JSON, breakdown, report
    created    REAL NOT NULL,
    PRIMARY KEY (target, workload, config, mapping, mode, seed)
);
CREATE TABLE IF NOT EXISTS claims (
    target     TEXT NOT NULL,
    workload   TEXT NOT NULL,
    kind       TEXT NOT NULL,
    config     TEXT NOT NULL,
    owner      TEXT NOT NULL,          -- host:pid
    created    REAL NOT NULL,
    PRIMARY KEY (target, workload, kind, config)
);
"""


class StoreError(ZombossError):
    """A results store that cannot be opened or is not a Zomboss store."""


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


@dataclass(frozen=True)
class Trial:
    mapping: str
    mode: str
    seed: int
    cycles: int | None
    verified: bool | None
    guide: str
    wall_s: float | None
    tokens: int | None
    payload: dict[str, Any]


FAMILIES = ("guided", "exhaustive", "default", "direct")  # what `--fresh` forgets one of


def kind_family(kind: str) -> str:
    """The family of a results row's kind: `solve:...` rows are `guided`; `exhaustive`,
    `default` and `direct` rows are their own."""
    return "guided" if kind.startswith("solve:") else kind


def trial_family(guide: str) -> str:
    """The family of a trial by the guide that simulated it: the exhaustive search's and the
    direct baseline's are their own; every other guide (and the winner's verification) is a
    guided search's."""
    return guide if guide in ("exhaustive", "direct") else "guided"


def _me() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"


def _alive(owner: str) -> bool:
    host, _, pid = owner.rpartition(":")
    if host != socket.gethostname():
        return True  # another machine's claim: trust it
    try:
        os.kill(int(pid), 0)
    except (ValueError, ProcessLookupError):
        return False
    except PermissionError:
        return True
    return True


def _warn(msg: str) -> None:
    print(f"zomboss: warning: {msg}", file=sys.stderr)


class Store:
    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self.db = sqlite3.connect(str(self.path), timeout=60)
            self.db.execute("PRAGMA journal_mode=WAL")
            self.db.executescript(SCHEMA)
        except (sqlite3.DatabaseError, OSError) as e:
            raise StoreError(f"{self.path}: not a usable results store ({e})") from None
        try:
            for table, cols in (("results", 9), ("trials", 13), ("claims", 6)):
                have = len(self.db.execute(f"PRAGMA table_info({table})").fetchall())
                if have != cols:
                    raise StoreError(f"{self.path}: table {table!r} is not a Zomboss table ({have} columns)")
        except sqlite3.DatabaseError as e:
            raise StoreError(f"{self.path}: not a usable results store ({e})") from None

    def close(self) -> None:
        self.db.close()

    def _write(self, sql: str, args: tuple[Any, ...]) -> None:
        try:
            with self.db:  # one transaction per row
                self.db.execute(sql, args)
        except sqlite3.DatabaseError as e:
            raise StoreError(f"{self.path}: cannot write ({e})") from None

    # ---- summary rows -----------------------------------------------------------------
    def has(self, target: str, workload: str, kind: str, config: str) -> bool:
        cur = self.db.execute(
            "SELECT 1 FROM results WHERE target=? AND workload=? AND kind=? AND config=? AND ok=1",
            (target, workload, kind, config),
        )
        return cur.fetchone() is not None

    def put(self, target: str, workload: str, kind: str, config: str, ok: bool, payload: dict[str, Any]) -> None:
        self._write(
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
        for rec in self.db.execute(q + " ORDER BY target, created", args):
            try:
                t, w, k, c, ok, cyc, wall, payload = rec
                data = json.loads(payload)
                if not isinstance(data, dict):
                    raise ValueError("payload is not an object")
                yield Row(str(t), str(w), str(k), str(c), bool(ok), cyc, wall, data)
            except (ValueError, TypeError) as e:
                _warn(f"{self.path}: skipping an unreadable result row ({e})")

    def winner(self, target: str, workload: str, config: str) -> Row | None:
        """The best verified search result (`solve` or `exhaustive`) of an instance under a
        config key: fully verified ones first (rows from before `verified_by` existed were
        all verified whole), then those verified on sampled output blocks, each by cycles;
        never a timed-only or failed one."""
        rank = {"full": 0, "sampled": 1}
        found = [
            r
            for r in self.rows(target)
            if r.workload == workload
            and r.config == config
            and r.ok
            and r.payload.get("verified") is True
            and (r.kind.startswith("solve:") or r.kind == "exhaustive")
            and r.payload.get("verified_by", "full") in rank
            and isinstance(r.payload.get("mapping"), dict)
            and isinstance(r.payload.get("cycles"), int)
        ]
        if not found:
            return None
        return min(found, key=lambda r: (rank[r.payload.get("verified_by", "full")], r.payload["cycles"], r.kind))

    # ---- trials -----------------------------------------------------------------------
    def trial(self, target: str, workload: str, config: str, mapping: str, mode: str, seed: int) -> Trial | None:
        cur = self.db.execute(
            "SELECT mapping, mode, seed, cycles, verified, guide, wall_s, tokens, payload FROM trials "
            "WHERE target=? AND workload=? AND config=? AND mapping=? AND mode=? AND seed=?",
            (target, workload, config, mapping, mode, seed),
        )
        rec = cur.fetchone()
        if rec is None:
            return None
        return self._trial(rec)

    def put_trial(
        self,
        target: str,
        workload: str,
        config: str,
        mapping: str,
        mode: str,
        seed: int,
        *,
        cycles: int | None,
        verified: bool | None,
        guide: str,
        wall_s: float,
        tokens: int | None,
        payload: dict[str, Any],
    ) -> None:
        self._write(
            "INSERT OR REPLACE INTO trials VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)",
            (
                target,
                workload,
                config,
                mapping,
                mode,
                seed,
                cycles,
                None if verified is None else int(verified),
                guide,
                wall_s,
                tokens,
                json.dumps(payload, default=str),
                time.time(),
            ),
        )

    def trials(self, target: str, workload: str, config: str) -> list[Trial]:
        out = []
        for rec in self.db.execute(
            "SELECT mapping, mode, seed, cycles, verified, guide, wall_s, tokens, payload FROM trials "
            "WHERE target=? AND workload=? AND config=? ORDER BY created",
            (target, workload, config),
        ):
            t = self._trial(rec)
            if t is not None:
                out.append(t)
        return out

    def _trial(self, rec: tuple[Any, ...]) -> Trial | None:
        """A trials row as a record; an undecodable one is skipped with a warning."""
        try:
            return Trial(
                rec[0],
                rec[1],
                int(rec[2]),
                rec[3],
                None if rec[4] is None else bool(rec[4]),
                rec[5],
                rec[6],
                rec[7],
                json.loads(rec[8]),
            )
        except (ValueError, TypeError) as e:
            _warn(f"{self.path}: skipping an unreadable trial row ({e})")
            return None

    def forget(self, target: str, workload: str, config: str, family: str = "all") -> None:
        """`--fresh`: drop an instance's summaries and trials of one family of runs (`guided`,
        `exhaustive`, `default`, `direct`; see `kind_family`), or of every family (`all`), so a
        fresh guided search never deletes an exhaustive optimum."""
        if family == "all":
            self._write("DELETE FROM trials WHERE target=? AND workload=? AND config=?", (target, workload, config))
            self._write("DELETE FROM results WHERE target=? AND workload=? AND config=?", (target, workload, config))
            return
        if family not in FAMILIES:
            raise ValueError(f"unknown family of runs {family!r} (expected one of {', '.join(FAMILIES)}, all)")
        kinds = {
            k
            for (k,) in self.db.execute(
                "SELECT DISTINCT kind FROM results WHERE target=? AND workload=? AND config=?",
                (target, workload, config),
            )
            if kind_family(str(k)) == family
        }
        for k in sorted(kinds):
            self._write(
                "DELETE FROM results WHERE target=? AND workload=? AND kind=? AND config=?",
                (target, workload, k, config),
            )
        guides = {
            g
            for (g,) in self.db.execute(
                "SELECT DISTINCT guide FROM trials WHERE target=? AND workload=? AND config=?",
                (target, workload, config),
            )
            if trial_family(str(g)) == family
        }
        for g in sorted(guides):
            self._write(
                "DELETE FROM trials WHERE target=? AND workload=? AND config=? AND guide=?",
                (target, workload, config, g),
            )

    # ---- claims -----------------------------------------------------------------------
    def claim(self, target: str, workload: str, kind: str, config: str) -> bool:
        """True if this process may work on the instance (unclaimed, ours, or its owner died)."""
        me = _me()
        try:
            with self.db:
                row = self.db.execute(
                    "SELECT owner FROM claims WHERE target=? AND workload=? AND kind=? AND config=?",
                    (target, workload, kind, config),
                ).fetchone()
                if row is not None and row[0] != me and _alive(row[0]):
                    return False
                self.db.execute(
                    "INSERT OR REPLACE INTO claims VALUES (?,?,?,?,?,?)",
                    (target, workload, kind, config, me, time.time()),
                )
        except sqlite3.DatabaseError as e:
            raise StoreError(f"{self.path}: cannot write ({e})") from None
        return True

    def release(self, target: str, workload: str, kind: str, config: str) -> None:
        self._write(
            "DELETE FROM claims WHERE target=? AND workload=? AND kind=? AND config=? AND owner=?",
            (target, workload, kind, config, _me()),
        )
