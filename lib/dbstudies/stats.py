"""Summaries, intervals, tests and verdicts — what every study ends with.

The unit of replication is a whole run (one measured step on a fresh server start), never
a second. Comparisons give the ratio of medians with a bootstrap CI, a two-sided
Mann–Whitney U p-value, Holm's correction across one table, and a verdict:
better / worse / draw (|Δ| < threshold, or not significant after correction).

>>> compare([100, 101, 99, 100, 102], [120, 121, 119, 122, 120])["ratio"]
1.2
"""
from __future__ import annotations

import math
from typing import Any, Iterable, Sequence

import numpy as np
import pandas as pd
from scipy import stats as sps

THRESHOLD = 0.05   # |Δ| below 5 % is a draw
ALPHA = 0.05
LEVEL = 0.95
N_BOOT = 4000
VERDICTS = ("better", "worse", "draw")


def median_ci(x: Sequence[float], level: float = LEVEL) -> tuple[float, float, float]:
    """Distribution-free CI of the median from order statistics: (low, high, coverage).

    Picks the narrowest [x_(k), x_(n+1-k)] whose exact binomial coverage is ≥ level; with
    too few values for that, [min, max] and its (lower) coverage.

    >>> median_ci(range(1, 11))
    (2.0, 9.0, 0.978515625)
    """
    v = np.sort(np.asarray(x, dtype=float))
    v = v[~np.isnan(v)]
    n = len(v)
    if n == 0:
        return (math.nan, math.nan, math.nan)
    best = (float(v[0]), float(v[-1]), float(1 - 2 * sps.binom.cdf(0, n, 0.5)))
    for k in range(2, n // 2 + 1):
        coverage = 1 - 2 * sps.binom.cdf(k - 1, n, 0.5)
        if coverage < level:
            break
        best = (float(v[k - 1]), float(v[n - k]), float(coverage))
    return best


def summarize(df: pd.DataFrame, by: Sequence[str], value: str, level: float = LEVEL) -> pd.DataFrame:
    """Per group: n, median, min, max, q1, q3, iqr and the median's CI (with its coverage)."""
    def one(x: pd.Series) -> pd.Series:
        lo, hi, cov = median_ci(x, level)
        q1, q3 = np.percentile(x, [25, 75])
        return pd.Series({"n": len(x), "median": x.median(), "min": x.min(), "max": x.max(),
                          "q1": q1, "q3": q3, "iqr": q3 - q1, "ci_low": lo, "ci_high": hi,
                          "ci_level": cov})
    out = df.groupby(list(by), sort=True)[value].apply(one).unstack()
    out["n"] = out["n"].astype(int)
    return out.reset_index()


def bootstrap_ratio_ci(a: Sequence[float], b: Sequence[float], level: float = LEVEL,
                       n_boot: int = N_BOOT, seed: int = 0) -> tuple[float, float]:
    """Percentile bootstrap CI of median(b) / median(a), resampling each group."""
    rng = np.random.default_rng(seed)
    a, b = np.asarray(a, float), np.asarray(b, float)
    ma = np.median(rng.choice(a, (n_boot, len(a))), axis=1)
    mb = np.median(rng.choice(b, (n_boot, len(b))), axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        r = mb / ma
    tail = (1 - level) / 2 * 100
    lo, hi = np.nanpercentile(r, [tail, 100 - tail])
    return float(lo), float(hi)


def mann_whitney_p(a: Sequence[float], b: Sequence[float]) -> float:
    """Two-sided Mann–Whitney U p-value (exact for small samples without ties)."""
    a, b = np.asarray(a, float), np.asarray(b, float)
    if len(a) == 0 or len(b) == 0:
        return math.nan
    if np.all(a == a[0]) and np.all(b == a[0]):
        return 1.0
    return float(sps.mannwhitneyu(b, a, alternative="two-sided").pvalue)


def min_p_value(n_a: int, n_b: int) -> float:
    """The smallest two-sided Mann–Whitney p that n_a vs n_b values can give.

    With 3 vs 3 it is 0.1: no difference can be significant at 5 %, whatever the data.

    >>> min_p_value(3, 3)
    0.1
    """
    return min(1.0, 2 / math.comb(n_a + n_b, n_a))


def holm(pvalues: Iterable[float]) -> np.ndarray:
    """Holm–Bonferroni adjusted p-values (NaN stays NaN and does not count).

    >>> holm([0.01, 0.04, 0.03]).round(3).tolist()
    [0.03, 0.06, 0.06]
    """
    p = np.asarray(list(pvalues), dtype=float)
    out = np.full_like(p, np.nan)
    idx = np.where(~np.isnan(p))[0]
    m = len(idx)
    order = idx[np.argsort(p[idx], kind="stable")]
    running = 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (m - rank) * p[i]))
        out[i] = running
    return out


def verdict(ratio: float, p: float, *, higher_is_better: bool = True,
            threshold: float = THRESHOLD, alpha: float = ALPHA) -> str:
    """better / worse / draw for candidate vs baseline (ratio = candidate / baseline).

    >>> verdict(1.10, 0.001), verdict(1.03, 0.001), verdict(0.8, 0.2), verdict(0.8, 0.01)
    ('better', 'draw', 'draw', 'worse')
    """
    if math.isnan(ratio) or math.isnan(p) or abs(ratio - 1) < threshold or p >= alpha:
        return "draw"
    return "better" if (ratio > 1) == higher_is_better else "worse"


def compare(a: Sequence[float], b: Sequence[float], *, level: float = LEVEL,
            n_boot: int = N_BOOT, seed: int = 0, **verdict_kw: Any) -> dict[str, Any]:
    """Candidate `b` vs baseline `a` (one comparison, uncorrected)."""
    a, b = np.asarray(a, float), np.asarray(b, float)
    ma, mb = float(np.median(a)), float(np.median(b))
    ratio = mb / ma if ma else math.nan
    lo, hi = bootstrap_ratio_ci(a, b, level, n_boot, seed)
    p = mann_whitney_p(a, b)
    return {"n_baseline": len(a), "n_candidate": len(b), "median_baseline": ma,
            "median_candidate": mb, "ratio": ratio, "delta_pct": (ratio - 1) * 100,
            "ci_low": lo, "ci_high": hi, "p_value": p,
            "verdict": verdict(ratio, p, **verdict_kw)}


def compare_table(df: pd.DataFrame, *, by: Sequence[str], factor: str, baseline: Any,
                  candidate: Any, value: str, higher_is_better: bool = True,
                  threshold: float = THRESHOLD, alpha: float = ALPHA, level: float = LEVEL,
                  n_boot: int = N_BOOT, seed: int = 0) -> pd.DataFrame:
    """One comparison per group of `by`: `factor == candidate` vs `factor == baseline`.

    p-values are Holm-corrected across the table (`p_holm`) and verdicts use the corrected
    value. The layout follows the "relative results" tables of our sources."""
    rows = []
    for key, g in df.groupby(list(by), sort=True):
        a = g.loc[g[factor] == baseline, value].to_numpy()
        b = g.loc[g[factor] == candidate, value].to_numpy()
        if len(a) == 0 or len(b) == 0:
            continue
        key = key if isinstance(key, tuple) else (key,)
        rows.append({**dict(zip(by, key)),
                     **compare(a, b, level=level, n_boot=n_boot, seed=seed,
                               higher_is_better=higher_is_better, threshold=threshold, alpha=alpha)})
    out = pd.DataFrame(rows)
    if out.empty:
        return out
    out["p_holm"] = holm(out["p_value"])
    out["verdict"] = [verdict(r, p, higher_is_better=higher_is_better, threshold=threshold,
                              alpha=alpha) for r, p in zip(out["ratio"], out["p_holm"])]
    cols = [*by, "n_baseline", "n_candidate", "median_baseline", "median_candidate", "ratio",
            "delta_pct", "ci_low", "ci_high", "p_value", "p_holm", "verdict"]
    return out[cols]
