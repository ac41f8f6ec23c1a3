"""Run-to-run noise of a study's design on this machine: CV per configuration, pooled CV and
the minimum detectable effect (MDE) the comparison table would print; for a paired run also
the SD of the pairs' log ratios, the correlation within a pair, and the MDE the same steps
would give if they were analysed unpaired (the before/after of the paired design).

Runs the study through the library, with the parameters given, into data/runs/<study>/ (or
--runs-dir), then prints, for each table `dbstudies plan` predicts (sysbench: QPS and p99 per
workload × threads; DBT3: seconds per query), the CV per cell, the share of steps flagged busy,
the MDE, and for a paired run the between-round share of the pairs' variance (what
`restart_every` trades). Not a test: it takes minutes and its figures depend on the machine.

    .venv/bin/python tests/benchmarks/noise.py thread_pool --profile quick -p duration 10
    .venv/bin/python tests/benchmarks/noise.py --analyse data/runs/thread_pool/<run-id>
"""
from __future__ import annotations

import argparse
import time

import numpy as np
import pandas as pd

from dbstudies import analysis, stats
from dbstudies.core import paths
from dbstudies.kit.contract import study_name
from dbstudies.kit.study import load
from dbstudies.kit.studykit import arms_of
from dbstudies.measure import checks, experiment, ownership
from dbstudies.store.results import Run
from dbstudies.workflows import planner


def analyse(run: Run) -> None:
    study = load(run.study)
    p = checks.resolve(study, run.metadata["parameters"]["profile"],
                      **{k: v for k, v in run.metadata["parameters"].items() if k != "profile"})
    arms = arms_of(study, p)
    for words, frame, by, value in planner.paired_tables(study, run):
        frame = frame.dropna(subset=[value])  # DBT3: timed-out executions have no seconds
        g = frame.groupby([*by, "arm"])
        if "host_busy" in frame:
            table = pd.DataFrame({"cv_pct": g[value].agg(stats.cv) * 100, "median": g[value].median(),
                                  "busy": g["host_busy"].sum(), "other_pct": g["host_other_pct"].median()})
            with pd.option_context("display.width", 200, "display.max_rows", 200):
                print(table.round(1).unstack("arm").to_string())
        higher = value in ("qps", "tps", "median_tps")
        rel = analysis.compare_arms(frame, arms, by=by, value=value, higher_is_better=higher)
        sd = stats.pooled_sd_log(x for _, x in g[value])
        print(f"{words}: pooled CV {sd * 100:.1f} %, median cell CV "
              f"{g[value].agg(stats.cv).median() * 100:.1f} %; {stats.reachability(rel)[0]}; "
              f"verdicts {rel['verdict'].value_counts().to_dict()}")
        if analysis.is_paired(frame):  # the same steps as if unpaired, for the before/after
            d = pd.concat([stats.pair_up(frame, by=by, factor="arm", baseline=arms[0].label,
                                         candidate=a.label, value=value, pair="repeat")
                           for a in arms[1:]])
            rho = d.groupby(by).apply(lambda x: np.corrcoef(np.log(x["a"]), np.log(x["b"]))[0, 1])
            blocks = stats.compare_table(frame, by=by, factor="arm", baseline=arms[0].label,
                                         candidates=[a.label for a in arms[1:] if a.twin_of is None],
                                         value=value, higher_is_better=higher)
            print(f"  paired: SD of the pairs' log ratio {d.groupby(by)['d'].std().median():.3f} "
                  f"(median cell), correlation within a pair {rho.median():.2f}; between-round "
                  f"share of the pairs' variance {round_share(d, by):.2f}; unpaired on the "
                  f"same steps: {stats.reachability(blocks)[0]}")
    print(f"arms {[a.label for a in arms]}; params {run.metadata['parameters']}")


def round_share(d: pd.DataFrame, by: list[str]) -> float:
    """The share of the pairs' variance that lies between rounds (a one-way random-effects
    split of the differences, centred per cell, by round): what restarting every round keeps
    inside each pair difference."""
    c = d.assign(d=d["d"] - d.groupby(by)["d"].transform("mean"))
    groups = [x.to_numpy() for _, x in c.groupby("repeat")["d"]]
    k, n = len(groups), np.mean([len(x) for x in groups])
    if k < 2 or n < 2:
        return float("nan")
    msb = n * sum((x.mean() - c["d"].mean()) ** 2 for x in groups) / (k - 1)
    msw = sum(((x - x.mean()) ** 2).sum() for x in groups) / (len(c) - k)
    between = max(0.0, (msb - msw) / n)
    return between / (between + msw) if between + msw > 0 else 0.0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("study", nargs="?", default="thread_pool")
    ap.add_argument("--profile", default="quick")
    ap.add_argument("-p", "--parameter", nargs=2, action="append", default=[], metavar=("NAME", "VALUE"))
    ap.add_argument("--runs-dir", default=str(paths.RUNS_DIR))
    ap.add_argument("--analyse", metavar="RUN_DIR", help="only analyse an existing run")
    args = ap.parse_args()
    if args.analyse:
        return analyse(Run.open(args.analyse))
    study = load(args.study)
    p = checks.resolve(study, args.profile, **dict(args.parameter))
    run = ownership.create_run(study_name(study), p, args.runs_dir, "notebook")
    t0 = time.monotonic()
    experiment.measure(study, p, run)
    ownership.finish(run)
    print(f"{run.path}: {(time.monotonic() - t0) / 60:.1f} min")
    analyse(run)


if __name__ == "__main__":
    main()
