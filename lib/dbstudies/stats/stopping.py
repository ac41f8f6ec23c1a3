"""Precision targets: how many pairs a cell needs to see a difference of a chosen size, what
a table says of a cell measured to its target — *the same within ±x %*, or *undecided* — and
the adaptive rule judged on resampled real A/A rounds.

A cell is measured until its minimum detectable effect (`paired_mde`, without the draw
threshold's floor) is at most its target: a rule on the cell's *variance*, never on its
estimate, so stopping leaves the test's error rates as they are (docs/statistics.md,
"Measuring to a target"). An interval inside ±target is an equivalence statement — the two
one-sided tests at the table's Holm-adjusted level — and a draw whose cell ended above its
target says how many more pairs it would have needed."""
from __future__ import annotations

import math
from typing import Any, Sequence

import numpy as np
import pandas as pd

from .lazy import sps
from .paired import flips, moderated, paired_mde
from .samples import ALPHA, POWER, THRESHOLD, holm, verdict

MOST_PAIRS = 100_000  # beyond this a target is out of reach (rounds_for: inf)


def rounds_for(sd_diff: float, target: float, m: int = 1, prior_df: float = 0.0, *,
               alpha: float = ALPHA, power: float = POWER) -> float:
    """The fewest pairs n ≥ 2 at which a cell whose log differences have SD `sd_diff` can
    detect `target` (a fraction) with 80 % power, Holm's first step over `m` comparisons, on
    n − 1 + `prior_df` degrees of freedom (the prior a moderated table lends); inf beyond
    `MOST_PAIRS` or without a finite SD.

    >>> rounds_for(0.14, 0.10, m=8), rounds_for(0.14, 0.05, m=8), rounds_for(0.0, 0.05)
    (32, 109, 2)
    """
    if not (np.isfinite(sd_diff) and target > 0):
        return math.inf

    def reaches(n: int) -> bool:
        return paired_mde(sd_diff, n, m, n - 1 + prior_df, alpha=alpha, power=power, threshold=0) <= target

    if reaches(2):
        return 2
    if not reaches(MOST_PAIRS):
        return math.inf
    lo, hi = 2, MOST_PAIRS      # reaches(hi), not reaches(lo)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if reaches(mid) else (mid, hi)
    return hi


def within(low: float, high: float, target: float) -> bool:
    """Whether an interval of ratios [low, high] lies inside ±target, symmetric on the log
    scale (1/(1 + target) … 1 + target).

    >>> within(0.97, 1.04, 0.05), within(0.94, 1.02, 0.05), within(float("nan"), 1.0, 0.05)
    (True, False, False)
    """
    bound = math.log1p(target)
    return bool(low > 0 and high > 0 and -bound < math.log(low) and math.log(high) < bound)


def bounds_text(fraction: float) -> str:
    """The band a fraction means on the log scale, as applied (÷ … × (1 + fraction)), in %.

    >>> bounds_text(0.2), bounds_text(0.05)
    ('−16.7 … +20 %', '−4.8 … +5 %')
    """
    low = (1 / (1 + fraction) - 1) * 100
    return f"{low:.1f} … +{fraction * 100:g} %".replace("-", "−")


def reading_of(verdict: str, low: float, high: float, threshold: float, target: float) -> str:
    """What a draw says about a cell measured to a precision `target`, with its draw
    `threshold` — one rule behind each word: "same" when its interval lies inside the draw
    threshold's band (shown smaller than a difference that counts), "bounded" when inside
    the target's band only (not shown to exceed the threshold, nor to be under it),
    "undecided" otherwise; "" for a better or worse verdict. Bands are symmetric on the log
    scale (`within`; `bounds_text` says them as applied).

    >>> [reading_of("draw", lo, hi, 0.05, 0.2) for lo, hi in ((0.97, 1.04), (0.85, 1.02), (0.80, 1.1))]
    ['same', 'bounded', 'undecided']
    >>> reading_of("worse", 0.82, 0.97, 0.05, 0.2)
    ''
    """
    if verdict != "draw":
        return ""
    return ("same" if within(low, high, threshold) else "bounded" if within(low, high, max(target, threshold))
            else "undecided")


def target_readings(table: pd.DataFrame, target: float, *, threshold: float = THRESHOLD,
                    alpha: float = ALPHA, power: float = POWER) -> pd.DataFrame:
    """A paired table (`paired_table`) measured to a precision `target` (a fraction), with
    what each draw says (`reading_of`, on its Holm-adjusted interval): "same", "bounded" or
    "undecided" — an undecided cell's MDE (`target_mde_pct`, without the draw threshold)
    still above the target, with `more_pairs` the pairs it still needs as the loop judges it
    (its pairs' spread about zero, `about_zero`, moderated across the table's cells), or
    (`more_pairs` 0) precise to the target but with an interval reaching past the target's
    band. `short`: the cell's MDE still above the target (whatever its verdict: a verdict it
    reached on few pairs). `target_pct` and `threshold_pct`: both in %."""
    if table.empty:
        return table.assign(target_pct=[], threshold_pct=[], target_mde_pct=[], reading=[], short=[], more_pairs=[])
    m = max(int(table["p_value"].notna().sum()), 1)
    n = table["n_baseline"].fillna(0).astype(int).to_numpy()  # a censored query: not tested
    raw = spread_about_zero(table)
    ok = np.isfinite(raw) & (n >= 2)
    s0, d0 = np.full(len(raw), np.nan), 0.0
    if ok.any():
        s0[ok], _, d0 = moderated(raw[ok], (n[ok] - 1).astype(float))
    rows = []
    for i, r in enumerate(table.itertuples(index=False)):
        mde = (paired_mde(float(r.sd_diff), n[i], m, float(r.df), alpha=alpha, power=power, threshold=0)
               if n[i] >= 2 else math.nan)
        holm_low = getattr(r, "holm_ci_low", math.nan)
        lo, hi = (holm_low, r.holm_ci_high) if holm_low == holm_low else (r.ci_low, r.ci_high)
        reading = reading_of(r.verdict, lo, hi, threshold, target)
        need = rounds_for(math.sqrt(s0[i]), target, m, d0, alpha=alpha, power=power) if s0[i] == s0[i] else math.inf
        short = not need <= n[i]  # the loop's estimator (`precision.shortfall`): it would measure the cell again
        rows.append({"target_mde_pct": mde * 100, "reading": reading, "short": short,
                     "more_pairs": (need - n[i] if math.isfinite(need) else math.inf) if short else 0})
    extra = pd.DataFrame(rows, index=table.index)
    return table.assign(target_pct=target * 100, threshold_pct=threshold * 100, **{c: extra[c] for c in extra})


def spread_about_zero(table: pd.DataFrame) -> np.ndarray:
    """Each row's `about_zero` from its summary: Σd² / (n − 1) = s² + n / (n − 1) · (mean d)²,
    s being the cell's own (`sd_own`, before moderation: the loop's `precision.cell_variances`
    reads the pairs themselves) and the mean log ratio log(`ratio`); NaN below two pairs.

    >>> d = np.log([1.1, 0.95, 1.2])
    >>> t = pd.DataFrame({"sd_diff": [d.std(ddof=1)], "n_baseline": [3], "ratio": [np.exp(d.mean())]})
    >>> round(float(spread_about_zero(t)[0]), 9) == round(about_zero(d), 9)
    True
    """
    n = table["n_baseline"].astype(float).to_numpy()
    with np.errstate(divide="ignore", invalid="ignore"):
        out = (table["sd_own" if "sd_own" in table else "sd_diff"].astype(float).to_numpy() ** 2
               + n / (n - 1) * np.log(table["ratio"].astype(float).to_numpy()) ** 2)
    return np.where(n >= 2, out, np.nan)


def about_zero(d: Sequence[float]) -> float:
    """A cell's pairs' spread as a run measured to a target judges it: the sum of their log
    differences' squares about zero over n − 1 — never below their variance, and blind to
    each difference's sign (what swapping an A/A pair's labels leaves unchanged), so stopping
    on it keeps the test's false-positive rate; NaN below two pairs.

    >>> round(about_zero([0.1, -0.1]), 6), round(about_zero([0.1, 0.1]), 6), about_zero([0.1])
    (0.02, 0.02, nan)
    """
    d = np.asarray(d, float)
    return float(np.sum(np.square(d)) / (len(d) - 1)) if len(d) >= 2 else math.nan


def _mdes(values: Sequence[Sequence[float]], m: int, alpha: float = ALPHA, power: float = POWER) -> np.ndarray:
    """Every cell's MDE (a fraction, no threshold) at its own pairs, judged as the loop
    judges it (`about_zero`), moderated across the cells — `paired_mde` for all cells at once."""
    n = np.array([len(v) for v in values], float)
    s2, df, _ = moderated(np.array([about_zero(v) for v in values]), n - 1)
    z = sps.t.ppf(1 - alpha / (2 * m), df) + sps.t.ppf(power, df)
    return np.expm1(z * np.sqrt(s2) / np.sqrt(n))


def ragged_verdicts(values: Sequence[np.ndarray], m: int, *, threshold: float = THRESHOLD,
                    alpha: float = ALPHA) -> np.ndarray:
    """The paired rule on cells with their own numbers of pairs (`values[i]`: cell i's log
    differences): variances moderated across the cells, a t per cell, Holm over a family of
    `m` ≥ cells (the cells' p-values repeated to fill it)."""
    n = np.array([len(v) for v in values], float)
    s2, df, _ = moderated(np.array([np.var(v, ddof=1) for v in values]), n - 1)
    mean = np.array([np.mean(v) for v in values])
    with np.errstate(divide="ignore", invalid="ignore"):
        p = 2 * sps.t.sf(np.abs(mean / np.sqrt(s2 / n)), df)
    p_holm = holm(np.resize(p, max(m, len(values))))[:len(values)]
    return np.array([verdict(math.exp(x), q, threshold=threshold, alpha=alpha) for x, q in zip(mean, p_holm)])


def adaptive_on_resamples(d: np.ndarray, m: int, target: float, *, first: int = 4, most: int = 64,
                          shifts: Sequence[float] = (0.0,), draws: int = 400, seed: int = 0,
                          threshold: float = THRESHOLD, alpha: float = ALPHA,
                          whole_rounds: bool = True) -> pd.DataFrame:
    """The adaptive rule judged on real noise, as a randomization test. `d[round, cell]`: A/A
    log differences (a baseline against its twin; NaN where a round did not measure a cell, as
    in a run measured to a target). Each draw deals the recorded pairs in a random order,
    without replacement, each with its labels swapped at random (`flips`: the sign of its
    difference), plus log(1 + shift): first `first` whole rounds (from the rounds that
    measured every cell, one sign per round — what a round's cells share stays shared; with
    `whole_rounds` false, or fewer such rounds than `first`, each cell's own pairs), then one
    more pair at a time to every cell whose MDE at the table's moderated variance is above
    `target` — as the loop does — until every cell meets it, has `most` pairs or has used all
    it recorded; then the rule (`ragged_verdicts`, threshold at most the target).
    Per shift: the share of tables with a non-draw (at 0: the false-positive rate per table),
    of cells called better, of cells that met the target, and the pairs spent per cell
    (mean) against `most` for everyone.

    >>> rng = np.random.default_rng(1)
    >>> r = adaptive_on_resamples(rng.normal(0, 0.1, (16, 6)), m=6, target=0.15, draws=100)
    >>> bool(r["tables_any_verdict"].iloc[0] <= 0.1), bool(r["cells_met"].iloc[0] > 0.9)
    (True, True)
    """
    rng = np.random.default_rng(seed)
    cells = d.shape[1]
    complete = np.flatnonzero(~np.isnan(d).any(axis=1))
    own = [np.flatnonzero(~np.isnan(d[:, j])) for j in range(cells)]
    limit = min(threshold, target)
    rows = []
    for shift in shifts:
        anyv = better = met = spent = 0
        for _ in range(draws):
            if whole_rounds and len(complete) >= first:
                start = rng.permutation(complete)[:first]
                signs = flips(rng, first)
                values = [list(d[start, j] * signs + math.log1p(shift)) for j in range(cells)]
                queues = [list(rng.permutation(np.setdiff1d(own[j], start))) for j in range(cells)]
            else:
                order = [list(rng.permutation(own[j])) for j in range(cells)]
                values = [list(d[o[:first], j] * flips(rng, len(o[:first])) + math.log1p(shift))
                          for j, o in enumerate(order)]
                queues = [o[first:] for o in order]
            while True:
                precise = _mdes(values, m, alpha) <= target
                short = [j for j in range(cells) if len(values[j]) < most and queues[j] and not precise[j]]
                if not short:
                    break
                for j in short:
                    values[j].append(d[queues[j].pop(), j] * flips(rng, 1)[0] + math.log1p(shift))
            met += int((_mdes(values, m, alpha) <= target).sum())
            v = ragged_verdicts([np.array(x) for x in values], m, threshold=limit, alpha=alpha)
            anyv += bool((v != "draw").any())
            better += int((v == "better").sum())
            spent += sum(len(x) for x in values)
        rows.append({"shift_pct": shift * 100, "tables_any_verdict": anyv / draws,
                     "cells_better": better / (draws * cells), "cells_met": met / (draws * cells),
                     "pairs_per_cell": spent / (draws * cells), "fixed_pairs": most})
    return pd.DataFrame(rows)


def target_words(aimed: dict[str, Any], most: int = 3) -> str:
    """A run's precision target and how its rounds to it ended (`precision.record`), in words:
    the pairs per cell, and the cells the budget left short — which metric, how many pairs more.

    >>> target_words({"target": {"qps": 0.05, "p95": 0.25}, "stopped": "every cell met its target",
    ...                  "cells": [{"pairs": 4}, {"pairs": 19}]})
    'QPS 5 %, p95 25 %; every cell met its target; 4–19 pairs per cell'
    >>> target_words({"target": {"p95": 0.25}, "stopped": "1 cell short of the target needs more rounds "
    ...               "than the budget has left", "cells": [{"cell": ["oltp_point_select", 256], "pairs": 13,
    ...               "left": True, "short_on": {"p95": 304}}, {"cell": ["oltp_read_only", 1], "pairs": 4}]})
    'p95 25 %; 1 cell short of the target needs more rounds than the budget has left (oltp_point_select 256: p95 ≈ 304 pairs more); 4–13 pairs per cell'
    """
    target = ", ".join(f"{'QPS' if k == 'qps' else k} {v * 100:g} %" for k, v in aimed["target"].items())
    cells = aimed.get("cells") or []
    pairs = [c["pairs"] for c in cells]
    spread = (f"; {min(pairs)}–{max(pairs)} pairs per cell" if pairs and min(pairs) != max(pairs)
              else f"; {pairs[0]} pairs per cell" if pairs else "")
    left = [c for c in cells if c.get("left") and c.get("short_on")]
    named = [" ".join(map(str, c["cell"])) + ": " + ", ".join(
                 f"{'QPS' if k == 'qps' else k} " + (f"≈ {n:,} pairs more" if n is not None else "out of reach")
                 for k, n in c["short_on"].items()) for c in left[:most]]
    which = (f" ({'; '.join(named)}" + (f"; and {len(left) - most} more" if len(left) > most else "") + ")"
             if named else "")
    return target + (f"; {aimed['stopped']}{which}" if aimed.get("stopped") else "") + spread
