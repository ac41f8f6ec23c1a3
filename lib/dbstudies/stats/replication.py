"""Effects between runs: did a run's answer replicate in another, and what several runs say
together.

A paired run claims *effects* — a candidate's ratio to the baseline per cell — and an effect
measured inside one run cancels what moves both arms between runs (another day, another host).
So runs are compared on their effects, never on their absolute values:

- `replication_table`: per comparison × cell, the original's effect and the replication's, the
  ratio of the two (a ratio of ratios) with its CI from the two runs' own standard errors
  (Welch–Satterthwaite degrees of freedom), its p-value Holm-corrected across the table, and a
  word (`replication_word`): *replicated*, *consistent, not decisive*, *not replicated*;
- `pooled_table`: per comparison × cell, the random-effects estimate over several runs
  (Paule–Mandel's between-run variance, statsmodels' `combine_effects`), its interval, the
  between-run spread τ and I², the test of whether the runs disagree more than their own noise
  explains — for two runs the same Welch t as `replication_table` (so `compare` and `pool`
  name the same cells), for more Cochran's Q —, a verdict by the rule of every table, and the MDE the pooled runs reach.

Each run's effect and standard error are read back from its comparison table (ratio, its CI
and degrees of freedom: `effect_se`), so a table of either design (pairs, or independent
repeats) can be compared.
"""
from __future__ import annotations

import math
from typing import Sequence

import numpy as np
import pandas as pd

from .lazy import sps
from .samples import ALPHA, LEVEL, POWER, THRESHOLD, holm, holm_intervals, verdict

REPLICATED, CONSISTENT, NOT_REPLICATED = "replicated", "consistent, not decisive", "not replicated"
RESIZED = "replicated, size differs"  # both decided the same way, the effects' sizes differ beyond their noise
DECISIVE = ("better", "worse")


def effect_se(table: pd.DataFrame, level: float = LEVEL) -> pd.DataFrame:
    """A comparison table's effects on the log scale: `est` = log(ratio), its standard error
    `se` (from the CI's width and the t quantile of its `df`) and `df`.

    >>> t = effect_se(pd.DataFrame({"ratio": [1.1], "ci_low": [1.0], "ci_high": [1.21], "df": [9.0]}))
    >>> round(float(t["est"][0]), 4), round(float(t["se"][0]), 4)
    (0.0953, 0.0421)
    """
    df = table["df"].to_numpy(float)
    ok = np.isfinite(df) & (df > 0)
    tq = np.where(ok, sps.t.ppf(0.5 + level / 2, np.where(ok, df, 1)), np.nan)
    with np.errstate(divide="ignore", invalid="ignore"):
        width = np.log(table["ci_high"].to_numpy(float)) - np.log(table["ci_low"].to_numpy(float))
        return pd.DataFrame({"est": np.log(table["ratio"].to_numpy(float)), "se": width / (2 * tq), "df": df},
                            index=table.index)


def welch_df(se_a: np.ndarray, df_a: np.ndarray, se_b: np.ndarray, df_b: np.ndarray) -> np.ndarray:
    """Welch–Satterthwaite degrees of freedom of a difference of two estimates.

    >>> float(welch_df(np.array([0.1]), np.array([9.0]), np.array([0.1]), np.array([9.0]))[0])
    18.0
    """
    va, vb = se_a ** 2, se_b ** 2
    with np.errstate(divide="ignore", invalid="ignore"):
        return (va + vb) ** 2 / (va ** 2 / df_a + vb ** 2 / df_b)


def replication_word(original: str, replica: str, p_holm: float, alpha: float = ALPHA) -> str:
    """The word for one cell: *replicated* when both runs decided the same way — *replicated,
    size differs* where the two effects differ beyond their noise (the ratio of ratios' Holm p
    < α: the direction held, the size did not); *not replicated* when the verdicts are
    opposite, or the effects differ beyond their noise without both runs deciding the same
    way; else *consistent, not decisive* (a draw in one or both, the effects not shown to differ).

    >>> replication_word("better", "better", 0.6), replication_word("better", "draw", 0.3)
    ('replicated', 'consistent, not decisive')
    >>> replication_word("better", "worse", 0.2), replication_word("draw", "draw", 0.001)
    ('not replicated', 'not replicated')
    >>> replication_word("worse", "worse", 0.001)
    'replicated, size differs'
    """
    if original in DECISIVE and replica in DECISIVE and original != replica:
        return NOT_REPLICATED
    if original in DECISIVE and original == replica:
        return RESIZED if p_holm < alpha else REPLICATED
    return NOT_REPLICATED if p_holm < alpha else CONSISTENT


def _mde_pct(se: np.ndarray, dof: np.ndarray, m: int, alpha: float) -> np.ndarray:
    """The smallest change of effect each row could show, in %: 80 % power, Holm's first step
    over `m` rows (NaN where a row has no degrees of freedom)."""
    with np.errstate(invalid="ignore"):
        z = sps.t.ppf(1 - alpha / (2 * m), dof) + sps.t.ppf(POWER, dof)
    return np.expm1(z * se) * 100


def replication_table(original: pd.DataFrame, replica: pd.DataFrame, keys: Sequence[str], *,
                      alpha: float = ALPHA, level: float = LEVEL) -> pd.DataFrame:
    """Per row of `keys` (comparison × cell) the two runs have in common: each run's effect
    (`delta_pct_original`, `delta_pct_replica`, with their CIs and verdicts as their tables
    said them), the ratio of the replication's ratio to the original's (`ratio_of_ratios`,
    with a t CI on Welch–Satterthwaite df), its p and Holm p across the table, the smallest
    change of the effect the two runs could show (`mde_pct`, 80 % power, Holm's first step),
    and the word.

    >>> a = pd.DataFrame({"cell": [1, 2], "ratio": [1.2, 1.0], "ci_low": [1.1, 0.95], "ci_high": [1.31, 1.05],
    ...                   "df": [15.0, 15.0], "verdict": ["better", "draw"]})
    >>> b = a.assign(ratio=[1.19, 1.3], ci_low=[1.09, 1.2], ci_high=[1.3, 1.41], verdict=["better", "better"])
    >>> replication_table(a, b, ["cell"])["word"].tolist()
    ['replicated', 'not replicated']
    """
    keys = list(keys)
    ea = pd.concat([original[keys + ["verdict", "ratio", "ci_low", "ci_high"]], effect_se(original, level)], axis=1)
    eb = pd.concat([replica[keys + ["verdict", "ratio", "ci_low", "ci_high"]], effect_se(replica, level)], axis=1)
    both = ea.merge(eb, on=keys, suffixes=("_original", "_replica"))
    if both.empty:
        return both
    se_a, se_b = both["se_original"].to_numpy(float), both["se_replica"].to_numpy(float)
    df = welch_df(se_a, both["df_original"].to_numpy(float), se_b, both["df_replica"].to_numpy(float))
    delta = both["est_replica"].to_numpy(float) - both["est_original"].to_numpy(float)
    se = np.hypot(se_a, se_b)
    ok = np.isfinite(se) & (se > 0) & np.isfinite(df) & (df > 0)
    dof = np.where(ok, df, 1.0)
    tq = np.where(ok, sps.t.ppf(0.5 + level / 2, dof), np.nan)
    with np.errstate(divide="ignore", invalid="ignore"):
        p = np.where(ok, 2 * sps.t.sf(np.abs(delta / se), dof), np.nan)
    out = both.assign(delta_pct_original=np.expm1(both["est_original"]) * 100,
                      delta_pct_replica=np.expm1(both["est_replica"]) * 100,
                      ratio_of_ratios=np.exp(delta), rr_ci_low=np.exp(delta - tq * se),
                      rr_ci_high=np.exp(delta + tq * se), df=np.where(ok, df, np.nan), p_value=p)
    out["p_holm"] = holm(out["p_value"])
    out["mde_pct"] = _mde_pct(se, np.where(ok, dof, np.nan), max(int(np.isfinite(p).sum()), 1), alpha)
    out["word"] = [replication_word(a, b, q if np.isfinite(q) else 1.0, alpha)
                   for a, b, q in zip(out["verdict_original"], out["verdict_replica"], out["p_holm"])]
    return _holm_ratio(out, alpha, level).drop(columns=["est_original", "est_replica"])


def _holm_ratio(out: pd.DataFrame, alpha: float, level: float) -> pd.DataFrame:
    """The ratio of the effects' CI widened to the level Holm tests each row at
    (`rr_holm_low`, `rr_holm_high`, `holm_intervals`): it excludes 1 exactly where the word
    says the runs differ."""
    held = holm_intervals(pd.DataFrame({"ratio": out["ratio_of_ratios"], "ci_low": out["rr_ci_low"],
                                        "ci_high": out["rr_ci_high"], "p_value": out["p_value"],
                                        "df": out["df"]}), alpha=alpha, level=level)
    return out.assign(rr_holm_low=held["holm_ci_low"], rr_holm_high=held["holm_ci_high"])


def i_squared(q: float, k: int) -> float:
    """Higgins' I²: the share of the spread of k estimates beyond what their own noise
    explains, max(0, (Q − (k − 1)) / Q).

    >>> i_squared(10.0, 3), i_squared(1.0, 3)
    (0.8, 0.0)
    """
    return max(0.0, (q - (k - 1)) / q) if q > 0 else 0.0


def pooled_mde(se: float, m: int, *, alpha: float = ALPHA, power: float = POWER) -> float:
    """The smallest true difference (a fraction) a normal estimate with standard error `se`
    finds with `power`, in a Holm family of `m` (its first step, α/m).

    >>> round(pooled_mde(0.02, 4), 3)
    0.069
    """
    if not (np.isfinite(se) and se > 0 and m >= 1):
        return math.nan
    return math.expm1((sps.norm.ppf(1 - alpha / (2 * m)) + sps.norm.ppf(power)) * se)


def _two_runs_p(g: pd.DataFrame) -> float:
    """Whether two runs' effects differ: the Welch t of `replication_table` on their log
    effects (`est`, `se`, `df`), not Cochran's z — one test for "the runs disagree"."""
    (ea, eb), (sa, sb), (da, db) = g["est"].to_numpy(float), g["se"].to_numpy(float), g["df"].to_numpy(float)
    se = math.hypot(sa, sb)
    df = float(welch_df(np.array([sa]), np.array([da]), np.array([sb]), np.array([db]))[0])
    if not (se > 0 and df > 0 and math.isfinite(df)):
        return float(sps.chi2.sf((ea - eb) ** 2 / se ** 2, 1)) if se > 0 else math.nan
    return float(2 * sps.t.sf(abs(eb - ea) / se, df))


def _pooled_row(g: pd.DataFrame) -> dict[str, float]:
    """One row's runs (their effects `est` and standard errors `se`) pooled by random effects:
    the estimate, its standard error, τ², I², Cochran's Q and its p-value."""
    from statsmodels.stats.meta_analysis import combine_effects  # statsmodels imports slowly

    res = combine_effects(g["est"].to_numpy(), g["se"].to_numpy() ** 2, method_re="iterated")
    k, q = len(g), float(res.q)
    return {"runs": k, "est": float(res.mean_effect_re), "se": float(res.sd_eff_w_re), "tau2": float(res.tau2),
            "i2": i_squared(q, k), "q": q, "p_het": _two_runs_p(g) if k == 2 else float(sps.chi2.sf(q, k - 1)),
            "se_runs": float(g["se"].median())}


def pooled_table(tables: Sequence[pd.DataFrame], keys: Sequence[str], *, threshold: float = THRESHOLD,
                 higher_is_better: bool = True, alpha: float = ALPHA, level: float = LEVEL) -> pd.DataFrame:
    """Per row of `keys` that at least two of the runs' comparison `tables` have: the
    random-effects estimate of the effect over the runs (`ratio`, its CI: normal quantiles,
    the between-run variance τ² by Paule–Mandel), `tau_pct` (τ as a % of the ratio), `i2`,
    Cochran's Q test of homogeneity (`p_het`, Holm-corrected across the table in
    `p_het_holm`), the Holm-corrected verdict by the rule of every table, `mde_pct` (what the
    pooled runs could detect) and `mde_runs_pct`, the median over the runs of what each could
    alone, by the same formula — their ratio is 1/√k for k runs that agree."""
    keys = list(keys)
    long = pd.concat([pd.concat([t[keys].reset_index(drop=True), effect_se(t, level).reset_index(drop=True)],
                                axis=1).assign(run=i) for i, t in enumerate(tables)], ignore_index=True)
    long = long[np.isfinite(long["se"]) & (long["se"] > 0) & np.isfinite(long["est"])]
    out = pd.DataFrame([{**dict(zip(keys, key if isinstance(key, tuple) else (key,))), **_pooled_row(g)}
                        for key, g in long.groupby(keys, sort=True) if len(g) >= 2])
    if out.empty:
        return out
    z = sps.norm.ppf(0.5 + level / 2)
    with np.errstate(divide="ignore", invalid="ignore"):
        p = 2 * sps.norm.sf(np.abs(out["est"] / out["se"]))
    m = len(out)
    out = out.assign(ratio=np.exp(out["est"]), delta_pct=np.expm1(out["est"]) * 100,
                     ci_low=np.exp(out["est"] - z * out["se"]), ci_high=np.exp(out["est"] + z * out["se"]),
                     tau_pct=np.expm1(np.sqrt(out["tau2"])) * 100, p_value=p,
                     mde_pct=[pooled_mde(s, m, alpha=alpha) * 100 for s in out["se"]],
                     mde_runs_pct=[pooled_mde(s, m, alpha=alpha) * 100 for s in out["se_runs"]])
    out["p_holm"] = holm(out["p_value"])
    out["p_het_holm"] = holm(out["p_het"])
    out["verdict"] = [verdict(r, q, higher_is_better=higher_is_better, threshold=threshold, alpha=alpha)
                      for r, q in zip(out["ratio"], out["p_holm"])]
    return out.drop(columns=["est", "se_runs"])
