"""`bench` and another process's claim: it says that it waits, and takes the instance over when
the claim's lease runs out, whatever the claim's host name or PID (issue 29, item 5)."""

from __future__ import annotations

import sqlite3
import time

from zomboss.app.bench import run_bench
from zomboss.results import Store
from zomboss.results import store as store_module
from zomboss.target import config_key, get_target


def test_a_claim_of_another_host_is_waited_for_then_taken_over(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(store_module, "LEASE_S", 2.0)
    t = get_target("vta")
    wl = min(t.suite(), key=lambda w: (t.bound(w, {}), w.id)).id
    db = tmp_path / "s.db"
    Store(db).close()
    con = sqlite3.connect(db)
    with con:  # a live-looking claim of a process on another machine, which then stops
        con.execute(
            "INSERT INTO claims VALUES (?,?,?,?,?,?,?)",
            ("vta", wl, "default", config_key("vta", {}), "elsewhere:1:4242:abcd", time.time(), time.time()),
        )
    con.close()
    t0 = time.monotonic()
    results = run_bench([("vta", wl)], db, kind="default", progress=False)
    assert results[("vta", wl)]["verified"] is True
    assert time.monotonic() - t0 < 60
    err = capsys.readouterr().err
    assert f"vta:{wl}: waiting for elsewhere:1:4242:abcd, which claimed it" in err
    assert f"vta:{wl}: taking over the claim of elsewhere:1:4242:abcd (it sent no heartbeat for" in err
