"""The paired rule (stats.paired_table) on synthetic seeded data with known answers.

A step's log throughput = the round's shared host noise + its own noise: pairing removes the
shared part. The Monte Carlo tests call the functions paired_table is made of (moderated →
t → holm → verdict), checked equal to paired_table below, because a pandas table per draw
would make 1000 tables take a minute.
"""
import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats as sps

from dbstudies import stats


def rule(d, *, moderate=True, threshold=stats.THRESHOLD):
    """Verdicts of one table from its pairs' log differences d[cell, pair] (higher is better)."""
    n = d.shape[1]
    s2, df = d.var(axis=1, ddof=1), np.full(d.shape[0], n - 1.0)
    if moderate:
        s2, df, _ = stats.moderated(s2, df)
    se = np.sqrt(s2 / n)
    p = 2 * sps.t.sf(np.abs(d.mean(axis=1) / se), df)
    ratios = np.exp(d.mean(axis=1))
    return np.array([stats.verdict(r, q, threshold=threshold) for r, q in zip(ratios, stats.holm(p))])


def pairs(rng, tables, cells, n, ratio=1.0, sd_own=0.10, sd_round=0.13, cell_sds=None):
    """Log differences of (tables, cells, n) pairs: each side has the round's shared noise
    (cancels) and its own; `cell_sds` scales the own noise per cell (heteroscedastic)."""
    scale = np.ones(cells) if cell_sds is None else np.asarray(cell_sds)
    shared = rng.normal(0, sd_round, (tables, cells, n))
    a = shared + rng.normal(0, sd_own, (tables, cells, n)) * scale[:, None]
    b = shared + rng.normal(0, sd_own, (tables, cells, n)) * scale[:, None] + math.log(ratio)
    return b - a


def as_frame(d):
    """One table's pairs as steps: arm A at 1000·e^0, arm B at 1000·e^d, per cell and round."""
    rows = []
    for c, row in enumerate(d):
        for r, x in enumerate(row):
            rows += [{"cell": c, "arm": "A", "repeat": r, "v": 1000.0},
                     {"cell": c, "arm": "B", "repeat": r, "v": 1000.0 * math.exp(x)}]
    return pd.DataFrame(rows)


def test_paired_table_is_the_rule_above_and_pairs_by_round():
    rng = np.random.default_rng(1)
    d = pairs(rng, 1, 8, 6, ratio=1.15)[0]
    t = stats.paired_table(as_frame(d), by=["cell"], factor="arm", baseline="A",
                           candidates=["B"], value="v")
    assert list(t.columns) == ["candidate", "cell", *stats.PAIRED_COLUMNS]
    assert t["verdict"].tolist() == rule(d).tolist()
    assert np.allclose(t["ratio"], np.exp(d.mean(axis=1)))
    assert (t["n_baseline"] == 6).all() and (t["prior_df"] > 0).all() and stats.is_paired_table(t)
    # shuffling the rows changes nothing: pairs are matched by round, not by position
    shuffled = as_frame(d).sample(frac=1, random_state=3)
    t2 = stats.paired_table(shuffled, by=["cell"], factor="arm", baseline="A", candidates=["B"], value="v")
    assert np.allclose(t2["ratio"], t["ratio"]) and np.allclose(t2["p_value"], t["p_value"])


def test_a_pair_missing_a_side_is_left_out():
    d = pd.DataFrame({"cell": 0, "arm": ["A", "B", "A", "B", "A"], "repeat": [1, 1, 2, 2, 3],
                      "v": [100.0, 110, 100, 112, 100]})
    t = stats.paired_table(d, by=["cell"], factor="arm", baseline="A", candidates=["B"], value="v")
    assert t["n_baseline"].tolist() == [2]


def test_paired_a_a_tables_with_any_non_draw_are_at_most_5_percent():
    """The thread-pool quick design: 8 cells, 16 rounds, the noise measured here (shared
    host noise 0.13, own 0.10: SD of a pair's difference ≈ 0.14)."""
    rng = np.random.default_rng(2)
    d = pairs(rng, 1000, 8, 16)
    assert np.mean([(rule(t) != "draw").any() for t in d]) <= 0.05


@pytest.mark.parametrize("n, spread", [(3, 2), (5, 2), (3, 4), (5, 4)])
def test_paired_a_a_with_unequal_cells_and_few_pairs_stays_at_most_5_percent(n, spread):
    """DBT3-like: 22 cells whose noise differs 2× or 4× (SD), 3 or 5 pairs each: the
    moderated variance must not lend the noisiest cells the quiet ones' luck (limma's own
    posterior had 6–8 % here; `stats.moderated`)."""
    rng = np.random.default_rng(3)
    sds = np.linspace(1, spread, 22)
    d = pairs(rng, 1000, 22, n, sd_own=0.05, sd_round=0.0, cell_sds=sds)
    assert np.mean([(rule(t) != "draw").any() for t in d]) <= 0.05


def test_pairing_finds_what_blocks_cannot_at_the_same_cost():
    """+15 % with the noise measured here: the paired rule finds it in most cells of a
    16-round table, the unpaired rule on the same steps in few (DESIGN §6)."""
    rng = np.random.default_rng(4)
    shape = (200, 8, 16)
    shared = rng.normal(0, 0.13, shape)
    a = shared + rng.normal(0, 0.10, shape)
    b = shared + rng.normal(0, 0.10, shape) + math.log(1.15)
    paired = np.array([rule(x) for x in b - a])
    unpaired = []
    for ta, tb in zip(a, b):
        rows = [stats.log_t(np.exp(x), np.exp(y)) for x, y in zip(ta, tb)]
        p = stats.holm([r["p_value"] for r in rows])
        unpaired.append([stats.verdict(r["ratio"], q) for r, q in zip(rows, p)])
    assert (paired == "better").mean() >= 0.8
    assert (np.array(unpaired) == "better").mean() <= 0.5
    assert (paired == "worse").sum() == 0


def test_moderation_lends_power_to_tables_with_few_pairs():
    """3 pairs per cell, 22 cells, +20 % everywhere, SD of a difference 0.08: with its own
    2 degrees of freedom a cell can hardly reach p < 0.05/22; with the prior, mostly."""
    rng = np.random.default_rng(5)
    d = pairs(rng, 300, 22, 3, ratio=1.2, sd_own=0.055, sd_round=0.0)
    own = np.array([rule(t, moderate=False) for t in d])
    pooled = np.array([rule(t) for t in d])
    assert (own == "better").mean() <= 0.1
    assert (pooled == "better").mean() >= 0.5  # ≈ 56–62 %


def test_the_paired_ci_covers_the_true_ratio_93_to_97_percent():
    rng = np.random.default_rng(6)
    d = pairs(rng, 300, 8, 10, ratio=1.1)
    hits = []
    for t in d:
        s2, df, _ = stats.moderated(t.var(axis=1, ddof=1), np.full(8, 9.0))
        half = sps.t.ppf(0.975, df) * np.sqrt(s2 / 10)
        m = t.mean(axis=1)
        hits += list((m - half <= math.log(1.1)) & (math.log(1.1) <= m + half))
    assert 0.93 <= np.mean(hits) <= 0.97


def test_variance_prior_recovers_a_known_prior():
    """Cell variances drawn from s0² = 0.02 with d0 = 8, each seen on 4 df: the fit finds
    them back (d0 loosely: it is a shape parameter)."""
    rng = np.random.default_rng(7)
    true = 0.02 * 8 / rng.chisquare(8, 4000)
    seen = true * rng.chisquare(4, 4000) / 4
    d0, s0 = stats.variance_prior(seen, np.full(4000, 4.0))
    assert abs(s0 - 0.02) / 0.02 < 0.1 and 5 < d0 < 13
    assert stats.variance_prior([0.1, 0.2], [3, 3]) == (0.0, pytest.approx(math.nan, nan_ok=True))


def test_signed_rank_ci_has_the_coverage_it_is_labelled_with():
    rng = np.random.default_rng(8)
    hits, levels = [], set()
    for _ in range(2000):
        d = rng.normal(math.log(1.1), 0.1, 8)
        _, lo, hi, level = stats.signed_rank_ratio_ci(d)
        hits.append(lo <= 1.1 <= hi)
        levels.add(round(level, 4))
    assert len(levels) == 1
    assert abs(np.mean(hits) - levels.pop()) <= 0.015
    assert stats.signed_rank_counts(10).sum() == 2 ** 10


def test_paired_mde_is_what_the_rule_detects_80_percent_of_the_time():
    n, m, sd = 12, 6, 0.12
    effect = stats.paired_mde(sd, n, m=m)
    rng = np.random.default_rng(9)
    d = rng.normal(math.log1p(effect), sd, (3000, n))
    p = 2 * sps.t.sf(np.abs(d.mean(axis=1) / (d.std(axis=1, ddof=1) / math.sqrt(n))), n - 1)
    found = ((p < 0.05 / m) & (np.exp(d.mean(axis=1)) - 1 >= stats.THRESHOLD)).mean()
    assert 0.75 <= found <= 0.85
    assert stats.paired_mde(0.001, 12, m=6) == stats.THRESHOLD
    assert math.isnan(stats.paired_mde(0.1, 1))


def test_a_covariate_takes_out_the_noise_it_explains_and_keeps_the_mean():
    rng = np.random.default_rng(5)
    x = rng.normal(2.0, 1.0, 40)                      # e.g. a difference in waiting, moved by the arms (mean 2)
    d = 0.05 + 0.03 * x + rng.normal(0, 0.01, 40)    # log ratios: an effect, the covariate's part, noise
    r = stats.covariate_adjusted(d, x)
    assert r["mean"] == pytest.approx(d.mean()) and r["beta"] == pytest.approx(0.03, abs=0.005)
    assert r["sd_adjusted"] == pytest.approx(0.01, rel=0.3) and r["ratio"] < 0.5
    assert r["at_zero"] == pytest.approx(0.05, abs=0.01)  # adjusting to no difference: the covariate's part gone
    assert np.isnan(stats.covariate_adjusted(d[:3], x[:3])["beta"])  # too few pairs to fit
