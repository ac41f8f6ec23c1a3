"""The scaling experiment: sysbench OLTP at 1…N client threads on servers × schedulers ×
workloads × threads, every arm against a baseline. Two built-in studies are its two faces —
`thread_pool` (one server, thread-per-connection against pool-of-threads) and `versions`
(several servers, one scheduler) — which differ in their profiles, their words and their
notebook's narrative, not in what they measure or how they judge it (`analysis.sysbench_answer`).

Arms: every server of `flavours` × every scheduler of `schedulers` it has (a scheduler is
said as an intent in each flavour's dialect; `thread_handling` is not dynamic, so an arm's
server starts with it, and the pool gets one group per server CPU), the baseline — the
baseline server's first scheduler — first; a pool a flavour lacks (MySQL community) is a
"not available" cell. Cells: every workload × client thread count. Throughput (QPS, higher
is better), p95 and p99 latency and the tail ratio p99 ÷ p50 (lower is better) of every other arm are
compared with the baseline, each in its own table, one Holm family per table.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

from .. import analysis
from ..analysis import aa, cpu_profiles, sentences, sysbench_answer
from ..analysis.claims import Claim
from ..kit import studykit as S
from ..kit import thread_handling as sch
from ..kit.contract import Answer
from ..measure.steps import SysbenchStudy
from ..observe import callgrind, pauses, profiler

if TYPE_CHECKING:
    import pandas as pd

    from ..store.results import Run


WORKLOADS = ("oltp_point_select", "oltp_read_only", "oltp_read_write")
PER_CONNECTION, POOL, SCHEDULERS = sch.PER_CONNECTION, sch.POOL, sch.SCHEDULERS
GOVERNING = sch.GOVERNING  # shown in the report's settings table
# both faces' `count` profile: the server's instructions per transaction (`callgrind.Counted`) at
# one client thread on cached data, against its A/A twin unless `flavours` name others; a
# difference under 0.2 % is a draw. Measured here on Debian's 10.11: 43,130 instructions per
# point select in windows of 3,000 (2 s each under valgrind), SD 0.02–0.03 % across 6 windows;
# userstat=ON +5.9 % [+5.9, +5.9]; a run of 12 windows in 1:20–1:25
COUNT_PROFILE: dict[str, Any] = dict(
    flavours=["mariadb-10.11"], schedulers=[PER_CONNECTION], workloads=["oltp_point_select"], threads=[1],
    tables=1, table_size=10_000, warehouses=1, nodes=10_000, warmup=5, duration=300, count=3000, repeats=6,
    restart_every=3, aa_control=True, busy_retries=0, draw_threshold=0.002)


@dataclass(frozen=True, kw_only=True)
class Params(callgrind.Counted, profiler.CpuProfiled, pauses.PositiveControl, S.MultiServerParams):
    """The experiment's parameters (scaling.md, a section per face: what each means, per profile).
    `flavour` is the baseline's server; `flavours` every server measured (it among them)."""
    MEANINGS: ClassVar[dict[str, str]] = {  # the study READMEs' parameter tables, `dbstudies list`
        "threads": "client thread counts (1 … 4096)",
        "server_cpus": "`taskset` CPU list for the servers (e.g. `0-11`; smoke: the first CPU, shared with sysbench)",
        "client_cpus": "`taskset` CPU list for sysbench (e.g. `12-15`; smoke: the servers' CPU)",
        "schedulers": ("`thread_handling` values, each an arm on every server that has it (the baseline: "
                       "the first); the pool gets `thread_pool_size` = server CPUs"),
    }
    schedulers: list[str] = field(default_factory=lambda: list(SCHEDULERS))
    WORKLOADS: ClassVar[tuple[str, ...]] = (*WORKLOADS, "tpcc", "linkbench")
    RESERVED: ClassVar[frozenset[str]] = frozenset({"thread_handling", "thread_pool_size"})

    def check(self) -> list[str]:
        return sch.schedulers_problems(self, self.schedulers)


# ---------------------------------------------------------------- analysis


MARIADB_55 = "MariaDB 5.5 thread-pool post"
TAF = "MariaDB-vs-MySQL thread-pool assessment"
SIMPLIFIED = "simplified OLTP version comparison"


def _pool_claims(p: Params) -> list[Claim]:
    if POOL not in p.schedulers or PER_CONNECTION not in p.schedulers or sch.lacks_pool(p.flavour):
        return []
    pool = sch.scheduler_label(p, p.flavour, POOL, p.schedulers)
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


def _version_claims(p: Params) -> list[Claim]:
    base = S.flavour_label(p.flavour)
    labels = {S.flavour_label(f): f for f in p.flavours}
    first = sorted(p.schedulers, key=SCHEDULERS.index)[0]

    def arm(label: str) -> str:
        return sch.scheduler_label(p, labels[label], first, p.schedulers)
    out = []
    if base.startswith("mariadb") and "mysql-9.7" in labels:
        out += [Claim(SIMPLIFIED, "MySQL's newest GA is slower than MariaDB's on read-only OLTP from memory",
                      "qps", arm("mysql-9.7"), "worse", "MySQL 5.7.9 vs MariaDB 10.1.8: −3.8 … −11.5 % QPS at "
                      "1–256 clients, 4 cores", ("oltp_read_only",),
                      note=f"other versions here: MySQL 9.7 against {base}", sizes=(-11.5, -3.8)),
                Claim(TAF, "MariaDB far ahead of MySQL on read/write OLTP", "qps", arm("mysql-9.7"), "worse",
                      "MariaDB 13.0.1 +200 % TPS over MySQL 9.7.0, MariaDB without binlog",
                      ("oltp_read_write",), sizes=(-66.7, -66.7))]
    if base == "mariadb-10.11" and "mariadb-11.8" in labels:
        out.append(Claim(SIMPLIFIED, "MariaDB's newer release is faster than its predecessor", "qps",
                         arm("mariadb-11.8"), "better", "10.1.8 vs 10.0.21: +2.3 … +5.9 % QPS",
                         ("oltp_read_only",), note="other versions here: 11.8 against 10.11",
                         sizes=(2.3, 5.9)))
    return out


class Scaling(SysbenchStudy[Params]):
    """The scaling experiment's hooks, the sysbench kind's otherwise; each face gives its
    `Params` and `PROFILES`; both faces share one notebook, notebooks/scaling.ipynb."""
    NOTEBOOK = "scaling"

    def arms(self, p: Params) -> list[S.Arm]:
        """One arm per server × scheduler it has, the baseline first; named by scheduler with one
        server, by server with one scheduler, by both otherwise."""
        return sch.scheduler_arms(p, p.schedulers)

    def not_available(self, p: Params) -> list[tuple[str, str]]:
        """(arm label, flavour) of each server × scheduler that cannot be measured: the pool on
        a flavour without one (MySQL community)."""
        return sch.schedulers_unavailable(p, p.schedulers)

    def profile_cells(self, run: "Run", p: Params) -> list[dict[str, Any]]:
        """With `cpu_profile`: the cells profiled on every arm after the plan (QPS verdicts
        better or worse, else the largest difference; or `cpu_profile_cells`)."""
        return cpu_profiles.cells(run, S.with_control(self.arms(p), p), p)

    def summary(self, steps: "pd.DataFrame") -> "pd.DataFrame":
        """Per workload × arm × threads: QPS and p99 (median, min, max, CV, CI), CPU."""
        return analysis.summary(steps)

    def relative(self, steps: "pd.DataFrame", p: Params, metric: str = "qps", *,
                 aa: bool = False) -> "pd.DataFrame":
        """Every arm against the baseline per workload × threads (one Holm family), with a
        "not available on <flavour>" row per cell for a pool the flavour lacks; with `aa`,
        the A/A table instead (the baseline against its twin)."""
        rel = analysis.relative(steps, S.with_control(self.arms(p), p), p, metric, aa=aa)
        if aa or rel.empty:
            return rel
        return analysis.with_unavailable(rel, self.not_available(p))

    def relative_layout(self, rel: "pd.DataFrame") -> "pd.DataFrame":
        """Threads down, workloads (and arms) across, each cell `+4.1% [−1.0, +9.3] better`."""
        return analysis.layout(rel)

    def qps_table(self, summ: "pd.DataFrame") -> "pd.DataFrame":
        """The sources' QPS table: threads down, one column per arm (and workload), each cell
        `median (min–max)`."""
        cell = summ.apply(lambda r: f"{r.qps_median:,.0f} ({r.qps_min:,.0f}–{r.qps_max:,.0f})", axis=1)
        many_w = summ["workload"].nunique() > 1
        return analysis.wide(summ, cell, summ["arm"] + (" · " + summ["workload"] if many_w else ""))

    def compared(self, p: Params) -> str:
        """What the tables compare, in words: the pool against thread-per-connection on one
        server, the versions against the baseline with one scheduler, else every arm."""
        a = self.arms(p)
        if len(p.flavours) == 1 and len(a) == 2:
            return f"{a[1].label} vs {a[0].label}"
        if len(p.schedulers) == 1:
            return f"{', '.join(x.label for x in a[1:])} vs {a[0].label}"
        return f"each server × scheduler vs {a[0].label}"

    def conclusion(self, summ: "pd.DataFrame", tables: dict[str, "pd.DataFrame"], p: Params,
                   host_cpus: int, calibration: "pd.DataFrame | None" = None) -> str:
        """A short Markdown conclusion computed from the tables (no claim is hard-coded).
        `tables`: one per comparison (every arm against the baseline) and, with the A/A control,
        "aa"; `host_cpus` is the CPU count of the machine the run was measured on (its metadata)."""
        timed = not p.count  # a count run's throughput and CPU are valgrind's: no peak, no host lines
        return "\n".join([
            *(sentences.peak_lines(summ) if timed else []),
            *sentences.comparison_lines(tables, self.compared(p), p.COMPARISONS),
            *sentences.aa_line(tables.get("aa"), self.arms(p)[0].label),
            *aa.calibration_line(calibration),
            *(sentences.host_lines(summ, p, host_cpus) if timed else [])])

    def claims(self, p: Params) -> list[Claim]:
        """The sources' findings this run's arms can test: the pool against thread-per-connection
        on the baseline server (when both are arms), and between versions with the baseline's
        scheduler (the sources measured older versions: said beside each)."""
        return [*_pool_claims(p), *_version_claims(p)]

    def answer(self, run: "Run", p: Params) -> Answer:
        """What the run answers: every arm against the baseline on QPS, p95, p99 and the tail
        ratio, the A/A control and its calibration, the conclusion (`analysis.sysbench_answer.answer`) and
        the sources' `claims`."""
        return sysbench_answer.answer(run, p, S.with_control(self.arms(p), p), self.relative, self.conclusion, self.claims(p))
