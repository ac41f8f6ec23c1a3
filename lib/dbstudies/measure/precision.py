"""How precisely a run knows each cell so far, and where its next rounds go: what the loop
asks after every round when a run has a precision `target` (`experiment`), and what
`dbstudies plan` predicts from earlier runs (`planner`).

A study's comparison tables are its judged `COMPARISONS` (`comparisons`), each on the
observations its `observations(run, p)` gives — for the sysbench kind the measured steps
(QPS, p95, p99 and the tail ratio per workload × threads). Per cell and metric with a target, the
pairs measured so far give the paired log ratios' variance (every compared arm against the
baseline; moderated across the table's cells as the verdicts are); from it the cell's MDE
now (`stats.paired_mde`, without the draw threshold) and the pairs it needs to reach the
target (`stats.rounds_for`). `fund` then chooses the cells the next round measures: those
still short, fewest pairs to go first, as many as the time left can take to their target;
a short cell whose pairs do not fit is left, and named.
"""
from __future__ import annotations

import math
from typing import Any, Callable

import numpy as np
import pandas as pd

from .. import stats
from ..kit.contract import Study
from ..kit.study import paired_tables
from ..kit.studykit import StudyParams
from ..stats.lazy import sps
from ..store.results import Run

HOPE = 0.8  # a cell is given up on only when even its variance's lower 80 % bound needs more than the budget has


def cell_variances(frame: pd.DataFrame, by: list[str], value: str, baseline: str,
                   candidates: list[str]) -> pd.DataFrame:
    """Per candidate × cell of `by`: the pairs with both sides (`n`), the variance of their
    log ratios against `baseline` (`s2`, the test's; NaN below two pairs), their spread about
    zero (`s0`, `stats.about_zero`: ≥ `s2`, so a cell precise on `s0` is precise on `s2`) and
    one that one outlier does not move (`robust_s0`: (1.4826 × their
    median absolute log ratio)²). `s0` and `robust_s0` see each pair's difference only up to
    its sign — what swapping an A/A pair's labels leaves unchanged — so a run that stops on
    them keeps the test's false-positive rate (docs/statistics.md, "Measuring to a target");
    stopping on `s2`, which a pair's sign moves, adds false positives (4 → 6 % of tables)."""
    parts = []
    for cand in candidates:
        d = stats.pair_up(frame, by=by, factor="arm", baseline=baseline, candidate=cand, value=value, pair="repeat")
        g = d.assign(mag=d["d"].abs()).groupby(by)
        parts.append(pd.DataFrame({"n": g.size(), "s2": g["d"].var(ddof=1), "s0": g["d"].agg(stats.about_zero),
                                   "robust_s0": (1.4826 * g["mag"].median()) ** 2}).reset_index().assign(candidate=cand))
    return (pd.concat(parts, ignore_index=True) if parts
            else pd.DataFrame(columns=[*by, "n", "s2", "s0", "robust_s0", "candidate"]))


def compared(run: Run) -> tuple[str, list[str]]:
    """The run's baseline and the arms its tables compare with it (no twin)."""
    arms = run.record.arms
    return arms[0].label, [a.label for a in arms[1:] if a.twin_of is None]


def _per_cell(t: pd.DataFrame, by: list[str], target: float) -> pd.DataFrame | None:
    """One metric's `shortfall` per cell (its worst comparison): the fewest pairs, the MDE
    now, the pairs it needs in all, and those at its variance's hopeful bound; None: no cell."""
    if t.empty:
        return None
    s2, dof, _ = stats.moderated(t["s2"].to_numpy(float), t["n"].to_numpy(float) - 1)
    s0, dof0, d0 = stats.moderated(t["s0"].to_numpy(float), t["n"].to_numpy(float) - 1)
    m = len(t)
    low = np.fmin(s0 * dof0 / sps.chi2.ppf(HOPE, np.maximum(dof0, 1e-9)),  # the spread's lower 80 % bound,
                  t["robust_s0"].to_numpy(float))                        # or what its pairs say without an outlier
    t = t.assign(cell=list(map(tuple, t[by].to_numpy().tolist())),
                 mde=[stats.paired_mde(math.sqrt(v), int(n), m, f, threshold=0) * 100
                      for v, n, f in zip(s2, t["n"], dof)],
                 needs=[stats.rounds_for(math.sqrt(v), target, m, d0) for v in s0],
                 hopes=[stats.rounds_for(math.sqrt(v), target, m, d0) for v in low])
    return t.groupby("cell", sort=False).agg(pairs=("n", "min"), mde=("mde", "max"), needs=("needs", "max"),
                                             hopes=("hopes", "max"))


def shortfall(study: Study, p: StudyParams, run: Run) -> pd.DataFrame:
    """Per cell (`cell`: the tuple of its table's cell columns): the fewest pairs any compared
    arm has there (`pairs`), and for every metric of `p.target` the cell's MDE now in %
    (`mde_<metric>`, its worst comparison) and the pairs it needs in all (`needs_<metric>`,
    judged on the pairs' spread about zero, `cell_variances`' `s0`: a cell with a real
    difference takes more pairs than its MDE says, never a cell whose pairs happened to agree);
    `more`: the most pairs still to go over the metrics (0: every target met, inf: out of
    reach); `hope`: the same at the lower 80 % bound of each cell's variance (`HOPE`), or at
    its outlier-proof variance where that is lower — what the budget is judged by, so a cell
    whose first pairs drew an outlier is not given up on before its noise is known.
    `attrs["by"]`: the cell columns."""
    tables = paired_tables(study, run, p)
    baseline, candidates = compared(run)
    out: pd.DataFrame | None = None
    by: list[str] = []
    for metric, target in p.target.items():
        _, frame, by, value = tables[metric]
        per = _per_cell(cell_variances(frame, by, value, baseline, candidates), by, target)
        if per is None:
            continue
        per = per.rename(columns={"mde": f"mde_{metric}", "needs": f"needs_{metric}", "hopes": f"hopes_{metric}"})
        out = per if out is None else out.join(per.drop(columns="pairs"), how="outer")
    if out is None:
        out = pd.DataFrame(columns=["cell", "pairs", "more", "hope"])
    else:
        needs = out[[c for c in out if c.startswith("needs_")]].max(axis=1)
        hopes = out[[c for c in out if c.startswith("hopes_")]].max(axis=1)
        out = out.assign(more=np.maximum(needs - out["pairs"], 0), hope=np.maximum(hopes - out["pairs"], 0)).reset_index()
    out.attrs["by"] = by  # the cell columns `cell` holds the values of
    return out


def fund(short: pd.DataFrame, seconds: Callable[[Any], float], remaining: float,
         restart: float = 0.0, restart_every: int = 1) -> tuple[list[Any], list[Any]]:
    """The cells the next rounds measure: of `short` (`shortfall`), those with pairs to go
    (`more`), fewest first, as long as all of them fit to their target in `remaining` seconds
    (each pair of a cell `seconds(cell)`, a restart of every server `restart` seconds every
    `restart_every` rounds; the pairs counted are `hope`'s where `short` has it). Returns
    (funded cells, cells left short: their pairs do not fit).

    >>> s = pd.DataFrame({"cell": ["a", "b", "c", "d"], "more": [0, 3, 10, 40]})
    >>> fund(s, lambda c: 10.0, remaining=200.0)
    (['b', 'c'], ['d'])
    >>> fund(s.assign(hope=[0, 0, 5, 30]), lambda c: 10.0, remaining=5.0)  # hope: never less than one pair
    ([], ['b', 'c', 'd'])
    """
    todo = short[short["more"] > 0].sort_values("more", kind="stable")
    funded, left, spent, rounds = [], [], 0.0, 0
    for cell, more in zip(todo["cell"], todo["hope"] if "hope" in todo else todo["more"]):
        if not math.isfinite(more):  # out of reach at any budget
            left.append(cell)
            continue
        more = max(more, 1)  # short of its target: at least its next pair
        cost, longest = spent + more * seconds(cell), max(rounds, int(more))
        if cost + math.ceil(longest / max(restart_every, 1)) * restart <= remaining:
            funded.append(cell)
            spent, rounds = cost, int(longest)
        else:
            left.append(cell)
    return funded, left


def record(record: dict[str, Any], short: pd.DataFrame, left: list[Any], repeat: int) -> dict[str, Any]:
    """The run's `precision` metadata after `repeat` rounds: per cell its pairs, the pairs
    still to go (`more`; `hope` at its variance's lower bound; None: out of reach), its MDE
    per metric, the metrics still short of their target with the pairs each still needs
    (`short_on`; None: out of reach), and whether the budget left it."""
    cells = []
    for r in short.to_dict("records"):
        more = r["more"]
        hope = r.get("hope", more)
        short_on = {k.removeprefix("needs_"): (int(v - r["pairs"]) if math.isfinite(v) else None)
                    for k, v in r.items() if k.startswith("needs_") and v == v and v > r["pairs"]}
        cells.append({"cell": list(r["cell"]), "pairs": int(r["pairs"]),
                      "more": int(more) if math.isfinite(more) else None,
                      "hope": int(hope) if math.isfinite(hope) else None, "left": r["cell"] in left,
                      "mde_pct": {k.removeprefix("mde_"): round(float(v), 2) for k, v in r.items()
                                  if k.startswith("mde_") and v == v},
                      "short_on": short_on})
    return {**record, "rounds": repeat, "cells": cells}


def stopped(left: list[Any]) -> str:
    """Why the rounds to a target ended when no cell was funded: `left`, the cells still short.

    >>> stopped([]), stopped([("a",)])
    ('every cell met its target', '1 cell short of the target needs more rounds than the budget has left')
    """
    if not left:
        return "every cell met its target"
    n = len(left)
    return (f"{n} cell{'s' if n != 1 else ''} short of the target need{'s' if n == 1 else ''} more "
            "rounds than the budget has left")
