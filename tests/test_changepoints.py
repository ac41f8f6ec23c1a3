"""Change points in a series of paired effects (`stats.changepoints`), on series simulated from
this host's recorded noise: the 16 QPS log ratios of an A/A pair of servers (MariaDB 10.11
against a copy, oltp_point_select at 16 threads, 3-s steps; SD 0.104), resampled into the
pairs each build's run would measure."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from dbstudies.stats import changepoints

AA = np.loadtxt(Path(__file__).parent / "fixtures" / "series" / "aa-pairs.txt")
BUILDS = [f"b{i}" for i in range(1, 9)]
QUICK_PAIRS = 55  # the history's quick target, an MDE of 4 % (2.8 SE), at this noise: (2.8 × 0.104 / 0.04)² ≈ 53


def series(rng, step_pct: float = 0.0, at: int = 4, pairs: int = QUICK_PAIRS, cells: int = 1):
    """8 builds' effects against the reference (log) and their SEs; from build `at` on, a step."""
    shift = np.where(np.arange(len(BUILDS))[:, None, None] >= at, np.log1p(step_pct / 100), 0.0)
    x = rng.choice(AA - AA.mean(), (len(BUILDS), cells, pairs)) + shift
    return x.mean(axis=2), x.std(axis=2, ddof=1) / np.sqrt(pairs)


def kept(y, se, cells=("point_select@16",)):
    return [c for c in changepoints.find(y, se, BUILDS, list(cells))["changes"] if c["kept"]]


def test_all_equal_series_show_a_change_point_in_at_most_5_percent():
    rng = np.random.default_rng(11)
    rate = np.mean([bool(kept(*series(rng))) for _ in range(1000)])
    print(f"all-equal series with a change point: {rate:.1%}")
    assert rate <= 0.05


def test_a_5_percent_step_is_found_at_its_build_in_80_percent_at_the_quick_precision():
    rng = np.random.default_rng(12)
    hits = 0
    for _ in range(1000):
        found = kept(*series(rng, -5.0))
        hits += len(found) == 1 and found[0]["after"] == "b4" and found[0]["before"] == "b5"
    print(f"a −5 % step between b4 and b5, found there alone: {hits / 10:.1f} %")
    assert hits / 1000 >= 0.80


def test_a_change_point_has_its_size_with_an_interval_and_the_quiet_places_what_they_could_see():
    rng = np.random.default_rng(13)
    y, se = series(rng, -10.0, at=6)
    found = changepoints.find(y, se, BUILDS, ["point_select@16"])
    (change,) = [c for c in found["changes"] if c["kept"]]
    step = change["steps"][0]
    assert (change["after"], change["before"]) == ("b6", "b7") and step["lo"] < -10 < step["hi"] and step["moved"] == -1
    assert len(found["quiet"]) == 6 and all(0 < q["mde_pct"]["point_select@16"] < 25 for q in found["quiet"])


def test_two_cells_must_move_together_for_a_change_to_count():
    rng = np.random.default_rng(14)
    y, se = series(rng, 0.0, cells=2)
    y[4:, 0] += np.log(0.85)  # only the first cell steps, −15 %
    found = changepoints.find(y, se, BUILDS, ["a", "b"])
    (change,) = found["changes"]
    assert not change["kept"] and change["together"] == 1
    y[4:, 1] += np.log(0.9)   # now the second too
    (change,) = changepoints.find(y, se, BUILDS, ["a", "b"])["changes"]
    assert change["kept"] and change["together"] == 2


def test_the_spread_between_runs_their_intervals_miss_is_estimated_and_widens_the_step():
    rng = np.random.default_rng(15)
    y, se = series(rng, -10.0, pairs=20)
    y = y + rng.normal(0, 0.04, y.shape)  # drift between runs, beyond each run's own interval
    found = changepoints.find(y, se, BUILDS, ["c"])
    assert found["tau2"]["c"] > 0
    assert changepoints.penalty(8, 1) == pytest.approx(7.4, abs=0.3)  # χ²₁ at 1 − 0.05 ÷ 7

