"""One and two samples: summaries with CIs, Welch on logs, rank robustness columns, Holm,
verdicts, comparison tables of independent repeats and what a table can detect."""
from __future__ import annotations

import functools
import itertools
import math
from typing import Any, Iterable, Sequence

import numpy as np
import pandas as pd

from .lazy import sps

THRESHOLD = 0.05   # |Δ| below 5 % is a draw
ALPHA = 0.05
LEVEL = 0.95
POWER = 0.80       # for the minimum detectable effect
VERDICTS = ("better", "worse", "draw")
NOT_JUDGED = "not judged"  # no test was possible (one pair): no verdict, not a draw


# ---------------------------------------------------------------- one sample

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


def cv(x: Sequence[float]) -> float:
    """Coefficient of variation (sample SD / mean); NaN with fewer than two values.

    >>> round(cv([90, 100, 110]), 3)
    0.1
    """
    v = np.asarray(x, dtype=float)
    return float(np.std(v, ddof=1) / np.mean(v)) if len(v) >= 2 and np.mean(v) else math.nan


def summarize(df: pd.DataFrame, by: Sequence[str], value: str, level: float = LEVEL) -> pd.DataFrame:
    """Per group: n, median, min, max, q1, q3, iqr, cv and the median's CI (with its coverage)."""
    def one(x: pd.Series) -> pd.Series:
        lo, hi, cov = median_ci(x, level)
        q1, q3 = np.percentile(x, [25, 75])
        return pd.Series({"n": len(x), "median": x.median(), "min": x.min(), "max": x.max(),
                          "q1": q1, "q3": q3, "iqr": q3 - q1, "cv": cv(x), "ci_low": lo,
                          "ci_high": hi, "ci_level": cov})
    out = df.groupby(list(by), sort=True)[value].apply(one).unstack()
    out["n"] = out["n"].astype(int)
    return out.reset_index()


# ---------------------------------------------------------------- two samples

def log_t(a: Sequence[float], b: Sequence[float], level: float = LEVEL) -> dict[str, float]:
    """Welch's t on log values: ratio of geometric means b/a, its CI, p, SE and df.

    >>> r = log_t([10, 11, 9, 10], [20, 22, 18, 20])
    >>> round(r["ratio"], 3), r["p_value"] < 0.001
    (2.0, True)
    """
    la, lb = np.log(np.asarray(a, float)), np.log(np.asarray(b, float))
    na, nb = len(la), len(lb)
    nan = dict(ratio=math.nan, ci_low=math.nan, ci_high=math.nan, p_value=math.nan,
               se=math.nan, df=math.nan)
    if na == 0 or nb == 0:
        return nan
    diff = float(lb.mean() - la.mean())
    if na < 2 or nb < 2:  # no variance estimate: a point estimate and nothing else
        return {**nan, "ratio": math.exp(diff)}
    va, vb = la.var(ddof=1) / na, lb.var(ddof=1) / nb
    se = math.sqrt(va + vb)
    if se == 0:
        return dict(ratio=math.exp(diff), ci_low=math.exp(diff), ci_high=math.exp(diff),
                    p_value=1.0 if diff == 0 else 0.0, se=0.0, df=float(na + nb - 2))
    df = (va + vb) ** 2 / (va ** 2 / (na - 1) + vb ** 2 / (nb - 1))
    half = sps.t.ppf(0.5 + level / 2, df) * se
    return dict(ratio=math.exp(diff), ci_low=math.exp(diff - half), ci_high=math.exp(diff + half),
                p_value=float(2 * sps.t.sf(abs(diff) / se, df)), se=se, df=float(df))


def paired_effect(d: Sequence[float], level: float = LEVEL) -> dict[str, float]:
    """Paired log ratios `d` as one effect — the one formula a build series, a bisection and
    `paired_ratio` share: their mean (`log`), its standard error, the pairs, and in % the effect
    with its one-sample t interval (NaN below two pairs).

    >>> {k: round(v, 1) for k, v in paired_effect([-0.1, -0.12, -0.08]).items() if k != "se"}
    {'log': -0.1, 'pairs': 3, 'pct': -9.5, 'lo': -13.9, 'hi': -4.9}
    """
    d = np.asarray(d, float)
    n = len(d)
    mean = float(d.mean()) if n else math.nan
    se = float(d.std(ddof=1)) / math.sqrt(n) if n > 1 else math.nan
    half = float(sps.t.ppf(0.5 + level / 2, n - 1)) * se if n > 1 else math.nan
    return {"log": mean, "se": se, "pairs": n, "pct": math.expm1(mean) * 100,
            "lo": math.expm1(mean - half) * 100, "hi": math.expm1(mean + half) * 100}


def paired_ratio(a: Sequence[float], b: Sequence[float], level: float = LEVEL) -> tuple[float, float, float]:
    """The ratio of geometric means b/a of paired measurements (a[i] with b[i]) and its CI
    from a one-sample t on the per-pair log ratios (`paired_effect`; NaN bounds with fewer
    than two pairs).

    >>> [round(x, 3) for x in paired_ratio([10, 20, 40], [11, 22, 44])]
    [1.1, 1.1, 1.1]
    """
    e = paired_effect(np.log(np.asarray(b, float)) - np.log(np.asarray(a, float)), level)
    return math.exp(e["log"]), 1 + e["lo"] / 100, 1 + e["hi"] / 100


@functools.lru_cache(maxsize=64)
def _u_counts(n1: int, n2: int) -> tuple[int, ...]:
    """How many of the C(n1+n2, n1) rank arrangements give each Mann–Whitney U (no ties):
    the coefficients of the Gaussian binomial Π_{i=1..n1} (1 − q^(n2+i)) / (1 − q^i).

    >>> _u_counts(2, 2)
    (1, 1, 2, 1, 1)
    """
    poly = [1] + [0] * (n1 * n2)
    for i in range(1, n1 + 1):
        for j in range(len(poly) - 1, n2 + i - 1, -1):   # × (1 − q^(n2+i))
            poly[j] -= poly[j - n2 - i]
        for j in range(i, len(poly)):                       # ÷ (1 − q^i), exact
            poly[j] += poly[j - i]
    return tuple(poly)


def rank_ratio_ci(a: Sequence[float], b: Sequence[float],
                  level: float = LEVEL) -> tuple[float, float, float, float]:
    """Hodges–Lehmann ratio b/a (median of all pairwise log differences) with the exact
    rank CI that inverts the Mann–Whitney test: (ratio, low, high, coverage).

    Coverage comes in steps at small n, so the CI is the narrowest one whose exact coverage
    is ≥ level (or all pairs, with the lower coverage that has), and that coverage is returned.

    >>> r, lo, hi, cov = rank_ratio_ci([10, 11, 9, 10, 12], [20, 22, 18, 20, 24])
    >>> round(r, 2), round(cov, 3)
    (2.0, 0.968)
    """
    la, lb = np.log(np.asarray(a, float)), np.log(np.asarray(b, float))
    n1, n2 = len(la), len(lb)
    if n1 == 0 or n2 == 0:
        return (math.nan,) * 4
    d = np.sort((lb[None, :] - la[:, None]).ravel())
    hl = math.exp(float(np.median(d)))
    if n1 * n2 > 2500:  # large samples: the normal approximation of U
        z = sps.norm.ppf(0.5 + level / 2)
        k = max(1, int(math.floor(n1 * n2 / 2 - z * math.sqrt(n1 * n2 * (n1 + n2 + 1) / 12))))
        coverage = level
    else:
        total = math.comb(n1 + n2, n1)  # exact in Python's integers: past 2^63 at 35 vs 35
        cdf = np.array([c / total for c in itertools.accumulate(_u_counts(n1, n2))])  # P(U ≤ u)
        ok = np.nonzero(cdf <= (1 - level) / 2)[0]
        k = int(ok[-1]) + 1 if len(ok) else 1     # CI = [d_(k), d_(N+1-k)]
        coverage = max(0.0, float(1 - 2 * cdf[k - 1]))
    lo, hi = d[k - 1], d[len(d) - k]
    return hl, math.exp(float(lo)), math.exp(float(hi)), coverage


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


def mde(sd_log: float, n_a: int, n_b: int, m: int = 1, *, alpha: float = ALPHA,
        power: float = POWER, threshold: float = THRESHOLD) -> float:
    """Minimum detectable effect (a fraction): the smallest true ratio − 1 that the log-t rule
    calls non-draw with probability `power`, at noise `sd_log` (SD of log values, ≈ CV),
    n_a vs n_b repeats and `m` comparisons in the table (Holm's first step, α/m). Never
    below `threshold`, since smaller differences are draws by rule; NaN when no verdict is
    possible at all (fewer than two repeats on a side).

    >>> round(mde(0.05, 5, 5, m=12), 3)
    0.166
    """
    if n_a < 2 or n_b < 2 or m < 1 or not np.isfinite(sd_log):
        return math.nan
    df = n_a + n_b - 2
    z = sps.t.ppf(1 - alpha / (2 * m), df) + sps.t.ppf(power, df)
    return max(math.expm1(z * sd_log * math.sqrt(1 / n_a + 1 / n_b)), threshold)


def verdict(ratio: float, p: float, *, higher_is_better: bool = True,
            threshold: float = THRESHOLD, alpha: float = ALPHA) -> str:
    """better / worse / draw for candidate vs baseline (ratio = candidate / baseline); with
    no test (one pair, no spread: p is NaN) `NOT_JUDGED` — a draw says the data saw no
    difference, which one pair cannot — unless every repeat measured the same (ratio 1).

    >>> verdict(1.10, 0.001), verdict(1.03, 0.001), verdict(0.8, 0.2), verdict(0.8, 0.01)
    ('better', 'draw', 'draw', 'worse')
    >>> verdict(0.8, math.nan), verdict(1.0, math.nan)
    ('not judged', 'draw')
    """
    if math.isnan(ratio) or math.isnan(p):
        return "draw" if ratio == 1 else NOT_JUDGED
    if abs(ratio - 1) < threshold or p >= alpha:
        return "draw"
    return "better" if (ratio > 1) == higher_is_better else "worse"


def compare(a: Sequence[float], b: Sequence[float], *, level: float = LEVEL,
            **verdict_kw: Any) -> dict[str, Any]:
    """Candidate `b` vs baseline `a` (one comparison, uncorrected)."""
    a, b = np.asarray(a, float), np.asarray(b, float)
    t = log_t(a, b, level)
    hl, rlo, rhi, rcov = rank_ratio_ci(a, b, level)
    return {"n_baseline": len(a), "n_candidate": len(b),
            "median_baseline": float(np.median(a)) if len(a) else math.nan,
            "median_candidate": float(np.median(b)) if len(b) else math.nan,
            "cv_baseline": cv(a), "cv_candidate": cv(b),
            "ratio": t["ratio"], "delta_pct": (t["ratio"] - 1) * 100,
            "ci_low": t["ci_low"], "ci_high": t["ci_high"], "p_value": t["p_value"], "df": t["df"],
            "verdict": verdict(t["ratio"], t["p_value"], **verdict_kw),
            "rank_ratio": hl, "rank_ci_low": rlo, "rank_ci_high": rhi, "rank_ci_level": rcov,
            "p_rank": mann_whitney_p(a, b)}


COMPARE_COLUMNS = ["n_baseline", "n_candidate", "median_baseline", "median_candidate",
                   "cv_baseline", "cv_candidate", "ratio", "delta_pct", "ci_low", "ci_high",
                   "holm_ci_low", "holm_ci_high",
                   "p_value", "p_holm", "verdict", "mde_pct", "rank_ratio", "rank_ci_low",
                   "rank_ci_high", "rank_ci_level", "p_rank"]


def pooled_sd_log(groups: Iterable[Sequence[float]]) -> float:
    """Pooled within-group SD of log values (each group its own mean).

    >>> round(pooled_sd_log([[1, 1, 1], [math.e, 1]]), 3)
    0.408
    """
    ss = dof = 0.0
    for g in groups:
        lg = np.log(np.asarray(g, float))
        if len(lg) >= 2:
            ss += float(((lg - lg.mean()) ** 2).sum())
            dof += len(lg) - 1
    return math.sqrt(ss / dof) if dof else math.nan


def compare_table(df: pd.DataFrame, *, by: Sequence[str], factor: str, baseline: Any,
                  candidates: Sequence[Any], value: str, higher_is_better: bool = True,
                  threshold: float = THRESHOLD, alpha: float = ALPHA,
                  level: float = LEVEL) -> pd.DataFrame:
    """One comparison per candidate × group of `by`: rows with `factor == candidate` vs rows
    with `factor == baseline`, in a `candidate` column.

    One table is one Holm family: `p_holm` corrects Welch's p across the whole table (every
    candidate and group) and the verdicts use it. `mde_pct` is each cell's minimum detectable
    effect at its own noise (both arms pooled) and the table's number of comparisons. A cell
    where either side has no value is left out. The layout
    follows the "relative results" tables of our sources."""
    rows = []
    for candidate in candidates:
        for key, g in df.groupby(list(by), sort=True):
            a = g.loc[g[factor] == baseline, value].dropna().to_numpy()
            b = g.loc[g[factor] == candidate, value].dropna().to_numpy()
            if len(a) == 0 or len(b) == 0:
                continue
            key = key if isinstance(key, tuple) else (key,)
            rows.append({"candidate": candidate, **dict(zip(by, key)), **compare(a, b, level=level),
                         "sd_log": pooled_sd_log([a, b])})
    columns = ["candidate", *by, *COMPARE_COLUMNS]
    out = pd.DataFrame(rows)
    if out.empty:
        return pd.DataFrame(columns=columns)
    out["p_holm"] = holm(out["p_value"])
    out = holm_intervals(out, alpha=alpha, level=level)
    out["verdict"] = [verdict(r, p, higher_is_better=higher_is_better, threshold=threshold,
                              alpha=alpha) for r, p in zip(out["ratio"], out["p_holm"])]
    m = max(int(out["p_value"].notna().sum()), 1)
    out["mde_pct"] = [mde(sd, na, nb, m, alpha=alpha, threshold=threshold) * 100
                      for sd, na, nb in zip(out["sd_log"], out["n_baseline"], out["n_candidate"])]
    return out[columns]


def holm_intervals(table: pd.DataFrame, alpha: float = ALPHA, level: float = LEVEL) -> pd.DataFrame:
    """`table` with each cell's Holm-adjusted interval (`holm_ci_low`, `holm_ci_high`): its CI
    (a t interval on `df` degrees of freedom) widened to the level Holm's step-down tests it
    at — 1 − α / (m − rank + 1), the cell with the smallest p at 1 − α/m —, so that beside a
    Holm verdict the interval excludes no change exactly when the cell's own step rejects it.

    >>> t = pd.DataFrame({"ratio": [1.1, 1.2], "ci_low": [1.0, 1.1], "ci_high": [1.21, 1.31],
    ...                   "p_value": [0.05, 0.001], "df": [9.0, 9.0]})
    >>> h = holm_intervals(t)
    >>> bool(h["holm_ci_low"][1] < 1.1 and h["holm_ci_high"][1] > 1.31), bool(h["holm_ci_low"][0] == 1.0)
    (True, True)
    """
    p = table["p_value"].to_numpy(float)
    tested = np.isfinite(p)
    m = int(tested.sum())
    rank = np.full(len(p), np.nan)
    rank[tested] = np.argsort(np.argsort(p[tested])) + 1
    with np.errstate(divide="ignore", invalid="ignore"):
        k = m - rank + 1
        df = table["df"].to_numpy(float)
        ok = tested & np.isfinite(df) & (df > 0)
        widen = np.where(ok, sps.t.ppf(1 - alpha / (2 * np.where(ok, k, 1)), np.where(ok, df, 1))
                         / sps.t.ppf(0.5 + level / 2, np.where(ok, df, 1)), np.nan)
        centre = np.log(table["ratio"].to_numpy(float))
        lo = centre - (centre - np.log(table["ci_low"].to_numpy(float))) * widen
        hi = centre + (np.log(table["ci_high"].to_numpy(float)) - centre) * widen
    return table.assign(holm_ci_low=np.exp(lo), holm_ci_high=np.exp(hi))


def is_paired_table(table: pd.DataFrame) -> bool:
    """Whether a comparison table comes from `paired_table`."""
    return "sd_diff" in table.columns
