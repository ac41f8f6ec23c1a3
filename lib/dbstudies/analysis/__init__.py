"""The analysis studies share, above the measurement loop (`experiment`) and below the report.

- Comparison tables of any study in the design its steps were measured in (`design_table`:
  pairs per round, else independent repeats; `compare_arms`, `aa_table`), per-group step
  summaries (`step_summary`).
- What every sysbench scaling study ends with: a summary per configuration, the comparison
  tables (each arm against the baseline arm, one Holm family per table; the A/A table apart),
  the "relative results" layout of our sources, the paired ratios behind each verdict, the
  calibration on real A/A pairs, and the sentences of the conclusion that do not depend on
  the study. Studies call these with their own arms and words (`studies/thread_pool/`,
  `studies/versions/`).
"""
from __future__ import annotations

from typing import Any

import pandas as pd

from .. import stats
from ..core.comparisons import COUNTED, FEWEST_TAIL, SYSBENCH, Comparison, by_key, columns
from ..kit.studykit import BY, Arm  # a sysbench cell
from .words import WIDE, WORDS, _threshold_pct, adjusted, field, word_of  # noqa: F401 - the vocabulary, said here too

# ---------------------------------------------------------------- comparison tables of any study

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


# ---------------------------------------------------------------- sysbench scaling studies

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


def verdict_text(r: Any) -> str:
    """A comparison's verdict as a table says it: better, worse — or, for a draw, what its
    interval says (`word_of`), its band as applied: the same within the draw band, within a
    precision target's band, or inconclusive with what the cell could see.

    >>> verdict_text(pd.Series({"verdict": "draw", "reading": "same", "target_pct": 20.0, "threshold_pct": 5.0}))
    'the same within −4.8 … +5 %'
    >>> verdict_text(pd.Series({"verdict": "draw", "reading": "bounded", "target_pct": 20.0, "threshold_pct": 5.0}))
    "within the target's −16.7 … +20 %: not shown to exceed 5 %, nor to be under it"
    >>> verdict_text(pd.Series({"verdict": "draw", "reading": "undecided", "target_pct": 25.0,
    ...                         "target_mde_pct": 38.2, "more_pairs": 14}))
    'inconclusive: could see ±38 %, the target −20.0 … +25 % needs about 14 more rounds'
    >>> verdict_text(pd.Series({"verdict": "draw", "reading": "undecided", "target_pct": 5.0,
    ...                         "target_mde_pct": 4.9, "more_pairs": 0}))
    'inconclusive: precise to the target (could see ±4.9 %), but its interval reaches past −4.8 … +5 %'
    >>> verdict_text(pd.Series({"verdict": "draw", "ci_low": 0.663, "ci_high": 1.012, "mde_pct": 27.0, "threshold_pct": 5.0}))
    'inconclusive: could see ±27 %'
    >>> verdict_text(pd.Series({"verdict": "draw", "ci_low": 0.97, "ci_high": 1.04, "threshold_pct": 5.0}))
    'the same within −4.8 … +5 %'
    """
    reading = field(r, "reading")
    word = word_of(r)
    if field(r, "verdict") != "draw" or word not in WORDS:
        return str(field(r, "verdict"))
    if word == "same":
        return f"the same within {stats.bounds_text(_threshold_pct(r) / 100)}"
    if reading not in ("bounded", "undecided"):  # no target: what the draw could have seen
        mde = field(r, "mde_pct")
        return (f"inconclusive: could see ±{stats.mde_text(mde)}" if mde is not None and mde == mde and mde <= 1000
                else "inconclusive: too few repeats to see any size")
    target = stats.bounds_text(field(r, "target_pct") / 100)
    if reading == "bounded":
        return (f"within the target's {target}: not shown to exceed {_threshold_pct(r):g} %, "
                "nor to be under it")
    if not field(r, "more_pairs"):
        return (f"inconclusive: precise to the target (could see ±{field(r, 'target_mde_pct'):.1f} %), but its "
                f"interval reaches past {target}")
    more = field(r, "more_pairs")
    need = ("is out of reach" if not more < float("inf") else
            f"needs about {int(more)} more round{'s' if more != 1 else ''}")
    return f"inconclusive: could see ±{stats.mde_text(field(r, 'target_mde_pct'))}, the target {target} {need}"


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


def layout(rel: pd.DataFrame) -> pd.DataFrame:
    """The sources' "relative results" layout: threads down, one column per workload (one
    candidate), per candidate (one workload) or per both — each named "candidate vs baseline"
    where the table knows its baseline — each cell `+4.1 % [−1.0, +9.3] better`."""
    if rel.empty:
        return rel
    cell = rel.apply(cell_text, axis=1)
    many_c, many_w = rel["candidate"].nunique() > 1, rel["workload"].nunique() > 1
    pair = rel["candidate"] + " vs " + rel["baseline"] if "baseline" in rel else rel["candidate"]
    column = (pair + " · " + rel["workload"] if many_c and many_w or "baseline" in rel and many_w
              else pair if many_c or "baseline" in rel else rel["workload"])
    return wide(rel, cell, column)


def interval(r: Any, low: str = "ci_low", high: str = "ci_high") -> str:
    """A comparison's interval in %, '[−3.0, +9.2]'; '[unbounded: 2 pairs]' when its ends
    are more than `WIDE` times apart (too few pairs or repeats for this noise) — unless its
    verdict is better or worse: an interval that excludes no change says where, however wide.

    >>> interval(pd.Series({"ci_low": 0.97, "ci_high": 1.092, "n_baseline": 5}))
    '[−3.0, +9.2]'
    >>> interval(pd.Series({"ci_low": 0.0001, "ci_high": 4e8, "n_baseline": 2, "sd_diff": 1.0}))
    '[unbounded: 2 pairs]'
    >>> interval(pd.Series({"ci_low": 0.01, "ci_high": 0.5, "n_baseline": 4, "verdict": "better"}))
    '[−99.0, −50.0]'
    """
    lo, hi = field(r, low), field(r, high)
    decided = field(r, "verdict") in ("better", "worse") and lo > 0 and hi > 0  # it excludes no change: say where
    if not decided and (not (lo > 0 and hi > 0) or hi / lo > WIDE):
        n = field(r, "n_baseline")
        unit = "pair" if field(r, "sd_diff") is not None else "repeat"
        return f"[unbounded: {int(n)} {unit}{'s' if n != 1 else ''}]" if n == n and n is not None else "[unbounded]"
    d = digits(r)
    return f"[{signed((lo - 1) * 100, d).removesuffix(' %')}, {signed((hi - 1) * 100, d).removesuffix(' %')}]"


def digits(r: Any) -> int:
    """The decimals a row's effect is said with: those of the draw band it was judged by
    (`stats.decimals`: two for a count's 0.2 %) — one more where an end of its interval would
    print as the band's edge, so that an interval just past it never reads as a tie.

    >>> digits(pd.Series({"ci_low": 0.9523, "ci_high": 1.03, "threshold_pct": 5.0}))  # −4.77 %: just past −4.76
    2
    >>> digits(pd.Series({"ci_low": 0.96, "ci_high": 1.03, "threshold_pct": 5.0}))
    1
    """
    th = _threshold_pct(r)
    d = stats.decimals(th / 100)
    edges = ((1 / (1 + th / 100) - 1) * 100, th)
    for col in adjusted(r):
        v = field(r, col)
        if v is None or not v == v or v <= 0:
            continue
        end = (v - 1) * 100
        if any(round(end, d) == round(e, d) and abs(end - e) > 1e-9 for e in edges):
            return d + 1
    return d


def effect(r: Any, low: str = "ci_low", high: str = "ci_high") -> str:
    """A row's difference with its interval, as every view says it: '−3.4 % [−7.9, +1.3]'
    ('−0.18 % [−0.21, −0.15]' in a count's 0.2 % band).

    >>> effect(pd.Series({"delta_pct": -0.18, "ci_low": 0.9979, "ci_high": 0.9985, "threshold_pct": 0.2}))
    '−0.18 % [−0.21, −0.15]'
    """
    return f"{signed(field(r, 'delta_pct'), digits(r))} {interval(r, low, high)}"


def cell_text(r: Any, alpha: float = stats.ALPHA) -> str:
    """One comparison as a table cell: difference, its Holm-adjusted 95 % interval (both in
    %; the raw CI for tables without one), verdict — and why an interval that excludes 0
    is still a draw.

    >>> r = pd.Series({"delta_pct": -28.1, "ci_low": 0.570, "ci_high": 0.908, "p_holm": 0.2, "verdict": "draw",
    ...                "mde_pct": 45.0})
    >>> cell_text(r)
    '−28.1 % [−43.0, −9.2] inconclusive: could see ±45 % — not significant after Holm (p = 0.2)'
    >>> cell_text(pd.Series({**r, "holm_ci_low": 0.45, "holm_ci_high": 1.1}))
    '−28.1 % [−55.0, +10.0] inconclusive: could see ±45 %'
    >>> cell_text(pd.Series({**r, "delta_pct": 0.0, "ci_low": 1.0, "ci_high": 1.0}))
    'the same within −4.8 … +5 %: identical in every repeat'
    >>> cell_text(pd.Series({**r, "delta_pct": 4.0, "ci_low": 1.026, "ci_high": 1.045, "p_holm": 0.017}))
    '+4.0 % [+2.6, +4.5] the same within −4.8 … +5 % — significant, but within the draw threshold'
    """
    if pd.isna(r.delta_pct):
        return str(r.verdict)
    if r.verdict == stats.NOT_JUDGED:  # one pair: its difference, no interval, no test
        return f"{signed(r.delta_pct, digits(r))} not judged: one pair, no test"
    if r.ci_low == r.ci_high == 1:
        return f"{verdict_text(r)}: identical in every repeat"
    lo, hi = adjusted(r)
    text = f"{effect(r, lo, hi)} {verdict_text(r)}"
    if r.verdict == "draw" and not field(r, "reading") and (r[lo] > 1 or r[hi] < 1):
        text += (f" — not significant after Holm (p {p_text(r.p_holm)})" if r.p_holm >= alpha
                 else " — significant, but within the draw threshold")
    return text


CELL_KEYS = ("workload", "threads", "offered", "query", "all")  # what names a cell, where a table has it


def cell_name(r: Any) -> str:
    """A cell in words, from the keys a row has of `CELL_KEYS`.

    >>> cell_name({"workload": "oltp_point_select", "threads": 256}), cell_name({"query": 7})
    ('oltp_point_select, 256 client threads', 'Q7')
    """
    parts = []
    for key in CELL_KEYS:
        v = r.get(key) if hasattr(r, "get") else getattr(r, key, None)
        if v is None or v != v:
            continue
        parts.append(threads(int(v)) if key == "threads" else f"Q{int(v)}" if key == "query" else str(v))
    return ", ".join(parts)


def wide(frame: pd.DataFrame, cell: pd.Series, column: pd.Series) -> pd.DataFrame:
    """Threads down, one column per distinct `column` value (in the frame's order, not the
    alphabet's), `cell` text in each."""
    out = frame.assign(cell=cell, column=column).pivot(index="threads", columns="column", values="cell")
    return out[list(dict.fromkeys(column))].reset_index().rename_axis(columns=None)


def threads(n: int) -> str:
    return f"{n} client thread" + ("" if n == 1 else "s")


def verdicts(rel: pd.DataFrame) -> str:
    """A table's cells counted by their words (`word_of`), in `WORDS`' order, the band of
    'same' said as applied: '1 better, 1 the same within −4.8 … +5 %, 2 inconclusive'."""
    if rel.empty:
        return ""
    said = pd.Series([w if w in WORDS else str(r.verdict) for r in rel.itertuples(index=False)  # a censored
                      for w in [word_of(r)]], dtype=object).value_counts()  # query's verdict says why, whole
    same = f"the same within {stats.bounds_text(_threshold_pct(rel.iloc[0]) / 100)}"
    order = [*WORDS, *(w for w in said.index if w not in WORDS)]
    return ", ".join(f"{said[w]} {same if w == 'same' else w}" for w in order if w in said)


def p_text(p: float) -> str:
    """A p-value as the sentences say it, with its relation: '= 0.029', '< 0.001'.

    >>> p_text(0.029), p_text(2.6e-07)
    ('= 0.029', '< 0.001')
    """
    return "< 0.001" if p < 0.001 else f"= {p:.2g}"


def signed(pct: float, digits: int = 1) -> str:
    """A difference as the reports write it.

    >>> signed(-3.42), signed(17.2), signed(-0.183, 2)
    ('−3.4 %', '+17.2 %', '−0.18 %')
    """
    return f"{pct:+.{digits}f} %".replace("-", "−")


NOT_INTERLEAVED = ("The two runs were not interleaved: anything that changed between them "
                   "(host load, kernel, firmware, other tenants) is confounded with the "
                   "difference. Prefer one run with both configurations as arms.")
