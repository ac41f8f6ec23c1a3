"""Checkpoint and flushing stalls under write load: per-second throughput and p99 of long
read/write runs, with InnoDB's checkpoint age beside them, for named server configurations
(modelled on the checkpoint stalls of the MariaDB sysbench posts, the write stalls between
versions in the simplified OLTP posts, and dbSTRESS's long read/write runs in shared/sources).

Arms: the `configs` — named sets of server settings, the first one the baseline. A key that
names an intent (`redo_log`, `buffer_pool`, `flush_method` …, see `servers.Intent`) is said
in the flavour's own dialect; any other key is a server variable, checked by the server
itself before anything starts. Every block restarts the server with its configuration,
warms it up read-only (recorded, discarded), then runs each workload × threads cell as one
long step with 1-second intervals, streamed to disk as they come.

A step is summarised from its series (`timeseries`): median throughput after the steady
state it detected, the rate held in 99 % of seconds, stall seconds (< `stall_fraction` of
the median), the worst per-second p99, the time to steady state, KB written per
transaction, checkpoint age. Configurations are compared with the baseline on median
throughput, run-level p99 and stall seconds, each in its own table (one Holm family).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from ... import analysis
from ...analysis import control, cpu_profiles, sentences, timeseries
from ...analysis.claims import Claim
from ...core import comparisons as C
from ...kit import studykit as S
from ...kit.contract import Answer
from ...measure.steps import SysbenchStudy
from ...observe import pauses, profiler
from ...store import results

if TYPE_CHECKING:
    import pandas as pd

    from ...store.results import Run

WORKLOADS = ("oltp_read_write", "oltp_write_only", "oltp_update_index", "oltp_update_non_index")
# what governs checkpointing and flushing, shown in the report's settings table
GOVERNING = ("innodb_log_file_size", "innodb_redo_log_capacity", "innodb_log_buffer_size", "innodb_io_capacity",
             "innodb_io_capacity_max", "innodb_max_dirty_pages_pct", "innodb_max_dirty_pages_pct_lwm",
             "innodb_adaptive_flushing", "innodb_adaptive_flushing_lwm", "innodb_flush_neighbors",
             "innodb_lru_scan_depth", "innodb_page_cleaners")


@dataclass(frozen=True, kw_only=True)
class Params(profiler.CpuProfiled, pauses.PositiveControl, S.SysbenchParams):
    """The study's parameters (its README.md: what each means, per profile)."""
    ANALYSIS: ClassVar[frozenset[str]] = S.StudyParams.ANALYSIS | {"stall_fraction"}  # re-analysable
    # median TPS, p99 and stall seconds of each long step, judged by its seconds
    COMPARISONS: ClassVar[tuple[C.Comparison, ...]] = C.PER_SECOND
    MEANINGS: ClassVar[dict[str, str]] = {  # the study READMEs' parameter tables, `dbstudies list`
        "repeats": "paired rounds (blocks per configuration with `design` blocks; with a `target`: the rounds every cell gets first)",
        "settings": "settings of every configuration",
        "design": (
            "`paired`: every arm on a server of its own, all up at once, the arms of a cell "
            "measured back to back in rounds; `blocks`: per repeat, each arm in a block of its own "
            "on a fresh start (see Statistics); a paired A/A here showed no disturbance from the "
            "idle server, whose flushing is waited out after every write step"),
        "workloads": (
            "sysbench write workloads (oltp_read_write, oltp_write_only, oltp_update_index, "
            "oltp_update_non_index) or ours: `tpcc`, `linkbench`"),
        "warmup": (
            "read-only warm-up seconds after each server start (recorded, discarded; the source: 5 "
            "minutes)"),
        "duration": (
            "seconds of each long read/write step (the source: 60 minutes; the full profile's 3 "
            "minutes fit 14 paired rounds in ≈ 4 h)"),
        "cpu_profile": (
            "after the plan, measure the cells whose whole-step TPS the verdict rule judges better "
            "or worse (else the largest difference) once more on every configuration with `perf` "
            "sampling the server (see \"On-CPU profiles\")"),
        "cpu_profile_cells": (
            "with `cpu_profile`: profile these cells instead (`workload@threads`, e.g. "
            "`oltp_write_only@64`)"),
        "configs": "named configurations, the first the baseline",
        "stall_fraction": "a second below this share of the run's median throughput is a stall",
    }
    configs: dict
    stall_fraction: float
    WORKLOADS: ClassVar[tuple[str, ...]] = (*WORKLOADS, "tpcc", "linkbench")

    def check(self) -> list[str]:
        problems = []
        if not 0 < self.stall_fraction < 1:
            problems.append(f"stall_fraction: must be in (0, 1), got {self.stall_fraction}")
        return problems + S.configs_problems("configs", self.configs, self.flavour,
                                             S.DRIVER_SETTINGS | self.RESERVED)

    def servers(self) -> list[str]:
        """The flavours started (a configuration may name its own)."""
        return S.config_servers(self.configs, self.flavour)


# the measured fact this study is built around (issue 9): a 16M redo log at 64 threads with
# innodb_flush_log_at_trx_commit=0 keeps checkpoint age near 100 % and costs throughput
_CONFIGS = {"redo 1G": {"redo_log": "1G"}, "redo 16M": {"redo_log": "16M"}}
# paired: a paired A/A here (quick, 5 rounds + the twin) showed no disturbance from the idle
# server — its flushing is waited out after each write step (3–12 s), the position within a
# pair moved TPS by ≤ 2.6 % (SD of a pair 0.07–0.10), the A/A verdict a draw
# (docs/statistics.md)
_COMMON = dict(configs=_CONFIGS, stall_fraction=0.5, settings={"innodb_flush_log_at_trx_commit": 0},
               warehouses=10, nodes=1_000_000)
PROFILES: dict[str, dict[str, Any]] = {
    "smoke": dict(_COMMON, workloads=["oltp_write_only"], threads=[4], tables=1,
                  table_size=1000, warehouses=1, nodes=10_000, warmup=1, duration=3, repeats=2),
    # 7 paired rounds: ≈ 11 % MDE on median TPS predicted from the A/A run's pairs
    "quick": dict(_COMMON, workloads=["oltp_write_only"], threads=[64], tables=4,
                  table_size=100_000, warmup=10, duration=60, repeats=7),
    # the sources' read/write runs, measured to a precision: median TPS to 5 % in every cell 4
    # hours can take there — 3-minute steps (each sees several checkpoints: a 16M redo log
    # fills in seconds, 1G in ≈ 2 min at 64 threads here), 4 first rounds, then rounds where a
    # cell is short (`dbstudies plan` says how long); the sources' 30-minute steps: `-p
    # duration 1800 -p design blocks -p target {}` (≈ 12 h at 3 repeats)
    "full": dict(_COMMON, workloads=["oltp_read_write", "oltp_write_only"], threads=[64],
                 tables=16, table_size=1_000_000, warmup=60, duration=180, repeats=4, budget=240,
                 target={"tps": 0.05},
                 settings={"innodb_flush_log_at_trx_commit": 0, "innodb_buffer_pool_size": "6G"}),
}


# ---------------------------------------------------------------- analysis

CELL = "cell"  # "oltp_write_only, 64 threads": one panel per workload × threads
FIGURE_METRICS = {"median_tps": "median TPS after steady state", "stall_seconds": "stall seconds",
                  "worst_p99_ms": "worst per-second p99 (ms)", "kb_per_txn": "KB written per transaction"}
FLUSH_PANELS = {"dirty_pages": "dirty pages", "pages_flushed_per_s": "pages flushed per second",
                "redo_mib_per_s": "redo written, MiB per second"}
SUMMARY_COLUMNS = ["workload", "threads", "arm", "n", "median_tps_median", "p01_tps_median",
                   "cv_tps_median", "latency_p99_ms_median", "latency_max_ms_median",
                   "worst_p99_ms_median",
                   "stall_seconds_median", "stalls_median", "longest_stall_s_median",
                   "steady_from_s_median", "never_steady", "kb_per_txn_median",
                   "checkpoint_age_pct_median"]


def _steadiness(r: Any) -> str:
    """'steady after 4 s' / '1 of 5 runs steady (after 4 s), 4 never' / 'never steady'."""
    steady = r.n - r.never_steady
    if steady == 0:
        return f"no run reached a steady state in {'its' if r.n == 1 else 'their'} duration"
    after = ("from the first second" if r.steady_from_s_median < 0.5 else
             f"after {r.steady_from_s_median:.0f} s") + (" (median of the runs)" if steady > 1 else "")
    if r.never_steady == 0:
        return f"steady {after}"
    return f"{steady} of {r.n} runs steady ({after}), {r.never_steady} still drifting at the end"


class CheckpointStalls(SysbenchStudy[Params]):
    """Long read/write steps judged by their seconds; the sysbench kind's loop."""
    Params, PROFILES, GOVERNING = Params, PROFILES, GOVERNING
    # what its notebook's figures and summary show
    CELL, FIGURE_METRICS, FLUSH_PANELS, SUMMARY_COLUMNS = CELL, FIGURE_METRICS, FLUSH_PANELS, SUMMARY_COLUMNS

    def describe(self, p: Params, steps: int) -> str:
        """The plan in one line (`schedule.describe`), `steps` long."""
        arms_ = S.with_control(self.arms(p), p)
        return (f"{steps} long steps of {p.duration} s: "
                f"{p.repeats} repeats × {len(arms_)} configurations ({', '.join(a.label for a in arms_)})")

    def arms(self, p: Params) -> list[S.Arm]:
        """One arm per configuration, in the order given (the first is the baseline)."""
        return S.config_arms(p.configs, p.flavour)

    def profile_cells(self, run: "Run", p: Params) -> list[dict[str, Any]]:
        """With `cpu_profile`: the cells profiled on every arm after the plan (TPS verdicts
        better or worse, else the largest difference; or `cpu_profile_cells`)."""
        return cpu_profiles.cells(run, S.with_control(self.arms(p), p), p, value="tps")

    def series(self, run: "Run", steps: "pd.DataFrame") -> "pd.DataFrame":
        """Per measured step × second: throughput, p99, checkpoint age and the other probes."""
        out = timeseries.per_second(run, steps)
        return out.assign(**{CELL: out["workload"] + ", " + out["threads"].astype(str) + " threads"},
                          redo_mib_per_s=out["redo_bytes_per_s"] / 2**20)

    def stall_flags(self, series_: "pd.DataFrame", p: Params) -> "pd.Series":
        """Whether each second of `series_` belongs to a stall of its step."""
        return timeseries.stall_flags(series_, p.stall_fraction)

    def runs(self, series_: "pd.DataFrame", steps: "pd.DataFrame", p: Params) -> "pd.DataFrame":
        """One row per measured step: the summary of its series (steady state, stalls …)."""
        out = timeseries.run_summaries(series_, steps, fraction=p.stall_fraction)
        return out.assign(stall_seconds_1=out["stall_seconds"] + 1) if not out.empty else out

    def summary(self, run_table: "pd.DataFrame") -> "pd.DataFrame":
        """Per workload × threads × configuration: median, min and max over repeats of the
        run summaries."""
        return analysis.over_repeats(run_table, [
            "median_tps", "p01_tps", "cv_tps", "latency_p99_ms", "latency_max_ms", "worst_p99_ms",
            "stall_seconds", "stalls", "longest_stall_s", "steady_from_s", "kb_per_txn",
            "checkpoint_age_pct"])

    def relative(self, run_table: "pd.DataFrame", p: Params, metric: str = "tps", *,
                 aa: bool = False) -> "pd.DataFrame":
        """Every configuration against the baseline per workload × threads (one Holm family);
        with `aa`, the A/A table (the baseline against its twin)."""
        c = C.by_key(p.COMPARISONS, metric)
        return analysis.versus_baseline(run_table, S.with_control(self.arms(p), p), p,
                                        c.column, c.higher_is_better, aa=aa, metric=metric)

    def observations(self, run: "Run", p: Params) -> "pd.DataFrame":
        """What its comparisons judge (`dbstudies plan`, a replication): the run summaries of the
        measured steps (none when the run measured none)."""
        steps = results.measured(run)
        table = steps if steps.empty else timeseries.run_summaries(
            self.series(run, steps), steps, fraction=p.stall_fraction)
        if "stall_seconds" in table:
            table = table.assign(stall_seconds_1=table["stall_seconds"] + 1)
        return table

    def relative_layout(self, rel: "pd.DataFrame") -> "pd.DataFrame":
        """Threads down, configurations (and workloads) across, each cell `+4.1% [−1.0, +9.3] better`."""
        return analysis.layout(rel)

    def conclusion(self, summ: "pd.DataFrame", tables: dict[str, "pd.DataFrame"], p: Params) -> str:
        """A short Markdown conclusion computed from the tables (no claim is hard-coded)."""
        base = next(iter(p.configs))
        lines = []
        for (w, t), g in summ.groupby(["workload", "threads"], sort=False):
            parts = [f"{r.arm}: {r.median_tps_median:,.0f} TPS, {r.stall_seconds_median:.0f} stall s, "
                     f"checkpoint age {r.checkpoint_age_pct_median:.0f} %, "
                     f"{r.kb_per_txn_median:.1f} KB written per transaction, " + _steadiness(r)
                     for r in g.itertuples()]
            lines.append(f"- **{w}, {analysis.threads(t)}** (medians over repeats): "
                         + "; ".join(parts) + ".")
        lines += sentences.listed_comparisons(tables, {c.key: c.words for c in p.COMPARISONS}, base)
        lines += sentences.aa_line(tables.get("aa"), base)
        arm, found = control.control_arm(S.with_control(self.arms(p), p)), tables.get("control")
        if arm is not None and found is not None:
            lines += control.lines(found, arm.pause)
        return "\n".join(lines)

    def claims(self, p: Params) -> list[Claim]:
        """The source's finding on checkpointing, where the run's configurations can test it:
        a redo log too small for the write load (the default `16M` against `1G`) forces InnoDB
        into the synchronous flushing that stalls it."""
        small = [label for label, c in p.configs.items() if str(c.get("redo_log", "")).upper() == "16M"]
        if not small or self.arms(p)[0].label == small[0]:
            return []
        return [Claim("MariaDB 5.5 sysbench/DBT3 post", "InnoDB stalls in checkpointing under write load "
                      "as soon as it approaches 16 client threads: p99 latency jumps", "p99", small[0], "worse",
                      "a plot of p99 over time", min_threads=16,
                      note="here a 16 MiB redo log forces the checkpoints, against the baseline's larger one"),
                Claim("MariaDB 5.5 sysbench/DBT3 post", "the stalls cost throughput seconds", "stalls", small[0],
                      "worse", "a plot of throughput over time", min_threads=16)]

    def answer(self, run: "Run", p: Params) -> Answer:
        """What the run answers: per step its per-second `series`, one row per measured run
        (`runs`: steady-state throughput, stalls, p99 …), their `summary`, every configuration
        against the baseline on median TPS, p99 and stall seconds, the A/A control, with a
        paused twin the positive control (`control_tables` per metric and `control`: what each
        found against what the pause must do), the conclusion and the source's `claims`."""
        steps = results.measured(run)
        series_ = self.series(run, steps)
        runs_ = self.runs(series_, steps, p)
        both = S.with_control(self.arms(p), p)
        paused = control.tables(runs_, both, p, C.judged(p.COMPARISONS))
        t = {"steps": steps, "series": series_, "runs": runs_, "stalled": self.stall_flags(series_, p),
             "summary": self.summary(runs_), **{c.key: self.relative(runs_, p, c.key) for c in p.COMPARISONS},
             C.AA_KEY: self.relative(runs_, p, C.primary(p.COMPARISONS).key, aa=True),
             "control_tables": paused,
             "control": control.found(paused, control.per_second(paused, run, steps, runs_, both, p.stall_fraction))}
        said = self.conclusion(t["summary"], {k: t[k] for k in ("tps", "p99", "stalls", "aa", "control")}, p)
        return Answer(t, C.verdicts(p.COMPARISONS), said, self.claims(p), comparisons=p.COMPARISONS)


STUDY = CheckpointStalls()
