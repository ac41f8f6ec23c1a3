"""Steady state and stalls on synthetic per-second series with known ramps, known stalls and
pure noise (timeseries.py); seeded, no server."""
import numpy as np
import pytest

from dbstudies.analysis import timeseries as ts

SEEDS = range(200)


def noisy(level, n, cv, seed):
    rng = np.random.default_rng(seed)
    return level * rng.lognormal(0, cv, n)


def test_pure_noise_has_no_stall_and_is_steady_from_the_start():
    found = [ts.summarise(noisy(1000, 300, 0.10, s)) for s in SEEDS]
    assert all(f["stalls"] == 0 and f["stall_seconds"] == 0 for f in found)
    assert all(f["steady"] for f in found)
    assert max(f["steady_from_s"] for f in found) <= ts.window(300)
    assert np.median([f["cv_tps"] for f in found]) == pytest.approx(0.10, rel=0.1)


@pytest.mark.parametrize("cv", [0.05, 0.15])
def test_known_stalls_are_found_exactly(cv):
    for seed in SEEDS:
        x = noisy(1000, 300, cv, seed)
        x[100:104] = [50, 0, 10, 80]
        x[200:210] = 100 * np.ones(10)
        s = ts.summarise(x)
        assert (s["stalls"], s["stall_seconds"], s["longest_stall_s"]) == (2, 14, 10), seed
        assert s["worst_dip"] == pytest.approx(0 / s["median_tps"])
        mask = ts.stall_mask(x)
        assert mask.sum() == 14 and mask[100:104].all() and mask[200:210].all()


@pytest.mark.parametrize("start, end", [(200.0, 1000.0), (2500.0, 1000.0)])
def test_a_known_ramp_up_or_down_is_detected_near_its_end(start, end):
    """A 120-s ramp (buffer pool warming: rising; dirty pages piling up: falling)."""
    got = []
    for seed in SEEDS:
        x = noisy(end, 600, 0.08, seed)
        x[:120] *= np.linspace(start / end, 1, 120)
        got.append(ts.steady_state(x))
    assert all(g is not None for g in got)
    # within 10 % of the final level: the ramp's last ~15 s (down) or ~15 s (up) qualify
    assert 95 <= np.percentile(got, 5) and np.percentile(got, 95) <= 125, np.percentile(got, [5, 95])


def test_periodic_checkpoint_stalls_after_a_ramp_are_counted_not_cut_away():
    x = noisy(1000, 600, 0.08, 7)
    x[:60] *= np.linspace(0.3, 1, 60)
    for t in range(120, 600, 90):  # a 6-s stall every 90 s, the first one 60 s after the ramp
        x[t:t + 6] = 30
    s = ts.summarise(x)
    assert 45 <= s["steady_from_s"] <= 65
    assert (s["stalls"], s["stall_seconds"], s["longest_stall_s"]) == (6, 36, 6)


def test_a_series_still_rising_at_the_end_never_reached_steady_state():
    x = noisy(1, 900, 0.05, 3) * np.linspace(300, 1000, 900)
    s = ts.summarise(x)
    assert s["steady"] is False and s["steady_from_s"] is None
    assert s["seconds"] == 900 and s["median_tps"] > np.median(x)  # from its first crossing on


def test_a_short_noisy_steady_run_is_not_called_drifting():
    """60 s at 20 % per-second noise (as measured here under write load): the thirds'
    medians differ by more than 10 % by chance in about a fifth of runs."""
    found = [ts.summarise(noisy(5000, 60, 0.20, s)) for s in SEEDS]
    assert np.mean([f["steady"] for f in found]) >= 0.97
    assert np.mean([f["stalls"] == 0 for f in found]) >= 0.95


def test_held_rate_p99_and_bytes_per_transaction():
    x = np.full(100, 1000.0)
    x[10] = 600.0  # one dip in 100 s: 99 % of seconds hold ≈ the steady rate
    p99 = np.full(100, 5.0)
    p99[50] = 250.0
    s = ts.summarise(x, p99, written_bytes=np.full(100, 2 ** 20))
    assert s["median_tps"] == 1000 and s["p01_tps"] == pytest.approx(600 + 0.99 * 400)
    assert s["worst_p99_ms"] == 250 and s["worst_dip"] == pytest.approx(0.6) and s["stalls"] == 0
    assert s["kb_per_txn"] == pytest.approx(100 * 2 ** 20 / (99 * 1000 + 600) / 1024)


def test_short_and_empty_series():
    assert ts.steady_state([]) is None and ts.steady_state([5, 6, 7]) == 0
    assert ts.stalls([], 1) == []
