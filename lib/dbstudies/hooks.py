"""One step, as the measurement loop runs it: the `Context` a study's hooks get, the `steps`
table every study writes, and the default hooks, which drive sysbench.

The defaults load the tables once per server (`sysbench_prepare`), warm up with read-only
OLTP — our TPC-C-/LinkBench-like workloads alone: with themselves — (`sysbench_warmup`),
and measure one workload × client threads cell per step (`sysbench_step`): one sysbench run
with the 1 Hz sampler, its intervals and status samples streamed to the run as they come (a
step that dies keeps them), then stored whole. A measured step that ran on a busy host is
measured again (`BUSY_RETRIES`); the discarded attempts are kept with phase `busy`. A cell
with `cpu_profile` is measured with `perf` sampling its server (`profiler`): stored with
phase `profile`, its folded stacks under profiles/ and a row of `cpu_profiles` (and, where
performance_schema is on, the waits of the step in `waits`).
"""
from __future__ import annotations

import os
import shutil
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np
import pandas as pd

from . import paths, profiler, servers, workloads
from .probes import BUSY_OTHER_PCT, BUSY_STEAL_PCT, COSTS, CPU_CLIENT, CPU_SERVER, Sampler
from .results import HISTOGRAMS, INTERVALS, STATUS, TYPE_INTERVALS, TYPES, Run, Table
from .study import Arm
from .workloads.sysbench import Sysbench, SysbenchResult
from .workloads.sysbench import version as sysbench_version

STEP_OVERHEAD = 0.6        # sysbench start-up and teardown around --time
WARMUP_WORKLOAD, WARMUP_MAX_THREADS = "oltp_read_only", 8  # our workloads warm up with themselves
# A step measured while others used the machine (host_busy) is measured again, at most this
# often: on these shared 2-vCPU machines steal above 20 % halves a 1-thread step's QPS, and
# such steps made up most of the run-to-run noise (README "Statistics").
BUSY_RETRIES = 2
PROGRESS_EVERY = 10        # a long step updates the progress every this many seconds

STEPS = Table("steps", 4, {
    "step": "int64", "phase": "str", "repeat": "int64", "arm": "str", "workload": "str",
    "threads": "int64", "seed": "int64", "started_at": "float64", "seconds": "float64",
    "events": "int64", "tps": "float64", "qps": "float64", "errors": "int64",
    "reconnects": "int64", "latency_min_ms": "float64", "latency_avg_ms": "float64",
    "latency_max_ms": "float64", "latency_p50_ms": "float64", "latency_p95_ms": "float64",
    "latency_p99_ms": "float64", "cpu_server_pct": "float64", "cpu_client_pct": "float64",
    "host_other_pct": "float64", "host_steal_pct": "float64", "host_busy": "bool",
    "pair": "int64", "position": "int64", "settle_s": "float64",
    **{column: "float64" for column in COSTS},
}, "one row per sysbench run (phase warmup, measure, or busy: an attempt discarded because "
   "the host was busy, measured again) with whole-run figures; host_other_pct: CPU used by "
   "other processes, % of the machine; host_busy: other or steal above the limits; pair: "
   "the pair of a paired design's round (its arms' steps of one cell, back to back; 0 in "
   "the block design), position: the step's place in it; settle_s: seconds waited after "
   "the step for its server's flushing to settle (NaN: not waited, nothing written); "
   "…_per_txn (v4): the step's costs per transaction — CPU µs of server and client, their "
   "threads' voluntary and involuntary context switches, KB read and written by the server "
   "process and by its datadir's device, redo bytes, rows read — each counter's "
   "increase per second over the step's transactions per second (NaN: not sampled)")


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
OL_HISTOGRAMS = Table("open_loop_histograms", 1, {"step": "int64", "value_ms": "float64", "count": "int64"},
                      "an open-loop step's latency histogram from the scheduled start (completed "
                      "transactions)")


@dataclass
class Context:
    """What a hook sees: the parameters, the run, the arm's server and sysbench client."""
    params: Any
    run: Run
    server: servers.Server
    sysbench: Sysbench | None
    arm: "Arm | None" = None
    repeat: int = 0
    warmups: list[int] = field(default_factory=lambda: [0])  # the run's counter: warm-ups are steps -1, -2, …
    progress: Callable[[str], None] = lambda text: None     # where a long step says how far it is
    cells: list[dict[str, Any]] = field(default_factory=list)  # the block's cells, in their order
    memo: dict[str, Any] = field(default_factory=dict)      # the study's own notes across blocks
    session: dict[str, Any] = field(default_factory=dict)   # settings the arm's sessions set (shared server)

    def start_settings(self) -> dict[str, Any]:
        """The arm's settings for a (cold) start of its server: none on a shared server,
        where each session sets them (`session`)."""
        return {} if self.session else dict(self.arm.settings if self.arm else {})


# ---------------------------------------------------------------- the default hooks: sysbench

def sysbench_client(p: Any, server: servers.Server, meta: dict[str, Any]) -> Sysbench | None:
    if not hasattr(p, "table_size"):
        return None
    if meta["version"] is None:
        meta["version"] = sysbench_version()
    return Sysbench(server, tables=p.tables, table_size=p.table_size, warehouses=p.warehouses,
                    nodes=p.nodes, cpus=p.client_cpus, script_options=dict(p.workload_options),
                    calls=meta["calls"])


def keep_scripts(run: Run, p: Any) -> list[dict[str, str]]:
    """Copy each Lua script of the user's own that the run uses into its `workloads/` folder:
    [{workload, copy (relative to the run), sha256}] for the metadata, so the run can be
    repeated from its directory."""
    kept = []
    for w in getattr(p, "workloads", []):
        if workloads.is_script(w):
            source = workloads.script_path(w)
            copy = run.path / "workloads" / source.name
            copy.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(source, copy)
            kept.append({"workload": w, "source": str(source), "copy": str(copy.relative_to(run.path)),
                         "sha256": paths.sha256(copy)})
    return kept


def sysbench_prepare(ctx: Context) -> None:
    """Load the tables of every workload family the study runs (OLTP's sbtest tables,
    TPC-C's warehouses, LinkBench's nodes), parallel loaders up to the CPUs we may use."""
    first = {}
    for w in ctx.params.workloads:
        first.setdefault(workloads.family(w), w)
    for w in first.values():
        ctx.sysbench.prepare(w, threads=len(os.sched_getaffinity(0)))


def warmup_workload(p: Any) -> str:
    """Read-only OLTP when the study runs OLTP workloads, else its first workload (TPC-C
    warms up with TPC-C when its tables are the only ones loaded)."""
    if any(workloads.family(w) == "oltp" for w in p.workloads):
        return WARMUP_WORKLOAD
    return p.workloads[0]


def sysbench_warmup(ctx: Context) -> None:
    """Read-only OLTP for `warmup` seconds at up to 8 threads; stored with phase warmup."""
    p = ctx.params
    if p.warmup > 0:
        ctx.warmups[0] -= 1
        cell = {"step": ctx.warmups[0], "workload": warmup_workload(p),
                "threads": min(max(p.threads), WARMUP_MAX_THREADS)}
        sysbench_step(ctx, cell, phase="warmup", duration=p.warmup, seed=p.seed)


@dataclass
class Attempt:
    """One finished sysbench run of a cell, held until it is stored: its rows streamed so
    far stay on disk (a crash keeps them) until `keep` writes the step whole."""
    cell: dict[str, Any]
    seed: int
    res: SysbenchResult
    sampler: Sampler
    streams: tuple[Any, ...]
    settle_s: float = np.nan
    recorder: profiler.Recorder | None = None  # the step's on-CPU profile (`cpu_profile` cells)
    waits: list[dict[str, Any]] = field(default_factory=list)  # performance_schema's, profiled cells

    @property
    def busy(self) -> bool:
        return _busy(self.sampler.host_load())


def sysbench_attempt(ctx: Context, cell: dict[str, Any], *, duration: int | None = None,
                     seed: int | None = None) -> Attempt:
    """One sysbench run of `cell` (workload, threads) with the 1 Hz sampler, its intervals
    and samples streamed to the run as they come (a step that dies keeps them)."""
    p = ctx.params
    seed = p.seed * 100_000 + cell["step"] if seed is None else seed
    duration = duration or p.duration

    def interval(df: pd.DataFrame) -> None:
        intervals.write(df.assign(step=cell["step"]))
        second = int(df["second"].iloc[0])
        if second % PROGRESS_EVERY == 0:  # a long step shows how far it is
            ctx.progress(f"{second} of {duration} s")

    intervals, samples = ctx.run.stream(INTERVALS, cell["step"]), ctx.run.stream(STATUS, cell["step"])
    recorder = waited = None
    if profiled_cell(cell):
        waited = profiler.wait_totals(ctx.server)
        if ctx.server.pid is not None:
            recorder = profiler.Recorder(ctx.server.pid, ctx.run.path / PROFILE_DIR / f"step-{cell['step']}.folded")
    try:
        sampler = Sampler(ctx.server, on_rows=lambda df: samples.write(df.assign(step=cell["step"])))
        if recorder is not None:
            recorder.arm()  # perf set up before the step starts; it records from the step's start
        rate = cell.get("rate")  # an offered load: open loop
        res = ctx.sysbench.run(cell["workload"], cell["threads"], duration, seed=seed,
                               observer=sampler if recorder is None else _Both(sampler, recorder),
                               on_interval=interval,
                               rate=None if rate is None or rate != rate else float(rate),
                               arrivals=getattr(p, "arrivals", "poisson"))
    except BaseException:
        if recorder is not None:
            recorder.close()
        raise
    finally:
        intervals.close(), samples.close()
    waits = profiler.wait_deltas(waited, profiler.wait_totals(ctx.server)) if waited is not None else []
    return Attempt(cell, seed, res, sampler, (intervals, samples), recorder=recorder, waits=waits)


PROFILE_DIR = "profiles"  # in the run: the profiled steps' folded stacks


def profiled_cell(cell: dict[str, Any]) -> bool:
    """Whether a plan's cell is to be measured with its server profiled."""
    v = cell.get("cpu_profile")
    return isinstance(v, (bool, np.bool_)) and bool(v)


class _Both:
    """Two observers of one sysbench run (the status sampler and a profiler)."""

    def __init__(self, *observers: Any):
        self.observers = observers

    def start(self, t0: float, client_pid: int) -> None:
        for o in self.observers:
            o.start(t0, client_pid)

    def stop(self) -> None:
        for o in self.observers:
            o.stop()


def keep(ctx: Context, attempt: Attempt, step: int, phase: str) -> None:
    """Store an attempt as `step` with `phase` (a profiled cell's measured attempt: phase
    `profile`, kept out of the verdicts); its streamed rows are then dropped."""
    if phase == "measure" and profiled_cell(attempt.cell):
        phase = "profile"
    store_sysbench_step(ctx, step, phase, attempt)
    for stream in attempt.streams:
        stream.discard()


def sysbench_step(ctx: Context, cell: dict[str, Any], *, phase: str = "measure",
                  duration: int | None = None, seed: int | None = None,
                  retries: int = BUSY_RETRIES) -> SysbenchResult:
    """One sysbench run of `cell` (workload, threads), flushed (`sysbench_attempt`). A
    measured step that ran on a busy host (`host_busy`) is measured again, up to `retries`
    times (a study whose step changes the state it measures passes 0); each discarded
    attempt is kept, with phase `busy`."""
    for attempt in range(retries + 1):
        a = sysbench_attempt(ctx, cell, duration=duration, seed=seed)
        busy = phase == "measure" and attempt < retries and a.busy
        if busy:
            ctx.warmups[0] -= 1  # not a measured step: numbered below zero, like warm-ups
        keep(ctx, a, ctx.warmups[0] if busy else cell["step"], "busy" if busy else phase)
        if not busy:
            return a.res
    raise AssertionError("unreachable")


def _busy(host: dict[str, float]) -> bool:
    """Whether others used the machine during a step: other processes' CPU or the
    hypervisor's steal above their limits (NaN — unknown — is not busy)."""
    return bool(host.get("other_pct", np.nan) > BUSY_OTHER_PCT
                or host.get("steal_pct", np.nan) > BUSY_STEAL_PCT)


def store_sysbench_step(ctx: Context, step: int, phase: str, attempt: Attempt) -> None:
    """Flush one finished step: its totals, intervals, histogram and status samples."""
    res, sampler, cell = attempt.res, attempt.sampler, attempt.cell
    cpu, host, t = sampler.mean_cpu(), sampler.host_load(), res.totals
    other, steal = host.get("other_pct", np.nan), host.get("steal_pct", np.nan)
    ctx.run.append(STEPS, pd.DataFrame([{
        "step": step, "phase": phase, "repeat": ctx.repeat, "arm": ctx.arm.label,
        "workload": res.workload, "threads": res.threads, "seed": attempt.seed,
        "started_at": res.started_at, **{k: t[k] for k in (
            "seconds", "events", "tps", "qps", "errors", "reconnects", "latency_min_ms",
            "latency_avg_ms", "latency_max_ms", "latency_p50_ms", "latency_p95_ms",
            "latency_p99_ms")},
        "cpu_server_pct": cpu.get(CPU_SERVER, np.nan), "cpu_client_pct": cpu.get(CPU_CLIENT, np.nan),
        "host_other_pct": other, "host_steal_pct": steal,
        "host_busy": _busy(host), "pair": cell.get("pair", 0), "position": cell.get("position", 0),
        "settle_s": attempt.settle_s, **sampler.per_transaction(t["tps"]),
    }]))
    ctx.run.append(INTERVALS, res.intervals.assign(step=step))
    ctx.run.append(HISTOGRAMS, res.histogram.assign(step=step))
    ctx.run.append(STATUS, sampler.frame().assign(step=step))
    if not res.types.empty:  # our workloads: per transaction type
        ctx.run.append(TYPES, res.types.assign(step=step))
        ctx.run.append(TYPE_INTERVALS, res.type_intervals.assign(step=step))
    if res.open_loop is not None:
        ol = res.open_loop
        ctx.run.append(OPEN_LOOP, pd.DataFrame([{"step": step, **{
            k: ol.totals[k] for k in OPEN_LOOP.columns if k != "step"}}]))
        ctx.run.append(OL_SECONDS, ol.seconds[[c for c in OL_SECONDS.columns if c != "step"]]
                       .assign(step=step))
        ctx.run.append(OL_HISTOGRAMS, ol.histogram.assign(step=step))
    if attempt.recorder is not None and phase == "profile":
        r = attempt.recorder
        ctx.run.append_rows(CPU_PROFILES, [{"step": step, "samples": r.samples, "frequency_hz": r.frequency,
                                            "file": str(r.out.relative_to(ctx.run.path))}])
    if attempt.waits and phase == "profile":
        ctx.run.append_rows(WAITS, [{**w, "step": step} for w in attempt.waits])


def sysbench_block_seconds(p: Any) -> float:
    return p.warmup + len(p.workloads) * len(p.threads) * (p.duration + STEP_OVERHEAD)


def sysbench_warmup_seconds(p: Any) -> float:
    """The part of `block_seconds` one arm's warm-up takes."""
    return p.warmup


DEFAULT_HOOKS: dict[str, Callable[..., Any]] = {
    "prepare": sysbench_prepare, "warmup": sysbench_warmup, "step": sysbench_step,
    "block_seconds": sysbench_block_seconds, "warmup_seconds": sysbench_warmup_seconds,
}

