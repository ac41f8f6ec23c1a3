"""Comparisons with censored observations (timed-out queries): bounds instead of ratios."""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np
import pandas as pd

from .paired import (
    paired_table,
)
from .samples import (
    THRESHOLD,
    compare_table,
)

# ---------------------------------------------------------------- censored comparisons

CENSORED = "timeout (censored: not tested)"


def censored_bound(base: pd.DataFrame, cand: pd.DataFrame, timeout: float) -> str:
    """What a censored comparison still says: with a timeout on one side only, a timed-out
    execution took at least `timeout`, so the ratio of geometric means (candidate/baseline)
    is at least (candidate's timeouts) or at most (baseline's) the ratio computed with the
    timeout in their place: "≥ 4,100 %" / "≤ 3 %". Empty when both sides timed out.

    >>> b = pd.DataFrame({"seconds": [2.0, 2.0], "timed_out": [False, False]})
    >>> c = pd.DataFrame({"seconds": [float("nan")] * 2, "timed_out": [True, True]})
    >>> censored_bound(b, c, 120), censored_bound(c, b, 120), censored_bound(c, c, 120)
    ('≥ 6,000 %', '≤ 1.7 %', '')
    """
    tb, tc = bool(base["timed_out"].any()), bool(cand["timed_out"].any())
    if tb == tc or base.empty or cand.empty:
        return ""

    def gm(side: pd.DataFrame) -> float:
        return float(np.exp(np.log(side["seconds"].where(~side["timed_out"], timeout)).mean()))
    pct = gm(cand) / gm(base) * 100
    said = f"{pct:,.0f}" if pct >= 10 else f"{pct:.2g}" if pct >= 0.01 else "0.01"
    return f"{'≥' if tc else '≤'} {said} %"


def censored_table(ex: pd.DataFrame, *, by: Sequence[str], factor: str, baseline: Any,
                   candidates: Sequence[Any], timeout: float, paired: bool,
                   threshold: float = THRESHOLD) -> pd.DataFrame:
    """Seconds (`seconds`, `timed_out` per execution) of each candidate vs the baseline per
    group of `by`, lower is better, one Holm family — `paired_table` by round (`repeat`) when
    the executions were measured in pairs, else `compare_table`. A group where either side
    has a timeout is not tested (its times are censored): its row says so (`CENSORED`) with
    the bound the timeouts still give (`censored_bound`)."""
    by = list(by)
    timed_out = ex.groupby([*by, factor])["timed_out"].any().to_dict()
    keys = list(ex[by].drop_duplicates().itertuples(index=False, name=None))
    censored = {(k, c) for k in keys for c in candidates
                if timed_out.get((*k, baseline), False) or timed_out.get((*k, c), False)}
    rows = zip(ex[by].itertuples(index=False, name=None), ex[factor])
    clean = ex[[not (timed_out.get((*k, f), False) if f == baseline else (k, f) in censored)
                for k, f in rows]]
    kw = dict(by=by, factor=factor, baseline=baseline, candidates=list(candidates), value="seconds",
              higher_is_better=False, threshold=threshold)
    rel = paired_table(clean, pair="repeat", **kw) if paired else compare_table(clean, **kw)

    def side(key: tuple, level: Any) -> pd.DataFrame:
        mask = ex[factor] == level
        for col, v in zip(by, key):
            mask &= ex[col] == v
        return ex[mask]
    said = [{"candidate": c, **dict(zip(by, k)), "verdict": CENSORED,
             "bound": censored_bound(side(k, baseline), side(k, c), timeout)}
            for k, c in sorted(censored) if (*k, c) in timed_out]
    return pd.concat([rel, pd.DataFrame(said)], ignore_index=True) if said else rel
