"""Our TPC-H load against the raw pipeline, on the same cached files and the same private
server: `tpch.load` (parallel LOAD DATA LOCAL INFILE per table, row counts checked,
secondary indexes, ANALYZE) vs the `mariadb` command-line client running one script —
CREATE TABLE, LOAD DATA LOCAL INFILE, then ALTER TABLE … ADD INDEX, table after table.
Interleaved (ours, raw, ours, raw, …) into two databases; prints each time, the medians
and the ratios ours/raw — of the load alone and with the (shared, cached) generation time
added to both sides. Target: ≤ 1.1. Not part of the test suite (a timed test on a shared
machine would be noise).

    .venv/bin/python tests/benchmarks/tpch_load.py [--sf 1] [--repeats 2] [--flavour mariadb-10.11]
"""
from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from dbstudies import servers, tpch


def raw_script(folder: Path, db: str, engine: str) -> str:
    """What an engineer would type: the tables, their data, then their indexes."""
    lines = [f"DROP DATABASE IF EXISTS {db};", f"CREATE DATABASE {db};", f"USE {db};"]
    for table, (columns, key) in tpch.SCHEMA.items():
        lines.append(f"CREATE TABLE {table} ({columns}, PRIMARY KEY ({key})) ENGINE={engine};")
        lines.append(f"LOAD DATA LOCAL INFILE '{folder / (table + '.tbl')}' INTO TABLE {table} "
                     f"{tpch.LOAD_OPTIONS};")
        ddl = tpch.index_ddl(table)
        if ddl:
            lines.append(ddl + ";")
    return "\n".join(lines) + "\n"


def raw(server: servers.Server, folder: Path, engine: str) -> float:
    t0 = time.monotonic()
    subprocess.run(["mariadb", f"--socket={server.socket}", f"--user={server.flavour.client_user}",
                    "--local-infile=1"], input=raw_script(folder, "tpch_raw", engine), text=True,
                   check=True)
    return time.monotonic() - t0


def ours(server: servers.Server, folder: Path, engine: str) -> float:
    t0 = time.monotonic()
    tpch.load(server, folder, engine=engine, say=lambda m: None)
    return time.monotonic() - t0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sf", type=float, default=1)
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--flavour", default="mariadb-10.11", help="a MariaDB flavour (the host's client)")
    ap.add_argument("--engine", default="InnoDB", choices=tpch.ENGINES)
    a = ap.parse_args()
    t0 = time.monotonic()
    folder = tpch.generate(a.sf)
    generated = tpch.verify(folder).get("seconds", time.monotonic() - t0)
    print(f"data: {folder} (generation {generated:.1f} s, from its manifest: cached after the first time)")
    times: dict[str, list[float]] = {"ours": [], "raw": []}
    with tempfile.TemporaryDirectory(prefix="dbs-load-") as tmp, \
            servers.Server(servers.load_flavour(a.flavour), tmp) as server:
        server.start()
        for i in range(a.repeats):
            for name, fn in (("ours", ours), ("raw", raw)):
                times[name].append(fn(server, folder, a.engine))
                print(f"  repeat {i + 1}: {name:<4} {times[name][-1]:7.1f} s", flush=True)
    o, r = statistics.median(times["ours"]), statistics.median(times["raw"])
    print(f"SF {a.sf:g} on {a.flavour} ({a.engine}), median of {a.repeats}: ours {o:.1f} s, "
          f"raw client {r:.1f} s")
    print(f"ratio load+index (ours/raw): {o / r:.2f}")
    print(f"ratio generate+load+index (ours/raw): {(generated + o) / (generated + r):.2f}  (target ≤ 1.1)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
