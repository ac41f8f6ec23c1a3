"""A measurement, from its plan to its last phase (`measure`): the steps planned, every flavour
provisioned, the plan measured by the loop (`loop`: blocks or paired rounds), then rounds where a
cell is short of its precision target, the study's follow-up, and its profiled rounds.

Studies plug in through hooks (see `study`): `prepare`, `warmup`, `step`, `block_seconds`,
and `follow_up`: cells that depend on what the plan measured (the DBT3 study re-times the
queries whose join orders differ with each other candidate's order forced). They are measured
after the plan in the same design — every arm, `repeats` times, interleaved as above. Last,
with `cpu_profile`, `profile_cells`: `cpu_profile_rounds` rounds more of the cells chosen from
the verdicts, every arm's server sampled by `perf` (stored with phase `profile`, outside the
verdicts; a time budget keeps their estimated time for them).
The default hooks (`step`) drive sysbench: one workload × client threads cell per step.
"""
from __future__ import annotations

import pandas as pd

from .. import servers
from ..core import errors
from ..kernel import live
from ..kit.contract import Study
from ..kit.studykit import Arm, StudyParams, arms_of
from ..store.progress import how_far
from ..store.results import Run
from . import inventory
from .loop import Loop
from .ownership import guard, owns
from .schedule import (
    cell_text,
    design,
    estimated_seconds,
    next_phase,
    server_key,
)
from .schedule import steps as planned_steps
from .steps import keep_scripts


def measure(study: Study, p: StudyParams, run: Run, *, progress: bool = True) -> None:
    """Run the whole plan, flushing every step to `run`. Servers are always stopped and
    their datadirs removed; on an error the run keeps what was measured (and, if this
    process owns the run, is marked failed or interrupted).

    A run that has ended (complete, failed, interrupted, abandoned) is not measured again:
    the notebook then analyses what it holds — how `dbstudies report` writes the report of a
    failed or interrupted run, or of one measured from JupyterLab."""
    if run.status != "running":
        n = how_far(run)["done"]
        if not n:
            raise errors.NothingMeasured(f"run {run.path.name} ended {run.status} before any "
                                         "step finished: there is nothing to analyse")
        print(f"Run {run.path.name} ended {run.status}; nothing is measured again: the "
              f"sections below analyse the {n} measured step{'s' if n != 1 else ''} it holds.")
        return
    if run.has_tables():
        raise errors.StoreError(f"run {run.path.name} already holds measurements; runs are "
                                "append-only: start a new run")
    arms = arms_of(study, p)
    steps = planned_steps(study, p)
    budget = p.budget
    run.update(plan=[] if budget else steps.to_dict("records"), design=design(p),
               arms=[inventory.arm(a, p) for a in arms], estimated_seconds=estimated_seconds(study, p),
               arm_servers={a.label: server_key(a, p) for a in arms},
               workload_scripts=keep_scripts(run, p))
    shown = _live_progress(study, p, run, len(steps)) if progress else None
    if shown:
        run.watch_progress(shown.update)
        progress = False
    ended = False
    try:
        _measure(study, p, run, arms, steps, progress)
        ended = True
    finally:
        if shown:
            run.watch_progress(None)
            shown.close(stopped=not ended)


def _live_progress(study: Study, p: StudyParams, run: Run, steps: int) -> live.Progress | None:
    """Measured by hand in a notebook: the progress in the cell and at the window's bottom
    (`live`), not tqdm's stderr; the CLI's notebook keeps tqdm (its terminal has the bar)."""
    by_hand = owns(run) and run.record.owner.get("kind") == "notebook" and live.shell()
    return live.Progress(run, steps, estimated_seconds(study, p)) if by_hand else None


def _measure(study: Study, p: StudyParams, run: Run, arms: list[Arm], steps: pd.DataFrame,
             progress: bool) -> None:
    """`measure`'s loop: the plan, the follow-up, the profiled round."""
    with guard(run), Loop(study, p, run) as loop:
        provision(sorted({a.flavour or p.flavour for a in arms}), run, len(steps))
        paired, by_label = design(p) == "paired", {a.label: a for a in arms}
        (loop.rounds if paired else loop.blocks)(steps, by_label, progress)
        if paired and p.target:  # then rounds only where a cell's precision is short of its target
            steps = pd.concat([steps, loop.refine(steps, by_label, progress)], ignore_index=True)
        more = study.follow_up(run, p)
        if more:
            follow = next_phase(arms, more, p.repeats, p.seed + 1, steps, paired)
            run.update(follow_up=follow.to_dict("records"))
            print(f"follow-up: {len(follow)} more steps ({len(more)} per "
                  f"{'round and arm' if paired else 'block'})", flush=True)
            (loop.rounds if paired else loop.blocks)(follow, by_label, progress, before=loop.done)
            steps = follow
        chosen = study.profile_cells(run, p) if getattr(p, "cpu_profile", False) else []
        if chosen:  # rounds more: each chosen cell on every compared arm (no twin), its server sampled by perf
            compared = [a for a in arms if a.twin_of is None]
            rounds = p.profile_rounds()
            profiled = next_phase(compared, [{**c, "cpu_profile": True} for c in chosen], rounds, p.seed + 2,
                                  steps, paired)
            run.update(cpu_profile_plan=profiled.to_dict("records"))
            print(f"on-CPU profiles: {len(profiled)} more steps, {rounds} round{'s' if rounds != 1 else ''} of "
                  f"{', '.join(cell_text(c) for c in chosen)} on every arm", flush=True)
            loop.profiling = True  # the time kept for them is theirs now
            (loop.rounds if paired else loop.blocks)(profiled, {a.label: a for a in compared}, progress,
                                                      before=loop.done)  # the twins' servers are not restarted


def provision(names: list[str], run: Run, total: int) -> None:
    """Provision every flavour the run needs before its first server starts, saying so in
    the run's progress (the CLI's bar shows it): the first use of a rootfs flavour on a
    machine builds its tree (≈ 10–25 s each, DESIGN §4)."""
    for name in names:
        flavour = servers.load_flavour(name)
        if not flavour.provisioned:
            what = f"provisioning {name} (Debian {flavour.suite}; once per machine)"
            run.set_progress(0, total, what)
            print(f"{what} …", flush=True)
            flavour.provision(say=lambda m: print(m, flush=True))


