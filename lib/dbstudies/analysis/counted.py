"""Where a count run's instructions went (`count`): from each window's dump, the instructions
per transaction of every function the serving threads executed — its own, and inclusive of
what it called — per arm; then each candidate against the baseline, largest difference first. The counts are
nearly deterministic: what is shown beside each is its spread from window to window, not a
test per function. On a stripped binary (Debian's) only exported symbols have names: the rest
is one entry, and its share is said."""
from __future__ import annotations

from typing import Any

import pandas as pd

from ..kit.studykit import BY
from ..observe import callgrind
from ..store.results import Run
from ..store.tables import COUNTS

TOP = 20  # functions shown per candidate


def per_function(run: Run, steps: pd.DataFrame) -> pd.DataFrame:
    """Per counted step × function: its instructions per transaction (the serving threads'
    own, `per_txn`; with its calls', `inclusive_per_txn`, none for the unnamed), with the
    step's arm and cell; empty for a run that counted nothing."""
    columns = ["step", "arm", *BY, "function", "per_txn", "inclusive_per_txn"]
    if not run.has_table(COUNTS) or steps.empty:
        return pd.DataFrame(columns=columns)
    counts = run.table(COUNTS).merge(steps[["step", "arm", *BY, "events"]], on="step")
    rows = []
    for c in counts.itertuples(index=False):
        files = callgrind.serving_files(run.path / c.dump, [int(t) for t in str(c.serving).split(",") if t])
        inclusive = callgrind.functions(files, inclusive=True)
        for name, cost in callgrind.functions(files).items():
            rows.append({"step": c.step, "arm": c.arm, **{k: getattr(c, k) for k in BY},
                         "function": name, "per_txn": cost / c.events,
                         "inclusive_per_txn": inclusive[name] / c.events if name in inclusive else float("nan")})
    return pd.DataFrame(rows, columns=columns)


def _largest(sides: dict[str, pd.DataFrame], baseline: str, arm: str, inclusive: list[str], top: int) -> pd.DataFrame:
    """The `top` functions whose median instructions per transaction changed most from the
    baseline's side to the arm's, with each side's window range and the inclusive costs
    (`inclusive`: the baseline's per function, then the arm's)."""
    a, b = sides[baseline], sides[arm]
    n = len(a.index)
    t = pd.DataFrame({
        "function": a.index,
        f"{baseline}: instructions/txn": a["median"].round(1),
        f"{baseline}: windows": [f"{lo:,.0f}–{hi:,.0f}" for lo, hi in zip(a["low"], a["high"])],
        f"{arm}: instructions/txn": b["median"].round(1),
        f"{arm}: windows": [f"{lo:,.0f}–{hi:,.0f}" for lo, hi in zip(b["low"], b["high"])],
        "inclusive/txn, with its calls": [f"{x} → {y}" for x, y in zip(inclusive[:n], inclusive[n:])],
        "change/txn": (b["median"] - a["median"]).round(1),
        "change, % of the baseline's total": ((b["median"] - a["median"]) / a["median"].sum() * 100).round(3),
    })
    return t.reindex(t["change/txn"].abs().sort_values(ascending=False).index).head(top).reset_index(drop=True)


def differences(per: pd.DataFrame, arms: list[Any], top: int = TOP) -> list[dict[str, Any]]:
    """Per cell and candidate (not the A/A twin): the `top` functions whose instructions per
    transaction differ most from the baseline's (medians over the windows; a function a window
    did not run counts 0 there), each with both arms' window-to-window range, and the share of
    each arm's instructions that no name accounts for."""
    if per.empty:
        return []
    baseline, out = arms[0].label, []
    windows = per.pivot_table(index=["function"], columns=["arm", *BY, "step"], values="per_txn",
                              aggfunc="sum", fill_value=0.0)
    inclusive = (per.dropna(subset=["inclusive_per_txn"])
                 .groupby(["arm", *BY, "function"])["inclusive_per_txn"].median()
                 if "inclusive_per_txn" in per else pd.Series(dtype=float))
    for cell, _ in per.groupby(list(BY), sort=False):
        for arm in [a.label for a in arms[1:] if a.twin_of is None]:
            sides = {}
            for label in (baseline, arm):
                cols = [c for c in windows.columns if c[0] == label and tuple(c[1:1 + len(BY)]) == tuple(cell)]
                if not cols:
                    break
                w = windows[cols]
                sides[label] = pd.DataFrame({"median": w.median(axis=1), "low": w.min(axis=1), "high": w.max(axis=1)})
            if len(sides) < 2:
                continue
            t = _largest(sides, baseline, arm, [_per(inclusive, (label, *cell, f)) for label in (baseline, arm)
                                                for f in sides[baseline].index], top)
            unnamed = {label: float(s.loc[callgrind.UNNAMED, "median"] / s["median"].sum())
                       if callgrind.UNNAMED in s.index and s["median"].sum() else 0.0
                       for label, s in sides.items()}
            out.append({"cell": dict(zip(BY, cell)), "candidate": arm, "baseline": baseline, "table": t,
                        "unnamed": unnamed, "windows": {label: sum(1 for c in windows.columns if c[0] == label
                                                                   and tuple(c[1:1 + len(BY)]) == tuple(cell))
                                                        for label in (baseline, arm)}})
    return out


def _per(inclusive: pd.Series, key: tuple) -> str:
    """A function's median inclusive instructions per transaction in one arm and cell ("–": none,
    the unnamed functions' or one that arm did not run)."""
    v = inclusive.get(key)
    return f"{v:,.0f}" if v is not None and v == v else "–"
