"""The positive control (`pauses`): the paused twin of the baseline against the baseline,
per metric in a Holm family of its own, and per cell whether each metric found the pause
where its known size and timing say it must — the A/A twin shows the tables do not find
what is not there; this shows they find what is.

What a pause of `pause_ms` every `every_s` seconds must do, in the closed loop of sysbench
(each client thread has one transaction in flight, none waiting to start):

- **throughput** drops by the paused share s = pause_ms / (1000 × every_s): nothing finishes
  while the server is stopped. It is to be found where s is at least the cell's MDE.
- only the transactions in flight when a pause begins wait through it — about one per client
  thread per pause, a share d = threads × pauses / transactions of the step, each slower by
  about pause_ms. The rest are not delayed at all, so the **percentile** q moves only where d
  exceeds its tail 1 − q, and then to about pause_ms: a pause hides from p99 where few
  threads run many transactions (coordinated omission: the closed loop does not send what
  would have arrived during the pause; the latency study's open loop does).
- the **tail ratio** (a step's p99 over its own p50, `tails`) rises where p99 does, as long
  as p50 stays: where fewer than a quarter of the transactions wait (`BODY`; more: borderline).

Each cell × metric is *expected* (the pause must show), *not expected* (its direct effect is
too small to show: a difference there goes beyond this model), *under the MDE* (throughput:
the pause must lower it, by less than the table can detect) or *borderline* (not counted).
"""
from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from ..core.comparisons import PER_SECOND, SYSBENCH, Comparison, judged
from ..kit.studykit import BY, Arm
from ..observe.pauses import Pause
from ..stats import mde_text
from ..store.results import Run
from ..store.tables import PAUSES
from .cells import effect, signed
from .tables import design_table
from .words import listing

# the metrics the pause's models speak of, by key: the closed loop's (`CONTROLLED`), the
# checkpoint study's per-second ones (`per_second`) and the open loop's percentiles
TAIL = {"p95": 0.05, "p99": 0.01}
CONTROLLED = tuple(c for c in judged(SYSBENCH) if c.key in ("qps", *TAIL, "tail"))  # what a pause's model speaks of
WORDS = {c.key: c.words for c in (*PER_SECOND, *SYSBENCH)}
OPEN_TAIL = {"p99": 0.01, "p50": 0.5}   # the latency study's percentiles per offered level
OPEN_BY = ["workload", "threads", "rate"]
UNDER = "under the MDE"   # the pause must move the metric, by less than the table can detect
TAIL_MARGIN = 2.0    # a percentile is expected where d ≥ 2 × its tail, not where d ≤ tail / 2
BODY = 0.25          # p50 is taken to stay where fewer than this share of transactions wait
COLUMNS = ["workload", "threads", "metric", "expected", "expectation", "measured", "verdict", "outcome"]


def control_arm(arms: list[Arm]) -> Arm | None:
    """The paused twin among `arms`, if the run has one."""
    return next((a for a in arms if a.pause is not None), None)


def tables(steps: pd.DataFrame, arms: list[Arm], p: Any,
           comparisons: tuple[Comparison, ...] = CONTROLLED) -> dict[str, pd.DataFrame]:
    """Per comparison the steps have a column of: the paused twin against the baseline per
    cell, one Holm family per comparison (empty without a paused twin)."""
    arm = control_arm(arms)
    if arm is None or steps.empty:
        return {}
    out = {}
    for c in comparisons:
        if c.column in steps:
            rel = design_table(steps, by=list(c.by), factor="arm", baseline=arms[0].label, candidates=[arm.label],
                               value=c.column, higher_is_better=c.higher_is_better, threshold=p.draw_threshold)
            out[c.key] = rel.assign(baseline=arms[0].label) if not rel.empty else rel
    return out


def exposure(run: Run, steps: pd.DataFrame, arms: list[Arm]) -> pd.DataFrame:
    """Per cell what the pause did and met: the paused share of the control's steps
    (measured, `paused_pct`, median), pauses per step, the baseline's transactions per step,
    `delayed_pct` (d: threads × pauses over the baseline's transactions), and the baseline's
    median p95 and p99."""
    arm = control_arm(arms)
    if arm is None or steps.empty:
        return pd.DataFrame()
    mine = steps[steps["arm"] == arm.label]
    if run.has_table(PAUSES):
        per = run.table(PAUSES).groupby("step").agg(pauses=("at_s", "size"), paused_ms=("paused_ms", "sum"))
        mine = mine.merge(per.reset_index(), on="step", how="left").fillna({"pauses": 0, "paused_ms": 0.0})
    else:  # not recorded: what the parameter asked for
        n = mine["seconds"].round().map(lambda d: len(arm.pause.starts(d)))
        mine = mine.assign(pauses=n, paused_ms=n * arm.pause.pause_ms)
    mine = mine.assign(paused_pct=mine["paused_ms"] / (mine["seconds"] * 1000) * 100)
    got = mine.groupby(BY).agg(paused_pct=("paused_pct", "median"), pauses=("pauses", "median"))
    base = steps[steps["arm"] == arms[0].label]
    have = {c: "median" for c in ("events", "latency_p95_ms", "latency_p99_ms") if c in base}
    out = got.join(base.groupby(BY).agg(have), how="inner").reset_index()
    return out.assign(delayed_pct=out["threads"] * out["pauses"] / out["events"] * 100)


def expectations(exp: pd.DataFrame, pause: Pause, mde: dict[str, pd.Series]) -> pd.DataFrame:
    """Per cell × metric: `expected` (yes, no, borderline) and the `expectation` in words, from
    `exposure` rows, the pause and each metric's MDE per cell (`mde`: metric → Series by cell)."""
    rows: list[dict[str, Any]] = []
    for r in exp.itertuples():
        cell = (r.workload, r.threads)
        d = r.delayed_pct / 100
        for metric in (c.key for c in CONTROLLED):
            m = mde.get(metric)
            if m is None or cell not in m.index:
                continue
            mde_pct = float(m.loc[cell])
            if metric == "qps":
                size = r.paused_pct
                expected = "yes" if size >= mde_pct else UNDER
                said = f"{signed(-size)}, the paused share (MDE {mde_text(mde_pct)})"
            elif metric in TAIL:
                tail, base = TAIL[metric], getattr(r, f"latency_{metric}_ms", np.nan)
                expected, moves = _percentile(d, tail, base, pause)
                said = f"{_share(d)} delayed, tail {tail * 100:g} %: {moves}"
            else:  # the tail ratio: p99's move over a p50 that stays
                expected, moves = _percentile(d, TAIL["p99"], getattr(r, "latency_p99_ms", np.nan), pause)
                expected = expected if d < BODY else "borderline"
                said = f"{_share(d)} delayed: p99 {moves}, p50 {'unmoved' if d < BODY else 'may move'}"
            rows.append({"workload": r.workload, "threads": int(r.threads), "metric": metric,
                         "expected": expected, "expectation": said})
    return pd.DataFrame(rows)


def closed_loop(tabs: dict[str, pd.DataFrame], run: Run, steps: pd.DataFrame, arms: list[Arm]) -> pd.DataFrame:
    """What the pause must show per cell × metric in a closed-loop (sysbench scaling) run:
    `expectations` of its `exposure`, with each metric's MDE from its table in `tabs`."""
    arm = control_arm(arms)
    if arm is None or not tabs:
        return pd.DataFrame()
    return expectations(exposure(run, steps, arms), arm.pause, mdes(tabs, BY))


def per_second(tabs: dict[str, pd.DataFrame], run: Run, steps: pd.DataFrame, runs: pd.DataFrame,
               arms: list[Arm], fraction: float) -> pd.DataFrame:
    """What the pause must show per cell × metric in the checkpoint study, whose tables judge
    each step by its seconds (`comparisons.PER_SECOND`). A second holds at most max(pause_ms, s × 1000)
    ms of pause; a pause may straddle two seconds, so it touches at most 2 / every_s of them.
    - **median per-second TPS** drops by the paused share s where every second holds a pause
      (every_s ≤ 1), and cannot move where fewer than half the seconds are touched (every_s > 4);
    - **p99** as in the closed loop (`expectations`);
    - **stall seconds** (a second under `fraction` of the step's steady median): a second
      stalls where it holds (1 − fraction) s of pause more than the median second; a pause at
      least twice that always stalls one second, one shorter than it never does, and where
      every second holds a pause (every_s ≤ 1) the median drops with them and none stalls.
      Expected where the median second holds none (every_s > 4) and the pauses per step, over
      1 + the baseline's stall seconds (the table compares 1 + seconds), reach the cell's MDE."""
    arm = control_arm(arms)
    if arm is None or not tabs:
        return pd.DataFrame()
    own = runs[runs["arm"] == arms[0].label].groupby(BY)["stall_seconds"].median()
    return second_expectations(exposure(run, steps, arms), own, arm.pause, mdes(tabs, BY), fraction)


def second_expectations(exp: pd.DataFrame, own: pd.Series, pause: Pause, mde: dict[str, pd.Series],
                        fraction: float) -> pd.DataFrame:
    """`per_second`'s rules on `exposure` rows, the baseline's median stall seconds per cell
    (`own`), the pause, each metric's MDE per cell and the stall fraction."""
    rows = expectations(exp, pause, {"p99": mde["p99"]} if "p99" in mde else {}).to_dict("records")
    worst = max(pause.pause_ms, pause.share * 1000)   # ms of pause one second can hold
    need = (1 - fraction) * 1000
    for r in exp.itertuples():
        cell = (r.workload, r.threads)
        if "tps" in mde and cell in mde["tps"].index:
            m, size = float(mde["tps"].loc[cell]), r.paused_pct
            rows.append({"workload": r.workload, "threads": int(r.threads), "metric": "tps",
                         "expected": ("no" if pause.every_s > 4 else "borderline" if pause.every_s > 1
                                      else "yes" if size >= m else UNDER),
                         "expectation": f"{signed(-size)}, the paused share, in "
                                        f"{min(2 / pause.every_s, 1) * 100:.0f} % of the seconds at most (MDE {mde_text(m)})"})
        if "stalls" in mde and cell in mde["stalls"].index and cell in own.index:
            m = float(mde["stalls"].loc[cell])
            rise = r.pauses / (1 + own.loc[cell]) * 100
            rows.append({"workload": r.workload, "threads": int(r.threads), "metric": "stalls",
                         "expected": _three(worst >= 2 * need and pause.every_s > 4 and rise >= m,
                                            worst < need or pause.every_s <= 1 or rise < m / 2),
                         "expectation": f"{worst:.0f} ms of pause in a second against {need:.0f} ms to stall it; "
                                        f"{r.pauses:.0f} pauses a step over 1 + {own.loc[cell]:.0f} stall s: "
                                        f"+{rise:.0f} % at one stall second a pause (MDE {mde_text(m)})"})
    return pd.DataFrame(rows)


def open_loop(tabs: dict[str, pd.DataFrame], levels: pd.DataFrame, arms: list[Arm], peak: pd.Series) -> pd.DataFrame:
    """What the pause must show per offered level × percentile in an open loop (the latency
    study): every arrival due while the server is stopped waits, and so do those that queue
    behind them while the backlog drains — a share d ≈ s / (1 − ρ) of the transactions at
    load ρ (s: the paused share) — so a percentile q moves where d exceeds its tail, whatever
    the connections. `levels`: the study's per-level table (rate, each arm's median
    percentiles); `peak`: the baseline's closed-loop peak per (workload, threads)."""
    arm = control_arm(arms)
    if arm is None or not tabs or levels.empty:
        return pd.DataFrame()
    pause, mde = arm.pause, mdes(tabs, OPEN_BY)
    base = levels[levels["arm"] == arms[0].label]
    rows = []
    for r in base.itertuples():
        top = peak.get((r.workload, r.threads), np.nan)
        rho = r.rate / top if top == top and top > 0 else np.nan
        if not 0 < rho < 1:
            continue
        d = min(pause.share / (1 - rho), 1.0)
        for metric, tail in OPEN_TAIL.items():
            m = mde.get(metric)
            if m is None or (r.workload, r.threads, r.rate) not in m.index:
                continue
            expected, moves = _percentile(d, tail, getattr(r, f"{metric}_median"), pause)
            rows.append({"workload": r.workload, "threads": int(r.threads), "rate": r.rate, "metric": metric,
                         "expected": expected,
                         "expectation": f"{_share(d)} delayed at {rho * 100:.0f} % of the peak, tail {tail * 100:g} %: {moves}"})
    return pd.DataFrame(rows)


def mdes(tabs: dict[str, pd.DataFrame], by: list[str]) -> dict[str, pd.Series]:
    """Each metric's MDE per cell (`by`) from its control table."""
    return {k: t.set_index(by)["mde_pct"] for k, t in tabs.items() if not t.empty and "mde_pct" in t}


def found(tabs: dict[str, pd.DataFrame], exp: pd.DataFrame, by: list[str] = BY) -> pd.DataFrame:
    """The positive control's table: per cell (`by`) × metric what the pause must do
    (`exp`: `closed_loop` or `open_loop`), what the metric's table measured and its verdict,
    and the `outcome` — found, missed, as expected (a draw where nothing was expected),
    unexplained (a difference where none was expected, or the wrong way), or borderline."""
    columns = [*by, *COLUMNS[2:]]
    if exp.empty:
        return pd.DataFrame(columns=columns)
    rows = []
    for e in exp.itertuples():
        t = tabs[e.metric]
        r = t[np.logical_and.reduce([t[k] == getattr(e, k) for k in by])]
        if r.empty or not r["delta_pct"].notna().any():
            continue
        r = next(r.itertuples())
        rows.append({**{k: getattr(e, k) for k in by}, "metric": WORDS[e.metric],
                     "expected": e.expected, "expectation": e.expectation,
                     "measured": effect(r), "verdict": r.verdict,
                     "outcome": outcome(e.expected, r.verdict)})
    return pd.DataFrame(rows, columns=columns)


def layout(table: pd.DataFrame) -> pd.DataFrame:
    """The positive control's table at a glance: a row per cell, a column per metric, each
    `found: −21.9 %` — the outcome and the measured difference.

    >>> t = pd.DataFrame({"workload": ["w", "w"], "threads": [8, 8], "metric": ["p99 latency", "tail ratio"],
    ...                   "measured": ["+3.0 % [−1, +7]", "+50.0 % [+20, +90]"], "outcome": ["as expected", "found"]})
    >>> layout(t).to_dict("records")
    [{'workload': 'w', 'threads': 8, 'p99 latency': 'as expected: +3.0 %', 'tail ratio': 'found: +50.0 %'}]
    """
    by = [c for c in ("workload", "threads", "rate") if c in table]
    cell = table["outcome"] + ": " + table["measured"].str.split(" [", regex=False).str[0]
    order = list(dict.fromkeys(table["metric"]))
    out = table.assign(cell=cell).pivot_table(index=by, columns="metric", values="cell", aggfunc="first")
    return out[[m for m in order if m in out]].reset_index().rename_axis(columns=None)


def model(pause: Pause, table: pd.DataFrame) -> str:
    """The expectation's model in words, for the report: what a pause of `pause` must do to
    each metric of the positive control's `table` (`found`) — in a closed loop (sysbench's
    scaling steps), an open loop (offered load: the table has rates) or per second (the
    checkpoint study's metrics)."""
    stop = (f"the driver stopped (SIGSTOP) for {pause.text()} during each measured step, the "
            "moments and lengths of the stops recorded (`pauses`). ")
    if WORDS["tps"] in set(table["metric"]):
        how = ("The checkpoint study judges a step by its seconds: a second holds at most "
               "max(pause, s × 1 s) of pause (s: the paused share, "
               f"{pause.share * 100:.3g} %) and a pause touches at most two seconds, so the median "
               "second's throughput drops by s only where every second holds a pause (every_s ≤ 1); "
               "a second stalls (under `stall_fraction` of the step's steady median) where it holds "
               "(1 − stall_fraction) s of pause more than the median second, so where most seconds hold "
               "none (every_s > 4) stall seconds rise by about one per pause of at least twice that, "
               "never by a shorter one, and where every second holds a pause none stalls; p99 moves as in the "
               "closed loop, where the share of transactions in flight at a pause (about one per "
               "client thread per pause) exceeds 1 %. ")
    elif "rate" in table:
        how = ("In the open loop every arrival due while the server is stopped waits, and so do "
               "those queued behind them while the backlog drains: at load ρ a share d ≈ s / (1 − ρ) "
               f"of the transactions is delayed (s: the paused share, {pause.share * 100:.3g} %), "
               "whatever the connections, so a percentile moves where d exceeds its tail (1 % for "
               "p99, 50 % for p50), to about the pause's length. ")
    else:
        how = ("Nothing finishes while the server is stopped, so throughput must drop by the paused "
               f"share ({pause.share * 100:.3g} %), to be found where that is at least the cell's MDE. "
               "In sysbench's closed loop only the transactions in flight when a pause begins wait "
               "through it — about one per client thread per pause, a share d of the step's "
               "transactions (“delayed”) — so a percentile moves only where d exceeds its tail (5 % "
               "for p95, 1 % for p99), to about the pause's length, and the tail ratio (p99 ÷ p50) rises "
               "with p99 where fewer than a quarter of the transactions wait (p50 stays). ")
    return (stop + how + "“Expected” says whether the pause must show (yes), must not (no: a "
            "difference there goes beyond this model — the server's own after-effects of a pause, "
            "such as hundreds of threads woken at once, or noise), must by less than the table can "
            "detect (under the MDE: a draw is as expected) or neither (borderline).")


def outcome(expected: str, verdict: str) -> str:
    """What a verdict on the paused twin (worse is the pause's direction) says of the metric:
    found, missed, as expected (a draw where nothing was expected), beyond the model (worse
    where the pause's direct effect is too small to show: its after-effects on the server, or
    noise) or unexplained (better: the wrong way); borderline cells are not judged. Where the
    pause must move the metric by less than the table's MDE (`UNDER`), a draw is as expected
    and worse is found, though the design did not promise it.

    >>> [outcome(e, v) for e, v in [("yes", "worse"), ("yes", "draw"), ("no", "draw"), ("no", "worse"), ("yes", "better")]]
    ['found', 'missed', 'as expected', 'beyond the model', 'unexplained']
    >>> outcome(UNDER, "worse"), outcome(UNDER, "draw")
    ('found under the MDE', 'as expected')
    """
    if expected == "borderline":
        return "borderline"
    if verdict == "worse":
        return {"yes": "found", UNDER: "found under the MDE"}.get(expected, "beyond the model")
    if verdict == "better":
        return "unexplained"
    return "missed" if expected == "yes" else "as expected"


def lines(table: pd.DataFrame, pause: Pause | None) -> list[str]:
    """The conclusion's account of the positive control: per metric, where it found the
    pause against where it had to, and any difference the pause does not explain."""
    if table.empty or pause is None:
        return []
    out = [f"- Positive control (the baseline paused {pause.text()}):"]
    for metric, t in table.groupby("metric", sort=False):
        should = t[t["expected"] == "yes"]
        hit = should[should["outcome"] == "found"]
        odd = t[t["outcome"] == "unexplained"]
        beyond = t[t["outcome"] == "beyond the model"]
        text = (f"found by {metric} in {len(hit)} of the {len(should)} cell{'s' if len(should) != 1 else ''} "
                "where it must show" if len(should) else f"{metric}: no cell where it must show")
        missed = should[should["outcome"] != "found"]
        if len(missed):
            text += " — missed at " + listing([_cell(m) for m in missed.itertuples()])
        lucky = t[t["outcome"] == "found under the MDE"]
        if len(lucky):
            text += "; found, though smaller than the MDE promises, at " + listing([_cell(m) for m in lucky.itertuples()])
        if len(beyond):
            text += ("; worse beyond the model (the pause delays too few transactions directly: its "
                     "after-effects on the server, or noise) at " + listing([_cell(m) for m in beyond.itertuples()]))
        if len(odd):
            text += ("; better, which no pause explains, at "
                     + listing([_cell(m) for m in odd.itertuples()]))
        out.append(f"  - {text}.")
    return out


def _percentile(d: float, tail: float, base_ms: float, pause: Pause) -> tuple[str, str]:
    """Whether a percentile with `tail` (1 − q) must move when a share `d` of the transactions
    is delayed by the pause, its baseline at `base_ms`: (expected, how it moves in words). It
    moves only where d passes the tail and the pause is well above the baseline's value."""
    longer = pause.pause_ms >= 2 * base_ms
    expected = _three(longer and d >= TAIL_MARGIN * tail, not longer or d <= tail / TAIL_MARGIN)
    return expected, (f"≈ {pause.pause_ms:g} ms from {base_ms:.3g} ms" if d > tail and longer else "unmoved")


def _three(yes: bool, no: bool) -> str:
    return "yes" if yes else "no" if no else "borderline"


def _share(x: float) -> str:
    """A share of transactions in words.

    >>> _share(0.0123), _share(0.00004)
    ('1.23 %', '0.004 %')
    """
    return f"{x * 100:.3g} %" if x * 100 >= 0.001 else "< 0.001 %"


def _cell(r: Any) -> str:
    rate = getattr(r, "rate", None)
    return f"{r.workload} {int(r.threads)}" + (f" at {rate:,.0f}/s" if rate is not None else "")
