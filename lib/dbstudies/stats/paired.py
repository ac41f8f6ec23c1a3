"""Paired samples: per-pair log ratios, the signed-rank robustness columns, variances
moderated across a table's cells, paired tables and the rule judged on resampled A/A rounds."""
from __future__ import annotations

import functools
import math
from typing import Any, Sequence

import numpy as np
import pandas as pd

from .lazy import spf, sps
from .samples import (
    ALPHA,
    COMPARE_COLUMNS,
    LEVEL,
    POWER,
    THRESHOLD,
    cv,
    holm,
    holm_intervals,
    verdict,
)

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


PAIRED_COLUMNS = [*COMPARE_COLUMNS, "sd_diff", "sd_own", "df", "prior_df"]


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
    `prior_df` says how many degrees of freedom the other cells lent, 0 when none; `sd_own`:
    the cell's own standard deviation, before);
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
    out["sd_own"] = np.sqrt(s2)  # the cell's own, unmoderated: what the loop's precision reads (`about_zero`)
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
    out = holm_intervals(out, alpha=alpha, level=level)
    out["verdict"] = [verdict(r, q, higher_is_better=higher_is_better, threshold=threshold,
                              alpha=alpha) for r, q in zip(out["ratio"], out["p_holm"])]
    m = max(int(out["p_value"].notna().sum()), 1)
    out["mde_pct"] = [paired_mde(sd, int(k), m, f, alpha=alpha, threshold=threshold) * 100
                      for sd, k, f in zip(out["sd_diff"], out["n_baseline"], out["df"])]
    return out[columns]


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


def rule_on_resamples(d: np.ndarray, m: int, *, shifts: Sequence[float] = (0.0, 0.10, 0.20),
                      draws: int = 1000, seed: int = 0, threshold: float = THRESHOLD,
                      alpha: float = ALPHA) -> pd.DataFrame:
    """The paired rule judged on real noise: `d[round, cell]` holds A/A log differences (the
    baseline against its twin). In an A/A pair the two labels are exchangeable, so each draw
    swaps them at random round by round (`flips`: the sign of a whole round's differences, its
    cells together — what they share stays shared), adds log(1 + shift) and applies the rule
    with a Holm family of `m`: a randomization test of the rule. (Resampling rounds *with
    replacement* instead repeats pairs, which shrinks the variance a t sees: 7–10 % false
    positives per table on a 16-round run where sign flips give 3 %.) Per shift: the share
    of tables with any non-draw (at 0: the empirical false-positive rate per table), and of
    cells called better (the empirical power) and worse.

    >>> rng = np.random.default_rng(1)
    >>> c = rule_on_resamples(rng.normal(0, 0.1, (16, 8)), m=8, draws=200)
    >>> c["shift_pct"].tolist(), bool(c["tables_any_verdict"].iloc[0] <= 0.1), bool(c["cells_better"].iloc[2] > 0.9)
    ([0.0, 10.0, 20.0], True, True)
    """
    rng = np.random.default_rng(seed)
    rows = []
    for shift in shifts:
        anyv = better = worse = 0
        for _ in range(draws):
            v = paired_verdicts(d * flips(rng, len(d))[:, None] + math.log1p(shift), m,
                                threshold=threshold, alpha=alpha)
            anyv += bool((v != "draw").any())
            better += int((v == "better").sum())
            worse += int((v == "worse").sum())
        cells = draws * d.shape[1]
        rows.append({"shift_pct": shift * 100, "tables_any_verdict": anyv / draws,
                     "cells_better": better / cells, "cells_worse": worse / cells})
    return pd.DataFrame(rows)


def flips(rng: np.random.Generator, n: int) -> np.ndarray:
    """n random signs, ±1: an A/A pair's labels swapped or not (its log difference negated)."""
    return rng.choice(np.array([-1.0, 1.0]), size=n)




def covariate_adjusted(d: Sequence[float], x: Sequence[float]) -> dict[str, float]:
    """Paired differences `d` adjusted for a per-pair covariate `x` (its difference between
    the pair's steps) by least squares on x centred at its mean: the mean stays mean(d), the
    spread falls by what x explains. Returns n, mean, sd (d's own), beta, sd_adjusted (the
    residuals', on n − 2 df), the ratio of the two and — what adjusting to no difference in x
    would estimate instead — `at_zero`, mean(d) − beta·mean(x): where x moves with the arms,
    that takes the effect with it.

    >>> r = covariate_adjusted([0.1, 0.3, 0.2, 0.4], [1.0, 3.0, 2.0, 4.0])
    >>> round(r["sd_adjusted"], 6), round(r["at_zero"], 6)
    (0.0, 0.0)
    """
    d, x = np.asarray(d, float), np.asarray(x, float)
    ok = np.isfinite(d) & np.isfinite(x)
    d, x = d[ok], x[ok]
    n = len(d)
    out = {"n": float(n), "mean": float(d.mean()) if n else math.nan, "sd": float(d.std(ddof=1)) if n > 1 else math.nan,
           "beta": math.nan, "sd_adjusted": math.nan, "ratio": math.nan, "at_zero": math.nan}
    xc = x - x.mean() if n else x
    if n < 4 or not (xc ** 2).sum() > 0:
        return out
    beta = float((xc * (d - d.mean())).sum() / (xc ** 2).sum())
    resid = d - d.mean() - beta * xc
    sd_adj = float(math.sqrt((resid ** 2).sum() / (n - 2)))
    return {**out, "beta": beta, "sd_adjusted": sd_adj, "ratio": sd_adj / out["sd"] if out["sd"] > 0 else math.nan,
            "at_zero": out["mean"] - beta * float(x.mean())}
