"""Why sysbench's CPU per transaction moves with the server's scheduler: the client profiled
against one-thread-per-connection and against pool-of-threads, paired.

Two private MariaDB 10.11 servers, one per `thread_handling`, both up. Per repeat, in an
alternating order: the same cell against each, with `perf record -a` sampling the host and the
samples of sysbench's own process folded (`profiler.Recorder` with the client's pid). Per
step: transactions/s, sysbench's CPU µs per transaction (its samples ÷ the sampling rate ÷
transactions), its context switches and migrations between CPUs per transaction (`Switches`). Then, per function of sysbench (with what
it calls), the paired difference of its µs per transaction across repeats, judged as the
server's profiles are (`stats.profiles`: interval, BH across functions). Not a test: it prints
the figures.

    .venv/bin/python tests/benchmarks/client_cost.py [--repeats 8] [--duration 3] [--threads 16]
"""
from __future__ import annotations

import argparse
import tempfile
import threading
from pathlib import Path

import numpy as np
import pandas as pd

from dbstudies import servers
from dbstudies.analysis import cpu_profiles
from dbstudies.observe import profiler
from dbstudies.workloads.sysbench import Sysbench

SCHEDULERS = ("one-thread-per-connection", "pool-of-threads")


class Switches:
    """An observer of one step that keeps reading sysbench's threads' scheduler counts
    (/proc/<pid>/task/*/sched: voluntary and involuntary switches, migrations between CPUs)
    every 0.2 s while it runs — the last read before it exits is what the step did, short of
    its last ≤ 0.2 s — and has `rec` (a client `Recorder`) profile the step."""
    FIELDS = ("nr_voluntary_switches", "nr_involuntary_switches", "se.nr_migrations")

    def __init__(self, rec: profiler.Recorder):
        self.rec, self.counts, self.done = rec, (0, 0, 0), threading.Event()

    def start(self, t0: float, client_pid: int) -> None:
        self.rec.start(t0, client_pid)
        self.thread = threading.Thread(target=self._watch, args=(client_pid,), daemon=True)
        self.thread.start()

    def _watch(self, pid: int) -> None:
        while not self.done.wait(0.2):
            got = [0, 0, 0]
            try:
                for sched in Path(f"/proc/{pid}/task").glob("*/sched"):
                    for line in sched.read_text().splitlines():
                        key, _, value = line.partition(":")
                        if key.strip() in self.FIELDS:
                            got[self.FIELDS.index(key.strip())] += int(float(value))
            except OSError:
                continue  # exiting: keep the last whole read
            if any(got):
                self.counts = tuple(got)

    def stop(self) -> None:
        self.done.set()
        self.thread.join()
        self.rec.stop()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=8)
    ap.add_argument("--duration", type=int, default=3)
    ap.add_argument("--threads", type=int, default=16)
    ap.add_argument("--workload", default="oltp_point_select")
    a = ap.parse_args()
    problems = profiler.problems()
    if problems:
        raise SystemExit("; ".join(problems))
    rows, read = [], {}
    flavour = servers.load_flavour("mariadb-10.11")
    with tempfile.TemporaryDirectory() as tmp:
        sbs = {}
        with servers.Server(flavour, Path(tmp) / "tpc", settings={"thread_handling": SCHEDULERS[0]},
                            max_clients=a.threads) as s0, \
                servers.Server(flavour, Path(tmp) / "pool", settings={"thread_handling": SCHEDULERS[1]},
                               max_clients=a.threads) as s1:
            for name, server in zip(SCHEDULERS, (s0, s1)):
                server.start()
                sbs[name] = Sysbench(server, tables=4, table_size=100_000)
                sbs[name].prepare(a.workload)
                sbs[name].run(a.workload, a.threads, a.duration, seed=0)  # warm-up
            step = 0
            for r in range(a.repeats):
                for name in (SCHEDULERS if r % 2 == 0 else SCHEDULERS[::-1]):
                    step += 1
                    rec = profiler.Recorder(None, Path(tmp) / f"step-{step}.folded")
                    obs = Switches(rec)
                    res = sbs[name].run(a.workload, a.threads, a.duration, seed=r + 1, observer=obs)
                    txns = res.totals["tps"] * a.duration
                    read[step] = profiler.read_folded(rec.out)
                    rows.append({"step": step, "arm": name, "pair": r + 1, "tps": res.totals["tps"],
                                 "samples": rec.samples, "cpu_server_us_per_txn": rec.samples / profiler.FREQUENCY / txns * 1e6,
                                 "cs_vol_per_txn": obs.counts[0] / txns, "cs_invol_per_txn": obs.counts[1] / txns,
                                 "migrations_per_txn": obs.counts[2] / txns})
                    print(f"r{r + 1} {name}: {res.totals['tps']:,.0f}/s, sysbench {rows[-1]['cpu_server_us_per_txn']:.2f} µs/txn, "
                          f"{rows[-1]['cs_vol_per_txn']:.2f} + {rows[-1]['cs_invol_per_txn']:.3f} switches/txn, "
                          f"{rows[-1]['migrations_per_txn']:.3f} migrations/txn", flush=True)
    cell = pd.DataFrame(rows)  # "cpu_server_us_per_txn": the profiled process's (here sysbench's) CPU per txn
    med = cell.groupby("arm")[["tps", "cpu_server_us_per_txn", "cs_vol_per_txn", "cs_invol_per_txn",
                               "migrations_per_txn"]].median()
    print(med.to_string())
    units = cpu_profiles.unit_samples(read)
    t, _ = cpu_profiles.difference(cell, units, SCHEDULERS[0], SCHEDULERS[1])
    print(cpu_profiles.said(t).replace("functions and caller groups", "sysbench functions and caller groups"))
    with pd.option_context("display.width", 200, "display.max_colwidth", 60):
        print(t[t["flagged"]][["function", "baseline", "candidate", "change", "lo", "hi", "q"]].head(25).to_string(index=False))
    shares = {arm: np.mean([sum(n for st, n in read[s].items() if "vio" in st or "recv" in st or "poll" in st) / max(sum(read[s].values()), 1)
                            for s in cell.loc[cell["arm"] == arm, "step"]]) for arm in SCHEDULERS}
    print("share of sysbench's samples waiting on the socket (poll/recv/vio):",
          ", ".join(f"{k} {v:.0%}" for k, v in shares.items()))


if __name__ == "__main__":
    main()
