"""The server's own answer beside throughput, per compared cell, on a host it shares with its
client: the server's CPU per transaction (its comparison, `comparisons` `server_cost`), what
that change alone would do to throughput, what the measured throughput did, how much the
client dilutes or adds to it (f: sysbench's CPU µs per server CPU µs), and how long the
server's threads waited for a CPU per transaction.

Operational laws on CPUs client and server share and fill: throughput ∝ 1 ÷ (S + C), S and C
the server's and the client's CPU per transaction. A server change k alone moves throughput by
1 ÷ (1 + k) − 1 if the server had the CPUs to itself, by about 1 ÷ (1 + k ÷ (1 + f)) − 1 here:
throughput **understates** the server's change where it moved less than the server's change
alone would (the client's share of the CPUs dilutes it), and **overstates** it where it moved
more (the client's own cost moved the same way: sysbench working harder reads as a slower
server)."""
from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from ..core.comparisons import Comparison
from ..kit.studykit import BY
from .budget import AGREES, client_per_server, pair_of
from .cells import interval, signed
from .words import field

VIEW_COLUMNS = ["workload", "threads", "candidate", "throughput", "server CPU/txn", "f",
                "the server's change alone", "reading", "server waited for a CPU, µs/txn"]


def alone(k_pct: float) -> float:
    """The throughput change (%) a server whose CPU per transaction changed by `k_pct` % would
    show with the CPUs to itself: 1 ÷ (1 + k) − 1.

    >>> round(alone(15.0), 1), round(alone(-20.0), 1)
    (-13.0, 25.0)
    """
    return (1 / (1 + k_pct / 100) - 1) * 100


def reading(qps_pct: float, qps_verdict: str, k_pct: float, k_range: tuple[float, float], k_verdict: str) -> str:
    """What throughput (its change and verdict) says of the server's own change (`k_pct`, its
    interval `k_range` in %, its verdict): agrees (within `AGREES` of the server-alone change,
    or 3 points), understates it (moved less, the same way), overstates it (moved more), moved
    against it — or, where the server's cost was a draw, whether its interval excludes the
    change it would take to explain throughput's (then the client's doing) or not.

    >>> reading(-9.0, "worse", 15.0, (9, 21), "worse"), reading(-22.0, "worse", 15.0, (9, 21), "worse")
    ('understates the server’s change', 'overstates the server’s change')
    >>> reading(-12.0, "worse", 15.0, (9, 21), "worse")
    'agrees with the server’s change'
    >>> reading(-20.0, "worse", 1.0, (-3, 5), "draw"), reading(-20.0, "worse", 1.0, (-20, 90), "draw")
    ('not the server’s cost: its interval excludes the +25.0 % or more it would take', 'the server’s cost is undecided')
    """
    if not (np.isfinite(qps_pct) and np.isfinite(k_pct)):
        return "–"
    own = alone(k_pct)
    if k_verdict not in ("better", "worse"):
        if qps_verdict not in ("better", "worse"):
            return "neither moved beyond the noise"
        needed = alone(qps_pct)  # the server change that alone would move throughput so (alone is its own inverse)
        lo, hi = k_range
        if np.isfinite(lo) and np.isfinite(hi) and not lo <= needed <= hi:
            return f"not the server’s cost: its interval excludes the {signed(needed)} or more it would take"
        return "the server’s cost is undecided"
    if qps_pct * own < 0:
        return "moved against the server’s change"
    if abs(qps_pct - own) <= max(3.0, AGREES * abs(own)):
        return "agrees with the server’s change"
    return "understates the server’s change" if abs(qps_pct) < abs(own) else "overstates the server’s change"


def table(tables: dict[str, Any], throughput: str, cost: Comparison | None) -> pd.DataFrame:
    """Per compared cell × candidate of the throughput table: throughput's change (verdict),
    the server's CPU per transaction (change, interval, verdict), f, the throughput change the
    server's change alone would make, the `reading`, and the server's wait for a CPU per
    transaction, baseline → candidate (steps v6 on). Empty without a server-cost comparison."""
    rel, steps = tables.get(throughput), tables.get("steps")
    srv = tables.get(cost.key) if cost is not None else None
    if rel is None or srv is None or rel.empty or srv.empty or steps is None or "baseline" not in rel:
        return pd.DataFrame(columns=VIEW_COLUMNS)
    f = client_per_server(steps, rel["baseline"].iloc[0])
    keyed = srv.set_index([*BY, "candidate"])
    rows = []
    for r in rel.dropna(subset=["delta_pct"]).itertuples():
        key = (r.workload, r.threads, r.candidate)
        if key not in keyed.index:
            continue
        s = keyed.loc[key]
        cell = steps[(steps["workload"] == r.workload) & (steps["threads"] == r.threads)]
        waited = pair_of(cell, r, "wait_server_us_per_txn") if "wait_server_us_per_txn" in cell else (np.nan, np.nan)
        rows.append({
            "workload": r.workload, "threads": int(r.threads), "candidate": r.candidate,
            "throughput": f"{signed(r.delta_pct)} ({r.verdict})",
            "server CPU/txn": f"{signed(s['delta_pct'])} {_interval(s)} ({s['verdict']})",
            "f": f"{f[(r.workload, r.threads)]:.2f}" if (r.workload, r.threads) in f.index else "–",
            "the server's change alone": signed(alone(s["delta_pct"])),
            "reading": reading(r.delta_pct, str(r.verdict), s["delta_pct"], _range(s), str(s["verdict"])),
            "server waited for a CPU, µs/txn": (f"{_us(waited[0])} → {_us(waited[1])}" if np.isfinite(waited[0])
                                                 else "–")})
    return pd.DataFrame(rows, columns=VIEW_COLUMNS)


def _us(x: float) -> str:
    """µs as a table shows them: whole with separators from 100 on, else 3 figures.

    >>> _us(51_700.4), _us(12.46), _us(0.643)
    ('51,700', '12.5', '0.643')
    """
    return f"{x:,.0f}" if x >= 100 else f"{x:.3g}"


def _range(s: pd.Series) -> tuple[float, float]:
    """The server cost's interval in % (Holm-adjusted where its table has one)."""
    lo, hi = ("holm_ci_low", "holm_ci_high") if field(s, "holm_ci_low") is not None else ("ci_low", "ci_high")
    return ((float(s[lo]) - 1) * 100, (float(s[hi]) - 1) * 100)


def _interval(s: pd.Series) -> str:
    return interval(s, "holm_ci_low", "holm_ci_high") if field(s, "holm_ci_low") is not None else interval(s)
