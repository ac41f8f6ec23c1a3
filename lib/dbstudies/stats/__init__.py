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

from .censored import CENSORED, censored_bound, censored_table
from .paired import (
    PAIRED_COLUMNS,
    _signed_rank_cdf,
    covariate_adjusted,
    flips,
    min_signed_rank_p,
    moderated,
    pair_up,
    paired_mde,
    paired_table,
    paired_verdicts,
    rule_on_resamples,
    signed_rank_counts,
    signed_rank_p,
    signed_rank_ratio_ci,
    trigamma_inverse,
    variance_prior,
)
from .reach import decimals, mde_text, reach_short, reachability
from .replication import (
    CONSISTENT,
    NOT_REPLICATED,
    REPLICATED,
    RESIZED,
    effect_se,
    pooled_table,
    replication_table,
)
from .samples import (
    ALPHA,
    COMPARE_COLUMNS,
    LEVEL,
    NOT_JUDGED,
    POWER,
    THRESHOLD,
    VERDICTS,
    _u_counts,
    compare,
    compare_table,
    cv,
    holm,
    holm_intervals,
    is_paired_table,
    log_t,
    mann_whitney_p,
    mde,
    median_ci,
    min_p_value,
    paired_effect,
    paired_ratio,
    pooled_sd_log,
    rank_ratio_ci,
    summarize,
    verdict,
)
from .stopping import (
    MOST_PAIRS,
    about_zero,
    adaptive_on_resamples,
    bounds_text,
    ragged_verdicts,
    reading_of,
    rounds_for,
    target_readings,
    target_words,
    within,
)

__all__ = ["CONSISTENT", "NOT_REPLICATED", "REPLICATED", "RESIZED", "effect_se", "pooled_table", "replication_table", "ALPHA", "MOST_PAIRS", "about_zero", "adaptive_on_resamples", "bounds_text", "ragged_verdicts", "reading_of", "rounds_for", "target_readings", "target_words", "within", "CENSORED", "COMPARE_COLUMNS", "LEVEL", "PAIRED_COLUMNS", "POWER", "THRESHOLD", "NOT_JUDGED", "VERDICTS", "_signed_rank_cdf", "_u_counts", "censored_bound", "censored_table", "compare", "compare_table", "covariate_adjusted", "cv", "decimals", "flips", "holm", "holm_intervals", "is_paired_table", "log_t", "mann_whitney_p", "mde", "mde_text", "median_ci", "min_p_value", "min_signed_rank_p", "moderated", "pair_up", "paired_effect", "paired_mde", "paired_ratio", "paired_table", "paired_verdicts", "pooled_sd_log", "rank_ratio_ci", "reach_short", "reachability", "rule_on_resamples", "signed_rank_counts", "signed_rank_p", "signed_rank_ratio_ci", "summarize", "trigamma_inverse", "variance_prior", "verdict"]
