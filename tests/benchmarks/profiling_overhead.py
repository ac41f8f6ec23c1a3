"""Profiling overhead: what `perf record -e cpu-clock -g` on the server (the `cpu_profile`
steps, `profiler.Recorder`) costs its throughput, on one private MariaDB 10.11.

Per repeat, in an alternating order: the same cell (workload × threads) once plain and once
with the server sampled at 499 Hz with call stacks, as a profiled step of a study is. Prints
each pair and the ratio profiled / plain of geometric-mean transactions/s with its CI
(paired by repeat), the samples a profiled step took and how much longer it took on the clock
(perf's set-up, stop and fold: what a profiled round costs beyond its steps). Not a test: this machine is
shared and noisy, so read the figure with its interval.

    .venv/bin/python tests/benchmarks/profiling_overhead.py [--repeats 8] [--duration 5] [--threads 8]
"""
from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from dbstudies import servers, stats
from dbstudies.observe import profiler
from dbstudies.workloads.sysbench import Sysbench


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=8)
    ap.add_argument("--duration", type=int, default=5)
    ap.add_argument("--threads", type=int, default=8)
    ap.add_argument("--workload", default="oltp_read_only")
    a = ap.parse_args()
    problems = profiler.problems()
    if problems:
        raise SystemExit("; ".join(problems))
    plain, profiled, samples, wall = [], [], [], {"plain": [], "profiled": []}
    with tempfile.TemporaryDirectory() as tmp, \
            servers.Server(servers.load_flavour("mariadb-10.11"), Path(tmp) / "srv") as server:
        server.start()
        sb = Sysbench(server, tables=1, table_size=10_000)
        sb.prepare(a.workload)
        sb.run(a.workload, a.threads, a.duration, seed=0)  # warm-up
        for r in range(a.repeats):
            for kind in (("plain", "profiled") if r % 2 == 0 else ("profiled", "plain")):
                t0 = time.monotonic()
                if kind == "plain":
                    plain.append(sb.run(a.workload, a.threads, a.duration, seed=r + 1).totals["tps"])
                else:
                    rec = profiler.Recorder(server.pid, Path(tmp) / f"r{r}.folded")
                    profiled.append(sb.run(a.workload, a.threads, a.duration, seed=r + 1,
                                           observer=rec).totals["tps"])
                    samples.append(rec.samples)
                wall[kind].append(time.monotonic() - t0)
            print(f"repeat {r + 1}: plain {plain[-1]:,.0f}/s, profiled {profiled[-1]:,.0f}/s "
                  f"({samples[-1]:,} samples)", flush=True)
    ratio, low, high = stats.paired_ratio(plain, profiled)
    print(f"profiled / plain, transactions/s at {a.threads} threads ({a.workload}, {a.duration}-s steps): "
          f"{ratio:.3f} [{low:.3f}, {high:.3f}] (geometric mean of {len(plain)} paired repeats, 95 % CI; "
          f"{profiler.FREQUENCY} Hz, {sum(samples) / len(samples):,.0f} samples a step)")
    extra = [p - q for p, q in zip(wall["profiled"], wall["plain"])]
    print(f"a profiled step took {sum(extra) / len(extra):.2f} s longer on the clock (median "
          f"{sorted(extra)[len(extra) // 2]:.2f} s; plain {sum(wall['plain']) / len(extra):.2f} s a step)")


if __name__ == "__main__":
    main()
