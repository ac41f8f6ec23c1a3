"""Change points in a series of paired effects: where, in an ordered series of builds, a
cell's effect against one reference build stepped, by how much, and what could have been
seen where nothing stepped.

Each build has, per cell, its effect against the reference — a log ratio from paired rounds —
with a standard error. Change-point tools that take a series of single numbers (E-Divisive,
Otava, PELT on raw values) cannot tell a noisy point from a step; here every point carries
its uncertainty:

- **the search** is `ruptures`' PELT (Killick et al. 2012: the exact penalised segmentation,
  a well-kept library, Truong et al. 2020) with a cost of our own, `Weighted`: each segment's
  inverse-variance-weighted squared deviations from its weighted mean, summed over the cells
  (one change moves the vector of cells). With known variances that cost is a χ²; a change
  point must lower it by the penalty, the χ² quantile (d cells' df) at 1 − α ÷ (n − 1)
  across the n − 1 places a step can be — the series' false-alarm rate held at α;
- **variances**: each point's own SE² plus τ², the spread between runs that their own
  intervals do not hold (DerSimonian–Laird on the segments found first, then fitted again);
- **each change point**: per cell, the step — the weighted mean after it less the one before,
  within the neighbouring segments — with its 95 % interval, and how many cells moved the same
  way beyond their interval. With two or more cells a change needs two of them (a real
  change usually moves several cells; one cell alone is reported, not counted);
- **no change**: for every place without one, the smallest step it would have found with 80 %
  power ("no change detectable above x %").

>>> y = np.array([[0.0], [0.01], [-0.01], [0.0], [-0.10], [-0.11], [-0.09], [-0.10]])
>>> found = find(y, np.full_like(y, 0.02), ["b1", "b2", "b3", "b4", "b5", "b6", "b7", "b8"], ["cell"])
>>> [(c["after"], round(c["steps"][0]["pct"])) for c in found["changes"]]
[('b4', -10)]
"""
from __future__ import annotations

import math
from typing import Sequence

import numpy as np
import ruptures

from .lazy import sps
from .samples import ALPHA, POWER

MIN_CELLS = 2  # cells that must move the same way for a change point, where the series has that many


class Weighted(ruptures.base.BaseCost):
    """A segment's cost: Σ over cells and points of w·(y − ȳ_w)², ȳ_w its weighted mean. The
    signal's first half of columns are the values, the second half their weights."""
    model = "weighted_l2"
    min_size = 1

    def fit(self, signal: np.ndarray) -> "Weighted":
        self.signal = signal  # ruptures reads its length
        d = signal.shape[1] // 2
        y, w = signal[:, :d], signal[:, d:]
        zero = np.zeros((1, d))
        self.w = np.vstack([zero, np.cumsum(w, axis=0)])
        self.wy = np.vstack([zero, np.cumsum(w * y, axis=0)])
        self.wy2 = np.vstack([zero, np.cumsum(w * y * y, axis=0)])
        return self

    def error(self, start: int, end: int) -> float:
        sw = self.w[end] - self.w[start]
        swy = self.wy[end] - self.wy[start]
        return float(np.sum(self.wy2[end] - self.wy2[start] - np.where(sw > 0, swy ** 2 / np.where(sw > 0, sw, 1), 0)))


def penalty(n: int, d: int, alpha: float = ALPHA) -> float:
    """What a change point must lower the cost by: the χ²_d quantile at 1 − α ÷ (n − 1)."""
    return float(sps.chi2.ppf(1 - alpha / max(n - 1, 1), d))


def segments(y: np.ndarray, w: np.ndarray, alpha: float = ALPHA) -> list[int]:
    """PELT's change points: the indices where a new segment starts (never 0 or n)."""
    n, d = y.shape
    if n < 2:
        return []
    algo = ruptures.Pelt(custom_cost=Weighted(), min_size=1, jump=1).fit(np.hstack([y, w]))
    return [b for b in algo.predict(pen=penalty(n, d, alpha)) if 0 < b < n]


def between_runs(y: np.ndarray, se2: np.ndarray, cuts: list[int]) -> np.ndarray:
    """τ² per cell: DerSimonian–Laird's estimate of the spread between runs beyond their own
    variances, from the residuals within the segments `cuts` makes."""
    n, d = y.shape
    edges = [0, *cuts, n]
    tau2 = np.zeros(d)
    for c in range(d):
        w = 1 / se2[:, c]
        q = df = s1 = s2 = 0.0
        for a, b in zip(edges[:-1], edges[1:]):
            ws, ys = w[a:b], y[a:b, c]
            mean = (ws * ys).sum() / ws.sum()
            q += float((ws * (ys - mean) ** 2).sum())
            df += b - a - 1
            s1, s2 = s1 + ws.sum(), s2 + (ws ** 2).sum() / ws.sum()
        tau2[c] = max(0.0, (q - df) / (s1 - s2)) if s1 > s2 else 0.0
    return tau2


def from_neighbours(y: np.ndarray, se2: np.ndarray) -> np.ndarray:
    """τ² per cell, a first estimate that a step cannot inflate: from the differences between
    neighbouring builds, whose spread is 2(τ² + SE²) where nothing changed — the median of their
    absolute values (robust to the few that straddle a change point), less the points' own
    variances. Without it the first segmentation, weighted by the SEs alone, cuts wherever runs
    drift (a count's SE is 0.015 % and its runs move by 0.04 %) and leaves no spread to estimate."""
    if len(y) < 3:
        return np.zeros(y.shape[1])
    diffs = np.abs(np.diff(y, axis=0))
    own = (se2[1:] + se2[:-1]) / 2
    spread = (np.median(diffs, axis=0) / sps.norm.ppf(0.75)) ** 2 / 2
    return np.fmax(0.0, spread - np.median(own, axis=0))


def step_at(y: np.ndarray, w: np.ndarray, a: int, cut: int, b: int) -> dict:
    """One cell's step at a change point `cut` between its segments [a, cut) and [cut, b):
    the difference of their weighted means (log, %, 95 % interval in %) and whether it moved
    (+1/−1; 0 within its interval)."""
    z = sps.norm.ppf(0.975)
    wl, wr = w[a:cut], w[cut:b]
    step = (wr * y[cut:b]).sum() / wr.sum() - (wl * y[a:cut]).sum() / wl.sum()
    s = math.sqrt(1 / wl.sum() + 1 / wr.sum())
    return {"log": float(step), "se": s, "pct": math.expm1(step) * 100,
            "lo": math.expm1(step - z * s) * 100, "hi": math.expm1(step + z * s) * 100,
            "moved": int(np.sign(step)) if abs(step) > z * s else 0}


def find(y: np.ndarray, se: np.ndarray, builds: Sequence[str], cells: Sequence[str], *,
         alpha: float = ALPHA, power: float = POWER) -> dict:
    """The change points of a series: `y[i, c]` build i's effect (log ratio against the
    reference) in cell c, `se` their standard errors. Returns {"changes": per change point
    (kept or not) its place (`after` build, `before` build), per cell its step (log, %, 95 %
    interval in %, moved: +1/−1/0), the cells that moved the same way and whether it counts
    (`kept`); "quiet": per place without a change, per cell the smallest step it would find
    (%); "tau2": the spread between runs per cell}."""
    y, se = np.atleast_2d(np.asarray(y, float)), np.atleast_2d(np.asarray(se, float))
    n, d = y.shape
    se2 = np.fmax(se ** 2, 1e-12)
    first = from_neighbours(y, se2)
    cuts = segments(y, 1 / (se2 + first), alpha)
    tau2 = np.fmax(first, between_runs(y, se2, cuts))
    w = 1 / (se2 + tau2)
    cuts = segments(y, w, alpha)
    edges = [0, *cuts, n]
    changes = []
    for k, cut in enumerate(cuts):
        steps = [{"cell": cells[c], **step_at(y[:, c], w[:, c], edges[k], cut, edges[k + 2])} for c in range(d)]
        signs = [st["moved"] for st in steps if st["moved"]]
        way = int(np.sign(sum(signs))) if signs else 0
        together = sum(1 for m in signs if m == way)
        changes.append({"index": cut, "after": builds[cut - 1], "before": builds[cut], "steps": steps,
                        "together": together, "kept": together >= min(MIN_CELLS, d)})
    zq = sps.norm.ppf(1 - alpha / (2 * max(n - 1, 1))) + sps.norm.ppf(power)
    quiet = []
    for a, b in zip(edges[:-1], edges[1:]):
        for g in range(a + 1, b):
            quiet.append({"after": builds[g - 1], "before": builds[g], "index": g,
                          "mde_pct": {cells[c]: math.expm1(zq * math.sqrt(1 / w[a:g, c].sum() + 1 / w[g:b, c].sum())) * 100
                                      for c in range(d)}})
    return {"changes": changes, "quiet": quiet, "tau2": dict(zip(cells, tau2.tolist()))}
