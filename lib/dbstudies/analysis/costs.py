"""Why an arm is faster or slower: the per-transaction costs of its steps (server and client
CPU, context switches, I/O, redo, rows read — `probes.COSTS`, columns of the steps table),
each compared with the baseline by the study's verdict rule in a Holm family of its own, and,
for every cell a throughput or latency table judged better or worse, the costs that moved."""
from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from ..kit.contract import Answer
from ..kit.studykit import BY, Arm
from ..observe.probes import COSTS
from . import budget
from .cells import effect, signed
from .tables import compare_arms
from .words import adjusted

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


CPU = ("cpu_server_us_per_txn", "cpu_client_us_per_txn")


def cpu_points(costs: dict[str, pd.DataFrame], key: dict[str, Any], candidate: str) -> dict[str, float]:
    """Per CPU cost (`CPU`) of one cell × candidate: the points of throughput change it
    accounts for if the CPUs are the limit — the change the cell's CPU per transaction
    predicts, (S_b + C_b) / (S_c + C_c) − 1, split between server and client by their share
    of the extra µs; a candidate's µs are the baseline's median × the table's difference (one
    estimator per quantity, as the CPU budget). Empty unless both CPU costs were compared."""
    medians = {}
    for column in CPU:
        t = costs.get(column)
        if t is None:
            return {}
        hit = t[(t["candidate"] == candidate) & np.logical_and.reduce([t[k] == v for k, v in key.items()])]
        if hit.empty:
            return {}
        base = float(hit["median_baseline"].iloc[0])  # the candidate's by the table's own estimate
        medians[column] = (base, base * (1 + float(hit["delta_pct"].iloc[0]) / 100))
    base = sum(b for b, _ in medians.values())
    cand = sum(c for _, c in medians.values())
    extra = cand - base
    if cand <= 0 or abs(extra) <= 1e-9:
        return {}
    predicted = budget.predicted(base, cand)
    return {column: predicted * (c - b) / extra for column, (b, c) in medians.items()}


def explained(said: Answer) -> dict[str, pd.DataFrame]:
    """An answer's judged tables that per-transaction costs can explain
    (`Comparison.explained`: throughput and latency, not a load time), by their short names."""
    return {c.short: said.tables[c.key] for c in said.comparisons
            if c.judged and c.explained and c.key in said.tables}


def moved(said: Answer | dict[str, pd.DataFrame], costs: dict[str, pd.DataFrame],
          by: list[str] = BY) -> pd.DataFrame:
    """For every cell × candidate that a table of the answer `said` (its `explained` tables;
    or a dict: name → comparison table) called better or worse — one row, whichever tables did —: those verdicts, and the costs
    whose own verdict is not a draw, e.g. "client CPU µs per transaction +45.0 % [+38.1,
    +52.3]: −12.1 points of throughput". CPU costs come first, ranked by the points of
    throughput change they account for if the CPUs are the limit (`cpu_points`); the others
    follow by the size of their change (they say how, not how much). Then how many costs
    were compared and found within the draw."""
    rows: dict[tuple[Any, ...], dict[str, Any]] = {}
    judged = said if isinstance(said, dict) else explained(said)
    for name, rel in judged.items():
        if rel is None or rel.empty:
            continue
        for r in rel[rel["verdict"].isin(JUDGED)].itertuples():
            key = {k: getattr(r, k) for k in by}
            said = f"{name}: {r.verdict} ({signed(r.delta_pct)})"
            ident = (*key.values(), r.candidate)
            if ident in rows:
                rows[ident]["judged"] += f"; {said}"
                continue
            found, steady = _moved_at(costs, key, r.candidate)
            rows[ident] = {**key, "candidate": r.candidate, "judged": said,
                           "costs that moved": "; ".join(t for _, t in sorted(found)) or "none",
                           "within the draw": steady}
    return pd.DataFrame(list(rows.values()), columns=[*by, "candidate", "judged", "costs that moved",
                                                      "within the draw"])


def _moved_at(costs: dict[str, pd.DataFrame], key: dict[str, Any],
              candidate: str) -> tuple[list[tuple[tuple[int, float], str]], int]:
    """At one cell × candidate: each cost that moved in words, with its rank (CPU costs by the
    points of throughput they account for, then the others by their change), and how many
    costs stayed within the draw."""
    points = cpu_points(costs, key, candidate)
    found, steady = [], 0
    for column, table in costs.items():
        hit = table[(table["candidate"] == candidate)
                    & np.logical_and.reduce([table[k] == v for k, v in key.items()])]
        if hit.empty:
            continue
        c = hit.iloc[0]
        if c["verdict"] not in JUDGED:
            steady += 1
            continue
        text = f"{c['cost']} {effect(c, *adjusted(c))}"
        if column in points:
            text += f": {signed(points[column]).removesuffix(' %')} points of throughput"
            found.append(((0, -abs(points[column])), text))
        else:
            found.append(((1, -abs(c["delta_pct"])), text))
    return found, steady
