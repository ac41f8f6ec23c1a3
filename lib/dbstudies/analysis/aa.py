"""The A/A control judged on itself: the twin's pairs as a matrix of rounds × cells, and the
verdict rule on those pairs dealt again with their labels swapped at random (a randomization
test: `stats.flips`) — the false-positive rate per table and the power for +10 % and +20 %,
with the run's own rule: fixed rounds, or measured to its precision target
(`stats.adaptive_on_resamples`: rounds only where a cell's MDE is above the target)."""
from __future__ import annotations

from typing import Any

import pandas as pd

from .. import stats
from ..core.comparisons import SYSBENCH, Comparison
from ..kit.studykit import BY, Arm
from .tables import comparison, is_paired, target_of, threshold

SHIFTS = (0.0, 0.10, 0.20)
MIN_POOL = 8  # whole A/A rounds a fixed-round run needs before its noise is resampled


def differences(steps: pd.DataFrame, arms: list[Arm], c: Comparison = SYSBENCH[0], *,
                complete: bool = True) -> pd.DataFrame:
    """The A/A pairs as a matrix: one row per round, one column per workload × threads cell,
    the log ratio twin / baseline of that round (rounds missing a cell left out; with
    `complete` false kept, NaN where a round did not measure the cell). Empty without a twin
    or pairs."""
    twins = [a.label for a in arms if a.aa]
    if not twins or not is_paired(steps):
        return pd.DataFrame()
    d = stats.pair_up(steps, by=BY, factor="arm", baseline=arms[0].label, candidate=twins[0],
                      value=c.column, pair="repeat")
    sign = 1 if c.higher_is_better else -1
    out = d.assign(d=sign * d["d"]).pivot_table(index="repeat", columns=BY, values="d")
    return out.dropna() if complete else out


def calibration(steps: pd.DataFrame, arms: list[Arm], p: Any, metric: str = "qps",
                comparisons: int | None = None) -> pd.DataFrame:
    """The verdict rule judged on this run's own A/A pairs (`stats.rule_on_resamples`; with a
    precision target for `metric`, the adaptive rule, `stats.adaptive_on_resamples`, from
    `repeats` first rounds to as many pairs as the run's busiest cell got): the
    false-positive rate per table and the power for +10 % and +20 %, with a Holm family the
    size of the study's table (`comparisons`, default: its cells × its candidates). Empty
    without an A/A twin measured in pairs."""
    target = target_of(p, metric)
    d = differences(steps, arms, comparison(p, metric), complete=False)
    whole = d.dropna()
    if d.empty or len(whole) < 3:
        return pd.DataFrame()
    cands = len([a for a in arms[1:] if a.twin_of is None]) or 1
    m = comparisons or d.shape[1] * cands
    ragged = len(whole) < len(d)  # measured to a target: cells got pairs where they were needed
    if target:
        most = int(steps[steps["arm"] == arms[0].label].groupby(BY).size().max())
        out = stats.adaptive_on_resamples(d.to_numpy(), m, target, first=p.repeats, most=most, shifts=SHIFTS,
                                          draws=200, threshold=threshold(p, metric), whole_rounds=not ragged)
        return out.assign(rounds=int(d.notna().sum().median()), cells=d.shape[1], comparisons=m,
                          target_pct=target * 100)
    if ragged and len(whole) < MIN_POOL:
        return _not_judged(f"only {len(whole)} rounds measured every cell (fewer than {MIN_POOL} to resample)")
    out = stats.rule_on_resamples(whole.to_numpy(), m, shifts=SHIFTS, threshold=p.draw_threshold)
    return out.assign(rounds=len(whole), cells=d.shape[1], comparisons=m)


def _not_judged(why: str) -> pd.DataFrame:
    """No calibration, and why (`attrs["why"]`, said by `calibration_line`)."""
    out = pd.DataFrame()
    out.attrs["why"] = why
    return out


def calibration_line(cal: pd.DataFrame | None) -> list[str]:
    """The calibration in words: false positives per table, power at +10 % and +20 % — or why
    the run's A/A pairs could not be resampled."""
    if cal is not None and cal.empty and cal.attrs.get("why"):
        return [f"- Not judged on this run's own A/A noise: {cal.attrs['why']}."]
    if cal is None or cal.empty:
        return []
    r = cal.set_index("shift_pct")
    rule = (f", measured to the target {cal['target_pct'].iloc[0]:g} % as the run was: "
            f"{r.loc[0.0, 'pairs_per_cell']:.0f} pairs per cell on average" if "target_pct" in cal else "")
    return [f"- Judged on this run's own A/A noise ({int(cal['rounds'].iloc[0])} rounds, their labels swapped at random, "
            f"{int(cal['cells'].iloc[0])} cells, Holm over {int(cal['comparisons'].iloc[0])}{rule}): a "
            f"table with no true difference shows a non-draw in {r.loc[0.0, 'tables_any_verdict'] * 100:.0f} % "
            f"of tables; a true +10 % is found in {r.loc[10.0, 'cells_better'] * 100:.0f} % of cells, "
            f"+20 % in {r.loc[20.0, 'cells_better'] * 100:.0f} %."]
