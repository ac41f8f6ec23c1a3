"""The analysis of timed queries with a timeout, their plans and forced join orders (the DBT3
study's tables; any study that times SQL statements per candidate can use them).

Executions are rows with `query`, `arm`, `repeat`, `seconds` (NaN when it timed out),
`timed_out`, `order_of` (whose join order was forced; `OWN_PLAN` for the candidate's own)
and, in the paired design, `pair`. `p` is the study's parameters: `queries`, `timeout`,
`draw_threshold`. Arms are the run's (`studykit.arms_of`); the A/A twin is left to its own
table.
"""
from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from ... import stats
from ...analysis import (
    adjusted,
    compare_arms,
    digits,
    interval,
    is_paired,
    signed,
    threshold,
    to_target,
    verdict_text,
    verdicts,
)
from ...kit.studykit import Arm
from ...workloads import sql

OWN_PLAN = ""  # order_of of an execution with the candidate's own plan


def _geomean(s: pd.Series) -> float:
    s = s.dropna()
    return float(np.exp(np.log(s).mean())) if len(s) else float("nan")


def _compared(arms: list[Arm]) -> list[Arm]:
    return [a for a in arms if a.twin_of is None]


def summary(ex: pd.DataFrame) -> pd.DataFrame:
    """Per query × candidate: n, timeouts, geometric mean, median, min and max seconds (of
    those that finished), median handler reads."""
    g = ex.groupby(["query", "arm"], sort=False)
    out = g.agg(n=("seconds", "size"), timeouts=("timed_out", "sum"), geomean_s=("seconds", _geomean),
                median_s=("seconds", "median"),
                min_s=("seconds", "min"), max_s=("seconds", "max"),
                handler_reads=("handler_reads", "median")).reset_index()
    return out.sort_values(["query"], kind="stable", ignore_index=True)


def censored(ex: pd.DataFrame, by: list[str], factor: str, baseline: str, candidates: list[str],
             p: Any, metric: str | None = None) -> pd.DataFrame:
    """`stats.censored_table` in the design the executions were measured in (`metric`: the
    table's name in a precision target, which may lower its draw threshold)."""
    return stats.censored_table(ex, by=by, factor=factor, baseline=baseline, candidates=candidates,
                                timeout=p.timeout, paired=is_paired(ex), threshold=threshold(p, metric))


def relative(ex: pd.DataFrame, arms: list[Arm], p: Any) -> pd.DataFrame:
    """Every candidate against the baseline per query (seconds, lower is better), one Holm
    family over the table. A query with a timeout on either side is not tested (its times
    are censored): its verdict says so."""
    a = _compared(arms)
    rel = censored(ex, ["query"], "arm", a[0].label, [c.label for c in a[1:]], p, "seconds")
    return to_target(rel.assign(baseline=a[0].label) if not rel.empty else rel, p, "seconds")


def execution_ratios(ex: pd.DataFrame, arms: list[Arm]) -> pd.DataFrame:
    """Every round's time ratio candidate / baseline per query (paired executions; timed-out
    ones left out), for `plots.ratios_per_round`; empty for blocks."""
    if not is_paired(ex):
        return pd.DataFrame()
    a = _compared(arms)
    done = ex[~ex["timed_out"]]
    out = pd.concat([stats.pair_up(done, by=["query"], factor="arm", baseline=a[0].label,
                                   candidate=c.label, value="seconds", pair="repeat")
                     .assign(candidate=c.label) for c in a[1:]], ignore_index=True)
    return out.assign(ratio=out["b"] / out["a"], all="all queries")


GEOMEAN_COLUMNS = ["candidate", "n_baseline", "n_candidate", "median_baseline", "median_candidate",
                   "delta_pct", "ci_low", "ci_high", "p_value", "verdict"]  # what the notebook shows


def geomean(ex: pd.DataFrame, arms: list[Arm], p: Any) -> pd.DataFrame:
    """Per candidate × repeat (round): the geometric mean of the queries' seconds (repeats
    where a query timed out are left out), then each candidate against the baseline (paired by
    round when the executions were)."""
    per_repeat = (ex[~ex["timed_out"]].groupby(["arm", "repeat"])
                  .agg(n=("seconds", "size"), geomean_s=("seconds", lambda s: float(np.exp(np.log(s).mean()))))
                  .reset_index())
    per_repeat = per_repeat[per_repeat["n"] == len(p.queries)].assign(all="all queries")
    if is_paired(ex):  # a round's geometric means were measured in pairs
        per_repeat["pair"] = per_repeat["repeat"]
    rel = compare_arms(per_repeat, _compared(arms), by=["all"], value="geomean_s",
                       higher_is_better=False, threshold=p.draw_threshold)
    return rel.assign(baseline=_compared(arms)[0].label) if not rel.empty else rel


def plan_diff(plans: pd.DataFrame, arms: list[Arm], queries: list[int]) -> pd.DataFrame:
    """Per query: each candidate's join order (`sql.join_order` rows of its plan, query block
    by block) and whether they differ."""
    rows = []
    for q in queries:
        row: dict[str, Any] = {"query": f"Q{q}"}
        for a in _compared(arms):
            part = plans[(plans["query"] == q) & (plans["arm"] == a.label)]
            row[a.label] = sql.order_signature(part.to_dict("records")) if not part.empty else ""
        row["differs"] = len({v for k, v in row.items() if k != "query"}) > 1
        rows.append(row)
    return pd.DataFrame(rows)


def forced(tried: pd.DataFrame, fx: pd.DataFrame, p: Any) -> pd.DataFrame:
    """The forced-order phase, one row per STRAIGHT_JOIN rewrite `tried` (candidate × query ×
    the candidate whose order it forces): whether the order was in effect, and the timings of
    the phase's executions `fx` — own plan, forced, and the other candidate's own plan (medians
    and ">timeout") — with forced vs own plan and forced vs theirs compared as the queries are
    (each comparison kind one Holm family)."""
    tried = tried.drop_duplicates(["arm", "query", "order_of"])
    if tried.empty:
        return pd.DataFrame()
    vs_own = censored(fx, ["arm", "query"], "order_of", OWN_PLAN, sorted(set(tried["order_of"])), p)
    pairs = []
    for t in tried[tried["forced"]].itertuples():
        pairs.append(fx[(fx["arm"] == t.arm) & (fx["query"] == t.query) & (fx["order_of"] == t.order_of)]
                     .assign(side="forced"))
        pairs.append(fx[(fx["arm"] == t.order_of) & (fx["query"] == t.query) & (fx["order_of"] == OWN_PLAN)]
                     .assign(arm=t.arm, order_of=t.order_of, side="theirs"))
    both = pd.concat(pairs, ignore_index=True) if pairs else fx.assign(side="")
    vs_theirs = censored(both, ["arm", "query", "order_of"], "side", "theirs", ["forced"], p)
    rows = [{"query": t.query, "candidate": t.arm, "order_of": t.order_of,
             "wanted_order": t.wanted_order, "own_order": t.own_order, "forced": t.forced,
             "reason": t.reason, "own": seconds_of(fx, t.arm, t.query, OWN_PLAN),
             "forced_s": seconds_of(fx, t.arm, t.query, t.order_of),
             "theirs": seconds_of(fx, t.order_of, t.query, OWN_PLAN),
             "vs_own": first_row(vs_own, arm=t.arm, query=t.query, candidate=t.order_of),
             "vs_theirs": first_row(vs_theirs, arm=t.arm, query=t.query, order_of=t.order_of)}
            for t in tried.itertuples()]
    return pd.DataFrame(rows).sort_values(["query", "candidate"], kind="stable", ignore_index=True)


def seconds_of(ex: pd.DataFrame, arm: str, query: int, order_of: str) -> dict[str, Any]:
    """n, timeouts, geometric mean, median, min and max seconds of one variant's executions."""
    x = ex[(ex["arm"] == arm) & (ex["query"] == query) & (ex["order_of"] == order_of)]
    s = x["seconds"]
    return {"n": len(x), "timeouts": int(x["timed_out"].sum()), "geomean_s": _geomean(s), "median_s": s.median(),
            "min_s": s.min(), "max_s": s.max()}


def first_row(table: pd.DataFrame, **where: Any) -> dict[str, Any]:
    """The first row of `table` matching `where` as a dict ({} if none)."""
    hit = table
    for k, v in where.items():
        hit = hit[hit[k] == v] if k in hit else hit.iloc[0:0]
    return hit.iloc[0].to_dict() if len(hit) else {}


# ---------------------------------------------------------------- as the report shows them

def seconds_text(s: Any, timeout: float) -> str:
    """Seconds of a summary row as the tables give them — the geometric mean, the estimator
    their verdicts compare (n, timeouts, geomean_s): ">T" when every execution timed out,
    the count of those that did after the geometric mean of the others.

    >>> seconds_text({"n": 3, "timeouts": 1, "geomean_s": 2.345}, 120)
    '2.35 (1 >120)'
    """
    if s["timeouts"] == s["n"]:
        return f">{timeout:g}"
    return f"{s['geomean_s']:.3g}" + (f" ({int(s['timeouts'])} >{timeout:g})" if s["timeouts"] else "")


def share_interval(r: Any) -> str:
    """The Holm-adjusted interval (the raw CI where the table has none) as % of the
    baseline's time, '[30, 41]', or '[unbounded: 2 repeats]'."""
    lo, hi = adjusted(r)
    said = interval(r, lo, hi)
    return said if said.startswith("[unbounded") else f"[{r[lo] * 100:.0f}, {r[hi] * 100:.0f}]"


def relative_text(r: Any) -> str:
    """A comparison row as the tables show it: 35 % [30, 41] better (% of the baseline's
    time, its Holm-adjusted interval)."""
    if pd.isna(r.get("ratio")):
        bound = r.get("bound")
        return f"{bound} {r['verdict']}" if isinstance(bound, str) and bound else str(r["verdict"])
    return f"{r['ratio'] * 100:.0f} % {share_interval(r)} {verdict_text(r)}"


def share_text(r: dict[str, Any], whose: str) -> str:
    """A comparison for the conclusion: "35 % of its own plan's time [30, 41] → **better**"."""
    if not r:
        return ""
    if pd.isna(r.get("ratio")):
        return f"vs {whose} time: {relative_text(r)}"
    return f"{r['ratio'] * 100:.0f} % of {whose} time {share_interval(r)} → **{r['verdict']}**"


def query_table(summ: pd.DataFrame, rel: pd.DataFrame, arms: list[Arm], p: Any) -> pd.DataFrame:
    """The sources' per-query table, one estimator throughout — the geometric mean of each
    candidate's seconds (">timeout" when every execution timed out), each candidate's as % of
    the baseline's with its 95 % CI and verdict — and the handler reads per execution (rows the
    server read: deterministic, the plan's cost without the host's noise)."""
    names = [a.label for a in _compared(arms)]
    rows = []
    for q in p.queries:
        row: dict[str, Any] = {"query": f"Q{q}"}
        for name in names:
            s = summ[(summ["query"] == q) & (summ["arm"] == name)]
            row[f"{name}: s, geometric mean"] = "" if s.empty else seconds_text(s.iloc[0], p.timeout)
        for name in names[1:]:
            r = rel[(rel["query"] == q) & (rel["candidate"] == name)]
            if not r.empty:
                row[f"{name} vs {names[0]}: % of its time"] = relative_text(r.iloc[0])
        for name in names:
            s = summ[(summ["query"] == q) & (summ["arm"] == name)]
            row[f"{name}: handler reads"] = "" if s.empty else f"{s.iloc[0]['handler_reads']:,.0f}"
        rows.append(row)
    return pd.DataFrame(rows)


def forced_table(fo: pd.DataFrame, p: Any) -> pd.DataFrame:
    """`forced` as the report shows it: per rewrite the order forced, seconds with the own plan,
    forced and of the candidate whose order it is, and both comparisons."""
    rows = []
    for r in fo.itertuples():
        ok = r.forced
        rows.append({"query": f"Q{r.query}", "candidate": r.candidate, "join order of": r.order_of,
                     "order forced": r.wanted_order if ok else f"not forced: {r.reason}",
                     "own plan s (geometric mean)": seconds_text(r.own, p.timeout) if r.own["n"] else "",
                     "forced s (geometric mean)": seconds_text(r.forced_s, p.timeout) if ok and r.forced_s["n"] else "",
                     "forced vs own plan": relative_text(r.vs_own) if r.vs_own else "",
                     "their plan s (geometric mean)": seconds_text(r.theirs, p.timeout) if r.theirs["n"] else "",
                     "forced vs theirs": relative_text(r.vs_theirs) if r.vs_theirs else ""})
    return pd.DataFrame(rows)


def forced_summary(fo: pd.DataFrame) -> pd.DataFrame:
    """Seconds of each forced rewrite beside the two plans it sits between, for a chart: x is
    "Q<n> on <candidate>", arm the variant (its own plan, the other order forced, the other
    candidate's own plan); geometric mean with min–max from the phase's executions."""
    rows = []
    for r in fo[fo["forced"]].itertuples() if not fo.empty else []:
        x = f"Q{r.query} on {r.candidate}"
        for arm, s in (("own plan", r.own), ("the other order forced (STRAIGHT_JOIN)", r.forced_s),
                       ("the other candidate's own plan", r.theirs)):
            rows.append({"case": x, "arm": arm, "geomean_s": s["geomean_s"], "min_s": s["min_s"],
                         "max_s": s["max_s"]})
    return pd.DataFrame(rows)


def geo_lines(geo: pd.DataFrame, arms: list[Arm], p: Any) -> list[str]:
    """Each candidate's geometric mean over the queries against the baseline (Markdown):
    the study's decisive answer, which opens its report (`headline`)."""
    return [f"Geometric mean over {len(p.queries)} queries: {r.candidate} {signed(r.delta_pct, digits(r))} vs "
            f"{arms[0].label} {interval(r, *adjusted(r))} → **{r.verdict}** (lower time is better)"
            for r in geo.itertuples()]


def orders_line(diff: pd.DataFrame) -> str:
    """In how many queries the candidates' join orders differ."""
    differ = diff[diff["differs"]]["query"].tolist()
    return (f"Join orders differ between candidates in {len(differ)} of {len(diff)} queries"
            + (f": {', '.join(differ)}" if differ else ""))


def headline(geo: pd.DataFrame, diff: pd.DataFrame, arms: list[Arm], p: Any, answers: str = "") -> list[str]:
    """What opens the report and the terminal beside the per-query verdicts: the geometric
    means, whether the answers were right, whether the plans differ."""
    return [*geo_lines(geo, arms, p), *([answers.rstrip(".")] if answers else []), orders_line(diff)]


def conclusion(rel: pd.DataFrame, geo: pd.DataFrame, diff: pd.DataFrame, arms: list[Arm], p: Any,
               fo: pd.DataFrame | None = None, answers: str = "") -> str:
    """A short Markdown conclusion computed from the tables (no claim is hard-coded)."""
    base = arms[0].label
    lines = [f"- {x}." for x in geo_lines(geo, arms, p)]
    if not rel.empty:
        lines.append(f"- Per query, vs {base}: {verdicts(rel)}.")
        tested = rel.dropna(subset=["p_value"]) if "p_value" in rel else rel.iloc[0:0]
        if not tested.empty:
            lines += [f"  - {stats.reach_short(tested)}."]
    if answers:
        lines.append(f"- {answers}")
    lines.append(f"- {orders_line(diff)}.")
    for r in (fo.itertuples() if fo is not None and not fo.empty else []):
        what = f"  - Q{r.query} on {r.candidate} with the join order of {r.order_of}"
        if not r.forced:
            lines.append(f"{what}: not forced ({r.reason}).")
            continue
        parts = [share_text(r.vs_own, "its own plan's"), share_text(r.vs_theirs, f"{r.order_of}'s")]
        lines.append(f"{what} forced (STRAIGHT_JOIN): " + "; ".join(x for x in parts if x) + ".")
    return "\n".join(lines)
