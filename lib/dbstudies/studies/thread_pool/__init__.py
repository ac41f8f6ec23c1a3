"""Thread-pool scaling: sysbench OLTP at 1…N client threads, thread-per-connection vs
pool-of-threads (modelled on the MariaDB 5.5 thread-pool posts and the MariaDB-vs-MySQL
thread-pool assessment in shared/sources).

One face of the scaling experiment (`studies.scaling`: servers × schedulers × workloads ×
threads), the other is `versions`: here the arms are the schedulers, on the baseline server
(`flavour`) and on any other of `flavours` (as in the MariaDB-vs-MySQL source: MariaDB with
and without the pool, MySQL without — its pool is shown "not available"). The baseline is
one-thread-per-connection on `flavour`; throughput (QPS, higher is better), p95 and p99
latency and the tail ratio p99 ÷ p50 (lower is better) of every other arm are compared with it, each
in its own table.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from ..scaling import (  # the count's profile; the pool's settings, shown in the report
    COUNT_PROFILE,
    GOVERNING,
)
from ..scaling import Params as Scaling
from ..scaling import Scaling as Experiment


@dataclass(frozen=True, kw_only=True)
class Params(Scaling):
    """The study's parameters (studies/scaling.md, its section: what each means, per profile).
    `flavour` is the baseline's server; `flavours` every server measured (it among them)."""
    MEANINGS: ClassVar[dict[str, str]] = {  # the study READMEs' parameter tables, `dbstudies list`
        "threads": "client thread counts (1 … 4096; the source's 13 powers of two fit with a 3G pool)",
    }


_COMMON = dict(flavours=["mariadb-10.11"], warehouses=10, nodes=1_000_000)
PROFILES: dict[str, dict[str, Any]] = {
    "smoke": dict(_COMMON, workloads=["oltp_point_select"], threads=[1, 4], tables=1,
                  table_size=1000, warehouses=1, nodes=10_000, warmup=1, duration=1, repeats=2),
    # measured here (2 vCPUs): run-to-run CV of a step is ≈ 18 % whatever its length (host
    # contention drifts over seconds), so repeats buy more than long steps: 3-s steps. A
    # precision, not a number of rounds: QPS to 20 %, p95 to 25 % where 20 minutes can take it
    # (4 first rounds, then rounds where a cell is short) — measured 2026-11-26: 20.1 min, 6 of
    # 8 cells reached both, QPS 15 % in the median cell (16 fixed rounds: 13–19 %, ≈ 20 min)
    "quick": dict(_COMMON, workloads=["oltp_point_select", "oltp_read_only"],
                  threads=[1, 16, 64, 256], tables=4, table_size=100_000, warmup=2, duration=3,
                  repeats=4, budget=20, target={"qps": 0.20, "p95": 0.25}),
    # paper-grade: a precision, not a number of rounds — QPS to 5 %, p95 to 20 % in every cell
    # that 3 hours can take there (6 first rounds, then rounds where a cell is short); both
    # servers up (5G pools, 2 × 7 GiB fit 24 GiB), 18 cells. `dbstudies plan thread_pool
    # --profile full` says how long this host's noise makes it and which cells stay undecided.
    # The source's 1 … 4096 threads: threads=[1, 2, 4, …, 4096] with a smaller pool (memory is
    # checked before anything starts) or design="blocks" (without a target).
    "full": dict(_COMMON, workloads=["oltp_point_select", "oltp_read_only", "oltp_read_write"],
                 threads=[1, 4, 16, 64, 256, 1024], tables=16, table_size=1_000_000,
                 warmup=30, duration=10, repeats=6, budget=180, target={"qps": 0.05, "p95": 0.20},
                 settings={"innodb_buffer_pool_size": "5G"}),
    # by the server's instructions per transaction (no pool: valgrind runs threads one at a time)
    "count": COUNT_PROFILE,
}


# its side of the shared notebook (notebooks/scaling.ipynb: `report.narrative`)
NARRATIVE = {
    "intro": (
        "# Thread-pool scaling: one-thread-per-connection vs pool-of-threads\n"
        "\n"
        "How does MariaDB's throughput and tail latency scale with the number of client connections,\n"
        "with the classic one-thread-per-connection scheduler and with the thread pool\n"
        "(`thread_handling=pool-of-threads`, `thread_pool_size` = the server's CPUs)?\n"
        "Modelled on the MariaDB 5.5 thread-pool posts (sysbench OLTP up to 4096 threads) and the\n"
        "MariaDB-vs-MySQL thread-pool assessment."
    ),
    "method": (
        "**Method.** Each scheduler runs on a private server of its own, both started from the chosen\n"
        "flavour, with the sysbench tables loaded into each; warm-ups after each start are recorded and\n"
        "discarded. How this run ordered, paired and restarted its steps is the design line below, read\n"
        "from the run itself. Per-second samples serve the time series only.\n"
        "\n"
        "**Statistics.** Medians with min/max whiskers. The pool is compared with\n"
        "one-thread-per-connection by the ratio of geometric means, with the test the design line names,\n"
        "Holm-corrected across each table; a difference below `draw_threshold` or not significant is a\n"
        "**draw**. What each table can detect is stated below."
    ),
}


class ThreadPool(Experiment):
    """This face of the scaling experiment: its parameters, profiles and words."""
    Params, PROFILES, GOVERNING, NARRATIVE = Params, PROFILES, GOVERNING, NARRATIVE


STUDY = ThreadPool()
