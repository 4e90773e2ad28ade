"""The results store's integrity: a foreign database is refused unchanged, tables are known by
their column names, a special file is never opened as a store, rows of the wrong types are
skipped with a warning, and claims are leases (heartbeat and expiry) taken over with a message."""

from __future__ import annotations

import hashlib
import json
import os
import socket
import sqlite3
import stat
import time
from pathlib import Path

import pytest

from zomboss.results.store import COLUMNS, Store, StoreError, _me


def digest(p: Path) -> str:
    return hashlib.sha256(p.read_bytes()).hexdigest()


def test_a_foreign_database_is_refused_and_left_unchanged(tmp_path):
    db = tmp_path / "app.db"
    con = sqlite3.connect(db)
    con.execute("CREATE TABLE users (id INTEGER, name TEXT)")
    con.execute("INSERT INTO users VALUES (1, 'a')")
    con.commit()
    con.close()
    before = digest(db)
    with pytest.raises(StoreError, match=rf"{db}: not a Zomboss results store \(it has table users\)"):
        Store(db)
    assert digest(db) == before and sorted(p.name for p in tmp_path.iterdir()) == ["app.db"]
    con = sqlite3.connect(db)
    assert con.execute("PRAGMA journal_mode").fetchone()[0] != "wal"


def test_a_table_of_ours_with_other_column_names_is_refused(tmp_path):
    db = tmp_path / "s.db"
    con = sqlite3.connect(db)
    cols = ", ".join(f"c{i}" for i in range(len(COLUMNS["results"])))  # the right count, other names
    con.execute(f"CREATE TABLE results ({cols})")
    con.commit()
    con.close()
    with pytest.raises(StoreError, match=r"table 'results' is not a Zomboss table \(columns c0, c1"):
        Store(db)


@pytest.mark.skipif(os.geteuid() != 0, reason="creating a device node needs root")
def test_a_device_is_never_opened_as_a_store(tmp_path):
    node = tmp_path / "null"
    os.mknod(node, 0o666 | stat.S_IFCHR, os.makedev(1, 3))
    with pytest.raises(StoreError, match=rf"{node}: not a regular file .*refusing to use it as a results store"):
        Store(node)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["null"]


def test_rows_of_the_wrong_types_are_skipped_with_a_warning(tmp_path, capsys):
    s = Store(tmp_path / "s.db")
    s.put("t", "good", "exhaustive", "c", True, {"cycles": 5, "verified": True, "mapping": {}})
    bad = [
        {"cycles": "many"},
        {"verified": "yes"},
        {"mapping": [1, 2]},
        {"breakdown": "x"},
        {"wall_s": "slow"},
    ]
    for i, p in enumerate(bad):
        s.put("t", f"bad{i}", "default", "c", True, p)
    with s.db:
        s.db.execute("INSERT INTO results VALUES ('t','col','default','c',1,'abc',NULL,'{}',0)")
        s.db.execute("INSERT INTO results VALUES ('t','list','default','c',1,NULL,NULL,'[]',0)")
        s.db.execute("INSERT INTO trials VALUES ('t','w','c','m','timing',1,'x',NULL,'g',0.1,NULL,'{}',0)")
        s.db.execute("INSERT INTO trials VALUES ('t','w','c','n','timing',2,3,NULL,'g',0.1,'t','{}',0)")
        s.db.execute("INSERT INTO trials VALUES ('t','w','c','o','timing',3,3,1,'g',0.1,NULL,'{}',0)")
    assert [r.workload for r in s.rows()] == ["good"]
    assert [t.mapping for t in s.trials("t", "w", "c")] == ["o"]
    assert s.winner("t", "good", "c") is not None
    err = capsys.readouterr().err
    assert err.count("warning:") == len(bad) + 4 and "skipping an unreadable" in err
    assert "its payload's verified is a str" in err and "its cycles is a str" in err


def _claim_as(db: Path, owner: str, beat: float) -> None:
    con = sqlite3.connect(db)
    with con:
        con.execute("INSERT OR REPLACE INTO claims VALUES ('t','w','k','c',?,?,?)", (owner, beat, beat))
    con.close()


def test_a_claim_is_a_lease_taken_over_when_its_heartbeat_stops(tmp_path, capsys):
    db = tmp_path / "s.db"
    s = Store(db, lease=30)
    host, ns, pid, _ = _me().split(":")
    # another host, and a live process of this machine reusing our PID (another token):
    # neither is ever taken over while it sends heartbeats ...
    for owner in ("elsewhere:1:42:abcd", f"{host}:{ns}:{pid}:other"):
        _claim_as(db, owner, time.time())
        assert not s.claim("t", "w", "k", "c")
        assert s.claimant("t", "w", "k", "c")[0] == owner
        # ... and both are once it stops
        _claim_as(db, owner, time.time() - 31)
        assert s.claim("t", "w", "k", "c")
        assert f"t:w: taking over the claim of {owner} (it sent no heartbeat for 31 s)" in capsys.readouterr().err
    s.close()


def test_the_owner_refreshes_its_heartbeat(tmp_path):
    s = Store(tmp_path / "s.db", lease=0.4)
    assert s.claim("t", "w", "k", "c")
    time.sleep(0.6)
    owner, age = s.claimant("t", "w", "k", "c")
    assert owner == _me() and age < 0.4
    other = Store(tmp_path / "s.db", lease=0.4)
    assert not other.claim("t", "w", "k", "c") or other.claimant("t", "w", "k", "c")[0] == _me()
    s.close()


def test_an_older_zomboss_store_is_migrated(tmp_path, capsys):
    db = tmp_path / "old.db"
    Store(db).close()
    con = sqlite3.connect(db)
    with con:
        con.execute("DROP TABLE claims")
        con.execute(
            "CREATE TABLE claims (target TEXT NOT NULL, workload TEXT NOT NULL, kind TEXT NOT NULL, "
            "config TEXT NOT NULL, owner TEXT NOT NULL, created REAL NOT NULL, "
            "PRIMARY KEY (target, workload, kind, config))"
        )
        con.execute("INSERT INTO claims VALUES ('t','w','k','c',?,?)", (f"{socket.gethostname()}:1", time.time()))
    con.close()
    s = Store(db)
    assert s.claim("t", "w", "k", "c")  # an old claim has no heartbeat: taken over
    assert "taking over the claim" in capsys.readouterr().err
    assert [r[1] for r in s.db.execute("PRAGMA table_info(claims)")] == list(COLUMNS["claims"])
    s.close()
    json.dumps(COLUMNS)
