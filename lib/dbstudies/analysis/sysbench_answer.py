"""What a sysbench scaling study (thread pool, versions) answers from a run: its tables — the
measured steps and their summary, each arm against the baseline on QPS, p95, p99 and the tail
ratio (p99 ÷ p50), the A/A table and its calibration, the positive control's (`control`) — and the answer
built from them with the study's own conclusion."""
from __future__ import annotations

from typing import Any

import pandas as pd

from ..core.comparisons import (
    AA_KEY,
    Comparison,
    by_key,
    judged,
    primary,
    throughput,
    verdicts,
    with_tail_ratio,
)
from ..kit.contract import Answer
from ..kit.studykit import Arm
from ..store import results
from ..store.cpus import cpus_shared, pinned_apart
from ..store.results import Run
from ..store.tables import HISTOGRAMS
from . import budget, control, tails
from .aa import calibration
from .tables import summary


def tables(run: Run, p: Any, arms: list[Arm], relative: Any) -> dict[str, Any]:
    """What a sysbench scaling study's answer holds: the measured `steps`, their `summary`,
    every arm against the baseline on QPS (`qps`), p50 (`p50`: the typical transaction), p95 (`p95`: the body of the latency
    distribution, steadier than its tail), p99 (`p99`) and the tail ratio (`tail`: each
    step's p99 over its own p50, `tails`) by the study's `relative`, the A/A table (`aa`) and
    its `calibration` (`arms`: the A/A twin included) — and the same calibration of the
    latency tables (`calibrations`: p95, p99, tail ratio) —, the shift function of every
    candidate (the paused twin included, not the A/A twin) against the baseline (`shift`:
    `tails.shift`, for the distribution figure), and with a paused twin the positive control:
    its table per metric (`control_tables`) and what each found against what the pause must
    do (`control`)."""
    steps = with_tail_ratio(results.measured(run))
    summ = tails.with_run_p99(run, steps, summary(steps))
    paused = control.tables(steps, arms, p, judged(p.COMPARISONS))
    shifted = (tails.shift(run.table(HISTOGRAMS), steps, arms[0].label, [a.label for a in arms[1:] if not a.aa])
               if run.has_table(HISTOGRAMS) and "repeat" in steps and len(steps) else pd.DataFrame())
    first = primary(p.COMPARISONS)
    # a comparison this run does not judge (a count run's throughput; a throughput run's count)
    # is an empty table: a notebook section taking it shows nothing and is left out of the report
    absent = {c.key: pd.DataFrame() for c in type(p).COMPARISONS if c not in p.COMPARISONS}
    return {"steps": steps, "summary": summ, **absent, **{c.key: relative(steps, p, c.key) for c in p.COMPARISONS},
            AA_KEY: relative(steps, p, first.key, aa=True),
            "calibration": calibration(steps, arms, p, first.key), "shift": shifted,
            "calibrations": {c.key: calibration(steps, arms, p, c.key) for c in judged(p.COMPARISONS)
                             if c is not first and c.column in steps},
            "control_tables": paused, "control": control.found(paused, control.closed_loop(paused, run, steps, arms))}


def answer(run: Run, p: Any, arms: list[Arm], relative: Any, conclusion: Any,
           claims: list[Any] | None = None) -> Answer:
    """A sysbench scaling study's answer: `tables`, its verdicts (one per comparison, and the
    A/A table: `comparisons.verdicts`), the study's
    `conclusion(summary, {qps, p95, p99, aa}, p, host_cpus=, calibration=)` (the host's CPU
    count from the run's metadata) followed by the positive control's lines, and the
    source's `claims` it tests."""
    t = tables(run, p, arms, relative)
    summ = t["summary"]  # the configurations compared: the twins have tables of their own
    summ = summ[summ["arm"].isin([a.label for a in arms if a.twin_of is None])] if "arm" in summ else summ
    cpus = run.record.host.cpus
    client = budget.client_explained(budget.judged_budget(t, throughput(p.COMPARISONS), cpus_shared(p, cpus)),
                                      pinned_apart(p))
    said = conclusion(summ, {**{c.key: t[c.key] for c in p.COMPARISONS}, AA_KEY: t[AA_KEY], "client": client}, p,
                      host_cpus=cpus, calibration=t["calibration"])
    arm = control.control_arm(arms)
    said = "\n".join([said, *calibration_lines(t["calibrations"], p.COMPARISONS),
                      *control.lines(t["control"], arm.pause if arm else None)])
    return Answer(t, verdicts(p.COMPARISONS), said, list(claims or []), comparisons=p.COMPARISONS)


def calibration_lines(cals: dict[str, pd.DataFrame], comparisons: tuple[Comparison, ...]) -> list[str]:
    """The A/A calibration of the latency tables in one line: per table, the share of A/A
    tables with a non-draw and the share of cells where a true +20 % is found."""
    parts = []
    for metric, cal in cals.items():
        if cal is None or cal.empty:
            continue
        r = cal.set_index("shift_pct")
        parts.append(f"{by_key(comparisons, metric).words} {r.loc[0.0, 'tables_any_verdict'] * 100:.0f} % of tables with a "
                     f"non-draw, a 20 % difference found in {r.loc[20.0, 'cells_better'] * 100:.0f} % of cells")
    return [f"- The latency tables judged on the same A/A noise: {'; '.join(parts)}."] if parts else []
