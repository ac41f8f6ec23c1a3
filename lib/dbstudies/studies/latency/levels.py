"""The latency study's analysis: the peak phase (closed-loop peak per arm), the offered-load
cells it implies, per-level latency from the scheduled start, comparisons per level that
never treat a lower bound as a number, and the capacity at a p99 target."""
from __future__ import annotations

import math
from typing import Any, Callable

import pandas as pd

from ...analysis import (
    cell_text,
    compare_arms,
    control,
    design_table,
    signed,
    with_unavailable,
)
from ...core.errors import StoreError
from ...kit.studykit import Arm
from ...store import results
from ...store.results import Run
from ...store.tables import OL_SECONDS, OPEN_LOOP
from .capacity import capacity_lines, compare_capacity, not_compared

CELL = ["workload", "threads", "rate"]
VERDICT_LOAD = 0.7   # latency verdicts per level up to this fraction of the baseline's peak
MAX_LADDER = 8       # capacity_levels at most
ABOVE = (f"not compared: above {VERDICT_LOAD * 100:.0f} % of the peak, where queueing amplifies a small "
         "capacity difference in latency by 1/(1 − load); the capacity verdict judges it")
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
    out = not_compared(rel, _behind(loaded, base)).assign(baseline=base)
    above = loaded.loc[high, CELL].drop_duplicates()
    if len(above):  # shown, not hidden: the reader sees which levels the capacity judges instead
        out = pd.concat([out, *[above.assign(candidate=c, baseline=base, verdict=ABOVE)
                                for c in out["candidate"].unique()]], ignore_index=True)
    load = loaded.groupby(CELL)["load"].first()
    out["offered"] = [offered(r, load.get((w, t, r), math.nan))
                      for w, t, r in zip(out["workload"], out["threads"], out["rate"])]
    return with_unavailable(out, list(missing), [*CELL, "offered"]) if missing else out


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
