"""The tail of the latency distribution as a run can judge it: the **stall rate**, the share of
a step's transactions slower than a threshold T fixed per cell before anything is compared.

A step's p99 is set by whether a short stall straddles its slowest 1 %, which the two steps
of a pair do not share; the share of slow transactions is a mean — it adds up over a step
the way throughput does — and is judged by the same paired rule, lower is better.

T is `STALL_FACTOR` × the baseline's median p50 in the cell (the median over its steps of the
step's p50): known before the candidates are looked at, the same for every arm of the cell.
A step's share is read from its full latency histogram (`results.HISTOGRAMS`): transactions
in buckets above T, over all. A share of zero has no logarithm: every share is taken as
(slow + ½) / (transactions + 1) — the usual continuity correction, which leaves a step with
thousands of transactions and no stall at a small positive share, so that two stall-free
steps compare as equal, not as undefined."""
from __future__ import annotations

import pandas as pd

from ..results import HISTOGRAMS, Run

STALL_FACTOR = 4.0
BY = ["workload", "threads"]  # one cell (analysis.BY; this module comes before analysis)


def thresholds(steps: pd.DataFrame, baseline: str, factor: float = STALL_FACTOR) -> pd.DataFrame:
    """Per cell (workload × threads): T in ms, `factor` × the baseline's median step p50.

    >>> s = pd.DataFrame({"workload": ["w"] * 3, "threads": [8] * 3, "arm": ["a", "a", "b"],
    ...                   "latency_p50_ms": [1.0, 3.0, 50.0]})
    >>> thresholds(s, "a").to_dict("records")
    [{'workload': 'w', 'threads': 8, 'stall_ms': 8.0}]
    """
    base = steps[steps["arm"] == baseline]
    return (base.groupby(BY, sort=False)["latency_p50_ms"].median() * factor).rename("stall_ms").reset_index()


def shares(histograms: pd.DataFrame, steps: pd.DataFrame, limits: pd.DataFrame) -> pd.DataFrame:
    """`steps` with `stall_ms` (its cell's T) and `stall_pct`: the share of the step's
    transactions slower than T, in %, continuity-corrected ((slow + ½) / (n + 1)); NaN for a
    step without a histogram.

    >>> h = pd.DataFrame({"step": [1, 1, 2], "value_ms": [1.0, 9.0, 1.0], "count": [99, 1, 100]})
    >>> s = pd.DataFrame({"step": [1, 2], "workload": ["w", "w"], "threads": [8, 8]})
    >>> shares(h, s, pd.DataFrame({"workload": ["w"], "threads": [8], "stall_ms": [5.0]}))["stall_pct"].round(3).tolist()
    [1.485, 0.495]
    """
    s = steps.merge(limits, on=BY, how="left")
    h = histograms.merge(s[["step", "stall_ms"]], on="step")
    slow = h[h["value_ms"] > h["stall_ms"]].groupby("step")["count"].sum()
    total = h.groupby("step")["count"].sum()
    pct = ((slow.reindex(total.index, fill_value=0) + 0.5) / (total + 1) * 100).rename("stall_pct")
    return s.merge(pct.reset_index(), on="step", how="left")


def with_stall_rate(run: Run, steps: pd.DataFrame, baseline: str) -> pd.DataFrame:
    """The measured `steps` with their stall threshold and rate (`shares`); unchanged when the
    run stored no histograms."""
    if steps.empty or not run.has_table(HISTOGRAMS) or "latency_p50_ms" not in steps:
        return steps
    return shares(run.table(HISTOGRAMS), steps, thresholds(steps, baseline))
