"""Open-loop overhead: what our open-loop schedule (dbs_openloop.lua: one shared queue, a
mutex per transaction, per-second histograms) costs the client, against sysbench's own
closed loop on the same server and connections.

Per repeat, interleaved in a rotating order: (a) closed loop at `threads` connections; (b) open
loop at 2× (a)'s rate, so the schedule is always behind and every connection always busy —
(b)'s achieved rate is the most the open-loop driver can serve (far beyond 2×, generating
the arrivals due starts to cost the client too). Prints the ratio (b)/(a) of
geometric-mean transactions/s with its CI (paired by repeat). Not a test: this machine is
shared and noisy, so read the figure with its interval.

    .venv/bin/python tests/benchmarks/open_loop_overhead.py [--repeats 5] [--duration 5] [--threads 4]
"""
from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

from dbstudies import servers, stats
from dbstudies.workloads.sysbench import Sysbench


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--duration", type=int, default=5)
    ap.add_argument("--threads", type=int, default=4)
    ap.add_argument("--workload", default="oltp_point_select")
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp, \
            servers.Server(servers.load_flavour("mariadb-10.11"), Path(tmp) / "srv") as server:
        server.start()
        sb = Sysbench(server, tables=1, table_size=10_000)
        sb.prepare(a.workload)
        closed, opened = [], []
        for r in range(a.repeats):
            order = ("closed", "open") if r % 2 == 0 else ("open", "closed")
            for kind in order:
                if kind == "closed":
                    res = sb.run(a.workload, a.threads, a.duration, seed=r)
                    closed.append(res.totals["tps"])
                else:
                    rate = 2 * (closed[-1] if closed else 100_000)
                    res = sb.run(a.workload, a.threads, a.duration, seed=r, rate=rate)
                    opened.append(res.open_loop.totals["achieved_rate"])
            print(f"repeat {r + 1}: closed {closed[-1]:,.0f}/s, open loop (saturated) "
                  f"{opened[-1]:,.0f}/s", flush=True)
    ratio, low, high = stats.paired_ratio(closed, opened)
    print(f"open loop / closed loop, transactions/s at {a.threads} connections ({a.workload}): "
          f"{ratio:.3f} [{low:.3f}, {high:.3f}] (geometric mean of {len(opened)} paired repeats, 95 % CI)")


if __name__ == "__main__":
    main()
