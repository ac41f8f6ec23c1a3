"""What a finished sysbench step writes to its run (`store_sysbench_step`): its totals and costs
per transaction, intervals, histogram, status samples, our workloads' transaction types, an
open loop's seconds, a count's window, the positive control's pauses, a profiled cell's stacks
and waits — held as an `Attempt` until the step is kept whole.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from ..observe import callgrind, pauses, probes, profiler
from ..observe.probes import CPU_CLIENT, CPU_SERVER, Sampler
from ..store.tables import (
    COUNTS,
    CPU_PROFILES,
    HISTOGRAMS,
    INTERVALS,
    OL_HISTOGRAMS,
    OL_SECONDS,
    OPEN_LOOP,
    PAUSES,
    STATUS,
    STEPS,
    TYPE_INTERVALS,
    TYPES,
    WAITS,
)
from ..workloads.sysbench import SysbenchResult
from .context import Context


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
    pauser: pauses.Pauser | None = None        # the positive control's pauses of its server
    count: callgrind.Count | None = None       # the window's instructions (`count` runs)
    waits: list[dict[str, Any]] = field(default_factory=list)  # performance_schema's, profiled cells

    @property
    def busy(self) -> bool:
        return probes.busy(self.sampler.host_load())


def step_row(ctx: Context, step: int, phase: str, attempt: Attempt) -> dict[str, Any]:
    """A finished step's row of the steps table: where it ran, sysbench's totals, the CPU of
    server and client, the host's load, its pair, and its costs per transaction."""
    res, sampler, cell = attempt.res, attempt.sampler, attempt.cell
    cpu, host, t = sampler.mean_cpu(), sampler.host_load(), res.totals
    return {
        "step": step, "phase": phase, "repeat": ctx.repeat, "arm": ctx.arm.label,
        "workload": res.workload, "threads": res.threads, "seed": attempt.seed,
        "started_at": res.started_at, **{k: t[k] for k in (
            "seconds", "events", "tps", "qps", "errors", "reconnects", "latency_min_ms",
            "latency_avg_ms", "latency_max_ms", "latency_p50_ms", "latency_p95_ms",
            "latency_p99_ms")},
        "cpu_server_pct": cpu.get(CPU_SERVER, np.nan), "cpu_client_pct": cpu.get(CPU_CLIENT, np.nan),
        "host_other_pct": host.get("other_pct", np.nan), "host_steal_pct": host.get("steal_pct", np.nan),
        "host_foreign_pct": host.get("foreign_pct", np.nan),
        "host_busy": probes.busy(host), "pair": cell.get("pair", 0), "position": cell.get("position", 0),
        "settle_s": attempt.settle_s, **sampler.per_transaction(t["tps"]), **_counted(attempt.count, t["events"]),
    }


def store_sysbench_step(ctx: Context, step: int, phase: str, attempt: Attempt) -> None:
    """Flush one finished step: its row of the steps table (`step_row`), intervals, histogram
    and status samples, and what else watched it."""
    res, sampler = attempt.res, attempt.sampler
    ctx.run.append(STEPS, pd.DataFrame([step_row(ctx, step, phase, attempt)]))
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
    c = attempt.count
    if c is not None and c.prefix is not None:
        ctx.run.append_rows(COUNTS, [{"step": step, "dump": str(c.prefix.relative_to(ctx.run.path)),
                                      "serving": ",".join(str(t) for t in sorted(c.serving)),
                                      "served": float(c.served), "total": float(c.total), "server_threads": len(c.threads)}])
    if attempt.pauser is not None and attempt.pauser.pauses:
        ctx.run.append_rows(PAUSES, [{**x, "step": step} for x in attempt.pauser.pauses])
    if attempt.recorder is not None and phase == "profile":
        r = attempt.recorder
        ctx.run.append_rows(CPU_PROFILES, [{"step": step, "samples": r.samples, "frequency_hz": r.frequency,
                                            "file": str(r.out.relative_to(ctx.run.path))}])
    if attempt.waits and phase == "profile":
        ctx.run.append_rows(WAITS, [{**w, "step": step} for w in attempt.waits])


def _counted(count: callgrind.Count | None, events: int) -> dict[str, float]:
    """A window's instructions per transaction: its serving threads', all its threads'
    (NaN: not a counted step)."""
    if count is None or not events:
        return {"instr_per_txn": np.nan, "instr_all_per_txn": np.nan}
    return {"instr_per_txn": count.served / events, "instr_all_per_txn": count.total / events}
