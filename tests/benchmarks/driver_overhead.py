"""Driver overhead: the same sysbench run (a) directly and (b) through dbstudies.

(a) plain sysbench with its bundled workload and default text report;
(b) `Sysbench.run` — our Lua report wrapper, JSON parsing — with the 1 Hz status sampler on;
(c) the same without the sampler, to tell the sampler's cost from the wrapper's.
All against one private server, interleaved in a rotating order, ≥5 times each.
Prints the ratio (b)/(a) of geometric-mean TPS (target ≥ 0.98) with its CI, Welch's and
Mann–Whitney's p-values. Not a test: this machine is shared and noisy, so read the figure
with its interval, don't assert it.

    .venv/bin/python tests/benchmarks/driver_overhead.py [--repeats 7] [--duration 10]
"""
from __future__ import annotations

import argparse
import os
import re
import resource
import statistics
import tempfile
import time

from dbstudies import servers, stats
from dbstudies.core import proc
from dbstudies.observe.probes import Sampler
from dbstudies.workloads.sysbench import Sysbench


def direct_tps(sb: Sysbench, workload: str, threads: int, duration: int, seed: int) -> float:
    argv = sb.argv("run", threads=threads, duration=duration, seed=seed)
    i = argv.index(str(sb.binary))
    argv[i + 1] = workload  # the bundled script itself instead of our wrapper
    out = proc.run(argv, timeout=duration + 60).stdout
    return float(re.search(r"transactions:\s+\d+\s+\(([\d.]+) per sec\.\)", out).group(1))


DRIVER_CPU: dict[str, float] = {"cpu": 0.0, "wall": 0.0}


def driver_tps(sb: Sysbench, server, workload: str, threads: int, duration: int, seed: int,
               sample: bool = True) -> float:
    before, t0 = resource.getrusage(resource.RUSAGE_SELF), time.monotonic()
    res = sb.run(workload, threads, duration, seed=seed, observer=Sampler(server) if sample else None)
    after = resource.getrusage(resource.RUSAGE_SELF)  # this process: driver + sampler thread
    if sample:
        DRIVER_CPU["cpu"] += (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
        DRIVER_CPU["wall"] += time.monotonic() - t0
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
        runs = {
            "a": lambda i: direct_tps(sb, a.workload, a.threads, a.duration, i),
            "b": lambda i: driver_tps(sb, server, a.workload, a.threads, a.duration, i),
            "c": lambda i: driver_tps(sb, server, a.workload, a.threads, a.duration, i, sample=False),
        }
        tps: dict[str, list[float]] = {k: [] for k in runs}
        for i in range(a.repeats):
            order = "abc"[i % 3:] + "abc"[:i % 3]  # rotate, so no kind always goes first
            for kind in order:
                tps[kind].append(runs[kind](i))
                print(f"repeat {i + 1} ({kind}): {tps[kind][-1]:,.1f} tps", flush=True)
    labels = {"a": "direct sysbench", "b": "driver + 1 Hz sampler", "c": "driver, no sampler"}
    print(f"\n{a.workload}, {a.threads} threads, {a.duration} s × {a.repeats} each, interleaved")
    for k, label in labels.items():
        v = tps[k]
        print(f"({k}) {label:<22} median TPS {statistics.median(v):,.1f}  (min {min(v):,.1f}, max {max(v):,.1f})")
    for k in ("b", "c"):
        r = stats.compare(tps["a"], tps[k], threshold=0.02)
        print(f"ratio ({k})/(a) = {r['ratio']:.4f} (geometric means)  95% CI [{r['ci_low']:.3f}, "
              f"{r['ci_high']:.3f}]  Welch p = {r['p_value']:.3f}  Mann-Whitney p = {r['p_rank']:.3f}")
    print("target: (b)/(a) ≥ 0.98")
    share = DRIVER_CPU["cpu"] / DRIVER_CPU["wall"] / len(os.sched_getaffinity(0))
    print(f"driver process CPU during (b): {DRIVER_CPU['cpu']:.2f} s over {DRIVER_CPU['wall']:.0f} s "
          f"= {share:.2%} of this machine's CPU (an upper bound on what the driver takes from the run)")


if __name__ == "__main__":
    main()
