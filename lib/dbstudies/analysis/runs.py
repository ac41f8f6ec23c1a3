"""Two runs compared (`dbstudies compare`): run B against run A, arm by arm, with the rule of
every study — and the warning such a comparison carries when the runs were measured on
different hosts (prefer one run with both configurations as arms)."""
from __future__ import annotations

import pandas as pd

from .. import stats
from ..core.comparisons import SYSBENCH, Comparison, by_key, with_tail_ratio
from ..core.errors import StoreError
from ..kit.studykit import BY
from ..store import results
from ..store.results import Run

SPEED_RATIO = 1.5  # hosts whose speeds differ more than this are said to, before anything else


def host_of(run: Run) -> str:
    """The host that measured a run: its name, CPU model and kernel (from its metadata)."""
    h = run.record.host
    return f"{h.hostname} ({h.cpu_model}, {h.cpus} CPUs, kernel {h.kernel})"


def same_machine(run_a: Run, run_b: Run) -> bool | None:
    """Whether two runs were measured on one machine by its recorded identity
    (`provenance.machine_id`); None when a run recorded none (before it was recorded)."""
    a, b = (r.record.host.machine_id for r in (run_a, run_b))
    return None if a is None or b is None else a == b


def host_relation(run_a: Run, run_b: Run) -> str:
    """Where two runs were measured, from what they recorded: "on the same host", "on
    different hosts", or — without a machine identity — on hosts that share every fact."""
    same = same_machine(run_a, run_b)
    if same is not None:
        return "on the same host" if same else "on different hosts"
    return ("on hosts alike in name, CPU model and kernel (no machine identity recorded)"
            if host_of(run_a) == host_of(run_b) else "on different hosts")


def different_hosts(run_a: Run, run_b: Run) -> str | None:
    """The warning a comparison of runs measured on different hosts carries, or None."""
    if host_relation(run_a, run_b) != "on different hosts":
        return None
    return (f"The two runs were measured on different hosts (A: {host_of(run_a)}; B: {host_of(run_b)}): every "
            "difference between the hosts is confounded with the difference measured.")


def one_client_us(run: Run) -> dict[str, float]:
    """Per workload, the baseline's median µs per transaction at one client thread (a
    host's speed at the work itself; {} when the run has no such cell)."""
    steps = results.measured(run)
    arms = run.record.labels
    if steps.empty or "threads" not in steps or not arms:
        return {}
    one = steps[(steps["threads"] == 1) & (steps["arm"] == arms[0]) & (steps["tps"] > 0)]
    return {w: float(1e6 / g["tps"].median()) for w, g in one.groupby("workload")}


def loop_ms(run: Run) -> float | None:
    """A run's host speed: the faster of its fixed CPU loop's readings at its start and end
    (the less disturbed by whatever else ran then), or None before the probe was recorded."""
    h = run.record.host
    seen = [x for x in (h.loop_ms, h.loop_ms_end) if x]
    return min(seen) if seen else None


def speed_lines(runs: list[Run]) -> list[str]:
    """What a comparison of runs says first when their hosts ran at different speeds (more
    than `SPEED_RATIO` apart): the fixed CPU loop each recorded (`loop_ms`) and the
    baseline's µs per transaction at one client thread."""
    out = []
    name = [r.path.name for r in runs]
    loops = [loop_ms(r) for r in runs]
    if all(x for x in loops) and max(loops) / min(loops) > SPEED_RATIO:
        out.append("The hosts ran at different speeds: a fixed CPU loop took "
                   + ", ".join(f"{x:g} ms in run {n}" for x, n in zip(loops, name))
                   + f" (× {max(loops) / min(loops):.1f})")
    per = [one_client_us(r) for r in runs]
    for w in sorted(set(per[0]).intersection(*per[1:])):
        us = [p[w] for p in per]
        if max(us) / min(us) > SPEED_RATIO:
            out.append(f"One client thread took {', '.join(f'{u:,.0f} µs a transaction in run {n}' for u, n in zip(us, name))} "
                       f"of {w} (× {max(us) / min(us):.1f})")
    if out:
        out.append("Compare the runs' effects (each arm against its own baseline), not their values")
    return out


def same_study(run_a: Run, run_b: Run) -> None:
    """A clear error unless the two runs are of one study (before anything of them is said)."""
    a, b = run_a.study, run_b.study
    if a != b:
        raise StoreError(f"runs of different studies cannot be compared: {run_a.path.name} is "
                         f"{a}, {run_b.path.name} is {b}")


def compare_runs(run_a: Run, run_b: Run, metric: str = "qps", *, threshold: float,
                 among: tuple[Comparison, ...] = SYSBENCH) -> pd.DataFrame:
    """Run B against run A (the baseline), per arm × workload × threads present in both,
    with the rule of every study (one Holm family over the table). Both runs must be of the
    same study. `threshold`: the draw threshold (run A's, `Run.params`); `among`: the
    comparisons `metric` names one of (run A's: a count run's are instructions)."""
    same_study(run_a, run_b)
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
