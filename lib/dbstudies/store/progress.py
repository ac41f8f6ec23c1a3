"""How far a run got, from what it wrote (its stored steps, its progress, its streams): what a
report's banner and `dbstudies` say of a run that did not complete.
"""
from __future__ import annotations

from typing import Any

from .results import Run, finished_steps
from .tables import INTERVALS, STEPS


def _steps_stored(run: Run) -> int:
    """Measured steps in the run's step tables (those with `step` and `phase` columns:
    sysbench's steps, DBT3's queries)."""
    steps: set[int] = set()
    for name, table in run.record.tables.items():
        if {"step", "phase"} <= set(table.get("columns", {})):
            rows = run.table(name)
            steps |= set(rows.loc[(rows["step"] > 0) & ~rows["phase"].isin(["warmup", "busy"]), "step"])
    return len(steps)


def how_far(run: Run) -> dict[str, Any]:
    """How far a run got, from what it wrote: `done` steps of `planned` (None: unknown, a
    time budget's), `running`: the step under way when it ended ("" if none), and
    `streamed_s`: the seconds that step had streamed (None: no stream)."""
    now = run.progress() or {}
    planned = now.get("total") or len(run.record.plan) or None
    running = "" if now.get("now") in (None, "done") else str(now["now"])
    streamed = None
    if running and run.has_table(INTERVALS):
        finished = set(run.table(STEPS)["step"]) if finished_steps(run) else set()
        iv = run.table(INTERVALS)
        seconds = iv[(iv["step"] > 0) & ~iv["step"].isin(finished)].groupby("step").size()
        streamed = int(seconds.iloc[-1]) if len(seconds) else None
    # what is stored, not the progress counter: in the paired design a pair's first step is
    # counted when its second begins, but both are stored only when the pair is whole
    done = _steps_stored(run)
    return {"done": int(done), "planned": planned, "running": running,
            "streamed_s": streamed}
