"""Table compression when data outgrows memory: uncompressed, page-compressed and
row-compressed InnoDB tables loaded, sized and run I/O-bound (modelled on the LinkBench and
TPC-C compression study on flash in shared/sources/linkbench-tpcc-compression-fusionio.txt).

Arms: the `candidates`, table formats written `none` (the baseline, first), `page:<algorithm>`
(PAGE_COMPRESSED=1 with innodb_compression_algorithm; lz4 & co. load their provider plugin)
and `row:<KiB>` (ROW_FORMAT=COMPRESSED KEY_BLOCK_SIZE=<KiB>). Every server start has a small
`buffer_pool`, `flush_method` (O_DIRECT: the OS page cache must not hide reads), the
`doublewrite` buffer on or off, and no buffer-pool dump or reload.

A step is one workload × client threads on one candidate: load the tables in the candidate's
format (timed; rows counted by the server), check that every table really is in that format
(a mismatch is an error, never a result), restart cold, measure the footprint (allocated and
apparent bytes of every table file), run the workload for `duration` seconds from the cold
buffer pool on, restart again to measure the footprint after the run, and drop the tables.
The server's counters are kept for the load and for the run. What each step's figures are
(write amplification …) and how the candidates are compared: `storage`.
"""
from __future__ import annotations

import dataclasses
import os
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from ... import analysis, servers, workloads
from ...core import comparisons as C
from ...core.errors import WorkloadError
from ...kit import studykit as S
from ...kit.contract import Answer
from ...measure import schedule
from ...measure.steps import SysbenchStudy, sysbench_step
from ...servers import compression
from ...store import results
from ...store.schema import Table
from . import storage

if TYPE_CHECKING:
    import pandas as pd

    from ...measure.context import Context
    from ...store.results import Run

WORKLOADS = ("linkbench", "tpcc", "oltp_read_write")
# what governs compression and its cost, shown in the report's settings table
GOVERNING = ("innodb_compression_algorithm", "innodb_compression_level", "innodb_compression_default",
             "innodb_compression_failure_threshold_pct", "innodb_compression_pad_pct_max",
             "innodb_file_per_table", "innodb_page_size")
FLUSH_METHODS = ("O_DIRECT", "O_DIRECT_NO_FSYNC", "fsync", "O_DSYNC")
LOAD_BYTES_PER_S = 20 * 2**20   # a compressed load's pace here (uncompressed ≈ 40 MB/s)
DB = "sbtest"

LOADS = Table("loads", 1, {
    "step": "int64", "workload": "str", "seconds": "float64", "rows": "int64",
    "rows_per_s": "float64"},
    "one row per measured step: its tables' load in the candidate's format (sysbench prepare, "
    "wall clock), rows = the server's Handler_write increase over it")
FOOTPRINT = Table("footprint", 2, {
    "step": "int64", "stage": "str", "table": "str", "apparent_bytes": "int64",
    "allocated_bytes": "int64", "free_bytes": "int64"},
    "per step, table file and stage (load: after the load, run: after the run, both after a "
    "clean restart): st_size and st_blocks × 512 of the table's .ibd, and InnoDB's free space "
    "in it (DATA_FREE: preallocated extents never written; v1 runs lack it)")
FORMATS = Table("formats", 1, {
    "step": "int64", "table": "str", "row_format": "str", "zip_kib": "int64",
    "page_compressed": "bool", "algorithm": "str"},
    "per step and table: the format the server's dictionary shows after the load (verified)")
COUNTERS = Table("counters", 1, {
    "step": "int64", "stage": "str", "variable": "str", "value": "float64"},
    "per step: the increase of the server's compression counters over the load and the run")


@dataclass(frozen=True, kw_only=True)
class Params(S.SysbenchParams):
    """The study's parameters (its README.md: what each means, per profile)."""
    MEANINGS: ClassVar[dict[str, str]] = {  # the study READMEs' parameter tables, `dbstudies list`
        "repeats": "blocks per candidate: each loads, restarts and runs again",
        "seed": (
            "random seed: order of blocks and steps, sysbench `--rand-seed` of loads and runs "
            "(every candidate loads the same rows)"),
        "aa_control": "also measure `none` a second time, as its own interleaved arm (A/A control)",
        "settings": (
            "more server settings of every start (smoke and quick lower `innodb_lru_scan_depth` so "
            "that MariaDB does not keep a third of their small pools free; the study owns the "
            "buffer pool, flush method, doublewrite, compression algorithm, plugins and buffer-pool"
            " dump/load)"),
        "design": (
            "`paired`: every arm on a server of its own, all up at once, the arms of a cell "
            "measured back to back in rounds; `blocks`: per repeat, each arm in a block of its own "
            "on a fresh start (see Statistics); only blocks: each step loads and runs I/O-bound "
            "from a cold pool, which a second server would disturb"),
        "workloads": "`linkbench`, `tpcc`, and `oltp_read_write` as a baseline",
        "threads": "client thread counts",
        "tables": "sysbench tables (`oltp_read_write`; ≈ 260 B per row here)",
        "warehouses": "TPC-C-like scale (≈ 110 MB per warehouse here, uncompressed)",
        "nodes": "LinkBench-like scale (≈ 650 B per node here with its links and counts, uncompressed)",
        "warmup": "must be 0: every run starts from a cold buffer pool on purpose",
        "duration": "seconds of each run (the source: 24 h of LinkBench, 3 h of TPC-C)",
        "candidates": (
            "table formats, `none` first (the baseline): `none`, `page:<algorithm>` (zlib, lz4, "
            "lzo, lzma, bzip2, snappy), `row:<KiB>` (1, 2, 4, 8, 16)"),
        "buffer_pool": "InnoDB buffer pool of every start",
        "flush_method": "`innodb_flush_method` (O_DIRECT keeps the OS page cache from hiding reads)",
        "doublewrite": "InnoDB doublewrite buffer (the source ran without it, on atomic writes)",
        "payload_compressibility": "LinkBench-like payloads: 0 random … 1 highly compressible",
        "min_data_ratio": "refuse a scale whose estimated uncompressed data is under this × `buffer_pool`",
    }
    candidates: list[str]
    buffer_pool: str
    flush_method: str
    doublewrite: bool
    payload_compressibility: float
    min_data_ratio: float
    WORKLOADS: ClassVar[tuple[str, ...]] = WORKLOADS
    SCRIPTS: ClassVar[bool] = False  # each step loads, verifies and sizes its own tables
    # per measured step; no precision target: its steps load their own tables (blocks, not
    # pairs of rounds); the costs per transaction explain its throughput, not its load
    COMPARISONS: ClassVar[tuple[C.Comparison, ...]] = (
        C.Comparison("tps", "median_tps", True, "steady throughput (TPS)", "TPS", target=False, aa=True),
        C.Comparison("load", "load_seconds", False, "load time", target=False, explained=False),
        C.Comparison("footprint", "allocated_after_load_mib", False, "allocated footprint after the load",
                     "footprint", target=False, explained=False),
        C.Comparison("wa", "write_amplification", False, "write amplification", target=False, explained=False),
    )
    RESERVED: ClassVar[frozenset[str]] = frozenset({
        "innodb_buffer_pool_size", "innodb_flush_method", "innodb_doublewrite",
        "innodb_compression_algorithm", "plugin_load_add", "innodb_buffer_pool_load_at_startup",
        "innodb_buffer_pool_dump_at_shutdown", "innodb_file_per_table"})

    def check(self) -> list[str]:
        problems = []
        c = self.candidates
        if not isinstance(c, list) or not c or len(set(map(str, c))) != len(c):
            return [f'candidates: need distinct table formats, e.g. ["none", "page:zlib", '
                    f'"row:8"], got {c!r}']
        if c[0] != "none":
            problems.append(f"candidates: the first is the baseline every other is compared "
                            f"with and must be none, got {c[0]!r}")
        if not S.check_flavour("flavour", self.flavour):
            flavour = servers.load_flavour(self.flavour)
            problems += [f"candidates: {m}" for m in
                         (m for spec in c for m in compression.problems(spec, flavour))]
        if self.flush_method not in FLUSH_METHODS:
            problems.append(f"flush_method: one of {', '.join(FLUSH_METHODS)}, got {self.flush_method!r}")
        if not 0 <= self.payload_compressibility <= 1:
            problems.append(f"payload_compressibility: must be in [0, 1], got {self.payload_compressibility}")
        if self.warmup != 0:
            problems.append("warmup: must be 0: each run starts from a cold buffer pool on "
                            "purpose, and its steady part is detected, not warmed into")
        pool = servers.size_bytes(self.buffer_pool)
        if pool is None or pool < 5 * 2**20:
            problems.append(f"buffer_pool: a size of at least 5M, e.g. \"64M\", got {self.buffer_pool!r}")
        elif self.min_data_ratio < 0:
            problems.append(f"min_data_ratio: must be ≥ 0, got {self.min_data_ratio}")
        else:
            for w in self.workloads if isinstance(self.workloads, list) else []:
                size = estimated_bytes(self, w)
                if size is not None and size < self.min_data_ratio * pool:
                    problems.append(
                        f"{w}: its data would be ≈ {size / 2**20:,.0f} MiB, only "
                        f"{size / pool:.1f}× the {self.buffer_pool} buffer pool (min_data_ratio "
                        f"{self.min_data_ratio:g}): raise its scale or lower buffer_pool")
        return problems


# blocks, not pairs: every step loads its own tables and runs I/O-bound from a cold pool, so
# a second server running beside it would share the device and the page cache it measures
_COMMON = dict(warmup=0, design="blocks", flush_method="O_DIRECT", doublewrite=True,
               payload_compressibility=0.5, min_data_ratio=4.0, tables=4, table_size=100_000,
               warehouses=10)
# With its default innodb_lru_scan_depth (1,536 pages) MariaDB kept about a third of a 64 MiB
# pool (4,096 pages) free: 69 % of it held data, 97 % with 128 (measured here).
_SMALL_POOL = {"innodb_lru_scan_depth": 128}
PROFILES: dict[str, dict[str, Any]] = {
    # mechanics only: data about the pool's size (min_data_ratio 0 lets that pass)
    "smoke": dict(_COMMON, candidates=["none", "page:zlib", "row:8"], workloads=["linkbench"],
                  settings=_SMALL_POOL,
                  threads=[4], nodes=10_000, buffer_pool="8M", min_data_ratio=0.0,
                  tables=1, table_size=1000, warehouses=1, duration=3, repeats=2),
    # ≈ 330 MB of LinkBench-like data, 5× a 64 MiB pool
    "quick": dict(_COMMON, candidates=["none", "page:zlib", "page:lz4", "row:8"], settings=_SMALL_POOL,
                  workloads=["linkbench"], threads=[16], nodes=500_000, buffer_pool="64M",
                  duration=60, repeats=3),
    "full": dict(_COMMON, candidates=["none", "page:zlib", "page:lz4", "row:8", "row:4"],
                 workloads=["linkbench", "tpcc", "oltp_read_write"], threads=[16, 64],
                 nodes=4_000_000, warehouses=50, tables=10, table_size=1_000_000,
                 buffer_pool="512M", duration=1800, repeats=3),
}


def estimated_bytes(p: Params, workload: str) -> float | None:
    """The uncompressed size of `workload`'s tables at `p`'s scale."""
    return workloads.estimated_bytes(workload, dataclasses.asdict(p))


# ---------------------------------------------------------------- one step


def _record_counters(run: "Run", n: int, stage: str, a: dict[str, float], b: dict[str, float]) -> None:
    run.append_rows(COUNTERS, [{"step": n, "stage": stage, "variable": k, "value": b[k] - a.get(k, 0.0)}
                            for k in b])


# ---------------------------------------------------------------- analysis


class Compression(SysbenchStudy[Params]):
    """Its own steps (each loads, verifies and sizes its tables, then runs I/O-bound), one
    after another; the sysbench kind's client."""
    Params, PROFILES, GOVERNING = Params, PROFILES, GOVERNING

    def describe(self, p: Params, steps: int) -> str:
        """The plan in one line (`schedule.describe`), `steps` long."""
        arms_ = S.with_control(self.arms(p), p)
        return (f"{steps} steps (load + run of {p.duration} s each): "
                f"{p.repeats} repeats × {len(arms_)} candidates ({', '.join(a.label for a in arms_)}), buffer pool "
                f"{p.buffer_pool}, {p.flush_method}, doublewrite {'on' if p.doublewrite else 'off'}")

    def arms(self, p: Params) -> list[S.Arm]:
        """One arm per candidate format, `none` first; every start I/O-bound the same way."""
        settings = {"innodb_doublewrite": "ON" if p.doublewrite else "OFF",
                    "innodb_buffer_pool_load_at_startup": "OFF",
                    "innodb_buffer_pool_dump_at_shutdown": "OFF"}
        base = servers.Intent(buffer_pool=p.buffer_pool, flush_method=p.flush_method)
        return [S.Arm(spec, settings, intent=base.merge(compression.parse(spec).intent()))
                for spec in p.candidates]

    def prepare(self, ctx: "Context") -> None:
        """Nothing per server: every step loads its own tables in its candidate's format."""

    def warmup(self, ctx: "Context") -> None:
        """None: a run starts from a cold buffer pool on purpose (its fill is measured)."""

    def block_seconds(self, p: Params) -> float:
        """Per block: per cell, the load, two restarts and the run."""
        load = max((estimated_bytes(p, w) or 0) for w in p.workloads) / LOAD_BYTES_PER_S
        return len(p.workloads) * len(p.threads) * (load + 2 * schedule.RESTART_SECONDS
                                                     + p.duration + S.STEP_OVERHEAD)

    def step(self, ctx: "Context", cell: dict[str, Any]) -> None:
        """Load, verify, restart cold, size, run, restart, size, drop (see the module's doc)."""
        p, server, run = ctx.params, ctx.server, ctx.run
        fmt = compression.parse(ctx.arm.twin_of or ctx.arm.label)
        ctx.sysbench = dataclasses.replace(ctx.sysbench, db=DB, table_options=fmt.table_options(
            server.flavour.dialect), payload_compressibility=p.payload_compressibility)
        n, workload = cell["step"], cell["workload"]
        server.query(f"DROP DATABASE IF EXISTS `{DB}`")  # what a failed step may have left
        compression.check_available(server, fmt)  # before the load, not after
        ctx.progress(f"loading {workload} as {fmt.label}")
        before = compression.counters(server)
        t0 = time.monotonic()
        ctx.sysbench.prepare(workload, threads=len(os.sched_getaffinity(0)), seed=p.seed)
        seconds = time.monotonic() - t0
        loaded = compression.counters(server)
        rows = int(loaded["Handler_write"] - before["Handler_write"])
        if rows <= 0:
            raise WorkloadError(f"loading {workload} as {fmt.label} wrote no rows")
        formats = compression.verify(server, DB, fmt)  # a wrong format stops the run here
        run.append_rows(LOADS, [{"step": n, "workload": workload, "seconds": seconds, "rows": rows,
                              "rows_per_s": rows / seconds if seconds > 0 else float("nan")}])
        run.append_rows(FORMATS, [{"step": n, **{k: f[k] for k in FORMATS.columns if k in f},
                                "algorithm": f["algorithm"] or ""} for f in formats])
        _record_counters(run, n, "load", before, loaded)
        server.cold_restart(ctx.start_settings(), intent=ctx.arm.intent)
        run.append_rows(FOOTPRINT, [{"step": n, "stage": "load", **f}
                                    for f in compression.footprint(server, DB)])
        start = compression.counters(server)
        ctx.progress(f"running {workload} from a cold buffer pool")
        sysbench_step(ctx, cell, retries=0)  # a rerun would not start cold
        _record_counters(run, n, "run", start, compression.counters(server))
        server.restart(ctx.start_settings(), intent=ctx.arm.intent)
        run.append_rows(FOOTPRINT, [{"step": n, "stage": "run", **f}
                                    for f in compression.footprint(server, DB)])
        server.query(f"DROP DATABASE `{DB}`")

    def runs(self, series_: "pd.DataFrame", steps: "pd.DataFrame", run: "Run") -> "pd.DataFrame":
        """One row per measured step: load, footprints, steady-state figures (`storage`)."""
        return storage.step_summaries(series_, steps, run.table(LOADS), run.table(FOOTPRINT))

    def observations(self, run: "Run", p: Params) -> "pd.DataFrame":
        """What its comparisons judge (`dbstudies plan`, a replication): one row per measured step."""
        steps = results.measured(run)
        return steps if steps.empty else self.runs(storage.series(run, steps), steps, run)

    def relative(self, run_table: "pd.DataFrame", p: Params, metric: str = "tps", *,
                 aa: bool = False) -> "pd.DataFrame":
        """Every candidate against `none` per workload × threads (one Holm family); with
        `aa`, the A/A table (none against its twin)."""
        c = C.by_key(p.COMPARISONS, metric)
        return analysis.versus_baseline(run_table, S.with_control(self.arms(p), p), p,
                                        c.column, c.higher_is_better, aa=aa, metric=metric)

    def relative_layout(self, rel: "pd.DataFrame") -> "pd.DataFrame":
        """Threads down, candidates (and workloads) across, each cell `−21.0% [−30, −12] worse`."""
        return analysis.layout(rel)

    def data_ratio(self, summ: "pd.DataFrame", p: Params) -> "pd.DataFrame":
        """Per workload: the uncompressed data and how many times the buffer pool it is."""
        return storage.data_ratio(summ, p.buffer_pool)

    def conclusion(self, summ: "pd.DataFrame", tables: dict[str, "pd.DataFrame"], p: Params) -> str:
        """The conclusion from the tables, the source's findings checked against them."""
        return storage.conclusion(summ, tables, p, {c.key: c.words for c in p.COMPARISONS})

    def answer(self, run: "Run", p: Params) -> Answer:
        """What the run answers: per step its per-second `series`, one row per measured run
        (`runs`: load, footprints, steady state, write amplification), their `summary`, every
        candidate against `none` on steady TPS, load time, footprint and write amplification,
        the A/A control, and the conclusion."""
        steps = results.measured(run)
        series_ = storage.series(run, steps)
        runs_ = self.runs(series_, steps, run)
        t = {"steps": steps, "series": series_, "runs": runs_, "summary": storage.summary(runs_),
             **{c.key: self.relative(runs_, p, c.key) for c in p.COMPARISONS},
             C.AA_KEY: self.relative(runs_, p, C.primary(p.COMPARISONS).key, aa=True)}
        said = self.conclusion(t["summary"], {k: t[k] for k in ("tps", "load", "footprint", "wa", "aa")}, p)
        return Answer(t, C.verdicts(p.COMPARISONS), said, comparisons=p.COMPARISONS)


STUDY = Compression()
