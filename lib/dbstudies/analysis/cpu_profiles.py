"""Where the server spent its CPU: the on-CPU profiles (`cpu_profile`) of the cells chosen
after the plan — those whose throughput verdict was better or worse, else the one with the
largest difference, or the cells named in `cpu_profile_cells` — profiled on every arm in
`cpu_profile_rounds` paired rounds, and what moved between the baseline and each candidate.

A function's CPU µs per transaction in a step is its share of the step's samples — those
with it on the stack, what it called included, as a flame graph's box is wide — × the step's
server CPU per transaction. Each round gives one paired difference per function;
`stats.profiles` judges them across rounds (an interval, BH's false-discovery control across
the cell's functions, the smallest change a function could show). Functions with fewer than
`MIN_SAMPLES` samples per step are judged as groups, one per caller (`caller › small
callees`); what stays below that is counted, not judged.
"""
from __future__ import annotations

from collections import Counter
from typing import Any

import numpy as np
import pandas as pd

from ..kit.studykit import BY, Arm
from ..observe import flamegraph, profiler
from ..observe.profiler import MAX_CELLS, parse_cell
from ..stats import profiles as judged_units
from ..store import results
from ..store.results import Run
from ..store.tables import CPU_PROFILES, STEPS, WAITS
from .cells import signed
from .tables import compare_arms

JUDGED = ("better", "worse")
TOP = 12               # functions in a difference table
MIN_SAMPLES = 20       # own samples per step (mean) for a function or caller group to be judged
SMALL = " › small callees"  # the group of a caller's functions too small to judge alone
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
        return pd.DataFrame(columns=["step", "arm", "pair", *BY, "tps", "cpu_server_us_per_txn", "samples", "file"])
    steps = run.table(STEPS)
    keep = [c for c in ["step", "arm", "pair", *BY, "tps", "cpu_server_us_per_txn"] if c in steps]
    return steps[steps["phase"] == "profile"][keep].merge(run.table(CPU_PROFILES), on="step")


def stacks(run: Run, row: Any) -> dict[str, int]:
    """One profiled step's folded stacks."""
    return profiler.read_folded(run.file(row.file))


PROFILED, UNPROFILED, CHANGE = "tx/s profiled (median)", "tx/s unprofiled (median)", "change %"


def overhead(run: Run, rows: pd.DataFrame) -> pd.DataFrame:
    """Throughput while profiled (the median of an arm's profiled steps of a cell) against
    the same arm and cell unprofiled (the median of its measured steps): what sampling cost."""
    steps = results.measured(run)
    med = steps.groupby(["arm", *BY])["tps"].median().rename(UNPROFILED).reset_index()
    shot = rows.groupby(["arm", *BY], sort=False)["tps"].median().rename(PROFILED).reset_index()
    out = shot.merge(med, on=["arm", *BY])
    return out.assign(**{CHANGE: (out[PROFILED] / out[UNPROFILED] - 1) * 100})


def unit_samples(read: dict[int, dict[str, int]]) -> pd.DataFrame:
    """Per step (`read`: step → its folded stacks), the samples of each judged unit, counted
    as a flame graph's box is — a sample once per unit on its stack (the function and what it
    called): a function with ≥ `MIN_SAMPLES` such samples per step on average, else (where it
    is the outermost small frame of its path) its caller's group of small callees (`SMALL`),
    judged when the group reaches `MIN_SAMPLES` too. The thread (a stack's first frame) is no
    unit. A step × unit table; attrs `too_small`: the share of samples in no judged unit."""
    on_stack: Counter = Counter()
    for st in read.values():
        for stack, n in st.items():
            for f in set(stack.split(";")[1:]):
                on_stack[f] += n
    steps = max(len(read), 1)
    alone = {f for f, n in on_stack.items() if n / steps >= MIN_SAMPLES}
    rows, nowhere = {}, {}
    for step, st in read.items():
        row: Counter = Counter()
        for stack, n in st.items():
            frames = stack.split(";")
            units = set()
            for i in range(1, len(frames)):
                if frames[i] in alone:
                    units.add(frames[i])
                elif frames[i - 1] in alone or i == 1:
                    units.add(f"{frames[i - 1] if i > 1 else '(thread)'}{SMALL}")
            for u in units:
                row[u] += n
        rows[step] = row
    table = pd.DataFrame.from_dict(rows, orient="index").fillna(0)
    judged = [c for c in table.columns if c in alone or table[c].mean() >= MIN_SAMPLES]
    total = float(sum(sum(st.values()) for st in read.values())) or 1.0
    for step, st in read.items():  # samples with no judged unit on their stack
        nowhere[step] = sum(n for stack, n in st.items()
                            if not any(f in alone for f in stack.split(";")[1:])
                            and not any(c.endswith(SMALL) and c in judged for c in _groups(stack, alone)))
    out = table[sorted(judged)]  # one order whatever the hash seed
    out.attrs["too_small"] = sum(nowhere.values()) / total
    return out


def _groups(stack: str, alone: set[str]) -> set[str]:
    """The caller groups (`SMALL`) one stack's small frames fall into."""
    frames = stack.split(";")
    return {f"{frames[i - 1] if i > 1 else '(thread)'}{SMALL}" for i in range(1, len(frames))
            if frames[i] not in alone and (frames[i - 1] in alone or i == 1)}


def difference(cell: pd.DataFrame, units: pd.DataFrame, base: str, cand: str) -> tuple[pd.DataFrame, dict]:
    """The candidate against the baseline in one profiled cell (`cell`: its profiled steps,
    with their samples; `units`: their `unit_samples`, a row per step): per judged unit (a
    function with what it calls, or a caller's group of small callees), the paired difference
    of its CPU µs per transaction across the rounds both arms were profiled in, judged by
    `stats.profiles` (flagged first, largest `relative` change first — a function new to an arm
    before the callers whose time includes it —, then the rest by size of change). attrs:
    rounds, units judged,
    units flagged, the share of samples too small to judge (`units.attrs`), the median and
    smallest change a unit could show (as a fraction of its baseline). Also returns what the
    difference flame graph colours: {function: change µs/txn} of the flagged units (a
    group's change on its caller)."""
    too_small = units.attrs.get("too_small", 0.0)
    totals = cell.set_index("step")["samples"].astype(float).clip(lower=1.0)
    us = units.loc[cell["step"]].div(totals, axis=0).mul(cell.set_index("step")["cpu_server_us_per_txn"], axis=0)
    arm_of = cell.set_index("step")
    sides = {}
    for label in (base, cand):
        mine = arm_of[arm_of["arm"] == label]
        sides[label] = us.loc[mine.index].set_axis(mine["pair"].to_numpy())
    pairs = sorted(set(sides[base].index) & set(sides[cand].index))
    b, c = sides[base].loc[pairs], sides[cand].loc[pairs]
    t = judged_units.per_unit(b.to_numpy(), c.to_numpy()) if len(units.columns) else \
        pd.DataFrame(columns=judged_units.UNIT_COLUMNS)
    t.insert(0, "function", list(units.columns))
    # flagged first, the largest change relative to the unit's larger side first (a function one
    # arm never ran, 100 %, before the callers whose time includes it), then the rest by size
    t["relative"] = t["change"].abs() / np.fmax(t["baseline"], t["candidate"]).clip(lower=1e-12)
    t = t.assign(size=np.where(t["flagged"], t["relative"], t["change"].abs()).round(9)).sort_values(
        ["flagged", "size", "function"], ascending=[False, False, True], kind="stable").drop(columns="size")  # names break ties
    t.attrs.update(rounds=len(pairs), units=len(t), flagged=int(t["flagged"].sum()), too_small=too_small,
                   mde_median=float(t["mde_frac"].median()) if len(t) else float("nan"),
                   mde_min=float(t["mde_frac"].min()) if len(t) else float("nan"))
    delta = {}
    for r in t[t["flagged"]].itertuples():  # what the difference flame graph colours: flagged units only
        delta[r.function.removesuffix(SMALL)] = delta.get(r.function.removesuffix(SMALL), 0.0) + r.change
    return t.reset_index(drop=True), delta


def _relative(base: float, cand: float) -> str:
    """A unit's change in words: 'new' (the baseline under 2 % of the candidate), 'gone', or in %.

    >>> _relative(0.0018, 0.22), _relative(3.0, 0.01), _relative(3.55, 4.65)
    ('new', 'gone', '+31.0 %')
    """
    if base < 0.02 * cand:
        return "new"
    if cand < 0.02 * base:
        return "gone"
    return signed((cand / base - 1) * 100)


def said(t: pd.DataFrame) -> str:
    """A `difference` in words: how many units changed and by how much (the three largest,
    with intervals), the change a unit alone could show, and what was too small to judge."""
    a, n = t.attrs, t.attrs.get("rounds", 0)
    if n < 2:
        return (f"{n} profiled round{'s' if n != 1 else ''} with both arms: no interval — the changes below are "
                "one profile against one, chance included (`cpu_profile_rounds` ≥ 3 judges them).")
    flagged = t[t["flagged"]]
    out = (f"{n} paired rounds: {a['flagged']} of {a['units']} functions and caller groups changed their CPU per "
           "transaction (false-discovery rate 5 %)")
    out += ("; largest relative to their time: "
            + "; ".join(f"`{r.function}` {r.change:+.2f} µs/txn [{r.lo:+.2f}, {r.hi:+.2f}]".replace("-", "−")
                        for r in flagged.head(3).itertuples()) + (f" and {len(flagged) - 3} more" if len(flagged) > 3 else "")
            if len(flagged) else " — none")
    if np.isfinite(a["mde_median"]):
        out += (f". A function alone could show a change of {a['mde_median'] * 100:.0f} % of its own time "
                f"(the median over functions; {a['mde_min'] * 100:.0f} % the smallest)")
    return out + (f"; {a['too_small'] * 100:.0f} % of the samples were in functions too small to judge "
                  f"(< {MIN_SAMPLES} a step, their caller's group too).")


def shown_difference(t: pd.DataFrame, top: int = TOP) -> pd.DataFrame:
    """A `difference` as the report shows it: the flagged units, then the largest other
    changes — `top` rows —, each with its interval, q and the change it could have shown."""
    t = t.head(top)
    return pd.DataFrame({
        "function": t["function"], "µs/txn baseline": t["baseline"], "µs/txn candidate": t["candidate"],
        "change µs/txn": t["change"], "change": [_relative(b, c) for b, c in zip(t["baseline"], t["candidate"])],
        "95 % interval": [f"[{lo:+.2f}, {hi:+.2f}]".replace("-", "−") if np.isfinite(lo) else "–"
                          for lo, hi in zip(t["lo"], t["hi"])],
        "q (FDR)": t["q"], "changed": np.where(t["flagged"], "yes", ""),
        "could show ± µs": t["mde"]}).reset_index(drop=True)


def waits(run: Run, rows: pd.DataFrame, arms: list[Arm]) -> dict[tuple[str, int], pd.DataFrame]:
    """Per profiled cell (workload, threads): the performance_schema waits of its profiled
    steps, one row per wait event, per arm (baseline first) the waits and the ms waited per
    1,000 transactions over all its profiled rounds; the `TOP_WAITS` events with the most time waited in any arm (idle
    connections and condition waits left out: `NOT_WAITS`). Empty where no arm ran with
    performance_schema on."""
    if not run.has_table(WAITS) or rows.empty:
        return {}
    steps = run.table(STEPS)[["step", "events"]].merge(rows[["step", "arm", *BY]], on="step")
    events = steps.groupby([*BY, "arm"])["events"].sum().rename("events")  # every profiled round of an arm
    w = run.table(WAITS).merge(rows[["step", "arm", *BY]], on="step")
    w = w[~w["event"].str.startswith(NOT_WAITS)].groupby([*BY, "arm", "event"], as_index=False)[["count", "wait_ms"]].sum()
    w = w.merge(events.reset_index(), on=[*BY, "arm"])
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


def _arm_view(mine: pd.DataFrame, read: dict[int, Counter], label: str, title: str) -> dict[str, Any]:
    """One arm's profiled rounds of a cell (`mine`): their stacks merged, samples, median
    throughput and flame graph."""
    merged: Counter = Counter()
    for step in mine["step"]:
        merged.update(read[step])
    return {"arm": label, "stacks": dict(merged), "samples": int(mine["samples"].sum()),
            "tps": float(mine["tps"].median()), "rounds": len(mine),
            "svg": flamegraph.svg(merged, f"{label} · {title}" + (f" · {len(mine)} rounds" if len(mine) > 1 else ""))}


def views(run: Run, arms: list[Arm]) -> list[dict[str, Any]]:
    """Everything the report shows per profiled cell, the cell whose throughput differs
    most between arms first: its title, per arm (baseline first) the flame graph of all its
    profiled rounds and their samples and median throughput, per candidate the judged
    difference (`difference`, its table as shown) and its difference flame graph — only
    flagged functions coloured —, the throughput difference of the profiled steps next to the
    verdict's (`profiled_pct`, `verdict_pct`) and the performance_schema waits (None where
    it was off)."""
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
        read = {r.step: stacks(run, r) for r in cell.itertuples()}
        units = unit_samples(read)
        labels = sorted(set(cell["arm"]), key=lambda a: order.get(a, len(order)))
        per_arm = [_arm_view(cell[cell["arm"] == label], read, label, f"{w}, {t} threads") for label in labels]
        base = per_arm[0]
        diffs = []
        for c in per_arm[1:]:
            table, delta = difference(cell, units, base["arm"], c["arm"])
            diffs.append({"candidate": c["arm"], "judged": table, "table": shown_difference(table),
                          "profiled_pct": (c["tps"] / base["tps"] - 1) * 100 if base["tps"] else float("nan"),
                          "verdict_pct": judged.get((w, int(t), c["arm"]), float("nan")),
                          "svg": flamegraph.svg(c["stacks"], f"{c['arm']} against {base['arm']}: red costs more "
                                                "µs/txn, blue less — only what the intervals show (FDR 5 %)",
                                                delta=delta, unit="µs/txn")})
        out.append({"title": f"{w}, {t} threads", "workload": w, "threads": t,
                    "arms": per_arm, "differences": diffs, "waits": waited.get((w, int(t)))})
    return out
