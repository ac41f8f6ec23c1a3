"""Why an arm is faster or slower: the per-transaction costs of its steps (server and client
CPU, context switches, I/O, redo, rows read — `probes.COSTS`, columns of the steps table),
each compared with the baseline by the study's verdict rule in a Holm family of its own, and,
for every cell a throughput or latency table judged better or worse, the costs that moved."""
from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from ..probes import COSTS
from ..studykit import Arm
from . import BY, compare_arms, signed

JUDGED = ("better", "worse")


def words(column: str) -> str:
    """A cost column as the reports name it.

    >>> words("cpu_server_us_per_txn")
    'server CPU µs per transaction'
    """
    return COSTS[column][2] + " per transaction"


def tables(steps: pd.DataFrame, arms: list[Arm], p: Any, by: list[str] = BY) -> dict[str, pd.DataFrame]:
    """One comparison table per cost the steps recorded (lower is better), each its own Holm
    family. A cell is compared only where every one of its steps has the cost above zero
    (a log ratio needs it: a read-only cell writes no redo); a cost no cell can compare is
    left out. Empty for runs measured before the costs were recorded (steps v3)."""
    out = {}
    for column in COSTS:
        if column not in steps:
            continue
        ok = steps.groupby(by, sort=False)[column].transform(lambda s: bool((s > 0).all()))
        mine = steps[ok.astype(bool)]
        if mine.empty or mine["arm"].nunique() < 2:
            continue
        rel = compare_arms(mine, arms, by=by, value=column, higher_is_better=False,
                           threshold=p.draw_threshold)
        if not rel.empty:
            out[column] = rel.assign(cost=words(column))
    return out


def moved(judged: dict[str, pd.DataFrame], costs: dict[str, pd.DataFrame],
          by: list[str] = BY) -> pd.DataFrame:
    """For every cell × candidate that a table of `judged` (its name → comparison table)
    called better or worse: that verdict, and the costs whose own verdict is not a draw —
    "server CPU µs per transaction −18.0 % [−22.1, −13.6]" —, largest change first, and how
    many costs were compared and found within the draw."""
    rows = []
    for name, rel in judged.items():
        if rel is None or rel.empty:
            continue
        for r in rel[rel["verdict"].isin(JUDGED)].itertuples():
            key = {k: getattr(r, k) for k in by}
            found, steady = [], 0
            for table in costs.values():
                hit = table[(table["candidate"] == r.candidate)
                            & np.logical_and.reduce([table[k] == v for k, v in key.items()])]
                if hit.empty:
                    continue
                c = hit.iloc[0]
                if c["verdict"] in JUDGED:
                    found.append((abs(c["delta_pct"]), f"{c['cost']} {signed(c['delta_pct'])} "
                                  f"[{signed((c['ci_low'] - 1) * 100)}, {signed((c['ci_high'] - 1) * 100)}]"))
                else:
                    steady += 1
            rows.append({**key, "candidate": r.candidate, "judged": f"{name}: {r.verdict} "
                         f"({signed(r.delta_pct)})", "costs that moved": "; ".join(
                             t for _, t in sorted(found, reverse=True)) or "none",
                         "within the draw": steady})
    return pd.DataFrame(rows, columns=[*by, "candidate", "judged", "costs that moved", "within the draw"])
