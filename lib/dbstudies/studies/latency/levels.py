"""The latency study's analysis: the peak phase (closed-loop peak per arm), the offered-load
cells it implies, per-level latency from the scheduled start, comparisons per level that
never treat a lower bound as a number, and the capacity at a p99 target."""
from __future__ import annotations

import math
from typing import Any, Callable

import numpy as np
import pandas as pd

from ...analysis import (
    adjusted,
    cell_text,
    compare_arms,
    control,
    design_table,
    effect,
    is_paired,
    signed,
    with_unavailable,
)
from ...core.errors import StoreError
from ...kit.studykit import Arm
from ...store import results
from ...store.results import Run
from ...store.tables import OL_SECONDS, OPEN_LOOP

CELL = ["workload", "threads", "rate"]
VERDICT_LOAD = 0.7   # latency verdicts per level up to this fraction of the baseline's peak
MAX_LADDER = 8       # capacity_levels at most
ABOVE = (f"not compared: above {VERDICT_LOAD * 100:.0f} % of the peak, where queueing amplifies a small "
         "capacity difference in latency by 1/(1 − load); the capacity verdict judges it")
BRACKET = 0.02       # a not-sustained level still places the capacity when it brackets it this tightly
LADDER_STEP = 2.0    # the ladder's levels are this factor apart in headroom (1 − load)
PERCENTILES = {"p50": "latency_p50_ms", "p90": "latency_p90_ms", "p99": "latency_p99_ms",
               "p99.9": "latency_p99_9_ms"}


def split(run: Run) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The measured steps as (the peak phase: closed loop, offered load: open loop with their
    open-loop figures — `ol_…` — and `rate`, the offered transactions/s)."""
    steps = results.measured(run)
    planned = pd.DataFrame(list(run.record.follow_up), columns=["step", "load"])
    steps = steps.merge(planned[["step", "load"]], on="step", how="left")
    try:
        ol = run.table(OPEN_LOOP)
    except StoreError:
        ol = pd.DataFrame(columns=list(OPEN_LOOP.columns))
    ol = ol.rename(columns={c: f"ol_{c}" for c in ol.columns if c != "step"})
    loaded = steps.merge(ol, on="step")
    loaded = loaded.assign(rate=loaded["ol_offered_rate"])
    return steps[~steps["step"].isin(loaded["step"])].reset_index(drop=True), loaded


def peaks(closed: pd.DataFrame) -> pd.DataFrame:
    """Per workload × threads × arm: the closed-loop transactions/s (median, min, max over
    rounds) and the closed-loop p99 (median)."""
    if closed.empty:
        return pd.DataFrame(columns=["workload", "threads", "arm", "n", "tps_median", "tps_min",
                                     "tps_max", "closed_p99_ms_median"])
    g = closed.groupby(["workload", "threads", "arm"], sort=False)
    return g.agg(n=("tps", "size"), tps_median=("tps", "median"), tps_min=("tps", "min"),
                 tps_max=("tps", "max"), closed_p99_ms_median=("latency_p99_ms", "median")).reset_index()


def ladder(peak: float, target_ms: float, n: int) -> list[float]:
    """`n` offered loads (fractions of `peak`) around where p99 is expected to cross
    `target_ms`. The expectation is a single queue's: with Poisson arrivals at load ρ, a
    server of `peak` transactions/s keeps a transaction for an exponential time of mean
    1 / (peak (1 − ρ)), so p99 = ln 100 / (peak (1 − ρ)) and the target is crossed at the
    headroom h = 1 − ρ = ln 100 / (peak × target). The ladder spaces the headroom
    `LADDER_STEP` apart around h (h × 2^1.5, 2^0.5, 2^−0.5, 2^−1.5 for four), so a model off by
    up to that factor still brackets the crossing; loads kept within 0.05 … 1.05.

    >>> ladder(4000.0, 20.0, 4)
    [0.837, 0.919, 0.959, 0.98]
    >>> ladder(4000.0, 20.0, 0), ladder(100.0, 1.0, 2)
    ([], [0.05])
    """
    if n <= 0 or not peak > 0 or not target_ms > 0:
        return []
    h = math.log(100) / (peak * target_ms / 1000)
    loads = [1 - h * LADDER_STEP ** ((n - 1) / 2 - i) for i in range(n)]
    return sorted({round(min(max(x, 0.05), 1.05), 3) for x in loads})


def load_cells(run: Run, p: Any, baseline: str) -> list[dict[str, Any]]:
    """The offered-load cells: per workload, each level as transactions/s — `rates` as
    given, else each of `loads` × the baseline's median closed-loop peak (so every arm is
    offered the same rate) — and the `capacity_levels` of the `ladder` around the expected
    crossing of `p99_target_ms`, from that peak."""
    closed, _ = split(run)
    cells = []
    for w in p.workloads:
        for t in p.threads:
            mine = closed[(closed["workload"] == w) & (closed["threads"] == t) & (closed["arm"] == baseline)]
            if mine.empty and (not p.rates or p.capacity_levels):
                raise StoreError(f"no closed-loop peak step of {baseline} ({w}, {t} connections): "
                                 "the offered loads are placed from its peak")
            peak = float(mine["tps"].median()) if len(mine) else math.nan
            given = ([(math.nan, float(r)) for r in sorted(p.rates)] if p.rates
                     else [(float(f), round(f * peak, 1)) for f in sorted(p.loads)])
            placed = [(f, round(f * peak, 1)) for f in ladder(peak, p.p99_target_ms, p.capacity_levels)]
            rates = {r for _, r in given}
            cells += [{"workload": w, "threads": t, "load": f, "rate": r}
                      for f, r in sorted(given + [x for x in placed if x[1] not in rates], key=lambda x: x[1])]
    return cells


def offered(rate: float, load: float | None = None) -> str:
    """How a level reads in tables.

    >>> offered(2000.4, 0.5), offered(150.0)
    ('2,000/s (50 % of peak)', '150/s')
    """
    text = f"{rate:,.0f}/s"
    return text + (f" ({load * 100:.0f} % of peak)" if load is not None and load == load else "")


def levels(loaded: pd.DataFrame) -> pd.DataFrame:
    """Per workload × threads × rate × arm: rounds, how many sustained the load, the achieved
    rate and each latency percentile from the scheduled start (median, min, max over rounds;
    `lower_bound` when any round did not sustain it: then the figures are lower bounds)."""
    if loaded.empty:
        return pd.DataFrame()
    g = loaded.groupby([*CELL, "arm"], sort=True)
    out = g.agg(load=("load", "first"), n=("step", "size"), sustained=("ol_sustained", "sum"),
                achieved_median=("ol_achieved_rate", "median"),
                unstarted_max=("ol_unstarted", "max"))
    for name, col in PERCENTILES.items():
        key = name.replace(".", "_")
        out[f"{key}_median"] = g[f"ol_{col}"].median()
        out[f"{key}_min"] = g[f"ol_{col}"].min()
        out[f"{key}_max"] = g[f"ol_{col}"].max()
    out = out.reset_index()
    out["lower_bound"] = out["sustained"] < out["n"]
    out["offered"] = [offered(r, lo) for r, lo in zip(out["rate"], out["load"])]
    return out


def _behind(loaded: pd.DataFrame, base: str) -> Callable[[Any], str | None]:
    """Why a row of a level comparison is not compared: the baseline or candidate that did not
    keep up with the level in every round (its latencies are lower bounds); None: both did."""
    kept = loaded.groupby([*CELL, "arm"])["ol_sustained"].all().rename("kept_up").reset_index()

    def why(r: Any) -> str | None:
        mine = kept[(kept["workload"] == r.workload) & (kept["threads"] == r.threads)
                    & (kept["rate"] == r.rate)].set_index("arm")["kept_up"]
        who = [a for a in (base, r.candidate) if a in mine and not mine[a]]
        return " and ".join(who) + " did not keep up in every round (lower bounds)" if who else None
    return why


def compare_levels(loaded: pd.DataFrame, arms: list[Arm], p: Any, percentile: str,
                   missing: list[tuple[str, str]] = (), candidates: list[str] | None = None) -> pd.DataFrame:
    """Every arm against the baseline per level on one percentile (lower is better), one
    Holm family — or, with `candidates`, those arms (the positive control). A level some
    round of either arm did not sustain is not compared: its latencies are lower bounds; the
    row says who did not keep up. Nor is a level above `VERDICT_LOAD` of the baseline's peak
    (`load`): near saturation p99 amplifies a small capacity difference by 1 / (1 − load),
    and the capacity verdict answers there."""
    if loaded.empty:
        return pd.DataFrame()
    column = f"ol_{PERCENTILES[percentile]}"
    high = loaded["load"] > VERDICT_LOAD
    judged = loaded[~high]
    if judged.empty:
        return pd.DataFrame()
    if candidates is None:
        rel = compare_arms(judged, arms, by=CELL, value=column, higher_is_better=False,
                           threshold=p.draw_threshold)
    else:
        rel = design_table(judged, by=CELL, factor="arm", baseline=arms[0].label, candidates=candidates,
                           value=column, higher_is_better=False, threshold=p.draw_threshold)
    if rel.empty:
        return rel
    base = arms[0].label
    out = _not_compared(rel, _behind(loaded, base)).assign(baseline=base)
    above = loaded.loc[high, CELL].drop_duplicates()
    if len(above):  # shown, not hidden: the reader sees which levels the capacity judges instead
        out = pd.concat([out, *[above.assign(candidate=c, baseline=base, verdict=ABOVE)
                                for c in out["candidate"].unique()]], ignore_index=True)
    load = loaded.groupby(CELL)["load"].first()
    out["offered"] = [offered(r, load.get((w, t, r), math.nan))
                      for w, t, r in zip(out["workload"], out["threads"], out["rate"])]
    return with_unavailable(out, list(missing), [*CELL, "offered"]) if missing else out


def _not_compared(rel: pd.DataFrame, why: Any) -> pd.DataFrame:
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


def layout(rel: pd.DataFrame) -> pd.DataFrame:
    """Offered load down, one column per candidate vs baseline (· workload), each cell
    `−12.0 % [−20.1, −3.2] better` or why it was not compared."""
    if rel.empty:
        return rel
    cell = rel.apply(cell_text, axis=1)
    column = rel["candidate"] + " vs " + rel["baseline"]
    if rel["workload"].nunique() > 1:
        column = column + " · " + rel["workload"]
    order = (rel.sort_values("rate") if "rate" in rel else rel)["offered"].drop_duplicates().tolist()
    out = rel.assign(cell=cell, column=column).pivot(index="offered", columns="column", values="cell")
    return out.loc[order, list(dict.fromkeys(column))].reset_index().rename_axis(columns=None)


def seconds_at(run: Run, loaded: pd.DataFrame) -> tuple[pd.DataFrame, str]:
    """The open-loop steps of one level second by second (`plots.per_second`), with a title:
    the highest level every arm sustained in every round (else the lowest level) of the
    first workload."""
    if loaded.empty:
        return pd.DataFrame(), ""
    mine = loaded[loaded["workload"] == loaded["workload"].iloc[0]]
    kept = mine.groupby("rate")["ol_sustained"].all()
    rate = kept[kept].index.max() if kept.any() else kept.index.min()
    steps = mine[mine["rate"] == rate][["step", "arm", "load"]]
    seconds = run.table(OL_SECONDS).merge(steps, on="step")
    load = steps["load"].iloc[0]
    return seconds, (f"{mine['workload'].iloc[0]} at {offered(rate, load)}"
                     + ("" if kept.any() else ": not sustained"))


# ---------------------------------------------------------------- capacity at a p99 target

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

    out = _not_compared(rel, lambda r: ("only a bound for " + " and ".join(bound(r)) + " (the levels "
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


# ---------------------------------------------------------------- the study's tables and text

def tables(run: Run, p: Any, arms: list[Arm], missing: list[tuple[str, str]] = ()) -> dict[str, pd.DataFrame]:
    """Everything the report shows: `peaks` (the peak phase), `peak` (closed-loop tps
    comparison), `levels`, `p99` and `p50` (per level), `capacity` (per arm) and
    `capacity_rel` (the comparison); with a paused twin, the positive control's tables per
    percentile (`control_tables`) and what each found against what the pause must do
    (`control`)."""
    closed, loaded = split(run)
    peak = baseline_peak(closed, arms[0].label)
    if len(loaded):  # levels given as rates: their fraction of the baseline's peak too
        top = pd.Series([peak.get((w, t), math.nan) for w, t in zip(loaded["workload"], loaded["threads"])],
                        index=loaded.index)
        loaded = loaded.assign(load=loaded["load"].fillna(loaded["rate"] / top))
    peak_rel = compare_arms(closed, arms, by=["workload", "threads"], value="tps",
                            higher_is_better=True, threshold=p.draw_threshold) if len(closed) else pd.DataFrame()
    per_arm, cap_rel = compare_capacity(loaded, arms, p) if len(loaded) else (pd.DataFrame(), pd.DataFrame())
    lv = levels(loaded)
    paused = control.control_arm(arms)
    ctl = ({m: compare_levels(loaded, arms, p, m, candidates=[paused.label]) for m in control.OPEN_TAIL}
           if paused is not None and len(loaded) else {})
    return {"peaks": peaks(closed), "peak": peak_rel.assign(baseline=arms[0].label) if len(peak_rel) else peak_rel,
            "levels": lv,
            "p99": compare_levels(loaded, arms, p, "p99", missing),
            "p50": compare_levels(loaded, arms, p, "p50", missing),
            "capacity": per_arm, "capacity_rel": cap_rel, "loaded": loaded,
            "control_tables": ctl,
            "control": control.found(ctl, control.open_loop(ctl, lv, arms, peak), by=control.OPEN_BY)}


def baseline_peak(closed: pd.DataFrame, baseline: str) -> pd.Series:
    """The baseline's median closed-loop transactions/s per (workload, threads)."""
    mine = closed[closed["arm"] == baseline]
    return mine.groupby(["workload", "threads"])["tps"].median() if len(mine) else pd.Series(dtype=float)


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


def sustained_line(t: dict[str, pd.DataFrame]) -> str:
    """The offered levels an arm did not sustain (its latency there a lower bound), or ""."""
    lv = t["levels"]
    if not len(lv) or not lv["lower_bound"].any():
        return ""
    return "Not sustained (latency a lower bound): " + "; ".join(
        f"{r.arm} at {r.offered}" for r in lv[lv["lower_bound"]].itertuples())


def headline(t: dict[str, pd.DataFrame], p: Any, arms: list[Arm]) -> list[str]:
    """What opens the report and the terminal beside the per-level verdicts: the capacity
    (the study's answer) and the levels not sustained."""
    behind = sustained_line(t)
    return [*capacity_lines(t, p, arms), *([behind] if behind else [])]


def conclusion(t: dict[str, pd.DataFrame], p: Any, arms: list[Arm]) -> str:
    """A short Markdown conclusion computed from the tables (no claim is hard-coded): the
    capacity verdicts first (the headline, with what they could detect), then each arm's
    capacity and closed-loop peak, the per-level verdicts, the levels not sustained and the
    positive control."""
    lines = [f"- {x}." for x in capacity_lines(t, p, arms)]
    for r in t["peaks"].itertuples():
        lines.append(f"- Closed loop at {r.threads} connections ({r.workload}): {r.arm} peaks at "
                     f"{r.tps_median:,.0f} transactions/s (median of {r.n}), closed-loop p99 "
                     f"{r.closed_p99_ms_median:.3g} ms.")
    for name in ("p99", "p50"):
        rel = t[name]
        if rel.empty:
            continue
        tested = rel[rel["delta_pct"].notna()]
        counts = rel["verdict"].astype(str).str.split(":").str[0].value_counts()
        parts = [f"{n} {v}" for v, n in counts.items()]
        line = f"- {name} per offered level (up to {VERDICT_LOAD * 100:.0f} % of the peak): {', '.join(parts)}"
        if len(tested):
            big = tested.loc[tested["delta_pct"].abs().idxmax()]
            line += (f"; the largest difference {signed(big.delta_pct)} at {big.offered} "
                     f"({big.candidate}, {big.verdict})")
        lines.append(line + ".")
    behind = sustained_line(t)
    if behind:
        lines.append(f"- {behind}.")
    paused = control.control_arm(arms)
    lines += control.lines(t.get("control", pd.DataFrame()), paused.pause if paused else None)
    return "\n".join(lines)
