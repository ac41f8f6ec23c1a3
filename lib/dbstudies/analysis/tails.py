"""The tail of the latency distribution as a run can judge it: the **tail ratio**, a step's p99
over its own p50 — how far its slowest 1 % lie beyond its typical transaction.

It measures the tail only: an arm whose whole distribution got slower (the pool's p50 at
point_select@256 is 2.2 × the baseline's) keeps its ratio, where a threshold shared by the
arms counted its body as stalls. It rests on every step's slowest 1 % — 16 to 2,000
transactions in a 3-s step here, by workload and threads (`resting_words` says the run's; a
cell under `comparisons.FEWEST_TAIL` is not judged on it) — where a count of transactions
beyond a fixed multiple of p50 (the stall rate this replaced) rested on ≈ 20 per arm, set by
whether a stall fell into the step at all. Measured on this host (quick thread pool, 16 rounds, median cell's MDE): tail
ratio 50–55 %, stall rate (4 × the arm's p50) 145–170 %, p99 alone 41–52 %; the A/A false-positive rate per
table 3.6 % (a randomization test on 16 real A/A rounds). It is judged by the same paired
rule, lower is better; a pause of the positive control raises it where it raises p99 (p50
stays where fewer than half the transactions wait, `analysis.control`). Beside it, the run's
whole-run p99 from merged histograms (`merged_percentile`) and the shift function (`shift`).
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from ..kit.studykit import BY
from ..store.results import Run
from ..store.tables import HISTOGRAMS


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


def _ratio_band(b: np.ndarray, k: np.ndarray, values: np.ndarray, qs: np.ndarray, rng: np.random.Generator,
                resamples: int, level: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """At each percentile of `qs`: the ratio of the candidate's rounds' merged histograms `k` to
    the baseline's `b` (one row per round both measured), and its band from resampling whole
    rounds (NaN with one round)."""
    point = _percentiles(k.sum(axis=0), values, qs) / _percentiles(b.sum(axis=0), values, qs)
    n = len(b)
    if n < 2:
        return point, np.full(len(qs), np.nan), np.full(len(qs), np.nan)
    w = np.stack([np.bincount(rng.integers(0, n, n), minlength=n) for _ in range(resamples)]).astype(float)
    draws = _percentiles(w @ k, values, qs) / _percentiles(w @ b, values, qs)
    lo, hi = np.nanquantile(draws, [(1 - level) / 2, (1 + level) / 2], axis=0)
    return point, lo, hi


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
        for cand in candidates:
            both = (m.loc[baseline].index.intersection(m.loc[cand].index)
                    if cand in m.index.get_level_values("arm") else [])
            if len(both) == 0:
                continue
            point, lo, hi = _ratio_band(m.loc[baseline].loc[both].to_numpy(float), m.loc[cand].loc[both].to_numpy(float),
                                        values, qs, rng, resamples, level)
            rows += [{**dict(zip(BY, cell)), "candidate": cand, "q": float(q), "ratio": point[i],
                      "low": lo[i], "high": hi[i], "rounds": len(both)} for i, q in enumerate(qs)]
    return pd.DataFrame(rows, columns=cols)


def resting_words(steps: pd.DataFrame, share: float = 0.01) -> str:
    """How many transactions a step's slowest `share` is in this run, per workload (the median
    step of each cell, their range), and which cells a tail statistic does not judge.

    >>> s = pd.DataFrame({"workload": ["r", "r", "p"], "threads": [1, 16, 1], "events": [1600, 6300, 31500]})
    >>> resting_words(s)
    'The slowest 1 % of a step, which p99 and the tail ratio rest on, is 16–63 transactions in r and 315 in p here; a cell under 20 is not judged on them (r at 1 client thread).'
    """
    from ..core.comparisons import FEWEST_TAIL

    if steps is None or steps.empty or "events" not in steps:
        return ""
    per = steps.groupby(list(BY), sort=False)["events"].median() * share
    parts = []
    for workload, g in per.groupby(level=0, sort=False):
        lo, hi = f"{g.min():,.0f}", f"{g.max():,.0f}"
        parts.append(f"{lo if lo == hi else f'{lo}–{hi}'} transactions in {workload}" if not parts
                     else f"{lo if lo == hi else f'{lo}–{hi}'} in {workload}")
    thin = per[per < FEWEST_TAIL]
    cells = ", ".join(f"{w} at {t} client thread{'s' if t != 1 else ''}" for w, t in thin.index)
    return (f"The slowest {share * 100:g} % of a step, which p99 and the tail ratio rest on, is "
            + " and ".join([", ".join(parts[:-1]), parts[-1]] if len(parts) > 1 else parts) + " here"
            + (f"; a cell under {FEWEST_TAIL} is not judged on them ({cells})." if len(thin) else "."))
