"""TPC-H at a scale factor with reference answers (0.01, 0.1, 1): generate (cached), load into
a private server of a flavour, run the 22 queries once and check every result against
DuckDB's reference answers. Prints the generate/load/index seconds per table and each
query's seconds and match; exits 1 if any query differs. Not part of the test suite (SF 0.01
is: tests/test_tpch.py).

    .venv/bin/python tests/benchmarks/tpch_answers.py [--sf 0.1] [--flavour mariadb-10.11] [--engine InnoDB]
"""
from __future__ import annotations

import argparse
import sys
import tempfile
import time

from dbstudies import servers, tpch


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sf", type=float, default=0.1)
    ap.add_argument("--flavour", default="mariadb-10.11")
    ap.add_argument("--engine", default="InnoDB", choices=tpch.ENGINES)
    a = ap.parse_args()
    reference = tpch.answers(a.sf)  # refuses a scale without answers before any work
    t0 = time.monotonic()
    data = tpch.generate(a.sf)
    print(f"data: {data} ({time.monotonic() - t0:.1f} s, cached after the first time)")
    with tempfile.TemporaryDirectory(prefix="dbs-tpch-") as tmp, \
            servers.Server(servers.load_flavour(a.flavour), tmp) as server:
        server.start()
        for t in tpch.load(server, data, engine=a.engine, say=lambda m: None):
            print(f"  {t['table']:<9} {t['rows']:>10,} rows  load {t['load_s']:6.1f} s  "
                  f"indexes {t['index_s']:6.1f} s")
        bad = []
        with server.connect(database="tpch") as c:
            cur = c.cursor()
            for n, sql in tpch.queries().items():
                t1 = time.monotonic()
                cur.execute(sql)
                rows = cur.fetchall()
                problems = tpch.check(n, rows, reference[n])
                bad += problems
                print(f"  Q{n:<2} {time.monotonic() - t1:7.2f} s  {'ok' if not problems else 'DIFFERS'}")
    print(f"{22 - len({p.split()[0] for p in bad})}/22 answers match at SF {a.sf:g} "
          f"on {a.flavour} ({a.engine})")
    for p in bad:
        print("  " + p)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
