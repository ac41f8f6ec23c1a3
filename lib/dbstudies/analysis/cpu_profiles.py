"""Where the server spent its CPU: the on-CPU profiles (`cpu_profile`) of the cells chosen
after the plan — those whose throughput verdict was better or worse, else the one with the
largest difference, or the cells named in `cpu_profile_cells` — one profiled step per arm,
and what moved between the baseline and each candidate: per function, its share of the
samples and its CPU µs per transaction (the share × the step's server CPU per transaction),
both arms side by side, largest change first."""
from __future__ import annotations

from typing import Any

import pandas as pd

from .. import flamegraph, profiler, results
from ..profiler import parse_cell
from ..results import Run
from ..studykit import Arm
from ..tables import CPU_PROFILES, STEPS, WAITS
from . import BY, compare_arms

JUDGED = ("better", "worse")
MAX_CELLS = 4          # cells profiled at most (the largest differences)
TOP = 12               # functions in a difference table
TOP_WAITS = 10         # wait events in a waits table
# not contention: a connection idle between statements, a thread asleep on a condition
# (background timers, page cleaners without work); stored, but not listed
NOT_WAITS = ("idle", "wait/synch/cond/")


def cells(run: Run, arms: list[Arm], p: Any, value: str = "qps") -> list[dict[str, Any]]:
    """The cells to profile: `cpu_profile_cells` if named; else every cell whose `value`
    verdict is better or worse (the `MAX_CELLS` largest differences), else the one cell
    with the largest difference — so a run always profiles something to look at."""
    if getattr(p, "cpu_profile_cells", None):
        return [parse_cell(c) for c in p.cpu_profile_cells]  # checked with the parameters
    rel = compare_arms(results.measured(run), arms, by=BY, value=value,
                       threshold=p.draw_threshold).dropna(subset=["delta_pct"])
    if rel.empty:
        return []
    rel = rel.assign(size=rel["delta_pct"].abs()).sort_values("size", ascending=False)
    judged = rel[rel["verdict"].isin(JUDGED)]
    chosen = judged if len(judged) else rel.head(1)
    return chosen[BY].drop_duplicates().head(MAX_CELLS).to_dict("records")


def profiled(run: Run) -> pd.DataFrame:
    """The profiled steps: step, arm, workload, threads, tps, server CPU µs per
    transaction, samples and the folded file (empty if the run profiled nothing)."""
    if not run.has_table(CPU_PROFILES):
        return pd.DataFrame(columns=["step", "arm", *BY, "tps", "cpu_server_us_per_txn", "samples", "file"])
    steps = run.table(STEPS)
    keep = [c for c in ["step", "arm", *BY, "tps", "cpu_server_us_per_txn"] if c in steps]
    return steps[steps["phase"] == "profile"][keep].merge(run.table(CPU_PROFILES), on="step")


def stacks(run: Run, row: Any) -> dict[str, int]:
    """One profiled step's folded stacks."""
    return profiler.read_folded(run.file(row.file))


PROFILED, UNPROFILED, CHANGE = "tx/s profiled", "tx/s unprofiled (median)", "change %"


def overhead(run: Run, rows: pd.DataFrame) -> pd.DataFrame:
    """Throughput while profiled against the same arm and cell unprofiled (the median of
    its measured steps): what sampling cost, per profiled step."""
    steps = results.measured(run)
    med = steps.groupby(["arm", *BY])["tps"].median().rename(UNPROFILED).reset_index()
    out = rows[["arm", *BY, "tps"]].rename(columns={"tps": PROFILED}).merge(med, on=["arm", *BY])
    return out.assign(**{CHANGE: (out[PROFILED] / out[UNPROFILED] - 1) * 100})


def functions(st: dict[str, int], us_per_txn: float) -> pd.DataFrame:
    """`flamegraph.shares` with each function's server CPU µs per transaction (self and
    total): its share of the samples × the step's server CPU per transaction."""
    df = flamegraph.shares(st)
    return df.assign(self_us=df["self_pct"] / 100 * us_per_txn,
                     total_us=df["total_pct"] / 100 * us_per_txn)


def difference(base: pd.DataFrame, cand: pd.DataFrame, top: int = TOP) -> pd.DataFrame:
    """Two arms' `functions` side by side: per function its own (self) CPU µs per
    transaction and share of samples in each, the change, and the samples behind them;
    the `top` largest changes in µs first (a function one arm never ran counts as 0)."""
    cols = ["function", "self", "self_pct", "self_us", "total_pct"]
    both = base[cols].merge(cand[cols], on="function", how="outer", suffixes=("_base", "_cand")).fillna(0)
    both = both.assign(change_us=both["self_us_cand"] - both["self_us_base"],
                       change_pts=both["self_pct_cand"] - both["self_pct_base"])
    both = both.reindex(both["change_us"].abs().sort_values(ascending=False).index).head(top)
    return pd.DataFrame({
        "function": both["function"],
        "self µs/txn baseline": both["self_us_base"], "self µs/txn candidate": both["self_us_cand"],
        "change µs/txn": both["change_us"],
        "self % baseline": both["self_pct_base"], "self % candidate": both["self_pct_cand"],
        "change (points)": both["change_pts"],
        "samples baseline": both["self_base"].astype("int64"),
        "samples candidate": both["self_cand"].astype("int64")}).reset_index(drop=True)


def delta_of(base: pd.DataFrame, cand: pd.DataFrame) -> dict[str, float]:
    """Per function, the change of its total share (points), candidate minus baseline:
    what a difference flame graph is coloured by."""
    both = base.set_index("function")["total_pct"].to_frame("b").join(
        cand.set_index("function")["total_pct"].to_frame("c"), how="outer").fillna(0)
    return (both["c"] - both["b"]).to_dict()


def waits(run: Run, rows: pd.DataFrame, arms: list[Arm]) -> dict[tuple[str, int], pd.DataFrame]:
    """Per profiled cell (workload, threads): the performance_schema waits of its profiled
    steps, one row per wait event, per arm (baseline first) the waits and the ms waited per
    1,000 transactions; the `TOP_WAITS` events with the most time waited in any arm (idle
    connections and condition waits left out: `NOT_WAITS`). Empty where no arm ran with
    performance_schema on."""
    if not run.has_table(WAITS) or rows.empty:
        return {}
    steps = run.table(STEPS)[["step", "events"]]
    w = run.table(WAITS).merge(rows[["step", "arm", *BY]], on="step").merge(steps, on="step")
    w = w[~w["event"].str.startswith(NOT_WAITS)]
    w = w.assign(per_k=w["count"] / w["events"] * 1000, ms_per_k=w["wait_ms"] / w["events"] * 1000)
    out = {}
    for (wl, t), cell in w.groupby(BY, sort=False):
        labels = [a.label for a in arms if a.label in set(cell["arm"])]
        wide = cell.pivot_table(index="event", columns="arm", values=["per_k", "ms_per_k"], aggfunc="sum")
        top = wide["ms_per_k"].max(axis=1).sort_values(ascending=False).head(TOP_WAITS).index
        table = pd.DataFrame({"event": top})
        for a in labels:
            table[f"{a}: waits per 1,000 txn"] = wide.loc[top, ("per_k", a)].to_numpy()
            table[f"{a}: ms waited per 1,000 txn"] = wide.loc[top, ("ms_per_k", a)].to_numpy()
        out[(wl, int(t))] = table.fillna(0)
    return out


def sizes(rel: pd.DataFrame) -> dict[tuple[str, int], float]:
    """Per cell (workload, threads) of a `compare_arms` table, its largest |difference| in
    % — the verdicts' estimator — for showing the profiled cells largest first."""
    rel = rel.dropna(subset=["delta_pct"])
    return {(w, int(t)): float(v) for (w, t), v in rel["delta_pct"].abs().groupby([rel[b] for b in BY]).max().items()}


def views(run: Run, arms: list[Arm]) -> list[dict[str, Any]]:
    """Everything the report shows per profiled cell, the cell whose throughput differs
    most between arms first: its title, per arm (baseline first)
    the flame graph SVG and its step's figures, per candidate the difference table and its
    difference flame graph, the throughput difference of the profiled steps next to the
    verdict's (`profiled_pct`, `verdict_pct`: one profiled step per arm can miss what the
    verdict saw) and the performance_schema waits (None where it was off)."""
    rows = profiled(run)
    if rows.empty:
        return []
    order = {a.label: i for i, a in enumerate(arms)}
    waited = waits(run, rows, arms)
    rel = compare_arms(results.measured(run), arms, by=BY, value="tps")
    size = sizes(rel)
    judged = {(r.workload, int(r.threads), r.candidate): r.delta_pct for r in rel.itertuples()
              if r.verdict in ("better", "worse")}
    out = []
    for (w, t), cell in sorted(rows.groupby(BY, sort=False), key=lambda g: -size.get((g[0][0], int(g[0][1])), 0.0)):
        cell = cell.assign(o=cell["arm"].map(order)).sort_values("o")
        per_arm = []
        for r in cell.itertuples():
            st = stacks(run, r)
            per_arm.append({"arm": r.arm, "stacks": st, "samples": int(r.samples), "tps": r.tps,
                            "functions": functions(st, r.cpu_server_us_per_txn),
                            "svg": flamegraph.svg(st, f"{r.arm} · {w}, {t} threads")})
        base = per_arm[0]
        diffs = []
        for c in per_arm[1:]:
            diffs.append({"candidate": c["arm"], "table": difference(base["functions"], c["functions"]),
                          "profiled_pct": (c["tps"] / base["tps"] - 1) * 100 if base["tps"] else float("nan"),
                          "verdict_pct": judged.get((w, int(t), c["arm"]), float("nan")),
                          "svg": flamegraph.svg(c["stacks"], f"{c['arm']} against {base['arm']}: "
                                                f"red gained share, blue lost",
                                                delta=delta_of(base["functions"], c["functions"]))})
        out.append({"title": f"{w}, {t} threads", "workload": w, "threads": t,
                    "arms": per_arm, "differences": diffs, "waits": waited.get((w, int(t)))})
    return out
