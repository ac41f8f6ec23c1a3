"""Two runs compared (`dbstudies compare`): run B against run A, arm by arm, with the rule of
every study — and the warning such a comparison carries when the runs were measured on
different hosts (prefer one run with both configurations as arms)."""
from __future__ import annotations

import pandas as pd

from .. import results, stats
from ..comparisons import SYSBENCH, Comparison, by_key, with_tail_ratio
from ..errors import StoreError
from ..results import Run
from . import BY


def host_of(run: Run) -> str:
    """The host that measured a run: its name and CPU model (from its metadata)."""
    h = run.metadata.get("host") or {}
    return f"{h.get('hostname')} ({h.get('cpu_model')}, {h.get('cpus')} CPUs)"


def different_hosts(run_a: Run, run_b: Run) -> str | None:
    """The warning a comparison of runs measured on different hosts carries, or None."""
    a, b = host_of(run_a), host_of(run_b)
    if a == b:
        return None
    return (f"The two runs were measured on different hosts (A: {a}; B: {b}): every "
            "difference between the hosts is confounded with the difference measured.")


def compare_runs(run_a: Run, run_b: Run, metric: str = "qps", *, threshold: float,
                 among: tuple[Comparison, ...] = SYSBENCH) -> pd.DataFrame:
    """Run B against run A (the baseline), per arm × workload × threads present in both,
    with the rule of every study (one Holm family over the table). Both runs must be of the
    same study. `threshold`: the draw threshold (run A's, `Run.params`); `among`: the
    comparisons `metric` names one of (run A's: a count run's are instructions)."""
    meta_a, meta_b = run_a.metadata, run_b.metadata
    if meta_a.get("study") != meta_b.get("study"):
        raise StoreError(f"runs of different studies cannot be compared: {run_a.path.name} is "
                         f"{meta_a.get('study')}, {run_b.path.name} is {meta_b.get('study')}")
    if metric not in (keys := [c.key for c in among]):
        raise StoreError(f"metric must be one of {', '.join(keys)}, got {metric!r}")
    a, b = (with_tail_ratio(results.measured(r)) for r in (run_a, run_b))
    if a.empty or b.empty:
        empty = run_a if a.empty else run_b
        raise StoreError(f"run {empty.path.name} holds no measured steps")
    la, lb = run_a.path.name, run_b.path.name
    if la == lb:
        la, lb = f"A {la}", f"B {lb}"
    steps = pd.concat([a.assign(run=la), b.assign(run=lb)], ignore_index=True)
    c = by_key(among, metric)
    table = stats.compare_table(steps, by=["arm", *BY], factor="run", baseline=la,
                                candidates=[lb], value=c.column, higher_is_better=c.higher_is_better,
                                threshold=threshold)
    if table.empty:
        raise StoreError(f"runs {run_a.path.name} and {run_b.path.name} have no configuration "
                         "(arm × workload × threads) in common")
    return table.assign(same_host=different_hosts(run_a, run_b) is None)
