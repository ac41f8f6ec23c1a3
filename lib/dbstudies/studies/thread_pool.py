"""Thread-pool scaling: sysbench OLTP at 1…N client threads, thread-per-connection vs
pool-of-threads (modelled on the MariaDB 5.5 thread-pool posts and the MariaDB-vs-MySQL
thread-pool assessment in shared/sources).

Design: every repeat restarts the server once per scheduler (thread_handling is not
dynamic), warms it up (recorded, discarded), then measures every workload × thread count in
a seeded random order. Scheduler order is shuffled per repeat, so repeats interleave
configurations instead of running all A then all B. The unit of replication is one
measured step; its QPS is one observation.
"""
from __future__ import annotations

import os
import shutil
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
from tqdm import tqdm

from .. import params as P
from .. import results, servers, stats
from ..results import HISTOGRAMS, INTERVALS, STATUS, Run, Table
from ..sampler import CPU_CLIENT, CPU_SERVER, Sampler
from ..sysbench import Sysbench, SysbenchResult, version as sysbench_version

STUDY = "thread_pool"
WORKLOADS = ("oltp_point_select", "oltp_read_only", "oltp_read_write")
PER_CONNECTION, POOL = "one-thread-per-connection", "pool-of-threads"
SCHEDULERS = (PER_CONNECTION, POOL)
MAX_THREADS = 4096
WARMUP_WORKLOAD, WARMUP_MAX_THREADS = "oltp_read_only", 8
# settings the driver owns; a study's `settings` may not override them
RESERVED_SETTINGS = {"datadir", "socket", "port", "bind_address", "pid_file", "log_error",
                     "user", "thread_handling", "thread_pool_size"}


@dataclass(frozen=True)
class Params:
    """The study's parameters (see the README's table and PROFILES for the defaults)."""
    profile: str
    flavour: str
    workloads: list[str]
    threads: list[int]
    schedulers: list[str]
    tables: int
    table_size: int
    warmup: int
    duration: int
    repeats: int
    seed: int
    draw_threshold: float
    server_cpus: str | None = None
    client_cpus: str | None = None
    settings: dict = field(default_factory=dict)

    def validate(self) -> list[str]:
        problems = []
        try:
            flavour = servers.load_flavour(self.flavour)
            flavour.check_installed()
        except (ValueError, servers.ServerError) as e:
            problems.append(f"flavour: {e}")
            flavour = None
        if shutil.which("sysbench") is None:
            problems.append("sysbench is not installed (`make setup` installs it)")
        problems += _check_choices("workloads", self.workloads, WORKLOADS)
        problems += _check_choices("schedulers", self.schedulers, SCHEDULERS)
        if flavour is not None and POOL in self.schedulers and not flavour.thread_pool:
            problems.append(f"schedulers: flavour {self.flavour} has no thread pool")
        if not self.threads or len(set(self.threads)) != len(self.threads):
            problems.append(f"threads: need distinct thread counts, got {self.threads}")
        elif not all(1 <= t <= MAX_THREADS for t in self.threads):
            problems.append(f"threads: each must be between 1 and {MAX_THREADS}, got {self.threads}")
        for name, low in (("tables", 1), ("table_size", 1), ("warmup", 0), ("duration", 1),
                          ("repeats", 1), ("seed", 0)):
            if getattr(self, name) < low:
                problems.append(f"{name}: must be ≥ {low}, got {getattr(self, name)}")
        if not 0 <= self.draw_threshold < 1:
            problems.append(f"draw_threshold: must be in [0, 1), got {self.draw_threshold}")
        for name in ("server_cpus", "client_cpus"):
            problems += _check_cpus(name, getattr(self, name))
        clash = sorted(RESERVED_SETTINGS & {servers.norm_key(k) for k in self.settings})
        if clash:
            problems.append(f"settings: {clash} are set by the driver or the study, not here")
        return problems


def _check_choices(name: str, values: list[str], allowed: tuple[str, ...]) -> list[str]:
    bad = [v for v in values if v not in allowed]
    if not values or bad or len(set(values)) != len(values):
        return [f"{name}: need distinct values from {', '.join(allowed)}; got {values}"]
    return []


def _check_cpus(name: str, spec: str | None) -> list[str]:
    if spec is None:
        return []
    try:
        cpus = servers.parse_cpus(spec)
    except ValueError as e:
        return [f"{name}: {e}"]
    usable = os.sched_getaffinity(0)
    if not set(cpus) <= usable:
        return [f"{name}: CPUs {sorted(set(cpus) - usable)} are not available (have {sorted(usable)})"]
    return []


_COMMON = dict(flavour="mariadb-10.11", schedulers=list(SCHEDULERS), seed=1, draw_threshold=0.05,
               server_cpus=None, client_cpus=None, settings={})
PROFILES: dict[str, dict[str, Any]] = {
    "smoke": dict(_COMMON, workloads=["oltp_point_select"], threads=[1, 4], tables=1,
                  table_size=1000, warmup=1, duration=2, repeats=2),
    "quick": dict(_COMMON, workloads=list(WORKLOADS), threads=[1, 4, 16, 64], tables=4,
                  table_size=100_000, warmup=5, duration=5, repeats=5),
    "full": dict(_COMMON, workloads=list(WORKLOADS),
                 threads=[2 ** i for i in range(13)], tables=16, table_size=1_000_000,
                 warmup=60, duration=60, repeats=5, settings={"innodb_buffer_pool_size": "8G"}),
}


def resolve(profile: str = "quick", **overrides: Any) -> Params:
    """Validated parameters: the profile's defaults, with non-None overrides applied."""
    return P.resolve(Params, PROFILES, profile, overrides)


# ---------------------------------------------------------------- plan

def plan(p: Params) -> pd.DataFrame:
    """The measured steps in execution order: repeat → scheduler (shuffled per repeat) →
    workload × threads (shuffled per block). Seeded, so a run can be replayed."""
    rng = np.random.default_rng(p.seed)
    rows = []
    cells = [(w, t) for w in p.workloads for t in sorted(p.threads)]
    for repeat in range(1, p.repeats + 1):
        for scheduler in rng.permutation(p.schedulers).tolist():
            for i in rng.permutation(len(cells)):
                rows.append({"repeat": repeat, "scheduler": scheduler,
                             "workload": cells[i][0], "threads": cells[i][1]})
    df = pd.DataFrame(rows)
    df.insert(0, "step", range(1, len(df) + 1))
    return df


def estimated_seconds(p: Params) -> float:
    """A rough wall-clock estimate (restarts and step overhead included)."""
    blocks = p.repeats * len(p.schedulers)
    steps = blocks * len(p.workloads) * len(p.threads)
    return blocks * (3 + p.warmup) + steps * (p.duration + 0.6)


# ---------------------------------------------------------------- measurement

STEPS = Table("steps", 1, {
    "step": "int64", "phase": "str", "repeat": "int64", "scheduler": "str", "workload": "str",
    "threads": "int64", "seed": "int64", "started_at": "float64", "seconds": "float64",
    "events": "int64", "tps": "float64", "qps": "float64", "errors": "int64",
    "reconnects": "int64", "latency_min_ms": "float64", "latency_avg_ms": "float64",
    "latency_max_ms": "float64", "latency_p50_ms": "float64", "latency_p95_ms": "float64",
    "latency_p99_ms": "float64", "cpu_server_pct": "float64", "cpu_client_pct": "float64",
}, "one row per sysbench run (phase warmup or measure) with whole-run figures")


def scheduler_settings(scheduler: str, server_cpus: int) -> dict[str, Any]:
    """my.cnf settings for a scheduler; the pool gets one group per server CPU."""
    if scheduler == POOL:
        return {"thread_handling": POOL, "thread_pool_size": server_cpus}
    return {"thread_handling": PER_CONNECTION}


def open_run(p: Params, run_dir: str | None = None, root: str | None = None) -> Run:
    """The run to record into: the CLI's (run_dir), or a new one (JupyterLab)."""
    if run_dir:
        return Run.open(run_dir)
    return Run.create(STUDY, P.as_dict(p), root=root or results.paths.RUNS_DIR)


def measure(p: Params, run: Run, *, progress: bool = True) -> None:
    """Run the whole plan against a private server, flushing every step to `run`.

    On any error (or Ctrl-C) the run is marked failed (interrupted) and what was measured
    stays on disk; the server is always stopped and its datadir removed."""
    if (run.path / "tables" / STEPS.name).exists() or run.status != "running":
        raise RuntimeError(f"run {run.path.name} already holds measurements (status {run.status}); "
                           "runs are append-only: start a new run")
    steps = plan(p)
    run.update(plan=steps.to_dict("records"), estimated_seconds=estimated_seconds(p))
    flavour = servers.load_flavour(p.flavour)
    with run.recording(), servers.Server(flavour, run.path / "server", settings=dict(p.settings),
                                         cpus=p.server_cpus, max_clients=max(p.threads)) as server:
        try:
            _measure(p, run, server, steps, progress)
        finally:
            server.stop()
            server.remove_datadir()


def _measure(p: Params, run: Run, server: servers.Server, steps: pd.DataFrame,
             progress: bool) -> None:
    server.start()
    _record_server(run, server, "prepare")
    sb = Sysbench(server, tables=p.tables, table_size=p.table_size, cpus=p.client_cpus)
    sysbench_meta = {"version": sysbench_version(), "calls": sb.calls}
    bar = tqdm(total=len(steps), disable=not progress, unit="step", mininterval=2,
               desc="thread_pool")
    try:
        sb.prepare(threads=len(os.sched_getaffinity(0)))
        _run_blocks(p, run, server, sb, steps, bar)
        server.stop()
    finally:  # the argv of every call, the failing one included, and server start/stop times
        bar.close()
        run.update(sysbench=sysbench_meta, server_events=server.events)


def _run_blocks(p: Params, run: Run, server: servers.Server, sb: Sysbench, steps: pd.DataFrame,
                bar: tqdm) -> None:
    """Per (repeat, scheduler): restart, warm up, measure the block's steps in plan order."""
    seen: set[str] = set()
    warmup_step = -1
    for (repeat, scheduler), block in steps.groupby(["repeat", "scheduler"], sort=False):
        server.restart(scheduler_settings(scheduler, server.cpu_count))
        if scheduler not in seen:
            seen.add(scheduler)
            _record_server(run, server, scheduler)
        if p.warmup > 0:
            threads = min(max(p.threads), WARMUP_MAX_THREADS)
            res = sb.run(WARMUP_WORKLOAD, threads, p.warmup, seed=p.seed)
            _store(run, warmup_step, "warmup", repeat, scheduler, p.seed, res, None)
            warmup_step -= 1
        for s in block.itertuples():
            bar.set_postfix_str(f"r{repeat} {scheduler[:4]} {s.workload} {s.threads}t")
            sampler = Sampler(server)
            seed = p.seed * 100_000 + s.step
            res = sb.run(s.workload, s.threads, p.duration, seed=seed, observer=sampler)
            _store(run, s.step, "measure", repeat, scheduler, seed, res, sampler)
            bar.update()


def _record_server(run: Run, server: servers.Server, label: str) -> None:
    meta = run.metadata["servers"]
    meta.append({"label": label, **server.describe()})
    run.update(servers=meta)


def _store(run: Run, step: int, phase: str, repeat: int, scheduler: str, seed: int,
           res: SysbenchResult, sampler: Sampler | None) -> None:
    """Flush one finished step: its totals, intervals, histogram and status samples."""
    cpu = sampler.mean_cpu() if sampler is not None else {}
    t = res.totals
    run.append(STEPS, pd.DataFrame([{
        "step": step, "phase": phase, "repeat": repeat, "scheduler": scheduler,
        "workload": res.workload, "threads": res.threads, "seed": seed,
        "started_at": res.started_at, "seconds": t["seconds"], "events": t["events"],
        "tps": t["tps"], "qps": t["qps"], "errors": t["errors"], "reconnects": t["reconnects"],
        **{k: t[k] for k in ("latency_min_ms", "latency_avg_ms", "latency_max_ms",
                             "latency_p50_ms", "latency_p95_ms", "latency_p99_ms")},
        "cpu_server_pct": cpu.get(CPU_SERVER, np.nan), "cpu_client_pct": cpu.get(CPU_CLIENT, np.nan),
    }]))
    run.append(INTERVALS, res.intervals.assign(step=step))
    run.append(HISTOGRAMS, res.histogram.assign(step=step))
    if sampler is not None:
        run.append(STATUS, sampler.frame().assign(step=step))


# ---------------------------------------------------------------- analysis

def measured(run: Run) -> pd.DataFrame:
    """The measured steps (warm-ups dropped)."""
    steps = run.table(STEPS)
    return steps[steps["phase"] == "measure"].reset_index(drop=True)


def summary(steps: pd.DataFrame) -> pd.DataFrame:
    """Per workload × scheduler × threads: QPS and p99 summaries (median, min, max, CI)."""
    by = ["workload", "scheduler", "threads"]
    qps = stats.summarize(steps, by, "qps").add_prefix("qps_").rename(
        columns={f"qps_{c}": c for c in by})
    p99 = stats.summarize(steps, by, "latency_p99_ms").add_prefix("p99_").rename(
        columns={f"p99_{c}": c for c in by})
    cpu = steps.groupby(by)[["cpu_server_pct", "cpu_client_pct"]].median().reset_index()
    return qps.merge(p99.drop(columns="p99_n"), on=by).merge(cpu, on=by)


def relative(steps: pd.DataFrame, p: Params) -> pd.DataFrame:
    """pool-of-threads vs one-thread-per-connection per workload × threads (QPS)."""
    if not {POOL, PER_CONNECTION} <= set(steps["scheduler"]):
        return pd.DataFrame()
    return stats.compare_table(steps, by=["workload", "threads"], factor="scheduler",
                               baseline=PER_CONNECTION, candidate=POOL, value="qps",
                               threshold=p.draw_threshold, seed=p.seed)


def relative_layout(rel: pd.DataFrame) -> pd.DataFrame:
    """The sources' "relative results" layout: threads down, workloads across,
    each cell `+4.1% [−1.0, +9.3] better`."""
    if rel.empty:
        return rel
    cell = rel.apply(lambda r: f"{r.delta_pct:+.1f}% [{(r.ci_low - 1) * 100:+.1f}, "
                               f"{(r.ci_high - 1) * 100:+.1f}] {r.verdict}", axis=1)
    return rel.assign(cell=cell).pivot(index="threads", columns="workload", values="cell")


def conclusion(rel: pd.DataFrame, summ: pd.DataFrame, p: Params, host_cpus: int) -> str:
    """A short Markdown conclusion computed from the tables (no claim is hard-coded);
    `host_cpus` is the CPU count of the machine the run was measured on (its metadata)."""
    lines = []
    for w, g in summ.groupby("workload"):
        best = g.loc[g["qps_median"].idxmax()]
        lines.append(f"- **{w}**: peak median {best.qps_median:,.0f} QPS with {best.scheduler} "
                     f"at {best.threads} threads.")
        if rel.empty:
            continue
        r = rel[rel["workload"] == w]
        counts = r["verdict"].value_counts().to_dict()
        text = ", ".join(f"{counts[v]} {v}" for v in stats.VERDICTS if v in counts)
        big = r.loc[r["delta_pct"].abs().idxmax()]
        lines.append(f"  pool-of-threads vs one-thread-per-connection over {len(r)} thread counts: "
                     f"{text}; largest difference {big.delta_pct:+.1f}% at {big.threads} threads "
                     f"(Holm p = {big.p_holm:.3g}).")
    if not rel.empty:
        n = int(rel[["n_baseline", "n_candidate"]].min().min())
        floor = stats.min_p_value(n, n)
        if floor >= stats.ALPHA:
            lines.append(f"- With {n} repeats per configuration the smallest possible p-value is "
                         f"{floor:.2f} ≥ {stats.ALPHA}: no difference can be called significant, "
                         f"so every verdict is a draw. Raise `repeats` (≥ 4) for verdicts.")
    cpu = summ[["cpu_server_pct", "cpu_client_pct"]].max()
    lines.append(f"- CPU: server up to {cpu.cpu_server_pct:.0f}% and sysbench up to "
                 f"{cpu.cpu_client_pct:.0f}% of one core on a {host_cpus}-CPU host"
                 + ("; client and server share the CPUs, so high thread counts measure both."
                    if not (p.server_cpus and p.client_cpus) else "."))
    return "\n".join(lines)


def finish(run: Run) -> None:
    """Mark the run complete and export its figures to figures/thread_pool/."""
    run.finish("complete")
    if (run.path / "figures").exists() and run.path.is_relative_to(results.paths.RUNS_DIR):
        results.export_figures(run)


__all__ = ["Params", "PROFILES", "resolve", "plan", "measure", "measured", "summary",
           "relative", "relative_layout", "conclusion", "open_run", "finish", "STEPS",
           ]
