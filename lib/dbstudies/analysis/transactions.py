"""Our workloads' transaction types (TPC-C-like, LinkBench-like) in a run: per type the rate,
share of the mix, rollbacks, retries and latency; TPC-C-like New-Order per minute; the
TPC-C-like steps second by second (for `plots.timeline`)."""
from __future__ import annotations

import pandas as pd

from ..store.results import Run
from ..store.tables import INTERVALS, TYPE_INTERVALS, TYPES
from ..workloads import TYPES as ORDER


def transaction_types(run: Run, steps: pd.DataFrame) -> pd.DataFrame:
    """Per workload × arm × threads × transaction type of our workloads (tpcc), over the
    measured `steps`: transactions per second and share of all (medians over repeats),
    business rollbacks and retries after deadlocks or lock-wait timeouts (sums), latency
    p50 and p99 (medians over repeats). Empty when no measured step ran one of ours."""
    t = run.table(TYPES).merge(steps[["step", "workload", "arm", "threads", "seconds"]], on="step")
    if t.empty:
        return pd.DataFrame()
    t = t.assign(per_s=t["count"] / t["seconds"],
                 share_pct=t["count"] / t.groupby("step")["count"].transform("sum") * 100)
    out = (t.groupby(["workload", "arm", "threads", "type"], sort=False)
           .agg(per_s=("per_s", "median"), share_pct=("share_pct", "median"),
                rollbacks=("rollbacks", "sum"), retries=("retries", "sum"),
                p50_ms=("latency_p50_ms", "median"), p99_ms=("latency_p99_ms", "median"))
           .reset_index())
    rank = {name: i for types in ORDER.values() for i, name in enumerate(types)}
    return out.sort_values(["workload", "arm", "threads", "type"], key=lambda c: c.map(rank) if c.name == "type" else c,
                           ignore_index=True)


def new_orders_per_minute(run: Run, steps: pd.DataFrame) -> pd.DataFrame:
    """TPC-C-like throughput per workload × arm × threads, as TPC-C reports it: all
    transactions per second (`tps_median`, _min, _max) and New-Order transactions per minute
    (`nopm_…`, rolled-back ones included, as tpmC counts them) of each measured step. A
    tpmC-like figure from a sysbench run: not a TPC-C result."""
    t = run.table(TYPES)
    t = t[t["type"] == "new_order"].merge(steps[["step", "workload", "arm", "threads", "seconds", "tps"]],
                                          on="step")
    if t.empty:
        return pd.DataFrame()
    t = t.assign(nopm=t["count"] / t["seconds"] * 60)
    g = t.groupby(["workload", "arm", "threads"])
    return pd.concat([g["tps"].agg(["median", "min", "max"]).add_prefix("tps_"),
                      g["nopm"].agg(["median", "min", "max"]).add_prefix("nopm_")], axis=1).reset_index()


def tpcc_per_second(run: Run, steps: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The TPC-C-like steps at their largest client thread count, second by second, for
    `plots.timeline`: per step × second sysbench's transactions per second and p99 with
    New-Order per minute (`nopm`: that second's New-Orders × 60, tpmC-like, not a TPC-C
    result); and per step its median transactions per second. Empty without such steps."""
    tp = steps[steps["workload"] == "tpcc"]
    if tp.empty:
        return pd.DataFrame(), pd.DataFrame()
    tp = tp[tp["threads"] == tp["threads"].max()][["step", "arm"]]
    series = run.table(INTERVALS).merge(tp, on="step")
    no = run.table(TYPE_INTERVALS).query("type == 'new_order'")[["step", "second", "count"]]
    series = series.merge(no, on=["step", "second"], how="left")
    series = series.assign(nopm=series["count"].fillna(0) * 60).drop(columns="count")
    runs = series.groupby(["arm", "step"])["tps"].median().rename("median_tps").reset_index()
    return series.reset_index(drop=True), runs
