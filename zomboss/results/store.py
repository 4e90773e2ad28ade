"""The results store: one SQLite file shared by `solve` and `bench`.

* `trials`: one row per simulated candidate (target, workload, config key, mapping, mode,
  seed, cycles, verified, breakdown, guide, wall time, tokens), committed as each simulation
  completes, so a killed run loses at most the simulation in flight and a rerun finds every
  finished one (`trial`) instead of simulating it again.
* `results`: one summary row per (target, workload, kind, config): a default or a solve.
* `claims`: which process is working on which instance, so two `bench` processes on one store
  share the work instead of both doing all of it. A claim is a lease: its owner refreshes a
  heartbeat every few seconds, and a claim without one for `LEASE_S` (its owner died, hangs,
  or runs on a host that lost the store) is taken over with a message, whatever its host
  name or PID; one whose owner is provably gone (this machine, a PID that runs no more) at once.

The config key hashes the KB digest (doc, grammar, rules, parameter overrides) and the
target's code, so rows computed under another doc, override or simulator are never reused.
SQLite in WAL mode with a busy timeout serialises concurrent writers without losing rows.
A database with other tables, or with tables of other columns, is refused before anything in
it changes (Zomboss's own older stores are migrated); a row that cannot be decoded or holds a
value of the wrong type (a damaged store) is skipped with a warning on stderr.
"""

from __future__ import annotations

import json
import os
import secrets
import socket
import sqlite3
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from zomboss.errors import ZombossError
from zomboss.util import OutputError, check_output

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
    owner      TEXT NOT NULL,          -- host:pid-namespace:pid:token, one per process
    created    REAL NOT NULL,
    heartbeat  REAL NOT NULL DEFAULT 0, -- refreshed by the owner every HEARTBEAT_S (the lease)
    PRIMARY KEY (target, workload, kind, config)
);
"""

# The columns of each table by name, in order (a foreign table with as many columns is not ours).
COLUMNS = {
    "results": ("target", "workload", "kind", "config", "ok", "cycles", "wall_s", "payload", "created"),
    "trials": (
        "target", "workload", "config", "mapping", "mode", "seed", "cycles", "verified", "guide", "wall_s",
        "tokens", "payload", "created",
    ),
    "claims": ("target", "workload", "kind", "config", "owner", "created", "heartbeat"),
}  # fmt: skip
OLD_CLAIMS = COLUMNS["claims"][:-1]  # Zomboss stores from before the lease (migrated: a column added)

HEARTBEAT_S = 5.0  # how often a process refreshes its claims
LEASE_S = 30.0  # a claim whose heartbeat is older than this is taken over

# The types the readers of a results payload rely on (a row holding another type is skipped).
_NUM = (int, float)
PAYLOAD_TYPES: dict[str, tuple[type, ...]] = {
    **dict.fromkeys(
        ("cycles", "default_cycles", "bound_cycles", "space_bound_cycles", "optimum_cycles",
         "lower_bound_cycles", "simulations", "legal_mappings", "pruned", "tokens"),
        (int,),
    ),
    **dict.fromkeys(("wall_s", "speedup", "gap", "time_limit_s"), _NUM),
    **dict.fromkeys(("verified", "complete"), (bool,)),
    **dict.fromkeys(("mapping", "breakdown", "breakdown_default", "references"), (dict,)),
    **dict.fromkeys(("target", "workload", "error", "verified_by", "candidate", "guide_note"), (str,)),
}  # fmt: skip


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


def _pid_namespace() -> str:
    try:
        return os.readlink("/proc/self/ns/pid").removeprefix("pid:").strip("[]")
    except OSError:
        return ""


_TOKEN = secrets.token_hex(4)


def _me() -> str:
    """This process's claim owner: host, PID namespace, PID and a random token (a later
    process that reuses the PID is another owner)."""
    return f"{socket.gethostname()}:{_pid_namespace()}:{os.getpid()}:{_TOKEN}"


def _gone(owner: str) -> bool:
    """Whether the owner is provably dead: a process of this machine's PID namespace whose PID
    runs no more (then its lease need not run out first). Anything else (another host, another
    namespace, an older owner format, a live PID) is left to the lease."""
    parts = owner.split(":")
    if len(parts) != 4 or parts[0] != socket.gethostname() or not parts[1] or parts[1] != _pid_namespace():
        return False
    try:
        os.kill(int(parts[2]), 0)
    except ProcessLookupError:
        return True
    except (ValueError, OSError):
        return False
    return False


def _check_value(v: Any, types: tuple[type, ...], what: str) -> None:
    if v is not None and (not isinstance(v, types) or (isinstance(v, bool) and bool not in types)):
        raise TypeError(f"{what} is a {type(v).__name__}")


def _warn(msg: str) -> None:
    print(f"zomboss: warning: {msg}", file=sys.stderr)


class Store:
    """A results store; `lease` (seconds, default LEASE_S) is how long a claim lives without a
    heartbeat."""

    def __init__(self, path: Path, lease: float | None = None) -> None:
        self.path = Path(path)
        self.lease = LEASE_S if lease is None else lease
        self._beat: threading.Thread | None = None
        self._stop = threading.Event()
        self._warned: set[str] = set()
        try:
            check_output(self.path)
        except OutputError as e:
            raise StoreError(str(e).replace("refusing to write it", "refusing to use it as a results store")) from None
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self.db = sqlite3.connect(str(self.path), timeout=60)
        except (sqlite3.DatabaseError, OSError) as e:
            raise StoreError(f"{self.path}: not a usable results store ({e})") from None
        try:
            self._check_schema()
            self.db.execute("PRAGMA journal_mode=WAL")
            # every simulation is its own commit: in WAL mode, NORMAL keeps each one through a
            # crash or kill of the process (only a power loss may drop the last few) without an
            # fsync per commit, which cost a 30-simulation VTA solve about 70 ms
            self.db.execute("PRAGMA synchronous=NORMAL")
            self.db.executescript(SCHEMA)
        except sqlite3.DatabaseError as e:
            self.db.close()
            raise StoreError(f"{self.path}: not a usable results store ({e})") from None
        except StoreError:
            self.db.close()
            raise

    def _check_schema(self) -> None:
        """Refuse a database that has tables but is not a Zomboss store, before anything in it
        changes; tables are recognised by their column names. Zomboss's own stores from
        before the claims' lease get the heartbeat column."""
        entries = self.db.execute("SELECT type, name, tbl_name FROM sqlite_master").fetchall()
        tables = [n for (kind, n, _) in entries if kind == "table"]
        foreign = sorted(
            f"{kind} {n}"
            for (kind, n, on) in entries
            if kind in ("view", "trigger") or (on not in COLUMNS and not str(n).startswith("sqlite_"))
        )
        if foreign:
            raise StoreError(
                f"{self.path}: not a Zomboss results store (it has {', '.join(foreign)}); "
                "refusing to change it (give --db a new file or a Zomboss store)"
            )
        migrate = False
        for table in tables:
            if table not in COLUMNS:
                continue
            have = tuple(r[1] for r in self.db.execute(f"PRAGMA table_info({table})"))
            if table == "claims" and have == OLD_CLAIMS:
                migrate = True
            elif have != COLUMNS[table]:
                raise StoreError(
                    f"{self.path}: table {table!r} is not a Zomboss table (columns {', '.join(have)}; "
                    f"expected {', '.join(COLUMNS[table])}); refusing to change it"
                )
        if migrate:
            with self.db:
                self.db.execute("ALTER TABLE claims ADD COLUMN heartbeat REAL NOT NULL DEFAULT 0")

    def close(self) -> None:
        self._stop.set()
        if self._beat is not None:
            self._beat.join(timeout=5)
        self.db.close()

    def _skip(self, message: str) -> None:
        """Warn of a skipped row, once per store and message (rows are read more than once)."""
        if message not in self._warned:
            self._warned.add(message)
            _warn(message)

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
                for v, what in ((t, "target"), (w, "workload"), (k, "kind"), (c, "config"), (payload, "payload")):
                    if not isinstance(v, str):
                        raise TypeError(f"its {what} is a {type(v).__name__}")
                if ok not in (0, 1):
                    raise TypeError(f"its ok is {ok!r}")
                _check_value(cyc, (int,), "its cycles")
                _check_value(wall, _NUM, "its wall_s")
                data = json.loads(payload)
                if not isinstance(data, dict):
                    raise TypeError("its payload is not an object")
                for key, types in PAYLOAD_TYPES.items():
                    _check_value(data.get(key), types, f"its payload's {key}")
                yield Row(t, w, k, c, bool(ok), cyc, wall, data)
            except (ValueError, TypeError, RecursionError) as e:
                self._skip(f"{self.path}: skipping an unreadable result row {str(rec[:3])[:120]} ({e})")

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
            mapping, mode, seed, cycles, verified, guide, wall, tokens, payload = rec
            for v, what in ((mapping, "mapping"), (mode, "mode"), (guide, "guide"), (payload, "payload")):
                if not isinstance(v, str):
                    raise TypeError(f"its {what} is a {type(v).__name__}")
            if not isinstance(seed, int):
                raise TypeError(f"its seed is a {type(seed).__name__}")
            if verified not in (None, 0, 1):
                raise TypeError(f"its verified is {verified!r}")
            _check_value(cycles, (int,), "its cycles")
            _check_value(wall, _NUM, "its wall_s")
            _check_value(tokens, (int,), "its tokens")
            data = json.loads(payload)
            if not isinstance(data, dict):
                raise TypeError("its payload is not an object")
            return Trial(
                mapping, mode, seed, cycles, None if verified is None else bool(verified), guide, wall, tokens, data
            )
        except (ValueError, TypeError, RecursionError) as e:
            self._skip(
                f"{self.path}: skipping an unreadable trial row (mapping {str(rec[0])[:80]!r}, seed {rec[2]!r}) ({e})"
            )
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
        """True if this process may work on the instance: unclaimed, ours, or its claim's
        lease ran out (no heartbeat for `lease` seconds) or its owner is provably dead; a
        claim taken over is said on stderr. While this process holds claims, a thread
        refreshes their heartbeat."""
        me, now = _me(), time.time()
        try:
            with self.db:
                row = self.db.execute(
                    "SELECT owner, heartbeat FROM claims WHERE target=? AND workload=? AND kind=? AND config=?",
                    (target, workload, kind, config),
                ).fetchone()
                if row is not None and row[0] != me:
                    owner, beat = str(row[0]), row[1] if isinstance(row[1], int | float) else 0.0
                    if not _gone(owner) and now - beat < self.lease:
                        return False
                    why = "has ended" if _gone(owner) else f"sent no heartbeat for {now - beat:,.0f} s"
                    _warn(f"{target}:{workload}: taking over the claim of {owner} (it {why})")
                self.db.execute(
                    "INSERT OR REPLACE INTO claims VALUES (?,?,?,?,?,?,?)",
                    (target, workload, kind, config, me, now, now),
                )
        except sqlite3.DatabaseError as e:
            raise StoreError(f"{self.path}: cannot write ({e})") from None
        self._heartbeat()
        return True

    def claimant(self, target: str, workload: str, kind: str, config: str) -> tuple[str, float] | None:
        """Who holds the claim of an instance and how many seconds ago it last sent a heartbeat."""
        row = self.db.execute(
            "SELECT owner, heartbeat FROM claims WHERE target=? AND workload=? AND kind=? AND config=?",
            (target, workload, kind, config),
        ).fetchone()
        if row is None:
            return None
        beat = row[1] if isinstance(row[1], int | float) else 0.0
        return str(row[0]), time.time() - beat

    def _heartbeat(self) -> None:
        """Start the thread that refreshes this process's claims (on its own connection)."""
        if self._beat is not None and self._beat.is_alive():
            return
        me, path, every = _me(), str(self.path), min(HEARTBEAT_S, self.lease / 4)

        def beat() -> None:
            while not self._stop.wait(every):
                try:
                    db = sqlite3.connect(path, timeout=every)
                    try:
                        with db:
                            db.execute("UPDATE claims SET heartbeat=? WHERE owner=?", (time.time(), me))
                    finally:
                        db.close()
                except sqlite3.Error as e:
                    _warn(f"{path}: cannot refresh the claims' heartbeat ({e})")

        self._beat = threading.Thread(target=beat, name="zomboss-claims-heartbeat", daemon=True)
        self._beat.start()

    def release(self, target: str, workload: str, kind: str, config: str) -> None:
        self._write(
            "DELETE FROM claims WHERE target=? AND workload=? AND kind=? AND config=? AND owner=?",
            (target, workload, kind, config, _me()),
        )
