"""Which functions' CPU per transaction changed: paired differences per function across
profiled rounds, with intervals and a false-discovery control across functions.

A profile difference (`perf diff`, differential flame graphs) compares one profile with one
profile: a function that moved by chance looks like one that moved for a reason. Here each
profiled round measures a cell on both arms back to back, so every function (or group of
small functions: `analysis.cpu_profiles`) has one paired difference per round, d = its
candidate µs per transaction − its baseline µs; across rounds:

- a one-sample t on the differences, each unit's variance **moderated** across the cell's
  units (`stats.paired.moderated`: Smyth's empirical-Bayes prior, never shrunk below the
  unit's own) on the *dispersion* scale — variance ÷ the unit's mean µs, which sampling
  noise (Poisson: variance ∝ mean) makes alike across units, where raw variances span
  orders of magnitude;
- its 95 % interval (unadjusted: per unit), its p and the **Benjamini–Hochberg** q across
  the cell's units; a unit is flagged when q ≤ α — in an A/A pair, where every null is true,
  that is a chance of α that any unit is flagged (tests/test_profile_stats.py simulates it);
- its minimum detectable change: 80 % power at α ÷ m (what a lone change must reach, BH's
  strictest step), in µs and as a fraction of the unit's baseline.

>>> rng = np.random.default_rng(1)
>>> base = rng.poisson([50, 200, 10], size=(8, 3)).astype(float)
>>> cand = rng.poisson([50, 300, 10], size=(8, 3)).astype(float)
>>> t = per_unit(base, cand)
>>> t["flagged"].tolist()
[False, True, False]
"""
from __future__ import annotations

import math

import numpy as np
import pandas as pd

from .lazy import sps
from .paired import moderated
from .samples import ALPHA, LEVEL, POWER

UNIT_COLUMNS = ["baseline", "candidate", "change", "lo", "hi", "p", "q", "flagged", "mde", "mde_frac",
                "rounds", "df"]


def bh(p: np.ndarray) -> np.ndarray:
    """Benjamini–Hochberg adjusted p-values (q), NaN where p is.

    >>> bh(np.array([0.01, 0.04, 0.03, np.nan])).round(3).tolist()
    [0.03, 0.04, 0.04, nan]
    """
    p = np.asarray(p, float)
    q = np.full_like(p, np.nan)
    ok = np.isfinite(p)
    m = int(ok.sum())
    if not m:
        return q
    order = np.argsort(p[ok])
    ranked = p[ok][order] * m / np.arange(1, m + 1)
    adjusted = np.minimum.accumulate(ranked[::-1])[::-1].clip(max=1.0)
    out = np.empty(m)
    out[order] = adjusted
    q[ok] = out
    return q


def per_unit(base: np.ndarray, cand: np.ndarray, *, alpha: float = ALPHA, level: float = LEVEL,
             power: float = POWER) -> pd.DataFrame:
    """`base`, `cand`: µs per transaction, one row per round (the pair), one column per unit.
    Per unit: its mean µs in each arm, the mean change with its `level` interval, p, the
    BH q across units, whether it is flagged (q ≤ `alpha`), the change a lone unit could
    show (µs, and as a fraction of its baseline), the rounds and degrees of freedom."""
    base, cand = np.asarray(base, float), np.asarray(cand, float)
    d = cand - base
    n = d.shape[0]
    mean_d = d.mean(axis=0) if n else np.full(d.shape[1], np.nan)
    scale = np.fmax((base.mean(axis=0) + cand.mean(axis=0)) / 2, 1e-12) if n else np.ones(d.shape[1])
    if n >= 2:
        s2 = d.var(axis=0, ddof=1)
        disp, df, _ = moderated(s2 / scale, np.full(d.shape[1], n - 1.0))
        var = disp * scale
    else:
        var, df = np.full(d.shape[1], np.nan), np.zeros(d.shape[1])
    se = np.sqrt(var / max(n, 1))
    with np.errstate(divide="ignore", invalid="ignore"):
        t = np.where(se > 0, mean_d / se, np.where(mean_d == 0, 0.0, np.inf))
        p = np.where(df > 0, 2 * sps.t.sf(np.abs(t), np.where(df > 0, df, 1)), np.nan)
        half = np.where(df > 0, sps.t.ppf(0.5 + level / 2, np.where(df > 0, df, 1)) * se, np.nan)
    q = bh(p)
    m = max(int(np.isfinite(p).sum()), 1)
    with np.errstate(invalid="ignore"):
        z = np.where(df > 0, sps.t.ppf(1 - alpha / (2 * m), np.where(df > 0, df, 1))
                     + sps.t.ppf(power, np.where(df > 0, df, 1)), np.nan)
    mde = z * se
    base_mean = base.mean(axis=0) if n else np.full(d.shape[1], np.nan)
    with np.errstate(divide="ignore", invalid="ignore"):
        frac = np.where(base_mean > 0, mde / base_mean, np.nan)
    return pd.DataFrame({
        "baseline": base_mean, "candidate": cand.mean(axis=0) if n else np.nan, "change": mean_d,
        "lo": mean_d - half, "hi": mean_d + half, "p": p, "q": q, "flagged": np.nan_to_num(q, nan=1.0) <= alpha,
        "mde": mde, "mde_frac": frac, "rounds": n, "df": df})[UNIT_COLUMNS]


def any_flagged_rate(draw, runs: int, rng: np.random.Generator, **kw) -> float:
    """The share of `runs` simulated pairs of arms in which `per_unit` flags any unit:
    `draw(rng)` gives one run's (base, cand) matrices."""
    hits = 0
    for _ in range(runs):
        b, c = draw(rng)
        hits += bool(per_unit(b, c, **kw)["flagged"].any())
    return hits / runs


def mde_rounds(sd_per_round: float, rounds: int, m: int, *, alpha: float = ALPHA, power: float = POWER) -> float:
    """The change a lone unit could show with `rounds` pairs whose differences have SD
    `sd_per_round`, among `m` units (α ÷ m, 80 % power, the unit's own df) — what the
    rounds of a profile buy.

    >>> float(round(mde_rounds(1.0, 8, 40) / mde_rounds(1.0, 4, 40), 2))  # 8 rounds: a third of 4's
    0.33
    """
    if rounds < 2:
        return math.nan
    df = rounds - 1
    return (sps.t.ppf(1 - alpha / (2 * m), df) + sps.t.ppf(power, df)) * sd_per_round / math.sqrt(rounds)
