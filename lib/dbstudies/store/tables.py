"""The tables a run stores that studies share, each declared once: its name, schema version,
columns (pandas dtypes) and what a row is. A study's own tables are declared in the study
(`schema.Table`); the store (`results`) writes and reads them all alike.
"""
from __future__ import annotations

from ..observe.probes import COSTS
from .schema import Table

INTERVALS = Table("intervals", 1, {
    "step": "int64", "second": "int64", "threads_running": "int64", "tps": "float64",
    "qps": "float64", "reads_per_s": "float64", "writes_per_s": "float64",
    "errors_per_s": "float64", "reconnects_per_s": "float64", "latency_p_ms": "float64",
}, "sysbench's per-interval report; latency_p_ms is that interval's --percentile")
HISTOGRAMS = Table("histograms", 1, {"step": "int64", "value_ms": "float64", "count": "int64"},
                   "sysbench's full latency histogram of one step")
TYPES = Table("types", 1, {"step": "int64", "type": "str", "count": "int64", "rollbacks": "int64",
                           "retries": "int64", "latency_avg_ms": "float64", "latency_max_ms": "float64",
                           "latency_p50_ms": "float64", "latency_p95_ms": "float64",
                           "latency_p99_ms": "float64"},
              "our workloads (tpcc): per transaction type of one step — finished transactions, "
              "business rollbacks among them, retries after deadlocks/lock-wait timeouts, latency")
TYPE_INTERVALS = Table("type_intervals", 1, {"step": "int64", "second": "int64", "type": "str",
                                             "count": "int64"},
                       "our workloads: transactions finished per type per second of a step")
STATUS = Table("status", 1, {"step": "int64", "second": "int64", "offset_s": "float64",
                             "variable": "str", "value": "float64"},
               "1 Hz SHOW GLOBAL STATUS and CPU seconds (cpu_server_s, cpu_client_s)")

STEPS = Table("steps", 7, {
    "step": "int64", "phase": "str", "repeat": "int64", "arm": "str", "workload": "str",
    "threads": "int64", "seed": "int64", "started_at": "float64", "seconds": "float64",
    "events": "int64", "tps": "float64", "qps": "float64", "errors": "int64",
    "reconnects": "int64", "latency_min_ms": "float64", "latency_avg_ms": "float64",
    "latency_max_ms": "float64", "latency_p50_ms": "float64", "latency_p95_ms": "float64",
    "latency_p99_ms": "float64", "cpu_server_pct": "float64", "cpu_client_pct": "float64",
    "host_other_pct": "float64", "host_steal_pct": "float64", "host_foreign_pct": "float64",
    "host_busy": "bool", "pair": "int64", "position": "int64", "settle_s": "float64",
    **{column: "float64" for column in COSTS}, "instr_per_txn": "float64", "instr_all_per_txn": "float64",
}, "one row per sysbench run (phase warmup, measure, or busy: an attempt discarded because "
   "the host was busy, measured again) with whole-run figures; host_other_pct: CPU used by "
   "other processes, % of the machine; host_foreign_pct (v5): the same without the run's other "
   "servers (NaN: none up, or a run before v5); host_busy: other or steal above the limits; pair: "
   "the pair of a paired design's round (its arms' steps of one cell, back to back; 0 in "
   "the block design), position: the step's place in it; settle_s: seconds waited after "
   "the step for its server's flushing to settle (NaN: not waited, nothing written); "
   "…_per_txn (v4): the step's costs per transaction — CPU µs of server and client, their "
   "threads' voluntary and involuntary context switches, KB read and written by the server "
   "process and by its datadir's device, redo bytes, rows read; (v6) the µs server and client "
   "threads spent runnable but waiting for a CPU (run delay) and the host's CPU pressure — each counter's "
   "increase per second over the step's transactions per second (NaN: not sampled, or a run before v6); "
   "(v7) instr_per_txn, instr_all_per_txn: a `count` run's window, the instructions its server's serving "
   "threads (all its threads) executed per transaction, counted by callgrind (NaN: not counted)")


_PCTS = {"p50": "float64", "p90": "float64", "p99": "float64", "p99_9": "float64"}
OPEN_LOOP = Table("open_loop", 1, {
    "step": "int64", "offered_rate": "float64", "arrivals": "int64", "arrival_rate": "float64",
    "completed": "int64", "achieved_rate": "float64", "window_s": "float64", "unstarted": "int64",
    "dropped": "int64", "end_lag_s": "float64", "sustained": "bool", "lower_bound": "bool",
    **{f"latency_{k}_ms": v for k, v in _PCTS.items()}, "latency_max_ms": "float64",
}, "one row per open-loop step (a step at an offered rate): arrivals scheduled in its window, "
   "transactions completed, the arrivals still waiting at its end (unstarted; dropped: beyond "
   "the schedule's queue) and how long the oldest had waited (end_lag_s); sustained: the queue "
   "at the end under 2 % of the arrivals and under 1 s old; latency from each transaction's "
   "scheduled start — lower bounds (lower_bound) when not sustained, the unstarted counted "
   "with their waits so far")
OL_SECONDS = Table("open_loop_seconds", 1, {
    "step": "int64", "second": "int64", "arrivals": "float64", "due": "float64",
    "started": "float64", "queued": "float64", "lag_ms": "float64", "completed": "int64",
    "latency_avg_ms": "float64", "wait_avg_ms": "float64", "latency_max_ms": "float64",
    **{f"latency_{k}_ms": v for k, v in _PCTS.items()},
}, "open-loop steps second by second: arrivals due in the second and so far, started so far, "
   "the queue of due arrivals not yet started and how late its oldest was (lag_ms), "
   "transactions completed in the second and their latency from the scheduled start "
   "(wait_avg_ms: the part spent waiting for a connection)")
CPU_PROFILES = Table("cpu_profiles", 1, {"step": "int64", "samples": "int64", "frequency_hz": "int64",
                                          "file": "str"},
                     "one row per profiled step (phase profile): the on-CPU samples perf took of "
                     "the server's threads and the folded stacks' file, relative to the run")
WAITS = Table("waits", 1, {"step": "int64", "event": "str", "count": "int64", "wait_ms": "float64"},
              "per profiled step on a server with performance_schema on: each wait event's count "
              "and time waited during the step (events_waits_summary_global_by_event_name)")
COUNTS = Table("counts", 1, {"step": "int64", "dump": "str", "serving": "str", "served": "float64",
                             "total": "float64", "server_threads": "int64"},
               "one row per counted step (a `count` run's window): its dump's files' common start "
               "(relative to the run; one file per thread, `…-<thread>`), the threads that served "
               "the client (comma-separated), their instructions, all threads' and how many threads the dump holds")
PAUSES = Table("pauses", 1, {"step": "int64", "at_s": "float64", "paused_ms": "float64"},
               "the positive control's pauses of its server in one step (`pauses`): when each "
               "began, seconds after sysbench started, and how long the server was stopped")
OL_HISTOGRAMS = Table("open_loop_histograms", 1, {"step": "int64", "value_ms": "float64", "count": "int64"},
                      "an open-loop step's latency histogram from the scheduled start (completed "
                      "transactions)")
