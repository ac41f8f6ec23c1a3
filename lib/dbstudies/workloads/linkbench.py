"""The LinkBench-like workload's checks: every count in `counttable` equals the number of
visible links it counts (and every visible link is counted), and the generators' samples
(`sysbench linkbench selftest`).
"""
from __future__ import annotations

from typing import Any

from .tpcc import _selftest

# counts that differ from the visible links they count, both ways
COUNTS = ("SELECT c.id, c.link_type, c.count, COALESCE(l.n, 0) FROM counttable c LEFT JOIN "
          "(SELECT id1, link_type, COUNT(*) n FROM linktable WHERE visibility = 1 GROUP BY id1, link_type) l "
          "ON l.id1 = c.id AND l.link_type = c.link_type WHERE c.count <> COALESCE(l.n, 0) "
          "UNION ALL "
          "SELECT l.id1, l.link_type, NULL, l.n FROM (SELECT id1, link_type, COUNT(*) n FROM linktable "
          "WHERE visibility = 1 GROUP BY id1, link_type) l LEFT JOIN counttable c "
          "ON c.id = l.id1 AND c.link_type = l.link_type WHERE c.id IS NULL")


def consistency(server: Any, db: str = "sbtest") -> list[str]:
    """Counts that are not the number of visible links they count (empty: all agree)."""
    with server.connect(database=db) as c:
        cur = c.cursor()
        cur.execute(COUNTS)
        bad = cur.fetchall()
        cur.close()
    return [f"{len(bad)} (node, link type) counts differ from their visible links, e.g. "
            f"(id, type, count, visible links) = {bad[0]}"] if bad else []


def selftest(binary: str = "sysbench") -> dict[str, Any]:
    """Samples of the Lua generators (Zipf ranks and nodes, out-degrees, payload lengths,
    payloads at compressibility 0 and 0.9); no server needed."""
    return _selftest("linkbench", binary)
