"""Summaries, intervals, tests and verdicts — what every study ends with.

The unit of replication is a whole run (one measured step on a fresh server start), never
a second. A comparison of a candidate with a baseline gives:

- the **ratio of geometric means** with a CI from Welch's t on log values, and Welch's
  two-sided p-value — the rule that decides (it has the power small-n benchmarks need);
- **Holm's correction** across one table (one family), and a verdict: better / worse /
  draw (|Δ| < threshold, or not significant after correction);
- robustness columns that need no normality: the Hodges–Lehmann ratio with its exact rank
  CI (labelled with the coverage it really has) and the Mann–Whitney p-value;
- the table's **minimum detectable effect**: the smallest true difference found with 80 %
  power at the table's n, pooled noise and number of comparisons.

A **paired** design (arms measured back to back, one pair per round and cell) is analysed on
the per-pair log ratios instead (`paired_table`): a one-sample t on them, its variance
moderated across the table's cells by empirical Bayes (Smyth's limma: a scaled inverse-χ²
prior fitted to the cells' variances, with safety margins: `moderated`), Holm across the table, the Wilcoxon signed-rank test
and the Hodges–Lehmann ratio with its exact CI as robustness columns.

>>> r = compare([100, 101, 99, 100, 102], [120, 121, 119, 122, 120])
>>> round(r["ratio"], 2), r["verdict"]
(1.2, 'better')
"""
from __future__ import annotations

import functools
import math
from typing import Any, Iterable, Sequence

import numpy as np
import pandas as pd
from scipy import special as spf
from scipy import stats as sps

THRESHOLD = 0.05   # |Δ| below 5 % is a draw
ALPHA = 0.05
LEVEL = 0.95
POWER = 0.80       # for the minimum detectable effect
VERDICTS = ("better", "worse", "draw")


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


def paired_ratio(a: Sequence[float], b: Sequence[float], level: float = LEVEL) -> tuple[float, float, float]:
    """The ratio of geometric means b/a of paired measurements (a[i] with b[i]) and its CI
    from a one-sample t on the per-pair log ratios (NaN bounds with fewer than two pairs).

    >>> [round(x, 3) for x in paired_ratio([10, 20, 40], [11, 22, 44])]
    [1.1, 1.1, 1.1]
    """
    d = np.log(np.asarray(b, float)) - np.log(np.asarray(a, float))
    if len(d) < 2:
        return (math.exp(d.mean()) if len(d) else math.nan), math.nan, math.nan
    half = sps.t.ppf(0.5 + level / 2, len(d) - 1) * d.std(ddof=1) / math.sqrt(len(d))
    return math.exp(d.mean()), math.exp(d.mean() - half), math.exp(d.mean() + half)


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
        cdf = np.cumsum(_u_counts(n1, n2)) / math.comb(n1 + n2, n1)   # P(U ≤ u)
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
    """better / worse / draw for candidate vs baseline (ratio = candidate / baseline).

    >>> verdict(1.10, 0.001), verdict(1.03, 0.001), verdict(0.8, 0.2), verdict(0.8, 0.01)
    ('better', 'draw', 'draw', 'worse')
    """
    if math.isnan(ratio) or math.isnan(p) or abs(ratio - 1) < threshold or p >= alpha:
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
            "ci_low": t["ci_low"], "ci_high": t["ci_high"], "p_value": t["p_value"],
            "verdict": verdict(t["ratio"], t["p_value"], **verdict_kw),
            "rank_ratio": hl, "rank_ci_low": rlo, "rank_ci_high": rhi, "rank_ci_level": rcov,
            "p_rank": mann_whitney_p(a, b)}


COMPARE_COLUMNS = ["n_baseline", "n_candidate", "median_baseline", "median_candidate",
                   "cv_baseline", "cv_candidate", "ratio", "delta_pct", "ci_low", "ci_high",
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
    out["verdict"] = [verdict(r, p, higher_is_better=higher_is_better, threshold=threshold,
                              alpha=alpha) for r, p in zip(out["ratio"], out["p_holm"])]
    m = max(int(out["p_value"].notna().sum()), 1)
    out["mde_pct"] = [mde(sd, na, nb, m, alpha=alpha, threshold=threshold) * 100
                      for sd, na, nb in zip(out["sd_log"], out["n_baseline"], out["n_candidate"])]
    return out[columns]


def reachability(table: pd.DataFrame, alpha: float = ALPHA) -> list[str]:
    """Plain sentences on what a comparison table can and cannot conclude, by construction
    (repeats or pairs, correction included) and at its measured noise (its cells' MDE).

    >>> t = pd.DataFrame({"n_baseline": [5, 5], "n_candidate": [5, 5], "mde_pct": [12.0, 20.0]})
    >>> reachability(t)[0]
    'Minimum detectable effect 16 % in the median cell (12–20 % across cells; 5 repeats per side, 2 comparisons, Holm-corrected, 80 % power): a smaller true difference may come out draw'
    """
    if table.empty:
        return ["No comparison was possible (a configuration has no measurements)"]
    paired = is_paired(table)
    n = int(table[["n_baseline", "n_candidate"]].min().min())
    m = int(table["p_value"].notna().sum()) if "p_value" in table else len(table)  # tested rows
    unit = "pair(s) per cell" if paired else "repeat(s) per configuration"
    if n < 2:
        return [f"With {n} {unit} no noise can be estimated, so no verdict is possible by "
                f"construction: every cell is a draw (use {'rounds' if paired else 'repeats'} ≥ 3)"]
    mdes = table["mde_pct"].dropna()
    lo, hi = mde_text(mdes.min()), mde_text(mdes.max())
    spread = (f"{lo} in every cell" if lo == hi or round(mdes.min()) == round(mdes.max()) else
              f"{mdes.min():.0f}–{hi} across cells" if mdes.max() <= 1000 else f"{lo} to {hi} across cells")
    if paired:
        d0 = float(table["prior_df"].max()) if "prior_df" in table else 0.0
        how = (f"{n} pairs per cell (paired rounds, t on the pairs' log ratios"
               + (f", variance moderated across the cells: +{d0:.0f} df" if d0 > 0 else "") + ")")
        floor = min_signed_rank_p(n) * m
    else:
        how = f"{n} repeats per side"
        floor = min_p_value(n, n) * m
    lines = [f"Minimum detectable effect {mde_text(mdes.median())} in the median cell ({spread}; "
             f"{how}, {m} comparison{'s' if m != 1 else ''}, Holm-corrected, 80 % power): a "
             "smaller true difference may come out draw"]
    if floor >= alpha:
        lines.append(f"The rank test (robustness column) cannot reach p < {alpha} after Holm "
                     f"over {m} comparison{'s' if m != 1 else ''} with {n} {'pairs' if paired else 'repeats'} "
                     f"(its floor is {min(floor, 1):.2g})")
    return lines


def reach_short(table: pd.DataFrame) -> str:
    """`reachability` in one clause, for a conclusion (the full sentences go with the design).

    >>> reach_short(pd.DataFrame({"n_baseline": [5, 5], "n_candidate": [5, 5], "mde_pct": [12.0, 20.0]}))
    'detectable: 16 % in the median cell (12–20 % across cells)'
    >>> reach_short(pd.DataFrame({"n_baseline": [1, 2], "n_candidate": [1, 2], "mde_pct": [np.nan, 69.0],
    ...                           "p_value": [np.nan, 0.03]}))
    'detectable: 69 % in the median cell; 1 cell with a single repeat could not be tested'
    """
    if table.empty:
        return "nothing could be compared"
    unit = "pair" if is_paired(table) else "repeat"
    n_cell = table[["n_baseline", "n_candidate"]].min(axis=1)
    untested = (table["p_value"].isna() if "p_value" in table else n_cell < 2) & (n_cell < 2)
    mdes = table.loc[~untested, "mde_pct"].dropna()
    if mdes.empty:
        return f"with {int(n_cell.min())} {unit} per cell no verdict is possible"
    lo, hi, mid = mde_text(mdes.min()), mde_text(mdes.max()), mde_text(mdes.median())
    spread = ("" if lo == hi else f" ({lo.removesuffix(' %')}–{hi} across cells)" if mdes.max() <= 1000
              else f" ({lo} to {hi} across cells)")
    few = int(untested.sum())
    return (f"detectable: {mid} in the median cell{spread}"
            + (f"; {few} cell{'s' if few != 1 else ''} with a single {unit} could not be tested" if few else ""))


def mde_text(x: float) -> str:
    """An MDE as the text says it: '16 %', or '> 1,000 %' for a design that cannot tell.

    >>> mde_text(15.6), mde_text(2221619.0)
    ('16 %', '> 1,000 %')
    """
    return "> 1,000 %" if x > 1000 else f"{x:.0f} %"


# ---------------------------------------------------------------- paired samples

def signed_rank_counts(n: int) -> np.ndarray:
    """How many of the 2ⁿ sign patterns give each Wilcoxon signed-rank sum W⁺ = 0 … n(n+1)/2
    (no ties): the subset sums of {1 … n}.

    >>> signed_rank_counts(3).astype(int).tolist()
    [1, 1, 1, 2, 1, 1, 1]
    """
    counts = np.zeros(n * (n + 1) // 2 + 1)
    counts[0] = 1.0
    for k in range(1, n + 1):
        counts[k:] = counts[k:] + counts[:-k]   # the right side is evaluated first: 0/1 sums
    return counts


@functools.lru_cache(maxsize=64)
def _signed_rank_cdf(n: int) -> np.ndarray:
    return np.cumsum(signed_rank_counts(n)) / 2.0 ** n


def signed_rank_ratio_ci(d: Sequence[float], level: float = LEVEL) -> tuple[float, float, float, float]:
    """Hodges–Lehmann estimate of paired log differences `d` (median of the Walsh averages),
    as a ratio, with the exact CI that inverts the signed-rank test: (ratio, low, high,
    coverage) — the narrowest CI whose exact coverage is ≥ level, else all Walsh averages
    with the coverage that has.

    >>> r, lo, hi, cov = signed_rank_ratio_ci(np.log([1.1, 1.2, 1.15, 1.05, 1.25, 1.1]))
    >>> round(r, 3), round(cov, 3)
    (1.146, 0.969)
    """
    x = np.asarray(d, float)
    x = x[~np.isnan(x)]
    n = len(x)
    if n == 0:
        return (math.nan,) * 4
    i, j = np.triu_indices(n)
    walsh = np.sort((x[i] + x[j]) / 2)
    hl = math.exp(float(np.median(walsh)))
    cdf = _signed_rank_cdf(n)
    ok = np.nonzero(cdf <= (1 - level) / 2)[0]
    k = int(ok[-1]) + 1 if len(ok) else 1      # CI = [w_(k), w_(N+1-k)]
    coverage = max(0.0, float(1 - 2 * cdf[k - 1]))
    return hl, math.exp(float(walsh[k - 1])), math.exp(float(walsh[len(walsh) - k])), coverage


def signed_rank_p(d: Sequence[float]) -> float:
    """Two-sided Wilcoxon signed-rank p of paired differences (1.0 when all are zero)."""
    x = np.asarray(d, float)
    x = x[~np.isnan(x)]
    if len(x) == 0:
        return math.nan
    if np.all(x == 0):
        return 1.0
    return float(sps.wilcoxon(x, alternative="two-sided").pvalue)


def min_signed_rank_p(n: int) -> float:
    """The smallest two-sided signed-rank p that n pairs can give.

    >>> min_signed_rank_p(5), min_signed_rank_p(16) < 0.0001
    (0.0625, True)
    """
    return min(1.0, 2 / 2 ** n)


def trigamma_inverse(x: float) -> float:
    """y with trigamma(y) = x (Newton's method as in Smyth 2004).

    >>> round(float(spf.polygamma(1, trigamma_inverse(0.3))), 6)
    0.3
    """
    if x > 1e7:
        return 1 / math.sqrt(x)
    if x < 1e-6:
        return 1 / x
    y = 0.5 + 1 / x
    for _ in range(50):
        tri = float(spf.polygamma(1, y))
        step = tri * (1 - tri / x) / float(spf.polygamma(2, y))
        y += step
        if -step / y < 1e-8:
            break
    return y


def variance_prior(s2: Sequence[float], df: Sequence[float]) -> tuple[float, float]:
    """Empirical-Bayes prior of cell variances (Smyth 2004, limma's `fitFDist`): each cell's
    variance s² on df degrees of freedom is taken as a draw from s₀²·χ²_{d₀}/d₀ scaled by
    χ²_df/df; returns (d₀, s₀²), d₀ = inf when the cells' variances differ no more than
    sampling explains, 0 when fewer than three cells have a variance.

    >>> d0, s0 = variance_prior([0.01] * 4, [3] * 4)
    >>> d0, round(s0, 4)
    (inf, 0.0145)
    """
    s2, df = np.asarray(s2, float), np.asarray(df, float)
    ok = np.isfinite(s2) & (s2 > 0) & np.isfinite(df) & (df > 0)
    s2, df = s2[ok], df[ok]
    if len(s2) < 3:
        return 0.0, math.nan
    e = np.log(s2) - spf.digamma(df / 2) + np.log(df / 2)
    mean = float(e.mean())
    spread = float(((e - mean) ** 2).sum() / (len(e) - 1) - spf.polygamma(1, df / 2).mean())
    if spread <= 0:
        return math.inf, math.exp(mean)
    d0 = 2 * trigamma_inverse(spread)
    return d0, math.exp(mean + float(spf.digamma(d0 / 2)) - math.log(d0 / 2))


def moderated(s2: np.ndarray, df: np.ndarray) -> tuple[np.ndarray, np.ndarray, float]:
    """Variances and degrees of freedom of cells (s², df) moderated by the prior fitted to
    them all (`variance_prior`), with two safety margins against cells whose noise really
    differs: the prior counts for half the degrees of freedom fitted (d = d₀/2), and a
    cell's variance is never shrunk below its own estimate. Returns
    (max(s², (d·s₀² + df·s²)/(d + df)), d + df, d); the total df never exceeds the table's
    pooled df (limma's cap), and cells keep their own without a usable prior.

    Why the margins (tests/test_paired_stats.py, A/A tables of 22 cells whose SDs span 2× or
    4×, 3–8 pairs): limma's own posterior had a non-draw in up to 7–8 % of tables, these
    rules in ≤ 4.3 %; at 3 pairs they keep 56–62 % power for +20 % where the cells' own
    variances give 4 % (limma: 83 %)."""
    d0, s0 = variance_prior(s2, df)
    pooled = float(np.nansum(np.where(df > 0, df, 0)))
    if not d0 > 0 or not np.isfinite(s0):
        return s2, df, 0.0
    d0 = min(d0 / 2, pooled)
    post = np.where(df > 0, (d0 * s0 + np.nan_to_num(df * s2)) / (d0 + df), s0)
    return np.fmax(post, s2), np.minimum(df + d0, pooled), d0


def paired_mde(sd_diff: float, n: int, m: int = 1, df: float | None = None, *, alpha: float = ALPHA,
               power: float = POWER, threshold: float = THRESHOLD) -> float:
    """Minimum detectable effect (a fraction) of a paired comparison: n pairs whose log
    differences have SD `sd_diff` (on `df` degrees of freedom, default n − 1), `m`
    comparisons in the table (Holm's first step, α/m), 80 % power; never below `threshold`.

    >>> round(paired_mde(0.14, 16, m=8), 3)
    0.152
    """
    df = n - 1 if df is None else df
    if n < 2 or m < 1 or not df > 0 or not np.isfinite(sd_diff):
        return math.nan
    z = sps.t.ppf(1 - alpha / (2 * m), df) + sps.t.ppf(power, df)
    return max(math.expm1(z * sd_diff / math.sqrt(n)), threshold)


PAIRED_COLUMNS = [*COMPARE_COLUMNS, "sd_diff", "df", "prior_df"]


def pair_up(df: pd.DataFrame, *, by: Sequence[str], factor: str, baseline: Any, candidate: Any,
            value: str, pair: str) -> pd.DataFrame:
    """Per pair (group of `by` × `pair`): the baseline's and the candidate's value side by
    side (`a`, `b`) and the log ratio `d` = log(b / a); pairs missing a side are left out."""
    keys = [*by, pair]
    a = df.loc[df[factor] == baseline, [*keys, value]].dropna().rename(columns={value: "a"})
    b = df.loc[df[factor] == candidate, [*keys, value]].dropna().rename(columns={value: "b"})
    both = a.merge(b, on=keys)
    both = both[(both["a"] > 0) & (both["b"] > 0)]
    return both.assign(d=np.log(both["b"]) - np.log(both["a"]))


def paired_table(df: pd.DataFrame, *, by: Sequence[str], factor: str, baseline: Any,
                 candidates: Sequence[Any], value: str, pair: str = "repeat",
                 higher_is_better: bool = True, threshold: float = THRESHOLD,
                 alpha: float = ALPHA, level: float = LEVEL, moderate: bool = True) -> pd.DataFrame:
    """One paired comparison per candidate × group of `by`: the candidate's value against the
    baseline's of the same `pair` (round), as log ratios.

    Per cell: the ratio of geometric means exp(mean d), its CI and p from a one-sample t on
    the differences, whose variance is moderated across the table's cells (`moderated`;
    `prior_df` says how many degrees of freedom the other cells lent, 0 when none);
    `p_holm` corrects across the whole table; `mde_pct` is the cell's paired MDE at the
    table's number of comparisons. `n_baseline` = `n_candidate` = the pairs. Robustness:
    the Hodges–Lehmann ratio of the pairs with its exact signed-rank CI and the signed-rank p.

    >>> t = paired_table(pd.DataFrame({"g": [1] * 6, "arm": ["A", "B"] * 3, "r": [1, 1, 2, 2, 3, 3],
    ...                                "v": [100, 120, 80, 97, 110, 131]}),
    ...                  by=["g"], factor="arm", baseline="A", candidates=["B"], value="v", pair="r")
    >>> round(float(t["ratio"].iloc[0]), 2), t["verdict"].iloc[0]
    (1.2, 'better')
    """
    rows = []
    for candidate in candidates:
        pairs = pair_up(df, by=by, factor=factor, baseline=baseline, candidate=candidate,
                        value=value, pair=pair)
        for key, g in pairs.groupby(list(by), sort=True):
            key = key if isinstance(key, tuple) else (key,)
            d, n = g["d"].to_numpy(), len(g)
            hl, rlo, rhi, rcov = signed_rank_ratio_ci(d, level)
            rows.append({"candidate": candidate, **dict(zip(by, key)),
                         "n_baseline": n, "n_candidate": n,
                         "median_baseline": float(g["a"].median()),
                         "median_candidate": float(g["b"].median()),
                         "cv_baseline": cv(g["a"]), "cv_candidate": cv(g["b"]),
                         "mean_d": float(d.mean()), "s2": float(d.var(ddof=1)) if n >= 2 else math.nan,
                         "df": float(n - 1), "rank_ratio": hl, "rank_ci_low": rlo,
                         "rank_ci_high": rhi, "rank_ci_level": rcov, "p_rank": signed_rank_p(d)})
    columns = ["candidate", *by, *PAIRED_COLUMNS]
    out = pd.DataFrame(rows)
    if out.empty:
        return pd.DataFrame(columns=columns)
    s2, dof = out["s2"].to_numpy(), out["df"].to_numpy()
    if moderate:
        s2, dof, d0 = moderated(s2, dof)
    else:
        d0 = 0.0
    n = out["n_baseline"].to_numpy()
    se = np.sqrt(s2 / n)
    ok = (n >= 2) & (dof > 0) & np.isfinite(se)
    tq = np.where(ok, sps.t.ppf(0.5 + level / 2, np.where(ok, dof, 1)), np.nan)
    mean = out["mean_d"].to_numpy()
    with np.errstate(divide="ignore", invalid="ignore"):
        tstat = np.where(se > 0, mean / se, np.where(mean == 0, 0.0, np.inf))
        p = np.where(ok, 2 * sps.t.sf(np.abs(tstat), np.where(ok, dof, 1)), np.nan)
    out = out.assign(ratio=np.exp(mean), delta_pct=np.expm1(mean) * 100,
                     ci_low=np.exp(mean - tq * se), ci_high=np.exp(mean + tq * se),
                     p_value=p, sd_diff=np.sqrt(s2), df=np.where(ok, dof, np.nan),
                     prior_df=d0)
    out["p_holm"] = holm(out["p_value"])
    out["verdict"] = [verdict(r, q, higher_is_better=higher_is_better, threshold=threshold,
                              alpha=alpha) for r, q in zip(out["ratio"], out["p_holm"])]
    m = max(int(out["p_value"].notna().sum()), 1)
    out["mde_pct"] = [paired_mde(sd, int(k), m, f, alpha=alpha, threshold=threshold) * 100
                      for sd, k, f in zip(out["sd_diff"], out["n_baseline"], out["df"])]
    return out[columns]


def is_paired(table: pd.DataFrame) -> bool:
    """Whether a comparison table comes from `paired_table`."""
    return "sd_diff" in table.columns


def paired_verdicts(d: np.ndarray, m: int, *, threshold: float = THRESHOLD, alpha: float = ALPHA,
                    higher_is_better: bool = True) -> np.ndarray:
    """The paired rule on a matrix of log differences d[round, cell] (no missing values):
    the verdict of each cell, Holm over a family of `m` ≥ cells comparisons (the cells'
    p-values repeated to fill it: a table whose other comparisons look like these)."""
    n, cells = d.shape
    s2, df, _ = moderated(d.var(axis=0, ddof=1), np.full(cells, n - 1.0))
    mean = d.mean(axis=0)
    with np.errstate(divide="ignore", invalid="ignore"):
        p = 2 * sps.t.sf(np.abs(mean / np.sqrt(s2 / n)), df)
    family = np.resize(p, max(m, cells))
    p_holm = holm(family)[:cells]
    return np.array([verdict(math.exp(x), q, higher_is_better=higher_is_better, threshold=threshold,
                             alpha=alpha) for x, q in zip(mean, p_holm)])


def calibration(d: np.ndarray, m: int, *, shifts: Sequence[float] = (0.0, 0.10, 0.20),
                draws: int = 1000, seed: int = 0, threshold: float = THRESHOLD,
                alpha: float = ALPHA) -> pd.DataFrame:
    """The paired rule judged on real noise: `d[round, cell]` holds A/A log differences (the
    baseline against its twin). Each draw resamples whole rounds with replacement (a round's
    cells together: what they share stays shared), centres every cell (true ratio 1), adds
    log(1 + shift) and applies the rule with a Holm family of `m`. Per shift: the share of
    tables with any non-draw (at 0: the empirical false-positive rate per table), and of
    cells called better (the empirical power) and worse.

    >>> rng = np.random.default_rng(1)
    >>> c = calibration(rng.normal(0, 0.1, (16, 8)), m=8, draws=200)
    >>> c["shift_pct"].tolist(), bool(c["tables_any_verdict"].iloc[0] <= 0.1), bool(c["cells_better"].iloc[2] > 0.9)
    ([0.0, 10.0, 20.0], True, True)
    """
    rng = np.random.default_rng(seed)
    centred = d - d.mean(axis=0)
    rounds = len(d)
    rows = []
    for shift in shifts:
        anyv = better = worse = 0
        for _ in range(draws):
            v = paired_verdicts(centred[rng.integers(0, rounds, rounds)] + math.log1p(shift), m,
                                threshold=threshold, alpha=alpha)
            anyv += bool((v != "draw").any())
            better += int((v == "better").sum())
            worse += int((v == "worse").sum())
        cells = draws * d.shape[1]
        rows.append({"shift_pct": shift * 100, "tables_any_verdict": anyv / draws,
                     "cells_better": better / cells, "cells_worse": worse / cells})
    return pd.DataFrame(rows)


# ---------------------------------------------------------------- censored comparisons

CENSORED = "timeout (censored: not tested)"


def censored_bound(base: pd.DataFrame, cand: pd.DataFrame, timeout: float) -> str:
    """What a censored comparison still says: with a timeout on one side only, a timed-out
    execution took at least `timeout`, so the ratio of geometric means (candidate/baseline)
    is at least (candidate's timeouts) or at most (baseline's) the ratio computed with the
    timeout in their place: "≥ 4,100 %" / "≤ 3 %". Empty when both sides timed out.

    >>> b = pd.DataFrame({"seconds": [2.0, 2.0], "timed_out": [False, False]})
    >>> c = pd.DataFrame({"seconds": [float("nan")] * 2, "timed_out": [True, True]})
    >>> censored_bound(b, c, 120), censored_bound(c, b, 120), censored_bound(c, c, 120)
    ('≥ 6,000 %', '≤ 1.7 %', '')
    """
    tb, tc = bool(base["timed_out"].any()), bool(cand["timed_out"].any())
    if tb == tc or base.empty or cand.empty:
        return ""

    def gm(side: pd.DataFrame) -> float:
        return float(np.exp(np.log(side["seconds"].where(~side["timed_out"], timeout)).mean()))
    pct = gm(cand) / gm(base) * 100
    return f"{'≥' if tc else '≤'} {pct:,.0f} %" if pct >= 10 else f"{'≥' if tc else '≤'} {pct:.2g} %"


def censored_table(ex: pd.DataFrame, *, by: Sequence[str], factor: str, baseline: Any,
                   candidates: Sequence[Any], timeout: float, paired: bool,
                   threshold: float = THRESHOLD) -> pd.DataFrame:
    """Seconds (`seconds`, `timed_out` per execution) of each candidate vs the baseline per
    group of `by`, lower is better, one Holm family — `paired_table` by round (`repeat`) when
    the executions were measured in pairs, else `compare_table`. A group where either side
    has a timeout is not tested (its times are censored): its row says so (`CENSORED`) with
    the bound the timeouts still give (`censored_bound`)."""
    by = list(by)
    timed_out = ex.groupby([*by, factor])["timed_out"].any().to_dict()
    keys = list(ex[by].drop_duplicates().itertuples(index=False, name=None))
    censored = {(k, c) for k in keys for c in candidates
                if timed_out.get((*k, baseline), False) or timed_out.get((*k, c), False)}
    rows = zip(ex[by].itertuples(index=False, name=None), ex[factor])
    clean = ex[[not (timed_out.get((*k, f), False) if f == baseline else (k, f) in censored)
                for k, f in rows]]
    kw = dict(by=by, factor=factor, baseline=baseline, candidates=list(candidates), value="seconds",
              higher_is_better=False, threshold=threshold)
    rel = paired_table(clean, pair="repeat", **kw) if paired else compare_table(clean, **kw)

    def side(key: tuple, level: Any) -> pd.DataFrame:
        mask = ex[factor] == level
        for col, v in zip(by, key):
            mask &= ex[col] == v
        return ex[mask]
    said = [{"candidate": c, **dict(zip(by, k)), "verdict": CENSORED,
             "bound": censored_bound(side(k, baseline), side(k, c), timeout)}
            for k, c in sorted(censored) if (*k, c) in timed_out]
    return pd.concat([rel, pd.DataFrame(said)], ignore_index=True) if said else rel
