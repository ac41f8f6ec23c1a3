"""Server versions side by side: sysbench OLTP at 1…N client threads on several flavours
(MariaDB 10.5 / 10.11 / 11.8, MySQL 9.7), each against a baseline version (modelled on the
simplified OLTP version comparisons and the MariaDB-vs-MySQL assessment in shared/sources).

Arms: the flavours, the baseline (`flavour`) first; each runs on its own private server
(other Debian suites in their own rootfs) with the same my.cnf intent in its own dialect.
In the paired design (the default) every version's server is up at once and the versions of
a cell are measured back to back, in rounds, all restarted every `restart_every` rounds; with
`design` blocks, each version gets a block of its own on a fresh start per repeat.
Throughput (QPS) and run-level p99 latency of every version are compared with the baseline
in one table each, one Holm family over all versions × cells.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from ... import analysis, pauses, profiler
from ... import studykit as S
from ...analysis import profiles, scaling, tails
from ...analysis.words import Claim

if TYPE_CHECKING:
    import pandas as pd

    from ...results import Run

WORKLOADS = ("oltp_read_only", "oltp_point_select", "oltp_read_write")
FOUR = ["mariadb-10.5", "mariadb-10.11", "mariadb-11.8", "mysql-9.7"]


@dataclass(frozen=True, kw_only=True)
class Params(tails.StallRate, profiler.CpuProfiled, pauses.PositiveControl, S.MultiServerParams):
    """The study's parameters; `flavour` is the baseline version, one of `flavours`."""
    MEANINGS: ClassVar[dict[str, str]] = {  # the study READMEs' parameter tables, `dbstudies list`
        "flavour": "the baseline version, one of `flavours`",
        "repeats": "paired rounds (blocks per version with `design` blocks)",
        "server_cpus": "`taskset` CPU list for the servers",
        "settings": "extra my.cnf settings for every version, on top of its fragments",
        "workloads": "sysbench OLTP workloads, or ours: `tpcc`, `linkbench`",
        "table_size": "rows per table (the source: 1 table of 1M rows, read-only from memory)",
        "warmup": "warm-up seconds after each server start (recorded, discarded)",
        "flavours": (
            "the versions compared (`env/servers/<flavour>.toml`; rootfs flavours are provisioned "
            "on first use)"),
    }
    WORKLOADS: ClassVar[tuple[str, ...]] = (*WORKLOADS, "tpcc", "linkbench")

    def check(self) -> list[str]:
        return self.flavour_problems()


# the source: 1 table of 1M rows, read-only from memory; here scaled to 2 vCPUs
_COMMON = dict(tables=1, warehouses=10, nodes=1_000_000)
PROFILES: dict[str, dict[str, Any]] = {
    "smoke": dict(_COMMON, flavours=["mariadb-10.11", "mysql-9.7"], workloads=["oltp_read_only"],
                  threads=[1, 4], table_size=1000, warehouses=1, nodes=10_000, warmup=1, duration=2, repeats=2),
    "quick": dict(_COMMON, flavours=FOUR, workloads=["oltp_read_only"],
                  threads=[1, 16, 64, 256], table_size=200_000, warmup=2, duration=3, repeats=10),
    # paper-grade in ≈ 3 h: four servers up at once (3G pools: 4 × 3.8 GiB fit 24 GiB),
    # 12 cells × 24 paired rounds of 5-s steps (longer steps do not lower this host's
    # step-to-step noise: docs/statistics.md); all of 1 … 512 threads: `threads`
    "full": dict(_COMMON, flavours=FOUR, workloads=["oltp_point_select", "oltp_read_only",
                                                    "oltp_read_write"],
                 threads=[1, 16, 64, 256], table_size=1_000_000, warmup=30,
                 duration=5, repeats=24, settings={"innodb_buffer_pool_size": "3G"}),
}


def arms(p: Params) -> list[S.Arm]:
    """One arm per flavour, the baseline first, each on its own server."""
    return [S.Arm(S.flavour_label(f), {}, flavour=f) for f in p.servers()]


def profile_cells(p: Params, run: "Run") -> list[dict[str, Any]]:
    """With `cpu_profile`: the cells profiled on every arm after the plan (QPS verdicts
    better or worse, else the largest difference; or `cpu_profile_cells`)."""
    return profiles.cells(run, S.with_control(arms(p), p), p)


# ---------------------------------------------------------------- analysis

def summary(steps: "pd.DataFrame") -> "pd.DataFrame":
    """Per workload × version × threads: QPS and p99 (median, min, max, CV, CI), CPU."""
    return analysis.summary(steps)


def relative(steps: "pd.DataFrame", p: Params, metric: str = "qps", *,
             control: bool = False) -> "pd.DataFrame":
    """Every version against the baseline per workload × threads, all in one Holm family;
    with `control`, the A/A table (the baseline against its twin)."""
    return analysis.relative(steps, S.with_control(arms(p), p), p, metric,
                                       control=control)


def relative_layout(rel: "pd.DataFrame") -> "pd.DataFrame":
    """Threads down, versions across, each cell `+4.1% [−1.0, +9.3] better`."""
    return analysis.layout(rel)


def qps_table(summ: "pd.DataFrame") -> "pd.DataFrame":
    """The sources' QPS table: threads down, one column per version (and workload),
    each cell `median (min–max)`."""
    cell = summ.apply(lambda r: f"{r.qps_median:,.0f} ({r.qps_min:,.0f}–{r.qps_max:,.0f})", axis=1)
    many_w = summ["workload"].nunique() > 1
    return analysis.wide(summ, cell, summ["arm"] + (" · " + summ["workload"] if many_w else ""))


def conclusion(summ: "pd.DataFrame", tables: dict[str, "pd.DataFrame"], p: Params,
               host_cpus: int, calibration: "pd.DataFrame | None" = None) -> str:
    """A short Markdown conclusion computed from the tables (no claim is hard-coded)."""
    versions = ", ".join(a.label for a in arms(p)[1:])
    return "\n".join([
        *analysis.peak_lines(summ),
        *analysis.comparison_lines(tables, f"{versions} vs {arms(p)[0].label}"),
        *analysis.aa_line(tables.get("aa"), arms(p)[0].label),
        *analysis.calibration_line(calibration),
        *analysis.host_lines(summ, p, host_cpus)])


SIMPLIFIED = "simplified OLTP version comparison"
TAF = "MariaDB-vs-MySQL thread-pool assessment"


def claims(p: Params) -> list[Claim]:
    """The sources' findings between versions, where this run's baseline lets its tables
    test them (the sources measured older versions: said beside each)."""
    base = S.flavour_label(p.flavour)
    labels = {S.flavour_label(f) for f in p.flavours}
    out = []
    if base.startswith("mariadb") and "mysql-9.7" in labels:
        out += [Claim(SIMPLIFIED, "MySQL's newest GA is slower than MariaDB's on read-only OLTP from memory",
                      "qps", "mysql-9.7", "worse", "MySQL 5.7.9 vs MariaDB 10.1.8: −3.8 … −11.5 % QPS at "
                      "1–256 clients, 4 cores", ("oltp_read_only",),
                      note=f"other versions here: MySQL 9.7 against {base}", sizes=(-11.5, -3.8)),
                Claim(TAF, "MariaDB far ahead of MySQL on read/write OLTP", "qps", "mysql-9.7", "worse",
                      "MariaDB 13.0.1 +200 % TPS over MySQL 9.7.0, MariaDB without binlog",
                      ("oltp_read_write",), sizes=(-66.7, -66.7))]
    if base == "mariadb-10.11" and "mariadb-11.8" in labels:
        out.append(Claim(SIMPLIFIED, "MariaDB's newer release is faster than its predecessor", "qps",
                         "mariadb-11.8", "better", "10.1.8 vs 10.0.21: +2.3 … +5.9 % QPS",
                         ("oltp_read_only",), note="other versions here: 11.8 against 10.11",
                         sizes=(2.3, 5.9)))
    return out


def answer(run: "Run", p: Params) -> S.Answer:
    """What the run answers: every version against the baseline on QPS and p99, the A/A control
    and its calibration, the conclusion (`analysis.scaling.answer`) and the sources' `claims`."""
    return scaling.answer(run, p, S.with_control(arms(p), p), relative, conclusion,
                                   claims(p))
