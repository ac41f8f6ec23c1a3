"""How a report says what was run: the plan before it, where the run is, the study's narrative, the
set-up section and how its tables were judged."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from .. import plots
from ..kit.contract import Answer
from ..kit.study import load, params_of, reference
from ..measure import schedule
from ..store import progress, results
from ..store.results import Run
from .described import _e, client_commands, configuration, data_sizes, design_line
from .render import scrub_paths


def plan(study: Any, p: Any, run_dir: Any = None) -> None:
    """What the notebook is about to do, in one line: measure (`schedule.describe`: the
    steps, rounds, arms and about how long) — or, given an ended run, re-analyse it, measuring
    nothing."""
    if run_dir:
        run = Run.open(results.find_run(run_dir))
        if run.status != "running":
            done = progress.how_far(run)["done"]
            print(f"Re-analysing run {run.path.name} ({run.status}, {done} measured steps): nothing is measured.")
            return
    print(schedule.describe(study, p))


def where(run: Run) -> str:
    """Where the notebook writes: the run directory, or a re-analysis variant's folder in it."""
    if run.variant:
        return (f"re-analysis variant {run.variant}: its report and figures go to {run.output_dir}; "
                f"what run {run.path.name} wrote stays as it is")
    return f"run directory: {run.path}"


def narrative(study: Any, part: str) -> None:
    """A face's own words (its module's `NARRATIVE[part]`) in the notebook the faces of its
    experiment share."""
    from IPython.display import Markdown, display
    display(Markdown(study.NARRATIVE[part]))


def _judging(run: Run, said: Answer | None) -> list[str]:
    """The set-up's paragraphs on how the verdicts judge: the seconds judged, what each
    verdict table can detect, and what a difference is."""
    if said is None:
        return []
    from ..analysis import caveats
    from ..stats import reachability
    parts = []
    if "qps" in said.tables:
        judged, _ = caveats.judged_seconds_of(run, said.tables, "qps", params_of(run))
        if judged:
            parts.append(f"<p><b>Seconds judged.</b> {_e(judged)}.</p>")
    reach = [(name, reachability(rel)) for name, rel in said.verdict_tables().items()
             if rel is not None and not rel.empty and "mde_pct" in rel]
    if reach:
        parts.append("<p><b>What the comparisons can detect.</b></p><ul>" + "".join(
            f"<li>{_e(name)}: {_e('. '.join(lines))}.</li>" for name, lines in reach) + "</ul>")
        parts.append(
            "<p><b>What a difference is.</b> Each difference is a ratio of geometric means — in a "
            "paired run, the mean of each round's log ratio of two steps measured back to back — "
            "and its interval is Holm-adjusted: widened to the level Holm's step-down tests that "
            "cell at, so it excludes no change exactly when the verdict could call it better or "
            "worse. It need not equal the difference of two medians in the summaries: a median is "
            "of one arm's steps alone, so drift between rounds moves it, while a paired ratio "
            "cancels the drift both steps of a round shared.</p>")
    return parts


def setup(run: Run, said: Answer | None = None) -> None:
    """How the run was measured, for judging its answer: the design in one line, what each
    of the answer's (`said`) verdict tables could detect (said once here), the servers' settings that matter and
    what differs between arms, the data against each buffer pool, the client command.
    It comes before the figures: the arms get their colours here, baseline first, so a
    configuration has the same colour in every figure whatever order a figure meets it in."""
    from IPython.display import HTML, display

    r = run.record
    plots.palette(r.labels)
    steps = results.measured(run) if run.has_table("steps") else None
    parts = [f"<p><b>Design.</b> {_e(design_line(r, steps))}.</p>", *_judging(run, said)]
    governing = tuple(load(reference(r)).GOVERNING) if r.study else ()
    for title, body in (("Servers: the settings that matter and what differs between arms",
                         configuration(r, governing)),
                        ("Data against the buffer pool", data_sizes(r)),
                        ("Client command", client_commands(r))):
        if body:
            parts.append(f"<p><b>{_e(title)}.</b></p>{body}")
    cnfs = sorted(run.servers_dir.glob("*/my.cnf")) if run.servers_dir.is_dir() else []
    if cnfs:
        parts.append("<p><b>Each server's my.cnf</b>, as it started (in the run directory): " + " · ".join(
            f"<a href='{_e(Path(os.path.relpath(c, run.output_dir)).as_posix())}'>{_e(c.parent.name)}</a>"
            for c in cnfs) + "</p>")  # from the report: the run's, or a variant's two folders down
    display(HTML(f"<div class='dbs-setup'>{scrub_paths(''.join(parts), run)}</div>"))


