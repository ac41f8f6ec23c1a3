"""Thread-pool scaling: sysbench OLTP at 1…N client threads, thread-per-connection vs
pool-of-threads (modelled on the MariaDB 5.5 thread-pool posts and the MariaDB-vs-MySQL
thread-pool assessment in shared/sources).

Arms: the schedulers, said as an intent (thread pool on/off) in each flavour's dialect
(`thread_handling` is not dynamic, so every block restarts the server with its scheduler;
the pool gets one group per server CPU), on each server of `flavours`
(as in the MariaDB-vs-MySQL source: MariaDB with and without the pool, MySQL without — its
pool is shown "not available"). Cells: every workload × client thread count. The baseline
is one-thread-per-connection on `flavour`; throughput (QPS, higher is better) and run-level
p95 and p99 latency (lower is better) of every other arm are compared with it, each in its own
table.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from ... import analysis, pauses, profiler
from ... import studykit as S
from ... import thread_handling as sch
from ...analysis import profiles, scaling, tails
from ...analysis.words import Claim

if TYPE_CHECKING:
    import pandas as pd

    from ...results import Run

WORKLOADS = ("oltp_point_select", "oltp_read_only", "oltp_read_write")
PER_CONNECTION, POOL, SCHEDULERS = sch.PER_CONNECTION, sch.POOL, sch.SCHEDULERS
GOVERNING = sch.GOVERNING  # shown in the report's settings table


@dataclass(frozen=True, kw_only=True)
class Params(tails.StallRate, profiler.CpuProfiled, pauses.PositiveControl, S.MultiServerParams):
    """The study's parameters (its README.md: what each means, per profile).
    `flavour` is the baseline's server; `flavours` every server measured (it among them)."""
    MEANINGS: ClassVar[dict[str, str]] = {  # the study READMEs' parameter tables, `dbstudies list`
        "server_cpus": "`taskset` CPU list for the server (e.g. `0-11`)",
        "threads": "client thread counts (1 … 4096; the source's 13 powers of two fit with a 3G pool)",
        "client_cpus": "`taskset` CPU list for sysbench (e.g. `12-15`)",
        "schedulers": "`thread_handling` values compared; the pool gets `thread_pool_size` = server CPUs",
    }
    schedulers: list[str]
    WORKLOADS: ClassVar[tuple[str, ...]] = (*WORKLOADS, "tpcc", "linkbench")  # tpcc: the source's TPCC-10 case
    RESERVED: ClassVar[frozenset[str]] = frozenset({"thread_handling", "thread_pool_size"})

    def check(self) -> list[str]:
        return sch.schedulers_problems(self, self.schedulers)


_COMMON = dict(flavours=["mariadb-10.11"], schedulers=list(SCHEDULERS), warehouses=10, nodes=1_000_000)
PROFILES: dict[str, dict[str, Any]] = {
    "smoke": dict(_COMMON, workloads=["oltp_point_select"], threads=[1, 4], tables=1,
                  table_size=1000, warehouses=1, nodes=10_000, warmup=1, duration=2, repeats=2),
    # measured here (2 vCPUs): run-to-run CV of a step is ≈ 18 % whatever its length (host
    # contention drifts over seconds), so repeats buy more than long steps: 3-s steps, 16
    # blocks per arm, ≈ 16 min (tests/benchmarks/noise.py; docs/statistics.md)
    "quick": dict(_COMMON, workloads=["oltp_point_select", "oltp_read_only"],
                  threads=[1, 16, 64, 256], tables=4, table_size=100_000, warmup=2, duration=3,
                  repeats=16),
    # paper-grade in ≈ 3 h: both servers up (5G pools, 2 × 7 GiB fit 24 GiB), 18 cells × 20
    # paired rounds; `dbstudies plan thread_pool --profile full` prints the MDE this host's
    # noise allows. The source's 1 … 4096 threads: threads=[1, 2, 4, …, 4096] with a smaller
    # pool (memory is checked before anything starts) or design="blocks".
    "full": dict(_COMMON, workloads=["oltp_point_select", "oltp_read_only", "oltp_read_write"],
                 threads=[1, 4, 16, 64, 256, 1024], tables=16, table_size=1_000_000,
                 warmup=30, duration=10, repeats=20, settings={"innodb_buffer_pool_size": "5G"}),
}


def arms(p: Params) -> list[S.Arm]:
    """One arm per server × scheduler it has; the baseline (the baseline server's
    one-thread-per-connection) first. One server: the arms are named by scheduler alone."""
    return sch.scheduler_arms(p, p.schedulers)


def not_available(p: Params) -> list[tuple[str, str]]:
    """(arm label, flavour) of each server × scheduler that cannot be measured: the pool on
    a flavour without one (MySQL community)."""
    return sch.schedulers_unavailable(p, p.schedulers)


def profile_cells(p: Params, run: "Run") -> list[dict[str, Any]]:
    """With `cpu_profile`: the cells profiled on every arm after the plan (QPS verdicts
    better or worse, else the largest difference; or `cpu_profile_cells`)."""
    return profiles.cells(run, S.with_control(arms(p), p), p)


# ---------------------------------------------------------------- analysis

def summary(steps: "pd.DataFrame") -> "pd.DataFrame":
    """Per workload × scheduler × threads: QPS and p99 (median, min, max, CV, CI), CPU."""
    return analysis.summary(steps)


def relative(steps: "pd.DataFrame", p: Params, metric: str = "qps", *,
             control: bool = False) -> "pd.DataFrame":
    """Every arm against the baseline per workload × threads (one Holm family), with a
    "not available on <flavour>" row per cell for a pool the flavour lacks; with `control`,
    the A/A table instead (the baseline against its twin)."""
    rel = analysis.relative(steps, S.with_control(arms(p), p), p, metric,
                                      control=control)
    if control or rel.empty:
        return rel
    return analysis.with_unavailable(rel, not_available(p))


def relative_layout(rel: "pd.DataFrame") -> "pd.DataFrame":
    """Threads down, workloads across, each cell `+4.1% [−1.0, +9.3] better`."""
    return analysis.layout(rel)


def conclusion(summ: "pd.DataFrame", tables: dict[str, "pd.DataFrame"], p: Params,
               host_cpus: int, calibration: "pd.DataFrame | None" = None) -> str:
    """A short Markdown conclusion computed from the tables (no claim is hard-coded).
    `tables`: "qps", "p95", "p99" (pool vs per-connection) and, with the A/A control, "aa";
    `host_cpus` is the CPU count of the machine the run was measured on (its metadata)."""
    return "\n".join([
        *analysis.peak_lines(summ),
        *analysis.comparison_lines(tables, f"{POOL} vs {PER_CONNECTION}"
                                             if len(p.flavours) == 1 else
                                             f"each server × scheduler vs {arms(p)[0].label}"),
        *analysis.aa_line(tables.get("aa"), arms(p)[0].label),
        *analysis.calibration_line(calibration),
        *analysis.host_lines(summ, p, host_cpus)])


MARIADB_55 = "MariaDB 5.5 thread-pool post"
TAF = "MariaDB-vs-MySQL thread-pool assessment"


def claims(p: Params) -> list[Claim]:
    """The sources' findings on the pool against one-thread-per-connection (on the baseline
    server), as this study's tables can test them."""
    pool = sch.scheduler_label(p, p.flavour, POOL)
    if sch.lacks_pool(p.flavour):
        return []
    return [
        Claim(MARIADB_55, "the pool keeps read-only throughput up with many connections, where "
              "one-thread-per-connection falls off", "qps", pool, "better", "a plot up to 4,096 threads; "
              "16 server cores, sysbench on 8 others", ("oltp_read_only",), 256,
              note="“many”: 256 or more client threads here", client_apart=True),
        Claim(TAF, "point select: the pool gains at high concurrency", "qps", pool, "better",
              "a gain at 128 threads, shown as a plot; 6 cores shared with sysbench",
              ("oltp_point_select",), 128),
        Claim(TAF, "read/write OLTP: no significant difference in TPS", "qps", pool, "draw",
              "no sizes given", ("oltp_read_write",)),
        Claim(TAF, "TPC-C (10 warehouses): a clear gain with the pool", "qps", pool, "better",
              "shown as a plot", ("tpcc",)),
    ]


def answer(run: "Run", p: Params) -> S.Answer:
    """What the run answers: every server × scheduler against the baseline on QPS and p99, the A/A control
    and its calibration, the conclusion (`analysis.scaling.answer`) and the sources' `claims`."""
    return scaling.answer(run, p, S.with_control(arms(p), p), relative, conclusion,
                                   claims(p))
