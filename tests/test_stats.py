"""Statistics on synthetic seeded data with known answers."""
import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats as sps

from dbstudies import stats


def normal(mean, sd, n, seed):
    return np.random.default_rng(seed).normal(mean, sd, n)


def test_median_ci_order_statistics_and_coverage():
    lo, hi, cov = stats.median_ci(range(1, 11))
    assert (lo, hi) == (2.0, 9.0)
    assert cov == pytest.approx(1 - 2 * sps.binom.cdf(1, 10, 0.5))
    assert cov >= 0.95
    # n=5 cannot reach 95 %: [min, max] with its honest, lower coverage
    assert stats.median_ci([5, 1, 4, 2, 3]) == (1.0, 5.0, pytest.approx(1 - 2 / 32))
    assert math.isnan(stats.median_ci([])[0])


def test_median_ci_covers_true_median_about_95_percent():
    rng = np.random.default_rng(7)
    hits = sum(lo <= 0 <= hi for lo, hi, _ in
               (stats.median_ci(rng.standard_normal(25)) for _ in range(400)))
    assert 0.93 <= hits / 400 <= 1.0


def test_summarize_groups():
    df = pd.DataFrame({"cfg": ["a"] * 5 + ["b"] * 5, "v": [1, 2, 3, 4, 5, 10, 20, 30, 40, 50]})
    s = stats.summarize(df, ["cfg"], "v").set_index("cfg")
    assert s.loc["a", "median"] == 3 and s.loc["b", "median"] == 30
    assert (s.loc["b", "min"], s.loc["b", "max"]) == (10, 50)
    assert s.loc["a", "iqr"] == 2 and s.loc["a", "n"] == 5


def test_holm_known_values():
    assert stats.holm([0.01, 0.04, 0.03]).round(6).tolist() == [0.03, 0.06, 0.06]
    assert stats.holm([0.5, 0.001]).tolist() == [0.5, 0.002]
    out = stats.holm([0.02, np.nan])
    assert out[0] == 0.02 and np.isnan(out[1])


def test_clear_improvement_is_better_with_ci_around_truth():
    a, b = normal(1000, 20, 10, 1), normal(1200, 24, 10, 2)
    r = stats.compare(a, b)
    assert r["verdict"] == "better"
    assert r["p_value"] < 0.001
    assert r["ci_low"] < 1.2 < r["ci_high"] and r["ci_low"] > 1.1
    assert stats.compare(b, a)["verdict"] == "worse"


def test_lower_is_better_flips_the_verdict():
    a, b = normal(10, 0.2, 8, 3), normal(8, 0.2, 8, 4)  # latency dropped by 20 %
    assert stats.compare(a, b, higher_is_better=False)["verdict"] == "better"
    assert stats.compare(a, b)["verdict"] == "worse"


def test_a_a_comparison_is_a_draw():
    a, b = normal(1000, 30, 5, 11), normal(1000, 30, 5, 12)  # same configuration twice
    assert stats.compare(a, b)["verdict"] == "draw"


def test_a_a_false_positive_rate_is_low():
    # noisy A/A (10 % sd, 6 vs 6): the exact test's level is 4.1 %; allow sampling error
    rng = np.random.default_rng(5)
    calls = [stats.compare(rng.normal(100, 10, 6), rng.normal(100, 10, 6), n_boot=50)["verdict"]
             for _ in range(600)]
    assert 1 - calls.count("draw") / len(calls) <= 0.07


def test_small_but_significant_difference_is_a_draw():
    a, b = normal(1000, 1, 10, 21), normal(1030, 1, 10, 22)  # +3 %, p tiny
    r = stats.compare(a, b)
    assert r["p_value"] < 0.001 and r["verdict"] == "draw"
    assert stats.compare(a, b, threshold=0.01)["verdict"] == "better"


def test_three_repeats_can_never_be_significant():
    assert stats.min_p_value(3, 3) == pytest.approx(0.1)
    r = stats.compare([100, 101, 102], [200, 201, 202])
    assert r["p_value"] == pytest.approx(0.1) and r["verdict"] == "draw"
    assert stats.min_p_value(5, 5) < 0.01


def test_bootstrap_is_seeded():
    a, b = normal(10, 1, 7, 1), normal(11, 1, 7, 2)
    assert stats.bootstrap_ratio_ci(a, b, seed=3) == stats.bootstrap_ratio_ci(a, b, seed=3)


def test_compare_table_applies_holm_to_verdicts():
    rows = []
    for g, shift in (("x", 1.5), ("y", 1.0), ("z", 1.08)):
        for cfg, mult in (("base", 1.0), ("cand", shift)):
            for v in normal(100 * mult, 1, 4, seed=len(rows)):
                rows.append({"g": g, "cfg": cfg, "v": v})
    t = stats.compare_table(pd.DataFrame(rows), by=["g"], factor="cfg", baseline="base",
                            candidate="cand", value="v").set_index("g")
    # 4 vs 4: uncorrected p = 0.0286 < 0.05, but Holm over 3 rows lifts it above 0.05
    assert t.loc["x", "p_value"] == pytest.approx(2 / 70)
    assert t.loc["x", "p_holm"] > 0.05
    assert set(t["verdict"]) == {"draw"}
    assert t.loc["x", "ratio"] == pytest.approx(1.5, rel=0.05)
    assert list(t.columns[-3:]) == ["p_value", "p_holm", "verdict"]
