"""The tail of the latency distribution as a run can judge it: the **stall rate**, the share of
a step's transactions slower than a threshold T fixed before anything is compared.

A step's p99 is set by whether a short stall straddles its slowest 1 %, which the two steps
of a pair do not share; the share of slow transactions is a mean — it adds up over a step
the way throughput does — and is judged by the same paired rule, lower is better.

T is `stall_factor` (`StallRate`, default `STALL_FACTOR`) × the arm's own median p50 in the
cell (the median over that arm's steps of the step's p50): a transaction is a stall when it
took several times what a typical transaction of the same configuration takes, so the rate
measures the tail only. A threshold shared by the arms (the baseline's) would count the body
of an arm whose typical latency moved: the pool's p50 at point_select@256 is 2.2 × the
baseline's, so 9.8 % of its transactions crossed 4 × the baseline's p50 because its body moved.
A step's share is read from its full latency histogram (`results.HISTOGRAMS`): transactions
in buckets above T, over all. A share of zero has no logarithm: every share is taken as
(slow + ½) / (transactions + 1) — the usual continuity correction, which leaves a step with
thousands of transactions and no stall at a small positive share, so that two stall-free
steps compare as equal, not as undefined."""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np
import pandas as pd

from .results import HISTOGRAMS, Run
from .studykit import BY, StudyParams

STALL_FACTOR = 4.0


@dataclass(frozen=True, kw_only=True)
class StallRate:
    """The `stall_factor` parameter of the studies with stall-rate tables (mixed in before a
    `SysbenchParams`): an analysis parameter — a finished run re-analysed at another value
    gets a variant of its own."""
    MEANINGS: ClassVar[dict[str, str]] = {  # the study READMEs' parameter tables, `dbstudies list`
        "stall_factor": (
            "the stall rate's threshold T per cell and arm: this × the arm's own median p50 latency there "
            "(analysis only: re-analyse a run at another value with `run_dir`, or `dbstudies report "
            "RUN -p stall_factor 8`)"),
    }
    ANALYSIS: ClassVar[frozenset[str]] = StudyParams.ANALYSIS | {"stall_factor"}
    stall_factor: float = STALL_FACTOR

    def shared_problems(self) -> list[str]:
        bad = [] if self.stall_factor > 1 else [
            f"stall_factor: T is this × the median p50, so more than 1; got {self.stall_factor}"]
        return super().shared_problems() + bad  # type: ignore[misc]


def thresholds(steps: pd.DataFrame, factor: float = STALL_FACTOR) -> pd.DataFrame:
    """Per cell (workload × threads) and arm: T in ms, `factor` × that arm's median step p50.

    >>> s = pd.DataFrame({"workload": ["w"] * 3, "threads": [8] * 3, "arm": ["a", "a", "b"],
    ...                   "latency_p50_ms": [1.0, 3.0, 50.0]})
    >>> thresholds(s).to_dict("records")
    [{'workload': 'w', 'threads': 8, 'arm': 'a', 'stall_ms': 8.0}, {'workload': 'w', 'threads': 8, 'arm': 'b', 'stall_ms': 200.0}]
    """
    return (steps.groupby([*BY, "arm"], sort=False)["latency_p50_ms"].median() * factor
            ).rename("stall_ms").reset_index()


def shares(histograms: pd.DataFrame, steps: pd.DataFrame, limits: pd.DataFrame) -> pd.DataFrame:
    """`steps` with `stall_ms` (its cell × arm's T) and `stall_pct`: the share of the step's
    transactions slower than T, in %, continuity-corrected ((slow + ½) / (n + 1)); NaN for a
    step without a histogram.

    >>> h = pd.DataFrame({"step": [1, 1, 2], "value_ms": [1.0, 9.0, 1.0], "count": [99, 1, 100]})
    >>> s = pd.DataFrame({"step": [1, 2], "workload": ["w", "w"], "threads": [8, 8], "arm": ["a", "a"]})
    >>> shares(h, s, pd.DataFrame({"workload": ["w"], "threads": [8], "arm": ["a"], "stall_ms": [5.0]}))["stall_pct"].round(3).tolist()
    [1.485, 0.495]
    """
    s = steps.merge(limits, on=[*BY, "arm"], how="left")
    h = histograms.merge(s[["step", "stall_ms"]], on="step")
    slow = h[h["value_ms"] > h["stall_ms"]].groupby("step")["count"].sum()
    total = h.groupby("step")["count"].sum()
    pct = ((slow.reindex(total.index, fill_value=0) + 0.5) / (total + 1) * 100).rename("stall_pct")
    return s.merge(pct.reset_index(), on="step", how="left")


def with_stall_rate(run: Run, steps: pd.DataFrame, factor: float = STALL_FACTOR) -> pd.DataFrame:
    """The measured `steps` with their stall threshold (`factor` × their arm's median p50 in
    the cell) and rate (`shares`); unchanged when the run stored no histograms."""
    if steps.empty or not run.has_table(HISTOGRAMS) or "latency_p50_ms" not in steps:
        return steps
    return shares(run.table(HISTOGRAMS), steps, thresholds(steps, factor))


def merged_percentile(histograms: pd.DataFrame, steps: pd.DataFrame, q: float = 99.0,
                      resamples: int = 400, seed: int = 1, level: float = 0.95) -> pd.DataFrame:
    """Per cell × arm: the q-th percentile of all its measured transactions — the histograms of
    all its steps merged (percentiles cannot be averaged) — with a CI from resampling whole
    rounds (`repeat`; never single transactions, which are not independent): `run_p99_ms`,
    `run_p99_low`, `run_p99_high` (named for q = 99). Empty without histograms.

    >>> h = pd.DataFrame({"step": [1, 1, 2, 2], "value_ms": [1.0, 10.0, 1.0, 20.0], "count": [98, 2, 99, 1]})
    >>> s = pd.DataFrame({"step": [1, 2], "workload": ["w"] * 2, "threads": [8] * 2, "arm": ["a"] * 2, "repeat": [1, 2]})
    >>> merged_percentile(h, s)[["arm", "run_p99_ms"]].to_dict("records")
    [{'arm': 'a', 'run_p99_ms': 10.0}]
    """
    name = f"run_p{q:g}"
    cols = [*BY, "arm", f"{name}_ms", f"{name}_low", f"{name}_high"]
    h = histograms.merge(steps[["step", *BY, "arm", "repeat"]], on="step")
    if h.empty:
        return pd.DataFrame(columns=cols)
    rng = np.random.default_rng(seed)

    def pct(counts: np.ndarray, values: np.ndarray) -> float:
        cum = np.cumsum(counts)
        return float(values[np.searchsorted(cum, q / 100 * cum[-1])]) if cum[-1] > 0 else float("nan")

    rows = []
    for key, g in h.groupby([*BY, "arm"], sort=False):
        m = g.pivot_table(index="repeat", columns="value_ms", values="count", aggfunc="sum", fill_value=0)
        counts, values = m.to_numpy(float), m.columns.to_numpy(float)
        point = pct(counts.sum(axis=0), values)
        n = len(counts)
        draws = [pct(np.bincount(rng.integers(0, n, n), minlength=n) @ counts, values) for _ in range(resamples)]
        lo, hi = np.nanquantile(draws, [(1 - level) / 2, (1 + level) / 2]) if n > 1 else (np.nan, np.nan)
        rows.append(dict(zip([*BY, "arm"], key)) | {f"{name}_ms": point, f"{name}_low": lo, f"{name}_high": hi})
    return pd.DataFrame(rows, columns=cols)


def with_run_p99(run: Run, steps: pd.DataFrame, summ: pd.DataFrame) -> pd.DataFrame:
    """A per-configuration summary (workload × arm × threads) with each configuration's p99 of
    all its transactions and its round-resampled CI (`merged_percentile`), beside the median
    of its steps' p99; unchanged without histograms."""
    if steps.empty or not run.has_table(HISTOGRAMS) or "repeat" not in steps:
        return summ
    return summ.merge(merged_percentile(run.table(HISTOGRAMS), steps), on=[*BY, "arm"], how="left")


QUANTILES = (10, 25, 50, 75, 90, 95, 99, 99.9)  # the distribution figure's percentiles


def _percentiles(counts: np.ndarray, values: np.ndarray, qs: np.ndarray) -> np.ndarray:
    """Percentiles `qs` (in %) of histograms: `counts` rows (draws) × buckets `values`."""
    cum = np.cumsum(counts, axis=-1)
    total = cum[..., -1:]
    idx = np.stack([np.minimum((cum < q / 100 * total).sum(axis=-1), len(values) - 1) for q in qs], axis=-1)
    out = values[idx].astype(float)
    return np.where(total > 0, out, np.nan)


def shift(histograms: pd.DataFrame, steps: pd.DataFrame, baseline: str, candidates: list[str],
          quantiles: tuple[float, ...] = QUANTILES, resamples: int = 400, seed: int = 1,
          level: float = 0.95) -> pd.DataFrame:
    """The shift function of each candidate against the baseline, per cell: at each
    percentile q of `quantiles`, the ratio candidate / baseline of that percentile of all the
    cell's transactions (each arm's histograms merged over the rounds both measured), with a
    band from resampling whole rounds — a drawn round brings both arms' steps of that round,
    so the pairs stay together; never single transactions, which are not independent.
    Columns: workload, threads, candidate, q, ratio, low, high, rounds.

    >>> h = pd.DataFrame({"step": [1, 1, 2, 2], "value_ms": [1.0, 10.0, 2.0, 10.0], "count": [90, 10, 90, 10]})
    >>> s = pd.DataFrame({"step": [1, 2], "workload": ["w"] * 2, "threads": [8] * 2, "arm": ["a", "b"], "repeat": [1, 1]})
    >>> shift(h, s, "a", ["b"], quantiles=(50, 99))[["q", "ratio"]].to_dict("records")
    [{'q': 50.0, 'ratio': 2.0}, {'q': 99.0, 'ratio': 1.0}]
    """
    cols = [*BY, "candidate", "q", "ratio", "low", "high", "rounds"]
    h = histograms.merge(steps[["step", *BY, "arm", "repeat"]], on="step")
    h = h[h["arm"].isin([baseline, *candidates])]
    if h.empty:
        return pd.DataFrame(columns=cols)
    qs = np.asarray(quantiles, float)
    rng = np.random.default_rng(seed)
    rows = []
    for cell, g in h.groupby(BY, sort=False):
        m = g.pivot_table(index=["arm", "repeat"], columns="value_ms", values="count", aggfunc="sum", fill_value=0)
        values = m.columns.to_numpy(float)
        if baseline not in m.index.get_level_values("arm"):
            continue
        base = m.loc[baseline]
        for cand in candidates:
            if cand not in m.index.get_level_values("arm"):
                continue
            c = m.loc[cand]
            both = base.index.intersection(c.index)
            if len(both) == 0:
                continue
            b, k = base.loc[both].to_numpy(float), c.loc[both].to_numpy(float)
            point = _percentiles(k.sum(axis=0), values, qs) / _percentiles(b.sum(axis=0), values, qs)
            n = len(both)
            if n > 1:
                w = np.stack([np.bincount(rng.integers(0, n, n), minlength=n) for _ in range(resamples)]).astype(float)
                draws = _percentiles(w @ k, values, qs) / _percentiles(w @ b, values, qs)
                lo, hi = np.nanquantile(draws, [(1 - level) / 2, (1 + level) / 2], axis=0)
            else:
                lo = hi = np.full(len(qs), np.nan)
            for i, q in enumerate(qs):
                rows.append({**dict(zip(BY, cell)), "candidate": cand, "q": float(q), "ratio": point[i],
                             "low": lo[i], "high": hi[i], "rounds": n})
    return pd.DataFrame(rows, columns=cols)
