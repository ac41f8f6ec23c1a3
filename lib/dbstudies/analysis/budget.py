"""The CPU budget of a verdict: where client and server share saturated CPUs, what the client's
share of the CPU per transaction predicts of a throughput change (`budget`, `predicted`), whether
that prediction explains the verdict (`explains`, `client_explained`, `client_decides`), and the
table the report shows (`budget_table`); computed once per answer (`judged_budget`).
"""
from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from .. import stats
from ..kit.studykit import BY
from .cells import signed
from .tables import is_paired

SATURATED = 0.9      # server + client CPU ≥ 90 % of the host's: throughput is bounded by CPU


JUDGED = ("better", "worse")


BUDGET_COLUMNS = ["workload", "threads", "candidate", "verdict", "measured", "predicted",
                  "CPU used (baseline → candidate)", "server µs per transaction",
                  "client µs per transaction", "client's share of the extra CPU"]


def per_arm(steps: pd.DataFrame) -> pd.DataFrame:
    """Medians per cell × arm of the CPU server and client used (% of one core), and together."""
    return (steps.groupby([*BY, "arm"], sort=False)[["cpu_server_pct", "cpu_client_pct"]].median()
            .assign(cpu_pct=lambda d: d["cpu_server_pct"] + d["cpu_client_pct"]))


def client_per_server(steps: pd.DataFrame | None, baseline: str) -> pd.Series:
    """f per cell: the baseline's sysbench CPU µs per server CPU µs per transaction (medians
    over its steps) — on CPUs the two share and fill, a change k of the server's own cost
    shows in throughput as about k / (1 + f). Empty without both costs.

    >>> s = pd.DataFrame({"workload": ["w"] * 2, "threads": [1, 1], "arm": ["a", "b"],
    ...                   "cpu_server_us_per_txn": [20.0, 30.0], "cpu_client_us_per_txn": [10.0, 9.0]})
    >>> client_per_server(s, "a").tolist()
    [0.5]
    """
    cols = ["cpu_server_us_per_txn", "cpu_client_us_per_txn"]
    if steps is None or not set(cols) <= set(steps):
        return pd.Series(dtype=float)
    m = steps[steps["arm"] == baseline].groupby(BY, sort=False)[cols].median()
    return (m["cpu_client_us_per_txn"] / m["cpu_server_us_per_txn"]).dropna()


def cost_ratio(cell: pd.DataFrame, baseline: str, candidate: str, column: str) -> float:
    """Candidate ÷ baseline on one cost of one cell, by the estimator its comparison table
    uses (`analysis.design_table`): the geometric mean of the per-round ratios in a paired
    run, the ratio of geometric means otherwise — so the budget and the cost table say one
    number for one quantity. NaN where a side has no positive value.

    >>> cell = pd.DataFrame({"arm": ["a", "b"] * 2, "repeat": [1, 1, 2, 2], "pair": [1, 1, 2, 2],
    ...                      "workload": ["w"] * 4, "threads": [1] * 4, "x": [10.0, 20.0, 40.0, 20.0]})
    >>> round(cost_ratio(cell, "a", "b", "x"), 9)   # rounds: ×2 and ×½ — no change, whatever the medians say
    1.0
    """
    if is_paired(cell):
        d = stats.pair_up(cell, by=BY, factor="arm", baseline=baseline, candidate=candidate,
                          value=column, pair="repeat")["d"]
        return float(np.exp(d.mean())) if len(d) else float("nan")
    logs = [np.log(cell.loc[(cell["arm"] == a) & (cell[column] > 0), column]).mean() for a in (baseline, candidate)]
    return float(np.exp(logs[1] - logs[0]))


def predicted(baseline_us: float, candidate_us: float) -> float:
    """The throughput change, in %, that CPU µs per transaction predict if the CPUs are the
    limit: the same CPU-seconds spent at the candidate's cost, baseline / candidate − 1.

    >>> round(predicted(100.0, 125.0), 1)
    -20.0
    """
    return (baseline_us / candidate_us - 1) * 100


def budget(steps: pd.DataFrame | None, rel: pd.DataFrame | None, host_cpus: int) -> pd.DataFrame:
    """Per cell of `rel` (a throughput table) judged better, worse or a draw: the CPU budget of
    baseline and candidate — CPU µs per transaction of server and client (medians over the
    cell's steps) and the share of the host's CPUs they used (µs per transaction × transactions
    per second) — and the throughput change it predicts if the CPUs are the limit (the same
    CPU-seconds spent at the candidate's cost per transaction: (S_b + C_b) / (S_c + C_c) − 1),
    next to the measured one; with what share of the candidate's extra CPU per transaction is
    the client's. `saturated`: both arms used ≥ 90 % of the host (only there does the budget
    bound throughput). The candidate's µs are the baseline's median × the cost's ratio by the
    cost tables' own estimator (`cost_ratio`: paired rounds), never a second median. Empty
    without those costs. What reads a verdict's budget keeps the judged rows (`judged_only`);
    whether the client decides a cell is asked of every row (`client_decides`)."""
    cols = {"cpu_server_us_per_txn", "cpu_client_us_per_txn", "cpu_server_pct", "cpu_client_pct"}
    if steps is None or rel is None or rel.empty or not cols <= set(steps) or "baseline" not in rel:
        return pd.DataFrame(columns=BUDGET_COLUMNS)
    arm, f = per_arm(steps), client_per_server(steps, rel["baseline"].iloc[0])
    rows = []
    for r in rel[rel["verdict"].isin((*JUDGED, "draw"))].itertuples():
        try:
            b, c = arm.loc[(r.workload, r.threads, r.baseline)], arm.loc[(r.workload, r.threads, r.candidate)]
        except KeyError:
            continue
        cell = steps[(steps["workload"] == r.workload) & (steps["threads"] == r.threads)]
        (sb, sc), (cb, cc) = pair_of(cell, r, "cpu_server_us_per_txn"), pair_of(cell, r, "cpu_client_us_per_txn")
        if not all(np.isfinite([sb, cb, sc, cc])) or sc + cc <= 0:
            continue
        extra = (sc + cc) - (sb + cb)
        share = (cc - cb) / extra * 100 if abs(extra) > 0.01 * (sb + cb) else float("nan")
        full = host_cpus * 100 * SATURATED
        switches = {f"{kind}_cs_pct": (cost_ratio(cell, r.baseline, r.candidate, f"cs_client_{kind}_per_txn") - 1) * 100
                    if f"cs_client_{kind}_per_txn" in cell else float("nan") for kind in ("voluntary", "involuntary")}
        waits = {f"{side}_wait_us": pair_of(cell, r, f"wait_{side}_us_per_txn") for side in ("server", "client")}
        rows.append({"workload": r.workload, "threads": int(r.threads), "candidate": r.candidate,
                     "verdict": r.verdict, "measured_pct": r.delta_pct, **switches,
                     "predicted_pct": predicted(sb + cb, sc + cc),
                     "cpu_baseline_pct": b.cpu_pct, "cpu_candidate_pct": c.cpu_pct,
                     "server_us": (sb, sc), "client_us": (cb, cc), "client_share_pct": share, **waits,
                     "f": f.get((r.workload, r.threads), float("nan")),
                     "saturated": bool(b.cpu_pct >= full and c.cpu_pct >= full)})
    return pd.DataFrame(rows)


def pair_of(cell: pd.DataFrame, r: Any, column: str) -> tuple[float, float]:
    """(baseline, candidate) of one cost of a cell: the baseline's median, the candidate's by
    the cost tables' estimator (`cost_ratio`); NaNs where the run did not record it (a run
    before steps v6 has no run delay)."""
    mine = cell.loc[cell["arm"] == r.baseline, column] if column in cell else pd.Series(dtype=float)
    if mine.dropna().empty:
        return (float("nan"), float("nan"))
    base = float(mine.median())
    return (base, base * cost_ratio(cell, r.baseline, r.candidate, column))


AGREES = 0.25  # a prediction within 25 % of the measured change (and 3 points) explains it


def explains(predicted_pct: float, measured_pct: float) -> bool:
    """Whether the CPU budget's prediction accounts for the measured change: the same sign,
    within `AGREES` of its size or 3 points.

    >>> explains(-47.3, -50.2), explains(-5.0, -20.0), explains(1.0, -2.0)
    (True, False, False)
    """
    if predicted_pct * measured_pct < 0:
        return False
    return abs(predicted_pct - measured_pct) <= max(3.0, AGREES * abs(measured_pct))


def prediction_text(predicted_pct: float, measured_pct: float, saturated: bool) -> str:
    """The budget table's prediction with what it means: with the CPUs full it bounds
    throughput; without, it still explains a change it matches (each transaction's own CPU
    sets its pace, as with few client threads) — and where it matches nothing, waiting does.

    >>> prediction_text(-47.3, -50.2, False)
    "−47.3 % (matches; the CPUs were not full: each transaction's own CPU sets the pace)"
    >>> prediction_text(-5.0, -20.0, False)
    '−5.0 % (the CPUs were not full and it does not match: waiting, not CPU, sets the pace)'
    >>> prediction_text(-20.0, -21.0, True)
    '−20.0 % (matches; the CPUs were full)'
    """
    if explains(predicted_pct, measured_pct):
        why = "the CPUs were full" if saturated else "the CPUs were not full: each transaction's own CPU sets the pace"
        return f"{signed(predicted_pct)} (matches; {why})"
    why = ("the CPUs were full, yet it does not match" if saturated else
           "the CPUs were not full and it does not match: waiting, not CPU, sets the pace")
    return f"{signed(predicted_pct)} ({why})"


def budget_table(b: pd.DataFrame, host_cpus: int) -> pd.DataFrame:
    """`budget` as the report shows it: one row per judged cell, in words."""
    b = judged_only(b)
    if b.empty:
        return pd.DataFrame(columns=BUDGET_COLUMNS)

    def arrow(pair: tuple[float, float]) -> str:
        def us(x: float) -> str:
            return f"{x:,.0f}" if x >= 100 else f"{x:.3g}"
        return f"{us(pair[0])} → {us(pair[1])} ({signed((pair[1] / pair[0] - 1) * 100)})" \
            if pair[0] > 0 and np.isfinite(pair[1]) else "–"

    return pd.DataFrame({
        "workload": b["workload"], "threads": b["threads"], "candidate": b["candidate"],
        "verdict": b["verdict"], "measured": b["measured_pct"].map(signed),
        "predicted": [prediction_text(p, m, s) for p, m, s in zip(b["predicted_pct"], b["measured_pct"], b["saturated"])],
        "CPU used (baseline → candidate)": [f"{x:.0f} → {y:.0f} % of {host_cpus * 100} %"
                                            for x, y in zip(b["cpu_baseline_pct"], b["cpu_candidate_pct"])],
        "server µs per transaction": b["server_us"].map(arrow),
        "client µs per transaction": [f"{arrow(c)}; f {f:.2f}" if f == f else arrow(c)
                                      for c, f in zip(b["client_us"], b["f"])],
        **({"µs waiting for a CPU: server; client": [f"{arrow(w)}; {arrow(v)}"
                                                     for w, v in zip(b["server_wait_us"], b["client_wait_us"])]}
           if "server_wait_us" in b and b["server_wait_us"].map(lambda x: x[0] == x[0]).any() else {}),
        "client's share of the extra CPU": b["client_share_pct"].map(
            lambda v: "–" if v != v else f"{v:.0f} %")})


CLIENT_MOSTLY = 50.0  # % of the change in CPU per transaction: above it, the client's cost explains the verdict


def client_explained(b: pd.DataFrame, pinned: bool) -> pd.DataFrame:
    """The judged cells (workload, threads, candidate, client_share_pct) whose verdict the
    run's own CPU budget attributes mostly to the client: sysbench shares the server's CPUs
    (not pinned apart), the budget's prediction matches the measured change (`explains`) and
    more than `CLIENT_MOSTLY` % of the change in CPU per transaction is sysbench's own."""
    cols = ["workload", "threads", "candidate", "client_share_pct"]
    b = judged_only(b)
    if pinned or b.empty:
        return pd.DataFrame(columns=cols)
    ok = [explains(p, m) for p, m in zip(b["predicted_pct"], b["measured_pct"])]
    return b[pd.Series(ok, index=b.index) & (b["client_share_pct"] > CLIENT_MOSTLY)][cols].reset_index(drop=True)


def judged_only(b: pd.DataFrame | None) -> pd.DataFrame:
    """A budget's rows of cells judged better or worse."""
    if b is None or b.empty:
        return pd.DataFrame(columns=BUDGET_COLUMNS)
    return b[b["verdict"].isin(JUDGED)]


def client_decides(b: pd.DataFrame | None, pinned: bool) -> pd.DataFrame:
    """The cells — whatever their verdict, draws too — where the run's own CPU budget says the
    client decides the outcome: sysbench shares the server's CPUs (not pinned apart), both
    arms saturate them, and most of the movement in CPU per transaction between the arms is
    sysbench's own (|Δ client| > |Δ server|: the client's cost rose as the server's fell, or
    moved more) — there the run measures both, not the server.

    >>> b = pd.DataFrame({"workload": ["w", "w"], "threads": [256, 16], "candidate": ["p", "p"],
    ...                   "verdict": ["draw", "worse"], "saturated": [True, False],
    ...                   "server_us": [(40.0, 36.0), (40.0, 44.0)], "client_us": [(20.0, 25.0), (20.0, 26.0)]})
    >>> client_decides(b, pinned=False)[["threads", "verdict"]].values.tolist()
    [[256, 'draw']]
    """
    cols = ["workload", "threads", "candidate", "verdict"]
    if pinned or b is None or b.empty:
        return pd.DataFrame(columns=cols)
    moved = [abs(c[1] - c[0]) > abs(s[1] - s[0]) for s, c in zip(b["server_us"], b["client_us"])]
    return b[b["saturated"].astype(bool) & pd.Series(moved, index=b.index)][cols].reset_index(drop=True)


def judged_budget(tables: dict[str, Any], throughput: str | None, host_cpus: int) -> pd.DataFrame:
    """`budget` of an answer's tables (its `steps`, its throughput table `throughput`),
    computed once and kept in `tables["budget"]` for the caveat and the report's table."""
    if "budget" not in tables:
        tables["budget"] = budget(steps_of(tables), tables.get(throughput) if throughput else None, host_cpus)
    return tables["budget"]


def steps_of(tables: dict[str, Any]) -> pd.DataFrame | None:
    steps = tables.get("steps")
    return steps if isinstance(steps, pd.DataFrame) and {*BY, "arm"} <= set(steps) else None
