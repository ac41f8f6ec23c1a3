"""Server versions side by side: sysbench OLTP at 1…N client threads on several flavours
(MariaDB 10.5 / 10.11 / 11.8, MySQL 9.7), each against a baseline version (modelled on the
simplified OLTP version comparisons and the MariaDB-vs-MySQL assessment in shared/sources).

One face of the scaling experiment (`studies.scaling`: servers × schedulers × workloads ×
threads), the other is `thread_pool`: here the arms are the flavours, the baseline
(`flavour`) first, each on its own private server (other Debian suites in their own rootfs)
with the same my.cnf intent in its own dialect and one scheduler (`schedulers`: both make
every version × scheduler an arm). In the paired design (the default) every version's server
is up at once and the versions of a cell are measured back to back, in rounds, all restarted
every `restart_every` rounds; with `design` blocks, each version gets a block of its own on
a fresh start per repeat. Throughput (QPS) and p95/p99 latency of every version are compared
with the baseline in one table each, one Holm family over all versions × cells.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from ..scaling import COUNT_PROFILE, PER_CONNECTION
from ..scaling import Params as Scaling
from ..scaling import Scaling as Experiment

FOUR = ["mariadb-10.5", "mariadb-10.11", "mariadb-11.8", "mysql-9.7"]


@dataclass(frozen=True, kw_only=True)
class Params(Scaling):
    """The study's parameters; `flavour` is the baseline version, one of `flavours`."""
    MEANINGS: ClassVar[dict[str, str]] = {  # the study READMEs' parameter tables, `dbstudies list`
        "flavour": "the baseline version, one of `flavours`",
        "repeats": "paired rounds (blocks per version with `design` blocks; with a `target`: the rounds every cell gets first)",
        "settings": "extra my.cnf settings for every version, on top of its fragments",
        "table_size": "rows per table (the source: 1 table of 1M rows, read-only from memory)",
        "flavours": (
            "the versions compared (`env/servers/<flavour>.toml`; rootfs flavours are provisioned "
            "on first use)"),
        "schedulers": ("`thread_handling` values: one, the same on every version; with both, every "
                       "version × scheduler is an arm (the pool where a version has one)"),
    }


# the source: 1 table of 1M rows, read-only from memory; here scaled to 2 vCPUs
_COMMON = dict(schedulers=[PER_CONNECTION], tables=1, warehouses=10, nodes=1_000_000)
PROFILES: dict[str, dict[str, Any]] = {
    "smoke": dict(_COMMON, flavours=["mariadb-10.11", "mysql-9.7"], workloads=["oltp_read_only"],
                  threads=[1, 4], table_size=1000, warehouses=1, nodes=10_000, warmup=1, duration=1, repeats=2),
    "quick": dict(_COMMON, flavours=FOUR, workloads=["oltp_read_only"],
                  threads=[1, 16, 64, 256], table_size=200_000, warmup=2, duration=3, repeats=10),
    # paper-grade: QPS to 5 %, p95 to 20 % in every cell 3 hours can take there (6 first
    # rounds, then rounds where a cell is short); four servers up at once (3G pools: 4 × 3.8
    # GiB fit 24 GiB), 12 cells of 5-s steps (longer steps do not lower this host's
    # step-to-step noise: docs/statistics.md); all of 1 … 512 threads: `threads`
    "full": dict(_COMMON, flavours=FOUR, workloads=["oltp_point_select", "oltp_read_only",
                                                    "oltp_read_write"],
                 threads=[1, 16, 64, 256], table_size=1_000_000, warmup=30,
                 duration=5, repeats=6, budget=180, target={"qps": 0.05, "p95": 0.20},
                 settings={"innodb_buffer_pool_size": "3G"}),
    # by the server's instructions per transaction, not throughput: `-p flavours '[A, B]'`
    "count": COUNT_PROFILE,
}


# its side of the shared notebook (notebooks/scaling.ipynb: `report.narrative`)
NARRATIVE = {
    "intro": (
        "# Server versions side by side\n"
        "\n"
        "How do server versions compare on the same machine, with the same intent in their own\n"
        "configuration dialects, as the client count grows? Modelled on the simplified-OLTP version\n"
        "comparisons (QPS by client count, then a \"relative results\" table against a baseline version)\n"
        "and the MariaDB-vs-MySQL 9.7 assessment."
    ),
    "method": (
        "**Method.** Every flavour gets its own private server (versions from other Debian suites run in a\n"
        "root filesystem of their own, provisioned on first use, through bwrap), the sysbench tables are\n"
        "loaded once per server; warm-ups after each start are recorded and discarded. How this run\n"
        "ordered, paired and restarted its steps is the design line below, read from the run itself.\n"
        "\n"
        "**Statistics.** Medians with min/max whiskers. Every version is compared with the baseline\n"
        "(`flavour`) by the ratio of geometric means and its 95 % CI, with the test the design line names,\n"
        "Holm-corrected across the whole table (all versions × cells in one family); a difference below\n"
        "`draw_threshold` or not significant is a **draw**. What each table can detect is stated below."
    ),
}


class Versions(Experiment):
    """This face of the scaling experiment: its parameters, profiles and words."""
    Params, PROFILES, NARRATIVE = Params, PROFILES, NARRATIVE


STUDY = Versions()
