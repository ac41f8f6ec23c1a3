"""Comparison tables, in the design a run's steps were measured in (`design_table`: pairs per
round, else independent repeats; `compare_arms`, `aa_table`), per-group step summaries, and
what every sysbench scaling study ends with: a summary per configuration, each arm against the
baseline per cell (one Holm family per table; the A/A table apart), judged by the draw threshold
and the precision targets (`threshold`, `to_target`), a tail cell resting on too few
transactions left out (`tail_rests`).
"""
from __future__ import annotations

from typing import Any

import pandas as pd

from .. import stats
from ..core.comparisons import COUNTED, FEWEST_TAIL, SYSBENCH, Comparison, by_key, columns
from ..kit.studykit import BY, Arm  # a sysbench cell
from .words import WIDE


def step_summary(steps: pd.DataFrame, by: list[str], metrics: dict[str, str]) -> pd.DataFrame:
    """Per group: for each metric (prefix → column) n, median, min, max, IQR, CV and the
    median's CI; then median CPU of server and client, how many steps ran on a busy host
    (after their retries) and how many busy attempts were discarded and measured again."""
    out = None
    for prefix, column in metrics.items():
        s = stats.summarize(steps, by, column)
        s = s.rename(columns={c: f"{prefix}_{c}" for c in s.columns if c not in by})
        out = s if out is None else out.merge(s.drop(columns=f"{prefix}_n"), on=by)
    if "remeasured" not in steps:
        steps = steps.assign(remeasured=0)
    extra = steps.groupby(by).agg(cpu_server_pct=("cpu_server_pct", "median"),
                                  cpu_client_pct=("cpu_client_pct", "median"),
                                  busy_steps=("host_busy", "sum"),
                                  remeasured=("remeasured", "sum")).reset_index()
    return out.merge(extra, on=by)


def in_percent(table: pd.DataFrame) -> pd.DataFrame:
    """A table in one unit, %, for showing: a CI of a ratio (ci_low, ci_high, the Holm-adjusted
    and the rank test's) as the differences it spans (ci_low_pct …; left empty where the
    interval is unbounded, its ends more than `WIDE` times apart), a coefficient of variation
    (…_cv) × 100 (…_cv_pct), next to delta_pct.

    >>> in_percent(pd.DataFrame({"ci_low": [0.9, 1e-6], "ci_high": [1.25, 40.0], "qps_cv": [0.05, 0.1]})).round(6).to_dict("list")
    {'ci_low_pct': [-10.0, nan], 'ci_high_pct': [25.0, nan], 'qps_cv_pct': [5.0, 10.0]}
    """
    pairs = [(lo, lo.replace("low", "high")) for lo in ("ci_low", "holm_ci_low", "rank_ci_low")
             if lo in table.columns and lo.replace("low", "high") in table.columns]
    cvs = [c for c in table.columns if c.endswith("_cv") or c == "cv"]
    out = table.assign(**{c: table[c] * 100 for c in cvs})
    for lo, hi in pairs:
        wide = ~((table[lo] > 0) & (table[hi] / table[lo] <= WIDE))
        out[lo] = ((table[lo] - 1) * 100).mask(wide)
        out[hi] = ((table[hi] - 1) * 100).mask(wide)
    ratios = [c for pair in pairs for c in pair]
    return out.rename(columns={c: f"{c}_pct" for c in ratios + cvs})


def is_paired(steps: pd.DataFrame) -> bool:
    """Whether measured steps come from the paired design (every step in a pair): runs of
    the block design, old ones included, are analysed as they always were."""
    return "pair" in steps and len(steps) > 0 and bool((steps["pair"].fillna(0) > 0).all())


def design_table(steps: pd.DataFrame, **kw: Any) -> pd.DataFrame:
    """A comparison table of the design the steps (or executions) were measured in: pairs per
    round (`stats.paired_table`), else independent repeats (`stats.compare_table`); with
    the draw threshold its verdicts were judged by (`threshold_pct`), which the words say."""
    table = stats.paired_table(steps, pair="repeat", **kw) if is_paired(steps) else stats.compare_table(steps, **kw)
    return table.assign(threshold_pct=kw.get("threshold", stats.THRESHOLD) * 100) if len(table) else table


def compare_arms(steps: pd.DataFrame, arms: list[Arm], *, by: list[str], value: str,
                 higher_is_better: bool = True, threshold: float = stats.THRESHOLD) -> pd.DataFrame:
    """Every arm but the baseline (arms[0]) and the A/A twin against the baseline, per
    group of `by`, in one Holm family (paired per round when the steps were)."""
    candidates = [a.label for a in arms[1:] if a.twin_of is None]
    return design_table(steps, by=by, factor="arm", baseline=arms[0].label, candidates=candidates,
                  value=value, higher_is_better=higher_is_better, threshold=threshold)


def aa_table(steps: pd.DataFrame, arms: list[Arm], *, by: list[str], value: str,
             higher_is_better: bool = True, threshold: float = stats.THRESHOLD) -> pd.DataFrame:
    """The A/A control: the baseline's twin against the baseline (its own Holm family).
    Empty when the run has no twin. Every verdict should be a draw; one that is not shows
    how often this design calls noise a difference."""
    twins = [a.label for a in arms if a.aa]
    if not twins:
        return pd.DataFrame()
    return design_table(steps, by=by, factor="arm", baseline=arms[0].label, candidates=twins,
                  value=value, higher_is_better=higher_is_better, threshold=threshold)


def summary(steps: pd.DataFrame) -> pd.DataFrame:
    """Per workload × arm × threads: QPS, p50, p95, p99 and the tail ratio where the steps have them
    (median, min, max, CV, CI), CPU, busy steps."""
    return step_summary(steps, ["workload", "arm", "threads"],
                        {k: col for k, col in columns(SYSBENCH).items() if col in steps})


def ratios_per_round(steps: pd.DataFrame, arms: list[Arm], metric: str = "qps",
                     judged: pd.DataFrame | None = None) -> pd.DataFrame:
    """Every round's ratio candidate / baseline per workload × threads (paired steps; the
    A/A twin left to its own table), for `plots.ratios_per_round`; empty for blocks, without
    a candidate, and where the run does not judge `metric` (`judged`, its table, is empty:
    a count run's throughput)."""
    if not is_paired(steps) or (judged is not None and judged.empty):
        return pd.DataFrame()
    column = by_key((*SYSBENCH, *COUNTED), metric).column
    out = [stats.pair_up(steps, by=BY, factor="arm", baseline=arms[0].label, candidate=a.label,
                         value=column, pair="repeat").assign(candidate=a.label)
           for a in arms[1:] if a.twin_of is None]
    if not out:
        return pd.DataFrame()
    out = pd.concat(out, ignore_index=True)
    return out.assign(ratio=out["b"] / out["a"])


def relative(steps: pd.DataFrame, arms: list[Arm], p: Any, metric: str = "qps", *,
             aa: bool = False) -> pd.DataFrame:
    """Every arm against the baseline (arms[0]) per workload × threads, one Holm family;
    with `aa`, the A/A table instead (the baseline against its twin). `metric`: a key of the
    study's comparisons (`comparison`)."""
    c = comparison(p, metric)
    return versus_baseline(steps, arms, p, c.column, c.higher_is_better, aa=aa, metric=metric)


def comparison(p: Any, key: str) -> Comparison:
    """The comparison `key` of a study's parameters (its `COMPARISONS`)."""
    return by_key(p.COMPARISONS, key)


def over_repeats(run_table: pd.DataFrame, columns: list[str],
                 by: tuple[str, ...] = ("workload", "threads", "arm")) -> pd.DataFrame:
    """Per group of long-step summaries (one row per run, `timeseries.run_summaries` and
    more): n, the median, min and max over repeats of each of `columns`, and
    `never_steady`, how many of its runs did not settle."""
    g = run_table.groupby(list(by), sort=False)
    out = g.size().rename("n").to_frame()
    for col in columns:
        out[f"{col}_median"] = g[col].median()
        out[f"{col}_min"] = g[col].min()
        out[f"{col}_max"] = g[col].max()
    out["never_steady"] = g["steady"].apply(lambda s: int((~s.astype(bool)).sum()))
    return out.reset_index()


def versus_baseline(run_table: pd.DataFrame, arms: list[Arm], p: Any, column: str,
                    higher_is_better: bool, *, aa: bool = False, metric: str | None = None) -> pd.DataFrame:
    """Every arm against the baseline (arms[0]) on one per-run `column`, per workload ×
    threads, one Holm family; with `aa`, the A/A table (the baseline against its twin).
    `arms` include the A/A twin when `p.aa_control` (`studykit.with_control`). `metric`:
    the table's name in a precision `target` (`to_target`)."""
    compare = aa_table if aa else compare_arms
    kept, few = tail_rests(run_table, by_key(p.COMPARISONS, metric) if metric else None)
    rel = compare(kept, arms, by=BY, value=column, higher_is_better=higher_is_better,
                  threshold=threshold(p, metric))
    rel = to_target(rel.assign(baseline=arms[0].label) if not rel.empty else rel, p, metric)
    if len(few) and not rel.empty:  # shown, never dropped: why the cell is not judged
        rows = [few.assign(candidate=a.label, baseline=arms[0].label) for a in arms[1:] if not a.aa or aa]
        rel = pd.concat([rel, *rows], ignore_index=True)
    return rel


def tail_rests(run_table: pd.DataFrame, c: Comparison | None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The steps a comparison may judge, and the cells it may not (with their verdict): where
    the statistic rests on a share of a step's transactions (`rests_on`), a cell whose median
    step gives it fewer than `FEWEST_TAIL` transactions is not judged on it.

    >>> s = pd.DataFrame({"workload": ["r"] * 2 + ["p"] * 2, "threads": [16] * 4, "events": [1600, 1700, 9000, 9100]})
    >>> kept, few = tail_rests(s, Comparison("p99", "latency_p99_ms", False, "p99", rests_on=0.01))
    >>> kept["workload"].unique().tolist(), few["verdict"].tolist()
    (['p'], ['not judged: its slowest 1 % is 16 transactions a step (fewer than 20)'])
    """
    if c is None or c.rests_on >= 1 or "events" not in run_table or run_table.empty:
        return run_table, pd.DataFrame()
    per = run_table.groupby(BY)["events"].median() * c.rests_on
    thin = per[(per < FEWEST_TAIL) & (per > 0)]  # 0: not counted (steps made up for a test)
    if thin.empty:
        return run_table, pd.DataFrame()
    out = ~run_table.set_index(BY).index.isin(thin.index)
    share = f"{c.rests_on * 100:g} %"
    few = thin.reset_index().assign(verdict=[f"not judged: its slowest {share} is {n:.0f} transactions a step "
                                             f"(fewer than {FEWEST_TAIL})" for n in thin.to_numpy()])
    return run_table[out], few[[*BY, "verdict"]]


def target_of(p: Any, metric: str | None) -> float | None:
    """The precision target of a table (`metric`) in these parameters, if any."""
    return (getattr(p, "target", None) or {}).get(metric)


def threshold(p: Any, metric: str | None) -> float:
    """A table's draw threshold: `draw_threshold`, or the table's precision target where that
    is smaller (a run measured to see 3 % calls a significant 4 % difference).

    >>> from types import SimpleNamespace as NS
    >>> threshold(NS(draw_threshold=0.05, target={"qps": 0.03}), "qps"), threshold(NS(draw_threshold=0.05, target={}), "qps")
    (0.03, 0.05)
    """
    target = target_of(p, metric)
    return min(p.draw_threshold, target) if target else p.draw_threshold


def to_target(rel: pd.DataFrame, p: Any, metric: str | None) -> pd.DataFrame:
    """A paired table whose metric has a precision target, with what each draw says of it
    (`stats.target_readings`: the same within ±target, or undecided); other tables as they are."""
    target = target_of(p, metric)
    if not target or rel.empty or "sd_diff" not in rel:
        return rel
    return stats.target_readings(rel, target, threshold=p.draw_threshold)


def with_unavailable(rel: pd.DataFrame, missing: list[tuple[str, str]],
                     by: list[str] = BY) -> pd.DataFrame:
    """`rel` plus, for each (arm label, flavour) that cannot be measured, one row per cell
    (of `by`) with verdict "not available on <flavour>" and no figures — shown, never dropped
    or faked."""
    cells = rel[by].drop_duplicates()
    extra = [cells.assign(candidate=label, verdict=f"not available on {flavour}",
                          **({"baseline": rel["baseline"].iloc[0]} if "baseline" in rel and len(rel) else {}))
             for label, flavour in missing]
    return pd.concat([rel, *extra], ignore_index=True) if extra else rel


NOT_INTERLEAVED = ("The two runs were not interleaved: anything that changed between them "
                   "(host load, kernel, firmware, other tenants) is confounded with the "
                   "difference. Prefer one run with both configurations as arms.")
