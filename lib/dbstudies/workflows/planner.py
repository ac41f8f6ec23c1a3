"""`dbstudies plan STUDY`: before anything runs, how long a run will take and the minimum
detectable effect (MDE) each of its comparison tables will print, so that a user knows
whether the run can answer the question before spending an hour on it.

The noise comes from this host's earlier paired runs of the study (their per-round log
ratios, per cell: workload × threads for the sysbench studies, query for DBT3 — its judged
`COMPARISONS`, `study.paired_tables`), or, when there are none, from a pilot: the same study
and parameters for two rounds, kept as an ordinary run (so the next plan uses it too). A
cell's variance is moderated across the cells as the verdicts do (`stats.moderated`); cells
the earlier runs did not measure take the median cell's. The prediction is the paired MDE
(`stats.paired_mde`) at the planned rounds and the table's number of comparisons, on the
degrees of freedom the run's moderated table will have (n − 1 plus the prior's).

    lines = plan("thread_pool", "quick", {})
"""
from __future__ import annotations

import math
import platform
from pathlib import Path
from typing import Any, Callable, Mapping

import numpy as np
import pandas as pd

from .. import analysis, stats
from ..core import paths
from ..kit.contract import Study, study_name
from ..kit.study import Observations, load
from ..kit.study import paired_tables as judged
from ..kit.studykit import StudyParams, arms_of
from ..measure import checks, experiment, ownership, precision, schedule
from ..store.results import Run, list_runs

PILOT_ROUNDS = 2
RECENT = 5   # the latest runs used


_READ: dict[tuple, list[Observations]] = {}


def paired_tables(study: Study, run: Run) -> list[Observations]:
    """The tables `dbstudies plan` predicts for `study`, with `run`'s observations, in order —
    read once per state of the run's tables (a plan asks for each run's tables once per
    metric and spread: 47 reads of ≈ 1 s on five quick runs before)."""
    folder = run.path / "tables"  # each table's files (a part written, a stream begun) and its streams' sizes
    state = tuple((f.name, len(list(f.iterdir())), f.stat().st_mtime_ns,
                   *(s.stat().st_size for s in sorted(f.glob("stream-*.jsonl"))))
                  for f in sorted(folder.iterdir())) if folder.is_dir() else ()
    key = (study_name(study), str(run.path), run.variant, run.meta_path.stat().st_mtime_ns, state)
    if key not in _READ:
        _READ[key] = list(judged(study, run).values())
    return _READ[key]


def earlier_runs(study: str, root: Path, host: str | None = None, like: StudyParams | None = None) -> list[Run]:
    """This host's runs of `study` that hold paired observations, newest first (at most RECENT);
    not one still being measured (its noise is not yet all there); with `like`, only runs
    judged on the same comparisons (a count's noise says nothing of throughput's)."""
    host = host or platform.node()
    s, out = load(study), []
    same = None if like is None else [c.key for c in like.COMPARISONS]
    for run in reversed(list_runs(study_name(s), root)):
        r = run.record
        if r.design != "paired" or r.host.hostname != host:
            continue
        if same is not None and [c.key for c in run.params(s).COMPARISONS] != same:
            continue
        if run.status == "running" and ownership.owner_alive(run):
            continue
        if all(analysis.is_paired(frame) for _, frame, _, _ in paired_tables(s, run)):
            out.append(run)
        if len(out) == RECENT:
            break
    return out


def cell_noise(study: Study, runs: list[Run], table: int = 0, spread: str = "s2") -> pd.DataFrame:
    """Per cell of the study's `table`-th paired table (sysbench: 0 QPS, 1 p95, 2 p99, 3 tail ratio, per workload
    × threads): the variance of the per-round log ratios (every arm against its run's
    baseline, every run; with `spread` "s0" their sum of squares about zero over n − 1, what a run measured
    to a target stops on: `precision.cell_variances`) and its degrees of freedom."""
    parts, by = [], None
    for run in runs:
        tables = paired_tables(study, run)
        if table >= len(tables):  # a run without this table (a study with fewer tables)
            continue
        _, frame, by, value = tables[table]
        labels = run.record.labels
        t = precision.cell_variances(frame, by, value, labels[0], labels[1:])
        parts.append(t.assign(ss=t[spread] * (t["n"] - 1), df=t["n"] - 1).set_index(by)[["ss", "df"]])
    if not parts:
        return pd.DataFrame(columns=[*(by or []), "s2", "df"])
    both = pd.concat(parts).groupby(level=list(range(len(by)))).sum()
    both = both[both["df"] > 0]
    return both.assign(s2=both["ss"] / both["df"]).reset_index()[[*by, "s2", "df"]]


def planned_rounds(study: Study, p: StudyParams) -> int:
    """The rounds a run will measure: `repeats`, or as many as the time budget fits (with a
    precision target: the `repeats` every cell gets first)."""
    if p.budget and not p.target:
        return schedule.rounds_in(study, p, p.budget * 60)
    return p.repeats


def predict(study: Study, p: StudyParams, noise: pd.DataFrame, *,
            candidates: int | None = None) -> dict[str, float]:
    """The MDE (%) of the median cell, the smallest and the largest, of a table over the
    study's cells × candidates (or `candidates`: the positive control's table has one) at
    `p`'s rounds, from per-cell noise (its columns before s2 and df name the cell)."""
    by = [c for c in noise.columns if c not in ("s2", "df")]
    own = study.table_cells(p)  # the cells of its verdict tables, where not its plan's
    cells = pd.DataFrame(own if own is not None else study.cells(p))
    cands = candidates or len([a for a in arms_of(study, p)[1:] if a.twin_of is None])
    m, n = len(cells) * max(cands, 1), planned_rounds(study, p)
    s2, _, d0 = stats.moderated(noise["s2"].to_numpy(), noise["df"].to_numpy())
    known = dict(zip(map(tuple, noise[by].to_numpy()), s2))
    typical = float(np.median(s2))
    # the run's table moderates too: each cell's n − 1 df plus the prior's (capped as there)
    df = min(n - 1 + d0, len(cells) * (n - 1))
    mdes = [stats.paired_mde(math.sqrt(known.get(tuple(cell), typical)), n, m, df) * 100
            for cell in cells[by].itertuples(index=False)]
    return {"median": float(np.median(mdes)), "min": min(mdes), "max": max(mdes),
            "rounds": n, "comparisons": m}


def to_target(study: Study, p: StudyParams, runs: list[Run], source: str) -> list[str]:
    """How long a run with a precision target will take, from earlier runs' noise per cell:
    the rounds each cell needs for every metric's target (`stats.rounds_for`, moderated as
    the tables are), the time to spend them as the loop does (`precision.fund` within the
    budget), what the same MDE in every cell would take with fixed rounds, the cells that
    need the most, and those expected to end undecided."""
    cells = pd.DataFrame(study.cells(p))
    m = len(cells) * max(len([a for a in arms_of(study, p)[1:] if a.twin_of is None]), 1)
    keys = list(judged(study, runs[0]))
    need: dict[tuple, float] = {}  # pairs to the target as the loop judges it (spread about zero)
    noisy: dict[tuple, float] = {}  # … from the noise alone (the test's variance): what fixed rounds need
    plain: dict[tuple, float] = {}  # … the same, 0 where a difference its first rounds can see decides the cell
    by: list[str] = []
    for metric, target in p.target.items():
        spread: dict[str, dict[tuple, float]] = {}
        for kind in ("s0", "s2"):
            noise = cell_noise(study, runs, keys.index(metric), kind) if metric in keys else pd.DataFrame()
            if noise.empty:
                return [f"to the target: no earlier pairs of {metric} to predict from"]
            by = [c for c in noise.columns if c not in ("s2", "df")]
            s2, _, d0 = stats.moderated(noise["s2"].to_numpy(), noise["df"].to_numpy())
            known, typical = dict(zip(map(tuple, noise[by].to_numpy()), s2)), float(np.median(s2))
            spread[kind] = {cell: known.get(cell, typical) for cell in map(tuple, cells[by].itertuples(index=False))}
        for cell, s0 in spread["s0"].items():
            s2 = spread["s2"][cell]
            need[cell] = max(need.get(cell, p.repeats), stats.rounds_for(math.sqrt(s0), target, m, d0))
            # a difference (s0 − s2 ≈ its square) its first rounds can see decides the cell without the target
            seen = math.sqrt(max(s0 - s2, 0)) > math.log1p(stats.paired_mde(math.sqrt(s2), p.repeats, m, p.repeats - 1 + d0))
            noisy[cell] = max(noisy.get(cell, p.repeats), stats.rounds_for(math.sqrt(s2), target, m, d0))
            plain[cell] = max(plain.get(cell, 0), 0 if seen else noisy[cell])
    restart, pair = schedule.round_parts(study, p)
    first = p.repeats * (restart + pair * len(cells))
    short = pd.DataFrame({"cell": list(need), "more": [n - p.repeats for n in need.values()]})
    funded, left = precision.fund(short, lambda cell: pair, p.budget * 60 - first, restart, p.restart_every)
    more = dict(zip(short["cell"], short["more"]))
    spent = first + sum(more[c] for c in funded) * pair + math.ceil(
        max([more[c] for c in funded] or [0]) / p.restart_every) * restart
    finite = [n for n in noisy.values() if math.isfinite(n)]
    fixed = max(finite or [p.repeats])
    name = {c: analysis.cell_name(dict(zip(by, c))) for c in need}
    most = sorted(noisy, key=lambda c: -noisy[c])[:3]
    undecided = [c for c in left if plain[c] > p.repeats]  # the others: decided by a difference
    lines = [f"to the target ({stats.target_words({'target': p.target})}): about {spent / 60:.0f} min — "
             f"{p.repeats} rounds of every cell ({first / 60:.0f} min), then "
             f"{int(sum(more[c] for c in funded))} pairs where a cell is short; the same MDE in every "
             f"cell with fixed rounds: {fixed} rounds, about {fixed * (restart + pair * len(cells)) / 60:.0f} min; "
             f"from {source}",
             "  the cells whose noise needs the most rounds: " + "; ".join(
                 f"{name[c]} ({noisy[c]:.0f})" if math.isfinite(noisy[c]) else f"{name[c]} (out of reach)" for c in most)]
    if undecided:
        lines.append(f"  expected undecided within the {p.budget:g}-minute budget: " + "; ".join(
            f"{name[c]} (needs about {plain[c]:.0f} rounds)" if math.isfinite(plain[c]) else f"{name[c]} (out of reach)"
            for c in undecided))
    if len(undecided) < len(left):
        lines.append("  left at their first rounds, their earlier runs differing by more than their noise: "
                     + "; ".join(name[c] for c in left if c not in undecided))
    return lines


def pilot(study: Study, profile: str, overrides: Mapping[str, Any], root: Path) -> Run:
    """The study for `PILOT_ROUNDS` rounds with the parameters given (no A/A twin, no
    budget, no profiled rounds: the noise is what a pilot measures), as an ordinary run
    under `root`."""
    no_profile = {"cpu_profile": False, "cpu_profile_cells": None} if "cpu_profile" in overrides else {}
    p = checks.resolve(study, profile, **{**overrides, "repeats": PILOT_ROUNDS, "budget": 0, "target": {},
                                              "aa_control": False, "design": "paired", **no_profile})
    run = ownership.create_run(study, p, root, "notebook")
    run.update(pilot=True)
    experiment.measure(study, p, run)
    ownership.finish(run)
    return run


def measuring(root: Path) -> list[Run]:
    """The runs under `root` that a live process of this host is measuring now."""
    return [r for r in list_runs(root=root, status="running") if ownership.owner_alive(r)]


def _noise_from(study: Study, ref: str, p: StudyParams, profile: str, overrides: Mapping[str, Any], root: Path,
                allow_pilot: bool, say: Callable[[str], None]) -> tuple[list[Run], str]:
    """The runs whose noise a plan predicts from, and where it comes from in words: the study's
    earlier paired runs on this host, else a pilot — none (and why, in the words) without
    `allow_pilot` or while another run measures on this host."""
    name = study_name(study)
    runs = earlier_runs(ref, root, like=p)
    if runs:
        return runs, f"the noise of {len(runs)} earlier paired run(s) of {name} on this host"
    if not allow_pilot:
        return [], ("No earlier paired run of this study on this host: no noise to predict "
                    "from (without --no-pilot, a two-round pilot measures it).")
    busy = measuring(root)
    if busy:
        return [], (f"No earlier paired run of this study on this host, and no pilot now: run "
                    f"{busy[0].path.parent.name}/{busy[0].path.name} is measuring on this host — a "
                    "pilot beside it would disturb it and measure its noise, not the host's. "
                    "Plan again when it has ended.")
    say(f"no earlier paired run of {name} on this host: a {PILOT_ROUNDS}-round pilot measures the noise …")
    runs = [pilot(study, profile, overrides, root)]
    return runs, f"a {PILOT_ROUNDS}-round pilot ({runs[0].path.name})"


def plan(name: str, profile: str, overrides: Mapping[str, Any], root: Path = paths.RUNS_DIR, *,
         allow_pilot: bool = True, say: Callable[[str], None] = print) -> list[str]:
    """What `dbstudies plan` prints: the design, the expected wall time, and per table the
    expected MDE with where its noise comes from."""
    study = load(name)
    p = checks.resolve(study, profile, **overrides)
    arms, cells, ref, name = arms_of(study, p), study.cells(p), name, study_name(study)
    design = schedule.design(p)
    n = planned_rounds(study, p)
    lines = [f"{name} ({profile}): {design} design, {n} {'rounds' if design == 'paired' else 'repeats'} "
             f"× {len(cells)} cells × {len(arms)} arms ({', '.join(a.label for a in arms)}); "
             f"about {schedule.estimated_seconds(study, p) / 60:.0f} min"]
    if design != "paired":
        return lines + ["No MDE prediction: the planner predicts paired tables; the blocks "
                        "design is not one (`design paired`)."]
    runs, source = _noise_from(study, ref, p, profile, overrides, root, allow_pilot, say)
    if not runs:
        return lines + [source]
    if p.target:
        lines += to_target(study, p, runs, source)
    for i, (words, *_) in enumerate(paired_tables(study, runs[0])):
        noise = cell_noise(study, runs, i)
        if noise.empty:
            lines.append(f"{words}: no pairs to predict from")
            continue
        r = predict(study, p, noise)
        words += ", after the first rounds" if p.target else ""  # the rounds to the target: above
        lines.append(f"{words}: expected minimum detectable effect {r['median']:.0f} % in the median "
                     f"cell ({r['min']:.0f}–{r['max']:.0f} %; {r['rounds']} pairs per cell, "
                     f"{r['comparisons']} comparisons), from {source}")
        if any(a.pause is not None for a in arms):  # the positive control: one candidate, its own family
            c = predict(study, p, noise, candidates=1)
            lines.append(f"  positive control, {words}: {c['median']:.0f} % in the median cell "
                         f"({c['min']:.0f}–{c['max']:.0f} %; {c['comparisons']} comparisons)")
    return lines
