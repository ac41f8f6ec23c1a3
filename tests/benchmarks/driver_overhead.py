"""Driver overhead: the same sysbench run (a) directly and (b) through dbstudies.

(a) plain sysbench with its bundled workload and default text report;
(b) `Sysbench.run` — our Lua report wrapper, JSON parsing — with the 1 Hz status sampler on.
Both against one private server, interleaved (a,b / b,a alternating), ≥5 times each.
Prints the ratio of median TPS (b)/(a); the target is ≥ 0.98. Not a test: this machine is
shared and noisy, so read the figure, don't assert it.

    .venv/bin/python tests/benchmarks/driver_overhead.py [--repeats 7] [--duration 10]
"""
from __future__ import annotations

import argparse
import re
import statistics
import tempfile

from dbstudies import proc, servers
from dbstudies.sampler import Sampler
from dbstudies.sysbench import Sysbench


def direct_tps(sb: Sysbench, workload: str, threads: int, duration: int, seed: int) -> float:
    argv = sb.argv("run", threads=threads, duration=duration, seed=seed)
    i = argv.index(str(sb.binary))
    argv[i + 1] = workload  # the bundled script itself instead of our wrapper
    out = proc.run(argv, timeout=duration + 60).stdout
    return float(re.search(r"transactions:\s+\d+\s+\(([\d.]+) per sec\.\)", out).group(1))


def driver_tps(sb: Sysbench, server, workload: str, threads: int, duration: int, seed: int) -> float:
    res = sb.run(workload, threads, duration, seed=seed, observer=Sampler(server))
    return res.totals["tps"]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--duration", type=int, default=10)
    ap.add_argument("--threads", type=int, default=4)
    ap.add_argument("--workload", default="oltp_read_only")
    a = ap.parse_args()
    if a.repeats < 5:
        ap.error("--repeats must be ≥ 5")
    with tempfile.TemporaryDirectory(prefix="dbs-bench-") as tmp, \
            servers.Server(servers.load_flavour("mariadb-10.11"), tmp, max_clients=a.threads) as server:
        server.start()
        sb = Sysbench(server, tables=4, table_size=20000)
        sb.prepare(threads=2)
        sb.run(a.workload, a.threads, a.duration, seed=0)  # warm-up, discarded
        tps = {"a": [], "b": []}
        for i in range(a.repeats):
            for kind in ("ab" if i % 2 == 0 else "ba"):
                value = (direct_tps(sb, a.workload, a.threads, a.duration, i) if kind == "a"
                         else driver_tps(sb, server, a.workload, a.threads, a.duration, i))
                tps[kind].append(value)
                print(f"repeat {i + 1} ({kind}): {value:,.1f} tps", flush=True)
    ma, mb = statistics.median(tps["a"]), statistics.median(tps["b"])
    print(f"\n{a.workload}, {a.threads} threads, {a.duration} s × {a.repeats} each, interleaved")
    print(f"(a) direct sysbench        median TPS {ma:,.1f}  (min {min(tps['a']):,.1f}, max {max(tps['a']):,.1f})")
    print(f"(b) driver + 1 Hz sampler  median TPS {mb:,.1f}  (min {min(tps['b']):,.1f}, max {max(tps['b']):,.1f})")
    print(f"ratio (b)/(a) = {mb / ma:.4f}   (target ≥ 0.98)")


if __name__ == "__main__":
    main()
