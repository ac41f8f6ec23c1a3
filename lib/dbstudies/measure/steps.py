"""One step, as the measurement loop runs it: the `Context` a study's hooks get, the `steps`
table every study writes, and the default hooks, which drive sysbench.

The defaults load the tables once per server (`sysbench_prepare`), warm up with read-only
OLTP — our TPC-C-/LinkBench-like workloads alone: with themselves — (`sysbench_warmup`),
and measure one workload × client threads cell per step (`sysbench_step`): one sysbench run
with the 1 Hz sampler, its intervals and status samples streamed to the run as they come (a
step that dies keeps them), then stored whole. A measured step that ran on a busy host is
measured again (the run's `busy_retries`); the discarded attempts are kept with phase `busy`. A cell
with `cpu_profile` is measured with `perf` sampling its server (`profiler`): stored with
phase `profile`, its folded stacks under profiles/ and a row of `cpu_profiles` (and, where
performance_schema is on, the waits of the step in `waits`).
"""
from __future__ import annotations

import contextlib
import os
import shutil
from typing import Any, Callable

import numpy as np
import pandas as pd

from .. import servers, workloads
from ..core import paths
from ..core.comparisons import with_tail_ratio
from ..kit.contract import P, Study
from ..observe import callgrind, pauses, probes, profiler
from ..observe.probes import Sampler
from ..store import results
from ..store.results import PROFILE_DIR, Run
from ..store.tables import (
    INTERVALS,
    STATUS,
)
from ..workloads.sysbench import Sysbench, SysbenchResult
from ..workloads.sysbench import version as sysbench_version
from .context import Context
from .written import Attempt, store_sysbench_step

SETTLE_TIMEOUT = 60.0      # longest wait for an idle server's flushing after a write step
WARMUP_WORKLOAD, WARMUP_MAX_THREADS = "oltp_read_only", 8  # our workloads warm up with themselves
PROGRESS_EVERY = 10        # a long step updates the progress every this many seconds


# ---------------------------------------------------------------- the default hooks: sysbench

def sysbench_client(p: Any, server: servers.Server, record: dict[str, Any]) -> Sysbench | None:
    """The client a server's steps drive (the `client` hook): sysbench, with the tables the
    study loads, its version and the argv of every call recorded into `record` (what the run
    writes as its `sysbench` metadata); None for a study without sysbench parameters."""
    if not hasattr(p, "table_size"):
        return None
    if record.get("version") is None:
        record["version"] = sysbench_version()
    return Sysbench(server, tables=p.tables, table_size=p.table_size, warehouses=p.warehouses,
                    nodes=p.nodes, cpus=p.client_cpus, script_options=dict(p.workload_options),
                    calls=record.setdefault("calls", []))


def keep_scripts(run: Run, p: Any) -> list[dict[str, str]]:
    """Copy each Lua script of the user's own that the run uses into its `workloads/` folder:
    [{workload, copy (relative to the run), sha256}] for the metadata, so the run can be
    repeated from its directory."""
    kept = []
    for w in getattr(p, "workloads", []):
        if workloads.is_script(w):
            source = workloads.script_path(w)
            copy = run.folder("workloads") / source.name
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
    """Read-only OLTP for `warmup` seconds at up to 8 threads; stored with phase warmup. In
    the paired design a warm-up that wrote is settled before another server is measured."""
    p = ctx.params
    if p.warmup > 0:
        ctx.warmups[0] -= 1
        cell = {"step": ctx.warmups[0], "workload": warmup_workload(p),
                "threads": min(max(p.threads), WARMUP_MAX_THREADS)}
        sysbench_step(ctx, cell, phase="warmup", duration=p.warmup, seed=p.seed)
        if p.design == "paired" and workloads.writes(cell["workload"]):
            probes.settle(ctx.server, SETTLE_TIMEOUT)


def sysbench_pair(begin: Callable[..., Context], cells: list[dict[str, Any]]) -> None:
    """The steps of one pair (a cell on every arm, back to back; `begin(i, cell)` readies the
    `i`-th step's context and says it runs, `announce=False` only readies it): after a step that wrote, its server settles before the next
    starts, and if any step ran on a busy host the whole pair is measured again (up to
    `busy_retries` times; the discarded attempts are kept, phase busy)."""
    retries = begin(0, cells[0], announce=False).params.busy_retries
    for attempt in range(retries + 1):
        held = []
        for i, cell in enumerate(cells):
            ctx = begin(i, cell)
            a = sysbench_attempt(ctx, cell)
            if workloads.writes(cell["workload"]):
                a.settle_s, _ = probes.settle(ctx.server, SETTLE_TIMEOUT)
            held.append(a)
        busy = attempt < retries and any(a.busy for a in held)
        for i, (a, cell) in enumerate(zip(held, cells)):
            ctx = begin(i, cell, announce=False)
            if busy:
                ctx.warmups[0] -= 1
            keep(ctx, a, ctx.warmups[0] if busy else cell["step"], "busy" if busy else "measure")
        if not busy:
            return


def _watchers(ctx: Context, cell: dict[str, Any], measured: bool, duration: int) -> tuple[Any, Any, Any]:
    """What watches a step besides the sampler: a profiled cell's `perf` recorder (and the
    server's wait totals before it), a measured step of the positive control's arm its pauser."""
    recorder = waited = None
    if profiled_cell(cell):
        waited = profiler.wait_totals(ctx.server)
        if ctx.server.pid is not None:
            recorder = profiler.Recorder(ctx.server.pid, ctx.run.folder(PROFILE_DIR) / f"step-{cell['step']}.folded")
    pause = ctx.arm.pause if measured and ctx.arm is not None else None
    pauser = pauses.Pauser(ctx.server.pid, pause, duration) if pause is not None and ctx.server.pid else None
    return recorder, waited, pauser


def _streamed(ctx: Context, stream: Any, step: int, duration: int) -> Callable[[pd.DataFrame], None]:
    """What a step does with each of sysbench's per-second rows: streams it to the run, and
    says how far a long step is every `PROGRESS_EVERY` seconds."""
    def interval(df: pd.DataFrame) -> None:
        stream.write(df.assign(step=step))
        second = int(df["second"].iloc[0])
        if second % PROGRESS_EVERY == 0:
            ctx.progress(f"{second} of {duration} s")
    return interval


def _abandon(recorder: profiler.Recorder | None, window: callgrind.Window | None) -> None:
    """A failed step's watchers let go: its profiler stopped, its count's window closed (left
    open, it would count on into the next step)."""
    if recorder is not None:
        recorder.close()
    if window is not None:
        with contextlib.suppress(Exception):
            window.close()


def sysbench_attempt(ctx: Context, cell: dict[str, Any], *, duration: int | None = None,
                     seed: int | None = None, measured: bool = True) -> Attempt:
    """One sysbench run of `cell` (workload, threads) with the 1 Hz sampler, its intervals
    and samples streamed to the run as they come (a step that dies keeps them). A
    `measured` step of the positive control's arm has its server paused (`pauses.Pauser`)."""
    p = ctx.params
    seed = step_seed(p, cell) if seed is None else seed
    duration = duration or p.duration
    intervals, samples = ctx.run.stream(INTERVALS, cell["step"]), ctx.run.stream(STATUS, cell["step"])
    recorder, waited, pauser = _watchers(ctx, cell, measured, duration)
    window = _window(ctx) if measured else None
    count = None
    try:
        sampler = Sampler(ctx.server, on_rows=lambda df: samples.write(df.assign(step=cell["step"])),
                          siblings=ctx.siblings(), **({"variables": ()} if window is not None else {}))
        if recorder is not None:
            recorder.arm()  # perf set up before the step starts; it records from the step's start
        rate = cell.get("rate")  # an offered load: open loop
        watching = [o for o in (sampler, recorder, pauser) if o is not None]
        if window is not None:
            window.open()
        res = ctx.sysbench.run(cell["workload"], cell["threads"], duration, seed=seed,
                               observer=watching[0] if len(watching) == 1 else _Both(*watching),
                               on_interval=_streamed(ctx, intervals, cell["step"], duration),
                               rate=None if rate is None or rate != rate else float(rate),
                               arrivals=getattr(p, "arrivals", "poisson"),
                               events=p.count if window is not None else None)
        if window is not None:
            count, window = window.close(), None
    except BaseException:
        _abandon(recorder, window)
        raise
    finally:
        intervals.close(), samples.close()
    waits = profiler.wait_deltas(waited, profiler.wait_totals(ctx.server)) if waited is not None else []
    return Attempt(cell, seed, res, sampler, (intervals, samples), recorder=recorder, waits=waits,
                   pauser=pauser, count=count)


WINDOW = "callgrind window"  # a counted server's current window, in its context's memo


def _window(ctx: Context) -> callgrind.Window | None:
    """The window a measured step of a `count` run counts its server's instructions in
    (a new one after each start of the server: callgrind numbers its dumps per process)."""
    if not getattr(ctx.params, "count", 0):
        return None
    kept = ctx.memo.get(WINDOW)
    if kept is None or kept.pid != ctx.server.pid:
        kept = ctx.memo[WINDOW] = callgrind.Window.of(ctx.server)
        if kept is None:
            raise callgrind.CountError(f"{ctx.server.flavour.name} is not running under callgrind: nothing to count")
    return kept


def step_seed(p: Any, cell: dict[str, Any]) -> int:
    """A measured step's sysbench `--rand-seed`: its own per step, or, with `common_seed`, one
    per pair (common random numbers: the arms of a pair draw the same rows and transactions).

    >>> from types import SimpleNamespace as NS
    >>> [step_seed(NS(seed=1, common_seed=c), {"step": s, "pair": 7}) for c in (False, True) for s in (13, 14)]
    [100013, 100014, 100007, 100007]
    """
    shared = getattr(p, "common_seed", False) and cell.get("pair")
    return p.seed * 100_000 + int(cell["pair"] if shared else cell["step"])


def profiled_cell(cell: dict[str, Any]) -> bool:
    """Whether a plan's cell is to be measured with its server profiled."""
    v = cell.get("cpu_profile")
    return isinstance(v, (bool, np.bool_)) and bool(v)


class _Both:
    """Several observers of one sysbench run (the status sampler, a profiler, a pauser)."""

    def __init__(self, *observers: Any):
        self.observers = observers

    def start(self, t0: float, client_pid: int) -> None:
        for o in self.observers:
            o.start(t0, client_pid)

    def stop(self) -> None:
        """Stop every observer, even when one fails (a paused server must be let go)."""
        with contextlib.ExitStack() as stack:
            for o in self.observers:  # run last to first: the pauser lets go first
                stack.callback(o.stop)


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
                  retries: int | None = None) -> SysbenchResult:
    """One sysbench run of `cell` (workload, threads), flushed (`sysbench_attempt`). A
    measured step that ran on a busy host (`host_busy`) is measured again, up to `retries`
    times (default: the run's `busy_retries`; a study whose step changes the state it
    measures passes 0); each discarded attempt is kept, with phase `busy`."""
    retries = ctx.params.busy_retries if retries is None else retries
    for attempt in range(retries + 1):
        a = sysbench_attempt(ctx, cell, duration=duration, seed=seed, measured=phase == "measure")
        busy = phase == "measure" and attempt < retries and a.busy
        if busy:
            ctx.warmups[0] -= 1  # not a measured step: numbered below zero, like warm-ups
        keep(ctx, a, ctx.warmups[0] if busy else cell["step"], "busy" if busy else phase)
        if not busy:
            return a.res
    raise AssertionError("unreachable")


class SysbenchStudy(Study[P]):
    """The sysbench kind: a study whose loop drives sysbench by default — its client, its
    tables loaded once per server, a read-only warm-up, one sysbench run per step, a pair
    measured again on a busy host — and whose comparisons are judged on the measured steps
    (with the tail ratio). A study of this kind overrides what differs."""

    def client(self, p: P, server: servers.Server, record: dict[str, Any]) -> Sysbench | None:
        return sysbench_client(p, server, record)

    def prepare(self, ctx: Context) -> None:
        sysbench_prepare(ctx)

    def warmup(self, ctx: Context) -> None:
        sysbench_warmup(ctx)

    def step(self, ctx: Context, cell: dict[str, Any]) -> None:
        sysbench_step(ctx, cell)

    def pair(self, begin: Callable[..., Context], cells: list[dict[str, Any]]) -> None:
        """sysbench's steps: measured again as a pair on a busy host (`sysbench_pair`); a
        study's own steps one after another."""
        if type(self).step is SysbenchStudy.step:
            sysbench_pair(begin, cells)
        else:
            super().pair(begin, cells)

    def observations(self, run: Run, p: P) -> pd.DataFrame:
        """The measured steps, with the tail ratio (p99 ÷ p50)."""
        return with_tail_ratio(results.measured(run)) if results.finished_steps(run) else pd.DataFrame()

