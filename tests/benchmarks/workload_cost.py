"""Our sysbench workloads' own cost: is the Lua the bottleneck?

1. Prepare throughput on one private server: sysbench's bundled OLTP prepare (`--tables`
   × `--table-size`), our TPC-C-like prepare (`--warehouses`) and LinkBench-like prepare
   (`--nodes`), each with 2 loader threads; rows/s and MB/s (data + indexes from
   information_schema), and the ratios ours / bundled.
2. The client's CPU: each workload at `--threads` client threads for `--duration` s with
   the status sampler on; sysbench's CPU as a share of the server's (target ≤ 35 % at 16
   threads) and client CPU milliseconds per 1,000 transactions, with oltp_read_write as
   the reference.

Not a test (a shared 2-vCPU machine is noisy): it prints the figures.

    .venv/bin/python tests/benchmarks/workload_cost.py [--warehouses 10] [--nodes 1000000] [--threads 16] [--duration 20]
"""
from __future__ import annotations

import argparse
import sys
import tempfile
import time

from dbstudies import servers
from dbstudies.observe.probes import CPU_CLIENT, CPU_SERVER, Sampler
from dbstudies.workloads import family
from dbstudies.workloads.sysbench import Sysbench

TABLES = {"oltp": ["sbtest%"], "tpcc": ["warehouse", "district", "customer", "history", "orders",
                                       "new_orders", "order_line", "item", "stock"],
          "linkbench": ["nodetable", "linktable", "counttable"]}
OURS = ("tpcc", "linkbench")


def footprint(server: servers.Server, fam: str) -> tuple[int, float]:
    """Rows and MB (data + indexes) of a workload family's tables (rows counted exactly)."""
    names = TABLES[fam]
    where = " OR ".join(f"table_name LIKE '{n}'" for n in names)
    tables = [t for (t,) in server.query(f"SELECT table_name FROM information_schema.tables "
                                         f"WHERE table_schema = 'sbtest' AND ({where})")]
    rows = sum(int(server.query(f"SELECT COUNT(*) FROM sbtest.`{t}`")[0][0]) for t in tables)
    server.query("FLUSH TABLES")
    for t in tables:
        server.query(f"ANALYZE TABLE sbtest.`{t}`")
    mb = float(server.query(f"SELECT SUM(data_length + index_length) / 1048576 FROM information_schema.tables "
                            f"WHERE table_schema = 'sbtest' AND ({where})")[0][0])
    return rows, mb


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--warehouses", type=int, default=10)
    ap.add_argument("--nodes", type=int, default=1_000_000)
    ap.add_argument("--tables", type=int, default=8)
    ap.add_argument("--table-size", type=int, default=250_000)
    ap.add_argument("--threads", type=int, default=16)
    ap.add_argument("--duration", type=int, default=20)
    ap.add_argument("--flavour", default="mariadb-10.11")
    a = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="dbs-cost-") as tmp, \
            servers.Server(servers.load_flavour(a.flavour), tmp, max_clients=a.threads) as server:
        server.start()
        sb = Sysbench(server, tables=a.tables, table_size=a.table_size, warehouses=a.warehouses,
                      nodes=a.nodes)
        prepared = {}
        for workload in ("oltp_read_write", *OURS):
            t0 = time.monotonic()
            sb.prepare(workload, threads=2)
            seconds = time.monotonic() - t0
            rows, mb = footprint(server, family(workload))
            prepared[workload] = (rows / seconds, mb / seconds)
            print(f"prepare {workload:<16} {rows:>12,} rows {mb:8.0f} MB in {seconds:6.1f} s: "
                  f"{rows / seconds:>10,.0f} rows/s {mb / seconds:6.1f} MB/s", flush=True)
        ro, mo = prepared["oltp_read_write"]
        for workload in OURS:
            rt, mt = prepared[workload]
            print(f"prepare ratio {workload} / bundled oltp: {rt / ro:.2f} (rows/s), {mt / mo:.2f} (MB/s)")
        for workload in ("oltp_read_write", *OURS):
            sampler = Sampler(server)
            res = sb.run(workload, a.threads, a.duration, seed=1, observer=sampler)
            cpu = sampler.mean_cpu()
            client, srv = cpu.get(CPU_CLIENT, float("nan")), cpu.get(CPU_SERVER, float("nan"))
            per_1000 = client / 100 * res.totals["seconds"] / res.totals["events"] * 1000 * 1000
            print(f"run {workload:<16} {a.threads} threads: {res.totals['tps']:8.1f} tps, server "
                  f"{srv:5.0f} % CPU, sysbench {client:5.0f} % CPU = {client / srv * 100:4.1f} % of "
                  f"the server's (target ≤ 35 %), {per_1000:6.0f} client CPU ms per 1,000 transactions",
                  flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
