"""The TPC-C-like workload's checks: the standard's consistency conditions 1–4 (clause
3.3.2) on a loaded or run database, and the generators' samples (`sysbench tpcc selftest`).
"""
from __future__ import annotations

import json
import os
from typing import Any

from ..core import proc
from . import LUA_DIR

# the standard's consistency conditions 1–4, each a query returning the offending rows
CONDITIONS = {
    1: ("W_YTD = sum(D_YTD) of the warehouse's districts",
        "SELECT w_id, w_ytd, SUM(d_ytd) FROM warehouse JOIN district ON d_w_id = w_id "
        "GROUP BY w_id, w_ytd HAVING w_ytd <> SUM(d_ytd)"),
    2: ("D_NEXT_O_ID - 1 = max(O_ID) = max(NO_O_ID) per district",
        "SELECT d_w_id, d_id, d_next_o_id, mo, mno FROM district "
        "JOIN (SELECT o_w_id, o_d_id, MAX(o_id) mo FROM orders GROUP BY o_w_id, o_d_id) o "
        "  ON o_w_id = d_w_id AND o_d_id = d_id "
        "LEFT JOIN (SELECT no_w_id, no_d_id, MAX(no_o_id) mno FROM new_orders GROUP BY no_w_id, no_d_id) n "
        "  ON no_w_id = d_w_id AND no_d_id = d_id "
        "WHERE d_next_o_id - 1 <> mo OR (mno IS NOT NULL AND mno <> mo)"),
    3: ("max(NO_O_ID) - min(NO_O_ID) + 1 = rows in NEW-ORDER per district",
        "SELECT no_w_id, no_d_id FROM new_orders GROUP BY no_w_id, no_d_id "
        "HAVING MAX(no_o_id) - MIN(no_o_id) + 1 <> COUNT(*)"),
    4: ("sum(O_OL_CNT) = rows in ORDER-LINE per district",
        "SELECT o_w_id, o_d_id FROM (SELECT o_w_id, o_d_id, SUM(o_ol_cnt) s FROM orders "
        "GROUP BY o_w_id, o_d_id) o JOIN (SELECT ol_w_id, ol_d_id, COUNT(*) c FROM order_line "
        "GROUP BY ol_w_id, ol_d_id) l ON ol_w_id = o_w_id AND ol_d_id = o_d_id WHERE s <> c"),
}


def consistency(server: Any, db: str = "sbtest") -> list[str]:
    """The consistency conditions 1–4 that do not hold, each with an example of where
    (empty: all hold)."""
    problems = []
    with server.connect(database=db) as c:
        cur = c.cursor()
        for n, (what, sql) in CONDITIONS.items():
            cur.execute(sql)
            bad = cur.fetchall()
            if bad:
                problems.append(f"condition {n} ({what}) fails in {len(bad)} place(s), e.g. {bad[0]}")
        cur.close()
    return problems


def selftest(binary: str = "sysbench") -> dict[str, Any]:
    """Samples of the Lua key generators (NURand, the run-time C for last names, last
    names), printed by the workload's `selftest` command; no server needed."""
    return _selftest("tpcc", binary)


def _selftest(workload: str, binary: str) -> dict[str, Any]:
    """The JSON line a workload's `selftest` command prints (seeded: --rand-seed=7)."""
    from .sysbench import WRAPPER
    env = {**os.environ, "DBSTUDIES_WORKLOAD": workload, "DBSTUDIES_LUA_DIR": str(LUA_DIR)}
    out = proc.run([binary, str(WRAPPER), "--rand-seed=7", "selftest"], env=env, timeout=60).stdout
    line = next(ln for ln in out.splitlines() if ln.startswith('{"kind":"selftest"'))
    return json.loads(line)
