"""The capacity at a p99 target: per round, the highest offered rate whose p99 stays under the
target (`capacity_of`: log-interpolated between the levels around the crossing; a bound where
every level stayed under or none did), per arm over the rounds (`capacities`), the arms compared
on it by their per-round ratios (`compare_capacity`), and in words (`capacity_lines`).
"""
from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd

from ...analysis import (
    adjusted,
    compare_arms,
    effect,
    is_paired,
)
from ...kit.studykit import Arm

BRACKET = 0.02       # a not-sustained level still places the capacity when it brackets it this tightly


def capacity_of(curve: pd.DataFrame, target: float) -> tuple[float, str]:
    """The highest offered rate whose p99 stays under `target` on one round's curve (rate,
    p99, sustained), log-interpolated between the last level under the target and the first
    over it; ("≥", highest rate) when every level stayed under, ("<", lowest) when none did.
    A level that was not sustained counts as over the target; its p99 is a lower bound. When
    that bound is itself over the target, the crossing lies between the last level under the
    target and the interpolation to the bound (a higher true p99 only moves it down): when
    that bracket is at most `BRACKET` wide its geometric middle is the capacity (off by at
    most half the bracket), else only the bound ("≥", the last level under) is known.

    >>> c = pd.DataFrame({"rate": [100, 200, 400], "p99": [2.0, 8.0, 32.0], "sustained": [True] * 3})
    >>> round(capacity_of(c, 16.0)[0], 1), capacity_of(c, 16.0)[1]
    (282.8, '=')
    >>> capacity_of(c, 64.0), capacity_of(c, 1.0)
    ((400.0, '≥'), (100.0, '<'))
    >>> capacity_of(c.assign(sustained=[True, True, False]), 16.0)
    (200.0, '≥')
    >>> b = c.assign(p99=[2.0, 15.0, 900.0], sustained=[True, True, False])
    >>> round(capacity_of(b, 16.0)[0], 1), capacity_of(b, 16.0)[1]
    (201.1, '=')
    """
    c = curve.sort_values("rate")
    over = (c["p99"] > target) | ~c["sustained"].astype(bool)
    if not over.any():
        return float(c["rate"].iloc[-1]), "≥"
    first = int(np.argmax(over.to_numpy()))
    if first == 0:
        return float(c["rate"].iloc[0]), "<"
    lo, hi = c.iloc[first - 1], c.iloc[first]
    if not hi["p99"] > lo["p99"]:
        return float(lo["rate"]), ("=" if hi["sustained"] else "≥")
    f = (math.log(target) - math.log(lo["p99"])) / (math.log(hi["p99"]) - math.log(lo["p99"]))
    if hi["sustained"]:
        return float(math.exp(math.log(lo["rate"]) + f * (math.log(hi["rate"]) - math.log(lo["rate"])))), "="
    if hi["p99"] > target and f * math.log(hi["rate"] / lo["rate"]) <= math.log(1 + BRACKET):
        return float(lo["rate"] * (hi["rate"] / lo["rate"]) ** (f / 2)), "="
    return float(lo["rate"]), "≥"


def capacities(loaded: pd.DataFrame, target: float) -> pd.DataFrame:
    """Per workload × threads × arm × round: the capacity at `target` and whether it is
    censored ("≥": a lower bound — the crossing could not be placed above the last level under
    the target; "<": no level was under it)."""
    rows = []
    for (w, t, arm, repeat), g in loaded.groupby(["workload", "threads", "arm", "repeat"]):
        curve = g.rename(columns={"ol_latency_p99_ms": "p99", "ol_sustained": "sustained"})
        cap, kind = capacity_of(curve[["rate", "p99", "sustained"]], target)
        rows.append({"workload": w, "threads": t, "arm": arm, "repeat": repeat,
                     "pair": int(repeat), "capacity": cap, "censored": kind})
    return pd.DataFrame(rows)


def compare_capacity(loaded: pd.DataFrame, arms: list[Arm], p: Any) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(per arm: the capacity's median, min, max over rounds and how many rounds were
    censored; the comparison with the baseline, higher is better, paired by round). A
    comparison where either arm's capacity was censored in some round is not made: the
    levels did not bracket the target — widen `loads`."""
    cap = capacities(loaded, p.p99_target_ms)
    if cap.empty:
        return pd.DataFrame(), pd.DataFrame()
    per_arm = cap.groupby(["workload", "threads", "arm"], sort=False).agg(
        n=("capacity", "size"), capacity_median=("capacity", "median"),
        capacity_min=("capacity", "min"), capacity_max=("capacity", "max"),
        at_least=("censored", lambda s: int((s == "≥").sum())),
        below=("censored", lambda s: int((s == "<").sum()))).reset_index()
    rel = compare_arms(cap if is_paired(loaded) else cap.drop(columns="pair"), arms,
                       by=["workload", "threads"], value="capacity", higher_is_better=True,
                       threshold=p.draw_threshold)
    if rel.empty:
        return per_arm, rel
    censored = per_arm.set_index(["workload", "threads", "arm"])

    def bound(r: Any) -> list[str]:
        return [a for a in (arms[0].label, r.candidate)
                if (r.workload, r.threads, a) in censored.index
                and censored.loc[(r.workload, r.threads, a), ["at_least", "below"]].sum() > 0]

    out = not_compared(rel, lambda r: ("only a bound for " + " and ".join(bound(r)) + " (the levels "
                                        "do not resolve where p99 crosses the target)") if bound(r) else None)
    return per_arm, out.assign(baseline=arms[0].label, offered=f"p99 ≤ {p.p99_target_ms:g} ms")


def bracketed(per_arm: pd.DataFrame) -> str:
    """In how many arm-rounds the levels bracketed where p99 crosses the target (a capacity
    interpolated between two measured levels) and in how many only a bound is known — said
    from the run, never assumed from how the levels were placed.

    >>> bracketed(pd.DataFrame({"n": [5, 5], "at_least": [2, 0], "below": [0, 0]}))
    'In 8 of 10 arm-rounds the levels bracketed where p99 crosses the target (the capacity lies between two measured levels); in 2 only a bound is known (2 ≥: a lower bound, the crossing not placed above the last level under the target) and no capacity with a bound is compared.'
    >>> bracketed(pd.DataFrame({"n": [4], "at_least": [0], "below": [0]}))
    'In all 4 arm-rounds the levels bracketed where p99 crosses the target (the capacity lies between two measured levels).'
    """
    if per_arm.empty:
        return ""
    n, ge, lt = int(per_arm["n"].sum()), int(per_arm["at_least"].sum()), int(per_arm["below"].sum())
    inside = n - ge - lt
    said = "the levels bracketed where p99 crosses the target (the capacity lies between two measured levels)"
    if not ge and not lt:
        return f"In all {n} arm-rounds {said}."
    kinds = [k for k in (f"{ge} ≥: a lower bound, the crossing not placed above the last level under the "
                         "target" if ge else "",
                         f"{lt} <: no level did" if lt else "") if k]
    return (f"In {inside} of {n} arm-rounds {said}; in {ge + lt} only a bound is known ({'; '.join(kinds)}) "
            "and no capacity with a bound is compared.")


def capacity_view(per_arm: pd.DataFrame) -> pd.DataFrame:
    """The per-arm capacities (`compare_capacity`) as the report shows them: rounds, the
    median and the min–max in transactions/s, and how many rounds gave only a bound.

    >>> capacity_view(pd.DataFrame({"workload": ["w"], "threads": [8], "arm": ["a"], "n": [3],
    ...     "capacity_median": [900.0], "capacity_min": [800.0], "capacity_max": [950.0],
    ...     "at_least": [1], "below": [0]})).iloc[0].astype(str).tolist()
    ['w', '8', 'a', '3', '900.0', '800.0', '950.0', '1 (≥)']
    """
    if per_arm.empty:
        return per_arm

    def bounds(r: Any) -> str:
        kinds = [f"{n} ({k})" for n, k in ((r.at_least, "≥"), (r.below, "<")) if n]
        return ", ".join(kinds) or "none"
    return pd.DataFrame({
        "workload": per_arm["workload"], "threads": per_arm["threads"], "arm": per_arm["arm"],
        "rounds": per_arm["n"], "capacity median (tx/s)": per_arm["capacity_median"],
        "min (tx/s)": per_arm["capacity_min"], "max (tx/s)": per_arm["capacity_max"],
        "rounds only a bound": [bounds(r) for r in per_arm.itertuples()]})


def capacity_lines(t: dict[str, pd.DataFrame], p: Any, arms: list[Arm]) -> list[str]:
    """The capacity at the p99 target (Markdown, a line each): each candidate's verdict against
    the baseline, with what it could detect, then each arm's capacity — a bound said as one."""
    base, lines = arms[0].label, []
    cap, rel = t["capacity"], t["capacity_rel"]
    for r in rel.itertuples() if len(rel) else []:
        if r.delta_pct == r.delta_pct:
            mde = getattr(r, "mde_pct", math.nan)
            lines.append(f"**{r.candidate} vs {base}**: capacity at p99 ≤ {p.p99_target_ms:g} ms "
                         f"{effect(r, *adjusted(r))}: {r.verdict}"
                         + (f" (detectable: {mde:.0f} %)" if mde == mde else ""))
        else:
            lines.append(f"**{r.candidate} vs {base}**: capacity {r.verdict}")
    for r in cap.itertuples():
        bound = ("≥ " if r.at_least == r.n else "< " if r.below == r.n else "")
        partly = r.at_least + r.below
        spread = ("the same in every round" if r.capacity_min == r.capacity_max
                  else f"{r.capacity_min:,.0f}–{r.capacity_max:,.0f}")
        lines.append(f"Capacity at p99 ≤ {p.p99_target_ms:g} ms ({r.workload}): {r.arm} "
                     f"{bound}{r.capacity_median:,.0f}/s (median of {r.n} rounds, {spread}"
                     + (f"; in {partly} of them only a bound" if 0 < partly < r.n else "") + ")")
    return lines


def not_compared(rel: pd.DataFrame, why: Any) -> pd.DataFrame:
    """`rel` with the rows `why(row)` gives a reason for turned into "not compared: <reason>",
    their figures emptied: a bound is never tested as if it were a measurement."""
    figures = [c for c in ("ratio", "delta_pct", "ci_low", "ci_high", "p_value", "p_holm", "mde_pct")
               if c in rel]
    rows = []
    for r in rel.itertuples(index=False):
        row, reason = r._asdict(), why(r)
        if reason:
            row.update({k: math.nan for k in figures}, verdict="not compared: " + reason)
        rows.append(row)
    return pd.DataFrame(rows)
